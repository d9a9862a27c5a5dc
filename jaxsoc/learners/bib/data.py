"""What BIB's learned observers see: background episodes held on the device, their frames and action labels.

The baselines of the BIB paper (Gandhi et al. 2021, appendix C; ``bib-baselines``) read 84x84 frames of each
trial sub-sampled every 10 frames after dropping the 30 still frames at the start and the 83 at the end, i.e.
one frame per cell the agent passes through, and label the frame of step ``k`` with the agent's pixel
displacement over the next 10 frames, scaled into ``[-1, 1]`` (2 px per frame, halved, averaged). Here an
episode is kept as ``world.Episode`` arrays with one frame per cell (``LEARNER_PARAMS``): frame ``k`` of a
trial is the agent on cell ``path[k]``, and the label of step ``k`` is ``path[k + 1] - path[k]`` as ``(dx,
dy)`` with ``y`` up (BIB's pixel axes), each in ``{-1, 0, 1}``: exactly BIB's labels, without decoding video.
Frames are rendered on the device from the arrays when a batch needs them, so a training set is a few hundred
bytes per step instead of a folder of MP4 files.

``background(seed=..., episodes=...)`` generates the background set as ``jaxsoc bib data`` writes it (same
keys, same 80/20 split by index within each task) without touching the disk; ``background_from_files(root)``
reads a written dataset, or BIB's own files, through ``bibjson``.
"""

from __future__ import annotations

import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.bib import dataset
from jaxsoc.envs.bib import world as W
from jaxsoc.envs.bib.render import TRIAL_FIELDS, cell_overlap, render_trial_frames
from jaxsoc.envs.bib.tasks import BACKGROUND

#: one frame per cell and no still frames: frame ``k`` of a trial is step ``k`` of its path
LEARNER_PARAMS = W.BIBParams.compact()
FRAME_SIZE = 84  # the baselines' frames
FAMILIARISATION = W.NUM_TRIALS - 1  # trials 0..7 give the context, trial 8 is the test
#: BIB's background task sizes (the paper's 10k / 10k / 4k / 4k)
PAPER_BACKGROUND = {task: 1000 * weight for task, weight in BACKGROUND.items()}


# ---------------------------------------------------------------------------------------------------- episodes


def compact(episodes: W.Episode, max_moves: int = LEARNER_PARAMS.max_moves) -> W.Episode:
    """Returns ``episodes`` (any leading axes, any timing) with paths cut or padded to ``max_moves`` moves and
    one frame per cell (``LEARNER_PARAMS``' timing). A longer path keeps its first ``max_moves`` moves (its
    key pickup and unlock indices are dropped when they fall beyond them)."""
    path = jnp.asarray(episodes.path)
    have = path.shape[-2] - 1
    if have > max_moves:
        path = path[..., : max_moves + 1, :]
    elif have < max_moves:
        last = jnp.repeat(path[..., -1:, :], max_moves - have, axis=-2)
        path = jnp.concatenate([path, last], axis=-2)
    moves = jnp.minimum(jnp.asarray(episodes.moves), max_moves)
    beyond = lambda i: jnp.where(jnp.asarray(i) > moves, -1, i).astype(jnp.int32)  # noqa: E731
    cut = episodes.replace(path=path, moves=moves, pickup=beyond(episodes.pickup), unlock=beyond(episodes.unlock))
    return W.with_frames(cut, LEARNER_PARAMS.frames_per_cell, LEARNER_PARAMS.intro_frames, LEARNER_PARAMS.outro_frames)


def _split_indices(count: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices of a task's train and validation episodes: the first 80% and the rest (``dataset``'s split)."""
    cut = count * dataset.TRAIN_FRACTION[0] // dataset.TRAIN_FRACTION[1]
    return np.arange(cut), np.arange(cut, count)


def _concat(parts: list[W.Episode]) -> W.Episode:
    return jax.tree.map(lambda *xs: jnp.concatenate(xs), *parts)


def background(seed: int = 0, episodes: dict[str, int] | int | None = None, chunk: int = 1000):
    """Generates the background set on the device: ``(train, validation)`` ``Episode`` s ``[N, 9, ...]``.

    ``episodes`` is ``{task: count}``, a total shared in the paper's proportions (``dataset.background_shares``),
    or ``None`` for the paper's 28,000. Episode ``i`` of a task is the one ``jaxsoc bib data --seed SEED``
    writes as ``<task>_{i:06d}``; the first 80% of each task's indices train, the rest validate, as BIB's
    baselines split by sorted file name. Generated ``chunk`` episodes at a time, with ``LEARNER_PARAMS``.

    Raises:
        ValueError: an unknown task or a count below 5 (no validation episode).
    """
    if episodes is None:
        episodes = PAPER_BACKGROUND
    elif isinstance(episodes, int):
        episodes = dataset.background_shares(episodes)
    splits: tuple[list, list] = ([], [])
    for task, count in episodes.items():
        if task not in BACKGROUND:
            raise ValueError(f"unknown BIB background task {task!r}; one of {', '.join(BACKGROUND)}")
        if count < 5:
            raise ValueError(f"{task}: {count} episodes leave none for validation (80/20 split); use at least 5")
        size = min(chunk, count)  # one compiled generator per task: the last chunk is padded
        parts = [
            take(_generate(task, np.minimum(np.arange(start, start + size), count - 1), seed), slice(0, count - start))
            for start in range(0, count, size)
        ]
        every = _concat(parts)
        for part, indices in zip(splits, _split_indices(count)):
            part.append(take(every, indices))
    return _concat(splits[0]), _concat(splits[1])


def _generate(task: str, indices: np.ndarray, seed: int) -> W.Episode:
    return dataset.generate_episodes("background", task, indices, seed=seed, params=LEARNER_PARAMS)


def take(episodes: W.Episode, rows) -> W.Episode:
    """Returns the ``rows`` (an index array or slice of the leading axis) of every array of ``episodes``."""
    return jax.tree.map(lambda x: x[rows], episodes)


def background_from_files(root: str | Path) -> tuple[W.Episode, W.Episode]:
    """Reads a background dataset written by ``jaxsoc bib data`` (or BIB's own files) under ``root``:
    ``(train, validation)`` ``Episode`` s ``[N, 9, ...]`` in ``LEARNER_PARAMS``' timing (``dataset.list_episodes``
    gives the split). Raises ``ValueError`` when there is no such dataset or a file is invalid."""
    parts = []
    for subset in ("train", "validation"):
        paths = dataset.list_episodes(root, "background", subset)
        if not paths:
            raise ValueError(f"no {subset} episodes under {Path(root) / 'background'}")
        parts.append(compact(dataset.load_episodes(paths)))
    return parts[0], parts[1]


def evaluation_pairs(seed: int, pairs: int, types: tuple[str, ...], data: str | Path | None = None) -> dict:
    """Returns ``{type: Episode [N, 2, 9, ...]}`` in ``LEARNER_PARAMS``' timing: ``pairs`` generated pairs per
    type (``seed``), or the files of ``data/evaluation/<type>/``."""
    from jaxsoc.envs.bib import tasks

    if data is not None:
        return {name: compact(dataset.load_pairs(data, name)) for name in types}
    return {
        name: tasks.generate_batch("evaluation", name, jax.random.key(seed), pairs, LEARNER_PARAMS) for name in types
    }


def num_episodes(episodes: W.Episode) -> int:
    """Returns ``N`` of ``episodes`` ``[N, 9, ...]``."""
    return int(np.shape(episodes.moves)[0])


# ---------------------------------------------------------------------------------------------------- labels


def step_actions(episodes: W.Episode) -> jax.Array:
    """Returns ``float32[..., 9, M, 2]``: the action label of every step, ``(dx, dy)`` with ``y`` up, each in
    ``{-1, 0, 1}`` (zero after the last move); ``M = max_moves``. Needs ``LEARNER_PARAMS``' timing."""
    path = jnp.asarray(episodes.path).astype(jnp.float32)
    delta = path[..., 1:, :] - path[..., :-1, :]  # (d_row, d_col)
    return jnp.stack([delta[..., 1], -delta[..., 0]], axis=-1)


def step_valid(episodes: W.Episode) -> jax.Array:
    """Returns ``bool[..., 9, M]``: which steps are real moves (``k < moves``)."""
    steps = jnp.arange(episodes.max_moves)
    return steps < jnp.asarray(episodes.moves)[..., None]


# ---------------------------------------------------------------------------------------------------- frames


def _frame_fields(trial: W.Episode, frames: jax.Array) -> W.Episode:
    """One trial's drawing fields with its frame arrays taken at ``frames`` (``int[K]``)."""
    fields = {name: getattr(trial, name) for name in TRIAL_FIELDS}
    for name in ("agent_xy", "key_xy", "key_visible", "lock_visible", "barrier_visible"):
        fields[name] = fields[name][frames]
    return trial.replace(**fields)


def trial_frames(episodes: W.Episode, trials: tuple[int, ...], steps: int, size: int = FRAME_SIZE) -> jax.Array:
    """Returns ``uint8[B, len(trials), steps, size, size, 3]``: frames ``0 .. steps - 1`` of the given trials
    of ``episodes`` ``[B, 9, ...]`` (``LEARNER_PARAMS``' timing; frames past a trial's end repeat its last)."""
    frames = jnp.minimum(jnp.arange(steps), episodes.num_frames - 1)

    def one(episode, trial):
        picked = jax.tree.map(lambda x: x[trial], episode)
        return render_trial_frames(_frame_fields(picked, frames), size)

    return jax.vmap(lambda e: jax.vmap(lambda t: one(e, t))(jnp.asarray(trials)))(episodes)


@functools.partial(jax.jit, static_argnames="size")  # one program, not hundreds of op-by-op ones
def frames_at(episodes: W.Episode, trial: jax.Array, step: jax.Array, size: int = FRAME_SIZE) -> jax.Array:
    """Returns ``uint8[B, K, size, size, 3]``: frame ``step[b, k]`` of trial ``trial[b, k]`` of episode ``b``
    (``episodes`` ``[B, 9, ...]``, ``trial`` and ``step`` ``int[B, K]``)."""

    def one(episode, t, s):
        picked = jax.tree.map(lambda x: x[t], episode)
        return render_trial_frames(_frame_fields(picked, s[None]), size)[0]

    return jax.vmap(lambda e, ts, ss: jax.vmap(lambda t, s: one(e, t, s))(ts, ss))(episodes, trial, step)


def motion_frames(trials: W.Episode, frame: jax.Array, frames_per_cell: int, size: int = FRAME_SIZE) -> jax.Array:
    """Returns ``uint8[B, size, size, 3]``: frame ``frame[b]`` of trial ``b`` of ``trials`` (one trial each, leading
    axis ``[B]``) at ``frames_per_cell`` frames per cell, the agent gliding between cells as in BIB's videos
    (no still frames); ``frame`` is clipped to the trial's last frame."""
    full = W.with_frames(trials, frames_per_cell, 0, 0)
    frame = jnp.minimum(frame, full.moves * frames_per_cell)

    def one(trial, f):
        return render_trial_frames(_frame_fields(trial, f[None]), size)[0]

    return jax.vmap(one)(full, frame)


def agent_step_weights(episodes: W.Episode, steps: int, size: int = FRAME_SIZE) -> jax.Array:
    """Returns ``float32[B, steps, size, size]``: for each test-trial step ``k`` of ``episodes`` (``[B, 9, ...]``,
    ``LEARNER_PARAMS``' timing: frame ``k`` shows path cell ``k``), each pixel's area inside the cells the agent
    occupies at steps ``k`` and ``k + 1`` (1 inside, 0 outside, fractions on the edges; the larger where both
    overlap). Past the path's end the agent stays on its last cell."""
    overlap = jnp.asarray(cell_overlap(size)).T  # [10, size]: each cell's share of each pixel row / column
    last = episodes.max_moves
    path = jnp.asarray(episodes.path)[:, W.TEST].astype(jnp.int32)  # [B, M + 1, 2]
    here, there = path[:, jnp.minimum(jnp.arange(steps), last)], path[:, jnp.minimum(jnp.arange(steps) + 1, last)]

    def cell_pixels(cell):  # [..., 2] -> [..., size, size]
        return overlap[cell[..., 0]][..., :, None] * overlap[cell[..., 1]][..., None, :]

    return jnp.maximum(cell_pixels(here), cell_pixels(there))


def random_step(key: jax.Array, valid: jax.Array) -> jax.Array:
    """Returns ``int32[...]``: a uniformly drawn index of a True entry of ``valid`` (``bool[..., M]``) along
    its last axis, or 0 where none is True."""
    noise = jax.random.uniform(key, valid.shape)
    return jnp.argmax(jnp.where(valid, noise, -1.0), axis=-1).astype(jnp.int32)


# ---------------------------------------------------------------------------------------------------- symbols

_CELLS = W.GRID * W.GRID
_SHAPES, _COLORS, _AGENT_SHAPES = len(W.OBJECT_SHAPES), len(W.PALETTE), len(W.AGENT_SHAPES)
#: width of ``symbolic_states``' vectors
SYMBOLIC_WIDTH = 3 * _CELLS + 2 + 2 * (_CELLS + 3 + _SHAPES + _COLORS) + 6 + _AGENT_SHAPES + _COLORS


def _symbols(trial: W.Episode, step: jax.Array) -> jax.Array:
    """One trial's (arrays ``[...]`` without the trial axis) state at ``step`` as ``float32[SYMBOLIC_WIDTH]``."""
    side = trial.walls.shape[-1]
    scale = 1.0 / (side - 1)
    cell = trial.path[step].astype(jnp.int32)
    one_hot = lambda i, n: jax.nn.one_hot(i, n, dtype=jnp.float32)  # noqa: E731
    parts = [
        one_hot(cell[0] * side + cell[1], _CELLS),
        cell.astype(jnp.float32) * scale,
        trial.walls.reshape(-1).astype(jnp.float32),
        (trial.barrier & trial.barrier_visible[step]).reshape(-1).astype(jnp.float32),
    ]
    for slot in range(2):
        where, seen = trial.objects[slot].astype(jnp.int32), trial.object_visible[slot].astype(jnp.float32)
        parts += [
            one_hot(where[0] * side + where[1], _CELLS) * seen,
            where.astype(jnp.float32) * scale * seen,
            seen[None],
            one_hot(trial.object_shape[slot], _SHAPES) * seen,
            one_hot(trial.object_color[slot], _COLORS) * seen,
        ]
    key_seen, lock_seen = trial.key_visible[step].astype(jnp.float32), trial.lock_visible[step].astype(jnp.float32)
    parts += [
        trial.key_xy[step] * scale * key_seen,
        key_seen[None],
        trial.lock.astype(jnp.float32) * scale * lock_seen,
        lock_seen[None],
        one_hot(trial.agent_shape, _AGENT_SHAPES),
        one_hot(trial.agent_color, _COLORS),
    ]
    return jnp.concatenate(parts)


def symbolic_states(episodes: W.Episode, trial: jax.Array, step: jax.Array) -> jax.Array:
    """Returns ``float32[B, K, SYMBOLIC_WIDTH]``: the symbolic state at step ``step[b, k]`` of trial ``trial[b, k]``
    of episode ``b`` (``episodes`` ``[B, 9, ...]`` in ``LEARNER_PARAMS``' timing, ``trial``, ``step`` ``int[B, K]``),
    what a frame shows as positions instead of pixels: the agent's cell (one-hot and ``(row, col)`` scaled to
    ``[0, 1]``), the walls and the visible barrier cells (``10 x 10`` maps), each object's cell (one-hot and
    scaled), presence, shape and colour (one-hot, zeros when absent), the key's and lock's positions and
    visibility, and the agent's shape and colour. For the symbolic diagnostic of the BC observers."""

    def one(episode, t, s):
        return _symbols(jax.tree.map(lambda x: x[t], episode), s)

    return jax.vmap(lambda e, ts, ss: jax.vmap(lambda t, s: one(e, t, s))(ts, ss))(episodes, trial, step)


def agent_cells(episodes: W.Episode, trial: jax.Array, step: jax.Array) -> jax.Array:
    """Returns ``int32[B, K]``: the agent's cell index ``row * 10 + col`` at step ``step[b, k]`` of trial
    ``trial[b, k]`` (``episodes`` ``[B, 9, ...]``; the label of the auxiliary head and of the probes)."""
    path = jnp.asarray(episodes.path).astype(jnp.int32)  # [B, 9, M + 1, 2]
    rows = jnp.arange(path.shape[0])[:, None]
    cell = path[rows, trial, step]
    return cell[..., 0] * episodes.walls.shape[-1] + cell[..., 1]


def object_cells(episodes: W.Episode, trial: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Returns ``(int32[B, K, 2], bool[B, K, 2])``: the cell index ``row * 10 + col`` of each of the two goal
    objects in trial ``trial[b, k]`` (``episodes`` ``[B, 9, ...]``), and whether it is in that trial."""
    rows = jnp.arange(trial.shape[0])[:, None]
    cell = jnp.asarray(episodes.objects).astype(jnp.int32)[rows, trial]  # [B, K, 2, 2]
    return cell[..., 0] * episodes.walls.shape[-1] + cell[..., 1], episodes.object_visible[rows, trial]


def rotate_trials(arrays: dict, query: jax.Array) -> dict:
    """Returns ``arrays`` (``prepare`` d: leaves ``[B, 9, ...]``) with trial ``query[b]`` of each episode moved to
    the test position (index 8) and the other eight, in order, before it: a background trial as the query with
    the rest as its context."""
    order = jnp.arange(W.NUM_TRIALS - 1)
    order = jnp.concatenate([jnp.where(order[None] < query[:, None], order[None], order[None] + 1), query[:, None]], 1)

    def gather(x):
        index = order.reshape(*order.shape, *([1] * (x.ndim - 2)))
        return jnp.take_along_axis(x, index, axis=1)

    return jax.tree.map(gather, arrays)
