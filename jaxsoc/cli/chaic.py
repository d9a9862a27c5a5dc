"""``jaxsoc chaic <verb>``: ``tasks`` (summarise the task sets), ``eval`` (the paper's tables 2 and 4 for the
rule-based helpers and the learned ones) and ``render`` (a GIF of one episode).

``jaxsoc chaic eval --helper rhp ppo=RUN bm=RUN2`` evaluates learned helpers (``LEARNED``: a PPO run of ``jaxsoc train
ppo --env CHAIC-<Task>-Helper-v0 --set network=chaic``, a behaviour model of ``jaxsoc train chaic-bm``) in the same
table as the rule-based ones (``ppo_greedy=RUN``: the run's most likely choices); ``--append`` adds helpers to the
results already in ``--out``.

It is also the front end of ``jaxsoc train chaic-bm`` (the behaviour-modelling helper's model: ``config_type``,
``train_command``, ``run_line``):

jaxsoc train chaic-bm --out runs/chaic_bm                                # all 8 tasks, 64 train episodes each
jaxsoc train chaic-bm --out runs/bm_normal --set tasks=normal --episodes 32 --epochs 10
jaxsoc train chaic-bm --out runs/chaic_bm --resume --epochs 40           # continue, more epochs

The run directory holds ``run.json``, ``metrics.csv`` / ``metrics.json`` (loss and goal / constraint accuracies
per epoch), ``curves.png``, ``report.json`` (the final per-task accuracies) and ``checkpoints/``;
``bm.load_bm_helper(RUN)`` turns it into a helper agent for ``play``."""

from __future__ import annotations

import functools
import json
import math
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.cli.errors import clear_errors, require_positive
from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.envs.chaic import state as S

HELPERS = ("none", "random", "rhp", "oracle")
#: every rule-based helper: ``HELPERS``, ``rhp_options``, the RHP rules acting through the options of
#: ``envs.chaic.options`` (the ceiling of a policy cloned from them), and ``goal_options``, the same told the goal
RULE_HELPERS = (*HELPERS, "rhp_options", "goal_options")
PAPER_ROWS = dict(zip(("none", "random", "rhp", "oracle"), range(4)))  # columns of catalogue.PAPER_TR
#: learned helpers, ``KIND=RUN`` on the command line: the paper's row each is compared with (``PAPER_HELPER_TR``);
#: ``ppo_greedy`` plays a PPO run's most likely action (or option) instead of sampling it
LEARNED = {"ppo": "rl", "ppo_greedy": "rl", "bm": "llm_bm"}


def parse_helpers(items: list[str]) -> dict[str, str | None]:
    """Returns ``{label: run directory or None}`` for ``--helper`` items: a rule-based helper (``RULE_HELPERS``)
    or a learned one as ``KIND=RUN`` (``LEARNED``; labelled by its kind). Raises ``ValueError`` for an unknown
    helper, a learned kind without a run, or a label given twice."""
    out: dict[str, str | None] = {}
    for item in items:
        kind, sep, run = item.partition("=")
        if kind in LEARNED and not (sep and run):
            raise ValueError(f"the learned helper {kind!r} needs its run: --helper {kind}=RUN_DIR")
        if (sep and kind not in LEARNED) or (not sep and kind not in RULE_HELPERS):
            choices = f"{list(RULE_HELPERS)} or {', '.join(k + '=RUN' for k in LEARNED)}"
            raise ValueError(f"unknown helper {item!r}; choose from {choices}")
        if kind in out:
            raise ValueError(f"helper {kind!r} given twice")
        out[kind] = run or None
    return out


def learned_helper(kind: str, run: str):
    """Returns the agent of a learned helper: ``kind`` in ``LEARNED``, ``run`` its run directory. Raises
    ``ValueError`` naming ``--helper`` when ``run`` is not a directory (nothing is created)."""
    if not Path(run).is_dir():
        raise ValueError(f"--helper {kind}={run}: no such run directory")
    if kind in ("ppo", "ppo_greedy"):
        from jaxsoc.learners.chaic.ppo_helper import load_ppo_helper

        return load_ppo_helper(run, greedy=kind == "ppo_greedy")
    from jaxsoc.learners.chaic.bm import load_bm_helper

    return load_bm_helper(run)


def _tasks(names: list[str]) -> list[str]:
    if names == ["all"]:
        return list(K.TASKS)
    unknown = [name for name in names if name not in K.TASKS]
    if unknown:
        raise ValueError(f"unknown CHAIC task(s) {unknown}; choose from {list(K.TASKS)} or 'all'")
    return names


def cmd_tasks(args) -> int:
    from jaxsoc.envs.chaic import tasks as T

    for task in _tasks(args.tasks):
        task_set = T.make_split(task, args.split, args.seed)
        states = task_set.states
        totals = np.asarray(states.total)
        objects = (np.asarray(states.objects.cls) > 0).sum(1)
        high = (np.asarray(states.objects.height) > 1.5) & (np.asarray(states.objects.cls) > 0)
        print(
            f"{task:15s} {args.split}: {len(task_set)} episodes, plans {sorted(set(task_set.plans))}; goal total "
            f"{totals.min():g}-{totals.max():g}; {objects.mean():.1f} objects, {high.sum(1).mean():.1f} above 1.5 m; "
            f"goal place {float(np.asarray(states.scene.goal_height).mean()):.2f} m high"
        )
    return 0


def _budget(max_events: int | None) -> dict:
    return {"max_events": max_events} if max_events else {}


def rule_helper(name: str):
    """Returns the agent of the rule-based helper ``name`` (``RULE_HELPERS``)."""
    from jaxsoc.envs.chaic import agents as A
    from jaxsoc.envs.chaic import options as OP

    if name in ("rhp_options", "goal_options"):
        return OP.OptionExpertHelper(knows_goal=name == "goal_options")
    return A.make_agent(name)


@functools.lru_cache(maxsize=16)
def _player(helper: str, max_events: int | None):
    """Returns ``play.make_player`` for the constrained agent and the rule-based ``helper``, built once per process
    (so ``--append`` and repeated evaluations compile each player once)."""
    from jaxsoc.envs.chaic import agents as A
    from jaxsoc.envs.chaic import play as P

    return P.make_player(A.make_agent("main"), rule_helper(helper), **_budget(max_events))


def evaluate(
    tasks: list[str],
    helpers: list[str],
    seeds: int,
    seed: int = 0,
    split: str = "test",
    max_events: int | None = None,
    episodes: int | None = None,
    timing=None,
    agents: dict | None = None,
    task_seed: int | None = None,
):
    """Returns ``{task: {helper: metrics.summary}}``: every episode of ``split`` of each task (the first
    ``episodes`` if given) played ``seeds`` times by the constrained agent alone (``none``) and with each helper
    (the same keys for every helper). ``task_seed``: the seed ``split`` is built from (its placements and goals;
    default ``seed``); ``seed``: the runs' keys. ``max_events``: the event budget per episode
    (``play.DEFAULT_MAX_EVENTS``); ``timing``: a ``world.Timing`` (default: the calibrated one); ``agents``:
    ``{label: agent}`` for the helpers that are not rule-based names (the learned ones)."""
    from jaxsoc.envs.chaic import agents as A
    from jaxsoc.envs.chaic import metrics as M
    from jaxsoc.envs.chaic import play as P
    from jaxsoc.envs.chaic import tasks as T
    from jaxsoc.envs.chaic import world as W

    main, agents = A.make_agent("main"), agents or {}
    players = {}
    for h in ["none", *[h for h in helpers if h != "none"]]:
        learned = h in agents
        players[h] = P.make_player(main, agents[h], **_budget(max_events)) if learned else _player(h, max_events)
    results: dict = {}
    for task in tasks:
        states = T.cached_split(task, split, seed if task_seed is None else task_seed).states
        count = int(states.total.shape[0]) if episodes is None else min(episodes, int(states.total.shape[0]))
        batch = jax.tree_util.tree_map(lambda x, n=count: jnp.repeat(x[:n], seeds, axis=0), states)
        keys = jax.random.split(jax.random.key(seed), count * seeds)
        runs = {}
        for helper, run in players.items():
            start = time.perf_counter()
            runs[helper] = jax.tree_util.tree_map(np.asarray, run(batch, keys, timing or W.Timing()))
            runs[helper].pop("final", None)
            print(f"  {task} / {helper}: {time.perf_counter() - start:.1f} s", flush=True)
        shape = (count, seeds)
        results[task] = {
            h: M.summary(runs[h], None if h == "none" else runs["none"], shape) for h in ["none", *helpers] if h in runs
        }
    return results


def _cell(value, fmt="{:.2f}") -> str:
    return "/" if value is None else fmt.format(value)


def format_table(results: dict) -> str:
    """Returns a markdown table: per task and helper TR (EI), IA, CR, STD_TR, ER, and the paper's TR (for ``ppo`` its
    RL helper of table 5, for ``bm`` its LLM + BM helper)."""
    lines = [
        "| task | helper | TR (EI) | IA | CR | STD_TR | ER | paper TR |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for task, rows in results.items():
        for helper, m in rows.items():
            ei = "" if m["ei"] is None else f" ({m['ei']:+.2f})"
            paper = K.PAPER_TR[task][PAPER_ROWS[helper]] if helper in PAPER_ROWS else None
            if helper in LEARNED:
                paper = K.PAPER_HELPER_TR[LEARNED[helper]].get(task)
            er = _cell(m["er"]) if task == "shopping" else "/"
            ia = _cell(m["ia"]) if helper != "none" else "/"
            cr = _cell(m["cr"]) if helper != "none" else "/"
            lines.append(
                f"| {task} | {helper} | {m['tr']:.2f}{ei} | {ia} | {cr} | {m['std_tr']:.2f} | {er} | {_cell(paper)} |"
            )
    return "\n".join(lines)


def plot(results: dict, path: Path) -> Path:
    """Writes a bar plot of the transport rates (bars: jaxsoc; dots: the paper) to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = list(results)
    helpers = list(next(iter(results.values())))
    width = 0.8 / len(helpers)
    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(tasks)), 3.6))
    for i, helper in enumerate(helpers):
        x = np.arange(len(tasks)) + (i - (len(helpers) - 1) / 2) * width
        tr = [results[t][helper]["tr"] for t in tasks]
        se = [results[t][helper]["std_tr"] for t in tasks]
        ax.bar(x, tr, width, yerr=se, label=helper, capsize=2)
        if helper in PAPER_ROWS:
            ax.plot(x, [K.PAPER_TR[t][PAPER_ROWS[helper]] for t in tasks], "k.", markersize=5)
    ax.set_xticks(np.arange(len(tasks)), tasks, rotation=20)
    ax.set_ylabel("transport rate")
    ax.set_title("CHAIC: jaxsoc (bars, standard error) and the paper (dots)")
    ax.legend(fontsize=7, ncols=len(helpers))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


#: ``world.Timing``'s fields that are not durations in frames: the child's run-away probability and the view distance
#: in metres; every other field is a number of frames
TIMING_PROBABILITIES = ("child_run_prob",)
TIMING_DISTANCES = ("view_dist",)


def _check_timing(name: str, value: float, item: str) -> None:
    """Raises ``ValueError`` naming ``--timing item`` unless ``value`` fits field ``name``: finite, a probability in
    [0, 1], a distance >= 0 or a number of frames >= 0."""
    if not math.isfinite(value):
        raise ValueError(f"--timing {item}: {name} must be a finite number, got {value}")
    if name in TIMING_PROBABILITIES and not 0.0 <= value <= 1.0:
        raise ValueError(f"--timing {item}: {name} is a probability and must be in [0, 1], got {value}")
    if name in TIMING_DISTANCES and value < 0:
        raise ValueError(f"--timing {item}: {name} is a distance in metres and must be >= 0, got {value}")
    if name not in (*TIMING_PROBABILITIES, *TIMING_DISTANCES) and value < 0:
        raise ValueError(f"--timing {item}: {name} is a number of frames and must be >= 0, got {value}")


def parse_timing(items: list[str] | None):
    """Returns a ``world.Timing`` with ``name=value`` overrides (e.g. ``move=10``). Raises ``ValueError`` for an
    unknown name, a value that is not a number, NaN or infinite, negative frames or distance, or a probability
    outside [0, 1]."""
    from jaxsoc.envs.chaic import world as W

    timing = W.Timing()
    fields = set(vars(timing))
    for item in items or []:
        name, _, value = item.partition("=")
        if name not in fields:
            raise ValueError(f"unknown timing {name!r} in {item!r}; choose from {sorted(fields)}")
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"timing {item!r}: {value!r} is not a number") from None
        _check_timing(name, number, item)
        timing = timing.replace(**{name: number})
    return timing


#: the metrics of a row of ``chaic_eval.json``: always numbers, and numbers or null (``metrics.summary``)
ROW_NUMBERS, ROW_OPTIONAL = ("tr", "std_tr"), ("ei", "ia", "cr", "er")


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def read_results(path: Path) -> dict:
    """Returns ``path`` (a ``chaic_eval.json``: ``{"setting": {...}, "results": {task: {helper: metrics}}}``) after
    checking its structure. Raises ``ValueError`` naming the file and the key that is missing or malformed."""
    try:
        saved = json.loads(path.read_text())
    except ValueError as error:  # JSONDecodeError, UnicodeDecodeError
        raise ValueError(f"--append: {path} is not readable JSON: {error}") from None
    if not isinstance(saved, dict):
        what = type(saved).__name__
        raise ValueError(f"--append: {path} must hold an object with 'setting' and 'results', not a {what}")
    for key in ("setting", "results"):
        if not isinstance(saved.get(key), dict):
            raise ValueError(f"--append: {path}: {key!r} is missing or not an object")
    for task, rows in saved["results"].items():
        if not isinstance(rows, dict):
            raise ValueError(f"--append: {path}: results[{task!r}] must map helpers to their metrics")
        for helper, row in rows.items():
            where = f"results[{task!r}][{helper!r}]"
            if not isinstance(row, dict):
                raise ValueError(f"--append: {path}: {where} must be an object of metrics")
            for key in (*ROW_NUMBERS, *ROW_OPTIONAL):
                value = row.get(key)
                if not (_is_number(value) or (value is None and key in ROW_OPTIONAL and key in row)):
                    raise ValueError(f"--append: {path}: {where}[{key!r}] is missing or not a number")
    return saved


def _earlier(out: Path, setting: dict, tasks: list[str]) -> dict:
    """Returns the results in ``out/chaic_eval.json`` for ``--append``. Raises ``ValueError`` when there are none,
    the file is malformed (``read_results``) or they were measured with another setting or other tasks. A file
    without ``task_seed`` (written before ``--task-seed`` existed) was built from its ``seed``."""
    path = out / "chaic_eval.json"
    if not path.exists():
        raise ValueError(f"--append: {path} does not exist")
    earlier = read_results(path)
    saved = {"task_seed": earlier["setting"].get("seed"), **earlier["setting"]}
    differ = sorted(k for k in setting if k != "device" and saved.get(k) != setting[k])
    if differ or list(earlier["results"]) != tasks:
        what = differ or [f"tasks {list(earlier['results'])}"]
        raise ValueError(f"--append: {path} was measured with another {', '.join(map(str, what))}")
    return earlier["results"]


def _check_episodes(tasks: list[str], split: str, task_seed: int, episodes: int | None) -> None:
    """Raises ``ValueError`` when ``--episodes`` asks for more episodes than ``split`` of a task holds."""
    from jaxsoc.envs.chaic import tasks as T

    if episodes is None:
        return
    for task in tasks:
        size = len(T.split_episodes(task, split, task_seed))
        if episodes > size:
            raise ValueError(f"--episodes {episodes}: the {split} split of {task} has {size} episodes")


def cmd_eval(args) -> int:
    labels = parse_helpers(args.helper)
    require_positive(args, "seeds", "episodes", "max_events")
    if args.append and not args.out:
        raise ValueError("--append adds to the results in --out: give --out")
    tasks = _tasks(args.tasks)
    _check_episodes(tasks, args.split, args.task_seed, args.episodes)
    timing = parse_timing(args.timing)
    setting = {
        "split": args.split,
        "task_seed": args.task_seed,
        "seeds": args.seeds,
        "seed": args.seed,
        "episodes": args.episodes,
        "max_events": args.max_events,
        "timing": {k: float(v) for k, v in vars(timing).items()},
        "device": jax.devices()[0].device_kind,
    }
    earlier = _earlier(Path(args.out), setting, tasks) if args.append else {}
    agents = {label: learned_helper(label, run) for label, run in labels.items() if run}
    helpers = list(dict.fromkeys(["none", *labels]))
    counts = {"seeds": args.seeds, "episodes": args.episodes, "max_events": args.max_events}
    results = evaluate(
        tasks,
        helpers,
        seed=args.seed,
        split=args.split,
        timing=timing,
        agents=agents,
        task_seed=args.task_seed,
        **counts,
    )
    results = {task: {**earlier.get(task, {}), **rows} for task, rows in results.items()}
    table = format_table(results)
    print(table)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "chaic_eval.json").write_text(json.dumps({"setting": setting, "results": results}, indent=2))
        (out / "chaic_eval.md").write_text(table + "\n")
        print(f"wrote {out / 'chaic_eval.json'}, {out / 'chaic_eval.md'}, {plot(results, out / 'chaic_eval.png')}")
    return 0


def rollout(state: S.State, main, helper, key: jax.Array, events: int) -> S.State:
    """Returns the ``State`` after each of ``events`` events (leaves ``[events, ...]``) of one episode."""
    from jaxsoc.envs.chaic import play as P
    from jaxsoc.envs.chaic import world as W

    timing = W.Timing()
    k_m, k_h, k_run = jax.random.split(key, 3)
    state = P.prepare(state, helper)
    carry = (state, main.init(k_m, state, S.MAIN), helper.init(k_h, state, S.HELPER))

    def body(carry, k):
        state, mem_m, mem_h = carry
        k_a, k_b, k_s = jax.random.split(k, 3)
        ready = W.ready(state)
        act_m, new_m = main.act(k_a, mem_m, state, timing)
        act_h, new_h = helper.act(k_b, mem_h, state, timing)
        stepped, _ = W.step_event(k_s, state, jnp.stack([act_m, act_h]).astype(jnp.int32), timing)
        over = P.finished(state)
        state = W.jnp_select(over, state, stepped)
        mem_m = W.jnp_select(ready[S.MAIN] & ~over, new_m, mem_m)
        mem_h = W.jnp_select(ready[S.HELPER] & ~over, new_h, mem_h)
        return (state, mem_m, mem_h), state

    _, states = jax.lax.scan(body, carry, jax.random.split(k_run, events))
    return states


def cmd_render(args) -> int:
    from jaxsoc.envs.chaic import agents as A
    from jaxsoc.envs.chaic import render as R
    from jaxsoc.envs.chaic import tasks as T
    from jaxsoc.envs.chaic import world as W

    if args.helper not in RULE_HELPERS:
        raise ValueError(f"unknown helper {args.helper!r}; choose from {list(RULE_HELPERS)}")
    require_positive(args, "events", "frame_step", "size", "fps")
    task_set = T.make_split(_tasks([args.task])[0], args.split, args.seed)
    if not 0 <= args.episode < len(task_set):
        raise ValueError(f"--episode must be in [0, {len(task_set)}), got {args.episode}")
    state = jax.tree_util.tree_map(lambda x: x[args.episode], task_set.states)
    run = jax.jit(rollout, static_argnums=(1, 2, 4))
    states = run(state, A.make_agent("main"), rule_helper(args.helper), jax.random.key(args.seed), args.events)
    frames = np.asarray(states.frame)
    keep = np.flatnonzero(np.diff(frames // args.frame_step, prepend=-1) > 0)  # one image per frame_step frames
    shown = jax.tree_util.tree_map(lambda x: x[keep], states)
    images = np.asarray(R.episode_frames(shown, size=args.size))
    rates = np.asarray(jax.vmap(W.transport_rate)(shown))
    texts = [
        f"{args.task} ({args.split} {args.episode}), helper {args.helper}: frame {f}, TR {r:.2f}"
        for f, r in zip(frames[keep], rates)
    ]
    out = R.save_episode_gif(images, args.out, texts=texts, fps=args.fps)
    print(f"wrote {out} ({len(keep)} images, final frame {frames[-1]}, transport rate {rates[-1]:.2f})")
    return 0


KINDS = ("chaic-bm",)


def config_type(kind: str) -> type:
    """Returns the config class of ``jaxsoc train <kind>`` (``KINDS``). Raises ``ValueError`` for another kind."""
    if kind not in KINDS:
        raise ValueError(f"unknown CHAIC learner {kind!r}; choose from {list(KINDS)}")
    from jaxsoc.learners.chaic.bm_config import BMConfig

    return BMConfig


def train_command(args, overrides: dict[str, Any]) -> dict[str, Any]:
    """Runs ``jaxsoc train chaic-bm`` (``overrides``: config fields from ``--set``; ``--episodes`` sets the train
    episodes per task, ``--epochs`` the epochs, ``--seed`` the seed unless ``--set seed=`` gives it); returns the
    summary."""
    from jaxsoc.learners.chaic import bm_config, bm_train

    config_type(getattr(args, "algo", KINDS[0]))
    overrides = dict(overrides)
    if getattr(args, "episodes", None) is not None:
        if not float(args.episodes).is_integer():
            raise ValueError(f"--episodes takes a whole number of train episodes per task, got {args.episodes}")
        overrides["episodes"] = int(args.episodes)
    if getattr(args, "epochs", None) is not None:
        overrides["epochs"] = args.epochs
    overrides.setdefault("seed", args.seed)
    return bm_train.train(bm_config.BMConfig(**overrides), args.out, args.resume, not args.quiet)


def run_line(summary: dict[str, Any], out: Path) -> str:
    """The line that ends ``jaxsoc train chaic-bm``."""
    shown = (
        "epochs_done",
        "train_loss",
        "train_goal_accuracy",
        "test_loss",
        "test_goal_accuracy",
        "test_goal_jaccard",
        "test_micro_f1",
        "test_constraint_accuracy",
        "wall_s",
    )
    parts = [
        f"{k} {summary[k]:.4g}" if isinstance(summary[k], float) else f"{k} {summary[k]}"
        for k in shown
        if summary.get(k) is not None
    ]
    return f"trained {summary.get('title', 'the CHAIC behaviour model')} in {out}: " + ", ".join(parts)


def add_parser(sub) -> None:
    """Adds ``jaxsoc chaic tasks|eval|render``."""
    chaic = sub.add_parser("chaic", help="CHAIC: constrained agents, helpers and the paper's metrics")
    verbs = chaic.add_subparsers(dest="verb", required=True)

    tasks = verbs.add_parser("tasks", help="summarise the task sets (goal totals, objects, heights)")
    tasks.add_argument("--tasks", nargs="+", default=["all"], help=f"{', '.join(K.TASKS)} or all")
    tasks.add_argument("--split", choices=["train", "test"], default="test")
    tasks.add_argument("--seed", type=int, default=0)
    tasks.set_defaults(func=clear_errors(cmd_tasks))

    evaluate_ = verbs.add_parser("eval", help="the constrained agent alone and with helpers: TR, EI, IA, CR, ER")
    evaluate_.add_argument(
        "--helper",
        nargs="+",
        default=list(HELPERS),
        help=f"any of {', '.join(RULE_HELPERS)}, and learned ones as {' '.join(k + '=RUN' for k in LEARNED)}",
    )
    evaluate_.add_argument("--tasks", nargs="+", default=["all"], help=f"{', '.join(K.TASKS)} or all")
    evaluate_.add_argument("--split", choices=["train", "test"], default="test")
    evaluate_.add_argument(
        "--task-seed", type=int, default=0, help="the seed the split is built from (its placements and goals)"
    )
    evaluate_.add_argument("--seeds", type=int, default=3, help="runs per episode")
    evaluate_.add_argument("--seed", type=int, default=0, help="the runs' keys (the same episodes for any seed)")
    evaluate_.add_argument(
        "--episodes", type=int, help="only the first N episodes of the split (default: all; at most its size)"
    )
    evaluate_.add_argument("--max-events", type=int, help="events per episode (default: play.DEFAULT_MAX_EVENTS)")
    evaluate_.add_argument(
        "--timing",
        nargs="+",
        help="world.Timing overrides, e.g. move=10 turn=4: frames >= 0, child_run_prob in [0, 1], view_dist >= 0",
    )
    evaluate_.add_argument("--out", help="directory for chaic_eval.{json,md,png}")
    evaluate_.add_argument("--append", action="store_true", help="add these helpers to the results in --out")
    evaluate_.set_defaults(func=clear_errors(cmd_eval))

    render = verbs.add_parser("render", help="a top-down GIF of one episode")
    render.add_argument("--task", default="normal")
    render.add_argument("--split", choices=["train", "test"], default="test")
    render.add_argument("--episode", type=int, default=0)
    render.add_argument("--helper", default="rhp")
    render.add_argument("--seed", type=int, default=0)
    render.add_argument("--events", type=int, default=1500, help="events simulated (enough for 3,000 frames)")
    render.add_argument("--frame-step", type=int, default=30, help="one image per this many frames")
    render.add_argument("--size", type=int, default=160)
    render.add_argument("--fps", type=float, default=8)
    render.add_argument("--out", default="chaic.gif")
    render.set_defaults(func=clear_errors(cmd_render))
