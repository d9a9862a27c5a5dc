"""A gymnasium ``VectorEnv`` over a jaxsoc environment, for numpy users (same-step auto-reset).

gymnasium is optional: ``pip install 'jaxsoc[gymnasium]'``.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from jaxsoc.core import spaces

try:
    import gymnasium
    from gymnasium.vector import AutoresetMode, VectorEnv
except ImportError as error:  # pragma: no cover - exercised only without gymnasium
    raise ImportError("jaxsoc.core.vector needs gymnasium: pip install 'jaxsoc[gymnasium]'") from error


def to_gymnasium_space(space: Any) -> gymnasium.Space:
    """Returns the gymnasium space equal to a jaxsoc ``Discrete``, ``Box`` or ``Dict``."""
    if isinstance(space, spaces.Discrete):
        return gymnasium.spaces.Discrete(space.n)
    if isinstance(space, spaces.Box):
        dtype = np.dtype(space.dtype)
        return gymnasium.spaces.Box(space.low, space.high, space.shape, dtype)
    if isinstance(space, spaces.Dict):
        return gymnasium.spaces.Dict({k: to_gymnasium_space(v) for k, v in space.spaces.items()})
    raise TypeError(f"no gymnasium equivalent for {space!r}")


class GymnasiumVectorEnv(VectorEnv):
    """``num_envs`` worlds stepped by one jitted ``vmap``; observations, rewards and flags come back as numpy
    arrays with a leading ``num_envs`` axis. Finished worlds reset in the same step
    (``AutoresetMode.SAME_STEP``): ``infos["final_obs"]`` holds their last observation and
    ``infos["_final_obs"]`` marks which worlds finished."""

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": ["rgb_array"]}

    def __init__(self, env: Any, num_envs: int, params: Any = None, seed: int = 0, **overrides: Any) -> None:
        if isinstance(env, str):
            import jaxsoc

            env, made = jaxsoc.make(env, **overrides)
            params = made if params is None else params
        self.env = env
        self.params = env.default_params() if params is None else params
        self.num_envs = int(num_envs)
        self.render_mode = "rgb_array"
        self.single_observation_space = to_gymnasium_space(env.observation_space(self.params))
        self.single_action_space = to_gymnasium_space(env.action_space(self.params))
        self.observation_space = gymnasium.vector.utils.batch_space(self.single_observation_space, self.num_envs)
        self.action_space = gymnasium.spaces.MultiDiscrete(np.full(self.num_envs, self.single_action_space.n))
        self._key = jax.random.key(seed)
        self._reset = jax.jit(jax.vmap(env.reset_env, in_axes=(0, None)))
        self._step = jax.jit(jax.vmap(env._auto_reset_step, in_axes=(0, 0, 0, None)))
        self._state = None

    def _next_keys(self) -> jax.Array:
        self._key, sub = jax.random.split(self._key)
        return jax.random.split(sub, self.num_envs)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Returns ``(obs, infos)`` for fresh episodes in every world; ``seed`` restarts the key stream."""
        if seed is not None:
            self._key = jax.random.key(seed)
        obs, self._state = self._reset(self._next_keys(), self.params)
        return jax.device_get(obs), {}

    def step(self, actions):
        """Returns ``(obs, rewards float32[N], terminations bool[N], truncations bool[N], infos)``."""
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs,):
            raise ValueError(f"actions must have shape ({self.num_envs},), got {actions.shape}")
        if not np.issubdtype(actions.dtype, np.integer):
            raise TypeError(f"actions must be integers, got dtype {actions.dtype}")
        n = self.single_action_space.n
        if actions.min() < 0 or actions.max() >= n:
            raise ValueError(
                f"actions must lie in [0, {n}), got values {sorted(set(actions[(actions < 0) | (actions >= n)]))}"
            )
        obs, self._state, reward, terminated, truncated, info = self._step(
            self._next_keys(), self._state, actions.astype(np.int32), self.params
        )
        obs, reward, terminated, truncated, info = jax.device_get((obs, reward, terminated, truncated, info))
        done = terminated | truncated
        infos = {
            "success": info["success"],
            "episode_steps": info["episode_steps"],
            "final_obs": info["final_observation"],
            "_final_obs": done,
        }
        return obs, reward.astype(np.float32), terminated, truncated, infos

    def render(self):
        """Returns the first world's RGB frame ``uint8[h, w, 3]``."""
        if self._state is None:
            raise RuntimeError("call reset() before render()")
        first = jax.tree_util.tree_map(lambda x: x[0], self._state)
        return np.asarray(self.env.render(first, self.params))

    def close(self, **kwargs):
        self._state = None
