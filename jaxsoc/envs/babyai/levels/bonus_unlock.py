"""minigrid 3.2.0's bonus unlock levels (``envs/babyai/unlock.py``: UnlockLocal, UnlockLocalDist, KeyInBox,
UnlockPickup, UnlockPickupDist, BlockedUnlockPickup, UnlockToUnlock) and its bonus LevelGen levels
(``envs/babyai/synth.py``: SynthS5R2, MiniBossLevel, BossLevelNoUnlock).

None of the unlock levels checks reachability or validates its instruction beyond minigrid's generic checks
(which never reject them), so an attempt fails only where minigrid's placement would (a full room), which
cannot happen in their layouts: ``max_tries=1`` (checked by the tests). Notes on minigrid 3.2.0, followed
exactly here:

* ``UnlockPickup.__init__`` tests ``if max is None`` (the builtin) instead of ``max_steps``, so its
  ``max_steps`` stays unset and the episode limit is the instruction's, ``room_size**2 * 2 = 72``, not the
  intended ``8 * room_size**2``; ``BlockedUnlockPickup`` (``16 * 36``) and ``UnlockToUnlock`` (``30 * 36``)
  do fix their limits (``FIXED_MAX_STEPS``).
* ``add_distractors`` with ``all_unique=True`` (UnlockLocalDist, UnlockPickupDist) also avoids the kinds of
  the objects placed before (the key, the box), not only of the new distractors.
* BlockedUnlockPickup's blocking ball is written straight into the grid, so later objects avoid its cell but
  no ``reject_next_to`` applies to it.

Rejection rates (``LevelGenerator.sample`` with 64 attempts over 4096 resets per id, keys
``split(key(7), 4096)``; ``common.MAX_TRIES``'s rule):

    level               attempts  rejected  p       p_up   K   most
    SynthS5R2               5660      1564  0.2763  0.32  25     6
    MiniBossLevel           5030       934  0.1857  0.22  19     5
    BossLevelNoUnlock       4425       329  0.0744  0.10  12     4
    the unlock levels: never rejected, K = 1
"""

from __future__ import annotations

import jax.numpy as jnp

from jaxsoc.envs.babyai import instr as I
from jaxsoc.envs.babyai import roomgrid as RG
from jaxsoc.envs.babyai.levels.bonus_putnext import kinds_mask, unique_kinds
from jaxsoc.envs.babyai.levels.common import LevelGenerator, leaf_instruction, level_params
from jaxsoc.envs.babyai.levels.levelgen import CONFIGS, LevelGenConfig, make_attempt
from jaxsoc.envs.babyai.levels.putnext import ordered_pair
from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld import placement as P

CENTRE = 4  # room (1, 1) of the 3x3 grid


def _locked_centre_door(bits: RG.Bits, lay: RG.Layout):
    """``add_door(1, 1, locked=True)``: a locked door of a random colour on a uniform side of the centre
    room. Takes 2 words. Returns ``(state, color)``."""
    state = RG.init(lay, bits)
    words = bits.take(2)
    wall = RG.random_wall(lay, state, words[0], CENTRE)
    color = P.below(words[1], C.NUM_COLORS)
    return RG.add_door(lay, state, wall, color, True), color


def _in_room(lay: RG.Layout, room: int) -> jnp.ndarray:
    return jnp.arange(lay.num_rooms) == room


def make_unlock_local(distractors: bool):
    """Returns the attempt of ``UnlockLocal(distractors)``: 3x3 rooms, a locked door on a side of the centre
    room, its key (and with ``distractors`` three distractors of other kinds) in the centre room, the agent
    there too; "open the door"."""

    def attempt(bits, lay):
        state, color = _locked_centre_door(bits, lay)
        first = lay.num_walls + 1
        state, _ = RG.add_object(lay, state, bits.one(), CENTRE, C.KEY, color, first)
        if distractors:
            types, colors = unique_kinds(bits, 3, kinds_mask(jnp.int32(C.KEY), color))
            rooms = jnp.full(3, CENTRE, jnp.int32)
            state, _ = RG.add_objects(lay, state, bits, rooms, types, colors, jnp.arange(first + 1, first + 4))
        state = RG.place_agent(lay, state, bits, _in_room(lay, CENTRE))
        return state, leaf_instruction(I.ACT_OPEN, [C.DOOR], [I.ANY_COLOR]), jnp.bool_(True)

    return attempt


def key_in_box(bits, lay):
    """KeyInBox: 3x3 rooms, a locked door on a side of the centre room, a box of a random colour holding its
    key in the centre room, the agent there too; "open the door"."""
    state, color = _locked_centre_door(bits, lay)
    box_color = P.below(bits.one(), C.NUM_COLORS)
    state, pos = RG.add_object(lay, state, bits.one(), CENTRE, C.BOX, box_color, lay.num_walls + 1)
    contents = ((C.KEY << 3) | color).astype(jnp.uint8)  # constants.pack_contents
    state = state.replace(grid=state.grid.at[pos[1], pos[0], C.CONTENTS].set(contents))
    state = RG.place_agent(lay, state, bits, _in_room(lay, CENTRE))
    return state, leaf_instruction(I.ACT_OPEN, [C.DOOR], [I.ANY_COLOR]), jnp.bool_(True)


def _box_behind_locked_door(bits: RG.Bits, lay: RG.Layout):
    """The start of ``UnlockPickup``/``BlockedUnlockPickup``: a box of a random colour in the right room, a
    locked door of a random colour between the rooms. Returns ``(state, box_color, door_color)``."""
    state = RG.init(lay, bits)
    box_color = P.below(bits.one(), C.NUM_COLORS)
    state, _ = RG.add_object(lay, state, bits.one(), 1, C.BOX, box_color, lay.num_walls + 1)
    door_color = P.below(bits.one(), C.NUM_COLORS)
    state = RG.add_door(lay, state, int(lay.room_wall[0, 0]), door_color, True)
    return state, box_color, door_color


def make_unlock_pickup(distractors: bool):
    """Returns the attempt of ``UnlockPickup(distractors)``: two rooms of 6, a box in the right one behind a
    locked door, its key in the left one (with ``distractors`` four distractors of other kinds in random
    rooms), the agent in the left room; "pick up the {color} box"."""

    def attempt(bits, lay):
        state, box_color, door_color = _box_behind_locked_door(bits, lay)
        first = lay.num_walls + 2
        state, _ = RG.add_object(lay, state, bits.one(), 0, C.KEY, door_color, first)
        if distractors:
            taken = kinds_mask(jnp.array([C.BOX, C.KEY]), jnp.stack([box_color, door_color]))
            types, colors = unique_kinds(bits, 4, taken)
            rooms = P.below(bits.take(4), lay.num_rooms)
            state, _ = RG.add_objects(lay, state, bits, rooms, types, colors, jnp.arange(first + 1, first + 5))
        state = RG.place_agent(lay, state, bits, _in_room(lay, 0))
        return state, leaf_instruction(I.ACT_PICKUP, [C.BOX], [box_color]), jnp.bool_(True)

    return attempt


def blocked_unlock_pickup(bits, lay):
    """BlockedUnlockPickup: as UnlockPickup, with a ball of a random colour on the cell left of the locked
    door (blocking it) before the key is placed; "pick up the box"."""
    state, _, door_color = _box_behind_locked_door(bits, lay)
    ball_color = P.below(bits.one(), C.NUM_COLORS)
    ball = RG.object_cell(jnp.int32(C.BALL), ball_color, jnp.int32(lay.num_walls + 2))
    state = state.replace(grid=P.put(state.grid, state.door_pos[0] - jnp.array([1, 0]), ball))
    state, _ = RG.add_object(lay, state, bits.one(), 0, C.KEY, door_color, lay.num_walls + 3)
    state = RG.place_agent(lay, state, bits, _in_room(lay, 0))
    return state, leaf_instruction(I.ACT_PICKUP, [C.BOX], [I.ANY_COLOR]), jnp.bool_(True)


def unlock_to_unlock(bits, lay):
    """UnlockToUnlock: three rooms of 6 in a row, locked doors of two distinct colours A (left wall of the
    middle room) and B (its right wall); key A in the right room, key B in the middle one, a ball of a random
    colour in the left one, the agent in the middle room; "pick up the ball"."""
    state = RG.init(lay, bits)
    first = lay.num_walls + 1
    color_a, color_b = ordered_pair(bits, C.NUM_COLORS)
    state = RG.add_door(lay, state, int(lay.room_wall[0, 0]), color_a, True)
    state, _ = RG.add_object(lay, state, bits.one(), 2, C.KEY, color_a, first)
    state = RG.add_door(lay, state, int(lay.room_wall[1, 0]), color_b, True)
    state, _ = RG.add_object(lay, state, bits.one(), 1, C.KEY, color_b, first + 1)
    ball_color = P.below(bits.one(), C.NUM_COLORS)
    state, _ = RG.add_object(lay, state, bits.one(), 0, C.BALL, ball_color, first + 2)
    state = RG.place_agent(lay, state, bits, _in_room(lay, 1))
    return state, leaf_instruction(I.ACT_PICKUP, [C.BALL], [I.ANY_COLOR]), jnp.bool_(True)


# synth.py's bonus LevelGen levels: Synth on 2x3 rooms of 5; MiniBossLevel; BossLevel without locked rooms
_LEVELGEN = {
    "SynthS5R2": (CONFIGS["Synth"], (5, 2, 3), 25),
    "MiniBossLevel": (LevelGenConfig(num_dists=7, locked_room_prob=0.25), (5, 2, 2), 19),
    "BossLevelNoUnlock": (LevelGenConfig(locked_room_prob=0.0, implicit_unlock=False), (8, 3, 3), 12),
}

_UNLOCK = {
    "UnlockLocal": (make_unlock_local(False), (8, 3, 3)),
    "UnlockLocalDist": (make_unlock_local(True), (8, 3, 3)),
    "KeyInBox": (key_in_box, (8, 3, 3)),
    "UnlockPickup": (make_unlock_pickup(False), (6, 1, 2)),
    "UnlockPickupDist": (make_unlock_pickup(True), (6, 1, 2)),
    "BlockedUnlockPickup": (blocked_unlock_pickup, (6, 1, 2)),
    "UnlockToUnlock": (unlock_to_unlock, (6, 1, 3)),
}

# classes that pass their own max_steps (UnlockPickup means to, but its test is broken: see the docstring)
FIXED_MAX_STEPS: dict[str, int] = {
    "BabyAI-BlockedUnlockPickup-v0": 16 * 6**2,
    "BabyAI-UnlockToUnlock-v0": 30 * 6**2,
}

LEVELS: dict[str, tuple[LevelGenerator, I.BabyAIParams]] = {
    f"BabyAI-{name}-v0": (LevelGenerator(name, attempt, max_tries=1), level_params(*layout))
    for name, (attempt, layout) in _UNLOCK.items()
}
LEVELS.update(
    {
        f"BabyAI-{name}-v0": (LevelGenerator(name, make_attempt(config), max_tries=tries), level_params(*layout))
        for name, (config, layout, tries) in _LEVELGEN.items()
    }
)
for _id, _limit in FIXED_MAX_STEPS.items():
    LEVELS[_id] = (LEVELS[_id][0], LEVELS[_id][1].replace(max_steps=_limit))
