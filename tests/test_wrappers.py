"""LogWrapper statistics and the gymnasium vector adapter."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsoc
from jaxsoc.core.vector import GymnasiumVectorEnv
from jaxsoc.core.wrappers import LogWrapper, episode_metrics

# Empty-5x5 from (1, 1) facing east: forward, forward, right, forward, forward reaches the goal at (3, 3)
SOLUTION = [2, 2, 1, 2, 2]


@pytest.fixture(scope="module")
def logged():
    env, params = jaxsoc.make("MiniGrid-Empty-5x5-v0", max_steps=8)
    return LogWrapper(env), params


def test_log_wrapper_reports_finished_episodes(logged):
    env, params = logged
    _, state = env.reset(jax.random.key(0), params)
    # episode 1: solved in 5 steps; episode 2: turns in place until truncation at 8 steps
    actions = SOLUTION + [0] * 8
    infos = []
    for t, action in enumerate(actions):
        _, state, reward, terminated, truncated, info = env.step(jax.random.key(t), state, action, params)
        infos.append(info)
    done = [bool(i["returned_episode"]) for i in infos]
    assert done == [False] * 4 + [True] + [False] * 7 + [True]
    np.testing.assert_allclose(float(infos[4]["returned_episode_return"]), 1 - 0.9 * 5 / 8, atol=1e-6)
    assert int(infos[4]["returned_episode_length"]) == 5 and bool(infos[4]["returned_episode_success"])
    assert int(infos[12]["returned_episode_length"]) == 8 and not bool(infos[12]["returned_episode_success"])
    assert float(infos[12]["returned_episode_return"]) == 0.0
    stacked = jax.tree_util.tree_map(lambda *x: jnp.stack(x), *infos)
    metrics = episode_metrics(stacked)
    assert int(metrics["num_episodes"]) == 2
    np.testing.assert_allclose(float(metrics["length"]), 6.5)
    np.testing.assert_allclose(float(metrics["success"]), 0.5)


def test_episode_metrics_without_finished_episodes(logged):
    env, params = logged
    _, state = env.reset(jax.random.key(0), params)
    _, _, _, _, _, info = env.step(jax.random.key(0), state, 0, params)
    metrics = episode_metrics(info)
    assert int(metrics["num_episodes"]) == 0 and float(metrics["return"]) == 0.0


def test_log_wrapper_vmaps_and_jits_like_the_env(logged):
    env, params = logged
    inner = env.unwrapped
    keys = jax.random.split(jax.random.key(1), 3)
    _, states = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
    _, inner_states = jax.vmap(inner.reset, in_axes=(0, None))(keys, params)
    step = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))
    inner_step = jax.jit(jax.vmap(inner.step, in_axes=(0, 0, 0, None)))
    for action in SOLUTION:
        a = jnp.full(3, action)
        obs, states, reward, *_ = step(keys, states, a, params)
        inner_obs, inner_states, inner_reward, *_ = inner_step(keys, inner_states, a, params)
        chex.assert_trees_all_equal(obs, inner_obs)
        chex.assert_trees_all_equal(reward, inner_reward)
    with pytest.raises(ValueError, match="outside"):
        env.step(keys[0], jax.tree_util.tree_map(lambda x: x[0], states), 9, params)


@pytest.fixture(scope="module")
def vector():
    return GymnasiumVectorEnv("MiniGrid-Empty-5x5-v0", num_envs=4, seed=3, max_steps=6)


def test_vector_env_spaces_and_autoreset(vector):
    obs, _ = vector.reset(seed=3)
    assert vector.observation_space.contains(obs)
    assert obs["image"].shape == (4, 7, 7, 3) and obs["image"].dtype == np.uint8
    actions = np.array([SOLUTION, SOLUTION, [0] * 5, [1] * 5]).T
    for t in range(5):
        obs, reward, terminated, truncated, infos = vector.step(actions[t])
    assert terminated.tolist() == [True, True, False, False] and reward.dtype == np.float32
    assert infos["_final_obs"].tolist() == [True, True, False, False]
    np.testing.assert_allclose(reward[:2], 1 - 0.9 * 5 / 6, atol=1e-6)
    first, _ = vector.reset(seed=3)
    np.testing.assert_array_equal(obs["image"][0], first["image"][0])  # Empty resets to its start
    assert vector.render().shape == (160, 160, 3)


def test_vector_env_is_deterministic_and_equals_jax(vector):
    env, params = vector.env, vector.params
    a, _ = vector.reset(seed=11)
    b, _ = vector.reset(seed=11)
    np.testing.assert_array_equal(a["image"], b["image"])
    keys = jax.random.split(jax.random.split(jax.random.key(11))[1], 4)
    direct, _ = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
    np.testing.assert_array_equal(a["image"], np.asarray(direct["image"]))


def test_vector_env_rejects_bad_actions(vector):
    vector.reset(seed=0)
    with pytest.raises(ValueError, match="shape"):
        vector.step(np.zeros(3, np.int64))
    with pytest.raises(TypeError, match="integers"):
        vector.step(np.zeros(4, np.float32))
    with pytest.raises(ValueError, match=r"\[0, 7\)"):
        vector.step(np.array([0, 1, 2, 7]))
