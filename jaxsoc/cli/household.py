"""``jaxsoc household``: the household family's subcommands.

jaxsoc household tasks --out tasks                        # train.npz, test-1.npz, test-2.npz from seed 0
jaxsoc household tasks --split test-1 --seed 3 --out t    # one set
jaxsoc household tasks --show tasks/test-1.npz            # check a file and summarise it
jaxsoc household render --split test-1 --task 4 --out ep.gif   # the scripted solver as Alice, random Bob
jaxsoc household eval --helper hp-tg hprg random oracle-b oracle-ab --split test-1 --out results/help
jaxsoc household eval --helper hp hybrid --watch runs/watch --hybrid runs/hybrid --demos demos --out results/help
jaxsoc household demos --split train --out demos            # Alice-alone Watch demonstrations: demos/train.npz
jaxsoc household goals runs/watch --demos demos --out results   # goal inference on test-1 / test-2 vs the paper

The Help stage's evaluation is ``jaxsoc.learners.household.help_eval``, the Watch stage's table
``jaxsoc.learners.household.goals_eval`` and ``render``'s episode ``jaxsoc.envs.household.rollout``; this module
parses, calls and prints. It is also the front end of Watch-And-Help's learners for ``jaxsoc train
watch|hybrid|hrl`` (``config_type``, ``train_command``, ``run_line``):

jaxsoc train watch --demos demos --out runs/watch                    # the goal-inference model (the paper's)
jaxsoc train watch --demos demos --set input=last --out runs/last   # the last-observation ablation
jaxsoc household goals runs/watch runs/last --demos demos --out results   # precision / recall on test-1, test-2
jaxsoc train hybrid --out runs/hybrid                                # the Hybrid's high level, Alice in the loop
jaxsoc train hrl --out runs/hrl                                      # the HRL's low level, Bob alone
jaxsoc household eval --helper hp hybrid hrl --watch runs/watch --hybrid runs/hybrid --hrl runs/hrl --demos demos
jaxsoc household eval --helper hybrid hrl --watch model:wah-watch --hybrid model:wah-hybrid --hrl model:wah-hrl-low

Every argument that takes a run (``--watch``, ``--hybrid``, ``--hrl``, ``goals RUN``) also takes ``model:NAME``, a
pretrained model (``jaxsoc models list``; ``learners.household.models``).
"""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxsoc.cli.errors import clear_errors, require_positive
from jaxsoc.envs.household.rollout import POLICIES, rollout
from jaxsoc.learners.household.goals_eval import PAPER_GOALS, goal_rows, goal_table
from jaxsoc.learners.household.help_eval import (
    HELPERS,
    INFERRED,
    batch_size,
    check_setting,
    earlier_record,
    evaluate_help,
    format_help,
    help_setting,
    merged,
    read_record,
    task_index,
    write_help,
)

__all__ = [
    "HELPERS",
    "INFERRED",
    "PAPER_GOALS",
    "POLICIES",
    "batch_size",
    "check_setting",
    "goal_rows",
    "goal_table",
    "merged",
    "read_record",
    "rollout",
    "task_index",
]


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


def cmd_eval(args) -> int:
    from jaxsoc.envs.household import tasks as T

    for name in args.helper:
        if name not in HELPERS:
            raise ValueError(f"unknown helper {name!r}; choose from {list(HELPERS)}")
    if args.seeds < 1 or args.batch < 1 or args.simulations < 1 or (args.num_tasks is not None and args.num_tasks < 1):
        raise ValueError("--seeds, --batch, --simulations and --num-tasks must be positive")
    inferred = [n for n in args.helper if n in INFERRED]
    if inferred and not args.watch:
        raise ValueError(
            f"{', '.join(inferred)} help with the goal inferred from the paired demonstration: give --watch RUN "
            "(a 'jaxsoc train watch' run, or model:wah-watch); hp-tg is the planner given the true goal"
        )
    for name, flag in (("hybrid", args.hybrid), ("hrl", args.hrl)):
        if name in args.helper and not flag:
            raise ValueError(f"--helper {name} needs --{name} RUN (a 'jaxsoc train {name}' run, or a model)")
    if "hrl" in args.helper and not args.hybrid:
        raise ValueError("--helper hrl uses the Hybrid's high-level policy: give --hybrid RUN as well")
    out = Path(args.out) if args.out else None
    earlier = earlier_record(out) if args.append else None  # a malformed record is refused before the set is built
    task_set = T.load(args.tasks) if args.tasks else T.cached_split(args.split, args.task_seed)
    num_tasks = len(task_set) if args.num_tasks is None else min(args.num_tasks, len(task_set))
    if earlier is not None:
        setting = help_setting(task_set, num_tasks, args.seeds, args.simulations, args.teleport, args.seed)
        check_setting(earlier, setting, out)
    record = evaluate_help(
        task_set,
        args.helper,
        num_tasks=num_tasks,
        seeds=args.seeds,
        simulations=args.simulations,
        teleport=args.teleport,
        batch=args.batch,
        seed=args.seed,
        watch=args.watch,
        demos=args.demos,
        hybrid=args.hybrid,
        hrl=args.hrl,
        hrl_commit=args.hrl_commit,
        option_end=args.option_end,
        task_seed=args.task_seed,
        earlier=earlier,
    )
    print(format_help(record["results"], task_set.split))
    if out is not None:
        write_help(out, record)
        print(f"wrote {out}/household_help.{{json,md,png}}")
    return 0


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


#: the demonstration sets ``jaxsoc train watch --curves`` may score after every epoch (never a test split)
CURVE_SPLITS = ("validation", "extra")


def watch_curves(demos_dir: str, splits: list[str]) -> dict:
    """Returns ``{split: Demos}``: the demonstrations ``demos_dir/<split>.npz`` that ``jaxsoc train watch
    --curves`` scores after every epoch (``CURVE_SPLITS``). Raises ``ValueError`` for a test split (scored once,
    after training, by ``jaxsoc household goals``), another unknown name, or a missing file."""
    from jaxsoc.envs.household.agents import demos as D
    from jaxsoc.learners.household.watch_run import TEST_SPLITS

    for split in splits:  # every name checked before any file is read
        if split in TEST_SPLITS:
            raise ValueError(
                f"--curves {split}: test splits are never scored during training (model choices read the "
                f"validation split only); score them once, after training, with `jaxsoc household goals RUN "
                f"--demos {demos_dir}`. --curves takes {' / '.join(CURVE_SPLITS)}"
            )
        if split not in CURVE_SPLITS:
            raise ValueError(f"--curves {split}: unknown; choose from {' / '.join(CURVE_SPLITS)}")
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
    goals.add_argument("runs", nargs="+", help="'jaxsoc train watch' run directories or model:NAME (model:wah-watch)")
    goals.add_argument(
        "--demos", required=True, help="directory with <split>.npz demonstrations (and train.npz for the chance rows)"
    )
    goals.add_argument(
        "--split", nargs="+", default=["test-1", "test-2"], choices=["test-1", "test-2", "validation", "train"]
    )
    goals.add_argument("--seed", type=int, default=0, help="the chance baseline's draws")
    goals.add_argument("--out", help="directory for household_goals.{json,md}")
    goals.set_defaults(func=clear_errors(cmd_goals))


def add_parser(sub) -> None:
    """Adds ``jaxsoc household {tasks,render,eval,demos}`` to the ``jaxsoc`` command's subparsers."""
    from jaxsoc.envs.household.agents.demos import SPLITS as DEMO_SPLITS
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
    evaluate.add_argument(
        "--watch", help="a 'jaxsoc train watch' run or model:NAME (model:wah-watch): the goal of hp, hybrid and hrl"
    )
    evaluate.add_argument("--demos", help="directory with <split>.npz paired demonstrations (default: record them)")
    evaluate.add_argument(
        "--hybrid", help="a 'jaxsoc train hybrid' run or model:NAME (model:wah-hybrid), for --helper hybrid and hrl"
    )
    evaluate.add_argument(
        "--hrl", help="a 'jaxsoc train hrl' run or model:NAME (model:wah-hrl-low): the low level of --helper hrl"
    )
    evaluate.add_argument(
        "--hrl-commit",
        choices=["auto", "on", "off"],
        default="auto",
        help="hrl keeps its subgoal until it gains an instance or times out (on), or its high level chooses at "
        "every step (off); auto: on for a low level trained on the belief teacher (a belief network)",
    )
    evaluate.add_argument(
        "--option-end",
        choices=["observed", "true"],
        default="observed",
        help="hybrid and hrl end an option on the instances Bob has seen (observed) or, privileged, on the true "
        "satisfied counts, Alice's placements out of his view included (true)",
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
    demos.add_argument("--split", choices=list(DEMO_SPLITS), default="train")
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
