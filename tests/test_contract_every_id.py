"""The environment contract on every registered single-agent id, in CI: one trace per id, nothing compiled.

For each id, ``jax.make_jaxpr`` of a reset followed by a step (the step holds the auto-reset, so the reset is in
it twice) gives the abstract observation, state and outputs; the test checks them against the spaces and the
contract (observation keys, shapes and dtypes; the step returns the state it was given, leaf for leaf, so a
``scan`` carries it and a jitted step never retraces; reward ``float32``, flags ``bool``, the ``info`` keys) and
walks the jaxpr for loops with a data-dependent trip count (``test_no_dynamic_loops.dynamic_whiles``). Tracing
a BabyAI level costs about half a second, so the grid ids (minigrid's 82 and 96, and the paper's PutNext) all
run in CI; the social families' ids run one view of each kind in CI (the rest share its code and differ in task
data; ``-m slow`` runs them). Values are checked by the concrete contract (tests/test_gridworld_engine.py, three
ids in CI and every id with ``-m slow``) and by the differential modules.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from excalibur_scenes import with_small_banks
from minigrid_wfc_reference import stand_in_layouts
from test_no_dynamic_loops import dynamic_whiles

import jaxsoc
from jaxsoc.core import spaces
from jaxsoc.envs.babyai.levels import ALIASES
from jaxsoc.envs.gridworld.wfc import ENVS as WFC_ENVS

#: the social views traced in CI, one of each kind
VIEWS = ("-Helper-v0", "-Options-v0")  # CHAIC's single-agent views
CI_SOCIAL = {"WatchAndHelp-Helper-v0", "CHAIC-Normal-Helper-v0", "CHAIC-Normal-Options-v0", "EXCALIBUR-v0"}


def _ids() -> list:
    """Every single-agent id but the aliases; the social ones outside ``CI_SOCIAL`` marked ``slow``."""
    out = []
    for name in jaxsoc.registered_envs():
        two_agent = name == "WatchAndHelp-v0" or (name.startswith("CHAIC-") and not name.endswith(VIEWS))
        if name in ALIASES or two_agent:
            continue
        grid = name.startswith(("MiniGrid-", "BabyAI-"))
        out.append(name if grid or name in CI_SOCIAL else pytest.param(name, marks=pytest.mark.slow))
    return out


def _make(name: str):
    if name.startswith("EXCALIBUR-"):  # a bank of 24 houses in place of the 512 of the train split
        with with_small_banks():
            return jaxsoc.make(name)
    env, params = jaxsoc.make(name)
    if name in WFC_ENVS:  # minigrid's wheel has no WFC pattern images to build the bank from
        env.set_layouts(stand_in_layouts())
    return env, params


def _check_in_space(name: str, what: str, obs, space) -> None:
    assert isinstance(obs, dict) and obs.keys() == space.spaces.keys(), f"{name} {what}: keys {sorted(obs)}"
    for key, sub in space.spaces.items():
        value = obs[key]
        if isinstance(sub, spaces.Dict):
            _check_in_space(name, f"{what}[{key!r}]", value, sub)
            continue
        assert value.shape == tuple(sub.shape), f"{name} {what}[{key!r}]: shape {value.shape}, space {sub.shape}"
        if isinstance(sub, spaces.Discrete):
            assert jnp.issubdtype(value.dtype, jnp.integer), f"{name} {what}[{key!r}]: dtype {value.dtype}"
        else:
            assert value.dtype == sub.dtype, f"{name} {what}[{key!r}]: dtype {value.dtype}, space {sub.dtype}"


def _same_avals(a, b) -> bool:
    return jax.tree.structure(a) == jax.tree.structure(b) and all(
        x.shape == y.shape and x.dtype == y.dtype for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b))
    )


def test_every_id_is_traced_or_left_out_for_a_stated_reason():
    traced = {p if isinstance(p, str) else p.values[0] for p in _ids()}
    left_out = set(jaxsoc.registered_envs()) - traced
    # the aliases (their target is traced) and the two-agent worlds (tests/test_household_world.py and
    # tests/test_chaic_env.py hold their contract)
    two_agent = {n for n in left_out if n == "WatchAndHelp-v0" or n.startswith("CHAIC-")}
    assert left_out == set(ALIASES) | two_agent
    assert all(not n.endswith(("-Helper-v0", "-Options-v0")) for n in two_agent)


@pytest.mark.parametrize("name", _ids())
def test_contract_when_traced(name):
    check_traced_contract(name, *_make(name))


def test_the_traced_contract_catches_a_broken_env():
    """A step whose state changes dtype (a jitted step would retrace; a scan would not carry it) is refused."""
    env, params = jaxsoc.make("MiniGrid-Empty-5x5-v0")

    class Broken(type(env)):
        def step_env(self, key, state, action, params):
            obs, state, *rest = super().step_env(key, state, action, params)
            return (obs, state.replace(step_count=state.step_count.astype(jnp.float32)), *rest)

    broken = Broken(size=params.width)
    with pytest.raises(AssertionError, match="other shapes or dtypes"):
        check_traced_contract("Broken", broken, params)


def check_traced_contract(name: str, env, params) -> None:
    """Raises ``AssertionError`` naming ``name`` where one reset and one step, traced, break the contract (module
    docstring)."""
    key = jax.eval_shape(lambda: jax.random.key(0))
    space = env.observation_space(params)
    num_actions = env.action_space(params).n

    def episode(k):
        obs, state = env.reset(k, params)
        return (obs, state), env.step(k, state, jnp.int32(num_actions - 1), params)

    jaxpr, ((obs, state), (obs2, state2, reward, terminated, truncated, info)) = jax.make_jaxpr(
        episode, return_shape=True
    )(key)
    _check_in_space(name, "reset", obs, space)
    _check_in_space(name, "step", obs2, space)
    assert _same_avals(state, state2), f"{name}: the step returns a state of other shapes or dtypes"
    assert reward.shape == () and reward.dtype == jnp.float32, f"{name}: reward {reward}"
    assert terminated.dtype == jnp.bool_ and truncated.dtype == jnp.bool_ and terminated.shape == ()
    assert {"success", "episode_steps", "final_observation", "final_state"} <= info.keys(), sorted(info)
    assert info["success"].dtype == jnp.bool_ and _same_avals(info["final_state"], state)
    found = dynamic_whiles(jaxpr)
    assert not found, f"{name}: a loop with a data-dependent trip count in reset or step"
