"""On-device level generation against minigrid 3.2.0's generators: statistics and solvability.

The CI version compares 512 jaxsoc levels with 512 minigrid levels per level id by Pearson's chi-square
(tail probability 1e-4) on every statistic of ``babyai.statistics``; the full comparison, with
total-variation distances over 4000 levels, is ``scripts/babyai_distribution.py``.
"""

from __future__ import annotations

import functools

import jax
import numpy as np
import pytest
from babyai_reference import PAPER_LEVELS
from tiers import ci_subset

import jaxsoc
from jaxsoc.envs.babyai import solvability
from jaxsoc.envs.babyai import statistics as S
from jaxsoc.envs.babyai.minigrid_levels import sample_minigrid_levels

NUM = 512
solvable = jax.jit(jax.vmap(solvability.solvable))


@functools.cache
def ours(name: str):
    return S.sample_levels(f"BabyAI-{name}-v0", NUM, seed=1)


@functools.cache
def reference(name: str):
    return sample_minigrid_levels(name, range(NUM))


def stats(levels, name: str) -> dict[str, list]:
    return S.level_statistics(levels, jaxsoc.make(f"BabyAI-{name}-v0")[1].room_size)


def consistent(a: list, b: list) -> tuple[bool, float]:
    statistic, dof = S.chi_square(a, b)
    limit = S.chi_square_quantile(dof)
    return statistic <= limit, statistic / max(limit, 1e-9)


#: in CI: one level of each generator module and the full grammar (BossLevel); the others run with -m slow
CI_LEVELS = ("GoToRedBallGrey", "GoToObj", "GoToLocal", "PickupLoc", "PutNextLocal", "BossLevel")


@pytest.mark.parametrize("name", ci_subset(PAPER_LEVELS, CI_LEVELS))
def test_level_statistics_match_minigrid_and_levels_are_solvable(name):
    mine, theirs = stats(ours(name), name), stats(reference(name), name)
    for stat in S.STATISTICS:
        if stat in S.KNOWN_DIFFERENCES.get(name, ()):
            assert not consistent(mine[stat], theirs[stat])[0], f"{name} {stat}: the known difference vanished"
            continue
        ok, ratio = consistent(mine[stat], theirs[stat])
        assert ok, f"{name}: {stat} differs from minigrid (chi-square at {ratio:.2f}x the 1e-4 quantile)"
    assert np.all(solvable(ours(name))), f"{name}: jaxsoc generated an unsolvable level"


def test_the_comparison_tells_levels_apart():
    # GoToLocal (8 distractors) and GoToObj (1 object) in one room, PutNextLocal against GoToLocal
    assert not consistent(
        stats(ours("GoToLocal"), "GoToLocal")["objects"], stats(ours("GoToObj"), "GoToObj")["objects"]
    )[0]
    local, putnext = stats(ours("GoToLocal"), "GoToLocal"), stats(reference("PutNextLocal"), "PutNextLocal")
    assert not consistent(local["max_steps"], putnext["max_steps"])[0]
    assert not consistent(local["action"], putnext["action"])[0]


def test_solvability_check_finds_minigrids_locked_in_keys():
    # reference §0.2: in seeds 0-199 these minigrid levels lock their only key inside the locked room
    bugged = {"Unlock": [63, 161, 165, 178], "GoToImpUnlock": [6, 14, 35, 63]}
    for name, seeds in bugged.items():
        flags = np.asarray(solvable(sample_minigrid_levels(name, seeds + [0, 1, 2])))
        np.testing.assert_array_equal(flags, [False] * len(seeds) + [True] * 3)


# ---------------------------------------------------------------------------------------------------------
# static loops: the flood fill and the rejection sampler

import jax.numpy as jnp  # noqa: E402

from jaxsoc.envs.babyai import roomgrid as RG  # noqa: E402
from jaxsoc.envs.babyai.levels import LEVELS, LevelGenerator  # noqa: E402
from jaxsoc.envs.gridworld import constants as C  # noqa: E402


def reference_fill(passable: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, int]:
    """A textbook BFS: the cells reached from ``start`` through passable cells (a reached impassable cell is
    not left), and the largest distance from the start among the passable reached cells."""
    height, width = passable.shape
    reach = start.copy()
    distance = np.where(start, 0, -1)
    queue = [tuple(c) for c in np.argwhere(start)]
    for y, x in queue:  # the list grows while it is read: a FIFO queue
        if not passable[y, x]:
            continue
        for ny, nx in ((y, x + 1), (y + 1, x), (y, x - 1), (y - 1, x)):
            if 0 <= ny < height and 0 <= nx < width and not reach[ny, nx]:
                reach[ny, nx], distance[ny, nx] = True, distance[y, x] + 1
                queue.append((ny, nx))
    return reach, int(np.max(np.where(reach & passable, distance, 0)))


def maze(rng: np.random.Generator, height: int, width: int) -> np.ndarray:
    """A random depth-first maze (``bool[H, W]``, True = passage) on the odd cells: long winding corridors."""
    open_ = np.zeros((height, width), bool)
    if height < 2 or width < 2:
        return ~open_
    open_[1, 1] = True
    stack = [(1, 1)]
    while stack:
        y, x = stack[-1]
        steps = [
            (dy, dx) for dy, dx in ((0, 2), (2, 0), (0, -2), (-2, 0)) if 0 < y + dy < height and 0 < x + dx < width
        ]
        steps = [(dy, dx) for dy, dx in steps if not open_[y + dy, x + dx]]
        if not steps:
            stack.pop()
            continue
        dy, dx = steps[rng.integers(len(steps))]
        open_[y + dy // 2, x + dx // 2] = open_[y + dy, x + dx] = True
        stack.append((y + dy, x + dx))
    return open_


def random_fills(rng: np.random.Generator, height: int, width: int, count: int):
    """``count`` (passable, start) pairs: random masks of any density, mazes and mazes with holes; one start
    cell, or a few scattered ones (passable or not)."""
    passable = np.zeros((count, height, width), bool)
    for n in range(count):
        kind = n % 3
        if kind == 0:
            passable[n] = rng.random((height, width)) < rng.uniform(0.1, 1.0)
        else:
            passable[n] = maze(rng, height, width)
            if kind == 2:
                passable[n] |= rng.random((height, width)) < 0.05
    start = np.zeros_like(passable)
    for n in range(count):
        if n % 4 == 3:
            start[n] = rng.random((height, width)) < 0.03
        else:
            cells = np.argwhere(passable[n]) if passable[n].any() and n % 8 else np.argwhere(np.ones_like(passable[n]))
            y, x = cells[rng.integers(len(cells))]
            start[n, y, x] = True
    return passable, start


@pytest.mark.parametrize("shape", [(8, 8), (22, 22), (13, 7), (1, 1), (2, 32), (5, 40)])
def test_flood_fill_matches_a_reference_bfs(shape):
    # (5, 40) takes the unpacked path (rows wider than 32 cells)
    rng = np.random.default_rng(sum(shape))
    passable, start = random_fills(rng, *shape, 96)
    reach = np.asarray(jax.jit(jax.vmap(RG.flood_fill))(passable, start))
    for n in range(len(passable)):
        expected, _ = reference_fill(passable[n], start[n])
        np.testing.assert_array_equal(reach[n], expected, err_msg=f"{shape} case {n}")


def room_grid_mazes(lay: RG.Layout, rng: np.random.Generator, count: int):
    """Room grids with a door (of any state) on most inner walls and a maze of balls in every room (the cells
    beside the doors cleared, a few others too), agents on random open cells. Returns a batched
    ``RoomGridState`` and the host grids."""
    grids, agents, door_pos = [], [], []
    inner = lay.room_size - 2
    for n in range(count):
        grid = lay.base_grid.copy()
        corridors = np.zeros((lay.height, lay.width), bool)
        for x0, y0 in lay.room_top:
            corridors[y0 + 1 : y0 + 1 + inner, x0 + 1 : x0 + 1 + inner] = maze(rng, inner + 1, inner + 1)[1:, 1:]
        corridors |= rng.random(corridors.shape) < 0.03 * (n % 3)
        offsets = rng.integers(0, inner, lay.num_walls)
        along = np.where(lay.wall_vertical[:, None], [0, 1], [1, 0])
        doors = lay.wall_start + along * offsets[:, None]
        for x, y in doors:
            if rng.random() < 0.85:
                grid[y, x, C.TYPE], grid[y, x, C.STATE] = C.DOOR, rng.choice([C.OPEN, C.CLOSED, C.LOCKED])
                corridors[y - 1 : y + 2, x] = corridors[y, x - 1 : x + 2] = True
        blocked = (grid[..., C.TYPE] == C.EMPTY) & ~corridors
        grid[blocked, C.TYPE], grid[blocked, C.COLOR] = C.BALL, rng.integers(0, 6, int(blocked.sum()))
        free = np.argwhere(grid[..., C.TYPE] == C.EMPTY)
        y, x = free[rng.integers(len(free))]
        grids.append(grid)
        agents.append([x, y])
        door_pos.append(doors)
    grids = np.stack(grids)
    state = RG.RoomGridState(
        grid=jnp.asarray(grids),
        agent_pos=jnp.asarray(agents, jnp.int32),
        agent_dir=jnp.zeros(count, jnp.int32),
        door_pos=jnp.asarray(np.stack(door_pos), jnp.int32).reshape(count, lay.num_walls, 2),
        door_on=jnp.ones((count, lay.num_walls), bool),
        door_color=jnp.zeros((count, lay.num_walls), jnp.int32),
        door_locked=jnp.zeros((count, lay.num_walls), bool),
        locked_room=jnp.full(count, -1, jnp.int32),
        ok=jnp.ones(count, bool),
    )
    return state, grids


@pytest.mark.parametrize("sizes", [(8, 1, 1), (8, 3, 3), (6, 2, 3)])
def test_objects_reachable_fills_far_enough_on_room_grid_mazes(sizes):
    # its fill takes open_cells - 1 steps (335 on 3x3 rooms of 8): exact on mazes whose paths run long
    lay = RG.layout(*sizes)
    open_cells = lay.num_rooms * (lay.room_size - 2) ** 2 + lay.num_walls
    assert RG.open_cells(lay.height, lay.width, lay.num_walls) == open_cells
    rng = np.random.default_rng(sum(sizes))
    state, grids = room_grid_mazes(lay, rng, 48)
    reachable = np.asarray(jax.jit(jax.vmap(RG.objects_reachable))(state))
    distances = []
    for n, grid in enumerate(grids):
        kind = grid[..., C.TYPE]
        start = np.zeros(kind.shape, bool)
        start[state.agent_pos[n, 1], state.agent_pos[n, 0]] = True
        reach, distance = reference_fill((kind == C.EMPTY) | (kind == C.DOOR), start)
        distances.append(distance)
        expected = not np.any((kind != C.EMPTY) & (kind != C.WALL) & ~reach)
        assert reachable[n] == expected, f"{sizes} case {n}"
    # the mazes exercise long fills: one step fewer than the longest distance would not do
    n = int(np.argmax(distances))
    assert distances[n] > open_cells // 6, distances[n]
    kind = grids[n][..., C.TYPE]
    passable, start = (kind == C.EMPTY) | (kind == C.DOOR), np.zeros(kind.shape, bool)
    start[state.agent_pos[n, 1], state.agent_pos[n, 0]] = True
    short = RG.flood_fill(jnp.asarray(passable), jnp.asarray(start), steps=distances[n] - 1)
    assert np.any(np.asarray(short) != reference_fill(passable, start)[0])


@pytest.mark.parametrize("parallel", [1, 5, 16])
def test_sample_keeps_the_first_accepted_attempt_of_the_sequential_key_chain(parallel):
    # attempt i draws from the i-th key of `key, sub = split(key)`, as the former sequential rejection loop;
    # the 16 attempts of GoToLocal run one, five (the last round padded) or sixteen at a time
    generator, params = LEVELS["BabyAI-GoToLocal-v0"]
    assert generator.max_tries == 16
    lay = RG.layout(params.room_size, params.num_rows, params.num_cols)
    attempt = jax.jit(lambda k: generator._try(k, lay))
    sampler = LevelGenerator(generator.name, generator.attempt, parallel=parallel)
    keys = jax.random.split(jax.random.key(5), 48)
    world, instruction, accepted, tries = jax.jit(jax.vmap(lambda k: sampler.sample(k, params)))(keys)
    assert np.all(accepted) and np.max(tries) > 1
    for n in range(len(keys)):
        key = keys[n]
        ok, expected_tries = False, 0
        while not ok:
            key, sub = jax.random.split(key)
            level, expected_instruction, ok = attempt(sub)
            expected_tries += 1
        assert int(tries[n]) == expected_tries
        np.testing.assert_array_equal(world.grid[n], level.grid)
        np.testing.assert_array_equal(world.agent_pos[n], level.agent_pos)
        for a, b in zip(jax.tree.leaves(instruction), jax.tree.leaves(expected_instruction)):
            np.testing.assert_array_equal(a[n], b)
    # when every attempt is rejected, the last one is returned and reported
    reject = lambda bits, lay: (*generator.attempt(bits, lay)[:2], jnp.bool_(False))  # noqa: E731
    never = LevelGenerator("never", reject, max_tries=3, parallel=min(parallel, 2))
    world, _, accepted, tries = jax.jit(never.sample)(keys[0], params)
    key = keys[0]
    for _ in range(3):
        key, sub = jax.random.split(key)
    assert not bool(accepted) and int(tries) == 3
    np.testing.assert_array_equal(world.grid, attempt(sub)[0].grid)
