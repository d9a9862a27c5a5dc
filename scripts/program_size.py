"""Writes the committed program-size tables (``jaxsoc.bench.program``) and their blocks in ``benchmarks/RESULTS.md``.

The representative ids (``program.REPRESENTATIVE_IDS``) and the BIB generator and renderer are traced and compiled at
``--num-envs`` worlds (equations, loops, compile seconds, optimized HLO size, XLA's cost analysis per world); every
other registered id is traced only (equations and loops: cheap). The table goes to ``--out`` (JSON: ``{"meta",
"rows"}``, one row per (id, program), saved after every id) and beside it as markdown (``.md``), and its block in
``benchmarks/RESULTS.md`` (between ``<!-- program-size:<label>:begin -->`` and ``...:end -->``) is rewritten from it.
``tests/test_program_size.py`` fails when a CI id's equations grow more than 10% over ``program_size_cpu.json``.

    JAX_PLATFORMS=cpu python scripts/program_size.py                    # the "after" table: program_size_cpu.json
    JAX_PLATFORMS=cpu python scripts/program_size.py --render-only      # RESULTS.md's blocks from the JSON files
    # the "before" table, on a frozen checkout (the code as it was, this program.py and jaxpr_walk.py copied in):
    git worktree add /tmp/before <commit>
    cp jaxsoc/bench/program.py jaxsoc/bench/jaxpr_walk.py /tmp/before/jaxsoc/bench/
    PYTHONPATH=/tmp/before JAX_PLATFORMS=cpu python scripts/program_size.py --label before \\
        --out benchmarks/results/program_size_before_cpu.json --commit <commit>

It takes about half an hour on a 2-core CPU (``--traced-ids`` limits the traced-only set; the CI ids must stay in it).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import jax

import jaxsoc
from jaxsoc.bench import program

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
RESULT_FILES = ROOT / "benchmarks" / "results"
#: the committed tables: label -> JSON file
TABLES = {"before": RESULT_FILES / "program_size_before_cpu.json", "after": RESULT_FILES / "program_size_cpu.json"}
TITLES = {"before": "Program size before (CPU)", "after": "Program size (CPU)"}


def machine() -> str:
    """Returns the machine in words: CPU model, cores, and that other jobs may share it."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"a {os.cpu_count()}-core CPU VM ({model}), shared with other jobs: compile seconds are noisy"


def commit() -> str:
    """Returns the short commit of the jaxsoc checkout imported (``+dirty`` with uncommitted changes), or ``?``."""
    where = Path(jaxsoc.__file__).resolve().parents[1]
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=where, capture_output=True, text=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "jaxsoc"], cwd=where, capture_output=True)
    except OSError:
        return "?"
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "") if head.returncode == 0 else "?"


def dumps(data: dict) -> str:
    """Returns a committed table as JSON text: the meta indented, one line per row (diffs stay readable)."""
    rows = ",\n".join("  " + json.dumps(row) for row in data["rows"])
    return f'{{\n "meta": {json.dumps(data["meta"], indent=2)},\n "rows": [\n{rows}\n ]\n}}\n'


def render(results: Path = RESULTS) -> None:
    """Rewrites the ``before``/``after`` blocks of ``results`` (RESULTS.md) and each table's markdown file from the
    committed JSON files (a missing file leaves its block as it is)."""
    text = results.read_text()
    tables = {label: json.loads(path.read_text()) for label, path in TABLES.items() if path.exists()}
    for label, data in tables.items():
        TABLES[label].with_suffix(".md").write_text(program.results_markdown(data, TITLES[label]))
    for label, data in tables.items():
        before = tables.get("before") if label == "after" else None
        text = program.fill_block(text, label, program.results_block(data, before))
    results.write_text(text)


def main(argv: list[str] | None = None) -> int:
    """Measures and writes one table (or, with ``--render-only``, only rewrites RESULTS.md's blocks). Returns 0."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--label", choices=sorted(TABLES), default="after")
    parser.add_argument("--out", type=Path, help="default: the label's committed JSON")
    parser.add_argument("--num-envs", type=int, default=1024)
    parser.add_argument("--ids", nargs="+", help="compiled entries (default: representative ids and BIB)")
    parser.add_argument("--traced-ids", nargs="+", default=["all"], help="traced-only entries (default: all)")
    parser.add_argument("--commit", help="the commit measured (default: git of the imported jaxsoc)")
    parser.add_argument(
        "--render-only", action="store_true", help="only rewrite RESULTS.md's blocks and the tables' .md from the JSON"
    )
    parser.add_argument("--no-render", action="store_true", help="do not touch RESULTS.md")
    args = parser.parse_args(argv)
    if args.render_only:
        render()
        return 0
    out = args.out or TABLES[args.label]
    compiled = program.program_ids(args.ids or [*program.REPRESENTATIVE_IDS, *program.FAMILY_PROGRAMS])
    traced = [i for i in program.program_ids(args.traced_ids) if i not in compiled]
    print(f"jaxsoc from {jaxsoc.__file__}; {len(compiled)} compiled, {len(traced)} traced", file=sys.stderr)
    given = sys.argv[1:] if argv is None else argv
    command = " ".join(["JAX_PLATFORMS=cpu python scripts/program_size.py", *given])
    meta = {
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        "commit": args.commit or commit(),
        "command": command,
        "markdown": str(
            out.with_suffix(".md").relative_to(ROOT) if out.is_relative_to(ROOT) else out.with_suffix(".md").name
        ),
        "num_envs": args.num_envs,
        "compiled": compiled,
        "jax": jax.__version__,
        "platform": jax.default_backend(),
        "compile_cache": program.compile_cache_on(),
    }
    results: list[dict] = []
    start = time.perf_counter()

    def save(result: dict | None = None) -> None:
        if result is not None:
            results.append(result)
        data = {
            "meta": {**meta, "elapsed_s": round(time.perf_counter() - start, 1)},
            "rows": program.program_rows(results),
        }
        out.write_text(dumps(data))
        out.with_suffix(".md").write_text(program.results_markdown(data, TITLES[args.label]))

    program.run_program_table(compiled, args.num_envs, compile=True, on_result=save)
    program.run_program_table(traced, args.num_envs, compile=False, on_result=save)
    save()
    if not args.no_render and out.resolve() == TABLES[args.label].resolve():
        render()
    return 0


if __name__ == "__main__":
    sys.exit(main())
