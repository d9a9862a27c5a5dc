"""``jaxsoc bib``: the BIB family's subcommands.

jaxsoc bib render --task efficiency_path --out pair.gif          # a generated episode, both outcomes
jaxsoc bib render --json run/evaluation/preference/preference_000000e.json --out e.mp4
jaxsoc bib data --split background --out bib                      # BIB's JSON layout + videos, resumable
jaxsoc bib eval --pairs 1000 --out results/bib                    # the reference observers' VOE table
jaxsoc bib eval --data bib --observer nearest_object              # score files on disk (e.g. BIB's own)
jaxsoc bib eval runs/bc-mlp runs/video --pairs 1000 --out results  # trained observers (jaxsoc train bib-*)

It is also the front end of BIB's learners for ``jaxsoc train bib-*`` (``config_type``, ``train_command``,
``run_line``):

jaxsoc train bib-atc --episodes 28000 --out runs/atc                        # pretrain the encoder
jaxsoc train bib-bc-mlp --encoder runs/atc --seeds 3 --out runs/bc-mlp      # 3 seeds in one program
jaxsoc bib eval runs/bc-mlp runs/bc-rnn runs/video --pairs 1000 --out results  # Table 1, mean ± SE
jaxsoc bib probe runs/bc-mlp --episodes 400 --out results  # linear probes: agent's cell and action from states
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxsoc.cli.errors import clear_errors, require_positive


def _params(args):
    from jaxsoc.envs.bib import world as W

    return W.BIBParams.compact() if getattr(args, "compact", False) else W.BIBParams()


def _one(tree, index):
    return jax.tree_util.tree_map(lambda x: x[index], tree)


def cmd_render(args) -> int:
    from jaxsoc.envs.bib import bibjson, tasks
    from jaxsoc.envs.bib.render import save_episode_video

    require_positive(args, "size", "fps")
    if args.json:
        episodes = [(Path(args.out), bibjson.read_json(args.json))]
        what = args.json
    else:
        split = "evaluation" if args.task in tasks.EVALUATION and args.split != "background" else args.split
        tasks.check_task(split, args.task)
        episode = _one(tasks.generate_batch(split, args.task, jax.random.key(args.seed), 1, _params(args)), 0)
        what = f"{split}/{args.task} (seed {args.seed})"
        if split == "background":
            episodes = [(Path(args.out), episode)]
        else:
            out = Path(args.out)
            chosen = {"expected": (0,), "unexpected": (1,), "both": (0, 1)}[args.outcome]
            episodes = [(out.with_name(f"{out.stem}{'eu'[o]}{out.suffix}"), _one(episode, o)) for o in chosen]
    for path, episode in episodes:
        written = save_episode_video(episode, path, size=args.size, fps=args.fps)
        print(f"wrote {written} ({what})")
    return 0


def cmd_data(args) -> int:
    from jaxsoc.envs.bib.dataset import write_dataset

    require_positive(args, "episodes", "shard_episodes", "video_size", "batch", "workers")
    counts = args.episodes
    manifest = write_dataset(
        args.split,
        args.out,
        tasks=args.tasks,
        episodes=counts,
        seed=args.seed,
        params=_params(args),
        shard_episodes=args.shard_episodes,
        video=args.video,
        video_size=args.video_size,
        batch=args.batch,
        workers=args.workers,
    )
    totals = json.loads(manifest.read_text()).get("totals", {})
    print(f"{args.split}: {json.dumps(totals)} -> {manifest}")
    return 0


def cmd_eval(args) -> int:
    from jaxsoc.envs.bib import OBSERVERS, tasks
    from jaxsoc.learners.bib import voe

    _check_eval(args)
    if args.run:
        return eval_runs(args)
    names = list(OBSERVERS) if args.observer == "all" else [args.observer]
    types = args.types or list(tasks.EVALUATION)
    start = time.perf_counter()
    if args.data:
        from jaxsoc.envs.bib.dataset import load_pairs

        pairs = {name: load_pairs(args.data, name) for name in types}
        source = f"files under {args.data}"
    else:
        params = _params(args)
        pairs = {
            name: tasks.generate_batch("evaluation", name, jax.random.key(args.seed), args.pairs, params)
            for name in types
        }
        source = f"{args.pairs} generated pairs per type (seed {args.seed})"
    results = {name: voe.evaluate(OBSERVERS[name], pairs, reduce=args.reduce, batch=args.batch) for name in names}
    seconds = time.perf_counter() - start
    table = voe.format_table(results)
    print(f"BIB VOE accuracy, {source}, surprise reduced by {args.reduce}, {seconds:.0f} s on {jax.devices()[0]}")
    print(table)
    if args.out:
        pairs_count = {name: int(np.shape(p.moves)[0]) for name, p in pairs.items()}
        record = {"source": source, "reduce": args.reduce, "pairs": pairs_count, "seconds": seconds}
        saved = voe.save_report(args.out, "bib_observers", table, results, **record)
        print(saved)
    return 0


def train_command(args, overrides: dict[str, Any]) -> dict[str, Any]:
    """Runs ``jaxsoc train bib-*`` (``overrides``: config fields from ``--set``, ``--epochs``); returns the
    run's summary."""
    from jaxsoc.learners.bib import run

    if args.epochs is not None:
        overrides = {**overrides, "epochs": args.epochs}
    config = run.make_config(args.algo, **overrides)
    return run.train(
        args.algo,
        config,
        args.out,
        data=args.data,
        episodes=None if args.episodes is None else int(args.episodes),
        data_seed=args.data_seed,
        seeds=args.seeds,
        seed=args.seed,
        encoder=args.encoder,
        resume=args.resume,
        progress=not args.quiet,
    )


def config_type(algo: str) -> type:
    """The config class of ``jaxsoc train <algo>`` for a BIB learner."""
    from jaxsoc.learners.bib.run import KINDS

    return KINDS[algo][0]


def run_line(summary: dict[str, Any], out: Path) -> str:
    """The line that ends ``jaxsoc train bib-*``."""
    return (
        f"trained {summary['kind']} ({summary['seeds']} seed(s)) for {summary['epochs_done']} epochs "
        f"({summary['steps']:,} steps) on {summary['train_episodes']:,} episodes in {summary['wall_s'] / 60:.1f} min "
        f"on {summary['device']}: train loss {summary['train_loss']:.4g}, validation {summary['val_loss']:.4g}; "
        f"curves {out / 'curves.png'}, checkpoints {summary['checkpoint']}"
    )


def _check_eval(args) -> None:
    """Checks ``jaxsoc bib eval``'s input before any pairs are generated or read: the evaluation types, the
    counts, that ``--data`` is a directory and that every run directory holds a readable ``run.json`` of an
    observer and its checkpoints (``run.read_info``). Raises ``ValueError`` naming the flag, directory or file."""
    from jaxsoc.envs.bib import tasks

    for name in args.types or tasks.EVALUATION:
        tasks.check_task("evaluation", name)
    require_positive(args, "pairs", "batch")
    if args.data is not None and not Path(args.data).is_dir():
        raise ValueError(f"--data {args.data}: no such directory")
    if args.run:
        from jaxsoc.learners.bib import run

        for path in args.run:
            kind = run.read_info(path)["kind"]
            if kind == "bib-atc":
                raise ValueError(f"{path} is a bib-atc run, which is not an observer; evaluate a bc or video run")
            if args.region != "frame" and kind != "bib-video-rnn":
                raise ValueError(f"--region {args.region}: {path} is a {kind} run; a region applies to video runs")
    elif args.region != "frame":
        raise ValueError(f"--region {args.region} applies to video runs, and none is given")


def eval_runs(args) -> int:
    """``jaxsoc bib eval RUN ...``: VOE accuracy of trained observers (mean ± SE over each run's seeds) beside
    the reference observers and the paper's Table 1 (``learners.bib.evaluation``); writes ``bib_eval.{json,md,png}``
    to ``--out``. The runs are checked first (``_check_eval``)."""
    from jaxsoc.learners.bib import evaluation

    result = evaluation.evaluate_runs(
        args.run, types=args.types, seed=args.seed, pairs=args.pairs, data=args.data, reduce=args.reduce,
        batch=args.batch, region=args.region, reference=not args.no_reference,
    )  # fmt: skip
    print(
        f"BIB VOE accuracy, {result.source}, surprise reduced by {result.reduce}, mean ± SE over seeds, "
        f"{result.seconds:.0f} s"
    )
    print(result.table)
    if args.out:
        print(evaluation.write_runs_evaluation(args.out, result))
    return 0


def cmd_probe(args) -> int:
    """``jaxsoc bib probe RUN ...``: linear probes (``learners.bib.probe``) of every BC run's states (seed 0's
    final parameters) and of a random encoder's, on ``--episodes`` generated background episodes (80/20
    split); prints a table and writes ``probe.{json,md}`` to ``--out``."""
    from jaxsoc.learners.bib import bc, probe, run
    from jaxsoc.learners.bib import data as D
    from jaxsoc.learners.bib import models as bib_models
    from jaxsoc.learners.run_log import write_json

    require_positive(args, "episodes", "per_episode")
    encoders = [path for path in args.run if bib_models.is_encoder(path)]
    infos = {path: run.read_info(path) for path in args.run if path not in encoders}
    for path, info in infos.items():
        if info["kind"] not in ("bib-bc-mlp", "bib-bc-rnn"):
            raise ValueError(f"{path} is a {info['kind']} run; bib probe takes bc runs or encoder models")
    if args.episodes < 5:
        raise ValueError(f"--episodes {args.episodes}: at least 5, for a validation episode")
    train, validation = D.background(seed=args.data_seed, episodes=args.episodes)
    random = bc.BCLearner(bc.BCConfig())
    rows = {"random encoder (untrained)": probe.probe(random, random.init(jax.random.key(0)).params, train, validation)}
    for path in args.run:
        if path in encoders:
            learner, params = bib_models.encoder_learner(path)
            rows[f"{path} (encoder)"] = probe.probe(learner, params, train, validation, args.per_episode)
            continue
        learner, states, info = run.load(path)
        params = _one(learner.final_params(states), 0)
        rows[f"{Path(path).name} ({info['kind']})"] = probe.probe(learner, params, train, validation, args.per_episode)
    actions, valid = D.step_actions(validation), D.step_valid(validation)
    still = float(np.sum(np.mean(np.asarray(actions) ** 2, -1) * np.asarray(valid)) / np.sum(np.asarray(valid)))
    lines = ["| states | agent's cell | action |", "|---|---:|---:|"]
    lines += [f"| {name} | {100 * r['agent_cell']:.1f} | {100 * r['action']:.1f} |" for name, r in rows.items()]
    lines.append(f"\nBC loss of predicting no motion on these validation episodes (every real step): {still:.3f}")
    table = "\n".join(lines)
    print(f"linear probes, validation accuracy (%), {args.episodes} background episodes (seed {args.data_seed})")
    print(table)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        record = {"episodes": args.episodes, "data_seed": args.data_seed, "probes": rows, "no_motion_loss": still}
        write_json(out / "probe.json", record)
        (out / "probe.md").write_text(table + "\n")
    return 0


def add_parser(sub) -> None:
    """Adds ``jaxsoc bib`` and its verbs to the ``jaxsoc`` command's subparsers."""
    from jaxsoc.envs.bib import OBSERVERS, tasks
    from jaxsoc.envs.bib.dataset import SPLITS, VIDEOS

    bib = sub.add_parser("bib", help="BIB (Baby Intuitions Benchmark): render, data, eval")
    verbs = bib.add_subparsers(dest="verb", required=True)
    all_tasks = sorted({*tasks.BACKGROUND, *tasks.EVALUATION})

    def sizes(p):
        p.add_argument("--compact", action="store_true", help="one frame per cell, no still frames")

    render = verbs.add_parser("render", help="a GIF or MP4 of an episode, trial numbers shown")
    render.add_argument("--task", default="efficiency_path", choices=all_tasks)
    render.add_argument("--split", choices=SPLITS, default="evaluation", help="for task names in both splits")
    render.add_argument("--outcome", choices=["expected", "unexpected", "both"], default="both")
    render.add_argument("--json", help="render this BIB JSON file instead of a generated episode")
    render.add_argument("--seed", type=int, default=0)
    render.add_argument("--size", type=int, default=200, help="frame side in pixels (BIB: 200; baselines: 84)")
    render.add_argument("--fps", type=int, default=30)
    render.add_argument("--out", default="bib.gif", help=".gif or .mp4 (pairs add e/u to the name)")
    sizes(render)
    render.set_defaults(func=clear_errors(cmd_render))

    data = verbs.add_parser("data", help="write episodes in BIB's JSON layout plus videos (sharded, resumable)")
    data.add_argument("--split", choices=SPLITS, required=True)
    data.add_argument("--out", required=True, help="dataset root; rerun the same command to resume")
    data.add_argument("--tasks", nargs="+", help="default: every task of the split")
    data.add_argument("--episodes", type=int, help="per task (default: the paper's counts; 1000 pairs per type)")
    data.add_argument("--seed", type=int, default=0)
    data.add_argument("--shard-episodes", type=int, default=1000)
    data.add_argument("--video", choices=VIDEOS, default="mp4", help="mp4 needs jaxsoc[video] (imageio-ffmpeg)")
    data.add_argument("--video-size", type=int, default=200)
    data.add_argument("--batch", type=int, default=256, help="episodes generated at once")
    data.add_argument("--workers", type=int, default=min(8, os.cpu_count() or 1), help="threads writing files")
    sizes(data)
    data.set_defaults(func=clear_errors(cmd_data))

    evaluate = verbs.add_parser(
        "eval", help="VOE accuracy of trained observers (RUN ...) or the reference ones, next to the paper's Table 1"
    )
    evaluate.add_argument(
        "run", nargs="*", help="runs of jaxsoc train bib-bc-mlp|bib-bc-rnn|bib-video-rnn, or model:NAME (observers)"
    )
    evaluate.add_argument("--no-reference", action="store_true", help="with runs: leave out the reference observers")
    evaluate.add_argument("--observer", choices=["all", *OBSERVERS], default="all")
    evaluate.add_argument("--data", help="a dataset root with evaluation/<type>/ files (generated or BIB's own)")
    evaluate.add_argument("--pairs", type=int, default=1000, help="generated pairs per type (without --data)")
    evaluate.add_argument("--types", nargs="+", help="evaluation types (default: all nine)")
    evaluate.add_argument("--reduce", choices=["max", "mean"], default="max")
    evaluate.add_argument(
        "--region", choices=["frame", "agent"], default="frame",
        help="video runs: surprise over the whole frame (the paper's) or the agent's cells before and after a step",
    )  # fmt: skip
    evaluate.add_argument("--seed", type=int, default=0)
    evaluate.add_argument("--batch", type=int, default=256, help="pairs scored at once (runs: use ~64)")
    evaluate.add_argument("--out", help="directory for bib_observers.{json,md,png}")
    evaluate.set_defaults(func=clear_errors(cmd_eval), compact=True)

    probes = verbs.add_parser("probe", help="linear probes of BC runs' states: the agent's cell and its action")
    probes.add_argument(
        "run", nargs="+", help="runs of jaxsoc train bib-bc-mlp|bib-bc-rnn (or model:NAME), or model:NAME of an encoder"
    )
    probes.add_argument("--episodes", type=int, default=400, help="generated background episodes (80/20 split)")
    probes.add_argument("--per-episode", type=int, default=4, help="frames drawn per episode")
    probes.add_argument("--data-seed", type=int, default=1)
    probes.add_argument("--out", help="directory for probe.{json,md}")
    probes.set_defaults(func=clear_errors(cmd_probe))


def main(argv: list[str] | None = None) -> int:
    """Runs ``jaxsoc bib ...`` alone (the ``jaxsoc`` command dispatches here)."""
    parser = argparse.ArgumentParser(prog="jaxsoc")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)
