"""minigrid 3.2.0's ``MiniGrid-Memory*`` (``minigrid/envs/memory.py``): a green key or ball in the start room,
a hallway, and a split at its end with a key and a ball; walk up to the one that matches the start object.

Layout of a ``size x size`` world (``size`` odd, ``mid = size // 2``): the start room spans columns 1-4
between the walls of rows ``mid - 2`` and ``mid + 2`` (column 4 walled except on row ``mid``), a hallway
runs along row ``mid`` to column ``end`` (``size - 3``, or uniform in ``[4, size - 3]`` with
``random_length``), column ``end`` is a wall except on row ``mid``, column ``end + 2`` is a wall, and the two
objects stand at ``(end + 1, mid -+ 2)``. The agent starts on row ``mid`` at a uniform column in ``[1, end]``
facing east. Standing on the cell next to the matching object succeeds, next to the other one fails (reward
0); pickup acts as toggle (so nothing can be picked up).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld import placement as P
from jaxsoc.envs.gridworld.env import GridEnvironment
from jaxsoc.envs.gridworld.state import GridState, make_state


@struct.dataclass
class MemoryState(GridState):
    """A ``GridState`` whose ``target_pos`` is the success cell, plus ``failure_pos`` ``int32[2]``."""

    failure_pos: jax.Array = None


class Memory(GridEnvironment):
    """``MiniGrid-Memory{S<size>,S<size>Random}-v0``; ``max_steps`` is ``5 * size**2``. The size must be odd
    (minigrid's default, 8, fails when minigrid generates a level; here the default is 7)."""

    mission = "go to the matching object at the end of the hallway"

    def __init__(self, size: int = 7, random_length: bool = False, **params):
        if size % 2 != 1:
            raise ValueError(f"Memory needs an odd size, got {size}")
        self.random_length = random_length
        params = {"max_steps": 5 * size**2, "see_through_walls": False, **params}
        super().__init__(height=size, width=size, **params)

    def generate(self, key, params):
        height, width = params.height, params.width
        k_end, k_agent, k_start_obj, k_order = jax.random.bits(key, (4,), jnp.uint32)
        mid, upper, lower = height // 2, height // 2 - 2, height // 2 + 2
        end = P.randint(k_end, 4, width - 2) if self.random_length else jnp.int32(width - 3)
        ys = jnp.arange(height)[:, None]
        xs = jnp.arange(width)[None, :]
        walls = (ys == 0) | (ys == height - 1) | (xs == 0) | (xs == width - 1)
        walls |= ((ys == upper) | (ys == lower)) & (xs >= 1) & (xs <= 4)  # start room
        walls |= ((ys == upper + 1) | (ys == lower - 1)) & (xs >= 4) & (xs < jnp.maximum(end, 5))  # hallway
        walls |= ((xs == end) & (ys != mid)) | (xs == end + 2)  # the split
        grid = jnp.where(walls[..., None], jnp.asarray(C.WALL_CELL), jnp.asarray(C.EMPTY_CELL))
        agent = jnp.stack([P.randint(k_agent, 1, end + 1), jnp.int32(mid)])
        kinds = jnp.array([C.KEY, C.BALL], jnp.uint8)
        start_kind = kinds[P.below(k_start_obj, 2)]
        top_is_ball = P.below(k_order, 2)  # minigrid's [Ball, Key] or [Key, Ball]: which object goes on top
        top_kind, bottom_kind = kinds[1 - top_is_ball], kinds[top_is_ball]
        grid = P.put(grid, jnp.array([1, mid - 1]), _green(start_kind))
        grid = P.put(grid, jnp.stack([end + 1, jnp.int32(mid - 2)]), _green(top_kind))
        grid = P.put(grid, jnp.stack([end + 1, jnp.int32(mid + 2)]), _green(bottom_kind))
        above, below = jnp.stack([end + 1, jnp.int32(mid - 1)]), jnp.stack([end + 1, jnp.int32(mid + 1)])
        top_matches = start_kind == top_kind
        success, failure = jnp.where(top_matches, above, below), jnp.where(top_matches, below, above)
        state = make_state(grid, agent, 0, target_pos=success)
        return MemoryState(**vars(state), failure_pos=failure)

    def step_env(self, key, state, action, params):
        action = jnp.asarray(action, jnp.int32)
        return super().step_env(key, state, jnp.where(action == C.PICKUP, C.TOGGLE, action), params)

    def task_outcome(self, state, action, moved, params):
        success = jnp.all(state.agent_pos == state.target_pos)
        return success, jnp.all(state.agent_pos == state.failure_pos) & ~success

    def import_minigrid(self, env):
        from jaxsoc.envs.gridworld.compat import from_minigrid

        state, params = from_minigrid(env)
        u = env.unwrapped
        state = state.replace(target_pos=jnp.asarray(u.success_pos, jnp.int32))
        return MemoryState(**vars(state), failure_pos=jnp.asarray(u.failure_pos, jnp.int32)), params


def _green(kind: jax.Array) -> jax.Array:
    """Returns the cell ``uint8[NUM_CHANNELS]`` of a green object of type ``kind``."""
    return jnp.stack([kind, jnp.uint8(C.GREEN), *jnp.zeros(3, jnp.uint8)])


ENVS = {
    "MiniGrid-MemoryS17Random-v0": (Memory, {"size": 17, "random_length": True}),
    "MiniGrid-MemoryS13Random-v0": (Memory, {"size": 13, "random_length": True}),
    "MiniGrid-MemoryS13-v0": (Memory, {"size": 13}),
    "MiniGrid-MemoryS11-v0": (Memory, {"size": 11}),
    "MiniGrid-MemoryS9-v0": (Memory, {"size": 9}),
    "MiniGrid-MemoryS7-v0": (Memory, {"size": 7}),
}
