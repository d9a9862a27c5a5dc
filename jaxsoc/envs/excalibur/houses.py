"""Procedural EXCALIBUR houses generated on the device (a ProcTHOR stand-in): rooms, furniture, items.

``generate(key, config)`` is pure, jittable and vmappable over keys (``config`` is static). It does a fixed amount
of work: every random number comes from one block of ``uint32`` words (``placement.Bits``), every choice is a
uniform draw over a mask, and there is no data-dependent loop.

**Layout.** The project's room grid (``babyai.roomgrid``): ``num_rows x num_cols`` rooms of side ``room_size``
sharing their walls; ``connect_all`` opens doorways until every room is reachable, then one extra doorway is
added with probability 1/2 (on a random inner wall without one), which can make loops. Doorways are gaps in
``walls``. ``room`` holds each cell's room (row-major, ``r = row * num_cols + col``); a doorway cell belongs to
the room right of / below it (``Layout.room_of``'s convention); walls are -1.

**Where things stand.** Furniture and floor items take the *allowed cells* of their room: interior cells next to
the room's walls (the ring), except the interior corners and the cells directly in front of a doorway. On top
of that, of the two ring cells next to each interior corner one is kept free (drawn at random; with
``room_size == 5`` the two cells beside the centre on opposite sides), so a corner can never be walled in. The
room's core (interior minus ring) stays free and connected, every free ring cell touches it, every corner
touches a free ring cell and every doorway touches a free front cell: all free floor is reachable, and every
object's cell is faced by a free floor cell of the core.

**Objects.** Per room: ``U[furniture_per_room]`` pieces of furniture (distinct types of
``ROOM_FURNITURE[room_type]`` while the pool lasts), ``U[items_per_receptacle]`` items on (``ON``, a surface) or
in (``IN``, a container) each receptacle piece, from ``ROOM_ITEMS[room_type]``; an item that is a small
receptacle (``IS_SMALL_RECEPTACLE``) receives one more item (not a small receptacle) with probability
``nest_prob`` (so nesting is at most two deep); ``U[floor_items_per_room]`` items of the pool flagged
``ON_FLOOR`` stand alone on allowed cells. Furniture and floor items have ``link == FLOOR`` and parent -1;
items share their parent's cell.

**Slots.** The candidates are generated in a static table of ``C = R * (F + G + 2 * F * I)`` entries
(``F, I, G`` the maxima of the three ranges) in priority order: all furniture (room-major), all floor items, the
receptacle items (the first item of every receptacle, then the second, ...), then the nested items (in the same
order). The valid ones are packed in that order into the ``N = max_objects`` slots, so slot ``s`` is the ``s``-th
valid candidate and ``valid`` has no holes (``valid[:count]``). Furniture and floor items always fit
(``HouseConfig`` checks ``R * (F + G) <= N``); when a house draws more than ``N`` objects the excess is dropped
from the end of that order (nested items first, then the last items of the receptacles), which keeps every
parent. With ``N >= C`` (``HouseConfig.drops_nothing``, the ``"3x3"`` preset of ``PRESETS``) nothing is ever
dropped. ``order`` is the slot index. Unused slots: type 0, parent -1, link ``FLOOR``, colours/materials -1,
dims/mass 0, cell (0, 0).

**Attributes** (supplementary Alg. 1): 1 or 2 distinct colours of ``TYPE_COLORS[type]`` (1 when the palette has
one), most salient first; 1..min(3, palette) distinct materials of ``TYPE_MATERIALS[type]``; the longest
dimension ``U[SIZE_RANGE] * alpha``, ``alpha ~ U[0.8, 1]``, the other two ``longest * ASPECT[type]``, sorted
descending; mass ``U[MASS_RANGE] * beta``, ``beta ~ U[0.5, 1.5]``.

**Spawn.** A uniform free floor cell that is not a doorway (all free floor is reachable), a uniform direction.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.babyai import roomgrid
from jaxsoc.envs.excalibur import catalogue as K
from jaxsoc.envs.excalibur import state as S
from jaxsoc.envs.gridworld import constants as GC
from jaxsoc.envs.gridworld import placement as P


def _check_range(name: str, value) -> tuple[int, int]:
    try:
        lo, hi = (int(v) for v in value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a (min, max) pair of ints, got {value!r}") from None
    if (lo, hi) != tuple(value) or not 0 <= lo <= hi:
        raise ValueError(f"{name} must be a (min, max) pair of ints with 0 <= min <= max, got {value!r}")
    return lo, hi


#: the most object slots a house may have (parents are int16; the relation tables of the questions and of the
#: answerer's memory grow as the square of the slots)
MAX_OBJECTS = 1024


@dataclasses.dataclass(frozen=True)
class HouseConfig:
    """Static house settings (they fix every array shape). Ranges are inclusive ``(min, max)`` pairs.

    Raises ``ValueError`` from the constructor when a value is out of range or when the rooms or the ``N``
    object slots cannot hold the worst case of furniture and floor items.
    """

    num_rows: int = 2
    num_cols: int = 2
    room_size: int = 7
    max_objects: int = 48
    max_questions: int = 16
    furniture_per_room: tuple[int, int] = (2, 4)
    items_per_receptacle: tuple[int, int] = (0, 3)
    floor_items_per_room: tuple[int, int] = (0, 2)
    nest_prob: float = 0.35

    def __post_init__(self):
        for name in ("num_rows", "num_cols", "room_size", "max_objects", "max_questions"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise ValueError(f"{name} must be an int, got {value!r}")
        if self.num_rows < 1 or self.num_cols < 1:
            raise ValueError(f"num_rows and num_cols must be >= 1, got {self.num_rows} x {self.num_cols}")
        if self.room_size < 5:
            raise ValueError(f"room_size must be >= 5 (a free core inside the furniture ring), got {self.room_size}")
        if self.max_questions < 1:
            raise ValueError(f"max_questions must be >= 1, got {self.max_questions}")
        furniture = _check_range("furniture_per_room", self.furniture_per_room)
        items = _check_range("items_per_receptacle", self.items_per_receptacle)
        floor = _check_range("floor_items_per_room", self.floor_items_per_room)
        object.__setattr__(self, "furniture_per_room", furniture)
        object.__setattr__(self, "items_per_receptacle", items)
        object.__setattr__(self, "floor_items_per_room", floor)
        if not 0.0 <= float(self.nest_prob) <= 1.0:
            raise ValueError(f"nest_prob must be in [0, 1], got {self.nest_prob!r}")
        if self.height > 127 or self.width > 127:
            raise ValueError(f"the house is {self.height} x {self.width}: at most 127 cells a side (int8 rooms)")
        if self.num_rooms > 127:
            raise ValueError(f"at most 127 rooms (int8 room indices), got {self.num_rooms}")
        cells = _static(self.room_size, self.num_rows, self.num_cols).min_allowed
        need = furniture[1] + floor[1]
        if need > cells:
            raise ValueError(
                f"a room of size {self.room_size} in a {self.num_rows} x {self.num_cols} house can hold at most "
                f"{cells} pieces of furniture and floor items in the worst case, but furniture_per_room and "
                f"floor_items_per_room allow {need}: use bigger rooms or smaller ranges"
            )
        if not self.num_rooms * need <= self.max_objects <= MAX_OBJECTS:
            raise ValueError(
                f"max_objects must be in [{self.num_rooms * need}, {MAX_OBJECTS}] (all furniture and floor items of "
                f"{self.num_rooms} rooms must fit; at most {MAX_OBJECTS} slots), got {self.max_objects}"
            )

    @property
    def height(self) -> int:
        return (self.room_size - 1) * self.num_rows + 1

    @property
    def width(self) -> int:
        return (self.room_size - 1) * self.num_cols + 1

    @property
    def num_rooms(self) -> int:
        return self.num_rows * self.num_cols

    @property
    def num_candidates(self) -> int:
        """The size ``C`` of the candidate table (see the module docstring): the most objects a house can draw."""
        f, i, g = self.furniture_per_room[1], self.items_per_receptacle[1], self.floor_items_per_room[1]
        return self.num_rooms * (f + g + 2 * f * i)

    @property
    def drops_nothing(self) -> bool:
        """Whether every object a house can draw has a slot (``max_objects >= num_candidates``)."""
        return self.max_objects >= self.num_candidates


# -- static tables (numpy) ---------------------------------------------------------------------------------------


def _pool(masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Returns ``(types int32[ROOM_TYPES, P], sizes int32[ROOM_TYPES])``: each room type's pool, padded with 0."""
    sizes = masks.sum(axis=1).astype(np.int32)
    if sizes.min() < 1:
        raise ValueError("every room type needs a non-empty pool")
    out = np.zeros((masks.shape[0], sizes.max()), np.int32)
    for r, mask in enumerate(masks):
        out[r, : sizes[r]] = np.flatnonzero(mask)
    return out, sizes


FURNITURE_POOL, FURNITURE_POOL_SIZE = _pool(K.ROOM_FURNITURE & K.IS_FURNITURE)
ITEM_POOL, ITEM_POOL_SIZE = _pool(K.ROOM_ITEMS & K.IS_PICKUP)
FLOOR_POOL, FLOOR_POOL_SIZE = _pool(K.ROOM_ITEMS & K.IS_PICKUP & K.ON_FLOOR)
NEST_POOL, NEST_POOL_SIZE = _pool(K.ROOM_ITEMS & K.IS_PICKUP & ~K.IS_SMALL_RECEPTACLE)
IS_RECEPTACLE = K.IS_FURNITURE & (K.IS_SURFACE | K.IS_CONTAINER)  # furniture that takes items
COLOR_COUNT = (K.TYPE_COLORS >= 0).sum(axis=1).astype(np.int32)
MATERIAL_COUNT = (K.TYPE_MATERIALS >= 0).sum(axis=1).astype(np.int32)


class _Static:
    """Static geometry of one room grid (numpy): the ring cells that can hold furniture and the corner pairs.

    Attributes: ``lay`` (``roomgrid.Layout``); ``ring`` int32[R, M] flat indices (``y * W + x``) of each room's
    interior cells next to a wall, corners excluded (``M = 4 * (room_size - 4)``); ``corner_pairs``
    int32[R, 4, 2] the positions in ``ring`` of the two cells beside each interior corner (the one on the
    top/bottom side first); ``room`` int8[H, W] the room of every interior cell, -1 elsewhere;
    ``min_allowed`` the fewest allowed cells a room can have (all its inner walls with doorways).
    """

    def __init__(self, room_size: int, num_rows: int, num_cols: int):
        lay = roomgrid.Layout(room_size, num_rows, num_cols)
        self.lay = lay
        n = room_size - 2  # interior side
        ring, pairs = [], []
        local = [(x, y) for y in range(n) for x in range(n) if (x in (0, n - 1)) != (y in (0, n - 1))]
        index = {cell: k for k, cell in enumerate(local)}
        corners = [(0, 0), (n - 1, 0), (n - 1, n - 1), (0, n - 1)]
        for cx, cy in corners:
            beside_x = (cx + (1 if cx == 0 else -1), cy)  # on the top/bottom side
            beside_y = (cx, cy + (1 if cy == 0 else -1))  # on the left/right side
            pairs.append((index[beside_x], index[beside_y]))
        room = -np.ones((lay.height, lay.width), np.int8)
        for r, (x0, y0) in enumerate(lay.room_top):
            ring.append([(y0 + 1 + y) * lay.width + (x0 + 1 + x) for x, y in local])
            room[y0 + 1 : y0 + 1 + n, x0 + 1 : x0 + 1 + n] = r
        self.ring = np.array(ring, np.int32).reshape(lay.num_rooms, len(local))
        self.corner_pairs = np.array([pairs] * lay.num_rooms, np.int32).reshape(lay.num_rooms, 4, 2)
        self.room = room
        kept_free = 2 if room_size == 5 else 4
        doors = (lay.room_wall >= 0).sum(axis=1)
        self.min_allowed = int(len(local) - kept_free - doors.max())


@functools.lru_cache(maxsize=32)
def _static(room_size: int, num_rows: int, num_cols: int) -> _Static:
    return _Static(room_size, num_rows, num_cols)


# -- random helpers ---------------------------------------------------------------------------------------------


def _uniform(words: jax.Array) -> jax.Array:
    """Returns ``float32`` in ``[0, 1)`` (24 bits) from ``uint32`` words."""
    return (words >> 8).astype(jnp.float32) * np.float32(2.0**-24)


def _between(words: jax.Array, lo, hi) -> jax.Array:
    """Returns ``int32`` uniform in ``[lo, hi]`` (inclusive)."""
    return jnp.asarray(lo, jnp.int32) + P.below(words, jnp.asarray(hi, jnp.int32) - lo + 1)


def _ranks(keys: jax.Array, allowed: jax.Array) -> jax.Array:
    """Returns ``int32[..., M]``: each entry's rank by ``keys`` ``uint32[..., M]`` among the ``allowed`` entries
    of its row (ties broken by position); a uniformly random order of the allowed entries."""
    m = keys.shape[-1]
    pos = np.arange(m)
    earlier = (keys[..., None, :] < keys[..., :, None]) | (
        (keys[..., None, :] == keys[..., :, None]) & (pos[None, :] < pos[:, None])
    )
    return jnp.sum(earlier & allowed[..., None, :], axis=-1).astype(jnp.int32)


def _pick_ranked(rank: jax.Array, allowed: jax.Array, k: jax.Array) -> jax.Array:
    """Returns ``int32[..., K]``: the position of the entry of rank ``k[j]`` (``int32[K]``) in each row."""
    hit = (rank[..., None, :] == k[:, None]) & allowed[..., None, :]
    return jnp.argmax(hit, axis=-1).astype(jnp.int32)


# -- generation -------------------------------------------------------------------------------------------------


def _doors(lay: roomgrid.Layout, bits: P.Bits) -> tuple[jax.Array, jax.Array]:
    """Returns ``(door_pos int32[E, 2], door_on bool[E])``: ``connect_all`` plus at most one extra doorway."""
    grid = roomgrid.init(lay, bits)
    grid = roomgrid.connect_all(lay, grid, bits)
    if lay.num_walls == 0:
        return grid.door_pos, grid.door_on
    coin, which = bits.take(2)
    free = ~grid.door_on
    wall = roomgrid.choose(which, free)
    extra = (P.below(coin, 2) == 1) & jnp.any(free)
    return grid.door_pos, grid.door_on.at[wall].set(grid.door_on[wall] | extra)


def _room_types(bits: P.Bits, num_rooms: int) -> jax.Array:
    """Returns ``int32[R]``: with ``R >= 4`` a random permutation puts every type in some room and the other rooms
    draw uniformly; with fewer rooms, distinct random types."""
    t = K.NUM_ROOM_TYPES
    if num_rooms >= t:
        rank = _ranks(bits.take(num_rooms), jnp.ones(num_rooms, bool))
        return jnp.where(rank < t, rank, P.below(bits.take(num_rooms), t))
    rank = _ranks(bits.take(t), jnp.ones(t, bool))
    return _pick_ranked(rank, jnp.ones(t, bool), jnp.arange(num_rooms))


def _draw(bits: P.Bits, pool: np.ndarray, size: np.ndarray, room_type: jax.Array, shape: tuple[int, ...]):
    """Returns ``int32[R, *shape]``: types drawn uniformly (with replacement) from each room's pool."""
    words = bits.take(int(np.prod(shape, dtype=np.int64)) * room_type.shape[0]).reshape(room_type.shape + shape)
    rt = room_type.reshape(room_type.shape + (1,) * len(shape))
    return jnp.asarray(pool)[rt, P.below(words, jnp.asarray(size)[rt])]


def _layout(config: HouseConfig, bits: P.Bits):
    """Returns ``(walls bool[H, W], room int8[H, W], doorway bool[H, W], allowed bool[R, M])``."""
    st = _static(config.room_size, config.num_rows, config.num_cols)
    lay = st.lay
    h, w = lay.height, lay.width
    door_pos, door_on = _doors(lay, bits)
    walls = jnp.asarray(lay.base_grid[..., GC.TYPE] == GC.WALL)
    room = jnp.asarray(st.room)
    doorway = jnp.zeros((h, w), bool)
    if lay.num_walls:
        flat = jnp.where(door_on, door_pos[:, 1] * w + door_pos[:, 0], h * w)
        doorway = doorway.reshape(-1).at[flat].set(True, mode="drop").reshape(h, w)
        right_room = jnp.asarray(lay.wall_rooms[:, 1], jnp.int8)
        room = room.reshape(-1).at[flat].set(right_room, mode="drop").reshape(h, w)
    walls = walls & ~doorway
    front = roomgrid.dilate(doorway) & ~walls & ~doorway  # the interior cells next to a doorway
    ring = jnp.asarray(st.ring)
    # of the two ring cells beside each interior corner keep one free
    pair = jnp.asarray(st.corner_pairs)  # [R, 4, 2]
    if config.room_size == 5:
        side = jnp.broadcast_to(P.below(bits.take(lay.num_rooms), 2)[:, None], pair.shape[:2])
    else:
        side = P.below(bits.take(lay.num_rooms * 4), 2).reshape(pair.shape[:2])
    kept = jnp.take_along_axis(pair, side[..., None], axis=-1)[..., 0]  # [R, 4]
    kept_free = jnp.any(kept[:, :, None] == np.arange(ring.shape[1]), axis=1)  # [R, M]
    allowed = ~front.reshape(-1)[ring] & ~kept_free
    return walls, room, doorway, allowed


def _attributes(bits: P.Bits, kind: jax.Array, valid: jax.Array):
    """Returns ``(colors int8[N, 2], materials int8[N, 3], dims float32[N, 3], mass float32[N])`` for types
    ``kind`` ``int32[N]``; invalid slots get -1 and 0."""
    n = kind.shape[0]

    def distinct(palette: np.ndarray, count: np.ndarray, most: int, width: int):
        options = jnp.asarray(palette)[kind]  # [N, P]
        allowed = options >= 0
        size = jnp.asarray(count)[kind]
        chosen = _between(bits.take(n), 1, jnp.minimum(size, most))
        rank = _ranks(bits.take(n * options.shape[1]).reshape(options.shape), allowed)
        at = _pick_ranked(rank, allowed, jnp.arange(width))  # [N, width]
        out = jnp.take_along_axis(options, at, axis=1)
        keep = (np.arange(width) < chosen[:, None]) & valid[:, None]
        return jnp.where(keep, out, -1).astype(jnp.int8)

    colors = distinct(K.TYPE_COLORS, COLOR_COUNT, 2, 2)
    materials = distinct(K.TYPE_MATERIALS, MATERIAL_COUNT, 3, 3)
    u = _uniform(bits.take(4 * n)).reshape(4, n)
    size = jnp.asarray(K.SIZE_RANGE)[kind]
    longest = (size[:, 0] + u[0] * (size[:, 1] - size[:, 0])) * (0.8 + 0.2 * u[1])
    dims = longest[:, None] * jnp.concatenate([jnp.ones((n, 1)), jnp.asarray(K.ASPECT)[kind]], axis=1)
    dims = -jnp.sort(-dims, axis=1)
    mass_range = jnp.asarray(K.MASS_RANGE)[kind]
    mass = (mass_range[:, 0] + u[2] * (mass_range[:, 1] - mass_range[:, 0])) * (0.5 + u[3])
    dims = jnp.where(valid[:, None], dims, 0.0).astype(jnp.float32)
    mass = jnp.where(valid, mass, 0.0).astype(jnp.float32)
    return colors, materials, dims, mass


def _build(config: HouseConfig, bits: P.Bits) -> S.House:
    """Returns the ``state.House`` drawn from the words of ``bits`` (the whole generator; see the module
    docstring for the procedure and the slot layout)."""
    st = _static(config.room_size, config.num_rows, config.num_cols)
    h, w = config.height, config.width
    r_n, n = config.num_rooms, config.max_objects
    (f_lo, f_n), (i_lo, i_n), (g_lo, g_n) = (
        config.furniture_per_room,
        config.items_per_receptacle,
        config.floor_items_per_room,
    )
    walls, room, doorway, allowed = _layout(config, bits)
    room_type = _room_types(bits, r_n)

    # furniture: distinct types of the room's pool while it lasts, then uniform draws
    pool_width = FURNITURE_POOL.shape[1]
    in_pool = np.arange(pool_width) < jnp.asarray(FURNITURE_POOL_SIZE)[room_type][:, None]  # [R, Pf]
    rank = _ranks(bits.take(r_n * pool_width).reshape(r_n, pool_width), in_pool)
    distinct = jnp.take_along_axis(
        jnp.asarray(FURNITURE_POOL)[room_type], _pick_ranked(rank, in_pool, jnp.arange(f_n)), 1
    )
    repeat = _draw(bits, FURNITURE_POOL, FURNITURE_POOL_SIZE, room_type, (f_n,))
    fits = np.arange(f_n) < jnp.asarray(FURNITURE_POOL_SIZE)[room_type][:, None]
    furn_type = jnp.where(fits, distinct, repeat)  # [R, F]
    furn_valid = np.arange(f_n) < _between(bits.take(r_n), f_lo, f_n)[:, None]

    # cells: a random order of each room's allowed ring cells; furniture f takes rank f, floor item g rank F + g
    ring = jnp.asarray(st.ring)
    cell_rank = _ranks(bits.take(ring.size).reshape(ring.shape), allowed)
    spot = jnp.take_along_axis(ring, _pick_ranked(cell_rank, allowed, jnp.arange(f_n + g_n)), 1)  # [R, F + G]
    furn_cell, floor_cell = spot[:, :f_n], spot[:, f_n:]

    floor_type = _draw(bits, FLOOR_POOL, FLOOR_POOL_SIZE, room_type, (g_n,))
    floor_valid = np.arange(g_n) < _between(bits.take(r_n), g_lo, g_n)[:, None]

    # items on / in the receptacles, then one nested item in some small receptacles
    takes = furn_valid & jnp.asarray(IS_RECEPTACLE)[furn_type]
    item_count = _between(bits.take(r_n * f_n).reshape(r_n, f_n), i_lo, i_n)
    item_valid = takes[..., None] & (np.arange(i_n) < item_count[..., None])  # [R, F, I]
    item_type = _draw(bits, ITEM_POOL, ITEM_POOL_SIZE, room_type, (f_n, i_n))
    item_link = jnp.where(jnp.asarray(K.IS_CONTAINER)[furn_type], S.IN, S.ON)[..., None]
    coin = _uniform(bits.take(r_n * f_n * i_n)).reshape(r_n, f_n, i_n) < np.float32(config.nest_prob)
    nest_valid = item_valid & jnp.asarray(K.IS_SMALL_RECEPTACLE)[item_type] & coin
    nest_type = _draw(bits, NEST_POOL, NEST_POOL_SIZE, room_type, (f_n, i_n))
    nest_link = jnp.where(jnp.asarray(K.IS_CONTAINER)[item_type], S.IN, S.ON)

    # the candidate table in priority order (module docstring); parents are candidate indices
    furn_index = np.arange(r_n * f_n).reshape(r_n, f_n)
    base_items = r_n * (f_n + g_n)
    item_index = base_items + np.arange(r_n * f_n * i_n).reshape(i_n, r_n, f_n).transpose(1, 2, 0)  # [R, F, I]
    item_parent = np.broadcast_to(furn_index[..., None], (r_n, f_n, i_n))

    def items_major(x):  # [R, F, I, ...] -> [I * R * F, ...] in item-index-major order
        return jnp.moveaxis(x, 2, 0).reshape((-1,) + x.shape[3:])

    def np_items_major(x):
        return np.moveaxis(x, 2, 0).reshape(-1)

    cand_valid = jnp.concatenate(
        [furn_valid.reshape(-1), floor_valid.reshape(-1), items_major(item_valid), items_major(nest_valid)]
    )
    cand_type = jnp.concatenate(
        [furn_type.reshape(-1), floor_type.reshape(-1), items_major(item_type), items_major(nest_type)]
    )
    item_cell = jnp.broadcast_to(furn_cell[..., None], (r_n, f_n, i_n))
    cand_cell = jnp.concatenate(
        [furn_cell.reshape(-1), floor_cell.reshape(-1), items_major(item_cell), items_major(item_cell)]
    )
    cand_link = jnp.concatenate(
        [
            jnp.full(r_n * (f_n + g_n), S.FLOOR, jnp.int32),
            items_major(jnp.broadcast_to(item_link, (r_n, f_n, i_n))),
            items_major(nest_link),
        ]
    )
    cand_parent = np.concatenate(
        [-np.ones(r_n * (f_n + g_n), np.int32), np_items_major(item_parent), np_items_major(item_index)]
    )
    c = cand_valid.shape[0]
    assert c == config.num_candidates == cand_parent.shape[0]

    # pack the valid candidates into the N slots, in order
    before = np.triu(np.ones((c, c), np.float32), k=1)  # before[a, b] = a < b
    slot_of = jnp.round(cand_valid.astype(jnp.float32) @ before).astype(jnp.int32)  # [C]
    keep = cand_valid & (slot_of < n)
    source = jnp.full(n, c, jnp.int32).at[jnp.where(keep, slot_of, n)].set(np.arange(c, dtype=np.int32), mode="drop")
    valid = source < c
    src = jnp.minimum(source, c - 1)
    kind = jnp.where(valid, cand_type[src], 0)
    flat_cell = jnp.where(valid, cand_cell[src], 0)
    parent_cand = jnp.asarray(cand_parent)[src]
    parent = jnp.where(valid & (parent_cand >= 0), slot_of[jnp.maximum(parent_cand, 0)], -1)
    link = jnp.where(valid, cand_link[src], S.FLOOR)
    colors, materials, dims, mass = _attributes(bits, kind, valid)

    # spawn on a free floor cell that is not a doorway
    blocked = jnp.zeros(h * w, bool).at[jnp.where(valid & (link == S.FLOOR), flat_cell, h * w)].set(True, mode="drop")
    free = ~walls & ~blocked.reshape(h, w) & ~doorway
    spawn_pos = P.choose_cell(bits.one(), free).astype(jnp.int32)
    spawn_dir = P.below(bits.one(), 4)

    q = config.max_questions
    return S.House(
        walls=walls,
        room=room.astype(jnp.int8),
        room_type=room_type.astype(jnp.int8),
        valid=valid,
        type=kind.astype(jnp.int16),
        colors=colors,
        materials=materials,
        dims=dims,
        mass=mass,
        cell=jnp.stack([flat_cell % w, flat_cell // w], axis=-1).astype(jnp.int16),
        parent=parent.astype(jnp.int16),
        link=link.astype(jnp.int8),
        order=jnp.arange(n, dtype=jnp.int32),
        spawn_pos=spawn_pos,
        spawn_dir=spawn_dir.astype(jnp.int32),
        questions=jnp.zeros((q, S.QUESTION_SLOTS), jnp.int16),
        answers=jnp.full(q, -1, jnp.int16),
        num_questions=jnp.int32(0),
    )


@functools.lru_cache(maxsize=32)
def num_words(config: HouseConfig) -> int:
    """Returns how many random ``uint32`` words ``generate`` draws for ``config``."""
    return P.count_words(lambda bits: _build(config, bits))


@functools.partial(jax.jit, static_argnames=("config",))
def generate(key: jax.Array, config: HouseConfig = HouseConfig()) -> S.House:
    """Returns one random ``state.House`` for ``config`` (static), with no questions (zeros, answers -1).

    Pure and jitted (``config`` static); vmap it over keys for a batch (``generate_batch``)."""
    if not isinstance(config, HouseConfig):
        raise TypeError(f"config must be a HouseConfig, got {type(config).__name__}")
    bits = P.Bits(jax.random.bits(key, (num_words(config),), jnp.uint32))
    return _build(config, bits)


@functools.partial(jax.jit, static_argnames=("config", "n"))
def generate_batch(key: jax.Array, config: HouseConfig, n: int) -> S.House:
    """Returns ``n`` houses (every field with a leading axis ``n``); house ``i`` is
    ``generate(jax.random.split(key, n)[i], config)``."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    return jax.vmap(lambda k: generate(k, config))(jax.random.split(key, n))


def occupied(house: S.House) -> jax.Array:
    """Returns ``bool[H, W]``: the cells holding a piece of furniture or a floor item (objects with ``link ==
    FLOOR``)."""
    h, w = house.walls.shape
    cell = house.cell.astype(jnp.int32)
    flat = jnp.where(house.valid & (house.link == S.FLOOR), cell[:, 1] * w + cell[:, 0], h * w)
    return jnp.zeros(h * w, bool).at[flat].set(True, mode="drop").reshape(h, w)


def free_floor(house: S.House) -> jax.Array:
    """Returns ``bool[H, W]``: the walkable cells (not a wall, no furniture, no floor item)."""
    return ~house.walls & ~occupied(house)


def reachable(house: S.House) -> jax.Array:
    """Returns ``bool[H, W]``: the free floor cells (``free_floor``) connected to the spawn cell through free
    floor (4-neighbour steps)."""
    free = free_floor(house)
    h, w = free.shape
    start = P.rect_mask(h, w, house.spawn_pos[0], house.spawn_pos[1], 1, 1)
    return roomgrid.flood_fill(free, start, steps=h * w - 1) & free


#: the house presets: ``default`` (2 x 2 rooms of side 7, 48 slots; a house that draws more drops its last items:
#: 1.05% of 4,000 generated houses, at most 55 drawn; the banks, the answerer and the learned runs use it) and ``3x3``
#: (3 x 3 rooms, closer to the paper's ProcTHOR houses; rooms of side 8, as a centre room with four doorways needs for
#: 6 pieces; 270 slots, a slot for every object a house can draw: ``drops_nothing``; 76 objects on average, at most
#: 104 of 1,000 houses)
PRESETS = {
    "default": HouseConfig(),
    "3x3": HouseConfig(num_rows=3, num_cols=3, room_size=8, max_objects=270),
}


def preset(name: str) -> HouseConfig:
    """Returns the ``HouseConfig`` of preset ``name`` (``PRESETS``); raises ``ValueError`` for another name."""
    if name not in PRESETS:
        raise ValueError(f"unknown EXCALIBUR house preset {name!r}; choose from {list(PRESETS)}")
    return PRESETS[name]
