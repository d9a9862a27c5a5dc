"""CHAIC's top-down renderer and its depth/semantic ray casting, on a hand-made world.

The world (``make_state``): two rooms side by side, ``x`` in [-8, 0] and [0, 8] by ``z`` in [-4, 4], split by a
wall at ``x = 0`` with a door gap at ``z`` in [-0.5, 0.5]; a low table in room 0 (an apple, a target of the
goal, on it), a high shelf in room 1, the goal place at (4, -2); a bowl, a broken vase and a bread on the floor;
the main agent at (-3, 0) facing +x (through the door), the helper at (3, 0) facing -x, the child inactive.

Frames are ``SIZE`` px high (``SIZE * 2`` wide), drawn by one jitted ``render`` per ``fov`` setting and one
jitted vmap, shared across tests (module-scoped fixtures).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.envs.chaic import raycast as RC
from jaxsoc.envs.chaic import render as R
from jaxsoc.envs.chaic.state import (
    MAX_DOORS,
    MAX_FURNITURE,
    MAX_OBJECTS,
    MAX_ROOMS,
    MAX_WALLS,
    NUM_AGENTS,
    Agents,
    Objects,
    Scene,
    State,
)

SIZE = 128
APPLE, BOWL, VASE, BREAD = 0, 1, 2, 3  # object slots
TABLE, SHELF = 0, 1  # furniture slots
DIVIDER_LOW, DIVIDER_HIGH = 4, 5  # wall slots of the wall at x = 0 (below and above the door)


def make_state(
    agent_pos=((-3.0, 0.0), (3.0, 0.0), (6.0, -3.0)),
    heading=(0, 12, 0),
    active=(True, True, False),
    objects=(("apple", (-5.0, 2.0)), ("bowl", (-2.0, -2.0)), ("vase", (2.0, 2.5)), ("bread", (-6.0, -3.0))),
) -> State:
    """Returns the two-room world of the module docstring (numpy built, as jnp arrays)."""
    walls = np.zeros((MAX_WALLS, 4), np.float32)
    walls[:6] = [
        (-8, -4, 8, -4),
        (-8, 4, 8, 4),
        (-8, -4, -8, 4),
        (8, -4, 8, 4),
        (0, -4, 0, -0.5),
        (0, 0.5, 0, 4),
    ]
    rooms = np.zeros((MAX_ROOMS, 4), np.float32)
    rooms[:2] = [(-8, -4, 0, 4), (0, -4, 8, 4)]
    doors = np.zeros((MAX_DOORS, 2), np.float32)
    door_rooms = np.full((MAX_DOORS, 2), -1, np.int8)
    door_rooms[0] = (0, 1)
    furniture = np.zeros((MAX_FURNITURE, 5), np.float32)
    furniture[TABLE] = (-5.0, 2.0, 1.4, 0.8, 0.75)
    furniture[SHELF] = (5.0, 3.0, 0.9, 0.4, 1.8)
    furniture_cls = np.zeros(MAX_FURNITURE, np.int8)
    furniture_cls[[TABLE, SHELF]] = (1, 2)
    scene = Scene(
        walls=walls,
        wall_valid=np.arange(MAX_WALLS) < 6,
        rooms=rooms,
        room_valid=np.arange(MAX_ROOMS) < 2,
        doors=doors,
        door_rooms=door_rooms,
        door_valid=np.arange(MAX_DOORS) < 1,
        furniture=furniture,
        furniture_cls=furniture_cls,
        goal_pos=np.array([4.0, -2.0], np.float32),
        goal_height=np.float32(0.5),
        goal_extent=np.float32(1.6),
        plan=np.int8(0),
        layout=np.int8(0),
        outdoor=np.bool_(False),
    )
    cls = np.zeros(MAX_OBJECTS, np.int8)
    pos = np.zeros((MAX_OBJECTS, 2), np.float32)
    for i, (name, xz) in enumerate(objects):
        cls[i], pos[i] = K.CLASS[name], xz
    objs = Objects(
        cls=cls,
        pos=pos,
        height=K.CLASS_HEIGHT[cls],
        size=K.CLASS_SIZE[cls],
        mass=K.CLASS_MASS[cls],
        holder=np.full(MAX_OBJECTS, -1, np.int8),
        container=np.full(MAX_OBJECTS, -1, np.int16),
        delivered=np.zeros(MAX_OBJECTS, bool),
        delivered_by=np.full(MAX_OBJECTS, -1, np.int8),
        broken=np.arange(MAX_OBJECTS) == VASE,
    )
    agents = Agents(
        pos=np.array(agent_pos, np.float32),
        heading=np.array(heading, np.int32),
        ability=np.array([K.ABILITY["normal"], K.ABILITY["helper"], K.ABILITY["kid"]], np.int8),
        active=np.array(active, bool),
        hands=np.full((NUM_AGENTS, 2), -1, np.int16),
        action=np.full(NUM_AGENTS, 3, np.int32),
        start_frame=np.zeros(NUM_AGENTS, np.int32),
        done_frame=np.zeros(NUM_AGENTS, np.int32),
        status=np.zeros(NUM_AGENTS, np.int8),
        target_pos=np.array(agent_pos, np.float32),
    )
    goal_count = np.zeros(K.NUM_CLASSES, np.int8)
    goal_count[K.CLASS["apple"]] = 1
    state = State(
        scene=scene,
        objects=objs,
        agents=agents,
        goal_count=goal_count,
        total=np.float32(1),
        task=np.int8(0),
        max_frames=np.int32(3000),
        frame=np.int32(0),
        child_running=np.bool_(False),
        child_goal=np.zeros(2, np.float32),
        away_frames=np.int32(0),
        placed=np.zeros(NUM_AGENTS, np.int32),
        useful=np.zeros(NUM_AGENTS, np.int32),
        episode=np.int32(-1),
    )
    return jax.tree_util.tree_map(jnp.asarray, state)


def set_objects(state: State, **fields) -> State:
    """Returns ``state`` with ``objects.<name>`` set at the given ``{slot: value}`` for each field."""
    objects = state.objects
    for name, updates in fields.items():
        array = getattr(objects, name)
        for slot, value in updates.items():
            array = array.at[slot].set(value)
        objects = objects.replace(**{name: array})
    return state.replace(objects=objects)


def set_agents(state: State, **fields) -> State:
    """Returns ``state`` with ``agents.<name>`` replaced."""
    agents = state.agents
    return state.replace(
        agents=agents.replace(**{k: jnp.asarray(v, getattr(agents, k).dtype) for k, v in fields.items()})
    )


def pixel(point) -> tuple[int, int]:
    """Returns the (row, column) of the pixel a world point falls in."""
    row, col = np.floor(np.asarray(R.world_to_pixel(jnp.asarray(point, jnp.float32), SIZE))).astype(int)
    return int(row), int(col)


def mask_of(image: np.ndarray, rgb) -> np.ndarray:
    return np.all(image == np.asarray(rgb, np.uint8), axis=-1)


def world_of(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Returns ``float[K, 2]``: the world (x, z) of pixel centres."""
    px = R.metres_per_pixel(SIZE)
    return np.stack([R.WORLD_X[0] + (cols + 0.5) * px, R.WORLD_Z[1] - (rows + 0.5) * px], -1)


@pytest.fixture(scope="module")
def state():
    return make_state()


@pytest.fixture(scope="module")
def draw():
    """``render(s, SIZE, fov=False)`` jitted once; returns numpy frames."""
    jitted = jax.jit(functools.partial(R.render, size=SIZE, fov=False))
    return lambda s: np.asarray(jitted(s))


@pytest.fixture(scope="module")
def draw_fov():
    jitted = jax.jit(functools.partial(R.render, size=SIZE, fov=True))
    return lambda s: np.asarray(jitted(s))


@pytest.fixture(scope="module")
def frame(state, draw):
    return draw(state)


@pytest.fixture(scope="module")
def casting():
    """``cast(s, agent, num_rays, max_dist=max_dist)`` jitted once per ``num_rays`` (``agent`` and ``max_dist``
    traced); returns numpy ``(depth, semantic)``."""
    jitted = jax.jit(RC.cast, static_argnames="num_rays")

    def run(s, agent, num_rays=5, max_dist=12.0):
        depth, semantic = jitted(s, jnp.int32(agent), num_rays=num_rays, max_dist=jnp.float32(max_dist))
        return np.asarray(depth), np.asarray(semantic)

    return run


# ---------------------------------------------------------------------------------------------------- render


def test_shape_and_dtype(frame, state, draw_fov):
    assert frame.shape == (SIZE, 2 * SIZE, 3) == R.frame_shape(SIZE)
    assert frame.dtype == np.uint8
    with_fov = draw_fov(state)
    assert with_fov.shape == frame.shape and with_fov.dtype == np.uint8


def test_agents_drawn_at_their_positions(frame, state, draw):
    for a in (0, 1):
        assert tuple(frame[pixel(state.agents.pos[a])]) == R.AGENT_RGB[a]
    assert not mask_of(frame, R.AGENT_RGB[2]).any()  # the child is inactive
    with_child = draw(set_agents(state, active=[True, True, True]))
    assert tuple(with_child[pixel(state.agents.pos[2])]) == R.AGENT_RGB[2]


def test_agent_nose_points_along_heading(state, draw):
    rgb = R.AGENT_RGB[0]
    radius = R.agent_draw_radius(R.metres_per_pixel(SIZE))
    ahead = np.array([-3.0, 0.0]) + np.array([1.15 * radius, 0.0])
    behind = np.array([-3.0, 0.0]) - np.array([1.15 * radius, 0.0])
    east = draw(state)
    assert tuple(east[pixel(ahead)]) == rgb and tuple(east[pixel(behind)]) != rgb
    west = draw(set_agents(state, heading=[12, 12, 0]))
    assert tuple(west[pixel(behind)]) == rgb and tuple(west[pixel(ahead)]) != rgb


def test_walls_doors_rooms_furniture_goal(frame, state):
    wall = R.WALL_RGB
    assert tuple(frame[pixel((0.0, 2.0))]) == wall  # the dividing wall
    assert tuple(frame[pixel((0.0, -2.5))]) == wall
    assert tuple(frame[pixel((0.0, 0.0))]) != wall  # the door gap
    assert tuple(frame[pixel((-1.0, -3.0))]) == R.ROOM_RGB[0]
    assert tuple(frame[pixel((1.0, 3.0))]) == R.ROOM_RGB[1]
    assert tuple(frame[pixel((-12.0, 0.0))]) == R.GROUND_RGB
    # walls are about 2 px thick
    row = pixel((0.0, 2.0))[0]
    assert 1 <= mask_of(frame[row : row + 1, SIZE - 8 : SIZE + 8], wall).sum() <= 3
    # the low table and the high shelf: shaded by top height
    table = frame[pixel((-5.4, 1.8))]
    shelf = frame[pixel((5.0, 3.0))]
    assert tuple(shelf) == R.HIGH_RGB
    assert tuple(table) == tuple(np.round(np.asarray(R.furniture_rgb(jnp.float32(0.75)))).astype(np.uint8))
    assert int(table.astype(int).sum()) > int(shelf.astype(int).sum()) + 100  # high places visibly darker
    # the goal place: a gold rim at goal_extent / 2
    rim = mask_of(frame, R.GOAL_RGB)
    rows, cols = np.nonzero(rim)
    dist = np.linalg.norm(world_of(rows, cols) - np.array([4.0, -2.0]), axis=-1)
    assert rim.sum() > 10 and np.all(np.abs(dist - 0.8) < 0.25)


def test_objects_coloured_by_kind_with_target_ring_and_broken_vase(state, frame, draw):
    assert tuple(frame[pixel((-2.0, -2.0))]) == R.KIND_RGB[K.CONTAINER]
    assert tuple(frame[pixel((-6.0, -3.0))]) == R.KIND_RGB[K.ITEM]
    assert tuple(frame[pixel((-5.0, 2.0))]) == R.KIND_RGB[K.ITEM]  # the apple on the table
    # the apple is a target: a ring around it, none around the bread
    r, c = pixel((-5.0, 2.0))
    assert mask_of(frame[r - 6 : r + 7, c - 6 : c + 7], R.TARGET_RGB).sum() >= 4
    r, c = pixel((-6.0, -3.0))
    assert not mask_of(frame[r - 6 : r + 7, c - 6 : c + 7], R.TARGET_RGB).any()
    # the broken vase: dark, with shards; whole, it is drawn in the vase colour without them
    r, c = pixel((2.0, 2.5))
    patch = frame[r - 5 : r + 6, c - 5 : c + 6]
    assert tuple(frame[r, c]) == R.BROKEN_RGB and mask_of(patch, R.SHARD_RGB).sum() >= 4
    assert not mask_of(frame, R.KIND_RGB[K.VASE]).any()
    whole = draw(set_objects(state, broken={VASE: False}))
    assert tuple(whole[r, c]) == R.KIND_RGB[K.VASE] and not mask_of(whole, R.SHARD_RGB).any()


def test_moving_an_object_changes_the_image_there(state, frame, draw):
    moved = draw(set_objects(state, pos={BOWL: jnp.array([-2.0, 3.0])}))
    old, new = pixel((-2.0, -2.0)), pixel((-2.0, 3.0))
    assert tuple(moved[new]) == R.KIND_RGB[K.CONTAINER] != tuple(frame[new])
    assert tuple(moved[old]) == R.ROOM_RGB[0] != tuple(frame[old])
    changed = np.any(moved != frame, axis=-1)
    rows, cols = np.nonzero(changed)
    xz = world_of(rows, cols)
    near = np.minimum(np.linalg.norm(xz - [-2.0, -2.0], axis=-1), np.linalg.norm(xz - [-2.0, 3.0], axis=-1))
    assert near.max() < 0.5  # nothing else changed


def test_delivered_object_drawn_at_goal(state, frame, draw):
    # delivered, with a stale position far from the goal: drawn on the goal place anyway (all of its disc)
    delivered = draw(set_objects(state, delivered={BREAD: True}))
    assert tuple(delivered[pixel((-6.0, -3.0))]) == R.ROOM_RGB[0]
    item = mask_of(delivered, R.KIND_RGB[K.ITEM]) & ~mask_of(frame, R.KIND_RGB[K.ITEM])
    rows, cols = np.nonzero(item)
    assert item.sum() > 4
    assert np.linalg.norm(world_of(rows, cols) - [4.0, -2.0], axis=-1).max() <= 0.8 + 0.1
    # delivered at the goal's centre: drawn there
    centred = draw(set_objects(state, delivered={BREAD: True}, pos={BREAD: jnp.array([4.0, -2.0])}))
    assert tuple(centred[pixel((4.0, -2.0))]) == R.KIND_RGB[K.ITEM]


def test_held_object_drawn_beside_holder(state, frame, draw):
    held = set_objects(state, holder={BOWL: 0})
    held = set_agents(held, hands=[[BOWL, -1], [-1, -1], [-1, -1]])
    image = draw(held)
    assert tuple(image[pixel((-2.0, -2.0))]) == R.ROOM_RGB[0]
    px = R.metres_per_pixel(SIZE)
    gap = R.agent_draw_radius(px) + float(R.object_draw_radius(held, px)[BOWL])
    beside = np.array([-3.0, 0.0 - gap])  # facing +x, the right hand is towards -z
    assert tuple(image[pixel(beside)]) == R.KIND_RGB[K.CONTAINER]
    # contents of a held container ride with it
    inside = set_objects(held, container={BREAD: BOWL})
    rows, cols = np.nonzero(mask_of(draw(inside), R.KIND_RGB[K.ITEM]) & ~mask_of(frame, R.KIND_RGB[K.ITEM]))
    assert rows.size and np.linalg.norm(world_of(rows, cols) - beside, axis=-1).max() < 0.6


def test_fov_overlay_cut_at_walls(state, draw, draw_fov):
    state = set_agents(state, heading=[0, 0, 0])  # both facing +x: the helper looks away from the door
    frame, with_fov = draw(state), draw_fov(state)
    ahead, behind = pixel((-1.5, -1.2)), pixel((-5.0, -1.0))
    assert tuple(with_fov[ahead]) != tuple(frame[ahead])  # in main's wedge
    assert tuple(with_fov[behind]) == tuple(frame[behind])
    through_door, past_wall = pixel((1.5, 0.1)), pixel((1.5, 2.0))
    assert tuple(with_fov[through_door]) != tuple(frame[through_door])
    assert tuple(with_fov[past_wall]) == tuple(frame[past_wall])
    # the tint is the main agent's colour laid over the floor
    floor = frame[ahead].astype(float)
    expected = np.round((1 - R.FOV_ALPHA) * floor + R.FOV_ALPHA * np.asarray(R.AGENT_RGB[0]))
    assert np.abs(with_fov[ahead].astype(float) - expected).max() <= 1


def test_jit_matches_eager(state, frame):
    eager = np.asarray(R.render(state, SIZE, fov=False))  # op by op (slow: each op compiles)
    jitted = frame
    assert np.mean(np.any(eager != jitted, axis=-1)) < 1e-3  # float rounding may flip a rare edge pixel


def test_vmap_matches_single_renders(state, draw):
    states = [
        state,
        set_agents(state, heading=[6, 3, 0]),
        set_objects(state, delivered={BREAD: True}, pos={BOWL: jnp.array([-1.0, 1.0])}),
    ]
    stacked = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *states)
    batch = np.asarray(jax.jit(jax.vmap(functools.partial(R.render, size=SIZE, fov=False)))(stacked))
    assert batch.shape == (3, SIZE, 2 * SIZE, 3)
    for k, s in enumerate(states):
        np.testing.assert_array_equal(batch[k], draw(s))
    frames = jax.eval_shape(functools.partial(R.episode_frames, size=SIZE), stacked)  # traced, not compiled
    assert frames.shape == (3, SIZE, 2 * SIZE, 3) and frames.dtype == jnp.uint8


def test_episode_gif(state, draw, tmp_path):
    frames = np.stack([draw(state)] * 2)
    path = R.save_episode_gif(frames, tmp_path / "chaic.gif", texts=["a", "b"])
    assert path.exists() and path.stat().st_size > 0
    with pytest.raises(ValueError):
        R.render(state, size=0)
    with pytest.raises(ValueError):
        R.episode_frames(state, size=SIZE)  # no time axis


# ---------------------------------------------------------------------------------------------------- raycast


def test_semantic_table():
    names = RC.SEMANTIC_NAMES
    assert len(names) == RC.NUM_SEMANTIC
    assert names[RC.SEM_NOTHING] == "nothing" and names[RC.SEM_WALL] == "wall"
    assert names[RC.SEM_AGENT0 + 1] == "agent:helper"
    assert names[RC.SEM_OBJECT0 + K.CLASS["apple"]] == "object:apple"
    assert names[RC.SEM_FURNITURE0 + 2] == "furniture:2"
    angles = np.asarray(RC.ray_angles(5))
    np.testing.assert_allclose(angles, [45.0, 22.5, 0.0, -22.5, -45.0], rtol=1e-6, atol=1e-6)  # float32 degrees


def test_ray_straight_at_wall(casting):
    s = make_state(agent_pos=((-3.0, 2.5), (3.0, 0.0), (6.0, -3.0)))  # facing the x = 0 wall, 3 m away
    depth, semantic = casting(s, 0)
    assert abs(depth[2] - 3.0) < 1e-4 and semantic[2] == RC.SEM_WALL
    assert abs(depth[1] - 3.0 / np.cos(np.deg2rad(22.5))) < 1e-4 and semantic[1] == RC.SEM_WALL  # left of it
    # north wall at z = 4, seen by the leftmost ray (45 degrees): 1.5 * sqrt(2)
    assert abs(depth[0] - 1.5 * np.sqrt(2)) < 1e-4 and semantic[0] == RC.SEM_WALL


def test_object_in_front_of_wall(casting):
    s = make_state(
        agent_pos=((-3.0, 2.5), (3.0, 0.0), (6.0, -3.0)),
        objects=(("apple", (-5.0, 2.0)), ("basket", (-1.5, 2.5))),
    )
    depth, semantic = casting(s, 0)
    radius = float(K.CLASS_SIZE[K.CLASS["basket"]]) / 2
    assert semantic[2] == RC.SEM_OBJECT0 + K.CLASS["basket"]
    assert abs(depth[2] - (1.5 - radius)) < 1e-4
    # held by the caster: not seen; held by another agent: at that agent
    held = set_objects(s, holder={1: 0})
    depth, semantic = casting(held, 0)
    assert semantic[2] == RC.SEM_WALL and abs(depth[2] - 3.0) < 1e-4


def test_ray_through_door_gap(casting):
    s = make_state(active=(True, False, False))
    depth, semantic = casting(s, 0)  # main at (-3, 0) facing +x: through the door to the east wall
    assert abs(depth[2] - 11.0) < 1e-4 and semantic[2] == RC.SEM_WALL
    depth, semantic = casting(make_state(), 0)  # the helper stands in the next room, in line
    assert semantic[2] == RC.SEM_AGENT0 + 1 and abs(depth[2] - (6.0 - RC.AGENT_RADIUS)) < 1e-4


def test_agent_behind_wall_not_hit(casting):
    s = make_state(agent_pos=((-3.0, 2.5), (3.0, 2.5), (6.0, -3.0)), objects=(("apple", (-5.0, 2.0)),))
    depth, semantic = casting(s, 0)
    assert semantic[2] == RC.SEM_WALL and abs(depth[2] - 3.0) < 1e-4
    no_wall = s.replace(scene=s.scene.replace(wall_valid=s.scene.wall_valid.at[DIVIDER_HIGH].set(False)))
    depth, semantic = casting(no_wall, 0)
    assert semantic[2] == RC.SEM_AGENT0 + 1 and abs(depth[2] - (6.0 - RC.AGENT_RADIUS)) < 1e-4
    # the helper sees the main agent the other way round, and not itself
    depth, semantic = casting(no_wall, 1)
    assert semantic[2] == RC.SEM_AGENT0 + 0


def test_rays_left_to_right(casting):
    angle = np.deg2rad(30.0)
    obj = (-3.0 + 2.0 * np.cos(angle), -2.0 + 2.0 * np.sin(angle))  # 30 degrees to the left of main, 2 m away
    s = make_state(agent_pos=((-3.0, -2.0), (3.0, 0.0), (6.0, -3.0)), objects=(("basket", obj), ("apple", (-5.0, 2.0))))
    depth, semantic = casting(s, 0, num_rays=64)
    seen = np.flatnonzero(semantic == RC.SEM_OBJECT0 + K.CLASS["basket"])
    assert seen.size and seen.max() < 32
    nearest = int(np.argmin(np.abs(np.asarray(RC.ray_angles(64)) - 30.0)))
    assert nearest in seen and abs(depth[nearest] - 1.8) < 0.02
    # turned 90 degrees left, the basket is 60 degrees to the right: out of view
    turned = set_agents(s, heading=[6, 12, 0])
    _, semantic = casting(turned, 0, num_rays=64)
    assert not (semantic == RC.SEM_OBJECT0 + K.CLASS["basket"]).any()


def test_objects_seen_over_their_furniture(casting):
    # main at (-5, 0) facing +z, towards the table (front face at z = 1.6); the apple lies on it at z = 2
    s = make_state(agent_pos=((-5.0, 0.0), (3.0, 0.0), (6.0, -3.0)), heading=(6, 12, 0))
    depth, semantic = casting(s, 0)
    assert semantic[2] == RC.SEM_OBJECT0 + K.CLASS["apple"] and abs(depth[2] - (2.0 - RC.OBJECT_MIN_RADIUS)) < 1e-4
    # an apple on the floor behind the table is hidden by it
    behind = set_objects(s, pos={APPLE: jnp.array([-5.0, 2.8])})
    depth, semantic = casting(behind, 0)
    assert semantic[2] == RC.SEM_FURNITURE0 + 1 and abs(depth[2] - 1.6) < 1e-4


def test_nothing_within_range(casting):
    s = make_state(agent_pos=((-3.0, 0.0), (3.0, 0.0), (6.0, -3.0)))
    s = s.replace(scene=s.scene.replace(wall_valid=jnp.zeros_like(s.scene.wall_valid)))
    depth, semantic = casting(s, 1, max_dist=2.0)
    assert np.all(np.asarray(depth) == 2.0) and np.all(np.asarray(semantic) == RC.SEM_NOTHING)


def test_cast_jit_vmap_and_image(state, casting):
    depth, semantic = jax.eval_shape(lambda s: RC.cast(s, 0, num_rays=16), state)
    assert depth.shape == semantic.shape == (16,) and depth.dtype == jnp.float32 and semantic.dtype == jnp.int8
    states = [state, set_agents(state, heading=[7, 9, 0]), make_state(agent_pos=((-3.0, 2.5), (3.0, 2.5), (0, 0)))]
    stacked = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *states)

    @jax.jit
    def batch(stacked):  # one compilation: vmapped cast, and image and cast_all of the first state
        first = jax.tree_util.tree_map(lambda x: x[0], stacked)
        return jax.vmap(lambda s: RC.cast(s, 0))(stacked), RC.image(first, 1), RC.cast_all(first)

    (vd, vs), obs, (all_depth, all_semantic) = batch(stacked)
    assert vd.shape == vs.shape == (3, 64) and len(set(np.asarray(vs).ravel().tolist())) >= 3
    for k, s in enumerate(states):
        d, sem = casting(s, 0, num_rays=64)
        np.testing.assert_allclose(np.asarray(vd[k]), d, rtol=1e-5, atol=1e-5)  # vmapped: another program
        np.testing.assert_array_equal(np.asarray(vs[k]), sem)
    assert set(obs) == {"depth", "semantic"} and obs["depth"].shape == (64,) and obs["semantic"].dtype == jnp.int8
    assert all_depth.shape == (NUM_AGENTS, 64) and all_semantic.dtype == jnp.int8
    d, sem = casting(state, 1, num_rays=64)
    np.testing.assert_allclose(np.asarray(obs["depth"]), d, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(all_depth[1]), d, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(all_semantic[1]), sem)
