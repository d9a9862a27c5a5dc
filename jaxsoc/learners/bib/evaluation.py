"""BIB's Table 1 for trained observers: the VOE accuracy of each run (mean ± SE over its seeds) beside the reference
observers, on generated evaluation pairs or on BIB files, and its report files (``bib_eval.{json,md,png}``)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np


@dataclasses.dataclass(frozen=True)
class RunsEvaluation:
    """What ``evaluate_runs`` measured.

    Attributes:
        means: ``{row name: {evaluation type: accuracy}}``, the runs' rows (mean over seeds) then the reference
            observers'.
        errors: ``{run row name: {evaluation type: standard error over seeds}}``.
        records: ``{run row name: {"run": path, "mean", "se", "per_seed", ...}}`` (``run.evaluate``'s result).
        table: the markdown table (``voe.format_table``).
        source: where the pairs came from, in words.
        reduce: how a video's surprise was reduced (``"max"`` or ``"mean"``).
        pairs: ``{evaluation type: number of pairs}``.
        seconds: wall seconds of the evaluation.
    """

    means: dict[str, Any]
    errors: dict[str, Any]
    records: dict[str, Any]
    table: str
    source: str
    reduce: str
    pairs: dict[str, int]
    seconds: float


def evaluate_runs(
    runs: Sequence[str],
    *,
    types: Sequence[str] | None = None,
    seed: int = 0,
    pairs: int = 1000,
    data: str | None = None,
    reduce: str = "max",
    batch: int = 64,
    region: str = "frame",
    reference: bool = True,
) -> RunsEvaluation:
    """Returns the VOE accuracy of each trained observer run in ``runs`` (``jaxsoc train bib-*``; mean ± SE over the
    run's seeds) on ``pairs`` generated pairs per evaluation type (seed ``seed``; all nine types unless ``types``),
    or on the BIB files under ``data``; with ``reference``, the reference observers' accuracies as well.
    ``region`` (``"frame"`` or ``"agent"``) is where a video run's surprise is read."""
    from jaxsoc.envs.bib import OBSERVERS, tasks
    from jaxsoc.learners.bib import data as D
    from jaxsoc.learners.bib import run, voe

    start = time.perf_counter()
    evaluation_pairs = D.evaluation_pairs(seed, pairs, tuple(types or tasks.EVALUATION), data)
    source = f"files under {data}" if data else f"{pairs} generated pairs per type (seed {seed})"
    means, errors, records = {}, {}, {}
    for path in runs:
        info = run.read_info(path)
        result = run.evaluate(path, evaluation_pairs, reduce=reduce, batch=batch, region=region)
        seeds = len(result["per_seed"])
        name = f"{run.PAPER_NAMES.get(info.get('kind'), Path(path).name)} ({Path(path).name}, {seeds} seed(s))"
        means[name], errors[name], records[name] = result["mean"], result["se"], {"run": str(path), **result}
    if reference:
        for name, observer in OBSERVERS.items():
            means[name] = voe.evaluate(observer, evaluation_pairs, reduce=reduce, batch=256)
    if region != "frame":
        source += f", video surprise over the {region}'s cells"
    counts = {name: int(np.shape(p.moves)[0]) for name, p in evaluation_pairs.items()}
    return RunsEvaluation(
        means, errors, records, voe.format_table(means, errors), source, reduce, counts, time.perf_counter() - start
    )


def write_runs_evaluation(out: str | Path, result: RunsEvaluation) -> Any:
    """Writes ``bib_eval.{json,md,png}`` of ``result`` to the folder ``out``; returns ``voe.save_report``'s value
    (what it wrote)."""
    from jaxsoc.learners.bib import voe

    header = f"{result.source}; mean ± SE over seeds\n\n"
    return voe.save_report(
        out, "bib_eval", header + result.table, result.means, source=result.source, reduce=result.reduce,
        pairs=result.pairs, runs=result.records, seconds=result.seconds,
    )  # fmt: skip
