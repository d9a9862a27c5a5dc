"""The ``put next`` levels PutNextLocal (minigrid 3.2.0 ``envs/babyai/putnext.py``) and PutNext, the ICLR19
level (mila-iqia/babyai ``iclr19_levels.Level_PutNext``; minigrid 3.2.0 has only the bonus ``PutNextS*``)."""

from __future__ import annotations

import jax.numpy as jnp

from jaxsoc.envs.babyai import instr as I
from jaxsoc.envs.babyai import roomgrid as RG
from jaxsoc.envs.babyai.levels.common import LevelGenerator, leaf_instruction
from jaxsoc.envs.babyai.levels.goto import maze_with_distractors
from jaxsoc.envs.gridworld import placement as P


def ordered_pair(bits: RG.Bits, n: int):
    """Returns two distinct indices in ``[0, n)``, a uniform ordered pair (``_rand_subset(objs, 2)``)."""
    first = P.below(bits.one(), n)
    second = P.below(bits.one(), n - 1)
    return first, second + (second >= first)


def next_to(pos_a: jnp.ndarray, pos_b: jnp.ndarray) -> jnp.ndarray:
    """True when two cells are 4-neighbours (``verifier.pos_next_to``)."""
    return jnp.sum(jnp.abs(pos_a - pos_b)) == 1


def make_put_next_local(num_objs: int = 8):
    """Returns the attempt of ``PutNextLocal(num_objs=num_objs)`` (the room size comes from the layout)."""

    def attempt(bits, lay):
        state = RG.place_agent(lay, RG.init(lay, bits), bits)
        first = lay.num_walls + 1
        state, types, colors, pos = RG.add_distractors(lay, state, bits, num_objs, first, room=0, all_unique=True)
        a, b = ordered_pair(bits, num_objs)
        instruction = leaf_instruction(I.ACT_PUTNEXT, [types[a], types[b]], [colors[a], colors[b]])
        return state, instruction, RG.objects_reachable(state) & ~next_to(pos[a], pos[b])

    return attempt


put_next_local = make_put_next_local(8)
put_next_local.__doc__ = """PutNextLocal: 8 distinct (type, colour) objects in one room, all reachable; put one next
to another (rejected when they already are)."""


def put_next(bits, lay):
    """PutNext (ICLR19): 3x3 rooms joined by closed doors, 18 objects, all reachable; put one object next to
    another. Rejected (``validate_instrs``) when both descriptions are the same (their object sets meet) or
    when any object matching the first is already next to any object matching the second."""
    state, types, colors = maze_with_distractors(bits, lay, 18)
    a, b = ordered_pair(bits, 18)
    instruction = leaf_instruction(I.ACT_PUTNEXT, [types[a], types[b]], [colors[a], colors[b]])
    pose = (state.grid, state.agent_pos, state.agent_dir)
    move = RG.match_mask(lay, *pose, types[a], colors[a], I.LOC_NONE)
    fixed = RG.match_mask(lay, *pose, types[b], colors[b], I.LOC_NONE)
    same = (types[a] == types[b]) & (colors[a] == colors[b])
    adjacent = jnp.any(move & RG.dilate(fixed) & ~fixed)
    return state, instruction, RG.objects_reachable(state) & ~same & ~adjacent


GENERATORS = {
    "PutNextLocal": LevelGenerator("PutNextLocal", put_next_local),
    "PutNext": LevelGenerator("PutNext", put_next),
}
