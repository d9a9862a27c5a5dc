"""The two PPO recipes on one level, side by side: the paper's (``ppo.paper_config``, several seeds in one
program) and the throughput recipe (``ppo.throughput_config`` at ``--scale``), for the same frames per run.

Prints, per recipe, the training (sampled) success rate at the start and the end of the run, the frames and
the wall time, and writes them to ``--out`` (JSON). On a CPU use the defaults (reduced scale: the tiny model,
the throughput recipe at 1/16 of its worlds); ``benchmarks/gpu_suite.py`` runs both at full scale::

    python scripts/babyai_recipes.py --frames 150000
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import jax
import numpy as np

from jaxsoc.learners.ppo import paper_config, throughput_config, trainer_for


def _pooled(rates: np.ndarray, counts: np.ndarray) -> float:
    rates = np.nan_to_num(rates) * counts
    return float(rates.sum() / max(counts.sum(), 1))


def run(config, seeds: int, chunk: int) -> dict:
    """Returns the recipe's row: success over the first and last tenth of the updates (episodes pooled over
    seeds), frames per run, wall seconds (compilation included) and steady frames/s of all seeds."""
    trainer = trainer_for(config, seed_axis="seeds")
    began = time.perf_counter()
    runners = trainer.init_seeds(jax.random.split(jax.random.key(0), seeds))
    total, rates, counts, steady = config.num_updates, [], [], []
    while sum(r.shape[1] for r in rates) < total:
        tick = time.perf_counter()
        runners, metrics = trainer.run_seeds(runners, min(chunk, total), np.int32(total))
        metrics = jax.device_get(metrics)
        keep = metrics["active"][0]
        rates.append(np.asarray(metrics["success_rate"])[:, keep])
        counts.append(np.asarray(metrics["episodes"])[:, keep])
        steady.append((time.perf_counter() - tick, int(keep.sum()) * seeds * config.frames_per_update))
    rates, counts = np.concatenate(rates, axis=1), np.concatenate(counts, axis=1)
    tenth = max(1, total // 10)
    timed = steady[1:] or steady
    return {
        "env": config.env_id,
        "num_envs": config.num_envs,
        "num_steps": config.num_steps,
        "minibatch_frames": config.minibatch_frames,
        "lr": config.lr,
        "arch": config.arch,
        "preset": config.preset,
        "seeds": seeds,
        "updates": total,
        "frames_per_run": total * config.frames_per_update,
        "success_first": _pooled(rates[:, :tenth], counts[:, :tenth]),
        "success_last": _pooled(rates[:, -tenth:], counts[:, -tenth:]),
        "wall_s": time.perf_counter() - began,
        "frames_per_s": sum(f for _, f in timed) / max(sum(t for t, _ in timed), 1e-9),
        "device": jax.devices()[0].device_kind,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="BabyAI-GoToRedBallGrey-v0")
    parser.add_argument("--frames", type=int, default=150_000, help="frames per run")
    parser.add_argument("--seeds", type=int, default=2, help="runs of each recipe, in one program")
    parser.add_argument("--scale", type=float, default=1 / 16, help="of the throughput recipe's worlds")
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--chunk", type=int, default=10, help="updates per compiled call")
    parser.add_argument("--out", default="benchmarks/results/recipes_cpu.json")
    args = parser.parse_args(argv)
    common = dict(env_id=args.env, preset=args.preset, total_frames=args.frames)
    rows = []
    for name, config in (
        ("paper", paper_config(**common)),
        ("throughput", throughput_config(args.scale, **common)),
    ):
        row = {"recipe": name, **run(config, args.seeds, args.chunk)}
        print(json.dumps(row), flush=True)
        rows.append(row)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(rows, indent=1) + "\n")
    print("| recipe | worlds × frames | lr | frames per run | success first 10% | last 10% | wall s | frames/s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['recipe']} | {r['num_envs']} × {r['num_steps']} | {r['lr']:g} | {r['frames_per_run']:,} | "
            f"{r['success_first']:.3f} | {r['success_last']:.3f} | {r['wall_s']:.0f} | {r['frames_per_s']:,.0f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
