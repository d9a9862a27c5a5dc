"""CHAIC's environments: the registered ids, the two-agent and helper APIs, auto-reset, observations inside their
space, partial observability of the goal, clear errors."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsoc
from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.envs.chaic import env as E
from jaxsoc.envs.chaic import state as S
from jaxsoc.envs.chaic import tasks as T


class Waiting:
    """A constrained agent that only waits (keeps the helper-view tests independent of the planner)."""

    def init(self, key, state, agent):
        return jnp.zeros((), jnp.int32)

    def act(self, key, memory, state, timing):
        return jnp.int32(S.WAIT), memory + 1


@pytest.fixture(scope="module")
def two_agent():
    env, params = jaxsoc.make("CHAIC-Normal-v0")
    return env, params, jax.jit(env.reset_env), jax.jit(env._auto_reset_step)


def test_every_task_is_registered_twice():
    names = jaxsoc.registered_envs()
    for name in K.TASK_IDS.values():
        assert f"CHAIC-{name}-v0" in names and f"CHAIC-{name}-Helper-v0" in names
    with pytest.raises(KeyError, match="CHAIC-Normal-v0"):
        jaxsoc.make("CHAIC-Normall-v0")
    with pytest.raises(ValueError, match="unknown CHAIC task"):
        E.ChaicEnv("kitchen")
    with pytest.raises(ValueError, match="choose from"):
        T.make_split("normal", "valid")


def test_two_agent_api_and_observation_space(two_agent):
    env, params, reset, step = two_agent
    obs, state = reset(jax.random.key(0), params)
    assert set(obs) == {"main", "helper"}
    space = env.observation_space("helper", params)
    assert space.contains(jax.tree_util.tree_map(np.asarray, obs["helper"]))
    assert np.asarray(obs["main"]["goal"]).sum() > 0 and np.asarray(obs["helper"]["goal"]).sum() == 0  # hidden
    actions = {"main": jnp.int32(S.TURN_LEFT), "helper": jnp.int32(S.MOVE)}
    obs, state2, rewards, dones, info = step(jax.random.key(1), state, actions, params)
    assert int(state2.frame) == K.DURATIONS["turn"]
    assert set(dones) == {"main", "helper", "__all__"} and not bool(dones["__all__"])
    assert float(rewards["main"]) == float(rewards["helper"]) == 0.0
    assert space.contains(jax.tree_util.tree_map(np.asarray, obs["helper"]))
    for bad, error in (({"main": 0}, ValueError), ({"main": 0, "helper": S.NUM_ACTIONS}, ValueError)):
        with pytest.raises(error):
            env.step(jax.random.key(2), state, bad, params)
    with pytest.raises(TypeError):
        env.step(jax.random.key(2), state, {"main": 0.5, "helper": 0}, params)


def test_auto_reset_at_the_frame_limit(two_agent):
    env, params, reset, step = two_agent
    _, state = reset(jax.random.key(0), params)
    state = state.replace(frame=state.max_frames - 1)
    actions = {"main": jnp.int32(S.WAIT), "helper": jnp.int32(S.WAIT)}
    obs, fresh, _, dones, info = step(jax.random.key(1), state, actions, params)
    assert bool(dones["__all__"]) and bool(info["truncated"]) and not bool(info["success"])
    assert int(fresh.frame) == 0 and int(info["final_state"].frame) == int(state.max_frames)


def test_success_terminates_with_the_transported_reward(two_agent):
    env, params, reset, step = two_agent
    _, state = reset(jax.random.key(0), params)
    goal = np.asarray(state.goal_count)
    cls = np.asarray(state.objects.cls)
    wanted = np.zeros_like(cls, bool)
    for c in np.flatnonzero(goal):
        wanted[np.flatnonzero(cls == c)[: goal[c]]] = True
    last = int(np.flatnonzero(wanted)[-1])
    delivered = jnp.asarray(wanted).at[last].set(False)
    state = state.replace(objects=state.objects.replace(delivered=delivered))
    # the constrained agent holds the last one next to the goal place
    state = state.replace(
        objects=state.objects.replace(holder=state.objects.holder.at[last].set(0)),
        agents=state.agents.replace(
            hands=state.agents.hands.at[0, 0].set(last), pos=state.agents.pos.at[0].set(state.scene.goal_pos + 0.5)
        ),
    )
    actions = {"main": jnp.int32(S.PUT_ON), "helper": jnp.int32(S.MESSAGE)}
    for k in range(20):
        _, state, rewards, dones, info = step(jax.random.key(k), state, actions, params)
        if bool(dones["__all__"]):
            break
    assert bool(info["success"]) and bool(info["terminated"])
    assert float(rewards["main"]) == pytest.approx(1.0 / float(info["final_state"].total))


def test_helper_view_runs_events_until_the_helper_is_ready():
    env = E.ChaicHelperEnv("normal", main=Waiting())
    params = env.default_params()
    obs, state = jax.jit(env.reset_env)(jax.random.key(0), params)
    step = jax.jit(env._auto_reset_step)
    obs, state, reward, terminated, truncated, info = step(jax.random.key(1), state, jnp.int32(S.TURN_LEFT), params)
    assert int(state.world.frame) == K.DURATIONS["turn"] and int(obs["status"]) == S.SUCCEEDED
    # a pick far away is refused at once; one within reach walks first and takes several of the agent's events
    mask = np.asarray(obs["action_mask"])
    assert mask[: S.PICK].sum() >= 5
    obs, state, *_ = step(jax.random.key(2), state, jnp.int32(S.MESSAGE), params)
    assert int(state.world.frame) == K.DURATIONS["turn"] + K.DURATIONS["message"]
    assert int(state.main) >= 2  # the constrained agent acted at each of its events


def test_helper_view_is_deterministic_and_vmaps():
    env, params = jaxsoc.make("CHAIC-Normal-Helper-v0")
    assert env.task == "normal"
    env = E.ChaicHelperEnv("normal", main=Waiting())
    keys = jax.random.split(jax.random.key(3), 3)
    obs, state = jax.vmap(env.reset_env, in_axes=(0, None))(keys, params)
    step = jax.jit(jax.vmap(env._auto_reset_step, in_axes=(0, 0, 0, None)))
    actions = jnp.array([S.MOVE, S.TURN_RIGHT, S.WAIT], jnp.int32)
    a = step(keys, state, actions, params)
    b = step(keys, state, actions, params)
    chex.assert_trees_all_equal(a[1], b[1])
    assert np.asarray(a[1].world.frame).tolist() == [K.DURATIONS["move"], K.DURATIONS["turn"], K.DURATIONS["wait"]]
