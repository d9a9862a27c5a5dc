"""Top-down RGB pictures of EXCALIBUR houses and episodes, in JAX (jittable, vmappable, no host callbacks).

One ``tile x tile`` square per cell: walls dark, floor tinted by its room's type (with faint grid lines),
furniture a filled square in its most salient colour with a darker border (an open container is hollow: a
frame in its colour around a dark inside), items small discs in their most salient colour at up to four spots of
their cell (in pick order; items in a closed container are not drawn), a floor item a larger disc in the middle
of its cell, the agent a red triangle pointing along ``agent_dir`` (0 east, 1 south, 2 west, 3 north) with the
held item as a disc on it. The shapes are numpy masks built once per tile size; a frame is a few selects.
"""

from __future__ import annotations

import functools
import numbers

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.excalibur import catalogue as K
from jaxsoc.envs.excalibur import state as S
from jaxsoc.envs.gridworld.rendering import AGENT_RGB, _agent_mask, _in_disc, _in_rect, _pixel_centres

#: ``uint8[NUM_COLORS, 3]`` an RGB value per ``catalogue.COLORS`` entry
COLOR_RGB = np.array(
    [
        (15, 15, 15),  # black
        (40, 80, 220),  # blue
        (13, 152, 186),  # bluegreen
        (205, 127, 50),  # bronze
        (120, 75, 35),  # brown
        (240, 190, 0),  # gold
        (128, 128, 128),  # gray
        (40, 160, 60),  # green
        (255, 140, 0),  # orange
        (255, 140, 190),  # pink
        (210, 25, 25),  # red
        (255, 85, 30),  # redorange
        (190, 190, 205),  # silver
        (200, 165, 120),  # tan
        (140, 80, 200),  # violet
        (250, 250, 250),  # white
        (255, 230, 40),  # yellow
        (154, 205, 50),  # yellowgreen
        (255, 175, 65),  # yelloworange
    ],
    np.uint8,
)
assert COLOR_RGB.shape == (K.NUM_COLORS, 3)
#: ``uint8[NUM_ROOM_TYPES, 3]`` the floor tint of each room type (kitchen, living room, bedroom, bathroom)
ROOM_RGB = np.array([(235, 220, 180), (200, 225, 195), (200, 210, 240), (190, 232, 232)], np.uint8)
WALL_RGB = (55, 55, 62)
OUTLINE_RGB = (30, 30, 30)
BORDER_SHADE = 0.55  # a piece of furniture's border is its colour times this
HOLLOW_SHADE = 0.35  # the inside of an open container is the floor times this
GRID_SHADE = 0.9  # grid lines darken the floor by this factor
MISSING_RGB = (255, 0, 255)  # an object without a colour (never generated)

FURNITURE_OUTER, FURNITURE_INNER = (0.08, 0.92), (0.2, 0.8)
SPOTS = ((0.3, 0.3), (0.7, 0.3), (0.3, 0.7), (0.7, 0.7))  # item spots (x, y) in a cell, in pick order
SPOT_RADIUS, FLOOR_RADIUS, HELD_RADIUS, OUTLINE = 0.15, 0.27, 0.13, 0.05
HELD_CENTRE = 0.42  # along the agent's heading, from the cell's back (inside the triangle)


def check_tile(tile) -> int:
    """Returns ``tile`` as an int; raises ``ValueError`` unless it is an int >= 4 (pixels per cell)."""
    if isinstance(tile, bool) or not isinstance(tile, numbers.Integral) or tile < 4:
        raise ValueError(f"tile must be an int >= 4 (pixels per cell), got {tile!r}")
    return int(tile)


@functools.lru_cache(maxsize=16)
def _masks(tile: int) -> dict[str, np.ndarray]:
    """Returns the static ``bool[..., tile, tile]`` shape masks (indexed ``[y, x]`` inside a cell)."""
    x, y = _pixel_centres(tile)

    def disc(cx, cy, r):
        return _in_disc(x, y, cx, cy, r)

    grid = (x * tile < 1) | (y * tile < 1)
    return {
        "grid": grid,
        "outer": _in_rect(x, y, *FURNITURE_OUTER, *FURNITURE_OUTER),
        "inner": _in_rect(x, y, *FURNITURE_INNER, *FURNITURE_INNER),
        "spot": np.stack([disc(cx, cy, SPOT_RADIUS) for cx, cy in SPOTS]),
        "spot_outline": np.stack([disc(cx, cy, SPOT_RADIUS + OUTLINE) for cx, cy in SPOTS]),
        "floor": disc(0.5, 0.5, FLOOR_RADIUS),
        "floor_outline": disc(0.5, 0.5, FLOOR_RADIUS + OUTLINE),
        "agent": np.stack([_agent_mask(tile, d) for d in range(4)]),
        "held": np.stack([disc(*_held_xy(d), HELD_RADIUS) for d in range(4)]),
        "held_outline": np.stack([disc(*_held_xy(d), HELD_RADIUS + OUTLINE) for d in range(4)]),
    }


def _held_xy(direction: int) -> tuple[float, float]:
    """Returns the ``(x, y)`` centre (cell units) of the held item's disc for an agent facing ``direction``."""
    dx, dy = [(1, 0), (0, 1), (-1, 0), (0, -1)][direction]
    return 0.5 + dx * (HELD_CENTRE - 0.5), 0.5 + dy * (HELD_CENTRE - 0.5)


def object_rgb(house: S.House) -> jax.Array:
    """Returns ``float32[N, 3]``: each object's most salient colour as RGB (magenta when it has none)."""
    first = house.colors[:, 0].astype(jnp.int32)
    rgb = jnp.asarray(COLOR_RGB, jnp.float32)[jnp.clip(first, 0, K.NUM_COLORS - 1)]
    return jnp.where((first >= 0)[:, None], rgb, jnp.asarray(MISSING_RGB, jnp.float32))


def visible_items(house: S.House, held, parent, is_open) -> jax.Array:
    """Returns ``bool[N]``: the valid items not held and not enclosed (one or two levels up) by a closed
    openable container."""
    kind = house.type.astype(jnp.int32)
    openable = jnp.asarray(K.IS_OPENABLE)[kind]
    parent = parent.astype(jnp.int32)
    closed = openable & ~is_open

    def closed_parent(p):
        return (p >= 0) & closed[jnp.maximum(p, 0)]

    grand = jnp.where(parent >= 0, parent[jnp.maximum(parent, 0)], -1)
    slot = jnp.arange(kind.shape[0])
    item = house.valid & jnp.asarray(K.IS_PICKUP)[kind] & (slot != held)
    return item & ~closed_parent(parent) & ~closed_parent(grand)


def _draw(house: S.House, agent_pos, agent_dir, held, cell, parent, link, order, is_open, tile: int) -> jax.Array:
    """Returns ``uint8[H * tile, W * tile, 3]`` for one placement of the house's objects."""
    m = {k: jnp.asarray(v) for k, v in _masks(tile).items()}
    h, w = house.walls.shape
    n = house.valid.shape[0]
    kind = house.type.astype(jnp.int32)
    rgb = object_rgb(house)
    cell = cell.astype(jnp.int32)
    flat = cell[:, 1] * w + cell[:, 0]
    held = jnp.asarray(held, jnp.int32)

    def per_cell(mask, values, spots=1, index=None):
        """Scatters ``values`` of the objects in ``mask`` into ``[H * W * spots, ...]`` at ``index``."""
        index = jnp.where(mask, flat if index is None else index, h * w * spots)
        shape = (h * w * spots,) + values.shape[1:]
        return jnp.zeros(shape, values.dtype).at[index].set(values, mode="drop")

    furniture = house.valid & jnp.asarray(K.IS_FURNITURE)[kind]
    opened = is_open & jnp.asarray(K.IS_OPENABLE)[kind]
    furn_on = per_cell(furniture, jnp.ones(n, bool)).reshape(h, w)
    furn_rgb = per_cell(furniture, rgb).reshape(h, w, 3)
    furn_open = per_cell(furniture, opened).reshape(h, w)

    shown = visible_items(house, held, parent, is_open)
    floor_item = shown & (link == S.FLOOR)
    placed = shown & (link != S.FLOOR)
    slot = jnp.arange(n)
    before = (order[None, :] < order[:, None]) | ((order[None, :] == order[:, None]) & (slot[None, :] < slot[:, None]))
    rank = jnp.sum((flat[None, :] == flat[:, None]) & placed[None, :] & before, axis=1)
    spot_index = flat * 4 + rank
    spot_on = per_cell(placed & (rank < 4), jnp.ones(n, bool), 4, spot_index).reshape(h, w, 4)
    spot_rgb = per_cell(placed & (rank < 4), rgb, 4, spot_index).reshape(h, w, 4, 3)
    floor_on = per_cell(floor_item, jnp.ones(n, bool)).reshape(h, w)
    floor_rgb = per_cell(floor_item, rgb).reshape(h, w, 3)

    room_type = house.room_type.astype(jnp.int32)[jnp.maximum(house.room.astype(jnp.int32), 0)]
    floor = jnp.asarray(ROOM_RGB, jnp.float32)[jnp.clip(room_type, 0, K.NUM_ROOM_TYPES - 1)]
    base = jnp.where(house.walls[..., None], jnp.asarray(WALL_RGB, jnp.float32), floor)  # [H, W, 3]

    def cells(x):  # [H, W, ...] -> [H, 1, W, 1, ...]
        return x[:, None, :, None]

    def pix(mask):  # [t, t] -> [1, t, 1, t, 1]
        return mask[None, :, None, :, None]

    img = jnp.broadcast_to(cells(base), (h, tile, w, tile, 3))
    img = jnp.where(pix(m["grid"]) & cells(~house.walls)[..., None], img * GRID_SHADE, img)
    furn, hollow = cells(furn_on)[..., None], cells(furn_open)[..., None]
    border = jnp.where(hollow, cells(furn_rgb), cells(furn_rgb) * BORDER_SHADE)
    img = jnp.where(furn & pix(m["outer"]), border, img)
    inside = jnp.where(hollow, cells(base) * HOLLOW_SHADE, cells(furn_rgb))
    img = jnp.where(furn & pix(m["inner"]), inside, img)
    outline = jnp.asarray(OUTLINE_RGB, jnp.float32)
    for q in range(4):
        on = cells(spot_on[..., q])[..., None]
        img = jnp.where(on & pix(m["spot_outline"][q]), outline, img)
        img = jnp.where(on & pix(m["spot"][q]), cells(spot_rgb[:, :, q]), img)
    on = cells(floor_on)[..., None]
    img = jnp.where(on & pix(m["floor_outline"]), outline, img)
    img = jnp.where(on & pix(m["floor"]), cells(floor_rgb), img)

    agent_dir = jnp.clip(jnp.asarray(agent_dir, jnp.int32), 0, 3)
    at_agent = (jnp.arange(h)[:, None] == agent_pos[1]) & (jnp.arange(w)[None, :] == agent_pos[0])
    at_agent = cells(at_agent)[..., None]
    img = jnp.where(at_agent & pix(m["agent"][agent_dir]), jnp.asarray(AGENT_RGB, jnp.float32), img)
    holding = at_agent & (held >= 0)
    held_rgb = rgb[jnp.clip(held, 0, n - 1)]
    img = jnp.where(holding & pix(m["held_outline"][agent_dir]), outline, img)
    img = jnp.where(holding & pix(m["held"][agent_dir]), held_rgb, img)
    return jnp.clip(img, 0, 255).astype(jnp.uint8).reshape(h * tile, w * tile, 3)


@functools.partial(jax.jit, static_argnames=("tile",))
def render(state: S.State, tile: int = 16) -> jax.Array:
    """Returns ``uint8[H * tile, W * tile, 3]``: the episode's current top-down picture (rows are ``y``).

    Jitted with ``tile`` static (an int >= 4); vmap it for a batch of states."""
    tile = check_tile(tile)
    return _draw(
        state.house,
        state.agent_pos,
        state.agent_dir,
        state.held,
        state.cell,
        state.parent,
        state.link,
        state.order,
        state.is_open,
        tile,
    )


@functools.partial(jax.jit, static_argnames=("tile",))
def render_house(house: S.House, tile: int = 16) -> jax.Array:
    """Returns ``uint8[H * tile, W * tile, 3]``: the house as generated, the agent at its spawn pose, nothing
    held or open."""
    tile = check_tile(tile)
    closed = jnp.zeros(house.valid.shape, bool)
    return _draw(
        house,
        house.spawn_pos,
        house.spawn_dir,
        -1,
        house.cell,
        house.parent,
        house.link,
        house.order,
        closed,
        tile,
    )
