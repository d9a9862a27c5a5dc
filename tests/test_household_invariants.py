"""Properties of the household under random play (hypothesis over tasks and keys): every object is in exactly
one place, hands and relations agree, characters stay in their rooms, seats are never overfilled, an invalid
action changes nothing, and a jitted step equals the op-by-op one."""

from __future__ import annotations

import functools

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
    """Returns ``run(task_index, key) -> (states, before, actions, info, mask_ok)``, each with a leading axis of
    ``STEPS``: on each step each character takes, with probability 1/2 each, a random valid action or a uniform
    one over all ``world.NUM_ACTIONS`` ids (nearly always invalid); the world is stepped without auto-reset.
    ``before`` is the state the step started from, ``mask_ok`` bool[2] whether ``world.valid_actions`` allowed
    each action there."""
    params = E.HouseholdParams(tasks=bank.states)

    @jax.jit
    def run(index, key):
        task = jax.tree_util.tree_map(lambda x: x[index], bank.states)

        def body(state, k):
            ka, kb, ku, kc, ks = jax.random.split(k, 5)
            valid = jnp.stack([E.random_valid_action(ka, state, 0), E.random_valid_action(kb, state, 1)])
            uniform = jax.random.randint(ku, (2,), 0, W.NUM_ACTIONS)
            actions = jnp.where(jax.random.bernoulli(kc, 0.5, (2,)), valid, uniform)
            mask_ok = jnp.stack([W.valid_actions(state, c).reshape(-1)[actions[c]] for c in range(2)])
            after, _, _, _, info = E.advance(ks, state, actions, params)
            return after, (after, state, actions, info, mask_ok)

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


def check_invalid_actions_do_nothing(before, after, actions, info, mask_ok, t: int) -> None:
    """Asserts on step ``t`` that ``info["action_valid"]`` agrees with ``world.valid_actions`` and that an action
    whose preconditions fail does nothing (``world``'s docstring): its character is unchanged, and when both
    fail, so is the whole world."""
    valid, conflict = info["action_valid"][t], info["conflict"][t]
    assert (~valid | mask_ok[t]).all(), "an action outside valid_actions was carried out"
    assert conflict or (valid == mask_ok[t]).all(), f"a valid action {actions[t]} was refused"
    for c in np.flatnonzero(~valid):
        for field in ("room", "pos", "hands", "sitting_on"):
            was, now = getattr(before.chars, field)[t, c], getattr(after.chars, field)[t, c]
            np.testing.assert_array_equal(now, was, err_msg=f"invalid action {actions[t, c]} moved {field}")
    if not valid.any():
        for was, now in zip(jax.tree_util.tree_leaves(before.nodes), jax.tree_util.tree_leaves(after.nodes)):
            np.testing.assert_array_equal(now[t], was[t])


@settings(max_examples=8, deadline=None)
@given(index=st.integers(0, 99), seed=st.integers(0, 2**31 - 1))
def test_random_play_keeps_the_world_consistent(play, index, seed):
    states, before, actions, info, mask_ok = jax.device_get(play(jnp.int32(index), jax.random.key(seed)))
    for t in range(STEPS):
        check_invariants(states, t)
        check_invalid_actions_do_nothing(before, states, actions, info, mask_ok, t)
    # both kinds of action were played: the mix reaches invalid actions and still carries out valid ones
    assert (~info["action_valid"]).any() and info["action_valid"].any()
    # the clock counts every step
    assert (np.diff(states.step) == 1).all()


@functools.cache
def _advance_case():
    """Returns ``(advance, rollout)``: the household step of task 5 of ``test-2`` as a function of
    ``(key, state, actions)``, and the three-step rollout it gives run op by op under ``jax.disable_jit()``
    (nothing compiled: the reference both variants are compared with), as ``[(inputs, outputs)]``."""
    bank = T.cached_split("test-2", 0)
    params = E.HouseholdParams(tasks=bank.states)
    actions = jnp.array([int(W.encode_action("walk", 2)), int(W.encode_action("walk", W.FURNITURE0))])

    def advance(k, s, a):
        return E.advance(k, s, a, params)

    rollout, state = [], bank.task(5)
    with jax.disable_jit():
        for t in range(3):
            inputs = (jax.random.key(t), state, actions)
            outputs = advance(*inputs)
            rollout.append((inputs, outputs))
            state = outputs[0]
    return advance, rollout


@pytest.mark.bitexact
@pytest.mark.slow  # a minute at XLA's default level in CI's bit-exact job; the contract's determinism runs in CI
class AdvanceVariants(chex.TestCase):
    """A step compiled (``with_jit``) and one called without an outer ``jit`` (``without_jit``) each equal the
    step run op by op under ``jax.disable_jit()``."""

    @chex.variants(with_jit=True, without_jit=True)
    def test_advance_jit_equivalence(self):
        advance, rollout = _advance_case()
        step = self.variant(advance)
        for inputs, want in rollout:
            assert_trees_match(step(*inputs), want)  # floats to rounding, the rest exactly
        first, last = rollout[0][0][1], rollout[-1][1][0]
        assert not np.array_equal(first.chars.pos, last.chars.pos), "the walks moved the characters"
