"""Wrappers around an ``Environment``: the forwarding ``Wrapper`` base and ``LogWrapper`` (PureJaxRL-style
episode statistics kept in the state), plus ``episode_metrics`` to average those statistics.

A wrapped env keeps the public contract of ``jaxsoc.core.env.Environment``: ``reset(key, params)`` and
``step(key, state, action, params)`` validate their arguments on the host (``check_action`` of the inner
env), call cached jitted cores, and remain jittable and vmappable themselves.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from jaxsoc.core.env import Environment


class Wrapper(Environment):
    """Forwards the whole contract (``reset``/``step`` through the base class, ``reset_env``, ``step_env``,
    the auto-reset step, spaces, ``render``, ``default_params``, ``check_action`` and any other attribute)
    to the inner environment. Subclasses override what they change.

    Auto-reset: a wrapper that overrides neither ``reset_env`` nor ``step_env`` uses the inner env's own
    auto-reset step unchanged (so an inner env or wrapper with a custom auto-reset keeps it); one that
    overrides either gets the base class's composition of its ``step_env`` and ``reset_env``.
    """

    def __init__(self, env: Environment) -> None:
        if not isinstance(env, Environment):
            raise TypeError(f"{type(self).__name__} wraps a jaxsoc Environment, got {type(env).__name__}")
        self._env = env
        self.stochastic_step = env.stochastic_step
        super().__init__()

    def __getattr__(self, name: str) -> Any:
        # Only called for attributes not found on the wrapper; never forward before ``_env`` exists
        # (copy/pickle create the object without calling __init__).
        if name == "_env" or (name.startswith("__") and name.endswith("__")):
            raise AttributeError(name)
        return getattr(self._env, name)

    @property
    def env(self) -> Environment:
        """The wrapped (inner) environment."""
        return self._env

    @property
    def unwrapped(self) -> Environment:
        """The innermost, unwrapped environment."""
        return getattr(self._env, "unwrapped", self._env)

    @property
    def name(self) -> str:
        return f"{type(self).__name__}({self._env.name})"

    def default_params(self) -> Any:
        return self._env.default_params()

    def reset_env(self, key: jax.Array, params: Any):
        return self._env.reset_env(key, params)

    def step_env(self, key: jax.Array, state: Any, action: jax.Array, params: Any):
        return self._env.step_env(key, state, action, params)

    def action_space(self, params: Any = None):
        return self._env.action_space(params)

    def observation_space(self, params: Any = None):
        return self._env.observation_space(params)

    def render(self, state: Any, params: Any = None, **kwargs: Any) -> jax.Array:
        """Returns the inner env's RGB image ``uint8[h, w, 3]`` of ``state``."""
        return self._env.render(state, params, **kwargs)

    def check_action(self, action: Any, params: Any = None) -> None:
        """Raises ``TypeError``/``ValueError`` as the inner env's ``check_action`` does."""
        self._env.check_action(action, params)

    def max_episode_steps(self, params: Any = None) -> int | None:
        """Returns the inner env's ``max_episode_steps`` (a wrapper does not change how long an episode lasts)."""
        return self._env.max_episode_steps(params)

    def _auto_reset_step(self, key, state, action, params):
        cls = type(self)
        if cls.step_env is Wrapper.step_env and cls.reset_env is Wrapper.reset_env:
            return self._env._auto_reset_step(key, state, action, params)
        return super()._auto_reset_step(key, state, action, params)


@struct.dataclass
class LogState:
    """The inner env's state plus episode statistics (all scalars; a leading batch axis under ``vmap``).

    Attributes:
        env_state: the wrapped env's state.
        episode_returns: ``float32[]`` return of the running episode so far.
        episode_lengths: ``int32[]`` steps of the running episode so far.
        returned_episode_returns: ``float32[]`` return of the last finished episode (0 before any).
        returned_episode_lengths: ``int32[]`` length of the last finished episode (0 before any).
        returned_episode_success: ``bool[]`` ``info["success"]`` at the end of the last finished episode.
        timestep: ``int32[]`` steps taken since ``reset``, across episodes (auto-resets do not clear it).
    """

    env_state: Any
    episode_returns: jax.Array
    episode_lengths: jax.Array
    returned_episode_returns: jax.Array
    returned_episode_lengths: jax.Array
    returned_episode_success: jax.Array
    timestep: jax.Array


class LogWrapper(Wrapper):
    """Keeps episode statistics in the state (``LogState``) and reports them in ``info`` at every step:

    - ``returned_episode``: ``bool[]``, an episode ended at this step (``terminated | truncated``);
    - ``returned_episode_returns`` (``float32[]``), ``returned_episode_lengths`` (``int32[]``),
      ``returned_episode_success`` (``bool[]``): the statistics of the last finished episode, i.e. of the
      one that just ended where ``returned_episode`` is True (average them over those steps with
      ``episode_metrics``);
    - ``timestep``: ``int32[]``, steps since ``reset`` (``LogState.timestep`` after this step).

    The inner env's own auto-reset is used (same keys, so observations, rewards and inner states are
    exactly those of the unwrapped env); ``info["final_state"]`` is a ``LogState`` around the inner final
    state whose running sums hold the finished episode's totals. ``step_env`` (no reset) likewise leaves
    the running sums at the totals. ``render`` sees the inner state through ``state.env_state``.

    Put it outermost (as in PureJaxRL): a wrapper above it that overrides ``step_env``/``reset_env`` gets
    the base auto-reset, whose reset would clear the held ``returned_episode_*`` values and ``timestep``
    (the values reported at the step an episode ends, which ``episode_metrics`` reads, stay right).
    """

    def reset_env(self, key: jax.Array, params: Any):
        """Returns ``(obs, LogState)`` of a new episode with zeroed statistics."""
        obs, env_state = self._env.reset_env(key, params)
        zero_f, zero_i = jnp.zeros((), jnp.float32), jnp.zeros((), jnp.int32)
        return obs, LogState(env_state, zero_f, zero_i, zero_f, zero_i, jnp.zeros((), jnp.bool_), zero_i)

    def step_env(self, key: jax.Array, state: LogState, action: jax.Array, params: Any):
        """The raw transition of the inner env with updated statistics (no reset)."""
        obs, env_state, reward, terminated, truncated, info = self._env.step_env(key, state.env_state, action, params)
        final, info = self._log(state, env_state, reward, terminated, truncated, info)
        return obs, final, reward, terminated, truncated, info

    def _auto_reset_step(self, key, state: LogState, action, params):
        obs, env_state, reward, terminated, truncated, info = self._env._auto_reset_step(
            key, state.env_state, action, params
        )
        final, info = self._log(state, info["final_state"], reward, terminated, truncated, info)
        done = terminated | truncated
        new_state = final.replace(
            env_state=env_state,
            episode_returns=jnp.where(done, jnp.float32(0), final.episode_returns),
            episode_lengths=jnp.where(done, jnp.int32(0), final.episode_lengths),
        )
        info["final_state"] = final
        return obs, new_state, reward, terminated, truncated, info

    @staticmethod
    def _log(state: LogState, env_state, reward, terminated, truncated, info):
        """Returns ``(LogState after the step without reset, info with the statistics added)``."""
        done = jnp.asarray(terminated | truncated, jnp.bool_)
        success = jnp.asarray(info.get("success", jnp.zeros_like(done)), jnp.bool_)
        episode_returns = state.episode_returns + jnp.asarray(reward, jnp.float32)
        episode_lengths = state.episode_lengths + 1
        final = LogState(
            env_state=env_state,
            episode_returns=episode_returns,
            episode_lengths=episode_lengths,
            returned_episode_returns=jnp.where(done, episode_returns, state.returned_episode_returns),
            returned_episode_lengths=jnp.where(done, episode_lengths, state.returned_episode_lengths),
            returned_episode_success=jnp.where(done, success, state.returned_episode_success),
            timestep=state.timestep + 1,
        )
        info = dict(
            info,
            returned_episode=done,
            returned_episode_returns=final.returned_episode_returns,
            returned_episode_lengths=final.returned_episode_lengths,
            returned_episode_success=final.returned_episode_success,
            timestep=final.timestep,
        )
        return final, info

    def render(self, state: LogState, params: Any = None, **kwargs: Any) -> jax.Array:
        """Returns the inner env's RGB image ``uint8[h, w, 3]`` of ``state.env_state``."""
        return self._env.render(state.env_state, params, **kwargs)


def episode_metrics(info: dict[str, Any]) -> dict[str, jax.Array]:
    """Averages the statistics of the episodes that finished in a ``LogWrapper`` ``info``.

    ``info`` may be one step's info or a stack of them with any leading shape (``[N]`` from ``vmap``,
    ``[T, N]`` from ``lax.scan`` over a batched step, ...); every finished episode (each entry where
    ``info["returned_episode"]`` is True) counts once. Works under ``jit``/``vmap`` and on numpy input.

    Returns:
        A dict of scalars: ``return`` (``float32``, mean return), ``length`` (``float32``, mean length),
        ``success`` (``float32``, success rate) and ``num_episodes`` (``int32``, number of finished
        episodes). With no finished episode the means are 0.0 (not NaN) and ``num_episodes`` is 0, so
        weight or mask them by ``num_episodes`` when aggregating.
    """
    done = jnp.asarray(info["returned_episode"], jnp.bool_)
    count = jnp.sum(done, dtype=jnp.int32)
    denominator = jnp.maximum(count, 1).astype(jnp.float32)

    def mean(x: Any) -> jax.Array:
        x = jnp.broadcast_to(jnp.asarray(x, jnp.float32), done.shape)
        return jnp.sum(jnp.where(done, x, 0.0)) / denominator

    return {
        "return": mean(info["returned_episode_returns"]),
        "length": mean(info["returned_episode_lengths"]),
        "success": mean(info["returned_episode_success"]),
        "num_episodes": count,
    }
