"""CHAIC's pretrained models (``jaxsoc.models``, kinds in ``learners.chaic.family``): ``chaic-bm`` (the behaviour
model, the BM helper's and the options view's partner) and ``chaic-options-helper`` (the helper over options that
names it as its partner by model name). CI: each loads by name and works on a tiny input, ``model:NAME`` is taken
where a run directory is (``partner_run=``, ``--helper``), a model of another kind is refused, and the options
helper's snapshot names its partner run by model name. Re-scores: ``tests/test_models.py``."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsoc import models
from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.envs.chaic import observation as O
from jaxsoc.envs.chaic import state as S
from jaxsoc.envs.chaic import tasks as T
from jaxsoc.envs.chaic.options import ChaicOptionsEnv, OptionPolicyHelper
from jaxsoc.learners.chaic import bm, bm_run, pretrained
from jaxsoc.learners.chaic.evaluation import learned_helper
from jaxsoc.learners.policy import load_policy
from jaxsoc.learners.ppo import make_env_from

NAMES = ("chaic-bm", "chaic-options-helper")


@pytest.fixture(scope="module")
def state():
    """The first test episode of ``normal`` at its start."""
    return jax.tree_util.tree_map(lambda x: x[0], T.cached_split("normal", "test").states)


@pytest.mark.parametrize("name", NAMES)
def test_card_names_a_declared_kind_and_no_run_directory(name):
    card = models.info(name)
    assert card.family == "chaic" and models.kind_of(card.family, card.kind).name == card.kind
    assert card.evaluation["figures"] and card.training["command"] and card.training["commit"]
    assert "benchmarks/results" not in str(card.spec)  # loading it reads no run directory


def test_bm_loads_as_the_partner_model_and_steps_on_an_observation(state):
    partner = models.load("chaic-bm")
    assert isinstance(partner, bm.BMPartner) and partner.config.hidden == 128
    obs = O.observe(state, S.HELPER, False, 8.0)
    carry, targets, constraint = jax.jit(partner.step)(partner.init(), obs)
    assert targets.shape == (K.NUM_CLASSES,) and constraint.shape == (partner.num_constraints,)
    assert bool(jnp.all((targets >= 0) & (targets <= 1))) and np.isclose(float(constraint.sum()), 1.0, atol=1e-5)
    assert carry[0].shape == (partner.config.hidden,)


def test_model_name_is_taken_where_a_bm_run_is():
    config, params = bm_run.load("model:chaic-bm")
    assert config == models.load("chaic-bm").config
    helper = bm.load_bm_helper("model:chaic-bm")
    assert isinstance(helper, bm.BMHelper) and helper.config == config
    env, _ = make_env_from("CHAIC-Normal-Options-v0", "partner_run=model:chaic-bm")
    assert isinstance(env, ChaicOptionsEnv) and isinstance(env.partner, bm.BMPartner)


def test_options_helper_names_its_partner_by_model_name_and_plays_an_option(state):
    card = models.info("chaic-options-helper")
    assert card.spec["meta"]["config"]["env_args"] == "partner_run=model:chaic-bm"
    helper = models.load("chaic-options-helper")
    assert isinstance(helper, OptionPolicyHelper) and isinstance(helper.partner, bm.BMPartner)
    env, params, model, variables = load_policy("model:chaic-options-helper")
    obs, _ = jax.jit(env.reset)(jax.random.key(0), params)
    batched = jax.tree_util.tree_map(lambda x: x[None], obs)
    log_probs, _, _ = jax.jit(lambda o: model.apply(variables, o, model.initial_memory(1), train=False))(batched)
    assert log_probs.shape == (1, model.config.num_actions)
    valid = np.asarray(obs["action_mask"])
    assert np.isclose(float(jnp.exp(log_probs[0])[valid].sum()), 1.0, atol=1e-4)


def test_a_model_of_another_kind_is_refused_with_what_it_is():
    with pytest.raises(ValueError, match="chaic/options-policy model, not a CHAIC behaviour model"):
        bm.load_partner("model:chaic-options-helper")
    with pytest.raises(ValueError, match="--helper ppo=model:chaic-bm: .*must name a chaic/options-policy model"):
        learned_helper("ppo", "model:chaic-bm")
    with pytest.raises(ValueError, match="unknown model 'chaic-bn'"):
        learned_helper("bm", "model:chaic-bn")


def test_options_snapshot_names_the_partner_run_by_the_stored_model(tmp_path):
    """A ``chaic-bm`` run directory holding ``chaic-bm``'s parameters is renamed ``model:chaic-bm``; one with other
    parameters is refused (export it first)."""
    config, params = bm_run.load("model:chaic-bm")
    state = bm_run.template(config)
    for name, tree in (("same", params), ("other", jax.tree_util.tree_map(lambda x: x + 1.0, params))):
        run = tmp_path / name
        run.mkdir()
        (run / bm_run.RUN_JSON).write_text(json.dumps({"kind": bm_run.KIND, "config": config.to_dict()}))
        checkpoints = bm_run.checkpointer(run, config)
        checkpoints.save(config.epochs, {**state, "params": tree})
        checkpoints.close()
    assert pretrained.rename_partner(f"rooms=true,partner_run={tmp_path / 'same'}") == (
        "rooms=true,partner_run=model:chaic-bm"
    )
    assert pretrained.rename_partner("partner_run=model:chaic-bm") == "partner_run=model:chaic-bm"
    with pytest.raises(ValueError, match="no stored CHAIC behaviour model has its parameters"):
        pretrained.rename_partner(f"partner_run={tmp_path / 'other'}")
