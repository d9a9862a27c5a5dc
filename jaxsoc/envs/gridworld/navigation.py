"""minigrid 3.2.0's single-room navigation tasks: reach the green goal, avoiding lava or finding the openings
in walls (``minigrid/envs/{empty,distshift,lavagap,crossing}.py``). Layouts are drawn with minigrid's
distributions on the device, with a fixed amount of work; the random streams differ.

* ``EmptyRandom``: ``MiniGrid-Empty-Random-NxN-v0``, the empty room with a uniformly placed agent.
* ``DistShift``: two lava strips between the start and the goal (fixed layouts).
* ``LavaGap``: a lava column with one gap.
* ``Crossing``: ``N`` rivers of lava (or walls) across the room, one opening in each, on a random path.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld import placement as P
from jaxsoc.envs.gridworld.classic import Empty, goal_cell, walled_grid
from jaxsoc.envs.gridworld.env import GridEnvironment
from jaxsoc.envs.gridworld.state import GridState, make_state

REACH_GOAL = "get to the green goal square"
AVOID_LAVA = "avoid the lava and get to the green goal square"
FIND_OPENING = "find the opening and get to the green goal square"
OBSTACLES = {"lava": C.cell(C.LAVA, C.RED), "wall": C.WALL_CELL}


class EmptyRandom(Empty):
    """``MiniGrid-Empty-Random-NxN-v0``: the goal in the far corner, the agent on a uniform free cell with a
    uniform direction (minigrid's ``place_agent``)."""

    def generate(self, key, params):
        grid = walled_grid(params.height, params.width)
        goal = (params.width - 2, params.height - 2)
        grid[goal[1], goal[0]] = goal_cell()
        grid = jnp.asarray(grid)
        everywhere = jnp.ones((params.height, params.width), bool)
        pos, direction = P.place_agent(jax.random.bits(key, (), jnp.uint32), grid, everywhere)
        return make_state(grid, pos, direction, target_pos=goal)


class DistShift(GridEnvironment):
    """``MiniGrid-DistShift{1,2}-v0``: a 9x7 room, start (1, 1) facing east, goal at (7, 1); lava on row 1
    and on row ``strip2_row`` for ``x`` in 3..5. minigrid builds it with ``see_through_walls=True`` and
    ``max_steps = 4 * width * height``."""

    mission = REACH_GOAL

    def __init__(self, strip2_row: int = 2, width: int = 9, height: int = 7, **params):
        self.strip2_row = strip2_row
        params = {"max_steps": 4 * width * height, "see_through_walls": True, **params}
        super().__init__(height=height, width=width, **params)

    def generate(self, key, params):
        grid = walled_grid(params.height, params.width)
        goal = (params.width - 2, 1)
        grid[goal[1], goal[0]] = goal_cell()
        strip = slice(3, 3 + params.width - 6)
        grid[[1, self.strip2_row], strip] = OBSTACLES["lava"]
        return make_state(grid, (1, 1), 0, target_pos=goal)


class LavaGap(GridEnvironment):
    """``MiniGrid-LavaGapS{5,6,7}-v0``: start (1, 1) facing east, goal in the far corner, a lava column at a
    uniform ``x`` in ``[2, size - 3]`` with a gap at a uniform ``y`` in ``[1, size - 2]``."""

    mission = AVOID_LAVA

    def __init__(self, size: int = 5, **params):
        super().__init__(height=size, width=size, **{"max_steps": 4 * size**2, **params})

    def generate(self, key, params):
        size = params.width
        k_x, k_y = jax.random.bits(key, (2,), jnp.uint32)
        grid = walled_grid(size, size)
        goal = (size - 2, size - 2)
        grid[goal[1], goal[0]] = goal_cell()
        gap_x, gap_y = P.randint(k_x, 2, size - 2), P.randint(k_y, 1, size - 1)
        ys = jnp.arange(size)[:, None, None]
        xs = jnp.arange(size)[None, :, None]
        column = (xs == gap_x) & (ys >= 1) & (ys <= size - 2) & (ys != gap_y)
        grid = jnp.where(column, jnp.asarray(OBSTACLES["lava"]), jnp.asarray(grid))
        return make_state(grid, (1, 1), 0, target_pos=goal)


def sample_subset(words: jax.Array, size: int) -> jax.Array:
    """Returns ``bool[size]`` with ``len(words)`` entries set, a uniform subset (sampling without
    replacement, one ``uint32`` word per draw)."""
    remaining = jnp.ones(size, bool)
    for word in words:
        remaining = remaining.at[P.choose_index(word, remaining)].set(False)
    return ~remaining


def bounds(chosen: jax.Array, lines: np.ndarray, size: int) -> jax.Array:
    """Returns ``int32[len(lines) + 2]``: ``0``, the chosen ``lines`` in increasing order, ``size - 1``,
    then padding (the room boundaries along one axis, minigrid's ``limits_v``/``limits_h``)."""
    inner = jnp.where(chosen, jnp.asarray(lines), 2 * size)
    return jnp.sort(jnp.concatenate([jnp.array([0]), inner, jnp.array([size - 1])]))


class Crossing(GridEnvironment):
    """``MiniGrid-{Lava,Simple}CrossingS{size}N{n}-v0``: start (1, 1) facing east, goal in the far corner.

    The candidate rivers are the columns and rows at even coordinates ``2, 4, ..., size - 3``; ``n`` of them
    (a uniform subset) are filled with the obstacle over the room's interior. A path from the top-left room
    to the bottom-right one crosses each river once: its moves (right across a column, down across a row) are
    a uniform arrangement, and each crossing is an opening at a uniform cell of the river inside the current
    room. ``obstacle`` is ``"lava"`` (LavaCrossing) or ``"wall"`` (SimpleCrossing)."""

    def __init__(self, size: int = 9, num_crossings: int = 1, obstacle: str = "lava", **params):
        if size % 2 == 0:
            raise ValueError(f"Crossing needs an odd size, got {size}")
        self.num_crossings = num_crossings
        self.obstacle = obstacle
        self.mission = AVOID_LAVA if obstacle == "lava" else FIND_OPENING
        super().__init__(height=size, width=size, **{"max_steps": 4 * size**2, **params})

    def generate(self, key, params) -> GridState:
        size, n = params.width, self.num_crossings
        lines = np.arange(2, size - 2, 2)
        k = len(lines)
        bits = P.Bits(jax.random.bits(key, (3 * n,), jnp.uint32))
        # rivers 0..k-1 are the columns x = lines, k..2k-1 the rows y = lines
        rivers = sample_subset(bits.take(n), 2 * k)
        columns, rows = rivers[:k], rivers[k:]
        interior = (jnp.arange(size) >= 1) & (jnp.arange(size) <= size - 2)
        on_column = jnp.zeros(size, bool).at[lines].set(columns)
        on_row = jnp.zeros(size, bool).at[lines].set(rows)
        blocked = (on_row[:, None] & interior[None, :]) | (on_column[None, :] & interior[:, None])
        # the openings, walking the rooms from (0, 0): a move right crosses the next column
        limits_x, limits_y = bounds(columns, lines, size), bounds(rows, lines, size)
        right_left = jnp.sum(columns).astype(jnp.int32)
        room_x = room_y = jnp.int32(0)
        openings = []
        for t, (k_move, k_cell) in enumerate(zip(bits.take(n), bits.take(n))):
            right = P.below(k_move, n - t) < right_left
            y_in_room = P.randint(k_cell, limits_y[room_y] + 1, limits_y[room_y + 1])
            x_in_room = P.randint(k_cell, limits_x[room_x] + 1, limits_x[room_x + 1])
            openings.append(
                jnp.where(
                    right, jnp.stack([limits_x[room_x + 1], y_in_room]), jnp.stack([x_in_room, limits_y[room_y + 1]])
                )
            )
            right_left = right_left - right
            room_x, room_y = room_x + right, room_y + ~right
        openings = jnp.stack(openings)
        blocked = blocked.at[openings[:, 1], openings[:, 0]].set(False)
        grid = jnp.asarray(walled_grid(size, size))
        grid = jnp.where(blocked[..., None], jnp.asarray(OBSTACLES[self.obstacle]), grid)
        goal = (size - 2, size - 2)
        grid = P.put(grid, jnp.array(goal), goal_cell())
        return make_state(grid, (1, 1), 0, target_pos=goal)


def _crossing_ids() -> dict[str, tuple[type, dict]]:
    envs = {}
    for prefix, obstacle in (("Lava", "lava"), ("Simple", "wall")):
        for size, n in ((9, 1), (9, 2), (9, 3), (11, 5)):
            kwargs = {"size": size, "num_crossings": n, "obstacle": obstacle}
            envs[f"MiniGrid-{prefix}CrossingS{size}N{n}-v0"] = (Crossing, kwargs)
    return envs


ENVS: dict[str, tuple[type, dict]] = {
    **{f"MiniGrid-Empty-Random-{n}x{n}-v0": (EmptyRandom, {"size": n}) for n in (5, 6)},
    "MiniGrid-DistShift1-v0": (DistShift, {"strip2_row": 2}),
    "MiniGrid-DistShift2-v0": (DistShift, {"strip2_row": 5}),
    **{f"MiniGrid-LavaGapS{n}-v0": (LavaGap, {"size": n}) for n in (5, 6, 7)},
    **_crossing_ids(),
}
