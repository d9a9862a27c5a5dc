"""BIB's pretrained models (``jaxsoc.models``): the trained observers and an image encoder.

Two kinds, declared by the family (``learners.bib.family``):

- ``observer``: a BC-MLP, BC-RNN or Video-RNN run, every seed, with only the parameters its evaluation reads (the
  SWA mean when the run averages, else the last ones; ``Learner.final_params``). ``load`` gives what ``run.load``
  gives for the run directory, ``(learner, states, info)`` (the states' ``params`` and ``swa`` both the stored
  parameters, the optimiser state zero), so every command that takes an observer run takes ``model:NAME``
  (``jaxsoc bib eval model:NAME``, ``jaxsoc bib probe``, ``--encoder`` for a pixel run's encoder). A frozen
  encoder (``finetune_encoder=false``) that is itself an ``encoder`` model of the store is named in the spec
  (``encoder_model``) instead of stored twice. ``evaluate`` is ``jaxsoc bib eval``'s VOE accuracy per type.
- ``encoder``: an image encoder as ``--encoder RUN`` takes it (``run.encoder_from``: seed 0's final parameters of
  an ATC run or of a pixel observer run, a frozen encoder included); ``load`` gives its parameters, ``evaluate``
  the linear probes of ``jaxsoc bib probe`` (the agent's cell and its next move from one frame's latent).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc import models
from jaxsoc.learners.checkpoint import latest_step, read_meta

FAMILY, OBSERVER, ENCODER = "bib", "observer", "encoder"


def _final_key(info: dict[str, Any]) -> str:
    """The state field ``final_params`` reads for a run of ``run.json`` ``info``."""
    return "swa" if info["config"].get("swa", True) else "params"


# ---------------------------------------------------------------------------------------------------- observers


def snapshot_observer(run_dir: str | Path) -> tuple[dict[str, Any], Any]:
    """Returns ``(spec, parameters)`` of an observer run (``ModelKind.snapshot``): its ``run.json`` and checkpoint
    meta, and the state field its evaluation reads (``swa`` or ``params``) of every seed; a frozen encoder that an
    ``encoder`` model of the store holds is left out and named (``spec["encoder_model"]``)."""
    from jaxsoc.learners.bib import run

    info = run.read_info(run_dir)
    if info["kind"] == "bib-atc":
        raise ValueError(f"{run_dir} is a bib-atc run, not an observer; export its encoder as an encoder model")
    key = _final_key(info)
    spec, tree = models.snapshot_run(run_dir, files=(run.RUN_JSON,), keep=(key,))
    frozen = info["config"].get("finetune_encoder", True) is False and info["config"].get("inputs") != "symbolic"
    name = _stored_encoder(tree[key]["encoder"]) if frozen else None
    if name is not None:
        spec["encoder_model"] = name
        tree = {key: {k: v for k, v in tree[key].items() if k != "encoder"}}
    return spec, tree


def _stored_encoder(encoder: Any) -> str | None:
    """Returns the name of an ``encoder`` model of the store whose parameters equal every seed's of ``encoder``
    (leading seed axis), or None."""
    for card in models.list(FAMILY):
        if card.kind != ENCODER:
            continue
        stored = models.as_float32(models.open_ref(card.name)[1]["encoder"])

        def same(s: np.ndarray, e: Any) -> bool:
            e = np.asarray(e)
            return e.shape[1:] == s.shape and all(np.array_equal(row, s) for row in e)

        try:
            equal = jax.tree.map(same, stored, encoder)
        except (ValueError, TypeError):  # another structure
            continue
        if all(jax.tree.leaves(equal)):
            return card.name
    return None


def load_observer(card: models.Card, tree: Any) -> tuple[Any, Any, dict[str, Any]]:
    """Returns ``run.load``'s ``(learner, states, info)`` of an observer model (``ModelKind.load``); the stored
    parameters are checked against the network the card's ``run.json`` builds.

    Raises:
        ValueError: arrays that do not fit that network (named), or a named encoder model that does not.
    """
    from jaxsoc.learners.bib import run

    info = card.spec["files"][run.RUN_JSON]
    learner, template = run.restore_template(info)
    key = _final_key(info)
    if "encoder_model" in card.spec:
        encoder = models.load(card.spec["encoder_model"], ENCODER, FAMILY)
        seeds = int(info["seeds"])
        tree = {key: {**tree[key], "encoder": jax.tree.map(lambda x: np.stack([np.asarray(x)] * seeds), encoder)}}
    states = models.fit(template, tree, card, keep=(key,))
    final = getattr(states, key)
    return learner, states.replace(params=final, swa=final), info


def observer_figures(result: dict[str, Any], pairs: dict[str, int]) -> dict[str, dict[str, float]]:
    """Returns ``{type or average: {"value", "se", "seeds", "episodes"}}`` of ``run.evaluate``'s ``result`` on
    ``pairs`` (type -> pairs): the mean over seeds, and the larger of its standard error over seeds and the
    binomial one of the pooled pairs (the only one for a single seed; ``p`` kept half a pair from 0 and 1, so that a
    type scored 100% has the error of one pair in two)."""
    from jaxsoc.learners.bib import voe

    seeds = len(result["per_seed"])

    def variance(name: str) -> float:  # of the mean of one type's correct pairs, over every seed's pairs
        n = pairs[name] * seeds
        p = min(max(result["mean"][name], 0.5 / n), 1 - 0.5 / n)
        return p * (1 - p) / n

    figures = {}
    for name, value in result["mean"].items():
        parts = voe.AVERAGES.get(name, (name,))
        binomial = math.sqrt(sum(variance(part) for part in parts)) / len(parts)
        se = max(float(result["se"][name]), binomial)
        figures[name] = {"value": float(value), "se": se, "seeds": seeds, "episodes": int(pairs[parts[0]])}
    return figures


def evaluate_observer(
    ref: str,
    pairs: int = 100,
    seed: int = 1,
    batch: int = 50,
    region: str = "frame",
    reduce: str = "max",
    types: list[str] | None = None,
) -> dict[str, dict[str, float]]:
    """Returns ``jaxsoc bib eval REF --pairs P --seed S --region R --no-reference``'s VOE accuracy per type and the
    paper's two averages (``observer_figures``; ``ModelKind.evaluate``)."""
    from jaxsoc.learners.bib import evaluation

    result = evaluation.evaluate_runs(
        [ref], types=types, seed=seed, pairs=pairs, reduce=reduce, batch=batch, region=region, reference=False
    )
    (record,) = result.records.values()
    return observer_figures(record, result.pairs)


# ---------------------------------------------------------------------------------------------------- encoders


def encoder_module(spec: dict[str, Any]):
    """Returns the flax encoder module an encoder model's ``spec["encoder"]`` names (built as the BC learner builds
    it: ``bc.BCLearner``)."""
    from jaxsoc.learners.bib import bc

    fields = dict(spec["encoder"])
    return bc.BCLearner(bc.BCConfig(encoder=fields.pop("type"), **fields)).encoder


def snapshot_encoder(run_dir: str | Path) -> tuple[dict[str, Any], Any]:
    """Returns ``(spec, parameters)`` of the encoder of a run (``ModelKind.snapshot``): seed 0's final encoder
    parameters (``run.encoder_from``, a frozen encoder of a Video-RNN run included) and what builds its module."""
    from jaxsoc.learners.bib import run

    learner, states, info = run.load(run_dir)
    if info["config"].get("inputs") == "symbolic":
        raise ValueError(f"{run_dir} is a run on symbolic states: it has no image encoder")
    config = info["config"]
    if config.get("encoder", "atc") == "cells":
        encoder = {"type": "cells", "cell_channels": config.get("cell_channels", 8), "keypoints": config["keypoints"]}
    else:
        encoder = {"type": "atc", "latent": config.get("latent", 128)}
    step = latest_step(Path(run_dir) / run.CHECKPOINTS)
    spec = {
        "files": {run.RUN_JSON: info},
        "meta": read_meta(Path(run_dir) / run.CHECKPOINTS, step),
        "step": step,
        "encoder": encoder,
    }
    params = jax.tree.map(lambda x: np.asarray(x[0]), learner.final_params(states))["encoder"]
    return spec, {"encoder": params}


def load_encoder(card: models.Card, tree: Any) -> Any:
    """Returns the encoder parameters of an encoder model (``ModelKind.load``; what ``--encoder`` takes), checked
    against the module its spec builds."""
    from jaxsoc.learners.bib import data as D

    frame = jax.ShapeDtypeStruct((1, D.FRAME_SIZE, D.FRAME_SIZE, 3), jnp.float32)
    template = {"encoder": jax.eval_shape(encoder_module(card.spec).init, jax.random.key(0), frame)["params"]}
    return models.fit(template, tree, card, keep=("encoder",))["encoder"]


def is_encoder(ref: str | Path) -> bool:
    """Returns whether ``ref`` is ``model:NAME`` of a BIB encoder model (an unknown name raises ``KeyError``)."""
    if models.ref_name(ref) is None:
        return False
    card = models.info(ref)
    return (card.family, card.kind) == (FAMILY, ENCODER)


def encoder_learner(ref: str | Path):
    """Returns ``(learner, params)``: a BC learner over the encoder model ``ref`` (random heads), for probes."""
    from jaxsoc.learners.bib import bc

    card, tree = models.open_ref(ref, ENCODER, FAMILY)
    fields = dict(card.spec["encoder"])
    learner = bc.BCLearner(bc.BCConfig(encoder=fields.pop("type"), **fields), load_encoder(card, tree))
    return learner, learner.init(jax.random.key(0)).params


def evaluate_encoder(ref: str, episodes: int = 400, seed: int = 1, per_episode: int = 4) -> dict[str, dict]:
    """Returns ``jaxsoc bib probe REF --episodes E --data-seed S``'s linear-probe accuracies of the encoder's
    latents (``probe.probe``: the agent's cell and its next move, on the validation fifth of ``episodes``
    generated background episodes of seed ``seed``) with their binomial standard errors."""
    from jaxsoc.learners.bib import data as D
    from jaxsoc.learners.bib import probe

    train, validation = D.background(seed=seed, episodes=episodes)
    learner, params = encoder_learner(ref)
    accuracy = probe.probe(learner, params, train, validation, per_episode)
    n = D.num_episodes(validation) * per_episode
    return {name: models.rate(p, n, episodes=D.num_episodes(validation)) for name, p in accuracy.items()}
