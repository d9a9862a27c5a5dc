"""BIB's JSON episode files: writing an ``Episode`` in BIB's format, as its public readers document it, and reading
one back. The reader is tested on files written here and on one built frame by frame from the format's description
(``tests/test_bib_json_documented.py``), never on an official file (none was available).

**The format** (one ``.json`` per episode, next to its ``.mp4``): a list of 9 trials (8 familiarisation trials
and the test trial), each a list of frames, each frame a dict:

- ``size``: ``[200, 200]``, the frame's width and height in pixels.
- ``walls``: ``[[[x, y], [w, h]], ...]``, the black wall cells, border included (bottom-left corner and
  extent in pixels; we write one 20x20 entry per cell, the reader accepts any rectangle on the 20 px grid).
- ``fuse_walls``: the green removable barrier cells, same format; empty from the frame the key enters the lock.
- ``pin``: the key, ``[]`` or ``[entity]``; ``key``: confusingly, the lock, ``[]`` or ``[entity]``; both empty
  once unlocked. Some files name the key ``key`` and the lock ``lock`` instead: a frame with a ``lock`` field
  is read that way (the rule of the MCS converter).
- ``objects``: ``[entity, ...]``, the goal objects present in the trial (at most 2); ``home``, ``agent``: an
  entity each.

An entity is ``[[x, y], size, image_src, [r, g, b]]``. Pixel coordinates have a bottom-left origin: cell
``(row, col)`` (row 0 at the top) spans ``x in [20 col, 20 col + 20]``, ``y in [20 (9 - row), 20 (9 - row) +
20]``. ``size`` is the entity's radius (half its width, 10 px for a cell) and ``[x, y]`` the bottom-left
corner of its square, so its centre is ``(x + size, y + size)``: both public readers of these files
(``SolvingBIB.jl`` ``conversion.jl`` and the MCS ``agent_scene_pair_json_converter.py``) compute the centre that
way. An entity on cell ``(row, col)`` is therefore written at ``[20 col, 20 (9 - row)]`` with size 10; the
moving agent and key at fractional cells are written as numbers (integers where integral; with
``frames_per_cell=10`` they move 2 px per frame).

``image_src`` is ``"{shape}.png"``: the agent's shape (``world.AGENT_SHAPES``), the object's
(``world.OBJECT_SHAPES``; ``medal``, the goal object of BIB's inaccessible-goal episodes, among them),
``home_shape.png``, the key ``triangle{deg}.png`` and the lock
``triangle_slot{deg}.png`` (``deg`` in ``world.ROTATIONS``). The reader takes the basename's stem, so
``images/heart.png`` reads as ``heart``. Colours are written as the palette's RGB; the reader maps an RGB to
the palette entry equal to it, else to the nearest one (Euclidean distance in RGB), so files with slightly
different colours still read. Home, key, lock, wall and barrier colours are written as ``world``'s and not
read.

**Reading** requires ``size``, ``walls``, ``objects``, ``home`` and ``agent`` in every frame (``fuse_walls``
and the key and lock fields may be absent: empty). It rebuilds the layout of each trial from its first frame
and the agent's cell path from its positions: motion runs from the first frame the agent leaves its cell to
the frame it last arrives at one, and every move between neighbouring cells takes the same number of frames,
``frames_per_cell``; the still frames before and after are ``intro_frames`` and ``outro_frames`` (the same in
every trial). The path is the agent's cell every ``frames_per_cell`` frames from the start of motion, so a
pause on a cell mid-path (a repeated cell; it lasts a multiple of ``frames_per_cell`` frames) is kept, while a
pause at the start or end of a path cannot be told from the still frames. The key is carried (``pickup``)
from the path index at which it starts riding on the agent until it disappears; the trial unlocks
(``unlock``) at the path index of the frame the lock or the barrier disappears; ``goal`` is the shown object
on the path's last cell. The frame arrays are then recomputed by ``world.with_frames`` and compared with the
file's frames: a file that a cell path cannot produce (varying speed, a key that jumps, a lock that comes
back) is refused with the trial, frame and field of the first difference.

**Round trip.** ``episode_from_json(episode_to_json(ep), ep.max_moves)`` equals ``canonical(ep)`` on every
array and static field, and ``canonical(ep)`` is ``ep`` for episodes that keep nothing the files cannot show:
attributes of absent objects, keys and locks, an object slot left empty before a present one, a ``goal``
that is not the object at the path's end (see ``canonical``). Generators should emit canonical episodes.
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.bib import world as W

FRAME_SIZE = (W.FRAME_PX, W.FRAME_PX)
RADIUS = W.CELL_PX // 2  # the ``size`` written for every entity
HOME_IMAGE = "home_shape"
TOL = 1e-3  # cell units (0.02 px): positions this close are equal, a position this close to a cell is on it
REQUIRED = ("size", "walls", "objects", "home", "agent")  # fields every frame must have
_KEY_RE = re.compile(r"triangle(\d+)")
_LOCK_RE = re.compile(r"triangle_slot(\d+)")

_with_frames = jax.jit(W.with_frames, static_argnums=(1, 2, 3))


# ---------------------------------------------------------------------------------------------------- writing


def episode_to_json(episode: W.Episode) -> list[list[dict[str, Any]]]:
    """Returns one episode (arrays ``[9, ...]``) as BIB's JSON structure: 9 trials, each the list of its
    frames ``0 .. length - 1`` as dicts (see the module docstring). Frames of a trial share their static
    sub-lists (walls, objects, home). Raises ``ValueError`` for arrays without a single trial axis of 9."""
    ep = jax.device_get(episode)
    if np.shape(ep.moves) != (W.NUM_TRIALS,):
        raise ValueError(
            f"episode_to_json takes one episode with arrays [{W.NUM_TRIALS}, ...], got moves of shape "
            f"{np.shape(ep.moves)} (index a batch or pair first)"
        )
    return [_trial_to_json(ep, t) for t in range(W.NUM_TRIALS)]


def write_json(episode: W.Episode, path: str | Path) -> Path:
    """Writes ``episode_to_json(episode)`` to ``path`` (compact JSON). Returns the path."""
    path = Path(path)
    path.write_text(json.dumps(episode_to_json(episode), separators=(",", ":")))
    return path


def _num(value: float) -> int | float:
    """Returns ``value`` rounded to 1e-4 px, as an ``int`` when integral."""
    value = round(float(value), 4)
    return int(value) if value.is_integer() else value


def _entity_xy(cells: np.ndarray) -> list[list[int | float]]:
    """Returns the ``[x, y]`` of entities with centres at ``cells`` (``float[..., 2]`` as ``(row, col)``)."""
    cells = np.asarray(cells, np.float64).reshape(-1, 2)
    half = W.CELL_PX / 2
    xs = W.CELL_PX * cells[:, 1] + half - RADIUS
    ys = W.CELL_PX * (W.GRID - 1 - cells[:, 0]) + half - RADIUS
    return [[_num(x), _num(y)] for x, y in zip(xs, ys)]


def _entity(cell: np.ndarray, shape: str, rgb) -> list:
    """Returns the JSON entity ``[[x, y], size, image_src, [r, g, b]]`` of a cell-aligned entity."""
    return [_entity_xy(cell)[0], RADIUS, f"{shape}.png", [int(v) for v in rgb]]


def _cells_json(grid: np.ndarray) -> list[list[list[int]]]:
    """Returns ``[[[x, y], [20, 20]], ...]`` for the True cells of ``bool[10, 10]``, row-major."""
    return [
        [[W.CELL_PX * int(c), W.CELL_PX * (W.GRID - 1 - int(r))], [W.CELL_PX, W.CELL_PX]] for r, c in np.argwhere(grid)
    ]


def _trial_to_json(ep: W.Episode, t: int) -> list[dict[str, Any]]:
    """Returns the frames of trial ``t`` of a numpy episode."""
    n = int(ep.length[t])
    walls, barrier = _cells_json(ep.walls[t]), _cells_json(ep.barrier[t])
    objects = [
        _entity(ep.objects[t, k], W.OBJECT_SHAPES[int(ep.object_shape[t, k])], W.PALETTE[int(ep.object_color[t, k])])
        for k in range(ep.objects.shape[1])
        if ep.object_visible[t, k]
    ]
    home = _entity(ep.home[t], HOME_IMAGE, W.HOME_RGB)
    deg = W.ROTATIONS[int(ep.rotation[t])]
    lock = [_entity(ep.lock[t], f"triangle_slot{deg}", W.LOCK_RGB)]
    key_image, key_rgb = f"triangle{deg}.png", list(W.KEY_RGB)
    agent_image = f"{W.AGENT_SHAPES[int(ep.agent_shape[t])]}.png"
    agent_rgb = W.PALETTE[int(ep.agent_color[t])].tolist()
    agent_xy, key_xy = _entity_xy(ep.agent_xy[t, :n]), _entity_xy(ep.key_xy[t, :n])
    return [
        {
            "size": list(FRAME_SIZE),
            "walls": walls,
            "fuse_walls": barrier if ep.barrier_visible[t, f] else [],
            "pin": [[key_xy[f], RADIUS, key_image, key_rgb]] if ep.key_visible[t, f] else [],
            "key": lock if ep.lock_visible[t, f] else [],
            "objects": objects,
            "home": home,
            "agent": [agent_xy[f], RADIUS, agent_image, agent_rgb],
        }
        for f in range(n)
    ]


# ---------------------------------------------------------------------------------------------------- parsing


@dataclass
class _Entity:
    """A parsed JSON entity: its centre in cell units ``(row, col)``, shape name and RGB."""

    cell: np.ndarray  # float64[2]
    shape: str
    rgb: tuple[int, int, int]
    raw: list


@dataclass
class _Trial:
    """One parsed trial: its layout (from frame 0) and what every frame shows."""

    layout: dict[str, Any]
    agent: np.ndarray  # float64[L, 2], cell units
    key: np.ndarray  # float64[L, 2], NaN where the key is not shown
    key_visible: np.ndarray  # bool[L]
    lock_visible: np.ndarray  # bool[L]
    barrier_visible: np.ndarray  # bool[L]
    key_field: str
    lock_field: str


@dataclass
class _Parsed:
    """A parsed episode: per-trial layouts and observations, the agent's paths and the detected timing."""

    trials: list[_Trial]
    paths: list[np.ndarray]  # int[K_t + 1, 2] per trial
    timing: tuple[int, int, int]  # (frames_per_cell, intro_frames, outro_frames)


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _is_pair(value: Any) -> bool:
    return isinstance(value, list | tuple) and len(value) == 2 and all(_is_number(v) for v in value)


def _parse_entity(value: Any, where: str, field: str) -> _Entity:
    """Parses ``[[x, y], size, image_src, [r, g, b]]``. Raises ``ValueError`` naming ``where`` and ``field``."""
    ok = (
        isinstance(value, list | tuple)
        and len(value) == 4
        and _is_pair(value[0])
        and _is_number(value[1])
        and value[1] > 0
        and isinstance(value[2], str)
        and isinstance(value[3], list | tuple)
        and len(value[3]) == 3
        and all(_is_number(v) for v in value[3])
    )
    if not ok:
        raise ValueError(f"{where}: field {field!r} must be [[x, y], size, image_src, [r, g, b]], got {_short(value)}")
    (x, y), size = value[0], value[1]
    half = W.CELL_PX / 2
    cell = np.array([W.GRID - 1 - (y + size - half) / W.CELL_PX, (x + size - half) / W.CELL_PX])
    return _Entity(cell, _stem(value[2]), tuple(int(round(v)) for v in value[3]), value)


@functools.lru_cache(maxsize=256)
def _stem(image_src: str) -> str:
    """Returns the shape name of an ``image_src``: its basename without extension."""
    return PurePosixPath(image_src.replace("\\", "/")).stem


def _parse_entities(value: Any, where: str, field: str, most: int) -> list[_Entity]:
    """Parses a list of at most ``most`` entities (a missing field is an empty list)."""
    if not isinstance(value, list | tuple):
        raise ValueError(
            f"{where}: field {field!r} must be a list of [[x, y], size, image_src, [r, g, b]], got {_short(value)}"
        )
    if len(value) > most:
        raise ValueError(f"{where}: field {field!r} has {len(value)} entries, at most {most} are supported")
    return [_parse_entity(v, where, field) for v in value]


def _parse_cells(value: Any, where: str, field: str) -> np.ndarray:
    """Parses ``[[[x, y], [w, h]], ...]`` rectangles on the 20 px grid. Returns ``bool[10, 10]``."""
    grid = np.zeros((W.GRID, W.GRID), bool)
    if not isinstance(value, list | tuple):
        raise ValueError(f"{where}: field {field!r} must be a list of [[x, y], [w, h]], got {_short(value)}")
    for rect in value:
        ok = isinstance(rect, list | tuple) and len(rect) == 2 and _is_pair(rect[0]) and _is_pair(rect[1])
        if ok:
            (x, y), (w, h) = rect
            bounds = [v / W.CELL_PX for v in (x, y, x + w, y + h)]
            ok = all(float(b).is_integer() and 0 <= b <= W.GRID for b in bounds) and w > 0 and h > 0
        if not ok:
            raise ValueError(
                f"{where}: field {field!r} entries must be [[x, y], [w, h]] on the {W.CELL_PX} px grid inside "
                f"the frame, got {_short(rect)}"
            )
        c0, y0, c1, y1 = (int(b) for b in bounds)
        grid[W.GRID - y1 : W.GRID - y0, c0:c1] = True
    return grid


def _on_cell(entity: _Entity, where: str, field: str) -> np.ndarray:
    """Returns the entity's cell ``int[2]``; raises ``ValueError`` if it is not on one."""
    cell = np.round(entity.cell)
    if np.any(np.abs(entity.cell - cell) > TOL) or np.any(cell < 0) or np.any(cell >= W.GRID):
        raise ValueError(
            f"{where}: field {field!r} at {_short(entity.raw[0])} (size {entity.raw[1]}) is not on a cell of the "
            f"{W.GRID}x{W.GRID} grid (a cell (row, col) is written at [{W.CELL_PX} col, {W.CELL_PX} (9 - row)])"
        )
    return cell.astype(np.int64)


def _shape_index(entity: _Entity, names: tuple[str, ...], where: str, field: str) -> int:
    if entity.shape not in names:
        raise ValueError(
            f"{where}: field {field!r} has unknown shape {entity.shape!r} (image_src {entity.raw[2]!r}); "
            f"known: {', '.join(names)}"
        )
    return names.index(entity.shape)


def _rotation_index(entity: _Entity, pattern: re.Pattern, where: str, field: str) -> int:
    match = pattern.fullmatch(entity.shape)
    if match is None or int(match.group(1)) not in W.ROTATIONS:
        expected = pattern.pattern.replace(r"(\d+)", "{" + "|".join(map(str, W.ROTATIONS)) + "}")
        raise ValueError(
            f"{where}: field {field!r} has unknown shape {entity.shape!r} (image_src {entity.raw[2]!r}); "
            f"expected {expected}"
        )
    return W.ROTATIONS.index(int(match.group(1)))


def color_index(rgb) -> int:
    """Returns the index into ``world.PALETTE`` of ``rgb``: the equal entry, else the nearest (Euclidean)."""
    rgb = np.asarray(rgb, np.int64)
    dist = np.sum((W.PALETTE.astype(np.int64) - rgb) ** 2, axis=-1)
    return int(np.argmin(dist))


def _layout(frame: dict, t: int, key_field: str, lock_field: str) -> dict[str, Any]:
    """Returns the layout of trial ``t`` (numpy fields of ``Episode`` without a trial axis) from its frame 0."""
    where = f"trial {t}, frame 0"
    objects = _parse_entities(frame["objects"], where, "objects", most=2)
    keys = _parse_entities(frame.get(key_field, []), where, key_field, most=1)
    locks = _parse_entities(frame.get(lock_field, []), where, lock_field, most=1)
    home = _parse_entity(frame["home"], where, "home")
    agent = _parse_entity(frame["agent"], where, "agent")
    out = {
        "walls": _parse_cells(frame["walls"], where, "walls"),
        "barrier": _parse_cells(frame.get("fuse_walls", []), where, "fuse_walls"),
        "home": _on_cell(home, where, "home"),
        "objects": np.zeros((2, 2), np.int64),
        "object_visible": np.zeros(2, bool),
        "object_shape": np.zeros(2, np.int64),
        "object_color": np.zeros(2, np.int64),
        "key": np.zeros(2, np.int64),
        "has_key": bool(keys or locks),
        "lock": np.zeros(2, np.int64),
        "rotation": 0,
        "agent_shape": _shape_index(agent, W.AGENT_SHAPES, where, "agent"),
        "agent_color": color_index(agent.rgb),
    }
    for k, entity in enumerate(objects):
        out["objects"][k] = _on_cell(entity, where, "objects")
        out["object_visible"][k] = True
        out["object_shape"][k] = _shape_index(entity, W.OBJECT_SHAPES, where, "objects")
        out["object_color"][k] = color_index(entity.rgb)
    if keys:
        out["key"] = _on_cell(keys[0], where, key_field)
        out["rotation"] = _rotation_index(keys[0], _KEY_RE, where, key_field)
    if locks:
        out["lock"] = _on_cell(locks[0], where, lock_field)
        rotation = _rotation_index(locks[0], _LOCK_RE, where, lock_field)
        if keys and rotation != out["rotation"]:
            raise ValueError(
                f"{where}: field {lock_field!r} is turned {W.ROTATIONS[rotation]} degrees but field {key_field!r} "
                f"{W.ROTATIONS[out['rotation']]}: a key and its lock share their rotation"
            )
        out["rotation"] = rotation
    return out


def _parse_trial(frames: Any, t: int) -> _Trial:
    """Parses and validates the frames of trial ``t``."""
    if not isinstance(frames, list) or not frames:
        raise ValueError(f"trial {t}: must be a non-empty list of frames, got {_short(frames)}")
    first = _check_frame(frames[0], f"trial {t}, frame 0")
    if not _is_pair(first["size"]) or tuple(first["size"]) != FRAME_SIZE:
        raise ValueError(f"trial {t}, frame 0: field 'size' must be {list(FRAME_SIZE)}, got {_short(first['size'])}")
    key_field, lock_field = ("key", "lock") if "lock" in first else ("pin", "key")
    layout = _layout(first, t, key_field, lock_field)
    n = len(frames)
    agent, key = np.zeros((n, 2)), np.full((n, 2), np.nan)
    key_visible, lock_visible, barrier_visible = np.zeros(n, bool), np.zeros(n, bool), np.zeros(n, bool)
    for f, frame in enumerate(frames):
        where = f"trial {t}, frame {f}"
        _check_frame(frame, where)
        for name in ("size", "walls", "objects", "home"):
            if frame[name] != first[name]:
                raise ValueError(
                    f"{where}: field {name!r} differs from frame 0's (the layout must stay fixed in a trial)"
                )
        entity = _parse_entity(frame["agent"], where, "agent")
        if entity.raw[1:] != first["agent"][1:]:
            raise ValueError(f"{where}: field 'agent' changes its size, image_src or colour within the trial")
        agent[f] = entity.cell
        keys = _parse_entities(frame.get(key_field, []), where, key_field, most=1)
        for name in (lock_field, "fuse_walls"):
            shown = frame.get(name, [])
            if not isinstance(shown, list | tuple):
                raise ValueError(f"{where}: field {name!r} must be a list, got {_short(shown)}")
            if shown and shown != first.get(name, []):
                raise ValueError(f"{where}: field {name!r} differs from frame 0's (it may only disappear)")
        if keys:
            key[f] = keys[0].cell
        key_visible[f] = bool(keys)
        lock_visible[f] = bool(frame.get(lock_field))
        barrier_visible[f] = bool(frame.get("fuse_walls"))
    return _Trial(layout, agent, key, key_visible, lock_visible, barrier_visible, key_field, lock_field)


def _check_frame(frame: Any, where: str) -> dict:
    """Returns ``frame`` if it is a dict with the ``REQUIRED`` fields; raises ``ValueError`` otherwise."""
    if not isinstance(frame, dict):
        raise ValueError(f"{where}: a frame must be a dict of fields, got {_short(frame)}")
    for name in REQUIRED:
        if name not in frame:
            raise ValueError(f"{where}: field {name!r} is missing")
    return frame


# ---------------------------------------------------------------------------------------------------- motion


def _motion(agent: np.ndarray, t: int) -> tuple[np.ndarray, tuple[int, int, int] | None]:
    """Returns the agent's cell path ``int[K + 1, 2]`` in trial ``t`` (``agent``: ``float[L, 2]`` centres in
    cell units) and the trial's timing ``(frames_per_cell, intro_frames, outro_frames)``, ``None`` when the
    agent never moves.

    Motion runs from the first frame the agent leaves its cell to the frame it last arrives at one; every
    move between neighbouring cells takes ``frames_per_cell`` frames, and a pause on a cell mid-path lasts a
    multiple of it (the path repeats the cell). The path is the agent's cell every ``frames_per_cell``
    frames from the start of motion. Raises ``ValueError`` for motion such a path cannot produce."""
    n = len(agent)
    on_cell = np.all(np.abs(agent - np.round(agent)) <= TOL, axis=1)
    inside = np.all((agent > -0.5) & (agent < W.GRID - 0.5), axis=1)
    if not (on_cell[0] and inside.all()):
        f = 0 if not on_cell[0] else int(np.argmin(inside))
        raise ValueError(f"trial {t}, frame {f}: field 'agent' at {_cell(agent[f])} is not on a cell of the grid")
    moved = np.any(np.abs(np.diff(agent, axis=0)) > TOL, axis=1)  # [L - 1]: frame f + 1 differs from frame f
    if not moved.any():
        return np.round(agent[:1]).astype(np.int64), None
    start, end = int(np.argmax(moved)), n - 1 - int(np.argmax(moved[::-1]))
    frames = start + np.nonzero(on_cell[start : end + 1])[0]
    if frames[-1] != end:
        raise ValueError(f"trial {t}, frame {end}: field 'agent' stops between cells, at {_cell(agent[end])}")
    cells = np.round(agent[frames]).astype(np.int64)
    new = np.concatenate([[True], np.any(cells[1:] != cells[:-1], axis=1)])
    arrive, leave = frames[new], frames[np.concatenate([new[1:], [True]])]  # first and last frame on each cell
    if len(arrive) < 2:
        raise ValueError(f"trial {t}, frame {end}: field 'agent' moves but never reaches another cell")
    per_cell = int(arrive[1] - leave[0])
    transit = arrive[1:] - leave[:-1]
    if np.any(transit != per_cell):
        i = 1 + int(np.argmax(transit != per_cell))
        raise ValueError(
            f"trial {t}, frame {arrive[i]}: field 'agent' reaches {_cell(cells[new][i])} {transit[i - 1]} frames "
            f"after leaving the previous cell, but its first move took {per_cell}: the agent moves at one speed"
        )
    dwell = leave - arrive
    if np.any(dwell % per_cell):
        i = int(np.argmax(dwell % per_cell != 0))
        raise ValueError(
            f"trial {t}, frame {arrive[i]}: field 'agent' stays on {_cell(cells[new][i])} for {dwell[i] + 1} "
            f"frames; a pause mid-path lasts a multiple of frames_per_cell={per_cell} frames, plus one"
        )
    path = np.round(agent[start : end + 1 : per_cell]).astype(np.int64)
    jumps = np.max(np.abs(np.diff(path, axis=0)), axis=1) > 1
    if jumps.any():
        i = int(np.argmax(jumps))
        raise ValueError(
            f"trial {t}, frame {start + (i + 1) * per_cell}: field 'agent' jumps from {_cell(path[i])} to "
            f"{_cell(path[i + 1])} (it moves to one of the 8 neighbouring cells at a time)"
        )
    return path, (per_cell, start, n - 1 - end)


def _cell(value: np.ndarray) -> str:
    """Returns ``"cell (row, col)"`` with integral coordinates as integers."""
    parts = [str(int(v)) if float(v).is_integer() else f"{float(v):.3f}" for v in value]
    return f"cell ({parts[0]}, {parts[1]})"


def _episode_timing(trials: list[_Trial], timings: list[tuple[int, int, int] | None]) -> tuple[int, int, int]:
    """Returns the episode's ``(frames_per_cell, intro_frames, outro_frames)``, the same in every trial that
    moves (``(1, 0, L - 1)`` if none does); raises ``ValueError`` when trials disagree."""
    moving = [(t, timing) for t, timing in enumerate(timings) if timing is not None]
    if moving:
        ref, timing = moving[0]
    else:
        ref, timing = 0, (1, 0, len(trials[0].agent) - 1)
    for t, other in moving[1:]:
        if other != timing:
            raise ValueError(
                f"trial {t}: (frames_per_cell, intro_frames, outro_frames) = {other}, but trial {ref} has "
                f"{timing}: all trials of an episode share them"
            )
    per_cell, intro, outro = timing
    for t, trial in enumerate(trials):
        if timings[t] is None and len(trial.agent) != intro + 1 + outro:
            raise ValueError(
                f"trial {t}: the agent stands still for {len(trial.agent)} frames, but with the timing {timing} "
                f"of trial {ref} a trial without moves has {intro + 1 + outro}"
            )
    return timing


def _events(trial: _Trial, moves: int, timing: tuple[int, int, int]) -> tuple[int, int]:
    """Returns ``(pickup, unlock)`` of a trial: the path index at which the key starts riding on the agent
    (for good: until it disappears) and the one at which the lock or barrier disappears (``-1``: never)."""
    per_cell, intro, _ = timing

    def index(frame: int) -> int:
        return min(moves, max(0, math.ceil((frame - intro) / per_cell)))

    gone = [
        int(np.argmin(shown)) for shown in (trial.lock_visible, trial.barrier_visible) if shown[0] and not shown.all()
    ]
    unlock = index(min(gone)) if gone else -1
    pickup = -1
    if trial.key_visible[0]:
        end = int(np.argmin(trial.key_visible)) if not trial.key_visible.all() else len(trial.key_visible)
        riding = np.all(np.abs(trial.key[:end] - trial.agent[:end]) <= TOL, axis=1)
        if riding[-1]:
            apart = np.nonzero(~riding)[0]
            pickup = index(int(apart[-1]) + 1 if len(apart) else 0)
    return pickup, unlock


def _parse(trials: Any) -> _Parsed:
    """Parses and validates an episode's JSON structure (without building arrays)."""
    if not isinstance(trials, list) or len(trials) != W.NUM_TRIALS:
        got = f"a list of {len(trials)} trials" if isinstance(trials, list) else _short(trials)
        raise ValueError(f"an episode must be a list of {W.NUM_TRIALS} trials (8 familiarisation, 1 test), got {got}")
    parsed = [_parse_trial(frames, t) for t, frames in enumerate(trials)]
    motions = [_motion(trial.agent, t) for t, trial in enumerate(parsed)]
    timing = _episode_timing(parsed, [timing for _, timing in motions])
    return _Parsed(parsed, [path for path, _ in motions], timing)


# ---------------------------------------------------------------------------------------------------- building

_DTYPES = {
    "walls": bool,
    "barrier": bool,
    "home": np.int8,
    "objects": np.int8,
    "object_visible": bool,
    "object_shape": np.int8,
    "object_color": np.int8,
    "key": np.int8,
    "has_key": bool,
    "lock": np.int8,
    "rotation": np.int8,
    "agent_shape": np.int8,
    "agent_color": np.int8,
    "path": np.int8,
    "moves": np.int32,
    "pickup": np.int32,
    "unlock": np.int32,
    "goal": np.int8,
}
_TIME_FIELDS = ("agent_xy", "key_xy", "key_visible", "lock_visible", "barrier_visible", "action")


def _trial_arrays(trial: _Trial, path: np.ndarray, timing: tuple[int, int, int], max_moves: int, t: int) -> dict:
    """Returns the non-frame fields of one trial (numpy, no trial axis)."""
    moves = len(path) - 1
    if moves > max_moves:
        raise ValueError(f"trial {t}: the agent's path has {moves} moves, more than max_moves={max_moves}")
    pickup, unlock = _events(trial, moves, timing)
    layout = trial.layout
    at_end = np.all(layout["objects"] == path[-1], axis=1) & layout["object_visible"]
    full_path = np.concatenate([path, np.repeat(path[-1:], max_moves - moves, axis=0)])
    return {
        **layout,
        "path": full_path,
        "moves": moves,
        "pickup": pickup,
        "unlock": unlock,
        "goal": int(np.argmax(at_end)) if at_end.any() else -1,
    }


def _build(parsed: list[_Parsed], max_moves: int, num_frames: int | None, names: list[str] | None = None) -> W.Episode:
    """Returns the episodes ``[N, 9, ...]`` of ``parsed`` with their frames recomputed and checked against the
    files' frames (``names`` prefix error messages). Raises ``ValueError`` on any mismatch."""
    names = names or [""] * len(parsed)
    timing = parsed[0].timing
    for p, name in zip(parsed, names):
        if p.timing != timing:
            raise ValueError(
                f"{name}{': ' if name else ''}(frames_per_cell, intro_frames, outro_frames) = {p.timing}, but "
                f"{names[0] or 'the first episode'} has {timing}: episodes read together must share them"
            )
    episodes = [_episode(p, name, max_moves) for p, name in zip(parsed, names)]
    stacked = jax.tree.map(lambda *xs: jnp.asarray(np.stack(xs)), *episodes)
    return _pad_frames(stacked, num_frames)


def _episode(parsed: _Parsed, name: str, max_moves: int) -> W.Episode:
    """Returns one parsed episode ``[9, ...]`` (numpy) with frames recomputed (compiled once per ``max_moves``
    and timing) and checked against the file's frames."""
    with _prefix(name):
        rows = [
            _trial_arrays(tr, path, parsed.timing, max_moves, t)
            for t, (tr, path) in enumerate(zip(parsed.trials, parsed.paths))
        ]
    arrays = {k: np.stack([np.asarray(r[k]) for r in rows]).astype(d) for k, d in _DTYPES.items()}
    n = W.NUM_TRIALS
    episode = W.Episode(
        **arrays,
        agent_xy=np.zeros((n, 1, 2), np.float32),
        key_xy=np.zeros((n, 1, 2), np.float32),
        key_visible=np.zeros((n, 1), bool),
        lock_visible=np.zeros((n, 1), bool),
        barrier_visible=np.zeros((n, 1), bool),
        action=np.full((n, 1), W.STAY, np.int8),
        length=np.ones(n, np.int32),
    )
    episode = jax.device_get(_with_frames(episode, *parsed.timing))
    with _prefix(name):
        _check_frames(parsed, episode)
    return episode


class _prefix:
    """Context manager that prefixes the message of a ``ValueError`` raised inside it with ``name: ``."""

    def __init__(self, name: str):
        self.name = name

    def __enter__(self):
        return self

    def __exit__(self, kind, error, traceback):
        if self.name and kind is ValueError:
            raise ValueError(f"{self.name}: {error}") from error
        return False


def _check_frames(parsed: _Parsed, episode: W.Episode) -> None:
    """Raises ``ValueError`` at the first frame where the file differs from the recomputed ``episode``."""
    per_cell, intro, outro = parsed.timing
    model = f"frames_per_cell={per_cell}, intro_frames={intro}, outro_frames={outro}"
    for t, trial in enumerate(parsed.trials):
        n = len(trial.agent)
        agent, key = episode.agent_xy[t, :n], episode.key_xy[t, :n]
        shown = {
            trial.key_field: (trial.key_visible, episode.key_visible[t, :n]),
            trial.lock_field: (trial.lock_visible, episode.lock_visible[t, :n]),
            "fuse_walls": (trial.barrier_visible, episode.barrier_visible[t, :n]),
        }
        checks = [("agent", np.any(np.abs(agent - trial.agent) > TOL, axis=1), trial.agent, agent)]
        checks += [(field, got != want, got, want) for field, (got, want) in shown.items()]
        off = trial.key_visible & np.any(np.abs(key - trial.key) > TOL, axis=1)
        checks.append((trial.key_field, off, trial.key, key))
        worst = min(((int(np.argmax(bad)), k) for k, (_, bad, _, _) in enumerate(checks) if bad.any()), default=None)
        if worst is not None:
            f, k = worst
            field, _, got, want = checks[k]
            raise ValueError(
                f"trial {t}, frame {f}: field {field!r} does not follow the agent's cell path with {model}: the "
                f"file has {_describe(got[f])}, the path gives {_describe(want[f])}"
            )


def _describe(value: np.ndarray) -> str:
    if np.ndim(value) == 0:
        return "it shown" if value else "it hidden"
    return "it hidden" if np.isnan(value).any() else f"it at {_cell(value)}"


def _pad_frames(episode: W.Episode, num_frames: int | None) -> W.Episode:
    """Returns ``episode`` with ``num_frames`` frames (the last one repeated); raises if it has more."""
    have = episode.num_frames
    if num_frames is None or num_frames == have:
        return episode
    if num_frames < have:
        raise ValueError(f"num_frames={num_frames} is fewer than the {have} frames these episodes need")

    def pad(x: jax.Array, axis: int) -> jax.Array:
        last = jax.lax.slice_in_dim(x, have - 1, have, axis=axis)
        return jnp.concatenate([x, jnp.repeat(last, num_frames - have, axis=axis)], axis=axis)

    return episode.replace(**{k: pad(getattr(episode, k), -2 if k.endswith("_xy") else -1) for k in _TIME_FIELDS})


# ---------------------------------------------------------------------------------------------------- reading


def episode_from_json(trials: Any, max_moves: int = 32, num_frames: int | None = None) -> W.Episode:
    """Returns the ``Episode`` (arrays ``[9, ...]``) of BIB's JSON structure ``trials`` (see the module
    docstring), its paths padded to ``max_moves`` and its frames recomputed by ``world.with_frames`` with the
    timing detected in the file; ``num_frames`` (default: what the timing and ``max_moves`` need) pads the
    frame arrays by repeating the last frame.

    Raises ``ValueError`` naming the trial, frame and field for malformed or missing fields (``size``,
    ``walls``, ``objects``, ``home``, ``agent`` are required; ``fuse_walls``, ``pin``/``key``/``lock`` may be
    absent), unknown shapes, more than 2 objects, entities off the grid, a path longer than ``max_moves``,
    ``num_frames`` too small, or motion a cell path cannot produce.
    """
    episode = _build([_parse(trials)], max_moves, num_frames)
    return jax.tree.map(lambda x: x[0], episode)


def read_json(path: str | Path, **kwargs) -> W.Episode:
    """Returns ``episode_from_json`` of the file at ``path`` (``kwargs``: ``max_moves``, ``num_frames``).
    Raises ``ValueError`` naming the file when it is not valid JSON or not a valid episode."""
    trials = load_trials(path)
    with _prefix(str(path)):
        return episode_from_json(trials, **kwargs)


def load_trials(path: str | Path) -> list:
    """Returns the parsed JSON of ``path`` (not yet validated); ``ValueError`` naming the file if it is not
    valid JSON or not a list of 9 trials."""
    path = Path(path)
    try:
        trials = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: not a valid JSON file ({error})") from error
    if not isinstance(trials, list) or len(trials) != W.NUM_TRIALS:
        got = f"a list of {len(trials)}" if isinstance(trials, list) else type(trials).__name__
        raise ValueError(f"{path}: a BIB episode file holds a list of {W.NUM_TRIALS} trials, got {got}")
    return trials


def read_many(paths: list[str | Path], max_moves: int | None = None, num_frames: int | None = None) -> W.Episode:
    """Returns the episodes of the files ``paths`` stacked ``[N, 9, ...]``, read with one ``max_moves``
    (default: the longest path among them, at least 1) and ``num_frames`` (default: what they need). Raises
    ``ValueError`` naming the file for any invalid file, and when the files' timings differ."""
    if not paths:
        raise ValueError("no episode files to read")
    names = [str(p) for p in paths]
    parsed = []
    for path, name in zip(paths, names):
        trials = load_trials(path)
        with _prefix(name):
            parsed.append(_parse(trials))
    if max_moves is None:
        max_moves = max(1, max(len(path) - 1 for p in parsed for path in p.paths))
    return _build(parsed, max_moves, num_frames, names)


# ---------------------------------------------------------------------------------------------------- canonical


def canonical(episode: W.Episode) -> W.Episode:
    """Returns ``episode`` (any leading axes) with what BIB's files cannot show reset, so that
    ``episode_from_json(episode_to_json(ep), ep.max_moves)`` equals ``canonical(ep)``:

    - objects: the present ones moved to the first slots (in slot order); empty slots get cell ``(0, 0)``,
      shape 0 and colour 0.
    - without a key (``has_key`` False): key and lock cells ``(0, 0)``, rotation 0, ``pickup = -1``.
    - ``pickup = -1`` when the key never rides visibly (``pickup > moves`` or ``pickup >= unlock >= 0``), and
      ``pickup = moves`` when it is -1 but the agent ends on the shown key (the frames are the same).
    - ``unlock = -1`` when nothing shows it (no key and no barrier, or ``unlock > moves``).
    - ``goal``: the present object on the path's last cell, else -1.
    - the path after ``moves`` repeats its last cell.

    Frame arrays and static fields are kept. (An unlock at the very first frame, with ``intro_frames=0`` and
    ``unlock=0``, hides the key, lock and barrier for good and does not survive a round trip.)
    """
    ep = jax.device_get(episode)
    lead = np.shape(ep.moves)
    flat = {k: np.asarray(getattr(ep, k)).reshape(-1, *np.shape(getattr(ep, k))[len(lead) :]) for k in _DTYPES}
    out = {k: v.copy() for k, v in flat.items()}
    for i in range(len(flat["moves"])):
        _canonical_trial(flat, out, i)
    return episode.replace(**{k: jnp.asarray(v.reshape(*lead, *v.shape[1:]), _DTYPES[k]) for k, v in out.items()})


def _canonical_trial(src: dict[str, np.ndarray], out: dict[str, np.ndarray], i: int) -> None:
    """Writes the canonical form of flat trial ``i`` of ``src`` into ``out``."""
    visible = src["object_visible"][i]
    order = [k for k in range(len(visible)) if visible[k]]
    for name in ("objects", "object_visible", "object_shape", "object_color"):
        out[name][i] = 0
        out[name][i, : len(order)] = src[name][i, order]
    moves = int(src["moves"][i])
    path = src["path"][i]
    out["path"][i, moves:] = path[moves]
    has_key, pickup, unlock = bool(src["has_key"][i]), int(src["pickup"][i]), int(src["unlock"][i])
    if unlock > moves or not (has_key or src["barrier"][i].any()):
        unlock = -1
    if not has_key:
        out["key"][i] = out["lock"][i] = out["rotation"][i] = 0
        pickup = -1
    elif pickup > moves or 0 <= unlock <= pickup:
        pickup = -1
    if has_key and pickup < 0 and unlock < 0 and np.array_equal(path[moves], src["key"][i]):
        pickup = moves
    out["pickup"][i], out["unlock"][i] = pickup, unlock
    at_end = np.all(out["objects"][i] == path[moves], axis=1) & out["object_visible"][i]
    out["goal"][i] = int(np.argmax(at_end)) if at_end.any() else -1
