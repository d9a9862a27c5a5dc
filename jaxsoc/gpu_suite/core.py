"""The GPU suite's machinery: parts, their budgets and row files, resuming, compiling in threads, and the
generated markdown section (``jaxsoc.gpu_suite`` describes the suite)."""

from __future__ import annotations

import dataclasses
import datetime
import functools
import importlib
import importlib.util
import math
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxsoc.bench.rows import keyed_rows, read_json, write_json
from jaxsoc.core import compile_cache
from jaxsoc.core.timing import device_info, timed_compile

#: the default budget of a full run and of ``--quick`` (minutes); part budgets are given for these
FULL_MINUTES, QUICK_MINUTES = 25.0, 8.0
MARK_BEGIN, MARK_END = "<!-- gpu-suite:begin -->", "<!-- gpu-suite:end -->"
COMMAND = "PYTHONPATH=. python3 benchmarks/gpu_suite.py"
#: exit statuses of ``run_suite``'s caller: every selected part complete / some left to do / a part failed
EXIT_DONE, EXIT_ERROR, EXIT_MORE = 0, 1, 3


@dataclasses.dataclass(frozen=True)
class Part:
    """One measurement of the suite (``jaxsoc.gpu_suite`` module docstring: adding a part).

    Attributes:
        name: the part's name (``--parts``, the row file ``gpu_<name>.json``).
        title: the heading of its markdown section.
        run: ``run(ctx) -> Iterator[dict]``, yields one row per measurement.
        render: ``render(rows) -> str``, the markdown table(s) of its rows.
        budget_s: seconds it may take in the default 25-minute run (scaled by ``--budget-minutes``).
        params: its full-size parameters (``ctx.params``).
        toy: its toy-size parameters (``--toy``: the CPU smoke test).
        quick: its parameters under ``--quick`` (None: not a throughput part, skipped by ``--quick``).
        quick_budget_s: seconds it may take in the default 8-minute ``--quick`` run.
        note: a sentence under its heading (method, targets).
        rank: its place in the suite's order of importance (``family_parts`` sorts by it; lower runs first).
    """

    name: str
    title: str
    run: Callable[[Context], Iterator[dict]]
    render: Callable[[list[dict]], str]
    budget_s: float
    params: Mapping[str, Any]
    toy: Mapping[str, Any]
    quick: Mapping[str, Any] | None = None
    quick_budget_s: float = 0.0
    note: str = ""
    rank: float = 0.0


class Context:
    """What a part's ``run`` sees: its parameters, its deadline, the rows of an earlier incomplete run.

    Attributes:
        part: the ``Part``.
        params: its parameters for this run (full, quick or toy).
        deadline: ``time.perf_counter()`` value at which its budget ends.
        workers: threads that compile (or play levels) at once.
        toy: toy sizes (a CPU smoke test).
        truncated: set by ``out_of_time``: the part stopped before measuring everything.
    """

    def __init__(
        self,
        part: Part,
        params: Mapping[str, Any],
        deadline: float,
        previous: Mapping[str, dict] | None = None,
        workers: int = 1,
        toy: bool = False,
    ) -> None:
        self.part, self.params, self.deadline = part, params, deadline
        self.workers, self.toy = max(1, workers), toy
        self._previous = dict(previous or {})
        self.truncated = False

    def time_left(self) -> float:
        """Returns the seconds left of the part's budget (negative once it is spent)."""
        return self.deadline - time.perf_counter()

    def out_of_time(self, need_s: float = 0.0) -> bool:
        """Returns True (and marks the part truncated) when less than ``need_s`` seconds, or nothing, is left."""
        left = self.time_left()
        if left <= 0 or left < need_s:
            self.truncated = True
            log(f"[{self.part.name}] budget: {max(left, 0):.0f} s left, {need_s:.0f} s needed; stopping")
            return True
        return False

    def previous(self, key: str) -> dict | None:
        """Returns the row of ``key`` measured by an earlier run of this part on the same device kind (to be
        yielded again instead of measured), or None."""
        return self._previous.get(key)

    def log(self, message: str) -> None:
        """Prints ``message`` to stderr, prefixed with the part's name."""
        log(f"[{self.part.name}] {message}")


def log(message: str) -> None:
    """Prints ``message`` to stderr with the time of day."""
    print(f"{time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


# -- the parts ---------------------------------------------------------------------------------------------------
@functools.cache
def family_parts() -> tuple[Part, ...]:
    """Returns the suite's parts: every family's ``PARTS`` (``jaxsoc/gpu_suite/<family>.py`` for each family of
    ``envs.families``), sorted by ``rank``. Raises ``ValueError`` for two parts of one name."""
    from jaxsoc.envs.families import families

    found: list[Part] = []
    for family in families():
        module = f"{__package__}.{family.name}"
        if importlib.util.find_spec(module) is not None:
            found.extend(importlib.import_module(module).PARTS)
    names = [p.name for p in found]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"GPU-suite parts declared twice: {twice}")
    return tuple(sorted(found, key=lambda p: p.rank))


# -- compiled programs ---------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Program:
    """A jittable benchmark: ``build()`` returns ``run(key)``; ``finish(compile_s, run_s, output)`` returns
    its row (``output``: the warm-up call's result with ``needs_output``, else None); ``repeats`` timed calls
    after the warm-up."""

    key: str
    build: Callable[[], Callable[[jax.Array], Any]]
    finish: Callable[[float, float, Any], dict]
    repeats: int = 1
    needs_output: bool = False


def trainer_program(
    key: str,
    make_trainer: Callable[[], Any],
    updates: int,
    frames_per_update: int,
    projected_frames: float,
    repeats: int,
    **fields: Any,
) -> Program:
    """Returns the ``Program`` ``key`` that times ``updates`` updates of ``make_trainer()`` (an RL trainer with
    ``init(key)`` and ``_run(runner, updates, stop)``, as ``learners.ppo.Trainer``) in one jitted call. Its row:
    ``fields``, ``updates``, ``compile_s``, ``run_s``, ``env_steps_per_s`` (``updates * frames_per_update / run_s``)
    and ``projected_hours`` (the hours of ``projected_frames`` at that rate)."""

    def build():
        trainer = make_trainer()
        return lambda k: trainer._run(trainer.init(k), updates, None)[1]["loss"]

    def finish(compile_s: float, run_s: float, _) -> dict:
        rate = updates * frames_per_update / run_s
        return {
            **fields,
            "updates": updates,
            "compile_s": compile_s,
            "run_s": run_s,
            "env_steps_per_s": rate,
            "projected_hours": projected_frames / rate / 3600,
        }

    return Program(key, build, finish, repeats)


#: what XLA's errors say when a program does not fit in device memory
OOM_MARKERS = ("RESOURCE_EXHAUSTED", "Out of memory", "out of memory")


def guarded_oom(measure: Callable[[], dict], fallback: dict) -> dict:
    """Returns ``measure()``, or ``fallback`` with an ``error`` when it runs out of device memory (any other
    error is the part's failure and propagates)."""
    try:
        return measure()
    except Exception as error:  # XLA's runtime error
        message = str(error)
        if not any(marker in message for marker in OOM_MARKERS):
            raise
        return {**fallback, "error": "out of memory: " + message.splitlines()[0][:200]}


def measure_programs(ctx: Context, programs: Iterable[Program]) -> Iterator[dict]:
    """Yields one row per program, in order: the earlier run's row where ``ctx.previous`` has it, else a new
    measurement. New programs go in batches of ``ctx.workers``: each is traced in this thread and compiled
    in a worker thread (XLA releases the GIL, so a batch compiles in parallel), then, once the whole batch is
    compiled and nothing else runs, each is timed (``core.timing.time_compiled``: a warm-up call, then the best
    of ``repeats``). ``compile_s`` is the wall time of a compilation that shared the CPU with the batch's
    others (``compile_workers`` in the row). Before a batch, the part stops if less time is left than the
    last batch took."""
    from jaxsoc.core.timing import time_compiled

    todo = []
    for program in programs:
        row = ctx.previous(program.key)
        if row is not None:
            yield row
        else:
            todo.append(program)
    key = jax.random.key(0)
    last_batch_s = 0.0
    pool = ThreadPoolExecutor(ctx.workers)
    try:
        for lo in range(0, len(todo), ctx.workers):
            if ctx.out_of_time(last_batch_s):
                return
            start = time.perf_counter()
            batch = todo[lo : lo + ctx.workers]
            futures = [pool.submit(timed_compile, jax.jit(p.build()).lower(key)) for p in batch]
            compiled = [f.result() for f in futures]
            ctx.log(f"compiled {len(batch)} programs in {time.perf_counter() - start:.1f} s")
            for program, (executable, compile_s) in zip(batch, compiled):
                output, run_s = time_compiled(executable, key, program.repeats, program.needs_output)
                row = program.finish(compile_s, run_s, output)
                del output
                row.update(key=program.key, repeats=program.repeats, compile_workers=len(batch))
                yield row
            del compiled, futures
            last_batch_s = time.perf_counter() - start
    finally:  # stopped early (SIGTERM): leave without waiting for compilations in flight
        pool.shutdown(wait=False, cancel_futures=True)


# -- row files -----------------------------------------------------------------------------------------------
def jsonable(value: Any) -> Any:
    """Returns ``value`` with numpy scalars and arrays as Python values, tuples as lists and NaN/inf as None
    (strict JSON)."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def row_path(out_dir: str | Path, name: str) -> Path:
    """Returns the row file of part ``name``: ``out_dir/gpu_<name>.json``."""
    return Path(out_dir) / f"gpu_{name}.json"


def read_part(out_dir: str | Path, name: str) -> dict | None:
    """Returns the content of part ``name``'s row file, or None when there is none (or it is unreadable)."""
    return read_json(row_path(out_dir, name))


def _write_json(path: Path, value: Any) -> None:
    write_json(path, jsonable(value), allow_nan=False)


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


def run_part(
    part: Part,
    out_dir: str | Path,
    *,
    params: Mapping[str, Any],
    budget_s: float,
    stop_at: float = math.inf,
    toy: bool = False,
    force: bool = False,
    workers: int = 1,
) -> dict:
    """Runs one part and keeps its row file up to date; returns the file's content.

    The file is rewritten after every row, ``"complete": false`` until the part ends having measured
    everything. A complete file of the same parameters and size (toy or not), measured on any device, is
    returned as it is, without running anything (unless ``force``); otherwise a file of the same device kind
    and size lends its rows (``Context.previous``: an incomplete part continues, a part whose parameters
    changed measures only the rows it did not have) and a file of another device is replaced. A part that
    raises is recorded with its ``error`` and incomplete.

    Args:
        part: the part.
        out_dir: where ``gpu_<name>.json`` lives.
        params: its parameters for this run.
        budget_s: its time budget.
        stop_at: a ``time.perf_counter()`` value it must not run past (the invocation's ``--time-limit``).
        toy: toy sizes (recorded; rows of another size are never reused).
        force: measure everything again.
        workers: ``Context.workers``.
    """
    params = jsonable(params)
    info = device_info()
    old = read_part(out_dir, part.name) or {}
    same_size = bool(old) and bool(old.get("toy")) == toy
    if same_size and not force and old.get("complete") and old.get("params") == params:
        where = f"{row_path(out_dir, part.name)} ({old.get('device')})"
        log(f"[{part.name}] complete in {where}: skipped (--force redoes it)")
        return old
    same = same_size and old.get("device") == info["device"] and not force  # rows of another device are not mixed in
    previous = keyed_rows(old.get("rows", [])) if same else {}
    start = time.perf_counter()
    ctx = Context(part, params, min(start + budget_s, stop_at), previous, workers, toy)
    state = {
        "part": part.name,
        "title": part.title,
        "complete": False,
        **info,
        "toy": toy,
        "params": params,
        "budget_s": budget_s,
        "started": _now(),
        "updated": _now(),
        "spent_s": 0.0,
        "rows": [],
    }
    rows: dict[str, dict] = {}
    stamp = {**info, "toy": toy, "compile_cache": jax.config.jax_compilation_cache_dir is not None}

    def save() -> None:
        state.update(rows=list(rows.values()), updated=_now(), spent_s=time.perf_counter() - start)
        _write_json(row_path(out_dir, part.name), state)

    log(f"[{part.name}] start: budget {budget_s:.0f} s, {len(previous)} rows kept from an earlier run")
    iterator = part.run(ctx)
    try:
        for row in iterator:
            kept = row.get("key") in previous and previous[row["key"]] is row  # an earlier run's row: as it was
            row = dict(row) if kept else {**row, **stamp, "date": _now()}
            rows[str(row.get("key", len(rows)))] = row
            save()
        state["complete"] = not ctx.truncated
    except Exception as error:  # one failing part must not cost the others their GPU time
        state["error"] = f"{type(error).__name__}: {error}"
        log(f"[{part.name}] FAILED:\n{traceback.format_exc()}")
    finally:
        if hasattr(iterator, "close"):
            iterator.close()
        save()
    verdict = "complete" if state["complete"] else "INCOMPLETE"
    log(f"[{part.name}] {verdict}: {len(rows)} rows in {state['spent_s']:.0f} s -> {row_path(out_dir, part.name)}")
    return state


def run_suite(
    parts: Iterable[Part],
    out_dir: str | Path,
    results_md: str | Path | None,
    *,
    quick: bool = False,
    toy: bool = False,
    budget_minutes: float | None = None,
    time_limit_s: float | None = None,
    force: bool = False,
    workers: int = 1,
    registry: Iterable[Part] | None = None,
) -> dict[str, dict]:
    """Runs ``parts`` in order (each ``run_part``), then rewrites the GPU section of ``results_md`` from every
    row file in ``out_dir`` (``registry`` gives the sections' parts, default ``parts``). Returns ``{name:
    file content}`` of the parts run or skipped; a part not started for lack of time is absent.

    Part budgets are the parts' ``budget_s`` (``quick_budget_s`` with ``quick``) times ``budget_minutes``
    over 25 (over 8 with ``quick``); ``time_limit_s`` bounds this whole call (parts it cuts stay incomplete):
    after the first part, a part starts only when its whole budget fits in the time left, since a part can
    overrun its deadline by one batch of compiles.
    """
    parts = list(parts)
    reference = QUICK_MINUTES if quick else FULL_MINUTES
    scale = (reference if budget_minutes is None else budget_minutes) / reference
    stop_at = math.inf if time_limit_s is None else time.perf_counter() + time_limit_s
    results = {}
    try:
        for part in parts:
            if quick and part.quick is None:
                continue
            params = part.toy if toy else (part.quick if quick else part.params)
            budget = (part.quick_budget_s if quick else part.budget_s) * scale
            left = stop_at - time.perf_counter()
            # A part overruns its deadline by up to one batch of compiles, so after the first part of a call a
            # part starts only when its whole budget fits before --time-limit (the next call resumes it).
            if left <= 0 or (results and left < budget):
                log(f"[{part.name}] not started: {max(left, 0):.0f} s left before --time-limit, budget {budget:.0f} s")
                continue
            results[part.name] = run_part(
                part, out_dir, params=params, budget_s=budget, stop_at=stop_at, toy=toy, force=force, workers=workers
            )
    finally:  # also when interrupted (SIGTERM, Ctrl-C): the rows measured so far reach the markdown
        if results_md is not None:
            registry = parts if registry is None else list(registry)
            rows, complete = load_rows(out_dir, registry)
            update_results_md(results_md, render_markdown(rows, complete, registry))
            log(f"rewrote the GPU section of {results_md}")
    return results


# -- markdown ------------------------------------------------------------------------------------------------
def load_rows(out_dir: str | Path, parts: Iterable[Part]) -> tuple[dict[str, list[dict]], dict[str, bool]]:
    """Returns ``(rows_by_part, complete_by_part)`` from the row files of ``parts`` in ``out_dir`` (parts
    without a file are absent)."""
    rows, complete = {}, {}
    for part in parts:
        state = read_part(out_dir, part.name)
        if state is not None:
            rows[part.name] = state.get("rows", [])
            complete[part.name] = bool(state.get("complete"))
    return rows, complete


def _span(values: Iterable[Any]) -> str:
    values = sorted({str(v) for v in values if v is not None})
    return ", ".join(values) if values else "unknown"


def _dates(rows: list[dict]) -> str:
    days = sorted({str(r["date"])[:10] for r in rows if r.get("date")})
    if not days:
        return "unknown"
    return days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"


def render_markdown(
    rows_by_part: Mapping[str, list[dict]], complete: Mapping[str, bool] | None, parts: Iterable[Part]
) -> str:
    """Returns the GPU section (without the markers): for each of ``parts`` with rows, in order, a heading,
    the device(s), jax version(s) and dates of its rows, whether the part is incomplete (``complete``), and
    its ``render``'s table(s); a line saying that nothing was measured when no part has rows. Pure: the same
    rows give the same text."""
    complete = complete or {}
    lines = [
        "## GPU suite",
        "",
        "Written by `benchmarks/gpu_suite.py` from the row files `benchmarks/results/gpu_<part>.json`; do not edit",
        f"by hand. Command, on a machine with a GPU: `{COMMAND}` (with `--time-limit 560` where a command",
        "may run 10 minutes at most: rerun it until it exits 0; every call continues where the last one stopped).",
    ]
    shown = 0
    for part in parts:
        rows = rows_by_part.get(part.name) or []
        if not rows:
            continue
        shown += 1
        toy = any(r.get("toy") for r in rows)
        devices = _span(
            r.get("device") if r.get("device") == r.get("platform") else f"{r.get('device')} ({r.get('platform')})"
            for r in rows
        )
        status = "" if complete.get(part.name, True) else " **Incomplete** (its budget ran out; a rerun continues it)."
        if any(r.get("compile_cache") for r in rows):
            status += " Compilation cache on: a compile time may be a load from the cache."
        lines += ["", f"### {part.title}" + (" (toy sizes: a smoke test, not a measurement)" if toy else ""), ""]
        lines.append(
            f"- **Device:** {devices}; jax {_span(r.get('jax') for r in rows)}. **Date:** {_dates(rows)}.{status}"
        )
        if part.note:
            lines.append(f"- {part.note}")
        lines += ["", part.render(rows)]
    if not shown:
        lines += ["", f"No GPU figures have been measured yet. On a machine with a GPU, run `{COMMAND}`."]
    return "\n".join(lines) + "\n"


def read_section(text: str) -> str | None:
    """Returns the text between the GPU markers of ``text`` (without the newline after the begin marker), or
    None when they are absent."""
    begin, end = text.find(MARK_BEGIN), text.find(MARK_END)
    if begin < 0 or end < begin:
        return None
    return text[begin + len(MARK_BEGIN) : end].removeprefix("\n")


def replace_section(text: str, section: str) -> str:
    """Returns ``text`` with the GPU section between the markers replaced by ``section`` (the markers and
    the section appended at the end when absent); nothing outside the markers changes."""
    block = f"{MARK_BEGIN}\n{section}"
    begin, end = text.find(MARK_BEGIN), text.find(MARK_END)
    if begin < 0 or end < begin:
        sep = "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
        return f"{text}{sep}{block}{MARK_END}\n"
    return text[:begin] + block + text[end:]


def update_results_md(path: str | Path, section: str) -> None:
    """Rewrites the GPU section of the markdown file ``path`` (created if missing) with ``section``."""
    path = Path(path)
    text = path.read_text() if path.exists() else ""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(replace_section(text, section))


def default_compile_cache() -> str:
    """Returns the default persistent compilation cache: ``<tmp>/jaxsoc-gpu-suite-xla``."""
    return os.path.join(tempfile.gettempdir(), "jaxsoc-gpu-suite-xla")


def enable_compile_cache(path: str) -> None:
    """Turns on jax's persistent compilation cache in ``path``, so a rerun on the same machine (after a
    command was cut off) loads the programs compiled before instead of compiling them again: programs that took
    a second or more, at most 4 GiB of them (``jaxsoc.core.compile_cache.use_compile_cache``; unlike the
    ``jaxsoc`` command's default cache, the suite's ``--compile-cache`` is not turned off by the environment)."""
    compile_cache.use_compile_cache(path, max_bytes=4 * 2**30, min_compile_secs=1.0)
