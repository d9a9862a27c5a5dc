"""MiniGrid Dynamic-Obstacles and Memory against minigrid 3.2.0: step for step, and by distribution.

Dynamic-Obstacles' step is random (the balls move before the agent acts). Step for step it is compared
through ``step_with_moves``, the step given its random words: for every minigrid step the words that make
jaxsoc move each ball where minigrid moved it are derived (``minigrid_dmm_reference.move_words``), so the
grid, view, reward (-1 on a collision), termination and truncation are compared exactly. The random moves
themselves are compared by distribution: ``step_env`` (words drawn from the key) against minigrid's
``place_obj`` over the 9 offsets of two neighbouring balls, chi-square. Memory's step is deterministic and is
replayed with ``step_env`` (scripted walks to the matching and to the other object, random play, short
``max_steps``). Generation is compared per feature by chi-square.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from minigrid_dmm_reference import compare, moves_replayer, pad_batch, record_with_moves, stack, walk_onto
from minigrid_reference import INTERACT, UNIFORM, make_reference, record_episode, scan_replayer

import jaxsoc
from jaxsoc.compat import from_minigrid
from jaxsoc.envs.babyai import statistics as S
from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld import dynamic_obstacles as D
from jaxsoc.envs.gridworld import memory as M

DYNAMIC = list(D.ENVS)
MEMORY = list(M.ENVS)
# mostly left/right/forward; 3..6 act as left in minigrid's Dynamic-Obstacles
DYNAMIC_MIX = np.array([0.2, 0.2, 0.5, 0.025, 0.025, 0.025, 0.025])


def consistent(a: list, b: list) -> bool:
    statistic, dof = S.chi_square(a, b)
    return statistic <= S.chi_square_quantile(dof)


def shape_key(name: str) -> tuple:
    params = jaxsoc.make(name)[1]
    env = jaxsoc.make(name)[0]
    return params.height, params.width, getattr(env, "n_obstacles", 0)


@functools.cache
def _dynamic_replayer(shape: tuple):
    name = next(n for n in DYNAMIC if shape_key(n) == shape)
    return moves_replayer(jaxsoc.make(name)[0])


@functools.cache
def sample_states(name: str, num: int = 2000, seed: int = 1):
    """Returns ``num`` jaxsoc levels of ``name`` (one jitted, vmapped reset), on the host."""
    env, params = jaxsoc.make(name)
    keys = jax.random.split(jax.random.key(seed), num)
    return jax.device_get(jax.jit(jax.vmap(env.reset_env, in_axes=(0, None)))(keys, params)[1])


@functools.cache
def _memory_replayer(shape: tuple):
    name = next(n for n in MEMORY if shape_key(n) == shape)
    return scan_replayer(jaxsoc.make(name)[0])


# ---------------------------------------------------------------------------------------------------------
# Dynamic-Obstacles


def dynamic_episodes(name: str, seeds, num_steps: int):
    """Returns ``(states, params, actions, words, records)`` of minigrid episodes: random play (every third
    one uniform over the 7 actions), walks to the goal with a random tail, half of them with a short
    ``max_steps``."""
    states, params, actions, words, records = [], [], [], [], []
    for seed in seeds:
        rng = np.random.default_rng(3000 + seed)
        ref = make_reference(name)
        ref.reset(seed=seed)
        if seed % 2:
            ref.unwrapped.max_steps = int(rng.integers(3, 40))
        env, state, param = from_minigrid(ref)
        assert isinstance(state, D.ObstacleState) and env.mission_text(state) == ref.unwrapped.mission
        acts = rng.choice(7, size=num_steps, p=UNIFORM if seed % 3 == 0 else DYNAMIC_MIX).astype(np.int32)
        if seed % 4 == 1:
            goal = walk_onto(ref, (ref.unwrapped.width - 2, ref.unwrapped.height - 2))
            acts[: len(goal)] = goal
        record = record_with_moves(ref, acts)
        word = np.zeros((num_steps, env.n_obstacles, 2), np.uint32)
        word[: record["steps"]] = record["words"]
        states.append(state)
        params.append(param)
        actions.append(acts)
        words.append(word)
        records.append(record)
    return states, params, actions, words, records


def check_dynamic(names, seeds, num_steps=48):
    records_all = []
    for name in names:
        states, params, actions, words, records = dynamic_episodes(name, seeds, num_steps)
        replay = _dynamic_replayer(shape_key(name))
        batch = [pad_batch(x) for x in (states, params, actions, words)]
        outs = replay(
            stack(batch[0]), jnp.asarray(np.stack(batch[2])), jnp.asarray(np.stack(batch[3])), stack(batch[1])
        )
        outs = [np.asarray(o) for o in outs]
        for i, (seed, record) in enumerate(zip(seeds, records)):
            compare(name, seed, [o[i] for o in outs], record, actions[i])
        records_all += records
    rewards = np.concatenate([r["reward"] for r in records_all])
    assert (rewards == -1).any(), "no collision compared"
    assert (rewards > 0).any(), "no episode reached the goal"
    assert any(r["truncated"][-1] for r in records_all), "truncation untested"
    moved = np.concatenate([r["words"][..., 1].ravel() for r in records_all])
    assert (moved == 2**32 - 1).sum() > 100, "too few ball moves compared"


def test_dynamic_obstacles_step_for_step_with_minigrids_moves():
    check_dynamic(["MiniGrid-Dynamic-Obstacles-5x5-v0", "MiniGrid-Dynamic-Obstacles-Random-5x5-v0"], range(12))


@pytest.mark.slow
def test_dynamic_obstacles_step_for_step_every_id():
    check_dynamic(DYNAMIC, range(40), num_steps=120)


def _two_balls(env):
    """Puts minigrid's 8x8 Dynamic-Obstacles into a fixed scene: balls at (1, 3) against the west wall and
    (2, 3), the agent at (2, 2) facing west; returns the env."""
    u = env.unwrapped
    for ball in u.obstacles:
        u.grid.set(*ball.cur_pos, None)
    u.obstacles = u.obstacles[:2]
    for ball, pos in zip(u.obstacles, [(1, 3), (2, 3)]):
        u.grid.set(*pos, ball)
        ball.cur_pos = pos
    u.agent_pos, u.agent_dir, u.step_count = (2, 2), 2, 0
    return env


def test_ball_moves_follow_minigrids_distribution():
    name = "MiniGrid-Dynamic-Obstacles-8x8-v0"
    ref = make_reference(name)
    ref.reset(seed=0)
    env, start, params = from_minigrid(_two_balls(ref))
    offsets = {tuple(o): i for i, o in enumerate(D.NEIGHBOURHOOD.tolist())}
    origin = np.array([(1, 3), (2, 3)])

    def cells(positions):
        return tuple(offsets[tuple(p)] for p in (np.asarray(positions) - origin).tolist())

    theirs = []
    for _ in range(3000):
        _two_balls(ref).step(0)  # turn left: the agent stays
        theirs.append(cells([b.cur_pos for b in ref.unwrapped.obstacles]))
    keys = jax.random.split(jax.random.key(5), 12000)
    step = jax.jit(jax.vmap(env.step_env, in_axes=(0, None, None, None)))
    _, states, reward, terminated, _, _ = step(keys, start, jnp.int32(0), params)
    ours = [cells(p) for p in np.asarray(states.obstacles)]
    assert not np.asarray(terminated).any() and (np.asarray(reward) == 0).all()
    # the first ball has 3 free cells; the second sees where the first went
    assert {o[0] for o in ours} == {offsets[(0, -1)], offsets[(0, 1)], offsets[(1, 1)]}
    for feature in (0, 1):
        assert consistent([o[feature] for o in ours], [o[feature] for o in theirs]), f"ball {feature} moves differ"
    assert consistent([str(o) for o in ours], [str(o) for o in theirs]), "joint moves differ"
    # the grid holds the balls where ``obstacles`` says
    grids = np.asarray(states.grid[:64])
    for grid, balls in zip(grids, np.asarray(states.obstacles[:64])):
        ys, xs = np.nonzero(grid[..., C.TYPE] == C.BALL)
        assert sorted(zip(xs.tolist(), ys.tolist())) == sorted(map(tuple, balls.tolist()))


def test_a_ball_with_no_free_neighbour_stays_and_the_step_is_the_replayed_one():
    env, params = jaxsoc.make("MiniGrid-Dynamic-Obstacles-5x5-v0")
    _, state = env.reset(jax.random.key(0), params)
    # fill the room: balls at (1, 2) and (2, 2) surrounded by walls and boxes, the agent at (1, 1)
    grid = np.asarray(state.grid).copy()
    grid[1:4, 1:4] = C.cell(C.BOX, C.RED)
    grid[1, 1] = C.EMPTY_CELL
    grid[2, 1] = grid[2, 2] = D.BALL_CELL
    state = state.replace(grid=jnp.asarray(grid), obstacles=jnp.array([[1, 2], [2, 2]], jnp.int32))
    keys = jax.random.split(jax.random.key(0), 64)

    def both(key):
        replayed = env.step_with_moves(env.move_words(key), state, jnp.int32(1), params)
        return env.step_env(key, state, jnp.int32(1), params), replayed

    out, replayed = jax.jit(jax.vmap(both))(keys)
    np.testing.assert_array_equal(out[1].obstacles, np.broadcast_to(state.obstacles, (64, 2, 2)))
    np.testing.assert_array_equal(out[1].grid, np.broadcast_to(state.grid, (64, *state.grid.shape)))
    jax.tree_util.tree_map(np.testing.assert_array_equal, out, replayed)


@pytest.mark.parametrize(
    "name",
    [
        "MiniGrid-Dynamic-Obstacles-Random-6x6-v0",
        *(pytest.param(n, marks=pytest.mark.slow) for n in DYNAMIC if n != "MiniGrid-Dynamic-Obstacles-Random-6x6-v0"),
    ],
)
def test_dynamic_obstacles_generation_matches_minigrid(name):
    ours = [_dynamic_features(s) for s in _unstack(sample_states(name))]
    theirs = []
    for seed in range(500):
        ref = make_reference(name)
        ref.reset(seed=seed)
        theirs.append(_dynamic_features(from_minigrid(ref)[1]))
    for feature in ours[0]:
        a, b = [f[feature] for f in ours], [f[feature] for f in theirs]
        assert set(b) <= set(a), f"{feature}: minigrid values {set(b) - set(a)} never generated"
        assert consistent(a, b), f"{name}: {feature} differs from minigrid"
    assert {f["agent_dir"] for f in ours} == ({0, 1, 2, 3} if "Random" in name else {0})


def _dynamic_features(state) -> dict:
    grid, balls = np.asarray(state.grid), np.asarray(state.obstacles)
    pos = tuple(np.asarray(state.agent_pos).tolist())
    out = {"agent": pos, "agent_dir": int(state.agent_dir), "goal": tuple(np.asarray(state.target_pos).tolist())}
    for i, ball in enumerate(balls.tolist()):
        assert tuple(ball) != pos and grid[ball[1], ball[0], C.TYPE] == C.BALL
        out[f"ball{i}"] = tuple(ball)
    assert (grid[..., C.TYPE] == C.BALL).sum() == len(balls)
    return out


def _unstack(states):
    leaves, tree = jax.tree_util.tree_flatten(jax.device_get(states))
    return [jax.tree_util.tree_unflatten(tree, [x[i] for x in leaves]) for i in range(leaves[0].shape[0])]


# ---------------------------------------------------------------------------------------------------------
# Memory


def memory_episodes(name: str, seeds, num_steps: int):
    """Returns ``(states, params, actions, records)``: walks onto the success cell (seed % 4 == 0), onto the
    failure cell (1), random play (2: interaction-biased, 3: uniform); odd seeds get a short ``max_steps``
    when they play randomly."""
    states, params, actions, records = [], [], [], []
    for seed in seeds:
        rng = np.random.default_rng(5000 + seed)
        ref = make_reference(name)
        ref.reset(seed=seed)
        u = ref.unwrapped
        kind = seed % 4
        if kind >= 2 and seed % 2:
            u.max_steps = int(rng.integers(5, 40))
        env, state, param = from_minigrid(ref)
        assert isinstance(state, M.MemoryState) and env.mission_text(state) == u.mission
        acts = rng.choice(7, size=num_steps, p=INTERACT if kind == 2 else UNIFORM).astype(np.int32)
        if kind < 2:
            walk = walk_onto(ref, u.success_pos if kind == 0 else u.failure_pos)
            assert walk, f"{name} seed {seed}: the target cell is unreachable"
            acts[: len(walk)] = walk
        states.append(state)
        params.append(param)
        actions.append(acts)
        records.append(record_episode(ref, acts))
    return states, params, actions, records


def check_memory(names, seeds, num_steps=64):
    outcomes = set()
    for name in names:
        states, params, actions, records = memory_episodes(name, seeds, num_steps)
        batch = [pad_batch(x) for x in (states, params, actions)]
        replay = _memory_replayer(shape_key(name))
        outs = [np.asarray(o) for o in replay(stack(batch[0]), jnp.asarray(np.stack(batch[2])), stack(batch[1]))]
        for i, (seed, record) in enumerate(zip(seeds, records)):
            compare(name, seed, [o[i] for o in outs], record, actions[i])
            ended = record["terminated"][-1]
            outcomes.add("success" if ended and record["reward"][-1] > 0 else "failure" if ended else "open")
            outcomes.add("truncated" if record["truncated"][-1] else "running")
    assert {"success", "failure", "truncated"} <= outcomes


def test_memory_step_for_step():
    check_memory(["MiniGrid-MemoryS13Random-v0", "MiniGrid-MemoryS13-v0"], range(12))


@pytest.mark.slow
def test_memory_step_for_step_every_id():
    check_memory(MEMORY, range(32), num_steps=160)


def _memory_features(state) -> dict:
    grid = np.asarray(state.grid)
    height = grid.shape[0]
    mid = height // 2
    success, failure = (tuple(np.asarray(p).tolist()) for p in (state.target_pos, state.failure_pos))
    end = success[0] - 1
    start_kind = int(grid[mid - 1, 1, C.TYPE])
    top_kind = int(grid[mid - 2, end + 1, C.TYPE])
    # invariants: the success cell is next to the object matching the start object, the failure cell next
    # to the other; the split is open only on the hallway's row
    matching = success[1] + (1 if success[1] > mid else -1)
    assert grid[matching, end + 1, C.TYPE] == start_kind and abs(failure[1] - success[1]) == 2
    assert {int(grid[mid - 2, end + 1, C.TYPE]), int(grid[mid + 2, end + 1, C.TYPE])} == {C.KEY, C.BALL}
    assert grid[mid, end, C.TYPE] == C.EMPTY and (grid[np.arange(height) != mid, end, C.TYPE] == C.WALL).all()
    pos = np.asarray(state.agent_pos)
    assert pos[1] == mid and 1 <= pos[0] <= end and int(state.agent_dir) == 0
    return {"end": end, "agent_x": int(pos[0]), "start": start_kind, "top": top_kind, "success_y": success[1]}


@pytest.mark.parametrize(
    "name",
    [
        "MiniGrid-MemoryS13Random-v0",
        *(pytest.param(n, marks=pytest.mark.slow) for n in MEMORY if n != "MiniGrid-MemoryS13Random-v0"),
    ],
)
def test_memory_generation_matches_minigrid(name):
    ours = [_memory_features(s) for s in _unstack(sample_states(name))]
    theirs = []
    for seed in range(500):
        ref = make_reference(name)
        ref.reset(seed=seed)
        theirs.append(_memory_features(from_minigrid(ref)[1]))
    for feature in ours[0]:
        a, b = [f[feature] for f in ours], [f[feature] for f in theirs]
        assert set(b) <= set(a), f"{feature}: minigrid values {set(b) - set(a)} never generated"
        assert consistent(a, b), f"{name}: {feature} differs from minigrid"


def test_memory_grid_is_minigrids_for_the_same_choices():
    """The layout is a function of (hallway end, agent column, start object, object order): every minigrid
    level of the first seeds appears among jaxsoc's, cell for cell."""
    name = "MiniGrid-MemoryS13Random-v0"
    states = sample_states(name)
    grids = np.asarray(states.grid[..., :3])
    feats = [_memory_features(s) for s in _unstack(states)]
    index = {tuple(f.values()): i for i, f in enumerate(feats)}
    found = 0
    for seed in range(40):
        ref = make_reference(name)
        ref.reset(seed=seed)
        state = from_minigrid(ref)[1]
        i = index.get(tuple(_memory_features(state).values()))
        if i is not None:
            found += 1
            np.testing.assert_array_equal(grids[i], np.asarray(state.grid)[..., :3])
    assert found >= 30


def test_every_id_imports_with_its_params_and_mission():
    for name in [*DYNAMIC, *MEMORY]:
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
        assert env.action_space(params).n == ref.action_space.n
        assert env.mission_text(state) == u.mission
