"""EXCALIBUR's pretrained models (``jaxsoc.models``, ``learners.excalibur.models``): each loads by name as its
family's loaders give it (the answerer, the explorer over the object memory naming that answerer by model name, the
QA-reward PPO policy) and works on a small input; ``model:NAME`` is taken by the answerer and explorer loaders and
by ``--agent ppo=`` / ``--answerer``; a model of another kind or an unknown name is refused, naming it. Every model's
re-score is in ``tests/test_models.py``."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsoc import models
from jaxsoc.cli.excalibur import parse_agents
from jaxsoc.envs.excalibur import catalogue as K
from jaxsoc.envs.excalibur import state as S
from jaxsoc.learners.excalibur import answerer as ANS
from jaxsoc.learners.excalibur import explorer as X
from jaxsoc.learners.excalibur.models import zero_observation
from tests.cli_checks import files_under, refused
from tests.excalibur_scenes import SMALL_HOUSES

NAMES = ("excalibur-answerer", "excalibur-memory-explorer", "excalibur-qa-explorer")


def test_every_model_is_in_the_store_with_a_declared_kind_and_a_figure():
    cards = {card.name: card for card in models.list("excalibur")}
    assert set(NAMES) <= set(cards)
    for name in NAMES:
        card = cards[name]
        models.kind_of(card.family, card.kind)  # a declared kind
        assert card.headline() is not None and card.training["commit"] and "model:" + name in card.evaluation["command"]
        assert "benchmarks/results" not in str(card.evaluation)
    # the explorers name the answerer they are scored (and were trained) with by model name, never by path
    for name in NAMES[1:]:
        assert cards[name].evaluation["args"]["answerer"] == "model:excalibur-answerer"
    record = cards["excalibur-memory-explorer"].spec["files"][X.EXPLORER_FILE]
    assert record["answerer"] == "model:excalibur-answerer"
    assert "--answerer model:excalibur-answerer" in record["command"]
    assert sum(cards[name].bytes for name in NAMES) <= 1.5e6


def test_the_answerer_loads_by_name_and_answers_from_a_small_memory():
    model, variables, meta = models.load("excalibur-answerer", kind="answerer")
    assert meta["preset"] == "small"
    again = ANS.load("model:excalibur-answerer", SMALL_HOUSES)  # the family's loader, on other house shapes
    assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(variables), jax.tree.leaves(again[1])))
    n, q = SMALL_HOUSES.max_objects, 3
    inputs = {
        "known": jnp.zeros((2, n), bool).at[1, :2].set(True),  # an empty memory, one with two objects
        **{name: jnp.zeros((2, n), jnp.int32) for name in ("type", "color", "material", "color_bits", "material_bits")},
        "rel": jnp.zeros((2, K.NUM_RELATIONS, n, n), bool),
    }
    logits = jax.jit(model.apply)(variables, inputs, jnp.zeros((2, q, S.QUESTION_SLOTS), jnp.int16))
    assert logits.shape[:2] == (2, q) and np.isfinite(np.asarray(logits).max())


def test_the_explorers_load_by_name_and_act_on_a_small_input():
    model, variables, record = models.load("excalibur-memory-explorer")
    assert record == X.load_explorer("model:excalibur-memory-explorer")[2]
    assert record["explore_budget"] == 200 and model.config.object_memory
    assert X.is_explorer_run("model:excalibur-memory-explorer") and not X.is_explorer_run("model:excalibur-qa-explorer")
    policy, policy_variables, meta = models.load("excalibur-qa-explorer", kind="policy")  # as policy.load_network
    assert meta["env_id"] == "EXCALIBUR-QA-v0" and not policy.config.object_memory
    for net, net_variables, memory in ((model, variables, True), (policy, policy_variables, False)):
        obs = zero_observation(meta, memory)
        obs["action_mask"] = jnp.ones_like(obs["action_mask"])
        log_probs, value, _ = jax.jit(net.apply)(net_variables, obs, net.initial_memory(1))
        assert value.shape == (1,) and np.isclose(float(jnp.exp(log_probs).sum()), 1.0, atol=1e-4)


def test_model_names_are_taken_by_the_flags_and_other_kinds_refused(tmp_path, capsys, monkeypatch):
    agents = parse_agents(["mem:ppo=model:excalibur-memory-explorer", "ppo=model:excalibur-qa-explorer", "none"])
    assert agents == {
        "mem": ("ppo", "model:excalibur-memory-explorer"),
        "EXCALIBUR-QA-v0": ("ppo", "model:excalibur-qa-explorer"),
        "none": ("none", None),
    }
    assert ANS.check_checkpoint("model:excalibur-answerer")["preset"] == "small"
    with pytest.raises(ValueError, match="excalibur/memory-explorer model; model:excalibur-memory-explorer must"):
        ANS.load("model:excalibur-memory-explorer")
    with pytest.raises(ValueError, match="must name a excalibur/memory-explorer model"):
        X.load_explorer("model:excalibur-answerer")
    with pytest.raises(ValueError, match="excalibur/answerer model"):
        parse_agents(["ppo=model:excalibur-answerer"])
    with pytest.raises(ValueError, match="unknown model 'excalibur-answer'; closest: excalibur-answerer"):
        ANS.check_checkpoint("model:excalibur-answer")
    monkeypatch.chdir(tmp_path)
    argv = ["excalibur", "explorer", "--answerer", "model:excalibur-qa-explorer", "--out", "new"]
    refused(argv, tmp_path, capsys, "jaxsoc excalibur explorer: ", "is a excalibur/policy model")
    assert not files_under(tmp_path)
