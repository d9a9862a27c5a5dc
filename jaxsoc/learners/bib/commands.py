"""Command-line front ends of BIB's learners: ``jaxsoc train bib-*`` and ``jaxsoc bib eval RUN ...``.

jaxsoc train bib-atc --episodes 28000 --out runs/atc                        # pretrain the encoder
jaxsoc train bib-bc-mlp --encoder runs/atc --seeds 3 --out runs/bc-mlp      # 3 seeds in one program
jaxsoc bib eval runs/bc-mlp runs/bc-rnn runs/video --pairs 1000 --out results  # Table 1, mean ± SE
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from jaxsoc.learners import voe


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


def eval_runs(args) -> int:
    """``jaxsoc bib eval RUN ...``: VOE accuracy of trained observers (mean ± SE over each run's seeds) beside
    the reference observers and the paper's Table 1; writes ``bib_eval.{json,md,png}`` to ``--out``."""
    from jaxsoc.envs.bib import OBSERVERS, tasks
    from jaxsoc.learners.bib import data as D
    from jaxsoc.learners.bib import run

    types = tuple(args.types or tasks.EVALUATION)
    for name in types:
        tasks.check_task("evaluation", name)
    start = time.perf_counter()
    pairs = D.evaluation_pairs(args.seed, args.pairs, types, args.data)
    source = f"files under {args.data}" if args.data else f"{args.pairs} generated pairs per type (seed {args.seed})"
    means, errors, records = {}, {}, {}
    for path in args.run:
        info = json.loads((Path(path) / run.RUN_JSON).read_text()) if (Path(path) / run.RUN_JSON).exists() else {}
        result = run.evaluate(path, pairs, reduce=args.reduce, batch=args.batch)
        seeds = len(result["per_seed"])
        name = f"{run.PAPER_NAMES.get(info.get('kind'), Path(path).name)} ({Path(path).name}, {seeds} seed(s))"
        means[name], errors[name], records[name] = result["mean"], result["se"], {"run": str(path), **result}
    if not args.no_reference:
        for name, observer in OBSERVERS.items():
            means[name] = voe.evaluate(observer, pairs, reduce=args.reduce, batch=256)
    seconds = time.perf_counter() - start
    table = voe.format_table(means, errors)
    print(f"BIB VOE accuracy, {source}, surprise reduced by {args.reduce}, mean ± SE over seeds, {seconds:.0f} s")
    print(table)
    if args.out:
        pairs_count = {name: int(np.shape(p.moves)[0]) for name, p in pairs.items()}
        header = f"{source}; mean ± SE over seeds\n\n"
        saved = voe.save_report(
            args.out, "bib_eval", header + table, means, source=source, reduce=args.reduce, pairs=pairs_count,
            runs=records, seconds=seconds,
        )  # fmt: skip
        print(saved)
    return 0
