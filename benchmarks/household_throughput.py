"""Random-action steps per second of the Watch-And-Help household on the current JAX backend, against the number
of households stepped in parallel, for each action mode (``jaxsoc.envs.household.throughput`` describes the
method and the modes)::

    python benchmarks/household_throughput.py                                  # sizes for this backend
    python benchmarks/household_throughput.py --out benchmarks/results/household_throughput_cpu
    python benchmarks/household_throughput.py --modes uniform --sizes 64 1024 --steps 50 --repeats 1

On a CPU the default sizes are 1, 64, 1,024 and 4,096 households for 100 steps; on an accelerator 4,096, 65,536
and 262,144. With ``--out DIR`` the rows go to ``DIR/household_throughput.json`` (rewritten after every row) and
the table to ``DIR/household_throughput.md``; ``--resume`` keeps the rows of that file measured on the same
device kind with the same parameters (their ``key``) and measures only the others.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the checkout's jaxsoc, without PYTHONPATH

import jax  # noqa: E402

from jaxsoc.envs.household import throughput  # noqa: E402

CPU_SIZES = [1, 64, 1024, 4096]
ACCELERATOR_SIZES = [4096, 65_536, 262_144]
JSON_NAME, MD_NAME = "household_throughput.json", "household_throughput.md"


def build_parser() -> argparse.ArgumentParser:
    """Returns the script's argument parser."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", type=int, help="parallel households (default: by backend, see above)")
    parser.add_argument("--modes", nargs="+", choices=throughput.MODES, default=list(throughput.RANDOM_MODES))
    parser.add_argument("--steps", type=int, default=100, help="time steps per call (one lax.scan)")
    parser.add_argument("--repeats", type=int, help="timed calls after a warm-up (default 3; 2 on a CPU)")
    parser.add_argument("--split", default="train", help="the task bank the households reset from")
    parser.add_argument("--task-seed", type=int, default=0, help="the seed the task set is built from")
    parser.add_argument("--seed", type=int, default=0, help="the warm-up call's key")
    parser.add_argument("--workers", type=int, default=1, help="programs compiled at once")
    parser.add_argument("--out", help="directory for household_throughput.json and household_throughput.md")
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
    repeats = args.repeats or (2 if cpu else 3)
    out = Path(args.out) if args.out else None
    info = throughput.device_info()
    print(f"# Household throughput on {info['device']} ({info['platform']}), jax {info['jax']}\n", flush=True)
    kept = _kept_rows(out, args.resume)
    workloads = [
        throughput.Workload(mode, n, args.steps, args.split, args.task_seed) for mode in args.modes for n in sizes
    ]
    start = time.perf_counter()
    rows = []
    todo = [w for w in workloads if throughput.row_key(w, repeats, args.seed) not in kept]
    throughput.compile_workloads(todo, args.workers)
    for w in workloads:
        row = kept.get(throughput.row_key(w, repeats, args.seed))
        if row is None:
            row = throughput.measure_workload(w, repeats, args.seed)
            print(f"{w.mode} N={w.num_envs}: {row['steps_per_s']:.3g} steps/s", file=sys.stderr, flush=True)
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
