"""A Hybrid run directory: its checkpoints (``checkpointer``: the meta they record and check) and reading the
trained high-level policy back (``load``). ``hybrid_train.train`` writes it: ``run.json`` (kind ``"hybrid"``, the
config) and orbax checkpoints under ``checkpoints/``.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxsoc.envs.household.options import NUM_CHOICES
from jaxsoc.learners.checkpoint import Checkpointer, restore_raw
from jaxsoc.learners.household.hybrid_config import HybridConfig
from jaxsoc.learners.networks import registry
from jaxsoc.learners.networks.household import HYBRID_NETWORK, HybridPolicy

RUN_JSON = "run.json"
CHECKPOINTS = "checkpoints"
KIND = "hybrid"


def checkpointer(out: Path, config: HybridConfig, model: nn.Module) -> Checkpointer:
    """Returns the ``Checkpointer`` of run directory ``out``: its meta records the kind, the config and the
    network (``registry.describe``), which a restore checks."""
    meta = {"kind": KIND, "config": dataclasses.asdict(config), **registry.describe(model)}
    return Checkpointer(out / CHECKPOINTS, meta)


def config_of(info: dict[str, Any], where: str | Path) -> HybridConfig:
    """Returns the ``HybridConfig`` of a run's ``run.json`` content ``info`` (a config without ``option_end``, written
    before it existed, was trained with the true counts: ``"true"``). Raises ``ValueError`` naming ``where`` for
    another kind or a config this version does not read."""
    if info.get("kind") != KIND:
        raise ValueError(f"{where} is not a Hybrid training run (no {RUN_JSON} of kind {KIND!r})")
    try:
        return HybridConfig(**{"option_end": "true", **info["config"]})
    except (TypeError, KeyError) as error:
        raise ValueError(f"{where}: {RUN_JSON} holds a config this version does not read: {error}") from error


def policy_of(config: HybridConfig) -> HybridPolicy:
    """Returns the high-level network of ``config`` (its ``preset``)."""
    return HybridPolicy(registry.network_config(HYBRID_NETWORK, config.preset, NUM_CHOICES))


def load(run: str | Path) -> tuple[HybridPolicy, Any, HybridConfig]:
    """Returns ``(policy, params, config)`` of a Hybrid run directory (or of ``model:NAME``, a ``hybrid`` model of
    ``jaxsoc.models``): the network, its parameters from the newest checkpoint and the run's ``HybridConfig``.

    Raises:
        ValueError: not a Hybrid run, an unreadable config, or no checkpoint yet; a model of another kind, or
            parameters that do not fit its config's network.
    """
    from jaxsoc import models

    if models.ref_name(run) is not None:
        return models.load(run, KIND, "household")
    path = Path(run) / RUN_JSON
    config = config_of(json.loads(path.read_text()) if path.exists() else {}, run)
    policy = policy_of(config)
    checkpoints = checkpointer(Path(run), config, policy)
    try:
        step = checkpoints.check_meta()
    except FileNotFoundError as error:
        raise ValueError(f"{run} has no checkpoint yet") from error
    finally:
        checkpoints.close()
    params = jax.tree_util.tree_map(jnp.asarray, restore_raw(Path(run) / CHECKPOINTS, step)["params"])
    return policy, params, config
