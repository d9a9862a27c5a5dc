"""A jittable solvability check of BabyAI levels: a flood fill that knows keys, doors and movable objects.

From the agent's cell, the agent can walk through empty cells and closed or open doors, and through keys,
balls and boxes (it can pick them up and put them down behind it, as the bot's unblocking does). A locked
door becomes passable once a key of its colour has been reached. The fill is repeated until no new colour
unlocks. A level is solvable when every clause of its instruction has an object of its description's set
(``VerifierState.obj_set``) that the agent can reach:

* ``go to`` / ``pick up``: a matched object next to a reachable walkable cell;
* ``open``: a matched door that the fill passes (a locked one only with its key reached);
* ``put next``: a reachable object of the move set, and an object of the fixed set next to a reachable
  walkable cell.

It is a necessary-condition check (it does not simulate carrying one object at a time). It catches the
failure that matters in practice, a level whose needed key is locked behind its own door, as minigrid
3.2.0 generates for about 1/9 of ``Unlock`` and ``GoToImpUnlock`` levels.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsoc.envs.babyai import instr as I
from jaxsoc.envs.babyai.roomgrid import dilate, flood_fill
from jaxsoc.envs.babyai.verifier import used_descriptions
from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld.state import GridState


def reachable(world: GridState) -> tuple[jax.Array, jax.Array]:
    """Returns ``(reach, walkable)``, ``bool[H, W]`` each: the cells the agent reaches (walkable ones and
    those next to them) and the cells it can walk through once every reachable key is in hand."""
    kind, color, state = (world.grid[..., ch].astype(jnp.int32) for ch in (C.TYPE, C.COLOR, C.STATE))
    movable = (kind == C.KEY) | (kind == C.BALL) | (kind == C.BOX)
    floor = (kind == C.EMPTY) | (kind == C.FLOOR) | (kind == C.GOAL) | movable
    door = kind == C.DOOR
    locked = door & (state == C.LOCKED)
    height, width = kind.shape
    start = jnp.zeros((height, width), bool).at[world.agent_pos[1], world.agent_pos[0]].set(True)

    def fill(keys: jax.Array):
        walkable = floor | (door & ~locked) | (locked & keys[color])
        return flood_fill(walkable, start), walkable

    def round_(keys):
        reach, walkable = fill(keys)
        held = reach & (kind == C.KEY)
        return keys | jnp.zeros(C.NUM_COLORS, bool).at[color].max(held)

    keys = jax.lax.fori_loop(0, C.NUM_COLORS, lambda _, k: round_(k), jnp.zeros(C.NUM_COLORS, bool))
    return fill(keys)


def solvable(state: I.BabyAIState) -> jax.Array:
    """Returns ``bool[]``: every clause of the level's instruction has a reachable object (see the module
    docstring), and every used description matched at least one object."""
    reach, walkable = reachable(state.world)
    ids = state.world.grid[..., C.OBJ_ID].astype(jnp.int32)
    beside_walk = dilate(reach & walkable)
    sets = state.verifier.obj_set[:, :, ids] & (ids > 0)  # [4, 2, H, W]
    near = jnp.any(sets & beside_walk, axis=(-2, -1))  # [4, 2]
    passed = jnp.any(sets & reach & walkable, axis=(-2, -1))
    kind = state.instr.action
    first_ok = jnp.where(kind == I.ACT_OPEN, passed[:, 0], near[:, 0])
    second_ok = near[:, 1] | (kind != I.ACT_PUTNEXT)
    present = kind != I.ACT_NONE
    leaf_ok = ~present | (first_ok & second_ok)
    matched = ~used_descriptions(state.instr) | jnp.any(state.verifier.obj_set, axis=-1)
    return jnp.all(leaf_ok) & jnp.all(matched)
