"""``FlattenObservation``: a wrapper that turns an environment's (nested) dict observation into one flat ``float32``
vector, for clients whose networks take a vector (gymnax-style MLPs, rejax, PureJaxRL).

Every family's observation flattens: entries are read in the order of the observation space (nested ``Dict``
spaces depth first), each cast to ``float32`` and raveled, or, with ``one_hot``, categorical entries (``Discrete``
and integer ``Box`` entries such as BabyAI's ``mission`` tokens) become one-hot vectors. ``layout`` records where
each entry lands, so a network can slice the vector back into its parts.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.core import spaces
from jaxsoc.core.env import Environment
from jaxsoc.core.wrappers import Wrapper

__all__ = ["FlattenObservation", "Segment", "flatten_layout"]

#: the widest categorical entry ``one_hot=True`` expands (wider integer entries, such as coordinates or counts
#: with large bounds, stay single values); name an entry in ``one_hot`` to expand it whatever its width
MAX_CATEGORIES = 256


@dataclass(frozen=True)
class Segment:
    """Where one observation entry lies in the flat vector.

    Attributes:
        path: the entry's key, nested keys joined by ``/`` (``"image"``, ``"objects/cls"``).
        start: its first index in the flat vector.
        stop: one past its last index (``stop - start == size * max(categories, 1)``).
        shape: the entry's own shape (``()`` for a scalar).
        categories: ``0`` when its values are copied as floats, else the number of one-hot classes ``k``: value
            ``v`` becomes ``one_hot(v - low, k)`` (a value outside ``[low, low + k)`` becomes all zeros).
        low: the value of class 0 when one-hot (the space's lower bound), else ``0``.
    """

    path: str
    start: int
    stop: int
    shape: tuple[int, ...]
    categories: int = 0
    low: int = 0


def _leaves(space: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """Returns ``[(path, leaf space)]`` in the space's order, nested ``Dict`` spaces depth first."""
    if isinstance(space, spaces.Dict):
        out = []
        for name, sub in space.spaces.items():
            out += _leaves(sub, f"{prefix}{name}/")
        return out
    if isinstance(space, (spaces.Box, spaces.Discrete)):
        return [(prefix.rstrip("/"), space)]
    raise TypeError(f"FlattenObservation flattens Dict, Box and Discrete spaces, got {space!r} at {prefix or 'top'}")


def _categories(space: Any) -> tuple[int, int] | None:
    """Returns ``(low, number of classes)`` of a categorical leaf (``Discrete`` or integer non-bool ``Box``), else
    None."""
    if isinstance(space, spaces.Discrete):
        return 0, int(space.n)
    dtype = np.dtype(space.dtype)
    if np.issubdtype(dtype, np.integer):
        low, high = int(np.min(space.low)), int(np.max(space.high))
        return low, high - low + 1
    return None


def _bounds(space: Any, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Returns the raveled ``float32`` bounds of a leaf copied as values."""
    if isinstance(space, spaces.Discrete):
        low, high = 0, space.n - 1
    else:
        low, high = space.low, space.high
    as_flat = lambda b: np.broadcast_to(np.asarray(b, np.float64), shape).astype(np.float32).ravel()  # noqa: E731
    return as_flat(low), as_flat(high)


def flatten_layout(space: Any, one_hot: bool | Collection[str] = False) -> tuple[tuple[Segment, ...], spaces.Box]:
    """Returns ``(segments, box)`` for flattening observations of ``space``.

    Args:
        space: a jaxsoc ``Dict`` (nested allowed), ``Box`` or ``Discrete`` observation space.
        one_hot: False: every entry copied as floats; True: every categorical entry (``Discrete``, integer ``Box``)
            of at most ``MAX_CATEGORIES`` classes one-hot; a collection of paths (``"mission"``,
            ``"objects/cls"``): exactly those entries one-hot.

    Returns:
        ``segments``: one ``Segment`` per entry, in order; ``box``: the flat space, ``Box(low, high, (D,),
        float32)`` with per-element bounds ``float32[D]``.

    Raises:
        ValueError: a path in ``one_hot`` that is no entry, or names an entry that is not categorical.
        TypeError: ``space`` holds a space that is none of ``Dict``, ``Box`` and ``Discrete``.
    """
    if isinstance(one_hot, str):
        raise TypeError(f"one_hot takes a bool or a collection of paths, got the string {one_hot!r}; wrap it in a list")
    leaves = _leaves(space)
    named = set() if isinstance(one_hot, bool) else set(one_hot)
    unknown = named - {path for path, _ in leaves}
    if unknown:
        raise ValueError(f"one_hot names {sorted(unknown)}, not entries of the observation: {[p for p, _ in leaves]}")
    segments, lows, highs, start = [], [], [], 0
    for path, leaf in leaves:
        shape = tuple(int(d) for d in leaf.shape)
        size = int(np.prod(shape, dtype=np.int64))
        classes = _categories(leaf)
        if path in named and classes is None:
            raise ValueError(f"one_hot names {path!r}, which is not categorical ({leaf!r})")
        expand = classes is not None and (path in named or (one_hot is True and classes[1] <= MAX_CATEGORIES))
        if expand:
            low, k = classes
            segments.append(Segment(path, start, start + size * k, shape, k, low))
            lows.append(np.zeros(size * k, np.float32))
            highs.append(np.ones(size * k, np.float32))
            start += size * k
        else:
            segments.append(Segment(path, start, start + size, shape))
            low, high = _bounds(leaf, shape)
            lows.append(low)
            highs.append(high)
            start += size
    low, high = np.concatenate(lows), np.concatenate(highs)
    return tuple(segments), spaces.Box(low, high, (start,), jnp.float32)


def _entry(obs: Any, path: str) -> Any:
    for name in path.split("/") if path else ():
        obs = obs[name]
    return obs


def flatten_observation(obs: Any, segments: tuple[Segment, ...]) -> jax.Array:
    """Returns ``float32[D]``: one observation (no batch axis; ``vmap`` for batches) laid out by ``segments``."""
    parts = []
    for segment in segments:
        x = jnp.asarray(_entry(obs, segment.path))
        if segment.categories:
            x = jax.nn.one_hot(x.astype(jnp.int32) - segment.low, segment.categories, dtype=jnp.float32)
        parts.append(jnp.ravel(x).astype(jnp.float32))
    return jnp.concatenate(parts)


class FlattenObservation(Wrapper):
    """An environment whose observation is the inner env's, flattened to ``float32[D]`` (``flatten_layout``).

    Everything else (states, rewards, flags, ``info``, the inner env's own auto-reset) is the inner env's;
    ``info["final_observation"]`` is flattened too. Jittable and vmappable like any ``Environment``.

    Args:
        env: the jaxsoc environment to wrap (any family, or a wrapper of one).
        one_hot: see ``flatten_layout``: False, True (categorical entries of at most ``MAX_CATEGORIES`` classes)
            or a collection of entry paths.
        params: the params ``layout`` is read under (the observation's shapes are static fields of the params);
            default: the env's default params.

    Attributes:
        layout: the ``Segment`` of each entry under ``params``.
    """

    def __init__(self, env: Environment, one_hot: bool | Collection[str] = False, params: Any = None) -> None:
        super().__init__(env)
        self.one_hot = one_hot if isinstance(one_hot, bool) else tuple(one_hot)
        params = env.default_params() if params is None else params
        self.layout, _ = flatten_layout(env.observation_space(params), self.one_hot)

    def _segments(self, params: Any) -> tuple[Segment, ...]:
        return flatten_layout(self._env.observation_space(params), self.one_hot)[0]

    def observation_space(self, params: Any = None) -> spaces.Box:
        """Returns ``Box(low, high, (D,), float32)``, the flat space of the inner env's observation under
        ``params`` (default params when None)."""
        params = self._env.default_params() if params is None else params
        return flatten_layout(self._env.observation_space(params), self.one_hot)[1]

    def reset_env(self, key: jax.Array, params: Any):
        """Returns ``(obs float32[D], state)`` of the inner env's new episode."""
        obs, state = self._env.reset_env(key, params)
        return flatten_observation(obs, self._segments(params)), state

    def step_env(self, key: jax.Array, state: Any, action: jax.Array, params: Any):
        """The inner env's raw transition (no reset) with the observation flattened."""
        obs, state, reward, terminated, truncated, info = self._env.step_env(key, state, action, params)
        return flatten_observation(obs, self._segments(params)), state, reward, terminated, truncated, info

    def _auto_reset_step(self, key, state, action, params):
        obs, state, reward, terminated, truncated, info = self._env._auto_reset_step(key, state, action, params)
        segments = self._segments(params)
        info = dict(info, final_observation=flatten_observation(info["final_observation"], segments))
        return flatten_observation(obs, segments), state, reward, terminated, truncated, info
