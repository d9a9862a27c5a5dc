"""The classic MiniGrid environments that the JAX peers (xminigrid, NAVIX) also implement, with the
generation rules of minigrid 3.2.0 (``minigrid/envs/{empty,doorkey,fourrooms,unlock,unlockpickup,
blockedunlockpickup}.py``). Positions are drawn with the same distributions; the random streams differ."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld import placement as P
from jaxsoc.envs.gridworld.dynamics import Transition
from jaxsoc.envs.gridworld.env import GridEnvironment
from jaxsoc.envs.gridworld.state import GridParams, GridState, make_state


def walled_grid(height: int, width: int) -> np.ndarray:
    """Returns ``uint8[H, W, C]``: empty cells inside a border of walls."""
    grid = np.tile(C.EMPTY_CELL, (height, width, 1))
    grid[[0, -1], :] = C.WALL_CELL
    grid[:, [0, -1]] = C.WALL_CELL
    return grid


def goal_cell() -> np.ndarray:
    return C.cell(C.GOAL, C.GREEN)


class Empty(GridEnvironment):
    """``MiniGrid-Empty-NxN-v0``: reach the goal in the far corner; the agent starts at (1, 1) facing east.
    minigrid builds this env with ``see_through_walls=True``, so that is the default here too."""

    mission = "get to the green goal square"

    def __init__(self, size: int = 8, **params):
        params = {"max_steps": 4 * size**2, "see_through_walls": True, **params}
        super().__init__(height=size, width=size, **params)

    def generate(self, key, params):
        grid = walled_grid(params.height, params.width)
        goal = (params.width - 2, params.height - 2)
        grid[goal[1], goal[0]] = goal_cell()
        return make_state(grid, (1, 1), 0, target_pos=goal)


class DoorKey(GridEnvironment):
    """``MiniGrid-DoorKey-NxN-v0``: a wall splits the room; fetch the yellow key, unlock the yellow door,
    reach the goal."""

    mission = "use the key to open the door and then get to the goal"

    def __init__(self, size: int = 8, **params):
        super().__init__(height=size, width=size, **{"max_steps": 10 * size**2, **params})

    def generate(self, key, params):
        height, width = params.height, params.width
        k_split, k_door, k_agent, k_key = jax.random.bits(key, (4,), jnp.uint32)
        grid = jnp.asarray(walled_grid(height, width))
        goal = jnp.array([width - 2, height - 2], jnp.int32)
        grid = P.put(grid, goal, goal_cell())
        split = P.randint(k_split, 2, width - 2)
        xs = jnp.arange(width)[None, :, None]
        grid = jnp.where(xs == split, jnp.asarray(C.WALL_CELL), grid)
        left = P.rect_mask(height, width, 0, 0, split, height)
        pos, direction = P.place_agent(k_agent, grid, left)
        door_y = P.randint(k_door, 1, width - 2)
        grid = P.put(grid, jnp.stack([split, door_y]), C.cell(C.DOOR, C.YELLOW, C.LOCKED))
        not_agent = P.away_from(height, width, pos, 1)
        grid, _ = P.place(k_key, grid, left & not_agent, C.cell(C.KEY, C.YELLOW))
        return make_state(grid, pos, direction, target_pos=goal)


class FourRooms(GridEnvironment):
    """``MiniGrid-FourRooms-v0``: four 9x9 rooms joined by one gap in each inner wall; agent and goal
    placed uniformly."""

    mission = "reach the goal"

    def __init__(self, **params):
        super().__init__(height=19, width=19, **{"max_steps": 100, **params})

    def generate(self, key, params):
        height, width = params.height, params.width
        *k_gaps, k_agent, k_goal = jax.random.bits(key, (6,), jnp.uint32)
        grid = jnp.asarray(walled_grid(height, width))
        room_w, room_h = width // 2, height // 2
        ys = jnp.arange(height)[:, None, None]
        xs = jnp.arange(width)[None, :, None]
        wall = jnp.asarray(C.WALL_CELL)
        grid = jnp.where((xs == room_w) | (ys == room_h), wall, grid)
        # one gap in each of the four inner wall segments: (x, y ranges) as minigrid draws them
        lo = jnp.array([1, room_w + 1, 1, room_h + 1])
        gaps = P.randint(jnp.stack(k_gaps), lo, lo + room_w - 1)
        gap_cells = jnp.array([[room_w, gaps[0]], [room_w, gaps[1]], [gaps[2], room_h], [gaps[3], room_h]], jnp.int32)
        grid = grid.at[gap_cells[:, 1], gap_cells[:, 0]].set(jnp.asarray(C.EMPTY_CELL))
        everywhere = jnp.ones((height, width), bool)
        pos, direction = P.place_agent(k_agent, grid, everywhere)
        grid, goal = P.place(k_goal, grid, P.away_from(height, width, pos, 1), goal_cell())
        return make_state(grid, pos, direction, target_pos=goal)


class _TwoRooms(GridEnvironment):
    """minigrid's ``RoomGrid`` with one row of two 6x6 rooms: a locked door in the shared wall, its key
    in the left room, the agent in the left room not facing an object."""

    room_size = 6

    def __init__(self, max_steps_factor: int, **params):
        size = self.room_size
        width, height = 2 * (size - 1) + 1, size
        super().__init__(height=height, width=width, **{"max_steps": max_steps_factor * size**2, **params})

    @property
    def agent_default_pos(self) -> np.ndarray:
        """The RoomGrid default agent position (centre of the middle room) that ``reject_next_to`` uses
        for objects placed before the agent."""
        return np.array([self.room_size - 1 + self.room_size // 2, self.room_size // 2], np.int32)

    def _room_mask(self, params: GridParams, col: int) -> jax.Array:
        x0 = col * (self.room_size - 1)
        return P.rect_mask(params.height, params.width, x0, 0, self.room_size, self.room_size)

    def _build(self, key, params, box: bool, blocker: bool) -> GridState:
        height, width, size = params.height, params.width, self.room_size
        k_box, k_box_color, k_door_y, k_door_color, k_ball, k_key, k_agent = jax.random.bits(key, (7,), jnp.uint32)
        grid = jnp.asarray(walled_grid(height, width))
        grid = grid.at[:, size - 1].set(jnp.asarray(C.WALL_CELL))
        not_near_default = P.away_from(height, width, jnp.asarray(self.agent_default_pos), 2)
        box_color = P.below(k_box_color, C.NUM_COLORS).astype(jnp.uint8)
        if box:
            box_cell = jnp.stack([jnp.uint8(C.BOX), box_color, *jnp.zeros(3, jnp.uint8)])
            grid, _ = P.place(k_box, grid, self._room_mask(params, 1) & not_near_default, box_cell)
        door_pos = jnp.stack([jnp.int32(size - 1), P.randint(k_door_y, 1, size - 1)])
        door_color = P.below(k_door_color, C.NUM_COLORS).astype(jnp.uint8)
        grid = P.put(grid, door_pos, jnp.stack([jnp.uint8(C.DOOR), door_color, jnp.uint8(C.LOCKED), 0, 0]))
        if blocker:
            ball_color = P.below(k_ball, C.NUM_COLORS).astype(jnp.uint8)
            ball = jnp.stack([jnp.uint8(C.BALL), ball_color, *jnp.zeros(3, jnp.uint8)])
            grid = P.put(grid, door_pos - jnp.array([1, 0]), ball)
        key_cell = jnp.stack([jnp.uint8(C.KEY), door_color, *jnp.zeros(3, jnp.uint8)])
        left = self._room_mask(params, 0)
        grid, _ = P.place(k_key, grid, left & not_near_default, key_cell)
        pos, direction = P.place_agent(k_agent, grid, left, facing_free=True)
        target_obj = jnp.stack([jnp.uint8(C.BOX), box_color]) if box else jnp.zeros(2, jnp.uint8)
        return make_state(grid, pos, direction, target_pos=door_pos, target_obj=target_obj)

    def mission_text(self, state, params=None):
        color = C.COLOR_NAMES[int(state.target_obj[1])]
        return f"pick up the {color} box"

    def task_outcome(self, state, action, moved: Transition, params):
        carrying_target = jnp.all(state.carrying[: C.COLOR + 1] == state.target_obj)
        return (action == C.PICKUP) & carrying_target, jnp.bool_(False)


class Unlock(_TwoRooms):
    """``MiniGrid-Unlock-v0``: open the locked door (any toggle while it is open succeeds, as in minigrid)."""

    mission = "open the door"

    def __init__(self, **params):
        super().__init__(8, **params)

    def generate(self, key, params):
        return self._build(key, params, box=False, blocker=False)

    def mission_text(self, state, params=None):
        return self.mission

    def task_outcome(self, state, action, moved, params):
        door = state.grid[state.target_pos[1], state.target_pos[0]]
        return (action == C.TOGGLE) & (door[C.STATE] == C.OPEN), jnp.bool_(False)


class UnlockPickup(_TwoRooms):
    """``MiniGrid-UnlockPickup-v0``: unlock the door, then pick up the box in the right room."""

    def __init__(self, **params):
        super().__init__(8, **params)

    def generate(self, key, params):
        return self._build(key, params, box=True, blocker=False)


class BlockedUnlockPickup(_TwoRooms):
    """``MiniGrid-BlockedUnlockPickup-v0``: as UnlockPickup, with a ball blocking the door."""

    def __init__(self, **params):
        super().__init__(16, **params)

    def generate(self, key, params):
        return self._build(key, params, box=True, blocker=True)


CLASSIC_ENVS = {
    **{f"MiniGrid-Empty-{n}x{n}-v0": (Empty, {"size": n}) for n in (5, 6, 8, 16)},
    **{f"MiniGrid-DoorKey-{n}x{n}-v0": (DoorKey, {"size": n}) for n in (5, 6, 8, 16)},
    "MiniGrid-FourRooms-v0": (FourRooms, {}),
    "MiniGrid-Unlock-v0": (Unlock, {}),
    "MiniGrid-UnlockPickup-v0": (UnlockPickup, {}),
    "MiniGrid-BlockedUnlockPickup-v0": (BlockedUnlockPickup, {}),
}
