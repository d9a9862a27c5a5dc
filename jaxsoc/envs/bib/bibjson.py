"""BIB's JSON episode files: writing an ``Episode`` in BIB's format, as its public readers document it, and reading
one back. The reader is tested on files written here and on one built frame by frame from the format's description
(``tests/test_bib_json_documented.py``), never on an official file (none was available).
The reader's parsing, motion recovery and frame checks are in ``bibjson_read``; this module is the format, the
writer, the reading entry points and ``canonical``.

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

import json
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.bib import world as W
from jaxsoc.envs.bib.bibjson_read import _DTYPES, FRAME_SIZE, _build, _parse, _prefix, color_index

__all__ = [
    "FRAME_SIZE",
    "canonical",
    "color_index",
    "episode_from_json",
    "episode_to_json",
    "load_trials",
    "read_json",
    "read_many",
    "write_json",
]

RADIUS = W.CELL_PX // 2  # the ``size`` written for every entity
HOME_IMAGE = "home_shape"


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
