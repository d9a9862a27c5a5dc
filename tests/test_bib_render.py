"""BIB's renderer and sprites: pixels of every entity, motion between cells, shapes for any leading axes, jit,
sprite distinctness, and the captioned episode video.

One hand-built episode (``world.blank_trials`` filled in, 4 moves, 2 frames per cell, one still frame before
and after: 11 frames a trial) is rendered once per size by one jitted ``render`` shared by the tests. At 200 px
a cell is 20 px and cell ``(r, c)`` spans pixels ``20 r .. 20 r + 19``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from PIL import Image, ImageSequence

from jaxsoc.envs.bib import sprites
from jaxsoc.envs.bib import world as W
from jaxsoc.envs.bib.render import (
    episode_frames,
    pixel_cells,
    render,
    save_episode_video,
    sprite_patch,
    trial_caption,
)

N = W.NUM_TRIALS
WALL, EMPTY, HOME, BARRIER, KEY, LOCK = (5, 5), (4, 4), (8, 8), (7, 3), (2, 3), (3, 8)
OBJECTS = ((4, 7), (6, 2))
OBJECT_SHAPE, OBJECT_COLOR = (0, 2), (3, 4)
PATH_COLS = (2, 3, 4, 5, 6)  # the agent walks along row 2
ROW = 2
# Frames: t = 0, 1 at (2, 2); t = 2 at (2, 2.5); t = 3 at (2, 3), the key's cell (picked up); t = 7 at (2, 5),
# where the key "unlocks" (barrier, key and lock vanish); t = 9, 10 at (2, 6).
PICKUP_FRAME, UNLOCK_FRAME, T = 3, 7, 11


def make_episode() -> W.Episode:
    """Returns one episode: 9 trials sharing a layout, each with its own agent, key rotation and lock."""
    walls = np.broadcast_to(W.border(), (N, W.GRID, W.GRID)).copy()
    walls[:, WALL[0], WALL[1]] = True
    barrier = np.zeros((N, W.GRID, W.GRID), bool)
    barrier[:, BARRIER[0], BARRIER[1]] = True
    path = np.zeros((N, len(PATH_COLS), 2), np.int8)
    path[:, :, 0], path[:, :, 1] = ROW, PATH_COLS
    visible = np.ones((N, 2), bool)
    visible[1, 1] = False  # trial 1 shows one object only
    tile = lambda value, dtype=jnp.int8: jnp.tile(jnp.asarray(value, dtype), (N,) + (1,) * np.ndim(value))  # noqa: E731
    episode = W.blank_trials(max_moves=len(PATH_COLS) - 1).replace(
        walls=jnp.asarray(walls),
        barrier=jnp.asarray(barrier),
        home=tile(HOME),
        objects=tile(OBJECTS),
        object_visible=jnp.asarray(visible),
        object_shape=tile(OBJECT_SHAPE),
        object_color=tile(OBJECT_COLOR),
        key=tile(KEY),
        has_key=jnp.ones(N, bool),
        lock=tile(LOCK),
        rotation=jnp.arange(N, dtype=jnp.int8) % len(W.ROTATIONS),
        agent_shape=jnp.arange(N, dtype=jnp.int8) % len(W.AGENT_SHAPES),
        agent_color=jnp.arange(N, dtype=jnp.int8) % len(W.PALETTE),
        path=jnp.asarray(path),
        moves=jnp.full(N, len(PATH_COLS) - 1, jnp.int32),
        pickup=jnp.full(N, 1, jnp.int32),
        unlock=jnp.full(N, 3, jnp.int32),
    )
    return W.with_frames(episode, frames_per_cell=2, intro_frames=1, outro_frames=1)


@pytest.fixture(scope="module")
def episode() -> W.Episode:
    return make_episode()


@pytest.fixture(scope="module")
def render_jit():
    return jax.jit(render, static_argnames="size")


@pytest.fixture(scope="module")
def frames200(episode, render_jit) -> np.ndarray:
    return np.asarray(render_jit(episode, size=200))


@pytest.fixture(scope="module")
def frames84(episode, render_jit) -> np.ndarray:
    return np.asarray(render_jit(episode, size=84))


def centre(cell) -> tuple[int, int]:
    """The centre pixel of ``cell`` at 200 px."""
    return 20 * cell[0] + 10, 20 * cell[1] + 10


def cell_alpha(sprite: int, cell, size: int) -> tuple[list[np.ndarray], np.ndarray]:
    """Returns the pixels of ``cell`` (row and column indices, ``size`` px frames) and ``sprite``'s coverage of
    them, ``float32[rows, cols]``, looked up in ``sprite_table`` with numpy."""
    table = sprites.sprite_table(size)
    centres, texels = pixel_cells(size), table.shape[-1]
    pixels = [np.flatnonzero(np.floor(centres) == c) for c in cell]
    index = [np.clip(np.floor((centres[p] - c) * texels).astype(int), 0, texels - 1) for p, c in zip(pixels, cell)]
    return pixels, table[sprite][index[0][:, None], index[1][None, :]]


def solid_pixel(sprite: int, cell, size: int) -> tuple[int, int]:
    """A pixel of ``cell`` fully covered by ``sprite`` drawn there in ``size`` px frames."""
    pixels, alpha = cell_alpha(sprite, cell, size)
    assert alpha.max() == 1.0, f"sprite {sprites.SPRITE_NAMES[sprite]} covers no pixel fully at {size} px"
    i, j = np.unravel_index(alpha.argmax(), alpha.shape)
    return int(pixels[0][i]), int(pixels[1][j])


def rgb(frames: np.ndarray, trial: int, t: int, pixel) -> tuple[int, ...]:
    return tuple(int(v) for v in frames[trial, t, pixel[0], pixel[1]])


WHITE = tuple(W.BACKGROUND_RGB)


# ---------------------------------------------------------------------------------------------------- pixels


def test_medal_object(episode, render_jit):
    """The medal (object shape 10) is drawn in its colour on exactly the pixels of its cell that its sprite covers
    fully."""
    medal = W.OBJECT_SHAPES.index("medal")
    shapes = np.tile(np.array([medal, 0], np.int8), (N, 1))
    frames = np.asarray(render_jit(episode.replace(object_shape=jnp.asarray(shapes)), size=200))
    sprite = int(sprites.OBJECT_SPRITES[medal])
    colour = tuple(int(v) for v in W.PALETTE[OBJECT_COLOR[0]])
    assert rgb(frames, 0, 0, solid_pixel(sprite, OBJECTS[0], 200)) == colour
    pixels, alpha = cell_alpha(sprite, OBJECTS[0], 200)
    drawn = np.all(frames[0, 0][pixels[0][:, None], pixels[1][None, :]] == colour, axis=-1)
    np.testing.assert_array_equal(drawn, alpha == 1.0)


def test_walls_and_empty_cells(frames200):
    assert rgb(frames200, 0, 0, centre(WALL)) == tuple(W.WALL_RGB)
    assert rgb(frames200, 4, 5, centre((0, 0))) == tuple(W.WALL_RGB)  # the border
    assert rgb(frames200, 0, 0, centre(EMPTY)) == WHITE
    assert np.all(frames200[:, :, 70, 90] == 255)  # the centre of the empty cell (3, 4) in every frame


def test_home_and_objects(frames200):
    home = solid_pixel(sprites.HOME, HOME, 200)
    assert rgb(frames200, 0, 0, home) == tuple(W.HOME_RGB)
    assert rgb(frames200, 0, 0, centre(HOME)) == tuple(W.HOME_RGB)
    for k, cell in enumerate(OBJECTS):
        pixel = solid_pixel(int(sprites.OBJECT_SPRITES[OBJECT_SHAPE[k]]), cell, 200)
        colour = tuple(int(v) for v in W.PALETTE[OBJECT_COLOR[k]])
        assert rgb(frames200, 0, 0, pixel) == colour
        assert rgb(frames200, 0, T - 1, pixel) == colour
    hidden = solid_pixel(int(sprites.OBJECT_SPRITES[OBJECT_SHAPE[1]]), OBJECTS[1], 200)
    assert rgb(frames200, 1, 0, hidden) == WHITE  # object_visible False
    assert np.all(frames200[1, :, 120:140, 40:60] == 255)


@pytest.mark.parametrize("size", [84, 200])
def test_agent_on_a_cell(frames84, frames200, size):
    frames = frames84 if size == 84 else frames200
    for trial in range(N):
        sprite = int(sprites.AGENT_SPRITES[trial % len(W.AGENT_SHAPES)])
        colour = tuple(int(v) for v in W.PALETTE[trial])
        assert rgb(frames, trial, 0, solid_pixel(sprite, (ROW, 2), size)) == colour
        assert rgb(frames, trial, T - 1, solid_pixel(sprite, (ROW, 6), size)) == colour
        assert rgb(frames, trial, 5, solid_pixel(sprite, (ROW, 4), size)) == colour  # t = 5: at (2, 4)


def test_agent_between_cells(frames200):
    """At t = 2 the agent is at (2, 2.5): it straddles cells (2, 2) and (2, 3), 10 px right of t = 0."""
    colour = np.asarray(W.PALETTE[0])
    agent = np.all(frames200[0, :, :, :] == colour, axis=-1)  # [T, H, W], trial 0's agent is red
    left, right = agent[2, 40:60, 40:60], agent[2, 40:60, 60:80]
    assert left.any() and right.any()
    assert rgb(frames200, 0, 2, (50, 60)) == tuple(int(v) for v in colour)  # the sprite's centre is on the edge
    assert not agent[2, :, :50].any() and not agent[2, :, 70:].any()
    # The same rows as at t = 0, the columns shifted by exactly 10 px.
    np.testing.assert_array_equal(agent[2, :, 50:70], agent[0, :, 40:60])
    assert not agent[0, :, :40].any() and not agent[0, :, 60:].any()


def test_barrier_and_lock_vanish_at_unlock(frames200):
    for trial in range(N):
        lock = solid_pixel(int(sprites.LOCK[trial % 4]), LOCK, 200)
        assert rgb(frames200, trial, UNLOCK_FRAME - 1, centre(BARRIER)) == tuple(W.BARRIER_RGB)
        assert rgb(frames200, trial, UNLOCK_FRAME - 1, lock) == tuple(W.LOCK_RGB)
        for t in (UNLOCK_FRAME, T - 1):
            assert rgb(frames200, trial, t, centre(BARRIER)) == WHITE
            assert rgb(frames200, trial, t, lock) == WHITE
    # Different rotations draw different locks.
    locks = frames200[:4, 0, 60:80, 160:180]
    assert all(np.any(locks[a] != locks[b]) for a in range(4) for b in range(a))


def test_key_before_and_after_pickup(frames200):
    for trial in range(N):
        key = solid_pixel(int(sprites.KEY[trial % 4]), KEY, 200)
        assert rgb(frames200, trial, 0, key) == tuple(W.KEY_RGB)
        assert rgb(frames200, trial, 5, key) == WHITE  # carried away: the agent is at (2, 4)
    key_rgb = np.asarray(W.KEY_RGB)
    assert not np.all(frames200[:, UNLOCK_FRAME:] == key_rgb, axis=-1).any()  # gone after unlocking


def test_patch_matches_whole_frame_sampling():
    """``sprite_patch`` holds every pixel of the cell at ``p``: equal to sampling the whole frame."""
    size = 84
    table = sprites.sprite_table(size)
    centres = pixel_cells(size).astype(np.float64)
    for position in [(1.0, 1.0), (2.0, 2.5), (3.3, 7.9), (8.0, 8.0), (4.15, 1.05)]:
        start, alpha = sprite_patch(jnp.asarray(table[0]), jnp.asarray(position, jnp.float32), size)
        full = np.zeros((size, size), np.float32)
        full[int(start[0]) : int(start[0]) + alpha.shape[0], int(start[1]) : int(start[1]) + alpha.shape[1]] = alpha
        offset = centres[None, :] - np.asarray(position, np.float32)[:, None]
        inside = (offset >= 0) & (offset < 1)
        index = np.clip(np.floor(offset * table.shape[-1]).astype(int), 0, table.shape[-1] - 1)
        expected = table[0][index[0][:, None], index[1][None, :]] * (inside[0][:, None] & inside[1][None, :])
        np.testing.assert_allclose(full, expected, atol=1e-6)


# ---------------------------------------------------------------------------------------------------- shapes


def test_shapes_and_dtype(episode, frames84, frames200, render_jit):
    assert frames84.shape == (N, T, 84, 84, 3) and frames84.dtype == np.uint8
    assert frames200.shape == (N, T, 200, 200, 3) and frames200.dtype == np.uint8
    pair = jax.tree_util.tree_map(lambda x: jnp.stack([x, x]), episode)
    for size in (84, 200):
        out = jax.eval_shape(lambda e, size=size: render(e, size), pair)
        assert out.shape == (2, N, T, size, size, 3) and out.dtype == jnp.uint8
    np.testing.assert_array_equal(np.asarray(render_jit(pair, size=84)), np.stack([frames84, frames84]))


@pytest.mark.bitexact
def test_jit_matches_eager(episode, frames84):
    np.testing.assert_array_equal(np.asarray(render(episode, 84)), frames84)


@pytest.mark.parametrize("size", [0, -84, 84.0, True, "84", None])
def test_bad_size(episode, size):
    with pytest.raises(ValueError, match="size must be a positive int"):
        render(episode, size)
    with pytest.raises(ValueError, match="size must be a positive int"):
        sprites.sprite_table(size)


@pytest.mark.parametrize("size", [84, 200])
def test_sprites_are_distinct(size):
    """Every pair of the 23 sprites (3 agents, 11 objects with the medal, home, key and lock in 4 rotations),
    drawn in one cell, differs by several pixels of coverage; each sprite fills a good part of its cell, inside a
    margin."""
    masks = np.stack([cell_alpha(s, (4, 4), size)[1] for s in range(sprites.NUM_SPRITES)])
    assert len(masks) == sprites.NUM_SPRITES == len(sprites.SPRITE_NAMES) == 23
    assert len(W.OBJECT_SHAPES) == 11 and W.OBJECT_SHAPES[10] == "medal"
    assert sprites.SPRITE_NAMES[int(sprites.OBJECT_SPRITES[10])] == "medal"
    assert sprites.HOME == 14 and sprites.KEY.tolist() == [15, 16, 17, 18] and sprites.LOCK.tolist() == [19, 20, 21, 22]
    cell = (size / W.GRID) ** 2
    difference = np.abs(masks[:, None] - masks[None]).sum(axis=(2, 3))
    np.fill_diagonal(difference, np.inf)
    assert difference.min() >= 0.06 * cell, difference.min()
    fill = masks.sum(axis=(1, 2)) / cell
    assert fill.min() > 0.15 and fill.max() < 0.8, fill
    full = np.asarray(sprites.sprite_table(size))  # nothing reaches a pixel on the cell's edge
    assert full[:, [0, -1]].max() == 0 and full[:, :, [0, -1]].max() == 0


# ---------------------------------------------------------------------------------------------------- videos


def test_save_episode_video_gif(episode, tmp_path):
    lengths = np.asarray(episode.length)
    fps = 50  # 20 ms a frame: GIF durations are whole centiseconds
    path = save_episode_video(episode, tmp_path / "bib" / "episode.gif", size=84, fps=fps)
    assert path.exists()
    with Image.open(path) as gif:
        durations = [frame.info["duration"] for frame in ImageSequence.Iterator(gif)]
        assert gif.size[0] == 84 and gif.size[1] > 84  # a caption band under each frame
    # pillow merges identical consecutive frames into one longer frame, so count time, not images.
    assert sum(durations) == lengths.sum() * 1000 // fps
    frames = episode_frames(episode, size=84)
    assert frames.shape[0] == lengths.sum() and frames.shape[1:] == (gif.size[1], 84, 3)
    assert trial_caption(0, N) == "trial 1/9 (familiarisation)" and trial_caption(8, N) == "trial 9/9 (test)"
    band = frames[:, 84:]
    assert (band < 128).any() and np.array_equal(band[0], band[T - 1])  # text, the same within a trial
    assert not np.array_equal(band[0], band[-1])  # trial 1 vs trial 9
    two = episode_frames(episode, size=84, trials=[8, 0])
    np.testing.assert_array_equal(two[:T, :84], frames[-T:, :84])


def test_save_episode_video_refuses_pairs_and_bad_arguments(episode, tmp_path):
    pair = jax.tree_util.tree_map(lambda x: jnp.stack([x, x]), episode)
    with pytest.raises(ValueError, match=r"one episode.*index it first"):
        save_episode_video(pair, tmp_path / "pair.gif")
    with pytest.raises(ValueError, match="size must be a positive int"):
        save_episode_video(episode, tmp_path / "bad.gif", size=0)
    with pytest.raises(ValueError, match="unknown video extension"):
        save_episode_video(episode, tmp_path / "episode.avi")
    with pytest.raises(ValueError, match="trials"):
        save_episode_video(episode, tmp_path / "episode.gif", trials=[9])
    assert not list(tmp_path.iterdir())
