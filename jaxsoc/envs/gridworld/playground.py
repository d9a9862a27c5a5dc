"""minigrid 3.2.0's ``MiniGrid-Playground-v0`` (``minigrid/envs/playground.py``): a 19x19 world of 3x3 rooms
joined by closed doors, with twelve random keys, balls and boxes and no mission (the empty string, no
reward: there is no goal). Generated on the device with minigrid's distributions; the random streams
differ."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld import placement as P
from jaxsoc.envs.gridworld.classic import walled_grid
from jaxsoc.envs.gridworld.env import GridEnvironment
from jaxsoc.envs.gridworld.state import GridState, make_state

OBJECT_TYPES = np.array([C.KEY, C.BALL, C.BOX], np.uint8)
NUM_OBJECTS = 12


def door_ranges(rooms: int, room_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Returns ``(x_low, x_high, y_low, y_high)``, each ``int32[2 * rooms * (rooms - 1)]``: for every door of a
    ``rooms x rooms`` grid of rooms, the half-open ranges its ``x`` and ``y`` are drawn from. First the doors
    in the vertical walls (``x`` fixed on the wall, ``y`` in ``[top + 1, bottom - 2]``), then those in the
    horizontal walls (the same rule transposed): minigrid's ``_rand_int(yT + 1, yB - 1)`` never picks the
    room's last row or column."""
    wall = room_size * np.arange(1, rooms)  # the inner walls' coordinate
    start = room_size * np.arange(rooms)  # each room's top (or left) wall
    fixed, drawn = np.meshgrid(wall, start, indexing="ij")
    fixed, drawn = fixed.ravel(), drawn.ravel()
    x_low, x_high = np.concatenate([fixed, drawn + 1]), np.concatenate([fixed + 1, drawn + room_size - 1])
    y_low, y_high = np.concatenate([drawn + 1, fixed]), np.concatenate([drawn + room_size - 1, fixed + 1])
    return x_low, x_high, y_low, y_high


class Playground(GridEnvironment):
    """``MiniGrid-Playground-v0``: 3x3 rooms of side 6 (walls included) in a 19x19 grid, one closed door of a
    uniform colour at a uniform position in each inner wall segment, the agent at a uniform free cell with a
    uniform direction, then twelve objects (uniform type among key, ball, box and uniform colour; boxes are
    empty) each on a uniform free cell. ``max_steps`` is 100."""

    mission = ""

    def __init__(self, **params):
        super().__init__(height=19, width=19, **{"max_steps": 100, **params})

    def generate(self, key, params) -> GridState:
        height, width = params.height, params.width
        room = width // 3
        x_low, x_high, y_low, y_high = door_ranges(3, room)
        num_doors = len(x_low)
        bits = P.Bits(jax.random.bits(key, (3 * num_doors + 1 + 3 * NUM_OBJECTS,), jnp.uint32))
        grid = jnp.asarray(walled_grid(height, width))
        coords = jnp.arange(width)
        inner = (coords % room == 0)[None, :, None] | (coords % room == 0)[:, None, None]
        grid = jnp.where(inner, jnp.asarray(C.WALL_CELL), grid)
        door_x = P.randint(bits.take(num_doors), x_low, x_high)
        door_y = P.randint(bits.take(num_doors), y_low, y_high)
        door_colors = P.below(bits.take(num_doors), C.NUM_COLORS).astype(jnp.uint8)
        doors = jnp.zeros((num_doors, C.NUM_CHANNELS), jnp.uint8)
        doors = doors.at[:, C.TYPE].set(C.DOOR).at[:, C.COLOR].set(door_colors).at[:, C.STATE].set(C.CLOSED)
        grid = grid.at[door_y, door_x].set(doors)
        pos, direction = P.place_agent(bits.one(), grid, jnp.ones((height, width), bool))
        not_agent = P.away_from(height, width, pos, 1)
        for _ in range(NUM_OBJECTS):
            k_type, k_color, k_cell = bits.take(3)
            kind = jnp.asarray(OBJECT_TYPES)[P.below(k_type, len(OBJECT_TYPES))]
            color = P.below(k_color, C.NUM_COLORS).astype(jnp.uint8)
            grid, _ = P.place(k_cell, grid, not_agent, jnp.stack([kind, color, *jnp.zeros(3, jnp.uint8)]))
        return make_state(grid, pos, direction)


ENVS: dict[str, tuple[type, dict]] = {"MiniGrid-Playground-v0": (Playground, {})}
