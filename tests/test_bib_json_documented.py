"""BIB's reader on a file written from the format's public description, not by ``bibjson.episode_to_json``.

No official BIB file is available here. This file is built frame by frame from the description of the format that BIB's
third-party readers document (``SolvingBIB.jl`` ``conversion.jl`` and the MCS ``agent_scene_pair_json_converter.py``;
``bibjson``'s module docstring): 200x200 px frames, 20 px cells, a bottom-left origin, an entity as ``[[x, y], size,
image_src, [r, g, b]]`` whose centre is ``(x + size, y + size)``, the key in ``pin`` and the lock in ``key``, BIB's
timing (30 still frames, 10 frames per cell, 83 still frames), and what jaxsoc's writer never produces: walls as long
rectangles (the border as four), positions as floats, image paths with folders, colours off jaxsoc's palette, and a
``paddle`` field that newer files carry. The test reads it and checks every field of the episode against what the frames
show.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from jaxsoc.envs.bib import bibjson
from jaxsoc.envs.bib import world as W

CELL, INTRO, PER_CELL, OUTRO = 20, 30, 10, 83
BORDER = [[[0, 0], [200, 20]], [[0, 180], [200, 20]], [[0, 20], [20, 160]], [[180, 20], [20, 160]]]
INNER = [[[20, 80], [60, 20]]]  # cells (5, 1), (5, 2), (5, 3) as one rectangle
BARRIER = [[[140, 80], [20, 40]]]  # cells (4, 7) and (5, 7) as one rectangle
HEART = ("images/heart.png", [228, 30, 70])  # red, a little off the palette's (230, 25, 75)
MOON = ("images/moon.png", [2, 128, 198])  # blue, off (0, 130, 200)
AGENT = ("images/clove.png", [150, 30, 175])  # purple, off (145, 30, 180)
# the familiarisation trials walk to the heart on (2, 6); trial 2 stands still; the test trial (8) fetches the key
# on (2, 2), brings it next to the lock on (3, 5), the barrier goes, and walks to the moon on (5, 8)
PATHS = [
    [(1, 1), (1, 2), (1, 3), (1, 4), (2, 5), (2, 6)],
    [(1, 1), (2, 2), (2, 3), (2, 4), (2, 5), (2, 6)],
    [(1, 1)],
    *[[(1, 1), (1, 2), (2, 3), (2, 4), (2, 5), (2, 6)]] * 5,
    [(1, 1), (2, 2), (3, 3), (3, 4), (4, 5), (4, 6), (5, 7), (5, 8)],
]
KEY, LOCK, PICKUP, UNLOCK = (2, 2), (3, 5), 1, 3


def corner(cell) -> list[float]:
    """The documented position of an entity centred on ``cell`` (row, col; floats allowed): its square's bottom-left
    corner, ``size`` 10 px below and left of the centre."""
    row, col = cell
    return [float(CELL * col), float(CELL * (9 - row))]


def entity(cell, image: str, rgb) -> list:
    return [corner(cell), 10, image, list(rgb)]


def along(path, f: int) -> tuple[float, float]:
    """The agent's centre (row, col) at frame ``f``: still for ``INTRO`` frames, then ``PER_CELL`` frames per move."""
    s = min(max(f - INTRO, 0), (len(path) - 1) * PER_CELL) / PER_CELL
    i = min(int(s), len(path) - 2) if len(path) > 1 else 0
    if len(path) == 1:
        return path[0]
    a, b, frac = np.array(path[i], float), np.array(path[i + 1], float), s - i
    return tuple(a + frac * (b - a))


def trial(t: int) -> list[dict]:
    path = PATHS[t]
    frames = []
    arrive = lambda i: INTRO + i * PER_CELL  # noqa: E731
    for f in range(INTRO + (len(path) - 1) * PER_CELL + 1 + OUTRO):
        here = along(path, f)
        frame = {
            "size": [200, 200],
            "walls": BORDER + INNER,
            "objects": [entity((2, 6), *HEART), entity((5, 8), *MOON)],
            "home": entity((1, 1), "images/home_shape.png", [255, 0, 255]),
            "agent": entity(here, *AGENT),
            "paddle": [],
        }
        if t == 8:
            locked = f < arrive(UNLOCK)
            key_at = here if f >= arrive(PICKUP) else KEY
            frame["fuse_walls"] = BARRIER if locked else []
            frame["pin"] = [entity(key_at, "images/triangle90.png", [128, 0, 0])] if locked else []
            frame["key"] = [entity(LOCK, "images/triangle_slot90.png", [50, 205, 50])] if locked else []
        frames.append(frame)
    return frames


@pytest.fixture(scope="module")
def documented(tmp_path_factory):
    """Returns ``(path, trials)`` of the hand-built file (written as JSON text)."""
    trials = [trial(t) for t in range(W.NUM_TRIALS)]
    path = tmp_path_factory.mktemp("bib") / "documented_e.json"
    path.write_text(json.dumps(trials))
    return path, trials


def test_the_file_follows_the_documented_layout(documented):
    _, trials = documented
    assert [len(t) for t in trials] == [30 + 10 * (len(p) - 1) + 1 + 83 for p in PATHS]
    moving = trials[0][31]["agent"][0]
    assert moving == [22.0, 160.0]  # 2 px a frame to the right of cell (1, 1)'s corner [20, 160]
    assert trials[8][0]["fuse_walls"] == BARRIER and trials[8][-1]["pin"] == []


def test_reads_every_field(documented):
    path, _ = documented
    ep = bibjson.read_json(path, max_moves=8)
    assert (ep.frames_per_cell, ep.intro_frames, ep.outro_frames) == (PER_CELL, INTRO, OUTRO)
    walls = np.zeros((10, 10), bool)
    walls[[0, -1], :] = walls[:, [0, -1]] = True
    walls[5, 1:4] = True
    assert all((np.asarray(ep.walls)[t] == walls).all() for t in range(W.NUM_TRIALS))
    moves = np.asarray(ep.moves)
    assert moves.tolist() == [len(p) - 1 for p in PATHS]
    for t, p in enumerate(PATHS):
        assert np.asarray(ep.path)[t, : moves[t] + 1].tolist() == [list(c) for c in p]
    assert np.asarray(ep.home).tolist() == [[1, 1]] * 9
    assert np.asarray(ep.objects)[0].tolist() == [[2, 6], [5, 8]] and np.asarray(ep.object_visible).all()
    assert [W.OBJECT_SHAPES[i] for i in np.asarray(ep.object_shape)[0]] == ["heart", "moon"]
    assert np.asarray(ep.object_color)[0].tolist() == [0, 3]  # the nearest palette colours: red, blue
    assert W.AGENT_SHAPES[int(ep.agent_shape[0])] == "clove" and int(ep.agent_color[0]) == 4  # purple
    assert np.asarray(ep.goal).tolist() == [0, 0, -1, 0, 0, 0, 0, 0, 1]  # the object on the path's last cell
    assert np.asarray(ep.has_key).tolist() == [False] * 8 + [True]
    assert np.asarray(ep.key)[8].tolist() == list(KEY) and np.asarray(ep.lock)[8].tolist() == list(LOCK)
    assert W.ROTATIONS[int(ep.rotation[8])] == 90
    assert (int(ep.pickup[8]), int(ep.unlock[8])) == (PICKUP, UNLOCK)
    barrier = np.zeros((10, 10), bool)
    barrier[4:6, 7] = True
    assert (np.asarray(ep.barrier)[8] == barrier).all() and not np.asarray(ep.barrier)[:8].any()
    # the frames the reader recomputes are the file's: the agent 2 px a frame, the barrier gone at the unlock
    xy = np.asarray(ep.agent_xy)[0]
    assert xy[INTRO].tolist() == [1, 1] and xy[INTRO + 1].tolist() == pytest.approx([1, 1.1])
    gone = INTRO + UNLOCK * PER_CELL
    assert np.asarray(ep.barrier_visible)[8, gone - 1] and not np.asarray(ep.barrier_visible)[8, gone]


def test_the_lock_naming_of_newer_files_reads_the_same(documented):
    _, trials = documented
    renamed = json.loads(json.dumps(trials))
    for frame in renamed[8]:
        frame["lock"], frame["key"] = frame.pop("key"), frame.pop("pin")
    a = bibjson.episode_from_json(trials, max_moves=8)
    b = bibjson.episode_from_json(renamed, max_moves=8)
    for name in ("key", "lock", "pickup", "unlock", "rotation", "key_xy", "key_visible", "lock_visible"):
        np.testing.assert_array_equal(np.asarray(getattr(a, name)), np.asarray(getattr(b, name)), err_msg=name)
