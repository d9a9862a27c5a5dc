"""``core.autoreset.batched_step``: pooled resets give every ended episode its own fresh level."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsoc
from jaxsoc.core.autoreset import batched_reset, batched_step, pool_sizes

NUM_ENVS = 32


@pytest.fixture(scope="module")
def setup():
    env, params = jaxsoc.make("MiniGrid-DoorKey-5x5-v0", max_steps=3)
    step = jax.jit(batched_step(env, pool_fractions=(1 / 8, 1 / 2)))
    reset = jax.jit(batched_reset(env), static_argnums=2)
    # the references, compiled once per batch size (op by op, every case would recompile each primitive)
    step_env = jax.jit(jax.vmap(env.step_env, in_axes=(0, 0, 0, None)))

    @jax.jit
    def fresh(keys):
        """Returns ``(states, observations)`` of ``env.reset_env`` on each key."""
        _, states = jax.vmap(env.reset_env, in_axes=(0, None))(keys, params)
        return states, jax.vmap(env.observe)(states)

    return env, params, step, reset, step_env, fresh


def test_pool_sizes():
    assert pool_sizes(64, (1 / 64, 1 / 16, 1 / 4)) == [1, 4, 16, 64]
    assert pool_sizes(10, (0.5, 0.5, 1.0)) == [5, 10]
    assert pool_sizes(7, ()) == [7]


@pytest.mark.parametrize("num_done", [0, 3, 4, 5, 16, 17, 32])
def test_ended_worlds_get_distinct_fresh_levels(setup, num_done):
    env, params, step, reset, step_env, fresh = setup
    _, states = reset(jax.random.key(0), params, NUM_ENVS)
    # worlds [0, num_done) are one step from truncation; the others have just started
    states = states.replace(step_count=jnp.where(jnp.arange(NUM_ENVS) < num_done, 2, 0).astype(jnp.int32))
    actions = jnp.zeros(NUM_ENVS, jnp.int32)  # turn left: never ends an episode by itself
    key = jax.random.key(1)
    obs, new, reward, terminated, truncated, info = step(key, states, actions, params)
    done = np.asarray(terminated | truncated)
    assert done.sum() == num_done

    # the worlds that go on are exactly env.step_env's result
    key_step, key_reset = jax.random.split(key)
    keys = jax.random.split(key_step, NUM_ENVS)
    _, stepped, *_ = step_env(keys, states, actions, params)
    for ours, theirs in zip(jax.tree.leaves(new), jax.tree.leaves(stepped)):
        np.testing.assert_array_equal(np.asarray(ours)[~done], np.asarray(theirs)[~done])
    for ours, theirs in zip(jax.tree.leaves(info["final_state"]), jax.tree.leaves(stepped)):
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))

    # the k-th ended world holds the k-th level of the smallest pool that fits (4, 16 or 32)
    size = next(s for s in pool_sizes(NUM_ENVS, (1 / 8, 1 / 2)) if s >= num_done)
    pool, pool_obs = fresh(jax.random.split(key_reset, size))
    for ours, theirs in zip(jax.tree.leaves(new), jax.tree.leaves(pool)):
        np.testing.assert_array_equal(np.asarray(ours)[done], np.asarray(theirs)[:num_done])
    assert np.all(np.asarray(new.step_count)[done] == 0)
    np.testing.assert_array_equal(np.asarray(obs["image"])[done], np.asarray(pool_obs["image"])[:num_done])
