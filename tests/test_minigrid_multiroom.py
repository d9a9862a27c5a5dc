"""MiniGrid MultiRoom against minigrid 3.2.0: step for step, and the room layout by distribution.

Step for step: minigrid levels imported with ``jaxsoc.compat.from_minigrid`` are replayed through one jitted,
vmapped ``lax.scan`` of ``step_env`` (the four ids share the 25x25 shape): random play (some with a short
``max_steps``) and scripted runs that open every door and walk onto the goal. Generation: jaxsoc's rooms
(sizes, first corner, exit walls, door offsets and colours, agent and goal cells) against minigrid's
``env.rooms`` by chi-square per feature, the invariants of the layout, and the rate at which minigrid's
random walk completes a chain against jaxsoc's (the rate that sets ``multiroom.CHAINS``).
"""

from __future__ import annotations

import functools
from collections import deque

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from minigrid.envs.multiroom import MultiRoomEnv
from minigrid_dmm_reference import compare, pad_batch, stack
from minigrid_reference import INTERACT, UNIFORM, make_reference, record_episode, scan_replayer, solve

import jaxsoc
from jaxsoc.compat import from_minigrid
from jaxsoc.envs.babyai import statistics as S
from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld import multiroom as MR

IDS = list(MR.ENVS)
NUM_STEPS = 120


def consistent(a: list, b: list) -> bool:
    statistic, dof = S.chi_square(a, b)
    return statistic <= S.chi_square_quantile(dof)


@functools.cache
def _replayer():
    return scan_replayer(jaxsoc.make(IDS[0])[0])


def check_episodes(names, seeds) -> list[dict]:
    """Replays minigrid episodes of ``names`` (random play; every third seed a scripted solution; odd random
    seeds with a short ``max_steps``) and compares them step for step. Returns the minigrid records."""
    states, params, actions, records, labels = [], [], [], [], []
    for name in names:
        rooms = jaxsoc.make(name)[0].max_rooms
        for seed in seeds:
            rng = np.random.default_rng(7000 + seed)
            ref = make_reference(name)
            ref.reset(seed=seed)
            if seed % 3 == 0:
                planner = make_reference(name)
                planner.reset(seed=seed)
                plan = [("toggle", "door")] * (rooms - 1) + [("enter", "goal")]
                acts = np.full(NUM_STEPS, C.DONE, np.int32)
                solution = solve(planner, plan, max_actions=NUM_STEPS)
                acts[: len(solution)] = solution
            else:
                if seed % 2:
                    ref.unwrapped.max_steps = int(rng.integers(5, 40))
                acts = rng.choice(7, size=NUM_STEPS, p=INTERACT if seed % 3 == 1 else UNIFORM).astype(np.int32)
            env, state, param = from_minigrid(ref)
            assert env.mission_text(state) == ref.unwrapped.mission
            states.append(state)
            params.append(param)
            actions.append(acts)
            records.append(record_episode(ref, acts))
            labels.append((name, seed))
    batch = [pad_batch(x) for x in (states, params, actions)]
    outs = [np.asarray(o) for o in _replayer()(stack(batch[0]), jnp.asarray(np.stack(batch[2])), stack(batch[1]))]
    for i, ((name, seed), record) in enumerate(zip(labels, records)):
        compare(name, seed, [o[i] for o in outs], record, actions[i])
    return records


def test_multiroom_step_for_step():
    records = check_episodes(IDS, range(6))
    assert any(r["terminated"][-1] and r["reward"][-1] > 0 for r in records), "no episode reached the goal"
    assert any(r["truncated"][-1] for r in records), "truncation untested"
    opened = [((r["grid"][..., 0] == C.DOOR) & (r["grid"][..., 2] == C.OPEN)).any() for r in records]
    assert sum(opened) >= 4, "too few doors opened"


@pytest.mark.slow
def test_multiroom_step_for_step_many_seeds():
    records = check_episodes(IDS, range(6, 46))
    assert sum(r["terminated"][-1] and r["reward"][-1] > 0 for r in records) >= 20


# ---------------------------------------------------------------------------------------------------------
# generation


@functools.cache
def sample_levels(name: str, num: int = 1500):
    """Returns ``(states, rooms)`` of ``num`` jaxsoc levels of ``name`` (one jitted, vmapped call), on the host."""
    env, params = jaxsoc.make(name)
    keys = jax.random.split(jax.random.key(11), num)
    return jax.device_get(jax.jit(jax.vmap(lambda k: env.level(k, params)))(keys))


def _exit_wall(top, size, door) -> int:
    """Returns the wall (0 east, 1 south, 2 west, 3 north) of the room ``top``/``size`` that holds ``door``."""
    if door[0] == top[0] + size[0] - 1:
        return 0
    if door[1] == top[1] + size[1] - 1:
        return 1
    return 2 if door[0] == top[0] else 3


def features(grid, agent, direction, goal, tops, sizes, doors) -> dict:
    """Returns the generation features of a level with rooms ``tops``/``sizes``/``doors`` (lists of ``(x, y)``,
    ``doors[r]`` the entry door of room ``r``, ``doors[0]`` unused) and checks its invariants."""
    n = len(tops)
    out = {"rooms": n, "first_x": tops[0][0], "first_y": tops[0][1], "agent_dir": direction}
    out["agent"] = (agent[0] - tops[0][0], agent[1] - tops[0][1])
    out["goal"] = (goal[0] - tops[-1][0], goal[1] - tops[-1][1])
    # how far the rooms reach (minigrid's bounds: x + size_x <= width, y + size_y < height)
    out["right"] = max(t[0] + s[0] for t, s in zip(tops, sizes))
    out["bottom"] = max(t[1] + s[1] for t, s in zip(tops, sizes))
    out["left"], out["top"] = min(t[0] for t in tops), min(t[1] for t in tops)
    colors = []
    for r in range(n):
        out[f"size{r}"] = tuple(sizes[r])
        if r:
            door = grid[doors[r][1], doors[r][0]]
            assert door[C.TYPE] == C.DOOR and door[C.STATE] == C.CLOSED
            colors.append(int(door[C.COLOR]))
            wall = _exit_wall(tops[r - 1], sizes[r - 1], doors[r])
            out[f"exit{r}"] = wall
            out[f"door{r}"] = doors[r][1] - tops[r - 1][1] if wall in (0, 2) else doors[r][0] - tops[r - 1][0]
            out[f"color{r}"] = colors[-1]
    assert all(a != b for a, b in zip(colors, colors[1:])), "two doors in a row share a colour"
    assert (grid[..., C.TYPE] == C.DOOR).sum() == n - 1 and (grid[..., C.TYPE] == C.GOAL).sum() == 1
    for pos, r in ((agent, 0), (goal, n - 1)):
        assert tops[r][0] < pos[0] < tops[r][0] + sizes[r][0] - 1 and tops[r][1] < pos[1] < tops[r][1] + sizes[r][1] - 1
    assert _reachable(grid, agent, goal), "the goal cannot be reached"
    return out


def _reachable(grid, start, goal) -> bool:
    """True when ``goal`` can be walked to from ``start`` through empty cells, doors and the goal."""
    passable = np.isin(grid[..., C.TYPE], (C.EMPTY, C.DOOR, C.GOAL))
    seen, queue = {tuple(start)}, deque([tuple(start)])
    while queue:
        x, y = queue.popleft()
        if (x, y) == tuple(goal):
            return True
        for dx, dy in C.DIR_TO_VEC.tolist():
            nxt = (x + dx, y + dy)
            inside = 0 <= nxt[0] < grid.shape[1] and 0 <= nxt[1] < grid.shape[0]
            if inside and passable[nxt[1], nxt[0]] and nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return False


def jaxsoc_features(name: str) -> list[dict]:
    states, rooms = sample_levels(name)
    out = []
    for i in range(len(rooms.count)):
        n = int(rooms.count[i])
        tops, sizes, doors = (np.asarray(x[i][:n]).tolist() for x in (rooms.top, rooms.size, rooms.door))
        grid = np.asarray(states.grid[i])
        agent, goal = np.asarray(states.agent_pos[i]).tolist(), np.asarray(states.target_pos[i]).tolist()
        out.append(features(grid, agent, int(states.agent_dir[i]), goal, tops, sizes, doors))
    return out


def minigrid_features(name: str, seeds) -> list[dict]:
    out = []
    for seed in seeds:
        ref = make_reference(name)
        ref.reset(seed=seed)
        u = ref.unwrapped
        state = from_minigrid(ref)[1]
        tops = [list(room.top) for room in u.rooms]
        sizes = [list(room.size) for room in u.rooms]
        doors = [list(room.entryDoorPos) for room in u.rooms]
        agent, goal = [int(v) for v in u.agent_pos], [int(v) for v in u.goal_pos]
        out.append(features(np.asarray(state.grid), agent, int(u.agent_dir), goal, tops, sizes, doors))
    return out


def check_generation(name: str, num_reference: int = 400):
    ours, theirs = jaxsoc_features(name), minigrid_features(name, range(num_reference))
    rooms = jaxsoc.make(name)[0].max_rooms
    assert {f["rooms"] for f in ours} == {f["rooms"] for f in theirs} == {rooms}
    assert ours[0].keys() == theirs[0].keys()
    for feature in ours[0]:
        a, b = [f[feature] for f in ours], [f[feature] for f in theirs]
        assert consistent(a, b), f"{name}: {feature} differs from minigrid"


def test_multiroom_generation_matches_minigrid():
    check_generation("MiniGrid-MultiRoom-N4-S5-v1")


@pytest.mark.slow
@pytest.mark.parametrize("name", IDS)
def test_multiroom_generation_matches_minigrid_every_id(name):
    check_generation(name, num_reference=1000)


def test_the_comparison_tells_layouts_apart():
    ours = jaxsoc_features("MiniGrid-MultiRoom-N4-S5-v1")
    # rooms drawn without minigrid's rejection of incomplete chains would start anywhere in [0, 23)
    uniform = np.random.default_rng(0).integers(0, 23, len(ours)).tolist()
    assert not consistent([f["first_x"] for f in ours], uniform)
    # the exit wall is never the room's entry wall: room 0 (entered from the west) never exits west
    assert 2 not in {f["exit1"] for f in ours}


# ---------------------------------------------------------------------------------------------------------
# the chain rate


def minigrid_chain_counts(name: str, seeds) -> list[int]:
    """Returns how many chains minigrid's ``_gen_grid`` started for each seed's level."""
    counts, original = [], MultiRoomEnv._placeRoom

    def counting(self, num_left, roomList, *args, **kwargs):  # noqa: N803 (minigrid's argument name)
        counts[-1] += not roomList
        return original(self, num_left, roomList, *args, **kwargs)

    MultiRoomEnv._placeRoom = counting
    try:
        for seed in seeds:
            counts.append(0)
            make_reference(name).reset(seed=seed)
    finally:
        MultiRoomEnv._placeRoom = original
    return counts


def check_chain_rate(name: str, num_chains: int, seeds):
    env, params = jaxsoc.make(name)
    size, width, height = env.max_room_size, params.width, params.height
    words = jax.random.bits(jax.random.key(3), (num_chains, MR.chain_words(env.max_rooms)), jnp.uint32)
    run = jax.jit(jax.vmap(lambda w: MR.chain(w, env.max_rooms, size, width, height).count))
    complete = float(np.mean(np.asarray(run(words)) == env.max_rooms))
    # minigrid's chains also fail when the first room is outside the world, which jaxsoc's never is
    sides, corners = np.arange(4, size + 1)[None, :], np.arange(width - 2)[:, None]
    first_inside = np.mean(corners + sides <= width) * np.mean(corners + sides < height)
    p = complete * first_inside
    counts = minigrid_chain_counts(name, seeds)
    # goodness of fit of minigrid's chain counts to the geometric law of rate p (1, 2, ..., 6+ chains)
    observed = np.bincount(np.minimum(counts, 6), minlength=7)[1:]
    expected = np.array([p * (1 - p) ** (k - 1) for k in range(1, 6)] + [(1 - p) ** 5]) * len(counts)
    keep = expected >= 5
    statistic = float((((observed - expected) ** 2 / expected)[keep]).sum())
    assert statistic <= S.chi_square_quantile(int(keep.sum()) - 1), f"{name}: {observed} chains, expected {expected}"
    # and the chain count in CHAINS leaves a failure probability below 1e-12
    assert (1 - complete) ** env.chains < 1e-12


def test_chains_complete_at_minigrids_rate():
    check_chain_rate("MiniGrid-MultiRoom-N4-S5-v0", 20000, range(1000))


@pytest.mark.slow
@pytest.mark.parametrize("name", IDS)
def test_chains_complete_at_minigrids_rate_every_id(name):
    check_chain_rate(name, 100000, range(4000))


def test_every_id_imports_with_its_params_and_mission():
    for name in IDS:
        ref = make_reference(name)
        ref.reset(seed=3)
        env, state, params = from_minigrid(ref)
        u = ref.unwrapped
        assert env is jaxsoc.make(name)[0] and params == jaxsoc.make(name)[1]
        assert (params.max_steps, params.view_size, params.see_through_walls) == (
            u.max_steps,
            u.agent_view_size,
            u.see_through_walls,
        )
        assert (params.width, params.height) == (u.width, u.height)
        assert env.action_space(params).n == ref.action_space.n
        assert env.mission_text(state) == u.mission
        assert tuple(np.asarray(state.target_pos)) == tuple(u.goal_pos)
