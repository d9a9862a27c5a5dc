"""Pooled resets (``core.pooled``, ``core.autoreset.batched_step``): only ended worlds are reset, each with its own
key, so the values equal the select-based auto-reset's, under ``vmap``, nested ``vmap`` and for one world."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsoc
from jaxsoc.core.autoreset import batched_reset, batched_step, pool_sizes
from jaxsoc.core.env import Environment
from jaxsoc.core.pooled import select_reset
from jaxsoc.envs.gridworld.minigrid_ids import MINIGRID_ENVS

NUM_ENVS = 32
CHUNK = 1 / 8  # 4 of the 32 worlds reset per round


def _assert_trees_equal(ours, theirs):
    for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(theirs), strict=True):
        if jnp.issubdtype(a.dtype, jax.dtypes.prng_key):
            a, b = jax.random.key_data(a), jax.random.key_data(b)
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def _select_step(env):
    """The reference: the base class's auto-reset with the reset computed for every world and selected."""
    where = select_reset(env.reset_env)
    one = lambda k, s, a, p: Environment._auto_reset_step(env, k, s, a, p, where)  # noqa: E731
    return jax.jit(jax.vmap(one, in_axes=(0, 0, 0, None)))


@pytest.fixture(scope="module")
def setup():
    env, params = jaxsoc.make("MiniGrid-DoorKey-5x5-v0", max_steps=3)
    step = jax.jit(batched_step(env, chunk_fraction=CHUNK))
    reset = jax.jit(batched_reset(env), static_argnums=2)
    return env, params, step, reset, _select_step(env)


def test_pool_sizes():
    assert pool_sizes(64, (1 / 64, 1 / 16, 1 / 4)) == [1, 4, 16, 64]
    assert pool_sizes(10, (0.5, 0.5, 1.0)) == [5, 10]
    assert pool_sizes(7, ()) == [7]


@pytest.mark.parametrize("num_done", [0, 3, 4, 5, 16, 17, 32])  # 0, 1, 1, 2, 4, 5 and 8 rounds of 4 resets
def test_batched_step_equals_the_select_reset_world_by_world(setup, num_done):
    env, params, step, reset, reference = setup
    _, states = reset(jax.random.key(0), params, NUM_ENVS)
    # worlds [0, num_done) are one step from truncation; the others have just started
    states = states.replace(step_count=jnp.where(jnp.arange(NUM_ENVS) < num_done, 2, 0).astype(jnp.int32))
    actions = jnp.zeros(NUM_ENVS, jnp.int32)  # turn left: never ends an episode by itself
    key = jax.random.key(1)
    out = step(key, states, actions, params)
    done = np.asarray(out[3] | out[4])
    assert done.sum() == num_done
    _assert_trees_equal(out, reference(jax.random.split(key, NUM_ENVS), states, actions, params))
    new = out[1]
    assert np.all(np.asarray(new.step_count)[done] == 0)
    # every ended world drew its own level (the agent's cell, grid and direction are not all shared)
    grids = np.asarray(new.grid)[done]
    assert num_done < 2 or len({g.tobytes() for g in grids}) > 1


@pytest.fixture(scope="module")
def babyai():
    """An env with pooled resets: ``(env, params, states, keys, actions)`` for 16 worlds, 6 of them one step from
    the end. DoorKey-5x5 with ``pooled_resets`` on, whose reset compiles in a fraction of a BabyAI level's: the
    mechanism is the base class's, and BabyAI's levels turn it on (asserted)."""
    assert jaxsoc.make("BabyAI-GoToObj-v0")[0].pooled_resets
    cls, kwargs = MINIGRID_ENVS["MiniGrid-DoorKey-5x5-v0"]
    env = type("PooledDoorKey", (cls,), {"pooled_resets": True})(**kwargs, max_steps=2)
    params = env.default_params()
    keys = jax.random.split(jax.random.key(3), 16)
    _, states = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
    states = states.replace(step_count=jnp.where(jnp.arange(16) % 3 == 0, 1, 0).astype(jnp.int32))
    return env, params, states, jax.random.split(jax.random.key(4), 16), jnp.zeros(16, jnp.int32)


def test_vmap_of_env_step_pools_and_equals_the_select_reset(babyai):
    env, params, states, keys, actions = babyai
    vstep = jax.vmap(env.step, in_axes=(0, 0, 0, None))
    out = jax.jit(vstep)(keys, states, actions, params)
    assert np.asarray(out[4]).sum() == 6
    _assert_trees_equal(out, _select_step(env)(keys, states, actions, params))
    # one world (lax.cond) and a nested vmap (seeds x worlds, flattened into one pool) give the same values
    one = jax.jit(env.step)(keys[0], jax.tree.map(lambda x: x[0], states), actions[0], params)
    _assert_trees_equal(one, jax.tree.map(lambda x: x[0], out))
    split = jax.tree.map(lambda x: x.reshape(4, 4, *x.shape[1:]), (keys, states, actions))
    nested = jax.jit(jax.vmap(vstep, in_axes=(0, 0, 0, None)))(*split, params)
    _assert_trees_equal(jax.tree.map(lambda x: x.reshape(16, *x.shape[2:]), nested), out)


def _pooled_loops(jaxpr) -> int:
    """Returns how many ``core.pooled`` reset loops (``jit`` named ``_pooled_reset_chunks``) ``jaxpr`` holds."""
    found = 0
    for eqn in jaxpr.eqns:
        found += eqn.primitive.name in ("jit", "pjit") and eqn.params.get("name") == "_pooled_reset_chunks"
        for value in eqn.params.values():
            for sub in value if isinstance(value, (list, tuple)) else [value]:
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    found += _pooled_loops(inner)
    return found


def test_vmap_resets_in_one_loop_at_every_depth(babyai):
    """Under one or two ``vmap``s the reset runs in one loop of pooled rounds (so it is compiled once), and the
    select-based reset of a non-pooled env has none."""
    env, params, states, keys, actions = babyai
    vstep = jax.vmap(env.step, in_axes=(0, 0, 0, None))
    assert _pooled_loops(jax.make_jaxpr(vstep)(keys, states, actions, params).jaxpr) == 1
    split = jax.tree.map(lambda x: x.reshape(4, 4, *x.shape[1:]), (keys, states, actions))
    nested = jax.make_jaxpr(jax.vmap(vstep, in_axes=(0, 0, 0, None)))(*split, params)
    assert _pooled_loops(nested.jaxpr) == 1
    plain, plain_params = jaxsoc.make("MiniGrid-Empty-5x5-v0")
    _, plain_states = jax.vmap(plain.reset, in_axes=(0, None))(keys, plain_params)
    traced = jax.make_jaxpr(jax.vmap(plain.step, in_axes=(0, 0, 0, None)))(keys, plain_states, actions, plain_params)
    assert _pooled_loops(traced.jaxpr) == 0


def test_params_batched_across_worlds_fall_back_to_a_select(babyai):
    env, params, states, keys, actions = babyai
    many = jax.tree.map(lambda x: jnp.broadcast_to(jnp.asarray(x), (16,)), params)
    many = many.replace(max_steps=jnp.where(jnp.arange(16) < 8, 2, 5))
    vstep = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, 0)))
    out = vstep(keys, states, actions, many)
    ref = jax.jit(
        jax.vmap(lambda k, s, a, p: _select_step(env)(k[None], jax.tree.map(lambda x: x[None], s), a[None], p))
    )
    _assert_trees_equal(out, jax.tree.map(lambda x: x[:, 0], ref(keys, states, actions, many)))
