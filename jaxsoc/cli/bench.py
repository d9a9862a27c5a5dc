"""``jaxsoc bench``: throughput tables against minigrid (and xminigrid), the BabyAI bot's rate, a family's own
throughput table (``--suite chaic|household``, ``jaxsoc.bench.family``), the GPU suite, and program size
(``--program``: jaxpr equations, loops, compile seconds, HLO size and cost analysis per id).

jaxsoc bench --suite chaic                                                # CHAIC's sizes for this backend
jaxsoc bench --suite chaic --out-dir benchmarks/results/chaic_throughput_cpu --resume
jaxsoc bench --suite chaic --modes uniform agents --tasks normal shopping --num-envs 64 --steps 20
jaxsoc bench --suite household --modes uniform --num-envs 64 1024 --steps 50 --repeats 1
"""

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


def cmd_family(args) -> int:
    """Runs ``jaxsoc bench --suite <family>`` (``jaxsoc.bench.family``): prints the family's table, and with
    ``--out-dir`` writes ``<family>_throughput.{json,md}`` after every row (``--resume``: keeping the rows measured
    before with the same key). Returns 0, or 2 for flags it does not take."""
    import time

    import jax

    from jaxsoc.bench import family

    table = family.TABLES[args.suite]
    given = [flag for flag, value in {"--envs": args.envs, "--json": args.json}.items() if value]
    if args.tasks and not table.tasks:
        given.append("--tasks")
    if given:
        print(f"jaxsoc bench --suite {args.suite}: {', '.join(given)} not taken", file=sys.stderr)
        return 2
    modes = table.default_modes()
    unknown = [m for m in args.modes or () if m not in table.throughput.MODES]
    if unknown:
        choices = list(table.throughput.MODES)
        print(f"jaxsoc bench --suite {args.suite}: unknown mode(s) {unknown}; choose from {choices}", file=sys.stderr)
        return 2
    info = table.throughput.device_info()
    print(f"# {table.title} throughput on {info['device']} ({info['platform']}), jax {info['jax']}\n", flush=True)
    start = time.perf_counter()
    rows = family.run_table(
        table,
        cpu=jax.default_backend() == "cpu",
        sizes=args.num_envs,
        steps=args.steps,
        repeats=args.repeats,
        modes=args.modes or modes,
        tasks=args.tasks or ["normal"],
        split=args.split,
        task_seed=args.task_seed,
        seed=args.seed,
        workers=args.workers or 1,
        out=args.out_dir,
        resume=args.resume,
        log=lambda line: print(line, file=sys.stderr, flush=True),
    )
    print(table.throughput.format_table(rows))
    print(f"\n({time.perf_counter() - start:.0f} s in all)")
    if args.out_dir:
        out = Path(args.out_dir)
        print(f"wrote {out / table.json_name} and {out / table.md_name}")
    return 0


def cmd_bench(args) -> int:
    """Runs ``jaxsoc bench --suite ...``: prints the suite's table (``--json``: also writes its rows); the GPU suite
    returns its own exit code. Returns 2 for flags the GPU suite does not take. ``--program`` runs ``cmd_program``
    instead."""
    if args.program is not None:
        return cmd_program(args)
    from jaxsoc.bench.family import TABLES

    if args.suite in TABLES:
        return cmd_family(args)
    family_flags = {"--modes": args.modes, "--tasks": args.tasks, "--resume": args.resume}
    family_flags.update({"--split": args.split != "train", "--task-seed": args.task_seed, "--seed": args.seed})
    given = [flag for flag, value in family_flags.items() if value]
    if given:
        print(
            f"jaxsoc bench --suite {args.suite}: {', '.join(given)} not taken (--suite chaic|household)",
            file=sys.stderr,
        )
        return 2
    args.repeats = 3 if args.repeats is None else args.repeats
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
    bench.add_argument("--repeats", type=int, help="timed calls (default 3; chaic and household: 2 on a CPU)")
    bench.add_argument(
        "--suite",
        choices=["classic", "babyai", "registry", "bot", "chaic", "household", "gpu"],
        default="classic",
        help="classic MiniGrid envs, the 19 BabyAI levels (resets pooled, minigrid occlusion), the rest of "
        "minigrid's registry (every other MiniGrid id and the bonus BabyAI levels, each id's own occlusion, minigrid's "
        "rate over at most 1 s), the BabyAI bot "
        "(bot steps/s against minigrid's BabyAIBot), a family's own table (chaic, household: steps/s against the "
        "worlds stepped in parallel per mode, jaxsoc.bench.family), or every GPU figure of the project "
        "(jaxsoc.gpu_suite: budgeted parts, row files and the generated GPU section of benchmarks/RESULTS.md)",
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
    own = bench.add_argument_group("family tables (--suite chaic|household; --num-envs, --steps, --repeats, --workers)")
    own.add_argument("--modes", nargs="+", help="action modes (the family's throughput.MODES; default its usual ones)")
    own.add_argument("--tasks", nargs="+", help="chaic: the tasks (default normal)")
    own.add_argument("--split", default="train", help="the task bank the worlds reset from")
    own.add_argument("--task-seed", type=int, default=0, help="the seed the task set is built from")
    own.add_argument("--seed", type=int, default=0, help="the warm-up call's key")
    own.add_argument(
        "--resume", action="store_true", help="keep the rows of --out-dir's file measured before (same key and device)"
    )
    from jaxsoc.gpu_suite import add_arguments as add_gpu_suite_arguments

    add_gpu_suite_arguments(bench.add_argument_group("GPU suite (--suite gpu; see jaxsoc.gpu_suite)"))
    bench.set_defaults(func=cmd_bench)
