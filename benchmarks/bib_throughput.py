"""BIB episodes per second on the current JAX backend: generated, and generated and rendered at 84x84, against
the number of episodes generated in parallel, with BIB's video-like params and ``BIBParams.compact()``, and
the time to generate and render the background set (``jaxsoc.envs.bib.throughput`` describes the method)::

    python benchmarks/bib_throughput.py                       # sizes for this backend, both params
    python benchmarks/bib_throughput.py --json bib.json       # also writes the rows
    python benchmarks/bib_throughput.py --params compact --sizes 64 256 --background-episodes 0

On a CPU the defaults are small (a video-like episode is 9 x 434 frames, about a third of a second of one
core's rendering) and the background set is a smaller run of 2 batches, which the output says; on an
accelerator they are 1,024, 4,096 and 16,384 episodes and the whole set of 28,000 episodes in batches of 4,096.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the checkout's jaxsoc, without PYTHONPATH

import jax  # noqa: E402

from jaxsoc.envs.bib import throughput  # noqa: E402
from jaxsoc.envs.bib import world as W  # noqa: E402

PARAMS = {"video": W.BIBParams(), "compact": W.BIBParams.compact()}
CPU_SIZES = {"video": [4, 16], "compact": [16, 64, 256]}
ACCELERATOR_SIZES = [1024, 4096, 16384]
ACCELERATOR_BATCH = 4096


def build_parser() -> argparse.ArgumentParser:
    """Returns the script's argument parser."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--params", nargs="+", choices=list(PARAMS), default=list(PARAMS), help="episode sizes")
    parser.add_argument("--sizes", nargs="+", type=int, help="parallel episodes (default: by backend, see above)")
    parser.add_argument("--video-sizes", nargs="+", type=int, help="parallel episodes for video params only")
    parser.add_argument("--repeats", type=int, help="timed calls after a warm-up (default 3; 2 on a CPU)")
    parser.add_argument("--render-size", type=int, default=throughput.RENDER_SIZE, help="frame side in pixels")
    parser.add_argument("--task", help="one background task instead of the background mix")
    parser.add_argument("--chunk-mib", type=int, default=throughput.CHUNK_BYTES >> 20, help="frames rendered at once")
    parser.add_argument("--workers", type=int, default=1, help="programs compiled at once")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--background-batch", type=int, help="episodes per batch (default: the largest size)")
    parser.add_argument(
        "--background-episodes",
        type=int,
        help="episodes of the background set (default: all 28,000 on an accelerator, 2 batches on a CPU; 0: skip)",
    )
    parser.add_argument("--json", help="write the rows and background-set results to this file")
    return parser


def _sizes(args: argparse.Namespace, label: str, cpu: bool) -> list[int]:
    if label == "video" and args.video_sizes:
        return args.video_sizes
    if args.sizes:
        return args.sizes
    return CPU_SIZES[label] if cpu else ACCELERATOR_SIZES


def _background(args: argparse.Namespace, params: W.BIBParams, sizes: list[int], cpu: bool) -> dict | None:
    """Returns ``throughput.background_set_seconds`` for the options (None when skipped)."""
    batch = args.background_batch or (max(sizes) if cpu else ACCELERATOR_BATCH)
    episodes = args.background_episodes
    if episodes is None:
        episodes = 2 * batch if cpu else None
    if episodes == 0:
        return None
    return throughput.background_set_seconds(
        params,
        batch,
        args.render_size,
        episodes=episodes,
        seed=args.seed,
        task=args.task,
        chunk_bytes=args.chunk_mib << 20,
    )


def main(argv: list[str] | None = None) -> int:
    """Prints a table per params and the background-set time; returns 0."""
    args = build_parser().parse_args(argv)
    cpu = jax.default_backend() == "cpu"
    repeats = args.repeats or (2 if cpu else 3)
    info = throughput.device_info()
    print(f"# BIB throughput on {info['device']} ({info['platform']}), jax {info['jax']}\n")
    rows, sets = [], []
    start = time.perf_counter()
    for label in args.params:
        params, sizes = PARAMS[label], _sizes(args, label, cpu)
        measured = throughput.measure(
            sizes,
            params,
            args.render_size,
            repeats,
            args.seed,
            task=args.task,
            chunk_bytes=args.chunk_mib << 20,
            workers=args.workers,
        )
        rows += measured
        print(f"## {label} params ({params.num_frames} frames per trial)\n")
        print(throughput.format_table(measured) + "\n", flush=True)
        result = _background(args, params, sizes, cpu)
        if result is not None:
            sets.append(result)
            print(throughput.format_background_set(result) + "\n", flush=True)
    print(f"({time.perf_counter() - start:.0f} s in all)")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "background_set": sets}, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
