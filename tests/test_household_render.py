"""The household renderer: shape and dtype, determinism, where characters, containers, switches, held objects and
sitting are drawn, batches against single states, the captions and the GIF, and size checks.

One task (a setup_table task in apartment 0) is generated once; frames are 96 px, drawn by one jitted ``render``
and, for a stack of states, by ``render_episode`` (one vmapped compilation), both shared across tests.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from PIL import Image

from jaxsoc.envs.household import classes as C
from jaxsoc.envs.household import tasks as T
from jaxsoc.envs.household import world as W
from jaxsoc.envs.household.render import (
    CHARACTER_RGB,
    ON_RGB,
    PALETTE,
    RING_RGB,
    describe_action,
    legend,
    pixel_coords,
    render,
    render_episode,
    save_episode_gif,
)

SIZE = 96


@pytest.fixture(scope="module")
def state():
    return jax.jit(T.generate)(jax.random.key(0), jnp.int32(0), jnp.array([0, -1], jnp.int32))


@pytest.fixture(scope="module")
def draw():
    """``render`` at ``SIZE``, jitted once for the module; returns numpy frames."""
    jitted = jax.jit(functools.partial(render, size=SIZE))
    return lambda s: np.asarray(jitted(s))


def first(state, name: str) -> int:
    hits = np.flatnonzero(np.asarray(state.nodes.cls) == C.CLASS[name])
    assert hits.size, name
    return int(hits[0])


def set_states(state, node: int, bits: int):
    return state.replace(nodes=state.nodes.replace(states=state.nodes.states.at[node].set(bits)))


def box(state, node: int, pad: int = 0) -> tuple[slice, slice]:
    """Returns the (rows, columns) pixel slices covering ``node``'s footprint, grown by ``pad`` pixels."""
    pos, half = np.asarray(state.nodes.pos[node]), np.asarray(state.nodes.size[node]) / 2
    (r0, c0), (r1, c1) = np.asarray(pixel_coords(state, SIZE, np.stack([pos - half, pos + half])))
    return slice(max(int(r0) - pad, 0), int(np.ceil(r1)) + pad), slice(max(int(c0) - pad, 0), int(np.ceil(c1)) + pad)


def has_colour(image: np.ndarray, rgb) -> np.ndarray:
    return (image == np.asarray(rgb, np.uint8)).all(-1)


def near(state, point, radius: int = 2) -> tuple[slice, slice]:
    r, c = np.asarray(pixel_coords(state, SIZE, point)).astype(int)
    return slice(max(r - radius, 0), r + radius + 1), slice(max(c - radius, 0), c + radius + 1)


def test_shape_dtype_and_default_size(state, draw):
    image = draw(state)
    assert image.shape == (SIZE, SIZE, 3) and image.dtype == np.uint8
    assert jax.eval_shape(render, state).shape == (256, 256, 3)  # default size, traced only
    # the room colours are all on the picture
    for name in C.ROOM_CLASSES:
        assert has_colour(image, PALETTE[C.CLASS[name]]).any(), name


def test_deterministic(state, draw):
    np.testing.assert_array_equal(draw(state), draw(state))


def test_characters_drawn_at_their_positions(state, draw):
    image = draw(state)
    for c, rgb in enumerate(CHARACTER_RGB):
        rows, cols = near(state, state.chars.pos[c])
        assert has_colour(image[rows, cols], rgb).any(), W.AGENTS[c]
        assert has_colour(image, rgb).sum() < 0.05 * SIZE * SIZE  # a small disc, not a flood


def test_sitting_character_gets_a_ring(state, draw):
    sofa = first(state, "sofa")
    chars = state.chars.replace(sitting_on=state.chars.sitting_on.at[1].set(sofa))
    before, after = draw(state), draw(state.replace(chars=chars))
    rows, cols = near(state, state.chars.pos[1], radius=4)
    assert has_colour(after[rows, cols], RING_RGB).sum() > has_colour(before[rows, cols], RING_RGB).sum()


def test_opening_a_container_changes_only_its_pixels(state, draw):
    fridge = first(state, "fridge")
    assert C.PROPERTIES[C.CLASS["fridge"]] & C.CAN_OPEN
    closed, opened = draw(state), draw(set_states(state, fridge, C.OPEN))
    changed = (closed != opened).any(-1)
    rows, cols = box(state, fridge, pad=1)
    inside = np.zeros_like(changed)
    inside[rows, cols] = True
    corners = np.asarray(
        pixel_coords(state, SIZE, state.nodes.pos[fridge] + jnp.array([[-0.5], [0.5]]) * state.nodes.size[fridge])
    )
    footprint = np.prod(corners[1] - corners[0])  # the fridge's area in pixels
    assert changed[inside].sum() > 0.4 * footprint  # a visibly different look
    assert not changed[~inside].any()


def test_switched_on_appliance_is_marked(state, draw):
    tv = first(state, "tv")
    rows, cols = box(state, tv, pad=1)
    assert not has_colour(draw(state)[rows, cols], ON_RGB).any()
    assert has_colour(draw(set_states(state, tv, C.ON))[rows, cols], ON_RGB).any()


def test_held_object_is_drawn_beside_its_holder(state, draw):
    obj = W.OBJECT0  # the first object slot holds a task object
    rgb = PALETTE[int(state.nodes.cls[obj])]
    nodes = state.nodes.replace(relation=state.nodes.relation.at[obj].set(C.HELD))
    held = state.replace(nodes=nodes, chars=state.chars.replace(hands=state.chars.hands.at[0, 0].set(obj)))
    image = draw(held)
    rows, cols = near(state, state.chars.pos[0] + jnp.array([0.55, 0.0]), radius=3)  # right of Alice
    assert has_colour(image[rows, cols], rgb).any()


def test_batch_equals_single_and_episode_captions(state, draw):
    fridge = first(state, "fridge")
    moved = state.replace(chars=state.chars.replace(pos=state.chars.pos.at[0].add(jnp.array([0.8, 0.3]))))
    states = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), state, set_states(state, fridge, C.OPEN), moved)
    apple = W.OBJECT0 + int(np.flatnonzero(np.asarray(state.nodes.cls[W.OBJECT0 :]) > 0)[0])
    actions = np.array(
        [[W.encode_action("walk", fridge), 0], [W.encode_action("grab", apple), W.encode_action("open", fridge)]]
    )
    frames, texts = render_episode(states, actions, size=SIZE)
    assert frames.shape == (3, SIZE, SIZE, 3) and frames.dtype == np.uint8
    for t in range(3):
        np.testing.assert_array_equal(frames[t], draw(jax.tree_util.tree_map(lambda x, t=t: x[t], states)))
    np.testing.assert_array_equal(np.asarray(render(states, SIZE)), frames)  # leading axes, same compilation
    assert len(texts) == 3 and all(text.startswith("goal: on_") for text in texts)
    name = C.CLASS_NAMES[int(state.nodes.cls[apple])]
    assert texts[0].split("\n")[1] == f"alice: walk <fridge> ({fridge})  bob: noop"
    assert texts[1].split("\n")[1] == f"alice: grab <{name}> ({apple})  bob: open <fridge> ({fridge})"
    assert texts[2].split("\n")[1] == "alice: -  bob: -"
    assert describe_action(state, W.encode_action("grab", apple)) == f"grab <{name}> ({apple})"
    assert describe_action(state, -1) == "invalid action (-1)"
    with pytest.raises(ValueError, match="actions must have shape"):
        render_episode(states, actions[:1], size=SIZE)


def test_gif_has_one_captioned_frame_per_state(tmp_path):
    frames = np.zeros((3, 32, 32, 3), np.uint8)
    frames[:, :, :, 0] = np.arange(3)[:, None, None] * 80
    texts = [f"goal: on_plate_kitchentable(12): {t}\nalice: noop  bob: walk <sofa> ({t})" for t in range(3)]
    path = save_episode_gif(frames, texts, tmp_path / "episode.gif", fps=4)
    with Image.open(path) as gif:
        assert gif.n_frames == 3
        assert gif.size[0] == 32 and gif.size[1] > 32  # the caption bands below
    with pytest.raises(ValueError, match="texts"):
        save_episode_gif(frames, texts[:2], tmp_path / "bad.gif")


@pytest.mark.parametrize("size", [0, -8, 64.0, "64", True, None])
def test_bad_size_is_rejected(state, size):
    with pytest.raises(ValueError, match="size must be a positive int"):
        render(state, size)
    with pytest.raises(ValueError, match="size must be a positive int"):
        render_episode(jax.tree_util.tree_map(lambda x: x[None], state), np.zeros((1, 2), int), size=size)


def test_legend_names_every_class_and_character():
    colours = legend()
    assert set(colours) == set(C.CLASS_NAMES[1:]) | set(W.AGENTS)
    assert all(len(rgb) == 3 and all(isinstance(v, int) and 0 <= v <= 255 for v in rgb) for rgb in colours.values())
    rooms = [colours[name] for name in C.ROOM_CLASSES]
    assert len(set(rooms)) == len(rooms)
    objects = [colours[name] for name in C.GRABBABLE_CLASSES]
    assert len(set(objects)) == len(objects) and not set(objects) & set(CHARACTER_RGB)
