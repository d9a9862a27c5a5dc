"""The gymnax adapter (``jaxsoc.core.adapters.gymnax``) and the flattening wrapper (``adapters.flatten``) against the
real clients: gymnax 1.0.1's spaces and wrappers (``LogWrapper``, ``FlattenObservationWrapper``) and rejax 0.1.3's
PPO, plus the messages ``Environment.reset``/``step`` give a newcomer's habits from gymnax and xminigrid.

CI: MiniGrid-Empty-5x5 is compiled (a few small programs shared by the tests through module fixtures); the other
families are only traced (``jax.eval_shape``): compiling a social env's step takes 5-25 s on 2 cores. Slow: rejax's
PPO learns Empty-5x5 through the adapter, and every registered single-agent id gets a positive episode bound.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from excalibur_scenes import with_small_banks
from gymnax.environments import spaces as gymnax_spaces
from gymnax.wrappers.purerl import FlattenObservationWrapper
from gymnax.wrappers.purerl import LogWrapper as GymnaxLogWrapper

import jaxsoc
from jaxsoc.core import spaces
from jaxsoc.core.adapters.flatten import MAX_CATEGORIES, FlattenObservation, flatten_layout, flatten_observation
from jaxsoc.core.adapters.gymnax import GymnaxEnv, GymnaxParams, make
from jaxsoc.core.env import Environment
from jaxsoc.core.wrappers import LogWrapper, Wrapper

EMPTY = "MiniGrid-Empty-5x5-v0"
#: Empty-5x5 from its fixed start (top left, facing right; the goal bottom right): forward, forward, turn right,
#: forward, forward reaches the goal at step 5 (reward 1 - 0.9 * 5 / 100), then two steps of the next episode
ACTIONS = (2, 2, 1, 2, 2, 0, 2)
GOAL_STEP, GOAL_REWARD = 4, 1 - 0.9 * 5 / 100


@pytest.fixture(scope="module")
def empty():
    """``(the jaxsoc env, its params, the flattening wrapper around it)``: one wrapper, so one compiled step,
    shared by the adapters of the tests."""
    env, params = jaxsoc.make(EMPTY)
    return env, params, FlattenObservation(env)


def _rollout(reset, step, key, num_outputs: int):
    """Returns the outputs of ``reset`` and of ``step`` over ``ACTIONS`` stacked (one jitted scan)."""

    def run(key):
        obs, state = reset(key, None)

        def one(carry, action):
            key, state = carry
            key, sub = jax.random.split(key)
            out = step(sub, state, jnp.int32(action), None)
            return (key, out[1]), tuple(out[i] for i in range(num_outputs) if i != 1)

        return obs, jax.lax.scan(one, (key, state), jnp.asarray(ACTIONS))[1]

    return jax.jit(run)(key)


@pytest.fixture(scope="module")
def reference(empty):
    """The jaxsoc env's own rollout of ``ACTIONS``: ``(first obs, (obs, reward, terminated, truncated, info))``,
    observations flattened."""
    _, params, flat = empty
    return _rollout(lambda k, _: flat.reset(k, params), lambda *a: flat.step(*a[:3], params), jax.random.key(3), 6)


# -- spaces, params and the step tuple ----------------------------------------------------------------------------


def test_spaces_and_params_are_gymnax_ones(empty):
    env, params, flat = empty
    plain, flattened = GymnaxEnv(env), GymnaxEnv(flat)
    obs_space = plain.observation_space(plain.default_params)
    assert isinstance(obs_space, gymnax_spaces.Dict) and list(obs_space.spaces) == ["image", "direction"]
    assert isinstance(obs_space.spaces["image"], gymnax_spaces.Box) and obs_space.spaces["image"].shape == (7, 7, 3)
    assert isinstance(obs_space.spaces["direction"], gymnax_spaces.Discrete) and obs_space.spaces["direction"].n == 4
    box = flattened.observation_space(flattened.default_params)
    assert isinstance(box, gymnax_spaces.Box) and box.shape == (7 * 7 * 3 + 1,) and box.dtype == jnp.float32
    assert float(np.max(box.high)) == 10.0 and float(box.high[-1]) == 3.0  # the image's bound, then direction's
    action_space = flattened.action_space(flattened.default_params)
    assert isinstance(action_space, gymnax_spaces.Discrete) and action_space.n == flattened.num_actions == 7
    # default_params is a property (gymnax's habit) holding the jaxsoc params and the episode bound
    assert isinstance(type(flattened).default_params, property)
    assert flattened.default_params == GymnaxParams(params, 100)
    assert flattened.name == f"FlattenObservation({env.name})"


def test_the_max_steps_trap_gives_babyai_its_longest_instructions_limit():
    from jaxsoc.envs.babyai import instr
    from jaxsoc.envs.babyai.levels.common import max_steps

    adapted, params = make("BabyAI-GoToLocal-v0")
    assert params.env_params.max_steps == 0  # "each episode's limit follows its instruction"
    # the longest instruction: every leaf a "put next" (two navigations each)
    longest = instr.Instruction(
        action=jnp.full(instr.MAX_LEAVES, instr.ACT_PUTNEXT, jnp.int32),
        desc_type=jnp.zeros((instr.MAX_LEAVES, 2), jnp.int32),
        desc_color=jnp.zeros((instr.MAX_LEAVES, 2), jnp.int32),
        desc_loc=jnp.zeros((instr.MAX_LEAVES, 2), jnp.int32),
        seq=jnp.int32(instr.SEQ_BEFORE),
    )
    bound = int(max_steps(longest, params.env_params))
    assert params.max_steps_in_episode == adapted.env.max_episode_steps(params.env_params) == bound == 8 * 8**2
    fixed = GymnaxEnv("BabyAI-GoToLocal-v0", max_steps=77).default_params
    assert fixed.max_steps_in_episode == fixed.env_params.max_steps == 77  # a fixed limit is the limit itself
    assert GymnaxEnv(adapted.env, params.env_params, max_steps_in_episode=9).default_params.max_steps_in_episode == 9


def test_step_tuples_and_gymnax_wrappers_agree_with_the_unwrapped_env(empty, reference):
    _, _, flat = empty
    first, (obs, reward, terminated, truncated, info) = reference
    assert bool(terminated[GOAL_STEP]) and int(terminated.sum()) == 1 and not truncated.any()
    np.testing.assert_allclose(reward[GOAL_STEP], GOAL_REWARD, rtol=1e-6)

    # gymnax 1.0's 6-tuple, through its own FlattenObservationWrapper and LogWrapper
    wrapped = GymnaxLogWrapper(FlattenObservationWrapper(GymnaxEnv(flat)))
    first_w, (obs_w, reward_w, term_w, trunc_w, info_w) = _rollout(wrapped.reset, wrapped.step, jax.random.key(3), 6)
    np.testing.assert_array_equal(first_w, first)
    for ours, theirs in [(obs_w, obs), (reward_w, reward), (term_w, terminated), (trunc_w, truncated)]:
        np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(info_w["final_observation"], info["final_observation"])
    np.testing.assert_array_equal(info_w["terminated"], terminated)
    assert "final_state" not in info_w
    # gymnax's LogWrapper saw the episode end at the goal, with its return and length
    assert np.flatnonzero(info_w["returned_episode"]).tolist() == [GOAL_STEP]
    np.testing.assert_allclose(info_w["returned_episode_returns"][GOAL_STEP], GOAL_REWARD, rtol=1e-6)
    assert int(info_w["returned_episode_lengths"][GOAL_STEP]) == GOAL_STEP + 1

    # the 5-tuple of gymnax 0.0.x and rejax 0.1.3: done = terminated | truncated
    five = GymnaxEnv(flat, step_tuple=5)
    first_5, (obs_5, reward_5, done_5, info_5) = _rollout(five.reset, five.step, jax.random.key(3), 5)
    np.testing.assert_array_equal(obs_5, obs)
    np.testing.assert_array_equal(done_5, terminated | truncated)
    np.testing.assert_array_equal(info_5["truncated"], truncated)


def test_eager_step_takes_gymnax_params_jaxsoc_params_or_none(empty):
    env, params, flat = empty
    adapted = GymnaxEnv(flat, step_tuple=5)
    key = jax.random.key(0)
    obs, state = adapted.reset(key)
    assert obs.shape == (148,) and obs.dtype == jnp.float32
    outs = [adapted.step(key, state, 2, p) for p in (adapted.default_params, params, None)]
    for out in outs[1:]:
        np.testing.assert_array_equal(out[0], outs[0][0])
        assert bool(out[3]) == bool(outs[0][3])
    with pytest.raises(ValueError, match="outside Discrete"):  # the jaxsoc checks still run
        adapted.step(key, state, 9)


def test_adapter_refuses_what_it_cannot_adapt(empty):
    env, params, _ = empty
    with pytest.raises(TypeError, match="Helper-v0"):
        GymnaxEnv("CHAIC-Normal-v0")
    with pytest.raises(ValueError, match="step_tuple"):
        GymnaxEnv(env, step_tuple=4)
    with pytest.raises(ValueError, match="flatten=True"):
        GymnaxEnv(env, one_hot=True)
    with pytest.raises(ValueError, match="positive"):
        GymnaxEnv(env, max_steps_in_episode=0)
    with pytest.raises(TypeError, match="need an env name"):
        GymnaxEnv(env, max_steps=5)

    class Unbounded(Wrapper):  # params that show no episode limit
        def default_params(self):
            return {"anything": 1}

    with pytest.raises(ValueError, match="max_steps_in_episode=N"):
        GymnaxEnv(Unbounded(env))
    empty = GymnaxEnv(EMPTY).env  # a MiniGrid env states its fixed limit, and none without one
    assert empty.max_episode_steps() == 100 and empty.max_episode_steps(params.replace(max_steps=0)) is None


# -- every family's observation flattens (traced only) --------------------------------------------------------------


def _household():
    """The Watch-And-Help helper view with an abstract one-task bank: building the train bank takes a minute, and
    tracing needs only its shapes."""
    from jaxsoc.envs.household import env as household
    from jaxsoc.envs.household import tasks

    task = jax.eval_shape(lambda: tasks.generate(jax.random.key(0), jnp.int32(0), jnp.array([0, -1], jnp.int32)))
    bank = jax.tree.map(lambda s: jax.ShapeDtypeStruct((1, *s.shape), s.dtype), task)
    return household.HelperEnv(), household.HouseholdParams(tasks=bank)


def _family_env(name: str):
    if name == "WatchAndHelp-Helper-v0":
        return _household()
    if name.startswith("EXCALIBUR-"):
        with with_small_banks():
            return jaxsoc.make(name)
    return jaxsoc.make(name)


FAMILY_IDS = ["BabyAI-GoToLocal-v0", "WatchAndHelp-Helper-v0", "CHAIC-Normal-Helper-v0", "EXCALIBUR-v0"]


@pytest.mark.parametrize("name", FAMILY_IDS)
def test_every_familys_observation_flattens_under_gymnax_wrappers(name):
    env, params = _family_env(name)
    adapted = GymnaxEnv(env, params, flatten=True)
    space = env.observation_space(params)
    layout = adapted.env.layout
    width = sum(int(np.prod(s.shape, dtype=int)) for s in layout)
    assert adapted.observation_space(adapted.default_params).shape == (width,) == (layout[-1].stop,)
    tops = [s.path.split("/")[0] for s in layout]
    assert sorted(set(tops), key=tops.index) == list(space.spaces)  # every entry, in the space's order
    for segment in layout:  # nested Dicts (CHAIC's objects) by their paths
        sub = space
        for key in segment.path.split("/"):
            sub = sub[key]
        assert segment.shape == tuple(sub.shape) and segment.categories == 0
    assert adapted.default_params.max_steps_in_episode > 0

    wrapped = GymnaxLogWrapper(FlattenObservationWrapper(adapted))
    key = jax.random.key(0)
    obs, state = jax.eval_shape(wrapped.reset, key, adapted.default_params)
    out = jax.eval_shape(wrapped.step, key, state, jnp.int32(0), adapted.default_params)
    assert obs.shape == out[0].shape == out[5]["final_observation"].shape == (width,) and obs.dtype == jnp.float32
    assert out[2].dtype == jnp.float32 and out[3].dtype == out[4].dtype == jnp.bool_
    assert jax.tree.structure(out[1]) == jax.tree.structure(state)


def test_one_hot_flattening_of_tokens_discrete_and_nested_entries():
    space = spaces.Dict(
        {
            "mission": spaces.Box(0, 3, (2,), jnp.int32),  # tokens
            "inner": spaces.Dict({"flag": spaces.Box(0, 1, (), jnp.bool_), "pos": spaces.Box(-1.0, 1.0, (2,))}),
            "direction": spaces.Discrete(4),
            "count": spaces.Box(-5, MAX_CATEGORIES, (), jnp.int32),  # too wide for one_hot=True
        }
    )
    obs = {
        "mission": jnp.array([3, 1]),
        "inner": {"flag": jnp.bool_(True), "pos": jnp.array([0.5, -0.25])},
        "direction": jnp.int32(2),
        "count": jnp.int32(-4),
    }
    segments, box = flatten_layout(space)
    np.testing.assert_array_equal(flatten_observation(obs, segments), [3, 1, 1, 0.5, -0.25, 2, -4])
    np.testing.assert_array_equal(box.low, [0, 0, 0, -1, -1, 0, -5])
    np.testing.assert_array_equal(box.high, [3, 3, 1, 1, 1, 3, MAX_CATEGORIES])

    segments, box = flatten_layout(space, one_hot=True)
    assert [(s.path, s.categories) for s in segments] == [
        ("mission", 4),
        ("inner/flag", 0),
        ("inner/pos", 0),
        ("direction", 4),
        ("count", 0),
    ]
    expected = [0, 0, 0, 1, 0, 1, 0, 0] + [1, 0.5, -0.25] + [0, 0, 1, 0] + [-4]
    np.testing.assert_array_equal(flatten_observation(obs, segments), expected)
    assert box.shape == (len(expected),) and float(box.low[0]) == 0 and float(box.high[0]) == 1

    segments, _ = flatten_layout(space, one_hot=["count"])  # named: expanded whatever its width
    assert [s.categories for s in segments] == [0, 0, 0, 0, MAX_CATEGORIES + 6]
    one = np.asarray(flatten_observation(obs, segments))
    assert one.shape == (6 + MAX_CATEGORIES + 6,) and one[6 + 1] == 1 and one[6:].sum() == 1  # -4 is class 1
    with pytest.raises(ValueError, match="not categorical"):
        flatten_layout(space, one_hot=["inner/pos"])
    with pytest.raises(ValueError, match="not entries"):
        flatten_layout(space, one_hot=["nothing"])
    with pytest.raises(TypeError, match="wrap it in a list"):
        flatten_layout(space, one_hot="mission")


def test_one_hot_babyai_mission_through_the_adapter_traced():
    adapted = GymnaxEnv("BabyAI-GoToLocal-v0", flatten=True, one_hot=["mission"])
    mission = adapted.env.layout[-1]
    assert (mission.path, mission.shape, mission.categories) == ("mission", (72,), 34)
    obs, _ = jax.eval_shape(adapted.reset, jax.random.key(0), adapted.default_params)
    assert obs.shape == (7 * 7 * 3 + 1 + 72 * 34,)


# -- rejax ---------------------------------------------------------------------------------------------------------


def _ppo(total_timesteps: int, **config):
    import rejax

    env = GymnaxEnv(EMPTY, flatten=True, step_tuple=5)  # rejax 0.1.3 unpacks gymnax 0.0.x's 5-tuple
    return env, rejax.PPO.create(env=env, env_params=env.default_params, total_timesteps=total_timesteps, **config)


def test_rejax_ppo_runs_two_updates_through_the_adapter():
    env, algo = _ppo(64, num_envs=4, num_steps=8, num_epochs=1, num_minibatches=1, eval_freq=64,
                     skip_initial_evaluation=True, agent_kwargs={"hidden_layer_sizes": (16,)})  # fmt: skip
    state, (lengths, returns) = jax.jit(algo.train)(jax.random.key(0))
    assert int(state.global_step) == 64  # two updates of 4 worlds x 8 steps
    assert lengths.shape == returns.shape == (1, 128)  # one evaluation of 128 episodes
    # with max_steps_in_episode 0 every evaluation episode would last 0 steps and return 0
    assert int(lengths.min()) > 0 and int(lengths.max()) <= env.default_params.max_steps_in_episode == 100
    assert bool(jnp.all((returns >= 0) & (returns <= 1))) and float(returns.max()) > 0


@pytest.mark.slow
def test_rejax_ppo_learns_empty_5x5_through_the_adapter():
    """Measured 2026-12: 0.930 mean return at the evaluation after 16,384 frames, 0.955 (the optimum) from 32,768
    on, 196,608 frames in about 36 s of CPU (2 shared cores, compile included)."""
    _, algo = _ppo(196_608, num_envs=16, num_steps=128, num_epochs=4, num_minibatches=8, eval_freq=16_384,
                   learning_rate=3e-4, max_grad_norm=0.5, agent_kwargs={"hidden_layer_sizes": (64, 64)})  # fmt: skip
    state, (_, returns) = jax.jit(algo.train)(jax.random.key(0))
    curve = np.asarray(returns).mean(axis=1)
    assert int(state.global_step) <= 200_000 and curve[0] < 0.9, curve
    assert curve[-1] >= 0.9, curve


@pytest.mark.slow
def test_every_single_agent_id_has_a_positive_episode_bound():
    for name in jaxsoc.registered_envs():
        env, params = _family_env(name)
        if isinstance(env, Environment):
            assert GymnaxEnv(env, params).default_params.max_steps_in_episode > 0, name


# -- errors a newcomer from a peer library can act on ---------------------------------------------------------------


def test_peer_habits_get_a_message_naming_the_right_call(empty):
    env, params, _ = empty
    key = jax.random.key(0)
    _, state = env.reset(key, params)
    order = r"env\.reset\(key, params\).*xminigrid"
    with pytest.raises(TypeError, match=order):  # xminigrid: reset(params, key)
        env.reset(params, key)
    with pytest.raises(TypeError, match=r"env\.step\(key, state, action, params\).*xminigrid"):
        env.step(params, state, 0)  # xminigrid: step(params, timestep, action)
    habit = r"default_params itself.*env\.reset\(key, env\.default_params\(\)\).*GymnaxEnv"
    with pytest.raises(TypeError, match=habit):  # gymnax: default_params is a property there
        env.reset(key, env.default_params)
    with pytest.raises(TypeError, match=r"env\.step\(key, state, action, env\.default_params\(\)\)"):
        env.step(key, state, 0, env.default_params)
    with pytest.raises(TypeError, match=habit):  # the checks run while tracing too
        jax.jit(lambda k: env.reset(k, env.default_params))(key)
    with pytest.raises(TypeError, match="default_params itself"):  # and through wrappers
        LogWrapper(env).reset(key, LogWrapper(env).default_params)
    with pytest.raises(ValueError, match="PRNG key"):  # an array that is no key keeps its message
        env.reset(jnp.zeros(3), params)


def test_gymnax_is_imported_by_the_adapter_module_only():
    """``import jaxsoc`` must not need gymnax: no other module imports it (read with ``ast``), and the adapter
    without gymnax raises an ImportError naming the extra."""
    root = Path(jaxsoc.__file__).parent
    importers = set()
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(n == "gymnax" or n.startswith("gymnax.") for n in names):
                importers.add(str(path.relative_to(root)))
    assert importers == {"core/adapters/gymnax.py"}


def test_without_gymnax_the_adapter_names_the_extra(monkeypatch):
    for name in [m for m in sys.modules if m == "gymnax" or m.startswith("gymnax.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, "jaxsoc.core.adapters.gymnax")
    with pytest.raises(ImportError, match=r"pip install 'jaxsoc\[gymnax\]'"):
        import jaxsoc.core.adapters.gymnax  # noqa: F401
