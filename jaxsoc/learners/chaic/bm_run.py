"""A CHAIC behaviour-model run directory: its checkpoints (``checkpointer``: the meta they record and check: the
kind, the config and the model's layout) and reading the trained model back (``load``). ``bm_train.train`` writes
it: ``run.json``, ``metrics.csv`` / ``metrics.json``, ``curves.png``, ``report.json`` and ``checkpoints/``.
``load`` also takes ``model:NAME``, a behaviour model shipped in ``jaxsoc.models`` (kind ``MODEL_KIND``,
``from_model``; e.g. ``model:chaic-bm``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp

from jaxsoc import models
from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.learners.chaic.bm_config import BMConfig, model_config
from jaxsoc.learners.chaic.bm_data import FEATURES
from jaxsoc.learners.chaic.bm_model import fresh_state, optimizer_for
from jaxsoc.learners.checkpoint import Checkpointer
from jaxsoc.learners.networks.chaic import CONSTRAINTS
from jaxsoc.learners.run_log import read_run_json

KIND = "chaic-bm"
#: the ``jaxsoc.models`` kind of a behaviour model (``learners.chaic.family``)
FAMILY, MODEL_KIND = "chaic", "bm"
RUN_JSON, REPORT_JSON, CHECKPOINTS = "run.json", "report.json", "checkpoints"


def _model_meta(config: BMConfig) -> dict[str, Any]:
    return {
        "embed": config.embed,
        "hidden": config.hidden,
        "pool": config.pool,
        "features": [list(block) for block in FEATURES],
        "classes": K.NUM_CLASSES,
        "constraints": list(CONSTRAINTS),
    }


def checkpointer(run: Path, config: BMConfig) -> Checkpointer:
    """Returns the run's checkpoints; a restore checks the kind, the config (all but ``epochs`` and
    ``checkpoint_every``) and the model layout."""
    saved = {k: v for k, v in config.to_dict().items() if k not in ("epochs", "checkpoint_every")}
    return Checkpointer(run / CHECKPOINTS, {"kind": KIND, "config": saved, "model_config": _model_meta(config)})


def read_run(run: str | Path) -> dict[str, Any]:
    """Returns ``run.json`` of a ``chaic-bm`` run directory (``run_log.read_run_json``: raises ``ValueError``
    for none or another kind)."""
    return read_run_json(run, KIND)


def config_of(info: dict[str, Any], where: str) -> BMConfig:
    """Returns the ``BMConfig`` of a run's ``run.json`` content ``info``; raises ``ValueError`` naming ``where``."""
    try:
        return BMConfig(**info["config"])
    except (TypeError, KeyError, ValueError) as error:
        raise ValueError(f"{where}: bad config in {RUN_JSON}: {error}") from error


def template(config: BMConfig) -> dict[str, Any]:
    """Returns a fresh training state of ``config`` (``{"params", "opt_state"}``, zeros): what a checkpoint or a
    model's parameters are restored into."""
    optimizer = optimizer_for(model_config(config))
    return jax.tree_util.tree_map(
        lambda s: jnp.zeros(s.shape, s.dtype), jax.eval_shape(lambda: fresh_state(config, optimizer))
    )


def from_model(card: models.Card, tree: Any) -> tuple[BMConfig, Any]:
    """Returns ``(config, params)`` of a behaviour model (``jaxsoc.models``): the config its card copied from the
    run's ``run.json``, the stored parameters checked against the model that config builds (``models.fit``).

    Raises:
        ValueError: a card without a ``chaic-bm`` run's config, heads (classes, constraints, features) other than
            this CHAIC declares (named: a task or ability added since), or arrays that do not fit its model.
    """
    info = card.spec.get("files", {}).get(RUN_JSON, {})
    if info.get("kind") != KIND:
        raise ValueError(f"{card.path}: not a {KIND} model (its spec has no {KIND} {RUN_JSON})")
    config = config_of(info, str(card.path))
    saved, current = card.spec.get("meta", {}).get("model_config", {}), _model_meta(config)
    changed = [
        f"{name}: model {saved.get(name)!r}, this jaxsoc {current[name]!r}"
        for name in current
        if name in saved and json.loads(json.dumps(current[name])) != saved[name]
    ]
    if changed:  # a task or ability added since the model was trained grows its heads
        raise ValueError(f"{card.path}: the behaviour model's heads differ from this CHAIC: " + "; ".join(changed))
    return config, models.fit(template(config), tree, card, keep=("params",))["params"]


def open_model(run: str | Path) -> tuple[models.Card, Any]:
    """Returns ``(card, parameters)`` of ``model:NAME``; raises ``ValueError`` for a model that is not a CHAIC
    behaviour model (its family and kind named), ``KeyError`` / ``ModelFileError`` as ``models.open_ref``."""
    card, tree = models.open_ref(run)
    if (card.family, card.kind) != (FAMILY, MODEL_KIND):
        raise ValueError(
            f"{run} is a {card.family}/{card.kind} model, not a CHAIC behaviour model ({FAMILY}/{MODEL_KIND}, "
            "e.g. model:chaic-bm)"
        )
    return card, tree


def load(run: str | Path) -> tuple[BMConfig, Any]:
    """Returns ``(config, params)`` of a ``chaic-bm`` run directory (its config and the newest checkpoint's
    parameters) or of ``model:NAME`` (a behaviour model shipped in ``jaxsoc.models``, ``from_model``).

    Raises:
        ValueError: not a chaic-bm run (no or a foreign ``run.json``), a bad config, no checkpoint yet, or a
            checkpoint of another kind or config; a model of another kind, or one whose arrays do not fit.
        KeyError: an unknown model name.
    """
    if models.ref_name(run) is not None:
        return from_model(*open_model(run))
    info = read_run(run)
    if not (Path(run) / CHECKPOINTS).is_dir():
        raise ValueError(f"{run} has no checkpoint yet (no {CHECKPOINTS}/)")
    config = config_of(info, str(run))
    checkpoints = checkpointer(Path(run), config)
    try:
        state = checkpoints.restore(template(config))
    except FileNotFoundError as error:
        raise ValueError(f"{run} has no checkpoint yet") from error
    finally:
        checkpoints.close()
    return config, state["params"]
