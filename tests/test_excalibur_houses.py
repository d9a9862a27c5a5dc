"""EXCALIBUR's procedural houses (``excalibur.houses``) and top-down renderer (``excalibur.render``)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tolerance import assert_trees_match

from jaxsoc.envs.excalibur import catalogue as K
from jaxsoc.envs.excalibur import houses as H
from jaxsoc.envs.excalibur import render as R
from jaxsoc.envs.excalibur import state as S
from jaxsoc.envs.excalibur import world as W
from jaxsoc.envs.gridworld import placement as P

BATCH = 64
#: sizes and masses drawn in two programs: a few float32 ulps (positive, a handful of operations, no cancellation)
ATTRIBUTES = {"rtol": 1e-6, "atol": 0.0}
DEFAULT = H.HouseConfig()
# 3 x 3 rooms (the middle one has four doorways), and a 1 x 3 house (fewer rooms than room types)
NINE = H.HouseConfig(
    num_rows=3,
    num_cols=3,
    furniture_per_room=(1, 3),
    items_per_receptacle=(0, 2),
    floor_items_per_room=(0, 1),
    max_objects=64,
    nest_prob=1.0,
)
# two rooms of the smallest size (fewer rooms than room types; the two cells beside the centre kept free)
SMALL = H.HouseConfig(
    num_rows=1, num_cols=2, room_size=5, furniture_per_room=(1, 1), floor_items_per_room=(0, 0), max_objects=16
)
CONFIGS = {"default": DEFAULT, "nine": NINE, "small": SMALL}


def np_tree(tree):
    return jax.tree.map(np.asarray, tree)


def index(tree, i):
    return jax.tree.map(lambda x: x[i], tree)


@pytest.fixture(scope="module")
def batches():
    """One batch of ``BATCH`` houses per config, as numpy, with ``free_floor`` and ``reachable`` of each."""

    @functools.partial(jax.jit, static_argnums=1)
    def batch(key, config):
        houses = H.generate_batch(key, config, BATCH)
        return houses, jax.vmap(H.free_floor)(houses), jax.vmap(H.reachable)(houses)

    return {name: np_tree(batch(jax.random.key(7), config)) for name, config in CONFIGS.items()}


def test_shapes_and_dtypes(batches):
    houses = batches["default"][0]
    n, q, h, w, r = 48, 16, 13, 13, 4
    expected = {
        "walls": ((h, w), np.bool_),
        "room": ((h, w), np.int8),
        "room_type": ((r,), np.int8),
        "valid": ((n,), np.bool_),
        "type": ((n,), np.int16),
        "colors": ((n, 2), np.int8),
        "materials": ((n, 3), np.int8),
        "dims": ((n, 3), np.float32),
        "mass": ((n,), np.float32),
        "cell": ((n, 2), np.int16),
        "parent": ((n,), np.int16),
        "link": ((n,), np.int8),
        "order": ((n,), np.int32),
        "spawn_pos": ((2,), np.int32),
        "spawn_dir": ((), np.int32),
        "questions": ((q, S.QUESTION_SLOTS), np.int16),
        "answers": ((q,), np.int16),
        "num_questions": ((), np.int32),
    }
    for field, (shape, dtype) in expected.items():
        value = getattr(houses, field)
        assert value.shape == (BATCH, *shape), field
        assert value.dtype == dtype, field
    assert (DEFAULT.height, DEFAULT.width, DEFAULT.num_rooms) == (h, w, r)
    assert not houses.questions.any() and (houses.answers == -1).all() and not houses.num_questions.any()
    assert (houses.order == np.arange(n)).all()


def test_deterministic_jit_and_vmap_agree():
    key = jax.random.key(3)
    one = np_tree(H.generate(key, DEFAULT))
    again = np_tree(H.generate(key, DEFAULT))
    jax.tree.map(np.testing.assert_array_equal, one, again)
    other = np_tree(H.generate(jax.random.key(4), DEFAULT))
    assert not np.array_equal(one.type, other.type) or not np.array_equal(one.cell, other.cell)
    batch = np_tree(H.generate_batch(key, DEFAULT, 5))
    keys = jax.random.split(key, 5)
    for i in (0, 4):  # vmapped: another program; the sizes and masses to rounding (ATTRIBUTES)
        assert_trees_match(index(batch, i), np_tree(H.generate(keys[i], DEFAULT)), **ATTRIBUTES)


@pytest.mark.bitexact
def test_attributes_compiled_equal_op_by_op():
    """The floating-point stage gives the same colours and materials compiled and op by op, and the same sizes
    and masses to rounding: with XLA's default optimisations the compiled ``lo + u * (hi - lo)`` differs in the
    last bit or two (3 of these 48 sizes, measured), so "the same bits" holds only with most optimisations off
    (under ``jax.disable_jit()`` nothing is compiled as a whole; the whole generator is ``test_generate_op_by_op``)."""
    kind = jnp.arange(16, dtype=jnp.int32) * 5 % K.NUM_TYPES
    valid = jnp.arange(16) < 12

    def attributes(key):
        return H._attributes(P.Bits(jax.random.bits(key, (16 * 22,), jnp.uint32)), kind, valid)

    compiled = jax.jit(attributes)(jax.random.key(5))
    with jax.disable_jit():
        eager = attributes(jax.random.key(5))
    assert_trees_match(compiled, eager, **ATTRIBUTES)


@pytest.mark.bitexact
@pytest.mark.slow
def test_generate_op_by_op():
    """A whole house compiled equals it generated op by op (slow: every op compiles on its own)."""
    key = jax.random.key(3)
    with jax.disable_jit():
        eager = np_tree(H.generate(key, SMALL))
    assert_trees_match(np_tree(H.generate(key, SMALL)), eager, **ATTRIBUTES)


def neighbours(x, y):
    return [(x + 1, y), (x, y + 1), (x - 1, y), (x, y - 1)]


def check_house(h, free, reach, config: H.HouseConfig):
    """Asserts the invariants of one numpy house."""
    size, hh, ww = config.room_size, config.height, config.width
    step = size - 1
    # layout: outer walls, doorways are the gaps in the inner walls, rooms -1 exactly on walls
    on_grid = (np.arange(hh)[:, None] % step == 0) | (np.arange(ww)[None, :] % step == 0)
    assert h.walls[0].all() and h.walls[-1].all() and h.walls[:, 0].all() and h.walls[:, -1].all()
    assert (h.walls <= on_grid).all()
    doorway = on_grid & ~h.walls
    assert ((h.room == -1) == h.walls).all()
    num_walls = config.num_rows * (config.num_cols - 1) + config.num_cols * (config.num_rows - 1)
    assert config.num_rooms - 1 <= doorway.sum() <= num_walls  # connected; at most one doorway per inner wall
    for y, x in zip(*np.nonzero(doorway)):
        assert (x % step == 0) != (y % step == 0)  # never a wall crossing
    front = np.zeros_like(doorway)
    for y, x in zip(*np.nonzero(doorway)):
        for nx, ny in neighbours(x, y):
            front[ny, nx] |= not h.walls[ny, nx]
    # room types
    types = h.room_type.astype(int)
    assert ((types >= 0) & (types < K.NUM_ROOM_TYPES)).all()
    if config.num_rooms >= K.NUM_ROOM_TYPES:
        assert set(types) == set(range(K.NUM_ROOM_TYPES))
    else:
        assert len(set(types)) == config.num_rooms
    n = h.valid.shape[0]
    count = h.valid.sum()
    assert (h.valid == (np.arange(n) < count)).all()  # packed, no holes
    # invalid slots
    bad = ~h.valid
    assert (h.type[bad] == 0).all() and (h.parent[bad] == -1).all() and (h.link[bad] == S.FLOOR).all()
    assert (h.colors[bad] == -1).all() and (h.materials[bad] == -1).all()
    assert (h.dims[bad] == 0).all() and (h.mass[bad] == 0).all() and (h.cell[bad] == 0).all()

    kind = h.type.astype(int)
    standing = {}
    furniture_per_room = np.zeros(config.num_rooms, int)
    floor_per_room = np.zeros(config.num_rooms, int)
    children = np.zeros(n, int)
    for i in np.flatnonzero(h.valid):
        t = kind[i]
        x, y = (int(v) for v in h.cell[i])
        room = h.room[y, x]
        room_type = types[room]
        p = int(h.parent[i])
        if h.link[i] == S.FLOOR:
            assert p == -1
            assert not h.walls[y, x] and not doorway[y, x] and not front[y, x]
            ring = [h.walls[ny, nx] for nx, ny in neighbours(x, y)]
            assert sum(ring) == 1  # next to exactly one wall: in the ring, not a corner
            assert (x, y) not in standing
            standing[(x, y)] = i
            if K.IS_FURNITURE[t]:
                assert K.ROOM_FURNITURE[room_type, t]
                furniture_per_room[room] += 1
            else:
                assert K.IS_PICKUP[t] and K.ON_FLOOR[t] and K.ROOM_ITEMS[room_type, t]
                floor_per_room[room] += 1
        else:
            assert K.IS_PICKUP[t] and K.ROOM_ITEMS[room_type, t]
            assert 0 <= p < i and h.valid[p]
            assert tuple(h.cell[p]) == (x, y)
            pt = kind[p]
            assert h.link[i] == (S.IN if K.IS_CONTAINER[pt] else S.ON)
            assert K.IS_SURFACE[pt] or K.IS_CONTAINER[pt]
            children[p] += 1
            if K.IS_PICKUP[pt]:  # nested: in / on a small receptacle standing on furniture
                assert K.IS_SMALL_RECEPTACLE[pt] and not K.IS_SMALL_RECEPTACLE[t]
                gp = int(h.parent[p])
                assert gp >= 0 and K.IS_FURNITURE[kind[gp]] and h.parent[gp] == -1
            else:
                assert h.link[p] == S.FLOOR
        # every object is faced by a reachable free floor cell
        assert any(reach[ny, nx] for nx, ny in neighbours(x, y))
        # attributes
        colors = [c for c in h.colors[i] if c >= 0]
        palette = set(K.TYPE_COLORS[t][K.TYPE_COLORS[t] >= 0])
        assert 1 <= len(colors) <= min(2, len(palette)) and len(set(colors)) == len(colors)
        assert set(colors) <= palette and (h.colors[i][len(colors) :] == -1).all()
        materials = [m for m in h.materials[i] if m >= 0]
        palette = set(K.TYPE_MATERIALS[t][K.TYPE_MATERIALS[t] >= 0])
        assert 1 <= len(materials) <= min(3, len(palette)) and len(set(materials)) == len(materials)
        assert set(materials) <= palette and (h.materials[i][len(materials) :] == -1).all()
        d = h.dims[i]
        assert d[0] >= d[1] >= d[2] > 0
        lo, hi = K.SIZE_RANGE[t]
        assert lo * 0.8 * (1 - 1e-6) <= d[0] <= hi * (1 + 1e-6)
        np.testing.assert_allclose(d[1:], d[0] * K.ASPECT[t], rtol=1e-5)
        lo, hi = K.MASS_RANGE[t]
        assert lo * 0.5 * (1 - 1e-6) <= h.mass[i] <= hi * 1.5 * (1 + 1e-6)
    # items stay within their receptacle's budget; small receptacles take at most one item
    for i in np.flatnonzero(h.valid):
        if K.IS_PICKUP[kind[i]]:
            assert children[i] <= (1 if K.IS_SMALL_RECEPTACLE[kind[i]] else 0)
        else:
            assert children[i] <= config.items_per_receptacle[1]
    lo, hi = config.furniture_per_room
    assert ((furniture_per_room >= lo) & (furniture_per_room <= hi)).all()
    lo, hi = config.floor_items_per_room
    assert ((floor_per_room >= lo) & (floor_per_room <= hi)).all()
    # distinct furniture types within a room while the pool lasts
    for room in range(config.num_rooms):
        ts = [kind[i] for (x, y), i in standing.items() if h.room[y, x] == room and K.IS_FURNITURE[kind[i]]]
        assert len(set(ts)) == min(len(ts), K.ROOM_FURNITURE[types[room]].sum())
    # free floor, reachability and the spawn
    blocked = np.zeros_like(free)
    for x, y in standing:
        blocked[y, x] = True
    assert (free == (~h.walls & ~blocked)).all()
    assert (reach == free).all()  # all free floor is reachable from the spawn
    sx, sy = (int(v) for v in h.spawn_pos)
    assert free[sy, sx] and not doorway[sy, sx] and 0 <= h.spawn_dir < 4


@pytest.mark.parametrize("name", list(CONFIGS))
def test_invariants(batches, name):
    houses, free, reach = batches[name]
    for i in range(BATCH):
        check_house(index(houses, i), free[i], reach[i], CONFIGS[name])


def test_distributions(batches):
    houses = batches["default"][0]
    valid = houses.valid
    kind = houses.type.astype(int)
    num_colors = (houses.colors >= 0).sum(-1)[valid]
    assert {1, 2} <= set(num_colors)
    assert {1, 2, 3} <= set((houses.materials >= 0).sum(-1)[valid])
    # the mass factor spreads over [0.5, 1.5] and the size factor over [0.8, 1] (types with one base value)
    fixed = valid & (K.MASS_RANGE[kind, 0] == K.MASS_RANGE[kind, 1])
    beta = houses.mass[fixed] / K.MASS_RANGE[kind[fixed], 0]
    assert beta.min() < 0.6 and beta.max() > 1.4
    fixed = valid & (K.SIZE_RANGE[kind, 0] == K.SIZE_RANGE[kind, 1])
    alpha = houses.dims[fixed, 0] / K.SIZE_RANGE[kind[fixed], 0]
    assert alpha.min() < 0.82 and alpha.max() > 0.98
    links = houses.link[valid]
    assert {S.FLOOR, S.ON, S.IN} <= set(links)
    nested = valid & (houses.parent >= 0)
    nested &= K.IS_PICKUP[kind[np.arange(BATCH)[:, None], np.maximum(houses.parent, 0)]]
    assert nested.any()
    walls_line = np.zeros((13, 13), bool)
    walls_line[::6, :] = walls_line[:, ::6] = True
    doors = (~houses.walls & walls_line).sum((1, 2))
    assert set(doors) == {3, 4}  # connect_all's spanning tree, sometimes one extra doorway
    assert len({tuple(h) for h in houses.room_type}) > 5


def test_free_floor_and_reachable_on_a_hand_made_house():
    house = H.generate(jax.random.key(0), DEFAULT)
    walls = jnp.ones((5, 5), bool).at[1:4, 1:4].set(False).at[2, 2].set(True)
    house = house.replace(
        walls=walls,
        valid=jnp.zeros_like(house.valid).at[0].set(True),
        cell=house.cell.at[0].set(jnp.array([2, 1], jnp.int16)),
    )
    house = house.replace(link=house.link.at[0].set(S.FLOOR), spawn_pos=jnp.array([1, 1], jnp.int32))
    free = np.asarray(H.free_floor(house))
    assert free.sum() == 7 and not free[1, 2] and not free[2, 2]
    reach = np.asarray(H.reachable(house))
    assert (reach == free).all()  # the ring around the middle wall, less (2, 1), is still connected
    house = house.replace(valid=house.valid.at[1].set(True), cell=house.cell.at[1].set(jnp.array([1, 2], jnp.int16)))
    house = house.replace(link=house.link.at[1].set(S.FLOOR))
    reach = np.asarray(H.reachable(house))
    assert reach.sum() == 1 and reach[1, 1]  # walled in at the corner


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"room_size": 4}, "room_size"),
        ({"num_rows": 0}, "num_rows"),
        ({"num_cols": 1.5}, "num_cols"),
        ({"furniture_per_room": (3, 2)}, "furniture_per_room"),
        ({"items_per_receptacle": (-1, 2)}, "items_per_receptacle"),
        ({"floor_items_per_room": 2}, "floor_items_per_room"),
        ({"nest_prob": 1.5}, "nest_prob"),
        ({"max_objects": 20}, "max_objects"),
        ({"max_objects": H.MAX_OBJECTS + 1}, "max_objects"),
        ({"max_questions": 0}, "max_questions"),
        ({"room_size": 5}, "at most"),
        ({"furniture_per_room": (2, 6), "max_objects": 64}, "at most"),
    ],
)
def test_bad_configs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        H.HouseConfig(**kwargs)


def test_config_is_hashable_and_normalised():
    a = H.HouseConfig(furniture_per_room=[2, 4])
    assert a == DEFAULT and hash(a) == hash(DEFAULT) and a.furniture_per_room == (2, 4)
    assert DEFAULT.num_candidates == 4 * (4 + 2 + 2 * 4 * 3)


def test_presets():
    assert H.preset("default") == DEFAULT and not DEFAULT.drops_nothing
    big = H.preset("3x3")
    assert (big.num_rooms, big.drops_nothing, big.max_objects) == (9, True, big.num_candidates)
    assert big.max_objects > np.iinfo(np.int8).max  # slot indices past int8: parents are int16
    shapes = jax.eval_shape(lambda k: H.generate(k, big), jax.random.key(0))
    assert shapes.parent.dtype == jnp.int16 and shapes.valid.shape == (big.max_objects,)
    with pytest.raises(ValueError, match="unknown EXCALIBUR house preset 'huge'.*'3x3'"):
        H.preset("huge")


def test_3x3_houses_keep_their_invariants():
    big = H.preset("3x3")
    houses = H.generate_batch(jax.random.key(11), big, 8)
    free, reach = (np.asarray(jax.vmap(f)(houses)) for f in (H.free_floor, H.reachable))
    houses = np_tree(houses)
    for i in range(8):
        check_house(index(houses, i), free[i], reach[i], big)


def test_fixed_work_no_while_loops():
    """Generation and the reachability fill are fixed work: loops with static trip counts lower to ``scan``."""
    jaxpr = jax.make_jaxpr(lambda k: H.reachable(H.generate(k, NINE)))(jax.random.key(0))
    assert "while[" not in str(jaxpr)


def test_no_jax_arrays_at_module_level():
    for module in (H, R):
        for name, value in vars(module).items():
            assert not isinstance(value, jax.Array), f"{module.__name__}.{name}"


# -- rendering -------------------------------------------------------------------------------------------------


TILE = 16


def pixel(img, x, y, fx=0.5, fy=0.5):
    """The RGB of the pixel at fraction ``(fx, fy)`` of cell ``(x, y)``."""
    return tuple(int(v) for v in img[int((y + fy) * TILE), int((x + fx) * TILE)])


def rgb(color) -> tuple[int, ...]:
    return tuple(int(v) for v in R.COLOR_RGB[color])


def test_render(batches):
    houses = batches["default"][0]
    # a house with an openable container holding an item, and a surface holding one
    kind = houses.type.astype(int)
    parent = houses.parent.astype(int)
    b = next(
        b
        for b in range(BATCH)
        if any(K.IS_OPENABLE[kind[b, max(p, 0)]] and p >= 0 for p in parent[b])
        and any(K.IS_SURFACE[kind[b, max(p, 0)]] and K.IS_FURNITURE[kind[b, max(p, 0)]] and p >= 0 for p in parent[b])
    )
    house = jax.tree.map(jnp.asarray, index(houses, b))
    state = W.initial_state(house)
    img = np.asarray(R.render(state, TILE))
    assert img.shape == (13 * TILE, 13 * TILE, 3) and img.dtype == np.uint8
    np.testing.assert_array_equal(img, np.asarray(R.render_house(house, TILE)))
    h = index(houses, b)
    # the agent's triangle: red just behind the cell's middle, along its heading
    sx, sy = (int(v) for v in h.spawn_pos)
    dx, dy = [(1, 0), (0, 1), (-1, 0), (0, -1)][int(h.spawn_dir)]
    assert pixel(img, sx, sy, 0.5 - 0.1 * dx, 0.5 - 0.1 * dy) == R.AGENT_RGB
    # a wall is dark
    assert pixel(img, 0, 0) == R.WALL_RGB
    furniture = [i for i in np.flatnonzero(h.valid) if K.IS_FURNITURE[kind[b, i]]]
    for i in furniture:  # a closed piece of furniture is filled with its first colour
        x, y = (int(v) for v in h.cell[i])
        assert pixel(img, x, y) == rgb(h.colors[i, 0])
    # an item on a surface shows at its spot, items in a closed container are hidden until it is opened
    on = next(i for i in np.flatnonzero(h.valid) if parent[b, i] >= 0 and K.IS_SURFACE[kind[b, parent[b, i]]])
    first = min(j for j in np.flatnonzero(h.valid) if tuple(h.cell[j]) == tuple(h.cell[on]) and parent[b, j] >= 0)
    x, y = (int(v) for v in h.cell[first])
    assert pixel(img, x, y, *R.SPOTS[0]) == rgb(h.colors[first, 0])
    inside = next(i for i in np.flatnonzero(h.valid) if parent[b, i] >= 0 and K.IS_OPENABLE[kind[b, parent[b, i]]])
    box = parent[b, inside]
    x, y = (int(v) for v in h.cell[box])
    spot = R.SPOTS[0]
    assert pixel(img, x, y, *spot) == rgb(h.colors[box, 0])
    opened = np.asarray(R.render(state.replace(is_open=state.is_open.at[box].set(True)), TILE))
    assert pixel(opened, x, y, *spot) == rgb(h.colors[inside, 0])
    floor = R.ROOM_RGB[h.room_type[h.room[y, x]]]
    # hollow: a frame in the container's colour around the floor, darkened
    assert pixel(opened, x, y, 0.5, 0.45) == tuple(int(v) for v in (floor * R.HOLLOW_SHADE).astype(np.uint8))
    assert pixel(opened, x, y, 0.5, 0.1) == rgb(h.colors[box, 0])
    assert pixel(img, x, y, 0.5, 0.1) == tuple(
        int(v) for v in (R.COLOR_RGB[h.colors[box, 0]] * R.BORDER_SHADE).astype(np.uint8)
    )
    # the held item is drawn at the agent and no longer at its cell
    moved = state.replace(held=jnp.int32(first), agent_dir=jnp.int32(0))
    held_img = np.asarray(R.render(moved, TILE))
    assert pixel(held_img, sx, sy, R.HELD_CENTRE, 0.5) == rgb(h.colors[first, 0])
    assert pixel(img, sx, sy, R.HELD_CENTRE, 0.5) == R.AGENT_RGB
    # vmappable
    frames = jax.vmap(lambda hs: R.render_house(hs, 8))(jax.tree.map(lambda x: jnp.asarray(x[:3]), houses))
    assert frames.shape == (3, 13 * 8, 13 * 8, 3)
    with pytest.raises(ValueError, match="tile"):
        R.render_house(house, 2)
