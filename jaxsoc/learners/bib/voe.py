"""Violation-of-expectation (VOE) scoring for BIB, and the paper's Table 1 to compare against.

BIB (Gandhi et al., 2021) scores an observer on evaluation pairs: two episodes with the same familiarisation
trials whose test trials are *expected* and *unexpected*. A model gives a surprise per step of the test trial;
an episode's score is the maximum over its steps (the paper's choice; the mean is optional); a pair is correct
when ``score(expected) < score(unexpected)``, a tie counts 0.5; the accuracy of an evaluation type is the mean
over its pairs (chance is 50%).

The paper's two averages are plain means of their sub-evaluations, which ``averages`` computes. Checked
against the paper's own numbers (Table 1), the *instrumental action average* matches for all three models
(67.03 / 77.93 / 79.87 against the reported 67.0 / 77.9 / 79.9) and so does the *efficient action average* of
Video-RNN (83.07 against 83.1), but the efficient action averages of BC-MLP (88.97 against 88.8) and BC-RNN
(82.80 against 82.5) differ by more than the 0.05 that rounding the sub-evaluations can explain: the paper
probably averaged those two over pairs rather than sub-evaluations, or from other runs. ``PAPER_TABLE1`` keeps
the averages as reported; ``format_table`` shows them as reported for the paper's columns and computes them for
the given models.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.bib.tasks import EVALUATION as EVAL_TYPES  # the nine types, in the order of Table 1
from jaxsoc.learners.run_log import save_figure

EFFICIENT_AVERAGE = "efficient_action_average"
INSTRUMENTAL_AVERAGE = "instrumental_action_average"
#: each average and the evaluation types it is the mean of.
AVERAGES = {
    EFFICIENT_AVERAGE: ("efficiency_path", "efficiency_time", "efficiency_irrational"),
    INSTRUMENTAL_AVERAGE: (
        "instrumental_no_barrier",
        "instrumental_inconsequential_barrier",
        "instrumental_blocking_barrier",
    ),
}
#: the rows of Table 1: evaluation types and averages, in the paper's order, with the paper's names.
ROWS = {
    "preference": "Preference",
    "multi_agent": "Multi-agent",
    "inaccessible_goal": "Inaccessible goal",
    "efficiency_path": "Efficiency: path control",
    "efficiency_time": "Efficiency: time control",
    "efficiency_irrational": "Efficiency: irrational agent",
    EFFICIENT_AVERAGE: "Efficient action average",
    "instrumental_no_barrier": "Instrumental: no barrier",
    "instrumental_inconsequential_barrier": "Instrumental: inconsequential barrier",
    "instrumental_blocking_barrier": "Instrumental: blocking barrier",
    INSTRUMENTAL_AVERAGE: "Instrumental action average",
}
PAPER_MODELS = ("BC-MLP", "BC-RNN", "Video-RNN")
_PAPER_COLUMNS = {
    "preference": (26.3, 48.3, 47.6),
    "multi_agent": (48.7, 48.2, 50.3),
    "inaccessible_goal": (76.9, 81.6, 74.0),
    "efficiency_path": (94.0, 92.8, 99.2),
    "efficiency_time": (99.1, 99.1, 99.9),
    "efficiency_irrational": (73.8, 56.5, 50.1),
    EFFICIENT_AVERAGE: (88.8, 82.5, 83.1),
    "instrumental_no_barrier": (98.8, 98.8, 99.7),
    "instrumental_inconsequential_barrier": (55.2, 78.2, 77.0),
    "instrumental_blocking_barrier": (47.1, 56.8, 62.9),
    INSTRUMENTAL_AVERAGE: (67.0, 77.9, 79.9),
}
#: Gandhi et al. (2021), Table 1: model -> evaluation type (and the two averages, as reported) -> accuracy, %.
PAPER_TABLE1: dict[str, dict[str, float]] = {
    model: {row: values[i] for row, values in _PAPER_COLUMNS.items()} for i, model in enumerate(PAPER_MODELS)
}
REDUCTIONS = ("max", "mean")

# ---------------------------------------------------------------------------------------------------- scoring


def _xp(*arrays):
    """``jax.numpy`` if any of ``arrays`` is a JAX array (or tracer), else ``numpy``."""
    return jnp if any(isinstance(a, jax.Array) for a in arrays) else np


def _check_reduce(reduce: str) -> None:
    if reduce not in REDUCTIONS:
        raise ValueError(f"reduce must be one of {REDUCTIONS}, got {reduce!r}")


def episode_scores(surprise, mask, reduce: str = "max"):
    """Reduces per-step surprise to one score per episode.

    ``surprise`` is ``float[..., S]``, ``mask`` ``bool[..., S]`` the real steps (same shape). ``reduce`` is
    ``"max"`` (the paper's default: the most surprising step) or ``"mean"`` (over the real steps).

    Returns ``float[...]`` (a NumPy array for NumPy inputs, a JAX array if either input is one; jittable). An
    episode with no real step scores 0. Raises ``ValueError`` on an unknown ``reduce`` or mismatched shapes.
    """
    _check_reduce(reduce)
    xp = _xp(surprise, mask)
    surprise, mask = xp.asarray(surprise), xp.asarray(mask).astype(bool)
    if surprise.shape != mask.shape or surprise.ndim < 1:
        raise ValueError(f"surprise and mask need the same shape [..., S], got {surprise.shape} and {mask.shape}")
    if not xp.issubdtype(surprise.dtype, xp.floating):
        surprise = surprise.astype(xp.float32)
    any_step = xp.any(mask, axis=-1)
    if reduce == "max":
        score = xp.max(xp.where(mask, surprise, -xp.inf), axis=-1)
    else:
        score = xp.sum(xp.where(mask, surprise, 0.0), axis=-1) / xp.maximum(xp.sum(mask, axis=-1), 1)
    return xp.where(any_step, score, 0.0).astype(surprise.dtype)


def pair_correct(expected_score, unexpected_score):
    """Returns ``float[...]``: 1 where ``expected < unexpected``, 0.5 on ties, 0 otherwise (NaN included).

    Both scores are ``float[...]`` of the same shape (NumPy or JAX; the result follows ``episode_scores``)."""
    xp = _xp(expected_score, unexpected_score)
    e, u = xp.asarray(expected_score), xp.asarray(unexpected_score)
    if e.shape != u.shape:
        raise ValueError(f"expected and unexpected scores need the same shape, got {e.shape} and {u.shape}")
    return xp.where(e < u, 1.0, xp.where(e == u, 0.5, 0.0))


def pair_accuracy(expected_score, unexpected_score) -> float:
    """Returns the fraction (0..1) of correct pairs, ties counting 0.5 (``pair_correct``); ``ValueError`` if
    there is no pair."""
    correct = pair_correct(expected_score, unexpected_score)
    if correct.size == 0:
        raise ValueError("pair_accuracy needs at least one pair")
    return float(np.mean(np.asarray(correct)))


# ---------------------------------------------------------------------------------------------------- evaluation

SurpriseFn = Callable[[Any], tuple[jax.Array, jax.Array]]


def _check_names(names, allowed=EVAL_TYPES) -> None:
    unknown = [name for name in names if name not in allowed]
    if unknown:
        raise ValueError(f"unknown BIB evaluation type(s) {unknown}; valid: {list(allowed)}")


def _num_pairs(episodes) -> int:
    """The number of pairs ``N`` of ``episodes`` with leading axes ``[N, 2, 9]``; ``ValueError`` otherwise."""
    shape = np.shape(episodes.moves)
    if len(shape) != 3 or shape[1] != 2 or shape[0] < 1:
        raise ValueError(f"evaluation pairs need leading axes [N >= 1, 2, 9], got moves of shape {shape}")
    return shape[0]


def _scorer(surprise_fn: SurpriseFn, reduce: str) -> Callable[[Any], jax.Array]:
    """Jitted ``episodes [B, 9, ...] -> float32[B]`` episode scores, checking ``surprise_fn``'s shapes."""

    def score(episodes):
        surprise, mask = surprise_fn(episodes)
        n = episodes.moves.shape[0]
        if surprise.ndim != 2 or surprise.shape[0] != n:
            raise ValueError(f"surprise_fn must return surprise [N={n}, S] and mask [N, S], got {surprise.shape}")
        return episode_scores(surprise, mask, reduce)

    return jax.jit(score)


def pair_scores(score: Callable[[Any], jax.Array], episodes, batch: int) -> np.ndarray:
    """Returns ``float32[N, 2]``: the (expected, unexpected) episode scores of ``N`` pairs ``[N, 2, 9, ...]``,
    computed in chunks of ``batch`` pairs (the last chunk padded by repeating its last pair, so that ``score``
    sees one shape)."""
    n = _num_pairs(episodes)
    size = min(batch, n)
    out = []
    for start in range(0, n, size):
        rows = np.minimum(np.arange(start, start + size), n - 1)
        chunk = jax.tree_util.tree_map(lambda x, rows=rows: x[rows], episodes)
        halves = [jax.tree_util.tree_map(lambda x, h=h: x[:, h], chunk) for h in (0, 1)]
        out.append(np.stack([np.asarray(score(half)) for half in halves], axis=-1)[: n - start])
    return np.concatenate(out).astype(np.float32)


def evaluate(
    surprise_fn: SurpriseFn,
    pairs: Mapping[str, Any],
    reduce: str = "max",
    batch: int = 256,
    return_scores: bool = False,
):
    """VOE accuracy of an observer on BIB's evaluation pairs.

    ``surprise_fn(episodes)`` maps ``Episode`` s with leading axes ``[B, 9]`` to ``(surprise float[B, S],
    mask bool[B, S])`` and must be jittable (it is jitted here and applied, ``batch`` pairs at a time, to the
    expected and the unexpected halves of each type's pairs). ``pairs`` maps evaluation types (``EVAL_TYPES``)
    to ``Episode`` s with leading axes ``[N, 2, 9]``, expected at index 0.

    Returns ``{type: accuracy}`` (fractions 0..1), or ``(accuracies, scores)`` with ``scores[type]``
    ``float32[N, 2]`` the (expected, unexpected) episode scores when ``return_scores``. Raises ``ValueError``
    on unknown types, an unknown ``reduce``, ``batch < 1`` or misshapen pairs or surprises.
    """
    _check_reduce(reduce)
    _check_names(pairs)
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    score = _scorer(surprise_fn, reduce)
    scores = {name: pair_scores(score, episodes, batch) for name, episodes in pairs.items()}
    accuracy = {name: pair_accuracy(s[:, 0], s[:, 1]) for name, s in scores.items()}
    return (accuracy, scores) if return_scores else accuracy


# ---------------------------------------------------------------------------------------------------- reporting


def averages(acc: Mapping[str, float]) -> dict[str, float]:
    """Returns the paper's averages that ``acc`` (type -> accuracy, in any unit) has all the parts of:
    ``efficient_action_average``, the mean of the three efficiency types, and ``instrumental_action_average``,
    the mean of the three instrumental ones."""
    return {
        name: float(np.mean([acc[part] for part in parts]))
        for name, parts in AVERAGES.items()
        if all(part in acc for part in parts)
    }


def _percentages(results: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    """Checks ``results`` (model -> type -> fraction 0..1) and returns them in %, with the averages filled in."""
    out = {}
    for model, acc in results.items():
        _check_names(acc, tuple(ROWS))
        bad = {name: value for name, value in acc.items() if not 0.0 <= value <= 1.0}
        if bad:
            raise ValueError(f"accuracies of {model!r} must be fractions in [0, 1], got {bad}")
        row = {name: 100.0 * float(value) for name, value in acc.items()}
        out[model] = {**averages(row), **row}
    return out


def _columns(results: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    """The columns of the table and plot: the given models in %, then the paper's three models."""
    return {**_percentages(results), **{f"{model} (paper)": PAPER_TABLE1[model] for model in PAPER_MODELS}}


def format_table(
    results: Mapping[str, Mapping[str, float]], errors: Mapping[str, Mapping[str, float]] | None = None
) -> str:
    """Returns a markdown table of VOE accuracies (%): one row per evaluation type and average, in the order
    and with the names of the paper's Table 1, and one column per model of ``results`` (model -> type ->
    fraction 0..1; missing entries show as ``–``; averages computed where all parts are given) followed by the
    paper's BC-MLP, BC-RNN and Video-RNN. ``errors`` (model -> type -> fraction, e.g. standard errors over
    seeds) are shown as ``mean ± error``."""
    columns = _columns(results)
    errors = errors or {}
    lines = [
        "| BIB evaluation | " + " | ".join(columns) + " |",
        "|---|" + "---:|" * len(columns),
    ]

    def cell(model: str, col: Mapping[str, float], row: str) -> str:
        if row not in col:
            return "–"
        error = errors.get(model, {}).get(row)
        return f"{col[row]:.1f}" if error is None else f"{col[row]:.1f} ± {100.0 * error:.1f}"

    for row, label in ROWS.items():
        cells = [cell(model, col, row) for model, col in columns.items()]
        label = f"**{label}**" if row in AVERAGES else label
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def bar_plot(results: Mapping[str, Mapping[str, float]], path: str | Path, title: str = "BIB VOE accuracy") -> Path:
    """Writes a PNG bar chart of VOE accuracy (%) per evaluation type for the models of ``results`` (as in
    ``format_table``) beside the paper's three baselines (hatched), with a dashed chance line at 50%. Returns
    the path written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = _columns(results)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    x = np.arange(len(EVAL_TYPES))
    width = 0.8 / len(columns)
    fig, ax = plt.subplots(figsize=(12, 4.5))
    for i, (model, col) in enumerate(columns.items()):
        values = [col.get(name, np.nan) for name in EVAL_TYPES]
        paper = model.endswith("(paper)")
        ax.bar(x + (i - (len(columns) - 1) / 2) * width, values, width, label=model, hatch="//" if paper else None)
    ax.axhline(50.0, color="black", linestyle="--", linewidth=1, label="chance")
    ax.set_xticks(x, [ROWS[name] for name in EVAL_TYPES], rotation=30, ha="right", fontsize=8)
    ax.set_ylim(0, 100)
    ax.set_ylabel("pairwise VOE accuracy (%)")
    ax.set_title(title)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return path


def save_report(out: str | Path, stem: str, table: str, accuracy: Mapping[str, Mapping[str, float]], **record) -> str:
    """Writes ``out/<stem>.json`` (``record`` with ``accuracy`` and the device), ``out/<stem>.md`` (``table``)
    and ``out/<stem>.png`` (``bar_plot`` of ``accuracy``: model -> type -> fraction); returns a line naming
    the three files."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    record = {**record, "accuracy": accuracy, "device": str(jax.devices()[0].device_kind)}
    (out / f"{stem}.json").write_text(json.dumps(record, indent=2))
    (out / f"{stem}.md").write_text(table + "\n")
    plot = bar_plot(accuracy, out / f"{stem}.png")
    return f"wrote {out / f'{stem}.json'}, {out / f'{stem}.md'} and {plot}"
