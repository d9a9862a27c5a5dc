"""The gymnasium vector adapter: spaces, next-step (the default) and same-step auto-reset, seeding, equality with a
direct JAX rollout, action validation, gymnasium's own checks and its vector wrappers over the adapter.

The grid tests use Empty-5x5; the key-stream tests use ``Walk``, a toy stochastic env (random resets,
random slips in ``step_env``, a float ``Box`` observation) that compiles in well under a second, so that
every key the adapter draws matters and the suite stays fast."""

from __future__ import annotations

import importlib
import inspect
import sys

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct
from gymnasium.utils import env_checker
from gymnasium.wrappers.vector import RecordEpisodeStatistics

import jaxsoc
from jaxsoc.core import spaces
from jaxsoc.core.env import Environment
from jaxsoc.core.vector import AutoresetMode, GymnasiumVectorEnv, to_gymnasium_space
from jaxsoc.core.wrappers import LogWrapper
from jaxsoc.envs.gridworld import constants as C

EMPTY = "MiniGrid-Empty-5x5-v0"
SAME, NEXT = AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP
#: the dtype of a Discrete space: jaxsoc's int32, except in gymnasium 1.0, whose Discrete is always int64
DISCRETE_DTYPE = np.int32 if "dtype" in inspect.signature(gymnasium.spaces.Discrete).parameters else np.int64
SOLUTION = [C.FORWARD, C.FORWARD, C.RIGHT, C.FORWARD, C.FORWARD]  # Empty-5x5, from (1, 1) facing east


@struct.dataclass
class WalkParams:
    max_steps: int = 6
    size: int = struct.field(pytree_node=False, default=8)


@struct.dataclass
class WalkState:
    position: jax.Array
    target: jax.Array
    step_count: jax.Array


class Walk(Environment):
    """Walk along a line (actions: left, right, stay) to a random target; a move slips to a random
    neighbour with probability 1/2. Reaching the target terminates, ``max_steps`` truncates."""

    stochastic_step = True

    def default_params(self):
        return WalkParams()

    def observe(self, state, params):
        features = jnp.stack([state.position, state.target]).astype(jnp.float32) / (params.size - 1)
        return {"position": state.position, "features": features}

    def reset_env(self, key, params):
        position, target = jax.random.randint(key, (2,), 0, params.size)
        state = WalkState(position, target, jnp.int32(0))
        return self.observe(state, params), state

    def step_env(self, key, state, action, params):
        k_slip, k_dir = jax.random.split(key)
        move = jnp.array([-1, 1, 0])[action]
        move = jnp.where(jax.random.bernoulli(k_slip), jax.random.choice(k_dir, jnp.array([-1, 1])), move)
        steps = state.step_count + 1
        state = WalkState(jnp.clip(state.position + move, 0, params.size - 1), state.target, steps)
        success = state.position == state.target
        reward = jnp.where(success, 1 - 0.5 * steps / params.max_steps, 0.0).astype(jnp.float32)
        info = {"success": success, "episode_steps": steps}
        return self.observe(state, params), state, reward, success, steps >= params.max_steps, info

    def action_space(self, params=None):
        return spaces.Discrete(3)

    def observation_space(self, params=None):
        params = self.default_params() if params is None else params
        return spaces.Dict(
            {"position": spaces.Discrete(params.size), "features": spaces.Box(0.0, 1.0, (2,), jnp.float32)}
        )

    def render(self, state, params=None):
        raise NotImplementedError("Walk has no renderer")


WALK = Walk()


@pytest.fixture(scope="module")
def empty():
    """4 Empty-5x5 worlds truncated at 6 steps, same-step auto-reset."""
    return GymnasiumVectorEnv(EMPTY, num_envs=4, seed=3, max_steps=6, autoreset_mode=SAME)


@pytest.fixture(scope="module")
def empty_next():
    """The same with next-step auto-reset (the default)."""
    return GymnasiumVectorEnv(EMPTY, num_envs=4, seed=3, max_steps=6)


@pytest.fixture(scope="module")
def walk():
    """3 Walk worlds: random starts and slips, episodes of at most 6 steps, same-step auto-reset."""
    return GymnasiumVectorEnv(WALK, num_envs=3, seed=0, autoreset_mode=SAME)


def shares_memory(data_1, data_2) -> bool:
    """True when two results (dicts of numpy arrays, nested) share a dict or an array's memory (gymnasium 1.4's
    ``data_shares_objects``, absent from gymnasium 1.0-1.3)."""
    if isinstance(data_1, dict) and isinstance(data_2, dict):
        return data_1 is data_2 or any(shares_memory(data_1[k], data_2[k]) for k in data_1.keys() & data_2.keys())
    if isinstance(data_1, np.ndarray) and isinstance(data_2, np.ndarray):
        return np.shares_memory(data_1, data_2)
    return False


def random_actions(vec, num_steps, seed):
    return np.random.default_rng(seed).integers(0, vec.single_action_space.n, (num_steps, vec.num_envs))


def test_autoreset_modes(empty, empty_next):
    assert empty_next.metadata["autoreset_mode"] == NEXT and empty_next.autoreset_mode == NEXT  # gymnasium's default
    assert empty.metadata["autoreset_mode"] == SAME and "SAME_STEP" in repr(empty)
    assert GymnasiumVectorEnv(WALK, num_envs=1, autoreset_mode="SameStep").metadata["autoreset_mode"] == SAME
    assert type(empty).metadata["autoreset_mode"] == NEXT  # what gymnasium's wrappers read before an instance
    for bad in (AutoresetMode.DISABLED, "same-step", 1):
        with pytest.raises(ValueError, match="autoreset_mode must be"):
            GymnasiumVectorEnv(WALK, num_envs=1, autoreset_mode=bad)


def test_spaces_shapes_and_dtypes(empty):
    assert isinstance(empty.single_action_space, gymnasium.spaces.Discrete) and empty.single_action_space.n == 7
    assert isinstance(empty.action_space, gymnasium.spaces.MultiDiscrete)
    assert empty.action_space.nvec.tolist() == [7] * 4
    single = empty.single_observation_space
    assert single["image"] == gymnasium.spaces.Box(0, C.AGENT, (7, 7, 3), np.uint8)
    assert single["direction"].n == 4 and single["direction"].dtype == DISCRETE_DTYPE
    assert empty.observation_space["image"].shape == (4, 7, 7, 3)

    obs, infos = empty.reset(seed=1)
    assert infos == {} and set(obs) == {"image", "direction"}
    assert obs["image"].shape == (4, 7, 7, 3) and obs["image"].dtype == np.uint8
    assert obs["direction"].shape == (4,) and obs["direction"].dtype == np.int32  # jaxsoc's, in every version
    assert empty.observation_space.contains(obs)
    for i in range(4):
        assert single.contains({k: v[i] for k, v in obs.items()})
    obs, reward, terminated, truncated, infos = empty.step(empty.action_space.sample())
    assert empty.observation_space.contains(obs)
    assert reward.shape == (4,) and reward.dtype == np.float32
    assert terminated.shape == truncated.shape == (4,) and terminated.dtype == truncated.dtype == np.bool_
    assert infos["success"].dtype == np.bool_ and infos["_success"].all()
    assert infos["episode_steps"].tolist() == [1] * 4 and "final_obs" not in infos


def test_to_gymnasium_space():
    box = to_gymnasium_space(spaces.Box(-1.0, 2.0, (2, 3)))
    assert box == gymnasium.spaces.Box(-1.0, 2.0, (2, 3), np.float32)
    inner = spaces.Dict({"c": spaces.Box(0, 5, (4,), np.uint8)})
    nested = to_gymnasium_space(spaces.Dict({"a": spaces.Discrete(3), "b": inner}))
    assert nested["a"].n == 3 and nested["a"].dtype == DISCRETE_DTYPE
    assert nested["b"]["c"].dtype == np.uint8 and nested["b"]["c"].high.max() == 5
    with pytest.raises(TypeError, match="no gymnasium equivalent"):
        to_gymnasium_space(object())


def test_same_step_autoreset_and_final_obs(empty):
    env, params = empty.env, empty.params
    first, _ = empty.reset(seed=3)
    actions = np.array([SOLUTION, SOLUTION, [C.LEFT] * 5, [C.RIGHT] * 5]).T
    for t in range(5):
        obs, reward, terminated, truncated, infos = empty.step(actions[t])
        if t < 4:
            assert not terminated.any() and "final_obs" not in infos
    assert terminated.tolist() == [True, True, False, False] and not truncated.any()
    np.testing.assert_allclose(reward, [1 - 0.9 * 5 / 6] * 2 + [0, 0], rtol=1e-6)
    # worlds 0 and 1 were reset in this step: Empty always restarts at the same place
    for k in obs:
        np.testing.assert_array_equal(obs[k][:2], first[k][:2])
    assert infos["_final_obs"].tolist() == [True, True, False, False]
    assert infos["final_obs"].dtype == object and infos["final_obs"][2] is None and infos["final_obs"][3] is None
    # final_obs holds the last observation of the finished episode, as the env's own step reports it
    _, state = env.reset(jax.random.key(0), params)
    for a in SOLUTION:
        _, state, _, _, _, info = env.step(jax.random.key(0), state, a, params)
    last_obs = info["final_observation"]
    for i in (0, 1):
        assert empty.single_observation_space.contains(infos["final_obs"][i])
        for k in last_obs:
            np.testing.assert_array_equal(infos["final_obs"][i][k], np.asarray(last_obs[k]))
    assert infos["_final_info"].tolist() == [True, True, False, False]
    assert infos["final_info"]["success"].tolist() == [True, True, False, False]
    assert infos["final_info"]["_success"].tolist() == [True, True, False, False]
    assert infos["success"].tolist() == [True, True, False, False]
    # world 2 and 3 hit max_steps=6 at the next step
    obs, reward, terminated, truncated, infos = empty.step(np.full(4, C.LEFT))
    assert truncated.tolist() == [False, False, True, True] and not terminated.any()
    assert infos["_final_obs"].tolist() == [False, False, True, True]
    assert infos["episode_steps"].tolist() == [1, 1, 6, 6]
    assert infos["final_info"]["success"].tolist() == [False] * 4


def test_seeded_runs_are_deterministic(walk):
    actions = random_actions(walk, 12, seed=0)

    def rollout(seed):
        out = [walk.reset(seed=seed)[0]]
        for a in actions:
            obs, reward, terminated, truncated, _ = walk.step(a)
            out.append((obs, reward, terminated, truncated))
        return out

    a, b = rollout(11), rollout(11)
    assert env_checker.data_equivalence(a, b, exact=True)
    c = rollout(12)
    assert not np.array_equal(a[0]["features"], c[0]["features"])  # other seeds give other starts
    # a fresh adapter constructed with the seed gives the same run without reset(seed=...)
    same = GymnasiumVectorEnv(walk.env, num_envs=3, params=walk.params, seed=11)
    assert env_checker.data_equivalence(same.reset()[0], a[0], exact=True)


def test_equals_a_direct_jax_vmap_rollout(walk):
    """The documented key streams reproduce the adapter with jax.vmap of env.reset/env.step."""
    env, params, n = walk.env, walk.params, walk.num_envs
    actions = random_actions(walk, 20, seed=1)
    obs, _ = walk.reset(seed=5)

    streams = jax.random.split(jax.random.key(5), n)

    def draw(streams):
        pairs = jax.vmap(jax.random.split)(streams)
        return pairs[:, 0], pairs[:, 1]

    streams, keys = draw(streams)
    j_obs, state = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
    assert env_checker.data_equivalence(obs, jax.device_get(j_obs), exact=True)
    step = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))
    resets = 0
    for a in actions:
        obs, reward, terminated, truncated, infos = walk.step(a)
        streams, keys = draw(streams)
        j_obs, state, j_reward, j_term, j_trunc, j_info = jax.device_get(step(keys, state, a.astype(np.int32), params))
        assert env_checker.data_equivalence(obs, j_obs, exact=True)
        np.testing.assert_allclose(reward, j_reward, rtol=1e-6)  # two programs: 1 - 0.5 t / T to rounding
        np.testing.assert_array_equal(terminated, j_term)
        np.testing.assert_array_equal(truncated, j_trunc)
        done = j_term | j_trunc
        resets += int(done.sum())
        assert infos.get("_final_obs", np.zeros(n, bool)).tolist() == done.tolist()
        for i in np.flatnonzero(done):
            final = {k: v[i] for k, v in j_info["final_observation"].items()}
            assert env_checker.data_equivalence(
                {k: np.asarray(v) for k, v in infos["final_obs"][i].items()},
                {k: np.asarray(v) for k, v in final.items()},
                exact=True,
            )
    assert resets >= 3


def test_seed_lists_and_partial_reset(walk):
    env, params = walk.env, walk.params
    full, _ = walk.reset(seed=[4, 5, 6])
    again, _ = walk.reset(seed=[4, None, 6])  # world 1 continues its stream
    for k in full:
        np.testing.assert_array_equal(again[k][[0, 2]], full[k][[0, 2]])
    obs, _, terminated, truncated, _ = walk.step(np.array([2, 2, 2]))
    partial, _ = walk.reset(options={"reset_mask": np.array([True, False, False])})
    for k in obs:  # worlds 1 and 2 are untouched
        np.testing.assert_array_equal(partial[k][1:], obs[k][1:])
    # world 0's stream: key(4), then one draw for the reset, one for the step, one for the partial reset
    stream = jax.random.key(4)
    for _ in range(2):
        stream = jax.random.split(stream)[0]
    expected, _ = env.reset(jax.random.split(stream)[1], params)
    for k in partial:
        np.testing.assert_array_equal(partial[k][0], np.asarray(expected[k]))
    # the other worlds' episodes continue (unless they ended and auto-reset at the last step)
    _, _, _, _, infos = walk.step(np.array([0, 0, 0]))
    assert infos["episode_steps"].tolist() == [1] + [1 if d else 2 for d in (terminated | truncated)[1:]]
    with pytest.raises(ValueError, match="reset_mask"):
        walk.reset(options={"reset_mask": np.array([1, 0, 0])})
    with pytest.raises(ValueError, match="unsupported reset options"):
        walk.reset(options={"difficulty": 3})
    with pytest.raises(ValueError, match="one entry per world"):
        walk.reset(seed=[1, 2])
    with pytest.raises(ValueError, match=r"\[0, 2\*\*32\)"):
        walk.reset(seed=-1)
    with pytest.raises(ValueError, match=r"\[0, 2\*\*32\)"):
        walk.reset(seed=2**40)


#: gymnasium 1.4's vector RecordEpisodeStatistics reads the autoreset mode; 1.0-1.3 count as under NEXT_STEP
STATISTICS_MODES = [NEXT, SAME] if "_autoreset_mode" in inspect.getsource(RecordEpisodeStatistics.step) else [NEXT]


@pytest.mark.parametrize("mode", STATISTICS_MODES)
def test_log_wrapper_statistics_match_gymnasium_record_episode_statistics(mode):
    """LogWrapper's statistics, passed through the adapter's infos, equal what gymnasium's own
    RecordEpisodeStatistics records (in either auto-reset mode where it supports both)."""
    vec = GymnasiumVectorEnv(LogWrapper(WALK), num_envs=3, seed=1, autoreset_mode=mode)
    recorded = RecordEpisodeStatistics(vec)
    recorded.reset(seed=2)
    episodes = 0
    for a in random_actions(vec, 20, seed=3):
        _, _, terminated, truncated, infos = recorded.step(a)
        done = terminated | truncated
        np.testing.assert_array_equal(infos["returned_episode"] & infos["_returned_episode"], done)
        if done.any():
            episodes += int(done.sum())
            np.testing.assert_array_equal(infos["_episode"], done)
            np.testing.assert_allclose(infos["returned_episode_returns"][done], infos["episode"]["r"][done], rtol=1e-6)
            np.testing.assert_array_equal(infos["returned_episode_lengths"][done], infos["episode"]["l"][done])
            success = infos["final_info"]["success"] if mode == SAME else infos["success"]
            np.testing.assert_array_equal(infos["returned_episode_success"][done], success[done])
    assert episodes >= 6 and len(recorded.return_queue) == episodes


def test_rejects_bad_actions(empty):
    empty.reset(seed=0)
    with pytest.raises(ValueError, match=r"shape \(4,\).*got shape \(3,\)"):
        empty.step(np.zeros(3, np.int64))
    with pytest.raises(ValueError, match="shape"):
        empty.step(2)
    with pytest.raises(ValueError, match="shape"):
        empty.step(np.zeros((4, 1), np.int32))
    with pytest.raises(TypeError, match="integers, got dtype float32"):
        empty.step(np.zeros(4, np.float32))
    with pytest.raises(TypeError, match="integers, got dtype bool"):
        empty.step(np.zeros(4, bool))
    with pytest.raises(ValueError, match=r"\[0, 7\).*\[7, -1\] in worlds \[2, 3\]"):
        empty.step(np.array([0, 1, 7, -1]))
    # valid inputs: a list, an int64 array, a jax array
    empty.step([0, 1, 2, 6])
    empty.step(np.array([0, 1, 2, 6], np.int64))
    empty.step(jax.numpy.arange(4))


def test_constructor_errors_and_lifecycle():
    with pytest.raises(ValueError, match="num_envs"):
        GymnasiumVectorEnv(EMPTY, num_envs=0)
    with pytest.raises(KeyError, match="unknown environment"):
        GymnasiumVectorEnv("MiniGrid-Empty-5x5-v9", num_envs=1)
    with pytest.raises(TypeError, match="unknown params"):
        GymnasiumVectorEnv(EMPTY, num_envs=1, max_step=3)
    env, params = jaxsoc.make(EMPTY)
    with pytest.raises(TypeError, match="overrides"):
        GymnasiumVectorEnv(env, num_envs=1, max_steps=3)
    vec = GymnasiumVectorEnv(env, num_envs=4, params=params.replace(max_steps=6))
    assert vec.params.max_steps == 6 and "num_envs=4" in repr(vec)
    with pytest.raises(RuntimeError, match="reset"):
        vec.step(np.zeros(4, np.int32))
    vec.close()
    vec.close()  # idempotent
    assert vec.closed
    with pytest.raises(RuntimeError, match="closed"):
        vec.reset()


def test_next_step_autoreset(empty, empty_next):
    """Empty-5x5 under NEXT_STEP: the ending step returns the last observation (as the env's final_observation),
    the next step the new episode's first, with reward 0, no flags and masked infos."""
    env, params = empty_next.env, empty_next.params
    first, _ = empty_next.reset(seed=3)
    same_first, _ = empty.reset(seed=3)
    assert env_checker.data_equivalence(first, same_first, exact=True)
    actions = np.array([SOLUTION, SOLUTION, [C.LEFT] * 5, [C.RIGHT] * 5]).T
    for t in range(5):
        obs, reward, terminated, truncated, infos = empty_next.step(actions[t])
        empty.step(actions[t])
    assert terminated.tolist() == [True, True, False, False] and "final_obs" not in infos
    np.testing.assert_allclose(reward, [1 - 0.9 * 5 / 6] * 2 + [0, 0], rtol=1e-6)
    assert infos["success"].tolist() == [True, True, False, False] and infos["_success"].all()
    _, state = env.reset(jax.random.key(0), params)
    for a in SOLUTION:
        _, state, _, _, _, info = env.step(jax.random.key(0), state, a, params)
    for k, v in info["final_observation"].items():
        np.testing.assert_array_equal(obs[k][:2], np.stack([np.asarray(v)] * 2))
    final_frame = empty_next.render()
    np.testing.assert_array_equal(final_frame, np.asarray(env.render(info["final_state"], params)))
    # worlds 0 and 1 reset (action ignored, Empty restarts in place); 2 and 3 step to max_steps=6 and truncate
    obs, reward, terminated, truncated, infos = empty_next.step(np.array([C.FORWARD, C.LEFT, C.LEFT, C.LEFT]))
    same_obs, same_reward, _, same_truncated, same_infos = empty.step(np.full(4, C.LEFT))
    for k in obs:
        np.testing.assert_array_equal(obs[k][:2], first[k][:2])
        np.testing.assert_array_equal(obs[k][2:], np.stack([same_infos["final_obs"][i][k] for i in (2, 3)]))
    assert reward.tolist() == [0, 0, 0, 0] and not terminated.any() and truncated.tolist() == [False, False, True, True]
    assert infos["_success"].tolist() == infos["_episode_steps"].tolist() == [False, False, True, True]
    assert infos["episode_steps"].tolist() == [0, 0, 6, 6] and "final_obs" not in infos
    assert not np.array_equal(empty_next.render(), final_frame)  # world 0 shows its new episode
    # one more step: 0 and 1 take their first step, 2 and 3 reset
    obs, reward, terminated, truncated, infos = empty_next.step(np.full(4, C.LEFT))
    assert infos["_success"].tolist() == [True, True, False, False] and infos["episode_steps"][:2].tolist() == [1, 1]
    for k in obs:
        np.testing.assert_array_equal(obs[k][2:], same_obs[k][2:])  # the reset observation same-step returned


def test_partial_reset_cancels_a_pending_next_step_reset(empty_next):
    empty_next.reset(seed=0)
    actions = np.array([SOLUTION, SOLUTION, [C.LEFT] * 5, [C.LEFT] * 5]).T
    for a in actions:
        _, _, terminated, _, _ = empty_next.step(a)
    assert terminated.tolist() == [True, True, False, False]
    empty_next.reset(options={"reset_mask": np.array([True, False, False, False])})
    _, _, _, _, infos = empty_next.step(np.full(4, C.LEFT))
    # world 0 was reset by the option and steps; world 1 takes its pending reset step
    assert infos["_episode_steps"].tolist() == [True, False, True, True]
    assert infos["episode_steps"].tolist() == [1, 0, 6, 6]


def test_next_step_is_same_step_shifted():
    """World by world, a NEXT_STEP run equals a SAME_STEP run of that world alone (same key stream) with the
    reset steps taken out: an ending step shows SAME_STEP's final_obs, the reset step after it SAME_STEP's obs."""
    n = 3
    nxt = GymnasiumVectorEnv(WALK, num_envs=n)
    obs, _ = nxt.reset(seed=[4, 5, 6])
    first = [{k: v[i] for k, v in obs.items()} for i in range(n)]
    events = [[] for _ in range(n)]
    resetting = np.zeros(n, bool)
    for a in random_actions(nxt, 30, seed=7):
        obs, reward, terminated, truncated, infos = nxt.step(a)
        for i in range(n):
            o = {k: v[i] for k, v in obs.items()}
            if resetting[i]:
                assert reward[i] == 0 and not terminated[i] and not truncated[i] and not infos["_success"][i]
                events[i].append(("reset", o))
            else:
                assert infos["_success"][i]
                step = (reward[i], terminated[i], truncated[i], infos["success"][i], infos["episode_steps"][i])
                events[i].append(("step", a[i], o, step))
        resetting = terminated | truncated
    resets = 0
    for i in range(n):
        same = GymnasiumVectorEnv(WALK, num_envs=1, autoreset_mode=SAME)
        obs, _ = same.reset(seed=[4 + i])
        assert env_checker.data_equivalence({k: v[0] for k, v in obs.items()}, first[i])
        pending = None
        for event in events[i]:
            if event[0] == "reset":
                assert env_checker.data_equivalence(event[1], pending)
                resets += 1
                continue
            _, action, shown, step = event
            obs, reward, terminated, truncated, infos = same.step(np.array([action]))
            np.testing.assert_allclose(step[0], reward[0], rtol=1e-6)  # two programs (1 and 3 worlds)
            assert step[1:] == (terminated[0], truncated[0], infos["success"][0], infos["episode_steps"][0])
            now = {k: v[0] for k, v in obs.items()}
            done = terminated[0] or truncated[0]
            assert env_checker.data_equivalence(shown, infos["final_obs"][0] if done else now)
            pending = now if done else None
    assert resets >= 3


def test_gymnasium_vector_observation_wrappers():
    """gymnasium's FlattenObservation, FilterObservation and TransformObservation run over the NEXT_STEP adapter
    and give, world by world, gymnasium's own transformation of its observations; SAME_STEP is refused by the
    wrappers that need NEXT_STEP (gymnasium 1.1 on)."""
    wrappers = gymnasium.wrappers.vector

    def rollout(vec):
        out = [vec.reset(seed=1)[0]]
        out += [vec.step(a)[0] for a in random_actions(vec, 8, seed=2)]
        return out

    plain = rollout(GymnasiumVectorEnv(EMPTY, num_envs=3, max_steps=4))
    flat_env = wrappers.FlattenObservation(GymnasiumVectorEnv(EMPTY, num_envs=3, max_steps=4))
    single = flat_env.env.single_observation_space
    assert flat_env.single_observation_space == gymnasium.spaces.flatten_space(single)
    for obs, flat in zip(plain, rollout(flat_env)):
        assert flat.shape == (3, gymnasium.spaces.flatdim(single)) and flat in flat_env.observation_space
        for i in range(3):
            np.testing.assert_array_equal(flat[i], gymnasium.spaces.flatten(single, {k: v[i] for k, v in obs.items()}))
    filtered = rollout(wrappers.FilterObservation(GymnasiumVectorEnv(EMPTY, num_envs=3, max_steps=4), ["image"]))
    for obs, kept in zip(plain, filtered):
        assert list(kept) == ["image"] and np.array_equal(kept["image"], obs["image"])
    turned = wrappers.TransformObservation(
        GymnasiumVectorEnv(EMPTY, num_envs=3, max_steps=4), lambda obs: dict(obs, direction=(obs["direction"] + 1) % 4)
    )
    for obs, out in zip(plain, rollout(turned)):
        np.testing.assert_array_equal(out["direction"], (obs["direction"] + 1) % 4)
    if hasattr(gymnasium.vector, "AutoresetMode"):  # gymnasium 1.1 on: the wrappers check the mode
        with pytest.raises((AssertionError, ValueError)):  # 1.1-1.3 assert, 1.4 raises ValueError
            wrappers.TransformObservation(GymnasiumVectorEnv(EMPTY, num_envs=3, autoreset_mode=SAME), lambda o: o)


def test_render_returns_the_first_world(empty):
    empty.reset(seed=0)
    empty.step(np.array([C.FORWARD, C.LEFT, C.LEFT, C.LEFT]))
    try:
        frame = empty.render()
    except (ImportError, NotImplementedError) as error:
        pytest.skip(f"renderer unavailable: {error}")
    assert frame.shape == (160, 160, 3) and frame.dtype == np.uint8
    first = jax.tree_util.tree_map(lambda x: x[0], empty._state)
    np.testing.assert_array_equal(frame, np.asarray(empty.env.render(first, empty.params)))


def test_render_passes_on_a_missing_renderer(walk):
    walk.reset(seed=0)
    with pytest.raises(NotImplementedError, match="no renderer"):
        walk.render()


@pytest.mark.parametrize("mode", ["empty", "empty_next"])
def test_gymnasium_env_checks(mode, request):
    empty = request.getfixturevalue(mode)
    env_checker.check_reset_seed_determinism(empty)
    env_checker.check_reset_options(empty)
    env_checker.check_reset_return_type(empty)
    # returned arrays are fresh and writable, never shared between calls
    obs_1, infos_1 = empty.reset(seed=0)
    obs_2, _, _, _, infos = empty.step(np.full(4, C.LEFT))
    assert not shares_memory(obs_1, obs_2) and not shares_memory(infos, infos_1)
    obs_2["image"][:] = 0
    obs_3, _ = empty.reset(seed=0)
    np.testing.assert_array_equal(obs_3["image"], obs_1["image"])


def test_missing_gymnasium_raises_a_helpful_import_error(monkeypatch):
    for name in [m for m in sys.modules if m == "gymnasium" or m.startswith("gymnasium.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, "jaxsoc.core.vector")
    with pytest.raises(ImportError, match=r"pip install 'jaxsoc\[gymnasium\]'"):
        importlib.import_module("jaxsoc.core.vector")
