"""PPO training frames per second: the updates of ``Trainer.run`` (acting, resets, GAE, learning) timed after
compilation, for a few configs. It uses only the API that every jaxsoc version since the first PPO has
(``PPOConfig``, ``trainer_for``, ``Trainer.run``), so it compares two checkouts on the same machine::

    PYTHONPATH=/path/to/old/checkout python benchmarks/ppo_throughput.py --label before
    python benchmarks/ppo_throughput.py --label after
"""

from __future__ import annotations

import argparse
import json
import time

import jax

from jaxsoc.learners.ppo import PPOConfig, trainer_for

CONFIGS = {
    # the quick start's recipe (the tiny model, 64 worlds x 40 frames, 2 epochs)
    "quickstart-GoToRedBallGrey": dict(env_id="BabyAI-GoToRedBallGrey-v0", preset="tiny", update_epochs=2, lr=1e-3),
    # the paper's recipe with the Small model on a level with longer missions
    "small-GoToLocal": dict(env_id="BabyAI-GoToLocal-v0", preset="small"),
}


def measure(name: str, fields: dict, updates: int, repeats: int) -> dict:
    """Returns ``{"config", "frames_per_s", "seconds", "compile_s"}``: the best of ``repeats`` timed calls of
    ``Trainer.run(runner, updates)`` after one untimed (compiling) call."""
    config = PPOConfig(**fields)
    trainer = trainer_for(config)
    runner = trainer.init(jax.random.key(0))
    tick = time.perf_counter()
    runner, _ = jax.block_until_ready(trainer.run(runner, updates))
    compile_s = time.perf_counter() - tick
    best = float("inf")
    for _ in range(repeats):
        tick = time.perf_counter()
        runner, _ = jax.block_until_ready(trainer.run(runner, updates))
        best = min(best, time.perf_counter() - tick)
    frames = updates * config.frames_per_update
    return {"config": name, "frames_per_s": frames / best, "seconds": best, "compile_s": compile_s}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--updates", type=int, default=5, help="updates per timed call")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--label", default="", help="a name for this checkout in the rows")
    args = parser.parse_args()
    print("| label | config | frames/s | s per call | compile s |\n|---|---|---:|---:|---:|")
    for name in args.configs:
        row = {
            "label": args.label,
            "device": jax.devices()[0].device_kind,
            **measure(name, CONFIGS[name], args.updates, args.repeats),
        }
        print(f"| {args.label} | {name} | {row['frames_per_s']:,.0f} | {row['seconds']:.2f} | {row['compile_s']:.0f} |")
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
