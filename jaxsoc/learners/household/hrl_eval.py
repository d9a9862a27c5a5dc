"""The HRL low level's diagnosis: ``subgoal_success``, the low level alone on subgoal episodes (its "put" phase):
the share of episodes in which it grabs an object of its predicate's class and the share in which it achieves the
predicate (the paper's finding: it grabs but does not put).
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.core.autoreset import select_rows
from jaxsoc.envs.household.subgoal_env import SubgoalEnv, SubgoalParams
from jaxsoc.learners.networks.household import LowLevelPolicy


@functools.partial(jax.jit, static_argnames=("policy", "num_episodes", "steps", "greedy"))
def _subgoal_episodes(policy, variables, params, key, num_episodes: int, steps: int, greedy: bool):
    """Returns ``(grabbed, achieved, length)``, ``[num_episodes]`` each: ``subgoal_success``'s episodes."""
    env = SubgoalEnv()
    step = jax.vmap(env.step_env, in_axes=(0, 0, 0, None))
    k_reset, k_run = jax.random.split(key)
    obs, states = jax.vmap(env.reset_env, in_axes=(0, None))(jax.random.split(k_reset, num_episodes), params)
    zeros = jnp.zeros(num_episodes, bool)

    def body(carry, k):
        obs, states, memory, ended, grabbed, achieved, length = carry
        k_act, k_step = jax.random.split(k)
        log_probs, _, memory = policy.apply(variables, obs, (), memory, method="step")
        action = jnp.argmax(log_probs, -1) if greedy else jax.random.categorical(k_act, log_probs)
        new_obs, new_states, _, terminated, truncated, info = step(
            jax.random.split(k_step, num_episodes), states, action.astype(jnp.int32), params
        )
        live = ~ended  # an ended episode stays as it ended
        obs, states = select_rows(live, (new_obs, new_states), (obs, states))
        carry = (
            obs,
            states,
            memory,
            ended | terminated | truncated,
            grabbed | (live & info["grabbed"]),
            achieved | (live & info["placed"]),
            length + live,
        )
        return carry, None

    init = (obs, states, policy.initial_memory(num_episodes), zeros, zeros, zeros, jnp.zeros(num_episodes, jnp.int32))
    (_, _, _, _, grabbed, achieved, length), _ = jax.lax.scan(body, init, jax.random.split(k_run, steps))
    return grabbed, achieved, length


def subgoal_success(
    policy: LowLevelPolicy,
    variables: Any,
    params: SubgoalParams,
    num_episodes: int = 256,
    seed: int = 0,
    greedy: bool = False,
) -> dict[str, float]:
    """Returns the low level's record alone on ``num_episodes`` subgoal episodes of ``params``' bank (its
    "put" phase: an episode ends when the predicate gains an instance, or after ``params.max_steps`` steps):
    ``grabbed`` the share in which Bob grabbed an object of the predicate's class not yet in place, ``achieved``
    the share in which the predicate gained an instance, ``length`` the mean episode length, ``episodes``.

    Raises:
        ValueError: ``num_episodes < 1``.
    """
    if num_episodes < 1:
        raise ValueError(f"num_episodes must be positive, got {num_episodes}")
    steps = int(params.max_steps)
    grabbed, achieved, length = jax.device_get(
        _subgoal_episodes(
            policy, variables, params.replace(phase="put"), jax.random.key(seed), num_episodes, steps, greedy
        )
    )
    return {
        "episodes": num_episodes,
        "grabbed": float(np.mean(grabbed)),
        "achieved": float(np.mean(achieved)),
        "length": float(np.mean(length)),
    }
