"""RGB rendering of grid worlds in JAX, with minigrid's look.

minigrid draws each tile on a 3x supersampled ``uint8`` canvas (grid lines on the top and left edges, then
the object, then the agent's triangle, then the highlight blend towards white), averages it down and
truncates to ``uint8``. The same tiles are drawn here once on the host with numpy, for every distinct
``(type, colour, state)`` look, highlighted or not, with and without the agent in each direction, and
cached per tile size (``sprites``). Rendering a state in JAX is then a gather of one sprite per cell:
jittable, vmappable, no host callbacks, no loops over cells.
"""

from __future__ import annotations

import functools
import math
import numbers
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld.observation import gather_view, process_vis
from jaxsoc.envs.gridworld.state import GridParams, GridState

SUBDIVISIONS = 3  # minigrid's supersampling factor per tile side
GRID_LINE_RGB = (100, 100, 100)
LAVA_RGB = (255, 128, 0)
AGENT_RGB = (255, 0, 0)
HIGHLIGHT_ALPHA = 0.3  # visible cells are blended 30% towards white
NUM_TYPES = len(C.OBJECT_NAMES)
NUM_STATES = len(C.STATE_NAMES)

# ---------------------------------------------------------------------------------------------------------
# Host-side sprite drawing (numpy, run once per tile size)
# ---------------------------------------------------------------------------------------------------------


def _pixel_centres(size: int) -> tuple[np.ndarray, np.ndarray]:
    """Returns the ``(x, y)`` centres of a ``size x size`` canvas in tile units, each ``float64[size, size]``
    indexed ``[y, x]``."""
    c = (np.arange(size, dtype=np.float64) + 0.5) / size
    return c[None, :].repeat(size, 0), c[:, None].repeat(size, 1)


def _in_rect(x, y, x0, x1, y0, y1) -> np.ndarray:
    return (x >= x0) & (x <= x1) & (y >= y0) & (y <= y1)


def _in_disc(x, y, cx, cy, r) -> np.ndarray:
    return (x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r


def _near_segment(x, y, x0, y0, x1, y1, r) -> np.ndarray:
    """True within distance ``r`` of the segment ``(x0, y0)-(x1, y1)``."""
    length = math.hypot(x1 - x0, y1 - y0)
    ux, uy = (x1 - x0) / length, (y1 - y0) / length
    t = np.clip((x - x0) * ux + (y - y0) * uy, 0.0, length)
    return np.hypot(x - (x0 + t * ux), y - (y0 + t * uy)) <= r


def _in_triangle(x, y, a, b, c) -> np.ndarray:
    """Barycentric inside test: ``u >= 0, v >= 0, u + v < 1`` along edges ``a->c`` (u) and ``a->b`` (v)."""
    e0x, e0y, e1x, e1y = c[0] - a[0], c[1] - a[1], b[0] - a[0], b[1] - a[1]
    px, py = x - a[0], y - a[1]
    d00, d01, d11 = e0x * e0x + e0y * e0y, e0x * e1x + e0y * e1y, e1x * e1x + e1y * e1y
    d02, d12 = e0x * px + e0y * py, e1x * px + e1y * py
    inv = 1.0 / (d00 * d11 - d01 * d01)
    u, v = (d11 * d02 - d01 * d12) * inv, (d00 * d12 - d01 * d02) * inv
    return (u >= 0) & (v >= 0) & (u + v < 1)


def _agent_mask(size: int, direction: int) -> np.ndarray:
    """Returns ``bool[size, size]``: the agent's triangle (pointing east for direction 0) turned clockwise
    (on screen, y down) by a quarter turn per direction."""
    x, y = _pixel_centres(size)
    theta = 0.5 * math.pi * direction
    dx, dy = x - 0.5, y - 0.5
    xr = 0.5 + dx * math.cos(theta) + dy * math.sin(theta)  # rotate the sample point back by theta
    yr = 0.5 + dy * math.cos(theta) - dx * math.sin(theta)
    return _in_triangle(xr, yr, (0.12, 0.19), (0.87, 0.50), (0.12, 0.81))


def _look_key(kind: int, color: int, state: int) -> tuple[int, ...]:
    """Returns what a cell's picture depends on: empty cells, lava and the unseen marker ignore colour and
    state, only doors use their state."""
    if kind in (C.EMPTY, C.AGENT):
        return (C.EMPTY,)
    if kind in (C.UNSEEN, C.LAVA):
        return (kind,)
    if kind == C.DOOR:
        return (kind, color, state)
    return (kind, color)


def _draw_look(kind: int, color: int, state: int, size: int) -> np.ndarray:
    """Returns the supersampled ``uint8[size, size, 3]`` picture of one cell (no agent, no highlight).

    Colours are written into the ``uint8`` canvas, so fractional colours (floor tiles at half colour,
    locked doors at 45%) truncate as in minigrid. ``UNSEEN`` cells are plain black, without grid lines."""
    img = np.zeros((size, size, 3), np.uint8)
    if kind == C.UNSEEN:
        return img
    x, y = _pixel_centres(size)
    rgb = C.COLOR_RGB[color].astype(np.float64)
    black = (0, 0, 0)

    def paint(mask, colour):
        img[mask] = np.asarray(colour, np.float64)

    paint(_in_rect(x, y, 0, 0.031, 0, 1) | _in_rect(x, y, 0, 1, 0, 0.031), GRID_LINE_RGB)
    if kind == C.WALL:
        paint(_in_rect(x, y, 0, 1, 0, 1), rgb)
    elif kind == C.FLOOR:
        paint(_in_rect(x, y, 0.031, 1, 0.031, 1), rgb / 2)
    elif kind == C.GOAL:
        paint(_in_rect(x, y, 0, 1, 0, 1), rgb)
    elif kind == C.LAVA:
        paint(_in_rect(x, y, 0, 1, 0, 1), LAVA_RGB)
        for row in range(3):  # three black zig-zag waves
            lo, hi = 0.3 + 0.2 * row, 0.4 + 0.2 * row
            for x0, y0, x1, y1 in ((0.1, lo, 0.3, hi), (0.3, hi, 0.5, lo), (0.5, lo, 0.7, hi), (0.7, hi, 0.9, lo)):
                paint(_near_segment(x, y, x0, y0, x1, y1, 0.03), black)
    elif kind == C.DOOR:
        if state == C.OPEN:  # a thin door leaf along the right edge
            paint(_in_rect(x, y, 0.88, 1.0, 0.0, 1.0), rgb)
            paint(_in_rect(x, y, 0.92, 0.96, 0.04, 0.96), black)
        elif state == C.LOCKED:  # filled at 45% with a key slot
            paint(_in_rect(x, y, 0, 1, 0, 1), rgb)
            paint(_in_rect(x, y, 0.06, 0.94, 0.06, 0.94), 0.45 * rgb)
            paint(_in_rect(x, y, 0.52, 0.75, 0.50, 0.56), rgb)
        else:  # closed: double frame and a round handle
            paint(_in_rect(x, y, 0, 1, 0, 1), rgb)
            paint(_in_rect(x, y, 0.04, 0.96, 0.04, 0.96), black)
            paint(_in_rect(x, y, 0.08, 0.92, 0.08, 0.92), rgb)
            paint(_in_rect(x, y, 0.12, 0.88, 0.12, 0.88), black)
            paint(_in_disc(x, y, 0.75, 0.50, 0.08), rgb)
    elif kind == C.KEY:
        paint(_in_rect(x, y, 0.50, 0.63, 0.31, 0.88), rgb)  # shaft
        paint(_in_rect(x, y, 0.38, 0.50, 0.59, 0.66), rgb)  # teeth
        paint(_in_rect(x, y, 0.38, 0.50, 0.81, 0.88), rgb)
        paint(_in_disc(x, y, 0.56, 0.28, 0.190), rgb)  # ring
        paint(_in_disc(x, y, 0.56, 0.28, 0.064), black)
    elif kind == C.BALL:
        paint(_in_disc(x, y, 0.5, 0.5, 0.31), rgb)
    elif kind == C.BOX:
        paint(_in_rect(x, y, 0.12, 0.88, 0.12, 0.88), rgb)
        paint(_in_rect(x, y, 0.18, 0.82, 0.18, 0.82), black)
        paint(_in_rect(x, y, 0.16, 0.84, 0.47, 0.53), rgb)  # lid slit
    return img


def _highlight(img: np.ndarray) -> np.ndarray:
    """Returns ``img`` (``uint8``) blended ``HIGHLIGHT_ALPHA`` of the way to white, truncated to ``uint8``."""
    blended = img + HIGHLIGHT_ALPHA * (255 - img.astype(np.float64))
    return blended.clip(0, 255).astype(np.uint8)


def _downsample(img: np.ndarray, factor: int) -> np.ndarray:
    """Returns ``uint8[s, s, 3]``: ``img`` ``uint8[s * factor, s * factor, 3]`` box-averaged (columns, then
    rows, in float64) and truncated to ``uint8``."""
    s = img.shape[0] // factor
    return img.reshape(s, factor, s, factor, 3).mean(axis=3).mean(axis=1).astype(np.uint8)


class Sprites(NamedTuple):
    """Host-side sprite tables for one tile size ``s`` (``L`` distinct looks).

    Attributes:
        look: ``int32[NUM_TYPES, NUM_COLORS, NUM_STATES]``, the look index of a ``(type, colour, state)``.
        tiles: ``uint8[L * 2, s, s, 3]``, tile ``look * 2 + highlighted``.
        agent_tiles: ``uint8[L * 8, s, s, 3]``, tile ``(look * 4 + direction) * 2 + highlighted`` with the
            agent's triangle drawn over the cell.
    """

    look: np.ndarray
    tiles: np.ndarray
    agent_tiles: np.ndarray


@functools.lru_cache(maxsize=16)
def sprites(tile_size: int) -> Sprites:
    """Returns the ``Sprites`` for ``tile_size`` pixels per cell, drawn once and cached (numpy, read-only)."""
    if isinstance(tile_size, bool) or not isinstance(tile_size, numbers.Integral) or tile_size < 1:
        raise ValueError(f"tile_size must be a positive int, got {tile_size!r}")
    tile_size = int(tile_size)
    size = tile_size * SUBDIVISIONS
    keys: dict[tuple[int, ...], int] = {}
    look = np.zeros((NUM_TYPES, C.NUM_COLORS, NUM_STATES), np.int32)
    for kind in range(NUM_TYPES):
        for color in range(C.NUM_COLORS):
            for state in range(NUM_STATES):
                look[kind, color, state] = keys.setdefault(_look_key(kind, color, state), len(keys))
    agent_masks = [_agent_mask(size, d) for d in range(4)]
    tiles = np.zeros((len(keys), 2, tile_size, tile_size, 3), np.uint8)
    agent_tiles = np.zeros((len(keys), 4, 2, tile_size, tile_size, 3), np.uint8)
    for key, index in keys.items():
        kind, color, state = (*key, 0, 0)[:3]
        canvas = _draw_look(kind, color, state, size)
        tiles[index, 0] = _downsample(canvas, SUBDIVISIONS)
        tiles[index, 1] = _downsample(_highlight(canvas), SUBDIVISIONS)
        for direction, mask in enumerate(agent_masks):
            with_agent = canvas.copy()
            with_agent[mask] = AGENT_RGB
            agent_tiles[index, direction, 0] = _downsample(with_agent, SUBDIVISIONS)
            agent_tiles[index, direction, 1] = _downsample(_highlight(with_agent), SUBDIVISIONS)
    out = Sprites(look, tiles.reshape(-1, tile_size, tile_size, 3), agent_tiles.reshape(-1, tile_size, tile_size, 3))
    for array in out:
        array.flags.writeable = False
    return out


# ---------------------------------------------------------------------------------------------------------
# JAX rendering
# ---------------------------------------------------------------------------------------------------------


def _look_index(table: np.ndarray, cells: jax.Array) -> jax.Array:
    """Returns ``int32[...]``: the look of encoded cells ``uint8[..., >=3]`` (out-of-range codes clipped)."""
    kind = jnp.clip(cells[..., C.TYPE].astype(jnp.int32), 0, NUM_TYPES - 1)
    color = jnp.clip(cells[..., C.COLOR].astype(jnp.int32), 0, C.NUM_COLORS - 1)
    state = jnp.clip(cells[..., C.STATE].astype(jnp.int32), 0, NUM_STATES - 1)
    return jnp.asarray(table)[kind, color, state]


def _compose(cells: jax.Array, highlight: jax.Array, agent_rc: tuple, agent_dir: jax.Array, tile_size: int):
    """Returns ``uint8[rows * s, cols * s, 3]`` for encoded cells ``uint8[rows, cols, >=3]`` (indexed
    ``[row, col]``), a highlight mask ``bool[rows, cols]``, the agent's ``(row, col)`` and direction."""
    table = sprites(tile_size)
    rows, cols = cells.shape[:2]
    look = _look_index(table.look, cells)
    lit = highlight.astype(jnp.int32)
    tiles = jnp.asarray(table.tiles)[look * 2 + lit]  # [rows, cols, s, s, 3]
    row, col = agent_rc
    direction = jnp.clip(agent_dir.astype(jnp.int32), 0, 3)
    agent_tile = jnp.asarray(table.agent_tiles)[(look[row, col] * 4 + direction) * 2 + lit[row, col]]
    at_agent = (jnp.arange(rows)[:, None] == row) & (jnp.arange(cols)[None, :] == col)
    tiles = jnp.where(at_agent[:, :, None, None, None], agent_tile, tiles)
    return tiles.transpose(0, 2, 1, 3, 4).reshape(rows * tile_size, cols * tile_size, 3)


def _view_visibility(view: jax.Array, params: GridParams) -> jax.Array:
    """Returns ``bool[V, V]`` (indexed ``[i, j]``): which cells of the view window ``uint8[V, V, 3]`` the
    agent sees (``process_vis``), or all of them when ``params.see_through_walls``."""
    if params.see_through_walls:
        return jnp.ones(view.shape[:2], bool)
    kind = view[..., C.TYPE]
    opaque = (kind == C.WALL) | ((kind == C.DOOR) & (view[..., C.STATE] != C.OPEN))
    return process_vis(opaque)


@jax.jit
def visible_cells(state: GridState, params: GridParams) -> jax.Array:
    """Returns ``bool[H, W]`` (indexed ``[y, x]``): the world cells the agent sees now, i.e. the view cells
    ``observation.view_coordinates`` maps into the world that the visibility mask marks. These are the
    cells minigrid's render highlights.

    Each world cell looks up its own view cell (a gather, no scatter): cell ``(x, y)`` is view cell
    ``i = V // 2 + (p - agent_pos) . right``, ``j = V - 1 - (p - agent_pos) . forward``."""
    view = gather_view(state.grid, state.agent_pos, state.agent_dir, params.view_size)
    return _world_mask(state, _view_visibility(view, params))


def _world_mask(state: GridState, seen: jax.Array) -> jax.Array:
    """Returns ``bool[H, W]``: the world cells whose view cell is marked in ``seen`` (``bool[V, V]``, ``[i, j]``)."""
    size = seen.shape[0]
    height, width = state.grid.shape[:2]
    dx, dy = jnp.asarray(C.DIR_TO_VEC)[state.agent_dir]
    rel_x = jnp.arange(width, dtype=jnp.int32)[None, :] - state.agent_pos[0]
    rel_y = jnp.arange(height, dtype=jnp.int32)[:, None] - state.agent_pos[1]
    i = size // 2 + (-dy * rel_x + dx * rel_y)
    j = size - 1 - (dx * rel_x + dy * rel_y)
    in_view = (i >= 0) & (i < size) & (j >= 0) & (j < size)
    return in_view & seen[jnp.clip(i, 0, size - 1), jnp.clip(j, 0, size - 1)]


@functools.partial(jax.jit, static_argnames=("tile_size",))
def render_state(state: GridState, params: GridParams, tile_size: int = 32) -> jax.Array:
    """Renders the whole world as minigrid's ``env.render()`` does (``render_mode="rgb_array"``,
    ``highlight=True``): one ``tile_size`` tile per cell, the agent as a red triangle pointing in its
    direction, the cells it sees blended towards white.

    Jitted with ``tile_size`` static; vmap it for a batch of states.

    Returns:
        ``uint8[H * tile_size, W * tile_size, 3]``, rows are ``y``.
    """
    highlight = visible_cells(state, params)
    agent_rc = (state.agent_pos[1], state.agent_pos[0])
    return _compose(state.grid, highlight, agent_rc, state.agent_dir, tile_size)


@functools.partial(jax.jit, static_argnames=("tile_size",))
def render_view(state: GridState, params: GridParams, tile_size: int = 32) -> jax.Array:
    """Renders the agent's egocentric view as minigrid's ``get_pov_render`` does: the ``V x V`` window that
    the observation encodes, the agent at the bottom centre facing up over what it carries, the cells it
    sees highlighted and the cells it does not see drawn empty (black with grid lines, not highlighted).

    Jitted with ``tile_size`` static; vmap it for a batch of states.

    Returns:
        ``uint8[V * tile_size, V * tile_size, 3]``; view cell ``(i, j)`` of ``obs["image"]`` is the tile at
        row ``j``, column ``i``.
    """
    size = params.view_size
    view = gather_view(state.grid, state.agent_pos, state.agent_dir, size)
    seen = _view_visibility(view, params)
    view = jnp.where(seen[..., None], view, jnp.asarray(C.EMPTY_CELL[:3]))
    view = view.at[size // 2, size - 1].set(state.carrying[:3])
    cells = jnp.swapaxes(view, 0, 1)  # [i, j] -> [row j, column i]
    agent_rc = (jnp.int32(size - 1), jnp.int32(size // 2))
    return _compose(cells, jnp.swapaxes(seen, 0, 1), agent_rc, jnp.int32(3), tile_size)


@functools.partial(jax.jit, static_argnames=("tile_size",))
def render_image_view(image: jax.Array, tile_size: int = 32) -> jax.Array:
    """Renders an observation ``image`` (``observation.observe``'s ``uint8[V, V, 3]``, indexed ``[i, j]``) as
    ``render_view`` renders the state it came from: the observation already holds the occlusion (unseen cells are
    ``UNSEEN``, every cell the agent sees has another type) and the carried object, so the picture needs nothing
    else. Unseen cells are drawn empty and not highlighted, seen cells highlighted, the agent at the bottom centre
    facing up.

    Jitted with ``tile_size`` static; vmap it for a batch.

    Returns:
        ``uint8[V * tile_size, V * tile_size, 3]``, equal to ``render_view`` of the observed state.
    """
    size = image.shape[0]
    seen = image[..., C.TYPE] != C.UNSEEN
    cells = jnp.where(seen[..., None], image, jnp.asarray(C.EMPTY_CELL[:3]))
    agent_rc = (jnp.int32(size - 1), jnp.int32(size // 2))
    return _compose(jnp.swapaxes(cells, 0, 1), jnp.swapaxes(seen, 0, 1), agent_rc, jnp.int32(3), tile_size)


@functools.partial(jax.jit, static_argnames=("tile_size",))
def render_state_seen(state: GridState, image: jax.Array, tile_size: int = 32) -> jax.Array:
    """``render_state`` with the agent's view taken from its observation ``image`` (``observation.observe``'s
    ``uint8[V, V, 3]`` of ``state``): the seen cells are those not ``UNSEEN`` there, so the occlusion is not
    computed a second time.

    Returns:
        ``uint8[H * tile_size, W * tile_size, 3]``, equal to ``render_state(state, params, tile_size)``.
    """
    highlight = _world_mask(state, image[..., C.TYPE] != C.UNSEEN)
    agent_rc = (state.agent_pos[1], state.agent_pos[0])
    return _compose(state.grid, highlight, agent_rc, state.agent_dir, tile_size)
