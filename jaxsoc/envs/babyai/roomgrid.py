"""Jittable RoomGrid primitives with the distributions of minigrid 3.2.0's ``RoomGrid`` and ``RoomGridLevel``.

A level is a ``num_rows x num_cols`` grid of square rooms of side ``room_size`` that share their walls, so
the world is ``H = (room_size - 1) * num_rows + 1`` by ``W = (room_size - 1) * num_cols + 1`` cells. Rooms
are numbered row-major, ``r = j * num_cols + i`` (minigrid's ``room_grid[j][i]``). Every *inner wall* (a
wall shared by two neighbouring rooms) has one candidate door cell, drawn uniformly along the wall when the
level starts; ``add_door`` and ``connect_all`` put doors on those cells. The static geometry lives in a
``Layout`` (numpy, built once per ``(room_size, num_rows, num_cols)``), the per-episode part in a
``RoomGridState`` pytree.

minigrid places things by rejection sampling; an accepted sample is uniform over the candidates that pass
its predicate, so here each placement is one uniform draw over a mask (``placement.choose_index``). Loops
that minigrid runs until a condition holds have a static number of rounds: ``connect_all`` adds at most one
door per inner wall, and a flood fill takes at most one step per open cell. When minigrid would raise
``RecursionError`` or ``RejectSampling`` (a room too full for its objects, rooms that cannot be connected, a
failed level check), the primitive clears ``RoomGridState.ok``; the level generator then restarts the whole
level with fresh randomness, as ``RoomGridLevel._gen_grid`` does.

Randomness comes from one block of ``uint32`` words per level attempt (``Bits``), turned into integers with
``placement.below``.

Object identities: a door on inner wall ``e`` gets ``OBJ_ID = 1 + e``; the level generators give every
other object an id above ``num_walls``, so ids are unique and nonzero (at most 12 walls + 25 objects in the
paper levels, below ``instr.MAX_OBJECTS``).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsoc.envs.babyai import instr as I
from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld import placement as P
from jaxsoc.envs.gridworld.placement import Bits

# Object kinds ``add_distractors`` draws from (minigrid: ["key", "ball", "box"]) and the description types
# of ``instr`` (``DESC_TYPES[t]`` is the grid code of type index ``t`` in ``match_counts``).
OBJECT_TYPES = np.array([C.KEY, C.BALL, C.BOX], np.int32)
DESC_TYPES = np.array([C.DOOR, C.KEY, C.BALL, C.BOX], np.int32)
NUM_LOCS = 5  # LOC_NONE, LOC_LEFT, LOC_RIGHT, LOC_FRONT, LOC_BEHIND


def choose(word, mask: jax.Array) -> jax.Array:
    """Returns the ``int32`` index of a uniformly chosen True entry of the 1-D ``mask`` (0 if none), like
    ``placement.choose_index`` but with one small matrix product (for masks of a few entries)."""
    n = mask.shape[0]
    counts = mask.astype(jnp.int32)
    rank = P.below(word, jnp.maximum(jnp.sum(counts), 1))
    cumulative = counts @ jnp.asarray(np.triu(np.ones((n, n), np.int32)))  # cumulative[j] = sum(counts[:j+1])
    return jnp.minimum(jnp.sum(cumulative <= rank), n - 1).astype(jnp.int32)


class Layout:
    """Static geometry of a ``num_rows x num_cols`` room grid (numpy arrays, hashable by its three sizes).

    Attributes:
        room_size, num_rows, num_cols, height, width: the sizes (``height``/``width`` of the world).
        num_rooms: ``R = num_rows * num_cols``; ``num_walls``: ``E``, the number of inner walls.
        room_top: ``int32[R, 2]`` ``(x, y)`` of each room's top-left wall corner.
        room_wall: ``int32[R, 4]`` the inner wall on the room's right, bottom, left and top side (minigrid's
            door order), -1 on the outer wall.
        wall_rooms: ``int32[E, 2]`` the two rooms an inner wall separates (left/top room first).
        wall_vertical: ``bool[E]`` True for a wall between horizontal neighbours (the door's x is fixed).
        wall_start: ``int32[E, 2]`` the first candidate door cell ``(x, y)``; the door lies
            ``randint(0, room_size - 2)`` cells further along the wall.
        interior: ``int32[R, room_size - 2, room_size - 2]`` flat (``y * W + x``) indices of each room's
            interior cells, ``[row, column]`` inside the room.
        base_grid: ``uint8[H, W, NUM_CHANNELS]`` empty rooms with all their walls.
        default_agent_pos: ``int32[2]`` where ``RoomGrid._gen_grid`` puts the agent before ``place_agent``
            (the centre of the middle room); objects placed before the agent avoid its neighbourhood.
    """

    def __init__(self, room_size: int, num_rows: int, num_cols: int):
        if room_size < 3:  # minigrid's KeyCorridorS3R* rooms have side 3: one interior cell
            raise ValueError("room_size must be at least 3")
        self.room_size, self.num_rows, self.num_cols = room_size, num_rows, num_cols
        step = room_size - 1
        self.height, self.width = step * num_rows + 1, step * num_cols + 1
        self.num_rooms = num_rows * num_cols
        self.room_top = np.array([[i * step, j * step] for j in range(num_rows) for i in range(num_cols)], np.int32)
        room_wall = -np.ones((self.num_rooms, 4), np.int32)
        wall_rooms, wall_vertical, wall_start = [], [], []
        for j in range(num_rows):
            for i in range(num_cols):
                r = j * num_cols + i
                x0, y0 = i * step, j * step
                if i < num_cols - 1:  # right wall: door at (x0 + step, U[y0 + 1, y0 + step - 1])
                    e = len(wall_rooms)
                    wall_rooms.append((r, r + 1))
                    wall_vertical.append(True)
                    wall_start.append((x0 + step, y0 + 1))
                    room_wall[r, 0], room_wall[r + 1, 2] = e, e
                if j < num_rows - 1:  # bottom wall: door at (U[x0 + 1, x0 + step - 1], y0 + step)
                    e = len(wall_rooms)
                    wall_rooms.append((r, r + num_cols))
                    wall_vertical.append(False)
                    wall_start.append((x0 + 1, y0 + step))
                    room_wall[r, 1], room_wall[r + num_cols, 3] = e, e
        self.num_walls = len(wall_rooms)
        self.room_wall = room_wall
        self.wall_rooms = np.array(wall_rooms, np.int32).reshape(-1, 2)
        self.wall_vertical = np.array(wall_vertical, bool)
        self.wall_start = np.array(wall_start, np.int32).reshape(-1, 2)
        inner = np.arange(1, room_size - 1)
        self.interior = np.stack(
            [(y0 + inner)[:, None] * self.width + (x0 + inner)[None, :] for x0, y0 in self.room_top]
        ).astype(np.int32)
        grid = np.tile(C.EMPTY_CELL, (self.height, self.width, 1))
        grid[::step, :] = C.WALL_CELL
        grid[:, ::step] = C.WALL_CELL
        self.base_grid = grid
        self.default_agent_pos = np.array(
            [(num_cols // 2) * step + room_size // 2, (num_rows // 2) * step + room_size // 2], np.int32
        )

    def __hash__(self):
        return hash((self.room_size, self.num_rows, self.num_cols))

    def __eq__(self, other):
        return isinstance(other, Layout) and (self.room_size, self.num_rows, self.num_cols) == (
            other.room_size,
            other.num_rows,
            other.num_cols,
        )

    def room_of(self, pos: jax.Array) -> jax.Array:
        """Returns the ``int32`` room holding cell ``pos = (x, y)`` (minigrid's ``room_from_pos``; a cell on a
        shared wall belongs to the room right of / below it, clipped at the outer wall)."""
        step = self.room_size - 1
        i = jnp.minimum(pos[0] // step, self.num_cols - 1)
        j = jnp.minimum(pos[1] // step, self.num_rows - 1)
        return (j * self.num_cols + i).astype(jnp.int32)

    def room_rect(self, room: jax.Array) -> jax.Array:
        """Returns ``bool[H, W]``, True on room ``room``'s rectangle, walls included (minigrid's
        ``Room.pos_inside``)."""
        top = jnp.asarray(self.room_top)[room]
        return P.rect_mask(self.height, self.width, top[0], top[1], self.room_size, self.room_size)


@functools.cache
def layout(room_size: int, num_rows: int, num_cols: int) -> Layout:
    """Returns the (cached) ``Layout`` of a room grid."""
    return Layout(room_size, num_rows, num_cols)


@struct.dataclass
class RoomGridState:
    """A room grid being generated.

    Attributes:
        grid: ``uint8[H, W, NUM_CHANNELS]`` walls, doors and objects.
        agent_pos: ``int32[2]`` ``(x, y)``; ``agent_dir``: ``int32[]``. Before ``place_agent`` this is the
            default pose (centre of the middle room, facing east), which ``reject_next_to`` uses.
        door_pos: ``int32[E, 2]`` the door cell of each inner wall.
        door_on: ``bool[E]`` whether the wall has a door; ``door_color``: ``int32[E]``;
            ``door_locked``: ``bool[E]``.
        locked_room: ``int32[]`` the room flagged ``locked`` (the room ``add_door(..., locked=True)`` was
            called for), -1 for none. ``connect_all`` adds no door to it and ``place_agent`` can avoid it.
        ok: ``bool[]`` False once a step failed where minigrid would restart the level.
    """

    grid: jax.Array
    agent_pos: jax.Array
    agent_dir: jax.Array
    door_pos: jax.Array
    door_on: jax.Array
    door_color: jax.Array
    door_locked: jax.Array
    locked_room: jax.Array
    ok: jax.Array


def init(lay: Layout, bits: Bits) -> RoomGridState:
    """minigrid's ``RoomGrid._gen_grid``: empty rooms, one door position per inner wall (uniform along the
    wall), the agent at the default pose. Takes ``E`` words. Returns a ``RoomGridState`` without doors."""
    offsets = P.below(bits.take(lay.num_walls), lay.room_size - 2)
    along = jnp.where(jnp.asarray(lay.wall_vertical)[:, None], jnp.array([0, 1]), jnp.array([1, 0]))
    door_pos = jnp.asarray(lay.wall_start) + along * offsets[:, None]
    return RoomGridState(
        grid=jnp.asarray(lay.base_grid),
        agent_pos=jnp.asarray(lay.default_agent_pos),
        agent_dir=jnp.int32(0),
        door_pos=door_pos.astype(jnp.int32).reshape(lay.num_walls, 2),
        door_on=jnp.zeros(lay.num_walls, bool),
        door_color=jnp.zeros(lay.num_walls, jnp.int32),
        door_locked=jnp.zeros(lay.num_walls, bool),
        locked_room=jnp.int32(-1),
        ok=jnp.bool_(True),
    )


def _flat(lay: Layout, pos: jax.Array) -> jax.Array:
    return pos[..., 1] * lay.width + pos[..., 0]


def write_doors(lay: Layout, state: RoomGridState) -> RoomGridState:
    """Returns ``state`` with every door of ``door_on`` written into the grid (closed, or locked), with
    ``OBJ_ID = 1 + wall index``."""
    if lay.num_walls == 0:
        return state
    cells = jnp.stack(
        [
            jnp.full(lay.num_walls, C.DOOR),
            state.door_color,
            jnp.where(state.door_locked, C.LOCKED, C.CLOSED),
            jnp.zeros(lay.num_walls, jnp.int32),
            jnp.arange(1, lay.num_walls + 1),
        ],
        axis=-1,
    ).astype(jnp.uint8)
    index = jnp.where(state.door_on, _flat(lay, state.door_pos), lay.height * lay.width)
    flat = state.grid.reshape(-1, C.NUM_CHANNELS).at[index].set(cells, mode="drop")
    return state.replace(grid=flat.reshape(state.grid.shape))


def add_door(lay: Layout, state: RoomGridState, wall, color, locked, room=None) -> RoomGridState:
    """minigrid's ``add_door``: a closed (or locked) door of ``color`` on inner wall ``wall``. ``room`` is the
    room the call is made for; when ``locked`` it becomes ``locked_room`` (minigrid sets ``room.locked``).
    Returns the state with the door in the grid."""
    state = state.replace(
        door_on=state.door_on.at[wall].set(True),
        door_color=state.door_color.at[wall].set(jnp.asarray(color, jnp.int32)),
        door_locked=state.door_locked.at[wall].set(jnp.asarray(locked, bool)),
    )
    if room is not None:
        state = state.replace(locked_room=jnp.where(locked, jnp.asarray(room, jnp.int32), state.locked_room))
    return write_doors(lay, state)


def room_components(lay: Layout, door_on: jax.Array) -> jax.Array:
    """Returns ``int32[R]``, a component label per room (the smallest room index of its component) when
    rooms are joined by the doors of ``door_on`` (locked doors included, as ``connect_all`` counts them)."""
    if lay.num_walls == 0:
        return jnp.arange(lay.num_rooms, dtype=jnp.int32)
    one_hot = np.eye(lay.num_rooms, dtype=np.float32)
    a, b = jnp.asarray(one_hot[lay.wall_rooms[:, 0]]), jnp.asarray(one_hot[lay.wall_rooms[:, 1]])
    links = (a * door_on[:, None]).T @ b  # [R, R]
    reach = (jnp.eye(lay.num_rooms) + links + links.T) > 0
    for _ in range(int(np.ceil(np.log2(max(lay.num_rooms - 1, 1))))):  # paths of up to R - 1 walls
        reach = (reach.astype(jnp.float32) @ reach.astype(jnp.float32)) > 0
    return jnp.argmax(reach, axis=1).astype(jnp.int32)


def connect_all(lay: Layout, state: RoomGridState, bits: Bits, colors=None) -> RoomGridState:
    """minigrid's ``connect_all``: adds closed unlocked doors until every room is reachable from every
    other (through any door, locked ones included), never on a wall of ``locked_room``.

    minigrid draws a random (room, side) and skips it unless it is an inner wall without a door and
    away from the locked room, so each added door is uniform over the eligible walls; here each of at most
    ``E`` rounds draws one eligible wall directly, so the loop has a static bound. ``colors`` is an
    optional ``bool[6]`` mask of allowed door colours (default all), drawn uniformly. Takes ``2 E`` words.
    Clears ``ok`` when the rooms cannot be connected (minigrid's ``RecursionError``).
    """
    if lay.num_walls == 0:
        return state
    colors = jnp.ones(C.NUM_COLORS, bool) if colors is None else colors
    words = bits.take(2 * lay.num_walls).reshape(lay.num_walls, 2)
    a, b = jnp.asarray(lay.wall_rooms[:, 0]), jnp.asarray(lay.wall_rooms[:, 1])
    off_locked = (a != state.locked_room) & (b != state.locked_room)

    def body(k, carry):
        door_on, door_color, labels = carry
        connected = jnp.all(labels == labels[0])
        eligible = ~door_on & off_locked
        wall = choose(words[k, 0], eligible)
        add = ~connected & jnp.any(eligible)
        color = choose(words[k, 1], colors)
        la, lb = labels[a[wall]], labels[b[wall]]
        labels = jnp.where(add & (labels == lb), la, labels)
        door_on = door_on.at[wall].set(door_on[wall] | add)
        door_color = door_color.at[wall].set(jnp.where(add, color, door_color[wall]))
        return door_on, door_color, labels

    labels = room_components(lay, state.door_on)
    door_on, door_color, labels = jax.lax.fori_loop(0, lay.num_walls, body, (state.door_on, state.door_color, labels))
    state = state.replace(door_on=door_on, door_color=door_color, ok=state.ok & jnp.all(labels == labels[0]))
    return write_doors(lay, state)


def random_wall(lay: Layout, state: RoomGridState, word, room) -> jax.Array:
    """Returns a uniform inner wall of ``room`` without a door (``add_door`` with ``door_idx=None``),
    ``int32[]``."""
    walls = jnp.asarray(lay.room_wall)[room]
    free = (walls >= 0) & ~state.door_on[jnp.maximum(walls, 0)]
    return walls[choose(word, free)]


def _away_from_agent(lay: Layout, state: RoomGridState, cells: jax.Array) -> jax.Array:
    """``reject_next_to``: True where flat cells ``cells`` are at Manhattan distance >= 2 from the agent."""
    xs, ys = cells % lay.width, cells // lay.width
    return jnp.abs(xs - state.agent_pos[0]) + jnp.abs(ys - state.agent_pos[1]) >= 2


def object_cell(obj_type, color, obj_id) -> jax.Array:
    """Returns the ``uint8[NUM_CHANNELS]`` cell of a key, ball or box."""
    zero = jnp.zeros_like(jnp.asarray(obj_type))
    return jnp.stack([obj_type, color, zero, zero, obj_id], axis=-1).astype(jnp.uint8)


def add_object(
    lay: Layout, state: RoomGridState, word, room, obj_type, color, obj_id
) -> tuple[RoomGridState, jax.Array]:
    """minigrid's ``add_object``/``place_in_room``: the object on a uniform empty cell of ``room`` at
    Manhattan distance >= 2 from the current agent position. Returns ``(state, pos)`` with ``pos``
    ``int32[2]``; clears ``ok`` if the room has no such cell."""
    cells = jnp.asarray(lay.interior)[room]
    free = (state.grid.reshape(-1, C.NUM_CHANNELS)[cells, C.TYPE] == C.EMPTY) & _away_from_agent(lay, state, cells)
    flat = cells.reshape(-1)[P.choose_index(word, free)]
    pos = jnp.stack([flat % lay.width, flat // lay.width]).astype(jnp.int32)
    grid = P.put(state.grid, pos, object_cell(obj_type, color, obj_id))
    return state.replace(grid=grid, ok=state.ok & jnp.any(free)), pos


def random_kinds(bits: Bits, n: int, all_unique: bool) -> tuple[jax.Array, jax.Array]:
    """The (type, colour) of ``n`` distractors: uniform over key/ball/box x 6 colours, independently, or
    with ``all_unique`` a uniformly random ordered selection of ``n`` distinct pairs (minigrid redraws
    duplicates). Takes ``n`` words, or 18 with ``all_unique``. Returns ``(types, colors)``, ``int32[n]``."""
    num_kinds = len(OBJECT_TYPES) * C.NUM_COLORS
    if all_unique:
        if n > num_kinds:
            raise ValueError("at most 18 distinct distractors")
        keys = bits.take(num_kinds)
        idx = jnp.arange(num_kinds)
        earlier = (keys[None, :] < keys[:, None]) | ((keys[None, :] == keys[:, None]) & (idx[None, :] < idx[:, None]))
        rank = jnp.sum(earlier, axis=1)  # a uniformly random permutation
        kinds = jnp.argmax(rank[None, :] == jnp.arange(n)[:, None], axis=1)
    else:
        kinds = P.below(bits.take(n), num_kinds)
    return jnp.asarray(OBJECT_TYPES)[kinds // C.NUM_COLORS], (kinds % C.NUM_COLORS).astype(jnp.int32)


def add_objects(
    lay: Layout,
    state: RoomGridState,
    bits: Bits,
    rooms: jax.Array,
    types: jax.Array,
    colors: jax.Array,
    ids: jax.Array,
    active: jax.Array | None = None,
) -> tuple[RoomGridState, jax.Array]:
    """Places ``n`` objects at once, object ``t`` in room ``rooms[t]``, each (in order) on a uniform empty
    cell of its room at distance >= 2 from the current agent position: the distribution of ``n`` calls to
    ``add_object``. One random key per interior cell ranks each room's free cells; the ``k``-th object
    sent to a room takes the cell of rank ``k``, which makes the cells of a room a uniformly random ordered
    selection. Objects with ``active`` False are skipped. Takes ``R (room_size - 2)**2`` words.

    Returns ``(state, pos)``, ``pos`` ``int32[n, 2]`` (meaningless for inactive objects); clears ``ok``
    when a room receives more objects than it has free cells (minigrid's ``RecursionError``).
    """
    n = rooms.shape[0]
    active = jnp.ones(n, bool) if active is None else active
    interior = jnp.asarray(lay.interior).reshape(lay.num_rooms, -1)  # [R, S]
    size = interior.shape[1]
    flat_grid = state.grid.reshape(-1, C.NUM_CHANNELS)
    free = (flat_grid[interior, C.TYPE] == C.EMPTY) & _away_from_agent(lay, state, interior)
    keys = bits.take(lay.num_rooms * size).reshape(lay.num_rooms, size)
    s = jnp.arange(size)
    earlier = (keys[:, None, :] < keys[:, :, None]) | (
        (keys[:, None, :] == keys[:, :, None]) & (s[None, :] < s[:, None])
    )
    rank = jnp.sum(earlier & free[:, None, :], axis=-1)  # [R, S] rank among the room's free cells
    t = jnp.arange(n)
    ordinal = jnp.sum((rooms[None, :] == rooms[:, None]) & (t[None, :] < t[:, None]) & active[None, :], axis=1)
    slot = jnp.argmax((rank[rooms] == ordinal[:, None]) & free[rooms], axis=1)
    cell = interior[rooms, slot]
    fits = ordinal < jnp.sum(free, axis=1)[rooms]
    index = jnp.where(active, cell, lay.height * lay.width)
    flat_grid = flat_grid.at[index].set(object_cell(types, colors, ids), mode="drop")
    pos = jnp.stack([cell % lay.width, cell // lay.width], axis=-1).astype(jnp.int32)
    return state.replace(grid=flat_grid.reshape(state.grid.shape), ok=state.ok & jnp.all(fits | ~active)), pos


def add_distractors(
    lay: Layout,
    state: RoomGridState,
    bits: Bits,
    n: int,
    first_id: int,
    room=None,
    all_unique: bool = False,
) -> tuple[RoomGridState, jax.Array, jax.Array, jax.Array]:
    """minigrid's ``add_distractors(i, j, n, all_unique)``: ``n`` random keys/balls/boxes, each in ``room``
    or, when ``room`` is None, in a uniformly random room, with ids ``first_id .. first_id + n - 1``.
    Returns ``(state, types, colors, pos)`` (``int32[n]``, ``int32[n]``, ``int32[n, 2]``)."""
    types, colors = random_kinds(bits, n, all_unique)
    rooms = P.below(bits.take(n), lay.num_rooms) if room is None else jnp.full(n, room, jnp.int32)
    ids = jnp.arange(first_id, first_id + n)
    state, pos = add_objects(lay, state, bits, rooms, types, colors, ids)
    return state, types, colors, pos


def place_agent(lay: Layout, state: RoomGridState, bits: Bits, allowed_rooms: jax.Array | None = None) -> RoomGridState:
    """RoomGrid's ``place_agent``: a uniform room among ``allowed_rooms`` (``bool[R]``, default all; minigrid
    redraws the room while it is the locked one), then a uniform (cell, direction) among the room's empty
    cells whose front cell is empty or a wall. Takes 2 words. Clears ``ok`` if no such pose exists."""
    allowed_rooms = jnp.ones(lay.num_rooms, bool) if allowed_rooms is None else allowed_rooms
    room = choose(bits.one(), allowed_rooms)
    cells = jnp.asarray(lay.interior)[room]  # [s, s]
    flat_grid = state.grid.reshape(-1, C.NUM_CHANNELS)
    front = cells[..., None] + jnp.asarray(C.DIR_TO_VEC @ np.array([1, lay.width]))  # [s, s, 4]
    front_kind = flat_grid[front, C.TYPE]
    facing = (front_kind == C.EMPTY) | (front_kind == C.WALL)
    poses = (flat_grid[cells, C.TYPE] == C.EMPTY)[..., None] & facing
    index = P.choose_index(bits.one(), poses)
    flat = cells.reshape(-1)[index // 4]
    pos = jnp.stack([flat % lay.width, flat // lay.width]).astype(jnp.int32)
    return state.replace(agent_pos=pos, agent_dir=(index % 4).astype(jnp.int32), ok=state.ok & jnp.any(poses))


def add_locked_room(
    lay: Layout, state: RoomGridState, bits: Bits, key_id: int, room_first: bool
) -> tuple[RoomGridState, jax.Array]:
    """A locked door of a random colour on a wall of a random room (which becomes ``locked_room``) and a key
    of that colour in a uniformly random *other* room (distance >= 2 from the current agent position).

    ``room_first=False`` is LevelGen's ``add_locked_room``: (room, side) is uniform over the pairs with a
    neighbour, so rooms with more inner walls are likelier. ``room_first=True`` is ``Unlock`` and
    ``GoToImpUnlock``: a uniform room, then ``add_door``'s uniform free side. The key is never put in the
    locked room (the original babyai semantics; minigrid 3.2.0's ``Unlock``/``GoToImpUnlock`` compare room
    indices with ``is`` and can lock the key in). Takes 5 words. Returns ``(state, door_color)``.
    """
    words = bits.take(5)
    if room_first:
        room = P.below(words[0], lay.num_rooms)
        wall = random_wall(lay, state, words[1], room)
    else:
        pair = P.choose_index(words[0], jnp.asarray(lay.room_wall >= 0))
        room, side = pair // 4, pair % 4
        wall = jnp.asarray(lay.room_wall)[room, side]
    color = P.below(words[2], C.NUM_COLORS)
    state = add_door(lay, state, wall, color, True, room=room)
    key_room = choose(words[3], jnp.arange(lay.num_rooms) != room)
    state, _ = add_object(lay, state, words[4], key_room, C.KEY, color, key_id)
    return state, color


def dilate(mask: jax.Array) -> jax.Array:
    padded = jnp.pad(mask, 1)
    return mask | padded[:-2, 1:-1] | padded[2:, 1:-1] | padded[1:-1, :-2] | padded[1:-1, 2:]


def _pack_rows(mask: jax.Array) -> jax.Array:
    """Returns ``uint32[..., H]``: each row of ``bool[..., H, W]`` (``W <= 32``) as a word, bit ``x`` = column ``x``."""
    weights = jnp.left_shift(jnp.uint32(1), jnp.arange(mask.shape[-1], dtype=jnp.uint32))
    return jnp.sum(jnp.where(mask, weights, jnp.uint32(0)), axis=-1, dtype=jnp.uint32)


def _unpack_rows(rows: jax.Array, width: int) -> jax.Array:
    """The inverse of ``_pack_rows``: ``bool[..., H, W]``."""
    return (jnp.right_shift(rows[..., None], jnp.arange(width, dtype=jnp.uint32)) & 1) != 0


def _spread_rows(rows: jax.Array) -> jax.Array:
    """``dilate`` on packed rows (``uint32[H]``): every set cell and its 4 neighbours (bits at and above
    column ``W`` are garbage; mask them)."""
    zero = jnp.zeros_like(rows[..., :1])
    below = jnp.concatenate([rows[..., 1:], zero], axis=-1)  # out[y] = rows[y + 1]
    above = jnp.concatenate([zero, rows[..., :-1]], axis=-1)  # out[y] = rows[y - 1]
    return rows | (rows << 1) | (rows >> 1) | below | above


def flood_fill(passable: jax.Array, start: jax.Array, steps: int | None = None) -> jax.Array:
    """Returns ``bool[H, W]``: the cells reached from ``start`` (``bool[H, W]``) by 4-neighbour steps that
    only leave passable cells; impassable cells next to a reached passable cell are reached but not left
    (the fixed point of ``reach |= dilate(reach & passable)`` from ``start``).

    That is ``start`` plus the dilation of the passable cells connected (through passable cells) to a
    passable start cell. The connected set grows by one step per round for a static number of rounds,
    ``steps``: any number at least the largest distance from the start to a cell of it, which is below its
    number of cells; the default ``H * W - 1`` is always enough. Rows are packed into ``uint32`` words
    (``W <= 32``), so a round is a few operations on ``H`` words.
    """
    height, width = passable.shape
    steps = height * width - 1 if steps is None else steps
    seeds = start & passable
    if width <= 32:
        open_rows = _pack_rows(passable)
        # not unrolled: XLA fuses unrolled steps into one stencil that recomputes the earlier ones (6x slower)
        connected = jax.lax.fori_loop(0, steps, lambda _, rows: _spread_rows(rows) & open_rows, _pack_rows(seeds))
        return start | _unpack_rows(_spread_rows(connected), width)
    connected = jax.lax.fori_loop(0, steps, lambda _, cells: dilate(cells) & passable, seeds)
    return start | dilate(connected)


def open_cells(height: int, width: int, num_walls: int) -> int:
    """Returns the most cells that are not walls in an ``H x W`` room grid with ``num_walls`` inner walls: the
    rooms' interiors plus one door per inner wall, the most over the layouts of those sizes (at most
    ``(H - 2) * (W - 2)``)."""
    most = 0
    for step in range(3, max(height, width)):  # step = room_size - 1
        if (height - 1) % step or (width - 1) % step:
            continue
        rows, cols = (height - 1) // step, (width - 1) // step
        if rows * (cols - 1) + cols * (rows - 1) == num_walls:
            most = max(most, rows * cols * (step - 1) ** 2 + num_walls)
    return most or height * width


def objects_reachable(state: RoomGridState) -> jax.Array:
    """minigrid's ``check_objs_reachable``: True (``bool[]``) when every non-wall object (doors included) is
    reached by a flood fill from the agent through empty cells and doors (even locked ones); objects block
    the way. Its passable cells, empty ones and doors, lie off the room walls but for one door per inner wall
    (only the primitives here write the grid), so ``open_cells - 1`` fill steps reach every one of them."""
    kind = state.grid[..., C.TYPE]
    height, width = kind.shape
    passable = (kind == C.EMPTY) | (kind == C.DOOR)
    start = P.rect_mask(height, width, state.agent_pos[0], state.agent_pos[1], 1, 1)
    reach = flood_fill(passable, start, steps=open_cells(height, width, state.door_pos.shape[0]) - 1)
    return ~jnp.any((kind != C.EMPTY) & (kind != C.WALL) & ~reach)


def location_masks(lay: Layout, agent_pos: jax.Array, agent_dir: jax.Array) -> jax.Array:
    """Returns ``bool[5, H, W]``: for ``LOC_NONE`` every cell, for ``LOC_LEFT/RIGHT/FRONT/BEHIND`` the cells
    of the agent's room (walls included) in that half-plane relative to the agent's pose
    (minigrid's ``ObjDesc.find_matching_objs``)."""
    ys = jnp.arange(lay.height)[:, None]
    xs = jnp.arange(lay.width)[None, :]
    vx, vy = xs - agent_pos[0], ys - agent_pos[1]
    d1 = jnp.asarray(C.DIR_TO_VEC)[agent_dir]
    forward = vx * d1[0] + vy * d1[1]
    right = -vx * d1[1] + vy * d1[0]  # v . (-d1.y, d1.x)
    room = lay.room_rect(lay.room_of(agent_pos))
    every = jnp.ones((lay.height, lay.width), bool)
    return jnp.stack([every, room & (right < 0), room & (right > 0), room & (forward > 0), room & (forward < 0)])


def match_mask(
    lay: Layout, grid: jax.Array, agent_pos: jax.Array, agent_dir: jax.Array, desc_type, desc_color, desc_loc
) -> jax.Array:
    """Returns ``bool[H, W]``, the cells whose object a description matches (``instr`` codes; walls never
    match) for the given agent pose."""
    kind, color = grid[..., C.TYPE].astype(jnp.int32), grid[..., C.COLOR].astype(jnp.int32)
    is_object = (kind == C.DOOR) | (kind == C.KEY) | (kind == C.BALL) | (kind == C.BOX)
    type_ok = (desc_type == I.ANY_TYPE) | (kind == desc_type)
    color_ok = (desc_color == I.ANY_COLOR) | (color == desc_color)
    return is_object & type_ok & color_ok & location_masks(lay, agent_pos, agent_dir)[desc_loc]


def match_counts(
    lay: Layout, grid: jax.Array, agent_pos: jax.Array, agent_dir: jax.Array, region: jax.Array | None = None
) -> jax.Array:
    """Returns ``int32[7, 4, 5]``: for every description (colour code or ``ANY_COLOR``; type index into
    ``DESC_TYPES``; location code) how many objects it matches, counting only cells of ``region``
    (``bool[H, W]``, default everywhere)."""
    kind, color = grid[..., C.TYPE], grid[..., C.COLOR]
    types = (kind[..., None] == jnp.asarray(DESC_TYPES)).astype(jnp.int32)  # [H, W, 4]
    colors = jnp.concatenate(
        [(color[..., None] == jnp.arange(C.NUM_COLORS)), jnp.ones(color.shape + (1,), bool)], axis=-1
    ).astype(jnp.int32)  # [H, W, 7]
    locs = location_masks(lay, agent_pos, agent_dir)
    if region is not None:
        locs = locs & region
    locs = jnp.moveaxis(locs, 0, -1).astype(jnp.int32)  # [H, W, 5]
    return jnp.einsum("hwc,hwt,hwl->ctl", colors, types, locs)
