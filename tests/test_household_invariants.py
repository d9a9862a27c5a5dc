"""Properties of the household under random play (hypothesis over tasks and keys): every object is in exactly
one place, hands and relations agree, characters stay in their rooms, seats are never overfilled, and a
jitted step equals the op-by-op one."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tolerance import assert_trees_match

from jaxsoc.envs.household import classes as C
from jaxsoc.envs.household import env as E
from jaxsoc.envs.household import tasks as T
from jaxsoc.envs.household import world as W

STEPS = 40


@pytest.fixture(scope="module")
def bank():
    return T.cached_split("test-2", 0)


@pytest.fixture(scope="module")
def play(bank):
    """Returns ``run(task_index, key) -> states`` with a leading axis of ``STEPS``: both characters take random
    valid actions (the world stepped without auto-reset)."""
    params = E.HouseholdParams(tasks=bank.states)

    @jax.jit
    def run(index, key):
        task = jax.tree_util.tree_map(lambda x: x[index], bank.states)

        def body(state, k):
            ka, kb, ks = jax.random.split(k, 3)
            actions = jnp.stack([E.random_valid_action(ka, state, 0), E.random_valid_action(kb, state, 1)])
            state, *_ = E.advance(ks, state, actions, params)
            return state, state

        return jax.lax.scan(body, task, jax.random.split(key, STEPS))[1]

    return run


def check_invariants(s, t: int) -> None:
    """Asserts the world's invariants on step ``t`` of a rollout ``s`` (numpy arrays with a time axis)."""
    cls, parent, rel = s.nodes.cls[t], s.nodes.parent[t], s.nodes.relation[t]
    hands, sitting = s.chars.hands[t], s.chars.sitting_on[t]
    objects = np.flatnonzero(cls[W.OBJECT0 :] > 0) + W.OBJECT0
    held = hands[hands >= 0]
    assert len(set(held.tolist())) == held.size, "an object in two hands"
    for o in objects:
        if o in held:
            assert rel[o] == C.HELD and parent[o] == -1
        else:
            assert rel[o] in (C.ON_TOP, C.INSIDE) and W.FURNITURE0 <= parent[o] < W.OBJECT0, "one place, on furniture"
            assert s.nodes.room[t, o] == s.nodes.room[t, parent[o]]
            props = C.PROPERTIES[cls[parent[o]]]
            assert props & (C.CONTAINERS if rel[o] == C.INSIDE else C.SURFACES)
    assert (C.PROPERTIES[cls[held]] & C.GRABBABLE).all()
    for c in range(2):  # a character stands inside its room (doors are on the walls)
        room = s.chars.room[t, c]
        lo = s.nodes.pos[t, room] - s.nodes.size[t, room] / 2 - 1e-3
        hi = s.nodes.pos[t, room] + s.nodes.size[t, room] / 2 + 1e-3
        assert (lo <= s.chars.pos[t, c]).all() and (s.chars.pos[t, c] <= hi).all()
    for seat in sitting[sitting >= 0]:
        assert C.PROPERTIES[cls[seat]] & C.SITTABLE
        assert (sitting == seat).sum() <= C.SIT_CAPACITY[cls[seat]]
    assert (s.nodes.states[t][: W.FURNITURE0] == 0).all()  # rooms and doors have no states


@settings(max_examples=8, deadline=None)
@given(index=st.integers(0, 99), seed=st.integers(0, 2**31 - 1))
def test_random_play_keeps_the_world_consistent(play, index, seed):
    states = jax.device_get(play(jnp.int32(index), jax.random.key(seed)))
    for t in range(STEPS):
        check_invariants(states, t)
    # the clock counts every step
    assert (np.diff(states.step) == 1).all()


class AdvanceVariants(chex.TestCase):
    """A step compiled equals it run op by op (under ``jax.disable_jit()``, so nothing is compiled)."""

    @chex.variants(with_jit=True, without_jit=True)
    def test_advance_jit_equivalence(self):
        bank = T.cached_split("test-2", 0)
        params = E.HouseholdParams(tasks=bank.states)
        task = bank.task(5)
        actions = jnp.array([int(W.encode_action("walk", 2)), int(W.encode_action("walk", W.FURNITURE0))])

        def advance(k, s, a):
            return E.advance(k, s, a, params)

        def eager(k, s, a):
            with jax.disable_jit():
                return self.variant(advance)(k, s, a)

        compiled = self.variant.type == chex.ChexVariantType.WITH_JIT
        step = self.variant(advance) if compiled else eager
        reference = jax.jit(advance)
        state = task
        for t in range(3):
            got, want = step(jax.random.key(t), state, actions), reference(jax.random.key(t), state, actions)
            assert_trees_match(got, want)
            state = want[0]
