"""``GymnasiumVectorEnv``: a gymnasium ``VectorEnv`` over a jaxsoc environment, for numpy users.

All worlds are stepped by one jitted ``vmap`` of the env's ``step``; observations, rewards and flags come back as
numpy arrays with a leading ``num_envs`` axis. Auto-reset is gymnasium's ``NEXT_STEP`` by default (the mode of
``gymnasium.make_vec`` and minigrid, which gymnasium's vector observation wrappers need) or ``SAME_STEP``.
The single-world ``gymnasium.Env`` is ``jaxsoc.core.adapters.gymnasium.GymnasiumEnv``.

gymnasium is an optional dependency, imported by this module only: ``pip install 'jaxsoc[gymnasium]'``.
"""

from __future__ import annotations

import enum
import functools
import numbers
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

try:
    import gymnasium
    from gymnasium.vector import VectorEnv
    from gymnasium.vector.utils import batch_space
except ImportError as error:  # pragma: no cover - exercised only without gymnasium
    raise ImportError(
        "jaxsoc.core.vector needs gymnasium (an optional dependency): pip install 'jaxsoc[gymnasium]'"
    ) from error

try:
    from gymnasium.vector import AutoresetMode
except ImportError:  # gymnasium 1.0, whose vector envs and wrappers all work next-step (the enum came with 1.1)

    class AutoresetMode(enum.Enum):
        """gymnasium 1.1's ``gymnasium.vector.AutoresetMode``, for gymnasium 1.0."""

        NEXT_STEP = "NextStep"
        SAME_STEP = "SameStep"
        DISABLED = "Disabled"


from jaxsoc.core.adapters.gymnasium import check_seed, to_gymnasium_space

__all__ = ["AutoresetMode", "GymnasiumVectorEnv", "to_gymnasium_space"]


class GymnasiumVectorEnv(VectorEnv):
    """``num_envs`` independent worlds of a jaxsoc environment behind gymnasium's ``VectorEnv`` API.

    Args:
        env: a registered environment name (made with ``jaxsoc.make(env, **overrides)``) or an
            ``Environment`` instance (then ``params`` or its default params are used).
        num_envs: number of worlds ``N >= 1``.
        params: the env params; with a name, they replace the made params (``overrides`` then not allowed).
        seed: seed (in ``[0, 2**32)``) of the key streams until a ``reset(seed=...)``; None draws one at random.
        autoreset_mode: ``AutoresetMode.NEXT_STEP`` (default) or ``AutoresetMode.SAME_STEP`` (or their values,
            ``"NextStep"``, ``"SameStep"``); see below.
        **overrides: fields of the default params, e.g. ``max_steps=50`` (only with a name).

    Random keys: each world has a key stream. The constructor's ``seed`` and ``reset(seed=s)`` set world
    ``i``'s stream to ``jax.random.split(jax.random.key(s), N)[i]``; ``reset(seed=[s_0, ...])`` sets it to
    ``jax.random.key(s_i)`` (a None entry keeps that world's stream). Every ``reset``/``step`` then draws
    each world's key as ``stream, key = jax.random.split(stream)``, so a run is reproducible from the seed
    and equals a direct ``jax.vmap`` of ``env.reset``/``env.step`` with those keys.

    Auto-reset (``autoreset_mode``, also ``metadata["autoreset_mode"]``), as gymnasium's ``SyncVectorEnv`` does it:

    - ``AutoresetMode.NEXT_STEP`` (the default, gymnasium's and minigrid's): the step that ends a world's episode
      returns its last observation with ``terminated``/``truncated``; the world's next ``step`` ignores its action
      and returns the new episode's first observation with reward 0, both flags False, and its ``infos`` masks
      False. The values are those of ``SAME_STEP`` shifted: the new episode's first observation comes one call
      later, in a step of its own that draws no key (the world's key stream advances only when it really steps).
    - ``AutoresetMode.SAME_STEP``: a world whose episode ends in ``step`` is reset within that step and returns
      the new episode's first observation. Then ``infos["_final_obs"]`` (``bool[N]``) is True for it and
      ``infos["final_obs"]`` (``object[N]``, None elsewhere) holds its last observation (a dict of numpy arrays
      without the batch axis), and ``infos["final_info"]`` / ``infos["_final_info"]`` hold that step's info the
      same way.

    ``infos["success"]`` (``bool[N]``) and ``infos["episode_steps"]`` (``int32[N]``, the step count of the step
    just taken) describe every world's last step, each with a ``_key`` mask (all True, except for the worlds in
    a ``NEXT_STEP`` reset step). gymnasium's vector observation wrappers (``FlattenObservation``,
    ``FilterObservation``, ``TransformObservation``) need ``NEXT_STEP``; ``RecordEpisodeStatistics`` takes both.
    """

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": ["rgb_array"]}

    def __init__(
        self,
        env: Any,
        num_envs: int,
        params: Any = None,
        seed: int | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        **overrides: Any,
    ) -> None:
        if isinstance(env, str):
            from jaxsoc.core.registry import make  # filled by jaxsoc.envs, imported with the jaxsoc package

            if params is not None and overrides:
                raise TypeError("pass either params or keyword overrides, not both")
            env, made = make(env, **overrides)
            params = made if params is None else params
        elif overrides:
            raise TypeError(f"keyword overrides {sorted(overrides)} need an env name; pass params instead")
        if isinstance(num_envs, bool) or not isinstance(num_envs, numbers.Integral) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
        self.env = env
        self.params = env.default_params() if params is None else params
        self.num_envs = int(num_envs)
        self.render_mode = "rgb_array"
        self.autoreset_mode = _autoreset_mode(autoreset_mode)
        self.metadata = dict(type(self).metadata, autoreset_mode=self.autoreset_mode)

        self.single_observation_space = to_gymnasium_space(env.observation_space(self.params))
        self.single_action_space = to_gymnasium_space(env.action_space(self.params))
        if not isinstance(self.single_action_space, gymnasium.spaces.Discrete):
            raise TypeError(f"{env.name}: only Discrete action spaces are supported")
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)  # MultiDiscrete([n] * N)

        seed = int(np.random.SeedSequence().generate_state(1, np.uint32)[0]) if seed is None else seed
        self._streams = jax.random.split(jax.random.key(check_seed(seed, "seed")), self.num_envs)
        self._state = None
        self._obs = None  # the observation of ``_state``: under NEXT_STEP a new episode's first one until shown
        self._shown = None  # world 0's state as the last call showed it (``render``)
        self._autoreset = np.zeros(self.num_envs, np.bool_)  # NEXT_STEP: the worlds whose next step is a reset

    # -- gymnasium API -----------------------------------------------------------------------------
    def reset(self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None):
        """Starts new episodes.

        Args:
            seed: None continues the key streams; an int reseeds all worlds; a list of ``N`` ints (or None)
                reseeds world by world.
            options: ``{"reset_mask": bool[N]}`` resets only the marked worlds (after a first full reset);
                other options are not supported.

        Returns:
            ``(obs, infos)``: ``obs`` a dict of numpy arrays ``[N, ...]`` (``image uint8[N, 7, 7, 3]``,
            ``direction int32[N]`` for the grid envs), ``infos`` an empty dict.
        """
        self._check_open()
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        if options:
            raise ValueError(f"unsupported reset options {sorted(options)}; only 'reset_mask' is accepted")
        if mask is not None:
            mask = np.asarray(mask)
            if mask.shape != (self.num_envs,) or mask.dtype != np.bool_:
                raise ValueError(f"options['reset_mask'] must be bool[{self.num_envs}], got {mask.dtype}{mask.shape}")
            if self._state is None:
                raise RuntimeError("a partial reset (options['reset_mask']) needs a full reset() first")
        if isinstance(seed, (list, tuple)):
            if len(seed) != self.num_envs:
                raise ValueError(f"a seed list must have one entry per world ({self.num_envs}), got {len(seed)}")
            seeds = [None if s is None else check_seed(s, f"seed[{i}]") for i, s in enumerate(seed)]
            keys = [self._streams[i] if s is None else jax.random.key(s) for i, s in enumerate(seeds)]
            self._streams = jnp.stack(keys)
            super().reset(seed=next((s for s in seeds if s is not None), None))
        elif seed is not None:
            self._streams = jax.random.split(jax.random.key(check_seed(seed, "seed")), self.num_envs)
            super().reset(seed=int(seed))
        if mask is None:
            self._streams, self._obs, self._state = _reset_worlds(self.env, self._streams, self.params)
            self._autoreset[:] = False
            self._shown = None
        else:
            # a full batched reset (compiled once) and a per-world selection: partial resets are rare here
            streams, obs, state = _reset_worlds(self.env, self._streams, self.params)
            self._streams, self._obs, self._state = _select_worlds(
                mask, (streams, obs, state), (self._streams, self._obs, self._state)
            )
            self._autoreset[mask] = False
            self._shown = None if mask[0] else self._shown
        obs = self._obs
        return _to_numpy(obs), {}

    def step(self, actions: Any):
        """Steps every world with its action; ended episodes restart as ``autoreset_mode`` says (class doc).

        Args:
            actions: integer array-like ``[N]`` with values in ``[0, n)`` (``single_action_space.n``).

        Returns:
            ``(obs, rewards float32[N], terminations bool[N], truncations bool[N], infos)``, ``obs`` a dict
            of numpy arrays ``[N, ...]``.

        Raises:
            ValueError: ``actions`` has another shape than ``(N,)`` or a value outside ``[0, n)``.
            TypeError: ``actions`` does not have an integer dtype.
            RuntimeError: ``reset`` was not called first, or the env is closed.
        """
        self._check_open()
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        actions = self._check_actions(actions)
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            return self._step_next(actions)
        self._streams, self._state, out = _step_worlds(self.env, self._streams, self._state, actions, self.params)
        self._obs = out[0]
        obs, reward, terminated, truncated, info = _to_numpy(out)
        done = terminated | truncated
        final_obs = info.pop("final_observation")
        infos = _vector_info(info, np.ones(self.num_envs, np.bool_))
        if done.any():
            boxed = np.full(self.num_envs, None, dtype=object)
            for i in np.flatnonzero(done):
                boxed[i] = jax.tree_util.tree_map(lambda v, i=i: v[i].copy(), final_obs)
            infos["final_obs"], infos["_final_obs"] = boxed, done.copy()
            infos["final_info"], infos["_final_info"] = _vector_info(info, done), done.copy()
        return obs, reward, terminated, truncated, infos

    def _step_next(self, actions: np.ndarray):
        """``step`` under ``NEXT_STEP``: the worlds marked in ``_autoreset`` show the new episode's first
        observation (computed by the last step's auto-reset) and keep their state and key stream."""
        resetting = self._autoreset.copy()
        self._streams, self._state, self._obs, self._shown, out = _step_worlds_next(
            self.env, self._streams, self._state, self._obs, resetting, actions, self.params
        )
        obs, reward, terminated, truncated, info = _to_numpy(out)
        self._autoreset = terminated | truncated
        return obs, reward, terminated, truncated, _vector_info(info, ~resetting)

    def render(self) -> np.ndarray | None:
        """Returns the first world's RGB frame ``uint8[h, w, 3]``: ``env.render`` of its state as the last call
        showed it (under ``NEXT_STEP``, the last state of an episode that just ended).

        Raises:
            RuntimeError: ``reset`` was not called first.
            NotImplementedError/ImportError: as raised by an env without a renderer.
        """
        self._check_open()
        if self._state is None:
            raise RuntimeError("call reset() before render()")
        first = self._shown if self._shown is not None else jax.tree_util.tree_map(lambda x: x[0], self._state)
        return np.asarray(self.env.render(first, self.params))

    def close_extras(self, **kwargs: Any) -> None:
        """Drops the device state; ``close()`` (gymnasium's) calls this once and marks the env closed."""
        self._state = None
        self._obs = None
        self._shown = None

    # -- helpers -----------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError("this GymnasiumVectorEnv is closed")

    def _check_actions(self, actions: Any) -> np.ndarray:
        n = int(self.single_action_space.n)
        if isinstance(actions, jax.Array):
            actions = jax.device_get(actions)
        array = np.asarray(actions)
        if array.shape != (self.num_envs,):
            raise ValueError(f"actions must have shape ({self.num_envs},), one per world, got shape {array.shape}")
        if array.dtype == np.bool_ or not np.issubdtype(array.dtype, np.integer):
            raise TypeError(f"actions must be integers, got dtype {array.dtype}")
        bad = (array < 0) | (array >= n)
        if bad.any():
            raise ValueError(
                f"actions must lie in [0, {n}) (Discrete({n})), got {array[bad].tolist()} "
                f"in worlds {np.flatnonzero(bad).tolist()}"
            )
        return array.astype(np.int32)

    def __repr__(self) -> str:
        mode = self.autoreset_mode.name
        return f"GymnasiumVectorEnv({self.env.name}, num_envs={self.num_envs}, autoreset_mode={mode})"


def _autoreset_mode(mode: Any) -> AutoresetMode:
    """Returns ``mode`` (an ``AutoresetMode`` or its value) as an ``AutoresetMode``; raises ``ValueError`` for
    ``DISABLED`` (a jaxsoc step always resets) or an unknown value."""
    try:
        mode = mode if isinstance(mode, AutoresetMode) else AutoresetMode(mode)
    except ValueError:
        mode = None
    if mode not in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP):
        raise ValueError(
            "autoreset_mode must be AutoresetMode.NEXT_STEP or AutoresetMode.SAME_STEP (or their values 'NextStep', "
            f"'SameStep'), got {mode!r}"
        )
    return mode


# The jitted cores take the env as a static argument, so every adapter over the same env instance (``make``
# returns one per name) and the same ``num_envs`` shares their compilation.
@functools.partial(jax.jit, static_argnums=0)
def _reset_worlds(env, streams, params):
    """Returns ``(streams, obs, state)`` after resetting every world (one key drawn from each stream)."""
    streams, keys = _split_streams(streams)
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
    return streams, obs, state


@jax.jit
def _select_worlds(mask, new, old):
    """Returns ``new`` where ``mask`` (``bool[N]``) is True and ``old`` elsewhere, leaf by leaf."""
    return jax.tree_util.tree_map(functools.partial(_where_batch, mask), new, old)


def _step_batch(env, streams, state, actions, params):
    """Returns ``(streams, state, final_state, (obs, reward float32[N], terminated, truncated, info))`` of one
    batched ``env.step`` (same-step auto-reset), ``final_state`` taken out of ``info``."""
    streams, keys = _split_streams(streams)
    obs, state, reward, terminated, truncated, info = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
        keys, state, actions, params
    )
    info = dict(info)
    final_state = info.pop("final_state")
    return streams, state, final_state, (obs, reward.astype(jnp.float32), terminated, truncated, info)


@functools.partial(jax.jit, static_argnums=0)
def _step_worlds(env, streams, state, actions, params):
    """Returns ``(streams, state, (obs, reward float32[N], terminated, truncated, info))`` of one batched
    ``env.step``; ``info["final_state"]`` is dropped so that it stays on the device."""
    streams, state, _, out = _step_batch(env, streams, state, actions, params)
    return streams, state, out


@functools.partial(jax.jit, static_argnums=0)
def _step_worlds_next(env, streams, state, obs, resetting, actions, params):
    """Returns ``(streams, state, next_obs, shown, (obs, reward, terminated, truncated, info))`` of a ``NEXT_STEP``
    step: the worlds where ``resetting`` (``bool[N]``) keep ``streams``, ``state`` and show ``obs`` (their new
    episode's first observation) with reward 0 and False flags; the others take the batched ``env.step`` and show
    its ``final_observation``. ``next_obs`` is the observation of the returned ``state``; ``shown`` is world 0's
    state as shown (its pre-reset state when it stepped), for ``render``."""
    new_streams, new_state, final_state, (new_obs, reward, terminated, truncated, info) = _step_batch(
        env, streams, state, actions, params
    )
    final_obs = info.pop("final_observation")

    def keep(old, new):
        return jax.tree_util.tree_map(functools.partial(_where_batch, resetting), old, new)

    shown = jax.tree_util.tree_map(lambda old, last: jnp.where(resetting[0], old[0], last[0]), state, final_state)
    stepped = ~resetting
    out = (keep(obs, final_obs), jnp.where(resetting, 0.0, reward), terminated & stepped, truncated & stepped, info)
    return keep(streams, new_streams), keep(state, new_state), keep(obs, new_obs), shown, out


def _split_streams(streams: jax.Array) -> tuple[jax.Array, jax.Array]:
    pairs = jax.vmap(jax.random.split)(streams)  # [N, 2] keys
    return pairs[:, 0], pairs[:, 1]


def _where_batch(mask: jax.Array, a: jax.Array, b: jax.Array) -> jax.Array:
    return jnp.where(mask.reshape(mask.shape + (1,) * (a.ndim - 1)), a, b)


def _vector_info(info: dict[str, Any], mask: np.ndarray) -> dict[str, Any]:
    """Returns ``info`` (numpy arrays ``[N, ...]``, nested dicts allowed) in gymnasium's vector layout: every
    key paired with a ``_key`` ``bool[N]`` copy of ``mask``, values zeroed where ``mask`` is False."""
    out: dict[str, Any] = {}
    for name, value in info.items():
        if isinstance(value, dict):
            out[name] = _vector_info(value, mask)
        else:
            value = np.asarray(value)
            out[name] = np.where(mask.reshape(mask.shape + (1,) * (value.ndim - 1)), value, np.zeros_like(value))
        out[f"_{name}"] = mask.copy()
    return out


def _to_numpy(tree: Any) -> Any:
    """Returns ``tree`` with every array as a fresh, writable numpy array (never shared between calls)."""
    return jax.tree_util.tree_map(lambda x: np.array(x, copy=True), jax.device_get(tree))
