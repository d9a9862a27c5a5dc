"""The multi-agent environment contract (JaxMARL's dict API) with same-step auto-reset.

```python
obs, state = env.reset(key, params)                                  # obs: {agent: observation}
obs, state, rewards, dones, info = env.step(key, state, actions, params)
# actions, rewards, dones: dicts keyed by agent name; dones["__all__"] ends the episode for everyone.
```
``step`` auto-resets when ``dones["__all__"]``: the observations and state returned are then those of a fresh
episode, ``info["final_observation"]``/``info["final_state"]`` hold the finished episode's last ones, and
``info["terminated"]``/``info["truncated"]`` say how it ended. Subclasses implement ``reset_env``/``step_env``
(pure, jittable), ``default_params``, ``action_space``/``observation_space`` per agent and ``render``.
"""

from __future__ import annotations

import abc
from typing import Any

import jax

from jaxsoc.core.env import _select_tree, check_discrete_action


class MultiAgentEnvironment(abc.ABC):
    """Base class of the two-agent worlds (household, CHAIC); see the module docstring."""

    #: the agents' names, in a fixed order
    agents: tuple[str, ...] = ()

    def __init__(self) -> None:
        self._reset_jit = jax.jit(self.reset_env)
        self._step_jit = jax.jit(self._auto_reset_step)

    @property
    def name(self) -> str:
        return type(self).__name__

    @property
    def num_agents(self) -> int:
        return len(self.agents)

    @abc.abstractmethod
    def default_params(self) -> Any:
        """Returns the default params pytree."""

    @abc.abstractmethod
    def reset_env(self, key: jax.Array, params: Any) -> tuple[dict, Any]:
        """Returns ``(obs, state)`` of a new episode, ``obs`` keyed by agent."""

    @abc.abstractmethod
    def step_env(self, key: jax.Array, state: Any, actions: dict, params: Any):
        """Returns ``(obs, state, rewards, dones, info)`` without auto-reset (dicts keyed by agent; ``dones``
        also has ``"__all__"``; ``info`` has ``terminated`` and ``truncated``)."""

    @abc.abstractmethod
    def action_space(self, agent: str, params: Any = None):
        """Returns ``agent``'s action space."""

    @abc.abstractmethod
    def observation_space(self, agent: str, params: Any = None):
        """Returns ``agent``'s observation space."""

    @abc.abstractmethod
    def render(self, state: Any, params: Any = None) -> jax.Array:
        """Returns an RGB image ``uint8[h, w, 3]`` of the state."""

    def reset(self, key: jax.Array, params: Any = None) -> tuple[dict, Any]:
        """Returns ``(obs, state)`` of a new episode. Jittable and vmappable over ``key``."""
        params = self.default_params() if params is None else params
        return self._reset_jit(key, params)

    def step(self, key: jax.Array, state: Any, actions: dict, params: Any = None):
        """Returns ``(obs, state, rewards, dones, info)``; see the module docstring. ``actions`` must hold one
        integer action per agent; concrete values outside an agent's space raise ``ValueError``."""
        params = self.default_params() if params is None else params
        self.check_actions(actions, params)
        return self._step_jit(key, state, actions, params)

    def check_actions(self, actions: Any, params: Any = None) -> None:
        """Raises ``TypeError``/``ValueError`` unless ``actions`` is a dict with exactly one scalar integer action
        per agent inside its space (values are checked only outside ``jit``)."""
        if not isinstance(actions, dict) or set(actions) != set(self.agents):
            got = sorted(actions) if isinstance(actions, dict) else type(actions).__name__
            raise ValueError(f"{self.name}: actions must be a dict keyed by {list(self.agents)}, got {got}")
        for agent in self.agents:
            check_discrete_action(self.name, f"{agent}'s action", actions[agent], self.action_space(agent, params))

    def _auto_reset_step(self, key, state, actions, params):
        key, key_reset = jax.random.split(key)
        obs_step, state_step, rewards, dones, info = self.step_env(key, state, actions, params)
        obs_reset, state_reset = self.reset_env(key_reset, params)
        done = dones["__all__"]
        info = dict(info, final_observation=obs_step, final_state=state_step)
        obs = _select_tree(done, obs_reset, obs_step)
        state = _select_tree(done, state_reset, state_step)
        return obs, state, rewards, dones, info
