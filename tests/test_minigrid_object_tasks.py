"""minigrid 3.2.0's object tasks (Fetch, GoToDoor, GoToObject, PutNear, RedBlueDoors) against jaxsoc.

Differential: episodes start from minigrid states imported with ``jaxsoc.compat.from_minigrid``; random
(uniform, interaction-biased and wandering, half with a short ``max_steps``) and scripted action sequences
(towards each task's success, and towards its failures) are replayed through minigrid and through one jitted,
vmapped ``lax.scan`` of ``step_env``; image, direction, reward, termination, truncation, agent position,
carried object, full grid and the observed mission must agree at every step.
Generation: jaxsoc's levels against minigrid's by a chi-square test per level feature, plus the invariants
of minigrid's generators. The default run covers one id per task (two generators); ``-m slow`` every id.
"""

from __future__ import annotations

import functools

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from minigrid_object_tasks_reference import described, family, features, play, replayer
from minigrid_reference import INTERACT, UNIFORM, record_episode

import jaxsoc
from jaxsoc.compat import from_minigrid
from jaxsoc.envs.babyai import statistics as S
from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld import mission as M
from jaxsoc.envs.gridworld.object_tasks import ENVS, FETCH_SYNTAX

IDS = sorted(ENVS)
# one id per task in the default run (GoToDoor's 6x6 room has a random size)
DEFAULT_IDS = [
    "MiniGrid-Fetch-5x5-N2-v0",
    "MiniGrid-GoToDoor-6x6-v0",
    "MiniGrid-GoToObject-6x6-N2-v0",
    "MiniGrid-PutNear-6x6-N2-v0",
    "MiniGrid-RedBlueDoors-6x6-v0",
]
NUM_STEPS = 128
# a mix without toggle and done, which end GoToDoor and GoToObject at once, so that truncation is reached
WANDER = np.array([0.2, 0.2, 0.35, 0.15, 0.1, 0.0, 0.0])
MIXES = (UNIFORM, INTERACT, WANDER)
FIELDS = ("image", "direction", "reward", "terminated", "truncated", "pos", "carrying", "grid")


def _stack(trees):
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *trees)


@functools.cache
def _replayer(name: str):
    return replayer(jaxsoc.make(name)[0])


def _episode(name: str, seed: int, kind: str):
    """Returns ``(state, params, actions int32[NUM_STEPS], record, mission)`` of one minigrid episode:
    ``kind`` is ``"random"`` (every other one with a short ``max_steps``), ``"success"`` or ``"failure"``."""
    ref = gym.make(name)
    ref.reset(seed=seed)
    rng = np.random.default_rng(1000 + seed)
    if kind == "random":
        if seed % 2:
            ref.unwrapped.max_steps = int(rng.integers(3, 40))
        acts = rng.choice(7, size=NUM_STEPS, p=MIXES[seed % 3]).astype(np.int32)
    else:
        planner = gym.make(name)
        planner.reset(seed=seed)
        acts = play(planner, goal=kind == "success", variant=seed, max_actions=NUM_STEPS)
    env, state, params = from_minigrid(ref)
    assert env is jaxsoc.make(name)[0]
    mission = ref.unwrapped.mission
    record = record_episode(ref, acts)
    return state, params, np.pad(acts, (0, NUM_STEPS - len(acts)), constant_values=C.DONE), record, mission


def _compare(name: str, num_random: int, num_scripted: int) -> dict[str, list]:
    """Replays ``num_random`` random episodes and ``num_scripted`` of each scripted kind through minigrid and
    jaxsoc, fails at the first difference, and returns the minigrid records by kind."""
    env = jaxsoc.make(name)[0]
    kinds = ["random"] * num_random + ["success"] * num_scripted + ["failure"] * num_scripted
    seeds = list(range(num_random)) + 2 * list(range(100, 100 + num_scripted))
    episodes = [_episode(name, seed, kind) for seed, kind in zip(seeds, kinds)]
    batch = episodes + episodes[-1:] * (-len(episodes) % 8)  # few batch shapes
    states, params, actions, _, _ = zip(*batch)
    outs = _replayer(name)(_stack(states), jnp.asarray(np.stack(actions)), _stack(params))
    outs = [np.asarray(o) for o in outs]
    by_kind: dict[str, list] = {"random": [], "success": [], "failure": []}
    for i, (kind, seed, (state, _, acts, rec, mission)) in enumerate(zip(kinds, seeds, episodes)):
        n = rec["steps"]
        where = f"{name} {kind} seed {seed}"
        by_kind[kind].append(rec)
        if n == 0:  # the scripted player found nothing to do (e.g. no wrong object to fetch)
            continue
        for field, ours in zip(FIELDS, outs):
            mine, theirs = ours[i, :n], rec[field]
            bad = np.abs(mine - theirs) > 1e-6 if field == "reward" else (mine != theirs).reshape(n, -1).any(axis=1)
            if bad.any():
                t = int(np.argmax(bad))
                message = f"{where}: {field} differs first at step {t} (action {acts[t]})"
                pytest.fail(f"{message}:\njaxsoc={mine[t]!r}\nminigrid={theirs[t]!r}")
        assert env.mission_text(state) == mission, where
        if env.mission_observation:
            assert (outs[-1][i, :n] == M.encode(mission)).all(), f"{where}: the observed mission changed"
    return by_kind


def _ended(rec, won: bool) -> bool:
    return bool(rec["steps"] and rec["terminated"][-1] and (rec["reward"][-1] > 0) == won)


def _check_outcomes(name: str, by_kind: dict[str, list]) -> None:
    random, success, failure = by_kind["random"], by_kind["success"], by_kind["failure"]
    assert any(rec["truncated"][-1] for rec in random), f"{name}: truncation untested"
    if family(name) != "RedBlueDoors":  # random play seldom faces the blue door; the scripts end it both ways
        assert any(rec["terminated"][-1] for rec in random), f"{name}: no random episode reached the task's end"
    won = sum(_ended(rec, True) for rec in success)
    assert won >= 0.8 * len(success), f"{name}: the scripted player succeeded in {won}/{len(success)} episodes"
    lost = sum(_ended(rec, False) for rec in failure)
    assert lost >= 0.6 * len(failure), f"{name}: the scripted failures ended {lost}/{len(failure)} episodes"


@pytest.mark.parametrize("name", DEFAULT_IDS)
def test_matches_minigrid_step_for_step(name):
    _check_outcomes(name, _compare(name, num_random=12, num_scripted=6))


@pytest.mark.slow
@pytest.mark.parametrize("name", IDS)
def test_matches_minigrid_step_for_step_every_id(name):
    _check_outcomes(name, _compare(name, num_random=120, num_scripted=40))


@pytest.mark.parametrize("name", IDS)
def test_compat_imports_every_id(name):
    ref = gym.make(name)
    obs, _ = ref.reset(seed=7)
    env, state, params = from_minigrid(ref)
    assert isinstance(env, ENVS[name][0])
    default = jaxsoc.make(name)[1]
    assert (params.height, params.width, params.view_size, params.see_through_walls, int(params.max_steps)) == (
        default.height,
        default.width,
        default.view_size,
        default.see_through_walls,
        int(default.max_steps),
    )
    assert env.num_actions == ref.action_space.n
    ours = env.observe(state, params)
    np.testing.assert_array_equal(np.asarray(ours["image"]), obs["image"])
    assert env.mission_text(state, params) == obs["mission"] == ref.unwrapped.mission
    assert env.mission_observation == ("RedBlue" not in name)
    if env.mission_observation:
        assert M.decode(ours["mission"]) == obs["mission"]


# ----------------------------------------------------------------------------------------------
# generation

NUM_OURS, NUM_THEIRS = 2000, 500


@functools.cache
def _samples(name: str):
    env, params = jaxsoc.make(name)
    keys = jax.random.split(jax.random.key(0), NUM_OURS)
    reset = jax.jit(jax.vmap(lambda k: (lambda o, s: (s, env.mission_tokens(s, params)))(*env.reset(k, params))))
    states, tokens = jax.device_get(reset(keys))
    missions = [M.decode(t) for t in tokens]
    ours = [features(g, p, d, m) for g, p, d, m in zip(states.grid, states.agent_pos, states.agent_dir, missions)]
    ref = gym.make(name)
    theirs = []
    for seed in range(NUM_THEIRS):
        ref.reset(seed=seed)
        _, state, _ = from_minigrid(ref)
        theirs.append(features(np.asarray(state.grid), state.agent_pos, int(state.agent_dir), ref.unwrapped.mission))
    return ours, theirs, states, missions


def _check_distributions(name: str) -> None:
    ours, theirs, _, _ = _samples(name)
    for feature in sorted(set().union(*ours, *theirs)):
        a, b = [f.get(feature) for f in ours], [f.get(feature) for f in theirs]
        repeated = {v for v in set(b) if b.count(v) > 2}
        assert repeated <= set(a), f"{name}: {feature} values {sorted(repeated - set(a), key=str)} never generated"
        statistic, dof = S.chi_square(a, b)
        limit = S.chi_square_quantile(dof)
        message = f"{name}: {feature} differs from minigrid (chi-square {statistic:.1f} > {limit:.1f})"
        assert dof == 0 or statistic <= limit, message


def _check_invariants(name: str) -> None:
    """The rules of minigrid's generator, on every jaxsoc level: the agent on a free cell, the objects' kinds,
    count and distinctness, the target where the state says and named by the mission, the doors' places,
    colours and states, and (where minigrid guarantees it) every named object within the agent's reach."""
    ours, _, states, missions = _samples(name)
    env, params = jaxsoc.make(name)
    n, task = len(missions), family(name)
    grid, pos, rows = states.grid, states.agent_pos, np.arange(len(missions))
    kinds = grid[..., C.TYPE]
    assert (kinds[rows, pos[:, 1], pos[:, 0]] == C.EMPTY).all(), f"{name}: the agent starts on an object"
    objects = np.isin(kinds, (C.KEY, C.BALL, C.BOX)).reshape(n, -1)
    num_objs = ENVS[name][1].get("num_objs", 0)
    assert (objects.sum(1) == num_objs).all(), f"{name}: not {num_objs} objects"
    if task == "Fetch":  # the target is described, not placed: some key or ball matches it
        assert np.isin(kinds, (C.KEY, C.BALL, C.WALL, C.EMPTY)).all()
        match = (grid[..., :2] == states.target_obj[:, None, None]).all(-1).reshape(n, -1).any(1)
        assert match.all(), f"{name}: no object matches the mission"
        assert all(m.rsplit(" ", 2)[0] in FETCH_SYNTAX for m in missions)
    elif task != "RedBlueDoors":  # the target sits at target_pos, and the mission names it last
        target = grid[rows, states.target_pos[:, 1], states.target_pos[:, 0], :2]
        assert (target == states.target_obj).all(), f"{name}: target_pos does not hold the target"
        assert (np.array([described(m)[-1] for m in missions]) == states.target_obj).all()
    if task in ("GoToObject", "PutNear"):
        pairs = grid[..., :2].reshape(n, -1, 2)
        assert all(len({tuple(p) for p in pairs[i][objects[i]]}) == num_objs for i in range(n)), f"{name}: repeats"
    if task == "PutNear":
        assert not (states.move_obj == states.target_obj).all(1).any()
        assert min(f["min_gap"] for f in ours) >= 2, f"{name}: two objects touch"
    if task == "GoToDoor":
        doors = (kinds == C.DOOR).reshape(n, -1)
        assert (doors.sum(1) == 4).all()
        colors = grid[..., C.COLOR].reshape(n, -1)
        assert all(len(set(colors[i][doors[i]])) == 4 for i in range(n)), f"{name}: door colours repeat"
        assert (grid[..., C.STATE].reshape(n, -1)[doors] == C.CLOSED).all()
    if task == "RedBlueDoors":
        size = params.height
        assert (states.red_pos[:, 0] == size // 2).all() and (states.target_pos[:, 0] == size // 2 + size - 1).all()
        for door, color in ((states.red_pos, C.RED), (states.target_pos, C.BLUE)):
            cells = grid[rows, door[:, 1], door[:, 0]]
            assert (cells[:, :3] == [C.DOOR, color, C.CLOSED]).all()
        assert ((pos[:, 0] > size // 2) & (pos[:, 0] < size // 2 + size - 1)).all()
    if task in ("GoToDoor", "PutNear", "RedBlueDoors"):  # open rooms (objects never touch in PutNear)
        assert all(value for f in ours for key, value in f.items() if key.endswith("_reachable")), f"{name}: unsolvable"
    assert env.observation_space(params).contains(jax.device_get(env.reset(jax.random.key(1), params)[0]))


@pytest.mark.parametrize("name", ["MiniGrid-GoToDoor-8x8-v0", "MiniGrid-PutNear-8x8-N3-v0"])
def test_generation_matches_minigrid(name):
    _check_distributions(name)
    _check_invariants(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", IDS)
def test_generation_matches_minigrid_every_id(name):
    _check_distributions(name)
    _check_invariants(name)
