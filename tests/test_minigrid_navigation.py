"""minigrid 3.2.0's single-room navigation ids and Playground (``gridworld.navigation``, ``gridworld.playground``)
against minigrid, step for step and by generation distribution.

Differential: episodes start from reset minigrid states imported with ``jaxsoc.compat.from_minigrid``; random
(uniform and interaction-biased, half of them with a short ``max_steps``) and goal-directed action sequences
are replayed through minigrid and through one jitted, vmapped ``lax.scan`` of ``step_env`` per grid shape, and
every step's image, direction, reward, termination, truncation, position, carried object, full grid and
mission text must agree. Generation: per-level features of jaxsoc's on-device generators and of minigrid's
are compared by Pearson's chi-square (tail probability 1e-4, ``babyai.statistics``), plus the invariants of
minigrid's layouts. The default run covers two generators and four step shapes; ``-m slow`` covers every id.
"""

from __future__ import annotations

import functools
from collections import deque

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from minigrid_reference import INTERACT, UNIFORM, assert_episode_matches, make_reference, record_episode, solve

import jaxsoc
from jaxsoc.compat import from_minigrid
from jaxsoc.envs.babyai import statistics as S
from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld import mission as M
from jaxsoc.envs.gridworld.navigation import ENVS as NAVIGATION
from jaxsoc.envs.gridworld.playground import ENVS as PLAYGROUND

IDS = sorted({**NAVIGATION, **PLAYGROUND})
CROSSINGS = [name for name in IDS if "Crossing" in name]
GOAL_IDS = [name for name in IDS if "Playground" not in name]
RANDOM_IDS = [name for name in IDS if "DistShift" not in name]
FIELDS = ("image", "direction", "reward", "terminated", "truncated", "pos", "carrying", "grid", "mission")


def test_the_slice_is_minigrids_list_of_ids():
    theirs = {n for n in gym.registry if n.startswith("MiniGrid-")}
    families = ("Empty-Random", "DistShift", "LavaGap", "LavaCrossing", "SimpleCrossing", "Playground")
    assert set(IDS) == {n for n in theirs if any(f"-{family}" in n for family in families)}
    assert len(IDS) == 16


# ---------------------------------------------------------------------------------------------------------
# import, params, mission


@pytest.mark.parametrize("name", IDS)
def test_compat_imports_every_id_with_minigrids_params_and_mission(name):
    env, params = jaxsoc.make(name)
    for seed in range(3):
        ref = make_reference(name)
        obs, _ = ref.reset(seed=seed)
        ours, state, imported = from_minigrid(ref)
        assert ours is env
        assert imported == params.replace(max_steps=imported.max_steps)  # static fields: size, view, occlusion
        assert int(imported.max_steps) == int(params.max_steps) == ref.unwrapped.max_steps
        assert env.mission_text(state) == ref.unwrapped.mission == obs["mission"]
        assert env.action_space(params).n == ref.action_space.n
        if name in GOAL_IDS:
            goal = np.argwhere(np.asarray(state.grid)[..., C.TYPE] == C.GOAL)[0][::-1]
            np.testing.assert_array_equal(np.asarray(state.target_pos), goal)


# ---------------------------------------------------------------------------------------------------------
# step for step


class _Missions(gym.Wrapper):
    """Records ``obs["mission"]`` after every step (``record_episode`` keeps the rest)."""

    def __init__(self, env):
        super().__init__(env)
        self.missions: list[str] = []

    def step(self, action):
        out = super().step(action)
        self.missions.append(out[0]["mission"])
        return out


def shape_key(name: str):
    """Ids whose worlds share a compiled replay: same class (so the same step), mission and static params."""
    env, params = jaxsoc.make(name)
    return type(env).__name__, env.mission, params.height, params.width, params.see_through_walls


@functools.cache
def replayer(key):
    """Returns a jitted, vmapped ``lax.scan`` of ``step_env`` over ``int32[B, T]`` actions that outputs, per
    step, ``FIELDS`` (the mission as tokens) for states ``[B]`` and params ``[B]`` of one ``shape_key``."""
    env = next(jaxsoc.make(n)[0] for n in IDS if shape_key(n) == key)

    def replay(state, actions, params):
        def body(state, action):
            obs, state, reward, terminated, truncated, _ = env.step_env(jax.random.key(0), state, action, params)
            out = (obs["image"], obs["direction"], reward, terminated, truncated, state.agent_pos)
            return state, out + (state.carrying[:3], state.grid[..., :3], env.mission_tokens(state, params))

        return jax.lax.scan(body, state, actions)[1]

    return jax.jit(jax.vmap(replay))


def _stack(trees):
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *trees)


def episode(name: str, seed: int, actions=None, short: bool = False):
    """Returns ``(state, params, actions, record)``: minigrid's ``name`` reset with ``seed`` (``max_steps``
    cut to a random 5..60 when ``short``), its import, and its record over ``actions`` (random ones, uniform
    or interaction-biased by seed, when None)."""
    rng = np.random.default_rng(10_000 + seed)
    ref = _Missions(make_reference(name))
    ref.reset(seed=seed)
    if short:
        ref.unwrapped.max_steps = int(rng.integers(5, 60))
    _, state, params = from_minigrid(ref)
    if actions is None:
        actions = rng.choice(7, size=200, p=INTERACT if seed % 3 else UNIFORM).astype(np.int32)
    record = record_episode(ref, actions)
    record["mission"] = np.stack([M.encode(text) for text in ref.missions])
    return state, params, actions, record


# Playground has no task: its script opens doors, fetches and drops things (until one is out of reach)
PLAYGROUND_PLAN = [("toggle", "door")] * 3 + [("pickup", "key"), ("drop", None), ("pickup", "ball")]
PLAYGROUND_PLAN += [("toggle", "door"), ("drop", None), ("pickup", "box"), ("toggle", "door"), ("drop", None)]


def scripted(name: str, seed: int):
    """Returns ``episode`` over the actions of a scripted walk to the goal (lava avoided), or of
    ``PLAYGROUND_PLAN``."""
    planner = make_reference(name)
    planner.reset(seed=seed)
    return episode(name, seed, solve(planner, [("enter", "goal")] if name in GOAL_IDS else PLAYGROUND_PLAN))


def compare(key, episodes: list, length: int = 256) -> int:
    """Replays ``episodes`` (of one ``shape_key``) in one call and fails at the first step that differs from
    minigrid's record. Returns the number of compared steps."""
    batch = list(episodes)
    while len(batch) % 8:
        batch.append(batch[-1])
    actions = np.full((len(batch), length), C.DONE, np.int32)
    for k, (_, _, acts, _) in enumerate(batch):
        actions[k, : len(acts)] = acts
    outs = replayer(key)(_stack([e[0] for e in batch]), jnp.asarray(actions), _stack([e[1] for e in batch]))
    outs = [np.asarray(o) for o in outs]
    return sum(
        assert_episode_matches(f"{key} episode {k}", FIELDS, outs, k, rec, acts)
        for k, (_, _, acts, rec) in enumerate(episodes)
    )


def check_ids(names: list[str], seeds: int) -> None:
    """Random and scripted episodes of ``names`` (one ``shape_key``) against minigrid; asserts that
    truncation, lava and success all happened where the task allows them."""
    episodes = []
    for name in names:
        for seed in range(seeds):
            episodes.append(episode(name, seed, short=seed % 2 == 1))
            episodes.append(scripted(name, seed))
    assert all(rec["steps"] for *_, rec in episodes)
    assert compare(shape_key(names[0]), episodes) >= 5 * len(episodes)
    records = [rec for *_, rec in episodes]
    assert any(rec["truncated"][-1] for rec in records), f"{names}: truncation untested"
    if any(name in GOAL_IDS for name in names):
        wins = [rec["terminated"][-1] and rec["reward"][-1] > 0 for rec in records]
        assert sum(wins) >= len(names) * seeds, f"{names}: too few episodes reached the goal"
    if any("Lava" in name or "DistShift" in name for name in names):
        assert any(rec["terminated"][-1] and rec["reward"][-1] == 0 for rec in records), f"{names}: lava untested"


# one compiled replay each: both crossing families (9x9), the see-through-walls DistShift, and Playground
@pytest.mark.parametrize(
    "names",
    [
        ["MiniGrid-LavaCrossingS9N2-v0", "MiniGrid-LavaCrossingS9N3-v0"],
        ["MiniGrid-SimpleCrossingS9N1-v0", "MiniGrid-SimpleCrossingS9N3-v0"],
        ["MiniGrid-DistShift1-v0", "MiniGrid-DistShift2-v0"],
        ["MiniGrid-Playground-v0"],
    ],
)
def test_episodes_match_minigrid_step_for_step(names):
    check_ids(names, seeds=6)


def _shape_groups() -> list[list[str]]:
    groups: dict = {}
    for name in IDS:
        groups.setdefault(shape_key(name), []).append(name)
    return list(groups.values())


@pytest.mark.slow
@pytest.mark.parametrize("names", _shape_groups(), ids=lambda names: names[0])
def test_every_id_matches_minigrid_step_for_step(names):
    check_ids(names, seeds=24)


# ---------------------------------------------------------------------------------------------------------
# generation


def crossing_features(grid: np.ndarray) -> dict[str, str]:
    """Returns the layout of a Crossing level as categorical features: ``rivers`` (the obstacle columns
    ``c<x>`` and rows ``r<y>``), ``path`` (its moves, ``R`` across a column, ``D`` across a row), and
    ``opening<t>`` (the ``x,y`` of the ``t``-th opening along the path)."""
    size = grid.shape[0]
    lines = range(2, size - 2, 2)
    obstacle = np.isin(grid[..., C.TYPE], (C.LAVA, C.WALL))[1:-1, 1:-1]
    cols = [x for x in lines if obstacle[:, x - 1].sum() >= size // 2]
    rows = [y for y in lines if obstacle[y - 1].sum() >= size // 2]
    limits_x, limits_y = [0, *cols, size - 1], [0, *rows, size - 1]
    steps = {}
    for i, x in enumerate(cols):
        for y in range(1, size - 1):
            if y not in rows and not obstacle[y - 1, x - 1]:
                band = np.searchsorted(limits_y, y) - 1
                steps[i + band] = ("R", x, y)
    for j, y in enumerate(rows):
        for x in range(1, size - 1):
            if x not in cols and not obstacle[y - 1, x - 1]:
                band = np.searchsorted(limits_x, x) - 1
                steps[j + band] = ("D", x, y)
    path = [steps[t] for t in sorted(steps)]
    out = {"rivers": " ".join([f"c{x}" for x in cols] + [f"r{y}" for y in rows])}
    out["path"] = "".join(move for move, _, _ in path)
    out.update({f"opening{t}": f"{x},{y}" for t, (_, x, y) in enumerate(path)})
    return out


def playground_features(grid: np.ndarray) -> dict[str, str]:
    """Returns per inner-wall segment the door's offset and colour, the count of each object kind, and the
    kind, colour and room of the first object in row-major order."""
    kinds, colors = grid[..., C.TYPE], grid[..., C.COLOR]
    out = {}
    for k, line in enumerate((6, 12)):
        for segment in range(3):
            span = slice(6 * segment + 1, 6 * segment + 6)
            for axis, cells in (
                ("v", (kinds[span, line], colors[span, line])),
                ("h", (kinds[line, span], colors[line, span])),
            ):
                offset = int(np.argmax(cells[0] == C.DOOR))
                out[f"door_{axis}{k}{segment}"] = f"{offset}"
                out[f"color_{axis}{k}{segment}"] = f"{cells[1][offset]}"
    objects = np.isin(kinds, (C.KEY, C.BALL, C.BOX))
    for kind in (C.KEY, C.BALL, C.BOX):
        out[f"num_{C.OBJECT_NAMES[kind]}"] = str(int((kinds == kind).sum()))
    y, x = np.argwhere(objects)[0]
    out["first"] = f"{kinds[y, x]},{colors[y, x]}"
    out["first_room"] = f"{x // 6},{y // 6}"
    out["doors_closed"] = str(int(((kinds == C.DOOR) & (grid[..., C.STATE] == C.CLOSED)).sum()))
    return out


def features(name: str, grid: np.ndarray, pos, direction) -> dict[str, str]:
    """Returns the categorical features of one level of ``name`` (agent pose, plus the layout)."""
    out = {"agent": f"{pos[0]},{pos[1]}", "dir": str(int(direction))}
    if "Crossing" in name:
        out.update(crossing_features(grid))
    elif "Playground" in name:
        out.update(playground_features(grid))
    elif "LavaGap" in name:
        y, x = np.argwhere(grid[..., C.TYPE] == C.LAVA).T
        gap = [y_ for y_ in range(1, grid.shape[0] - 1) if y_ not in set(y)]
        out.update({"gap_x": str(x[0]), "gap_y": str(gap[0]), "lava": str(len(x))})
    return out


@functools.cache
def our_levels(name: str, num: int = 2000):
    env, params = jaxsoc.make(name)
    keys = jax.random.split(jax.random.key(7), num)
    _, states = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(keys, params)
    return jax.device_get(states)


@functools.cache
def their_levels(name: str, num: int = 600) -> list:
    out = []
    for seed in range(num):
        ref = make_reference(name)
        ref.reset(seed=seed)
        _, state, _ = from_minigrid(ref)
        out.append(state)
    return out


def feature_lists(name: str, states) -> dict[str, list]:
    rows = [features(name, np.asarray(s.grid), np.asarray(s.agent_pos), s.agent_dir) for s in states]
    return {key: [row.get(key) for row in rows] for key in rows[0]}


def unstack(states) -> list:
    return [jax.tree_util.tree_map(lambda x, k=k: x[k], states) for k in range(states.grid.shape[0])]


def consistent(a: list, b: list) -> tuple[bool, float]:
    statistic, dof = S.chi_square(a, b)
    limit = S.chi_square_quantile(dof)
    return statistic <= limit, statistic / max(limit, 1e-9)


def solvable(grid: np.ndarray, start=(1, 1)) -> bool:
    """Whether the goal is reachable from ``start`` through cells that are neither walls nor lava."""
    blocked = np.isin(grid[..., C.TYPE], (C.WALL, C.LAVA))
    seen, queue = {tuple(start)}, deque([tuple(start)])
    while queue:
        x, y = queue.popleft()
        if grid[y, x, C.TYPE] == C.GOAL:
            return True
        for dx, dy in C.DIR_TO_VEC.tolist():
            nxt = (x + dx, y + dy)
            if not blocked[nxt[1], nxt[0]] and nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return False


def check_generation(name: str, num_reference: int = 600) -> None:
    """Compares ``features`` of 2000 jaxsoc levels and ``num_reference`` minigrid levels of ``name`` by
    chi-square, and checks the invariants of jaxsoc's levels."""
    mine_states = unstack(our_levels(name))
    mine, theirs = feature_lists(name, mine_states), feature_lists(name, their_levels(name, num_reference))
    assert mine.keys() == theirs.keys()
    for feature in mine:
        assert set(mine[feature]) >= set(theirs[feature]), f"{name}: {feature} misses values minigrid generates"
        ok, ratio = consistent(mine[feature], theirs[feature])
        assert ok, f"{name}: {feature} differs from minigrid (chi-square at {ratio:.2f}x the 1e-4 quantile)"
    grids = [np.asarray(s.grid) for s in mine_states]
    if name in GOAL_IDS:
        assert all(solvable(g, s.agent_pos) for g, s in zip(grids, mine_states)), f"{name}: an unsolvable level"
    if "Crossing" in name:
        size, n = grids[0].shape[0], jaxsoc.make(name)[0].num_crossings
        kind = C.LAVA if "Lava" in name else C.WALL
        for g in grids:
            f = crossing_features(g)
            rivers = f["rivers"].split()
            assert len(rivers) == n and len(f["path"]) == n
            cols, rows = sum(r[0] == "c" for r in rivers), len(rivers) - sum(r[0] == "c" for r in rivers)
            obstacles = int((g[1:-1, 1:-1, C.TYPE] == kind).sum())
            assert obstacles == (cols + rows) * (size - 2) - cols * rows - n
    if "Playground" in name:
        for g in grids:
            kinds = g[..., C.TYPE]
            assert np.isin(kinds, (C.KEY, C.BALL, C.BOX)).sum() == 12 and (kinds == C.DOOR).sum() == 12
            assert not np.any(g[..., C.CONTENTS])
    for s in mine_states:
        assert np.asarray(s.grid)[s.agent_pos[1], s.agent_pos[0], C.TYPE] == C.EMPTY


@pytest.mark.parametrize("name", ["MiniGrid-LavaCrossingS9N3-v0", "MiniGrid-Playground-v0"])
def test_generation_matches_minigrid(name):
    check_generation(name)


def test_the_crossing_features_tell_levels_apart():
    n1, n2 = (
        feature_lists(n, their_levels(n, 300)) for n in ("MiniGrid-LavaCrossingS9N1-v0", "MiniGrid-LavaCrossingS9N2-v0")
    )
    assert not consistent(n1["opening0"], n2["opening0"])[0]
    assert not consistent(n1["rivers"], [r.split()[0] for r in n2["rivers"]])[0]


@pytest.mark.slow
@pytest.mark.parametrize("name", RANDOM_IDS)
def test_every_generator_matches_minigrid(name):
    check_generation(name, num_reference=2000)


@pytest.mark.parametrize("name", [n for n in IDS if n not in RANDOM_IDS])
def test_fixed_layouts_equal_minigrids(name):
    env, params = jaxsoc.make(name)
    _, state = jax.jit(env.reset)(jax.random.key(0), params)
    ref = make_reference(name)
    ref.reset(seed=0)
    _, theirs, _ = from_minigrid(ref)
    # the generated objects are anonymous (object id 0), minigrid's import numbers them
    np.testing.assert_array_equal(np.asarray(state.grid)[..., : C.OBJ_ID], np.asarray(theirs.grid)[..., : C.OBJ_ID])
    for field in ("agent_pos", "agent_dir", "target_pos", "carrying", "step_count"):
        np.testing.assert_array_equal(np.asarray(getattr(state, field)), np.asarray(getattr(theirs, field)))


@pytest.mark.parametrize("name", ["MiniGrid-LavaCrossingS11N5-v0", "MiniGrid-Playground-v0", "MiniGrid-LavaGapS7-v0"])
def test_reset_and_step_have_no_loops(name):
    """The generators and the step are straight-line code (tracing only, nothing compiled)."""
    env, params = jaxsoc.make(name)
    key = jax.random.key(0)
    _, state = jax.eval_shape(env.reset, key, params)
    programs = [
        jax.make_jaxpr(env.reset)(key, params),
        jax.make_jaxpr(lambda s: env.step(key, s, jnp.int32(2), params))(state),
    ]
    for program in programs:
        assert "while[" not in str(program) and "scan[" not in str(program)
