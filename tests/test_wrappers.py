"""``Wrapper`` forwarding, ``LogWrapper`` episode statistics (against a hand count over the unwrapped env)
and ``episode_metrics``. Everything runs on Empty-5x5 (the cheapest env to compile) with small ``max_steps``
so that episodes end often, by success and by truncation."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tolerance import assert_trees_match

import jaxsoc
from jaxsoc.core.wrappers import LogState, LogWrapper, Wrapper, episode_metrics
from jaxsoc.envs.gridworld import constants as C

EMPTY = "MiniGrid-Empty-5x5-v0"
# Empty-5x5: the agent starts at (1, 1) facing east, the goal is at (3, 3).
SOLUTION = [C.FORWARD, C.FORWARD, C.RIGHT, C.FORWARD, C.FORWARD]
STAT_KEYS = ("returned_episode", "returned_episode_returns", "returned_episode_lengths", "returned_episode_success")


def success_return(steps: int, max_steps: int) -> float:
    """The return of a success at ``steps`` (float64; the env's float32 sums agree to atol 1e-6, a few ulps of 1:
    ``1 - 0.9`` loses float32 digits, 2e-7 relative)."""
    return 1 - 0.9 * steps / max_steps


@pytest.fixture(scope="module")
def empty():
    env, params = jaxsoc.make(EMPTY)
    return LogWrapper(env), params


@pytest.fixture(scope="module")
def short(empty):
    """The same wrapper with episodes truncated at 7 steps."""
    return empty[0], jaxsoc.make(EMPTY, max_steps=7)[1]


@pytest.fixture(scope="module")
def walk():
    from test_vector import WALK  # a toy stochastic env, see tests/test_vector.py

    return LogWrapper(WALK), WALK.default_params()


def mixed_actions(seed: int, n: int = 30) -> list[int]:
    """Solutions interleaved with random actions: successes, truncations and episodes cut short."""
    rng = np.random.default_rng(seed)
    return (SOLUTION + rng.integers(0, 7, 7).tolist() + SOLUTION + rng.integers(0, 7, n).tolist())[:n]


def run(env, params, actions, seed=0):
    """Steps ``env`` from ``reset(key(seed))`` with key ``fold_in(key(seed), t)`` at step ``t``; returns the
    list of ``(obs, state, reward, terminated, truncated, info)``."""
    base = jax.random.key(seed)
    _, state = env.reset(base, params)
    out = []
    for t, action in enumerate(actions):
        result = env.step(jax.random.fold_in(base, t), state, action, params)
        state = result[1]
        out.append(result)
    return out


def hand_count(steps):
    """The statistics LogWrapper should report, counted by hand from unwrapped ``step`` results:
    per step ``(returned_episode, return, length, success)`` of the last finished episode."""
    expected, ret, length, last = [], 0.0, 0, (0.0, 0, False)
    for _, _, reward, terminated, truncated, info in steps:
        ret, length = ret + float(reward), length + 1
        done = bool(terminated) or bool(truncated)
        if done:
            last = (ret, length, bool(info["success"]))
            ret, length = 0.0, 0
        expected.append((done, *last))
    return expected


def test_solved_episode_statistics(empty):
    env, params = empty
    steps = run(env, params, SOLUTION + [C.LEFT])
    infos = [s[-1] for s in steps]
    assert [bool(i["returned_episode"]) for i in infos] == [False] * 4 + [True, False]
    for info in infos[:4]:  # nothing finished yet
        assert float(info["returned_episode_returns"]) == 0.0 and int(info["returned_episode_lengths"]) == 0
    for info in infos[4:]:  # the solved episode, held after the auto-reset
        np.testing.assert_allclose(
            float(info["returned_episode_returns"]), success_return(5, 100), rtol=1e-6, atol=1e-6
        )
        assert int(info["returned_episode_lengths"]) == 5 and bool(info["returned_episode_success"])
    state = steps[-1][1]
    assert isinstance(state, LogState)
    assert int(state.episode_lengths) == 1 and float(state.episode_returns) == 0.0 and int(state.timestep) == 6
    assert [int(i["timestep"]) for i in infos] == [1, 2, 3, 4, 5, 6]
    final = infos[4]["final_state"]  # a LogState around the inner final state, with the episode's totals
    assert isinstance(final, LogState) and int(final.episode_lengths) == 5
    np.testing.assert_allclose(float(final.episode_returns), success_return(5, 100), rtol=1e-6, atol=1e-6)
    assert tuple(np.asarray(final.env_state.agent_pos)) == (3, 3)


def test_truncated_episodes_with_small_max_steps(empty):
    env, _ = empty
    _, params = jaxsoc.make(EMPTY, max_steps=5)
    # episode 1 turns in place until truncation; episode 2 reaches the goal on its 5th = last step,
    # so it is terminated (success) and truncated at once.
    steps = run(env, params, [C.LEFT] * 5 + SOLUTION)
    flags = [(bool(s[3]), bool(s[4])) for s in steps]
    assert flags == [(False, False)] * 4 + [(False, True)] + [(False, False)] * 4 + [(True, True)]
    first, second = steps[4][-1], steps[9][-1]
    assert bool(first["returned_episode"]) and int(first["returned_episode_lengths"]) == 5
    assert float(first["returned_episode_returns"]) == 0.0 and not bool(first["returned_episode_success"])
    assert bool(second["returned_episode"]) and int(second["returned_episode_lengths"]) == 5
    np.testing.assert_allclose(float(second["returned_episode_returns"]), success_return(5, 5), rtol=1e-6, atol=1e-6)
    assert bool(second["returned_episode_success"])
    stacked = jax.tree_util.tree_map(lambda *x: jnp.stack(x), *[s[-1] for s in steps])
    metrics = episode_metrics(stacked)
    assert int(metrics["num_episodes"]) == 2
    np.testing.assert_allclose(float(metrics["return"]), success_return(5, 5) / 2, rtol=1e-6, atol=1e-6)
    assert float(metrics["length"]) == 5.0 and float(metrics["success"]) == 0.5


@pytest.mark.parametrize("which", ["short", "walk"])
def test_statistics_equal_a_hand_count_over_the_unwrapped_env(which, request):
    """Several auto-resets, every step compared: Empty-5x5 with max_steps=7 and mixed actions, and the toy
    ``Walk`` env whose ``step_env`` draws random numbers (the wrapper must pass the inner env its keys)."""
    env, params = request.getfixturevalue(which)
    actions = mixed_actions(seed=42) if which == "short" else [int(a) % 3 for a in mixed_actions(seed=42)]
    wrapped = run(env, params, actions, seed=5)
    inner = run(env.unwrapped, params, actions, seed=5)
    expected = hand_count(inner)
    assert sum(e[0] for e in expected) >= 4 and sum(e[0] and e[3] for e in expected) >= 1  # successes too
    for (obs, state, reward, term, trunc, info), (i_obs, i_state, i_reward, i_term, i_trunc, i_info), exp in zip(
        wrapped, inner, expected
    ):
        # the wrapper is transparent for everything the inner env returns (its own program: floats to rounding)
        assert_trees_match((obs, state.env_state, reward, term, trunc), (i_obs, i_state, i_reward, i_term, i_trunc))
        assert_trees_match(info["final_observation"], i_info["final_observation"])
        assert_trees_match(info["final_state"].env_state, i_info["final_state"])
        done, ret, length, success = exp
        assert bool(info["returned_episode"]) == done
        np.testing.assert_allclose(float(info["returned_episode_returns"]), ret, rtol=1e-6, atol=1e-6)
        assert int(info["returned_episode_lengths"]) == length
        assert bool(info["returned_episode_success"]) == success


def test_wrapping_keeps_the_inner_auto_reset(walk):
    """An outer wrapper must use the inner env's own auto-reset step: with two LogWrappers the inner one's
    statistics (held across resets by its auto-reset) come out exactly as with one."""
    single, params = walk
    double = LogWrapper(single)
    assert double.name == f"LogWrapper(LogWrapper({single.unwrapped.name}))" and double.unwrapped is single.unwrapped
    actions = [a % 3 for a in mixed_actions(seed=3, n=20)]
    for (_, state, *_, info), (_, ref_state, *_, ref_info) in zip(
        run(double, params, actions, seed=1), run(single, params, actions, seed=1)
    ):
        assert_trees_match(state.env_state, ref_state)
        assert_trees_match(info["final_state"].env_state, ref_info["final_state"])
        assert_trees_match({k: info[k] for k in STAT_KEYS}, {k: ref_info[k] for k in STAT_KEYS})


def test_jit_vmap_and_scan_match_the_host_loop(short):
    env, params = short
    num_steps, seeds = 24, [7, 8, 9]
    actions = np.stack([mixed_actions(seed, num_steps) for seed in seeds], axis=1).astype(np.int32)  # [T, N]

    def rollout(keys):
        def body(state, xs):
            step_keys, a = xs
            _, state, reward, _, _, info = jax.vmap(env.step, in_axes=(0, 0, 0, None))(step_keys, state, a, params)
            return state, {k: info[k] for k in (*STAT_KEYS, "timestep")}

        _, state = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
        fold = jax.vmap(jax.vmap(jax.random.fold_in, in_axes=(None, 0)), in_axes=(0, None))
        step_keys = fold(keys, jnp.arange(num_steps)).swapaxes(0, 1)  # [T, N]
        return jax.lax.scan(body, state, (step_keys, jnp.asarray(actions)))

    keys = jnp.stack([jax.random.key(s) for s in seeds])
    state, infos = jax.jit(rollout)(keys)  # infos: [T, N]
    assert infos["timestep"][:, 0].tolist() == list(range(1, num_steps + 1))
    finished = []
    for n, seed in enumerate(seeds):
        host = run(env, params, actions[:, n].tolist(), seed=seed)
        assert_trees_match(jax.tree_util.tree_map(lambda x, n=n: x[n], state), host[-1][1], rtol=1e-6, atol=1e-6)
        for t, step in enumerate(host):
            for k in STAT_KEYS:  # returns may differ in the last bit: max_steps is a constant in the scan
                np.testing.assert_allclose(
                    infos[k][t, n], step[-1][k], rtol=1e-6, atol=1e-6, err_msg=f"{k} world {n} step {t}"
                )
        finished += [e for e in hand_count(host) if e[0]]
    # episode_metrics over the [T, N] stack equals the mean over the episodes counted by hand
    metrics = jax.jit(episode_metrics)(infos)
    assert int(metrics["num_episodes"]) == len(finished) >= 6
    np.testing.assert_allclose(float(metrics["return"]), np.mean([e[1] for e in finished]), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(float(metrics["length"]), np.mean([e[2] for e in finished]), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(float(metrics["success"]), np.mean([e[3] for e in finished]), rtol=1e-6, atol=1e-6)
    assert 0 < float(metrics["success"]) < 1


def test_episode_metrics_averages_only_finished_episodes():
    info = {
        "returned_episode": np.array([[False, True], [True, True], [False, False]]),
        "returned_episode_returns": np.array([[9.0, 0.5], [0.25, 1.0], [np.nan, 7.0]], np.float32),
        "returned_episode_lengths": np.array([[99, 4], [6, 2], [0, 1]], np.int32),
        "returned_episode_success": np.array([[True, True], [False, True], [True, True]]),
    }
    metrics = episode_metrics(info)
    assert int(metrics["num_episodes"]) == 3
    np.testing.assert_allclose(float(metrics["return"]), (0.5 + 0.25 + 1.0) / 3, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(float(metrics["length"]), 4.0, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(float(metrics["success"]), 2 / 3, rtol=1e-6, atol=1e-6)
    vmapped = jax.vmap(episode_metrics)(info)  # per time step
    assert vmapped["num_episodes"].tolist() == [1, 2, 0]
    np.testing.assert_allclose(vmapped["return"], [0.5, 0.625, 0.0], rtol=1e-6, atol=1e-6)


def test_episode_metrics_without_finished_episodes(empty):
    env, params = empty
    _, state = env.reset(jax.random.key(0), params)
    _, _, _, _, _, info = env.step(jax.random.key(0), state, C.LEFT, params)
    for metrics in (episode_metrics(info), jax.jit(episode_metrics)(info)):
        assert int(metrics["num_episodes"]) == 0
        for name in ("return", "length", "success"):
            assert float(metrics[name]) == 0.0  # not NaN
    empty_batch = {
        k: np.zeros((0, 4), bool if k in ("returned_episode", "returned_episode_success") else np.float32)
        for k in STAT_KEYS
    }
    assert float(episode_metrics(empty_batch)["return"]) == 0.0


def test_step_validates_actions_on_the_host_and_stays_jittable(empty):
    env, params = empty
    _, state = env.reset(jax.random.key(0), params)
    key = jax.random.key(1)
    with pytest.raises(ValueError, match="outside Discrete"):
        env.step(key, state, 7, params)
    with pytest.raises(ValueError, match="outside Discrete"):
        env.step(key, state, jnp.int32(-1), params)
    with pytest.raises(TypeError, match="integer"):
        env.step(key, state, 1.0, params)
    with pytest.raises(ValueError, match="shape"):
        env.step(key, state, jnp.array([1, 2]), params)
    with pytest.raises(ValueError, match="PRNG key"):
        env.step(jax.random.split(key, 2), state, 1, params)
    jitted = jax.jit(env.step)(key, state, jnp.int32(C.FORWARD), params)
    assert_trees_match(jitted[:5], env.step(key, state, C.FORWARD, params)[:5])


def test_wrapper_forwards_the_contract(empty):
    logged, params = empty
    inner = logged.unwrapped
    plain = Wrapper(inner)
    assert plain.env is inner and plain.unwrapped is inner and logged.env is inner
    assert plain.name == f"Wrapper({inner.name})" and logged.name == f"LogWrapper({inner.name})"
    assert plain.default_params() == inner.default_params()
    assert plain.action_space(params) == inner.action_space(params)
    assert logged.observation_space(params) == inner.observation_space(params)
    assert logged.mission == inner.mission and plain.stochastic_step == inner.stochastic_step  # attribute access
    with pytest.raises(AttributeError):
        _ = plain.no_such_attribute
    key = jax.random.key(3)
    obs, state = plain.reset(key, params)
    i_obs, i_state = inner.reset(key, params)
    assert_trees_match((obs, state), (i_obs, i_state))
    out = plain.step(key, state, C.FORWARD, params)
    assert_trees_match(out, inner.step(key, i_state, C.FORWARD, params))
    with pytest.raises(TypeError, match="Environment"):
        Wrapper("MiniGrid-Empty-5x5-v0")


def test_render_sees_the_inner_state(empty):
    env, params = empty
    _, state = env.reset(jax.random.key(0), params)
    try:
        expected = np.asarray(env.unwrapped.render(state.env_state, params))
    except (ImportError, NotImplementedError) as error:
        pytest.skip(f"renderer unavailable: {error}")
    np.testing.assert_array_equal(np.asarray(env.render(state, params)), expected)
