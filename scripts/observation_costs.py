"""The cost of each observation kind of the grid families (docs/observations.md's table).

For every id and kind (``jaxsoc.envs.gridworld.views.KINDS``): the jaxpr equations of one observation
(``env.observe`` of one world, sub-jaxprs included: ``jaxsoc.bench.jaxpr_walk.jaxpr_stats``), the equations of one raw
step (``env.step_env``), and the throughput of ``jit(vmap(env.step))`` (auto-reset included; BabyAI resets only ended
worlds, ``core.pooled``) over ``--num-envs`` worlds for ``--steps`` random steps in a ``lax.scan``
(``jaxsoc.bench.minigrid.measure_jaxsoc`` with ``pooled=False``): the best of ``--repeats`` runs, compilation apart.

    python scripts/observation_costs.py                                   # DoorKey-8x8 and GoToLocal, 1,024 worlds
    python scripts/observation_costs.py --ids MiniGrid-Empty-5x5-v0 --num-envs 64 --steps 10 --repeats 1

Prints a markdown table: id, kind, image shape, equations of one observation (and the part the kind adds to the
default's), equations of one step, compile seconds, steps per second and its ratio to the default kind's.
"""

from __future__ import annotations

import argparse

import jax

import jaxsoc
from jaxsoc.bench.jaxpr_walk import jaxpr_stats
from jaxsoc.bench.minigrid import measure_jaxsoc
from jaxsoc.envs.gridworld.views import KINDS

HEADER = (
    "| id | kind | image | eqns of one observation (added) | eqns of one step | compile s | steps/s | vs partial |\n"
    "|---|---|---|---:|---:|---:|---:|---:|"
)


def program_sizes(name: str, kind: str) -> tuple[tuple[int, ...], int, int]:
    """Returns ``(image shape, equations of one observation, equations of one raw step)`` of ``name`` observing
    ``kind`` (traced on the abstract state of a reset; nothing compiled)."""
    env, params = jaxsoc.make(name, observation=kind)
    key = jax.random.key(0)
    obs, state = jax.eval_shape(env.reset_env, key, params)
    observe = jaxpr_stats(jax.make_jaxpr(env.observe)(state, params))["eqns"]
    step = jaxpr_stats(jax.make_jaxpr(env.step_env)(key, state, jax.numpy.int32(0), params))["eqns"]
    return tuple(obs["image"].shape), observe, step


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ids", nargs="+", default=["MiniGrid-DoorKey-8x8-v0", "BabyAI-GoToLocal-v0"])
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    parser.add_argument("--num-envs", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"device: {jax.devices()[0].device_kind}, {args.num_envs} worlds, {args.steps} steps, best of {args.repeats}")
    print(HEADER)
    for name in args.ids:
        base_eqns = base_rate = None
        for kind in args.kinds:
            shape, observe, step = program_sizes(name, kind)
            row = measure_jaxsoc(name, args.num_envs, args.steps, args.repeats, pooled=False, observation=kind)
            rate = row["steps_per_s"]
            if kind == KINDS[0]:
                base_eqns, base_rate = observe, rate
            added = f" (+{observe - base_eqns})" if base_eqns is not None and kind != KINDS[0] else ""
            ratio = f"{rate / base_rate:.2f}" if base_rate else ""
            image = "x".join(map(str, shape))
            print(
                f"| {name} | {kind} | {image} | {observe}{added} | {step} | {row['compile_s']:.1f} | {rate:,.0f} | "
                f"{ratio} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
