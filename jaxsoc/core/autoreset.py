"""Auto-reset for a batch of worlds that generates only as many new levels as episodes ended.

``env.step`` is written for one world and auto-resets by computing a fresh level on every step and
selecting it where the episode ended; under ``vmap`` that level is generated for every world on every
step. That is free for the classic MiniGrid tasks and the dominant cost for BabyAI, whose levels are
drawn by rejection sampling (a reset computes all of a level's K attempts: many steps' worth).

``batched_step(env)`` returns a step for a whole batch: it steps every world, counts the ``d`` worlds
whose episode ended, and generates a *pool* of fresh levels of the smallest size in ``pool_fractions``
(times the batch size) that holds ``d``, or a full batch if none does (nothing when ``d = 0``). The
``k``-th ended world takes the ``k``-th level of the pool. The choice of pool size is a ``lax.switch``
outside ``vmap``, so only one size runs. Every ended episode still gets its own independently generated
level, so the episode distribution is exactly ``env.step``'s; only the random stream differs. Inside an
outer ``vmap`` (e.g. over training seeds) a switch on a batched index becomes a select over all sizes,
which costs more than it saves: name the ``vmap``'s axis (``axis_name``) and every member takes the pool
size the largest count needs, so the switch survives.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from jaxsoc.core.env import Environment

DEFAULT_POOL_FRACTIONS = (1 / 256, 1 / 32, 1 / 4)


def select_rows(pred: jax.Array, on_true: Any, on_false: Any) -> Any:
    """Returns per row ``on_true`` where ``pred`` (``bool[N]``) else ``on_false`` (pytrees of ``[N, ...]``)."""

    def pick(a, b):
        return jnp.where(pred.reshape(pred.shape + (1,) * (a.ndim - 1)), a, b)

    return jax.tree_util.tree_map(pick, on_true, on_false)


def pool_sizes(num_envs: int, pool_fractions: Sequence[float] = DEFAULT_POOL_FRACTIONS) -> list[int]:
    """Returns the distinct pool sizes (ascending, the last one ``num_envs``) for a batch size."""
    sizes = {max(1, math.ceil(f * num_envs)) for f in pool_fractions if 0 < f < 1}
    return sorted(s for s in sizes if s < num_envs) + [num_envs]


def pooled(
    done: jax.Array,
    compute: Callable[[jax.Array], Any],
    otherwise: Any,
    sizes: Sequence[int],
    axis_name: str | None = None,
) -> Any:
    """Returns ``otherwise`` with the rows where ``done`` (``bool[N]``) replaced by fresh values computed for
    those rows only.

    ``compute(rows)`` gets the indices ``int32[P]`` of the first ``P`` done rows (0 in unused slots) and returns
    a pytree of ``[P, ...]`` arrays; the ``k``-th done row takes slot ``k``. ``P`` is the smallest of ``sizes``
    (ascending, the last one ``N``: ``pool_sizes``) that holds every done row, chosen by one ``lax.switch``
    (nothing is computed when no row is done). Inside a ``vmap`` with ``axis_name`` (e.g. over training
    seeds) the pool size is the largest any member needs (``lax.pmax``), so the switch stays a switch instead
    of becoming a select over every size."""
    rank = jnp.cumsum(done) - 1  # the pool slot of each done row

    def branch(size):
        def run(_):
            rows = jnp.nonzero(done, size=size, fill_value=0)[0].astype(jnp.int32)
            pool = compute(rows)
            slot = jnp.clip(rank, 0, size - 1)
            return select_rows(done, jax.tree_util.tree_map(lambda x: x[slot], pool), otherwise)

        return run

    sizes = list(sizes)
    count = jnp.sum(done)
    if axis_name is not None:
        count = jax.lax.pmax(count, axis_name)
    index = jnp.sum(count > jnp.asarray([0, *sizes[:-1]], jnp.int32))
    return jax.lax.switch(index, [lambda _: otherwise, *map(branch, sizes)], None)


def batched_step(
    env: Environment, pool_fractions: Sequence[float] = DEFAULT_POOL_FRACTIONS, axis_name: str | None = None
) -> Callable[..., tuple[Any, Any, jax.Array, jax.Array, jax.Array, dict[str, Any]]]:
    """Returns ``step(key, states, actions, params) -> (obs, states, reward, terminated, truncated, info)``
    over a batch: ``states`` and ``actions`` have a leading axis ``N``, ``key`` is one key and ``params``
    is shared. Outputs have the leading axis ``N`` and the meaning of ``env.step``'s (auto-reset, with
    ``info["final_observation"]`` and ``info["final_state"]``). Jittable; see the module docstring. Under a
    ``vmap`` over batches (seeds) give its ``axis_name`` (``pooled``)."""

    def step(key, states, actions, params):
        num_envs = actions.shape[0]
        key_step, key_reset = jax.random.split(key)
        step_keys = jax.random.split(key_step, num_envs)
        obs, stepped, reward, terminated, truncated, info = jax.vmap(env.step_env, in_axes=(0, 0, 0, None))(
            step_keys, states, actions, params
        )
        done = terminated | truncated

        def generate(rows):
            return jax.vmap(env.reset_env, in_axes=(0, None))(jax.random.split(key_reset, rows.shape[0]), params)

        sizes = pool_sizes(num_envs, pool_fractions)
        new_obs, new_states = pooled(done, generate, (obs, stepped), sizes, axis_name)
        info = dict(info, final_observation=obs, final_state=stepped)
        return new_obs, new_states, reward, terminated, truncated, info

    return step


def batched_reset(env: Environment) -> Callable[[jax.Array, Any, int], tuple[Any, Any]]:
    """Returns ``reset(key, params, num_envs) -> (obs, states)`` for a batch (``num_envs`` static)."""

    def reset(key, params, num_envs):
        return jax.vmap(env.reset_env, in_axes=(0, None))(jax.random.split(key, num_envs), params)

    return reset
