"""The machinery of BIB's JSON reader (``bibjson`` holds the format, the writer and the reading entry points):
each frame parsed and validated into a trial's layout and positions, the agent's cell path and the episode's timing
recovered from its motion, the ``Episode`` built and its frames recomputed by ``world.with_frames`` and compared with
the file's (``bibjson``'s module docstring says what is read and what is refused)."""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.bib import world as W

FRAME_SIZE = (W.FRAME_PX, W.FRAME_PX)
TOL = 1e-3  # cell units (0.02 px): positions this close are equal, a position this close to a cell is on it
REQUIRED = ("size", "walls", "objects", "home", "agent")  # fields every frame must have
_KEY_RE = re.compile(r"triangle(\d+)")
_LOCK_RE = re.compile(r"triangle_slot(\d+)")

_with_frames = jax.jit(W.with_frames, static_argnums=(1, 2, 3))


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
