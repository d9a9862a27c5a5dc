"""minigrid 3.2.0's bonus "go to" and navigation BabyAI levels (``levels.bonus_goto``) and the MiniGrid
KeyCorridor envs (``gridworld.key_corridor``) against minigrid, step for step and by generation statistics.

Differential: reset minigrid levels are imported (``compat``) and the same actions (uniform and
interaction-biased random play, some episodes with a short ``max_steps``, and goal-directed episodes from
minigrid's bot or a scripted plan) are replayed through minigrid and through one jitted, vmapped ``lax.scan``
of ``step_env`` per room layout; observation, direction, reward, termination, truncation, agent position,
carried object, grid and mission must agree at every step. Generation: jaxsoc's levels against minigrid's
by chi-square per statistic (``babyai.statistics`` plus the position of the agent and of the first object of
each kind), and invariants. The default run covers one room layout of each family and the KeyCorridor
generator; ``-m slow`` covers every id (and the bot's success rates).
"""

from __future__ import annotations

import functools

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from babyai_reference import register_reference_levels
from minigrid_reference import INTERACT, UNIFORM, assert_episode_matches, record_episode, scan_replayer
from test_babyai_differential import bot_actions
from test_gridworld_generation import chi2_homogeneity_p, features

import jaxsoc
from jaxsoc.envs.babyai import instr as I
from jaxsoc.envs.babyai import language, solvability
from jaxsoc.envs.babyai import roomgrid as RG
from jaxsoc.envs.babyai import statistics as S
from jaxsoc.envs.babyai.bot_rollout import bot_episodes, generated_states
from jaxsoc.envs.babyai.compat import from_minigrid, instruction_from_minigrid
from jaxsoc.envs.babyai.levels import FIXED_MAX_STEPS, bonus_goto
from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld import key_corridor
from jaxsoc.envs.gridworld import mission as M
from jaxsoc.envs.gridworld.compat import grid_state_from_minigrid

register_reference_levels()

LEVEL_IDS = sorted(bonus_goto.LEVELS)
KEY_CORRIDOR_IDS = sorted(key_corridor.ENVS)
FIELDS = ("image", "direction", "reward", "terminated", "truncated", "pos", "carrying", "grid")
RANDOM_STEPS = 160
# the default run: every id of the one-room-of-8 layout (one compiled replay)
ONE_ROOM_8 = [name for name in LEVEL_IDS if bonus_goto.LEVELS[name][1].height == 8]


def reference(level_id: str, seed: int, max_steps: int | None = None):
    """Returns minigrid's env ``level_id`` reset with ``seed`` (``max_steps`` overridden when given)."""
    env = gym.make(level_id)
    env.reset(seed=seed)
    if max_steps is not None:
        env.unwrapped.max_steps = max_steps
    return env


@functools.cache
def babyai_replayer():
    """One jitted replay for every BabyAI level: ``step_env`` reads only the state and the params (whose
    static room layout selects the compiled version)."""
    env = jaxsoc.make(LEVEL_IDS[0])[0]
    return scan_replayer(env, world_of=lambda state: state.world, params_axis=None)


@functools.cache
def grid_replayer(name: str):
    return scan_replayer(jaxsoc.make(name)[0])


def stack(trees):
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *trees)


def compare(replay, episodes: list, label: str, shared_params=None) -> int:
    """Replays ``episodes`` (``(state, params, actions, record)``) with ``replay(states, actions, params)``
    (``shared_params`` for the whole batch, else each episode's own) and fails at the first step that differs
    from minigrid's record. Returns the number of compared steps."""
    length = int(2 ** np.ceil(np.log2(max(max(len(e[2]) for e in episodes), 1))))  # few scan lengths
    batch = list(episodes) + [episodes[-1]] * (-len(episodes) % 4)
    actions = np.full((len(batch), length), C.DONE, np.int32)
    for k, (_, _, acts, _) in enumerate(batch):
        actions[k, : len(acts)] = acts
    params = stack([e[1] for e in batch]) if shared_params is None else shared_params
    outs = [np.asarray(o) for o in replay(stack([e[0] for e in batch]), jnp.asarray(actions), params)]
    return sum(
        assert_episode_matches(f"{label} episode {k}", FIELDS, outs, k, rec, acts)
        for k, (_, _, acts, rec) in enumerate(episodes)
    )


def babyai_episodes(level_id: str, seeds) -> tuple[list, dict]:
    """Random and bot episodes of minigrid's level ``level_id``; checks each imported mission. Returns
    ``(episodes, outcomes)``, ``outcomes`` counting truncations and bot successes."""
    env = jaxsoc.make(level_id)[0]
    episodes, outcomes = [], {"truncated": 0, "bot_success": 0}
    for seed in seeds:
        rng = np.random.default_rng(seed)
        short = int(rng.integers(5, 40)) if seed % 2 else None
        ref = reference(level_id, seed, short)
        state, params = from_minigrid(ref)
        mission = ref.unwrapped.mission
        assert language.decode(state.mission) == mission and env.mission_text(state) == mission, level_id
        np.testing.assert_array_equal(language.tokenize(mission), np.asarray(state.mission))
        acts = rng.choice(7, size=RANDOM_STEPS, p=INTERACT if seed % 3 else UNIFORM).astype(np.int32)
        rec = record_episode(ref, acts)
        outcomes["truncated"] += bool(rec["truncated"][-1])
        episodes.append((state, params, acts, rec))

        limit = reference(level_id, seed).unwrapped.max_steps
        acts = bot_actions(reference(level_id, seed), limit=limit)
        ref = reference(level_id, seed)
        state, _ = from_minigrid(ref)
        rec = record_episode(ref, acts)
        outcomes["bot_success"] += bool(len(acts) and rec["terminated"][-1] and rec["reward"][-1] > 0)
        episodes.append((state, params, acts, rec))
    return episodes, outcomes


def check_babyai_level(level_id: str, seeds) -> None:
    episodes, outcomes = babyai_episodes(level_id, seeds)
    # a BabyAI step reads the limit from the state: the params' static layout is all the replay needs
    assert compare(babyai_replayer(), episodes, level_id, shared_params=episodes[0][1]) > 0
    assert outcomes["truncated"] > 0, f"{level_id}: truncation untested"
    assert outcomes["bot_success"] >= len(seeds) - 1, f"{level_id}: the bot succeeded {outcomes['bot_success']} times"


def key_corridor_bot_actions(name: str, seed: int) -> np.ndarray:
    """Goal-directed actions for MiniGrid-KeyCorridor ``name`` reset with ``seed``: minigrid draws the
    BabyAI-KeyCorridor level of the same seed and size with the same calls, so it is the same world (checked),
    and its bot's episode there (unlock, drop the key, pick up the ball) is one here."""
    babyai, grid = reference(name.replace("MiniGrid-", "BabyAI-"), seed), reference(name, seed)
    np.testing.assert_array_equal(babyai.unwrapped.grid.encode(), grid.unwrapped.grid.encode())
    np.testing.assert_array_equal(babyai.unwrapped.agent_pos, grid.unwrapped.agent_pos)
    return bot_actions(babyai, limit=babyai.unwrapped.max_steps)


def check_key_corridor(name: str, seeds) -> None:
    """Random and scripted (key, door, ball) episodes of MiniGrid-KeyCorridor ``name`` and its mission."""
    env = jaxsoc.make(name)[0]
    episodes, solved, truncated = [], 0, 0
    for seed in seeds:
        rng = np.random.default_rng(seed)
        ref = reference(name, seed, int(rng.integers(10, 60)) if seed % 2 else None)
        state, params = env.import_minigrid(ref)
        assert env.mission_text(state) == ref.unwrapped.mission
        np.testing.assert_array_equal(env.observe(state, params)["mission"], M.encode(ref.unwrapped.mission))
        acts = rng.choice(7, size=RANDOM_STEPS, p=INTERACT if seed % 3 else UNIFORM).astype(np.int32)
        rec = record_episode(ref, acts)
        truncated += bool(rec["truncated"][-1])
        episodes.append((state, params, acts, rec))

        acts = key_corridor_bot_actions(name, seed)
        ref = reference(name, seed)
        state, params = env.import_minigrid(ref)
        assert params == env.default_params(), f"{name}: size or max_steps differ from minigrid's"
        rec = record_episode(ref, acts)
        solved += bool(rec["terminated"][-1] and rec["reward"][-1] > 0)
        episodes.append((state, params, acts, rec))
    assert compare(grid_replayer(name), episodes, name) > 0 and truncated > 0
    assert solved >= len(seeds) - 1, f"{name}: the bot's plan succeeded {solved}/{len(seeds)} times"


# ---------------------------------------------------------------------------------------------------------
# registry

SLICE = (
    ["GoToRedBallNoDists-v0", "GoToObjS4-v0", "GoToObjS6-v1", "GoToOpen-v0", "GoToObjMazeOpen-v0"]
    + [f"GoToLocalS{s}N{n}-v0" for s, n in bonus_goto._LOCAL]
    + [f"GoToObjMaze{s}-v0" for s in ("S4R2", "S4", "S5", "S6", "S7")]
    + ["GoToSeqS5R2-v0", "GoToRedBlueBall-v0", "GoToDoor-v0", "GoToObjDoor-v0", "ActionObjDoor-v0"]
    + [f"FindObjS{s}-v0" for s in (5, 6, 7)]
    + [f"KeyCorridor{s}-v0" for s in ("", "S3R1", "S3R2", "S3R3", "S4R3", "S5R3", "S6R3")]
    + [f"OneRoomS{s}-v0" for s in (8, 12, 16, 20)]
)


def test_registry_holds_the_slice_with_minigrids_layouts_and_limits():
    assert sorted(f"BabyAI-{name}" for name in SLICE) == LEVEL_IDS
    assert sorted(i for i in gym.registry if i.startswith("MiniGrid-KeyCorridor")) == KEY_CORRIDOR_IDS
    for level_id in [*LEVEL_IDS, *KEY_CORRIDOR_IDS]:
        u = gym.make(level_id).unwrapped
        env, params = jaxsoc.make(level_id)
        assert (params.height, params.width, params.view_size) == (u.height, u.width, u.agent_view_size), level_id
        assert not params.see_through_walls and not u.see_through_walls
        if level_id.startswith("BabyAI-"):
            assert (params.room_size, params.num_rows, params.num_cols) == (u.room_size, u.num_rows, u.num_cols)
            assert FIXED_MAX_STEPS.get(level_id) == (u.max_steps if u.fixed_max_steps else None), level_id
        else:
            assert params.max_steps == u.max_steps


def test_generated_minigrid_key_corridor_names_its_ball():
    env, params = jaxsoc.make("MiniGrid-KeyCorridorS3R2-v0")
    keys = jax.random.split(jax.random.key(3), 64)
    obs, states = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(keys, params)
    grids = np.asarray(states.grid)
    for n in range(len(keys)):
        (y, x), *others = np.argwhere(grids[n, ..., C.TYPE] == C.BALL)
        color = C.COLOR_NAMES[grids[n, y, x, C.COLOR]]
        state = jax.tree.map(lambda leaf, n=n: leaf[n], states)
        assert not others and env.mission_text(state) == f"pick up the {color} ball"
        np.testing.assert_array_equal(obs["mission"][n], M.encode(f"pick up the {color} ball"))


# ---------------------------------------------------------------------------------------------------------
# step for step


@pytest.mark.parametrize("level_id", ONE_ROOM_8)
def test_one_room_levels_match_minigrid(level_id):
    check_babyai_level(level_id, [1, 2])


def test_key_corridor_matches_minigrid():
    check_key_corridor("MiniGrid-KeyCorridorS3R3-v0", [0, 1, 2, 3])


@pytest.mark.slow
@pytest.mark.parametrize("level_id", LEVEL_IDS)
def test_every_level_matches_minigrid(level_id):
    check_babyai_level(level_id, list(range(6)))


@pytest.mark.slow
@pytest.mark.parametrize("name", KEY_CORRIDOR_IDS)
def test_every_key_corridor_matches_minigrid(name):
    check_key_corridor(name, list(range(8)))


# ---------------------------------------------------------------------------------------------------------
# generation

NUM = 512


@functools.cache
def ours(level_id: str, num: int = NUM):
    return S.sample_levels(level_id, num, seed=1)


@functools.cache
def theirs(level_id: str, num: int = NUM):
    """minigrid's levels reset with seeds ``0 .. num - 1``, imported and stacked (mission tokens left at 0)."""
    levels = []
    for seed in range(num):
        env = reference(level_id, seed)
        instruction, verifier = instruction_from_minigrid(env)
        max_steps = np.int32(env.unwrapped.max_steps)
        levels.append((grid_state_from_minigrid(env), instruction, verifier, max_steps))
    world, instruction, verifier, max_steps = jax.tree.map(lambda *xs: np.stack(xs), *levels)
    mission = np.zeros((num, I.MAX_MISSION_TOKENS), np.uint8)
    return I.BabyAIState(world=world, instr=instruction, verifier=verifier, max_steps=max_steps, mission=mission)


def positions(levels) -> dict[str, list]:
    """Returns ``{feature: [value per level]}``: agent pose, first object of each kind's position and colour,
    and the number of open doors (``babyai.statistics`` counts doors and locked ones)."""
    grids, poses, dirs = (np.asarray(x) for x in (levels.world.grid, levels.world.agent_pos, levels.world.agent_dir))
    rows = [features(g, p, d) for g, p, d in zip(grids, poses, dirs)]
    out = {key: [row.get(key, -1) for row in rows] for key in {k for row in rows for k in row}}
    out["open_doors"] = list(np.sum((grids[..., C.TYPE] == C.DOOR) & (grids[..., C.STATE] == C.OPEN), axis=(1, 2)))
    return out


def check_statistics(level_id: str, mine, reference_levels) -> None:
    """Chi-square per statistic and position feature against minigrid's levels; solvability; start poses."""
    room_size = jaxsoc.make(level_id)[1].room_size
    a, b = S.level_statistics(mine, room_size), S.level_statistics(reference_levels, room_size)
    for stat in S.STATISTICS:
        statistic, dof = S.chi_square(a[stat], b[stat])
        limit = S.chi_square_quantile(dof)
        assert statistic <= limit, f"{level_id}: {stat} differs from minigrid ({statistic:.1f} > {limit:.1f})"
    a, b = positions(mine), positions(reference_levels)
    assert a.keys() == b.keys(), level_id
    for feature in a:
        p = chi2_homogeneity_p(a[feature], b[feature])
        assert p > 1e-4, f"{level_id}: {feature} differs from minigrid (p={p:.2g})"
    assert np.all(jax.jit(jax.vmap(solvability.solvable))(mine)), f"{level_id}: an unsolvable level"
    grids, poses, dirs = (np.asarray(x) for x in (mine.world.grid, mine.world.agent_pos, mine.world.agent_dir))
    front = poses + C.DIR_TO_VEC[dirs]
    kinds = grids[np.arange(len(grids)), front[:, 1], front[:, 0], C.TYPE]
    # objects come before the agent or keep away from it; doors added after it (connect_all...) may face it
    assert not np.isin(kinds, [C.KEY, C.BALL, C.BOX]).any(), f"{level_id}: the agent starts facing an object"
    params = jaxsoc.make(level_id)[1]
    if level_id in DOORS_BEFORE_AGENT or params.num_rows * params.num_cols == 1:
        assert np.isin(kinds, [C.EMPTY, C.WALL]).all(), f"{level_id}: the agent starts facing a door"
    if level_id in FIXED_MAX_STEPS:
        assert np.all(np.asarray(mine.max_steps) == FIXED_MAX_STEPS[level_id])


DOORS_BEFORE_AGENT = ("BabyAI-GoToDoor-v0", "BabyAI-ActionObjDoor-v0", "BabyAI-GoToSeqS5R2-v0")


def key_corridor_invariants(level_id: str, levels) -> None:
    """The ball is alone behind the only locked door, in the right column; its key in the left column; the
    hallway walls are gone."""
    params = jaxsoc.make(level_id)[1]
    lay = RG.layout(params.room_size, params.num_rows, 3)
    step = lay.room_size - 1
    grids = np.asarray(levels.world.grid)
    kinds, colors, states = grids[..., C.TYPE], grids[..., C.COLOR], grids[..., C.STATE]
    cleared = bonus_goto.hallway_cells(lay)
    for n in range(len(grids)):
        assert np.all(kinds[n][cleared] != C.WALL)
        locked = np.argwhere((kinds[n] == C.DOOR) & (states[n] == C.LOCKED))
        (y, x), (by, bx), (ky, kx) = locked[0], *np.argwhere(kinds[n] == C.BALL), *np.argwhere(kinds[n] == C.KEY)
        assert len(locked) == 1 and x == 2 * step and by // step == y // step and bx > 2 * step and kx < step
        assert colors[n, ky, kx] == colors[n, y, x]


def test_key_corridor_generation_matches_minigrid():
    # the generator both KeyCorridor families share; its S3 layout has rooms of a single cell
    level_id = "BabyAI-KeyCorridorS3R3-v0"
    check_statistics(level_id, ours(level_id), theirs(level_id))
    key_corridor_invariants(level_id, ours(level_id))


def test_red_blue_ball_generation_matches_minigrid():
    # the level with a rejection of its own (a red or blue ball among the distractors)
    level_id = "BabyAI-GoToRedBlueBall-v0"
    check_statistics(level_id, ours(level_id), theirs(level_id))
    grids = np.asarray(ours(level_id).world.grid)
    red_blue = (grids[..., C.TYPE] == C.BALL) & np.isin(grids[..., C.COLOR], [C.RED, C.BLUE])
    assert np.all(red_blue.sum(axis=(1, 2)) == 1)


def minigrid_key_corridor_features(name: str, num: int, seeds) -> tuple[list, list]:
    env, params = jaxsoc.make(name)
    _, states = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(jax.random.split(jax.random.key(0), num), params)
    grids, poses, dirs = (np.asarray(x) for x in (states.grid, states.agent_pos, states.agent_dir))
    mine = [features(g, p, d) for g, p, d in zip(grids, poses, dirs)]
    for n in range(num):  # the mission names the ball
        ys, xs = np.nonzero(grids[n, ..., C.TYPE] == C.BALL)
        assert tuple(np.asarray(states.target_obj[n])) == (C.BALL, grids[n, ys[0], xs[0], C.COLOR])
    reference_rows = []
    for seed in seeds:
        state, _ = env.import_minigrid(reference(name, seed))
        reference_rows.append(features(np.asarray(state.grid), np.asarray(state.agent_pos), int(state.agent_dir)))
    return mine, reference_rows


def check_minigrid_key_corridor_generation(name: str, num: int, seeds) -> None:
    mine, reference_rows = minigrid_key_corridor_features(name, num, seeds)
    assert mine[0].keys() == reference_rows[0].keys()
    for feature in mine[0]:
        a, b = [f[feature] for f in mine], [f[feature] for f in reference_rows]
        assert set(a) >= set(b), f"{name}: {feature} values {sorted(set(b) - set(a))} never generated"
        p = chi2_homogeneity_p(a, b)
        assert p > 1e-4, f"{name}: {feature} differs from minigrid (p={p:.2g})"


@pytest.mark.slow
@pytest.mark.parametrize("level_id", LEVEL_IDS)
def test_every_level_generation_matches_minigrid(level_id):
    check_statistics(level_id, ours(level_id), theirs(level_id))
    if "KeyCorridor" in level_id:
        key_corridor_invariants(level_id, ours(level_id))


@pytest.mark.slow
@pytest.mark.parametrize("name", KEY_CORRIDOR_IDS)
def test_every_key_corridor_generation_matches_minigrid(name):
    check_minigrid_key_corridor_generation(name, 2000, range(600))


# ---------------------------------------------------------------------------------------------------------
# the bot

BOT_LEVELS = 30


@pytest.mark.slow
@pytest.mark.parametrize("level_id", LEVEL_IDS)
def test_bot_solves_generated_levels_as_often_as_minigrids_bot(level_id):
    from test_babyai_bot import reference_episode

    env, params = jaxsoc.make(level_id)
    states = jax.jit(generated_states, static_argnums=(0, 3))(env, params, jax.random.key(7), BOT_LEVELS)
    steps = int(np.max(np.asarray(states.max_steps)))
    result = jax.device_get(bot_episodes(env, params, states, steps))
    mine = float(np.mean(result.success))
    outcomes = [reference_episode(reference(level_id, seed), steps)[1] for seed in range(BOT_LEVELS)]
    minigrid = float(np.mean([o == "success" for o in outcomes]))
    print(f"\n{level_id}: jaxsoc bot {mine:.2f}, minigrid bot {minigrid:.2f} on {BOT_LEVELS} levels")
    assert mine >= minigrid - 0.1, f"{level_id}: the bot solved {mine:.2f} of the levels, minigrid's {minigrid:.2f}"
