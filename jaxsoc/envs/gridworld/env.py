"""``GridEnvironment``: the MiniGrid step, observation, reward and spaces shared by every grid family.

A subclass supplies ``generate`` (a jittable level generator) and, when its task is not "reach the goal",
``task_outcome``. Everything else (minigrid's action rules, the 7x7 view with ``process_vis``, reward
``1 - 0.9 * step_count / max_steps``, truncation at ``max_steps``) is here.

Hooks for the other minigrid tasks: ``num_actions`` (Dynamic-Obstacles acts with 3), ``mission_tokens``
(the mission as ``mission.VOCAB`` ids; with ``mission_observation`` it is also observed, as ``mission``,
for tasks whose mission varies), ``mission_text`` (minigrid's string, decoded from the tokens) and
``import_minigrid`` (a live minigrid env's state). A task that needs more state than ``GridState`` subclasses
it with a ``flax.struct`` dataclass: ``transition`` and ``replace`` keep the subclass.
"""

from __future__ import annotations

import abc

import jax
import jax.numpy as jnp

from jaxsoc.core import spaces
from jaxsoc.core.env import Environment
from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld import mission as mission_words
from jaxsoc.envs.gridworld.dynamics import Transition, success_reward, transition
from jaxsoc.envs.gridworld.observation import observation_space, observe
from jaxsoc.envs.gridworld.state import GridParams, GridState
from jaxsoc.envs.gridworld.views import KINDS, with_view


class GridEnvironment(Environment):
    """A MiniGrid-semantics environment; ``params`` defaults are given to the constructor."""

    mission: str = ""
    #: add the ``mission`` tokens to the observation (for tasks whose mission varies with the level)
    mission_observation: bool = False
    #: size of the action space (minigrid's 7, or a prefix of them)
    num_actions: int = C.NUM_ACTIONS

    def __init__(self, **params) -> None:
        self._default_params = GridParams(**params)
        super().__init__()

    def default_params(self) -> GridParams:
        return self._default_params

    @abc.abstractmethod
    def generate(self, key: jax.Array, params: GridParams) -> GridState:
        """Returns the initial state of a new level (jittable)."""

    def task_outcome(
        self, state: GridState, action: jax.Array, moved: Transition, params: GridParams
    ) -> tuple[jax.Array, jax.Array]:
        """Returns ``(success, failure)`` after a step; the default is minigrid's: stepping onto the goal
        succeeds, stepping into lava fails."""
        entered = moved.front_before[C.TYPE]
        stepped = action == C.FORWARD
        return stepped & (entered == C.GOAL), stepped & (entered == C.LAVA)

    def mission_tokens(self, state: GridState, params: GridParams | None = None) -> jax.Array:
        """Returns the mission, ``int32[mission.MAX_TOKENS]`` word ids (jittable); the default is the
        constant ``mission``."""
        return jnp.asarray(mission_words.encode(self.mission))

    def mission_text(self, state: GridState, params: GridParams | None = None) -> str:
        """Returns minigrid's mission string for one (unbatched) state (host side)."""
        return mission_words.decode(self.mission_tokens(state, params))

    def import_minigrid(self, env) -> tuple[GridState, GridParams]:
        """Returns ``(state, params)`` of a live minigrid env of this task (see ``compat.from_minigrid``)."""
        from jaxsoc.envs.gridworld.compat import from_minigrid

        return from_minigrid(env)

    def _observe(self, state: GridState, params: GridParams) -> dict[str, jax.Array]:
        obs = observe(state, params)
        if self.mission_observation:
            obs["mission"] = self.mission_tokens(state, params)
        return obs

    def reset_env(self, key, params):
        state = self.generate(key, params)
        return self._observe(state, params), state

    def step_env(self, key, state, action, params):
        state, moved = transition(state, action)
        success, failure = self.task_outcome(state, action, moved, params)
        reward = jnp.where(success, success_reward(state.step_count, params.max_steps), 0.0)
        terminated = success | failure
        truncated = state.step_count >= params.max_steps
        info = {"success": success, "episode_steps": state.step_count}
        return self._observe(state, params), state, reward, terminated, truncated, info

    def observe(self, state: GridState, params: GridParams | None = None) -> dict[str, jax.Array]:
        """Returns the observation of ``state`` (see ``observation.observe``, plus ``mission``)."""
        return self._observe(state, self.default_params() if params is None else params)

    def grid_world(self, state: GridState) -> GridState:
        """Returns the ``GridState`` of an env state (the state itself here; the observation views read it)."""
        return state

    def observation_kinds(self) -> tuple[str, ...]:
        """Returns the observation kinds of the grid families (``views.KINDS``: ``partial``, the default, ``full``,
        ``rgb_partial``, ``rgb`` and ``one_hot_partial``)."""
        return KINDS

    def with_observation(self, kind: str, tile_size: int | None = None) -> Environment:
        """Returns this env observing ``kind`` (``views.with_view``; ``tile_size`` for the pixel kinds, default 8)."""
        return with_view(self, kind, tile_size)

    def action_space(self, params=None) -> spaces.Discrete:
        return spaces.Discrete(self.num_actions)

    def observation_space(self, params=None) -> spaces.Dict:
        space = observation_space(self.default_params() if params is None else params)
        if not self.mission_observation:
            return space
        tokens = spaces.Box(0, len(mission_words.VOCAB) - 1, (mission_words.MAX_TOKENS,), jnp.int32)
        return spaces.Dict({**space.spaces, "mission": tokens})

    def render(self, state: GridState, params: GridParams | None = None, tile_size: int = 32) -> jax.Array:
        """Returns the full-world RGB image ``uint8[H * tile, W * tile, 3]`` with the agent's view
        highlighted, as minigrid's ``render(mode="rgb_array")`` draws it."""
        from jaxsoc.envs.gridworld.rendering import render_state

        params = self.default_params() if params is None else params
        return render_state(state, params, tile_size=tile_size)
