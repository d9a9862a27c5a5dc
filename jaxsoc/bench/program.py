"""Program size as a benchmark: how big the programs of an environment are, and how long XLA takes to compile them.

**Programs.** For a registered id, ``measure_program`` traces (and, with ``compile=True``, compiles) four programs:

- ``reset_env``: ``env.reset_env(key, params)``, one world;
- ``step_env``: ``env.step_env(key, state, action, params)``, the raw transition of one world (no auto-reset);
- ``vmap_step``: ``jax.vmap(env.step, in_axes=(0, 0, 0, None))`` over ``num_envs`` worlds, the path every
  gymnax-style client takes (auto-reset included: a select-based reset is computed for every world, or the env's own
  pooled reset where it sets one);
- ``batched_step``: ``core.autoreset.batched_step(env)`` over ``num_envs`` worlds (pooled resets; single-agent
  environments only: a multi-agent view such as ``WatchAndHelp-v0`` or ``CHAIC-Normal-v0`` has no batched step).

Beside the ids, the families without ids have entries of their own (``FAMILY_PROGRAMS``): ``BIB-generator``
(``program`` = ``generate``: ``num_envs`` background episodes of the BIB-like default params, ``dataset
.sample_background``, the throughput benchmark's generator) and ``BIB-renderer`` (``program`` = ``render``: every
frame of one such episode at 84 x 84, ``render.render``).

**Figures** of each program (a plain dict, ``PROGRAM_FIELDS``):

- ``eqns``: jaxpr equations, sub-jaxprs included (``scan``/``while`` bodies, ``cond`` branches, ``pjit``,
  ``custom_jvp``/``custom_vjp`` functions): every equation counts once per appearance in the program text (a
  sub-jaxpr called from two equations counts twice, as XLA inlines it), never multiplied by a trip count;
  ``unique_eqns`` counts each distinct sub-jaxpr once;
- ``whiles``, ``dynamic_whiles``: ``while`` loops, and those whose trip count is not static (a data-dependent loop
  makes XLA:GPU read its predicate back to the host on every iteration); ``scans``, ``conds``: ``scan`` loops and
  ``cond``/``switch`` equations;
- ``loop_trips``: the sum of the static trip counts of the ``scan`` loops and of the static ``while`` loops, each loop
  once per appearance; ``serial_iterations``: loop iterations run one after the other, nested loops multiplied (a
  ``cond`` counts its longest branch);
- ``trace_s``: seconds to trace the jaxpr;
- with ``compile``: ``compile_s`` (``jax.jit(f).lower(...).compile()``, on the current backend: the CPU unless run
  elsewhere), ``hlo_bytes`` and ``hlo_instructions`` of the optimized HLO (``compiled.as_text()`` without its
  source-location metadata, which would count path lengths), ``flops_per_world`` and ``bytes_per_world`` (XLA's
  ``cost_analysis()`` divided by the program's ``worlds``), and ``kernels_per_step``: on an accelerator, the
  kernel-launching instructions of the optimized HLO (``hlo_kernel_count``: loop bodies counted once), None on the
  CPU.

The jaxpr walker that counts them is ``jaxsoc.bench.jaxpr_walk`` (``jaxpr_stats``).

``run_program_table`` measures a list of ids and prints a markdown table (``format_table``); ``program_rows``
flattens results into JSON rows, one per (id, program). ``jaxsoc bench --program`` and ``scripts/program_size.py``
(the committed tables of ``benchmarks/results/program_size_*.json``) call them; the GPU suite can too.

Layer: above the environments (``jaxsoc.core``, ``jaxsoc.envs``), below ``jaxsoc.gpu_suite`` and ``jaxsoc.cli``.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import jax
import numpy as np

import jaxsoc
from jaxsoc.bench.jaxpr_walk import jaxpr_stats
from jaxsoc.core.autoreset import batched_step
from jaxsoc.core.multi_agent import MultiAgentEnvironment
from jaxsoc.core.timing import device_info

#: the four programs of a registered id
PROGRAMS = ("reset_env", "step_env", "vmap_step", "batched_step")
#: the entries of the families without ids: name -> its one program
FAMILY_PROGRAMS = {"BIB-generator": "generate", "BIB-renderer": "render"}
#: the ids of the committed tables (compiled): classic MiniGrid, BabyAI from the smallest level to BossLevel, and one
#: view of each social family with ids
REPRESENTATIVE_IDS = (
    "MiniGrid-Empty-8x8-v0",
    "MiniGrid-DoorKey-8x8-v0",
    "MiniGrid-FourRooms-v0",
    "MiniGrid-BlockedUnlockPickup-v0",
    "BabyAI-GoToRedBallGrey-v0",
    "BabyAI-GoToLocal-v0",
    "BabyAI-PutNextLocal-v0",
    "BabyAI-GoTo-v0",
    "BabyAI-Pickup-v0",
    "BabyAI-SynthLoc-v0",
    "BabyAI-BossLevel-v0",
    "WatchAndHelp-Helper-v0",
    "CHAIC-Normal-Helper-v0",
    "EXCALIBUR-v0",
)
#: the figures of one program (``measure_program``'s ``programs[name]``); the ``compile`` ones are None without it
TRACE_FIELDS = (
    "worlds",
    "eqns",
    "unique_eqns",
    "whiles",
    "dynamic_whiles",
    "scans",
    "conds",
    "loop_trips",
    "serial_iterations",
    "trace_s",
)
COMPILE_FIELDS = (
    "compile_s",
    "hlo_bytes",
    "hlo_instructions",
    "flops_per_world",
    "bytes_per_world",
    "kernels_per_step",
)
PROGRAM_FIELDS = TRACE_FIELDS + COMPILE_FIELDS
#: the BIB renderer's frame side (the baselines')
BIB_RENDER_SIZE = 84


# ---------------------------------------------------------------------------------------------- compiled programs

_NO_KERNEL = frozenset(
    {
        "parameter",
        "constant",
        "get-tuple-element",
        "tuple",
        "bitcast",
        "while",
        "conditional",
        "call",
        "after-all",
        "opt-barrier",
        "add-dependency",
        "partition-id",
        "replica-id",
        "domain",
    }
)
_COMPUTATION = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$")
_INSTRUCTION = re.compile(r"^\s+(?:ROOT\s+)?%?[\w.\-]+\s+=\s+(.*)$")
_CONTROL_CALLS = re.compile(r"\b(?:body|condition|to_apply|true_computation|false_computation)=%?([\w.\-]+)")
_BRANCHES = re.compile(r"\bbranch_computations=\{([^}]*)\}")


def _opcode(rest: str) -> str:
    """Returns the opcode of an HLO instruction from the text after ``name = `` (its type, possibly a tuple with
    spaces, then ``opcode(``)."""
    if rest.startswith("("):  # a tuple type: skip its balanced parentheses
        depth = 0
        for i, ch in enumerate(rest):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0:
                rest = rest[i + 1 :]
                break
    else:
        rest = rest.split(" ", 1)[1] if " " in rest else ""
    match = re.match(r"\s*([a-z][a-z0-9\-]*)\(", rest)
    return match.group(1) if match else ""


def strip_hlo_metadata(text: str) -> str:
    """Returns optimized HLO text without its source locations: the header tables (``FileNames``...``StackFrames``)
    and every ``, metadata={...}`` attribute, so its size does not depend on file paths."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if _COMPUTATION.match(line)), 0)
    header = [lines[0]] if lines and lines[0].startswith("HloModule") and start > 0 else []
    out = []
    for line in header + lines[start:]:
        while (at := line.find(", metadata={")) >= 0:
            depth, end = 0, len(line)
            for i in range(at + len(", metadata="), len(line)):
                depth += line[i] == "{"
                depth -= line[i] == "}"
                if depth == 0:
                    end = i + 1
                    break
            line = line[:at] + line[end:]
        out.append(line)
    return "\n".join(out)


def hlo_computations(text: str) -> tuple[str | None, dict[str, list[str]]]:
    """Returns ``(entry name, {computation name: its instruction lines})`` of HLO text."""
    entry, comps, current = None, {}, None
    for line in text.splitlines():
        if current is None:
            match = _COMPUTATION.match(line)
            if match:
                current = match.group(2)
                comps[current] = []
                if match.group(1):
                    entry = current
        elif line.startswith("}"):
            current = None
        elif _INSTRUCTION.match(line):
            comps[current].append(line)
    return entry, comps


def hlo_kernel_count(text: str) -> int:
    """Returns the kernel-launching instructions of an optimized HLO module's text: those of the entry computation and
    of the computations it runs as control flow (``while`` bodies and conditions, ``conditional`` branches, ``call``),
    recursively, except ``parameter``, ``constant``, ``tuple``, ``get-tuple-element``, ``bitcast``, the control-flow
    instructions themselves and the like. On a GPU each is (about) one kernel launch; a loop body counts once, so this
    is the count of one pass through the program text, not of a run. Fusion bodies and reducers are not entered."""
    entry, comps = hlo_computations(text)
    if entry is None:
        return 0
    count, stack, visited = 0, [entry], set()
    while stack:
        name = stack.pop()
        if name in visited or name not in comps:
            continue
        visited.add(name)
        for line in comps[name]:
            op = _opcode(_INSTRUCTION.match(line).group(1))
            if op not in _NO_KERNEL:
                count += 1
            if op in ("while", "conditional", "call"):
                stack.extend(_CONTROL_CALLS.findall(line))
                for group in _BRANCHES.findall(line):
                    stack.extend(part.strip().lstrip("%") for part in group.split(","))
    return count


def cost_figures(compiled: Any) -> dict[str, float | None]:
    """Returns ``{"flops", "bytes_accessed"}`` of a compiled program from XLA's ``cost_analysis()`` (a dict in recent
    jax versions, a list of one dict per program in older ones; None where the backend gives none)."""
    try:
        cost = compiled.cost_analysis()
    except Exception:  # noqa: BLE001 - some backends do not implement it
        cost = None
    if isinstance(cost, (list, tuple)):
        cost = cost[0] if cost else None
    cost = cost or {}
    flops, accessed = cost.get("flops"), cost.get("bytes accessed")
    return {
        "flops": None if flops is None else float(flops),
        "bytes_accessed": None if accessed is None else float(accessed),
    }


def compile_cache_on() -> bool:
    """True when jax's persistent compilation cache is configured (compile seconds may then be cache reads)."""
    return bool(jax.config.jax_enable_compilation_cache and jax.config.jax_compilation_cache_dir)


def measure_function(fn: Callable, args: Sequence[Any], worlds: int, compile: bool = True) -> dict[str, Any]:
    """Returns the figures of one program (``PROGRAM_FIELDS``): ``fn(*args)`` traced (``args`` may be
    ``jax.ShapeDtypeStruct`` pytrees) and, with ``compile``, lowered and compiled with ``jax.jit`` on the default
    backend; per-world figures divide by ``worlds`` (the worlds the program advances). Compile figures are None
    without ``compile``."""
    start = time.perf_counter()
    closed = jax.make_jaxpr(fn)(*args)
    figures = {"worlds": worlds, **jaxpr_stats(closed), "trace_s": round(time.perf_counter() - start, 4)}
    out: dict[str, Any] = {name: figures.get(name) for name in PROGRAM_FIELDS}
    if compile:
        lowered = jax.jit(fn).lower(*args)
        start = time.perf_counter()
        compiled = lowered.compile()
        out["compile_s"] = round(time.perf_counter() - start, 4)
        text = strip_hlo_metadata(compiled.as_text())
        out["hlo_bytes"] = len(text.encode())
        out["hlo_instructions"] = sum(len(lines) for lines in hlo_computations(text)[1].values())
        cost = cost_figures(compiled)
        out["flops_per_world"] = None if cost["flops"] is None else cost["flops"] / worlds
        out["bytes_per_world"] = None if cost["bytes_accessed"] is None else cost["bytes_accessed"] / worlds
        if jax.default_backend() != "cpu":
            out["kernels_per_step"] = hlo_kernel_count(text)
    return out


# --------------------------------------------------------------------------------------------------- the programs


def _abstract(tree: Any) -> Any:
    """Returns ``tree`` with every array leaf replaced by its ``jax.ShapeDtypeStruct`` (other leaves kept)."""
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype) if hasattr(x, "dtype") else x, tree)


def _batched(tree: Any, n: int) -> Any:
    """Returns abstract ``tree`` with a leading axis ``n`` on every leaf."""
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct((n, *x.shape), x.dtype), tree)


def _stand_in_layouts(env: Any) -> None:
    """Gives a WFC env a bank of its shape (open rooms) instead of building minigrid's (minutes per id, and pattern
    images minigrid's wheel lacks): the program is the same, the bank being a constant of it."""
    layouts = np.zeros((env.bank_size, env.size, env.size), bool)
    layouts[:, [0, -1], :] = True
    layouts[:, :, [0, -1]] = True
    env.set_layouts(layouts)


def make_env(env_id: str) -> tuple[Any, Any, str | None]:
    """Returns ``(env, params, note)`` of a registered id: ``jaxsoc.make(env_id)``; a WFC id gets stand-in layouts
    (``note`` says so, else None)."""
    from jaxsoc.envs.gridworld.wfc import ENVS as WFC_ENVS

    env, params = jaxsoc.make(env_id)
    if env_id in WFC_ENVS:
        _stand_in_layouts(env)
        return env, params, "WFC: stand-in bank of the real one's shape (open rooms)"
    return env, params, None


def env_programs(env: Any, params: Any, num_envs: int) -> dict[str, tuple[Callable, tuple, int] | None]:
    """Returns ``{program: (fn, abstract args, worlds)}`` of ``PROGRAMS`` for an environment (None for a program it
    has not: ``batched_step`` of a multi-agent environment)."""
    key = jax.eval_shape(lambda: jax.random.key(0))
    keys = jax.eval_shape(lambda: jax.random.split(jax.random.key(0), num_envs))
    params = _abstract(params)
    _, state = jax.eval_shape(env.reset_env, key, params)
    multi = isinstance(env, MultiAgentEnvironment)
    if multi:
        action = {a: jax.ShapeDtypeStruct((), env.action_space(a).dtype) for a in env.agents}
    else:
        action = jax.ShapeDtypeStruct((), env.action_space().dtype)
    states, actions = _batched(state, num_envs), _batched(action, num_envs)
    programs: dict[str, tuple[Callable, tuple, int] | None] = {
        "reset_env": (lambda k, p: env.reset_env(k, p), (key, params), 1),
        "step_env": (lambda k, s, a, p: env.step_env(k, s, a, p), (key, state, action, params), 1),
        "vmap_step": (jax.vmap(env.step, in_axes=(0, 0, 0, None)), (keys, states, actions, params), num_envs),
        "batched_step": None if multi else (batched_step(env), (key, states, actions, params), num_envs),
    }
    return programs


def family_program(name: str, num_envs: int) -> tuple[Callable, tuple, int]:
    """Returns ``(fn, abstract args, worlds)`` of a ``FAMILY_PROGRAMS`` entry."""
    from jaxsoc.envs.bib import dataset, render
    from jaxsoc.envs.bib import world as W

    params = W.BIBParams()
    key = jax.eval_shape(lambda: jax.random.key(0))
    if name == "BIB-generator":
        return (lambda k: dataset.sample_background(k, num_envs, params)), (key,), num_envs
    if name == "BIB-renderer":
        batch = jax.eval_shape(lambda k: dataset.sample_background(k, 1, params), key)
        episode = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape[1:], x.dtype), batch)
        return (lambda e: render.render(e, BIB_RENDER_SIZE)), (episode,), 1
    raise KeyError(f"unknown family program {name!r}; choose from {sorted(FAMILY_PROGRAMS)}")


def measure_program(
    env_id: str, num_envs: int = 1024, compile: bool = True, programs: Iterable[str] | None = None
) -> dict[str, Any]:
    """Measures the programs of a registered id (``PROGRAMS``) or of a ``FAMILY_PROGRAMS`` entry.

    Args:
        env_id: a registered id, or ``"BIB-generator"`` / ``"BIB-renderer"``.
        num_envs: the worlds of the batched programs (``vmap_step``, ``batched_step``, the BIB generator); the
            pooled step's pools depend on it, so compare counts at equal ``num_envs``.
        compile: also compile each program (``compile_s``, HLO size, cost analysis); else trace only (cheap).
        programs: a subset of the entry's programs (default: all).

    Returns:
        A plain dict: ``id``, ``family`` (the id's prefix, ``BIB`` for the BIB entries), ``num_envs``, ``compile``,
        ``note`` (None, or what was substituted), ``programs`` (``{program: {field: value}}`` with the fields of
        ``PROGRAM_FIELDS``, in ``PROGRAMS`` order), ``skipped`` (``{program: why}``) and the device
        (``device``, ``platform``, ``jax``, ``compile_cache``).
    """
    wanted = None if programs is None else set(programs)
    result: dict[str, Any] = {
        "id": env_id,
        "family": env_id.split("-", 1)[0],
        "num_envs": int(num_envs),
        "compile": bool(compile),
        "note": None,
        "programs": {},
        "skipped": {},
        **device_info(),
        "compile_cache": compile_cache_on(),
    }
    if env_id in FAMILY_PROGRAMS:
        todo = {FAMILY_PROGRAMS[env_id]: family_program(env_id, num_envs)}
    else:
        env, params, result["note"] = make_env(env_id)
        todo = env_programs(env, params, num_envs)
    for name, program in todo.items():
        if wanted is not None and name not in wanted:
            continue
        if program is None:
            result["skipped"][name] = "a multi-agent environment has no batched step"
            continue
        fn, args, worlds = program
        result["programs"][name] = measure_function(fn, args, worlds, compile)
    return result


def program_ids(spec: Iterable[str] | None) -> list[str]:
    """Returns the entries named by ``spec``: words split at commas and spaces; ``all`` is every registered id and
    every ``FAMILY_PROGRAMS`` entry, nothing (None or empty) is ``REPRESENTATIVE_IDS``. Raises ``KeyError`` for an
    unknown name (listing close matches)."""
    words = [w for item in (spec or []) for w in re.split(r"[,\s]+", item) if w]
    if not words:
        return list(REPRESENTATIVE_IDS)
    known = set(jaxsoc.registered_envs()) | set(FAMILY_PROGRAMS)
    out: list[str] = []
    for word in words:
        if word == "all":
            out.extend(jaxsoc.registered_envs() + list(FAMILY_PROGRAMS))
        elif word in known:
            out.append(word)
        else:
            import difflib

            close = difflib.get_close_matches(word, sorted(known), n=5)
            raise KeyError(f"unknown id {word!r}" + (f"; did you mean {', '.join(close)}?" if close else ""))
    return list(dict.fromkeys(out))


def program_rows(results: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Returns flat rows, one per (entry, program) in order: ``id``, ``family``, ``program``, ``num_envs``, the
    ``PROGRAM_FIELDS``, ``note``, and the device fields; an entry that failed gives one row with ``program`` None and
    its ``error``."""
    rows = []
    for result in results:
        base = {"id": result["id"], "family": result.get("family"), "num_envs": result.get("num_envs")}
        device = {k: result.get(k) for k in ("device", "platform", "jax", "compile_cache")}
        if "error" in result:
            rows.append({**base, "program": None, "error": result["error"], **device})
            continue
        for name, figures in result["programs"].items():
            rows.append({**base, "program": name, **figures, "note": result.get("note"), **device})
    return rows


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run_program_table(
    ids: Iterable[str],
    num_envs: int = 1024,
    compile: bool = True,
    log: Callable[[str], None] | None = _log,
    on_result: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Measures every entry of ``ids`` (``measure_program``), logging each (``log``; None: silent) and passing each
    result to ``on_result`` as it comes (e.g. to save partial tables); an entry that raises gives a result with its
    ``error`` instead of stopping the run.

    Returns:
        The ``measure_program`` results, in order.
    """
    results = []
    for env_id in ids:
        start = time.perf_counter()
        try:
            result = measure_program(env_id, num_envs, compile)
        except Exception as error:  # noqa: BLE001 - one entry's failure is a row, not the end of the run
            result = {"id": env_id, "family": env_id.split("-", 1)[0], "num_envs": num_envs, "error": repr(error)}
        results.append(result)
        if log is not None:
            if "error" in result:
                log(f"{env_id}: ERROR {result['error']}")
            else:
                sizes = ", ".join(f"{k} {v['eqns']}" for k, v in result["programs"].items())
                log(f"{env_id}: {sizes} ({time.perf_counter() - start:.1f} s)")
        if on_result is not None:
            on_result(result)
    return results


# ---------------------------------------------------------------------------------------------------------- tables


def _num(value: Any, fmt: str = ".3g") -> str:
    """Formats a figure: ``–`` for None, ints with thousands separators, floats with ``fmt``."""
    if value is None:
        return "–"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    return format(float(value), fmt)


def format_table(rows: Sequence[dict[str, Any]], before: Sequence[dict[str, Any]] | None = None) -> str:
    """Returns a markdown table of ``program_rows`` output, one line per (id, program): worlds, equations, ``while``
    loops (data-dependent ones in parentheses), static loop trips, serial iterations, conds, and the compile figures
    (``–`` where not compiled): compile seconds, optimized HLO KiB and instructions, MFLOP and KB per world, kernels
    per step (accelerators only). With ``before`` (rows of an earlier table) a column ``eqns × before`` follows the
    equations. Failed entries get a line with their error."""
    old = {(r["id"], r["program"]): r["eqns"] for r in before or () if r.get("program") is not None}
    ratio_head, ratio_rule = (" eqns × before |", "---:|") if before is not None else ("", "")
    lines = [
        f"| id | program | worlds | eqns |{ratio_head} while (data) | loop trips | serial iters | cond | compile s "
        "| HLO KiB | HLO instr | MFLOP/world | KB/world | kernels |",
        f"|---|---|---:|---:|{ratio_rule}---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    width = 12 + (before is not None)
    for r in rows:
        if r.get("program") is None:
            lines.append(f"| {r['id']} | error: {r.get('error', '?')[:80]} |" + " |" * width)
            continue
        mflop = None if r.get("flops_per_world") is None else r["flops_per_world"] / 1e6
        kbytes = None if r.get("bytes_per_world") is None else r["bytes_per_world"] / 1e3
        hlo_kib = None if r.get("hlo_bytes") is None else r["hlo_bytes"] / 1024
        ratio = ""
        if before is not None:
            was = old.get((r["id"], r["program"]))
            ratio = f" {_num(None if not was else r['eqns'] / was, '.2f')} |"
        lines.append(
            f"| {r['id']} | {r['program']} | {_num(r['worlds'])} | {_num(r['eqns'])} |{ratio} {r['whiles']} "
            f"({r['dynamic_whiles']}) | {_num(r['loop_trips'])} | {_num(r['serial_iterations'])} | {r['conds']} "
            f"| {_num(r.get('compile_s'), '.1f')} | {_num(hlo_kib, ',.0f')} | {_num(r.get('hlo_instructions'))} "
            f"| {_num(mflop)} | {_num(kbytes)} | {_num(r.get('kernels_per_step'))} |"
        )
    return "\n".join(lines)


def format_eqns_table(rows: Sequence[dict[str, Any]]) -> str:
    """Returns a compact markdown table of ``program_rows`` output, one line per id: the equations of each of
    ``PROGRAMS`` (or of a family entry's one program, under ``reset_env``'s column: its name is given), and the
    data-dependent ``while`` loops of all its programs together."""
    by_id: dict[str, dict[str, dict[str, Any]]] = {}
    errors: dict[str, str] = {}
    for r in rows:
        if r.get("program") is None:
            errors[r["id"]] = r.get("error", "?")
        else:
            by_id.setdefault(r["id"], {})[r["program"]] = r
    lines = [
        "| id | " + " | ".join(PROGRAMS) + " | data-dependent while |",
        "|---|" + "---:|" * len(PROGRAMS) + "---:|",
    ]
    for env_id in dict.fromkeys(r["id"] for r in rows):
        if env_id in errors:
            lines.append(f"| {env_id} | error: {errors[env_id][:80]} |" + " |" * len(PROGRAMS))
            continue
        got = by_id[env_id]
        if env_id in FAMILY_PROGRAMS:
            name = FAMILY_PROGRAMS[env_id]
            cells = [f"{name}: {_num(got[name]['eqns'])}"] + ["–"] * (len(PROGRAMS) - 1)
        else:
            cells = [_num(got[p]["eqns"]) if p in got else "–" for p in PROGRAMS]
        dynamic = sum(r["dynamic_whiles"] for r in got.values())
        lines.append(f"| {env_id} | " + " | ".join(cells) + f" | {dynamic} |")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------- committed tables


def results_markers(label: str) -> tuple[str, str]:
    """Returns the begin and end markers of the ``label`` (``before``/``after``) block in ``benchmarks/RESULTS.md``."""
    return f"<!-- program-size:{label}:begin -->", f"<!-- program-size:{label}:end -->"


def compiled_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Returns the rows that were compiled (``compile_s`` not None)."""
    return [r for r in rows if r.get("program") is not None and r.get("compile_s") is not None]


def results_block(data: dict[str, Any], before: dict[str, Any] | None = None) -> str:
    """Returns the markdown of a committed table (``{"meta": ..., "rows": ...}`` as ``scripts/program_size.py``
    writes it) for ``benchmarks/RESULTS.md``: a line saying when, where and how it was measured, and ``format_table``
    of its compiled rows; with ``before`` (another such table) a column of each program's equations over the
    before figure."""
    meta = data["meta"]
    rows = compiled_rows(data["rows"])
    traced = {r["id"] for r in data["rows"] if r.get("program") is not None}
    failed = sorted({r["id"] for r in data["rows"] if r.get("program") is None})
    head = (
        f"Measured {meta['date']} on {meta['machine']} (jax {meta['jax']}, backend {meta['platform']}, commit "
        f"`{meta['commit']}`), {meta['num_envs']:,} worlds: `{meta['command']}`. Equation counts of all {len(traced)} "
        f"entries traced: `{meta['markdown']}`."
    )
    if failed:
        head += f" Failed to trace: {', '.join(failed)}."
    return head + "\n\n" + format_table(rows, before=None if before is None else before["rows"])


def results_markdown(data: dict[str, Any], title: str) -> str:
    """Returns the markdown file of a committed table: ``title``, ``results_block`` and ``format_eqns_table`` of every
    entry traced."""
    return (
        f"# {title}\n\n{results_block(data)}\n\n## Equations of every entry (traced, not compiled)\n\n"
        f"{format_eqns_table(data['rows'])}\n"
    )


def fill_block(text: str, label: str, block: str) -> str:
    """Returns ``text`` with the contents between the ``label`` markers (``results_markers``) replaced by ``block``.
    Raises ``ValueError`` when the markers are missing or out of order."""
    begin, end = results_markers(label)
    i, j = text.find(begin), text.find(end)
    if i < 0 or j < i:
        raise ValueError(f"{begin} ... {end} not found in order")
    return text[: i + len(begin)] + "\n" + block.rstrip() + "\n" + text[j:]


def read_block(text: str, label: str) -> str | None:
    """Returns the contents between the ``label`` markers of ``text`` without surrounding blank lines (None when the
    markers are missing)."""
    begin, end = results_markers(label)
    i, j = text.find(begin), text.find(end)
    if i < 0 or j < i:
        return None
    return text[i + len(begin) : j].strip("\n")
