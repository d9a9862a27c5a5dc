"""``GymnasiumEnv``: one world of a jaxsoc environment as a ``gymnasium.Env``, and the ``jaxsoc/<id>`` ids of
``gymnasium.make``.

Importing this module registers every jaxsoc id under the ``jaxsoc/`` namespace of gymnasium's registry
(gymnasium 1.x has no plugin entry points: an id exists once the module that registers it is imported)::

    import gymnasium
    import jaxsoc.core.adapters.gymnasium  # noqa: F401  (registers the jaxsoc/ ids)

    env = gymnasium.make("jaxsoc/BabyAI-GoToLocal-v0")
    obs, info = env.reset(seed=0)  # obs["mission"] == "go to the red ball", as minigrid gives it

``gymnasium.make("jaxsoc.core.adapters.gymnasium:jaxsoc/BabyAI-GoToLocal-v0")`` does the import itself. Ids
registered with ``jaxsoc.register`` after the import are added by ``register_gymnasium_ids()``.

gymnasium is an optional dependency, imported by this module only: ``pip install 'jaxsoc[gymnasium]'``.
"""

from __future__ import annotations

import functools
import numbers
import re
import string
from typing import Any

import jax
import numpy as np

from jaxsoc.core import spaces
from jaxsoc.core.env import Environment
from jaxsoc.core.registry import make, registered_envs

try:
    import gymnasium
    from gymnasium.envs.registration import EnvSpec
except ImportError as error:  # pragma: no cover - exercised only without gymnasium
    raise ImportError(
        "jaxsoc.core.adapters.gymnasium needs gymnasium (an optional dependency): pip install 'jaxsoc[gymnasium]'"
    ) from error

__all__ = [
    "ENTRY_POINT",
    "MAX_MISSION_CHARS",
    "MISSION_CHARSET",
    "NAMESPACE",
    "GymnasiumEnv",
    "check_seed",
    "register_gymnasium_ids",
    "to_gymnasium_space",
]

#: gymnasium's namespace of the jaxsoc ids: ``gymnasium.make("jaxsoc/<id>")``
NAMESPACE = "jaxsoc"
#: the creator every ``jaxsoc/<id>`` spec names (a string, so that specs serialise with ``EnvSpec.to_json``)
ENTRY_POINT = "jaxsoc.core.adapters.gymnasium:GymnasiumEnv"
#: the characters of a text mission: minigrid's missions use lower-case words, spaces and commas
MISSION_CHARSET = string.ascii_letters + string.digits + " ,.'-"
#: the longest text mission: BabyAI's 72 words of at most 6 letters with their spaces need 503 characters
MAX_MISSION_CHARS = 512
#: frames per second a recorder should play ``render()``'s frames at (minigrid's figure)
RENDER_FPS = 10


def to_gymnasium_space(space: Any, discrete_dtype: Any = None) -> gymnasium.Space:
    """Returns the gymnasium space equal to a jaxsoc ``Discrete``, ``Box`` or ``Dict`` (same shapes and bounds;
    ``Dict`` sub-spaces converted recursively).

    Args:
        space: a jaxsoc space.
        discrete_dtype: the dtype of ``Discrete`` spaces; None keeps the jaxsoc space's (``int32``). A single
            ``gymnasium.Env`` uses ``np.int64``, the type gymnasium's checker expects of a Discrete observation.
            (gymnasium 1.0's ``Discrete`` is always ``int64``.)

    Raises:
        TypeError: ``space`` is none of those, or a ``Discrete`` space with a shape.
    """
    if isinstance(space, spaces.Discrete):
        if space.shape != ():
            raise TypeError(f"only scalar Discrete spaces have a gymnasium equivalent, got shape {space.shape}")
        return _discrete(int(space.n), np.dtype(discrete_dtype or space.dtype))
    if isinstance(space, spaces.Box):
        dtype = np.dtype(space.dtype)
        low = np.broadcast_to(np.asarray(space.low), space.shape).astype(dtype)
        high = np.broadcast_to(np.asarray(space.high), space.shape).astype(dtype)
        return gymnasium.spaces.Box(low, high, tuple(space.shape), dtype)
    if isinstance(space, spaces.Dict):
        return gymnasium.spaces.Dict(
            {name: to_gymnasium_space(sub, discrete_dtype) for name, sub in space.spaces.items()}
        )
    raise TypeError(f"no gymnasium equivalent for {space!r}")


def _discrete(n: int, dtype: np.dtype) -> gymnasium.spaces.Discrete:
    try:
        return gymnasium.spaces.Discrete(n, dtype=dtype)
    except TypeError:  # gymnasium 1.0: no dtype argument, always int64
        return gymnasium.spaces.Discrete(n)


def register_gymnasium_ids() -> list[str]:
    """Registers ``jaxsoc/<id>`` in gymnasium's registry for every jaxsoc id not registered there yet (this module
    does it for the ids that exist when it is imported; call it again after ``jaxsoc.register``).

    Each spec's creator is ``GymnasiumEnv`` with ``kwargs={"env": "<id>"}``; ``gymnasium.make`` passes its own
    keywords on (``render_mode``, ``mission``, params overrides such as ``max_steps``). No environment is built
    here: a multi-agent id (a JaxMARL-style world) is refused by ``gymnasium.make`` with the names of its
    single-agent views.

    Returns:
        The gymnasium ids registered by this call, sorted.
    """
    added = []
    for name in registered_envs():
        gym_id = f"{NAMESPACE}/{name}"
        if gym_id not in gymnasium.envs.registry:
            gymnasium.register(id=gym_id, entry_point=ENTRY_POINT, kwargs={"env": name})
            added.append(gym_id)
    return added


class GymnasiumEnv(gymnasium.Env):
    """One world of a single-agent jaxsoc environment behind ``gymnasium.Env`` (no auto-reset: call ``reset``
    after ``terminated or truncated``, as gymnasium expects).

    Args:
        env: a registered id (``"BabyAI-GoToLocal-v0"``, a ``"jaxsoc/"`` prefix allowed), made with
            ``jaxsoc.make(env, init_kwargs, **overrides)``, or an ``Environment`` instance (then ``params`` or its
            default params are used).
        params: the env params; with an id they replace the made params (``overrides`` then not allowed).
        render_mode: None or ``"rgb_array"`` (``render()`` returns ``uint8[h, w, 3]``).
        mission: ``"text"``, ``"tokens"`` or None (the default: ``"text"`` for an env with ``mission_text``, the
            grid and BabyAI envs and their observation views, ``"tokens"`` otherwise). ``"text"`` gives
            ``obs["mission"]`` as minigrid does, a ``str`` in a ``gymnasium.spaces.Text`` space, also for the grid
            tasks whose jaxsoc observation has no mission; ``"tokens"`` keeps jaxsoc's observation unchanged
            (BabyAI: ``int32[72]`` word ids).
        init_kwargs: constructor arguments of the env (only with an id; e.g. CHAIC's options view).
        **overrides: keywords of ``jaxsoc.make`` (only with an id): fields of the default params, e.g.
            ``max_steps=50``, and make's own keywords.

    Why text by default: this class is for gymnasium and minigrid users, and their code (minigrid's wrappers,
    ``obs["mission"]`` in a text encoder) reads the mission as a string. Token ids are what a jitted JAX policy
    needs; such code uses ``jaxsoc.make`` itself, or ``mission="tokens"`` here.

    Observations: a dict of numpy values with exactly the dtypes of ``observation_space`` (``Discrete`` entries
    as ``np.int64`` scalars, boxes as arrays of the jaxsoc dtype, e.g. ``image`` ``uint8[7, 7, 3]``). Rewards are
    Python floats, ``terminated``/``truncated`` Python bools, ``info`` a dict of numpy scalars (``success``,
    ``episode_steps`` and the family's metrics); ``reset``'s info is empty.

    Random keys: ``reset(seed=s)`` sets the key stream to ``jax.random.key(s)`` (``s`` in ``[0, 2**32)``); the
    first ``reset()`` without a seed draws ``s`` from ``np_random``. Each ``reset``/``step`` then draws its key as
    ``stream, key = jax.random.split(stream)`` and calls the env's ``reset(key, params)`` or
    ``step(key, state, action, params)``, so an episode equals a direct JAX rollout with those keys.

    Cost: each ``reset``/``step`` is one call of a jitted function (compiled once per env and shared by every
    ``GymnasiumEnv`` over the same env instance; ``jaxsoc.make`` returns one instance per id) and one
    device-to-host copy of its outputs; the state stays on the device. A text mission is decoded on the host at
    ``reset`` only (a mission is fixed for an episode).
    """

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": RENDER_FPS}

    def __init__(
        self,
        env: Any,
        params: Any = None,
        *,
        render_mode: str | None = None,
        mission: str | None = None,
        init_kwargs: dict[str, Any] | None = None,
        **overrides: Any,
    ) -> None:
        name = None
        if isinstance(env, str):
            name = env.removeprefix(f"{NAMESPACE}/")
            if params is not None and overrides:
                raise TypeError("pass either params or keyword overrides, not both")
            env, made = make(name, init_kwargs, **overrides)
            params = made if params is None else params
        elif overrides or init_kwargs:
            raise TypeError("keyword overrides and init_kwargs need an env id; pass params instead")
        if not isinstance(env, Environment):
            raise TypeError(_not_single_agent(name, env))
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.env = env
        self.params = env.default_params() if params is None else params
        self.render_mode = render_mode
        self.mission = _mission_mode(env, mission)

        space = env.observation_space(self.params)
        self._space = to_gymnasium_space(space, np.int64)  # the jaxsoc observation's own entries
        observation = dict(self._space.spaces)
        if self.mission == "text":
            observation["mission"] = gymnasium.spaces.Text(MAX_MISSION_CHARS, min_length=0, charset=MISSION_CHARSET)
        self.observation_space = gymnasium.spaces.Dict(observation)
        self.action_space = to_gymnasium_space(env.action_space(self.params), np.int64)
        if not isinstance(self.action_space, gymnasium.spaces.Discrete):
            raise TypeError(f"{env.name}: only Discrete action spaces are supported")
        if name is not None and params is made:
            # what gymnasium.make would set; gymnasium.make replaces it with its own
            kwargs = {"env": name, "render_mode": render_mode, "mission": mission, **overrides}
            if init_kwargs:
                kwargs["init_kwargs"] = dict(init_kwargs)
            self.spec = EnvSpec(f"{NAMESPACE}/{name}", entry_point=ENTRY_POINT, kwargs=kwargs)

        self._stream = None
        self._state = None
        self._mission = None

    # -- gymnasium API -----------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Starts a new episode.

        Args:
            seed: None continues the key stream (the first reset draws one from ``np_random``); an int in
                ``[0, 2**32)`` restarts it at ``jax.random.key(seed)``.
            options: None or ``{}``; no option is supported.

        Returns:
            ``(obs, info)``: ``obs`` a dict of numpy values (see the class docstring), ``info`` an empty dict.

        Raises:
            ValueError: a seed outside ``[0, 2**32)``, a non-empty ``options``, or a text mission that does not fit
                ``observation_space["mission"]``.
        """
        if options:
            raise ValueError(f"unsupported reset options {sorted(options)}; GymnasiumEnv takes none")
        if seed is not None:
            seed = check_seed(seed)
        super().reset(seed=seed)
        if seed is not None:
            self._stream = jax.random.key(seed)
        elif self._stream is None:
            self._stream = jax.random.key(int(self.np_random.integers(0, 2**32)))
        self._stream, self._state, obs = _reset_one(self.env, self._stream, self.params)
        if self.mission == "text":
            self._mission = self._mission_text(self._state)
        return self._observation(jax.device_get(obs)), {}

    def step(self, action: Any):
        """Takes one step of the episode (no auto-reset: the last observation of an ended episode is returned).

        Args:
            action: an integer in ``[0, action_space.n)``: a Python int, a numpy or JAX integer scalar.

        Returns:
            ``(obs, reward float, terminated bool, truncated bool, info dict)``.

        Raises:
            TypeError: ``action`` is not an integer scalar.
            ValueError: ``action`` is outside the action space.
            RuntimeError: ``reset`` was not called first.
        """
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        action = self._check_action(action)
        self._stream, self._state, out = _step_one(self.env, self._stream, self._state, action, self.params)
        obs, reward, terminated, truncated, info = jax.device_get(out)
        info = {key: np.asarray(value)[()] for key, value in info.items()}
        return self._observation(obs), float(reward), bool(terminated), bool(truncated), info

    def render(self) -> np.ndarray | None:
        """Returns the RGB frame ``uint8[h, w, 3]`` of the current state (``env.render``) when ``render_mode`` is
        ``"rgb_array"``; with no render mode it warns and returns None, as gymnasium's own envs do.

        Raises:
            RuntimeError: ``reset`` was not called first.
        """
        if self.render_mode is None:
            gymnasium.logger.warn(
                "render() was called without a render mode: make the env with render_mode='rgb_array', e.g. "
                'gymnasium.make("jaxsoc/<id>", render_mode="rgb_array")'
            )
            return None
        if self._state is None:
            raise RuntimeError("call reset() before render()")
        return np.array(self.env.render(self._state, self.params), dtype=np.uint8)

    # -- helpers -----------------------------------------------------------------------------------
    def _observation(self, obs: dict[str, Any]) -> dict[str, Any]:
        out = _to_space(self._space, obs)
        if self.mission == "text":
            out["mission"] = self._mission
        return out

    def _mission_text(self, state: Any) -> str:
        text = self.env.mission_text(jax.device_get(state), self.params)
        space = self.observation_space["mission"]
        if not space.contains(text):
            raise ValueError(
                f"{self.env.name}: the mission {text!r} does not fit {space} (at most {MAX_MISSION_CHARS} characters "
                f"of MISSION_CHARSET); use mission='tokens'"
            )
        return text

    def _check_action(self, action: Any) -> np.ndarray:
        if isinstance(action, jax.Array):
            action = jax.device_get(action)
        array = np.asarray(action)
        n = int(self.action_space.n)
        if array.shape != ():
            raise ValueError(f"{self.env.name}: the action must be one integer, got shape {array.shape}")
        if array.dtype == np.bool_ or not np.issubdtype(array.dtype, np.integer):
            raise TypeError(f"{self.env.name}: the action must be an integer, got dtype {array.dtype}")
        if not 0 <= int(array) < n:
            raise ValueError(f"{self.env.name}: action {int(array)} is outside Discrete({n})")
        return array.astype(np.int32)

    def __repr__(self) -> str:
        return f"GymnasiumEnv({self.env.name}, mission={self.mission!r})"


# The jitted cores take the env as a static argument, so every GymnasiumEnv over the same env instance (``make``
# returns one per id) shares their compilation, as do the envs gymnasium's checker makes from a spec.
@functools.partial(jax.jit, static_argnums=0)
def _reset_one(env, stream, params):
    """Returns ``(stream, state, obs)`` of a new episode, its key drawn from ``stream``."""
    stream, key = jax.random.split(stream)
    obs, state = env.reset(key, params)
    return stream, state, obs


@functools.partial(jax.jit, static_argnums=0)
def _step_one(env, stream, state, action, params):
    """Returns ``(stream, state, (obs, reward float32, terminated, truncated, info))`` of one ``env.step`` before
    its auto-reset: the observation and state are ``info["final_observation"]``/``info["final_state"]``, the ended
    episode's (the reset the step computes is unused, so XLA drops it)."""
    stream, key = jax.random.split(stream)
    _, _, reward, terminated, truncated, info = env.step(key, state, action, params)
    info = dict(info)
    obs, state = info.pop("final_observation"), info.pop("final_state")
    return stream, state, (obs, reward.astype("float32"), terminated, truncated, info)


def _to_space(space: gymnasium.Space, value: Any) -> Any:
    """Returns ``value`` (numpy leaves) as ``space``'s members are: ``np.int64`` scalars for ``Discrete``, fresh
    arrays of the box's dtype for ``Box``, dicts of those for ``Dict``."""
    if isinstance(space, gymnasium.spaces.Dict):
        return {name: _to_space(sub, value[name]) for name, sub in space.spaces.items()}
    if isinstance(space, gymnasium.spaces.Discrete):
        return space.dtype.type(value)
    return np.array(value, dtype=space.dtype, copy=True)


def _mission_mode(env: Environment, mission: str | None) -> str:
    has_text = _reads_mission_text(env)
    if mission is None:
        return "text" if has_text else "tokens"
    if mission not in ("text", "tokens"):
        raise ValueError(f"mission must be 'text', 'tokens' or None, got {mission!r}")
    if mission == "text" and not has_text:
        raise ValueError(f"{env.name} has no text mission (no mission_text method); use mission='tokens'")
    return mission


@functools.cache
def _reads_mission_text(env: Environment) -> bool:
    """True when ``env.mission_text`` reads ``env``'s own states: its class defines it, or ``env`` is a wrapper
    whose states are those of its innermost env, which defines it (an observation view; not ``LogWrapper``, whose
    state wraps the inner one). Tells the two apart by tracing both resets once per env (no compiling)."""
    if callable(getattr(type(env), "mission_text", None)):
        return True
    inner = getattr(env, "unwrapped", env)
    if inner is env or not callable(getattr(type(inner), "mission_text", None)):
        return False
    key, params = jax.random.key(0), env.default_params()
    outer = jax.eval_shape(env.reset_env, key, params)[1]
    own = jax.eval_shape(inner.reset_env, key, params)[1]
    return jax.tree_util.tree_structure(outer) == jax.tree_util.tree_structure(own)


def _not_single_agent(name: str | None, env: Any) -> str:
    """Returns the message for an env that is not a single-agent ``Environment``, naming the single-agent views
    of a multi-agent id (the ids that extend its name, e.g. ``X-v0`` -> ``X-Helper-v0``)."""
    what = f"{name!r} is a {type(env).__name__}" if name else f"{type(env).__name__} is"
    message = f"{what}, not a single-agent jaxsoc Environment: a gymnasium.Env has one agent"
    if name:
        stem = re.sub(r"-v\d+$", "", name) + "-"
        views = [f"{NAMESPACE}/{other}" for other in registered_envs() if other.startswith(stem)]
        if views:
            message += f"; its single-agent views: {', '.join(views)}"
    return message + ". Multi-agent worlds are used through jaxsoc.make (JaxMARL-style dicts)."


def check_seed(seed: Any, what: str = "seed") -> int:
    """Returns ``seed`` as an ``int``; raises ``ValueError`` naming ``what`` unless it is an integer in ``[0, 2**32)``
    (``jax.random.key`` keeps only the low 32 bits without x64, so larger seeds would silently collide)."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= int(seed) < 2**32:
        raise ValueError(f"{what} must be an integer in [0, 2**32), got {seed!r}")
    return int(seed)


register_gymnasium_ids()
