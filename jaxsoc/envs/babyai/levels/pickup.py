"""The ``pick up`` levels Pickup and UnblockPickup (minigrid 3.2.0 ``envs/babyai/pickup.py``; PickupLoc is a
LevelGen level, see ``levelgen``)."""

from __future__ import annotations

from jaxsoc.envs.babyai import instr as I
from jaxsoc.envs.babyai import roomgrid as RG
from jaxsoc.envs.babyai.levels.common import LevelGenerator, leaf_instruction
from jaxsoc.envs.babyai.levels.goto import maze_with_distractors, pick


def pickup(bits, lay):
    """Pickup: 3x3 rooms joined by closed doors, 18 objects, all reachable; pick one up (type and colour)."""
    state, types, colors = maze_with_distractors(bits, lay, 18)
    kind, color = pick(bits.one(), types, colors)
    return state, leaf_instruction(I.ACT_PICKUP, [kind], [color]), RG.objects_reachable(state)


def unblock_pickup(bits, lay):
    """UnblockPickup: as Pickup with 20 objects, kept only when some object (or door) cannot be reached
    without moving another."""
    state, types, colors = maze_with_distractors(bits, lay, 20)
    kind, color = pick(bits.one(), types, colors)
    return state, leaf_instruction(I.ACT_PICKUP, [kind], [color]), ~RG.objects_reachable(state)


GENERATORS = {
    "Pickup": LevelGenerator("Pickup", pickup),
    "UnblockPickup": LevelGenerator("UnblockPickup", unblock_pickup),
}
