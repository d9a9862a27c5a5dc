"""Observation kinds of the grid families (``jaxsoc.envs.gridworld.views``, ``jaxsoc.make(name, observation=kind)``).

- Against minigrid 3.2.0's wrappers: live minigrid episodes (random actions biased to interaction, so keys get
  carried and doors opened) are imported state by state (``import_minigrid``) and every kind's observation of each
  imported state equals, array for array, what the matching wrapper (``FullyObsWrapper``, ``RGBImgPartialObsWrapper``,
  ``RGBImgObsWrapper``, ``OneHotPartialObsWrapper``; no wrapper for ``partial``) returns for the live env.
- The contract through ``make``: reset and auto-resetting steps under ``jit(vmap(...))`` give the default env's
  states, rewards and flags, every observation (``final_observation`` included) is the view of its state and lies in
  ``observation_space``, one world stepped alone equals its row of the batch.
- The registry's instances per kind and the errors (unknown kind, a kind on a social env, bad options).
"""

from __future__ import annotations

import gymnasium as gym
import jax
import jax.numpy as jnp
import minigrid  # noqa: F401  (registers the MiniGrid and BabyAI ids)
import numpy as np
import pytest
from minigrid.core.world_object import Key
from minigrid.wrappers import FullyObsWrapper, OneHotPartialObsWrapper, RGBImgObsWrapper, RGBImgPartialObsWrapper

import jaxsoc
from jaxsoc.bench.jaxpr_walk import jaxpr_stats
from jaxsoc.core import registry
from jaxsoc.envs.gridworld import views

KINDS = views.KINDS
WRAPPERS = {
    "full": FullyObsWrapper,
    "rgb_partial": RGBImgPartialObsWrapper,
    "rgb": RGBImgObsWrapper,
    "one_hot_partial": OneHotPartialObsWrapper,
}
INTERACT = np.array([0.15, 0.15, 0.3, 0.15, 0.1, 0.15])  # left, right, forward, pickup, drop, toggle


def _slow(*values):
    return pytest.param(*values, marks=pytest.mark.slow)


# ---------------------------------------------------------------------------------------------------------
# Against minigrid's wrappers
# ---------------------------------------------------------------------------------------------------------

MINIGRID_CASES = [
    ("MiniGrid-DoorKey-8x8-v0", {}),  # keys carried, doors unlocked and opened
    ("MiniGrid-BlockedUnlockPickup-v0", {}),  # 11 x 6: a transposed full grid or RGB frame would not fit
    ("BabyAI-GoToLocal-v0", {}),
    _slow("MiniGrid-DoorKey-8x8-v0", {"see_through_walls": True}),
    _slow("BabyAI-UnlockPickup-v0", {}),
    _slow("MiniGrid-LavaGapS7-v0", {}),
    _slow("MiniGrid-FourRooms-v0", {}),
]


def _stage(env) -> None:
    """Opens every door of a live minigrid env and puts a green key in the agent's hand (the second episode of each
    rollout starts so, that open doors and the carried object are seen however the random actions go)."""
    u = env.unwrapped
    for obj in u.grid.grid:
        if obj is not None and obj.type == "door":
            obj.is_open, obj.is_locked = True, False
    u.carrying = Key("green")


def _minigrid_rollout(name: str, kwargs: dict, seeds=(0, 1), steps: int = 12):
    """Returns ``(jaxsoc env, states stacked, params, {kind: minigrid images stacked}, minigrid directions)`` after
    reset and after each step of ``seeds`` episodes (all but the first ``_stage``d), every kind taken from
    minigrid's wrapper of the live env."""
    jenv, _ = jaxsoc.make(name)
    states, images, directions = [], {kind: [] for kind in KINDS}, []
    for seed in seeds:
        env = gym.make(name, **kwargs)
        wrappers = {kind: wrapper(env) for kind, wrapper in WRAPPERS.items()}
        obs, _ = env.reset(seed=seed)
        if seed != seeds[0]:
            _stage(env)
            obs = env.unwrapped.gen_obs()
        rng = np.random.default_rng(seed)
        for t in range(steps + 1):
            if t:
                obs, _, terminated, truncated, _ = env.step(int(rng.choice(6, p=INTERACT)))
                if terminated or truncated:
                    break
            state, params = jenv.import_minigrid(env)
            states.append(state)
            images["partial"].append(obs["image"])
            for kind, wrapper in wrappers.items():
                images[kind].append(wrapper.observation(dict(obs))["image"])
            directions.append(obs["direction"])
    stacked = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *states)
    return jenv, stacked, params, {k: np.stack(v) for k, v in images.items()}, np.asarray(directions)


@pytest.mark.parametrize("name, kwargs", MINIGRID_CASES, ids=lambda v: v if isinstance(v, str) else "-".join(v))
def test_every_kind_equals_minigrid_wrapper(name, kwargs):
    jenv, states, params, theirs, directions = _minigrid_rollout(name, kwargs)
    assert params.see_through_walls == bool(kwargs.get("see_through_walls"))
    world = jenv.grid_world(states)
    assert np.any(np.asarray(world.carrying)[:, 0] != 1), "nothing carried"
    assert np.any(theirs["partial"][..., 0] == 0) != bool(kwargs.get("see_through_walls")), "occlusion"
    envs = {kind: jenv.with_observation(kind) for kind in KINDS}

    @jax.jit
    def observe_all(states):
        return {kind: jax.vmap(env.observe, in_axes=(0, None))(states, params) for kind, env in envs.items()}

    ours = observe_all(states)
    for kind in KINDS:
        mine, reference = np.asarray(ours[kind]["image"]), theirs[kind]
        assert mine.dtype == reference.dtype == np.uint8, kind
        assert mine.shape == reference.shape, (kind, mine.shape, reference.shape)
        mismatch = np.argwhere(np.any(mine != reference, axis=tuple(range(2, mine.ndim))).any(axis=1))
        assert mismatch.size == 0, f"{kind}: states {mismatch.ravel().tolist()} differ from minigrid's wrapper"
        np.testing.assert_array_equal(np.asarray(ours[kind]["direction"]), directions)
        space = envs[kind].observation_space(params)
        assert all(space.contains(jax.tree_util.tree_map(lambda x, i=i: x[i], ours[kind])) for i in (0, -1))
    if name.startswith("BabyAI-"):
        for kind in KINDS:  # the mission tokens stay as they are
            np.testing.assert_array_equal(ours[kind]["mission"], ours["partial"]["mission"])


# ---------------------------------------------------------------------------------------------------------
# The contract through make
# ---------------------------------------------------------------------------------------------------------

NUM_WORLDS, NUM_STEPS = 4, 12
CONTRACT_IDS = ["MiniGrid-DoorKey-5x5-v0", _slow("BabyAI-GoToRedBallNoDists-v0")]


def _rollouts(name: str):
    """Returns ``({kind: (env, obs, states, rewards, flags, final observations, final states)}, params)`` of one
    ``jit(vmap(...))`` program running every kind on the same keys and actions (reset, then ``NUM_STEPS`` steps,
    max_steps 6 so that episodes end and auto-reset)."""
    envs = {kind: jaxsoc.make(name, observation=kind, max_steps=6)[0] for kind in KINDS}
    params = jaxsoc.make(name, max_steps=6)[1]

    @jax.jit
    def run(key):
        keys = jax.random.split(key, NUM_WORLDS)
        actions = jax.random.randint(jax.random.fold_in(key, 1), (NUM_STEPS, NUM_WORLDS), 0, 6)
        out = {}
        for kind, env in envs.items():
            obs, state = jax.vmap(env.reset, in_axes=(0, None))(keys, params)

            def body(carry, inputs, env=env):
                obs, state = carry
                t, action = inputs
                step_keys = jax.random.split(jax.random.fold_in(key, t), NUM_WORLDS)
                obs, state, reward, terminated, truncated, info = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
                    step_keys, state, action, params
                )
                record = (obs, state, reward, terminated, truncated, info["final_observation"], info["final_state"])
                return (obs, state), record

            out[kind] = (obs, state, jax.lax.scan(body, (obs, state), (jnp.arange(NUM_STEPS), actions))[1])
        return out

    return envs, params, run(jax.random.key(3))


@pytest.fixture(scope="module", params=CONTRACT_IDS)
def rollouts(request):
    return request.param, *_rollouts(request.param)


def _rows(tree, *index):
    return jax.tree_util.tree_map(lambda x: np.asarray(x)[index], tree)


def test_kinds_keep_the_dynamics_and_observe_their_state(rollouts):
    name, envs, params, out = rollouts
    default_obs, default_state, default_steps = out["partial"]
    assert envs["partial"] is jaxsoc.make(name)[0]
    assert bool(np.any(np.asarray(default_steps[3]) | np.asarray(default_steps[4]))), "no episode ended"
    for kind in KINDS[1:]:
        env = envs[kind]
        assert (
            env.name == envs["partial"].name
            and env.observation_kind == kind
            and env.pooled_resets == envs["partial"].pooled_resets
        )
        obs, state, steps = out[kind]
        same = (state, steps[1:5], steps[6]), (default_state, default_steps[1:5], default_steps[6])
        jax.tree_util.tree_map(np.testing.assert_array_equal, *same)  # states, rewards, flags, final states
        observe = jax.jit(jax.vmap(jax.vmap(env.observe, in_axes=(0, None)), in_axes=(0, None)))
        for got, of_state in ((steps[0], steps[1]), (steps[5], steps[6])):  # observations, final observations
            np.testing.assert_array_equal(got["image"], observe(of_state, params)["image"])
            assert set(got) == set(default_steps[0])
            for key in set(got) - {"image"}:
                np.testing.assert_array_equal(
                    got[key], default_steps[0][key] if got is steps[0] else default_steps[5][key]
                )
        space = env.observation_space(params)
        assert (
            space.contains(_rows(obs, 0))
            and space.contains(_rows(steps[0], -1, 1))
            and space.contains(_rows(steps[5], 2, 3))
        )


def test_one_world_alone_equals_its_batch_row(rollouts):
    """``env.step`` of one world (the public, checked, jitted call) gives the row of ``jit(vmap(env.step))``."""
    name, envs, params, out = rollouts
    for kind in ("rgb",):  # the kind with the most of its own code (one compile more per kind)
        env = envs[kind]
        obs, state, steps = out[kind]
        before = _rows(state, 1)
        key = jax.random.split(jax.random.fold_in(jax.random.key(3), 0), NUM_WORLDS)[1]
        action = jax.random.randint(jax.random.fold_in(jax.random.key(3), 1), (NUM_STEPS, NUM_WORLDS), 0, 6)[0, 1]
        alone = env.step(key, before, action, params)
        np.testing.assert_array_equal(alone[0]["image"], np.asarray(steps[0]["image"])[0, 1])
        jax.tree_util.tree_map(np.testing.assert_array_equal, alone[1], _rows(steps[1], 0, 1))


# ---------------------------------------------------------------------------------------------------------
# Registry, options and errors
# ---------------------------------------------------------------------------------------------------------


def test_make_caches_one_instance_per_kind_and_keeps_overrides():
    name = "MiniGrid-Empty-5x5-v0"
    plain, _ = jaxsoc.make(name)
    assert jaxsoc.make(name, observation="default")[0] is plain
    assert jaxsoc.make(name, observation="partial")[0] is plain
    rgb, params = jaxsoc.make(name, observation="rgb", see_through_walls=True, max_steps=9)
    assert rgb is jaxsoc.make(name, observation="rgb")[0] and rgb is not plain and rgb.env is plain
    assert params.see_through_walls and params.max_steps == 9
    assert rgb.observation_space(params)["image"].shape == (40, 40, 3)
    assert rgb.with_observation("full").observation_kind == "full" and rgb.with_observation("default") is plain
    assert plain.observation_kinds() == rgb.observation_kinds() == KINDS
    big = plain.with_observation("rgb_partial", tile_size=4)
    assert big.tile_size == 4 and big.observation_space()["image"].shape == (28, 28, 3)
    assert jaxsoc.make("BabyAI-GoToLocal-v0", observation="one_hot_partial")[0].observation_space()["image"].shape == (
        7,
        7,
        20,
    )


def test_unregister_drops_the_kinds_too():
    name = "Test-ObservationKinds-v0"
    registry.register(name, lambda: jaxsoc.make("MiniGrid-Empty-5x5-v0")[0])
    try:
        first = jaxsoc.make(name, observation="full")[0]
        assert jaxsoc.make(name, observation="full")[0] is first
    finally:
        registry.unregister(name)
    assert not [key for key in registry._INSTANCES if isinstance(key, tuple) and key[0] == name]


@pytest.mark.parametrize(
    "name, kind, error, match",
    [
        ("MiniGrid-DoorKey-5x5-v0", "pixels", ValueError, r"unknown observation 'pixels'.*'rgb_partial', 'rgb'"),
        ("BabyAI-GoToLocal-v0", "fully_observable", ValueError, r"BabyAI-GoToLocal-v0: unknown observation.*'full'"),
        ("CHAIC-Normal-Helper-v0", "rgb", ValueError, r"CHAIC-Normal-Helper-v0: .*only its default observation"),
        ("CHAIC-Normal-v0", "full", ValueError, r"CHAIC-Normal-v0: .*only its default observation"),  # multi-agent
        ("MiniGrid-DoorKey-5x5-v0", 3, TypeError, "observation must be a string"),
    ],
)
def test_make_rejects_kinds_an_env_does_not_offer(name, kind, error, match):
    with pytest.raises(error, match=match):
        jaxsoc.make(name, observation=kind)


def test_social_envs_keep_their_default_and_base_class_errors():
    env, _ = jaxsoc.make("CHAIC-Normal-Helper-v0")
    assert jaxsoc.make("CHAIC-Normal-Helper-v0", observation="default")[0] is env
    assert env.observation_kinds() == ("default",) and env.with_observation("default") is env
    with pytest.raises(ValueError, match="offers only its default observation"):
        env.with_observation("rgb")
    with pytest.raises(TypeError, match="takes no options"):
        env.with_observation("default", tile_size=8)
    multi, _ = jaxsoc.make("CHAIC-Normal-v0")
    assert jaxsoc.make("CHAIC-Normal-v0", observation="default")[0] is multi


def test_bad_tile_sizes():
    env, _ = jaxsoc.make("MiniGrid-Empty-5x5-v0")
    with pytest.raises(TypeError, match="tile_size applies to the pixel observations"):
        env.with_observation("one_hot_partial", tile_size=8)
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match="tile_size must be a positive int"):
            env.with_observation("rgb", tile_size=bad)


def test_views_are_small_programs():
    """Each kind adds a handful of equations to one observation (vectorised ops, no per-cell unrolling)."""
    for name in ("MiniGrid-DoorKey-8x8-v0", "BabyAI-GoToLocal-v0"):
        env, _ = jaxsoc.make(name)
        live = gym.make(name)
        live.reset(seed=0)
        state, params = env.import_minigrid(live)
        base = jaxpr_stats(jax.make_jaxpr(env.observe)(state, params))
        for kind in KINDS[1:]:
            view = env.with_observation(kind)
            stats = jaxpr_stats(jax.make_jaxpr(view.observe)(state, params))
            limit = 200 if kind in views.PIXEL_KINDS else 30  # measured: 166 (rgb), 110, 19 (full), 23
            assert stats["eqns"] - base["eqns"] <= limit, (name, kind, base["eqns"], stats["eqns"])
            assert stats["serial_iterations"] == base["serial_iterations"], (name, kind)  # no loops added
