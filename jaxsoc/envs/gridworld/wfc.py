"""minigrid 3.2.0's wave-function-collapse ids (``minigrid/envs/wfc``): ``MiniGrid-WFC-<preset>-v0``.

A level is a 25x25 layout of walls and floor that WFC draws from a pattern image, reduced to its largest connected
open area, with the agent and a green goal on two distinct uniform open cells and a uniform direction; the mission
is "traverse the maze to get to the goal", ``max_steps = 20 * size``, and the task is minigrid's default (reach the
goal). Design: a bank of layouts generated on the host by minigrid's own generator (``wfc_bank``), indexed inside
``jit``; ``reset`` draws a bank index, then the agent, goal and direction on the device, as minigrid draws them
given the layout.
"""

from __future__ import annotations

import functools
import os

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.core.env import Environment
from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld import placement as P
from jaxsoc.envs.gridworld import wfc_bank
from jaxsoc.envs.gridworld.env import GridEnvironment
from jaxsoc.envs.gridworld.state import GridState, make_state


def layout_grid(walls: jax.Array) -> jax.Array:
    """Returns ``uint8[H, W, NUM_CHANNELS]``: grey walls where ``walls`` ``bool[H, W]`` is True, empty elsewhere."""
    return jnp.where(walls[..., None], jnp.asarray(C.WALL_CELL), jnp.asarray(C.EMPTY_CELL))


def place_start_and_goal(bits: jax.Array, walls: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """minigrid's WFC placement given a layout: an ordered pair of distinct open cells, uniform, and a uniform
    direction. ``bits`` is ``uint32[3]``; returns ``(agent_pos int32[2], goal_pos int32[2], agent_dir int32[])``."""
    height, width = walls.shape
    agent = P.choose_cell(bits[0], ~walls)
    goal = P.choose_cell(bits[1], ~walls & P.away_from(height, width, agent, 1))
    return agent, goal, P.below(bits[2], 4)


class WFC(GridEnvironment):
    """``MiniGrid-WFC-<preset>-v0``. ``bank_size`` layouts of minigrid's generator (seeds ``0 .. bank_size - 1``)
    are built on first use and cached on disk (see ``wfc_bank``); ``patterns_dir`` is where minigrid's pattern
    images are (default ``$JAXSOC_WFC_PATTERNS``)."""

    mission = "traverse the maze to get to the goal"

    def __init__(
        self,
        preset: str = "MazeSimple",
        size: int = 25,
        bank_size: int = wfc_bank.DEFAULT_BANK_SIZE,
        patterns_dir: str | os.PathLike | None = None,
        **params,
    ):
        if preset not in wfc_bank.PRESETS:
            raise KeyError(f"unknown WFC preset {preset!r}; choose from {wfc_bank.PRESETS}")
        if not 1 <= bank_size <= wfc_bank.MAX_BANK_SIZE:
            raise ValueError(f"bank_size must be in [1, {wfc_bank.MAX_BANK_SIZE}], got {bank_size}")
        self.preset, self.size, self.bank_size = preset, size, bank_size
        self.patterns_dir = None if patterns_dir is None else str(patterns_dir)
        super().__init__(height=size, width=size, **{"max_steps": 20 * size, **params})

    @functools.cached_property
    def layouts(self) -> np.ndarray:
        """The bank, ``bool[bank_size, size, size]`` walls (built or loaded on first use, host side)."""
        return wfc_bank.cached_bank(self.preset, self.bank_size, self.size, self.patterns_dir)

    def set_layouts(self, layouts: np.ndarray) -> None:
        """Replaces the bank by ``layouts`` ``bool[N, size, size]`` (walls, ``[y, x]``; ``1 <= N < 2**16``; each
        with a wall border and at least two open cells, connected in minigrid's), e.g. a bank built elsewhere or a
        small stand-in where minigrid's pattern images are missing (tests). Compiled ``reset``/``step`` are
        dropped, since they hold the bank as a constant. Raises ``ValueError`` for layouts that break this."""
        layouts = np.asarray(layouts)
        n = layouts.shape[0] if layouts.ndim == 3 else 0
        shape_ok = layouts.shape[1:] == (self.size, self.size) and 1 <= n <= wfc_bank.MAX_BANK_SIZE
        if not shape_ok or layouts.dtype != np.bool_:
            shape = f"{layouts.dtype}{list(layouts.shape)}"
            raise ValueError(f"layouts must be bool[N, {self.size}, {self.size}] with 1 <= N < 2**16, got {shape}")
        border = np.ones((self.size, self.size), bool)
        border[1:-1, 1:-1] = False
        if not layouts[:, border].all() or (np.sum(~layouts, axis=(1, 2)) < 2).any():
            raise ValueError("every layout needs a wall border and at least two open cells")
        self.__dict__["layouts"] = layouts
        Environment.__init__(self)  # fresh jitted reset/step

    def generate(self, key: jax.Array, params) -> GridState:
        bits = jax.random.bits(key, (4,), jnp.uint32)
        bank = jnp.asarray(self.layouts)
        walls = bank[P.below(bits[0], bank.shape[0])]
        agent, goal, direction = place_start_and_goal(bits[1:], walls)
        grid = P.put(layout_grid(walls), goal, C.cell(C.GOAL, C.GREEN))
        return make_state(grid, agent, direction, target_pos=goal)


ENVS: dict[str, tuple[type, dict]] = {wfc_bank.env_id(preset): (WFC, {"preset": preset}) for preset in wfc_bank.PRESETS}
