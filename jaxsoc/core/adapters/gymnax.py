"""``GymnaxEnv``: a jaxsoc environment behind gymnax's ``Environment`` API, for JAX clients written against gymnax
(rejax, PureJaxRL-style loops, gymnax's own wrappers).

What a gymnax client expects and gets here:

- gymnax spaces (``gymnax.environments.spaces.Discrete``, ``Box``, ``Dict``) from ``observation_space(params)`` and
  ``action_space(params)``; ``num_actions`` and ``name``;
- ``default_params`` as a property, a ``GymnaxParams`` holding the jaxsoc params and ``max_steps_in_episode``;
- ``max_steps_in_episode`` an upper bound of the steps of one episode, never 0 (``env.max_episode_steps``): clients
  bound loops with it (rejax's evaluation runs ``while length < max_steps_in_episode and not done``), and BabyAI's
  ``params.max_steps`` is 0 ("each episode's limit follows its instruction"), which would end those loops at once;
- ``step(key, state, action, params)``: the 6-tuple ``(obs, state, reward, terminated, truncated, info)`` of the
  installed gymnax 1.0 (its ``Environment.step`` and wrappers), or with ``step_tuple=5`` the older 5-tuple
  ``(obs, state, reward, done, info)``, ``done = terminated | truncated``, that gymnax 0.0.x code and rejax 0.1.3
  unpack. Auto-reset is the jaxsoc env's own; ``info`` keeps ``final_observation`` and adds ``terminated`` and
  ``truncated`` (as gymnax 1.0 does); ``final_state`` is left out (gymnax has none, and a rollout that stores
  ``info`` would keep a copy of every state);
- ``flatten=True`` flattens the (dict) observation into ``float32[D]`` (``adapters.flatten``, one-hot entries with
  ``one_hot``), the vector an MLP client (rejax's PPO) or gymnax's ``FlattenObservationWrapper`` wants.

gymnax is an optional dependency, imported by this module only: ``pip install 'jaxsoc[gymnax]'``.
"""

from __future__ import annotations

import numbers
from collections.abc import Collection
from typing import Any

import jax
import numpy as np
from flax import struct

from jaxsoc.core import spaces
from jaxsoc.core.adapters.flatten import FlattenObservation
from jaxsoc.core.env import Environment
from jaxsoc.core.registry import make as make_jaxsoc

try:
    from gymnax.environments import environment as gymnax_environment
    from gymnax.environments import spaces as gymnax_spaces
except ImportError as error:  # pragma: no cover - exercised only without gymnax
    raise ImportError(
        "jaxsoc.core.adapters.gymnax needs gymnax (an optional dependency): pip install 'jaxsoc[gymnax]'"
    ) from error

__all__ = ["GymnaxEnv", "GymnaxParams", "make", "to_gymnax_space"]


def to_gymnax_space(space: Any) -> gymnax_spaces.Space:
    """Returns the gymnax space equal to a jaxsoc ``Discrete``, ``Box`` or ``Dict`` (same dtypes, shapes and bounds;
    ``Dict`` sub-spaces converted recursively). A ``Discrete`` of a dtype gymnax's ``Discrete`` refuses (it takes
    ``int32`` and ``int64`` only) becomes the equal ``Box(0, n - 1, shape, dtype)``.

    Raises:
        TypeError: ``space`` is none of those.
    """
    if isinstance(space, spaces.Discrete):
        dtype = np.dtype(space.dtype)
        if space.shape == () and dtype in (np.dtype(np.int32), np.dtype(np.int64)):
            return gymnax_spaces.Discrete(int(space.n), dtype=dtype)
        return gymnax_spaces.Box(0, int(space.n) - 1, tuple(space.shape), space.dtype)
    if isinstance(space, spaces.Box):
        return gymnax_spaces.Box(space.low, space.high, tuple(space.shape), space.dtype)
    if isinstance(space, spaces.Dict):
        return gymnax_spaces.Dict({name: to_gymnax_space(sub) for name, sub in space.spaces.items()})
    raise TypeError(f"no gymnax equivalent for {space!r}")


@struct.dataclass
class GymnaxParams:
    """The params a ``GymnaxEnv`` hands to gymnax clients.

    Attributes:
        env_params: the jaxsoc env's params (a pytree; data fields stay data, so one compiled step serves them all).
        max_steps_in_episode: static ``int``, an upper bound of an episode's steps (never 0). It is what clients
            read; the episode's own limit (truncation) stays the jaxsoc params' (``max_steps=`` at ``make``).
    """

    env_params: Any
    max_steps_in_episode: int = struct.field(pytree_node=False, default=1)


class GymnaxEnv(gymnax_environment.Environment):
    """A single-agent jaxsoc environment behind gymnax's ``Environment`` API (see the module docstring).

    Args:
        env: a registered environment name (made with ``jaxsoc.make(env, **overrides)``) or an ``Environment``.
        params: the jaxsoc params; with a name they replace the made params (``overrides`` then not allowed);
            default: the made or the env's default params.
        flatten: flatten the observation into ``float32[D]`` (``adapters.flatten.FlattenObservation``).
        one_hot: with ``flatten``: one-hot categorical entries (True, or a collection of entry paths).
        step_tuple: 6 (gymnax 1.0: ``obs, state, reward, terminated, truncated, info``) or 5 (gymnax 0.0.x and
            rejax 0.1.3: ``obs, state, reward, done, info``).
        max_steps_in_episode: the ``GymnaxParams`` bound; default ``env.max_episode_steps(params)``. Required for an
            env whose params show no limit.
        **overrides: fields of the default params, e.g. ``max_steps=50`` (only with a name).

    Raises:
        TypeError: ``env`` is no single-agent ``Environment`` (a two-agent id: use its ``-Helper-v0`` view), or
            overrides without a name.
        ValueError: a bad ``step_tuple`` or ``max_steps_in_episode``, ``one_hot`` without ``flatten``, or no limit
            found and none given.
    """

    def __init__(
        self,
        env: str | Environment,
        params: Any = None,
        *,
        flatten: bool = False,
        one_hot: bool | Collection[str] = False,
        step_tuple: int = 6,
        max_steps_in_episode: int | None = None,
        **overrides: Any,
    ) -> None:
        if isinstance(env, str):
            if params is not None and overrides:
                raise TypeError(f"{env}: give params or keyword overrides, not both")
            env, made = make_jaxsoc(env, **overrides)
            params = made if params is None else params
        elif overrides:
            raise TypeError(f"keyword overrides {sorted(overrides)} need an env name; pass params instead")
        if not isinstance(env, Environment):
            raise TypeError(
                f"GymnaxEnv adapts a single-agent jaxsoc Environment, got {type(env).__name__}; a two-agent task has "
                f"a single-agent helper view (e.g. 'CHAIC-Normal-Helper-v0', 'WatchAndHelp-Helper-v0')"
            )
        if step_tuple not in (5, 6) or isinstance(step_tuple, bool):
            raise ValueError(f"step_tuple must be 6 (gymnax 1.0) or 5 (gymnax 0.0.x, rejax 0.1.3), got {step_tuple!r}")
        if one_hot is not False and not flatten:
            raise ValueError("one_hot applies to the flattened observation: pass flatten=True with it")
        params = env.default_params() if params is None else params
        limit = env.max_episode_steps(params) if max_steps_in_episode is None else max_steps_in_episode
        if limit is None:
            raise ValueError(
                f"{env.name}: its params show no episode limit; pass GymnaxEnv(..., max_steps_in_episode=N), an "
                f"upper bound of an episode's steps"
            )
        if isinstance(limit, bool) or not isinstance(limit, numbers.Integral) or limit < 1:
            raise ValueError(f"max_steps_in_episode must be a positive integer, got {limit!r}")
        self._env = FlattenObservation(env, one_hot, params) if flatten else env
        self._params = params
        self._limit = int(limit)
        self.step_tuple = step_tuple

    def __repr__(self) -> str:
        return f"GymnaxEnv({self._env.name}, step_tuple={self.step_tuple})"

    @property
    def env(self) -> Environment:
        """The jaxsoc environment stepped (a ``FlattenObservation`` around the given one with ``flatten``)."""
        return self._env

    @property
    def name(self) -> str:
        return self._env.name

    @property
    def default_params(self) -> GymnaxParams:
        """The params (a property, as in gymnax): the jaxsoc params and ``max_steps_in_episode``."""
        return GymnaxParams(self._params, self._limit)

    @property
    def num_actions(self) -> int:
        return int(self._env.action_space(self._params).n)

    def _inner(self, params: Any) -> Any:
        """Returns the jaxsoc params of ``params``: a ``GymnaxParams``, jaxsoc params, or None (the defaults)."""
        if params is None:
            return self._params
        return params.env_params if isinstance(params, GymnaxParams) else params

    def observation_space(self, params: Any = None) -> gymnax_spaces.Space:
        """Returns the gymnax observation space (``Dict``, or ``Box(.., (D,), float32)`` with ``flatten``)."""
        return to_gymnax_space(self._env.observation_space(self._inner(params)))

    def action_space(self, params: Any = None) -> gymnax_spaces.Discrete:
        """Returns the gymnax ``Discrete`` action space."""
        return to_gymnax_space(self._env.action_space(self._inner(params)))

    def reset(self, key: jax.Array, params: Any = None) -> tuple[Any, Any]:
        """Returns ``(obs, state)`` of a new episode (the jaxsoc env's ``reset``); jittable and vmappable."""
        return self._env.reset(key, self._inner(params))

    def step(self, key: jax.Array, state: Any, action: Any, params: Any = None) -> tuple:
        """Returns ``(obs, state, reward, terminated, truncated, info)`` or, with ``step_tuple=5``, ``(obs, state,
        reward, done, info)`` (``done = terminated | truncated``, bool). Auto-resets as the jaxsoc env does;
        ``info`` as described in the module docstring. Jittable and vmappable."""
        obs, state, reward, terminated, truncated, info = self._env.step(key, state, action, self._inner(params))
        info = {name: value for name, value in info.items() if name != "final_state"}
        info.update(terminated=terminated, truncated=truncated)
        if self.step_tuple == 5:
            return obs, state, reward, terminated | truncated, info
        return obs, state, reward, terminated, truncated, info

    def render(self, state: Any, params: Any = None) -> jax.Array:
        """Returns the jaxsoc env's RGB image ``uint8[h, w, 3]`` of ``state``."""
        return self._env.render(state, self._inner(params))


def make(env: str, **kwargs: Any) -> tuple[GymnaxEnv, GymnaxParams]:
    """Returns ``(GymnaxEnv(env, **kwargs), its default_params)``, as ``gymnax.make`` does for gymnax's own ids."""
    adapted = GymnaxEnv(env, **kwargs)
    return adapted, adapted.default_params
