"""minigrid 3.2.0's LockedRoom (``minigrid/envs/lockedroom.py``): ``MiniGrid-LockedRoom-v0``.

A 19x19 world: a hallway (columns 8-10) between two columns of three rooms (7 cells high, 8 wide, walls
shared), each room with a door on the hallway. The doors get the six colours in a random order; one room,
uniformly chosen, is locked and holds the goal; the key of its colour lies in another room, uniformly
chosen. The agent starts in the hallway with a random direction. The mission names the locked room's colour
and the key room's colour: "get the {locked} key from the {key room} room, unlock the {locked} door and go
to the goal" (17 words). Reaching the goal succeeds; ``max_steps`` is 190.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld import mission as M
from jaxsoc.envs.gridworld import placement as P
from jaxsoc.envs.gridworld.compat import from_minigrid
from jaxsoc.envs.gridworld.env import GridEnvironment
from jaxsoc.envs.gridworld.obstructed_maze import random_permutation
from jaxsoc.envs.gridworld.placement import Bits
from jaxsoc.envs.gridworld.state import GridState, make_state

SIZE = 19
LEFT_WALL, RIGHT_WALL = SIZE // 2 - 2, SIZE // 2 + 2  # 7 and 11
ROOM_W, ROOM_H = LEFT_WALL + 1, SIZE // 3 + 1  # 8 x 7, walls included
# the six rooms in minigrid's order (left then right, top to bottom): top-left corner and door cell (x, y)
ROOM_TOP = np.array([(x, n * (SIZE // 3)) for n in range(3) for x in (0, RIGHT_WALL)], np.int32)
ROOM_DOOR = np.array([(x, n * (SIZE // 3) + 3) for n in range(3) for x in (LEFT_WALL, RIGHT_WALL)], np.int32)
NUM_ROOMS = len(ROOM_TOP)


def base_grid() -> np.ndarray:
    """Returns ``uint8[19, 19, NUM_CHANNELS]``: the outer walls, the hallway walls and the room-splitting
    walls, without doors."""
    grid = np.tile(C.EMPTY_CELL, (SIZE, SIZE, 1))
    grid[[0, -1], :] = C.WALL_CELL
    grid[:, [0, -1, LEFT_WALL, RIGHT_WALL]] = C.WALL_CELL
    for n in range(3):
        y = n * (SIZE // 3)
        grid[y, :LEFT_WALL] = C.WALL_CELL
        grid[y, RIGHT_WALL:] = C.WALL_CELL
    return grid


@struct.dataclass
class LockedRoomState(GridState):
    """``GridState`` plus the mission's colours, ``mission_colors`` ``int32[2]``: the locked room's colour
    (of its door and its key) and the colour of the room the key started in."""

    mission_colors: jax.Array


def _interior_cell(word_x, word_y, room) -> jax.Array:
    """Returns ``int32[2]``, a uniform interior cell of ``room`` (minigrid's ``LockedRoom.rand_pos``)."""
    top = jnp.asarray(ROOM_TOP)[room]
    return top + 1 + jnp.stack([P.below(word_x, ROOM_W - 2), P.below(word_y, ROOM_H - 2)])


class LockedRoom(GridEnvironment):
    """``MiniGrid-LockedRoom-v0`` (see the module docstring)."""

    mission_observation = True

    def __init__(self, **params):
        super().__init__(height=SIZE, width=SIZE, **{"max_steps": 10 * SIZE, **params})

    def generate(self, key, params) -> LockedRoomState:
        bits = Bits(jax.random.bits(key, (13,), jnp.uint32))
        locked = P.below(bits.one(), NUM_ROOMS)
        goal = _interior_cell(bits.one(), bits.one(), locked)
        colors = random_permutation(bits.take(NUM_ROOMS))  # room r's door colour
        other = P.below(bits.one(), NUM_ROOMS - 1)
        key_room = other + (other >= locked)  # uniform over the rooms but the locked one
        key_pos = _interior_cell(bits.one(), bits.one(), key_room)

        grid = jnp.asarray(base_grid())
        doors = jnp.stack(
            [
                jnp.full(NUM_ROOMS, C.DOOR),
                colors,
                jnp.where(jnp.arange(NUM_ROOMS) == locked, C.LOCKED, C.CLOSED),
                jnp.zeros(NUM_ROOMS, jnp.int32),
                jnp.zeros(NUM_ROOMS, jnp.int32),
            ],
            axis=-1,
        ).astype(jnp.uint8)
        grid = grid.at[ROOM_DOOR[:, 1], ROOM_DOOR[:, 0]].set(doors)
        grid = P.put(grid, goal, C.cell(C.GOAL, C.GREEN))
        grid = P.put(grid, key_pos, jnp.stack([C.KEY, colors[locked], 0, 0, 0]))
        hallway = P.rect_mask(SIZE, SIZE, LEFT_WALL, 0, RIGHT_WALL - LEFT_WALL, SIZE)
        pos, direction = P.place_agent(bits.one(), grid, hallway)
        state = make_state(grid, pos, direction, target_pos=goal)
        return LockedRoomState(**vars(state), mission_colors=jnp.stack([colors[locked], colors[key_room]]))

    def mission_tokens(self, state: LockedRoomState, params=None) -> jax.Array:
        locked, key_room = state.mission_colors[0], state.mission_colors[1]
        return M.compose(
            "get the",
            M.color_word(locked),
            "key from the",
            M.color_word(key_room),
            "room, unlock the",
            M.color_word(locked),
            "door and go to the goal",
        )

    def import_minigrid(self, env) -> tuple[LockedRoomState, object]:
        """Reads the mission's two colours from the env's mission string (minigrid keeps no key-room field)."""
        state, params = from_minigrid(env)
        words = env.unwrapped.mission.split()
        colors = jnp.array([C.COLOR_TO_IDX[words[2]], C.COLOR_TO_IDX[words[6]]], jnp.int32)
        return LockedRoomState(**vars(state), mission_colors=colors), params


ENVS: dict[str, tuple[type, dict]] = {"MiniGrid-LockedRoom-v0": (LockedRoom, {})}
