"""minigrid 3.2.0's ``MiniGrid-Dynamic-Obstacles-*`` (``minigrid/envs/dynamicobstacles.py``): reach the goal
in the far corner of an empty room while blue balls wander; bumping into a ball or a wall costs -1 and ends
the episode.

The step is stochastic. Before the agent acts, every ball in turn (in the order they were placed) moves to a
uniformly chosen free cell of the 3x3 square around it (free: empty and not the agent's cell; later balls see
where earlier ones went). minigrid finds that cell by rejection sampling with 101 draws over the 9 cells and
leaves the ball where it is when all of them are rejected, so a ball with ``k`` free neighbours stays put
with probability ``(1 - k / 9) ** 101`` (always when ``k = 0``). Here one word picks the cell among the free
ones and a second one decides, with that probability, whether the ball stays: the same distribution with no
loop. The two words per ball are drawn from the step's key (``move_words``); ``step_with_moves`` is the step
given them, so tests can replay minigrid's moves exactly.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld import placement as P
from jaxsoc.envs.gridworld.classic import goal_cell, walled_grid
from jaxsoc.envs.gridworld.env import GridEnvironment
from jaxsoc.envs.gridworld.state import GridState, make_state

#: the 3x3 square around a ball as ``(dx, dy)`` offsets, row by row (the order ``move_words`` ranks cells in)
NEIGHBOURHOOD = np.array([(dx, dy) for dy in (-1, 0, 1) for dx in (-1, 0, 1)], np.int32)
#: minigrid's ``place_obj(max_tries=100)`` draws at most 101 cells before it gives up
MAX_DRAWS = 101
#: ``STAY_BELOW[k]``: a ball with ``k >= 1`` free neighbours stays where the second word is below this number,
#: i.e. with probability ``(1 - k / 9) ** 101`` (rounded to a multiple of 2**-32: 0 from ``k = 2`` on)
STAY_BELOW = np.array([min(round((1 - k / 9) ** MAX_DRAWS * 2**32), 2**32 - 1) for k in range(10)], np.uint32)
BALL_CELL = C.cell(C.BALL, C.BLUE)


@struct.dataclass
class ObstacleState(GridState):
    """A ``GridState`` plus ``obstacles``: ``int32[n, 2]``, the ``(x, y)`` of each ball in the order they move."""

    obstacles: jax.Array = None


def move_obstacles(state: ObstacleState, words: jax.Array) -> ObstacleState:
    """Moves every ball once, in order (minigrid's obstacle update), with ``words`` ``uint32[n, 2]``: per ball,
    word 0 picks the free cell (rank ``below(word, k)`` among the ``k`` free cells in ``NEIGHBOURHOOD`` order)
    and the ball stays when word 1 is below ``STAY_BELOW[k]``. Returns the state with grid and ``obstacles``
    updated."""
    grid, obstacles = state.grid, state.obstacles
    height, width = grid.shape[0], grid.shape[1]
    offsets = jnp.asarray(NEIGHBOURHOOD)
    for i in range(obstacles.shape[0]):
        old = obstacles[i]
        cells = old + offsets  # int32[9, 2]
        inside = (cells[:, 0] >= 0) & (cells[:, 0] < width) & (cells[:, 1] >= 0) & (cells[:, 1] < height)
        kinds = grid[jnp.clip(cells[:, 1], 0, height - 1), jnp.clip(cells[:, 0], 0, width - 1), C.TYPE]
        free = inside & (kinds == C.EMPTY) & jnp.any(cells != state.agent_pos, axis=1)
        count = jnp.sum(free)
        stays = (count == 0) | (words[i, 1] < jnp.asarray(STAY_BELOW)[count])
        new = jnp.where(stays, old, cells[P.choose_index(words[i, 0], free)])
        ball = grid[old[1], old[0]]
        grid = grid.at[old[1], old[0]].set(jnp.asarray(C.EMPTY_CELL)).at[new[1], new[0]].set(ball)
        obstacles = obstacles.at[i].set(new)
    return state.replace(grid=grid, obstacles=obstacles)


class DynamicObstacles(GridEnvironment):
    """``MiniGrid-Dynamic-Obstacles-*``: the agent starts at ``(1, 1)`` facing east (or anywhere, facing any
    way, with ``agent_start_pos=None``), the goal is at ``(size - 2, size - 2)`` and ``n_obstacles`` balls are
    placed uniformly. Three actions (left, right, forward; larger ones act as left, as in minigrid). Moving
    forward when the cell ahead held anything but the goal before the balls moved (a ball or a wall) gives
    reward -1 and ends the episode."""

    mission = "get to the green goal square"
    num_actions = 3
    stochastic_step = True

    def __init__(self, size: int = 8, agent_start_pos=(1, 1), agent_start_dir: int = 0, n_obstacles: int = 4, **params):
        self.agent_start_pos = None if agent_start_pos is None else tuple(agent_start_pos)
        self.agent_start_dir = agent_start_dir
        # minigrid's rule for too many obstacles
        self.n_obstacles = int(n_obstacles) if n_obstacles <= size / 2 + 1 else int(size / 2)
        params = {"max_steps": 4 * size**2, "see_through_walls": True, **params}
        super().__init__(height=size, width=size, **params)

    def generate(self, key, params):
        height, width = params.height, params.width
        k_agent, *k_balls = jax.random.bits(key, (1 + self.n_obstacles,), jnp.uint32)
        grid = jnp.asarray(walled_grid(height, width))
        goal = jnp.array([width - 2, height - 2], jnp.int32)
        grid = P.put(grid, goal, goal_cell())
        if self.agent_start_pos is None:
            pos, direction = P.place_agent(k_agent, grid, jnp.ones((height, width), bool))
        else:
            pos, direction = jnp.asarray(self.agent_start_pos, jnp.int32), jnp.int32(self.agent_start_dir)
        not_agent = P.away_from(height, width, pos, 1)
        balls = []
        for bits in k_balls:
            grid, ball = P.place(bits, grid, not_agent, BALL_CELL)
            balls.append(ball)
        state = make_state(grid, pos, direction, target_pos=goal)
        obstacles = jnp.stack(balls) if balls else jnp.zeros((0, 2), jnp.int32)
        return ObstacleState(**vars(state), obstacles=obstacles)

    def move_words(self, key: jax.Array) -> jax.Array:
        """Returns the random words of one step's ball moves, ``uint32[n_obstacles, 2]``."""
        return jax.random.bits(key, (self.n_obstacles, 2), jnp.uint32)

    def step_with_moves(self, words, state, action, params):
        """``step_env`` given the ball moves' random words ``uint32[n_obstacles, 2]`` (see ``move_obstacles``)."""
        action = jnp.asarray(action, jnp.int32)
        action = jnp.where(action >= self.num_actions, C.LEFT, action)
        ahead = state.agent_pos + jnp.asarray(C.DIR_TO_VEC)[state.agent_dir]
        kind = state.grid[ahead[1], ahead[0], C.TYPE]
        blocked = (kind != C.EMPTY) & (kind != C.GOAL)
        state = move_obstacles(state, words)
        obs, state, reward, terminated, truncated, info = super().step_env(None, state, action, params)
        collided = (action == C.FORWARD) & blocked
        reward = jnp.where(collided, -1.0, reward).astype(jnp.float32)
        info = dict(info, success=info["success"] & ~collided)
        return obs, state, reward, terminated | collided, truncated, info

    def step_env(self, key, state, action, params):
        return self.step_with_moves(self.move_words(key), state, action, params)

    def import_minigrid(self, env):
        from jaxsoc.envs.gridworld.compat import from_minigrid

        state, params = from_minigrid(env)
        balls = [tuple(int(v) for v in ball.cur_pos) for ball in env.unwrapped.obstacles]
        obstacles = jnp.asarray(np.array(balls, np.int32).reshape(len(balls), 2))
        return ObstacleState(**vars(state), obstacles=obstacles), params


ENVS = {
    "MiniGrid-Dynamic-Obstacles-5x5-v0": (DynamicObstacles, {"size": 5, "n_obstacles": 2}),
    "MiniGrid-Dynamic-Obstacles-Random-5x5-v0": (
        DynamicObstacles,
        {"size": 5, "agent_start_pos": None, "n_obstacles": 2},
    ),
    "MiniGrid-Dynamic-Obstacles-6x6-v0": (DynamicObstacles, {"size": 6, "n_obstacles": 3}),
    "MiniGrid-Dynamic-Obstacles-Random-6x6-v0": (
        DynamicObstacles,
        {"size": 6, "agent_start_pos": None, "n_obstacles": 3},
    ),
    "MiniGrid-Dynamic-Obstacles-8x8-v0": (DynamicObstacles, {}),
    "MiniGrid-Dynamic-Obstacles-16x16-v0": (DynamicObstacles, {"size": 16, "n_obstacles": 8}),
}
