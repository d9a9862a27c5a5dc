"""A run's metrics on disk: ``metrics.csv`` (one row per update or epoch), ``metrics.json`` and a PNG curve.

``MetricsLog(run_dir)`` appends rows as they arrive (so an interrupted run keeps its history), can cut the
history back to a resumed checkpoint (``truncate``), and ``finish`` writes ``metrics.json`` (rows and
summary) and ``curves.png`` (success rate and mean return against frames or epochs).
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

METRICS_CSV, METRICS_JSON, CURVES_PNG = "metrics.csv", "metrics.json", "curves.png"
RUN_JSON = "run.json"


def read_run_json(run: str | Path, kind: str) -> dict[str, Any]:
    """Returns the ``run.json`` of a training run of ``kind`` (a dict with ``"kind": kind``).

    Raises:
        ValueError: no ``run.json``, unreadable JSON, or a run of another kind.
    """
    path = Path(run) / RUN_JSON
    if not path.is_file():
        raise ValueError(f"{run} is not a {kind} training run (no {RUN_JSON})")
    try:
        info = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not readable JSON: {error}") from error
    if not isinstance(info, dict) or info.get("kind") != kind:
        found = info.get("kind") if isinstance(info, dict) else None
        raise ValueError(f"{run} is not a {kind} training run (its kind is {found!r})")
    return info


def save_figure(fig: Any, path: str | Path, dpi: int = 110) -> Path:
    """Writes matplotlib figure ``fig`` to ``path`` as a 256-colour PNG (a curve's few colours quantised by Pillow:
    a third of matplotlib's RGBA file, so committed runs keep the tree small) and returns the path."""
    import io

    from PIL import Image

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    buffer.seek(0)
    image = Image.open(buffer).convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    image.save(path, format="PNG", optimize=True)
    return Path(path)


def write_json(path: Path, value: Any) -> None:
    """Writes ``value`` as indented JSON to ``path`` atomically (a temporary file, then a rename); values JSON
    does not know are written as ``str``."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(value, indent=1, default=str) + "\n")
    tmp.replace(path)


def _number(value: str) -> float | int | str:
    try:
        number = float(value)
    except ValueError:
        return value
    return int(number) if number.is_integer() and "." not in value and "e" not in value.lower() else number


class MetricsLog:
    """The metrics of the run in ``run_dir`` (module docstring); rows are dicts of numbers."""

    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.rows: list[dict[str, Any]] = []
        path = self.run_dir / METRICS_CSV
        if path.exists():
            with path.open() as f:
                self.rows = [{k: _number(v) for k, v in row.items()} for row in csv.DictReader(f)]

    def truncate(self, key: str, last: float) -> None:
        """Keeps only the rows whose ``key`` is at most ``last`` (rows written after a resumed checkpoint)."""
        self.rows = [row for row in self.rows if row[key] <= last]
        self._rewrite()

    def append(self, rows: list[dict[str, Any]]) -> None:
        """Appends ``rows`` to the history and to ``metrics.csv``."""
        if not rows:
            return
        rows = [{k: float(v) if not isinstance(v, (int, str)) else v for k, v in row.items()} for row in rows]
        fields = list(rows[0])
        if self.rows and list(self.rows[0]) != fields:
            raise ValueError(f"metric columns changed: {list(self.rows[0])} -> {fields}")
        new_file = not self.rows
        self.rows += rows
        with (self.run_dir / METRICS_CSV).open("w" if new_file else "a", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=fields)
            if new_file:
                writer.writeheader()
            writer.writerows(rows)

    def _rewrite(self) -> None:
        path = self.run_dir / METRICS_CSV
        if not self.rows:
            path.unlink(missing_ok=True)
            return
        with path.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(self.rows[0]))
            writer.writeheader()
            writer.writerows(self.rows)

    def finish(self, summary: dict[str, Any], x: str = "frames", curves: tuple[str, ...] = ("success_rate",)) -> None:
        """Writes ``metrics.json`` (``{"summary": summary, "rows": rows}``) and ``curves.png`` (``curves``
        against ``x``, one panel each; NaN values, e.g. updates in which no episode ended, are skipped)."""
        clean = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()} for r in self.rows]
        (self.run_dir / METRICS_JSON).write_text(json.dumps({"summary": summary, "rows": clean}, indent=1))
        if self.rows:
            plot_curves(self.rows, self.run_dir / CURVES_PNG, x, curves, title=str(summary.get("title", "")))


#: per-episode averages of an update: plotted over pooled updates holding at least ``MIN_EPISODES`` episodes
PER_EPISODE = ("success_rate", "mean_return", "mean_length")
MIN_EPISODES = 32


def pooled_points(rows: list[dict[str, Any]], x: str, name: str, min_episodes: int = MIN_EPISODES) -> list[tuple]:
    """Returns ``[(x, value)]`` of the per-episode metric ``name``: consecutive rows are pooled (weighted by
    their ``episodes``) until they hold ``min_episodes`` finished episodes, and each pool is one point at its
    last row's ``x``; a last pool that never reaches ``min_episodes`` is dropped. So a point never rests on a
    handful of episodes (an update in which one episode ended would otherwise plot as 0 or 1)."""
    points, total, weighted = [], 0.0, 0.0
    for row in rows:
        value, count = row.get(name), row.get("episodes") or 0
        if not isinstance(value, (int, float)) or math.isnan(value) or not count:
            continue
        total += count
        weighted += value * count
        if total >= min_episodes:
            points.append((row[x], weighted / total))
            total = weighted = 0.0
    return points


def plot_curves(rows: list[dict[str, Any]], path: Path, x: str, curves: tuple[str, ...], title: str = "") -> Path:
    """Writes a PNG with one panel per metric of ``curves`` against ``x``; returns its path. Per-episode
    metrics (``PER_EPISODE``) of rows that count their ``episodes`` are plotted by ``pooled_points``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [name for name in curves if name in rows[0]]
    fig, axes = plt.subplots(1, max(len(shown), 1), figsize=(4.5 * max(len(shown), 1), 3.2), squeeze=False)
    for ax, name in zip(axes[0], shown):
        pooled = name in PER_EPISODE and "episodes" in rows[0]
        if pooled:
            points = pooled_points(rows, x, name)
        else:
            points = [(r[x], r[name]) for r in rows if isinstance(r[name], (int, float)) and not math.isnan(r[name])]
        if points:
            xs, ys = zip(*points)
            ax.plot(xs, ys, lw=1.2)
        ax.set_xlabel(x)
        ax.set_ylabel(f"{name} (points of ≥{MIN_EPISODES} episodes)" if pooled else name)
        ax.grid(alpha=0.3)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)
    return path
