"""The egocentric observation of MiniGrid: view window, ``Grid.process_vis`` occlusion, carried object.

minigrid builds the view by slicing the world, rotating it ``agent_dir + 1`` times and flooding
visibility from the agent's cell. The same view is gathered here directly: view cell ``(i, j)`` is the
world cell ``agent_pos + dir_vec * (V - 1 - j) + right_vec * (i - V // 2)``, cells outside the world
read as walls, and the output is indexed ``[i, j]`` like minigrid's ``obs["image"]``.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.core import spaces
from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld.state import GridParams, GridState

_DIR_TO_VEC = C.DIR_TO_VEC  # numpy: importing jaxsoc must not start a JAX backend


def view_coordinates(agent_pos: jax.Array, agent_dir: jax.Array, view_size: int) -> tuple[jax.Array, jax.Array]:
    """Returns the world ``(x, y)`` of every view cell, two ``int32[V, V]`` arrays indexed ``[i, j]``."""
    dx, dy = jnp.asarray(_DIR_TO_VEC)[agent_dir, 0], jnp.asarray(_DIR_TO_VEC)[agent_dir, 1]
    rx, ry = -dy, dx
    i = jnp.arange(view_size, dtype=jnp.int32)[:, None] - view_size // 2
    ahead = view_size - 1 - jnp.arange(view_size, dtype=jnp.int32)[None, :]
    return agent_pos[0] + dx * ahead + rx * i, agent_pos[1] + dy * ahead + ry * i


def gather_view(grid: jax.Array, agent_pos: jax.Array, agent_dir: jax.Array, view_size: int) -> jax.Array:
    """Returns the ``uint8[V, V, 3]`` encoding of the view window before occlusion, outside cells as walls."""
    height, width = grid.shape[0], grid.shape[1]
    x, y = view_coordinates(agent_pos, agent_dir, view_size)
    inside = (x >= 0) & (x < width) & (y >= 0) & (y < height)
    cells = grid[jnp.clip(y, 0, height - 1), jnp.clip(x, 0, width - 1), :3]
    return jnp.where(inside[..., None], cells, jnp.asarray(C.WALL_CELL[:3]))


#: the widest view whose row table is built (``4**V`` entries: 16 KiB for 7, 512 KiB for 9); wider views sweep
TABLE_MAX_VIEW = 9


@functools.cache
def row_visibility_table(size: int) -> np.ndarray:
    """Returns minigrid's sideways sweep of one view row as a table ``uint[4**size]``: entry ``seeds << size |
    transparent`` (``size``-bit masks, bit ``i`` view column ``i``) holds the visible columns, every cell reached
    from a seed through transparent cells (an opaque cell is seen but stops the spread)."""
    full = (1 << size) - 1
    seeds = np.repeat(np.arange(1 << size, dtype=np.int64), 1 << size)
    transparent = np.tile(np.arange(1 << size, dtype=np.int64), 1 << size)
    visible = seeds
    for _ in range(size - 1):
        spread = visible & transparent
        visible = visible | ((spread << 1) & full) | (spread >> 1)
    return visible.astype(np.uint8 if size <= 8 else np.uint16)


def _sweep_row(seeds: jax.Array, transparent: jax.Array, size: int) -> jax.Array:
    """Returns the visible columns of a row (``int32`` bit mask) from its ``seeds`` and ``transparent`` masks:
    a lookup in ``row_visibility_table`` up to ``TABLE_MAX_VIEW``, else ``size - 1`` rounds of spreading."""
    if size <= TABLE_MAX_VIEW:
        return jnp.asarray(row_visibility_table(size))[(seeds << size) | transparent].astype(jnp.int32)
    full, visible = (1 << size) - 1, seeds
    for _ in range(size - 1):
        spread = visible & transparent
        visible = visible | ((spread << 1) & full) | (spread >> 1)
    return visible


def process_vis(opaque: jax.Array) -> jax.Array:
    """minigrid's ``Grid.process_vis`` for an agent at ``(V // 2, V - 1)``.

    Args:
        opaque: ``bool[V, V]`` indexed ``[i, j]``, True for walls and doors that are not open.

    Returns:
        ``bool[V, V]``, the visibility mask. Row by row from the agent's row upwards, visibility spreads
        sideways through transparent cells (``_sweep_row``: one table lookup per row) and every visible
        transparent cell lights itself and its two diagonal/straight neighbours in the row above. Rows are
        held as bit masks, so the whole flood is about a hundred integer operations per world.
    """
    size = opaque.shape[0]
    full = (1 << size) - 1
    bits = jnp.left_shift(jnp.int32(1), jnp.arange(size, dtype=jnp.int32))  # bit i <-> view column i
    transparent_rows = jnp.sum(jnp.where(opaque, 0, bits[:, None]), axis=0)  # int32[V], one per row j
    seeds = jnp.int32(1 << (size // 2))
    rows = [None] * size
    for j in reversed(range(size)):
        t = transparent_rows[j]
        rows[j] = visible = _sweep_row(seeds, t, size)
        lit = visible & t
        seeds = lit | ((lit << 1) & full) | (lit >> 1)
    row_bits = jnp.stack(rows)  # int32[V] indexed j
    return (row_bits[None, :] & bits[:, None]) != 0


def observe(state: GridState, params: GridParams) -> dict[str, jax.Array]:
    """Returns minigrid's observation: ``image`` ``uint8[V, V, 3]`` (indexed ``[i, j]``) and
    ``direction`` ``int32[]``. The agent's cell shows the carried object, or empty when nothing is carried."""
    size = params.view_size
    view = gather_view(state.grid, state.agent_pos, state.agent_dir, size)
    if params.see_through_walls:
        image = view
    else:
        kind = view[..., 0]
        opaque = (kind == C.WALL) | ((kind == C.DOOR) & (view[..., 2] != C.OPEN))
        image = jnp.where(process_vis(opaque)[..., None], view, jnp.uint8(0))
    image = image.at[size // 2, size - 1].set(state.carrying[:3])
    return {"image": image, "direction": state.agent_dir}


def observation_space(params: GridParams) -> spaces.Dict:
    """Returns the space of ``observe``: ``image`` ``uint8[V, V, 3]`` and ``direction`` in ``0..3``."""
    size = params.view_size
    return spaces.Dict({"image": spaces.Box(0, C.AGENT, (size, size, 3), jnp.uint8), "direction": spaces.Discrete(4)})
