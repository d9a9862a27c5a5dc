"""Evaluation of a recurrent policy: success rate, mean return and episode length over fixed episodes.

The headline figure samples actions from the policy, as the BabyAI reference's evaluation does unless asked
for argmax; ``evaluate_sampled_and_greedy`` reports it with the greedy (argmax) figure beside it. A greedy
policy can be much worse than its sampled self: an under-trained policy that prefers ``forward`` facing a
wall repeats it until the step limit, where sampling escapes.

Episode ``i`` of an evaluation with seed ``s`` is played on the level ``env.reset_env(fold_in(key(s), i))``,
so two policies evaluated with the same seed see the same levels. All episodes run at once in a batch of
worlds (a jitted ``lax.while_loop`` that stops when every episode has ended), without auto-reset: a world
freezes when its episode ends. That loop's stop depends on data, so on a GPU it reads its condition back to
the host at every step; it is the evaluation, not the training hot path (``Trainer.run`` has no such loop).
The policy runs in evaluation mode (running BatchNorm statistics).
"""

from __future__ import annotations

import functools
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsoc.core.autoreset import select_rows
from jaxsoc.core.env import Environment

#: the reference's validation seeds start at 1e9 (``--val-seed``); jaxsoc's validation keys do too: the levels
#: ``jaxsoc eval`` reports on by default
VALIDATION_SEED = 10**9
#: the levels a learner chooses on (early stopping, the best checkpoint): disjoint from ``VALIDATION_SEED``'s, so
#: that a reported figure is never scored on the levels that chose the model
SELECTION_SEED = 1


@struct.dataclass
class Evaluation:
    """Per-episode results of ``evaluate`` (``N`` episodes).

    Attributes:
        success: ``bool[N]`` the episode ended with success.
        returns: ``float32[N]`` undiscounted, unscaled return.
        length: ``int32[N]`` steps taken.
        ended: ``bool[N]`` the episode ended before the step cap.
    """

    success: jax.Array
    returns: jax.Array
    length: jax.Array
    ended: jax.Array

    def summary(self) -> dict[str, float]:
        """Returns ``success_rate``, ``mean_return``, ``mean_length`` and ``episodes`` as Python floats."""
        return {
            "success_rate": float(np.mean(self.success)),
            "mean_return": float(np.mean(self.returns)),
            "mean_length": float(np.mean(self.length)),
            "episodes": float(self.success.shape[0]),
        }


def episode_keys(seed: int, num_episodes: int) -> jax.Array:
    """Returns the reset keys ``[num_episodes]`` of an evaluation with ``seed`` (``fold_in(key(seed), i)``)."""
    base = jax.random.key(seed)
    return jax.vmap(lambda i: jax.random.fold_in(base, i))(jnp.arange(num_episodes))


@functools.partial(jax.jit, static_argnames=("env", "model", "step_cap"))
def play(
    env: Environment,
    env_params: Any,
    model: nn.Module,
    variables: Any,
    reset_keys: jax.Array,
    policy_key: jax.Array,
    greedy: bool | jax.Array = True,
    step_cap: int = 100_000,
) -> Evaluation:
    """Returns the ``Evaluation`` of one episode per key of ``reset_keys`` (``[N]``), played by ``model`` (a
    network of the policy protocol, ``networks.registry``) with ``variables``: argmax actions when ``greedy``,
    else sampled with ``policy_key``. At most ``step_cap`` steps. Worlds never reset here, so the per-episode
    context is computed once."""
    num = reset_keys.shape[0]
    obs, states = jax.vmap(env.reset_env, in_axes=(0, None))(reset_keys, env_params)
    context = model.apply(variables, obs, method="encode_context")
    step = jax.vmap(env.step_env, in_axes=(0, 0, 0, None))
    zeros = jnp.zeros(num, jnp.int32)
    init = (0, obs, states, model.initial_memory(num), jnp.zeros(num, bool), zeros, jnp.zeros(num), zeros, zeros > 0)

    def cond(carry):
        t, *_, ended = carry
        return (t < step_cap) & ~jnp.all(ended)

    def body(carry):
        t, obs, states, memory, success, length, returns, _, ended = carry
        log_probs, _, memory = model.apply(variables, obs, context, memory, train=False, method="step")
        key = jax.random.fold_in(policy_key, t)
        action = jnp.where(greedy, jnp.argmax(log_probs, -1), jax.random.categorical(key, log_probs))
        step_keys = jax.random.split(jax.random.fold_in(key, 1), num)
        new_obs, new_states, reward, terminated, truncated, info = step(step_keys, states, action, env_params)
        live = ~ended
        obs, states = select_rows(live, (new_obs, new_states), (obs, states))
        success = success | (live & info["success"])
        length = length + live
        returns = returns + jnp.where(live, reward, 0.0)
        ended = ended | (live & (terminated | truncated))
        return t + 1, obs, states, memory, success, length, returns, zeros, ended

    _, _, _, _, success, length, returns, _, ended = jax.lax.while_loop(cond, body, init)
    return Evaluation(success, returns, length, ended)


def evaluate(
    env: Environment,
    env_params: Any,
    model: nn.Module,
    variables: Any,
    num_episodes: int = 512,
    seed: int = VALIDATION_SEED,
    greedy: bool = True,
    step_cap: int = 100_000,
) -> Evaluation:
    """Returns the ``Evaluation`` of ``num_episodes`` episodes (levels fixed by ``seed``, module docstring).

    Raises:
        ValueError: ``num_episodes < 1`` or a seed outside ``[0, 2**32)``.
    """
    if num_episodes < 1:
        raise ValueError(f"num_episodes must be positive, got {num_episodes}")
    if not 0 <= seed < 2**32:
        raise ValueError(f"seed must be in [0, 2**32), got {seed}")
    keys = episode_keys(seed, num_episodes)
    policy_key = jax.random.fold_in(jax.random.key(seed), -1 % 2**31)
    return play(env, env_params, model, variables, keys, policy_key, greedy=greedy, step_cap=step_cap)


def evaluate_sampled_and_greedy(
    env: Environment,
    env_params: Any,
    model: nn.Module,
    variables: Any,
    num_episodes: int = 512,
    seed: int = VALIDATION_SEED,
) -> dict[str, float]:
    """Returns the sampled-action summary (``success_rate``, ``mean_return``, ``mean_length``, ``episodes``)
    with the greedy one beside it (``greedy_success_rate``, ``greedy_mean_return``, ``greedy_mean_length``),
    both on the same ``num_episodes`` levels of ``seed`` (one compiled episode loop serves both).

    Raises:
        ValueError: as ``evaluate``.
    """
    sampled = evaluate(env, env_params, model, variables, num_episodes, seed, greedy=False).summary()
    greedy = evaluate(env, env_params, model, variables, num_episodes, seed, greedy=True).summary()
    sampled.update({f"greedy_{k}": v for k, v in greedy.items() if k != "episodes"})
    return sampled
