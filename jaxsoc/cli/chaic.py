"""``jaxsoc chaic <verb>``: ``tasks`` (summarise the task sets), ``eval`` (the paper's tables 2 and 4 for the
rule-based helpers and the learned ones) and ``render`` (a GIF of one episode).

``jaxsoc chaic eval --helper rhp ppo=RUN bm=RUN2`` evaluates learned helpers (``LEARNED``: a PPO run of ``jaxsoc train
ppo --env CHAIC-<Task>-Helper-v0 --set network=chaic``, a behaviour model of ``jaxsoc train chaic-bm``) in the same
table as the rule-based ones (``ppo_greedy=RUN``: the run's most likely choices); ``--append`` adds helpers to the
results already in ``--out``. ``RUN`` may be a pretrained model, ``model:NAME`` (``jaxsoc.models``:
``ppo=model:chaic-options-helper``, ``bm=model:chaic-bm``).

The evaluation is ``jaxsoc.learners.chaic.evaluation`` and the episodes of ``render`` ``jaxsoc.envs.chaic.episode``;
this module parses, calls and prints. It is also the front end of ``jaxsoc train chaic-bm`` (the behaviour-modelling
helper's model) and ``jaxsoc train chaic-options`` (the options helper: behaviour cloning of the RHP rules' options,
then PPO, ``learners.chaic.options_recipe``; its fields with ``--set``) through ``config_type``, ``train_command``
and ``run_line``:

jaxsoc train chaic-options --out runs/options                           # 40 cloning batches, 1,000 PPO updates
jaxsoc train chaic-options --out runs/options_goal --set teacher=goal --set follow=policy --set updates=500
jaxsoc train chaic-bm --out runs/chaic_bm                                # all 8 tasks, 64 train episodes each
jaxsoc train chaic-bm --out runs/bm_normal --set tasks=normal --episodes 32 --epochs 10
jaxsoc train chaic-bm --out runs/chaic_bm --resume --epochs 40           # continue, more epochs

The run directory holds ``run.json``, ``metrics.csv`` / ``metrics.json`` (loss and goal / constraint accuracies
per epoch), ``curves.png``, ``report.json`` (the final per-task accuracies) and ``checkpoints/``;
``bm.load_bm_helper(RUN)`` turns it into a helper agent for ``play``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxsoc.cli.errors import clear_errors, require_positive
from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.envs.chaic import tasks as T
from jaxsoc.envs.chaic.episode import HELPERS, RULE_HELPERS, parse_timing, render_episode, rule_helper
from jaxsoc.envs.chaic.episode import check_tasks as _tasks
from jaxsoc.learners.chaic.evaluation import (
    LEARNED,
    check_episodes,
    earlier_results,
    evaluate,
    format_table,
    learned_helper,
    parse_helpers,
    read_results,
    write_results,
)

__all__ = [
    "HELPERS",
    "LEARNED",
    "RULE_HELPERS",
    "evaluate",
    "format_table",
    "learned_helper",
    "parse_helpers",
    "parse_timing",
    "read_results",
    "rule_helper",
]


def cmd_tasks(args) -> int:

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


def cmd_eval(args) -> int:
    labels = parse_helpers(args.helper)
    require_positive(args, "seeds", "episodes", "max_events")
    if args.append and not args.out:
        raise ValueError("--append adds to the results in --out: give --out")
    tasks = _tasks(args.tasks)
    check_episodes(tasks, args.split, args.task_seed, args.episodes)
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
    earlier = earlier_results(Path(args.out), setting, tasks) if args.append else {}
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
        paths = write_results(Path(args.out), setting, results)
        print(f"wrote {', '.join(map(str, paths))}")
    return 0


def cmd_render(args) -> int:
    from jaxsoc.envs.chaic import render as R

    if args.helper not in RULE_HELPERS:
        raise ValueError(f"unknown helper {args.helper!r}; choose from {list(RULE_HELPERS)}")
    require_positive(args, "events", "frame_step", "size", "fps")
    images, frames, rates, keep = render_episode(
        args.task, args.split, args.seed, args.episode, args.helper, args.events, args.frame_step, args.size
    )
    texts = [
        f"{args.task} ({args.split} {args.episode}), helper {args.helper}: frame {f}, TR {r:.2f}"
        for f, r in zip(frames[keep], rates)
    ]
    out = R.save_episode_gif(images, args.out, texts=texts, fps=args.fps)
    print(f"wrote {out} ({len(keep)} images, final frame {frames[-1]}, transport rate {rates[-1]:.2f})")
    return 0


KINDS = ("chaic-bm", "chaic-options")


def config_type(kind: str) -> type:
    """Returns the config class of ``jaxsoc train <kind>`` (``KINDS``). Raises ``ValueError`` for another kind."""
    if kind not in KINDS:
        raise ValueError(f"unknown CHAIC learner {kind!r}; choose from {list(KINDS)}")
    if kind == "chaic-options":
        from jaxsoc.learners.chaic.options_recipe import OptionsRecipe

        return OptionsRecipe
    from jaxsoc.learners.chaic.bm_config import BMConfig

    return BMConfig


def options_recipe(args, overrides: dict[str, Any]):
    """Returns the ``OptionsRecipe`` of ``jaxsoc train chaic-options``: ``--set`` fields over the command's own
    options: ``--env`` (unless it is the shared trainers' default, a BabyAI level), ``--num-envs``, ``--preset`` and
    ``--seed``."""
    from jaxsoc.learners import families
    from jaxsoc.learners.chaic.options_recipe import OptionsRecipe

    given: dict[str, Any] = {"preset": args.preset, "seed": args.seed}
    if getattr(args, "env", None) and args.env != families.default().default_env_id:
        given["env_id"] = args.env
    if getattr(args, "num_envs", None) is not None:
        given["num_envs"] = args.num_envs
    return OptionsRecipe(**{**given, **overrides})


def train_command(args, overrides: dict[str, Any]) -> dict[str, Any]:
    """Runs ``jaxsoc train chaic-bm`` (``overrides``: config fields from ``--set``; ``--episodes`` sets the train
    episodes per task, ``--epochs`` the epochs, ``--seed`` the seed unless ``--set seed=`` gives it) or ``jaxsoc train
    chaic-options`` (``options_recipe``); returns the summary."""
    from jaxsoc.learners.chaic import bm_config, bm_train

    kind = getattr(args, "algo", KINDS[0])
    config_type(kind)
    if kind == "chaic-options":
        from jaxsoc.learners.chaic.options_recipe import train_recipe

        return train_recipe(options_recipe(args, overrides), args.out, args.resume, not args.quiet)
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
    """The line that ends ``jaxsoc train chaic-bm`` or ``jaxsoc train chaic-options``."""
    if "algo" in summary:  # a PPO run's summary (chaic-options)
        warm = summary.get("bc") or {}
        parts = [f"{summary['updates']} updates", f"{summary['frames']:,} options", f"{summary['wall_s'] / 60:.1f} min"]
        parts += [f"warm start {k} {warm[k]:.4g}" for k in ("loss", "accuracy") if isinstance(warm.get(k), float)]
        return f"trained {summary['title']} in {out}: " + ", ".join(parts) + f"; checkpoint {summary['checkpoint']}"
    shown = (
        "epochs_done",
        "train_loss",
        "train_goal_accuracy",
        "val_loss",
        "val_goal_accuracy",
        "val_goal_jaccard",
        "val_micro_f1",
        "val_constraint_accuracy",
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
    tasks.add_argument("--split", choices=list(T.SPLITS), default="test")
    tasks.add_argument("--seed", type=int, default=0)
    tasks.set_defaults(func=clear_errors(cmd_tasks))

    evaluate_ = verbs.add_parser("eval", help="the constrained agent alone and with helpers: TR, EI, IA, CR, ER")
    evaluate_.add_argument(
        "--helper",
        nargs="+",
        default=list(HELPERS),
        help=f"any of {', '.join(RULE_HELPERS)}, and learned ones as {' '.join(k + '=RUN' for k in LEARNED)} (RUN: a "
        "run directory or model:NAME, e.g. ppo=model:chaic-options-helper bm=model:chaic-bm)",
    )
    evaluate_.add_argument("--tasks", nargs="+", default=["all"], help=f"{', '.join(K.TASKS)} or all")
    evaluate_.add_argument("--split", choices=list(T.SPLITS), default="test")
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
    render.add_argument("--split", choices=list(T.SPLITS), default="test")
    render.add_argument("--episode", type=int, default=0)
    render.add_argument("--helper", default="rhp")
    render.add_argument("--seed", type=int, default=0)
    render.add_argument("--events", type=int, default=1500, help="events simulated (enough for 3,000 frames)")
    render.add_argument("--frame-step", type=int, default=30, help="one image per this many frames")
    render.add_argument("--size", type=int, default=160)
    render.add_argument("--fps", type=float, default=8)
    render.add_argument("--out", default="chaic.gif")
    render.set_defaults(func=clear_errors(cmd_render))
