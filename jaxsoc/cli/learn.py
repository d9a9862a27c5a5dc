"""``jaxsoc train`` and ``jaxsoc eval``: command-line front ends of the learners.

``jaxsoc train ppo --env BabyAI-GoToRedBallGrey-v0 --frames 2e6 --out runs/rbg`` trains with the BabyAI recipe;
``--set name=value`` overrides any field of the algorithm's config, converted to the field's type (an unknown
field or a value of the wrong type is an error naming the valid fields). ``jaxsoc eval RUN_DIR`` evaluates the
newest checkpoint of a run over fixed validation episodes, with sampled actions (the headline, as the BabyAI
reference evaluates) and greedy ones beside, and can write a GIF of some of them.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import sys
import typing
from pathlib import Path
from typing import Any

from jaxsoc.learners import families

#: the shared trainers, then every family's own learners (``learners/<family>/family.py``) in family order
ALGORITHMS = ("ppo", "a2c", "bc", "il-interactive", *(learner.name for _, learner in families.learners()))


def _convert(name: str, hint: Any, text: str) -> Any:
    if typing.get_origin(hint) is tuple:  # tuple[int, ...]: comma-separated, e.g. channels=8,16,32
        element = typing.get_args(hint)[0]
        return tuple(_convert(name, element, part.strip()) for part in text.split(",") if part.strip())
    kinds = set(typing.get_args(hint)) or {hint}
    if type(None) in kinds and text.lower() == "none":
        return None
    if bool in kinds:
        if text.lower() in ("1", "true", "yes", "on"):
            return True
        if text.lower() in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"{name} takes true/false, got {text!r}")
    if int in kinds:
        number = float(text)
        if not number.is_integer():
            raise ValueError(f"{name} takes an integer, got {text!r}")
        return int(number)
    if float in kinds:
        return float(text)
    return text


def parse_overrides(config_type: type, items: list[str]) -> dict[str, Any]:
    """Returns ``{field: value}`` from ``["name=value", ...]``, each value converted to ``config_type``'s field
    type (``1e6`` is accepted for integers; a tuple field takes comma-separated values).

    Raises:
        ValueError: a malformed item, an unknown field (the message lists the fields) or a bad value.
    """
    hints = typing.get_type_hints(config_type)
    fields = [f.name for f in dataclasses.fields(config_type)]
    out = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep:
            raise ValueError(f"--set takes name=value, got {item!r}")
        if name not in fields:
            raise ValueError(f"{config_type.__name__} has no field {name!r}; fields: {', '.join(fields)}")
        try:
            out[name] = _convert(name, hints[name], text)
        except ValueError as error:
            raise ValueError(f"bad value for {name}: {error}") from None
    return out


def cmd_train(args) -> int:
    from jaxsoc.learners import ppo

    if args.algo in ("bc", "il-interactive"):
        return _train_imitation(args)
    owned = families.owner(args.algo)
    if owned is not None:
        return _train_family(args, *owned)
    base = dict(env_id=args.env, preset=args.preset)
    network = families.network_for(args.env)  # the env's family declares the network its observations need
    if network is not None:
        base["network"] = network
    if args.num_envs is not None:
        base["num_envs"] = args.num_envs
    if args.frames is not None:
        base["total_frames"] = int(args.frames)
    try:
        fields = {**base, **parse_overrides(ppo.PPOConfig, args.set)}
        recipes = {"default": ppo.PPOConfig, "paper": ppo.paper_config, "throughput": ppo.throughput_config}
        if args.algo == "a2c" and args.recipe != "default":
            raise ValueError("--recipe is a PPO recipe; a2c has its own (a2c_config)")
        config = ppo.a2c_config(**fields) if args.algo == "a2c" else recipes[args.recipe](**fields)
    except (TypeError, ValueError) as error:
        print(f"jaxsoc train: {error}", file=sys.stderr)
        return 2
    from jaxsoc.learners.rl_run import train_rl

    # --coordinator/--num-processes/--process-id imply --distributed, which uses every process's devices
    cluster = (args.coordinator, args.num_processes, args.process_id)
    distributed = args.distributed or any(v is not None for v in cluster)
    try:
        summary = train_rl(
            config,
            args.out,
            seed=args.seed,
            chunk_updates=args.chunk_updates,
            checkpoint_every=args.checkpoint_every,
            resume=args.resume,
            eval_episodes=args.eval_episodes,
            gif_episodes=args.gif_episodes,
            devices=None if args.devices == 1 or distributed else _devices(args.devices),
            distributed=distributed,
            coordinator=args.coordinator,
            num_processes=args.num_processes,
            process_id=args.process_id,
            progress=not args.quiet,
        )
    except ValueError as error:
        print(f"jaxsoc train: {error}", file=sys.stderr)
        return 2
    print(json.dumps(summary, indent=1))
    print(run_line(summary, config.preset, Path(args.out)))
    return 0


def _train_family(args, family, learner) -> int:
    """Runs ``jaxsoc train`` for a family's own ``learner`` (``core.family.Learner``: ``--set`` parsed against its
    config) through the family's command module ``jaxsoc.cli.<family>`` (``train_command`` and ``run_line``)."""
    front = importlib.import_module(f".{family.name}", __package__)
    try:
        summary = front.train_command(args, parse_overrides(learner.config_type(), args.set))
    except (TypeError, ValueError) as error:
        print(f"jaxsoc train: {error}", file=sys.stderr)
        return 2
    print(json.dumps(summary, indent=1))
    print(front.run_line(summary, Path(args.out)))
    return 0


def run_line(summary: dict[str, Any], preset: str, out: Path) -> str:
    """Returns the one line that ends ``jaxsoc train``: what was trained, the evaluations (sampled actions,
    greedy beside them) and where the curves, checkpoint and GIF are."""
    line = (
        f"trained {summary['algo'].upper()} ({preset}) on {summary['env_id']}: {summary['frames']:,} frames in "
        f"{summary['wall_s'] / 60:.1f} min on {summary['device']}"
    )
    if "eval_success_rate" in summary:
        line += (
            f"; evaluation on {int(summary['eval_episodes'])} levels: success {summary['eval_success_rate']:.3f} "
            f"sampled, {summary['eval_greedy_success_rate']:.3f} greedy"
        )
    line += f"; curves {out / 'curves.png'}, checkpoint {summary['checkpoint']}"
    if "gif" in summary:
        line += f", episodes {summary['gif']}"
    return line


def _devices(count: int) -> list[Any]:
    import jax

    devices = jax.devices()
    if count == 0:
        return devices
    if count > len(devices):
        raise ValueError(f"--devices {count}: only {len(devices)} devices available")
    return devices[:count]


def bc_config(env_id: str, preset: str, items: list[str], **defaults: Any):
    """Returns the ``BCConfig`` recipe of ``preset`` for ``env_id`` (``"tiny"``: the Small recipe with the tiny
    model) with the ``--set`` ``items`` applied over ``defaults``.

    Raises:
        ValueError: a bad override (``parse_overrides``) or value.
    """
    from jaxsoc.learners.bc import BCConfig

    overrides = {**defaults, **parse_overrides(BCConfig, items)}
    overrides.pop("env_id", None)
    recipe = "small" if preset == "tiny" else preset
    return BCConfig.for_preset(env_id, recipe).replace(**{"preset": preset, **overrides})


def _train_imitation(args) -> int:
    """``jaxsoc train bc`` / ``il-interactive``: the BabyAI imitation recipes; writes the run's metrics and the
    best variables as a checkpoint that ``jaxsoc eval`` reads."""
    from jaxsoc.learners.bc import train_bc
    from jaxsoc.learners.checkpoint import Checkpointer
    from jaxsoc.learners.imitation import ImitationConfig, interactive_imitation
    from jaxsoc.learners.run_log import MetricsLog

    if args.algo == "bc" and not args.demos:
        print("jaxsoc train bc: --demos DIR is required (write one with jaxsoc demos)", file=sys.stderr)
        return 2
    # il-interactive: --set items naming an ImitationConfig field (start_demos, growth, max_rounds, ...) set it,
    # the others the BCConfig of every round
    loop_fields = {f.name for f in dataclasses.fields(ImitationConfig)} - {"bc"}
    loop_items = [i for i in args.set if args.algo != "bc" and i.partition("=")[0] in loop_fields]
    try:
        config = bc_config(args.env, args.preset, [i for i in args.set if i not in loop_items], seed=args.seed)
        out = Path(args.out)
        if args.algo == "bc":
            variables, history = train_bc(config, args.demos, out_dir=out, progress=not args.quiet)
        else:
            loop = ImitationConfig(bc=config, **parse_overrides(ImitationConfig, loop_items))
            result = interactive_imitation(loop, args.demos, out_dir=out, progress=not args.quiet)
            variables, history = result.variables, result.rounds
    except (TypeError, ValueError, FileNotFoundError) as error:
        print(f"jaxsoc train: {error}", file=sys.stderr)
        return 2
    meta = {
        "kind": args.algo,
        "env_id": config.env_id,
        "config": config.to_dict(),
        "network": config.network,
        "model_config": dataclasses.asdict(config.model_config),
    }
    checkpointer = Checkpointer(out / "checkpoints", meta)
    checkpointer.save(len(history), variables)
    checkpointer.close()
    log = MetricsLog(out)
    log.truncate("epoch" if args.algo == "bc" else "round", -1)
    log.append([{k: v for k, v in row.items() if isinstance(v, (int, float))} for row in history])
    x = "epoch" if args.algo == "bc" else "demos"
    summary = {"title": f"{args.algo} {config.env_id}", "env_id": config.env_id, "records": len(history)}
    summary.update({k: v for k, v in history[-1].items() if isinstance(v, (int, float))} if history else {})
    log.finish(summary, x=x, curves=("val_success_rate", "accuracy", "loss"))
    print(json.dumps(summary, indent=1))
    return 0


def cmd_eval(args) -> int:

    from jaxsoc.learners.evaluate import evaluate_sampled_and_greedy
    from jaxsoc.learners.policy import load_policy, run_meta

    try:
        meta = run_meta(args.run)
        env_id = args.env or meta["env_id"]
        env, params, model, variables = load_policy(args.run, env_id)
    except (FileNotFoundError, ValueError, KeyError) as error:
        print(f"jaxsoc eval: {error}", file=sys.stderr)
        return 2
    try:
        result = evaluate_sampled_and_greedy(env, params, model, variables, args.episodes, seed=args.seed)
    except ValueError as error:
        print(f"jaxsoc eval: {error}", file=sys.stderr)
        return 2
    summary = {"env_id": env_id, "kind": meta.get("kind"), **result}
    print(json.dumps(summary, indent=1))
    print(
        f"{env_id}: success {result['success_rate']:.3f} with sampled actions, {result['greedy_success_rate']:.3f} "
        f"greedy, on {int(result['episodes'])} levels (seed {args.seed})"
    )
    if args.gif:
        from jaxsoc.learners.rl_run import write_episodes_gif

        try:
            out = write_episodes_gif(
                env, params, model, variables, args.gif, args.gif_episodes, args.gif_greedy, args.seed, args.fps
            )
        except ValueError as error:
            print(f"jaxsoc eval: {error}", file=sys.stderr)
            return 2
        print(f"wrote {out}")
    return 0


def cmd_sweep(args) -> int:
    """``jaxsoc sweep {bc,rl}``: the paper's sample-efficiency protocol over the ``--env`` levels; writes
    ``sweep.json``, ``sweep.md`` and ``sweep.png`` into ``--out`` (rewritten after every level)."""
    from jaxsoc.learners import sweeps

    if args.demos and len(args.demos) != len(args.env):
        print(
            f"jaxsoc sweep: {len(args.demos)} --demos for {len(args.env)} --env; give one per level or none",
            file=sys.stderr,
        )
        return 2
    results = []
    try:
        for i, env_id in enumerate(args.env):
            if args.kind == "rl":
                from jaxsoc.learners import ppo

                fields = dict(env_id=env_id, preset=args.preset)
                fields.update({k: v for k, v in (("num_envs", args.num_envs), ("total_frames", args.frames)) if v})
                fields = {**fields, **parse_overrides(ppo.PPOConfig, args.set)}
                fields = {k: int(v) if k == "total_frames" else v for k, v in fields.items()}
                result = sweeps.rl_sample_efficiency(
                    ppo.PPOConfig(**fields),
                    num_seeds=args.seeds,
                    window=args.window,
                    log_interval=args.log_interval,
                    min_episodes=args.min_episodes,
                    threshold=args.threshold,
                    arch=args.arch,
                    seed=args.seed,
                    progress=not args.quiet,
                )
            else:
                config = bc_config(env_id, args.preset, args.set, seed=args.seed, success_threshold=args.threshold)
                full = None if args.full_demos is None else int(args.full_demos)
                if args.demos:
                    data = args.demos[i]
                else:
                    from jaxsoc.data.memory import bot_demos

                    data = bot_demos(env_id, args.demo_seed, range(full or 1_000_000))
                result = sweeps.bc_sample_efficiency(
                    config,
                    data,
                    num_seeds=args.seeds,
                    full_demos=full if args.demos else None,
                    min_demos=args.min_demos,
                    window=sweeps.BC_WINDOW if args.window is None else args.window,
                    max_updates=args.max_updates,
                    on_row=lambda partial: sweeps.write_report([*results, partial], args.out),
                    progress=not args.quiet,
                )
            results.append(result)
            paths = sweeps.write_report(results, args.out)
    except (TypeError, ValueError, FileNotFoundError) as error:
        print(f"jaxsoc sweep: {error}", file=sys.stderr)
        return 2
    print(paths["md"].read_text())
    print(f"wrote {paths['json']}, {paths['md']} and {paths['png']}")
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Adds the ``train``, ``eval`` and ``sweep`` sub-commands to the ``jaxsoc`` parser."""
    train = sub.add_parser("train", help="train a policy (PPO, A2C, behaviour cloning, interactive imitation)")
    train.add_argument("algo", choices=ALGORITHMS)
    train.add_argument("--env", default=families.default().default_env_id)
    train.add_argument(
        "--preset", choices=["small", "large", "tiny"], default="small", help="tiny: CPU-sized, not the paper's"
    )
    train.add_argument(
        "--recipe",
        choices=["default", "paper", "throughput"],
        default="default",
        help="PPO: default = the BabyAI recipe (64 x 40 frames, lr 1e-4); paper = the same on the ICLR19 "
        "'original' image architecture of the paper's RL tables; throughput = 4096 worlds x 20 frames, "
        "8 minibatches of 10,240 frames, lr 5e-4 (ppo.throughput_config)",
    )
    train.add_argument("--out", required=True, help="run directory (metrics, curves, checkpoints)")
    train.add_argument("--frames", type=float, help="total env frames (RL)")
    train.add_argument("--num-envs", type=int, help="parallel worlds (RL)")
    train.add_argument(
        "--demos",
        help="demonstration dataset directory (bc; watch: train.npz [, extra.npz], and validation.npz, the "
        "validation set, when present; without it --set validation_fraction=F holds out a random share of train)",
    )
    train.add_argument(
        "--curves",
        nargs="+",
        metavar="SPLIT",
        help="watch: also score --demos' <split>.npz every epoch: validation or extra (validation.npz, when present, "
        "is already the validation set); test-1 / test-2 are refused: they are scored once, after training, by "
        "jaxsoc household goals",
    )
    train.add_argument("--seed", type=int, default=0)
    own = train.add_argument_group("BIB learners (bib-*)")
    own.add_argument("--data", help="a background dataset root written by jaxsoc bib data (else generated)")
    own.add_argument(
        "--episodes", type=float, help="background episodes (default 28,000; chaic-bm: train episodes per task)"
    )
    own.add_argument("--data-seed", type=int, default=0, help="seed of the generated background set")
    own.add_argument("--seeds", type=int, default=1, help="seeds trained together (vmapped)")
    own.add_argument(
        "--encoder", help="a bib-atc run, or a BC run on pixels, whose encoder the observers start from (or keep)"
    )
    own.add_argument("--epochs", type=int, help="epochs (default the config's; bib-*, watch and chaic-bm)")
    train.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="config field override (il-interactive: ImitationConfig fields such as start_demos too)",
    )
    train.add_argument("--resume", action="store_true", help="continue from the run's newest checkpoint")
    train.add_argument("--chunk-updates", type=int, default=10, help="updates per compiled chunk (RL)")
    train.add_argument("--checkpoint-every", type=int, default=100, help="updates (RL) / epochs (bc)")
    train.add_argument(
        "--eval-episodes", type=int, default=512, help="final evaluation (RL): sampled actions, greedy beside"
    )
    train.add_argument("--gif-episodes", type=int, default=4, help="RL: episodes in RUN/episodes.gif (0: none)")
    train.add_argument("--devices", type=int, default=1, help="data-parallel devices (0: all)")
    train.add_argument(
        "--distributed",
        action="store_true",
        help="multi-host (RL): one process per host, all devices of all processes (cluster settings auto-detected)",
    )
    train.add_argument("--coordinator", metavar="HOST:PORT", help="--distributed: process 0's address and a free port")
    train.add_argument("--num-processes", type=int, help="--distributed: number of processes")
    train.add_argument("--process-id", type=int, help="--distributed: this process's index (0 on the coordinator)")
    train.add_argument("--quiet", action="store_true", help="no progress bar")
    train.set_defaults(func=cmd_train)

    ev = sub.add_parser("eval", help="evaluate a run's newest checkpoint over fixed validation episodes")
    ev.add_argument("run", help="run directory written by jaxsoc train")
    ev.add_argument("--env", help="evaluate on another env than the run's")
    ev.add_argument("--episodes", type=int, default=512)
    ev.add_argument("--seed", type=int, default=10**9)
    ev.add_argument("--gif", help="write a GIF of the first episodes (sampled actions)")
    ev.add_argument("--gif-greedy", action="store_true", help="the GIF's episodes with argmax actions")
    ev.add_argument("--gif-episodes", type=int, default=4)
    ev.add_argument("--fps", type=float, default=8)
    ev.set_defaults(func=cmd_eval)

    sweep = sub.add_parser("sweep", help="sample efficiency: demonstrations (bc) or episodes (rl) to reach 99%%")
    sweep.add_argument("kind", choices=["bc", "rl"])
    sweep.add_argument("--env", action="append", required=True, help="a level (repeat for several)")
    sweep.add_argument("--preset", choices=["small", "large", "tiny"], default="small", help="tiny: CPU-sized")
    sweep.add_argument("--out", required=True, help="directory for sweep.json, sweep.md and sweep.png")
    sweep.add_argument("--seeds", type=int, default=3, help="runs per size (bc) or per level (rl), vmapped")
    sweep.add_argument("--seed", type=int, default=0)
    sweep.add_argument("--threshold", type=float, default=0.99)
    sweep.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="config field override")
    sweep.add_argument("--quiet", action="store_true", help="no progress bars")
    sweep.add_argument("--demos", action="append", default=[], help="bc: a dataset per --env (else the bot's)")
    sweep.add_argument("--demo-seed", type=int, default=0, help="bc: seed of the bot's levels without --demos")
    sweep.add_argument("--full-demos", type=float, help="bc: the full size (default all of --demos, or 1e6)")
    sweep.add_argument("--min-demos", type=int, default=1, help="bc: the smallest size tried")
    sweep.add_argument("--max-updates", type=int, help="bc: budget of the full-size runs")
    sweep.add_argument("--frames", type=float, help="rl: frames per run at most")
    sweep.add_argument("--num-envs", type=int, help="rl: parallel worlds per run")
    sweep.add_argument(
        "--window",
        type=int,
        help="centred rolling mean over this many bc validations (default 10) or rl logged rows (default 10 for "
        "GoToRedBallGrey, else 100)",
    )
    sweep.add_argument("--log-interval", type=int, default=10, help="rl: updates per logged row")
    sweep.add_argument("--min-episodes", type=int, default=64, help="rl: fewest recent episodes a logged row covers")
    sweep.add_argument(
        "--arch",
        choices=["original", "bow_endpool_res"],
        default="original",
        help="rl: image architecture (original: the ICLR19 model of the paper's RL figures; overrides --set arch)",
    )
    sweep.set_defaults(func=cmd_sweep)
