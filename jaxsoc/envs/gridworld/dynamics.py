"""MiniGrid 3.2.0's ``MiniGridEnv.step`` transition as a branch-free JAX function."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld.state import GridState

# numpy constants: importing jaxsoc must not start a JAX backend (jax.distributed.initialize comes first)
_DIR_TO_VEC = C.DIR_TO_VEC
_EMPTY_CELL = C.EMPTY_CELL


@struct.dataclass
class Transition:
    """What one step did, for task rules (all scalars).

    Attributes:
        front_before: ``uint8[NUM_CHANNELS]``, the cell the agent faced before acting.
        front_pos: ``int32[2]``, that cell's ``(x, y)``.
        entered: the agent moved forward (into an empty cell, open door, floor, goal or lava).
        picked_up, dropped, toggled: the action changed the world that way.
    """

    front_before: jax.Array
    front_pos: jax.Array
    entered: jax.Array
    picked_up: jax.Array
    dropped: jax.Array
    toggled: jax.Array


def front_pos(state: GridState) -> jax.Array:
    """Returns ``int32[2]``, the ``(x, y)`` of the cell in front of the agent."""
    return state.agent_pos + jnp.asarray(_DIR_TO_VEC)[state.agent_dir]


def box_contents_cell(box: jax.Array) -> jax.Array:
    """Returns the cell that replaces a toggled box: its content (anonymous, state 0) or empty."""
    packed = box[C.CONTENTS]
    content = jnp.stack([packed >> 3, packed & 7, jnp.uint8(0), jnp.uint8(0), jnp.uint8(0)]).astype(jnp.uint8)
    return jnp.where(packed == 0, _EMPTY_CELL, content)


def transition(state: GridState, action: jax.Array) -> tuple[GridState, Transition]:
    """Applies one minigrid action. Returns the new state (``step_count`` incremented) and a
    ``Transition``. An action outside ``0..6`` acts like ``done`` (no-op)."""
    action = jnp.asarray(action, jnp.int32)
    pos = front_pos(state)
    fx, fy = pos[0], pos[1]
    front = state.grid[fy, fx]
    kind, color, door_state = front[C.TYPE], front[C.COLOR], front[C.STATE]
    holding = state.carrying[C.TYPE] != C.EMPTY
    is_door = kind == C.DOOR

    can_overlap = (
        (kind == C.EMPTY) | (kind == C.FLOOR) | (kind == C.GOAL) | (kind == C.LAVA) | (is_door & (door_state == C.OPEN))
    )
    entered = (action == C.FORWARD) & can_overlap
    picked_up = (action == C.PICKUP) & ((kind == C.KEY) | (kind == C.BALL) | (kind == C.BOX)) & ~holding
    dropped = (action == C.DROP) & (kind == C.EMPTY) & holding

    key_fits = (state.carrying[C.TYPE] == C.KEY) & (state.carrying[C.COLOR] == color)
    unlocks = is_door & (door_state == C.LOCKED) & key_fits
    swings = is_door & (door_state != C.LOCKED)
    is_toggle = action == C.TOGGLE
    toggled_door = is_toggle & (unlocks | swings)
    toggled_box = is_toggle & (kind == C.BOX)
    new_door_state = jnp.where(door_state == C.OPEN, C.CLOSED, C.OPEN).astype(jnp.uint8)
    door_cell = front.at[C.STATE].set(new_door_state)

    new_front = jnp.where(picked_up, _EMPTY_CELL, front)
    new_front = jnp.where(dropped, state.carrying, new_front)
    new_front = jnp.where(toggled_door, door_cell, new_front)
    new_front = jnp.where(toggled_box, box_contents_cell(front), new_front)

    carrying = jnp.where(picked_up, front, jnp.where(dropped, _EMPTY_CELL, state.carrying))
    turn = jnp.where(action == C.LEFT, 3, jnp.where(action == C.RIGHT, 1, 0))
    new_state = state.replace(
        grid=state.grid.at[fy, fx].set(new_front),
        agent_pos=jnp.where(entered, pos, state.agent_pos),
        agent_dir=(state.agent_dir + turn) % 4,
        carrying=carrying,
        step_count=state.step_count + 1,
    )
    info = Transition(
        front_before=front,
        front_pos=pos,
        entered=entered,
        picked_up=picked_up,
        dropped=dropped,
        toggled=toggled_door | toggled_box,
    )
    return new_state, info


def success_reward(step_count: jax.Array, max_steps: jax.Array) -> jax.Array:
    """Returns minigrid's success reward ``1 - 0.9 * step_count / max_steps`` as float32."""
    return 1.0 - 0.9 * (jnp.asarray(step_count, jnp.float32) / jnp.asarray(max_steps, jnp.float32))
