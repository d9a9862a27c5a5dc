"""Command-line front end of CHAIC's learners: ``jaxsoc train chaic-bm`` (the behaviour-modelling helper's model).

jaxsoc train chaic-bm --out runs/chaic_bm                                # all 8 tasks, 64 train episodes each
jaxsoc train chaic-bm --out runs/bm_normal --set tasks=normal --episodes 32 --epochs 10
jaxsoc train chaic-bm --out runs/chaic_bm --resume --epochs 40           # continue, more epochs

The run directory holds ``run.json``, ``metrics.csv`` / ``metrics.json`` (loss and goal / constraint accuracies
per epoch), ``curves.png``, ``report.json`` (the final per-task accuracies) and ``checkpoints/``;
``bm.load_bm_helper(RUN)`` turns it into a helper agent for ``play``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

KINDS = ("chaic-bm",)


def config_type(kind: str) -> type:
    """Returns the config class of ``jaxsoc train <kind>`` (``KINDS``). Raises ``ValueError`` for another kind."""
    if kind not in KINDS:
        raise ValueError(f"unknown CHAIC learner {kind!r}; choose from {list(KINDS)}")
    from jaxsoc.learners.chaic.bm import BMConfig

    return BMConfig


def train_command(args, overrides: dict[str, Any]) -> dict[str, Any]:
    """Runs ``jaxsoc train chaic-bm`` (``overrides``: config fields from ``--set``; ``--episodes`` sets the train
    episodes per task, ``--epochs`` the epochs, ``--seed`` the seed unless ``--set seed=`` gives it); returns the
    summary."""
    from jaxsoc.learners.chaic import bm

    config_type(getattr(args, "algo", KINDS[0]))
    overrides = dict(overrides)
    if getattr(args, "episodes", None) is not None:
        if not float(args.episodes).is_integer():
            raise ValueError(f"--episodes takes a whole number of train episodes per task, got {args.episodes}")
        overrides["episodes"] = int(args.episodes)
    if getattr(args, "epochs", None) is not None:
        overrides["epochs"] = args.epochs
    overrides.setdefault("seed", args.seed)
    return bm.train(bm.BMConfig(**overrides), args.out, args.resume, not args.quiet)


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
