"""Random placement on the device, with the distributions of minigrid's rejection samplers.

minigrid draws a position uniformly in a rectangle and rejects it until a predicate holds; the accepted
position is therefore uniform over the cells that satisfy it. Here that set is a boolean mask and one
uniform draw picks its k-th cell, so generation is a fixed amount of work with no loop.

Generators draw all their randomness at once (``jax.random.bits(key, (n,), uint32)``) and turn each 32-bit
word into an integer with ``below``: one threefry call per reset instead of one per draw keeps both the
compiled program and the run time small.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsoc.envs.gridworld import constants as C

_DIR_TO_VEC = C.DIR_TO_VEC  # numpy: importing jaxsoc must not start a JAX backend


class Bits:
    """A trace-time cursor over one block of random ``uint32`` words.

    ``Bits(words)`` hands out consecutive slices of ``words`` (``uint32[n]``); ``Bits(None)`` is a counter
    that hands out zeros and only records how many words a generator needs (see ``count_words``).
    """

    def __init__(self, words: jax.Array | None):
        self.words = words
        self.used = 0

    def take(self, n: int) -> jax.Array:
        """Returns the next ``n`` words, ``uint32[n]``."""
        if self.words is None:
            out = jnp.zeros((n,), jnp.uint32)
        else:
            if self.used + n > self.words.shape[0]:
                raise ValueError(f"random block exhausted ({self.words.shape[0]} words)")
            out = self.words[self.used : self.used + n]
        self.used += n
        return out

    def one(self) -> jax.Array:
        """Returns the next word, ``uint32[]``."""
        return self.take(1)[0]


def count_words(fn) -> int:
    """Returns how many words ``fn(bits)`` takes from its ``Bits``, by tracing it abstractly once."""
    counter = Bits(None)
    jax.eval_shape(lambda: fn(counter))
    return counter.used


def below(bits: jax.Array, n) -> jax.Array:
    """Returns ``int32`` in ``[0, n)`` from a ``uint32`` word by multiply-shift (``floor(bits * n / 2**32)``,
    computed in 16-bit halves); ``n`` must be in ``[1, 2**16)``. The bias is at most ``n / 2**32``."""
    bits = jnp.asarray(bits, jnp.uint32)
    n = jnp.asarray(n, jnp.uint32)
    high, low = bits >> 16, bits & 0xFFFF
    return ((high * n + ((low * n) >> 16)) >> 16).astype(jnp.int32)


def randint(bits: jax.Array, low, high) -> jax.Array:
    """Returns ``int32`` uniform in ``[low, high)`` (minigrid's ``_rand_int``) from a ``uint32`` word."""
    return jnp.asarray(low, jnp.int32) + below(bits, jnp.asarray(high, jnp.int32) - low)


def _descend(rank: jax.Array, counts: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Returns ``(i, rank')``: the bin ``i`` of ``counts`` ``int32[K]`` that holds the ``rank``-th item
    (0-based) and the item's rank inside that bin. A comparison table replaces ``cumsum``, whose
    associative-scan lowering compiles slowly on CPU/GPU."""
    size = counts.shape[0]
    upto = jnp.arange(size)[None, :] <= jnp.arange(size)[:, None]
    cumulative = jnp.sum(jnp.where(upto, counts[None, :], 0), axis=1)
    index = jnp.minimum(jnp.sum(cumulative <= rank), size - 1)
    before = jnp.sum(jnp.where(jnp.arange(size) < index, counts, 0))
    return index.astype(jnp.int32), rank - before


def choose_index(bits: jax.Array, mask: jax.Array) -> jax.Array:
    """Returns the flat ``int32`` index of a uniformly chosen True entry of ``mask`` (0 if none is True),
    using the ``uint32`` word ``bits``. One uniform rank is drawn and located row by row, so the work is
    ``O(sum of squared axis lengths)`` and the choice is exactly uniform."""
    counts = mask.astype(jnp.int32)
    total = jnp.sum(counts)
    rank = below(bits, jnp.maximum(total, 1))
    index = jnp.int32(0)
    for axis in range(mask.ndim):
        level = counts.reshape(counts.shape[0], -1).sum(axis=1) if counts.ndim > 1 else counts
        i, rank = _descend(rank, level)
        index = index * mask.shape[axis] + i
        counts = counts[i]
    return index


def choose_cell(bits: jax.Array, mask: jax.Array) -> jax.Array:
    """Returns ``int32[2]`` ``(x, y)`` chosen uniformly among the True cells of ``mask`` ``bool[H, W]``."""
    index = choose_index(bits, mask)
    width = mask.shape[1]
    return jnp.stack([index % width, index // width])


def rect_mask(height: int, width: int, x0, y0, w, h) -> jax.Array:
    """Returns ``bool[height, width]``, True inside ``[x0, x0 + w) x [y0, y0 + h)`` (bounds may be traced)."""
    ys = jnp.arange(height)[:, None]
    xs = jnp.arange(width)[None, :]
    return (xs >= x0) & (xs < x0 + w) & (ys >= y0) & (ys < y0 + h)


def empty_mask(grid: jax.Array) -> jax.Array:
    """Returns ``bool[H, W]``, True where the grid holds nothing (minigrid's ``grid.get(pos) is None``)."""
    return grid[..., C.TYPE] == C.EMPTY


def away_from(height: int, width: int, pos: jax.Array, min_distance: int) -> jax.Array:
    """Returns ``bool[H, W]``, True where the Manhattan distance to ``pos`` is at least ``min_distance``
    (minigrid's ``reject_next_to`` with ``min_distance=2``; ``pos`` must not be a cell when ``1``)."""
    ys = jnp.arange(height)[:, None]
    xs = jnp.arange(width)[None, :]
    return jnp.abs(xs - pos[0]) + jnp.abs(ys - pos[1]) >= min_distance


def put(grid: jax.Array, pos: jax.Array, cell: jax.Array) -> jax.Array:
    """Returns the grid with ``cell`` written at ``pos = (x, y)``."""
    return grid.at[pos[1], pos[0]].set(jnp.asarray(cell, jnp.uint8))


def place(bits: jax.Array, grid: jax.Array, allowed: jax.Array, cell) -> tuple[jax.Array, jax.Array]:
    """minigrid's ``place_obj``: puts ``cell`` on a uniform empty cell of ``allowed``.
    Returns ``(grid, pos)``."""
    pos = choose_cell(bits, allowed & empty_mask(grid))
    return put(grid, pos, cell), pos


def facing_free_mask(grid: jax.Array) -> jax.Array:
    """Returns ``bool[H, W, 4]``: for each cell and direction, whether the cell in front is empty or a wall
    (RoomGrid's ``place_agent`` condition). Cells on the border count as not free."""
    kind = grid[..., C.TYPE]
    ok = (kind == C.EMPTY) | (kind == C.WALL)
    padded = jnp.pad(ok, 1, constant_values=False)
    h, w = ok.shape
    fronts = [padded[1 + dy : 1 + dy + h, 1 + dx : 1 + dx + w] for dx, dy in C.DIR_TO_VEC.tolist()]
    return jnp.stack(fronts, axis=-1)


def place_agent(
    bits: jax.Array, grid: jax.Array, allowed: jax.Array, facing_free: bool = False
) -> tuple[jax.Array, jax.Array]:
    """minigrid's ``place_agent``: a uniform empty cell of ``allowed`` and a uniform direction; with
    ``facing_free`` (RoomGrid) only poses whose front cell is empty or a wall. Returns ``(pos, dir)``."""
    poses = jnp.repeat((allowed & empty_mask(grid))[..., None], 4, axis=-1)
    if facing_free:
        poses = poses & facing_free_mask(grid)
    index = choose_index(bits, poses)
    cell_index, direction = index // 4, index % 4
    width = grid.shape[1]
    return jnp.stack([cell_index % width, cell_index // width]), direction
