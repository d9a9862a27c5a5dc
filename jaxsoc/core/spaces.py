"""Observation and action spaces: ``Discrete``, ``Box`` and ``Dict``, each with ``sample`` and ``contains``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


@dataclass(frozen=True)
class Discrete:
    """Integers ``0 .. n - 1``."""

    n: int
    dtype: Any = jnp.int32
    shape: tuple[int, ...] = ()

    def sample(self, key: jax.Array) -> jax.Array:
        """Returns a uniform ``dtype[]`` scalar in ``[0, n)``."""
        return jax.random.randint(key, self.shape, 0, self.n).astype(self.dtype)

    def contains(self, x: Any) -> bool:
        """True when ``x`` is an integer scalar in ``[0, n)`` (host-side check)."""
        x = np.asarray(x)
        return x.shape == self.shape and np.issubdtype(x.dtype, np.integer) and bool(np.all((x >= 0) & (x < self.n)))


@dataclass(frozen=True)
class Box:
    """Arrays of a fixed shape and dtype with elementwise bounds ``low <= x <= high``."""

    low: Any
    high: Any
    shape: tuple[int, ...]
    dtype: Any = jnp.float32

    def sample(self, key: jax.Array) -> jax.Array:
        """Returns a ``dtype[shape]`` array drawn uniformly within the bounds."""
        if jnp.issubdtype(self.dtype, jnp.integer):
            return jax.random.randint(key, self.shape, self.low, jnp.asarray(self.high) + 1).astype(self.dtype)
        return jax.random.uniform(key, self.shape, minval=self.low, maxval=self.high).astype(self.dtype)

    def contains(self, x: Any) -> bool:
        """True when ``x`` has this shape, a compatible dtype kind and lies within the bounds."""
        x = np.asarray(x)
        same_kind = np.issubdtype(x.dtype, np.integer) == bool(jnp.issubdtype(self.dtype, jnp.integer))
        return x.shape == self.shape and same_kind and bool(np.all((x >= self.low) & (x <= self.high)))


@dataclass(frozen=True)
class Dict:
    """A dictionary of named sub-spaces."""

    spaces: dict[str, Any] = field(default_factory=dict)

    def sample(self, key: jax.Array) -> dict[str, jax.Array]:
        """Returns a dict with one sample per sub-space."""
        keys = jax.random.split(key, len(self.spaces))
        return {name: space.sample(k) for (name, space), k in zip(self.spaces.items(), keys)}

    def contains(self, x: Any) -> bool:
        """True when ``x`` has exactly these keys and every value is in its sub-space."""
        return (
            isinstance(x, dict)
            and x.keys() == self.spaces.keys()
            and all(space.contains(x[name]) for name, space in self.spaces.items())
        )

    def __getitem__(self, name: str) -> Any:
        return self.spaces[name]
