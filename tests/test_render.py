"""The JAX renderer (against minigrid 3.2.0's own drawing) and the frame export helpers.

Measured against minigrid: ``render_state`` equals ``env.unwrapped.render()`` and ``render_view`` equals
``get_pov_render`` pixel for pixel (mean absolute difference 0.0, no pixel differs) on every imported state
below, and every sprite equals ``Grid.render_tile`` (checked here at tile size 4; offline also at 1-13, 16,
25 and 32). The tolerances asserted are therefore exact.

Compiling anything that contains ``process_vis`` costs about a second on CPU, so the tests share a few
compiled shapes: single states live in 19x19 worlds, and batches of imported minigrid states are padded
with walls to 19x19 (cells outside a world read as walls, so padding changes nothing that is drawn; the
image is cropped back) and rendered in fixed chunks by one jitted, vmapped function.
"""

from __future__ import annotations

import sys

import gymnasium as gym
import imageio.v2 as imageio
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from minigrid.core.grid import Grid
from minigrid.core.world_object import Ball, Box, Door, Floor, Goal, Key, Lava, Wall
from minigrid_reference import make_reference

import jaxsoc
from jaxsoc.core.render import check_frames, save_gif, save_mp4, save_video, tile_frames
from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld.compat import from_minigrid
from jaxsoc.envs.gridworld.observation import observe, view_coordinates
from jaxsoc.envs.gridworld.rendering import render_state, render_view, sprites, visible_cells
from jaxsoc.envs.gridworld.state import GridParams, make_state

TILE = 8
WORLD = 19  # the shared world size (FourRooms' own)
CHUNK = 16  # states per batched call


def _diff_stats(ours: np.ndarray, theirs: np.ndarray) -> tuple[float, float]:
    """Returns (mean absolute difference over all values, fraction of pixels differing at all)."""
    diff = np.abs(ours.astype(np.int32) - theirs.astype(np.int32))
    return float(diff.mean()), float((diff.max(axis=-1) > 0).mean())


def _tile(image: np.ndarray, x: int, y: int, size: int = TILE) -> np.ndarray:
    return image[y * size : (y + 1) * size, x * size : (x + 1) * size]


def _everything(state, params):
    view_x, view_y = view_coordinates(state.agent_pos, state.agent_dir, params.view_size)
    return {
        "full": render_state(state, params, tile_size=TILE),
        "view": render_view(state, params, tile_size=TILE),
        "visible": visible_cells(state, params),
        "image": observe(state, params)["image"],
        "view_x": view_x,
        "view_y": view_y,
    }


_batched = jax.jit(jax.vmap(_everything, in_axes=(0, None)))


def render_batch(states: list, params: GridParams) -> dict[str, np.ndarray]:
    """Renders a list of states of one world (``params``) through ``_batched``: grids padded with walls to
    ``WORLD x WORLD``, ``CHUNK`` states per call; returns numpy arrays cropped back to the world."""
    height, width = params.height, params.width
    big = params.replace(height=WORLD, width=WORLD)
    padded = []
    for state in states:
        grid = np.broadcast_to(C.WALL_CELL, (WORLD, WORLD, C.NUM_CHANNELS)).copy()
        grid[:height, :width] = np.asarray(state.grid)
        padded.append(state.replace(grid=jnp.asarray(grid)))
    padded += padded[-1:] * (-len(padded) % CHUNK)
    chunks = []
    for start in range(0, len(padded), CHUNK):
        batch = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *padded[start : start + CHUNK])
        chunks.append(jax.tree_util.tree_map(np.asarray, _batched(batch, big)))
    out = {key: np.concatenate([c[key] for c in chunks])[: len(states)] for key in chunks[0]}
    out["full"] = out["full"][:, : height * TILE, : width * TILE]
    out["visible"] = out["visible"][:, :height, :width]
    return out


@pytest.fixture(scope="module")
def room():
    """``(state, params)`` of a hand-made 19x19 world: outer walls, an inner wall at ``x = 6`` (a closed
    door at (6, 4)), the agent at (3, 3) facing east, so cells at ``x >= 7`` are hidden behind the wall."""
    grid = np.broadcast_to(C.EMPTY_CELL, (WORLD, WORLD, C.NUM_CHANNELS)).copy()
    grid[[0, -1], :] = grid[:, [0, -1]] = C.WALL_CELL
    grid[:, 6] = C.WALL_CELL
    grid[4, 6] = C.cell(C.DOOR, C.BLUE, C.CLOSED)
    grid[10, 3] = C.cell(C.BALL, C.PURPLE)
    params = GridParams(max_steps=100, height=WORLD, width=WORLD, view_size=7, see_through_walls=False)
    return make_state(grid, (3, 3), 0), params


# ---------------------------------------------------------------------------------------------------------
# Against minigrid
# ---------------------------------------------------------------------------------------------------------

MINIGRID_CASES = [
    ("MiniGrid-DoorKey-8x8-v0", {}),
    ("MiniGrid-FourRooms-v0", {}),
    ("MiniGrid-BlockedUnlockPickup-v0", {}),
    ("MiniGrid-LavaGapS7-v0", {}),
    ("Playground", {}),  # every object kind, open/closed/locked doors, floor, a box holding a key
    ("MiniGrid-DoorKey-8x8-v0", {"see_through_walls": True}),
]


def _minigrid_frames(name: str, kwargs: dict, seeds=(0, 1, 2), steps: int = 15):
    """Returns ``(states, params, full renders, pov renders)`` of minigrid envs after each random step
    (biased to interaction, so keys get carried and doors opened) of ``seeds`` episodes, at ``TILE``."""
    states, fulls, povs = [], [], []
    for seed in seeds:
        env = make_reference(name) if not kwargs else gym.make(name, **kwargs)
        u = env.unwrapped
        u.render_mode, u.tile_size = "rgb_array", TILE
        env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        for _ in range(steps):
            action = int(rng.choice(6, p=[0.15, 0.15, 0.3, 0.15, 0.1, 0.15]))
            _, _, terminated, truncated, _ = env.step(action)
            state, params = from_minigrid(env)
            states.append(state)
            fulls.append(u.render())
            povs.append(u.get_pov_render(TILE))
            if terminated or truncated:
                break
    return states, params, np.stack(fulls), np.stack(povs)


@pytest.mark.parametrize("name, kwargs", MINIGRID_CASES, ids=[f"{n}{'-stw' if k else ''}" for n, k in MINIGRID_CASES])
def test_render_matches_minigrid(name, kwargs):
    states, params, theirs_full, theirs_view = _minigrid_frames(name, kwargs)
    assert params.see_through_walls == bool(kwargs) and params.height <= WORLD and params.width <= WORLD
    ours = render_batch(states, params)
    for key, theirs in (("full", theirs_full), ("view", theirs_view)):
        assert ours[key].shape == theirs.shape and ours[key].dtype == np.uint8
        mean_abs, frac = _diff_stats(ours[key], theirs)
        assert mean_abs == 0.0 and frac == 0.0, f"{key}: mean |diff| {mean_abs:.4f}, {frac:.4%} of pixels differ"


def test_minigrid_default_tile_size():
    """One state at minigrid's default 32-pixel tiles, through ``env.render()`` as ``gymnasium.make`` sets it."""
    env = gym.make("MiniGrid-Empty-5x5-v0", render_mode="rgb_array")
    env.reset(seed=3)
    env.step(1)
    state, params = from_minigrid(env)
    theirs = env.unwrapped.render()
    ours = np.asarray(render_state(state, params))
    assert ours.shape == theirs.shape == (160, 160, 3)
    assert _diff_stats(ours, theirs) == (0.0, 0.0)


def _minigrid_objects():
    """Yields ``((type, colour, state), minigrid object)`` for every look there is."""
    yield (C.EMPTY, 0, 0), None
    yield (C.LAVA, C.RED, 0), Lava()
    for ci, colour in enumerate(C.COLOR_NAMES):
        goal = Goal()
        goal.color = colour
        yield (C.GOAL, ci, 0), goal
        for kind, cls in ((C.WALL, Wall), (C.FLOOR, Floor), (C.KEY, Key), (C.BALL, Ball), (C.BOX, Box)):
            yield (kind, ci, 0), cls(colour)
        yield (C.DOOR, ci, C.OPEN), Door(colour, is_open=True)
        yield (C.DOOR, ci, C.CLOSED), Door(colour)
        yield (C.DOOR, ci, C.LOCKED), Door(colour, is_locked=True)


def test_every_sprite_matches_minigrid_tiles():
    size = 4  # minigrid draws tiles pixel by pixel in Python: a small size keeps this fast
    table = sprites(size)
    checked = 0
    for (kind, colour, state), obj in _minigrid_objects():
        look = table.look[kind, colour, state]
        for lit in (0, 1):  # minigrid's tiles are float; its grid image truncates them to uint8
            theirs = Grid.render_tile(obj, agent_dir=None, highlight=bool(lit), tile_size=size).astype(np.uint8)
            np.testing.assert_array_equal(table.tiles[look * 2 + lit], theirs, err_msg=f"{(kind, colour, state)}")
            for direction in range(4):
                theirs = Grid.render_tile(obj, agent_dir=direction, highlight=bool(lit), tile_size=size)
                ours = table.agent_tiles[(look * 4 + direction) * 2 + lit]
                np.testing.assert_array_equal(ours, theirs.astype(np.uint8), err_msg=f"{(kind, colour, state)}")
                checked += 1
    assert checked == (2 + 9 * C.NUM_COLORS) * 8


# ---------------------------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------------------------


def test_shape_dtype_jit_and_env_render(room):
    state, params = room
    image = render_state(state, params, tile_size=TILE)
    assert image.shape == (WORLD * TILE, WORLD * TILE, 3) and image.dtype == jnp.uint8
    view = render_view(state, params, tile_size=TILE)
    assert view.shape == (7 * TILE, 7 * TILE, 3) and view.dtype == jnp.uint8
    env, env_params = jaxsoc.make("MiniGrid-FourRooms-v0")
    assert env_params == params  # so env.render shares the compiled function
    np.testing.assert_array_equal(np.asarray(env.render(state, params, tile_size=TILE)), np.asarray(image))
    with pytest.raises(ValueError, match="tile_size"):
        sprites(0)


def test_vmap_over_states_matches_one_by_one(room):
    _, params = room
    states = []
    for seed in range(3):
        env = gym.make("MiniGrid-FourRooms-v0")
        env.reset(seed=seed)
        states.append(from_minigrid(env)[0])
    ours = render_batch(states, params)  # vmapped
    assert ours["full"].shape == (3, WORLD * TILE, WORLD * TILE, 3)
    for b, state in enumerate(states):
        np.testing.assert_array_equal(ours["full"][b], np.asarray(render_state(state, params, tile_size=TILE)))
        np.testing.assert_array_equal(ours["view"][b], np.asarray(render_view(state, params, tile_size=TILE)))
    assert len({f.tobytes() for f in ours["full"]}) == 3  # the three levels differ


def test_agent_triangle_is_in_its_tile_and_turns(room):
    state, params = room
    red_masks = []
    for direction in range(4):
        image = np.asarray(render_state(state.replace(agent_dir=jnp.int32(direction)), params, tile_size=TILE))
        red = (image[..., 0] == 255) & (image[..., 1] < 128)  # the (highlighted) agent red
        ys, xs = np.nonzero(red)
        assert len(xs) > TILE  # a solid triangle, not a speck
        assert xs.min() >= 3 * TILE and xs.max() < 4 * TILE and ys.min() >= 3 * TILE and ys.max() < 4 * TILE
        red_masks.append(_tile(red, 3, 3))
    east = red_masks[0]
    columns = east.sum(axis=0)[east.any(axis=0)]
    assert columns[0] > columns[-1]  # wide base on the left, tip on the right: it points east
    for direction in range(4):  # each turn right rotates the picture a quarter turn clockwise
        np.testing.assert_array_equal(red_masks[direction], np.rot90(east, -direction))


def test_visible_cells_are_highlighted(room):
    state, params = room
    image = np.asarray(render_state(state, params, tile_size=TILE))
    seen = render_batch([state], params)["visible"][0]
    # two empty cells: in front of the agent, and behind the inner wall (in the view window but hidden)
    assert seen[3, 5] and not seen[3, 7]
    lit, dark = _tile(image, 5, 3), _tile(image, 7, 3)
    assert not np.array_equal(lit, dark)
    assert (lit[1:, 1:] == 76).all() and (dark[1:, 1:] == 0).all()  # black blended 30% towards white
    assert (_tile(image, 6, 2) == 146).all() and (_tile(image, 6, 12) == 100).all()  # a seen and an unseen wall
    table = sprites(TILE)
    door_look = table.look[C.DOOR, C.BLUE, C.CLOSED]
    assert seen[4, 6] and np.array_equal(_tile(image, 6, 4), table.tiles[door_look * 2 + 1])  # a lit door
    ball = _tile(image, 3, 10)
    assert not seen[10, 3] and tuple(ball[TILE // 2, TILE // 2]) == tuple(C.COLOR_RGB[C.PURPLE])  # not lit
    # see-through walls: the whole in-bounds window is lit
    seen_all = render_batch([state], params.replace(see_through_walls=True))["visible"][0]
    assert seen_all[0:7, 3:10].all() and seen_all.sum() == 7 * 7


def test_visible_cells_are_the_view_cells_the_observation_shows():
    """``visible_cells`` against a reference scattered over ``view_coordinates``: a view cell is seen when
    the observation shows it (anything but ``UNSEEN``; the agent's own cell always)."""
    states = []
    for seed in range(4):
        env = gym.make("MiniGrid-FourRooms-v0")
        env.reset(seed=seed)
        for action in np.random.default_rng(seed).integers(0, 3, 20):
            env.step(int(action))
            states.append(from_minigrid(env)[0])
    params = from_minigrid(env)[1]
    out = render_batch(states, params)
    size = params.view_size
    for b in range(len(states)):
        seen = out["image"][b][..., 0] != C.UNSEEN
        seen[size // 2, size - 1] = True
        x, y = out["view_x"][b], out["view_y"][b]
        keep = seen & (x >= 0) & (x < params.width) & (y >= 0) & (y < params.height)
        reference = np.zeros((params.height, params.width), bool)
        reference[y[keep], x[keep]] = True
        np.testing.assert_array_equal(out["visible"][b], reference)


def test_view_shows_the_carried_object_and_hides_unseen_cells(room):
    state, params = room
    state = state.replace(agent_dir=jnp.int32(3))  # facing north: the outer wall is 3 cells ahead
    empty_handed = np.asarray(render_view(state, params, tile_size=TILE))
    holding = state.replace(carrying=jnp.asarray(C.cell(C.KEY, C.YELLOW)))
    carrying_key = np.asarray(render_view(holding, params, tile_size=TILE))
    # only the agent's tile (bottom centre) changes, and it now shows a yellow key
    ys, xs = np.nonzero(np.any(empty_handed != carrying_key, axis=-1))
    assert ys.min() >= 6 * TILE and xs.min() >= 3 * TILE and xs.max() < 4 * TILE
    agent_tile = _tile(carrying_key, 3, 6)
    assert ((agent_tile[..., 0] > 200) & (agent_tile[..., 1] > 200) & (agent_tile[..., 2] < 120)).any()
    # the rows behind the wall are unseen in the observation: drawn empty (black, grid lines) and unlit
    image = render_batch([state], params)["image"][0]
    assert image[3, 3, 0] == C.WALL and image[3, 0, 0] == C.UNSEEN
    assert (_tile(empty_handed, 3, 3) == 146).all() and _tile(empty_handed, 3, 0)[1:, 1:].max() == 0


# ---------------------------------------------------------------------------------------------------------
# Frame export
# ---------------------------------------------------------------------------------------------------------


def test_gif_round_trip(tmp_path, room):
    state, params = room
    frames = np.stack(
        [np.asarray(render_state(state.replace(agent_dir=jnp.int32(d)), params, tile_size=TILE)) for d in range(4)]
    )
    path = save_video(frames, tmp_path / "sub" / "clip.gif", fps=5)
    assert path.exists() and path.parent.name == "sub"
    back = np.stack(imageio.mimread(path))[..., :3]
    assert back.shape == frames.shape
    assert _diff_stats(back, frames)[0] < 1.0  # pillow's palette is close to lossless for these frames
    assert save_gif(list(frames[:2]), tmp_path / "two.gif").exists()  # a list of frames works too


def test_mp4_without_ffmpeg_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)  # import fails as if not installed
    frames = np.zeros((2, 8, 8, 3), np.uint8)
    with pytest.raises(RuntimeError, match=r"pip install jaxsoc\[video\]"):
        save_video(frames, tmp_path / "clip.mp4")
    with pytest.raises(RuntimeError, match="imageio-ffmpeg"):
        save_mp4(frames, tmp_path / "clip.mp4")


def test_mp4_round_trip(tmp_path):
    pytest.importorskip("imageio_ffmpeg")
    frames = np.random.default_rng(0).integers(0, 255, (3, 15, 21, 3), dtype=np.uint8)
    path = save_video(frames, tmp_path / "clip.mp4", fps=4)
    back = imageio.mimread(path)
    assert len(back) == 3 and back[0].shape[:2] == (16, 22)  # padded to even sizes


@pytest.mark.parametrize(
    "frames, match",
    [
        (np.zeros((2, 4, 4, 3), np.float32), "uint8"),
        (np.zeros((4, 4, 3), np.uint8), "single frame"),
        (np.zeros((2, 4, 4, 4), np.uint8), r"\[T, h, w, 3\]"),
        (np.zeros((2, 4, 4), np.uint8), r"\[T, h, w, 3\]"),
        (np.zeros((0, 4, 4, 3), np.uint8), "T, h, w >= 1"),
        ([], "empty"),
    ],
)
def test_bad_frames_are_rejected(tmp_path, frames, match):
    with pytest.raises(ValueError, match=match):
        check_frames(frames)
    with pytest.raises(ValueError, match=match):
        save_video(frames, tmp_path / "clip.gif")
    assert not (tmp_path / "clip.gif").exists()


def test_bad_extension_and_fps(tmp_path):
    frames = np.zeros((2, 4, 4, 3), np.uint8)
    for name in ("clip.avi", "clip.png", "clip"):
        with pytest.raises(ValueError, match="extension"):
            save_video(frames, tmp_path / name)
    with pytest.raises(ValueError, match="fps"):
        save_gif(frames, tmp_path / "clip.gif", fps=0)


def test_tile_frames_layout():
    n, h, w = 5, 3, 4
    frames = np.stack([np.full((h, w, 3), 10 * (k + 1), np.uint8) for k in range(n)])
    grid = tile_frames(frames, columns=3, gap=1, gap_value=255)
    assert grid.shape == (2 * (h + 1) - 1, 3 * (w + 1) - 1, 3) and grid.dtype == np.uint8
    for k in range(n):
        r, c = divmod(k, 3)
        assert (grid[r * (h + 1) : r * (h + 1) + h, c * (w + 1) : c * (w + 1) + w] == 10 * (k + 1)).all()
    assert (grid[h, :] == 255).all() and (grid[:, w] == 255).all()  # gaps
    assert (grid[h + 1 :, 2 * (w + 1) :] == 255).all()  # the empty sixth slot
    # leading axes (time) are kept; the default is a square-ish layout
    video = tile_frames(np.stack([frames, frames]), gap=0)
    assert video.shape == (2, 2 * h, 3 * w, 3)
    np.testing.assert_array_equal(video[1, :h, :w], frames[0])
    with pytest.raises(ValueError, match="uint8"):
        tile_frames(frames.astype(np.float32))
    with pytest.raises(ValueError, match="columns"):
        tile_frames(frames, columns=0)
