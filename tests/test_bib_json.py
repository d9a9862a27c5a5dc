"""BIB's JSON files: exact round trips, pixel coordinates, both key/lock namings, and clear errors."""

import copy
import dataclasses
import json

import jax
import numpy as np
import pytest

from jaxsoc.envs.bib import bibjson
from jaxsoc.envs.bib import tasks as bib_tasks
from jaxsoc.envs.bib import world as W

MAX_MOVES = 6
TIMING = {"frames_per_cell": 2, "intro_frames": 2, "outro_frames": 2}


def assert_same(a: W.Episode, b: W.Episode) -> None:
    """Asserts equal static fields and equal arrays (values, shapes and dtypes) on every field."""
    for field in dataclasses.fields(W.Episode):
        x, y = getattr(a, field.name), getattr(b, field.name)
        if field.metadata.get("pytree_node", True):
            x, y = np.asarray(x), np.asarray(y)
            assert x.dtype == y.dtype, (field.name, x.dtype, y.dtype)
            np.testing.assert_array_equal(x, y, err_msg=field.name)
        else:
            assert x == y, (field.name, x, y)


def _paths(*paths):
    """Returns ``(path int8[9, M + 1, 2], moves int32[9])`` from lists of cells, the last cell repeated."""
    out = np.ones((W.NUM_TRIALS, MAX_MOVES + 1, 2), np.int8)
    moves = np.zeros(W.NUM_TRIALS, np.int32)
    for t, cells in enumerate(paths):
        cells = np.asarray(cells, np.int8)
        out[t] = np.concatenate([cells, np.repeat(cells[-1:], MAX_MOVES + 1 - len(cells), axis=0)])
        moves[t] = len(cells) - 1
    return out, moves


def hand_built(**timing) -> W.Episode:
    """An episode with interior walls, a barrier, keys and locks, two objects, diagonal moves, a trial in
    which the agent stands still, one in which it pauses mid-path and a test trial that ignores its key."""
    timing = timing or TIMING
    ep = W.blank_trials(MAX_MOVES)
    walls = np.array(ep.walls)
    walls[:, 5, 1:4] = True
    barrier = np.zeros_like(walls)
    barrier[0, 4:6, 7] = True
    to_key_lock_goal = [(1, 1), (2, 2), (3, 3), (3, 4), (4, 5), (5, 6)]
    straight = [(1, 1), (1, 2), (1, 3), (2, 4), (3, 5), (4, 6), (5, 6)]
    to_second = [(1, 1), (2, 2), (3, 3), (4, 4), (5, 4), (6, 3), (7, 2)]
    pausing = [(1, 1), (2, 2), (2, 2), (3, 3), (4, 4)]  # the agent waits a move's time on (2, 2)
    path, moves = _paths(to_key_lock_goal, straight, [(1, 1)], *[to_second] * 2, pausing, *[to_second] * 3)
    visible = np.ones((W.NUM_TRIALS, 2), bool)
    visible[1, 1] = False
    has_key = np.zeros(W.NUM_TRIALS, bool)
    has_key[[0, 8]] = True
    key = np.zeros((W.NUM_TRIALS, 2), np.int8)
    key[0], key[8] = (2, 2), (2, 6)
    lock = np.zeros((W.NUM_TRIALS, 2), np.int8)
    lock[0], lock[8] = (3, 5), (6, 7)
    rotation = np.zeros(W.NUM_TRIALS, np.int8)
    rotation[0], rotation[8] = 1, 3
    objects = np.tile(np.array([[5, 6], [7, 2]], np.int8), (W.NUM_TRIALS, 1, 1))
    objects[1, 1] = 0  # the absent object of trial 1 keeps nothing (canonical)
    goal = np.array([0, 0, -1, 1, 1, -1, 1, 1, 1], np.int8)
    ep = ep.replace(
        walls=walls,
        barrier=barrier,
        objects=objects,
        object_visible=visible,
        object_shape=np.tile(np.array([0, 2], np.int8), (W.NUM_TRIALS, 1)) * visible,
        object_color=np.tile(np.array([0, 3], np.int8), (W.NUM_TRIALS, 1)) * visible,
        key=key,
        has_key=has_key,
        lock=lock,
        rotation=rotation,
        agent_shape=np.full(W.NUM_TRIALS, 1, np.int8),
        agent_color=np.full(W.NUM_TRIALS, 4, np.int8),
        path=path,
        moves=moves,
        pickup=np.array([1, -1, -1, -1, -1, -1, -1, -1, -1], np.int32),
        unlock=np.array([3, -1, -1, -1, -1, -1, -1, -1, -1], np.int32),
        goal=goal,
    )
    return W.with_frames(ep, **timing)


@pytest.fixture(scope="module")
def episode() -> W.Episode:
    return hand_built()


@pytest.fixture(scope="module")
def trials(episode) -> list:
    return bibjson.episode_to_json(episode)


def test_round_trip_is_exact(episode, trials):
    assert_same(bibjson.canonical(episode), episode)  # the hand-built episode is canonical
    back = bibjson.episode_from_json(json.loads(json.dumps(trials)), max_moves=MAX_MOVES)
    assert_same(back, episode)
    assert [len(t) for t in trials] == np.asarray(episode.length).tolist()
    # the key rides from its pickup; lock, key and barrier disappear at the unlock
    arrive = lambda i: TIMING["intro_frames"] + i * TIMING["frames_per_cell"]  # noqa: E731
    assert trials[0][arrive(1) + 1]["pin"][0][0] == trials[0][arrive(1) + 1]["agent"][0]
    assert trials[0][arrive(3) - 1]["fuse_walls"] and not trials[0][arrive(3)]["fuse_walls"]
    assert trials[0][arrive(3) - 1]["key"] and not trials[0][arrive(3)]["key"] and not trials[0][arrive(3)]["pin"]


def test_round_trip_compact_timing_and_file(tmp_path):
    ep = hand_built(frames_per_cell=1, intro_frames=0, outro_frames=0)
    path = bibjson.write_json(ep, tmp_path / "x.json")
    assert_same(bibjson.read_json(path, max_moves=MAX_MOVES), ep)
    padded = bibjson.read_json(path, max_moves=MAX_MOVES, num_frames=ep.num_frames + 3)
    assert padded.num_frames == ep.num_frames + 3
    np.testing.assert_array_equal(padded.agent_xy[:, -4:], np.repeat(ep.agent_xy[:, -1:], 4, axis=1))
    with pytest.raises(ValueError, match="num_frames=3"):
        bibjson.read_json(path, max_moves=MAX_MOVES, num_frames=3)
    with pytest.raises(ValueError, match="trial 0: the agent.s path has 5 moves, more than max_moves=4"):
        bibjson.read_json(path, max_moves=4)


def test_pixel_coordinates_bottom_left_origin(trials):
    frame = trials[0][0]
    assert frame["size"] == [200, 200]
    assert [[0, 0], [20, 20]] in frame["walls"] and [[180, 180], [20, 20]] in frame["walls"]
    assert [[20, 80], [20, 20]] in frame["walls"]  # interior wall cell (5, 1)
    assert frame["fuse_walls"] == [[[140, 100], [20, 20]], [[140, 80], [20, 20]]]  # cells (4, 7), (5, 7)
    assert frame["home"] == [[20, 160], 10, "home_shape.png", [255, 0, 255]]  # cell (1, 1)
    assert frame["agent"] == [[20, 160], 10, "clove.png", list(W.PALETTE[4])]
    assert frame["pin"] == [[[40, 140], 10, "triangle90.png", [128, 0, 0]]]  # key on cell (2, 2)
    assert frame["key"] == [[[100, 120], 10, "triangle_slot90.png", list(W.LOCK_RGB)]]  # lock on cell (3, 5)
    assert frame["objects"] == [
        [[120, 80], 10, "heart.png", list(W.PALETTE[0])],  # cell (5, 6)
        [[40, 40], 10, "moon.png", list(W.PALETTE[3])],  # cell (7, 2)
    ]
    assert trials[0][3]["agent"][0] == [30, 150]  # halfway along the diagonal from (1, 1) to (2, 2)


def test_key_lock_naming_layouts(episode, trials):
    renamed = copy.deepcopy(trials)
    for trial in renamed:
        for frame in trial:
            frame["lock"] = frame.pop("key")
            frame["key"] = frame.pop("pin")
    assert_same(bibjson.episode_from_json(renamed, max_moves=MAX_MOVES), episode)
    for trial in renamed:  # files of tasks without keys may leave out the key, lock and barrier fields
        for frame in trial:
            frame.pop("lock"), frame.pop("key"), frame.pop("fuse_walls")
    back = bibjson.episode_from_json(renamed, max_moves=MAX_MOVES)
    assert not np.asarray(back.has_key).any() and not np.asarray(back.barrier).any()


def test_canonical_covers_what_files_cannot_show(episode):
    messy = episode.replace(
        object_visible=np.asarray(episode.object_visible).copy(),
        rotation=np.full(W.NUM_TRIALS, 2, np.int8),
        goal=np.zeros(W.NUM_TRIALS, np.int8),
    )
    messy.object_visible[3] = (False, True)  # the one object in slot 1
    back = bibjson.episode_from_json(bibjson.episode_to_json(messy), max_moves=MAX_MOVES)
    assert_same(back, bibjson.canonical(messy))
    assert np.asarray(back.object_visible)[3].tolist() == [True, False]
    assert np.asarray(back.objects)[3, 0].tolist() == [7, 2] and int(back.goal[3]) == 0
    assert np.asarray(back.rotation).tolist() == [2] + [0] * 7 + [2]  # kept only where a key shows it


def test_medal_object_reads_and_round_trips(episode, trials):
    """BIB's inaccessible-goal files show a ``medal.png`` goal object: it reads as object shape 10 and is written
    back as ``medal.png``."""
    medal = copy.deepcopy(trials)
    for frame in medal[4]:
        frame["objects"][1][2] = "images/medal.png"  # the second object of trial 4, on cell (7, 2)
    back = bibjson.episode_from_json(medal, max_moves=MAX_MOVES)
    assert W.OBJECT_SHAPES.index("medal") == 10
    assert np.asarray(back.object_shape)[4].tolist() == [0, 10]
    expected = episode.replace(object_shape=np.asarray(episode.object_shape).copy())
    expected.object_shape[4, 1] = 10
    assert_same(back, expected)
    again = bibjson.episode_to_json(back)
    assert again[4][0]["objects"][1] == [[40, 40], 10, "medal.png", list(W.PALETTE[3])]
    assert_same(bibjson.episode_from_json(json.loads(json.dumps(again)), max_moves=MAX_MOVES), expected)


def test_nearest_palette_colour(trials):
    assert bibjson.color_index(W.PALETTE[7]) == 7
    assert bibjson.color_index([228, 30, 70]) == 0
    off = copy.deepcopy(trials)
    for frame in off[2]:
        frame["agent"][3] = [140, 35, 175]  # purple, a little off
    assert int(bibjson.episode_from_json(off, max_moves=MAX_MOVES).agent_color[2]) == 4


def _break(trials, t, f, **fields):
    bad = copy.deepcopy(trials)
    for name, value in fields.items():
        if value is None:
            del bad[t][f][name]
        else:
            bad[t][f][name] = value
    return bad


@pytest.mark.parametrize(
    "t, f, fields, message",
    [
        (3, 12, {"agent": None}, r"trial 3, frame 12: field 'agent' is missing"),
        (3, 12, {"agent": "pentagon"}, r"trial 3, frame 12: field 'agent' must be \[\[x, y\], size, image_src"),
        (
            0,
            0,
            {"agent": [[20, 160], 10, "blob.png", [1, 2, 3]]},
            r"trial 0, frame 0: field 'agent' has unknown shape 'blob'",
        ),
        (
            1,
            0,
            {"objects": [[[120, 80], 10, "trophy.png", [0, 0, 0]]]},
            r"trial 1, frame 0: field 'objects' has unknown shape 'trophy'.*known: .*spoon, medal",
        ),
        (
            0,
            0,
            {"pin": [[[40, 140], 10, "triangle45.png", [128, 0, 0]]]},
            r"field 'pin' has unknown shape 'triangle45'",
        ),
        (
            2,
            0,
            {"walls": [[[5, 0], [20, 20]]]},
            r"trial 2, frame 0: field 'walls' entries must be \[\[x, y\], \[w, h\]\]",
        ),
        (2, 0, {"size": [84, 84]}, r"trial 2, frame 0: field 'size' must be \[200, 200\]"),
        (2, 0, {"home": [[25, 160], 10, "home_shape.png", [255, 0, 255]]}, r"field 'home' .* is not on a cell"),
        (4, 1, {"objects": []}, r"trial 4, frame 1: field 'objects' differs from frame 0's"),
        (0, 9, {"pin": [[[100, 100], 10, "triangle90.png", [128, 0, 0]]]}, r"trial 0, frame 9: field 'pin' does not"),
    ],
)
def test_malformed_fields_are_named(trials, t, f, fields, message):
    with pytest.raises(ValueError, match=message):
        bibjson.episode_from_json(_break(trials, t, f, **fields), max_moves=MAX_MOVES)


def test_malformed_structure(trials, tmp_path):
    with pytest.raises(ValueError, match="list of 9 trials .* got a list of 8 trials"):
        bibjson.episode_from_json(trials[:8])
    with pytest.raises(ValueError, match="trial 5: must be a non-empty list of frames"):
        bibjson.episode_from_json(trials[:5] + [[]] + trials[6:])
    three = copy.deepcopy(trials)
    three[0][0]["objects"] = three[0][0]["objects"] * 2
    with pytest.raises(ValueError, match="field 'objects' has 4 entries, at most 2"):
        bibjson.episode_from_json(three)
    pause = copy.deepcopy(trials)
    pause[3].insert(6, pause[3][6])  # the agent waits a frame on cell (3, 3)
    with pytest.raises(ValueError, match=r"trial 3, frame 6: field 'agent' stays on cell \(3, 3\) for 2 frames"):
        bibjson.episode_from_json(pause)
    (tmp_path / "bad.json").write_text("[[{]")
    with pytest.raises(ValueError, match="bad.json: not a valid JSON file"):
        bibjson.read_json(tmp_path / "bad.json")
    (tmp_path / "eight.json").write_text(json.dumps(trials[:8]))
    with pytest.raises(ValueError, match="eight.json: .* list of 9 trials, got a list of 8"):
        bibjson.read_json(tmp_path / "eight.json")
    (tmp_path / "agentless.json").write_text(json.dumps(_break(trials, 3, 12, agent=None)))
    with pytest.raises(ValueError, match=r"agentless.json: trial 3, frame 12: field 'agent' is missing"):
        bibjson.read_json(tmp_path / "agentless.json")
    with pytest.raises(ValueError, match=r"arrays \[9, \.\.\.\]"):
        bibjson.episode_to_json(jax.tree.map(lambda x: x[None], hand_built()))


def test_generated_episodes_round_trip():
    """Generated episodes come back exactly: the background tasks with a key and lock and with a second agent, and
    an instrumental evaluation pair with its barrier (each task compiles its own generator, so the other three
    background tasks, whose episodes hold no other kind of field, are left out)."""
    names = [("background", "instrumental_action"), ("background", "multi_agent")]
    names += [("evaluation", "instrumental_blocking_barrier")]
    for i, (split, name) in enumerate(names):
        batch = bib_tasks.generate_batch(split, name, jax.random.key(i), 16, W.BIBParams.compact())
        for j in range(2):
            ep = jax.tree.map(lambda x, j=j: x[j], batch)
            episodes = [ep] if split == "background" else [jax.tree.map(lambda x, o=o: x[o], ep) for o in (0, 1)]
            for one in episodes:
                one = W.with_frames(one, 2, 1, 1)
                back = bibjson.episode_from_json(bibjson.episode_to_json(one), max_moves=one.max_moves)
                assert_same(back, one)
