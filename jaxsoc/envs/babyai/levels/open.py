"""The ``open`` level Open (minigrid 3.2.0 ``envs/babyai/open.py``)."""

from __future__ import annotations

import jax.numpy as jnp

from jaxsoc.envs.babyai import instr as I
from jaxsoc.envs.babyai import roomgrid as RG
from jaxsoc.envs.babyai.levels.common import LevelGenerator, leaf_instruction
from jaxsoc.envs.babyai.levels.goto import maze_with_distractors
from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld import placement as P


def open_door(bits, lay):
    """Open: 3x3 rooms joined by closed doors, 18 objects, all reachable; open a uniformly chosen door,
    described by its colour ("open a/the {color} door")."""
    state, _, _ = maze_with_distractors(bits, lay, 18)
    door = P.choose_index(bits.one(), state.door_on)
    instruction = leaf_instruction(I.ACT_OPEN, [jnp.int32(C.DOOR)], [state.door_color[door]])
    return state, instruction, RG.objects_reachable(state)


GENERATORS = {"Open": LevelGenerator("Open", open_door)}
