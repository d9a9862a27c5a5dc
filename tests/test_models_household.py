"""Watch-And-Help's pretrained models (issue 60): the Watch goal-inference model (``wah-watch``), the Hybrid's high
level (``wah-hybrid``) and the HRL low level (``wah-hrl-low``). CI: every model loads by name into what its run
loader returns and works on a tiny input (synthetic demonstrations, a generated world, a few short subgoal
episodes); the run loaders and the CLI take ``model:NAME``; a model of another kind and an unknown name are refused
with what is wrong. Re-scores: ``tests/test_models.py``."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsoc import models
from jaxsoc.envs.household import env as E
from jaxsoc.envs.household import options as OPT
from jaxsoc.envs.household import tasks as T
from jaxsoc.envs.household import world as W
from jaxsoc.envs.household.agents import demos as D
from jaxsoc.envs.household.subgoal_env import SubgoalParams
from jaxsoc.learners.household import hrl_run, hybrid_run, watch_run
from jaxsoc.learners.household import watch as WA
from jaxsoc.learners.household.hrl_eval import subgoal_success

#: the household's models (issue 60) and their kinds
KINDS = {"wah-watch": "watch", "wah-hybrid": "hybrid", "wah-hrl-low": "hrl-low"}
#: all household parameter files together
SIZE_LIMIT = 4_000_000
N, STEPS = 2, 12


@pytest.fixture(scope="module")
def bank():
    """Two generated tasks (setup_table in apartment 0, put_fridge in apartment 1)."""
    keys = jax.random.split(jax.random.key(0), N)
    acts = jnp.array([[0, -1], [1, -1]], jnp.int32)
    states = jax.jit(jax.vmap(T.generate))(keys, jnp.array([0, 1], jnp.int32), acts)
    return states.replace(task_id=jnp.arange(N, dtype=jnp.int32)), acts


def test_every_household_model_is_declared_and_within_the_size_budget():
    cards = {card.name: card for card in models.list("household")}
    assert set(KINDS) <= set(cards), sorted(cards)
    for name, kind in KINDS.items():
        card = cards[name]
        assert card.kind == kind and models.kind_of(card.family, card.kind).name == kind
        assert card.training["command"].startswith("jaxsoc ") and len(card.training["commit"]) == 40, name
        assert f"model:{name}" in card.evaluation["command"] or card.evaluation["command"].endswith(name), name
        assert card.evaluation["figures"] and card.dtype == "float32", name
        assert card.spec["files"]["run.json"]["kind"] == kind, name
    assert sum(cards[name].bytes for name in KINDS) <= SIZE_LIMIT


def test_the_watch_model_infers_goals_by_name_and_through_its_run_loader(bank):
    states, acts = bank
    config, params = models.load("wah-watch", kind="watch")
    assert config.input == "memory" and config.counting
    rng = np.random.default_rng(0)
    actions = (W.V["walk"] * W.NUM_NODES + rng.integers(W.FURNITURE0, W.NUM_NODES, (N, STEPS))).astype(np.int16)
    goal = np.asarray(states.goal_count, np.int8)
    demos = D.Demos(
        tasks=T.TaskSet(states=states, activities=np.asarray(acts, np.int8), split="test-1", seed=0),
        actions=actions, length=np.full(N, STEPS, np.int32), success=np.ones(N, bool), satisfied=goal, seed=0,
        num_simulations=1,
    )  # fmt: skip
    logits = watch_run.goal_logits((config, params), demos)
    assert logits.shape == (N, goal.shape[1], WA.NUM_COUNTS) and np.isfinite(logits).all()
    same = watch_run.load("model:wah-watch")  # what --watch and `household goals` take
    assert same[0] == config and all(
        np.array_equal(a, b) for a, b in zip(jax.tree_util.tree_leaves(same[1]), jax.tree_util.tree_leaves(params))
    )


def test_the_hybrid_model_chooses_among_the_open_predicates(bank):
    states, _ = bank
    policy, params, config = hybrid_run.load("model:wah-hybrid")
    assert config.preset == "paper"
    world = jax.tree_util.tree_map(lambda x: x[0], states)
    obs = jax.tree_util.tree_map(lambda x: x[None], OPT.observation(world, world.goal_count, world.goal_target, -1))
    log_probs, _, _ = policy.apply({"params": params}, obs, policy.initial_memory(1))
    probs = np.exp(np.asarray(log_probs[0]))
    assert np.isclose(probs.sum(), 1.0, atol=1e-4) and (probs[~np.asarray(obs["choice_mask"][0])] < 1e-6).all()


def test_the_hrl_low_level_plays_short_subgoal_episodes(bank):
    states, _ = bank
    policy, variables, config = models.load("wah-hrl-low")
    assert config.preset == "tiny-marks" and set(variables) == {"params"}
    params = SubgoalParams(E.HouseholdParams(tasks=states), max_steps=8, phase="put")
    out = subgoal_success(policy, variables, params, num_episodes=4)
    assert out["episodes"] == 4 and 0.0 <= out["achieved"] <= 1.0 and 1.0 <= out["length"] <= 8.0


def test_a_model_of_another_kind_and_an_unknown_name_are_refused(capsys):
    from jaxsoc.cli import main

    with pytest.raises(ValueError, match="'wah-hybrid' is a household/hybrid model; .* household/watch model"):
        watch_run.load("model:wah-hybrid")
    with pytest.raises(ValueError, match="'wah-watch' is a household/watch model; .* household/hrl-low model"):
        hrl_run.load("model:wah-watch")
    with pytest.raises(ValueError, match="unknown model 'wah-hybird'; closest: wah-hybrid"):
        hybrid_run.load("model:wah-hybird")
    # the CLI's run flags: the helper's model is read before any episode is played
    args = ["household", "eval", "--helper", "hybrid", "--watch", "model:wah-watch", "--hybrid", "model:wah-hrl-low"]
    assert main([*args, "--num-tasks", "1", "--seeds", "1"]) == 2
    assert "'wah-hrl-low' is a household/hrl-low model" in capsys.readouterr().err
