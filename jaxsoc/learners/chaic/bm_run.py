"""A CHAIC behaviour-model run directory: its checkpoints (``checkpointer``: the meta they record and check: the
kind, the config and the model's layout) and reading the trained model back (``load``). ``bm_train.train`` writes
it: ``run.json``, ``metrics.csv`` / ``metrics.json``, ``curves.png``, ``report.json`` and ``checkpoints/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp

from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.learners.chaic.bm_config import BMConfig, model_config
from jaxsoc.learners.chaic.bm_data import FEATURES
from jaxsoc.learners.chaic.bm_model import fresh_state, optimizer_for
from jaxsoc.learners.checkpoint import Checkpointer
from jaxsoc.learners.networks.chaic import CONSTRAINTS
from jaxsoc.learners.run_log import read_run_json

KIND = "chaic-bm"
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


def load(run: str | Path) -> tuple[BMConfig, Any]:
    """Returns ``(config, params)`` of a ``chaic-bm`` run directory: its config and the newest checkpoint's
    parameters.

    Raises:
        ValueError: not a chaic-bm run (no or a foreign ``run.json``), a bad config, no checkpoint yet, or a
            checkpoint of another kind or config.
    """
    info = read_run(run)
    if not (Path(run) / CHECKPOINTS).is_dir():
        raise ValueError(f"{run} has no checkpoint yet (no {CHECKPOINTS}/)")
    try:
        config = BMConfig(**info["config"])
    except (TypeError, KeyError) as error:
        raise ValueError(f"{run}: bad config in {RUN_JSON}: {error}") from error
    optimizer = optimizer_for(model_config(config))
    template = jax.tree_util.tree_map(
        lambda s: jnp.zeros(s.shape, s.dtype), jax.eval_shape(lambda: fresh_state(config, optimizer))
    )
    checkpoints = checkpointer(Path(run), config)
    try:
        state = checkpoints.restore(template)
    except FileNotFoundError as error:
        raise ValueError(f"{run} has no checkpoint yet") from error
    finally:
        checkpoints.close()
    return config, state["params"]
