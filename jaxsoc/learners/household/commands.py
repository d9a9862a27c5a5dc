"""Command-line front ends of Watch-And-Help's learners: ``jaxsoc train watch|hybrid|hrl`` and
``jaxsoc household goals``.

jaxsoc household demos --split train --out demos && jaxsoc household demos --split test-1 --out demos
jaxsoc train watch --demos demos --out runs/watch                    # the goal-inference model (the paper's)
jaxsoc train watch --demos demos --set input=last --out runs/last   # the last-observation ablation
jaxsoc household goals runs/watch runs/last --demos demos --out results   # precision / recall on test-1, test-2
jaxsoc train hybrid --out runs/hybrid                                # the Hybrid's high level, Alice in the loop
jaxsoc train hrl --out runs/hrl                                      # the HRL's low level, Bob alone
jaxsoc household eval --helper hp hybrid hrl --watch runs/watch --hybrid runs/hybrid --hrl runs/hrl --demos demos
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

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
        from jaxsoc.learners.household.hybrid import HybridConfig

        return HybridConfig
    from jaxsoc.learners.household.hrl import HRLConfig

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
        return watch_run.train(config, args.out, args.demos, args.resume, not args.quiet, episodes)
    if args.algo == "hybrid":
        from jaxsoc.learners.household import hybrid

        return hybrid.train(config_type("hybrid")(**overrides), args.out, args.resume, not args.quiet)
    from jaxsoc.learners.household import hrl

    return hrl.train(config_type("hrl")(**overrides), args.out, args.resume, not args.quiet)


def run_line(summary: dict[str, Any], out: Path) -> str:
    """The line that ends ``jaxsoc train watch|hybrid|hrl``."""
    return f"trained {summary.get('title', summary.get('kind', 'a household learner'))} in {out}: " + ", ".join(
        f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
        for k, v in summary.items()
        if k not in ("title", "sizes", "checkpoint") and isinstance(v, (int, float, str))
    )


def goal_rows(runs: list[str], demos_dir: str, splits: list[str], seed: int = 0) -> list[dict[str, Any]]:
    """Returns one row per (model, split): the watch runs' precision, recall, F1 and accuracy on the paired
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
            rows.append({"model": config.input, "run": str(run), "split": split, "paper": paper})
            rows[-1].update(watch_run.evaluate((config, params), demos))
    train_goals = np.asarray(D.load(Path(demos_dir) / "train.npz", successful_only=True).tasks.states.goal_count)
    for split, demos in sets.items():
        chance = WA.chance_counts(jax.random.key(seed), train_goals, len(demos))
        scores = WA.scores(chance, np.asarray(demos.tasks.states.goal_count))
        paper = PAPER_GOALS["chance"].get(split)
        rows.append({"model": "chance", "run": "-", "split": split, "paper": paper, **scores, "episodes": len(demos)})
    return rows


def goal_table(rows: list[dict[str, Any]]) -> str:
    """Returns the markdown table of ``goal_rows``."""
    lines = [
        "| model | split | demonstrations | precision | recall | F1 | accuracy | paper precision / recall | run |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        paper = f"{r['paper'][0]:.2f} / {r['paper'][1]:.2f}" if r["paper"] else "–"
        lines.append(
            f"| {r['model']} | {r['split']} | {r['episodes']} | {r['precision']:.3f} | {r['recall']:.3f} | "
            f"{r['f1']:.3f} | {r['accuracy']:.3f} | {paper} | {r['run']} |"
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
    from jaxsoc.core.commands import clear_errors

    goals = verbs.add_parser("goals", help="the Watch stage: goal-inference precision / recall of watch runs")
    goals.add_argument("runs", nargs="+", help="'jaxsoc train watch' run directories")
    goals.add_argument("--demos", required=True, help="directory with train.npz and <split>.npz demonstrations")
    goals.add_argument("--split", nargs="+", default=["test-1", "test-2"], choices=["test-1", "test-2", "train"])
    goals.add_argument("--seed", type=int, default=0, help="the chance baseline's draws")
    goals.add_argument("--out", help="directory for household_goals.{json,md}")
    goals.set_defaults(func=clear_errors(cmd_goals))
