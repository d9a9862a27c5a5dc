"""The single-agent environment contract (gymnax 1.0 signatures) with same-step auto-reset.

Subclasses implement ``default_params``, ``reset_env``, ``step_env``, ``action_space`` and
``observation_space`` as pure, jittable functions. The public ``reset``/``step`` validate their
arguments on the host, outside ``jit``, and call cached jitted versions, so the core stays branch-free.
"""

from __future__ import annotations

import abc
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.core import spaces
from jaxsoc.core.pooled import reset_where, select_reset

Obs = Any
Info = dict[str, Any]

#: the public calls in gymnax's argument order, for messages
_CALLS = {"reset": "env.reset(key, params)", "step": "env.step(key, state, action, params)"}
_DEFAULT_CALLS = {
    "reset": "env.reset(key, env.default_params())",
    "step": "env.step(key, state, action, env.default_params())",
}


def _is_traced(x: Any) -> bool:
    return isinstance(x, jax.core.Tracer)


def _select_tree(pred: jax.Array, on_true: Any, on_false: Any) -> Any:
    return jax.tree_util.tree_map(lambda a, b: jnp.where(pred, a, b), on_true, on_false)


def check_discrete_action(owner: str, label: str, action: Any, space: spaces.Discrete) -> None:
    """Raises ``TypeError``/``ValueError`` (messages start ``"{owner}: {label}"``) unless ``action`` has the
    space's shape, an integer type and, when concrete (outside ``jit``), a value inside the space."""
    shape = tuple(np.shape(action))
    if shape != space.shape:
        raise ValueError(
            f"{owner}: {label} must have shape {space.shape} (one action per world; use jax.vmap for a batch of "
            f"worlds), got shape {shape}"
        )
    dtype = getattr(action, "dtype", None)
    if dtype is None:
        if not isinstance(action, (int, np.integer)) or isinstance(action, bool):
            raise TypeError(f"{owner}: {label} must be an integer, got {type(action).__name__}")
    elif not jnp.issubdtype(dtype, jnp.integer):
        raise TypeError(f"{owner}: {label} must have an integer dtype, got {dtype}")
    if not _is_traced(action) and not space.contains(action):
        raise ValueError(f"{owner}: {label} {int(np.asarray(action))} is outside Discrete({space.n})")


class Environment(abc.ABC):
    """Base class. ``step`` auto-resets: when ``terminated | truncated`` the returned observation and
    state are those of a fresh episode, ``info["final_observation"]`` holds the last observation of the
    finished one, and ``info["final_state"]`` its last state.

    How the reset is computed is ``pooled_resets``: False selects a reset computed on every step (cheapest when
    a reset costs about a step), True resets only the worlds whose episode ended, also under a plain
    ``jax.vmap(env.step)`` (``core.pooled.reset_where``); the values are the same either way."""

    #: set True in subclasses whose ``step_env`` draws random numbers (gets its own key then).
    stochastic_step: bool = False
    #: set True in subclasses whose reset costs many steps (level generation by rejection sampling): ``step``
    #: then resets only ended worlds, under ``vmap`` in a pool sized to their number (``core.pooled``).
    pooled_resets: bool = False

    def __init__(self) -> None:
        self._reset_jit = jax.jit(self.reset_env)
        self._step_jit = jax.jit(self._auto_reset_step)
        # through the jitted reset, so that a reset and a step share one trace of the reset
        where = reset_where if self.pooled_resets else select_reset
        self._reset_where = where(self._reset_jit)
        #: the same for the state alone, for subclasses that select the state first and observe once
        self._reset_state_where = where(lambda key, params: self._reset_jit(key, params)[1])

    # -- to implement --------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return type(self).__name__

    @abc.abstractmethod
    def default_params(self) -> Any:
        """Returns the task's default params pytree."""

    @abc.abstractmethod
    def reset_env(self, key: jax.Array, params: Any) -> tuple[Obs, Any]:
        """Returns ``(obs, state)`` of a new episode."""

    @abc.abstractmethod
    def step_env(self, key: jax.Array, state: Any, action: jax.Array, params: Any):
        """Returns ``(obs, state, reward, terminated, truncated, info)`` without auto-reset."""

    @abc.abstractmethod
    def action_space(self, params: Any = None) -> spaces.Discrete:
        """Returns the action space."""

    @abc.abstractmethod
    def observation_space(self, params: Any = None) -> spaces.Dict:
        """Returns the observation space."""

    @abc.abstractmethod
    def render(self, state: Any, params: Any = None) -> jax.Array:
        """Returns an RGB image ``uint8[h, w, 3]`` of the state."""

    # -- the contract --------------------------------------------------------------------------
    def reset(self, key: jax.Array, params: Any = None) -> tuple[Obs, Any]:
        """Returns ``(obs, state)`` of a new episode. Jittable and vmappable over ``key``."""
        self._check_key(key, "reset")
        params = self._check_params(params, "reset")
        return self._reset_jit(key, params)

    def step(self, key: jax.Array, state: Any, action: Any, params: Any = None):
        """Returns ``(obs, state, reward, terminated, truncated, info)``; see the class docstring.

        ``action`` must be an integer scalar (vmap for batches). Outside ``jit`` a value outside the
        action space raises ``ValueError``; inside ``jit`` it cannot be checked and acts as a no-op.
        """
        self._check_key(key, "step")
        params = self._check_params(params, "step")
        self.check_action(action, params)
        return self._step_jit(key, state, action, params)

    def max_episode_steps(self, params: Any = None) -> int | None:
        """Returns an upper bound (``int >= 1``, host side) of the steps one episode lasts under ``params``, or None
        when the env states none: what a client that sizes its buffers or rollouts by episodes reads (gymnax's
        ``max_steps_in_episode``). The base class reads a positive ``params.max_steps``; an env whose limit depends on
        the episode overrides it."""
        params = self.default_params() if params is None else params
        limit = getattr(params, "max_steps", None)
        if limit is None or _is_traced(limit) or int(limit) < 1:
            return None
        return int(limit)

    def check_action(self, action: Any, params: Any = None) -> None:
        """Raises ``TypeError``/``ValueError`` for an action that is not in the action space; values
        are only checked when concrete (outside ``jit``)."""
        check_discrete_action(self.name, "action", action, self.action_space(params))

    def _check_key(self, key: jax.Array, call: str = "reset") -> None:
        """Raises ``TypeError`` for a first argument of ``call`` (``"reset"``/``"step"``) that is no array (params
        first, xminigrid's order) and ``ValueError`` for an array that is not one PRNG key."""
        if _is_traced(key):
            return
        given = key
        try:
            key = jnp.asarray(key)
        except TypeError:
            key = None
        if key is None:
            raise TypeError(
                f"{self.name}: the first argument of {call} must be a PRNG key, got {type(given).__name__}. jaxsoc "
                f"follows gymnax's argument order, {_CALLS[call]}; xminigrid's env.reset(params, key) and "
                f"env.step(params, timestep, action) put params first"
            )
        typed = jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
        if not (typed and key.shape == ()) and not (key.dtype == jnp.uint32 and key.shape == (2,)):
            raise ValueError(
                f"{self.name}: expected one PRNG key (jax.random.key(seed) or PRNGKey(seed)), got "
                f"dtype {key.dtype} shape {key.shape}; use jax.vmap for a batch of keys"
            )

    def _check_params(self, params: Any, call: str) -> Any:
        """Returns ``params``, or the default params when None. Raises ``TypeError`` for the method
        ``default_params`` itself (gymnax's property habit) or any other callable given as params."""
        if params is None:
            return self.default_params()
        if callable(params) and not hasattr(params, "__dataclass_fields__"):
            if getattr(params, "__name__", None) == "default_params":
                raise TypeError(
                    f"{self.name}: params is the method default_params itself, not the params: call it, "
                    f"{_DEFAULT_CALLS[call]}. jaxsoc's default_params is a method; gymnax's is a property, as in "
                    f"the gymnax adapter (jaxsoc.core.adapters.gymnax.GymnaxEnv(...).default_params)"
                )
            raise TypeError(f"{self.name}: params must be this env's params pytree, got the callable {params!r}")
        return params

    def _auto_reset_step(self, key, state, action, params, where=None):
        """``step`` without the checks; ``where(done, key, params, (obs, state))`` (default: this env's, see
        ``pooled_resets``) returns the reset observation and state where ``done``."""
        if self.stochastic_step:
            key, key_reset = jax.random.split(key)
        else:
            key_reset = key
        obs_step, state_step, reward, terminated, truncated, info = self.step_env(key, state, action, params)
        done = terminated | truncated
        info = dict(info, final_observation=obs_step, final_state=state_step)
        obs, state = (where or self._reset_where)(done, key_reset, params, (obs_step, state_step))
        return obs, state, reward, terminated, truncated, info

    # -- observation options (``jaxsoc.make(name, observation=kind)``) --------------------------
    def observation_kinds(self) -> tuple[str, ...]:
        """Returns the names ``with_observation`` accepts, this env's own observation first. ``"default"`` is
        accepted too and always names the first. The base class offers only its own observation."""
        return ("default",)

    def with_observation(self, kind: str, **options: Any) -> Environment:
        """Returns this environment with observation ``kind`` (one of ``observation_kinds()``); ``"default"`` or
        the first kind returns ``self``. ``jaxsoc.make(name, observation=kind)`` calls it. Families with more
        kinds override it (the grid families: ``jaxsoc/envs/gridworld/views.py``).

        Raises:
            TypeError: ``kind`` is not a string, or ``options`` are given (the base class takes none).
            ValueError: ``kind`` is not offered; the message lists the kinds this env offers.
        """
        self.check_observation_kind(kind)
        if options:
            raise TypeError(f"{self.name}: observation {kind!r} takes no options, got {sorted(options)}")
        return self

    def check_observation_kind(self, kind: Any) -> str:
        """Returns ``kind`` with ``"default"`` replaced by this env's own kind (``observation_kinds()[0]``).

        Raises:
            TypeError: ``kind`` is not a string.
            ValueError: ``kind`` is not among ``observation_kinds()`` (nor ``"default"``); the message lists them.
        """
        kinds = tuple(self.observation_kinds())
        if not isinstance(kind, str):
            raise TypeError(f"{self.name}: observation must be a string, one of {list(kinds)}; got {kind!r}")
        if kind == "default":
            return kinds[0]
        if kind not in kinds:
            offered = "only its default observation" if kinds == ("default",) else f"the kinds {list(kinds)}"
            raise ValueError(f"{self.name}: unknown observation {kind!r}; this environment offers {offered}")
        return kind
