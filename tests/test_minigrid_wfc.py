"""The MiniGrid WFC ids against minigrid 3.2.0: bank, cache, generation and step-for-step play.

minigrid 3.2.0's distributions lack the WFC pattern images (see ``wfc_bank``). With the real images
(``$JAXSOC_WFC_PATTERNS``, else ``../shared/data/minigrid-wfc-patterns`` beside the repository root: see
``minigrid_wfc_reference.real_patterns_dir``) jaxsoc's banks are compared with minigrid's own registered envs for
the same seeds and minigrid's levels are replayed step for step (MazeSimple in the default suite, the other five
ids slow); without them those tests skip and the rest run minigrid's generator on stand-in images. The default
tests use one id (MazeSimple, whose solver takes ~0.4 s per layout) and tiny banks; the slow ones cover every id.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import os
import pathlib
import subprocess
import sys
from collections import deque

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("networkx", reason="minigrid's WFC envs need networkx (pip install 'minigrid[wfc]')")

from minigrid_reference import INTERACT, UNIFORM, assert_episode_matches, record_episode, scan_replayer, solve  # noqa: E402
from minigrid_wfc_reference import (  # noqa: E402
    NO_PATTERNS,
    fixed_pattern,
    minigrid_level,
    random_pattern,
    real_patterns_dir,
    stand_in_layouts,
    write_stand_in_patterns,
)

import jaxsoc  # noqa: E402
from jaxsoc import compat  # noqa: E402
from jaxsoc.envs.babyai import statistics as S  # noqa: E402
from jaxsoc.envs.gridworld import constants as C  # noqa: E402
from jaxsoc.envs.gridworld import wfc_bank  # noqa: E402
from jaxsoc.envs.gridworld.wfc import ENVS, WFC  # noqa: E402

FIELDS = ("image", "direction", "reward", "terminated", "truncated", "pos", "carrying", "grid")
STEPS = 160


@pytest.fixture(scope="module")
def patterns(tmp_path_factory):
    return str(write_stand_in_patterns(tmp_path_factory.mktemp("wfc-patterns")))


@pytest.fixture(scope="module")
def real_patterns():
    """The folder of minigrid's real pattern images; skips the test where there is none."""
    folder = real_patterns_dir()
    if folder is None:
        pytest.skip(NO_PATTERNS)
    return folder


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("JAXSOC_CACHE", str(tmp_path / "cache"))
    wfc_bank.cached_bank.cache_clear()
    yield
    wfc_bank.cached_bank.cache_clear()


@functools.cache
def reference_levels(preset: str, patterns: str, seeds: int) -> tuple:
    """minigrid's levels of ``preset`` for seeds ``0 .. seeds - 1`` (reset envs, copied before use)."""
    levels = []
    for seed in range(seeds):
        env = wfc_bank.reference_env(preset, patterns_dir=patterns)
        env.reset(seed=seed)
        levels.append(env)
    return tuple(levels)


def fresh(env):
    return copy.deepcopy(env)


def stack(trees):
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *trees)


@functools.cache
def replayer():
    # every WFC id has the same env class, grid shape and task: one compiled replay serves them all
    return scan_replayer(WFC())


def reachable(walls: np.ndarray, start, goal) -> bool:
    """Whether ``goal`` is 4-connected to ``start`` through open cells of ``walls`` ``bool[H, W]``."""
    seen, queue = {tuple(start)}, deque([tuple(start)])
    while queue:
        x, y = queue.popleft()
        for dx, dy in ((1, 0), (0, 1), (-1, 0), (0, -1)):
            nxt = (x + dx, y + dy)
            if not walls[nxt[1], nxt[0]] and nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return tuple(goal) in seen


def one_component(walls: np.ndarray) -> bool:
    ys, xs = np.nonzero(~walls)
    seen = {(int(xs[0]), int(ys[0]))}
    queue = deque(seen)
    while queue:
        x, y = queue.popleft()
        for nxt in ((x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)):
            if not walls[nxt[1], nxt[0]] and nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return len(seen) == len(xs)


def compare_episodes(preset, levels, seeds_per_level=3):
    """Replays uniform, interaction-biased (short ``max_steps``) and goal-directed episodes of each minigrid level
    through minigrid and one jitted, vmapped scan of ``step_env``; fails at the first differing step. Returns the
    number of steps compared."""
    states, params, actions, records, names = [], [], [], [], []
    for i, level in enumerate(levels):
        for kind in range(seeds_per_level):
            rng = np.random.default_rng(100 * i + kind)
            ref = fresh(level)
            if kind == 0:
                acts = rng.choice(7, size=STEPS, p=UNIFORM)
            elif kind == 1:
                ref.unwrapped.max_steps = int(rng.integers(5, 60))
                acts = rng.choice(7, size=STEPS, p=INTERACT)
            else:
                acts = solve(fresh(level), [("enter", "goal")], max_actions=STEPS)
                acts = np.pad(acts, (0, STEPS - len(acts)), constant_values=C.DONE)
            env, state, param = compat.from_minigrid(ref)
            assert isinstance(env, WFC) and env.preset == preset
            assert env.mission_text(state) == ref.unwrapped.mission == "traverse the maze to get to the goal"
            states.append(state)
            params.append(param)
            actions.append(acts.astype(np.int32))
            records.append(record_episode(ref, acts))
            names.append(f"{preset} level {i} episode {kind}")
    outs = [np.asarray(o) for o in replayer()(stack(states), jnp.asarray(np.stack(actions)), stack(params))]
    steps = sum(assert_episode_matches(names[b], FIELDS, outs, b, rec, actions[b]) for b, rec in enumerate(records))
    ends = [(bool(r["terminated"][-1]), bool(r["truncated"][-1]), float(r["reward"][-1])) for r in records]
    assert any(t for t, _, _ in ends), f"{preset}: no episode reached the goal"
    assert any(tr for _, tr, _ in ends), f"{preset}: truncation untested"
    assert all(r > 0 for (t, _, r) in ends if t)
    return steps


def test_every_id_registered_and_imported(patterns):
    assert sorted(ENVS) == sorted(f"MiniGrid-WFC-{p}-v0" for p in wfc_bank.PRESETS)
    with fixed_pattern(random_pattern(0)):
        for name in ENVS:
            env, params = jaxsoc.make(name)
            assert (params.height, params.width, params.max_steps, params.view_size) == (25, 25, 500, 7)
            assert not params.see_through_walls and env.action_space(params).n == 7
            ref = wfc_bank.reference_env(ENVS[name][1]["preset"], patterns_dir=patterns)
            ref.reset(seed=3)
            u = ref.unwrapped
            assert (u.max_steps, u.see_through_walls, u.agent_view_size, ref.action_space.n) == (500, False, 7, 7)
            mine, state, imported = compat.from_minigrid(ref)
            assert mine is env and imported == params
            assert env.mission_text(state) == u.mission
            np.testing.assert_array_equal(np.asarray(state.grid[..., :3]), u.grid.encode().transpose(1, 0, 2))
            np.testing.assert_array_equal(np.asarray(state.agent_pos), u.agent_pos)
            assert int(state.agent_dir) == u.agent_dir


def test_bank_equals_minigrid_and_round_trips_the_cache(patterns, monkeypatch, tmp_path):
    levels = reference_levels("MazeSimple", patterns, 4)
    bank = wfc_bank.cached_bank("MazeSimple", 4, patterns_dir=patterns)
    assert bank.shape == (4, 25, 25) and bank.dtype == bool
    for seed, level in enumerate(levels):
        np.testing.assert_array_equal(bank[seed], wfc_bank.layout_of(level), err_msg=f"seed {seed}")
        assert one_component(bank[seed]) and bank[seed][[0, -1]].all() and bank[seed][:, [0, -1]].all()
    assert len({b.tobytes() for b in bank}) > 1, "the bank's layouts should differ across seeds"
    path = wfc_bank.cache_path("MazeSimple", 4, patterns_dir=patterns)
    assert path.is_file() and "v1" in path.name and "n4" in path.name

    built = []

    def counting(*args):
        built.append(args)
        return bank.copy()

    monkeypatch.setattr(wfc_bank, "make_bank", counting)
    wfc_bank.cached_bank.cache_clear()
    np.testing.assert_array_equal(wfc_bank.cached_bank("MazeSimple", 4, patterns_dir=patterns), bank)
    assert not built, "the cached bank was rebuilt instead of loaded"
    path.write_bytes(b"not an npz file")
    wfc_bank.cached_bank.cache_clear()
    np.testing.assert_array_equal(wfc_bank.cached_bank("MazeSimple", 4, patterns_dir=patterns), bank)
    assert len(built) == 1, "a corrupt cache file was not rebuilt"
    np.testing.assert_array_equal(np.load(path)["walls"], bank)
    # the file name depends on the size and on the pattern image
    assert wfc_bank.cache_path("MazeSimple", 5, patterns_dir=patterns) != path
    other = write_stand_in_patterns(tmp_path / "other")
    image = other / "SimpleMaze.png"
    assert wfc_bank.cache_path("MazeSimple", 4, patterns_dir=other) == path  # same image bytes, same bank
    image.write_bytes((pathlib.Path(patterns) / "Fabric.png").read_bytes())  # the width-3 stand-in
    assert wfc_bank.cache_path("MazeSimple", 4, patterns_dir=other) != path


def test_missing_patterns_and_missing_minigrid_are_explained(tmp_path, monkeypatch):
    from minigrid.envs.wfc.config import WFC_PRESETS

    monkeypatch.delenv(wfc_bank.PATTERNS_ENV, raising=False)
    config = WFC_PRESETS["MazeSimple"]  # as from minigrid's wheel, whatever this minigrid holds
    monkeypatch.setitem(
        WFC_PRESETS, "MazeSimple", dataclasses.replace(config, pattern_path=tmp_path / "SimpleMaze.png")
    )
    with pytest.raises(FileNotFoundError, match=wfc_bank.PATTERNS_ENV):
        wfc_bank.wfc_config("MazeSimple", tmp_path / "elsewhere")
    with pytest.raises(FileNotFoundError, match="patterns"):
        WFC("MazeSimple", bank_size=2).reset(jax.random.key(0))
    monkeypatch.setitem(sys.modules, "minigrid", None)
    with pytest.raises(ImportError, match="pip install minigrid"):
        wfc_bank.make_bank("MazeSimple", 2)
    with pytest.raises(ValueError):
        WFC("MazeSimple", bank_size=0)


def check_placement(patterns, num_reference: int, pattern_seed: int = 7):
    """One layout (the solver's output fixed): minigrid's agent/goal/direction over ``num_reference`` seeds against
    jaxsoc's over 4000 keys, by chi-square per feature; and jaxsoc's levels are the bank's layout, solvable."""
    with fixed_pattern(random_pattern(pattern_seed)):
        env = WFC("MazeSimple", bank_size=2, patterns_dir=patterns)
        layout = env.layouts[0]
        ref = wfc_bank.reference_env("MazeSimple", patterns_dir=patterns)
        theirs = []
        for seed in range(num_reference):
            ref.reset(seed=seed)
            assert np.array_equal(wfc_bank.layout_of(ref), layout)
            state = compat.from_minigrid(ref)[1]
            theirs.append(state)
    params = env.default_params()
    _, states = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(jax.random.split(jax.random.key(1), 4000), params)
    grid, pos, goal, direction = (
        np.asarray(x) for x in (states.grid, states.agent_pos, states.target_pos, states.agent_dir)
    )
    np.testing.assert_array_equal(grid[..., C.TYPE] == C.WALL, np.broadcast_to(layout, grid.shape[:3]))
    assert np.all(grid[np.arange(4000), goal[:, 1], goal[:, 0], C.TYPE] == C.GOAL)
    assert np.all(grid[np.arange(4000), pos[:, 1], pos[:, 0], C.TYPE] == C.EMPTY)
    assert np.all((grid[..., C.TYPE] == C.GOAL).sum(axis=(1, 2)) == 1)
    assert all(reachable(layout, p, g) for p, g in zip(pos[:50], goal[:50]))
    assert np.all((pos != goal).any(axis=1)) and set(direction.tolist()) == {0, 1, 2, 3}

    def features(pos, goal, direction):
        return {
            "agent_x": list(pos[:, 0]),
            "agent_y": list(pos[:, 1]),
            "goal_x": list(goal[:, 0]),
            "goal_y": list(goal[:, 1]),
            "agent_dir": list(direction),
            "distance": list(np.minimum(np.abs(pos - goal).sum(axis=1) // 4, 8)),
        }

    mine = features(pos, goal, direction)
    ref_pos = np.stack([np.asarray(s.agent_pos) for s in theirs])
    ref_goal = np.stack([np.asarray(s.target_pos) for s in theirs])
    ref = features(ref_pos, ref_goal, np.array([int(s.agent_dir) for s in theirs]))
    for name in mine:
        a, b = [int(v) for v in mine[name]], [int(v) for v in ref[name]]
        assert set(a) >= set(b), f"{name}: values {sorted(set(b) - set(a))} of minigrid's never generated"
        statistic, dof = S.chi_square(a, b)
        assert statistic <= S.chi_square_quantile(dof), f"{name}: placement differs from minigrid's"


def test_placement_distribution_matches_minigrid(patterns):
    check_placement(patterns, 200)


def test_matches_minigrid_step_for_step(patterns):
    compare_episodes("MazeSimple", reference_levels("MazeSimple", patterns, 4)[:3])


def test_reset_indexes_the_bank(patterns):
    """jaxsoc's resets draw every layout of a bank, uniformly enough, and only those layouts."""
    env = WFC("MazeSimple", bank_size=3, patterns_dir=patterns)
    bank = np.stack([wfc_bank.layout_of(level) for level in reference_levels("MazeSimple", patterns, 4)[:3]])
    env.set_layouts(stand_in_layouts())
    env.set_layouts(bank)  # what cached_bank returns (checked above), without building it again
    with pytest.raises(ValueError, match="layouts"):
        env.set_layouts(bank[:, :5])
    with pytest.raises(ValueError, match="border"):
        env.set_layouts(np.zeros_like(bank))
    keys = jax.random.split(jax.random.key(2), 600)
    _, states = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(keys, env.default_params())
    walls = np.asarray(states.grid[..., C.TYPE] == C.WALL)
    which = [np.flatnonzero((bank == w).all(axis=(1, 2))) for w in walls]
    assert all(len(w) == 1 for w in which), "a reset produced a layout outside the bank"
    counts = np.bincount([int(w[0]) for w in which], minlength=3)
    assert counts.min() > 150, counts


# ---------------------------------------------------------------- slow: every id


@pytest.mark.slow
@pytest.mark.parametrize("preset", wfc_bank.PRESETS)
def test_every_id_bank_and_play_match_minigrid(preset, patterns):
    levels = reference_levels(preset, patterns, 3)
    bank = wfc_bank.cached_bank(preset, 3, patterns_dir=patterns)
    for seed, level in enumerate(levels):
        np.testing.assert_array_equal(bank[seed], wfc_bank.layout_of(level))
        assert one_component(bank[seed])
    compare_episodes(preset, levels)


@pytest.mark.slow
@pytest.mark.parametrize("pattern_seed", [3, 11])
def test_placement_distribution_matches_minigrid_closely(patterns, pattern_seed):
    check_placement(patterns, 2000, pattern_seed)


# ---------------------------------------------------------------- minigrid's real pattern images

REAL_SEEDS = 3


@functools.cache
def real_levels(preset: str, folder: str, seeds: int) -> tuple:
    """minigrid's own levels of ``preset`` (the registered id) for seeds ``0 .. seeds - 1``, copied before use."""
    return tuple(minigrid_level(preset, seed, folder) for seed in range(seeds))


@pytest.mark.parametrize(
    "preset", [p if p == "MazeSimple" else pytest.param(p, marks=pytest.mark.slow) for p in wfc_bank.PRESETS]
)
def test_real_bank_and_play_match_minigrid(preset, real_patterns):
    """jaxsoc's bank built from the real images equals the walls of minigrid's own env for the same seeds, and
    minigrid's levels play step for step the same in jaxsoc (3 levels x 3 episodes, up to 160 steps each)."""
    levels = real_levels(preset, real_patterns, REAL_SEEDS)
    env = WFC(preset, bank_size=REAL_SEEDS, patterns_dir=real_patterns)
    bank = env.layouts
    assert bank.shape == (REAL_SEEDS, 25, 25) and len({b.tobytes() for b in bank}) == REAL_SEEDS
    for seed, level in enumerate(levels):
        u = level.unwrapped
        walls = np.array(
            [[u.grid.get(x, y) is not None and u.grid.get(x, y).type == "wall" for x in range(25)] for y in range(25)]
        )
        np.testing.assert_array_equal(bank[seed], walls, err_msg=f"{preset} seed {seed}")
        assert one_component(bank[seed]) and bank[seed][[0, -1]].all() and bank[seed][:, [0, -1]].all()
        assert not bank[seed][u.agent_pos[1], u.agent_pos[0]]
    assert compare_episodes(preset, levels) > 2 * REAL_SEEDS * 20


@pytest.mark.slow
def test_real_bank_is_the_same_in_another_process(real_patterns):
    """A bank cached on disk by one process is what minigrid generates in another (here with another string-hash
    seed): minigrid's WFC solver and graph code draw only from the env's generator."""
    code = (
        "import sys; from jaxsoc.envs.gridworld import wfc_bank; "
        "sys.stdout.write(wfc_bank.make_bank('ObstaclesHogs3', 2, patterns_dir=sys.argv[1]).tobytes().hex())"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(pathlib.Path(__file__).parents[1])}
    out = subprocess.run([sys.executable, "-c", code, real_patterns], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    theirs = np.frombuffer(bytes.fromhex(out.stdout), bool).reshape(2, 25, 25)
    ours = np.stack([wfc_bank.layout_of(level) for level in real_levels("ObstaclesHogs3", real_patterns, 2)])
    np.testing.assert_array_equal(theirs, ours)
