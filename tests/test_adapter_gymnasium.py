"""The single-world gymnasium adapter (``jaxsoc.core.adapters.gymnasium``): gymnasium's ``check_env`` without a
warning on three ids per family, ``gymnasium.make("jaxsoc/<id>")`` and its errors, equality with a direct JAX
rollout, the text mission against minigrid's string, rendering and input checks.

CI runs the MiniGrid and BabyAI ids and CHAIC's helper view; the other social views (30-90 s of CPU each:
compiling, EXCALIBUR's house bank) are ``slow``."""

from __future__ import annotations

import importlib
import sys
import warnings

import gymnasium
import jax
import numpy as np
import pytest
from babyai_reference import make_level
from gymnasium.utils.env_checker import check_env, data_equivalence
from tiers import ci_subset

import jaxsoc
from jaxsoc.core.adapters import gymnasium as adapter
from jaxsoc.core.adapters.gymnasium import GymnasiumEnv, register_gymnasium_ids
from jaxsoc.core.registry import register, unregister
from jaxsoc.core.wrappers import LogWrapper, Wrapper
from jaxsoc.envs.babyai import language
from jaxsoc.envs.babyai.compat import from_minigrid
from jaxsoc.envs.babyai.env import BabyAIEnvironment, observe_babyai

GRID_IDS = [
    "MiniGrid-Empty-5x5-v0",
    "MiniGrid-DoorKey-5x5-v0",
    "MiniGrid-Fetch-5x5-N2-v0",
    "BabyAI-GoToLocal-v0",
    "BabyAI-PickupLoc-v0",
    "BabyAI-PutNextLocal-v0",
]
#: the single-agent views of the social families; CI checks the cheapest to compile
SOCIAL_IDS = [
    "EXCALIBUR-v0",
    "EXCALIBUR-QA-v0",
    "EXCALIBUR-Novelty-v0",
    "CHAIC-Normal-Helper-v0",
    "CHAIC-Normal-Options-v0",
    "CHAIC-HighTarget-Helper-v0",
    "WatchAndHelp-Helper-v0",
]
#: CI checks CHAIC's helper (about 30 s of CPU, half the module); WatchAndHelp's helper (23 s to build, then compiling)
#: and EXCALIBUR (80 s: its first make builds the house bank) would take the module past a minute
CI_SOCIAL = ["CHAIC-Normal-Helper-v0"]


def checked(gym_id: str, **kwargs) -> gymnasium.Env:
    """Returns ``gymnasium.make(gym_id, **kwargs)`` after gymnasium's ``check_env`` ran on it with every warning
    an error (``check_env`` also makes the id again with each render mode and closes it twice)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env = gymnasium.make(gym_id, **kwargs)
        check_env(env.unwrapped)
    return env


@pytest.mark.parametrize("name", GRID_IDS)
def test_check_env_without_warnings_grid_and_babyai(name):
    env = checked(f"jaxsoc/{name}")
    assert env.spec.id == f"jaxsoc/{name}" and env.spec.entry_point == adapter.ENTRY_POINT
    assert env.metadata["render_fps"] == adapter.RENDER_FPS and env.metadata["render_modes"] == ["rgb_array"]
    obs, info = env.reset(seed=0)
    assert info == {} and isinstance(obs["mission"], str) and obs["mission"]
    assert isinstance(obs["direction"], np.int64) and obs["direction"] in env.observation_space["direction"]
    assert obs["image"].dtype == np.uint8 and obs["image"].shape == (7, 7, 3)
    assert isinstance(env.observation_space["mission"], gymnasium.spaces.Text)
    mission = obs["mission"]
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    assert obs["mission"] == mission  # fixed for the episode
    assert type(reward) is float and type(terminated) is bool and type(truncated) is bool
    assert {"success", "episode_steps"} <= set(info) and int(info["episode_steps"]) == 1


@pytest.mark.parametrize("name", ci_subset(SOCIAL_IDS, CI_SOCIAL))
def test_check_env_without_warnings_social_views(name):
    env = checked(f"jaxsoc/{name}")
    inner, params = jaxsoc.make(name)
    assert env.unwrapped.mission == "tokens"  # no text mission: the observation is jaxsoc's own
    assert env.observation_space.keys() == inner.observation_space(params).spaces.keys()
    assert env.observation_space.contains(env.reset(seed=1)[0])


def test_check_env_with_token_missions():
    env = checked("jaxsoc/BabyAI-GoToLocal-v0", mission="tokens")
    space = env.observation_space["mission"]
    assert space == gymnasium.spaces.Box(0, len(language.VOCAB) - 1, (72,), np.int32)
    tokens = env.reset(seed=5)[0]["mission"]
    text = gymnasium.make("jaxsoc/BabyAI-GoToLocal-v0").reset(seed=5)[0]["mission"]
    assert tokens.dtype == np.int32 and language.decode(tokens) == text  # same seed, same level


def test_registry_and_errors_of_make():
    ids = {spec_id for spec_id in gymnasium.envs.registry if spec_id.startswith("jaxsoc/")}
    assert ids == {f"jaxsoc/{name}" for name in jaxsoc.registered_envs()}
    assert register_gymnasium_ids() == []  # idempotent
    with pytest.raises(gymnasium.error.NameNotFound, match="BabyAI-GoToLocal"):
        gymnasium.make("jaxsoc/BabyAI-GoToLcal-v0")
    with pytest.raises(gymnasium.error.VersionNotFound):
        gymnasium.make("jaxsoc/BabyAI-GoToLocal-v7")
    with pytest.raises(KeyError, match="unknown environment 'BabyAI-GoToLcal-v0'"):
        GymnasiumEnv("BabyAI-GoToLcal-v0")
    # a multi-agent world is refused with its single-agent views
    with pytest.raises(
        TypeError, match="CHAIC-Normal-v0.*jaxsoc/CHAIC-Normal-Helper-v0, jaxsoc/CHAIC-Normal-Options-v0"
    ):
        gymnasium.make("jaxsoc/CHAIC-Normal-v0")
    with pytest.raises(TypeError, match="unknown params"):
        gymnasium.make("jaxsoc/MiniGrid-Empty-5x5-v0", max_step=3)
    with pytest.raises(ValueError, match="render_mode"):
        GymnasiumEnv("MiniGrid-Empty-5x5-v0", render_mode="human")
    with pytest.raises(ValueError, match="mission"):
        GymnasiumEnv("MiniGrid-Empty-5x5-v0", mission="words")
    env, params = jaxsoc.make("MiniGrid-Empty-5x5-v0")
    with pytest.raises(TypeError, match="need an env id"):
        GymnasiumEnv(env, max_steps=3)
    # make's keywords pass through; the module path in the id imports the module first
    made = gymnasium.make("jaxsoc.core.adapters.gymnasium:jaxsoc/MiniGrid-Empty-5x5-v0", max_steps=7)
    assert made.unwrapped.params.max_steps == 7 and made.spec.kwargs["max_steps"] == 7


def test_ids_registered_later_are_added():
    register("Test-Empty-v0", lambda: jaxsoc.make("MiniGrid-Empty-5x5-v0")[0])
    try:
        assert register_gymnasium_ids() == ["jaxsoc/Test-Empty-v0"]
        assert gymnasium.make("jaxsoc/Test-Empty-v0").reset(seed=0)[0]["mission"] == "get to the green goal square"
    finally:
        unregister("Test-Empty-v0")
        del gymnasium.envs.registry["jaxsoc/Test-Empty-v0"]


def test_equals_a_direct_jax_rollout_without_auto_reset():
    """The documented key stream reproduces the adapter with env.reset/env.step; the step that ends an episode
    returns that episode's last observation (gymnasium has no auto-reset), not the next episode's first."""
    gym_env = GymnasiumEnv("MiniGrid-DoorKey-5x5-v0", mission="tokens", max_steps=6)
    env, params = gym_env.env, gym_env.params
    actions = np.random.default_rng(0).integers(0, 7, 6)
    obs, _ = gym_env.reset(seed=9)
    stream, key = jax.random.split(jax.random.key(9))
    j_obs, state = env.reset(key, params)
    assert data_equivalence(obs, _as_gym(j_obs), exact=True)
    for t, a in enumerate(actions):
        obs, reward, terminated, truncated, info = gym_env.step(int(a))
        stream, key = jax.random.split(stream)
        _, state, j_reward, j_term, j_trunc, j_info = env.step(key, state, np.int32(a), params)
        assert data_equivalence(obs, _as_gym(j_info["final_observation"]), exact=True)
        state = j_info["final_state"]
        assert reward == float(j_reward) and terminated == bool(j_term) and truncated == bool(j_trunc)
        assert info == {"success": bool(j_info["success"]), "episode_steps": t + 1}
    assert truncated and not terminated
    np.testing.assert_array_equal(gym_env.unwrapped._state.agent_pos, np.asarray(state.agent_pos))


def _as_gym(obs):
    return {k: np.int64(v) if k == "direction" else np.asarray(v) for k, v in obs.items()}


class ImportedLevel(BabyAIEnvironment):
    """A BabyAI env whose every reset is one level imported from minigrid (``compat.from_minigrid``)."""

    def __init__(self, state, params):
        super().__init__("ImportedLevel", generator=None, params=params)
        self.level = state

    def reset_env(self, key, params):
        return observe_babyai(self.level, params), self.level


@pytest.mark.parametrize("name", ["GoToLocal", "PutNextLocal", "SynthLoc"])
def test_text_mission_equals_minigrid(name):
    for seed in range(2):
        ref = make_level(name, seed)
        gym_env = GymnasiumEnv(ImportedLevel(*from_minigrid(ref)))
        obs, _ = gym_env.reset(seed=0)
        assert obs["mission"] == ref.unwrapped.mission and obs["mission"] in gym_env.observation_space["mission"]
    # a grid task whose jaxsoc observation has no mission gets minigrid's
    reference = gymnasium.make("MiniGrid-Empty-5x5-v0").reset(seed=0)[0]["mission"]
    assert GymnasiumEnv("MiniGrid-Empty-5x5-v0").reset(seed=0)[0]["mission"] == reference


class Dimmed(Wrapper):
    """An observation wrapper that keeps the inner env's states (as the grid families' observation views do)."""

    def reset_env(self, key, params):
        obs, state = self._env.reset_env(key, params)
        return dict(obs, image=obs["image"] // 2), state

    def step_env(self, key, state, action, params):
        obs, state, reward, terminated, truncated, info = self._env.step_env(key, state, action, params)
        return dict(obs, image=obs["image"] // 2), state, reward, terminated, truncated, info


def test_text_mission_through_wrappers():
    """A wrapper that keeps the inner states keeps the text mission; LogWrapper (states of its own) gets tokens."""
    env, params = jaxsoc.make("MiniGrid-Fetch-5x5-N2-v0")
    plain = GymnasiumEnv(env).reset(seed=2)[0]
    dimmed = GymnasiumEnv(Dimmed(env))
    obs, _ = dimmed.reset(seed=2)
    assert dimmed.mission == "text" and obs["mission"] == plain["mission"]
    np.testing.assert_array_equal(obs["image"], plain["image"] // 2)
    logged = GymnasiumEnv(LogWrapper(env))
    assert logged.mission == "tokens" and isinstance(logged.observation_space["mission"], gymnasium.spaces.Box)
    with pytest.raises(ValueError, match="no text mission"):
        GymnasiumEnv(LogWrapper(env), mission="text")


def test_seeds_render_and_input_checks():
    env = GymnasiumEnv("MiniGrid-DoorKey-5x5-v0")
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    first, _ = env.reset(seed=3)
    second, _ = env.reset()
    assert not np.array_equal(first["image"], second["image"]) or first["direction"] != second["direction"]
    assert data_equivalence(env.reset(seed=3)[0], first, exact=True)
    unseeded = GymnasiumEnv("MiniGrid-DoorKey-5x5-v0")
    unseeded.reset()  # the first reset draws its seed from np_random
    for bad in (-1, 2**32, 1.5):
        with pytest.raises(ValueError, match=r"\[0, 2\*\*32\)"):
            env.reset(seed=bad)
    with pytest.raises(ValueError, match="unsupported reset options"):
        env.reset(options={"difficulty": 2})
    with pytest.raises(ValueError, match=r"outside Discrete\(7\)"):
        env.step(7)
    with pytest.raises(TypeError, match="integer"):
        env.step(1.0)
    with pytest.raises(TypeError, match="integer"):
        env.step(True)
    with pytest.raises(ValueError, match="one integer"):
        env.step(np.array([1, 2]))
    for action in (2, np.int64(2), np.int32(2), jax.numpy.int32(2), np.array(2)):
        env.step(action)
    # returned arrays are fresh: writing into one leaves the next reset alone
    first["image"][:] = 0
    assert env.reset(seed=3)[0]["image"].any()

    with pytest.warns(UserWarning, match="render_mode"):
        assert env.render() is None
    rendering = GymnasiumEnv("MiniGrid-DoorKey-5x5-v0", render_mode="rgb_array")
    rendering.reset(seed=3)
    frame = rendering.render()
    assert frame.dtype == np.uint8 and frame.shape == (160, 160, 3)
    np.testing.assert_array_equal(frame, np.asarray(rendering.env.render(rendering._state, rendering.params)))


def test_missing_gymnasium_raises_a_helpful_import_error(monkeypatch):
    for name in [m for m in sys.modules if m == "gymnasium" or m.startswith("gymnasium.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, "jaxsoc.core.adapters.gymnasium")
    with pytest.raises(ImportError, match=r"pip install 'jaxsoc\[gymnasium\]'"):
        importlib.import_module("jaxsoc.core.adapters.gymnasium")
