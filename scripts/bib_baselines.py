"""BIB's Table 1 end to end: pretrain the ATC encoder, train BC-MLP, BC-RNN and Video-RNN on it, and score all
three by VOE next to the paper's numbers and the two reference observers.

    python scripts/bib_baselines.py --out runs/bib                 # the paper's recipe (a GPU: hours)
    python scripts/bib_baselines.py --out runs/bib_cpu --scale cpu  # reduced, said so in every file it writes

Each stage is a ``jaxsoc train bib-*`` run under ``OUT/<kind>`` (rerunning the script resumes unfinished
runs and skips finished ones); the table goes to ``OUT/eval/bib_eval.{json,md,png}``. ``--scale cpu`` uses
600 background episodes (480 to train), a shorter ATC pretraining with smaller batches, the observers on the
frozen pretrained encoder (its latents computed once) with a 10x learning rate (1e-3) to make up for the
fewer steps, a U-Net of half the widths, and 40
evaluation pairs per type: about an hour on a 2-core CPU (2026-11-24, with CI sharing it).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from jaxsoc.learners.bib import evaluation, run

OBSERVERS = ("bib-bc-mlp", "bib-bc-rnn", "bib-video-rnn")
#: the scales: background episodes, evaluation pairs per type, and each kind's config overrides
SCALES = {
    "paper": {"episodes": None, "pairs": 1000, "config": {}},
    "cpu": {
        "episodes": 600,
        "pairs": 40,
        "config": {
            "bib-atc": {"batch_size": 64, "pairs_per_episode": 2, "epochs": 20},
            "bib-bc-mlp": {"epochs": 150, "lr": 1e-3, "finetune_encoder": False},
            "bib-bc-rnn": {"epochs": 100, "lr": 1e-3, "finetune_encoder": False},
            "bib-video-rnn": {"epochs": 30, "lr": 1e-3, "finetune_encoder": False, "channels": (8, 16, 32)},
        },
    },
}


def _train(kind: str, out: Path, scale: dict, args, encoder: Path | None) -> dict:
    """Trains (or resumes, or skips when finished) the ``kind`` run under ``out``; returns its summary."""
    config = run.make_config(kind, **scale["config"].get(kind, {}))
    seeds = 1 if kind == "bib-atc" else args.seeds
    resume = (out / run.RUN_JSON).exists()
    if resume:
        rows = json.loads((out / "metrics.json").read_text())["rows"] if (out / "metrics.json").exists() else []
        if rows and rows[-1]["epoch"] >= config.epochs:
            print(f"{kind}: finished earlier ({out})")
            return json.loads((out / "metrics.json").read_text())["summary"]
    return run.train(
        kind,
        config,
        out,
        episodes=scale["episodes"],
        data_seed=args.data_seed,
        seeds=seeds,
        seed=args.seed,
        encoder=encoder,
        resume=resume,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--scale", choices=sorted(SCALES), default="paper")
    parser.add_argument("--seeds", type=int, default=3, help="seeds per observer (vmapped on a GPU)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-seed", type=int, default=0)
    parser.add_argument("--eval-seed", type=int, default=1, help="seed of the generated evaluation pairs")
    args = parser.parse_args(argv)
    scale, out = SCALES[args.scale], Path(args.out)
    start = time.perf_counter()
    summaries = {"bib-atc": _train("bib-atc", out / "bib-atc", scale, args, None)}
    for kind in OBSERVERS:
        summaries[kind] = _train(kind, out / kind, scale, args, out / "bib-atc")
    result = evaluation.evaluate_runs(
        [str(out / kind) for kind in OBSERVERS], seed=args.eval_seed, pairs=scale["pairs"], reduce="max", batch=64
    )
    print(result.table)
    evaluation.write_runs_evaluation(out / "eval", result)
    record = {"scale": args.scale, **scale, "summaries": summaries, "wall_s": time.perf_counter() - start}
    (out / "eval" / "training.json").write_text(json.dumps(record, indent=1, default=str))
    print(f"{args.scale} scale: {record['wall_s'] / 60:.1f} min; {out / 'eval' / 'bib_eval.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
