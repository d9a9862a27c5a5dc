"""CHAIC steps per second on the current JAX backend, against the number of worlds stepped in parallel, for each
action mode and task, with the ratio to the paper's ThreeDWorld rate (``jaxsoc.envs.chaic.throughput`` describes
the method, the modes and the reference)::

    python benchmarks/chaic_throughput.py                                   # sizes for this backend
    python benchmarks/chaic_throughput.py --out benchmarks/results/chaic_throughput_cpu
    python benchmarks/chaic_throughput.py --modes uniform agents --tasks normal shopping --sizes 64 --steps 20

On a CPU the default sizes are 1, 64 and 1,024 worlds for 50 steps; on an accelerator 4,096 and 65,536 for 100.
With ``--out DIR`` the rows go to ``DIR/chaic_throughput.json`` (rewritten after every row) and the table to
``DIR/chaic_throughput.md``; ``--resume`` keeps the rows of that file measured on the same device kind with the
same parameters (their ``key``) and measures only the others.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the checkout's jaxsoc, without PYTHONPATH

import jax  # noqa: E402

from jaxsoc.envs.chaic import catalogue, throughput  # noqa: E402

CPU_SIZES, CPU_STEPS = [1, 64, 1024], 50
ACCELERATOR_SIZES, ACCELERATOR_STEPS = [4096, 65_536], 100
JSON_NAME, MD_NAME = "chaic_throughput.json", "chaic_throughput.md"


def build_parser() -> argparse.ArgumentParser:
    """Returns the script's argument parser."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", type=int, help="parallel worlds (default: by backend, see above)")
    parser.add_argument("--modes", nargs="+", choices=throughput.MODES, default=list(throughput.MODES))
    parser.add_argument("--tasks", nargs="+", choices=catalogue.TASKS, default=["normal"])
    parser.add_argument("--steps", type=int, help="env steps per call, one lax.scan (default 50 on a CPU, else 100)")
    parser.add_argument("--repeats", type=int, help="timed calls after a warm-up (default 3; 2 on a CPU)")
    parser.add_argument("--split", default="train", help="the task bank the worlds reset from")
    parser.add_argument("--task-seed", type=int, default=0, help="the seed the task set is built from")
    parser.add_argument("--seed", type=int, default=0, help="the warm-up call's key")
    parser.add_argument("--workers", type=int, default=1, help="programs compiled at once")
    parser.add_argument("--out", help="directory for chaic_throughput.json and chaic_throughput.md")
    parser.add_argument("--resume", action="store_true", help="keep the rows of --out measured before (same key)")
    return parser


def _kept_rows(out: Path | None, resume: bool) -> dict[str, dict]:
    """Returns ``{key: row}`` of ``out``'s JSON measured on this device kind (empty unless ``resume``)."""
    if out is None or not resume or not (out / JSON_NAME).exists():
        return {}
    device = throughput.device_info()["device"]
    rows = json.loads((out / JSON_NAME).read_text()).get("rows", [])
    return {r["key"]: r for r in rows if r.get("device") == device and "key" in r and not r.get("error")}


def _write(out: Path, rows: list[dict], seconds: float) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / (JSON_NAME + ".tmp")
    tmp.write_text(json.dumps({"rows": rows, "seconds": seconds, **throughput.device_info()}, indent=1) + "\n")
    tmp.replace(out / JSON_NAME)
    (out / MD_NAME).write_text(throughput.format_table(rows) + "\n")


def main(argv: list[str] | None = None) -> int:
    """Prints the table (and writes the files with ``--out``); returns 0."""
    args = build_parser().parse_args(argv)
    cpu = jax.default_backend() == "cpu"
    sizes = args.sizes or (CPU_SIZES if cpu else ACCELERATOR_SIZES)
    steps = args.steps or (CPU_STEPS if cpu else ACCELERATOR_STEPS)
    repeats = args.repeats or (2 if cpu else 3)
    out = Path(args.out) if args.out else None
    info = throughput.device_info()
    print(f"# CHAIC throughput on {info['device']} ({info['platform']}), jax {info['jax']}\n", flush=True)
    kept = _kept_rows(out, args.resume)
    workloads = [
        throughput.Workload(mode, n, steps, task, args.split, args.task_seed)
        for task in args.tasks
        for mode in args.modes
        for n in sizes
    ]
    start = time.perf_counter()
    rows = []
    todo = [w for w in workloads if throughput.row_key(w, repeats, args.seed) not in kept]
    throughput.compile_workloads(todo, args.workers)
    for w in workloads:
        row = kept.get(throughput.row_key(w, repeats, args.seed))
        if row is None:
            row = throughput.measure_workload(w, repeats, args.seed)
            print(
                f"{w.task} {w.mode} N={w.num_envs}: {row['agent_steps_per_s']:.3g} agent steps/s",
                file=sys.stderr,
                flush=True,
            )
        rows.append(row)
        if out is not None:
            _write(out, rows, time.perf_counter() - start)
    print(throughput.format_table(rows))
    print(f"\n({time.perf_counter() - start:.0f} s in all)")
    if out is not None:
        print(f"wrote {out / JSON_NAME} and {out / MD_NAME}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
