"""minigrid 3.2.0's bonus ``put next`` levels: PutNextLocalS5N3/S6N4 (``envs/babyai/putnext.py``
``PutNextLocal``), the two-room ``PutNext`` family PutNextS4N1 ... PutNextS7N4 and its ``Carrying`` variants
(``putnext.py`` ``PutNext``), and MoveTwoAcrossS5N2/S8N9 (``envs/babyai/other.py`` ``MoveTwoAcross``).

The two-room levels (one row of two rooms, the wall between them removed): the agent in the left room, then
``objs_per_room`` distractors in each room. minigrid's ``add_distractors`` (``all_unique=True``) redraws a
(type, colour) already used by *any* object placed so far, so every object of these levels has its own kind
and every description matches exactly one object; the left and right objects are at least two cells apart
(the removed wall lies between them), so ``validate_instrs`` never rejects these levels (``max_tries=1``,
checked by the tests).

``PutNextS*N*Carrying`` (``start_carrying=True``): minigrid generates the level, resets the verifier with the
object to move still on the grid, then takes it off the grid into the agent's hands; the attempt here returns
that object as the carried cell (``levels.common``). Differences from minigrid 3.2.0 there: its first
observation (the one ``reset`` returns) is computed before the object is moved, so it still shows the object
on its cell and an empty-handed agent; jaxsoc's reset observation shows the level as it is (the object
carried). From the first step on both agree. ``verifier.match_sets`` counts the carried object as a match of
the location-free descriptions it fits, as minigrid's verifier, reset while it still lay on the grid, does.

Rejection rates (``LevelGenerator.sample`` with 64 attempts over 4096 resets per id, keys
``split(key(7), 4096)``; ``common.MAX_TRIES``'s rule: p_up, the rate plus 6 standard errors rounded up to
0.01, and the smallest K with p_up**K < 1e-12):

    level               attempts  rejected  p       p_up   K   most
    PutNextLocalS5N3        6852      2756  0.4022  0.44  34    11
    PutNextLocalS6N4        5556      1460  0.2628  0.30  23     7
    PutNextS*, MoveTwoAcrossS*: never rejected (argued above), K = 1
"""

from __future__ import annotations

import jax.numpy as jnp

from jaxsoc.envs.babyai import instr as I
from jaxsoc.envs.babyai import roomgrid as RG
from jaxsoc.envs.babyai.levels.common import LevelGenerator, leaf_instruction, level_params
from jaxsoc.envs.babyai.levels.putnext import make_put_next_local, ordered_pair
from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld import placement as P

NUM_KINDS = len(RG.OBJECT_TYPES) * C.NUM_COLORS  # 18 (type, colour) pairs of keys, balls and boxes


def kind_index(obj_type, color) -> jnp.ndarray:
    """Returns the index ``type_index * 6 + color`` of a key/ball/box kind in ``[0, 18)`` (``int32``)."""
    type_index = jnp.argmax(jnp.asarray(RG.OBJECT_TYPES) == jnp.asarray(obj_type)[..., None], axis=-1)
    return (type_index * C.NUM_COLORS + jnp.asarray(color)).astype(jnp.int32)


def kinds_mask(types, colors) -> jnp.ndarray:
    """Returns ``bool[18]``, True at the kinds of the given objects (``int32[n]`` types and colours)."""
    return jnp.zeros(NUM_KINDS, bool).at[kind_index(jnp.atleast_1d(types), jnp.atleast_1d(colors))].set(True)


def unique_kinds(bits: RG.Bits, n: int, taken: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    """The kinds of ``add_distractors(..., all_unique=True)``: a uniformly random ordered selection of ``n``
    distinct (type, colour) pairs among those not in ``taken`` (``bool[18]``, the kinds of the objects already
    placed; minigrid redraws a kind that is used). Takes 18 words. Returns ``(types, colors)``, ``int32[n]``
    (meaningless when fewer than ``n`` kinds are free, which no level here allows)."""
    keys = bits.take(NUM_KINDS)
    idx = jnp.arange(NUM_KINDS)
    before = (keys[None, :] < keys[:, None]) | ((keys[None, :] == keys[:, None]) & (idx[None, :] < idx[:, None]))
    earlier = (taken[None, :] < taken[:, None]) | ((taken[None, :] == taken[:, None]) & before)
    rank = jnp.sum(earlier, axis=1)  # free kinds first, in a uniformly random order
    kinds = jnp.argmax(rank[None, :] == jnp.arange(n)[:, None], axis=1)
    return jnp.asarray(RG.OBJECT_TYPES)[kinds // C.NUM_COLORS], (kinds % C.NUM_COLORS).astype(jnp.int32)


def remove_wall(lay: RG.Layout, state: RG.RoomGridState, room: int, side: int) -> RG.RoomGridState:
    """minigrid's ``remove_wall(i, j, side)`` for a right (0) or bottom (1) wall: the wall cells between the
    room and its neighbour, corners excluded, become empty. Returns the state."""
    x0, y0 = (int(v) for v in lay.room_top[room])
    inner = jnp.arange(1, lay.room_size - 1)
    edge = lay.room_size - 1
    xs, ys = (
        (jnp.full_like(inner, x0 + edge), y0 + inner) if side == 0 else (x0 + inner, jnp.full_like(inner, y0 + edge))
    )
    return state.replace(grid=state.grid.at[ys, xs].set(jnp.asarray(C.EMPTY_CELL)))


def two_rooms(bits: RG.Bits, lay: RG.Layout, objs_per_room: int):
    """``PutNext``/``MoveTwoAcross.gen_mission`` up to the instruction: the agent in the left room,
    ``objs_per_room`` distractors (all kinds distinct) in the left then the right room, the wall between
    them removed. Returns ``(state, types, colors, pos, ids)``: ``int32[2, n]`` (``[2, n, 2]`` for ``pos``),
    row 0 the left room's objects in placement order, row 1 the right room's."""
    n = objs_per_room
    state = RG.place_agent(lay, RG.init(lay, bits), bits, jnp.arange(lay.num_rooms) == 0)
    first = lay.num_walls + 1
    taken = jnp.zeros(NUM_KINDS, bool)
    out = []
    for room in (0, 1):
        types, colors = unique_kinds(bits, n, taken)
        ids = jnp.arange(first + room * n, first + (room + 1) * n)
        state, pos = RG.add_objects(lay, state, bits, jnp.full(n, room, jnp.int32), types, colors, ids)
        taken = taken | kinds_mask(types, colors)
        out.append((types, colors, pos, ids))
    state = remove_wall(lay, state, 0, 0)
    types, colors, pos, ids = (jnp.stack(parts) for parts in zip(*out))
    return state, types, colors, pos, ids


def put_next_valid(lay: RG.Layout, state: RG.RoomGridState, types, colors) -> jnp.ndarray:
    """``validate_instrs`` of a ``put next`` of descriptions ``(types[0], colors[0])`` (move) and
    ``(types[1], colors[1])`` (fixed): False when their object sets meet or any object of the first is already
    next to one of the second (``bool[]``)."""
    pose = (state.grid, state.agent_pos, state.agent_dir)
    move = RG.match_mask(lay, *pose, types[0], colors[0], I.LOC_NONE)
    fixed = RG.match_mask(lay, *pose, types[1], colors[1], I.LOC_NONE)
    return ~jnp.any(move & RG.dilate(fixed))


def make_put_next(objs_per_room: int, start_carrying: bool = False):
    """Returns the attempt of minigrid's two-room ``PutNext(room_size, objs_per_room, start_carrying)``: a
    uniform object of each room, a fair coin choosing which of the two is moved; "put the {a} next to the
    {b}". With ``start_carrying`` the moved object leaves the grid for the agent's hands (a 4-tuple)."""

    def attempt(bits, lay):
        state, types, colors, pos, ids = two_rooms(bits, lay, objs_per_room)
        words = bits.take(3)
        picks = jnp.stack([P.below(words[0], objs_per_room), P.below(words[1], objs_per_room)])
        flip = P.below(words[2], 2) == 1
        side = jnp.where(flip, jnp.array([1, 0]), jnp.array([0, 1]))  # room of the moved, then the fixed object
        chosen = (side, picks[side])
        t, c, p, i = types[chosen], colors[chosen], pos[chosen], ids[chosen]
        instruction = leaf_instruction(I.ACT_PUTNEXT, [t[0], t[1]], [c[0], c[1]])
        accepted = put_next_valid(lay, state, t, c)
        if not start_carrying:
            return state, instruction, accepted
        carrying = RG.object_cell(t[0], c[0], i[0])
        state = state.replace(grid=P.put(state.grid, p[0], jnp.asarray(C.EMPTY_CELL)))
        return state, instruction, accepted, carrying

    return attempt


def make_move_two_across(objs_per_room: int):
    """Returns the attempt of minigrid's ``MoveTwoAcross(room_size, objs_per_room)``: ordered pairs
    ``(l0, l1)`` of left-room and ``(r0, r1)`` of right-room objects; "put the {l0} next to the {r0}, then
    put the {r1} next to the {l1}"."""

    def attempt(bits, lay):
        state, types, colors, _, _ = two_rooms(bits, lay, objs_per_room)
        l0, l1 = ordered_pair(bits, objs_per_room)
        r0, r1 = ordered_pair(bits, objs_per_room)
        rooms, picks = jnp.array([0, 1, 1, 0]), jnp.stack([l0, r0, r1, l1])
        t, c = types[rooms, picks], colors[rooms, picks]  # a, b, c, d
        action = jnp.array([I.ACT_PUTNEXT, I.ACT_NONE, I.ACT_PUTNEXT, I.ACT_NONE], jnp.int32)
        leaf_types = jnp.full((I.MAX_LEAVES, 2), I.ANY_TYPE, jnp.int32).at[0].set(t[:2]).at[2].set(t[2:])
        leaf_colors = jnp.full((I.MAX_LEAVES, 2), I.ANY_COLOR, jnp.int32).at[0].set(c[:2]).at[2].set(c[2:])
        locs = jnp.full((I.MAX_LEAVES, 2), I.LOC_NONE, jnp.int32)
        instruction = I.Instruction(action, leaf_types, leaf_colors, locs, jnp.int32(I.SEQ_BEFORE))
        accepted = put_next_valid(lay, state, t[:2], c[:2]) & put_next_valid(lay, state, t[2:], c[2:])
        return state, instruction, accepted

    return attempt


# (room_size, objs_per_room) of the two-room ids
_PUT_NEXT = {"S4N1": (4, 1), "S5N2": (5, 2), "S5N1": (5, 1), "S6N3": (6, 3), "S7N4": (7, 4)}
_CARRYING = ("S5N2", "S6N3", "S7N4")
_MOVE_TWO_ACROSS = {"S5N2": (5, 2), "S8N9": (8, 9)}


def _fixed(room_size: int, num_cols: int, limit: int):
    return level_params(room_size, 1, num_cols).replace(max_steps=limit)


LEVELS: dict[str, tuple[LevelGenerator, I.BabyAIParams]] = {
    "BabyAI-PutNextLocalS5N3-v0": (
        LevelGenerator("PutNextLocalS5N3", make_put_next_local(3), max_tries=34),
        level_params(5, 1, 1, navs=2),
    ),
    "BabyAI-PutNextLocalS6N4-v0": (
        LevelGenerator("PutNextLocalS6N4", make_put_next_local(4), max_tries=23),
        level_params(6, 1, 1, navs=2),
    ),
}
# classes that pass their own max_steps: PutNext 8 * room_size**2, MoveTwoAcross 16 * room_size**2
FIXED_MAX_STEPS: dict[str, int] = {}
for _name, (_size, _n) in _PUT_NEXT.items():
    for _carrying in (False, True) if _name in _CARRYING else (False,):
        _id = f"PutNext{_name}{'Carrying' if _carrying else ''}"
        FIXED_MAX_STEPS[f"BabyAI-{_id}-v0"] = 8 * _size**2
        _generator = LevelGenerator(_id, make_put_next(_n, _carrying), max_tries=1)
        LEVELS[f"BabyAI-{_id}-v0"] = (_generator, _fixed(_size, 2, 8 * _size**2))
for _name, (_size, _n) in _MOVE_TWO_ACROSS.items():
    FIXED_MAX_STEPS[f"BabyAI-MoveTwoAcross{_name}-v0"] = 16 * _size**2
    _generator = LevelGenerator(f"MoveTwoAcross{_name}", make_move_two_across(_n), max_tries=1)
    LEVELS[f"BabyAI-MoveTwoAcross{_name}-v0"] = (_generator, _fixed(_size, 2, 16 * _size**2))
