"""Wrappers around an ``Environment``: the forwarding base and ``LogWrapper`` (episode statistics)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from jaxsoc.core.env import Environment


class Wrapper(Environment):
    """Forwards the contract to an inner environment; subclasses override what they change. ``reset`` and
    ``step`` keep the base class's host-side checks and jit caching."""

    def __init__(self, env: Environment) -> None:
        self._env = env
        self.stochastic_step = env.stochastic_step
        super().__init__()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._env, name)

    @property
    def name(self) -> str:
        return f"{type(self).__name__}({self._env.name})"

    @property
    def unwrapped(self) -> Environment:
        return getattr(self._env, "unwrapped", self._env)

    def default_params(self):
        return self._env.default_params()

    def reset_env(self, key, params):
        return self._env.reset_env(key, params)

    def step_env(self, key, state, action, params):
        return self._env.step_env(key, state, action, params)

    def action_space(self, params=None):
        return self._env.action_space(params)

    def observation_space(self, params=None):
        return self._env.observation_space(params)

    def render(self, state, params=None, **kwargs):
        return self._env.render(state, params, **kwargs)


@struct.dataclass
class LogState:
    """The inner state plus running and last-finished episode statistics (float32/int32 scalars)."""

    env_state: Any
    episode_return: jax.Array
    episode_length: jax.Array
    returned_episode_return: jax.Array
    returned_episode_length: jax.Array
    returned_episode_success: jax.Array


class LogWrapper(Wrapper):
    """Adds episode statistics to ``info`` at every step: ``returned_episode`` (an episode ended now) and
    ``returned_episode_return``, ``_length``, ``_success`` (the last finished episode's, so they can be
    averaged over the steps where ``returned_episode`` is True; see ``episode_metrics``)."""

    def reset_env(self, key, params):
        obs, state = self._env.reset_env(key, params)
        zero_f, zero_i = jnp.float32(0), jnp.int32(0)
        return obs, LogState(state, zero_f, zero_i, zero_f, zero_i, jnp.bool_(False))

    def step_env(self, key, state: LogState, action, params):
        obs, env_state, reward, terminated, truncated, info = self._env.step_env(key, state.env_state, action, params)
        done = terminated | truncated
        episode_return = state.episode_return + reward
        episode_length = state.episode_length + 1
        new_state = LogState(
            env_state=env_state,
            episode_return=episode_return * (1 - done),
            episode_length=episode_length * (1 - done),
            returned_episode_return=jnp.where(done, episode_return, state.returned_episode_return),
            returned_episode_length=jnp.where(done, episode_length, state.returned_episode_length),
            returned_episode_success=jnp.where(done, info["success"], state.returned_episode_success),
        )
        info = dict(
            info,
            returned_episode=done,
            returned_episode_return=new_state.returned_episode_return,
            returned_episode_length=new_state.returned_episode_length,
            returned_episode_success=new_state.returned_episode_success,
        )
        return obs, new_state, reward, terminated, truncated, info

    def _auto_reset_step(self, key, state, action, params):
        # The running sums are reset by step_env; keep them (not the fresh reset's zeros) in the new state.
        obs, new_state, reward, terminated, truncated, info = super()._auto_reset_step(key, state, action, params)
        stats = info["final_state"]
        new_state = stats.replace(env_state=new_state.env_state)
        return obs, new_state, reward, terminated, truncated, info


def episode_metrics(info: dict) -> dict[str, jax.Array]:
    """Returns the mean return, length and success of the episodes that finished in ``info`` (any batch or
    time shape), and ``num_episodes``. With no finished episode the means are 0 and ``num_episodes`` 0."""
    done = info["returned_episode"]
    count = done.sum()
    safe = jnp.maximum(count, 1)

    def mean(x):
        return jnp.where(done, x, 0).astype(jnp.float32).sum() / safe

    return {
        "return": mean(info["returned_episode_return"]),
        "length": mean(info["returned_episode_length"]),
        "success": mean(info["returned_episode_success"]),
        "num_episodes": count,
    }
