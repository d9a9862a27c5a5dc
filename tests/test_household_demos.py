"""The Watch stage's demonstrations: recording Alice alone, exact replay, observations, files and the CLI.

One recording (3 paired test-1 tasks, one per activity, 10 simulations, 75 steps: some episodes succeed, some fail)
is shared by the whole file; the CLI test records with the same shapes so the jitted rollout is compiled once.
"""

from __future__ import annotations

import json
import zipfile

import jax
import numpy as np
import pytest

from jaxsoc.cli import main
from jaxsoc.envs.household import predicates as PR
from jaxsoc.envs.household import tasks as T
from jaxsoc.envs.household import world as W
from jaxsoc.envs.household.agents import demos as D

NUM, SIMS, MAX_STEPS = 3, 10, 75


@pytest.fixture(scope="module")
def demos():
    return D.record(D.split_tasks("test-1", episodes=NUM), seed=0, max_steps=MAX_STEPS, num_simulations=SIMS)


@pytest.fixture(scope="module")
def replayed(demos):
    return jax.device_get(jax.jit(D.replay)(demos.tasks.states, demos.actions))


def test_record_shapes_and_padding(demos):
    assert len(demos) == NUM and demos.split == "test-1" and demos.max_steps == MAX_STEPS
    assert demos.actions.shape == (NUM, MAX_STEPS) and demos.actions.dtype == np.int16
    assert demos.satisfied.shape == (NUM, PR.NUM_PREDICATES)
    np.testing.assert_array_equal(demos.tasks.activities[:, 0], [0, 1, 2])  # spread over activities
    assert demos.success.any() and not demos.success.all()  # both kinds at this size
    np.testing.assert_array_equal(demos.length[~demos.success], MAX_STEPS)
    valid = demos.valid
    assert valid.shape == (NUM, MAX_STEPS) and (valid.sum(1) == demos.length).all()
    assert (demos.actions[~valid] == 0).all()  # noop padding
    assert (demos.actions[valid] != 0).any()
    assert len(demos.successful_only()) == demos.success.sum()


def test_replay_reproduces_the_recording(demos, replayed):
    assert replayed.step.shape == (NUM, MAX_STEPS + 1)
    run = D._rollout_jit(SIMS, MAX_STEPS)  # what record compiled: its final states
    recorded_final = jax.device_get(run(demos.tasks.states, D.episode_keys(demos.tasks, 0))["final"])
    done = np.asarray(jax.vmap(jax.vmap(lambda s: W.progress(s)[1]))(replayed))[:, 1:]  # after each action
    for n in range(NUM):
        assert done[n].any() == demos.success[n]
        assert (int(np.argmax(done[n])) + 1 if done[n].any() else MAX_STEPS) == demos.length[n]
        final = jax.tree_util.tree_map(lambda x, n=n: x[n, demos.length[n]], replayed)
        np.testing.assert_array_equal(np.asarray(W.satisfied(final)), demos.satisfied[n])
        # the whole final state, as the recording left it (the same compiled rollout, run again)
        same = jax.tree_util.tree_map(lambda a, b, n=n: np.array_equal(a[n], b), recorded_final, final)
        assert all(jax.tree_util.tree_leaves(same))
        # after the end only the clock moves
        last = jax.tree_util.tree_map(lambda x, n=n: x[n, -1], replayed)
        same = jax.tree_util.tree_map(np.array_equal, final.replace(step=0), last.replace(step=0))
        assert all(jax.tree_util.tree_leaves(same))


def test_observations_withhold_the_goal(demos, replayed):
    batch = demos.batch(np.arange(NUM))
    obs = batch["obs"]
    assert obs["class"].shape == (NUM, MAX_STEPS, W.NUM_NODES) and obs["position"].shape[-2:] == (W.NUM_NODES, 2)
    assert obs["agent_room"].shape == (NUM, MAX_STEPS, 2)
    assert (np.asarray(obs["goal"]) == 0).all() and (np.asarray(obs["goal_target"]) == -1).all()
    np.testing.assert_array_equal(batch["goal_count"], demos.tasks.states.goal_count)
    np.testing.assert_array_equal(batch["actions"], demos.actions)
    np.testing.assert_array_equal(batch["valid"], demos.valid)
    # step t is what Alice saw before action t: her own room in the replayed state t
    np.testing.assert_array_equal(obs["agent_room"][:, :, 0], replayed.chars.room[:, :MAX_STEPS, 0])


def test_save_load_round_trip(demos, tmp_path):
    path = D.save(demos, tmp_path / "d.npz")
    back = D.load(path)
    assert (back.split, back.seed, back.num_simulations, back.tasks.seed) == ("test-1", 0, SIMS, 0)
    for name in ("actions", "length", "success", "satisfied"):
        np.testing.assert_array_equal(getattr(back, name), getattr(demos, name))
        assert getattr(back, name).dtype == getattr(demos, name).dtype
    np.testing.assert_array_equal(back.tasks.activities, demos.tasks.activities)
    for a, b in zip(jax.tree_util.tree_leaves(back.tasks.states), jax.tree_util.tree_leaves(demos.tasks.states)):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype
    assert len(D.load(path, successful_only=True)) == demos.success.sum()


def _rewrite(src, dst, drop=(), **changes):
    data = dict(np.load(src))
    meta = json.loads(str(data.pop("meta")))
    meta.update(changes.pop("meta", {}))
    data = {k: v for k, v in data.items() if k not in drop}
    data.update(changes)
    np.savez(dst, meta=np.array(json.dumps(meta)), **data)
    return dst


def test_malformed_files_are_refused(demos, tmp_path):
    good = D.save(demos, tmp_path / "good.npz")
    with pytest.raises(FileNotFoundError, match="no household demonstration file"):
        D.load(tmp_path / "absent.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip at all")
    with pytest.raises(ValueError, match="not an .npz archive"):
        D.load(tmp_path / "junk.npz")
    (tmp_path / "broken.npz").write_bytes(b"PK\x03\x04 broken")
    with pytest.raises(ValueError, match="not a readable"):
        D.load(tmp_path / "broken.npz")
    with pytest.raises(ValueError, match="missing arrays \\['actions'\\]"):
        D.load(_rewrite(good, tmp_path / "a.npz", drop=("actions",)))
    with pytest.raises(ValueError, match="version 99"):
        D.load(_rewrite(good, tmp_path / "v.npz", meta={"version": 99}))
    with pytest.raises(ValueError, match="format 'jaxsoc.household.tasks'"):
        D.load(T.save(demos.tasks, tmp_path / "tasks.npz"))  # a task file is not a demonstration file
    with pytest.raises(ValueError, match="array 'length' has shape"):
        D.load(_rewrite(good, tmp_path / "s.npz", length=demos.length[:1]))
    padded_wrong = demos.actions.copy()
    padded_wrong[~demos.valid] = 5
    with pytest.raises(ValueError, match="must be noops"):
        D.load(_rewrite(good, tmp_path / "p.npz", actions=padded_wrong))
    with pytest.raises(ValueError, match="'success' disagrees"):
        D.load(_rewrite(good, tmp_path / "w.npz", success=~demos.success, length=np.full(NUM, MAX_STEPS, np.int32)))
    with pytest.raises(ValueError, match="'nodes.cls' has values outside"):
        cls = np.asarray(demos.tasks.states.nodes.cls).copy()
        cls[0, 0] = 999
        D.load(_rewrite(good, tmp_path / "c.npz", **{"nodes.cls": cls}))
    with zipfile.ZipFile(tmp_path / "nometa.npz", "w") as z:
        z.writestr("x.npy", b"")
    with pytest.raises(ValueError, match="household demonstration file"):
        D.load(tmp_path / "nometa.npz")


def test_spread_and_extra_tasks():
    acts = np.array([[0, -1]] * 4 + [[1, -1]] * 4 + [[2, -1]] * 4, np.int8)
    np.testing.assert_array_equal(D.spread_index(acts, 4), [0, 1, 4, 8])
    np.testing.assert_array_equal(D.spread_index(acts, 20), np.arange(12))
    extra = D.extra_tasks(7, seed=0)
    assert extra.split == "extra" and len(extra) == 7
    np.testing.assert_array_equal(extra.activities[:, 0], [0, 1, 2, 3, 4, 0, 1])
    assert set(np.asarray(extra.states.apartment).tolist()) <= {0, 1, 2, 4}  # training's, not validation's 5
    held_out = {
        g.tobytes() for split in ("test-1", "validation") for g in np.asarray(T.cached_split(split).states.goal_count)
    }
    assert not any(g.tobytes() in held_out for g in np.asarray(extra.states.goal_count, np.int8))
    np.testing.assert_array_equal(D.extra_tasks(3).states.goal_count, extra.states.goal_count[:3])  # a prefix
    with pytest.raises(ValueError, match="unknown demonstration split"):
        D.split_tasks("test-3")


def test_cli_writes_demos(tmp_path, capsys):
    args = ["household", "demos", "--split", "test-1", "--episodes", str(NUM), "--simulations", str(SIMS)]
    args += ["--max-steps", str(MAX_STEPS), "--out", str(tmp_path)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "success rate" in out and "mean length" in out and "episodes/s" in out
    back = D.load(tmp_path / "test-1.npz")
    assert len(back) == NUM and back.max_steps == MAX_STEPS


def test_cli_refuses_a_count_that_is_not_positive(tmp_path, capsys):
    for split in ("test-1", "validation"):  # the validation split is one of the command's (no argparse refusal)
        assert main(["household", "demos", "--split", split, "--episodes", "0", "--out", str(tmp_path)]) == 2
        assert "--episodes must be positive" in capsys.readouterr().err and not list(tmp_path.iterdir())


def test_paired_tasks_keep_the_goal_in_another_training_apartment():
    from jaxsoc.envs.household import apartments as A

    help_tasks = T.cached_split("test-2")
    paired = D.split_tasks("test-2", episodes=10)
    ids = np.asarray(paired.states.task_id)
    assert len(paired) == 10 and paired.split == "test-2" and len(set(ids)) == 10
    np.testing.assert_array_equal(paired.states.goal_count, np.asarray(help_tasks.states.goal_count)[ids])
    np.testing.assert_array_equal(paired.activities, np.asarray(help_tasks.activities)[ids])
    apartments = np.asarray(paired.states.apartment)
    assert set(apartments.tolist()) <= set(A.SEEN_APARTMENTS)  # the paper's 5 training apartments
    assert (apartments != np.asarray(help_tasks.states.apartment)[ids]).all()
    count, target, cls = (
        np.asarray(x) for x in (paired.states.goal_count, paired.states.goal_target, paired.states.nodes.cls)
    )
    rows, preds = np.nonzero((count > 0) & (target >= 0))
    assert (cls[rows, target[rows, preds]] == PR.PRED_TARGET_CLASS[preds]).all()  # the new apartment's furniture
    again = D.paired_tasks(T.cached_split("test-2"), seed=0)
    np.testing.assert_array_equal(np.asarray(again.states.nodes.pos)[ids], paired.states.nodes.pos)
    assert not np.array_equal(np.asarray(D.paired_tasks(help_tasks, seed=1).states.apartment)[ids], apartments)


def test_validation_demonstrations_are_the_validation_tasks():
    """The Watch stage validates on the validation tasks themselves: their apartment and goals are unseen in
    training already, so no pairing is needed (the test sets' paired demonstrations stay as they were)."""
    tasks = T.cached_split("validation")
    demo_tasks = D.split_tasks("validation")
    assert demo_tasks.split == "validation" and len(demo_tasks) == 100
    np.testing.assert_array_equal(demo_tasks.states.goal_count, tasks.states.goal_count)
    np.testing.assert_array_equal(demo_tasks.states.apartment, tasks.states.apartment)
    spread = D.split_tasks("validation", episodes=15)
    assert len(spread) == 15 and len({tuple(r) for r in spread.activities.tolist()}) == 15  # 5 single, 10 pairs
