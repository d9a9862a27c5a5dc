"""Environment registry: ``register``, ``unregister``, ``make`` and ``registered_envs``."""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable
from typing import Any

_REGISTRY: dict[str, Callable[..., Any]] = {}
_INSTANCES: dict[Any, Any] = {}  # environments are stateless: one instance (and its jit cache) per name and init_kwargs


class UnknownEnvironment(KeyError):
    """``make`` was given a name that is not registered (a ``KeyError``, so ``except KeyError`` still catches it;
    the ``jaxsoc`` command catches only this one)."""


def register(name: str, factory: Callable[..., Any]) -> None:
    """Registers ``factory(**init_kwargs) -> Environment`` under ``name`` (most factories take no keywords); a name
    can be registered once."""
    if name in _REGISTRY:
        raise ValueError(f"environment {name!r} is already registered")
    _REGISTRY[name] = factory


def unregister(name: str) -> None:
    """Removes ``name`` (registered by ``register``) and its instance. Raises ``KeyError`` for an unknown name."""
    if name not in _REGISTRY:
        raise KeyError(f"environment {name!r} is not registered")
    del _REGISTRY[name]
    for key in [k for k in _INSTANCES if k == name or (isinstance(k, tuple) and k[0] == name)]:
        del _INSTANCES[key]


def registered_envs() -> list[str]:
    """Returns the registered environment names, sorted."""
    return sorted(_REGISTRY)


def make(
    name: str, init_kwargs: dict[str, Any] | None = None, *, observation: str | None = None, **overrides: Any
) -> tuple[Any, Any]:
    """Returns ``(env, params)`` for a registered name; ``overrides`` replace fields of the default params
    (e.g. ``max_steps=50``, ``see_through_walls=True``); ``init_kwargs`` go to the env's constructor (e.g. CHAIC's
    options view: ``rooms=True``, ``partner=...``; hashable values); ``observation`` selects an observation kind
    (``env.with_observation(observation)``; ``env.observation_kinds()`` lists them, e.g. ``"full"`` or ``"rgb"`` for
    the grid families, docs/observations.md). Environments hold no episode data, so the same instance (with its
    compiled ``reset``/``step``) is returned for a name, ``init_kwargs`` and ``observation``.

    Raises:
        UnknownEnvironment: unknown name, a ``KeyError`` (the message lists the closest registered names).
        TypeError: an override that is not a field of the env's params, ``init_kwargs`` the env does not take, or
            an ``observation`` that is not a string.
        ValueError: an ``observation`` kind the env does not offer (the message lists those it does).
    """
    if name not in _REGISTRY:
        close = difflib.get_close_matches(name, _REGISTRY, n=5, cutoff=0.4)
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        raise UnknownEnvironment(f"unknown environment {name!r}.{hint} See jaxsoc.registered_envs() for all names.")
    key = (name, tuple(sorted(init_kwargs.items()))) if init_kwargs else name
    if key not in _INSTANCES:
        try:
            _INSTANCES[key] = _REGISTRY[name](**(init_kwargs or {}))
        except TypeError as error:
            raise TypeError(f"{name}: bad constructor arguments {sorted(init_kwargs or {})}: {error}") from error
    env = _INSTANCES[key]
    if observation is not None:
        env = _with_observation(env, key if isinstance(key, tuple) else (name, ()), observation)
    params = env.default_params()
    if overrides:
        fields = {f.name for f in dataclasses.fields(params)}
        unknown = sorted(set(overrides) - fields)
        if unknown:
            raise TypeError(f"{name}: unknown params {unknown}; valid fields are {sorted(fields)}")
        params = params.replace(**overrides)
    return env, params


def _with_observation(env: Any, key: tuple, observation: Any) -> Any:
    """Returns ``env`` with observation kind ``observation``, one instance per ``(key, observation)``. An env without
    the hook (the multi-agent views) offers only ``"default"``."""
    if not isinstance(observation, str):
        raise TypeError(f"{key[0]}: observation must be a string, got {observation!r}")
    view_key = (*key, "observation", observation)
    if view_key not in _INSTANCES:
        kinds = tuple(env.observation_kinds()) if hasattr(env, "with_observation") else ("default",)
        if observation != "default" and observation not in kinds:
            offered = "only its default observation" if kinds == ("default",) else f"the kinds {list(kinds)}"
            raise ValueError(f"{key[0]}: unknown observation {observation!r}; this environment offers {offered}")
        _INSTANCES[view_key] = env.with_observation(observation) if hasattr(env, "with_observation") else env
    return _INSTANCES[view_key]
