"""``jaxsoc household``: the household family's subcommands.

jaxsoc household tasks --out tasks                        # train.npz, test-1.npz, test-2.npz from seed 0
jaxsoc household tasks --split test-1 --seed 3 --out t    # one set
jaxsoc household tasks --show tasks/test-1.npz            # check a file and summarise it
jaxsoc household render --split test-1 --task 4 --out ep.gif   # the scripted solver as Alice, random Bob
jaxsoc household eval --helper hp-tg hprg random oracle-b oracle-ab --split test-1 --out results/help
jaxsoc household eval --helper hp hybrid --watch runs/watch --hybrid runs/hybrid --demos demos --out results/help
jaxsoc household demos --split train --out demos            # Alice-alone Watch demonstrations: demos/train.npz
jaxsoc household goals runs/watch --demos demos --out results   # goal inference on test-1 / test-2 vs the paper

It is also the front end of Watch-And-Help's learners for ``jaxsoc train watch|hybrid|hrl`` (``config_type``,
``train_command``, ``run_line``):

jaxsoc train watch --demos demos --out runs/watch                    # the goal-inference model (the paper's)
jaxsoc train watch --demos demos --set input=last --out runs/last   # the last-observation ablation
jaxsoc household goals runs/watch runs/last --demos demos --out results   # precision / recall on test-1, test-2
jaxsoc train hybrid --out runs/hybrid                                # the Hybrid's high level, Alice in the loop
jaxsoc train hrl --out runs/hrl                                      # the HRL's low level, Bob alone
jaxsoc household eval --helper hp hybrid hrl --watch runs/watch --hybrid runs/hybrid --hrl runs/hrl --demos demos
"""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.cli.errors import clear_errors, require_positive

POLICIES = ("noop", "random", "solver")
HELPERS = ("alice-alone", "hp", "hp-tg", "hprg", "hybrid", "hrl", "random", "oracle-b", "oracle-ab")
#: helpers given the goal inferred from the paired demonstration (``--watch RUN``), as the paper's HP, Hybrid, HRL
INFERRED = ("hp", "hybrid", "hrl")


def _summary(task_set) -> str:
    from jaxsoc.envs.household import predicates as PR

    acts = collections.Counter(
        "+".join(PR.ACTIVITY_NAMES[a] for a in row if a >= 0) for row in np.asarray(task_set.activities)
    )
    apts = collections.Counter(int(a) for a in np.asarray(task_set.states.apartment))
    goals = len({np.asarray(g).tobytes() for g in np.asarray(task_set.states.goal_count)})
    lines = [
        f"{task_set.split} (seed {task_set.seed}): {len(task_set)} tasks, {goals} distinct goals",
        "  activities: " + ", ".join(f"{k} {v}" for k, v in sorted(acts.items())),
        "  apartments: " + ", ".join(f"{k}: {v}" for k, v in sorted(apts.items())),
        "  task 0: " + task_set.goal_texts()[0],
    ]
    return "\n".join(lines)


def cmd_tasks(args) -> int:
    from jaxsoc.envs.household import tasks as T

    if args.show:
        print(_summary(T.load(args.show)))
        return 0
    if not args.out:
        raise ValueError("--out DIR is required to write task sets (or give --show FILE)")
    splits = list(T.SPLITS) if args.split == "all" else [args.split]
    for split in splits:
        task_set = T.make_split(split, args.seed)
        path = T.save(task_set, Path(args.out) / f"{split}.npz")
        print(f"wrote {path}\n{_summary(task_set)}")
    return 0


def _policy(name: str, char: int):
    from jaxsoc.envs.household import env as E

    if name == "noop":
        return lambda key, state: jnp.int32(0)
    if name == "random":
        return lambda key, state: E.random_valid_action(key, state, char)
    from jaxsoc.envs.household.solver import solver_action

    return lambda key, state: solver_action(state, char)


def rollout(task, params, alice: str, bob: str, steps: int, key: jax.Array):
    """Returns ``(states, actions, success)``: a household ``world.State`` with a leading axis of ``steps + 1``
    (the first is ``task``), the ``int32[steps, 2]`` actions taken, and ``bool[steps]`` success after each step.
    Once the goal holds the state stays as it is."""
    from jaxsoc.envs.household import env as E

    policies = (_policy(alice, 0), _policy(bob, 1))

    def body(carry, k):
        state, done = carry
        k_a, k_b, k_step = jax.random.split(k, 3)
        actions = jnp.stack([policies[0](k_a, state), policies[1](k_b, state)])
        actions = jnp.where(done, 0, actions)
        nxt, _, success, _, _ = E.advance(k_step, state, actions, params)
        nxt = jax.tree_util.tree_map(lambda new, old: jnp.where(done, old, new), nxt, state)
        return (nxt, done | success), (nxt, actions, done | success)

    _, (states, actions, success) = jax.lax.scan(body, (task, jnp.array(False)), jax.random.split(key, steps))
    states = jax.tree_util.tree_map(lambda first, rest: jnp.concatenate([first[None], rest]), task, states)
    return states, actions, success


def cmd_render(args) -> int:
    from jaxsoc.envs.household import env as E
    from jaxsoc.envs.household import tasks as T
    from jaxsoc.envs.household.render import render_episode, save_episode_gif

    require_positive(args, "steps", "fps")
    task_set = T.load(args.tasks) if args.tasks else T.cached_split(args.split, args.seed)
    if not 0 <= args.task < len(task_set):
        raise ValueError(f"--task must be in [0, {len(task_set)}) for {task_set.split}, got {args.task}")
    params = E.HouseholdParams(tasks=task_set.states, teleport=args.teleport)
    run = jax.jit(lambda task, key: rollout(task, params, args.alice, args.bob, args.steps, key))
    states, actions, success = run(task_set.task(args.task), jax.random.key(args.seed))
    success = np.asarray(success)
    last = int(np.argmax(success)) + 1 if success.any() else args.steps
    states = jax.tree_util.tree_map(lambda x: x[: last + 1], states)
    frames, texts = render_episode(states, np.concatenate([np.asarray(actions[:last]), np.zeros((1, 2), int)]))
    path = save_episode_gif(frames, texts, args.out, fps=args.fps)
    outcome = f"goal reached in {last} steps" if success.any() else f"goal not reached in {args.steps} steps"
    print(f"wrote {path}: {task_set.split} task {args.task}, alice={args.alice}, bob={args.bob}, {outcome}")
    return 0


def batch_size(episodes: int, most: int) -> int:
    """Returns the batch that runs ``episodes`` episodes in the fewest batches of at most ``most`` each, evened out
    so that the last batch pads fewer episodes than there are batches: ``episodes`` itself when it is <= ``most``
    (one batch, no padding)."""
    batches = -(-episodes // most)
    return -(-episodes // batches)


def _episodes(
    task_set, agent_alice, agent_helper, params, seeds: int, batch: int, num_tasks: int, seed: int, goals=None
):
    """Returns ``play``'s results for every (task, seed) pair, reshaped to ``[tasks, seeds]``, run at most
    ``batch`` at a time (``batch_size``: one compiled shape, padded by fewer than one episode per batch);
    ``goals`` (int8[len(task_set), 30] or None) are the helper's goals (``play``'s ``helper_goals``)."""
    from jaxsoc.envs.household import tasks as T
    from jaxsoc.envs.household.agents import evaluate as EV

    run = jax.jit(lambda t, k, g: EV.play(t, agent_alice, agent_helper, params, k, helper_goals=g))
    chosen = task_index(len(task_set), num_tasks)
    index = np.repeat(chosen, seeds)
    keys = jax.random.split(jax.random.key(seed), len(index))
    batch = batch_size(len(index), batch)
    parts = []
    for start in range(0, len(index), batch):
        real = index[start : start + batch]
        pad = batch - len(real)
        rows = np.concatenate([real, np.zeros(pad, int)])
        k = jnp.concatenate([keys[start : start + batch], keys[:pad]])
        g = None if goals is None else jnp.asarray(goals[rows])
        out = jax.device_get(run(T.take(task_set.states, rows), k, g))
        parts.append({name: value[: len(real)] for name, value in out.items()})
    return {
        name: np.concatenate([p[name] for p in parts]).reshape(num_tasks, seeds, *parts[0][name].shape[1:])
        for name in parts[0]
    }


def task_index(total: int, num: int) -> np.ndarray:
    """Returns ``num`` task indices spread evenly over ``[0, total)`` (all of them when ``num >= total``), so a
    subset covers every activity of a set ordered by activity."""
    if num >= total:
        return np.arange(total)
    return np.unique(np.round(np.linspace(0, total - 1, num)).astype(int))


def _format(results: dict, split: str) -> str:
    lines = [
        f"Help stage on {split}: mean ± standard error over tasks (each task's runs averaged first)",
        "",
        "| helper | group | tasks | success alone | success helped | length alone | length helped | speedup | "
        "reward alone | reward helped | runs with a conflict |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    fmt = lambda pair, p=3: f"{pair[0]:.{p}f} ± {pair[1]:.{p}f}" if pair else "–"  # noqa: E731
    for helper, table in results.items():
        for group, row in table.items():
            lines.append(
                f"| {helper} | {group} | {row['tasks']} | {fmt(row['alone_success'])} | "
                f"{fmt(row.get('helped_success'))} | {fmt(row['alone_length'], 1)} | "
                f"{fmt(row.get('helped_length'), 1)} | "
                f"{fmt(row.get('speedup'))} | {fmt(row['alone_reward'])} | {fmt(row.get('helped_reward'))} | "
                f"{fmt(row.get('conflict_runs'), 2)} |"
            )
    return "\n".join(lines)


def _plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 4))
    for helper, table in results.items():
        row = table["all"]
        if "speedup" not in row:
            continue
        ax.errorbar(
            row["helped_success"][0],
            row["speedup"][0],
            xerr=row["helped_success"][1],
            yerr=row["speedup"][1],
            fmt="o",
            capsize=3,
            label=helper,
        )
    alone = next(iter(results.values()))["all"]["alone_success"]
    ax.errorbar(alone[0], 0.0, xerr=alone[1], fmt="s", color="black", capsize=3, label="Alice alone")
    ax.axhline(0.0, color="grey", lw=0.5)
    ax.set_xlabel("success rate")
    ax.set_ylabel("speedup (L_Alice / L_help - 1)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _helper_agent(name: str, args):
    """Returns Bob for helper ``name`` (None for ``alice-alone``)."""
    from jaxsoc.envs.household.agents import agents as AG

    if name == "alice-alone":
        return None
    if name == "hybrid":
        from jaxsoc.learners.household import hybrid

        return hybrid.helper_from_run(args.hybrid)
    if name == "hrl":
        from jaxsoc.learners.household import hrl

        commit = {"auto": None, "on": True, "off": False}[args.hrl_commit]
        return hrl.helper_from_run(args.hrl, args.hybrid, commit=commit)
    kind = {"hp": "hp", "hp-tg": "hp", "oracle-ab": "oracle-b"}.get(name, name)
    return AG.make_agent(kind, args.simulations)


def inferred_goals(args, task_set, watch=None) -> np.ndarray:
    """Returns int8[len(task_set), 30]: the goal the ``--watch`` run (``watch``: its ``watch_run.load``, if read
    already) infers for every task from its paired demonstration (``--demos DIR/<split>.npz``, else recorded now:
    ``demos.split_tasks``), by ``task_id``. Raises ``ValueError`` when a task has no demonstration."""
    from jaxsoc.envs.household.agents import demos as D
    from jaxsoc.learners.household import watch_run

    if args.demos:
        demos = D.load(Path(args.demos) / f"{task_set.split}.npz")
    else:
        print(f"recording the paired {task_set.split} demonstrations (give --demos DIR to reuse them)", flush=True)
        demos = D.record(D.split_tasks(task_set.split, args.task_seed), args.seed, num_simulations=args.simulations)
    predicted = np.asarray(watch_run.infer_goals(watch or args.watch, demos), np.int8)
    goals = np.full((len(task_set), predicted.shape[1]), -1, np.int8)
    ids = np.asarray(demos.tasks.states.task_id)
    if ids.min() < 0 or ids.max() >= len(task_set):
        raise ValueError(f"the demonstrations' task ids do not index the {len(task_set)} tasks of {task_set.split}")
    goals[ids] = predicted
    missing = np.flatnonzero((goals < 0).any(1))
    if missing.size:
        raise ValueError(f"{missing.size} tasks of {task_set.split} have no demonstration (e.g. task {missing[0]})")
    return goals


def cmd_eval(args) -> int:
    import json
    import time

    from jaxsoc.envs.household import env as E
    from jaxsoc.envs.household import tasks as T
    from jaxsoc.envs.household.agents import agents as AG
    from jaxsoc.envs.household.agents import evaluate as EV

    for name in args.helper:
        if name not in HELPERS:
            raise ValueError(f"unknown helper {name!r}; choose from {list(HELPERS)}")
    if args.seeds < 1 or args.batch < 1 or args.simulations < 1 or (args.num_tasks is not None and args.num_tasks < 1):
        raise ValueError("--seeds, --batch, --simulations and --num-tasks must be positive")
    inferred = [n for n in args.helper if n in INFERRED]
    if inferred and not args.watch:
        raise ValueError(
            f"{', '.join(inferred)} help with the goal inferred from the paired demonstration: give --watch RUN "
            "(a 'jaxsoc train watch' run); hp-tg is the planner given the true goal"
        )
    for name, flag in (("hybrid", args.hybrid), ("hrl", args.hrl)):
        if name in args.helper and not flag:
            raise ValueError(f"--helper {name} needs --{name} RUN (a 'jaxsoc train {name}' run)")
    if "hrl" in args.helper and not args.hybrid:
        raise ValueError("--helper hrl uses the Hybrid's high-level policy: give --hybrid RUN as well")
    out = Path(args.out) if args.out else None
    earlier = _earlier(out) if args.append else None  # a malformed record is refused before the set is built
    task_set = T.load(args.tasks) if args.tasks else T.cached_split(args.split, args.task_seed)
    num_tasks = len(task_set) if args.num_tasks is None else min(args.num_tasks, len(task_set))
    params = E.HouseholdParams(tasks=task_set.states, teleport=args.teleport)
    acts = np.asarray(task_set.activities)[task_index(len(task_set), num_tasks)]
    setting = {
        "split": task_set.split,
        "task_seed": int(task_set.seed),
        "tasks": num_tasks,
        "seeds": args.seeds,
        "simulations": args.simulations,
        "teleport": args.teleport,
        "seed": args.seed,
    }
    if earlier is not None:
        _check_setting(earlier, setting, out)
    # the learned runs are read (and so checked) before any episode is played or demonstration recorded
    bobs = {name: _helper_agent(name, args) for name in args.helper}
    if inferred:
        from jaxsoc.learners.household import watch_run

        goals = inferred_goals(args, task_set, watch_run.load(args.watch))
    else:
        goals = None
    episodes = lambda alice, helper, g=None: _episodes(  # noqa: E731
        task_set, alice, helper, params, args.seeds, args.batch, num_tasks, args.seed, g
    )
    alone_runs, results, raw = {}, {}, {}
    start = time.perf_counter()
    for name in args.helper:
        alice_kind = "alice-oracle" if name == "oracle-ab" else "alice"
        alice = AG.make_agent(alice_kind, args.simulations)
        if alice_kind not in alone_runs:
            alone_runs[alice_kind] = episodes(alice, None)
        helper = bobs[name]
        helped = episodes(alice, helper, goals if name in INFERRED else None) if helper is not None else None
        results[name] = EV.metrics(alone_runs[alice_kind], helped, acts)
        raw[name] = {"alone": alone_runs[alice_kind], "helped": helped}
        print(f"{name}: done ({time.perf_counter() - start:.0f} s)", flush=True)
    lengths = {k: {w: (v[w]["length"].tolist() if v[w] is not None else None) for w in v} for k, v in raw.items()}
    record = {**setting, "device": jax.devices()[0].device_kind, "seconds": time.perf_counter() - start}
    record.update(results=results, lengths=lengths, runs={k: args.watch for k in results if k in INFERRED})
    if earlier is not None:
        record = _merged(earlier, record)
    print(_format(record["results"], task_set.split))
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "household_help.json").write_text(json.dumps(record, indent=1))
        (out / "household_help.md").write_text(_format(record["results"], task_set.split) + "\n")
        _plot(record["results"], out / "household_help.png")
        print(f"wrote {out}/household_help.{{json,md,png}}")
    return 0


#: the figures of a row of ``household_help.json`` (``evaluate.metrics``), each ``[mean, standard error]``: always
#: there, and there with a helper
ROW_ALWAYS = ("alone_success", "alone_length", "alone_reward")
ROW_HELPED = ("helped_success", "helped_length", "helped_reward", "speedup", "conflict_runs")


def _is_pair(value) -> bool:
    number = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)  # noqa: E731
    return isinstance(value, list) and len(value) == 2 and all(map(number, value))


def read_record(path: Path) -> dict:
    """Returns ``path`` (a ``household_help.json``) after checking what ``--append`` reads of it: an object whose
    ``results`` map each helper to groups (``all`` among them) of rows with ``tasks`` and ``[mean, se]`` figures,
    whose ``lengths`` and ``runs`` are objects and whose ``seconds`` is a number. Raises ``ValueError`` naming the
    file and the key that is missing or malformed."""
    try:
        old = json.loads(path.read_text())
    except ValueError as error:  # JSONDecodeError, UnicodeDecodeError
        raise ValueError(f"--append: {path} is not readable JSON: {error}") from None
    if not isinstance(old, dict):
        raise ValueError(f"--append: {path} must hold an object, not a {type(old).__name__}")
    for key in ("results", "lengths", "runs"):
        if not isinstance(old.get(key), dict):
            raise ValueError(f"--append: {path}: {key!r} is missing or not an object")
    if not isinstance(old.get("seconds"), (int, float)) or isinstance(old.get("seconds"), bool):
        raise ValueError(f"--append: {path}: 'seconds' is missing or not a number")
    for helper, groups in old["results"].items():
        if not isinstance(groups, dict) or "all" not in groups:
            raise ValueError(f"--append: {path}: results[{helper!r}] must map groups, 'all' among them, to rows")
        for group, row in groups.items():
            where = f"results[{helper!r}][{group!r}]"
            if not isinstance(row, dict) or not isinstance(row.get("tasks"), int):
                raise ValueError(f"--append: {path}: {where} must be an object with an integer 'tasks'")
            for key in (*ROW_ALWAYS, *(k for k in ROW_HELPED if k in row)):
                if not _is_pair(row.get(key)):
                    raise ValueError(f"--append: {path}: {where}[{key!r}] is missing or not [mean, standard error]")
    return old


def _earlier(out: Path | None) -> dict | None:
    """Returns the record already in ``out`` for ``--append`` (None when there is none); raises ``ValueError`` when
    it is malformed (``read_record``) or there is no ``--out``."""
    if out is None:
        raise ValueError("--append adds to the results in --out DIR: give --out")
    path = out / "household_help.json"
    return read_record(path) if path.is_file() else None


def _check_setting(old: dict, setting: dict, out: Path) -> None:
    """Raises ``ValueError`` when the record ``old`` in ``out`` was measured in another ``setting`` (split, task
    seed, tasks, seeds, simulations, teleport, seed). A record without ``task_seed`` (written before
    ``--task-seed`` existed, when the split was built from ``--seed``) has its ``seed`` as task seed."""
    old = {"task_seed": old.get("seed"), **old}
    other = {k: old.get(k) for k in setting if old.get(k) != setting[k]}
    if other:
        raise ValueError(f"--append: {out / 'household_help.json'} was measured with {other}, not {setting}")


def _merged(old: dict, new: dict) -> dict:
    """Returns the earlier record ``old`` with ``new``'s helpers added (replacing those measured again)."""
    merged = dict(old)
    for name in ("results", "lengths", "runs"):
        merged[name] = {**old.get(name, {}), **new[name]}
    merged["seconds"] = old.get("seconds", 0.0) + new["seconds"]
    return merged


def cmd_demos(args) -> int:
    import time

    from jaxsoc.envs.household.agents import demos as D

    if args.batch < 1 or args.simulations < 1 or args.max_steps < 1:
        raise ValueError("--batch, --simulations and --max-steps must be positive")
    task_set = D.split_tasks(args.split, args.task_seed, args.episodes)
    print(
        f"recording {len(task_set)} {args.split} episodes of Alice alone ({args.simulations} simulations)", flush=True
    )
    start = time.perf_counter()
    report = lambda done, total: print(f"  {done}/{total} ({time.perf_counter() - start:.0f} s)", flush=True)  # noqa: E731
    demos = D.record(task_set, args.seed, args.max_steps, args.batch, args.simulations, progress=report)
    seconds = time.perf_counter() - start
    path = D.save(demos, Path(args.out) / f"{args.split}.npz")
    won = demos.success
    mean_won = f"{demos.length[won].mean():.1f}" if won.any() else "-"
    print(
        f"wrote {path}: {len(demos)} episodes, success rate {won.mean():.3f}, mean length {demos.length.mean():.1f} "
        f"(successful: {mean_won}), {len(demos) / seconds:.2f} episodes/s"
    )
    return 0


KINDS = ("watch", "hybrid", "hrl")
#: the paper's goal-inference figures (§5.3): (precision, recall) per model and test set
PAPER_GOALS = {
    "graph": {"test-1": (0.85, 0.96), "test-2": (0.68, 0.64)},
    "last": {"test-1": (0.79, 0.75)},
    "actions": {"test-1": (0.99, 0.99)},
    "chance": {"test-1": (0.08, 0.09)},
}


def config_type(kind: str) -> type:
    """Returns the config class of ``jaxsoc train <kind>``."""
    if kind == "watch":
        from jaxsoc.learners.household.watch import WatchConfig

        return WatchConfig
    if kind == "hybrid":
        from jaxsoc.learners.household.hybrid_config import HybridConfig

        return HybridConfig
    from jaxsoc.learners.household.hrl_config import HRLConfig

    return HRLConfig


def train_command(args, overrides: dict[str, Any]) -> dict[str, Any]:
    """Runs ``jaxsoc train watch|hybrid|hrl`` (``overrides``: config fields from ``--set``); returns the summary."""
    if args.algo == "watch":
        from jaxsoc.learners.household import watch_run

        if not args.demos:
            raise ValueError("jaxsoc train watch needs --demos DIR (train.npz [, extra.npz]: jaxsoc household demos)")
        if args.epochs is not None:
            overrides = {**overrides, "epochs": args.epochs}
        config = config_type("watch")(**overrides)
        episodes = None if args.episodes is None else int(args.episodes)
        curves = watch_curves(args.demos, getattr(args, "curves", None) or [])
        return watch_run.train(config, args.out, args.demos, args.resume, not args.quiet, episodes, curves)
    if args.algo == "hybrid":
        from jaxsoc.learners.household import hybrid_train

        return hybrid_train.train(config_type("hybrid")(**overrides), args.out, args.resume, not args.quiet)
    from jaxsoc.learners.household import hrl_train

    return hrl_train.train(config_type("hrl")(**overrides), args.out, args.resume, not args.quiet)


def watch_curves(demos_dir: str, splits: list[str]) -> dict:
    """Returns ``{split: Demos}``: the paired demonstrations ``demos_dir/<split>.npz`` that ``jaxsoc train watch
    --curves`` scores after every epoch. Raises ``ValueError`` naming a missing file."""
    from jaxsoc.envs.household.agents import demos as D

    found = {}
    for split in splits:
        path = Path(demos_dir) / f"{split}.npz"
        if not path.is_file():
            raise ValueError(
                f"--curves {split}: no {path} (`jaxsoc household demos --split {split} --out {demos_dir}`)"
            )
        found[split] = D.load(path)
    return found


def run_line(summary: dict[str, Any], out: Path) -> str:
    """The line that ends ``jaxsoc train watch|hybrid|hrl``."""
    return f"trained {summary.get('title', summary.get('kind', 'a household learner'))} in {out}: " + ", ".join(
        f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
        for k, v in summary.items()
        if k not in ("title", "sizes", "checkpoint") and isinstance(v, (int, float, str))
    )


def goal_rows(runs: list[str], demos_dir: str, splits: list[str], seed: int = 0) -> list[dict[str, Any]]:
    """Returns one row per (model, decoding, split): the watch runs' precision, recall, F1 and accuracy (raw argmax
    and grammar decoding, ``watch.decode``) on the paired
    demonstrations ``demos_dir/<split>.npz``, then chance (goals drawn from ``train.npz``'s successful
    demonstrations, ``watch.chance_counts``), each beside the paper's figures where it gives them."""
    import jax

    from jaxsoc.envs.household.agents import demos as D
    from jaxsoc.learners.household import watch as WA
    from jaxsoc.learners.household import watch_run

    sets = {split: D.load(Path(demos_dir) / f"{split}.npz") for split in splits}
    rows = []
    for run in runs:
        config, params = watch_run.load(run)
        for split, demos in sets.items():
            paper = PAPER_GOALS.get(config.input, {}).get(split)
            scored = watch_run.evaluate((config, params), demos)
            for decoding in WA.DECODINGS:
                prefix = "" if decoding == "argmax" else f"{decoding}_"
                row = {"model": config.input, "decoding": decoding, "run": str(run), "split": split, "paper": paper}
                row.update({k: scored[prefix + k] for k in ("precision", "recall", "f1", "accuracy")})
                rows.append({**row, "episodes": scored["episodes"]})
    train_goals = np.asarray(D.load(Path(demos_dir) / "train.npz", successful_only=True).tasks.states.goal_count)
    for split, demos in sets.items():
        chance = WA.chance_counts(jax.random.key(seed), train_goals, len(demos))
        scores = WA.scores(chance, np.asarray(demos.tasks.states.goal_count))
        paper = PAPER_GOALS["chance"].get(split)
        rows.append(
            {"model": "chance", "decoding": "-", "run": "-", "split": split, "paper": paper, **scores}
            | {"episodes": len(demos)}
        )
    return rows


def goal_table(rows: list[dict[str, Any]]) -> str:
    """Returns the markdown table of ``goal_rows``."""
    lines = [
        "| model | decoding | split | demonstrations | precision | recall | F1 | accuracy | paper precision / recall "
        "| run |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        paper = f"{r['paper'][0]:.2f} / {r['paper'][1]:.2f}" if r["paper"] else "–"
        lines.append(
            f"| {r['model']} | {r.get('decoding', '-')} | {r['split']} | {r['episodes']} | {r['precision']:.3f} | "
            f"{r['recall']:.3f} | {r['f1']:.3f} | {r['accuracy']:.3f} | {paper} | {r['run']} |"
        )
    return "\n".join(lines)


def cmd_goals(args) -> int:
    """``jaxsoc household goals RUN ... --demos DIR``: the Watch stage's table (stdout, and ``--out``)."""
    rows = goal_rows(args.runs, args.demos, args.split, args.seed)
    table = goal_table(rows)
    print(table)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "household_goals.json").write_text(json.dumps(rows, indent=1))
        (out / "household_goals.md").write_text(table + "\n")
        print(f"wrote {out}/household_goals.{{json,md}}")
    return 0


def add_goals_parser(verbs) -> None:
    """Adds ``jaxsoc household goals`` to the household command's verbs."""
    goals = verbs.add_parser("goals", help="the Watch stage: goal-inference precision / recall of watch runs")
    goals.add_argument("runs", nargs="+", help="'jaxsoc train watch' run directories")
    goals.add_argument("--demos", required=True, help="directory with train.npz and <split>.npz demonstrations")
    goals.add_argument("--split", nargs="+", default=["test-1", "test-2"], choices=["test-1", "test-2", "train"])
    goals.add_argument("--seed", type=int, default=0, help="the chance baseline's draws")
    goals.add_argument("--out", help="directory for household_goals.{json,md}")
    goals.set_defaults(func=clear_errors(cmd_goals))


def add_parser(sub) -> None:
    """Adds ``jaxsoc household {tasks,render,eval,demos}`` to the ``jaxsoc`` command's subparsers."""
    from jaxsoc.envs.household.tasks import SPLITS

    household = sub.add_parser("household", help="Watch-And-Help's household: task sets and episode GIFs")
    verbs = household.add_subparsers(dest="verb", required=True)

    tasks = verbs.add_parser("tasks", help="write the train / test-1 / test-2 task sets, or check one (--show)")
    tasks.add_argument("--split", choices=[*SPLITS, "all"], default="all")
    tasks.add_argument("--seed", type=int, default=0)
    tasks.add_argument("--out", help="directory for <split>.npz")
    tasks.add_argument("--show", help="load this task file (validating it) and summarise it instead")
    tasks.set_defaults(func=clear_errors(cmd_tasks))

    render = verbs.add_parser("render", help="a GIF of one task played by scripted / random characters")
    render.add_argument("--split", choices=list(SPLITS), default="test-1")
    render.add_argument("--tasks", help="a task file written by 'jaxsoc household tasks' (instead of --split)")
    render.add_argument("--task", type=int, default=0, help="task index in the set")
    render.add_argument("--seed", type=int, default=0, help="the set's seed and the rollout's key")
    render.add_argument("--alice", choices=POLICIES, default="solver", help="solver: reads the true state")
    render.add_argument("--bob", choices=POLICIES, default="random")
    render.add_argument("--steps", type=int, default=250)
    render.add_argument("--teleport", action="store_true", help="walks arrive at once")
    render.add_argument("--fps", type=float, default=4)
    render.add_argument("--out", default="household.gif")
    render.set_defaults(func=clear_errors(cmd_render))

    evaluate = verbs.add_parser("eval", help="the Help stage: Alice alone and with helpers, the paper's metrics")
    evaluate.add_argument(
        "--helper",
        nargs="+",
        default=["hp-tg"],
        help=f"any of {', '.join(HELPERS)}; hp, hybrid and hrl are given the goal --watch infers, hp-tg the true one",
    )
    evaluate.add_argument("--watch", help="a 'jaxsoc train watch' run: infers the goal for hp, hybrid and hrl")
    evaluate.add_argument("--demos", help="directory with <split>.npz paired demonstrations (default: record them)")
    evaluate.add_argument("--hybrid", help="a 'jaxsoc train hybrid' run (for --helper hybrid and hrl)")
    evaluate.add_argument("--hrl", help="a 'jaxsoc train hrl' run: the low-level policy of --helper hrl")
    evaluate.add_argument(
        "--hrl-commit",
        choices=["auto", "on", "off"],
        default="auto",
        help="hrl keeps its subgoal until it gains an instance or times out (on), or its high level chooses at "
        "every step (off); auto: on for a low level trained on the belief teacher (a belief network)",
    )
    evaluate.add_argument("--split", choices=list(SPLITS), default="test-1")
    evaluate.add_argument("--tasks", help="a task file (instead of --split)")
    evaluate.add_argument("--task-seed", type=int, default=0, help="the seed the split is built from")
    evaluate.add_argument("--num-tasks", type=int, help="N tasks spread evenly over the set (default: all)")
    evaluate.add_argument("--seeds", type=int, default=5, help="runs per task (the paper: 5)")
    evaluate.add_argument("--simulations", type=int, default=100, help="tree-search simulations per step")
    evaluate.add_argument("--teleport", action="store_true", help="walks arrive at once")
    evaluate.add_argument(
        "--batch",
        type=int,
        default=100,
        help="episodes run at once at most; the batches are evened out (a smaller run is one batch of its size)",
    )
    evaluate.add_argument("--seed", type=int, default=0)
    evaluate.add_argument("--out", help="directory for household_help.{json,md,png}")
    evaluate.add_argument(
        "--append", action="store_true", help="add these helpers to the results already in --out (same setting)"
    )
    evaluate.set_defaults(func=clear_errors(cmd_eval))

    demos = verbs.add_parser("demos", help="the Watch stage: record Alice-alone demonstrations of a task set")
    demos.add_argument("--split", choices=["train", "extra", "test-1", "test-2"], default="train")
    demos.add_argument("--out", required=True, help="directory for <split>.npz")
    demos.add_argument(
        "--episodes",
        type=int,
        help="only N tasks: the first N of extra (default 5,303), else N spread round-robin over the activities",
    )
    demos.add_argument("--seed", type=int, default=0, help="the recording's seed (Alice's keys)")
    demos.add_argument("--task-seed", type=int, default=0, help="the seed the split is built from")
    demos.add_argument("--simulations", type=int, default=100, help="tree-search simulations per step")
    demos.add_argument("--max-steps", type=int, default=250, help="steps before an episode counts as failed")
    demos.add_argument("--batch", type=int, default=64, help="episodes run at once")
    demos.set_defaults(func=clear_errors(cmd_demos))
    add_goals_parser(verbs)


def main(argv: list[str] | None = None) -> int:
    """Runs ``jaxsoc household ...`` alone (the ``jaxsoc`` command dispatches here)."""
    parser = argparse.ArgumentParser(prog="jaxsoc")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)
