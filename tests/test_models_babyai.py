"""BabyAI's pretrained models (issue 60): the quick start's PPO agent, a GoTo-level PPO agent and a behaviour-cloning
agent, each a ``babyai/policy`` model (``learners.policy``). CI: every model loads by name into what ``load_policy``
returns and acts; ``jaxsoc eval model:NAME`` scores one; an unknown name, a model of another kind and a card that
holds no policy are refused with what is wrong. The re-scores of every model are in ``tests/test_models.py``."""

from __future__ import annotations

import json
import shutil

import jax
import jax.numpy as jnp
import pytest

from jaxsoc import models
from jaxsoc.cli import main

QUICKSTART = "babyai-quickstart-ppo"
#: BabyAI's models (issue 60)
NAMES = (QUICKSTART, "babyai-gotolocal-ppo", "babyai-bc")
#: all BabyAI parameter files together
SIZE_LIMIT = 1_500_000


def test_every_babyai_model_is_a_declared_policy_within_the_size_budget():
    cards = {card.name: card for card in models.list("babyai")}
    assert set(NAMES) <= set(cards), sorted(cards)
    for name in NAMES:
        card = cards[name]
        assert models.kind_of(card.family, card.kind).name == "policy"
        assert "jaxsoc train " in card.training["command"] and card.training["commit"], name
        assert f"model:{name}" in card.evaluation["command"], name
        assert card.evaluation["figures"]["success_rate"]["episodes"] >= 256, name
        assert card.env_ids == (card.spec["meta"]["env_id"],), name
    assert sum(cards[name].bytes for name in NAMES) <= SIZE_LIMIT


@pytest.mark.parametrize("name", NAMES)
def test_each_model_loads_by_name_and_acts_in_its_level(name):
    env, params, model, variables = models.load(name, kind="policy")
    obs, _ = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(jax.random.key(0), 2), params)
    context = model.apply(variables, obs, method="encode_context")
    log_probs, _, memory = model.apply(variables, obs, context, model.initial_memory(2), train=False, method="step")
    assert log_probs.shape == (2, int(env.action_space(params).n))
    assert bool(jnp.all(jnp.isfinite(log_probs))) and bool(jnp.allclose(jnp.exp(log_probs).sum(-1), 1.0, atol=1e-4))
    assert jax.tree_util.tree_structure(memory) == jax.tree_util.tree_structure(model.initial_memory(2))


def test_jaxsoc_eval_takes_a_model_name(capsys):
    assert main(["--no-compile-cache", "eval", f"model:{QUICKSTART}", "--episodes", "8"]) == 0
    out = capsys.readouterr().out
    assert "BabyAI-GoToRedBallGrey-v0: success" in out and "on 8 levels" in out


def test_an_unknown_name_a_model_of_another_kind_and_a_card_without_a_policy_are_refused(tmp_path, capsys):
    assert main(["--no-compile-cache", "eval", "model:babyai-quickstart"]) == 2
    err = capsys.readouterr().err
    assert "unknown model 'babyai-quickstart'" in err and QUICKSTART in err, err

    with pytest.raises(ValueError, match=f"{QUICKSTART!r} is a babyai/policy model; .* must name a 'answerer' model"):
        models.load(QUICKSTART, kind="answerer")

    card = models.info(QUICKSTART)  # the same parameters, a card whose spec names no policy network
    shutil.copy(card.params_path, tmp_path / card.params_path.name)
    data = json.loads(card.path.read_text())
    data["spec"] = {"files": {}, "meta": {"kind": "atc", "env_id": card.env_ids[0]}, "step": 0}
    path = tmp_path / card.path.name
    path.write_text(json.dumps(data))
    assert main(["--no-compile-cache", "eval", f"model:{path}", "--episodes", "8"]) == 2
    err = capsys.readouterr().err
    assert "holds no policy checkpoint" in err and str(path) in err, err
