"""minigrid 3.2.0's bonus "open" and "pick up" levels (``envs/babyai/open.py`` and ``pickup.py``).

* OpenRedDoor: two rooms of side 5; "open the red door", the one door between them.
* OpenDoor, OpenDoorDebug, OpenDoorColor, OpenDoorLoc: 3x3 rooms of side 8, four doors of distinct colours
  around the centre room (no other door) and the agent in it; the door on the right side is described by its
  colour ("open the red door") or, for ``loc``, any door by a location word ("open the door on your left",
  "a door" when several doors lie on that side of the agent's start pose).
* OpenTwoDoors, OpenRedBlueDoors, OpenRedBlueDoorsDebug: rooms of side 6, a door on the left and one on the
  right of the centre room; "open the {left} door, then open the {right} door" (red and blue for RedBlue).
* OpenDoorsOrderN2/N4 (and Debug): rooms of side 6, 2 or 4 doors of distinct colours on distinct sides of the
  centre room; "open X", "open X, then open Y" or "open X after you open Y" (uniform), X and Y two of them.
* PickupDist, PickupDistDebug: one room of side 7, 5 distinct objects (not next to the room's centre), then the
  agent; pick one up, described by its type, its colour or both ("pick up a grey object": a description
  without type also matches minigrid's grey walls, so its article is always "a").
* PickupAbove: rooms of side 6, one object in the top-middle room, a door from the centre room up to it, the
  agent in the centre room, ``connect_all``; "pick up the {color} {type}".

The ``*Debug`` levels make their leaves strict (``Instruction.strict``): OpenDoorDebug and PickupDistDebug
their one leaf, OpenRedBlueDoorsDebug only the first door, OpenDoorsOrder*Debug every leaf (so their "then"
and "after you" missions always fail on the step the first door opens, as in minigrid). The OpenTwoDoors and
OpenDoorsOrder levels have a fixed limit of ``20 * 6**2`` steps, PickupAbove ``8 * 6**2`` (``FIXED_MAX_STEPS``);
the others use the instruction's. None of these levels rejects a sample (no reachability or instruction check;
their rooms always have room for the objects and the agent), so each reset is one attempt. Object ids are
``num_walls + 1, ...`` in placement order (see ``roomgrid``).
"""

from __future__ import annotations

import jax.numpy as jnp

from jaxsoc.envs.babyai import instr as I
from jaxsoc.envs.babyai import roomgrid as RG
from jaxsoc.envs.babyai.levels.common import LevelGenerator, leaf_instruction, level_params
from jaxsoc.envs.babyai.levels.goto import pick
from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld import placement as P

RIGHT, DOWN, LEFT, UP = range(4)  # room sides, minigrid's door order


def ordered_subset(bits: RG.Bits, n: int, m: int) -> jnp.ndarray:
    """Returns ``int32[n]``: a uniformly random ordered selection of ``n`` distinct values of ``range(m)``
    (minigrid's ``_rand_subset``), the first ``n`` of a random permutation. Takes ``m`` words."""
    keys = bits.take(m)
    idx = jnp.arange(m)
    earlier = (keys[None, :] < keys[:, None]) | ((keys[None, :] == keys[:, None]) & (idx[None, :] < idx[:, None]))
    rank = jnp.sum(earlier, axis=1)  # rank[i]: the position of value i in the permutation
    return jnp.argmax(rank[None, :] == jnp.arange(n)[:, None], axis=1).astype(jnp.int32)


def center_room(lay: RG.Layout) -> int:
    """Returns the index of the middle room (minigrid's room ``(1, 1)`` of a 3x3 grid)."""
    return (lay.num_rows // 2) * lay.num_cols + lay.num_cols // 2


def only(lay: RG.Layout, room: int) -> jnp.ndarray:
    """Returns ``bool[R]``, True for ``room`` only (``place_agent(i, j)``)."""
    return jnp.arange(lay.num_rooms) == room


def add_unlocked_doors(lay: RG.Layout, state: RG.RoomGridState, walls, colors) -> RG.RoomGridState:
    """``add_door(..., locked=False)`` for each of the inner walls ``walls`` (``int32[n]``, distinct) with
    ``colors`` (``int32[n]``). Returns the state with the doors in the grid."""
    walls = jnp.asarray(walls)
    state = state.replace(
        door_on=state.door_on.at[walls].set(True),
        door_color=state.door_color.at[walls].set(jnp.asarray(colors, jnp.int32)),
        door_locked=state.door_locked.at[walls].set(False),
    )
    return RG.write_doors(lay, state)


def door_sequence(first_color, second_color, seq, strict) -> I.Instruction:
    """Returns "open the {first} door" alone (``seq`` ``SEQ_NONE``) or joined to "open the {second} door" by
    ``seq`` (leaves 0 and 2). ``strict``: ``bool[2]`` per door, or None (no strict leaf)."""
    second = seq != I.SEQ_NONE
    action = jnp.array([I.ACT_OPEN, I.ACT_NONE, I.ACT_NONE, I.ACT_NONE], jnp.int32)
    action = action.at[2].set(jnp.where(second, I.ACT_OPEN, I.ACT_NONE))
    desc_type = jnp.full((I.MAX_LEAVES, 2), I.ANY_TYPE, jnp.int32).at[0, 0].set(C.DOOR)
    desc_type = desc_type.at[2, 0].set(jnp.where(second, C.DOOR, I.ANY_TYPE))
    desc_color = jnp.full((I.MAX_LEAVES, 2), I.ANY_COLOR, jnp.int32).at[0, 0].set(first_color)
    desc_color = desc_color.at[2, 0].set(jnp.where(second, second_color, I.ANY_COLOR))
    desc_loc = jnp.full((I.MAX_LEAVES, 2), I.LOC_NONE, jnp.int32)
    flags = None
    if strict is not None:
        flags = jnp.zeros(I.MAX_LEAVES, bool).at[0].set(strict[0]).at[2].set(second & strict[1])
    return I.Instruction(action, desc_type, desc_color, desc_loc, jnp.asarray(seq, jnp.int32), flags)


def strict_leaf(instruction: I.Instruction) -> I.Instruction:
    """Returns ``instruction`` with its first leaf strict (the ``*Debug`` levels' one-leaf instructions)."""
    return instruction.replace(strict=jnp.arange(I.MAX_LEAVES) == 0)


def open_red_door(bits, lay):
    """OpenRedDoor: a red door on the wall between the two rooms, the agent in the left room;
    "open the red door"."""
    state = RG.init(lay, bits)
    state = add_unlocked_doors(lay, state, [lay.room_wall[0, RIGHT]], [C.RED])
    state = RG.place_agent(lay, state, bits, only(lay, 0))
    return state, leaf_instruction(I.ACT_OPEN, [C.DOOR], [C.RED]), jnp.bool_(True)


def open_door_attempt(select_by: str | None, debug: bool):
    """Returns the OpenDoor attempt: doors of 4 distinct colours on the right, bottom, left and top of the
    centre room, the agent in it; open the right door (``select_by="color"``), or a door on a uniform side of
    the agent (``"loc"``), or either with probability 1/2 (``None``). ``debug``: the leaf is strict."""

    def attempt(bits, lay):
        room = center_room(lay)
        colors = ordered_subset(bits, 4, C.NUM_COLORS)
        state = add_unlocked_doors(lay, RG.init(lay, bits), lay.room_wall[room], colors)
        by_loc = P.below(bits.one(), 2) == 1 if select_by is None else jnp.bool_(select_by == "loc")
        loc = I.LOC_LEFT + P.below(bits.one(), 4)  # left, right, front, behind
        state = RG.place_agent(lay, state, bits, only(lay, room))
        color = jnp.where(by_loc, I.ANY_COLOR, colors[RIGHT])
        instruction = leaf_instruction(I.ACT_OPEN, [C.DOOR], [color], [jnp.where(by_loc, loc, I.LOC_NONE)])
        return state, strict_leaf(instruction) if debug else instruction, jnp.bool_(True)

    return attempt


def open_two_doors_attempt(first_color: int | None, second_color: int | None, strict: bool):
    """Returns the OpenTwoDoors attempt: a door on the left and one on the right of the centre room (two
    distinct random colours unless given), the agent in it; "open the {left} door, then open the {right}
    door". ``strict``: the first leaf is strict (OpenRedBlueDoorsDebug)."""

    def attempt(bits, lay):
        room = center_room(lay)
        colors = ordered_subset(bits, 2, C.NUM_COLORS)
        first = colors[0] if first_color is None else jnp.int32(first_color)
        second = colors[1] if second_color is None else jnp.int32(second_color)
        walls = lay.room_wall[room, [LEFT, RIGHT]]
        state = add_unlocked_doors(lay, RG.init(lay, bits), walls, jnp.stack([first, second]))
        state = RG.place_agent(lay, state, bits, only(lay, room))
        flags = jnp.array([True, False]) if strict else None
        return state, door_sequence(first, second, I.SEQ_BEFORE, flags), jnp.bool_(True)

    return attempt


def open_doors_order_attempt(num_doors: int, debug: bool):
    """Returns the OpenDoorsOrder attempt: ``num_doors`` doors of distinct colours on distinct uniform sides of
    the centre room, the agent in it; with probability 1/3 each "open X", "open X, then open Y" or "open X after
    you open Y" for an ordered pair (X, Y) of the doors. ``debug``: every leaf is strict.

    minigrid draws the pair with ``_rand_subset(doors, 2)``; the doors' (colour, side) pairs are exchangeable
    (a uniform ordered selection of colours and one of sides), so the first two doors are such a pair."""

    def attempt(bits, lay):
        room = center_room(lay)
        colors = ordered_subset(bits, num_doors, C.NUM_COLORS)
        sides = ordered_subset(bits, num_doors, 4)
        walls = jnp.asarray(lay.room_wall[room])[sides]
        state = add_unlocked_doors(lay, RG.init(lay, bits), walls, colors)
        state = RG.place_agent(lay, state, bits, only(lay, room))
        seq = P.below(bits.one(), 3)  # SEQ_NONE, SEQ_BEFORE, SEQ_AFTER
        flags = jnp.array([True, True]) if debug else None
        return state, door_sequence(colors[0], colors[1], seq, flags), jnp.bool_(True)

    return attempt


def pickup_dist_attempt(debug: bool):
    """Returns the PickupDist attempt: 5 distinct random objects in the room (away from its centre, the
    agent's default position), then the agent; pick up one of them described by its type, its colour or both
    (uniform). ``debug``: the leaf is strict."""

    def attempt(bits, lay):
        state = RG.init(lay, bits)
        state, types, colors, _ = RG.add_distractors(lay, state, bits, 5, lay.num_walls + 1, room=0, all_unique=True)
        state = RG.place_agent(lay, state, bits)
        kind, color = pick(bits.one(), types, colors)
        select_by = P.below(bits.one(), 3)  # 0: type, 1: colour, 2: both
        desc_type = jnp.where(select_by == 1, I.ANY_TYPE, kind)
        desc_color = jnp.where(select_by == 0, I.ANY_COLOR, color)
        instruction = leaf_instruction(I.ACT_PICKUP, [desc_type], [desc_color])
        return state, strict_leaf(instruction) if debug else instruction, jnp.bool_(True)

    return attempt


def pickup_above(bits, lay):
    """PickupAbove: a random object in the top-middle room, a door of a random colour from the centre room up
    to it, the agent in the centre room, then ``connect_all``; "pick up the {color} {type}"."""
    room = center_room(lay)
    state = RG.init(lay, bits)
    types, colors = RG.random_kinds(bits, 1, all_unique=False)
    state, _ = RG.add_object(lay, state, bits.one(), room - lay.num_cols, types[0], colors[0], lay.num_walls + 1)
    state = add_unlocked_doors(lay, state, [lay.room_wall[room, UP]], [P.below(bits.one(), C.NUM_COLORS)])
    state = RG.place_agent(lay, state, bits, only(lay, room))
    state = RG.connect_all(lay, state, bits)
    return state, leaf_instruction(I.ACT_PICKUP, [types[0]], [colors[0]]), jnp.bool_(True)


# Rejection rates: none of these attempts can reject (``accepted`` is always True and ``RoomGridState.ok``
# cannot clear: the rooms hold at most 5 objects besides the agent, and ``connect_all`` has no locked room to
# avoid). Measured with ``LevelGenerator.sample`` (max_tries 4) over 4,000 resets per level (keys
# ``split(key(2025), 4000)``): every reset took 1 attempt, none was rejected, so K = 1 everywhere.
#
#   level                    attempts  rejected  K
#   OpenRedDoor                  4000         0  1
#   OpenDoor (all four ids)      4000         0  1
#   OpenTwoDoors (all three)     4000         0  1
#   OpenDoorsOrderN2/N4 (+Debug) 4000         0  1
#   PickupDist (+Debug)          4000         0  1
#   PickupAbove                  4000         0  1
_RED, _BLUE = C.RED, C.BLUE
# id -> (name, attempt, room_size, num_rows, num_cols, navigations in params.max_steps, fixed max_steps or None)
_SPECS = {
    "BabyAI-OpenRedDoor-v0": ("OpenRedDoor", open_red_door, 5, 1, 2, 1, None),
    "BabyAI-OpenDoor-v0": ("OpenDoor", open_door_attempt(None, False), 8, 3, 3, 1, None),
    "BabyAI-OpenDoorDebug-v0": ("OpenDoorDebug", open_door_attempt(None, True), 8, 3, 3, 1, None),
    "BabyAI-OpenDoorColor-v0": ("OpenDoorColor", open_door_attempt("color", False), 8, 3, 3, 1, None),
    "BabyAI-OpenDoorLoc-v0": ("OpenDoorLoc", open_door_attempt("loc", False), 8, 3, 3, 1, None),
    "BabyAI-OpenTwoDoors-v0": ("OpenTwoDoors", open_two_doors_attempt(None, None, False), 6, 3, 3, 2, 720),
    "BabyAI-OpenRedBlueDoors-v0": ("OpenRedBlueDoors", open_two_doors_attempt(_RED, _BLUE, False), 6, 3, 3, 2, 720),
    "BabyAI-OpenRedBlueDoorsDebug-v0": (
        "OpenRedBlueDoorsDebug",
        open_two_doors_attempt(_RED, _BLUE, True),
        6,
        3,
        3,
        2,
        720,
    ),
    "BabyAI-OpenDoorsOrderN2-v0": ("OpenDoorsOrderN2", open_doors_order_attempt(2, False), 6, 3, 3, 1, 720),
    "BabyAI-OpenDoorsOrderN4-v0": ("OpenDoorsOrderN4", open_doors_order_attempt(4, False), 6, 3, 3, 1, 720),
    "BabyAI-OpenDoorsOrderN2Debug-v0": ("OpenDoorsOrderN2Debug", open_doors_order_attempt(2, True), 6, 3, 3, 1, 720),
    "BabyAI-OpenDoorsOrderN4Debug-v0": ("OpenDoorsOrderN4Debug", open_doors_order_attempt(4, True), 6, 3, 3, 1, 720),
    "BabyAI-PickupDist-v0": ("PickupDist", pickup_dist_attempt(False), 7, 1, 1, 1, None),
    "BabyAI-PickupDistDebug-v0": ("PickupDistDebug", pickup_dist_attempt(True), 7, 1, 1, 1, None),
    "BabyAI-PickupAbove-v0": ("PickupAbove", pickup_above, 6, 3, 3, 1, 8 * 6**2),
}

LEVELS: dict[str, tuple[LevelGenerator, I.BabyAIParams]] = {
    level_id: (LevelGenerator(name, attempt, max_tries=1), level_params(size, rows, cols, navs))
    for level_id, (name, attempt, size, rows, cols, navs, _) in _SPECS.items()
}
# minigrid's OpenTwoDoors and OpenDoorsOrder pass max_steps = 20 * room_size**2, PickupAbove 8 * room_size**2
FIXED_MAX_STEPS: dict[str, int] = {level_id: spec[-1] for level_id, spec in _SPECS.items() if spec[-1] is not None}
# which ids make some leaf strict (minigrid's debug / strict options)
STRICT_IDS = tuple(level_id for level_id in _SPECS if level_id.endswith("Debug-v0"))

__all__ = ["FIXED_MAX_STEPS", "LEVELS", "STRICT_IDS", "ordered_subset"]
