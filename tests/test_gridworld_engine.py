"""The grid engine's rules, observation and environment contract."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from excalibur_scenes import with_small_banks
from hypothesis import given, settings
from hypothesis import strategies as st
from minigrid.core.grid import Grid
from minigrid.core.world_object import Ball, Door, Wall
from minigrid_wfc_reference import stand_in_layouts
from tolerance import assert_trees_match

import jaxsoc
from jaxsoc.envs.babyai import ALIASES
from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld.dynamics import transition
from jaxsoc.envs.gridworld.observation import observe, process_vis
from jaxsoc.envs.gridworld.state import GridParams, make_state
from jaxsoc.envs.gridworld.wfc import ENVS as WFC_ENVS

# ----------------------------------------------------------------------------------------------
# process_vis against minigrid's own Grid.process_vis on random 7x7 views

_CELL_KINDS = st.sampled_from(["empty", "wall", "closed", "open", "locked", "ball"])


def _minigrid_view(kinds: list[str]) -> Grid:
    grid = Grid(7, 7)
    make = {
        "wall": Wall,
        "closed": lambda: Door("red"),
        "open": lambda: Door("red", is_open=True),
        "locked": lambda: Door("red", is_locked=True),
        "ball": lambda: Ball("blue"),
    }
    for index, kind in enumerate(kinds):
        if kind != "empty":
            grid.set(index // 7, index % 7, make[kind]())
    return grid


@pytest.fixture(scope="module")
def vis_fn():
    return jax.jit(process_vis)


@settings(max_examples=150, deadline=None)
@given(st.lists(_CELL_KINDS, min_size=49, max_size=49))
def test_process_vis_matches_minigrid(vis_fn, kinds):
    kinds[3 * 7 + 6] = "empty"  # the agent's own cell
    opaque = np.array([k in ("wall", "closed", "locked") for k in kinds]).reshape(7, 7)
    expected = Grid.process_vis(_minigrid_view(kinds), (3, 6))
    np.testing.assert_array_equal(np.asarray(vis_fn(jnp.asarray(opaque))), expected)


@pytest.mark.parametrize("size", [3, 9, 11])
def test_process_vis_matches_minigrid_at_other_view_sizes(size):
    """The row table (views up to ``TABLE_MAX_VIEW``) and the sweep beyond it, against minigrid on random views."""
    rng = np.random.default_rng(size)
    opaque = rng.random((64, size, size)) < 0.35
    opaque[:, size // 2, size - 1] = False  # the agent's own cell
    got = np.asarray(jax.jit(jax.vmap(process_vis))(jnp.asarray(opaque)))
    for mask, ours in zip(opaque, got):
        grid = Grid(size, size)
        for i, j in zip(*np.nonzero(mask)):
            grid.set(int(i), int(j), Wall())
        np.testing.assert_array_equal(ours, Grid.process_vis(grid, (size // 2, size - 1)))


# ----------------------------------------------------------------------------------------------
# hand-built states with asserted outcomes


def _room(objects: dict[tuple[int, int], np.ndarray], agent=(2, 2), direction=0, carrying=None):
    grid = np.tile(C.EMPTY_CELL, (6, 6, 1))
    grid[[0, -1], :] = C.WALL_CELL
    grid[:, [0, -1]] = C.WALL_CELL
    for (x, y), cell in objects.items():
        grid[y, x] = cell
    return make_state(grid, agent, direction, carrying=carrying)


@pytest.fixture(scope="module")
def step_fn():
    return jax.jit(transition)


RED_KEY = C.cell(C.KEY, C.RED)
BLUE_KEY = C.cell(C.KEY, C.BLUE)
LOCKED_RED = C.cell(C.DOOR, C.RED, C.LOCKED)
OPEN_DOOR = C.cell(C.DOOR, C.GREEN, C.OPEN)


def test_locked_door_opens_only_with_key_of_its_colour(step_fn):
    wrong, _ = step_fn(_room({(3, 2): LOCKED_RED}, carrying=BLUE_KEY), C.TOGGLE)
    assert int(wrong.grid[2, 3, C.STATE]) == C.LOCKED
    right, moved = step_fn(_room({(3, 2): LOCKED_RED}, carrying=RED_KEY), C.TOGGLE)
    assert int(right.grid[2, 3, C.STATE]) == C.OPEN and bool(moved.toggled)
    np.testing.assert_array_equal(right.carrying, RED_KEY)  # the key is kept
    closed, _ = step_fn(right, C.TOGGLE)  # toggling an open door closes it
    assert int(closed.grid[2, 3, C.STATE]) == C.CLOSED


def test_forward_blocked_by_walls_closed_and_locked_doors(step_fn):
    for blocker in (C.WALL_CELL, LOCKED_RED, C.cell(C.DOOR, C.RED, C.CLOSED), C.cell(C.BALL, C.RED)):
        after, _ = step_fn(_room({(3, 2): blocker}), C.FORWARD)
        np.testing.assert_array_equal(after.agent_pos, [2, 2])
    after, _ = step_fn(_room({(3, 2): OPEN_DOOR}), C.FORWARD)
    np.testing.assert_array_equal(after.agent_pos, [3, 2])


def test_drop_refused_on_open_door_and_objects(step_fn):
    for target in (OPEN_DOOR, C.cell(C.BALL, C.RED), C.cell(C.GOAL, C.GREEN)):
        after, moved = step_fn(_room({(3, 2): target}, carrying=RED_KEY), C.DROP)
        np.testing.assert_array_equal(after.carrying, RED_KEY)
        np.testing.assert_array_equal(after.grid[2, 3], target)
        assert not bool(moved.dropped)
    after, _ = step_fn(_room({}, carrying=RED_KEY), C.DROP)
    np.testing.assert_array_equal(after.grid[2, 3], RED_KEY)
    assert int(after.carrying[C.TYPE]) == C.EMPTY


def test_pickup_needs_empty_hands_and_a_pickable_object(step_fn):
    after, _ = step_fn(_room({(3, 2): BLUE_KEY}, carrying=RED_KEY), C.PICKUP)
    np.testing.assert_array_equal(after.carrying, RED_KEY)
    for fixed in (OPEN_DOOR, C.cell(C.GOAL, C.GREEN), C.WALL_CELL):
        after, _ = step_fn(_room({(3, 2): fixed}), C.PICKUP)
        assert int(after.carrying[C.TYPE]) == C.EMPTY


def test_toggling_a_box_reveals_its_contents(step_fn):
    full = C.cell(C.BOX, C.PURPLE, contents=C.pack_contents(C.KEY, C.YELLOW), obj_id=4)
    after, _ = step_fn(_room({(3, 2): full}), C.TOGGLE)
    np.testing.assert_array_equal(after.grid[2, 3, :3], [C.KEY, C.YELLOW, 0])
    emptied, _ = step_fn(_room({(3, 2): C.cell(C.BOX, C.GREY)}), C.TOGGLE)
    np.testing.assert_array_equal(emptied.grid[2, 3], C.EMPTY_CELL)


def test_carried_box_keeps_its_contents(step_fn):
    full = C.cell(C.BOX, C.PURPLE, contents=C.pack_contents(C.BALL, C.RED), obj_id=7)
    held, _ = step_fn(_room({(3, 2): full}), C.PICKUP)
    np.testing.assert_array_equal(held.carrying, full)
    dropped, _ = step_fn(held, C.DROP)
    np.testing.assert_array_equal(dropped.grid[2, 3], full)


def test_invalid_actions_inside_jit_are_no_ops(step_fn):
    state = _room({(3, 2): BLUE_KEY})
    for action in (-1, 7, 100, C.DONE):
        after, _ = step_fn(state, jnp.int32(action))
        chex.assert_trees_all_equal(after.replace(step_count=state.step_count), state)
        assert int(after.step_count) == 1


def test_agent_in_open_doorway_sees_carried_object():
    params = GridParams(max_steps=10, height=6, width=6)
    state = _room({(2, 2): OPEN_DOOR}, carrying=RED_KEY)
    image = np.asarray(observe(state, params)["image"])
    np.testing.assert_array_equal(image[3, 6], RED_KEY[:3])
    image = np.asarray(observe(state.replace(carrying=jnp.asarray(C.EMPTY_CELL)), params)["image"])
    np.testing.assert_array_equal(image[3, 6], [C.EMPTY, 0, 0])


def test_view_beyond_the_world_reads_as_walls():
    params = GridParams(max_steps=10, height=6, width=6, see_through_walls=True)
    state = _room({}, agent=(1, 1), direction=3)  # at the top-left corner, facing north
    image = np.asarray(observe(state, params)["image"])
    assert (image[:, :5] == C.WALL_CELL[:3]).all()  # rows ahead of the agent are outside or border


# ----------------------------------------------------------------------------------------------
# the environment contract, for every registered env


def _single_agent_contract(name: str) -> bool:
    """The single-agent ids this contract test runs: not the aliases, not the two-agent household and CHAIC ids
    (tests/test_household_world.py and tests/test_chaic_env.py test those), one CHAIC helper view (the 8 tasks
    share its code; each would compile the rule-based human again) and two EXCALIBUR variants (the plain one and
    one computing the knowledge reward; the others differ only in reward weights)."""
    if name in ALIASES or name == "WatchAndHelp-v0":
        return False
    if name.startswith("EXCALIBUR-"):
        return name in ("EXCALIBUR-v0", "EXCALIBUR-NoveltyQA-v0")
    return not name.startswith("CHAIC-") or name == "CHAIC-Normal-Helper-v0"


#: the ids whose contract runs in CI: the contract is one base-class code path, and the ids differ in their
#: generators, which the differential modules (tests/test_minigrid_*.py, tests/test_babyai_*.py) compare with
#: minigrid in CI; a fixed layout, a generated one and a BabyAI mission (each id compiles its own reset and step:
#: ``-m slow`` runs every id)
CI_CONTRACT_IDS = {"MiniGrid-Empty-5x5-v0", "MiniGrid-DoorKey-5x5-v0", "BabyAI-GoToRedBallGrey-v0"}


def _contract_params() -> list:
    """The contract ids, those outside ``CI_CONTRACT_IDS`` marked ``slow``."""
    return [
        name if name in CI_CONTRACT_IDS else pytest.param(name, marks=pytest.mark.slow)
        for name in filter(_single_agent_contract, jaxsoc.registered_envs())
    ]


@pytest.fixture(scope="module", params=_contract_params())
def env_and_params(request):
    if request.param.startswith("EXCALIBUR-"):  # a bank of 24 houses in place of the 512 of the train split
        with with_small_banks():
            return jaxsoc.make(request.param)
    env, params = jaxsoc.make(request.param)
    if request.param in WFC_ENVS:  # minigrid's wheel has no WFC pattern images to build the bank from
        env.set_layouts(stand_in_layouts())
    return env, params


def test_reset_and_step_every_env(env_and_params):
    env, params = env_and_params
    obs, state = env.reset(jax.random.key(0), params)
    space = env.observation_space(params)
    assert space.contains(jax.device_get(obs))
    chex.clear_trace_counter()
    step = chex.assert_max_traces(env._auto_reset_step, n=1)
    jitted = jax.jit(step)
    for t in range(4):
        obs, state, reward, terminated, truncated, info = jitted(jax.random.key(t), state, jnp.int32(t % 7), params)
    assert space.contains(jax.device_get(obs))
    assert {"success", "episode_steps", "final_observation", "final_state"} <= info.keys()
    assert reward.dtype == jnp.float32 and terminated.dtype == jnp.bool_ and truncated.dtype == jnp.bool_


# minigrid's Empty rooms start the agent and place the goal at fixed cells: their reset does not use the key
KEY_INDEPENDENT_RESETS = {f"MiniGrid-Empty-{n}x{n}-v0" for n in (5, 6, 8, 16)} | {
    "MiniGrid-DistShift1-v0",
    "MiniGrid-DistShift2-v0",
}


def test_reset_is_deterministic_and_keyed(env_and_params, request):
    env, params = env_and_params
    a = env.reset(jax.random.key(3), params)
    b = env.reset(jax.random.key(3), params)
    chex.assert_trees_all_equal(a, b)

    # other keys give other episodes (observation or state), except on the fixed layouts; several keys, as a level
    # with few layouts (LavaGapS5: the gap in one of 3 rows) gives two keys the same one a third of the time
    def same_as_a(seed: int) -> bool:
        other = env.reset(jax.random.key(seed), params)
        return all(np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(other)))

    same = all(same_as_a(seed) for seed in range(4, 12))
    name = request.node.callspec.params["env_and_params"]
    assert same == (name in KEY_INDEPENDENT_RESETS), (
        f"{name}: keys 4-11 give {'the same reset as' if same else 'other resets than'} key 3"
    )


@pytest.fixture(scope="module")
def doorkey():
    return jaxsoc.make("MiniGrid-DoorKey-5x5-v0")


def test_vmap_equals_per_world_steps(doorkey):
    env, params = doorkey
    keys = jax.random.split(jax.random.key(1), 4)
    obs, states = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
    actions = jnp.array([0, 2, 3, 5])
    batched = jax.vmap(env.step, in_axes=(0, 0, 0, None))(keys, states, actions, params)
    for i in range(4):
        single = env.step(keys[i], jax.tree_util.tree_map(lambda x, i=i: x[i], states), int(actions[i]), params)
        assert_trees_match(jax.tree_util.tree_map(lambda x, i=i: x[i], batched), single)  # the reward to rounding


@pytest.mark.bitexact
class StepEnvVariants(chex.TestCase):
    """``step_env`` gives the same result compiled and run op by op (the float reward to rounding: with XLA's
    default optimisations a compiled ``1 - 0.9 * x`` differs from op by op in the last bit). Each variant is
    compared with the other kind of execution: the jitted variant with an eager run under ``jax.disable_jit()``,
    the eager variant (run under ``jax.disable_jit()``, so not even ``lax`` control flow is compiled) with
    ``jax.jit``; the function records whether it saw tracers, which shows that one side was traced and the other
    ran on concrete arrays."""

    @chex.variants(with_jit=True, without_jit=True)
    def test_step_env_jit_equivalence(self):
        env, params = jaxsoc.make("MiniGrid-DoorKey-5x5-v0")
        _, state = env.reset(jax.random.key(0), params)
        traced = []

        def step_env(s, a):
            traced.append(isinstance(s.agent_pos, jax.core.Tracer))
            return env.step_env(jax.random.key(0), s, a, params)

        def eager(fn):
            def run(*args):
                with jax.disable_jit():
                    return fn(*args)

            return run

        compiled = self.variant.type == chex.ChexVariantType.WITH_JIT
        step = self.variant(step_env) if compiled else eager(self.variant(step_env))
        reference = eager(step_env) if compiled else jax.jit(step_env)
        jit_traces = 0
        for action in (2, 1, 2, 3, 5, 0, 2):
            traced.clear()
            out = step(state, action)
            calls = len(traced)
            expected = reference(state, action)
            eager_side, jit_side = (traced[calls:], traced[:calls]) if compiled else (traced[:calls], traced[calls:])
            assert eager_side == [False]  # ran in Python on concrete arrays
            assert all(jit_side)  # traced (the first time) or run from jit's cache: never on concrete arrays
            jit_traces += len(jit_side)
            assert_trees_match(out, expected)
            state = out[1]
        assert jit_traces >= 1


def test_auto_reset_returns_final_observation():
    env, params = jaxsoc.make("MiniGrid-Empty-5x5-v0", max_steps=3)
    obs0, state = env.reset(jax.random.key(0), params)
    for t in range(3):
        raw = env.step_env(jax.random.key(t), state, 0, params)
        obs, state, reward, terminated, truncated, info = env.step(jax.random.key(t), state, 0, params)
    assert bool(truncated) and not bool(terminated)
    chex.assert_trees_all_equal(info["final_observation"], raw[0])
    chex.assert_trees_all_equal(obs, obs0)  # Empty resets to the same start
    assert int(state.step_count) == 0 and int(info["episode_steps"]) == 3


def test_success_on_last_step_is_terminated_and_truncated():
    env, params = jaxsoc.make("MiniGrid-Empty-5x5-v0", max_steps=4)
    _, state = env.reset(jax.random.key(0), params)
    results = []
    for action in (C.FORWARD, C.FORWARD, C.RIGHT, C.FORWARD):  # (1,1) -> (3,1) -> face south -> (3,2)
        results.append(env.step_env(jax.random.key(0), state, action, params))
        state = results[-1][1]
    state = state.replace(agent_pos=jnp.array([3, 2]), step_count=jnp.int32(3))
    _, _, reward, terminated, truncated, info = env.step_env(jax.random.key(0), state, C.FORWARD, params)
    assert bool(terminated) and bool(truncated) and bool(info["success"])
    np.testing.assert_allclose(float(reward), 1 - 0.9 * 4 / 4, atol=1e-6)


# ----------------------------------------------------------------------------------------------
# errors at the Python boundary


def test_unknown_env_lists_close_names():
    with pytest.raises(KeyError, match="MiniGrid-DoorKey-8x8-v0"):
        jaxsoc.make("MiniGrid-DoorKey-8x8")
    with pytest.raises(TypeError, match="unknown params"):
        jaxsoc.make("MiniGrid-Empty-5x5-v0", max_step=3)


def test_register_and_unregister_a_custom_env():
    from jaxsoc.core.registry import register, unregister

    register("Test-Custom-v0", lambda: jaxsoc.make("MiniGrid-Empty-5x5-v0")[0])
    try:
        with pytest.raises(ValueError, match="already registered"):
            register("Test-Custom-v0", lambda: None)
        assert "Test-Custom-v0" in jaxsoc.registered_envs() and jaxsoc.make("Test-Custom-v0")[0] is not None
    finally:
        unregister("Test-Custom-v0")
    assert "Test-Custom-v0" not in jaxsoc.registered_envs()
    with pytest.raises(KeyError, match="not registered"):
        unregister("Test-Custom-v0")


def test_bad_actions_and_keys_are_rejected(doorkey):
    env, params = doorkey
    _, state = env.reset(jax.random.key(0), params)
    key = jax.random.key(0)
    with pytest.raises(ValueError, match="shape"):
        env.step(key, state, jnp.array([1, 2]), params)
    with pytest.raises(TypeError, match="integer"):
        env.step(key, state, 1.5, params)
    with pytest.raises(ValueError, match="outside Discrete"):
        env.step(key, state, 7, params)
    with pytest.raises(ValueError, match="outside Discrete"):
        env.step(key, state, jnp.int32(-1), params)
    with pytest.raises(ValueError, match="PRNG key"):
        env.reset(jax.random.split(key, 3), params)


def test_out_of_range_action_inside_jit_is_a_no_op(doorkey):
    env, params = doorkey
    _, state = env.reset(jax.random.key(0), params)
    step = jax.jit(lambda s, a: env.step(jax.random.key(0), s, a, params))
    _, after, reward, terminated, _, _ = step(state, jnp.int32(42))
    chex.assert_trees_all_equal(after.replace(step_count=state.step_count), state)
    assert float(reward) == 0.0 and not bool(terminated)
