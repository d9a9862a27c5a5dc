"""Family throughput tables (``jaxsoc bench --suite chaic|household``): a family's steps per second against the
number of worlds stepped in parallel, for each action mode (and task), measured by the family's
``envs/<family>/throughput.py`` (its ``Workload``, ``row_key``, ``compile_workloads``, ``measure_workload`` and
``format_table``).

With an output directory the rows go to ``<family>_throughput.json`` (``{"rows", "seconds", "device", "platform",
"jax"}``, rewritten after every row) and the table to ``<family>_throughput.md``; ``resume`` keeps the rows of that
file measured on the same device kind with the same parameters (their ``key``, ``bench.rows.keyed_rows``) and
measures only the others."""

from __future__ import annotations

import dataclasses
import importlib
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from jaxsoc.bench.rows import keyed_rows, read_json, write_json


@dataclasses.dataclass(frozen=True)
class FamilyTable:
    """A family's throughput table.

    Attributes:
        family: the family (``envs/<family>/throughput.py``; the files ``<family>_throughput.{json,md}``).
        title: its name in the table's heading.
        cpu_sizes, accelerator_sizes: the default numbers of worlds on a CPU and on an accelerator.
        cpu_steps, accelerator_steps: the default steps per call.
        modes: the default modes (``throughput.MODES`` when None).
        tasks: whether its workloads take a task (``Workload(mode, n, steps, task, split, task_seed)``).
        rate: the row's rate printed as each row is measured, and its unit.
    """

    family: str
    title: str
    cpu_sizes: tuple[int, ...]
    accelerator_sizes: tuple[int, ...]
    cpu_steps: int
    accelerator_steps: int
    modes: tuple[str, ...] | None = None
    tasks: bool = False
    rate: tuple[str, str] = ("steps_per_s", "steps/s")

    @property
    def throughput(self):
        """The family's ``envs/<family>/throughput`` module."""
        return importlib.import_module(f"jaxsoc.envs.{self.family}.throughput")

    @property
    def json_name(self) -> str:
        return f"{self.family}_throughput.json"

    @property
    def md_name(self) -> str:
        return f"{self.family}_throughput.md"

    def default_modes(self) -> tuple[str, ...]:
        return self.modes if self.modes is not None else tuple(self.throughput.MODES)


TABLES = {
    "chaic": FamilyTable(
        "chaic",
        "CHAIC",
        (1, 64, 1024),
        (4096, 65_536),
        50,
        100,
        tasks=True,
        rate=("agent_steps_per_s", "agent steps/s"),
    ),
    "household": FamilyTable(
        "household",
        "Household",
        (1, 64, 1024, 4096),
        (4096, 65_536, 262_144),
        100,
        100,
        modes=("uniform", "valid", "helper"),
    ),
}


def kept_rows(table: FamilyTable, out: Path | None, resume: bool) -> dict[str, dict]:
    """Returns ``{key: row}`` of ``out``'s JSON measured on this device kind without an error (empty unless
    ``resume``)."""
    if out is None or not resume:
        return {}
    saved = read_json(out / table.json_name) or {}
    return keyed_rows(saved.get("rows", []), table.throughput.device_info()["device"], skip=("error",))


def write_table(table: FamilyTable, out: Path, rows: list[dict], seconds: float) -> None:
    """Writes ``out/<family>_throughput.json`` and ``.md`` (module docstring)."""
    throughput = table.throughput
    write_json(out / table.json_name, {"rows": rows, "seconds": seconds, **throughput.device_info()})
    (out / table.md_name).write_text(throughput.format_table(rows) + "\n")


def run_table(
    table: FamilyTable,
    *,
    cpu: bool,
    sizes: Sequence[int] | None = None,
    steps: int | None = None,
    repeats: int | None = None,
    modes: Sequence[str] | None = None,
    tasks: Sequence[str] = ("normal",),
    split: str = "train",
    task_seed: int = 0,
    seed: int = 0,
    workers: int = 1,
    out: str | Path | None = None,
    resume: bool = False,
    log: Callable[[str], Any] | None = None,
) -> list[dict]:
    """Measures ``table``'s workloads (every task, mode and size; defaults by backend, ``cpu``: repeats 2 on a CPU,
    else 3) and returns their rows in order, writing the files after every row when ``out`` is given (``resume``:
    keeping the rows measured before, ``kept_rows``). ``log`` is called with a line per row measured."""
    throughput = table.throughput
    sizes = list(sizes or (table.cpu_sizes if cpu else table.accelerator_sizes))
    steps = steps or (table.cpu_steps if cpu else table.accelerator_steps)
    repeats = repeats or (2 if cpu else 3)
    modes = list(modes or table.default_modes())
    out = Path(out) if out is not None else None
    kept = kept_rows(table, out, resume)
    if table.tasks:
        workloads = [
            throughput.Workload(mode, n, steps, task, split, task_seed)
            for task in tasks
            for mode in modes
            for n in sizes
        ]
    else:
        workloads = [throughput.Workload(mode, n, steps, split, task_seed) for mode in modes for n in sizes]
    start = time.perf_counter()
    rows = []
    todo = [w for w in workloads if throughput.row_key(w, repeats, seed) not in kept]
    throughput.compile_workloads(todo, workers)
    for w in workloads:
        row = kept.get(throughput.row_key(w, repeats, seed))
        if row is None:
            row = throughput.measure_workload(w, repeats, seed)
            if log is not None:
                task = f"{w.task} " if table.tasks else ""
                log(f"{task}{w.mode} N={w.num_envs}: {row[table.rate[0]]:.3g} {table.rate[1]}")
        rows.append(row)
        if out is not None:
            write_table(table, out, rows, time.perf_counter() - start)
    return rows
