"""Random placement on the device, with the distributions of minigrid's rejection samplers.

minigrid draws a position uniformly in a rectangle and rejects it until a predicate holds; the accepted
position is therefore uniform over the cells that satisfy it. Here that set is a boolean mask and one
uniform draw picks its k-th cell, so generation is a fixed amount of work with no loop.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsoc.envs.gridworld import constants as C

_DIR_TO_VEC = jnp.asarray(C.DIR_TO_VEC)


def choose_index(key: jax.Array, mask: jax.Array) -> jax.Array:
    """Returns the flat ``int32`` index of a uniformly chosen True entry of ``mask`` (0 if none is True)."""
    flat = mask.reshape(-1)
    count = jnp.sum(flat, dtype=jnp.int32)
    rank = jax.random.randint(key, (), 0, jnp.maximum(count, 1))
    return jnp.argmax(jnp.cumsum(flat, dtype=jnp.int32) > rank).astype(jnp.int32)


def choose_cell(key: jax.Array, mask: jax.Array) -> jax.Array:
    """Returns ``int32[2]`` ``(x, y)`` chosen uniformly among the True cells of ``mask`` ``bool[H, W]``."""
    index = choose_index(key, mask)
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


def place(key: jax.Array, grid: jax.Array, allowed: jax.Array, cell) -> tuple[jax.Array, jax.Array]:
    """minigrid's ``place_obj``: puts ``cell`` on a uniform empty cell of ``allowed``.
    Returns ``(grid, pos)``."""
    pos = choose_cell(key, allowed & empty_mask(grid))
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
    key: jax.Array, grid: jax.Array, allowed: jax.Array, facing_free: bool = False
) -> tuple[jax.Array, jax.Array]:
    """minigrid's ``place_agent``: a uniform empty cell of ``allowed`` and a uniform direction; with
    ``facing_free`` (RoomGrid) only poses whose front cell is empty or a wall. Returns ``(pos, dir)``."""
    poses = jnp.repeat((allowed & empty_mask(grid))[..., None], 4, axis=-1)
    if facing_free:
        poses = poses & facing_free_mask(grid)
    index = choose_index(key, poses)
    cell_index, direction = index // 4, index % 4
    width = grid.shape[1]
    return jnp.stack([cell_index % width, cell_index // width]), direction
