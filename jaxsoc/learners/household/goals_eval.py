"""The household's Watch stage (``jaxsoc household goals``): goal-inference precision, recall, F1 and accuracy of
watch runs on paired demonstrations, beside chance and the paper's figures (``goal_rows``, ``goal_table``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import numpy as np

#: the paper's goal-inference figures (§5.3): (precision, recall) per model and test set
PAPER_GOALS = {
    "graph": {"test-1": (0.85, 0.96), "test-2": (0.68, 0.64)},
    "last": {"test-1": (0.79, 0.75)},
    "actions": {"test-1": (0.99, 0.99)},
    "chance": {"test-1": (0.08, 0.09)},
}


def goal_rows(runs: list[str], demos_dir: str, splits: list[str], seed: int = 0) -> list[dict[str, Any]]:
    """Returns one row per (model, decoding, split): the watch runs' precision, recall, F1 and accuracy (raw argmax
    and grammar decoding, ``watch.decode``) on the paired
    demonstrations ``demos_dir/<split>.npz``, then chance (goals drawn from ``train.npz``'s successful
    demonstrations, ``watch.chance_counts``; left out when ``demos_dir`` has no ``train.npz``), each beside the
    paper's figures where it gives them. ``runs``: watch run directories or ``model:NAME`` (``watch_run.load``)."""
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
    if not (Path(demos_dir) / "train.npz").is_file():  # no training goals to draw chance's guesses from
        return rows
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
