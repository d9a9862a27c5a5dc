"""RGB frames of BIB episodes in JAX, and video export.

BIB's frames show the 10x10 grid from above on a white background; ``size x size`` pixel frames (BIB's own are
200 px, 20 px per cell; the baselines' 84 px have 8.4 px per cell). Draw order: background, home, walls,
barrier, lock, objects, key, agent.

A pixel ``(i, j)`` sees the continuous cell coordinate ``u = (i + 0.5) * 10 / size`` (row; likewise the
column). An entity drawn as a sprite at position ``p`` (a cell, or the agent's and key's continuous
``(row, col)`` mid-motion) covers the pixels with ``0 <= u - p < 1``, whose coverage is looked up in
``sprites.sprite_table(size)`` at offset ``u - p``; the table is filtered over a pixel's footprint, so edges
are anti-aliased at any size. Walls and the barrier fill whole cells; their coverage is the exact area of each
pixel inside them (``cell_overlap``), so cell edges that fall inside pixels (84 px) blend too. Colours are
blended by coverage in ``float32`` and rounded to ``uint8``.

For speed each trial's static picture (background, home, walls, objects, and the barrier and the lock each
shown or hidden: 4 variants) is drawn once; each frame then copies its variant and blends the key and the agent
into it, each only over the ``K x K`` pixel window that can hold its cell (``patch_pixels``: 10 px at 84 px,
21 at 200) rather than the whole frame. ``render`` is a pure function of the episode's arrays (no host
callbacks, no loops over frames): jit it with ``size`` static.
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.core.render import VIDEO_SUFFIXES, caption, save_video
from jaxsoc.envs.bib import sprites
from jaxsoc.envs.bib.sprites import check_size
from jaxsoc.envs.bib.world import (
    BACKGROUND_RGB,
    BARRIER_RGB,
    GRID,
    HOME_RGB,
    KEY_RGB,
    LOCK_RGB,
    PALETTE,
    WALL_RGB,
    Episode,
)

# The Episode fields a trial's frames are drawn from.
TRIAL_FIELDS = (
    *("walls", "barrier", "home", "objects", "object_visible", "object_shape", "object_color", "lock", "rotation"),
    *("agent_shape", "agent_color", "agent_xy", "key_xy", "key_visible", "lock_visible", "barrier_visible"),
)
# Static-picture variants, indexed by 2 * barrier_visible + lock_visible.
VARIANT_BARRIER = np.array([0.0, 0.0, 1.0, 1.0], np.float32)
VARIANT_LOCK = np.array([0.0, 1.0, 0.0, 1.0], np.float32)

# ---------------------------------------------------------------------------------------------------- geometry


def pixel_cells(size: int) -> np.ndarray:
    """Returns ``float32[size]``: the continuous cell coordinate ``(i + 0.5) * 10 / size`` of each pixel
    centre along a frame side."""
    return ((np.arange(size) + 0.5) * GRID / size).astype(np.float32)


def cell_overlap(size: int) -> np.ndarray:
    """Returns ``float32[size, 10]``: the fraction of pixel ``i``'s extent along a frame side inside cell ``c``
    (rows sum to 1; one-hot when ``size`` is a multiple of 10)."""
    edges = np.arange(size + 1) * GRID / size
    low, high = edges[:-1, None], edges[1:, None]
    cells = np.arange(GRID)[None, :]
    overlap = np.clip(np.minimum(high, cells + 1) - np.maximum(low, cells), 0.0, None)
    return (overlap * size / GRID).astype(np.float32)


def patch_pixels(size: int) -> int:
    """Returns ``K``, the side of the pixel window that holds every pixel centre of one cell (with a pixel to
    spare), wherever the cell lies."""
    return min(size, math.ceil(size / GRID) + 1)


def sprite_patch(texture: jax.Array, position: jax.Array, size: int) -> tuple[jax.Array, jax.Array]:
    """Returns ``(start, alpha)``: the top-left pixel ``int32[2]`` of a ``K x K`` window (``patch_pixels``)
    holding the cell whose top-left corner is at ``position`` (``float[2]``, (row, col) in cell units;
    integers put it exactly on a cell), and ``alpha``, ``float32[K, K]``, the coverage of the sprite
    ``texture`` (``float32[Q, Q]``, a row of ``sprite_table(size)``) at those pixels, zero outside the cell."""
    window, texels = patch_pixels(size), texture.shape[-1]
    position = position.astype(jnp.float32)
    start = jnp.clip(jnp.ceil(position * (size / GRID) - 0.5).astype(jnp.int32), 0, size - window)
    centres = jnp.asarray(pixel_cells(size))
    offset = jnp.stack([jax.lax.dynamic_slice(centres, (start[a],), (window,)) for a in (0, 1)]) - position[:, None]
    inside = (offset >= 0) & (offset < 1)
    index = jnp.clip(jnp.floor(offset * texels).astype(jnp.int32), 0, texels - 1)
    alpha = jnp.where(inside[0][:, None] & inside[1][None, :], texture[index[0][:, None], index[1][None, :]], 0.0)
    return start, alpha


def blend(image: jax.Array, alpha: jax.Array, rgb) -> jax.Array:
    """Returns ``image`` (``float32[..., H, W, 3]``, 0..255) painted with colour ``rgb`` (``[3]``) at
    coverage ``alpha`` (``float32[..., H, W]``); same shape as ``image``."""
    rgb = jnp.asarray(rgb, jnp.float32)
    return image + alpha[..., None] * (rgb - image)


def to_uint8(image: jax.Array) -> jax.Array:
    """Returns ``image`` (float, 0..255) rounded and clipped to ``uint8``, same shape."""
    return jnp.round(jnp.clip(image, 0.0, 255.0)).astype(jnp.uint8)


def paint(image: jax.Array, texture: jax.Array, position: jax.Array, rgb, size: int, opacity=1.0) -> jax.Array:
    """Returns ``image`` (``uint8[size, size, 3]``) with the sprite ``texture`` (``float32[Q, Q]``) drawn in
    colour ``rgb`` over the cell at ``position`` (see ``sprite_patch``), its coverage scaled by ``opacity``
    (0 hides it); only the sprite's ``K x K`` window is blended. Same shape and dtype."""
    start, alpha = sprite_patch(texture, position, size)
    corner = (start[0], start[1], 0)
    window = jax.lax.dynamic_slice(image, corner, (*alpha.shape, 3)).astype(jnp.float32)
    return jax.lax.dynamic_update_slice(image, to_uint8(blend(window, alpha * opacity, rgb)), corner)


def paint_cells(image: jax.Array, grid: jax.Array, rgb, size: int, opacity=1.0) -> jax.Array:
    """Returns ``image`` (``uint8[size, size, 3]``) with the True cells of ``grid`` (``bool[10, 10]``) filled
    with colour ``rgb``, each pixel blended by its area inside them (``cell_overlap``) times ``opacity``."""
    overlap = jnp.asarray(cell_overlap(size))
    alpha = overlap @ grid.astype(jnp.float32) @ overlap.T
    return to_uint8(blend(image.astype(jnp.float32), alpha * opacity, rgb))


# ---------------------------------------------------------------------------------------------------- frames


def static_layers(trial: Episode, table: jax.Array, size: int) -> jax.Array:
    """Returns ``uint8[4, size, size, 3]``: one trial's unchanging picture (``trial`` holds one trial's fields,
    no trial axis; ``table`` is ``sprite_table(size)``), with the barrier and the lock hidden or shown:
    variant ``2 * barrier + lock``."""
    image = jnp.broadcast_to(jnp.asarray(BACKGROUND_RGB, jnp.uint8), (size, size, 3))
    image = paint(image, table[sprites.HOME], trial.home, HOME_RGB, size)
    image = paint_cells(image, trial.walls, WALL_RGB, size)

    def variant(barrier_shown, lock_shown):
        out = paint_cells(image, trial.barrier, BARRIER_RGB, size, barrier_shown)
        lock = table[jnp.asarray(sprites.LOCK)[trial.rotation]]
        out = paint(out, lock, trial.lock, LOCK_RGB, size, lock_shown)
        for k in range(trial.objects.shape[0]):
            texture = table[jnp.asarray(sprites.OBJECT_SPRITES)[trial.object_shape[k]]]
            rgb = jnp.asarray(PALETTE)[trial.object_color[k]]
            out = paint(out, texture, trial.objects[k], rgb, size, trial.object_visible[k])
        return out

    return jax.vmap(variant)(jnp.asarray(VARIANT_BARRIER), jnp.asarray(VARIANT_LOCK))


def render_trial_frames(trial: Episode, size: int) -> jax.Array:
    """Returns ``uint8[T, size, size, 3]``: every frame of one trial (``trial`` holds one trial's fields with
    no trial axis; its frame arrays from ``world.with_frames``)."""
    table = jnp.asarray(sprites.sprite_table(size))
    layers = static_layers(trial, table, size)
    key = table[jnp.asarray(sprites.KEY)[trial.rotation]]
    agent = table[jnp.asarray(sprites.AGENT_SPRITES)[trial.agent_shape]]
    agent_rgb = jnp.asarray(PALETTE)[trial.agent_color]
    variant = 2 * trial.barrier_visible.astype(jnp.int32) + trial.lock_visible.astype(jnp.int32)

    def frame(variant, key_xy, key_visible, agent_xy):
        image = paint(layers[variant], key, key_xy, KEY_RGB, size, key_visible)
        return paint(image, agent, agent_xy, agent_rgb, size)

    return jax.vmap(frame)(variant, trial.key_xy, trial.key_visible, trial.agent_xy)


def render(episode: Episode, size: int = 84) -> jax.Array:
    """Renders every frame of every trial.

    Args:
        episode: an ``Episode`` with frames (``world.with_frames``), leading axes ``[..., 9]``: ``[9]`` for
            one episode, ``[2, 9]`` for an evaluation pair, ``[B, 9]`` for a batch.
        size: the frame side in pixels (static under ``jit``), e.g. 84 (the baselines') or 200 (BIB's).

    Returns:
        ``uint8[..., 9, T, size, size, 3]`` RGB frames, ``T = episode.num_frames``; frames past a trial's
        ``length`` repeat its last frame.

    Raises:
        ValueError: unless ``size`` is a positive int.
    """
    size = check_size(size)
    lead = episode.length.shape
    flat = {f: jnp.reshape(getattr(episode, f), (-1, *getattr(episode, f).shape[len(lead) :])) for f in TRIAL_FIELDS}
    frames = jax.vmap(lambda trial: render_trial_frames(episode.replace(**trial), size))(flat)
    return frames.reshape(*lead, *frames.shape[1:])


@functools.partial(jax.jit, static_argnames="size")
def _render_jit(episode: Episode, size: int) -> jax.Array:
    return render(episode, size)


# ---------------------------------------------------------------------------------------------------- videos


def trial_caption(trial: int, num_trials: int) -> str:
    """Returns the caption of trial ``trial`` (0-based), e.g. ``"trial 1/9 (familiarisation)"``; the last
    trial is the test trial."""
    kind = "test" if trial == num_trials - 1 else "familiarisation"
    return f"trial {trial + 1}/{num_trials} ({kind})"


def _check_one_episode(episode: Episode) -> int:
    """Returns the number of trials of a single episode; raises ``ValueError`` for a pair or a batch."""
    lead = tuple(episode.length.shape)
    if len(lead) != 1:
        raise ValueError(
            f"expected one episode (leading axes [9]), got leading axes {list(lead)} (a pair or a batch): "
            "index it first, e.g. jax.tree_util.tree_map(lambda x: x[0], episodes)"
        )
    return lead[0]


def _check_trials(trials: Sequence[int] | None, num_trials: int) -> list[int]:
    if trials is None:
        return list(range(num_trials))
    picked = list(trials)
    bad = [t for t in picked if isinstance(t, bool) or not isinstance(t, numbers.Integral) or not 0 <= t < num_trials]
    if not picked or bad:
        raise ValueError(f"trials must be a non-empty list of trial indices in [0, {num_trials}), got {trials!r}")
    return [int(t) for t in picked]


def episode_frames(episode: Episode, size: int = 200, trials: Sequence[int] | None = None) -> np.ndarray:
    """Returns one episode's trials as one captioned video, ``uint8[F, size + band, size, 3]`` (numpy):
    each trial's first ``length`` frames, trials in order, a caption band (``"trial k/9 (familiarisation)"``
    or ``"trial 9/9 (test)"``) under every frame; ``F`` is the sum of the chosen trials' lengths.

    Args:
        episode: one episode with frames, leading axes ``[9]`` (index a pair or batch first).
        size: the frame side in pixels.
        trials: the 0-based trials to show (default all).

    Raises:
        ValueError: for a pair or batch of episodes, a bad ``size`` or bad ``trials``.
    """
    size = check_size(size)
    trials = _check_trials(trials, _check_one_episode(episode))
    num_trials = episode.length.shape[0]
    frames = np.asarray(_render_jit(episode, size))  # [9, T, size, size, 3]
    lengths = np.asarray(episode.length)
    firsts = caption(frames[trials, 0], [trial_caption(t, num_trials) for t in trials])  # one band height for all
    parts = []
    for row, t in enumerate(trials):
        body = frames[t, : lengths[t]]
        band = np.broadcast_to(firsts[row, size:], (len(body), *firsts[row, size:].shape))
        parts.append(np.concatenate([body, band], axis=1))
    return np.concatenate(parts)


def save_episode_video(
    episode: Episode, path: str | Path, size: int = 200, fps: float = 30, trials: Sequence[int] | None = None
) -> Path:
    """Writes one episode's trials (``episode_frames``) as a captioned GIF or MP4, chosen by ``path``'s
    extension (MP4 needs the optional ``imageio-ffmpeg``: ``pip install jaxsoc[video]``).

    Returns:
        The ``Path`` written (parent folders are created).

    Raises:
        ValueError: for a pair or batch of episodes (index one first), a bad ``size``, ``trials`` or ``fps``,
            or an extension other than ``.gif`` / ``.mp4``.
        RuntimeError: for an MP4 without ``imageio-ffmpeg``.
    """
    suffix = Path(path).suffix.lower()
    if suffix not in VIDEO_SUFFIXES:
        raise ValueError(
            f"unknown video extension {suffix or '(none)'!r} in {str(path)!r}: use one of {VIDEO_SUFFIXES}"
        )
    return save_video(episode_frames(episode, size, trials), path, fps)
