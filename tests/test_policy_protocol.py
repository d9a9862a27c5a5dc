"""The trainers behind the policy protocol (``networks.registry``): PPO, evaluation, checkpoints and
``load_policy`` with a second, non-BabyAI network (``grid``: flatten + GRU, a dict memory, no context) on a
classic MiniGrid task; the registry's errors; the BabyAI network's input tokenisation against the
reference's word tokenizer."""

import dataclasses
import re

import jax
import numpy as np
import pytest

from jaxsoc.envs.babyai import language
from jaxsoc.learners import ppo
from jaxsoc.learners.checkpoint import read_meta
from jaxsoc.learners.evaluate import evaluate_sampled_and_greedy
from jaxsoc.learners.networks import ACModel, GridPolicy, preset, registry
from jaxsoc.learners.networks.babyai import drop_tokens
from jaxsoc.learners.policy import load_policy
from jaxsoc.learners.rl_run import CHECKPOINTS, train_rl

ENV = "MiniGrid-Empty-5x5-v0"
#: 3 updates in chunks of 2: the last chunk's second update is computed and discarded
GRID = ppo.PPOConfig(
    env_id=ENV,
    network="grid",
    preset="tiny",
    num_envs=8,
    num_steps=8,
    recurrence=4,
    minibatch_frames=32,
    update_epochs=2,
    lr=1e-3,
    total_frames=8 * 8 * 3,
)
EPISODES = 8


@pytest.fixture(scope="module")
def grid_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("grid")
    summary = train_rl(GRID, path, chunk_updates=2, eval_episodes=EPISODES, progress=False)
    return path, summary


def test_ppo_trains_a_non_babyai_network_on_a_classic_env(grid_run):
    path, summary = grid_run
    assert summary["updates"] == 3 and summary["frames"] == GRID.total_frames
    rows = [line.split(",") for line in (path / "metrics.csv").read_text().splitlines()]
    header = rows[0]
    assert [int(float(r[header.index("update")])) for r in rows[1:]] == [1, 2, 3]
    assert 0 <= summary["eval_success_rate"] <= 1 and summary["eval_mean_length"] > 0
    meta = read_meta(path / CHECKPOINTS)
    assert meta["network"] == "grid" and meta["model_config"]["memory_dim"] == preset_memory("tiny")


def preset_memory(name: str) -> int:
    return registry.NETWORKS["grid"].presets[name].memory_dim


def test_load_policy_rebuilds_the_network_and_evaluates_the_same(grid_run):
    path, summary = grid_run
    env, params, model, variables = load_policy(path)
    assert isinstance(model, GridPolicy) and model.config.num_actions == 7
    again = evaluate_sampled_and_greedy(env, params, model, variables, EPISODES)
    assert again["success_rate"] == summary["eval_success_rate"]
    assert again["greedy_success_rate"] == summary["eval_greedy_success_rate"]
    # the memory is a pytree (a dict), carried and reset through every trainer path
    assert set(model.initial_memory(2)) == {"h"}


@pytest.mark.parametrize(
    "fields, match",
    [
        (
            {"network": "transformer"},
            r"unknown network 'transformer'; registered: \['babyai', 'chaic', 'excalibur', 'grid'",
        ),
        ({"preset": "huge"}, "unknown preset 'huge' of network 'grid'"),
        ({"arch": "original"}, r"network 'grid' has no config fields \['arch'\]"),
    ],
)
def test_the_registry_refuses_bad_networks(fields, match):
    with pytest.raises(ValueError, match=match):
        ppo.Trainer(dataclasses.replace(GRID, **fields))


def test_checkpoint_descriptions_round_trip_and_refuse_unknown_networks():
    model = ACModel(preset("tiny", instr_arch="attgru"))
    described = registry.describe(model)
    assert described["network"] == "babyai"
    # as read back from JSON: tuples become lists
    as_json = {
        **described,
        "model_config": {**described["model_config"], "ignored_tokens": list(model.config.ignored_tokens)},
    }
    rebuilt = registry.from_description(as_json)
    assert rebuilt == model and hash(rebuilt) == hash(model)
    legacy = {"model_config": described["model_config"]}  # written before the registry: a BabyAI model
    assert isinstance(registry.from_description(legacy), ACModel)
    with pytest.raises(ValueError, match="unknown network 'nope'"):
        registry.from_description({"network": "nope", "model_config": {}})
    with pytest.raises(ValueError, match="does not accept"):
        registry.from_description({"network": "grid", "model_config": {"width": 3}})
    with pytest.raises(ValueError, match="no model_config"):
        registry.from_description({"network": "grid"})


def test_a_custom_unregistered_network_trains_through_the_same_trainer():
    class Custom(GridPolicy):
        pass

    model = Custom(registry.network_config("grid", "tiny", 7))
    trainer = ppo.Trainer(GRID, network=model)
    assert trainer.model is model and registry.describe(model)["network"] is None


@pytest.mark.parametrize(
    "text",
    [
        "go to the red ball",
        "pick up a blue key, then open the door on your left",
        "put the box next to a ball after you go to the grey door in front of you",
        "open a door and pick up the purple ball, then go to a key behind you",
    ],
)
def test_the_babyai_network_reads_the_reference_tokens(text):
    # the reference tokenizer (babyai/utils/format.py) keeps words only: re.findall("([a-z]+)", mission)
    reference = [language.WORD_TO_ID[w] for w in re.findall("([a-z]+)", text.lower())]
    observed = np.asarray(language.tokenize(text))[None]
    assert language.decode(observed[0]) == text  # the observation keeps the comma
    dropped = np.asarray(drop_tokens(jax.numpy.asarray(observed), preset("tiny").ignored_tokens))[0]
    assert dropped[: len(reference)].tolist() == reference and not dropped[len(reference) :].any()
