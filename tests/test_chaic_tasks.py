"""CHAIC scenes and tasks: floor plans (tiling, doors as 1 m gaps, connectivity), furniture layouts, the outdoor
scenes, and the per-task statistics of generated episodes against the original's (spec §2.3, paper §3.3.1 and
appendix G), determinism, dtypes and errors."""

from __future__ import annotations

import hashlib
from collections import deque

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import ndimage

from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.envs.chaic import geometry as G
from jaxsoc.envs.chaic import scenes as SC
from jaxsoc.envs.chaic import state as S
from jaxsoc.envs.chaic import tasks as T

LAYOUTS = [(p, i) for p in SC.INDOOR_PLANS for i in range(SC.NUM_LAYOUTS)]
crosses_wall = jax.jit(G.crosses_wall)
clearance = jax.jit(G.clearance)
room_of_batch = jax.jit(jax.vmap(G.room_of))
clearance_batch = jax.jit(jax.vmap(G.clearance))


def _scene(plan: str, index: int) -> S.Scene:
    return jax.tree_util.tree_map(jnp.asarray, SC.scene_state(plan, index))


# -- floor plans ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("plan", SC.INDOOR_PLANS)
def test_rooms_tile_the_footprint_and_doors_connect_them(plan):
    lay = SC.layout(plan, 0)
    rooms = lay.rooms.astype(np.float64)
    assert 6 <= len(rooms) <= 8
    w, h = rooms[:, 2] - rooms[:, 0], rooms[:, 3] - rooms[:, 1]
    assert (w >= 3).all() and (h >= 3).all()
    x0, z0, x1, z1 = rooms[:, 0].min(), rooms[:, 1].min(), rooms[:, 2].max(), rooms[:, 3].max()
    assert x0 >= -15 and x1 <= 15 and z0 >= -7.5 and z1 <= 7.5
    assert 20 <= x1 - x0 <= 28 and 10 <= z1 - z0 <= 14
    for i in range(len(rooms)):  # no two rooms overlap, and together they cover the footprint
        for j in range(i + 1, len(rooms)):
            ox = min(rooms[i, 2], rooms[j, 2]) - max(rooms[i, 0], rooms[j, 0])
            oz = min(rooms[i, 3], rooms[j, 3]) - max(rooms[i, 1], rooms[j, 1])
            assert min(ox, oz) <= 1e-6, (plan, i, j)
    assert np.isclose((w * h).sum(), (x1 - x0) * (z1 - z0))
    # every door lies on the wall its two rooms share; the doors join all rooms
    adjacency = {r: set() for r in range(len(rooms))}
    for d, (a, b) in zip(lay.doors, lay.door_rooms):
        for r in (a, b):
            xmin, zmin, xmax, zmax = rooms[r]
            on_x = np.isclose(d[0], [xmin, xmax]).any() and zmin + 0.5 <= d[1] <= zmax - 0.5
            on_z = np.isclose(d[1], [zmin, zmax]).any() and xmin + 0.5 <= d[0] <= xmax - 0.5
            assert on_x or on_z, (plan, d, r)
        adjacency[int(a)].add(int(b))
        adjacency[int(b)].add(int(a))
    seen, queue = {0}, deque([0])
    while queue:
        for n in adjacency[queue.popleft()] - seen:
            seen.add(n)
            queue.append(n)
    assert seen == set(range(len(rooms))), plan
    assert len(lay.doors) >= len(rooms) - 1


def test_plans_differ_and_fit_the_padding():
    arrangements = {SC.layout(p, 0).rooms.tobytes() for p in SC.INDOOR_PLANS}
    assert len(arrangements) == len(SC.INDOOR_PLANS)
    assert len({len(SC.layout(p, 0).rooms) for p in SC.INDOOR_PLANS}) >= 2  # 6, 7 and 8 rooms
    assert set(SC.TRAIN_PLANS) == {"1a", "1b", "4a", "4b"} and set(SC.TEST_PLANS) == {"2a", "2b", "5a", "5c"}
    for p, i in LAYOUTS + [("street", 0), ("yard", 0)]:
        lay = SC.layout(p, i)
        assert len(lay.walls) <= S.MAX_WALLS and len(lay.rooms) <= S.MAX_ROOMS
        assert len(lay.doors) <= S.MAX_DOORS and len(lay.furniture) <= S.MAX_FURNITURE


@pytest.mark.parametrize("plan", SC.INDOOR_PLANS)
def test_every_door_is_a_gap_of_one_metre(plan):
    scene = _scene(plan, 0)
    lay = SC.layout(plan, 0)
    for d in lay.doors:
        vertical_wall = bool(np.isclose(d[0], lay.rooms[:, [0, 2]]).any())  # a door in a wall x = const
        along = np.array([0.0, 1.0] if vertical_wall else [1.0, 0.0], np.float32)
        across = along[::-1]
        for shift in (-0.49, 0.0, 0.49):  # an agent 0.5 m wide steps through anywhere in the 1 m gap
            c = d + shift * along
            assert not bool(crosses_wall(scene, jnp.asarray(c - 0.5 * across), jnp.asarray(c + 0.5 * across))), (
                plan,
                d,
            )
        for shift in (-0.6, 0.6):  # but just beyond it there is wall
            c = d + shift * along
            assert bool(crosses_wall(scene, jnp.asarray(c - 0.5 * across), jnp.asarray(c + 0.5 * across))), (plan, d)


# -- furniture layouts ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("plan", "index"), LAYOUTS)
def test_furniture_layouts(plan, index):
    lay = SC.layout(plan, index)
    furn, cls = lay.furniture, lay.furniture_cls
    names = [SC.FURNITURE_CLASSES[c] for c in cls]
    assert "bed" in names and len(lay.high_places()) >= 2
    assert all(SC.FURNITURE_CLASSES[c] in ("cabinet", "fridge") for c in cls[lay.high_places()])
    tops = dict(table=0.75, coffee_table=0.45, sofa=0.45, chair=0.45, bed=0.6, shelf=1.0)
    for (x, z, sx, sz, top), name in zip(furn, names):
        if name in tops:
            assert top == pytest.approx(tops[name])
        elif name == "cabinet":
            assert 1.6 - 1e-5 <= top <= 2.0 + 1e-5
        else:
            assert name == "fridge" and 1.8 - 1e-5 <= top <= 2.0 + 1e-5
        room = SC._room_index(np.array([[x, z]]), lay.rooms)[0]
        xmin, zmin, xmax, zmax = lay.rooms[room]
        eps = 1e-4
        assert xmin + 0.3 - eps <= x - sx / 2 and x + sx / 2 <= xmax - 0.3 + eps, (plan, index, name)
        assert zmin + 0.3 - eps <= z - sz / 2 and z + sz / 2 <= zmax - 0.3 + eps, (plan, index, name)
    assert (SC.rect_distance(lay.doors, furn) >= 1.2 - 1e-4).all()  # doorways stay clear
    for i in range(len(furn)):
        for j in range(i + 1, len(furn)):
            assert SC._rect_gap(furn[i], furn[j]) > 0.5, (plan, index, names[i], names[j])
    # slots: 3 per table, 2 per sofa/chair/bed/shelf/high place, on the piece's top
    expected = {"table": 3, "coffee_table": 3, "sofa": 2, "chair": 2, "bed": 2, "shelf": 2, "cabinet": 2, "fridge": 2}
    slots = np.array(SC.slots(plan, index))
    for f, name in enumerate(names):
        mine = slots[slots[:, 3] == f]
        assert len(mine) == expected[name]
        assert (SC.rect_distance(mine[:, :2], furn[f : f + 1]) == 0).all() and np.allclose(mine[:, 2], furn[f, 4])
    low = slots[:, 2] <= SC.HIGH_PLACE
    assert low.sum() - 2 >= 40  # room for the 37 objects besides the goal bed
    spots = SC.floor_spots(plan, index)
    assert len(spots) > 100 and (SC._segment_distance(spots, lay.walls) >= SC.FLOOR_CLEARANCE).all()


@pytest.mark.parametrize("plan", SC.INDOOR_PLANS)
def test_layouts_of_a_plan_differ(plan):
    layouts = [SC.layout(plan, i) for i in range(SC.NUM_LAYOUTS)]
    assert len({lay.furniture.tobytes() for lay in layouts}) == SC.NUM_LAYOUTS
    assert SC.layout(plan, 1) is SC.layout(plan, 1)  # cached


@pytest.mark.parametrize(
    ("plan", "index"), [(p, i % 3) for i, p in enumerate(SC.INDOOR_PLANS)] + [("street", 0), ("yard", 0)]
)
def test_walkable_floor_is_connected(plan, index):
    """The floor 0.25 m clear of walls and furniture is one piece joining every door and start spot."""
    lay = SC.layout(plan, index)
    scene = _scene(plan, index)
    points, shape = SC._grid(lay.rooms)
    padded = np.zeros((240 * 120, 2), np.float32)  # the largest footprint's grid: one compilation
    padded[: len(points)] = points
    wall = np.asarray(clearance(scene, jnp.asarray(padded)))[: len(points)]
    free = (wall >= 0.25) & (SC.rect_distance(points, lay.furniture).min(1) >= 0.25)
    labels = ndimage.label(free.reshape(shape))[0].ravel()
    cell = lambda p: labels[np.linalg.norm(points - p, axis=1).argmin()]  # noqa: E731
    main = cell(lay.agent_spots[0])
    assert main > 0
    assert all(cell(d) == main for d in lay.doors)
    assert all(cell(p) == main for p in lay.agent_spots[:: max(len(lay.agent_spots) // 200, 1)])


def test_outdoor_scenes():
    street = SC.layout("street", 0)
    names = [SC.FURNITURE_CLASSES[c] for c in street.furniture_cls]
    shops = street.furniture[[i for i, n in enumerate(names) if n == "counter"]]
    assert len(shops) == 6 and np.allclose(shops[:, 4], 0.9)
    assert (shops[:, 1] > SC.ROAD[3]).sum() == 3 and (shops[:, 1] < SC.ROAD[1]).sum() == 3
    assert names[street.goal] == "fire_hydrant" and street.furniture[street.goal, 4] == pytest.approx(0.4)
    w, h = street.rooms[0, 2] - street.rooms[0, 0], street.rooms[0, 3] - street.rooms[0, 1]
    assert 28 <= w <= 34 and 12 <= h <= 15
    yard = SC.layout("yard", 0)
    names = [SC.FURNITURE_CLASSES[c] for c in yard.furniture_cls]
    assert names[yard.goal] == "truck" and "house" in names
    truck = yard.furniture[yard.goal]
    assert truck[4] == pytest.approx(1.2) and max(truck[2], truck[3]) == pytest.approx(2.5)
    ax0, az0, ax1, az1 = SC.PLACE_AREA
    assert 9 <= np.hypot(truck[0] - (ax0 + ax1) / 2, truck[1] - (az0 + az1) / 2) <= 12
    for lay in (street, yard):
        assert lay.outdoor and len(lay.doors) == 0 and len(lay.walls) == 4 and len(lay.rooms) == 1
    fields = SC.scene("street")
    assert fields["outdoor"] and not fields["door_valid"].any() and fields["wall_valid"].sum() == 4


# -- generated episodes ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sets():
    """Every task's test and validation splits and a 64-episode train split, as numpy."""
    out = {}
    for task in K.TASKS:
        for split, size in (("test", None), ("validation", None), ("train", 64)):
            ts = T.make_split(task, split, 0, size)
            out[task, split] = (ts, jax.tree_util.tree_map(np.asarray, ts.states))
    return out


def _each(sets, task):
    for split in T.SPLITS:
        yield sets[task, split][1]


def _valid(s):
    return s.objects.cls > 0


def _kind(s):
    return K.CLASS_KIND[s.objects.cls]


EXPECTED = {  # (field, shape after the episode axis, dtype), as state.py documents them
    "scene.walls": ((S.MAX_WALLS, 4), np.float32),
    "scene.wall_valid": ((S.MAX_WALLS,), np.bool_),
    "scene.rooms": ((S.MAX_ROOMS, 4), np.float32),
    "scene.room_valid": ((S.MAX_ROOMS,), np.bool_),
    "scene.doors": ((S.MAX_DOORS, 2), np.float32),
    "scene.door_rooms": ((S.MAX_DOORS, 2), np.int8),
    "scene.door_valid": ((S.MAX_DOORS,), np.bool_),
    "scene.furniture": ((S.MAX_FURNITURE, 5), np.float32),
    "scene.furniture_cls": ((S.MAX_FURNITURE,), np.int8),
    "scene.goal_pos": ((2,), np.float32),
    "scene.goal_height": ((), np.float32),
    "scene.goal_extent": ((), np.float32),
    "scene.plan": ((), np.int8),
    "scene.layout": ((), np.int8),
    "scene.outdoor": ((), np.bool_),
    "objects.cls": ((S.MAX_OBJECTS,), np.int8),
    "objects.pos": ((S.MAX_OBJECTS, 2), np.float32),
    "objects.height": ((S.MAX_OBJECTS,), np.float32),
    "objects.size": ((S.MAX_OBJECTS,), np.float32),
    "objects.mass": ((S.MAX_OBJECTS,), np.float32),
    "objects.holder": ((S.MAX_OBJECTS,), np.int8),
    "objects.container": ((S.MAX_OBJECTS,), np.int16),
    "objects.delivered": ((S.MAX_OBJECTS,), np.bool_),
    "objects.delivered_by": ((S.MAX_OBJECTS,), np.int8),
    "objects.broken": ((S.MAX_OBJECTS,), np.bool_),
    "agents.pos": ((S.NUM_AGENTS, 2), np.float32),
    "agents.heading": ((S.NUM_AGENTS,), np.int32),
    "agents.ability": ((S.NUM_AGENTS,), np.int8),
    "agents.active": ((S.NUM_AGENTS,), np.bool_),
    "agents.hands": ((S.NUM_AGENTS, 2), np.int16),
    "agents.action": ((S.NUM_AGENTS,), np.int32),
    "agents.start_frame": ((S.NUM_AGENTS,), np.int32),
    "agents.done_frame": ((S.NUM_AGENTS,), np.int32),
    "agents.status": ((S.NUM_AGENTS,), np.int8),
    "agents.target_pos": ((S.NUM_AGENTS, 2), np.float32),
    "goal_count": ((K.NUM_CLASSES,), np.int8),
    "total": ((), np.float32),
    "task": ((), np.int8),
    "max_frames": ((), np.int32),
    "frame": ((), np.int32),
    "child_running": ((), np.bool_),
    "child_goal": ((2,), np.float32),
    "away_frames": ((), np.int32),
    "placed": ((S.NUM_AGENTS,), np.int32),
    "useful": ((S.NUM_AGENTS,), np.int32),
    "episode": ((), np.int32),
}


def _fields(states) -> dict:
    leaves = jax.tree_util.tree_flatten_with_path(states)[0]
    return {".".join(k.name for k in path): v for path, v in leaves}


@pytest.mark.parametrize("task", K.TASKS)
def test_dtypes_shapes_and_initial_fields(sets, task):
    ts, s = sets[task, "test"]
    fields = _fields(ts.states)
    assert set(fields) == set(EXPECTED)
    for name, (shape, dtype) in EXPECTED.items():
        assert isinstance(fields[name], jax.Array), name
        assert fields[name].shape == (len(ts), *shape) and fields[name].dtype == dtype, name
    single = _fields(T.generate(task, ts.plans[0], int(ts.layouts[0]), np.random.default_rng(0)))
    for name, (shape, dtype) in EXPECTED.items():
        assert np.shape(single[name]) == shape and np.asarray(single[name]).dtype == dtype, name
    assert len(ts) == 12 and (s.episode == np.arange(12)).all()
    assert (s.task == K.TASK[task]).all() and (s.max_frames == K.TASK_FRAMES[task]).all()
    assert (s.frame == 0).all() and not s.child_running.any() and (s.child_goal == 0).all()
    assert (s.away_frames == 0).all() and (s.placed == 0).all() and (s.useful == 0).all()
    assert (s.total == s.goal_count.sum(1)).all() if task != "furniture" else True
    valid = _valid(s)
    o = s.objects
    assert np.allclose(o.size, K.CLASS_SIZE[o.cls]) and np.allclose(o.mass, K.CLASS_MASS[o.cls])
    assert (o.container == -1).all() and not o.delivered.any() and (o.delivered_by == -1).all() and not o.broken.any()
    assert (o.pos[~valid] == 0).all() and (o.height[~valid] == 0).all()
    assert (o.holder[_kind(s) != K.BIKE] == -1).all()
    a = s.agents
    ability = [K.ABILITY[K.TASK_ABILITY[task]], K.ABILITY["helper"], K.ABILITY["kid"]]
    assert (a.ability == ability).all()
    assert (a.active == [True, True, task == "shopping"]).all()
    assert (a.action == S.WAIT).all() and (a.status == S.SUCCEEDED).all()
    assert (a.start_frame == 0).all() and (a.done_frame == 0).all() and (a.target_pos == a.pos).all()
    assert ((a.heading >= 0) & (a.heading < K.NUM_HEADINGS)).all()
    assert len(np.unique(a.heading)) > 3


@pytest.mark.parametrize("task", K.TASKS)
def test_objects_and_agents_start_in_free_space(sets, task):
    s = jax.tree_util.tree_map(lambda *x: np.concatenate(x), *_each(sets, task))  # test + train episodes
    scene = jax.tree_util.tree_map(jnp.asarray, s.scene)
    points = jnp.asarray(np.concatenate([s.objects.pos, s.agents.pos], 1))  # one shape for every task
    rooms, clear = np.asarray(room_of_batch(scene, points)), np.asarray(clearance_batch(scene, points))
    n = S.MAX_OBJECTS
    valid, kind = _valid(s), _kind(s)
    assert (rooms[:, :n][valid] >= 0).all()
    free = valid & (kind != K.OBSTACLE)
    assert (clear[:, :n][free] >= 0.3).all()  # on furniture 0.3 m from walls, or on the floor 0.4 m
    assert (clear[:, :n][kind == K.OBSTACLE] >= 0.49).all()  # in a doorway's middle
    pos = s.agents.pos
    assert (rooms[:, n:] >= 0).all() and (clear[:, n:] >= 0.5).all()
    assert (np.linalg.norm(pos[:, 0] - pos[:, 1], axis=-1) >= 1.0).all()
    for e in range(len(pos)):
        furn = s.scene.furniture[e][s.scene.furniture_cls[e] > 0]
        assert (SC.rect_distance(pos[e], furn) >= 0.5).all()
        on_floor = valid[e] & (kind[e] != K.BIKE) & (s.objects.height[e] < 0.25 + K.CLASS_HEIGHT[s.objects.cls[e]])
        if on_floor.any():  # objects resting on the floor (floor objects, obstacles, furniture pieces)
            d = np.linalg.norm(pos[e][:, None] - s.objects.pos[e][on_floor][None], axis=-1)
            assert (d >= K.CLASS_SIZE[s.objects.cls[e][on_floor]] / 2 + 0.3).all()
        # nothing starts on the goal place (it would count as delivered)
        if not s.scene.outdoor[e]:
            gx, gz = s.scene.goal_pos[e]
            goal = s.scene.furniture[e][np.flatnonzero(np.isclose(s.scene.furniture[e][:, 0], gx))[0]]
            assert (SC.rect_distance(s.objects.pos[e][valid[e]], goal[None]) > 0).all()


@pytest.mark.parametrize("task", T.INDOOR_TASKS)
def test_indoor_objects_and_goals(sets, task):
    for s in _each(sets, task):
        cls, valid, kind = s.objects.cls, _valid(s), _kind(s)
        items = (kind == K.ITEM).sum(1)
        assert (items == 31).all()  # 4 balanced groups of len + 4
        for names in K.INDOOR_GROUPS.values():
            ids = [K.CLASS[n] for n in names]
            counts = np.stack([(cls == c).sum(1) for c in ids], 1)
            assert (counts.sum(1) == len(names) + 4).all() and (counts >= 1).all()
            assert (counts.max(1) - counts.min(1) <= 1).all()  # balanced
        gc = s.goal_count.astype(int)
        groups = [[K.CLASS[n] for n in names] for names in K.INDOOR_GROUPS.values()]
        for e in range(len(gc)):
            # the goal: every instance of one group + one instance of another's class (+ 2 vases)
            full = [g for g in groups if all(gc[e, c] == (cls[e] == c).sum() for c in g)]
            assert len(full) == 1
            rest = gc[e].copy()
            rest[full[0]] = 0
            rest[K.CLASS["vase"]] = 0
            assert rest.sum() == 1 and (cls[e] == rest.argmax()).sum() >= 1
            assert (gc[e] <= np.bincount(cls[e][valid[e]], minlength=K.NUM_CLASSES)).all()
        tops = s.objects.height
        expected = (10, 12) if task == "high_target" else (8, 10)
        assert expected[0] <= s.total.min() and s.total.max() <= expected[1]
        assert set(np.unique(s.total)) == set(range(expected[0], expected[1] + 1)) or len(s.total) == 12
        n_containers = (kind == K.CONTAINER).sum(1)
        assert (n_containers == 6).all() if task != "high_container" else (n_containers >= 3).all()
        low = ((tops < 0.25) & valid & (kind != K.OBSTACLE)).sum(1) / (valid & (kind != K.OBSTACLE)).sum(1)
        high = ((tops > 1.5) & valid).sum(1) / valid.sum(1)
        if task in ("normal", "obstacle", "high_goalplace"):
            assert tops[valid & (kind != K.OBSTACLE)].max() <= 1.3
            assert 0.05 <= low.mean() <= 0.15 and (high == 0).all()
        if task == "low_target":
            assert 0.45 <= low.mean() <= 0.65 and (low >= 0.4).all()
        goal_height = s.scene.goal_height
        if task == "high_goalplace":
            assert (goal_height > 1.5).all()
        else:
            assert np.allclose(goal_height, 0.6) and np.allclose(s.scene.goal_extent, 2.0, atol=0.25)
        if task == "high_target":
            assert (gc[:, K.CLASS["vase"]] == 2).all() and ((cls == K.CLASS["vase"]).sum(1) == 2).all()
            assert (tops[cls == K.CLASS["vase"]] > 1.5).all()
            assert 0.15 <= high.mean() <= 0.3 and (high > 0.1).all()
            wanted = (gc[np.arange(len(gc))[:, None], cls] > 0) & (kind == K.ITEM)
            assert (((tops > 1.5) & wanted).sum(1) >= 2).all()  # high targets besides the vases
        else:
            assert (cls != K.CLASS["vase"]).all()
        if task == "high_container":
            high_containers = ((tops > 1.5) & (kind == K.CONTAINER)).sum(1)
            assert (high_containers >= 3).all() and (high_containers == n_containers).all()
        else:
            assert not ((tops > 1.5) & (kind == K.CONTAINER)).any()
        obstacles = kind == K.OBSTACLE
        if task == "obstacle":
            doors = s.scene.door_valid.sum(1)
            assert (obstacles.sum(1) == doors - 1).all()  # every door but one is blocked
            for e in range(len(doors)):
                d = np.linalg.norm(s.objects.pos[e][obstacles[e]][:, None] - s.scene.doors[e][None], axis=-1)
                assert (d.min(1) < 1e-5).all()
                assert len(np.unique(d.argmin(1))) == obstacles[e].sum()
        else:
            assert not obstacles.any()
        assert not s.scene.outdoor.any()


def test_shopping(sets):
    for s in _each(sets, "shopping"):
        cls, kind, valid = s.objects.cls, _kind(s), _valid(s)
        assert (valid.sum(1) == 46).all() and (s.scene.plan == SC.PLAN["street"]).all() and s.scene.outdoor.all()
        assert (s.total >= 11).all() and (s.total <= 13).all()
        groups = [[K.CLASS[n] for n in names] for names in K.SHOPPING_GROUPS.values()]
        furn = s.scene.furniture
        for e in range(len(cls)):
            # the bike: held by the rider in hand 0, at his position
            bike = s.agents.hands[e, 0, 0]
            assert cls[e, bike] == K.CLASS["bike"] and s.objects.holder[e, bike] == 0
            assert (s.agents.hands[e, 1:] == -1).all() and (s.agents.hands[e, 0, 1] == -1)
            assert (kind[e] == K.BIKE).sum() == 1 and np.allclose(s.objects.pos[e, bike], s.agents.pos[e, 0])
            # each shop sells one category; every category in exactly two shops
            shop_of = SC.rect_distance(s.objects.pos[e], furn[e, :6]).argmin(1)
            sold = []
            for shop in range(6):
                here = valid[e] & (kind[e] == K.ITEM) & (shop_of == shop)
                cats = {g for g, ids in enumerate(groups) if np.isin(cls[e][here], ids).any()}
                assert len(cats) == 1 and here.sum() == T.SHOP_ITEMS
                sold.append(cats.pop())
            assert sorted(sold) == [0, 0, 1, 1, 2, 2]
            assert np.allclose(s.objects.height[e][kind[e] == K.ITEM], 0.9 + K.CLASS_HEIGHT[cls[e][kind[e] == K.ITEM]])
            containers = kind[e] == K.CONTAINER
            assert containers.sum() == 3 and len(set(shop_of[containers])) == 3
            assert sorted(cls[e][containers]) == sorted(K.CLASS[n] for n in K.SHOPPING_CONTAINERS)
            # the goal: 10-12 of one category + one of another
            per_group = [s.goal_count[e, ids].sum() for ids in groups]
            assert sorted(per_group)[-1] in (10, 11, 12) and sorted(per_group)[:2] == [0, 1]
            assert (s.goal_count[e] <= np.bincount(cls[e], minlength=K.NUM_CLASSES)).all()
            assert s.scene.goal_height[e] == pytest.approx(0.4)
            # the child is active and starts near the rider
            assert 0.9 <= np.linalg.norm(s.agents.pos[e, 2] - s.agents.pos[e, 0]) <= 2.6
        assert s.agents.active[:, 2].all() and (s.agents.ability[:, 0] == K.ABILITY["rider"]).all()


def test_furniture(sets):
    for s in _each(sets, "furniture"):
        cls, kind, valid = s.objects.cls, _kind(s), _valid(s)
        assert (valid.sum(1) == 5).all() and (kind[valid] == K.FURNITURE).all()
        assert np.allclose(s.total, np.where(valid, K.CLASS_MASS[cls], 0).sum(1))
        ax0, az0, ax1, az1 = SC.PLACE_AREA
        for e in range(len(cls)):
            ids = cls[e][valid[e]]
            assert len(set(ids)) == 5
            assert (s.goal_count[e] == np.bincount(ids, minlength=K.NUM_CLASSES)).all()
            p, r = s.objects.pos[e][valid[e]], K.CLASS_SIZE[ids] / 2
            assert ((p[:, 0] - r >= ax0 - 1e-5) & (p[:, 0] + r <= ax1 + 1e-5)).all()
            assert ((p[:, 1] - r >= az0 - 1e-5) & (p[:, 1] + r <= az1 + 1e-5)).all()
            d = np.linalg.norm(p[:, None] - p[None], axis=-1)
            assert (d + np.eye(5) * 99 >= r[:, None] + r[None] + 0.3 - 1e-5).all()  # no overlap
            assert 9 <= np.linalg.norm(s.scene.goal_pos[e] - p.mean(0)) <= 16
            near = SC.rect_distance(
                s.agents.pos[e, :2], np.array([[(ax0 + ax1) / 2, (az0 + az1) / 2, ax1 - ax0, az1 - az0]])
            )
            assert (near <= SC.AGENT_NEAR_AREA + 0.1).all()
        assert np.allclose(s.scene.goal_height, 1.2) and (s.agents.ability[:, 0] == K.ABILITY["frail"]).all()
    totals = np.concatenate([s.total for s in _each(sets, "furniture")])
    assert len(np.unique(totals)) > 10


# -- splits ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("task", K.TASKS)
def test_splits_use_their_plans(sets, task):
    test, s_test = sets[task, "test"]
    train, s_train = sets[task, "train"]
    if task in T.TASK_PLAN:
        assert set(test.plans) == set(train.plans) == {T.TASK_PLAN[task]}
        assert len(set(test.seeds) & set(train.seeds)) == 0
    else:
        assert [(p, int(i)) for p, i in zip(test.plans, test.layouts)] == [
            (p, i) for p in SC.TEST_PLANS for i in range(3)
        ]
        assert set(train.plans) == set(SC.TRAIN_PLANS) - set(T.VALIDATION_PLANS) and set(train.layouts) == {0, 1, 2}
    assert (s_test.scene.plan == [SC.PLAN[p] for p in test.plans]).all()
    assert (s_train.scene.plan == [SC.PLAN[p] for p in train.plans]).all()
    assert (s_test.scene.layout == test.layouts).all()
    assert list(test.seeds) == [123456 * i for i in range(12)]
    assert len(train) == 64 and len(set(train.seeds)) == 64


def test_determinism(sets):
    for task in ("normal", "shopping", "furniture"):
        again = T.make_split(task, "test", 0)
        ref = sets[task, "test"][0]
        same = jax.tree_util.tree_map(
            lambda a, b: np.array_equal(np.asarray(a), np.asarray(b)), ref.states, again.states
        )
        assert all(jax.tree_util.tree_leaves(same))
        other = T.make_split(task, "test", 1)
        assert not (np.asarray(other.states.objects.pos) == np.asarray(ref.states.objects.pos)).all()
        a = T.generate(task, ref.plans[0], 0, np.random.default_rng(7))
        b = T.generate(task, ref.plans[0], 0, np.random.default_rng(7))
        c = T.generate(task, ref.plans[0], 0, np.random.default_rng(8))
        assert all((x == y).all() for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)))
        assert not all(np.array_equal(x, y) for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(c)))
    # a training set's episodes differ from each other
    s = sets["normal", "train"][1]
    assert len({g.tobytes() for g in s.goal_count}) > 3 and len({p.tobytes() for p in s.objects.pos}) == 64
    assert T.cached_split("furniture", "test") is T.cached_split("furniture", "test")


#: sha256 (first 16 hex digits) of every leaf of ``make_split(task, "test", 0)`` (dtype, shape, bytes), recorded
#: from the code before the validation split was added (commit d4709fa): the test split must not move
TEST_DIGESTS = {
    "normal": "23dbacd8ebcfe883",
    "high_target": "a6da93057ad938e0",
    "high_container": "5f7d4ae921d54792",
    "high_goalplace": "9b871d613ec753ce",
    "low_target": "a92c718075016f3e",
    "obstacle": "77db1ebcbfe1eaba",
    "shopping": "8db4cfc351ae8198",
    "furniture": "252c57fbed3f4737",
}


def _digest(states) -> str:
    h = hashlib.sha256()
    for leaf in jax.tree_util.tree_leaves(states):
        a = np.asarray(leaf)
        h.update(str(a.dtype).encode())
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def test_test_split_is_byte_identical_to_the_recorded_one(sets):
    assert {task: _digest(sets[task, "test"][1]) for task in K.TASKS} == TEST_DIGESTS


@pytest.mark.parametrize("task", K.TASKS)
def test_validation_is_disjoint_from_train_and_test(sets, task):
    """Validation holds out a training plan (all its layouts) that train no longer uses, and draws its own seeds
    (outdoor tasks: the same scene, seeds disjoint from train's and test's)."""
    val, s_val = sets[task, "validation"]
    train, test = sets[task, "train"][0], sets[task, "test"][0]
    assert len(val) == T.VALIDATION_EPISODES and len(set(val.seeds)) == len(val)
    assert not set(val.seeds) & set(train.seeds) and not set(val.seeds) & set(test.seeds)
    assert (s_val.scene.plan == [SC.PLAN[p] for p in val.plans]).all()
    if task in T.TASK_PLAN:
        assert set(val.plans) == {T.TASK_PLAN[task]}
    else:
        assert set(val.plans) == set(T.VALIDATION_PLANS) and set(val.layouts) == {0, 1, 2}
        assert not set(val.plans) & set(train.plans) and not set(val.plans) & set(test.plans)
        assert set(val.plans) <= set(SC.TRAIN_PLANS)
    # deterministic, and its own stream: a bigger validation set starts with the same episodes
    assert T.split_episodes(task, "validation", 0) == T.split_episodes(task, "validation", 0, 20)[:12]
    assert [s for *_, s in T.split_episodes(task, "validation", 1)] != list(val.seeds)


def test_validation_is_deterministic(sets):
    again = T.make_split("normal", "validation", 0)
    assert _digest(again.states) == _digest(sets["normal", "validation"][1])


def test_errors():
    with pytest.raises(ValueError, match="unknown CHAIC task 'cooking'.*normal.*furniture"):
        T.make_split("cooking", "test")
    with pytest.raises(ValueError, match="unknown CHAIC task split 'valid'.*train.*validation.*test"):
        T.make_split("normal", "valid")
    with pytest.raises(ValueError, match="unknown CHAIC plan '3a'.*1a.*5c"):
        T.generate("normal", "3a", 0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="street"):
        T.generate("shopping", "1a", 0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="indoor"):
        T.generate("normal", "yard", 0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="layouts 0..2"):
        SC.layout("1a", 3)
    with pytest.raises(ValueError, match="size"):
        T.make_split("normal", "test", size=13)


def test_train_seeds_depend_on_the_task_and_test_seeds_do_not():
    """Each task's train bank draws its own seeds (they were shared episode by episode); the test split's
    seeds stay the documented ``123456 * i``."""
    train = {task: [s for _, _, s in T.split_episodes(task, "train", 0, 16)] for task in K.TASKS}
    assert len({tuple(s) for s in train.values()}) == len(K.TASKS)
    assert len({s[0] for s in train.values()}) == len(K.TASKS)
    for task in K.TASKS:
        assert [s for _, _, s in T.split_episodes(task, "test", 0)] == [123456 * i for i in range(12)]
