"""The JAX renderer against minigrid's own ``render()``, and the frame export helpers."""

from __future__ import annotations

import imageio.v2 as imageio
import jax
import numpy as np
import pytest
from minigrid_reference import make_reference

import jaxsoc
from jaxsoc.core.render import save_video, tile_frames
from jaxsoc.envs.gridworld.compat import from_minigrid
from jaxsoc.envs.gridworld.rendering import render_state, render_view


@pytest.fixture(scope="module")
def render_fn():
    return jax.jit(render_state, static_argnums=(1, 2))


@pytest.mark.parametrize(
    "name", ["MiniGrid-DoorKey-8x8-v0", "MiniGrid-BlockedUnlockPickup-v0", "MiniGrid-FourRooms-v0"]
)
def test_matches_minigrid_render(render_fn, name):
    for seed in range(2):
        import gymnasium as gym

        ref = gym.make(name, render_mode="rgb_array")
        ref.reset(seed=seed)
        for action in (2, 2, 1, 2, 3, 0):
            ref.step(action)
        theirs = ref.render()
        state, params = from_minigrid(ref)
        ours = np.asarray(render_fn(state, params, 32))
        assert ours.shape == theirs.shape and ours.dtype == np.uint8
        diff = np.abs(ours.astype(int) - theirs.astype(int)).max(axis=-1)
        # measured: mean absolute difference < 0.3, under 0.2% of pixels differ by more than 16 (antialiasing)
        assert diff.mean() < 1.0, diff.mean()
        assert (diff > 16).mean() < 0.01, (diff > 16).mean()


def test_agent_is_drawn_in_its_tile_and_turns():
    env, params = jaxsoc.make("MiniGrid-Empty-5x5-v0")
    _, state = env.reset(jax.random.key(0), params)
    images = [np.asarray(env.render(state.replace(agent_dir=d), params, tile_size=16)) for d in range(4)]
    red = [(img[..., 0] > 200) & (img[..., 1] < 80) for img in images]
    ys, xs = np.nonzero(red[0])
    assert xs.min() >= 16 and xs.max() < 32 and ys.min() >= 16 and ys.max() < 32  # tile of (1, 1)
    assert len({r.tobytes() for r in red}) == 4  # four distinct orientations
    assert red[0].sum() == red[2].sum()


def test_view_render_and_vmap():
    env, params = jaxsoc.make("MiniGrid-DoorKey-5x5-v0")
    keys = jax.random.split(jax.random.key(0), 3)
    obs, states = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
    frames = jax.vmap(lambda s: env.render(s, params, tile_size=8))(states)
    assert frames.shape == (3, 40, 40, 3) and frames.dtype == np.uint8
    view = np.asarray(render_view(obs["image"][0], tile_size=8))
    assert view.shape == (56, 56, 3)
    unseen = np.asarray(obs["image"][0])[..., 0] == 0
    if unseen.any():  # unseen cells are darker than seen (highlighted) empty cells
        i, j = np.argwhere(unseen)[0]
        assert view[j * 8 + 4, i * 8 + 4].sum() < 100


def test_video_export_round_trip(tmp_path):
    frames = np.random.default_rng(0).integers(0, 255, (5, 12, 20, 3), dtype=np.uint8)
    path = save_video(frames, tmp_path / "clip.gif", fps=5)
    back = imageio.mimread(path)
    assert len(back) == 5 and back[0].shape[:2] == (12, 20)
    grid = tile_frames(np.stack([frames] * 3, axis=1), columns=2)
    assert grid.shape == (5, 2 * 12 + 2, 2 * 20 + 2, 3)
    with pytest.raises(ValueError, match="extension"):
        save_video(frames, tmp_path / "clip.avi")
    with pytest.raises(ValueError, match="uint8"):
        save_video(frames.astype(np.float32), tmp_path / "clip.gif")


def test_custom_grid_with_every_object_renders(render_fn):
    ref = make_reference("Playground")
    ref.reset(seed=0)
    state, params = from_minigrid(ref)
    image = np.asarray(render_fn(state, params, 16))
    assert image.shape == (9 * 16, 9 * 16, 3)
