"""The Watch stage's goal-inference model: shapes, padding invariance, overfitting, metrics, runs and resume.

Everything is toy-sized (d=16, 4 demonstrations of at most 12 steps). The demonstrations are synthetic: tasks
drawn with ``tasks.generate`` and Alice walking to random nodes (no planner), written as successful
(``satisfied`` = the goal) so that ``demos.load`` accepts them; the model only has to tell the 4 tasks apart.
"""

from __future__ import annotations

import dataclasses
import json
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsoc.envs.household import classes as C
from jaxsoc.envs.household import predicates as PR
from jaxsoc.envs.household import tasks as T
from jaxsoc.envs.household import world as W
from jaxsoc.envs.household.agents import demos as D
from jaxsoc.learners.household import watch as WA
from jaxsoc.learners.household import watch_run as WR

N, STEPS, D_MODEL = 4, 12, 16
LENGTHS = np.array([12, 8, 5, 10], np.int32)
CONFIGS = {
    name: WA.WatchConfig(d=D_MODEL, input=name, lr=1e-2, batch=2, epochs=2, validation_fraction=0.25)
    for name in WA.INPUTS
}


def make_demos(success: bool = True) -> D.Demos:
    """4 synthetic demonstrations (one per apartment of 0, 1, 2, 4 and activity of 0, 1, 2, 4)."""
    keys = jax.random.split(jax.random.key(0), N)
    acts = jnp.array([[0, -1], [1, -1], [2, -1], [4, -1]], jnp.int32)
    states = jax.jit(jax.vmap(T.generate))(keys, jnp.array([0, 1, 2, 4]), acts)
    states = states.replace(task_id=jnp.arange(N, dtype=jnp.int32))
    rng = np.random.default_rng(0)
    actions = (W.V["walk"] * W.NUM_NODES + rng.integers(W.FURNITURE0, W.NUM_NODES, (N, STEPS))).astype(np.int16)
    actions[~D.valid_mask(LENGTHS, STEPS)] = 0
    goal = np.asarray(states.goal_count, np.int8)
    task_set = T.TaskSet(states=states, activities=np.asarray(acts, np.int8), split="train", seed=0)
    return D.Demos(
        tasks=task_set,
        actions=actions,
        length=LENGTHS if success else np.full(N, STEPS, np.int32),
        success=np.full(N, success),
        satisfied=goal if success else np.zeros_like(goal),
        seed=0,
        num_simulations=1,
    )


@pytest.fixture(scope="module")
def demos():
    return make_demos()


@pytest.fixture(scope="module")
def batch(demos):
    """The 4 demonstrations as the model reads them (``Demos.batch`` plus ``target_class``)."""
    out = demos.batch(np.arange(N))
    out["target_class"] = WA.target_classes(demos.tasks.states, out["actions"])
    return out


@pytest.fixture(scope="module")
def models():
    """Per input: (params, jitted apply); "last" and "memory" (one frame through the same encoder) have the
    parameters of "graph"."""
    params = {name: WA.init_params(CONFIGS[name], jax.random.key(1)) for name in ("graph", "actions")}
    params["last"] = params["memory"] = params["graph"]
    return {name: (params[name], jax.jit(WA.GoalInference(config).apply)) for name, config in CONFIGS.items()}


@pytest.fixture(scope="module")
def demos_dir(tmp_path_factory, demos):
    root = tmp_path_factory.mktemp("demos")
    D.save(demos, root / "train.npz")
    return root


def test_logits_shape_for_every_input(models, batch):
    assert WA.MAX_COUNT == 2 and WA.NUM_COUNTS == 3
    for params, apply in models.values():
        logits = apply({"params": params}, batch)
        assert logits.shape == (N, PR.NUM_PREDICATES, WA.NUM_COUNTS) and logits.dtype == jnp.float32
        assert np.isfinite(np.asarray(logits)).all()
        assert WA.predict(logits).shape == (N, PR.NUM_PREDICATES) and WA.predict(logits).dtype == jnp.int32


def test_padding_and_invisible_nodes_never_change_the_output(models, batch):
    valid, obs = batch["valid"], batch["obs"]
    noise = np.random.default_rng(1)
    hidden = ~obs["visible"] | ~valid[..., None]  # invisible nodes, and every node of a padded step
    changed = dict(obs)
    changed["class"] = jnp.where(
        hidden, jnp.asarray(noise.integers(1, C.NUM_CLASSES, hidden.shape), jnp.int16), obs["class"]
    )
    changed["states"] = jnp.where(hidden, jnp.uint8(3), obs["states"])
    changed["position"] = jnp.where(hidden[..., None], 7.0, obs["position"])
    changed["relation"] = jnp.where(hidden, jnp.int8(1), obs["relation"])
    changed["visible"] = obs["visible"] | ~valid[..., None]  # padded steps may show anything
    pad = ~valid
    changed["agent_position"] = jnp.where(pad[..., None, None], 3.0, obs["agent_position"])
    other = {
        **batch,
        "obs": changed,
        "actions": jnp.where(pad, W.V["grab"] * W.NUM_NODES + 50, batch["actions"]),
        "target_class": jnp.where(pad, 5, batch["target_class"]),
    }
    for name, (params, apply) in models.items():
        np.testing.assert_allclose(
            apply({"params": params}, batch), apply({"params": params}, other), atol=1e-5, err_msg=name
        )
    # a visible node does change it
    params, apply = models["graph"]
    moved = {**batch, "obs": {**obs, "position": obs["position"] + 1.0 * obs["visible"][..., None]}}
    assert not np.allclose(apply({"params": params}, batch), apply({"params": params}, moved), atol=1e-5)


def test_subsample_spreads_frames_over_the_real_steps():
    valid = jnp.asarray(D.valid_mask([10, 3], 12))
    obs = {"t": jnp.broadcast_to(jnp.arange(12), (2, 12))}
    sub, sub_valid = WA.subsample(obs, valid, 4)
    np.testing.assert_array_equal(sub["t"], [[0, 3, 6, 9], [0, 1, 2, 2]])
    np.testing.assert_array_equal(sub_valid, [[True] * 4, [True, True, True, False]])


def test_the_model_overfits_four_demonstrations(demos):
    # the learning signal on a tiny set, with the default relational tokens and final observation: the run's own
    # jitted step and forward (shared with test_resume_equals_an_uninterrupted_run)
    fns, bank = WR.compiled(CONFIGS["graph"]), WR.device_bank(demos)
    state = fns.init(jax.random.key(1))
    # how many steps it takes depends on the CPU's float summation order (120 on an AVX-512 host, 360 on an AVX2
    # one: the loss plateaus near a tenth first), so it trains in rounds of 40 steps, for at most 600
    first, _ = WR.predict_all(fns, state["params"], bank, LENGTHS, STEPS, batch=2)
    for i in range(600):
        rows = jnp.array([[0, 1], [2, 3]][i % 2], jnp.int32)
        state, _ = fns.step(state, jax.random.key(i), bank, rows, steps=STEPS)
        if (i + 1) % 40 == 0:
            losses, logits = WR.predict_all(fns, state["params"], bank, LENGTHS, STEPS, batch=2)
            decoded = [WA.decode(logits, rule) for rule in ("argmax", "grammar")]
            if losses.mean() < 0.05 * first.mean() and all((d == demos.tasks.states.goal_count).all() for d in decoded):
                break
    assert losses.mean() < 0.05 * first.mean()
    np.testing.assert_array_equal(WA.decode(logits, "argmax"), demos.tasks.states.goal_count)
    np.testing.assert_array_equal(WA.decode(logits, "grammar"), demos.tasks.states.goal_count)


def test_metrics_on_hand_made_multisets():
    a, b = PR.PREDICATE["holds_book"], PR.PREDICATE["sit_sofa"]
    pred, true = np.zeros((3, 30), int), np.zeros((3, 30), int)
    pred[0, a], true[0, a], true[0, b] = 2, 1, 1  # {a:2} vs {a:1, b:1}
    pred[1, b], true[1, b] = 1, 1  # exact
    true[2, a] = 2  # nothing predicted
    tp, fp, fn = WA.multiset_counts(pred, true)
    np.testing.assert_array_equal(tp, [1, 1, 0])
    np.testing.assert_array_equal(fp, [1, 0, 0])
    np.testing.assert_array_equal(fn, [1, 0, 2])
    s = WA.scores(pred, true)
    assert s["precision"] == pytest.approx(2 / 3) and s["recall"] == pytest.approx(2 / 5)
    assert s["f1"] == pytest.approx(2 * (2 / 3) * (2 / 5) / (2 / 3 + 2 / 5)) and s["accuracy"] == pytest.approx(1 / 3)
    assert WA.scores(true, true) == {"precision": 1.0, "recall": 1.0, "f1": 1.0, "accuracy": 1.0}
    assert WA.scores(np.zeros((1, 30)), np.zeros((1, 30)))["precision"] == 0.0
    with pytest.raises(ValueError, match="shape"):
        WA.multiset_counts(pred, true[:2])


def test_chance_draws_training_goals(demos):
    goals = np.asarray(demos.tasks.states.goal_count)
    guess = WA.chance_counts(jax.random.key(0), goals, 50)
    assert guess.shape == (50, 30) and guess.dtype == np.int8
    assert all((goals == g).all(1).any() for g in guess)
    with pytest.raises(ValueError, match="training goals"):
        WA.chance_counts(jax.random.key(0), goals[:0], 5)


@pytest.mark.bitexact
def test_resume_equals_an_uninterrupted_run(tmp_path, demos_dir, demos):
    config = CONFIGS["graph"]
    whole = WR.train(config, tmp_path / "whole", demos_dir, progress=False)
    assert whole["epochs_done"] == 2 and whole["sizes"] == {"demos": 4, "train": 3, "validation": 1}
    WR.train(WA.WatchConfig(**{**config.to_dict(), "epochs": 1}), tmp_path / "parts", demos_dir, progress=False)
    parts = WR.train(config, tmp_path / "parts", demos_dir, resume=True, progress=False)
    assert parts["epochs_done"] == 2
    (_, p_whole), (loaded_config, p_parts) = WR.load(tmp_path / "whole"), WR.load(tmp_path / "parts")
    assert loaded_config == config
    for x, y in zip(jax.tree_util.tree_leaves(p_whole), jax.tree_util.tree_leaves(p_parts)):
        np.testing.assert_array_equal(x, y)
    run = tmp_path / "whole"
    header = (run / "metrics.csv").read_text().splitlines()[0].split(",")
    for column in ("epoch", "train_loss", "val_loss", "val_precision", "val_recall", "val_f1", "val_accuracy"):
        assert column in header
    assert "demos_per_s" in header and len((run / "metrics.csv").read_text().splitlines()) == 3
    assert (run / "curves.png").is_file() and json.loads((run / "run.json").read_text())["kind"] == "watch"
    assert whole["val_loss"] == parts["val_loss"]

    goals = WR.infer_goals(run, demos, batch=2)
    assert goals.shape == (N, 30) and goals.dtype == np.int8 and (goals >= 0).all() and (goals <= WA.MAX_COUNT).all()
    np.testing.assert_array_equal(goals, WR.infer_goals((config, p_whole), demos, batch=2))
    scores = WR.evaluate(run, demos, batch=2)
    metrics = {"precision", "recall", "f1", "accuracy"}
    assert set(scores) == {*metrics, *(f"grammar_{k}" for k in metrics), "episodes"} and scores["episodes"] == N

    # a checkpoint of another config, or other data, is refused; so is an existing run without resume
    with pytest.raises(ValueError, match="config.lr"):
        WR.train(WA.WatchConfig(**{**config.to_dict(), "lr": 1e-3}), run, demos_dir, resume=True, progress=False)
    with pytest.raises(ValueError, match="model_config.data"):
        WR.train(config, run, demos_dir, resume=True, progress=False, episodes=3)
    with pytest.raises(ValueError, match="already holds a run"):
        WR.train(config, run, demos_dir, progress=False)


def test_clear_errors(tmp_path, demos_dir):
    config = CONFIGS["graph"]
    with pytest.raises(ValueError, match="no demonstrations directory"):
        WR.train(config, tmp_path / "run", tmp_path / "missing", progress=False)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no train.npz"):
        WR.train(config, tmp_path / "run", tmp_path / "empty", progress=False)
    D.save(make_demos(success=False), tmp_path / "failed" / "train.npz")
    with pytest.raises(ValueError, match="no successful demonstration"):
        WR.train(config, tmp_path / "run", tmp_path / "failed", progress=False)
    with pytest.raises(ValueError, match="episodes must be positive"):
        WR.train(config, tmp_path / "run", demos_dir, progress=False, episodes=0)
    with pytest.raises(ValueError, match="none to train on"):
        WR.split_rows(1, 0.5, 0)
    with pytest.raises(ValueError, match="not a watch training run"):
        WR.load(tmp_path / "empty")
    other = tmp_path / "bib"
    other.mkdir()
    (other / "run.json").write_text(json.dumps({"kind": "bib-atc", "config": {}}))
    with pytest.raises(ValueError, match="not a watch training run"):
        WR.load(other)
    with pytest.raises(ValueError, match="not a watch training run"):
        WR.train(config, other, demos_dir, resume=True, progress=False)
    shutil.rmtree(other)
    for bad, match in [
        ({"input": "pixels"}, "input"),
        ({"d": 15}, "even"),
        ({"heads": 3}, "divisible"),
        ({"max_frames": 0}, "max_frames"),
        ({"validation_fraction": 1.0}, "validation_fraction"),
        ({"lr": 0.0}, "lr"),
        ({"epochs": 0}, "epochs"),
        ({"dropout": 1.0}, "dropout"),
        ({"frames": "random"}, "frames"),
        ({"code_parity": True}, "final_observation=False"),
    ]:
        with pytest.raises(ValueError, match=match):
            WA.WatchConfig(**bad)
    with pytest.raises(ValueError, match="target_class"):
        WA.GoalInference(CONFIGS["actions"]).init(
            jax.random.key(0), {"actions": jnp.zeros((1, 1), jnp.int32), "valid": jnp.ones((1, 1), bool)}
        )


def test_command_line_trains_and_scores(tmp_path, demos_dir, capsys):
    """``jaxsoc train watch`` (the config of ``CONFIGS["graph"]``, so the compiled step is shared) and
    ``jaxsoc household goals`` on the training file, with chance beside it; bad input exits 2."""
    from jaxsoc.cli import main

    sets = ["--set", f"d={D_MODEL}", "--set", "lr=0.01", "--set", "batch=2", "--set", "validation_fraction=0.25"]
    run = tmp_path / "run"
    assert (
        main(["train", "watch", "--demos", str(demos_dir), "--epochs", "1", *sets, "--out", str(run), "--quiet"]) == 0
    )
    assert f"in {run}" in capsys.readouterr().out and (run / "metrics.csv").is_file()
    args = ["household", "goals", str(run), "--demos", str(demos_dir), "--split", "train", "--out", str(tmp_path)]
    assert main(args) == 0
    rows = json.loads((tmp_path / "household_goals.json").read_text())
    assert [(r["model"], r["decoding"]) for r in rows] == [("graph", "argmax"), ("graph", "grammar"), ("chance", "-")]
    assert all(r["episodes"] == N for r in rows)
    assert all(0.0 <= r[k] <= 1.0 for r in rows for k in ("precision", "recall", "f1", "accuracy"))
    assert "| chance | - | train | 4 |" in (tmp_path / "household_goals.md").read_text()
    capsys.readouterr()
    assert main(["train", "watch", "--out", str(tmp_path / "x")]) == 2
    assert "needs --demos DIR" in capsys.readouterr().err
    assert (
        main(["train", "watch", "--demos", str(demos_dir), "--set", "input=video", "--out", str(tmp_path / "y")]) == 2
    )
    assert "input must be one of" in capsys.readouterr().err


def test_validation_file_is_the_validation_set(tmp_path, demos):
    """With ``validation.npz`` beside ``train.npz``, every training demonstration trains and the validation curves
    score that file (the validation split); a random holdout besides it, or a file of another split, is refused."""
    root = tmp_path / "demos"
    D.save(demos, root / "train.npz")
    val = demos.select(np.array([1, 3]))
    D.save(dataclasses.replace(val, tasks=dataclasses.replace(val.tasks, split="validation")), root / "validation.npz")
    config = WA.WatchConfig(**{**CONFIGS["graph"].to_dict(), "validation_fraction": 0.0, "epochs": 1})
    summary = WR.train(config, tmp_path / "run", root, progress=False)
    assert summary["sizes"] == {"demos": 4, "train": 4, "validation": 2}
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    assert info["data"]["validation"] == "validation.npz"
    scores = WR.evaluate(tmp_path / "run", val, batch=2)
    for k in ("precision", "recall", "f1"):
        assert summary[f"val_{k}"] == pytest.approx(scores[k])
    with pytest.raises(ValueError, match="validation_fraction=0.25 would also hold out"):
        WR.train(CONFIGS["graph"], tmp_path / "run2", root, progress=False)
    D.save(demos, root / "validation.npz")  # the training split under the validation file's name
    with pytest.raises(ValueError, match="holds the 'train' split, not 'validation'"):
        WR.train(config, tmp_path / "run3", root, progress=False)


def test_test_splits_are_never_scored_during_training(tmp_path, demos_dir, demos, capsys):
    """``--curves`` (and ``watch_run.train``'s ``curves``) refuse test-1 / test-2 before anything runs: a test
    split is scored once, after training, by ``jaxsoc household goals``."""
    from jaxsoc.cli import main

    base = ["train", "watch", "--demos", str(demos_dir), "--set", f"d={D_MODEL}", "--epochs", "1", "--quiet"]
    for split in ("test-1", "test-2"):
        assert main([*base, "--curves", "validation", split, "--out", str(tmp_path / split)]) == 2
        err = capsys.readouterr().err
        assert f"--curves {split}: test splits are never scored during training" in err
        assert "jaxsoc household goals" in err and not (tmp_path / split).exists()
    assert main([*base, "--curves", "heldout", "--out", str(tmp_path / "x")]) == 2
    assert "choose from validation / extra" in capsys.readouterr().err
    test1 = dataclasses.replace(demos, tasks=dataclasses.replace(demos.tasks, split="test-1"))
    for curves in ({"test-2": demos}, {"renamed": test1}):  # by name, or by the split the file was recorded from
        with pytest.raises(ValueError, match="is a test split"):
            WR.train(CONFIGS["graph"], tmp_path / "lib", demos_dir, progress=False, curves=curves)
    assert not (tmp_path / "lib").exists()
