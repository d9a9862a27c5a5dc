"""Differential tests: jaxsoc's grid engine against minigrid 3.2.0, step for step.

Each episode starts from a minigrid state imported with ``compat.from_minigrid``; the same actions are
replayed through minigrid and through one jitted, vmapped ``lax.scan`` of ``step_env``, and every step's
observation, direction, reward, termination, truncation, agent position, carried object and full grid
must agree. Half the episodes get a short random ``max_steps`` so truncation and the reward formula are
exercised on every env (``max_steps`` is vmapped as data).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from minigrid_reference import INTERACT, PLANS, UNIFORM, make_reference, record_episode, scan_replayer, solve

import jaxsoc
from jaxsoc.envs.gridworld.classic import CLASSIC_ENVS
from jaxsoc.envs.gridworld.compat import from_minigrid
from jaxsoc.envs.gridworld.env import GridEnvironment

# (env, compared steps, steps per episode at most): > 20,000 compared steps per run in all.
CASES = [(name, 1400, 200) for name in CLASSIC_ENVS] + [("Playground", 3000, 250), ("LavaRoom", 300, 40)]
# envs where random play reaches the task's end (success, or lava) within the budget
ENDS_BY_TASK = {"MiniGrid-Empty-5x5-v0", "MiniGrid-Empty-6x6-v0", "Playground", "LavaRoom"}


class _Reach(GridEnvironment):
    """An env whose task is minigrid's default (goal/lava), for imported custom grids."""

    def generate(self, key, params):  # pragma: no cover - states are always imported here
        raise AssertionError("imported states only")


def _env_for(name: str) -> GridEnvironment:
    return jaxsoc.make(name)[0] if name in CLASSIC_ENVS else _Reach()


@functools.cache
def _replayer(name: str, num_steps: int):
    return scan_replayer(_env_for(name))


def _stack(trees):
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *trees)


@pytest.mark.parametrize("name,target_steps,num_steps", CASES)
def test_matches_minigrid_step_for_step(name, target_steps, num_steps):
    states, params, actions, records = [], [], [], []
    seed, total = 0, 0
    while total < target_steps:
        rng = np.random.default_rng(1000 + seed)
        ref = make_reference(name)
        ref.reset(seed=seed)
        if seed % 2:
            ref.unwrapped.max_steps = int(rng.integers(5, 60))
        state, param = from_minigrid(ref)
        acts = rng.choice(7, size=num_steps, p=INTERACT if seed % 3 else UNIFORM).astype(np.int32)
        states.append(state)
        params.append(param)
        actions.append(acts)
        records.append(record_episode(ref, acts))
        total += records[-1]["steps"]
        seed += 1
    # pad the batch to a multiple of 8 episodes so few shapes are compiled
    while len(states) % 8:
        states.append(states[-1])
        params.append(params[-1])
        actions.append(actions[-1])

    outs = _replayer(name, num_steps)(_stack(states), jnp.asarray(np.stack(actions)), _stack(params))
    outs = [np.asarray(o) for o in outs]
    fields = ("image", "direction", "reward", "terminated", "truncated", "pos", "carrying", "grid")
    compared = 0
    for seed, rec in enumerate(records):
        n = rec["steps"]
        compared += n
        for field, ours in zip(fields, outs):
            mine, theirs = ours[seed, :n], rec[field]
            exact = (mine != theirs).reshape(n, -1).any(axis=1)
            bad = np.abs(mine - theirs) > 1e-6 if field == "reward" else exact
            if bad.any():
                t = int(np.argmax(bad))
                pytest.fail(
                    f"{name} seed {seed}: {field} differs first at step {t} (action {actions[seed][t]}):\n"
                    f"jaxsoc={mine[t]!r}\nminigrid={theirs[t]!r}"
                )
    assert compared >= target_steps
    assert any(rec["truncated"][-1] for rec in records), f"{name}: truncation untested"
    if name in ENDS_BY_TASK:
        assert any(rec["terminated"][-1] for rec in records), f"{name}: no episode reached the task's end"


@pytest.mark.parametrize("name", sorted(PLANS))
def test_scripted_solutions_match_minigrid(name):
    """Goal-directed episodes reach each task's success, so its reward rule is compared too."""
    states, params, actions, records = [], [], [], []
    for seed in range(8):
        planner = make_reference(name)
        planner.reset(seed=seed)
        acts = solve(planner, PLANS[name])
        ref = make_reference(name)
        ref.reset(seed=seed)
        state, param = from_minigrid(ref)
        states.append(state)
        params.append(param)
        actions.append(np.pad(acts, (0, 200 - len(acts)), constant_values=6))
        records.append(record_episode(ref, acts))
    outs = _replayer(name, 200)(_stack(states), jnp.asarray(np.stack(actions)), _stack(params))
    rewards, terminated = np.asarray(outs[2]), np.asarray(outs[3])
    successes = 0
    for seed, rec in enumerate(records):
        n = rec["steps"]
        np.testing.assert_allclose(rewards[seed, :n], rec["reward"], atol=1e-6)
        np.testing.assert_array_equal(terminated[seed, :n], rec["terminated"])
        np.testing.assert_array_equal(np.asarray(outs[0])[seed, :n], rec["image"])
        successes += bool(rec["terminated"][-1] and rec["reward"][-1] > 0)
    assert successes >= 6, f"{name}: the scripted plan succeeded in only {successes}/8 episodes"
