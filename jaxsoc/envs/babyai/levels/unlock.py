"""The ``Unlock`` level (minigrid 3.2.0 ``envs/babyai/unlock.py``, with the original babyai semantics)."""

from __future__ import annotations

import jax.numpy as jnp

from jaxsoc.envs.babyai import instr as I
from jaxsoc.envs.babyai import roomgrid as RG
from jaxsoc.envs.babyai.levels.common import LevelGenerator, leaf_instruction
from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld import placement as P


def unlock(bits, lay):
    """Unlock: a locked door on a wall of a random room, its key in another room; closed doors connect the
    rest (with probability 1/2 none of them has the locked door's colour); three distractors in every room
    but the locked one; the agent outside the locked room; every object reachable. "open the {color} door"
    (with "a" when another door has that colour).

    minigrid 3.2.0 differs (its ``is`` comparisons of room indices fail): there the key lands in the locked
    room with probability 1/9 and the locked room also gets three distractors.
    """
    state = RG.init(lay, bits)
    first = lay.num_walls + 1
    state, color = RG.add_locked_room(lay, state, bits, first, room_first=True)
    avoid_color = P.below(bits.one(), 2) == 0
    colors = ~(avoid_color & (jnp.arange(C.NUM_COLORS) == color))
    state = RG.connect_all(lay, state, bits, colors)
    rooms = jnp.repeat(jnp.arange(lay.num_rooms), 3)
    types, obj_colors = RG.random_kinds(bits, rooms.shape[0], all_unique=False)
    ids = jnp.arange(first + 1, first + 1 + rooms.shape[0])
    state, _ = RG.add_objects(lay, state, bits, rooms, types, obj_colors, ids, active=rooms != state.locked_room)
    state = RG.place_agent(lay, state, bits, jnp.arange(lay.num_rooms) != state.locked_room)
    instruction = leaf_instruction(I.ACT_OPEN, [jnp.int32(C.DOOR)], [color])
    return state, instruction, RG.objects_reachable(state)


GENERATORS = {"Unlock": LevelGenerator("Unlock", unlock)}
