"""CHAIC's world: the constraints' success probabilities against the formulas, capacity, obstacles, goal checks,
asynchronous timing, visibility, determinism and jit/vmap equivalence."""

from __future__ import annotations

import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from chaic_scenes import two_rooms
from tolerance import assert_trees_match

from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.envs.chaic import state as S
from jaxsoc.envs.chaic import world as W

TIMING = W.Timing()
TRIALS = 1000
LONG_WAIT = TIMING.replace(wait=10_000.0)  # the helper waits while the constrained agent's action runs


@pytest.fixture(scope="module")
def step():
    return jax.jit(W.step_event)


@pytest.fixture(scope="module")
def run_action():
    """Returns ``run(state, action, keys) -> states``: the constrained agent does ``action`` (the helper waits) in
    ``len(keys)`` copies of ``state``; events are stepped until its action has finished (one call shape, so
    one compilation: single-world tests pass ``TRIALS`` keys too and read world 0)."""

    @jax.jit
    def run(state, action, keys):
        def one(key):
            def body(carry, k):
                s, started = carry
                finished = started & W.ready(s)[S.MAIN]
                stepped, _ = W.step_event(k, s, jnp.stack([action, jnp.int32(S.WAIT)]), LONG_WAIT)
                return (W.jnp_select(finished, s, stepped), started | True), None

            (s, _), _ = jax.lax.scan(body, (state, jnp.bool_(False)), jax.random.split(key, 3))
            return s

        return jax.vmap(one)(keys)

    return run


def _keys(n=TRIALS, seed=0):
    return jax.random.split(jax.random.key(seed), n)


def _rate(states, agent=0):
    return float(np.mean(np.asarray(states.agents.status[:, agent]) == S.SUCCEEDED))


def _check(freq, p, n=TRIALS):
    assert abs(freq - p) < 4 * math.sqrt(p * (1 - p) / n) + 1e-3, (freq, p)


@pytest.mark.parametrize(
    "ability, height, expected",
    [
        ("normal", 0.8, 1.0),
        ("child", 0.8, 1.0),
        ("child", 2.0, math.exp(-0.5) / 2),  # pick_up.py: exp(-delta) / 2
        ("child", 1.7, math.exp(-0.2) / 2),
        ("wheelchair", 0.1, math.exp(-2 * 0.15)),  # wheelchair_pick_up.py: exp(-2 delta)
        ("wheelchair", 1.8, math.exp(-2 * 0.3)),
        ("wheelchair", 1.0, 1.0),
    ],
)
def test_pick_up_success_matches_the_formula(run_action, ability, height, expected):
    state = two_rooms(
        objects=[("apple", (-2.0, 0.0), height)], agents=[((-3.0, 0.0), 0, ability), ((-5.0, 2.0), 0, "helper")]
    )
    out = run_action(state, S.pick_action(0), _keys())
    freq = _rate(out)
    _check(freq, expected)
    held = np.asarray(out.objects.holder[:, 0] == 0)
    assert np.array_equal(held, np.asarray(out.agents.status[:, 0]) == S.SUCCEEDED)


@pytest.mark.parametrize("height, p_break", [(2.0, K.VASE_BREAK_HIGH), (1.0, K.VASE_BREAK_LOW)])
def test_the_child_breaks_vases(run_action, height, p_break):
    state = two_rooms(
        objects=[("vase", (-2.0, 0.0), height)], agents=[((-3.0, 0.0), 0, "child"), ((-5.0, 2.0), 0, "helper")]
    )
    out = run_action(state, S.pick_action(0), _keys())
    broken = np.asarray(out.objects.broken[:, 0])
    _check(broken.mean(), p_break)
    delta = max(height - 1.5, 0.0)
    p_pick = math.exp(-delta) / 2 if delta > 0 else 1.0
    _check(_rate(out), (1 - p_break) * p_pick)
    assert not np.any(broken & (np.asarray(out.objects.holder[:, 0]) == 0))


@pytest.mark.parametrize("helper_near", [False, True])
@pytest.mark.parametrize("piece", ["chair", "table", "kettle"])
def test_furniture_lifting_by_strength_or_together(run_action, piece, helper_near):
    helper = (-1.5, 0.8) if helper_near else (-5.0, 2.0)
    state = two_rooms(
        objects=[(piece, (-2.0, 0.0), 0.9)],
        agents=[((-3.2, 0.0), 0, "frail"), (helper, 0, "helper")],
        goal={piece: 1},
        task="furniture",
    )
    out = run_action(state, S.pick_action(0), _keys())
    mass = K.CLASS_MASS[K.CLASS[piece]]
    expected = 1.0 if helper_near else math.exp(min(0.0, (100.0 - mass) / K.FURNITURE_ALPHA))
    _check(_rate(out), expected)
    ok = np.asarray(out.agents.status[:, 0]) == S.SUCCEEDED
    assert np.all(np.asarray(out.agents.hands[:, 0])[ok] == 0)  # both hands carry it


@pytest.mark.parametrize(
    "ability, goal_height, expected",
    [
        ("normal", 0.6, 1.0),
        ("child", 1.9, math.exp(-0.4)),  # put_on.py: exp(-delta)
        ("wheelchair", 1.9, 0.0),  # wheelchair_put_on.py: out of range always fails
        ("wheelchair", 1.2, 1.0),
    ],
)
def test_put_on_goal_place_success_and_failed_drop(run_action, ability, goal_height, expected):
    state = two_rooms(
        objects=[("apple", (3.0, 0.0), 0.8)],
        agents=[((3.0, 0.3), 0, ability), ((-5.0, 2.0), 0, "helper")],
        goal={"apple": 1},
        goal_height=goal_height,
    )
    agents = state.agents
    state = state.replace(
        agents=agents.replace(hands=agents.hands.at[0, 0].set(0)),
        objects=state.objects.replace(holder=state.objects.holder.at[0].set(0)),
    )
    out = run_action(state, jnp.int32(S.PUT_ON), _keys())
    ok = np.asarray(out.agents.status[:, 0]) == S.SUCCEEDED
    _check(ok.mean(), expected)
    assert np.array_equal(np.asarray(out.objects.delivered[:, 0]), ok)
    assert np.all(np.asarray(out.objects.holder[:, 0]) == -1)
    rate = np.asarray(jax.vmap(W.transport_rate)(out))
    assert np.array_equal(rate, ok.astype(np.float32))
    dropped = np.asarray(out.objects.pos[:, 0])[~ok]
    if len(dropped):  # ~2.5 m from where the agent stood, on the floor
        dist = np.linalg.norm(dropped - np.asarray(out.agents.pos[:, 0])[~ok], axis=-1)
        assert np.allclose(dist, K.DROP_BEHIND, atol=1e-4)
        assert np.allclose(np.asarray(out.objects.height[:, 0])[~ok], K.CLASS_HEIGHT[K.CLASS["apple"]])


def _holding(state, agent, hand, obj):
    return state.replace(
        agents=state.agents.replace(hands=state.agents.hands.at[agent, hand].set(obj)),
        objects=state.objects.replace(holder=state.objects.holder.at[obj].set(agent)),
    )


def test_container_capacity_is_three_and_contents_deliver_with_it(run_action):
    items = [("apple", (-2.0, 0.0), 0.8)] * 5
    state = two_rooms(objects=[("bowl", (-2.5, 1.0), 0.8), *items], goal={"apple": 4})
    state = _holding(state, 0, 0, 0)
    key = _keys()
    for i in range(1, 5):
        state = _holding(state, 0, 1, i)
        out = run_action(state, jnp.int32(S.PUT_IN), key)
        state = jax.tree_util.tree_map(lambda x: x[0], out)
        assert bool(state.agents.status[0] == S.SUCCEEDED) == (i <= 3)
    assert np.asarray(state.objects.container[1:5]).tolist() == [0, 0, 0, -1]
    assert int(W.contents(state)[0]) == 3
    assert not bool(W.valid_actions(state, 0)[S.PUT_IN])
    # carry everything to the goal: the bowl (hand 0) with its three apples, then the fourth apple
    state = state.replace(agents=state.agents.replace(pos=state.agents.pos.at[0].set(jnp.array([3.0, 0.0]))))
    for expected in (0.75, 1.0):
        state = jax.tree_util.tree_map(lambda x: x[0], run_action(state, jnp.int32(S.PUT_ON), key))
        assert float(W.transport_rate(state)) == pytest.approx(expected)
    assert bool(W.success(state))
    assert int(state.placed[0]) == 4 and int(state.useful[0]) == 4


def test_goal_counts_cap_what_is_counted(run_action):
    state = two_rooms(
        objects=[("apple", (3.0, 0.0), 0.8), ("apple", (3.0, 0.0), 0.8), ("pen", (3.0, 0.0), 0.8)],
        agents=[((3.0, 0.3), 0, "normal"), ((-5.0, 2.0), 0, "helper")],
        goal={"apple": 1},
    )
    key = _keys()
    for obj in range(3):
        state = _holding(state, 0, 0, obj)
        state = jax.tree_util.tree_map(lambda x: x[0], run_action(state, jnp.int32(S.PUT_ON), key))
    assert np.asarray(state.objects.delivered[:3]).all()
    assert float(W.transport_rate(state)) == 1.0
    assert int(state.placed[0]) == 3 and int(state.useful[0]) == 1  # IA's numerator counts the first apple only


def test_bike_basket_holds_three_and_stays_in_hand(run_action):
    objects = [("bike", (-3.0, 0.0), 1.0)] + [("apple", (-2.0, 0.0), 0.8)] * 4
    state = two_rooms(
        objects=objects, agents=[((-3.0, 0.0), 0, "rider"), ((-5.0, 2.0), 0, "helper")], goal={"apple": 4}
    )
    key = _keys()
    start = int(state.frame)
    for i in range(1, 5):
        state = _holding(state, 0, 1, i)
        state = jax.tree_util.tree_map(lambda x: x[0], run_action(state, jnp.int32(S.PUT_IN), key))
        if i == 1:  # the rider docks the bike first
            assert int(state.frame) - start == TIMING.put_in + TIMING.dock
    assert int(W.contents(state)[0]) == 3 and int(state.agents.hands[0, 1]) == 4
    state = state.replace(agents=state.agents.replace(pos=state.agents.pos.at[0].set(jnp.array([3.0, 0.0]))))
    state = jax.tree_util.tree_map(lambda x: x[0], run_action(state, jnp.int32(S.PUT_ON), key))
    assert float(W.transport_rate(state)) == 0.25  # the apple in the free hand first
    state = jax.tree_util.tree_map(lambda x: x[0], run_action(state, jnp.int32(S.PUT_ON), key))
    assert float(W.transport_rate(state)) == 1.0  # then the basket's contents; the bike stays in hand
    assert int(state.agents.hands[0, 0]) == 0 and not bool(state.objects.delivered[0])


def test_wheelchair_is_blocked_by_obstacles_others_are_not(step):
    for ability, passes in (("wheelchair", False), ("normal", True)):
        state = two_rooms(
            objects=[("trashbin", (0.0, 0.0), 0.7)],
            agents=[((-0.9, 0.0), 0, ability), ((-5.0, 2.0), 0, "helper")],
        )
        out, _ = step(jax.random.key(0), state, jnp.array([S.MOVE, S.WAIT]), TIMING)
        while int(out.agents.status[0]) == S.ONGOING:
            out, _ = step(jax.random.key(1), out, jnp.array([S.MOVE, S.WAIT]), TIMING)
        moved = float(out.agents.pos[0, 0]) > -0.8
        assert moved == passes
        assert int(out.agents.status[0]) == (S.SUCCEEDED if passes else S.FAILED)


def test_moves_stop_at_walls_and_pass_doors(step):
    for start, passes in (((-0.3, 2.0), False), ((-0.3, 0.0), True)):
        state = two_rooms(agents=[(start, 0, "normal"), ((-5.0, 2.0), 0, "helper")])
        out, _ = step(jax.random.key(0), state, jnp.array([S.MOVE, S.WAIT]), TIMING)
        while int(out.agents.status[0]) == S.ONGOING:
            out, _ = step(jax.random.key(1), out, jnp.array([S.WAIT, S.WAIT]), TIMING)
        assert (float(out.agents.pos[0, 0]) > 0) == passes


def test_remove_clears_the_doorway_for_the_wheelchair(run_action, step):
    state = two_rooms(
        objects=[("trashbin", (0.0, 0.0), 0.7)], agents=[((-2.0, 0.0), 0, "helper"), ((-5.0, 2.0), 0, "helper")]
    )
    state = jax.tree_util.tree_map(lambda x: x[0], run_action(state, S.remove_action(0), _keys()))
    assert int(state.agents.status[0]) == S.SUCCEEDED
    assert float(jnp.linalg.norm(state.objects.pos[0] - state.scene.doors[0])) > 1.5


def test_asynchronous_timing(step):
    """The clock jumps to the first action to finish; a busy agent's new action is ignored."""
    state = two_rooms(
        objects=[("apple", (-2.0, 0.0), 0.8)], agents=[((-3.0, 0.0), 0, "normal"), ((-5, 2), 0, "helper")]
    )
    out, info = step(jax.random.key(0), state, jnp.array([S.pick_action(0), S.TURN_LEFT]), TIMING)
    assert int(out.frame) == TIMING.turn
    assert np.asarray(info["finished"]).tolist() == [False, True, False]
    assert int(out.agents.heading[1]) == 1
    busy_done = int(out.agents.done_frame[0])
    out, info = step(jax.random.key(1), out, jnp.array([S.MOVE, S.WAIT]), TIMING)  # main's MOVE is ignored
    assert int(out.frame) == 2 * TIMING.turn + 1 - 1 + TIMING.wait - TIMING.turn
    assert int(out.agents.done_frame[0]) == busy_done and int(out.agents.action[0]) == S.PICK
    while int(out.agents.status[0]) == S.ONGOING:
        out, _ = step(jax.random.key(2), out, jnp.array([S.MOVE, S.WAIT]), TIMING)
    walk = (1.0 - K.CLASS_SIZE[K.CLASS["apple"]] / 2 - K.ARRIVE) / K.MOVE_STEP * TIMING.move
    assert int(out.frame) == round(walk + TIMING.pick)
    assert int(out.objects.holder[0]) == 0


def test_refused_actions_fail_fast(step):
    state = two_rooms(objects=[("apple", (4.0, 0.0), 0.8)])  # in the other room, beyond reach
    assert not bool(W.valid_actions(state, 0)[S.PICK])
    out, _ = step(jax.random.key(0), state, jnp.array([S.pick_action(0), S.WAIT]), TIMING)
    assert int(out.frame) == TIMING.fail and int(out.agents.status[0]) == S.FAILED
    assert int(out.objects.holder[0]) == -1


def test_visibility_field_of_view_distance_and_walls():
    objects = [
        ("apple", (-1.0, 0.5), 0.8),  # ahead
        ("apple", (-5.0, 0.0), 0.8),  # behind
        ("apple", (2.0, 2.5), 0.8),  # ahead but behind the wall
        ("apple", (2.0, 0.0), 0.8),  # ahead, through the door
        ("apple", (-2.0, 2.9), 0.8),  # 60 degrees to the left: outside the 90-degree view
    ]
    state = two_rooms(objects=objects, agents=[((-3.0, 0.0), 0, "normal"), ((-3.0, -1.5), 18, "helper")])
    assert np.asarray(W.visible_objects(state, 0)[:5]).tolist() == [True, False, False, True, False]
    assert np.asarray(W.visible_agents(state, 1)).tolist() == [False, False, False]  # the helper looks down (-z)
    state = state.replace(agents=state.agents.replace(heading=state.agents.heading.at[1].set(6)))
    assert bool(W.visible_agents(state, 1)[0])
    # carried objects are seen by their carrier
    state = _holding(state, 0, 0, 1)
    assert bool(W.visible_objects(state, 0)[1])


def test_deterministic_and_jit_vmap_equivalent(step):
    state = two_rooms(objects=[("apple", (-2.0, 0.0), 1.9)], agents=[((-3.0, 0.0), 0, "child"), ((-5, 2), 0, "helper")])
    actions = jnp.array([S.pick_action(0), S.TURN_RIGHT])
    key = jax.random.key(3)
    jitted = step(key, state, actions, TIMING)
    chex.assert_trees_all_close(jitted, step(key, state, actions, TIMING))  # same key, same result
    for fn in (W.valid_actions, W.visible_objects):  # the step's parts, op by op (the whole step is slow so)
        chex.assert_trees_all_equal(fn(state, 0), jax.jit(fn, static_argnums=1)(state, 0))
    batch = jax.tree_util.tree_map(lambda x: jnp.stack([x, x]), state)
    keys = jnp.stack([key, jax.random.key(4)])
    vm, _ = jax.vmap(step, in_axes=(0, 0, None, None))(keys, batch, actions, TIMING)
    assert_trees_match(jax.tree_util.tree_map(lambda x: x[0], vm), jitted[0])  # vmapped: another program
