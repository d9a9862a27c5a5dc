"""``BabyAIEnvironment``: a BabyAI level (generator + instruction + verifier) on the MiniGrid engine.

A step is minigrid 3.2.0's ``RoomGridLevel.step``: the MiniGrid transition, then (on ``drop``) the
verifier's position snapshot refresh, then ``instrs.verify(action)``. Success terminates with reward
``1 - 0.9 * step_count / max_steps``; a wrong action never ends the episode, except in the ``*Debug``
levels, whose strict instructions fail (terminated, reward 0, see ``verifier``); truncation comes at the
episode's ``max_steps``, which depends on the instruction (``num_navs * room_size**2 * rows * cols``) unless
``params.max_steps`` is set to a positive value.

The observation adds ``mission`` (``int32[MAX_MISSION_TOKENS]``, word ids of ``language.VOCAB``, 0-padded)
to minigrid's ``image`` and ``direction``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsoc.core import spaces
from jaxsoc.core.env import Environment
from jaxsoc.envs.babyai import instr as I
from jaxsoc.envs.babyai import language, verifier
from jaxsoc.envs.babyai.levels.common import LevelGenerator
from jaxsoc.envs.babyai.levels.common import max_steps as instruction_max_steps
from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld.dynamics import success_reward, transition
from jaxsoc.envs.gridworld.observation import observation_space, observe
from jaxsoc.envs.gridworld.state import GridState
from jaxsoc.envs.gridworld.views import KINDS, with_view


def observe_babyai(state: I.BabyAIState, params: I.BabyAIParams) -> dict[str, jax.Array]:
    """Returns the observation: ``image`` ``uint8[7, 7, 3]``, ``direction`` ``int32[]`` and ``mission``
    ``int32[MAX_MISSION_TOKENS]``."""
    obs = observe(state.world, params)
    return dict(obs, mission=state.mission.astype(jnp.int32))


def new_episode(world, instruction: I.Instruction, params: I.BabyAIParams) -> I.BabyAIState:
    """Returns the ``BabyAIState`` of a freshly generated level: the verifier's reset and the mission."""
    check = verifier.init_verifier(world, instruction, params)
    limit = jnp.where(params.max_steps > 0, params.max_steps, instruction_max_steps(instruction, params))
    return I.BabyAIState(
        world=world,
        instr=instruction,
        verifier=check,
        max_steps=jnp.asarray(limit, jnp.int32),
        mission=language.encode_mission(instruction, check.plural),
    )


class BabyAIEnvironment(Environment):
    """One BabyAI level. ``generator(key, params) -> (GridState, Instruction)`` draws a level on device.

    A reset runs many rejection attempts, so ``step`` resets only the worlds whose episode ended, also under
    ``jax.vmap(env.step)`` (``pooled_resets``)."""

    pooled_resets = True

    def __init__(self, name: str, generator: LevelGenerator, params: I.BabyAIParams) -> None:
        self._name = name
        self.generator = generator
        self._default_params = params
        super().__init__()

    @property
    def name(self) -> str:
        return self._name

    def default_params(self) -> I.BabyAIParams:
        return self._default_params

    def max_episode_steps(self, params: I.BabyAIParams | None = None) -> int:
        """Returns ``params.max_steps`` when positive, else the longest instruction's limit: minigrid's
        ``num_navs * room_size**2 * num_rows * num_cols`` with ``num_navs`` at most 2 per leaf (``put next``)."""
        params = self.default_params() if params is None else params
        if int(params.max_steps) > 0:
            return int(params.max_steps)
        return 2 * I.MAX_LEAVES * int(params.room_size) ** 2 * int(params.num_rows) * int(params.num_cols)

    def reset_env(self, key: jax.Array, params: I.BabyAIParams):
        world, instruction = self.generator(key, params)
        state = new_episode(world, instruction, params)
        return observe_babyai(state, params), state

    def step_env(self, key: jax.Array, state: I.BabyAIState, action: jax.Array, params: I.BabyAIParams):
        world, moved = transition(state.world, action)
        check, success, failure = verifier.verify_status(state.verifier, state.instr, world, action, moved.dropped)
        # MiniGridEnv.step's own rule (no goal or lava in the paper levels, but imported grids may have them)
        entered = jnp.where(moved.entered, moved.front_before[C.TYPE], C.EMPTY)
        success = (success | (entered == C.GOAL)) & ~failure  # a failed instruction overrides the reward with 0
        reward = jnp.where(success, success_reward(world.step_count, state.max_steps), 0.0)
        terminated = success | failure | (entered == C.LAVA)
        truncated = world.step_count >= state.max_steps
        state = state.replace(world=world, verifier=check)
        info = {"success": success, "episode_steps": world.step_count}
        return observe_babyai(state, params), state, reward, terminated, truncated, info

    def mission_text(self, state: I.BabyAIState, params: I.BabyAIParams | None = None) -> str:
        """Returns minigrid's mission string of one (unbatched) state."""
        return language.to_text(state.instr, state.verifier.plural)

    def import_minigrid(self, env) -> tuple[I.BabyAIState, I.BabyAIParams]:
        """Returns ``(state, params)`` of a live minigrid BabyAI env (see ``compat.from_minigrid``)."""
        from jaxsoc.envs.babyai.compat import from_minigrid

        return from_minigrid(env)

    def observe(self, state: I.BabyAIState, params: I.BabyAIParams | None = None) -> dict[str, jax.Array]:
        """Returns the observation of ``state`` (``observe_babyai``; one world, jittable)."""
        return observe_babyai(state, self.default_params() if params is None else params)

    def grid_world(self, state: I.BabyAIState) -> GridState:
        """Returns the ``GridState`` of a BabyAI state (``state.world``; the observation views read it)."""
        return state.world

    def observation_kinds(self) -> tuple[str, ...]:
        """Returns the observation kinds of the grid families (``gridworld.views.KINDS``)."""
        return KINDS

    def with_observation(self, kind: str, tile_size: int | None = None) -> Environment:
        """Returns this env observing ``kind`` (``gridworld.views.with_view``; ``tile_size`` for the pixel kinds)."""
        return with_view(self, kind, tile_size)

    def action_space(self, params=None) -> spaces.Discrete:
        return spaces.Discrete(C.NUM_ACTIONS)

    def observation_space(self, params=None) -> spaces.Dict:
        grid = observation_space(self.default_params() if params is None else params)
        mission = spaces.Box(0, len(language.VOCAB) - 1, (I.MAX_MISSION_TOKENS,), jnp.int32)
        return spaces.Dict({**grid.spaces, "mission": mission})

    def render(self, state: I.BabyAIState, params: I.BabyAIParams | None = None, tile_size: int = 32) -> jax.Array:
        """Returns the full-world RGB image ``uint8[H * tile, W * tile, 3]`` with the agent's view
        highlighted (the mission text is added by ``render.caption`` on the host)."""
        from jaxsoc.envs.gridworld.rendering import render_state

        params = self.default_params() if params is None else params
        return render_state(state.world, params, tile_size=tile_size)
