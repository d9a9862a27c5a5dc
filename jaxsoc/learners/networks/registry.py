"""The policy protocol every trainer uses, and the registry that rebuilds a network from a checkpoint.

PPO/A2C, behaviour cloning, evaluation, recording and ``load_policy`` take any Flax module built as
``Network(config)`` (``config`` a frozen dataclass with a ``num_actions`` field) that offers:

- ``initial_memory(batch) -> memory``: the zero memory, a pytree whose leaves have a leading axis ``batch``
  (called on the unbound module);
- ``encode_context(obs) -> context``: what the network computes once per episode from the parts of the
  observation that stay constant within an episode (BabyAI: the encoded mission), a pytree with a leading
  axis ``B``, or ``()`` for none. It may read parameters only (no mutable collections), so an acting loop
  can cache it per world and recompute it only for worlds that start a new episode;
- ``step(obs, context, memory, train=False) -> (log_probs [B, A], value [B], memory)``: one acting step;
  BPTT runs it over a sequence with ``lax.scan``;
- ``__call__(obs, memory, train=False)`` = ``step(obs, encode_context(obs), memory, train)``.

``train`` selects batch statistics where the network has BatchNorm (``apply(..., mutable=["batch_stats"])``).
A registered network (``register``) is named in checkpoints with its config (``describe``), so
``from_description`` rebuilds it; an unregistered module still trains, but ``load_policy`` cannot rebuild it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import flax.linen as nn
import jax


@dataclasses.dataclass(frozen=True)
class NetworkSpec:
    """A registered network.

    Attributes:
        module: the Flax module class, built as ``module(config)``.
        config: its frozen config dataclass (with ``num_actions``).
        presets: named configs (``num_actions`` is set from the env when built).
        check: ``check(config, observation_space)`` raises ``ValueError`` when the env's observations do not
            fit the network (missing keys, token ids beyond a vocabulary); None accepts every env.
        from_json: turns a config dict read from JSON back into constructor arguments (lists to tuples).
    """

    module: type[nn.Module]
    config: type
    presets: dict[str, Any]
    check: Callable[[Any, Any], None] | None = None
    from_json: Callable[[dict[str, Any]], dict[str, Any]] = dict


NETWORKS: dict[str, NetworkSpec] = {}


def register(name: str, spec: NetworkSpec) -> None:
    """Registers ``spec`` under ``name`` (a second registration of the same name replaces the first)."""
    NETWORKS[name] = spec


def _spec(name: str) -> NetworkSpec:
    if name not in NETWORKS:
        raise ValueError(f"unknown network {name!r}; registered: {sorted(NETWORKS)}")
    return NETWORKS[name]


def network_config(name: str, preset: str, num_actions: int | None = None, **overrides: Any) -> Any:
    """Returns the config of network ``name``'s ``preset`` with ``num_actions`` (None keeps the preset's) and
    ``overrides`` (config fields; None values are ignored).

    Raises:
        ValueError: an unknown network, preset or field.
    """
    spec = _spec(name)
    if preset not in spec.presets:
        raise ValueError(f"unknown preset {preset!r} of network {name!r}; choose one of {sorted(spec.presets)}")
    fields = {f.name for f in dataclasses.fields(spec.config)}
    overrides = {k: v for k, v in overrides.items() if v is not None}
    unknown = sorted(set(overrides) - fields)
    if unknown:
        raise ValueError(f"network {name!r} has no config fields {unknown}; known: {sorted(fields)}")
    if num_actions is not None:
        overrides["num_actions"] = num_actions
    try:
        return dataclasses.replace(spec.presets[preset], **overrides)
    except TypeError as error:
        raise ValueError(f"network {name!r}: {error}") from error


def build(name: str, config: Any, observation_space: Any = None) -> nn.Module:
    """Returns network ``name`` built from ``config``, checked against ``observation_space`` when given.

    Raises:
        ValueError: an unknown network, or observations that do not fit it.
    """
    spec = _spec(name)
    if observation_space is not None and spec.check is not None:
        spec.check(config, observation_space)
    return spec.module(config)


def name_of(model: nn.Module) -> str | None:
    """Returns the registered name of ``model``'s class, or None."""
    return next((name for name, spec in NETWORKS.items() if type(model) is spec.module), None)


def describe(model: nn.Module) -> dict[str, Any]:
    """Returns ``{"network": name, "model_config": dict}`` for a checkpoint's meta (name None when the
    module's class is not registered)."""
    return {"network": name_of(model), "model_config": dataclasses.asdict(model.config)}


def from_description(meta: dict[str, Any]) -> nn.Module:
    """Returns the network described by a checkpoint's meta (``describe``'s keys; a meta without
    ``network`` is a BabyAI ``ACModel``, as jaxsoc wrote them before the registry).

    Raises:
        ValueError: no ``model_config``, an unregistered network, or a config it does not accept.
    """
    if "model_config" not in meta:
        raise ValueError("the checkpoint's meta has no model_config: it holds no policy")
    name = meta.get("network") or "babyai"
    spec = _spec(name)
    try:
        config = spec.config(**spec.from_json(meta["model_config"]))
    except TypeError as error:
        raise ValueError(f"network {name!r} does not accept the checkpoint's model_config: {error}") from error
    return spec.module(config)


def reset_memory(memory: Any, keep: jax.Array) -> Any:
    """Returns ``memory`` with every leaf multiplied by ``keep`` (``float32[B]``, 0 where an episode starts)."""
    return jax.tree_util.tree_map(lambda m: m * keep.reshape(keep.shape + (1,) * (m.ndim - 1)).astype(m.dtype), memory)
