"""The GPU suite's command line: ``benchmarks/gpu_suite.py`` and ``jaxsoc bench --suite gpu`` (``add_arguments``,
``run_from_args``, ``main``; SIGTERM saves the rows and the markdown). ``jaxsoc.gpu_suite`` describes the suite."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import threading
from pathlib import Path

from jaxsoc.gpu_suite import core
from jaxsoc.gpu_suite.core import EXIT_DONE, EXIT_ERROR, EXIT_MORE


def add_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """Adds the suite's options to ``parser`` (the script's and ``jaxsoc bench --suite gpu``'s)."""
    names = [p.name for p in core.family_parts()]
    parser.add_argument("--parts", nargs="+", choices=names, metavar="PART", help=f"parts to run: {', '.join(names)}")
    parser.add_argument("--quick", action="store_true", help="the throughput parts only, in <= 8 minutes")
    parser.add_argument("--force", action="store_true", help="measure complete parts again")
    parser.add_argument(
        "--budget-minutes", type=float, help="scales the part budgets to this total (default 25; 8 with --quick)"
    )
    parser.add_argument("--time-limit", type=float, help="seconds this call may run (parts it cuts stay incomplete)")
    parser.add_argument("--out-dir", help="row files (default benchmarks/results; a temp dir with --toy)")
    parser.add_argument(
        "--results-md", help="markdown to update (default benchmarks/RESULTS.md; in --out-dir w/ --toy)"
    )
    parser.add_argument("--toy", action="store_true", help="toy sizes: a smoke test that runs on a CPU")
    parser.add_argument("--workers", type=int, help="programs compiled at once (default: CPU cores, at most 12)")
    parser.add_argument(
        "--compile-cache",
        help=f"jax's persistent compilation cache, or 'none' (default {core.default_compile_cache()})",
    )
    parser.add_argument("--allow-cpu", action="store_true", help="run full sizes without an accelerator")
    parser.add_argument("--list-parts", action="store_true", help="print the parts and their budgets, then exit")
    parser.add_argument("--render-only", action="store_true", help="only rewrite the markdown from the row files")


def build_parser() -> argparse.ArgumentParser:
    """Returns the suite's argument parser."""
    parser = argparse.ArgumentParser(
        prog="gpu_suite",
        description=sys.modules[__package__].__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    return parser


def _list_parts() -> str:
    lines = ["part         budget s  quick s  title"]
    for p in core.family_parts():
        quick = f"{p.quick_budget_s:7.0f}" if p.quick is not None else "      –"
        lines.append(f"{p.name:<12} {p.budget_s:8.0f}  {quick}  {p.title}")
    return "\n".join(lines)


def run_from_args(args: argparse.Namespace) -> int:
    """Runs the suite as ``args`` (``add_arguments``'s options) say. Returns the exit status: 0 when every
    selected part is complete, 3 when some are not (rerun to continue), 1 when a part failed, 2 for bad
    options."""
    if args.list_parts:
        print(_list_parts())
        return EXIT_DONE
    out_dir = Path(
        args.out_dir
        or (os.path.join(tempfile.gettempdir(), "jaxsoc-gpu-suite-toy") if args.toy else "benchmarks/results")
    )
    results_md = Path(args.results_md or (out_dir / "RESULTS.md" if args.toy else "benchmarks/RESULTS.md"))
    parts = core.family_parts()
    selected = [p for p in parts if args.parts is None or p.name in args.parts]
    if args.render_only:
        rows, complete = core.load_rows(out_dir, parts)
        core.update_results_md(results_md, core.render_markdown(rows, complete, parts))
        print(f"rewrote the GPU section of {results_md} from {len(rows)} row files in {out_dir}")
        return EXIT_DONE
    import jax

    if jax.default_backend() == "cpu" and not (args.toy or args.allow_cpu):
        print("gpu_suite: no accelerator; use --toy for a smoke test (or --allow-cpu)", file=sys.stderr)
        return 2
    cache = args.compile_cache or ("none" if args.toy else core.default_compile_cache())
    if cache.lower() != "none":
        core.enable_compile_cache(cache)
    workers = args.workers or min(12, os.cpu_count() or 1)
    results = core.run_suite(
        selected,
        out_dir,
        results_md,
        quick=args.quick,
        toy=args.toy,
        budget_minutes=args.budget_minutes,
        time_limit_s=args.time_limit,
        force=args.force,
        workers=workers,
        registry=parts,
    )
    wanted = [p.name for p in selected if not (args.quick and p.quick is None)]
    for name in wanted:
        state = results.get(name)
        status = "not started" if state is None else ("complete" if state["complete"] else "INCOMPLETE")
        error = f" ({state['error']})" if state and state.get("error") else ""
        print(f"{name:<12} {status}{error}")
    if any(results.get(n, {}).get("error") for n in wanted):
        return EXIT_ERROR
    done = all(results.get(n, {}).get("complete") for n in wanted)
    print("all parts complete" if done else "parts remain: run the same command again to continue")
    return EXIT_DONE if done else EXIT_MORE


class _Terminated(BaseException):
    """SIGTERM (``timeout``'s signal) as an exception, so the rows and the markdown are written on the way out."""


def _terminate(signum, frame) -> None:
    raise _Terminated


def main(argv: list[str] | None = None) -> int:
    """The suite's command line (``benchmarks/gpu_suite.py``). Returns the exit status (``run_from_args``;
    3 when stopped by SIGTERM)."""
    args = build_parser().parse_args(argv)
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if main_thread else None
    try:
        return run_from_args(args)
    except (_Terminated, KeyboardInterrupt) as stop:
        print("gpu_suite: interrupted; the rows measured so far are kept: rerun to continue", file=sys.stderr)
        if isinstance(stop, _Terminated):  # rows and markdown are written: exit now, not after the compilations
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(EXIT_MORE)
        return EXIT_MORE
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)
