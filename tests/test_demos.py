"""Demonstration datasets: shard format, replay in the environment, resumption, the loader and the CLI checks.

A small random expert (defined here) stands in for the BabyAI bot: it draws actions from a key kept in its
state, and in a quarter of the levels it gives up after 5 steps (like the bot's ``failed``), so datasets hold
successes, truncations and expert failures. All collections share one batch size, so the jitted rollout is
compiled once for the whole file.
"""

from __future__ import annotations

import json
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsoc
from jaxsoc.cli import main
from jaxsoc.data import DemoDataset, episode_reset_key, episode_step_key, read_shard, write_demos
from jaxsoc.data.loader import EPISODE_FIELDS, FORMAT_VERSION, STEP_FIELDS

ENV_ID = "BabyAI-GoToObj-v0"
EPISODES, SHARD_EPISODES, NUM_ENVS, SEED = 24, 10, 8, 3
GIVE_UP_AT = 5
ACTIONS = jnp.array([0, 1, 2, 2, 2, 3, 5])  # left, right, forward (x3), pickup, toggle


def expert_init(params, state):
    """Returns the random expert's state: a key and a give-up step derived from the level's grid."""
    grid = state.world.grid.astype(jnp.uint32)
    digest = jnp.sum(grid * (jnp.arange(grid.size, dtype=jnp.uint32).reshape(grid.shape) + 1))
    return {
        "key": jax.random.fold_in(jax.random.key(7), digest),
        "t": jnp.int32(0),
        "give_up_at": jnp.where(digest % 4 == 0, GIVE_UP_AT, -1),
        "failed": jnp.bool_(False),
    }


def expert_act(params, expert, state, obs):
    """Returns ``(action, expert)``: a random action, or ``done`` (6) with ``failed`` once it gives up."""
    key, sub = jax.random.split(expert["key"])
    failed = (expert["give_up_at"] >= 0) & (expert["t"] >= expert["give_up_at"])
    action = jnp.where(failed, 6, jax.random.choice(sub, ACTIONS))
    return action, dict(expert, key=key, t=expert["t"] + 1, failed=failed)


def expert_failed(expert):
    return expert["failed"]


def collect(out_dir, episodes=EPISODES, **overrides):
    """Writes a dataset with the random expert. Returns the dataset directory."""
    options = dict(
        expert_init=expert_init,
        expert_act=expert_act,
        expert_failed=expert_failed,
        expert_name="random-test",
        num_envs=NUM_ENVS,
        seed=SEED,
        shard_episodes=SHARD_EPISODES,
        keep_failed=True,
        progress=False,
    )
    options.update(overrides)
    return write_demos(ENV_ID, out_dir, episodes, **options).parent


def file_bytes(directory):
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    return collect(tmp_path_factory.mktemp("full"))


@pytest.fixture(scope="module")
def successes_only(tmp_path_factory):
    return collect(tmp_path_factory.mktemp("successes"), keep_failed=False)


@pytest.fixture(scope="module")
def dataset(full):
    return DemoDataset(full)


@pytest.fixture(scope="module")
def replayer():
    """Returns a jitted ``replay(indices int32[E], actions int32[E, T])`` of stored actions from each level's
    reset: ``(mission [E, 72], image [E, T, 7, 7, 3], direction [E, T], success, terminated, truncated,
    reward [E, T])``; observations are those before each action."""
    env, params = jaxsoc.make(ENV_ID)

    def one(index, actions):
        reset_key = episode_reset_key(SEED, index)
        obs, state = env.reset_env(reset_key, params)

        def step(carry, inputs):
            obs, state = carry
            t, action = inputs
            out = env.step_env(episode_step_key(reset_key, t), state, action, params)
            next_obs, next_state, reward, terminated, truncated, info = out
            record = (obs["image"], obs["direction"], info["success"], terminated, truncated, reward)
            return (next_obs, next_state), record

        steps = jnp.arange(actions.shape[0])
        _, records = jax.lax.scan(step, (obs, state), (steps, actions))
        return (obs["mission"], *records)

    return jax.jit(jax.vmap(one))


# -- the writer ------------------------------------------------------------------------------------------
def test_manifest_and_shard_format(full):
    manifest = json.loads((full / "manifest.json").read_text())
    assert manifest["env_id"] == ENV_ID and manifest["level"] == "GoToObj"
    assert manifest["jaxsoc_version"] == jaxsoc.__version__ and manifest["format_version"] == FORMAT_VERSION
    assert (manifest["seed"], manifest["episodes"], manifest["shard_episodes"]) == (SEED, EPISODES, SHARD_EPISODES)
    assert [(s["index"], s["start"], s["stop"]) for s in manifest["shards"]] == [(0, 0, 10), (1, 10, 20), (2, 20, 24)]
    totals = manifest["totals"]
    assert totals["complete"] and totals["generated"] == totals["episodes"] == EPISODES
    assert totals["successes"] + totals["failures"] == EPISODES
    assert 0 < totals["successes"] < EPISODES and totals["expert_failures"] > 0  # the expert's mix
    assert sorted(p.name for p in full.iterdir()) == ["manifest.json", *(f"shard-0000{s}.npz" for s in range(3))]
    seeds = []
    for entry in manifest["shards"]:
        arrays = read_shard(full / entry["file"], entry)
        num_steps, num_episodes = entry["steps"], entry["episodes"]
        assert arrays["image"].shape == (num_steps, 7, 7, 3) and arrays["image"].dtype == np.uint8
        assert arrays["direction"].dtype == arrays["action"].dtype == np.uint8
        assert arrays["offsets"].dtype == np.int64 and arrays["offsets"][-1] == num_steps
        assert arrays["mission"].shape == (num_episodes, 72) and arrays["mission"].dtype == np.uint8
        assert arrays["seed"].dtype == np.int64 and arrays["success"].dtype == np.bool_
        assert int(arrays["success"].sum()) == entry["successes"]
        assert int(arrays["expert_failed"].sum()) == entry["expert_failures"]
        seeds += arrays["seed"].tolist()
    assert seeds == list(range(EPISODES))


def test_failed_episodes_are_counted_but_not_stored(full, successes_only):
    kept, everything = DemoDataset(successes_only), DemoDataset(full)
    assert kept.manifest["totals"]["generated"] == EPISODES
    assert kept.manifest["totals"]["failures"] == everything.manifest["totals"]["failures"] > 0
    successful = [everything.episode(k) for k in range(len(everything)) if everything.episode(k)["success"]]
    assert len(kept) == len(successful) == kept.manifest["totals"]["successes"]
    for k, reference in enumerate(successful):
        episode = kept.episode(k)
        for name in (*STEP_FIELDS, *EPISODE_FIELDS):
            np.testing.assert_array_equal(episode[name], reference[name], err_msg=name)


def test_stored_episodes_replay_to_the_recorded_outcome(dataset, replayer):
    episodes = [dataset.episode(k) for k in range(len(dataset))]
    horizon = max(int(e["length"]) for e in episodes)
    actions = np.zeros((32, horizon), np.int32)  # a fixed batch shape: one compilation
    indices = np.zeros(32, np.int32)
    for k, e in enumerate(episodes):
        actions[k, : e["length"]], indices[k] = e["action"], e["seed"]
    mission, image, direction, success, terminated, truncated, reward = jax.device_get(replayer(indices, actions))
    outcomes = set()
    for k, e in enumerate(episodes):
        n = int(e["length"])
        np.testing.assert_array_equal(mission[k], e["mission"])
        np.testing.assert_array_equal(image[k, :n], e["image"])
        np.testing.assert_array_equal(direction[k, :n], e["direction"])
        done = terminated[k, :n] | truncated[k, :n]
        assert not done[:-1].any() and not success[k, : n - 1].any()  # nothing ended before the last step
        assert bool(success[k, n - 1]) == bool(e["success"])
        assert reward[k, :n].sum() == pytest.approx(float(e["reward"]))
        if e["success"]:
            outcome = "success"
            assert terminated[k, n - 1] and e["reward"] > 0
        elif e["expert_failed"]:
            outcome = "expert failed"
            assert n == GIVE_UP_AT and not done[-1]
        else:
            outcome = "truncated"
            assert truncated[k, n - 1] and not terminated[k, n - 1] and e["reward"] == 0
        outcomes.add(outcome)
    assert outcomes == {"success", "expert failed", "truncated"}


def test_bot_demonstrations_replay_to_success(tmp_path, replayer):
    """The real expert: every level of a small bot dataset is solved, and its stored actions replay to the
    stored success, reward and observations."""
    from jaxsoc.envs.babyai import bot

    directory = collect(
        tmp_path,
        episodes=NUM_ENVS,
        expert_init=bot.bot_init,
        expert_act=bot.bot_act,
        expert_failed=lambda b: b.failed,
        expert_name="babyai-bot",
        keep_failed=False,
    )
    data = DemoDataset(directory)
    assert len(data) == NUM_ENVS and data.manifest["totals"]["expert_failures"] == 0
    episodes = [data.episode(k) for k in range(len(data))]
    actions = np.zeros((32, 64), np.int32)
    indices = np.zeros(32, np.int32)
    for k, e in enumerate(episodes):
        actions[k, : e["length"]], indices[k] = e["action"], e["seed"]
    _, image, _, success, _, _, reward = jax.device_get(replayer(indices, actions))
    for k, e in enumerate(episodes):
        n = int(e["length"])
        assert e["success"] and success[k, n - 1] and not success[k, : n - 1].any()
        assert reward[k, :n].sum() == pytest.approx(float(e["reward"]))
        np.testing.assert_array_equal(image[k, :n], e["image"])


# -- resumption ------------------------------------------------------------------------------------------
@pytest.mark.bitexact
def test_resume_after_a_shorter_run_is_byte_identical(full, tmp_path):
    collect(tmp_path, episodes=SHARD_EPISODES)  # the first shard only
    first = json.loads((tmp_path / "manifest.json").read_text())
    assert [s["index"] for s in first["shards"]] == [0] and first["totals"]["complete"]
    collect(tmp_path)
    assert file_bytes(tmp_path) == file_bytes(full)


def test_resume_after_lost_shards_is_byte_identical(full, tmp_path):
    out = tmp_path / "demos"
    shutil.copytree(full, out)
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["shards"] = [s for s in manifest["shards"] if s["index"] != 1]  # written, manifest not updated
    (out / "manifest.json").write_text(json.dumps(manifest))
    (out / "shard-00002.npz").write_bytes(b"interrupted")  # listed but damaged
    collect(out, num_envs=6)  # episodes do not depend on the batch they run in
    assert file_bytes(out) == file_bytes(full)


def test_resume_refuses_other_settings(full, tmp_path):
    out = tmp_path / "demos"
    shutil.copytree(full, out)
    before = file_bytes(out)
    with pytest.raises(ValueError, match="seed"):
        collect(out, seed=SEED + 1)
    with pytest.raises(ValueError, match="shard_episodes"):
        collect(out, shard_episodes=SHARD_EPISODES // 2)
    with pytest.raises(ValueError, match="env_id"):
        write_demos("BabyAI-GoToRedBall-v0", out, EPISODES, expert_init=expert_init, expert_act=expert_act)
    with pytest.raises(ValueError, match="beyond the requested"):
        collect(out, episodes=EPISODES - 1)
    manifest = json.loads((out / "manifest.json").read_text())
    (out / "manifest.json").write_text(json.dumps(dict(manifest, format_version=FORMAT_VERSION + 1)))
    with pytest.raises(ValueError, match="format version"):
        collect(out)
    (out / "manifest.json").write_bytes(before["manifest.json"])
    assert file_bytes(out) == before


def test_complete_dataset_is_left_untouched(full, tmp_path):
    out = tmp_path / "demos"
    shutil.copytree(full, out)
    collect(out, num_envs=3)  # nothing to do: no new batch shape is compiled
    assert file_bytes(out) == file_bytes(full)


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="episodes must be positive"):
        collect(tmp_path, episodes=0)
    with pytest.raises(ValueError, match="no mission"):
        write_demos("MiniGrid-Empty-5x5-v0", tmp_path, 4, expert_init=expert_init, expert_act=expert_act)


# -- the loader ------------------------------------------------------------------------------------------
def test_episodes_match_the_shards(full, dataset):
    assert len(dataset) == EPISODES and dataset.num_shards == 3 and dataset.complete
    assert dataset.num_steps == dataset.manifest["totals"]["steps"]
    shard = read_shard(full / "shard-00001.npz")
    episode = dataset.episode(12)  # the third episode of shard 1
    start, stop = shard["offsets"][2], shard["offsets"][3]
    np.testing.assert_array_equal(episode["image"], shard["image"][start:stop])
    np.testing.assert_array_equal(episode["mission"], shard["mission"][2])
    assert episode["seed"] == 12 and len(episode["action"]) == episode["length"]
    assert dataset.episode(-1)["seed"] == EPISODES - 1
    with pytest.raises(IndexError):
        dataset.episode(EPISODES)


@pytest.mark.parametrize("mode", ["padded", "packed"])
@pytest.mark.parametrize(("batch_size", "buffer_shards", "drop_last"), [(5, 1, False), (5, 2, True), (32, 2, False)])
def test_every_episode_once_per_pass(dataset, mode, batch_size, buffer_shards, drop_last):
    batches = list(dataset.iterate(batch_size, seed=0, mode=mode, buffer_shards=buffer_shards, drop_last=drop_last))
    seeds = np.concatenate([b["seed"] for b in batches])
    sizes = [len(b["seed"]) for b in batches]
    if drop_last:
        assert set(sizes) == {batch_size} and len(seeds) == EPISODES - EPISODES % batch_size
    else:
        assert sorted(seeds.tolist()) == list(range(EPISODES))
        assert sizes == [batch_size] * (EPISODES // batch_size) + [EPISODES % batch_size] * (EPISODES % batch_size > 0)
    assert len(set(seeds.tolist())) == len(seeds)


def test_padded_batches(dataset):
    by_seed = {int(dataset.episode(k)["seed"]): dataset.episode(k) for k in range(len(dataset))}
    longest = max(int(e["length"]) for e in by_seed.values())
    for batch in dataset.iterate(7, seed=1, mode="padded", max_len=longest + 3):
        assert batch["image"].shape == (len(batch["seed"]), longest + 3, 7, 7, 3)
        np.testing.assert_array_equal(batch["mask"].sum(1), batch["length"])
        for b, seed in enumerate(batch["seed"]):
            episode, n = by_seed[int(seed)], int(batch["length"][b])
            assert batch["mask"][b, :n].all() and not batch["mask"][b, n:].any()
            np.testing.assert_array_equal(batch["image"][b, :n], episode["image"])
            np.testing.assert_array_equal(batch["action"][b, :n], episode["action"])
            np.testing.assert_array_equal(batch["mission"][b], episode["mission"])
            assert not batch["image"][b, n:].any() and not batch["action"][b, n:].any()
    with pytest.raises(ValueError, match="max_len"):
        next(dataset.iterate(len(dataset), seed=0, mode="padded", max_len=longest - 1))


def test_packed_batches(dataset):
    by_seed = {int(dataset.episode(k)["seed"]): dataset.episode(k) for k in range(len(dataset))}
    total = sum(int(e["length"]) for e in by_seed.values())
    (batch,) = dataset.iterate(len(dataset), seed=2, mode="packed", max_len=total + 4)
    assert batch["image"].shape == (total + 4, 7, 7, 3)
    assert batch["mask"].sum() == total and (batch["segment_ids"][total:] == -1).all()
    assert np.array_equal(np.diff(batch["offsets"]), batch["length"])
    starts = np.flatnonzero(batch["episode_start"])
    np.testing.assert_array_equal(starts, batch["offsets"][:-1])
    for b, seed in enumerate(batch["seed"]):
        steps = slice(batch["offsets"][b], batch["offsets"][b + 1])
        assert (batch["segment_ids"][steps] == b).all()
        np.testing.assert_array_equal(batch["position"][steps], np.arange(batch["length"][b]))
        np.testing.assert_array_equal(batch["image"][steps], by_seed[int(seed)]["image"])
        np.testing.assert_array_equal(batch["direction"][steps], by_seed[int(seed)]["direction"])
    with pytest.raises(ValueError, match="max_len"):
        next(dataset.iterate(len(dataset), seed=0, mode="packed", max_len=total - 1))


def test_iteration_is_deterministic_under_a_seed(dataset):
    def order(seed, **options):
        return np.concatenate([b["seed"] for b in dataset.iterate(4, seed=seed, **options)]).tolist()

    assert order(5) == order(5)
    assert order(5) != order(6)
    unshuffled = order(5, shuffle_shards=False, buffer_shards=1)
    assert set(unshuffled[:8]) <= set(range(10))  # the first shard (episodes 0..9) comes first
    assert unshuffled != list(range(EPISODES))  # still shuffled within it


def test_loader_errors(full, tmp_path):
    with pytest.raises(FileNotFoundError, match="manifest.json is missing"):
        DemoDataset(tmp_path)
    broken = tmp_path / "broken"
    shutil.copytree(full, broken)
    text = (broken / "manifest.json").read_text()
    (broken / "manifest.json").write_text(text[: len(text) // 2])
    with pytest.raises(ValueError, match="corrupt manifest"):
        DemoDataset(broken)
    (broken / "manifest.json").write_text(json.dumps({"format": "jaxsoc-demos", "format_version": FORMAT_VERSION}))
    with pytest.raises(ValueError, match="missing fields"):
        DemoDataset(broken)
    (broken / "manifest.json").write_text(text)
    shard = broken / "shard-00001.npz"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 64] = bytes(64)  # same size, damaged content
    shard.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="SHA-256"):
        DemoDataset(broken, verify=True)
    with pytest.raises(ValueError, match="corrupt shard"):
        list(DemoDataset(broken).iterate(4, seed=0))
    shard.write_bytes(b"x")
    with pytest.raises(ValueError, match="corrupt shard"):
        DemoDataset(broken)
    shard.unlink()
    with pytest.raises(FileNotFoundError, match="missing shard"):
        DemoDataset(broken)


# -- the command line ------------------------------------------------------------------------------------
def test_cli_demos_validates_arguments(tmp_path, capsys):
    assert main(["demos", "--env", "MiniGrid-Empty-5x5-v0", "--episodes", "4", "--out", str(tmp_path)]) == 2
    assert "must be a BabyAI level" in capsys.readouterr().err
    assert main(["demos", "--env", ENV_ID, "--episodes", "0", "--out", str(tmp_path)]) == 2
    assert "--episodes must be a positive integer" in capsys.readouterr().err
    assert main(["demos", "--env", ENV_ID, "--episodes", "4", "--num-envs", "-1", "--out", str(tmp_path)]) == 2
    assert "--num-envs must be a positive integer" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())
