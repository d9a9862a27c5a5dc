"""Coverage of minigrid 3.2.0's registry: every ``MiniGrid-*`` and ``BabyAI-*`` id it registers is registered by
jaxsoc, listed in docs/registry.md (with the coverage line; ``scripts/registry_table.py`` writes it), and imported by
``jaxsoc.compat.from_minigrid`` with the same observation and mission text at reset. The per-family test modules
compare the dynamics step for step and the generators by distribution; this one lists minigrid's registry, so a new
minigrid id fails it."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from types import SimpleNamespace

import gymnasium as gym
import jax
import minigrid  # noqa: F401  (registers the ids)
import numpy as np
import pytest
from minigrid_wfc_reference import NO_PATTERNS, minigrid_reads_patterns, real_patterns_dir
from tiers import first_of_each

import jaxsoc
from jaxsoc.compat import from_minigrid, minigrid_env_id
from jaxsoc.envs import LEVELS
from jaxsoc.envs.babyai import ALIASES
from jaxsoc.envs.babyai.env import observe_babyai
from jaxsoc.envs.babyai.minigrid_levels import PUTNEXT_ICLR19_ID
from jaxsoc.envs.gridworld.observation import observe

REGISTRY_PAGE = Path(__file__).resolve().parents[1] / "docs" / "registry.md"
# minigrid's own ids (the tests' re-creation of the ICLR19 PutNext level, registered on first use, is not one)
MINIGRID_IDS = sorted(
    name for name in gym.registry if name.startswith(("MiniGrid-", "BabyAI-")) and name != PUTNEXT_ICLR19_ID
)


def test_minigrid_registers_the_ids_the_issue_counts():
    assert len([n for n in MINIGRID_IDS if n.startswith("MiniGrid-")]) == 82
    assert len([n for n in MINIGRID_IDS if n.startswith("BabyAI-")]) == 96


def test_every_minigrid_id_is_registered():
    missing = sorted(set(MINIGRID_IDS) - set(jaxsoc.registered_envs()))
    assert not missing, f"{len(missing)} minigrid ids are not registered: {missing}"


def test_registry_page_lists_every_id_and_states_the_coverage():
    text = REGISTRY_PAGE.read_text()
    absent = [name for name in MINIGRID_IDS if f"`{name}`" not in text]
    assert not absent, f"docs/registry.md's table lacks {absent}"
    mini = sum(n.startswith("MiniGrid-") for n in MINIGRID_IDS)
    baby = len(MINIGRID_IDS) - mini
    ours = len(set(MINIGRID_IDS) & set(jaxsoc.registered_envs()))
    line = f"minigrid 3.2.0 registers {mini} `MiniGrid-*` and {baby} `BabyAI-*` ids; jaxsoc registers {ours} of them"
    assert line in text, f"docs/registry.md's coverage line should read: {line!r}"


@functools.cache
def _observe(params):
    return jax.jit(lambda state: observe(state, params)["image"])


def _import(name: str, seed: int):
    if name.startswith("MiniGrid-WFC-"):  # minigrid's wheel has no pattern images: read the real ones elsewhere
        folder = real_patterns_dir()
        if folder is None:
            pytest.skip(NO_PATTERNS)
        with minigrid_reads_patterns(folder):
            ref = gym.make(name)
    else:
        ref = gym.make(name)
    obs, _ = ref.reset(seed=seed)
    if name.endswith("Carrying-v0"):  # minigrid's reset observation predates handing the agent its object
        assert obs["image"][3, 6, 0] == 1 and ref.unwrapped.carrying is not None
        obs = ref.unwrapped.gen_obs()
    env, state, params = from_minigrid(ref)
    return ref, obs, env, state, params


def _generator(name: str) -> str:
    """Returns what generates the id ``name``'s levels: minigrid's class for a ``MiniGrid-*`` id, jaxsoc's level
    module for a ``BabyAI-*`` one (minigrid gives each BabyAI level a class of its own)."""
    if name.startswith("MiniGrid-"):
        return str(gym.registry[name].entry_point)
    return LEVELS[ALIASES.get(name, name)][0].attempt.__module__


# CI imports the first id of each generator (39 of 178; ``-m slow`` every id: each compiles its own reset)
@pytest.mark.parametrize("name", first_of_each(MINIGRID_IDS, _generator))
def test_compat_imports_the_reset_state_of_every_id(name):
    ref, obs, env, state, params = _import(name, seed=3)
    assert env is jaxsoc.make(name)[0]
    world = getattr(state, "world", state)
    np.testing.assert_array_equal(np.asarray(_observe(params)(world)), obs["image"])
    assert int(world.agent_dir) == obs["direction"]
    assert env.mission_text(state) == ref.unwrapped.mission
    full = env.observe(state, params) if hasattr(env, "observe") else observe_babyai(state, params)
    assert env.observation_space(params).contains(jax.device_get(full))


def test_compat_needs_a_gymnasium_spec():
    with pytest.raises(ValueError, match="gymnasium.make"):
        minigrid_env_id(object())
    unknown = SimpleNamespace(spec=SimpleNamespace(id="MiniGrid-Nonexistent-v0"))
    with pytest.raises(KeyError, match="unknown environment"):
        from_minigrid(unknown)


def test_registry_page_table_rows_name_registered_ids():
    table = REGISTRY_PAGE.read_text().split("<!-- registry-table:begin -->")[1].split("<!-- registry-table:end -->")[0]
    rows = re.findall(r"^\| `((?:MiniGrid|BabyAI)-[^`]+)` \|", table, flags=re.M)
    assert sorted(rows) == MINIGRID_IDS
