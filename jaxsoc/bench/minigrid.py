"""Throughput benchmark, xminigrid's method: pre-sampled random actions, one jitted ``lax.scan`` over T
steps of ``vmap(env.step)`` with auto-reset, compile time measured apart, best of a few timed repeats.

The whole ``TimeStep``-like carry (observation included) stays in the scan carry, so no part of the step
can be removed as dead code. The reference rate is minigrid's single-process loop (resets included);
xminigrid is measured in the same run when it is installed.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import jaxsoc
from jaxsoc.core.timing import time_compiled
from jaxsoc.envs.babyai.minigrid_levels import PAPER_LEVELS

#: ``jaxsoc bench`` (suite ``classic``) and the GPU suite's ``classic`` part: the classic MiniGrid tasks
GPU_BENCH_ENVS = [
    "MiniGrid-Empty-8x8-v0",
    "MiniGrid-DoorKey-8x8-v0",
    "MiniGrid-BlockedUnlockPickup-v0",
    "MiniGrid-FourRooms-v0",
]

#: ``jaxsoc bench --suite babyai|bot`` and the GPU suite's BabyAI parts: the 19 levels of the BabyAI paper
BABYAI_BENCH_ENVS = [f"BabyAI-{name}-v0" for name in PAPER_LEVELS]

XMINIGRID_IDS = {
    "MiniGrid-Empty-5x5-v0": "MiniGrid-Empty-5x5",
    "MiniGrid-Empty-6x6-v0": "MiniGrid-Empty-6x6",
    "MiniGrid-Empty-8x8-v0": "MiniGrid-Empty-8x8",
    "MiniGrid-Empty-16x16-v0": "MiniGrid-Empty-16x16",
    "MiniGrid-DoorKey-5x5-v0": "MiniGrid-DoorKey-5x5",
    "MiniGrid-DoorKey-6x6-v0": "MiniGrid-DoorKey-6x6",
    "MiniGrid-DoorKey-8x8-v0": "MiniGrid-DoorKey-8x8",
    "MiniGrid-DoorKey-16x16-v0": "MiniGrid-DoorKey-16x16",
    "MiniGrid-FourRooms-v0": "MiniGrid-FourRooms",
    "MiniGrid-Unlock-v0": "MiniGrid-Unlock",
    "MiniGrid-UnlockPickup-v0": "MiniGrid-UnlockPickUp",
    "MiniGrid-BlockedUnlockPickup-v0": "MiniGrid-BlockedUnlockPickUp",
    "MiniGrid-Empty-Random-5x5-v0": "MiniGrid-EmptyRandom-5x5",
    "MiniGrid-Empty-Random-6x6-v0": "MiniGrid-EmptyRandom-6x6",
    "MiniGrid-LockedRoom-v0": "MiniGrid-LockedRoom",
}


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _time_scan(run, key, repeats: int) -> tuple[float, float]:
    """Returns ``(compile_s, best_run_s)`` of a jitted ``run(key)``."""
    start = time.perf_counter()
    compiled = jax.jit(run).lower(key).compile()
    compile_s = time.perf_counter() - start
    return compile_s, time_compiled(compiled, key, repeats, keep_output=False)[1]


def uses_pooled_resets(env_name: str) -> bool:
    """True for the families whose levels are costly to generate (BabyAI): their benchmark steps the batch
    with ``core.autoreset.batched_step`` by default. (``jax.vmap(env.step)`` of those envs resets only ended
    worlds too, ``core.pooled``; the two are measured side by side with ``pooled=False``.)"""
    return env_name.startswith("BabyAI-")


def jaxsoc_scan(
    env_name: str, num_envs: int, num_steps: int, pooled: bool | None = None, **overrides: Any
) -> tuple[Any, dict]:
    """Returns ``(run, info)``: ``run(key)``, jittable, resets ``num_envs`` worlds and steps them ``num_steps``
    times with random actions, auto-reset included; ``info`` holds the row's parameters (env, impl, num_envs,
    steps, see_through_walls, path, resets). ``pooled`` selects ``core.autoreset.batched_step`` (``path``
    ``"batched"``, default: ``uses_pooled_resets``) over ``jax.vmap(env.step)`` (``"vmap"``), which resets only
    ended worlds for the envs that set ``pooled_resets`` and selects a reset computed every step for the others
    (``resets``: ``"pooled"`` or ``"every step"``)."""
    from jaxsoc.core.autoreset import batched_step

    env, params = jaxsoc.make(env_name, **overrides)
    num_actions = env.action_space(params).n
    pooled = uses_pooled_resets(env_name) if pooled is None else pooled
    vmapped = jax.vmap(env.step, in_axes=(0, 0, 0, None))
    pooled_step = batched_step(env)

    def step(key, state, action):
        if pooled:
            return pooled_step(key, state, action, params)
        return vmapped(jax.random.split(key, num_envs), state, action, params)

    def run(key):
        k_reset, k_actions, k_steps = jax.random.split(key, 3)
        obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(k_reset, num_envs), params)
        actions = jax.random.randint(k_actions, (num_steps, num_envs), 0, num_actions)

        def body(carry, inputs):
            obs, state, _ = carry
            t, action = inputs
            obs, state, reward, terminated, truncated, _ = step(jax.random.fold_in(k_steps, t), state, action)
            return (obs, state, reward), None

        carry = (obs, state, jnp.zeros(num_envs))
        return jax.lax.scan(body, carry, (jnp.arange(num_steps), actions))[0]

    info = {
        "env": env_name,
        "impl": "jaxsoc",
        "num_envs": num_envs,
        "steps": num_steps,
        "see_through_walls": bool(getattr(params, "see_through_walls", False)),
        "path": "batched" if pooled else "vmap",
        "resets": "pooled" if pooled or env.pooled_resets else "every step",
    }
    return run, info


def measure_jaxsoc(
    env_name: str, num_envs: int, num_steps: int, repeats: int = 3, pooled: bool | None = None, **overrides: Any
) -> dict:
    """Returns a dict (env, num_envs, steps, see_through_walls, resets, compile_s, run_s, steps_per_s,
    device) for random actions in ``num_envs`` parallel worlds over ``num_steps`` steps, auto-reset
    included (``jaxsoc_scan``)."""
    run, info = jaxsoc_scan(env_name, num_envs, num_steps, pooled, **overrides)
    compile_s, run_s = _time_scan(run, jax.random.key(0), repeats)
    return {
        **info,
        "compile_s": compile_s,
        "run_s": run_s,
        "steps_per_s": num_envs * num_steps / run_s,
        "device": str(jax.devices()[0].device_kind),
    }


def measure_xminigrid(env_name: str, num_envs: int, num_steps: int, repeats: int = 3) -> dict | None:
    """Returns xminigrid's rate on the same env and method (its default view sees through walls), or None
    when xminigrid is not installed or does not have the env."""
    try:
        import xminigrid
        from xminigrid.wrappers import GymAutoResetWrapper
    except ImportError:
        return None
    xid = XMINIGRID_IDS.get(env_name)
    if xid is None or xid not in xminigrid.registered_environments():
        return None
    env, params = xminigrid.make(xid)
    env = GymAutoResetWrapper(env)
    num_actions = env.num_actions(params)

    def run(key):
        k_reset, k_actions = jax.random.split(key)
        timestep = jax.vmap(env.reset, in_axes=(None, 0))(params, jax.random.split(k_reset, num_envs))
        actions = jax.random.randint(k_actions, (num_steps, num_envs), 0, num_actions)
        step = jax.vmap(env.step, in_axes=(None, 0, 0))
        return jax.lax.scan(lambda ts, a: (step(params, ts, a), None), timestep, actions)[0]

    compile_s, run_s = _time_scan(run, jax.random.key(0), repeats)
    return {"env": env_name, "impl": "xminigrid", "num_envs": num_envs, "steps": num_steps, "compile_s": compile_s,
            "run_s": run_s, "steps_per_s": num_envs * num_steps / run_s}  # fmt: skip


def measure_minigrid(env_name: str, seconds: float = 5.0, seed: int = 0) -> dict:
    """Returns minigrid's single-process rate (random actions, ``reset(seed=k)`` at episode ends, resets
    included). Raises ImportError with an install hint when minigrid is missing."""
    try:
        import gymnasium as gym
        import minigrid  # noqa: F401
        import minigrid.envs.babyai.core.roomgrid_level as roomgrid_level
    except ImportError as error:
        raise ImportError("the reference rate needs minigrid: pip install 'jaxsoc[test]'") from error
    roomgrid_level.print = lambda *a, **k: None  # silence "Sampling rejected" prints
    if env_name.startswith("BabyAI-"):
        from jaxsoc.envs.babyai.minigrid_levels import make_minigrid_level

        env = make_minigrid_level(env_name).unwrapped
    else:
        env = gym.make(env_name).unwrapped
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    steps, episode = 0, seed
    start = time.perf_counter()
    while True:
        _, _, terminated, truncated, _ = env.step(int(rng.integers(0, 7)))
        steps += 1
        if terminated or truncated:
            episode += 1
            env.reset(seed=episode)
        if steps % 256 == 0 and time.perf_counter() - start > seconds:
            break
    elapsed = time.perf_counter() - start
    return {"env": env_name, "impl": "minigrid", "steps": steps, "run_s": elapsed, "steps_per_s": steps / elapsed}


def run_table(
    env_names: list[str],
    num_envs_list: list[int],
    num_steps: int,
    occlusion: tuple[bool, ...] = (True, False),
    repeats: int = 3,
    reference_seconds: float = 5.0,
    xminigrid: bool = True,
    paths: tuple[str, ...] | None = None,
) -> list[dict]:
    """Measures every (env, N, see_through_walls, path) and prints a markdown table to stdout. ``paths`` holds
    ``"vmap"`` (``jax.vmap(env.step)``) and/or ``"batched"`` (``batched_step``); None takes the env's default
    (``uses_pooled_resets``). Returns the rows: jaxsoc's rate with minigrid's and xminigrid's (``None`` when not
    measured) and the ratios."""
    rows = []
    for name in env_names:
        reference = measure_minigrid(name, reference_seconds) if reference_seconds > 0 else None
        if reference:
            _log(f"{name}: minigrid {reference['steps_per_s']:.0f} steps/s")
        for num_envs in num_envs_list:
            theirs = measure_xminigrid(name, num_envs, num_steps, repeats) if xminigrid else None
            for see_through in occlusion:
                for pooled in [None] if paths is None else [path == "batched" for path in paths]:
                    ours = measure_jaxsoc(name, num_envs, num_steps, repeats, pooled, see_through_walls=see_through)
                    _log(
                        f"{name} N={num_envs} see_through_walls={see_through} {ours['path']}: "
                        f"{ours['steps_per_s']:.3g} steps/s"
                    )
                    rows.append(compare_row(ours, reference, theirs))
    print(format_table(rows))
    return rows


def registry_ids() -> list[str]:
    """Returns the minigrid ids beyond the ``classic`` and ``babyai`` suites: every ``MiniGrid-*`` id but the
    classic six tasks' and every ``BabyAI-*`` bonus level (minigrid 3.2.0's levels that are not the paper's)."""
    from jaxsoc.envs import env_family

    def beyond_suites(name: str) -> bool:
        family, group = env_family(name)
        return (family == "MiniGrid" and group != "classic") or (family, group) == ("BabyAI", "bonus")

    return [name for name in jaxsoc.registered_envs() if beyond_suites(name) and _bank_available(name)]


def _bank_available(name: str) -> bool:
    """False for a WFC id whose layout bank cannot be built here (no minigrid, or no pattern images), logged."""
    from jaxsoc.envs.gridworld import wfc, wfc_bank

    if name not in wfc.ENVS:
        return True
    try:
        wfc_bank.wfc_config(wfc.ENVS[name][1]["preset"])
    except (ImportError, FileNotFoundError) as error:
        _log(f"{name}: skipped ({error})")
        return False
    return True


def run_registry_table(
    env_names: list[str], num_envs_list: list[int], num_steps: int, repeats: int = 3, reference_seconds: float = 1.0
) -> list[dict]:
    """Measures every (env, N) with the env's own occlusion setting (minigrid's default for the id) and prints
    a markdown table; BabyAI levels use pooled resets. Returns the rows, with minigrid's and xminigrid's rates
    (``None`` when not measured) and the ratios."""
    rows = []
    for name in env_names:
        reference = measure_minigrid(name, reference_seconds) if reference_seconds > 0 else None
        for num_envs in num_envs_list:
            theirs = measure_xminigrid(name, num_envs, num_steps, repeats)
            ours = measure_jaxsoc(name, num_envs, num_steps, repeats)
            _log(f"{name} N={num_envs}: {ours['steps_per_s']:.3g} steps/s")
            rows.append(compare_row(ours, reference, theirs))
    print(format_table(rows))
    return rows


def compare_row(ours: dict, reference: dict | None, theirs: dict | None) -> dict:
    """Returns jaxsoc's row with minigrid's (``reference``) and xminigrid's (``theirs``) rates and the ratios
    added (``None`` for a rate not measured)."""
    row = dict(ours)
    row["minigrid_steps_per_s"] = reference["steps_per_s"] if reference else None
    row["ratio_minigrid"] = ours["steps_per_s"] / reference["steps_per_s"] if reference else None
    row["xminigrid_steps_per_s"] = theirs["steps_per_s"] if theirs else None
    row["ratio_xminigrid"] = ours["steps_per_s"] / theirs["steps_per_s"] if theirs else None
    return row


def format_table(rows: list[dict]) -> str:
    """Returns the rows as a markdown table."""

    def num(x, fmt=".3g"):
        return "–" if x is None else format(x, fmt)

    lines = [
        "| env | N | see through walls | step | resets | jaxsoc steps/s | compile s | minigrid steps/s | × minigrid | "
        "xminigrid steps/s | × xminigrid |",
        "|---|---:|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['env']} | {r['num_envs']} | {'yes' if r['see_through_walls'] else 'no (minigrid occlusion)'} | "
            f"{r.get('path', 'vmap')} | {r.get('resets', 'every step')} | {num(r['steps_per_s'])} | "
            f"{num(r['compile_s'], '.1f')} | "
            f"{num(r['minigrid_steps_per_s'], '.0f')} | "
            f"{num(r['ratio_minigrid'], ',.0f')} | {num(r['xminigrid_steps_per_s'])} | "
            f"{num(r['ratio_xminigrid'], '.2f')} |"
        )
    return "\n".join(lines)
