"""``jaxsoc bench``: throughput tables against minigrid (and xminigrid), the BabyAI bot's rate, the GPU suite, and
program size (``--program``: jaxpr equations, loops, compile seconds, HLO size and cost analysis per id)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from jaxsoc.bench.minigrid import BABYAI_BENCH_ENVS, GPU_BENCH_ENVS, registry_ids, run_registry_table, run_table
from jaxsoc.cli.common import on_accelerator


def cmd_program(args) -> int:
    """Runs ``jaxsoc bench --program [IDS|all]`` (``jaxsoc.bench.program``): prints the markdown table of the ids'
    programs (``--no-compile``: traced only) and with ``--json`` writes its rows. Returns 0, or 2 for an unknown id or
    flags it does not take."""
    from jaxsoc.bench import program

    given = [flag for flag, value in {"--envs": args.envs, "--steps": args.steps}.items() if value]
    if args.suite != "classic":
        given.append("--suite")
    if given or len(args.num_envs or []) > 1:
        print(f"jaxsoc bench --program: {', '.join(given) or 'several --num-envs'} not taken", file=sys.stderr)
        return 2
    try:
        ids = program.program_ids(args.program)
    except KeyError as error:
        print(f"jaxsoc bench --program: {error.args[0]}", file=sys.stderr)
        return 2
    num_envs = args.num_envs[0] if args.num_envs else 1024
    results = program.run_program_table(ids, num_envs, compile=not args.no_compile)
    rows = program.program_rows(results)
    print(program.format_table(rows))
    if args.json:
        import json

        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


def cmd_bench(args) -> int:
    """Runs ``jaxsoc bench --suite ...``: prints the suite's table (``--json``: also writes its rows); the GPU suite
    returns its own exit code. Returns 2 for flags the GPU suite does not take. ``--program`` runs ``cmd_program``
    instead."""
    if args.program is not None:
        return cmd_program(args)
    if args.suite == "gpu":
        from jaxsoc import gpu_suite

        flags = {"--envs": args.envs, "--num-envs": args.num_envs, "--steps": args.steps, "--json": args.json}
        given = [flag for flag, value in flags.items() if value]
        if given:
            print(
                f"jaxsoc bench --suite gpu: {', '.join(given)} not taken (the parts set their sizes)", file=sys.stderr
            )
            return 2
        return gpu_suite.run_from_args(args)
    gpu = on_accelerator()
    if args.suite == "bot":
        from jaxsoc.bench.bot import run_bot_table

        rows = run_bot_table(
            args.envs or (BABYAI_BENCH_ENVS if gpu else ["BabyAI-GoToLocal-v0", "BabyAI-BossLevel-v0"]),
            args.num_envs or ([4096, 16384, 65536] if gpu else [64, 256]),
            args.steps or (256 if gpu else 64),
            repeats=args.repeats,
            reference_seconds=0 if args.no_reference else args.reference_seconds,
        )
        if args.json:
            import json

            Path(args.json).write_text(json.dumps(rows, indent=2))
        return 0
    if args.suite == "registry":
        rows = run_registry_table(
            args.envs or registry_ids(),
            args.num_envs or ([65_536] if gpu else [1024]),
            args.steps or (500 if gpu else 100),
            repeats=args.repeats,
            reference_seconds=0 if args.no_reference else min(args.reference_seconds, 1.0),
        )
        if args.json:
            import json

            Path(args.json).write_text(json.dumps(rows, indent=2))
        return 0
    babyai = args.suite == "babyai"
    suite = BABYAI_BENCH_ENVS if babyai else GPU_BENCH_ENVS
    envs = args.envs or (suite if gpu or babyai else suite[:2])
    sizes = args.num_envs or ([4**k for k in range(5, 10)] if gpu else [256, 1024, 4096])
    steps = args.steps or (1000 if gpu else 100)
    occlusion = args.see_through_walls or ("off" if babyai else "both")
    modes = {"both": (True, False), "on": (True,), "off": (False,)}[occlusion]
    rows = run_table(
        envs,
        sizes,
        steps,
        occlusion=modes,
        repeats=args.repeats,
        reference_seconds=0 if args.no_reference else args.reference_seconds,
        paths=tuple(args.paths) if args.paths else None,
    )
    if args.json:
        import json

        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Adds ``jaxsoc bench`` (its own options and the GPU suite's) to the ``jaxsoc`` command's subparsers."""
    bench = sub.add_parser("bench", help="throughput table against minigrid (and xminigrid if installed)")
    bench.add_argument("--envs", nargs="+")
    bench.add_argument("--num-envs", nargs="+", type=int)
    bench.add_argument("--steps", type=int)
    bench.add_argument("--repeats", type=int, default=3)
    bench.add_argument(
        "--suite",
        choices=["classic", "babyai", "registry", "bot", "gpu"],
        default="classic",
        help="classic MiniGrid envs, the 19 BabyAI levels (resets pooled, minigrid occlusion), the rest of "
        "minigrid's registry (every other MiniGrid id and the bonus BabyAI levels, each id's own occlusion, minigrid's "
        "rate over at most 1 s), the BabyAI bot "
        "(bot steps/s against minigrid's BabyAIBot), or every GPU figure of the project (jaxsoc.gpu_suite: "
        "budgeted parts, row files and the generated GPU section of benchmarks/RESULTS.md)",
    )
    bench.add_argument(
        "--see-through-walls", choices=["both", "on", "off"], help="default: both (classic), off (babyai)"
    )
    bench.add_argument(
        "--paths",
        nargs="+",
        choices=["vmap", "batched"],
        help="the steps measured side by side: jax.vmap(env.step) as gymnax-style code calls it, and/or "
        "core.autoreset.batched_step (default: batched for BabyAI levels, vmap for the others)",
    )
    bench.add_argument("--reference-seconds", type=float, default=5.0)
    bench.add_argument("--no-reference", action="store_true", help="skip the minigrid reference rate")
    bench.add_argument("--json", help="also write the rows as JSON")
    bench.add_argument(
        "--program",
        nargs="*",
        metavar="IDS",
        help="program size instead of throughput (jaxsoc.bench.program): per id, jaxpr equations of reset_env, "
        "step_env, vmap(env.step) and the batched step, loops, CPU compile seconds, optimized HLO size and cost "
        "analysis per world; ids separated by spaces or commas, 'all' for every registered id and the BIB generator "
        "and renderer, none for the representative ids; --num-envs: one size (default 1024)",
    )
    bench.add_argument("--no-compile", action="store_true", help="--program: trace only (equations and loops)")
    from jaxsoc.gpu_suite import add_arguments as add_gpu_suite_arguments

    add_gpu_suite_arguments(bench.add_argument_group("GPU suite (--suite gpu; see jaxsoc.gpu_suite)"))
    bench.set_defaults(func=cmd_bench)
