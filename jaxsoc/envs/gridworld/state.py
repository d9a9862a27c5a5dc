"""The pytrees of a MiniGrid-style world: ``GridState`` (per episode) and ``GridParams`` (per task)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from jaxsoc.envs.gridworld import constants as C


@struct.dataclass
class GridParams:
    """Task configuration. ``height``, ``width`` and ``view_size`` fix array shapes and
    ``see_through_walls`` selects code, so they are static (part of the tree structure); ``max_steps``
    is data and can differ across a vmapped batch of params."""

    max_steps: jax.Array | int = 100
    height: int = struct.field(pytree_node=False, default=8)
    width: int = struct.field(pytree_node=False, default=8)
    view_size: int = struct.field(pytree_node=False, default=7)
    see_through_walls: bool = struct.field(pytree_node=False, default=False)


@struct.dataclass
class GridState:
    """One world.

    Attributes:
        grid: ``uint8[H, W, NUM_CHANNELS]``, indexed ``[y, x]`` (see ``constants``).
        agent_pos: ``int32[2]``, ``(x, y)`` as in minigrid.
        agent_dir: ``int32[]``, 0 east, 1 south, 2 west, 3 north.
        carrying: ``uint8[NUM_CHANNELS]``, the carried cell; ``carrying[TYPE] == EMPTY`` when empty-handed.
        step_count: ``int32[]``, steps taken in this episode.
        target_pos: ``int32[2]``, task position (goal or door to open), ``(-1, -1)`` when unused.
        target_obj: ``uint8[2]``, task object ``(type, colour)`` to pick up, ``(0, 0)`` when unused.
    """

    grid: jax.Array
    agent_pos: jax.Array
    agent_dir: jax.Array
    carrying: jax.Array
    step_count: jax.Array
    target_pos: jax.Array
    target_obj: jax.Array


def make_state(
    grid,
    agent_pos,
    agent_dir,
    carrying=None,
    step_count=0,
    target_pos=(-1, -1),
    target_obj=(0, 0),
) -> GridState:
    """Returns a ``GridState`` with every field cast to its canonical dtype."""
    carrying = C.EMPTY_CELL if carrying is None else carrying
    return GridState(
        grid=jnp.asarray(grid, jnp.uint8),
        agent_pos=jnp.asarray(agent_pos, jnp.int32),
        agent_dir=jnp.asarray(agent_dir, jnp.int32),
        carrying=jnp.asarray(carrying, jnp.uint8),
        step_count=jnp.asarray(step_count, jnp.int32),
        target_pos=jnp.asarray(target_pos, jnp.int32),
        target_obj=jnp.asarray(target_obj, jnp.uint8),
    )
