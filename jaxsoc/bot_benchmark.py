"""Bot throughput: world-steps per second of the JAX BabyAI bot (``bot_act`` + ``step_env``) in a batch of
worlds, against minigrid's ``BabyAIBot`` (``replan`` + ``step``) in one process on the same level.

jaxsoc plays ``N`` freshly generated levels for ``T`` steps in one jitted ``bot_rollout.bot_episodes``;
worlds whose episode ended keep being computed (frozen), so the rate counts every world on every step, the
cost a demonstration generator pays. Compile time is measured apart; the best of a few timed runs counts.
"""

from __future__ import annotations

import signal
import sys
import time

import jax
import numpy as np

import jaxsoc
from jaxsoc.envs.babyai.bot_rollout import bot_episodes, generated_states


def measure_jax_bot(env_name: str, num_envs: int, num_steps: int, repeats: int = 2) -> dict:
    """Returns the jaxsoc bot's rate on ``num_envs`` worlds for ``num_steps`` steps, with the share of
    episodes that ended successfully within them."""
    env, params = jaxsoc.make(env_name)

    def run(key):
        return bot_episodes(env, params, generated_states(env, params, key, num_envs), num_steps)

    key = jax.random.key(0)
    start = time.perf_counter()
    compiled = jax.jit(run).lower(key).compile()
    compile_s = time.perf_counter() - start
    out = jax.block_until_ready(compiled(key))
    best = float("inf")
    for r in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(compiled(jax.random.fold_in(key, r + 1)))
        best = min(best, time.perf_counter() - start)
    return {
        "env": env_name,
        "num_envs": num_envs,
        "num_steps": num_steps,
        "compile_s": compile_s,
        "run_s": best,
        "steps_per_s": num_envs * num_steps / best,
        "success": float(np.mean(out.success)),
    }


class _Timeout(Exception):
    pass


def measure_reference_bot(env_name: str, seconds: float = 5.0) -> dict:
    """Returns minigrid's bot rate (``replan`` + ``step``, resets excluded) on seeds 0, 1, ...; an episode
    whose ``replan`` hangs (the reference can loop forever) is abandoned after 2 s and not counted."""
    from jaxsoc.envs.babyai.minigrid_levels import make_minigrid_level

    try:
        from minigrid.utils.baby_ai_bot import BabyAIBot
    except ImportError as error:
        raise ImportError("the reference rate needs minigrid: pip install 'jaxsoc[test]'") from error

    def alarm(*_):
        raise _Timeout

    previous = signal.signal(signal.SIGALRM, alarm)
    steps, elapsed, seed = 0, 0.0, 0
    try:
        while elapsed < seconds:
            env = make_minigrid_level(env_name, seed).unwrapped
            seed += 1
            bot = BabyAIBot(env)
            episode_steps, start = 0, time.perf_counter()
            try:
                signal.alarm(2)
                while True:
                    _, _, terminated, truncated, _ = env.step(bot.replan())
                    episode_steps += 1
                    if terminated or truncated:
                        break
            except _Timeout:
                continue
            except Exception:  # the reference's documented assertion errors end the episode
                pass
            finally:
                signal.alarm(0)
            steps += episode_steps
            elapsed += time.perf_counter() - start
    finally:
        signal.signal(signal.SIGALRM, previous)
    return {"env": env_name, "steps": steps, "run_s": elapsed, "steps_per_s": steps / max(elapsed, 1e-9)}


def run_bot_table(
    env_names: list[str], num_envs_list: list[int], num_steps: int, repeats: int = 2, reference_seconds: float = 5.0
) -> list[dict]:
    """Measures every (level, N) and prints a markdown table to stdout. Returns the rows."""
    rows = []
    for name in env_names:
        reference = measure_reference_bot(name, reference_seconds) if reference_seconds > 0 else None
        for num_envs in num_envs_list:
            row = measure_jax_bot(name, num_envs, num_steps, repeats)
            row["reference_steps_per_s"] = reference["steps_per_s"] if reference else None
            row["ratio_reference"] = row["steps_per_s"] / reference["steps_per_s"] if reference else None
            print(f"{name} N={num_envs}: {row['steps_per_s']:.3g} bot steps/s", file=sys.stderr, flush=True)
            rows.append(row)
    print(format_bot_table(rows))
    return rows


def format_bot_table(rows: list[dict]) -> str:
    """Returns the rows as a markdown table."""
    lines = [
        "| level | N | T | jaxsoc bot steps/s | compile s | success in T | minigrid bot steps/s | × minigrid |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        ref = "–" if r["reference_steps_per_s"] is None else f"{r['reference_steps_per_s']:.0f}"
        ratio = "–" if r["ratio_reference"] is None else f"{r['ratio_reference']:.1f}"
        lines.append(
            f"| {r['env']} | {r['num_envs']} | {r['num_steps']} | {r['steps_per_s']:.3g} | {r['compile_s']:.1f} | "
            f"{r['success']:.3f} | {ref} | {ratio} |"
        )
    return "\n".join(lines)
