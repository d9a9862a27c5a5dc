"""RGB rendering of grid worlds in JAX, with minigrid's look.

Tile sprites for every ``(type, colour, state)`` are drawn once on the host with numpy (shapes supersampled
3x and averaged down, as minigrid does) and cached per tile size; rendering a state is then a gather of
sprites per cell, the agent's triangle and the highlight of the cells it sees, all jittable and vmappable.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld.observation import gather_view, process_vis, view_coordinates
from jaxsoc.envs.gridworld.state import GridParams, GridState

_SUPERSAMPLE = 3
_GRID_LINE = np.array([100, 100, 100], np.float32)
_LAVA = np.array([255, 128, 0], np.float32)
_AGENT = np.array([255, 0, 0], np.float32)


def _canvas(size: int) -> tuple[np.ndarray, np.ndarray]:
    """Returns pixel-centre coordinates ``(x, y)`` in [0, 1], each ``float[size, size]`` indexed [y, x]."""
    c = (np.arange(size) + 0.5) / size
    return np.meshgrid(c, c)


def _rect(x, y, x0, x1, y0, y1):
    return (x >= x0) & (x <= x1) & (y >= y0) & (y <= y1)


def _circle(x, y, cx, cy, r):
    return (x - cx) ** 2 + (y - cy) ** 2 <= r * r


def _line(x, y, x0, y0, x1, y1, r):
    d = np.array([x1 - x0, y1 - y0])
    t = np.clip(((x - x0) * d[0] + (y - y0) * d[1]) / (d @ d), 0, 1)
    return (x - (x0 + t * d[0])) ** 2 + (y - (y0 + t * d[1])) ** 2 <= r * r


def _triangle(x, y, a, b, c):
    def side(p, q):
        return (x - q[0]) * (p[1] - q[1]) - (p[0] - q[0]) * (y - q[1])

    s1, s2, s3 = side(a, b), side(b, c), side(c, a)
    return ~(((s1 < 0) | (s2 < 0) | (s3 < 0)) & ((s1 > 0) | (s2 > 0) | (s3 > 0)))


def _draw_object(img, x, y, kind: int, color: int, state: int) -> None:
    """Paints one object into ``img`` (``float[s, s, 3]``) in place."""
    rgb = C.COLOR_RGB[color].astype(np.float32)
    black = np.zeros(3, np.float32)
    if kind == C.WALL:
        img[:] = rgb
    elif kind == C.FLOOR:
        img[_rect(x, y, 0.031, 1, 0.031, 1)] = rgb / 2
    elif kind == C.GOAL:
        img[:] = C.COLOR_RGB[C.GREEN]
    elif kind == C.LAVA:
        img[:] = _LAVA
        for i in range(3):
            ylo = 0.3 + 0.2 * i
            for x0, y0, x1, y1 in ((0.1, ylo, 0.3, ylo + 0.1), (0.3, ylo + 0.1, 0.5, ylo), (0.5, ylo, 0.7, ylo + 0.1)):
                img[_line(x, y, x0, y0, x1, y1, 0.03)] = black
            img[_line(x, y, 0.7, ylo + 0.1, 0.9, ylo, 0.03)] = black
    elif kind == C.DOOR:
        if state == C.OPEN:
            img[_rect(x, y, 0.88, 1.0, 0.0, 1.0)] = rgb
            img[_rect(x, y, 0.92, 0.96, 0.04, 0.96)] = black
        else:
            img[_rect(x, y, 0.0, 1.0, 0.0, 1.0)] = rgb
            if state == C.CLOSED:
                img[_rect(x, y, 0.04, 0.96, 0.04, 0.96)] = black
                img[_rect(x, y, 0.08, 0.92, 0.08, 0.92)] = rgb
                img[_rect(x, y, 0.12, 0.88, 0.12, 0.88)] = black
                img[_circle(x, y, 0.75, 0.5, 0.08)] = rgb
            else:
                img[_rect(x, y, 0.06, 0.94, 0.06, 0.94)] = rgb * 0.45
                img[_rect(x, y, 0.52, 0.75, 0.50, 0.56)] = rgb  # the key slot
    elif kind == C.KEY:
        img[_rect(x, y, 0.50, 0.63, 0.31, 0.88)] = rgb  # shaft
        img[_rect(x, y, 0.38, 0.50, 0.59, 0.66)] = rgb  # teeth
        img[_rect(x, y, 0.38, 0.50, 0.81, 0.88)] = rgb
        img[_circle(x, y, 0.56, 0.28, 0.190)] = rgb  # ring
        img[_circle(x, y, 0.56, 0.28, 0.064)] = black
    elif kind == C.BALL:
        img[_circle(x, y, 0.5, 0.5, 0.31)] = rgb
    elif kind == C.BOX:
        img[_rect(x, y, 0.12, 0.88, 0.12, 0.88)] = rgb
        img[_rect(x, y, 0.18, 0.82, 0.18, 0.82)] = black
        img[_rect(x, y, 0.16, 0.84, 0.47, 0.53)] = rgb


def _downsample(img: np.ndarray, tile_size: int) -> np.ndarray:
    return img.reshape(tile_size, _SUPERSAMPLE, tile_size, _SUPERSAMPLE, 3).mean(axis=(1, 3))


@functools.lru_cache(maxsize=8)
def sprites(tile_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Returns ``(tiles, agent)``: ``uint8[11 * 6 * 3, s, s, 3]`` tiles indexed ``type * 18 + colour * 3 +
    state`` (grid lines included; unseen and empty cells are black), and ``float32[4, s, s]`` the agent
    triangle's coverage for each direction."""
    size = tile_size * _SUPERSAMPLE
    x, y = _canvas(size)
    tiles = np.zeros((len(C.OBJECT_NAMES), C.NUM_COLORS, 3, tile_size, tile_size, 3), np.uint8)
    for kind in range(len(C.OBJECT_NAMES)):
        for color in range(C.NUM_COLORS):
            for state in range(3):
                img = np.zeros((size, size, 3), np.float32)
                _draw_object(img, x, y, kind, color, state)
                img[_rect(x, y, 0, 0.031, 0, 1) | _rect(x, y, 0, 1, 0, 0.031)] = _GRID_LINE
                tiles[kind, color, state] = np.round(_downsample(img, tile_size)).astype(np.uint8)
    agent = np.zeros((4, tile_size, tile_size), np.float32)
    for direction in range(4):
        angle = direction * np.pi / 2  # triangle pointing east, rotated clockwise (y grows downwards)
        xs, ys = x - 0.5, y - 0.5
        xr, yr = np.cos(angle) * xs + np.sin(angle) * ys + 0.5, -np.sin(angle) * xs + np.cos(angle) * ys + 0.5
        mask = _triangle(xr, yr, (0.12, 0.19), (0.87, 0.50), (0.12, 0.81)).astype(np.float32)
        agent[direction] = mask.reshape(tile_size, _SUPERSAMPLE, tile_size, _SUPERSAMPLE).mean(axis=(1, 3))
    return tiles.reshape(-1, tile_size, tile_size, 3), agent


def _compose(cells: jax.Array, highlight: jax.Array, agent_cell, agent_dir, tile_size: int) -> jax.Array:
    """Returns ``uint8[rows * s, cols * s, 3]`` from encoded cells ``uint8[rows, cols, 3]``, a highlight mask
    ``bool[rows, cols]`` and the agent's ``(row, col)`` and direction."""
    tiles, agent = sprites(tile_size)
    index = cells[..., 0].astype(jnp.int32) * 18 + cells[..., 1].astype(jnp.int32) * 3 + cells[..., 2]
    img = jnp.asarray(tiles)[index].astype(jnp.float32)  # [rows, cols, s, s, 3]
    rows, cols = cells.shape[:2]
    at_agent = (jnp.arange(rows)[:, None] == agent_cell[0]) & (jnp.arange(cols)[None, :] == agent_cell[1])
    cover = jnp.where(at_agent[..., None, None], jnp.asarray(agent)[agent_dir], 0.0)[..., None]
    img = img * (1 - cover) + jnp.asarray(_AGENT) * cover
    img = jnp.where(highlight[..., None, None, None], img + (255.0 - img) * 0.3, img)
    img = jnp.round(img).astype(jnp.uint8)
    return img.transpose(0, 2, 1, 3, 4).reshape(rows * tile_size, cols * tile_size, 3)


def visible_cells(state: GridState, params: GridParams) -> jax.Array:
    """Returns ``bool[H, W]``: the world cells the agent sees now (minigrid's render highlight)."""
    size = params.view_size
    view = gather_view(state.grid, state.agent_pos, state.agent_dir, size)
    if params.see_through_walls:
        seen = jnp.ones((size, size), bool)
    else:
        opaque = (view[..., 0] == C.WALL) | ((view[..., 0] == C.DOOR) & (view[..., 2] != C.OPEN))
        seen = process_vis(opaque)
    x, y = view_coordinates(state.agent_pos, state.agent_dir, size)
    height, width = state.grid.shape[:2]
    inside = seen & (x >= 0) & (x < width) & (y >= 0) & (y < height)
    mask = jnp.zeros((height + 1, width + 1), bool)  # the extra row/column absorbs cells outside
    return mask.at[jnp.where(inside, y, height), jnp.where(inside, x, width)].set(True)[:height, :width]


def render_state(state: GridState, params: GridParams, tile_size: int = 32) -> jax.Array:
    """Returns ``uint8[H * tile_size, W * tile_size, 3]``: the whole world as minigrid's
    ``render(mode="rgb_array")`` draws it, the agent as a red triangle and the cells it sees highlighted."""
    agent_cell = jnp.stack([state.agent_pos[1], state.agent_pos[0]])
    return _compose(state.grid[..., :3], visible_cells(state, params), agent_cell, state.agent_dir, tile_size)


def render_view(image: jax.Array, tile_size: int = 32) -> jax.Array:
    """Returns ``uint8[V * tile_size, V * tile_size, 3]``: an observation image ``uint8[V, V, 3]`` (indexed
    ``[i, j]``) drawn from the agent's point of view, the agent at the bottom centre facing up, the seen
    cells highlighted (unseen cells stay black)."""
    cells = jnp.swapaxes(image, 0, 1)  # to [row, col]
    size = image.shape[0]
    seen = cells[..., 0] != C.UNSEEN
    return _compose(cells, seen, jnp.array([size - 1, size // 2]), jnp.int32(3), tile_size)
