"""minigrid 3.2.0's bonus put-next, unlock and LevelGen levels (``levels/bonus_putnext.py``,
``levels/bonus_unlock.py``) against minigrid, and levels whose agent starts carrying an object.

Differential: minigrid levels reset with seeds and imported (``babyai.compat.from_minigrid``) are stepped
through random actions (uniform and interaction-biased, some with a short ``max_steps``) and goal-directed
ones (minigrid's bot, or a scripted plan where the bot cannot play the level) in minigrid and in one jitted,
vmapped ``lax.scan`` of ``step_env``; image, direction, reward, terminated, truncated, agent position,
carried object and grid must agree at every step, the mission text and tokens at reset. Generation: 512
jaxsoc levels against 512 minigrid levels per id, Pearson's chi-square per statistic (``babyai.statistics``
plus the carried object and box contents). The default run covers one room layout and one generator;
``-m slow`` covers every id, the rejection rates and the bot.
"""

from __future__ import annotations

import functools
import math

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from babyai_reference import make_level
from minigrid_reference import INTERACT, UNIFORM, _path_to_face, assert_episode_matches, record_episode, scan_replayer
from test_babyai_differential import bot_actions

import jaxsoc
from jaxsoc.envs.babyai import language
from jaxsoc.envs.babyai import statistics as S
from jaxsoc.envs.babyai.compat import from_minigrid, instruction_from_minigrid
from jaxsoc.envs.babyai.instr import MAX_MISSION_TOKENS, BabyAIState
from jaxsoc.envs.babyai.levels import FIXED_MAX_STEPS, LEVELS, bonus_putnext, bonus_unlock
from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld.compat import grid_state_from_minigrid

FIELDS = ("image", "direction", "reward", "terminated", "truncated", "pos", "carrying", "grid")
IDS = [
    "BabyAI-PutNextLocalS5N3-v0",
    "BabyAI-PutNextLocalS6N4-v0",
    "BabyAI-PutNextS4N1-v0",
    "BabyAI-PutNextS5N2-v0",
    "BabyAI-PutNextS5N1-v0",
    "BabyAI-PutNextS6N3-v0",
    "BabyAI-PutNextS7N4-v0",
    "BabyAI-PutNextS5N2Carrying-v0",
    "BabyAI-PutNextS6N3Carrying-v0",
    "BabyAI-PutNextS7N4Carrying-v0",
    "BabyAI-MoveTwoAcrossS5N2-v0",
    "BabyAI-MoveTwoAcrossS8N9-v0",
    "BabyAI-UnlockLocal-v0",
    "BabyAI-UnlockLocalDist-v0",
    "BabyAI-KeyInBox-v0",
    "BabyAI-UnlockPickup-v0",
    "BabyAI-UnlockPickupDist-v0",
    "BabyAI-BlockedUnlockPickup-v0",
    "BabyAI-UnlockToUnlock-v0",
    "BabyAI-SynthS5R2-v0",
    "BabyAI-MiniBossLevel-v0",
    "BabyAI-BossLevelNoUnlock-v0",
]
CARRYING = [name for name in IDS if name.endswith("Carrying-v0")]
# levels minigrid's bot cannot play (its docs say so): goal-directed episodes come from a scripted plan
SCRIPTED = {*CARRYING, "BabyAI-KeyInBox-v0"}
RANDOM_STEPS = 120
PICKUP, DROP, TOGGLE = 3, 4, 5


# ---------------------------------------------------------------------------------------------------------
# minigrid's side


def reset_minigrid(name: str, seed: int, max_steps: int | None = None):
    """Returns minigrid's env of ``name`` reset with ``seed`` (optionally with a shorter ``max_steps``),
    ready to import: for a level that starts carrying, the stale start cell of the carried object is dropped
    from the move description's ``obj_poss``. minigrid resets the verifier before it takes the object off
    the grid; ``PutNextInstr`` never reads ``desc_move.obj_poss`` and the next ``drop`` recomputes it, so
    this changes nothing in minigrid, and ``compat`` (which refuses stale positions) can import the level."""
    env = make_level(name, seed)
    u = env.unwrapped
    if max_steps is not None:
        u.max_steps = max_steps
    if u.carrying is not None:
        desc = u.instrs.desc_move
        start = tuple(int(v) for v in u.carrying.init_pos)
        desc.obj_poss = [p for p in desc.obj_poss if tuple(int(v) for v in p) != start]
    return env


def minigrid_levels(name: str, seeds) -> BabyAIState:
    """minigrid's levels ``name`` for ``seeds``, imported and stacked (``mission`` left at 0)."""
    levels = []
    for seed in seeds:
        env = reset_minigrid(name, int(seed))
        instruction, verifier = instruction_from_minigrid(env)
        levels.append((grid_state_from_minigrid(env), instruction, verifier, np.int32(env.unwrapped.max_steps)))
    world, instruction, verifier, max_steps = jax.tree.map(lambda *xs: np.stack(xs), *levels)
    mission = np.zeros((len(levels), MAX_MISSION_TOKENS), np.uint8)
    return BabyAIState(world=world, instr=instruction, verifier=verifier, max_steps=max_steps, mission=mission)


def _face(env, action: int, wanted) -> list[int]:
    """Steps ``env`` along the shortest turn/forward path to face a cell with ``wanted(x, y, obj)``, then
    does ``action``; returns the actions (empty when no cell qualifies)."""
    path = _path_to_face(env.unwrapped, wanted)
    if path is None:
        return []
    for act in [*path, action]:
        env.step(act)
    return [*path, action]


def scripted_actions(name: str, env) -> np.ndarray:
    """A goal-directed episode for the levels minigrid's bot cannot play. Carrying: drop the carried object
    on a free cell next to the fixed object. KeyInBox: open the box, pick up the key, open the door."""
    u = env.unwrapped
    if u.carrying is not None:
        fixed = [tuple(int(v) for v in p) for p in u.instrs.desc_fixed.obj_poss]
        beside = lambda x, y, o: o is None and any(abs(x - a) + abs(y - b) == 1 for a, b in fixed)  # noqa: E731
        return np.asarray(_face(env, DROP, beside), np.int32)
    acts = _face(env, TOGGLE, lambda x, y, o: o is not None and o.type == "box")
    acts += _face(env, PICKUP, lambda x, y, o: o is not None and o.type == "key")
    acts += _face(env, TOGGLE, lambda x, y, o: o is not None and o.type == "door" and not o.is_open)
    return np.asarray(acts, np.int32)


def goal_directed(name: str, seed: int) -> np.ndarray:
    env = reset_minigrid(name, seed)
    return scripted_actions(name, env) if name in SCRIPTED else bot_actions(env)


# ---------------------------------------------------------------------------------------------------------
# jaxsoc's side


@functools.cache
def _replayer():
    # step_env does not depend on the level's generator: one jitted function, compiled once per room layout
    env, _ = jaxsoc.make("BabyAI-PutNextS5N2-v0")
    return scan_replayer(env, world_of=lambda state: state.world, params_axis=None)


def _stack(trees):
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *trees)


def compare(episodes: list) -> int:
    """Replays ``episodes`` (``(name, state, params, actions, record)``, one room layout) in jaxsoc and fails
    at the first step that differs from minigrid's record. Returns the number of compared steps."""
    length = int(2 ** np.ceil(np.log2(max(len(e[3]) for e in episodes))))  # few scan lengths, few compiles
    batch = list(episodes)
    while len(batch) % 8:
        batch.append(batch[-1])
    states = _stack([e[1] for e in batch])
    actions = np.full((len(batch), length), 6, np.int32)
    for k, e in enumerate(batch):
        actions[k, : len(e[3])] = e[3]
    outs = [np.asarray(o) for o in _replayer()(states, jnp.asarray(actions), episodes[0][2])]
    return sum(
        assert_episode_matches(f"{name} episode {k}", FIELDS, outs, k, rec, acts)
        for k, (name, _, _, acts, rec) in enumerate(episodes)
    )


def episodes_of(name: str, seeds) -> tuple[list, int]:
    """Random and goal-directed episodes of ``name`` on ``seeds``; checks the import's mission text, tokens
    and ``max_steps``. Returns ``(episodes, successes)`` (successes of the goal-directed episodes)."""
    env, params = jaxsoc.make(name)
    episodes, successes = [], 0
    for seed in seeds:
        rng = np.random.default_rng(seed)
        short = int(rng.integers(8, 40)) if seed % 2 else None
        ref = reset_minigrid(name, seed, short)
        state, imported_params = from_minigrid(ref)
        mission = ref.unwrapped.mission
        assert env.mission_text(state) == mission
        np.testing.assert_array_equal(language.tokenize(mission), np.asarray(state.mission))
        assert (imported_params.room_size, imported_params.num_rows, imported_params.num_cols) == (
            params.room_size,
            params.num_rows,
            params.num_cols,
        )
        if short is None:
            limit = FIXED_MAX_STEPS.get(name)
            assert int(state.max_steps) == (limit if limit else ref.unwrapped.max_steps)
        acts = rng.choice(7, size=RANDOM_STEPS, p=INTERACT if seed % 3 else UNIFORM).astype(np.int32)
        episodes.append((name, state, imported_params, acts, record_episode(ref, acts)))

        acts = goal_directed(name, seed)
        ref = reset_minigrid(name, seed)
        state, imported_params = from_minigrid(ref)
        rec = record_episode(ref, acts)
        successes += bool(rec["steps"] and rec["terminated"][-1] and rec["reward"][-1] > 0)
        episodes.append((name, state, imported_params, acts, rec))
    return episodes, successes


def check_layout(names, seeds):
    episodes = []
    for name in names:
        found, successes = episodes_of(name, seeds)
        assert successes >= len(seeds) - 1, f"{name}: the goal-directed episodes succeeded {successes} times"
        episodes += found
    assert compare(episodes) > 0


# ---------------------------------------------------------------------------------------------------------
# registry


def test_ids_are_minigrids():
    import minigrid  # noqa: F401

    mine = {**bonus_putnext.LEVELS, **bonus_unlock.LEVELS}
    assert sorted(mine) == sorted(IDS)
    assert all(name in gym.registry for name in IDS)
    for name in IDS:
        spec = gym.spec(name)
        u = gym.make(name).unwrapped
        generator, params = LEVELS[name]
        assert (params.room_size, params.num_rows, params.num_cols) == (u.room_size, u.num_rows, u.num_cols), spec
        assert (FIXED_MAX_STEPS.get(name) is not None) == u.fixed_max_steps, name
        if u.fixed_max_steps:
            assert FIXED_MAX_STEPS[name] == u.max_steps == params.max_steps
    # UnlockPickup's `if max is None` leaves its limit to the instruction: 1 navigation of 2 rooms of 36
    assert "BabyAI-UnlockPickup-v0" not in FIXED_MAX_STEPS


# ---------------------------------------------------------------------------------------------------------
# differential


def test_two_room_levels_match_minigrid_step_for_step():
    # one room layout (two rooms of 5): put next, put next starting with the object in hand, move two across
    check_layout(["BabyAI-PutNextS5N2-v0", "BabyAI-PutNextS5N2Carrying-v0", "BabyAI-MoveTwoAcrossS5N2-v0"], [0, 1])


LAYOUTS = {}
for _name in IDS:
    _p = LEVELS[_name][1]
    LAYOUTS.setdefault((_p.room_size, _p.num_rows, _p.num_cols), []).append(_name)


@pytest.mark.slow
@pytest.mark.parametrize("layout", sorted(LAYOUTS), ids=lambda lay: "x".join(map(str, lay)))
def test_every_id_matches_minigrid_step_for_step(layout):
    check_layout(LAYOUTS[layout], range(6))


# ---------------------------------------------------------------------------------------------------------
# generation

NUM = 512


def extra_statistics(levels: BabyAIState) -> dict[str, list]:
    """The carried object (``"type colour"`` or ``"none"``) and the contents of every box in the grid."""
    carrying = np.asarray(levels.world.carrying)
    grid = np.asarray(levels.world.grid)
    out = {"carried": [], "contents": []}
    for n in range(carrying.shape[0]):
        kind, color = int(carrying[n, C.TYPE]), int(carrying[n, C.COLOR])
        out["carried"].append("none" if kind == C.EMPTY else f"{C.OBJECT_NAMES[kind]} {C.COLOR_NAMES[color]}")
        boxes = grid[n][grid[n][..., C.TYPE] == C.BOX]
        out["contents"] += [int(box[C.CONTENTS]) for box in boxes]
    return out


@functools.cache
def generated(name: str) -> BabyAIState:
    """``NUM`` jaxsoc levels of ``name`` (one jitted, vmapped reset), on the host."""
    env, params = jaxsoc.make(name)
    keys = jax.random.split(jax.random.key(1), NUM)
    return jax.device_get(jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(keys, params)[1])


def check_generation(name: str):
    params = LEVELS[name][1]
    mine = generated(name)
    theirs = minigrid_levels(name, range(NUM))
    stats_mine = {**S.level_statistics(mine, params.room_size), **extra_statistics(mine)}
    stats_theirs = {**S.level_statistics(theirs, params.room_size), **extra_statistics(theirs)}
    for stat in stats_mine:
        if not stats_mine[stat] and not stats_theirs[stat]:  # e.g. box contents of a level without boxes
            continue
        statistic, dof = S.chi_square(stats_mine[stat], stats_theirs[stat])
        limit = S.chi_square_quantile(dof)
        assert statistic <= limit, f"{name}: {stat} differs from minigrid (chi-square {statistic:.1f} > {limit:.1f})"
    # every object id is unique, the carried one included
    ids = np.asarray(mine.world.grid[..., C.OBJ_ID]).reshape(NUM, -1)
    held = np.asarray(mine.world.carrying[:, C.OBJ_ID])
    for n in range(NUM):
        found = np.concatenate([ids[n][ids[n] > 0], held[n : n + 1][held[n : n + 1] > 0]])
        assert len(set(found.tolist())) == len(found)
    return mine, theirs


def test_carrying_level_generation_matches_minigrid():
    mine, _ = check_generation("BabyAI-PutNextS5N2Carrying-v0")
    held = np.asarray(mine.world.carrying)
    assert np.all(np.isin(held[:, C.TYPE], (C.KEY, C.BALL, C.BOX))) and np.all(held[:, C.OBJ_ID] > 0)
    # the carried object is the one to move: the move description names it, and it is off the grid
    np.testing.assert_array_equal(held[:, C.TYPE], np.asarray(mine.instr.desc_type[:, 0, 0]))
    np.testing.assert_array_equal(held[:, C.COLOR], np.asarray(mine.instr.desc_color[:, 0, 0]))
    ids = np.asarray(mine.world.grid[..., C.OBJ_ID])
    assert not np.any(ids == held[:, C.OBJ_ID][:, None, None])
    objects = np.isin(np.asarray(mine.world.grid[..., C.TYPE]), (C.KEY, C.BALL, C.BOX)).sum(axis=(1, 2))
    np.testing.assert_array_equal(objects, 3)


@pytest.mark.slow
@pytest.mark.parametrize("name", IDS)
def test_every_generator_matches_minigrid(name):
    check_generation(name)


def test_sample_without_carrying_starts_empty_handed():
    # a three-element attempt (every level but the Carrying ones) gives an empty carried cell
    generator, params = LEVELS["BabyAI-PutNextS4N1-v0"]
    world, _, accepted, tries = jax.jit(generator.sample)(jax.random.key(0), params)
    np.testing.assert_array_equal(np.asarray(world.carrying), C.EMPTY_CELL)
    assert bool(accepted) and int(tries) == 1


def test_carried_object_is_in_the_move_set_at_reset():
    # minigrid resets the verifier while the object still lies on the grid: the carried object is the one to move
    levels = generated("BabyAI-PutNextS5N2Carrying-v0")
    held = np.asarray(levels.world.carrying[:, C.OBJ_ID])
    assert np.all(held > 0)
    assert np.all(np.asarray(levels.verifier.obj_set)[np.arange(NUM), 0, 0, held])
    assert not np.any(np.asarray(levels.verifier.plural)[:, 0, 0])  # "put the ...": every kind is unique


@pytest.mark.slow
@pytest.mark.parametrize("name", IDS)
def test_rejection_rates_fit_max_tries(name):
    # every reset of 2048 finds an accepted attempt; levels registered with max_tries=1 never reject
    from jaxsoc.envs.babyai.levels import LevelGenerator

    generator, params = LEVELS[name]
    wide = LevelGenerator(generator.name, generator.attempt, max_tries=64)
    keys = jax.random.split(jax.random.key(11), 2048)
    _, _, accepted, tries = jax.jit(jax.vmap(lambda k: wide.sample(k, params)))(keys)
    tries = np.asarray(tries)
    assert np.all(np.asarray(accepted))
    if generator.max_tries == 1:
        assert np.all(tries == 1), f"{name}: {np.sum(tries > 1)} resets needed more than one attempt"
    else:  # the measured rate fits the registered K: p**K < 1e-12 with margin
        p = 1 - len(tries) / tries.sum()
        assert p**generator.max_tries < 1e-10, (name, p)


# ---------------------------------------------------------------------------------------------------------
# the expert bot

BOT_LEVELS = 30


@pytest.mark.slow
@pytest.mark.parametrize("name", IDS)
def test_bot_solves_generated_levels_as_often_as_minigrids(name):
    from jaxsoc.envs.babyai.bot_rollout import bot_episodes

    env, params = jaxsoc.make(name)
    keys = jax.random.split(jax.random.key(5), BOT_LEVELS)
    states = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(keys, params)[1]
    limit = int(np.max(np.asarray(states.max_steps)))
    result = jax.device_get(bot_episodes(env, params, states, limit))
    ours = int(np.sum(result.success))
    theirs = 0
    for seed in range(BOT_LEVELS):
        env_ref = reset_minigrid(name, seed)
        acts = bot_actions(env_ref, limit=limit)
        rec = record_episode(reset_minigrid(name, seed), acts)
        theirs += bool(rec["steps"] and rec["terminated"][-1] and rec["reward"][-1] > 0)
    print(f"\n{name}: jaxsoc's bot {ours}/{BOT_LEVELS}, minigrid's bot {theirs}/{BOT_LEVELS}")
    # different levels on each side: fail only when jaxsoc's rate is lower beyond chance (one-sided z, p < 1e-3)
    pooled = (ours + theirs) / (2 * BOT_LEVELS)
    spread = math.sqrt(pooled * (1 - pooled) * 2 / BOT_LEVELS)
    z = (theirs - ours) / BOT_LEVELS / spread if spread > 0 else 0.0
    assert z < 3.09, f"{name}: jaxsoc's bot {ours}/{BOT_LEVELS}, minigrid's {theirs}/{BOT_LEVELS} (z={z:.2f})"
