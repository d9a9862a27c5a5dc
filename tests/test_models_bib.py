"""BIB's pretrained models (issue 60): the symbolic and pixel BC-MLP, the pixel BC-RNN and the Video-RNN observers
(``bib/observer``) and the ATC encoder (``bib/encoder``), ``learners.bib.models``. CI: every model loads by name
into what the run loader returns for a run directory and works on a tiny input; ``model:NAME`` is taken by the run
loaders, ``--encoder`` and ``jaxsoc bib eval``'s checks; models of another kind are refused. Every model's
re-score is in ``tests/test_models.py``."""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsoc import models
from jaxsoc.envs.bib import tasks
from jaxsoc.envs.bib import world as W
from jaxsoc.learners.bib import bc, run, voe
from jaxsoc.learners.bib import data as D
from jaxsoc.learners.bib import models as bib_models
from jaxsoc.learners.bib.learner import to_float
from jaxsoc.learners.bib.video import VideoLearner
from jaxsoc.learners.networks.bib import ATCEncoder

#: observer models -> (the run kind, seeds)
OBSERVERS = {
    "bib-bc-mlp-symbolic": ("bib-bc-mlp", 3),
    "bib-bc-mlp-pixels": ("bib-bc-mlp", 1),
    "bib-bc-rnn-pixels": ("bib-bc-rnn", 1),
    "bib-video-rnn": ("bib-video-rnn", 1),
}
ENCODER = "bib-atc-encoder"
NAMES = (*OBSERVERS, ENCODER)
#: all BIB parameter files together (6 MB)
SIZE_LIMIT = 6_000_000


def test_every_bib_model_is_declared_with_its_card_within_the_size_budget():
    cards = {card.name: card for card in models.list("bib")}
    assert set(NAMES) <= set(cards), sorted(cards)
    for name in NAMES:
        card = cards[name]
        kind = models.kind_of("bib", card.kind).name
        assert kind == (bib_models.ENCODER if name == ENCODER else bib_models.OBSERVER), name
        assert card.training["command"].startswith("jaxsoc train bib-") and len(card.training["commit"]) == 40, name
        assert card.evaluation["command"].startswith("jaxsoc bib ") and f"model:{name}" in card.evaluation["command"]
        assert card.evaluation["figures"] and all("se" in f for f in card.evaluation["figures"].values()), name
    for name, (kind, seeds) in OBSERVERS.items():
        figures = cards[name].evaluation["figures"]
        assert set(tasks.EVALUATION) <= set(figures) and all(f["seeds"] == seeds for f in figures.values()), name
        assert cards[name].spec["files"]["run.json"]["kind"] == kind
    assert cards["bib-video-rnn"].spec["encoder_model"] == ENCODER  # stored once, named by the Video-RNN
    assert sum(cards[name].bytes for name in NAMES) <= SIZE_LIMIT


@pytest.fixture(scope="module")
def pairs():
    """Two generated pairs of the time-control type (seed 1), in the learners' timing."""
    return D.evaluation_pairs(1, 2, ("efficiency_time",))


@pytest.mark.parametrize("name", OBSERVERS)
def test_each_observer_loads_by_name_as_its_run_loader_returns_it(name, pairs):
    learner, states, info = models.load(name, kind="observer")
    kind, seeds = OBSERVERS[name]
    assert info["kind"] == kind and info["seeds"] == seeds and learner.kind == kind
    assert info == run.read_info(f"model:{name}")
    params = learner.final_params(states)
    assert all(leaf.shape[0] == seeds for leaf in jax.tree.leaves(params))
    assert all(bool(jnp.all(jnp.isfinite(leaf))) for leaf in jax.tree.leaves(params))
    one = jax.tree.map(lambda x: x[0], params)
    if name == "bib-bc-mlp-symbolic":  # cheap enough to score: a pair of the type the model gets right
        scores = voe.pair_scores(
            lambda e: voe.episode_scores(*learner.surprise(one, e, 8)), pairs["efficiency_time"], 2
        )
        assert scores.shape == (2, 2) and np.all(np.isfinite(scores))
    else:  # the encoder on the first test frame of a pair's expected outcome
        expected = jax.tree.map(lambda x: x[:1, 0], pairs["efficiency_time"])
        encode = jax.jit(lambda p, e: learner.encoder.apply({"params": p}, to_float(D.trial_frames(e, (W.TEST,), 1))))
        latent = encode(one["encoder"], expected)
        assert latent.shape[0] == 1 and bool(jnp.all(jnp.isfinite(latent)))


def test_the_atc_encoder_loads_by_name_and_is_the_video_rnns_encoder():
    encoder = models.load(ENCODER, kind="encoder")
    assert encoder is not None and jax.tree.structure(encoder) == jax.tree.structure(
        run.encoder_from(f"model:{ENCODER}")
    )
    latent = ATCEncoder(latent=128).apply({"params": encoder}, jnp.zeros((2, D.FRAME_SIZE, D.FRAME_SIZE, 3)))
    assert latent.shape == (2, 128) and bool(jnp.all(jnp.isfinite(latent)))
    learner, states, _ = run.load("model:bib-video-rnn")
    assert isinstance(learner, VideoLearner)
    same = jax.tree.map(
        lambda a, b: bool(np.array_equal(np.asarray(a)[0], np.asarray(b))), states.swa["encoder"], encoder
    )
    assert all(jax.tree.leaves(same))
    # --encoder model:NAME builds an observer on it; a pixel observer model gives its own encoder
    bc.BCLearner(bc.BCConfig(finetune_encoder=False), encoder)
    cells = run.encoder_from("model:bib-bc-mlp-pixels")
    bc.BCLearner(bc.BCConfig(encoder="cells", finetune_encoder=False), cells)


def test_bib_eval_checks_take_model_names_and_models_of_another_kind_are_refused():
    from jaxsoc.cli.bib import _check_eval

    def args(*runs, region="frame"):
        return argparse.Namespace(types=None, pairs=2, batch=2, data=None, run=list(runs), region=region)

    _check_eval(args("model:bib-video-rnn", region="agent"))
    with pytest.raises(ValueError, match="a region applies to video runs"):
        _check_eval(args("model:bib-bc-mlp-pixels", region="agent"))
    with pytest.raises(ValueError, match=f"{ENCODER!r} is a bib/encoder model; .* must name a bib/observer model"):
        _check_eval(args(f"model:{ENCODER}"))
    with pytest.raises(ValueError, match="is a bib/encoder model; .* must name a bib/observer model"):
        run.load(f"model:{ENCODER}")
    with pytest.raises(ValueError, match="symbolic"):
        run.encoder_from("model:bib-bc-mlp-symbolic")
    with pytest.raises(KeyError, match="unknown model 'bib-bc-mlp'"):
        run.read_info("model:bib-bc-mlp")
    other = [card for card in models.list() if card.family != "bib"]
    if other:
        with pytest.raises(ValueError, match=f"{other[0].name!r} is a {other[0].family}/{other[0].kind} model"):
            run.read_info(f"model:{other[0].name}")
