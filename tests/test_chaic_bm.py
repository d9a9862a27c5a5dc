"""The CHAIC behaviour-modelling helper (``jaxsoc.learners.chaic.bm``): features, recording, training (it
overfits a few episodes; resuming equals an uninterrupted run), the run directory round trip, the helper in
``play`` and the errors. Tiny shapes: one task, 4 episodes of 200 events, a 32-unit GRU."""

import argparse
import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsoc.cli import chaic as C
from jaxsoc.envs.chaic import agents as A
from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.envs.chaic import observation as O
from jaxsoc.envs.chaic import play as P
from jaxsoc.envs.chaic import state as S
from jaxsoc.envs.chaic import tasks as T
from jaxsoc.learners.chaic import bm, bm_config, bm_data, bm_eval, bm_model, bm_run, bm_train
from jaxsoc.learners.networks import chaic as NC

EPISODES, EVENTS, STEPS = 4, 200, 128
TINY = dict(
    embed=32,
    hidden=32,
    tasks="normal",
    episodes=EPISODES,
    seeds=1,
    max_events=EVENTS,
    max_steps=STEPS,
    eval_episodes=EPISODES,
    batch=1,
    lr=1e-2,
    checkpoint_every=1000,
)
EPOCHS = 16


def _record(seed=0):
    # the shapes of train()'s recordings (4 runs a chunk): one compilation for all of them
    return bm_data.record(["normal"], "validation", EPISODES, 1, "rhp", EVENTS, STEPS, seed=seed, chunk=EPISODES)


@pytest.fixture(scope="module")
def data():
    return _record()


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bm") / "run"
    summary = bm_train.train(bm_config.BMConfig(epochs=EPOCHS, **TINY), out, progress=False)
    return out, summary


def test_record_layout_and_determinism(data):
    n = EPISODES
    assert data["features"].shape == (n, STEPS, bm_data.NUM_FEATURES) and data["features"].dtype == jnp.float32
    steps = np.asarray(data["steps"])
    assert (steps > 10).all()  # the helper acted many times in 200 events
    np.testing.assert_array_equal(np.asarray(data["mask"]).sum(1), np.minimum(steps, STEPS))
    assert not np.asarray(data["features"])[~np.asarray(data["mask"])].any()  # zero padding
    states = T.cached_split("normal", "validation").states
    np.testing.assert_array_equal(data["targets"], np.asarray(states.goal_count[:n]) > 0)
    np.testing.assert_array_equal(data["constraint"], NC.CONSTRAINTS.index("normal"))
    np.testing.assert_array_equal(data["task"], K.TASK["normal"])
    again = _record()
    for name in data:
        np.testing.assert_array_equal(np.asarray(data[name]), np.asarray(again[name]), err_msg=name)
    # beside the paper's random helper (the same compilation: the role is data): other runs, the same labels
    rnd = bm_data.record(["normal"], "validation", EPISODES, 1, "random", EVENTS, STEPS, chunk=EPISODES)
    assert (np.asarray(rnd["features"]) != np.asarray(data["features"])).any()
    np.testing.assert_array_equal(rnd["targets"], data["targets"])


def test_features_read_only_the_observation():
    states = T.cached_split("normal", "test").states

    @jax.jit
    @jax.vmap
    def fn(state):
        obs = O.observe(state, S.HELPER)
        return bm_data.features(obs), obs["objects"]["visible"], obs

    base, vis, obs = jax.device_get(fn(states))
    assert base.shape == (T.TEST_EPISODES, bm_data.NUM_FEATURES) and np.isfinite(base).all()
    np.testing.assert_allclose(bm_data.features(obs), base, rtol=1e-6, atol=1e-6)  # leading batch axes; op by op
    i = int(np.argmax(vis.any(1)))  # an episode in which the helper sees an object at the start
    cls = np.asarray(states.objects.cls[i])
    hidden, shown = np.flatnonzero(~vis[i] & (cls > 0))[0], np.flatnonzero(vis[i])[0]
    o = states.objects
    # the hidden goal and an object the helper does not see: the features do not change
    changed = states.replace(
        goal_count=jnp.ones_like(states.goal_count),
        objects=o.replace(cls=o.cls.at[i, hidden].set(K.CLASS["pen"]), height=o.height.at[i, hidden].add(1.0)),
    )
    np.testing.assert_array_equal(fn(changed)[0], base)
    # an object it sees: they do
    other = K.CLASS["vase"] if cls[shown] != K.CLASS["vase"] else K.CLASS["apple"]
    assert (fn(states.replace(objects=o.replace(cls=o.cls.at[i, shown].set(other))))[0][i] != base[i]).any()


def test_a_sequence_equals_stepping_the_model(data):
    config = bm_config.BMConfig(embed=16, hidden=8)
    params = bm_model.init_params(config, jax.random.key(1))
    feats = data["features"][0, :12]
    targets, constraint = bm_model.logits(config, params, feats)
    carry, net = bm_model.initial_carry(config), bm_model.model(config)
    for t in range(12):
        carry, step_targets, step_constraint = net.apply({"params": params}, carry, feats[t])
        np.testing.assert_allclose(step_targets, targets[t], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(step_constraint, constraint[t], rtol=1e-5, atol=1e-5)


def test_the_model_overfits_a_few_episodes(run):
    rows = json.loads((run[0] / "metrics.json").read_text())["rows"]
    assert len(rows) == EPOCHS
    assert rows[-1]["train_loss"] < 0.2 * rows[0]["train_loss"]
    assert rows[-1]["train_goal_accuracy"] == 1.0 and rows[-1]["train_constraint_accuracy"] == 1.0
    summary = run[1]
    assert summary["epochs_done"] == EPOCHS and summary["sizes"]["train_runs"] == EPISODES
    report = json.loads((run[0] / bm_run.REPORT_JSON).read_text())
    assert set(report) == {"train", "validation"}  # training never reads the test split
    assert set(report["validation"]) == {"all", "normal"}
    assert 0.0 <= report["validation"]["all"]["goal_accuracy"] <= 1.0 and report["validation"]["all"]["class_f1"]
    assert "val_goal_accuracy" in rows[-1] and not any(k.startswith("test_") for k in rows[-1])
    assert (run[0] / "curves.png").is_file()


def test_resume_equals_an_uninterrupted_run(run, tmp_path):
    out = tmp_path / "resumed"
    bm_train.train(bm_config.BMConfig(epochs=EPOCHS // 2, **TINY), out, progress=False)
    bm_train.train(bm_config.BMConfig(epochs=EPOCHS, **TINY), out, resume=True, progress=False)
    _, resumed = bm_run.load(out)
    _, whole = bm_run.load(run[0])
    jax.tree_util.tree_map(np.testing.assert_array_equal, resumed, whole)
    rows = json.loads((out / "metrics.json").read_text())["rows"]
    assert [r["epoch"] for r in rows] == list(range(1, EPOCHS + 1))


def test_load_round_trip_and_the_helper_plays(run):
    helper = bm.load_bm_helper(run[0])
    assert isinstance(helper, bm.BMHelper) and helper.config == bm_config.BMConfig(epochs=EPOCHS, **TINY)
    # train()'s evaluation runs (validation split, seed + 1) scored with the loaded parameters: the saved report
    report = json.loads((run[0] / bm_run.REPORT_JSON).read_text())["validation"]
    assert bm_eval.evaluate(helper.params, _record(seed=1), helper.config) == report
    # the helper inside play (its own act, not the rule agents' shared path)
    states = jax.tree_util.tree_map(lambda x: x[:2], T.cached_split("normal", "test").states)
    result = P.make_player(A.make_agent("main"), helper, max_events=60)(states, jax.random.split(jax.random.key(0), 2))
    for name in ("transport_rate", "helper_rate", "frames"):
        assert np.isfinite(np.asarray(result[name], np.float64)).all(), name
    assert (np.asarray(result["events"]) == 60).all()


def test_command_front_end(tmp_path):
    args = argparse.Namespace(
        algo="chaic-bm", out=tmp_path / "cli", resume=False, quiet=True, seed=0, episodes=4.0, epochs=1, env=None
    )
    overrides = {k: v for k, v in TINY.items() if k != "episodes"}
    summary = C.train_command(args, overrides)
    assert summary["epochs_done"] == 1 and summary["sizes"]["train_runs"] == EPISODES
    assert C.config_type("chaic-bm") is bm_config.BMConfig
    line = C.run_line(summary, tmp_path / "cli")
    assert line.startswith("trained CHAIC behaviour model") and "val_goal_accuracy" in line


def test_clear_errors(run, tmp_path):
    with pytest.raises(ValueError, match="unknown CHAIC task"):
        bm_data.record(["nope"], "test", 1)
    with pytest.raises(ValueError, match="unknown recording helper"):
        bm_data.record(["normal"], "test", 1, helper="oracle")
    with pytest.raises(ValueError, match="unknown CHAIC task split"):
        bm_data.record(["normal"], "valid", 1)
    with pytest.raises(ValueError, match="tasks"):
        bm_config.BMConfig(tasks="normal,nope")
    with pytest.raises(ValueError, match="helper"):
        bm_config.BMConfig(helper="oracle")
    with pytest.raises(ValueError, match="threshold"):
        bm_config.BMConfig(threshold=1.5)
    with pytest.raises(ValueError, match="unknown CHAIC learner"):
        C.config_type("chaic-ppo")
    with pytest.raises(ValueError, match="no run.json"):
        bm.load_bm_helper(tmp_path)
    (tmp_path / "run.json").write_text(json.dumps({"kind": "watch"}))
    with pytest.raises(ValueError, match="its kind is 'watch'"):
        bm.load_bm_helper(tmp_path)
    with pytest.raises(ValueError, match="already holds a run"):
        bm_train.train(bm_config.BMConfig(epochs=1, **TINY), run[0], progress=False)
    with pytest.raises(ValueError, match="incompatible checkpoint.*lr"):
        config = bm_config.BMConfig(epochs=EPOCHS + 1, **{**TINY, "lr": 1e-3})
        bm_train.train(config, run[0], resume=True, progress=False)
    assert math.isfinite(json.loads((run[0] / "metrics.json").read_text())["rows"][-1]["train_loss"])
