"""BIB datasets: BIB's file layout, manifest and train/validation split, resuming, determinism, videos, loading
and in-memory sampling, with a small stand-in for the task generators (fast, and independent of them)."""

import json
import sys
import types
import zlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_bib_json import assert_same

from jaxsoc.envs.bib import bibjson, dataset
from jaxsoc.envs.bib import world as W

PARAMS = W.BIBParams(frames_per_cell=2, intro_frames=2, outro_frames=2, max_moves=3)
BACKGROUND = {"single_object": 10_000, "preference": 10_000, "multi_agent": 4_000, "instrumental_action": 4_000}
EVALUATION = ("preference", "multi_agent", "efficiency_path")


def _fake_episode(key: jax.Array, name: str, params: W.BIBParams) -> W.Episode:
    """An episode whose agent walks diagonally from a random cell to the one object, the agent's shape
    telling the task apart (canonical: what the files cannot show is zero)."""
    k_start, k_moves, k_look = jax.random.split(key, 3)
    n = W.NUM_TRIALS
    start = jax.random.randint(k_start, (n, 2), 1, 3)
    moves = jax.random.randint(k_moves, (n,), 1, params.max_moves + 1)
    steps = jnp.minimum(jnp.arange(params.max_moves + 1)[None, :], moves[:, None])
    path = (start[:, None, :] + steps[..., None]).astype(jnp.int8)
    end = path[:, -1]
    visible = jnp.broadcast_to(jnp.array([True, False]), (n, 2))
    ep = W.blank_trials(params.max_moves).replace(
        home=start.astype(jnp.int8),
        objects=jnp.stack([end, jnp.zeros_like(end)], axis=1),
        object_visible=visible,
        object_shape=jnp.where(visible, jax.random.randint(k_look, (n, 2), 0, len(W.OBJECT_SHAPES)), 0).astype(
            jnp.int8
        ),
        agent_shape=jnp.full((n,), zlib.crc32(name.encode()) % len(W.AGENT_SHAPES), jnp.int8),
        agent_color=jax.random.randint(k_look, (n,), 0, len(W.PALETTE)).astype(jnp.int8),
        path=path,
        moves=moves.astype(jnp.int32),
        goal=jnp.zeros((n,), jnp.int8),
    )
    return W.with_frames(ep, params.frames_per_cell, params.intro_frames, params.outro_frames)


def fake_generate_batch(split: str, name: str, key: jax.Array, num: int, params: W.BIBParams) -> W.Episode:
    episodes = jax.vmap(lambda k: _fake_episode(k, name, params))(jax.random.split(key, num))
    if split == "background":
        return episodes
    unexpected = episodes.replace(agent_color=(episodes.agent_color + 1) % len(W.PALETTE))
    return jax.tree.map(lambda e, u: jnp.stack([e, u], axis=1), episodes, unexpected)


def fake_check_task(split: str, name: str) -> None:
    if name not in (BACKGROUND if split == "background" else EVALUATION):
        raise ValueError(f"unknown BIB {split} task {name!r}")


@pytest.fixture(autouse=True)
def fake_tasks(monkeypatch):
    """Puts a stand-in for ``jaxsoc.envs.bib.tasks`` (its API: BACKGROUND, EVALUATION, generate_batch,
    check_task) where ``dataset`` imports it."""
    module = types.SimpleNamespace(
        BACKGROUND=BACKGROUND, EVALUATION=EVALUATION, generate_batch=fake_generate_batch, check_task=fake_check_task
    )
    monkeypatch.setitem(sys.modules, "jaxsoc.envs.bib.tasks", module)
    return module


def write(out, split="background", **kwargs):
    """``write_dataset`` with small defaults: 2 tasks (1 for evaluation), 5 episodes, shards of 2, no videos."""
    tasks = ["single_object", "preference"] if split == "background" else ["preference"]
    defaults = {"tasks": tasks, "episodes": 5, "params": PARAMS, "video": "none", "shard_episodes": 2}
    return dataset.write_dataset(split, out, progress=False, **(defaults | kwargs))


def contents(root) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_background_layout_manifest_and_split(tmp_path):
    manifest_path = write(tmp_path)
    assert manifest_path == tmp_path / "background" / "manifest.json"
    folder = tmp_path / "background" / "single_object"
    assert sorted(p.name for p in folder.glob("*.json")) == [f"single_object_{i:06d}.json" for i in range(5)]
    assert sorted(p.name for p in folder.glob("*.done")) == ["shard_00000.done", "shard_00001.done", "shard_00002.done"]
    manifest = json.loads(manifest_path.read_text())
    assert manifest["settings"]["seed"] == 0 and manifest["settings"]["params"]["max_moves"] == 3
    assert manifest["tasks"]["preference"]["episodes"] == 5 and manifest["tasks"]["preference"]["complete"]
    assert manifest["totals"] == {
        "episodes": 10,
        "files": 10,
        "bytes": sum(p.stat().st_size for p in tmp_path.rglob("*_0*.json")),
        "complete": True,
    }
    assert manifest["train"] == [f"{t}/{t}_{i:06d}.json" for t in ("single_object", "preference") for i in range(4)]
    assert manifest["validation"] == ["single_object/single_object_000004.json", "preference/preference_000004.json"]
    train = dataset.list_episodes(tmp_path, "background", "train")
    assert len(train) == 8 and len(dataset.list_episodes(tmp_path, "background", "validation", task="preference")) == 1
    loaded = dataset.load_episodes(train[:3], PARAMS)
    assert loaded.moves.shape == (3, 9) and loaded.num_frames == PARAMS.num_frames
    expected = dataset.generate_episodes("background", "preference", [0, 1], seed=0, params=PARAMS)
    assert_same(jax.tree.map(lambda x: x[:2], loaded), expected)  # the files hold exactly the generated episodes
    with pytest.raises(ValueError, match="unknown BIB background task 'efficiency_path'"):
        write(tmp_path / "other", tasks=["efficiency_path"])


def test_evaluation_pairs(tmp_path):
    write(tmp_path, "evaluation", episodes=3)
    folder = tmp_path / "evaluation" / "preference"
    names = sorted(p.name for p in folder.glob("*.json"))
    assert names == [f"preference_{i:06d}{s}.json" for i in range(3) for s in "eu"]
    assert [p.name for p in dataset.list_episodes(tmp_path, "evaluation")] == [n for n in names if n.endswith("e.json")]
    pairs = dataset.load_pairs(tmp_path, "preference")
    assert pairs.moves.shape == (3, 2, 9)
    np.testing.assert_array_equal(pairs.path[:, 0], pairs.path[:, 1])
    np.testing.assert_array_equal(pairs.agent_color[:, 1], (pairs.agent_color[:, 0] + 1) % len(W.PALETTE))
    with pytest.raises(ValueError, match="subset"):
        dataset.list_episodes(tmp_path, "evaluation", "train")
    (folder / "preference_000001u.json").unlink()
    with pytest.raises(ValueError, match="no unexpected sibling preference_000001u.json"):
        dataset.load_pairs(tmp_path, "preference")


def test_resume_and_settings(tmp_path):
    write(tmp_path)
    root = tmp_path / "background"
    before = contents(root)
    kept = {p: p.stat().st_mtime_ns for p in (root / "single_object").glob("single_object_00000[0-1].json")}
    for i in (2, 3):
        (root / "single_object" / f"single_object_{i:06d}.json").unlink()
    (root / "single_object" / "shard_00001.done").unlink()
    (root / "preference" / "preference_000004.json").unlink()  # a done marker whose file is gone: redone
    write(tmp_path)
    assert contents(root) == before
    assert {p: p.stat().st_mtime_ns for p in kept} == kept  # done shards were not rewritten
    for change, name in (({"seed": 1}, "seed"), ({"params": PARAMS.replace(max_moves=4)}, "params.max_moves")):
        with pytest.raises(ValueError, match=f"written with {name}="):
            write(tmp_path, **change)
    with pytest.raises(ValueError, match=r"episodes\['single_object'\]=5, this run asks for 6"):
        write(tmp_path, episodes=6)
    with pytest.raises(ValueError, match="video='none', this run has video='gif'"):
        write(tmp_path, video="gif")
    write(tmp_path, tasks=["multi_agent"], episodes=1)  # a further task joins the directory
    assert set(json.loads((root / "manifest.json").read_text())["tasks"]) == {
        "single_object",
        "preference",
        "multi_agent",
    }


def test_batch_size_and_writer_threads_do_not_change_the_dataset(tmp_path):
    write(tmp_path / "a", batch=2, workers=1)
    write(tmp_path / "b", batch=3, shard_episodes=2, workers=4)
    assert contents(tmp_path / "a") == contents(tmp_path / "b")


def test_gif_videos(tmp_path):
    write(tmp_path, tasks=["preference"], episodes=1, video="gif", video_size=40)
    folder = tmp_path / "background" / "preference"
    assert sorted(p.name for p in folder.iterdir()) == [
        "preference_000000.gif",
        "preference_000000.json",
        "shard_00000.done",
    ]
    assert (folder / "preference_000000.gif").read_bytes()[:6] == b"GIF89a"


def test_mp4_without_ffmpeg_fails_before_any_work(tmp_path, monkeypatch):
    monkeypatch.setattr(dataset, "has_ffmpeg", lambda: False)
    with pytest.raises(RuntimeError, match=r"pip install 'jaxsoc\[video\]'.*--video gif\|none"):
        write(tmp_path, video="mp4")
    assert not (tmp_path / "background").exists()


def test_folders_without_manifest(tmp_path):
    """BIB's own files come without a manifest: the folders are scanned and split 80/20 by name."""
    episode = jax.tree.map(lambda x: x[0], dataset.generate_episodes("background", "preference", [0, 1], params=PARAMS))
    folder = tmp_path / "background" / "preference"
    folder.mkdir(parents=True)
    for i in range(5):
        bibjson.write_json(episode, folder / f"{i:03d}.json")
    assert [p.name for p in dataset.list_episodes(tmp_path, "background", "validation")] == ["004.json"]
    loaded = dataset.load_episodes(dataset.list_episodes(tmp_path, "background"))  # max_moves: the longest path
    assert loaded.moves.shape == (5, 9) and loaded.max_moves == int(episode.moves.max())


def test_sample_background_shares_and_stream():
    assert dataset.background_shares(28) == {
        "single_object": 10,
        "preference": 10,
        "multi_agent": 4,
        "instrumental_action": 4,
    }
    for batch in (1, 5, 13, 64):
        shares = dataset.background_shares(batch)
        assert sum(shares.values()) == batch and shares["single_object"] >= shares["multi_agent"]
    batch = jax.jit(dataset.sample_background, static_argnames=("batch", "params"))(
        jax.random.key(1), batch=6, params=PARAMS
    )
    assert batch.moves.shape == (6, 9)
    shapes = np.asarray(batch.agent_shape[:, 0])  # the stand-in marks each task by the agent's shape
    expected = [zlib.crc32(t.encode()) % 3 for t, n in dataset.background_shares(6).items() for _ in range(n)]
    assert shapes.tolist() == expected
    stream = dataset.background_stream(jax.random.key(2), 6, PARAMS)
    first, second = next(stream), next(stream)
    assert not np.array_equal(first.path, second.path)
