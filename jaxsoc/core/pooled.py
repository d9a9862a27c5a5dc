"""Resets computed only where episodes ended, reached by a plain ``jax.vmap`` of ``env.step``.

A gymnax-style auto-reset step computes a fresh level and selects it where the episode ended. Under ``vmap`` the
select runs the reset for every world on every step: free for a task whose reset is a constant layout, the
dominant cost for one whose levels come from rejection sampling (BabyAI: a reset is many steps' worth of work).

``reset_where(reset)`` returns ``f(done, key, params, current)``: ``reset(key, params)`` where ``done`` else
``current``. For one world it is a ``lax.cond``. Under ``vmap`` its batching rule (``jax.custom_batching``) runs
``pooled_chunks``: the ``d`` worlds whose episode ended are gathered and reset ``chunk`` at a time (each with its
own key) and scattered back, in a loop of ``ceil(d / chunk)`` rounds (none when no episode ended). The reset is
compiled once, whatever ``d``; a round costs one read-back of the loop's condition on a GPU, as a switch over
pool sizes would (one per step), and a step typically runs one round. Every world's result is exactly the
select's (same key, same level), so ``vmap(env.step)`` is unchanged in value and pays for about ``d`` resets
instead of ``N``. An outer ``vmap`` (over training seeds, say) flattens its axis into the rows, so the loop
stays one loop at any depth; only params that differ across an outer axis fall back to a select.

``pooled`` (a ``lax.switch`` over pool sizes, one compiled copy per size) is kept for cheap per-episode
computations such as a policy's instruction encoding.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap

#: pool sizes as fractions of the batch for ``pooled`` (the full batch is always the last size)
DEFAULT_POOL_FRACTIONS = (1 / 64, 1 / 8)
#: the rows reset per round of ``pooled_chunks``, as a fraction of the batch: on accelerators a round costs about
#: the same whatever its width (wide rounds, few of them); on a CPU a round costs its width (narrow rounds)
CHUNK_FRACTION = {"cpu": 1 / 256}
DEFAULT_CHUNK_FRACTION = 1 / 16


def chunk_size(num_rows: int, fraction: float | None = None) -> int:
    """Returns the rows per round of ``pooled_chunks`` for a batch of ``num_rows``: ``ceil(fraction *
    num_rows)``, at least 1; ``fraction`` defaults by backend (``CHUNK_FRACTION``)."""
    if fraction is None:
        fraction = CHUNK_FRACTION.get(jax.default_backend(), DEFAULT_CHUNK_FRACTION)
    return max(1, min(num_rows, math.ceil(fraction * num_rows)))


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
    (nothing is computed when no row is done). Inside a ``vmap`` with ``axis_name`` the pool size is the largest
    any member needs (``lax.pmax``), so the switch stays a switch instead of becoming a select over every size."""
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


def pooled_chunks(done: jax.Array, compute: Callable[[jax.Array], Any], otherwise: Any, chunk: int) -> Any:
    """Returns ``otherwise`` with the rows where ``done`` (``bool[N]``) replaced by fresh values computed for
    those rows only, ``chunk`` rows per round.

    ``compute(rows)`` gets ``int32[chunk]`` row indices and returns a pytree of ``[chunk, ...]`` arrays (row
    ``rows[k]`` takes slot ``k``). The rounds run in a ``lax.while_loop`` (a ``jit`` named
    ``_pooled_reset_chunks``, the one data-dependent loop a step may hold: ``ceil(d / chunk)`` rounds for ``d``
    done rows); a round past the last done row computes unused slots on row 0 and drops them."""
    return _pooled_reset_chunks(done, compute, otherwise, chunk)


@functools.partial(jax.jit, static_argnums=(1, 3))
def _pooled_reset_chunks(done, compute, otherwise, chunk):
    num_rows = done.shape[0]
    rounds = -(-num_rows // chunk)
    # the done rows first, then num_rows (out of range: scattering there is dropped), padded to whole rounds
    order = jnp.nonzero(done, size=rounds * chunk, fill_value=num_rows)[0].astype(jnp.int32)
    count = jnp.sum(done, dtype=jnp.int32)

    def more(carry):
        return carry[0] * chunk < count

    def round_(carry):
        r, out = carry
        rows = jax.lax.dynamic_slice(order, (r * chunk,), (chunk,))
        fresh = compute(jnp.where(rows < num_rows, rows, 0))
        out = jax.tree_util.tree_map(lambda o, f: o.at[rows].set(f.astype(o.dtype), mode="drop"), out, fresh)
        return r + 1, out

    return jax.lax.while_loop(more, round_, (jnp.int32(0), otherwise))[1]


def _cast_like(tree: Any, like: Any) -> Any:
    """Returns ``tree`` with every leaf cast to the dtype of the matching leaf of ``like``."""
    return jax.tree_util.tree_map(lambda x, y: jnp.asarray(x, y.dtype), tree, like)


def _broadcast(tree: Any, batched: Any, size: int) -> Any:
    """Returns ``tree`` with a leading axis ``size`` on every leaf that ``batched`` marks unbatched."""
    return jax.tree_util.tree_map(lambda x, b: x if b else jnp.broadcast_to(x, (size, *jnp.shape(x))), tree, batched)


def _axes(batched: Any) -> Any:
    """Returns ``vmap``'s ``in_axes`` for a pytree of batched flags: 0 where batched, None elsewhere."""
    return jax.tree_util.tree_map(lambda b: 0 if b else None, batched)


def select_reset(reset: Callable[[jax.Array, Any], Any]) -> Callable[[jax.Array, jax.Array, Any, Any], Any]:
    """Returns ``f(done, key, params, current)``: ``jnp.where(done, reset(key, params), current)`` leaf by leaf,
    the reset computed for every world (the cheapest auto-reset when a reset costs about a step)."""

    def where(done, key, params, current):
        fresh = _cast_like(reset(key, params), current)
        return jax.tree_util.tree_map(lambda a, b: jnp.where(done, a, b), fresh, current)

    return where


def reset_where(
    reset: Callable[[jax.Array, Any], Any], chunk_fraction: float | None = None
) -> Callable[[jax.Array, jax.Array, Any, Any], Any]:
    """Returns ``f(done, key, params, current)``: ``reset(key, params)`` where ``done`` (``bool[]``) else
    ``current`` (a pytree shaped like ``reset``'s output), computed only for ended worlds under ``vmap``.

    Args:
        reset: ``reset(key, params) -> pytree``, jittable, for one world.
        chunk_fraction: the rows reset per round as a fraction of the ``vmap``'s batch (``chunk_size``; default
            by backend).

    Returns:
        The function; for one world it is a ``lax.cond``, under any nesting of ``vmap`` it is ``pooled_chunks``
        over the flattened batch (see the module docstring). Its value equals ``jnp.where(done, reset(key, params),
        current)`` world by world."""

    reset = jax.jit(reset)  # traced once, however many times the rule below batches it

    def reset_rows_impl(done, keys, params, current):
        def compute(rows):
            return jax.vmap(reset, in_axes=(0, None))(keys[rows], params)

        return pooled_chunks(done, compute, current, chunk_size(done.shape[0], chunk_fraction))

    @custom_vmap
    def reset_rows(done, keys, params, current):
        """Rows ``[N]``: the ended rows reset in one pool."""
        return reset_rows_impl(done, keys, params, current)

    @reset_rows.def_vmap
    def _(axis_size, in_batched, done, keys, params, current):
        done_b, keys_b, params_b, current_b = in_batched
        if any(jax.tree_util.tree_leaves(params_b)):  # params differ across members: a pool per member
            axes = _axes((done_b, keys_b, params_b, current_b))
            out = jax.vmap(reset_rows_impl, in_axes=axes)(done, keys, params, current)
            return out, jax.tree_util.tree_map(lambda _: True, out)
        done, keys, current = _broadcast((done, keys, current), (done_b, keys_b, current_b), axis_size)
        rows = done.shape[1]
        flat = jax.tree_util.tree_map(lambda x: x.reshape((axis_size * rows, *x.shape[2:])), (done, keys, current))
        out = reset_rows(flat[0], flat[1], params, flat[2])
        out = jax.tree_util.tree_map(lambda x: x.reshape((axis_size, rows, *x.shape[1:])), out)
        return out, jax.tree_util.tree_map(lambda _: True, out)

    @custom_vmap
    def reset_one(done, key, params, current):
        return jax.lax.cond(done, lambda: _cast_like(reset(key, params), current), lambda: current)

    @reset_one.def_vmap
    def _(axis_size, in_batched, done, key, params, current):
        done_b, key_b, params_b, current_b = in_batched
        if any(jax.tree_util.tree_leaves(params_b)):
            fresh = jax.vmap(reset, in_axes=_axes((key_b, params_b)))(key, params)
            done, current = _broadcast((done, current), (done_b, current_b), axis_size)
            out = select_rows(done, _cast_like(fresh, current), current)
            return out, jax.tree_util.tree_map(lambda _: True, out)
        done, key, current = _broadcast((done, key, current), (done_b, key_b, current_b), axis_size)
        out = reset_rows(done, key, params, current)
        return out, jax.tree_util.tree_map(lambda _: True, out)

    return reset_one
