"""Auto-reset for a batch of worlds that generates only as many new levels as episodes ended.

``batched_step(env)`` returns a step for a whole batch under one key: ``vmap`` of the env's step with its
reset pooled (``core.pooled.reset_where``): only the ``d`` worlds whose episode ended are reset, ``chunk`` rows
at a time, the others keep their step. It pools whatever the env's ``pooled_resets`` says;
``jax.vmap(env.step)`` pools by itself for the envs that set it (BabyAI). World ``i`` uses key
``jax.random.split(key, N)[i]``, so the result equals ``vmap(env.step)`` with those keys, value for value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax

from jaxsoc.core.env import Environment
from jaxsoc.core.pooled import DEFAULT_POOL_FRACTIONS, pool_sizes, pooled, reset_where, select_rows

__all__ = ["DEFAULT_POOL_FRACTIONS", "batched_reset", "batched_step", "pool_sizes", "pooled", "select_rows"]


def batched_step(
    env: Environment, chunk_fraction: float | None = None, axis_name: str | None = None
) -> Callable[..., tuple[Any, Any, jax.Array, jax.Array, jax.Array, dict[str, Any]]]:
    """Returns ``step(key, states, actions, params) -> (obs, states, reward, terminated, truncated, info)``
    over a batch: ``states`` and ``actions`` have a leading axis ``N``, ``key`` is one key and ``params``
    is shared. Outputs have the leading axis ``N`` and the meaning of ``env.step``'s (auto-reset, with
    ``info["final_observation"]`` and ``info["final_state"]``). Jittable; see the module docstring.
    ``chunk_fraction`` sets the rows reset per round (``core.pooled.chunk_size``; default by backend).

    ``axis_name`` is accepted for older callers and not needed: an outer ``vmap`` (over seeds) flattens into
    the pool by itself (``core.pooled``)."""
    del axis_name
    where = reset_where(env.reset_env, chunk_fraction)

    def one(key, state, action, params):  # the base class's auto-reset (families may override env.step's)
        return Environment._auto_reset_step(env, key, state, action, params, where)

    vstep = jax.vmap(one, in_axes=(0, 0, 0, None))

    def step(key, states, actions, params):
        return vstep(jax.random.split(key, actions.shape[0]), states, actions, params)

    return step


def batched_reset(env: Environment) -> Callable[[jax.Array, Any, int], tuple[Any, Any]]:
    """Returns ``reset(key, params, num_envs) -> (obs, states)`` for a batch (``num_envs`` static)."""

    def reset(key, params, num_envs):
        return jax.vmap(env.reset_env, in_axes=(0, None))(jax.random.split(key, num_envs), params)

    return reset
