"""EXCALIBUR steps per second on the current JAX backend against the number of houses stepped in parallel, for each
mode of ``jaxsoc.envs.excalibur.throughput`` (random valid actions; the knowledge reward; the oracle explorer), and
houses generated per second (``throughput.measure_houses``)::

    python benchmarks/excalibur_throughput.py                       # sizes for this backend
    python benchmarks/excalibur_throughput.py --modes random --sizes 64 1024 --steps 50 --out benchmarks/results/x
    python benchmarks/excalibur_throughput.py --modes --houses 512 4096   # house generation only

On a CPU the default sizes are 1, 64 and 1,024 houses for 50 steps; on an accelerator 4,096, 65,536 and 262,144 for
100. Houses are generated 64, 512 and 4,096 at a time on a CPU (4,096, 65,536 and 262,144 on an accelerator); at
512, the train bank's size, the whole bank with its questions filtered is timed too. No reference implementation
exists to compare with (the original runs in AI2-THOR): rates are absolute. With ``--out DIR`` the rows go to
``DIR/excalibur_throughput.json`` and the tables to ``DIR/excalibur_throughput.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the checkout's jaxsoc, without PYTHONPATH

import jax  # noqa: E402

from jaxsoc.envs.excalibur import throughput  # noqa: E402

CPU_SIZES, CPU_STEPS = [1, 64, 1024], 50
ACCELERATOR_SIZES, ACCELERATOR_STEPS = [4096, 65_536, 262_144], 100
CPU_HOUSES, ACCELERATOR_HOUSES = [64, 512, 4096], [4096, 65_536, 262_144]
BANK_SIZE = 512  # the train bank's houses (bank.BANK_SIZES): the size at which the whole bank is timed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", type=int, help="parallel houses (default: by backend)")
    parser.add_argument("--modes", nargs="*", choices=throughput.MODES, default=list(throughput.MODES))
    parser.add_argument("--houses", nargs="*", type=int, help="houses generated at once (default: by backend)")
    parser.add_argument("--steps", type=int, help="steps per call, one lax.scan (default 50 on a CPU, else 100)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", help="directory for excalibur_throughput.{json,md}")
    args = parser.parse_args(argv)
    cpu = jax.default_backend() == "cpu"
    sizes = args.sizes or (CPU_SIZES if cpu else ACCELERATOR_SIZES)
    steps = args.steps or (CPU_STEPS if cpu else ACCELERATOR_STEPS)
    house_sizes = args.houses if args.houses is not None else (CPU_HOUSES if cpu else ACCELERATOR_HOUSES)
    rows = []
    for n in sizes:
        for mode in args.modes:
            row = throughput.measure(throughput.Workload(mode, n, steps), args.repeats)
            rows.append(row)
            print(f"{mode} N={n}: {row['steps_per_s']:,.0f} steps/s (compile {row['compile_s']:.1f} s)", flush=True)
    houses = []
    for n in house_sizes:
        row = throughput.measure_houses(n, args.repeats, bank=n == BANK_SIZE)
        houses.append(row)
        print(f"houses N={n}: {row['houses_per_s']:,.0f} houses/s (compile {row['compile_s']:.1f} s)", flush=True)
    table = "\n\n".join(
        t for t in (rows and throughput.format_table(rows), houses and throughput.format_houses_table(houses)) if t
    )
    print(f"\nEXCALIBUR on {jax.devices()[0].device_kind}\n\n{table}")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "excalibur_throughput.json").write_text(json.dumps(rows + houses, indent=1))
        (out / "excalibur_throughput.md").write_text(f"EXCALIBUR on {jax.devices()[0].device_kind}\n\n{table}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
