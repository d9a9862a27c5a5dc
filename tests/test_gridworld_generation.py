"""Level generation: jaxsoc's on-device generators against minigrid's, by distribution.

The random streams differ, so states are compared by the distributions of their features (agent pose,
position and colour of each object kind) over seeded samples of both, with a chi-square homogeneity test
per feature; plus the invariants minigrid's rejection samplers guarantee.
"""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest
from minigrid_reference import make_reference

import jaxsoc
from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld.compat import from_minigrid

RANDOM_ENVS = [
    "MiniGrid-DoorKey-5x5-v0",
    "MiniGrid-DoorKey-8x8-v0",
    "MiniGrid-FourRooms-v0",
    "MiniGrid-Unlock-v0",
    "MiniGrid-UnlockPickup-v0",
    "MiniGrid-BlockedUnlockPickup-v0",
]
OBJECT_KINDS = {"key": C.KEY, "ball": C.BALL, "box": C.BOX, "door": C.DOOR, "goal": C.GOAL}


def features(grid: np.ndarray, pos: np.ndarray, direction: int) -> dict[str, int]:
    """Returns the agent pose and, per object kind, the first such object's x, y and colour."""
    out = {"agent_x": int(pos[0]), "agent_y": int(pos[1]), "agent_dir": int(direction)}
    for name, kind in OBJECT_KINDS.items():
        ys, xs = np.nonzero(grid[..., C.TYPE] == kind)
        if len(xs):
            out.update({f"{name}_x": int(xs[0]), f"{name}_y": int(ys[0]), f"{name}_color": int(grid[ys[0], xs[0], 1])})
    return out


def chi2_homogeneity_p(a: list[int], b: list[int]) -> float:
    """Returns the p-value of a chi-square two-sample homogeneity test (Wilson-Hilferty approximation)."""
    values = sorted(set(a) | set(b))
    if len(values) < 2:
        return 1.0
    counts = np.array([[a.count(v) for v in values], [b.count(v) for v in values]], float)
    expected = counts.sum(1, keepdims=True) * counts.sum(0, keepdims=True) / counts.sum()
    stat = float(((counts - expected) ** 2 / expected).sum())
    dof = len(values) - 1
    z = ((stat / dof) ** (1 / 3) - (1 - 2 / (9 * dof))) / math.sqrt(2 / (9 * dof))
    return 0.5 * math.erfc(z / math.sqrt(2))


@pytest.fixture(scope="module", params=RANDOM_ENVS)
def samples(request):
    name = request.param
    env, params = jaxsoc.make(name)
    keys = jax.random.split(jax.random.key(0), 3000)
    _, states = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(keys, params)
    grids, poses, dirs = (np.asarray(x) for x in (states.grid, states.agent_pos, states.agent_dir))
    ours = [features(g, p, d) for g, p, d in zip(grids, poses, dirs)]
    theirs = []
    for seed in range(600):
        ref = make_reference(name)
        ref.reset(seed=seed)
        state, _ = from_minigrid(ref)
        theirs.append(features(np.asarray(state.grid), np.asarray(state.agent_pos), int(state.agent_dir)))
    return name, ours, theirs, states


def test_feature_distributions_match_minigrid(samples):
    name, ours, theirs, _ = samples
    assert ours[0].keys() == theirs[0].keys()
    for feature in ours[0]:
        a, b = [f[feature] for f in ours], [f[feature] for f in theirs]
        assert set(a) >= set(b), f"{name}: {feature} values {sorted(set(b) - set(a))} never generated"
        p = chi2_homogeneity_p(a, b)
        assert p > 1e-3, f"{name}: {feature} distribution differs from minigrid's (p={p:.2g})"


def test_room_grid_agent_never_faces_an_object(samples):
    name, _, _, states = samples
    if "Unlock" not in name:
        pytest.skip("only RoomGrid envs constrain the start pose")
    grids, poses, dirs = (np.asarray(x) for x in (states.grid, states.agent_pos, states.agent_dir))
    front = poses + C.DIR_TO_VEC[dirs]
    kinds = grids[np.arange(len(grids)), front[:, 1], front[:, 0], C.TYPE]
    assert np.isin(kinds, [C.EMPTY, C.WALL]).all()


def test_room_grid_objects_avoid_the_default_agent_cell(samples):
    name, ours, _, _ = samples
    if "Pickup" not in name:
        pytest.skip("only the box of the UnlockPickup envs is placed near the default agent cell")
    near = [abs(f["box_x"] - 8) + abs(f["box_y"] - 3) < 2 for f in ours]
    assert not any(near)
