"""An HRL low-level run directory: what its checkpoints record (``meta``) and reading the trained policy back
(``load``). ``hrl_train.train`` writes it: ``run.json`` (kind ``"hrl-low"``, the config, the network) and orbax
checkpoints under ``checkpoints/``.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxsoc.learners.checkpoint import latest_step, restore_raw
from jaxsoc.learners.household.hrl_config import SCHEDULE_FIELDS, HRLConfig
from jaxsoc.learners.networks import registry
from jaxsoc.learners.networks.household import LowLevelPolicy

RUN_JSON, CHECKPOINTS, KIND = "run.json", "checkpoints", "hrl-low"


def meta(config: HRLConfig, model: nn.Module) -> dict[str, Any]:
    """Returns the checkpoints' meta: the kind, the config fields that change an update, and the network
    (``registry.describe``)."""
    fields = {k: v for k, v in dataclasses.asdict(config).items() if k not in SCHEDULE_FIELDS}
    return {"kind": KIND, "config": fields, **registry.describe(model)}


def config_of(info: dict[str, Any], where: str | Path) -> tuple[LowLevelPolicy, HRLConfig]:
    """Returns ``(policy, config)`` of a low-level run's ``run.json`` content ``info``: the network it describes
    (``registry.from_description``) and its ``HRLConfig``. Raises ``ValueError`` naming ``where`` for another kind
    or a config this version does not read."""
    if info.get("kind") != KIND:
        raise ValueError(f"{where} is not an HRL low-level run (no {RUN_JSON} of kind {KIND!r})")
    try:
        return registry.from_description(info), HRLConfig(**info["config"])
    except (TypeError, KeyError) as error:
        raise ValueError(f"{where}: {RUN_JSON} holds a config this version does not read: {error}") from error


def load(run: str | Path) -> tuple[LowLevelPolicy, dict[str, Any], HRLConfig]:
    """Returns ``(policy, variables, config)`` of a low-level run (or of ``model:NAME``, an ``hrl-low`` model of
    ``jaxsoc.models``): the network, ``{"params": ...}`` of its newest checkpoint (for ``policy.apply``) and the
    run's ``HRLConfig``.

    Raises:
        ValueError: not a low-level run directory, or no checkpoint yet; a model of another kind, or parameters
            that do not fit its network.
    """
    from jaxsoc import models

    if models.ref_name(run) is not None:
        return models.load(run, KIND, "household")
    path = Path(run) / RUN_JSON
    policy, config = config_of(json.loads(path.read_text()) if path.exists() else {}, run)
    step = latest_step(Path(run) / CHECKPOINTS)
    if step is None:
        raise ValueError(f"{run} has no checkpoint yet")
    state = restore_raw(Path(run) / CHECKPOINTS, step)
    return policy, {"params": jax.tree_util.tree_map(jnp.asarray, state["params"])}, config
