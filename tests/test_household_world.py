"""The household's dynamics on hand-built states: each action's preconditions (each violated once) and effects,
visibility, predicates and rewards, the simultaneous-action rule, walking, determinism, jit/vmap, errors."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from household_scenes import first, hold, objects_of, place, set_bits, stand_at
from tolerance import assert_trees_match

import jaxsoc
from jaxsoc.envs.household import classes as C
from jaxsoc.envs.household import env as E
from jaxsoc.envs.household import predicates as PR
from jaxsoc.envs.household import tasks as T
from jaxsoc.envs.household import world as W

KITCHEN = C.ROOM_CLASSES.index("kitchen")
NOOP = 0


@pytest.fixture(scope="module")
def base():
    """A setup_table task in apartment 0 with the characters standing in the kitchen, both hands free."""
    state = jax.jit(T.generate)(jax.random.key(0), jnp.int32(0), jnp.array([0, -1], jnp.int32))
    chars = state.chars.replace(room=jnp.array([KITCHEN, KITCHEN], jnp.int8))
    return state.replace(chars=chars)


@pytest.fixture(scope="module")
def params(base):
    bank = jax.tree_util.tree_map(lambda x: x[None], base)
    return E.HouseholdParams(tasks=bank)


@pytest.fixture(scope="module")
def advance():
    return jax.jit(E.advance)


def act(advance, params, state, alice, bob=NOOP, key=0):
    out = advance(jax.random.key(key), state, jnp.array([alice, bob], jnp.int32), params)
    return out[0], out[-1]


def a(verb: str, target: int) -> int:
    return int(W.encode_action(verb, target))


@pytest.fixture(scope="module")
def kitchen(base):
    """A kitchen scene: a plate INSIDE the closed fridge, an apple ON the kitchen table, Alice at the fridge."""
    fridge, table = first(base, "fridge"), first(base, "kitchentable")
    plate = objects_of(base, "plate")[0]
    apple = objects_of(base, "apple")[0] if objects_of(base, "apple") else objects_of(base, "cupcake")[0]
    state = place(place(base, plate, fridge, C.INSIDE), apple, table, C.ON_TOP)
    state = stand_at(state, 0, fridge)
    state = stand_at(state, 1, first(base, "livingroom"))
    return state, {"fridge": fridge, "table": table, "plate": plate, "apple": apple}


def row(tree, i: int):
    return jax.tree_util.tree_map(lambda x: x[i], tree)


def unchanged(before, after):
    """The world (not the clock) is the same."""
    chex.assert_trees_all_equal(before.replace(step=after.step), after)


# -- each action: success, then every precondition violated once -----------------------------------------


def test_grab(advance, params, kitchen):
    state, n = kitchen
    # inside the closed fridge: invisible, so not grabbable
    after, info = act(advance, params, state, a("grab", n["plate"]))
    assert not info["action_valid"][0]
    unchanged(state, after)
    opened = set_bits(state, n["fridge"], C.OPEN)
    after, info = act(advance, params, opened, a("grab", n["plate"]))
    assert info["action_valid"][0]
    assert int(after.chars.hands[0, 0]) == n["plate"] and int(after.nodes.relation[n["plate"]]) == C.HELD
    assert int(after.nodes.parent[n["plate"]]) == -1
    # a second grab takes the left hand; a third has no free hand
    near_table = stand_at(after, 0, n["table"])
    two, info = act(advance, params, near_table, a("grab", n["apple"]))
    assert info["action_valid"][0] and int(two.chars.hands[0, 1]) == n["apple"]
    third = objects_of(state, "plate")[1]
    full = place(two, third, n["table"], C.ON_TOP)
    _, info = act(advance, params, full, a("grab", third))
    assert not info["action_valid"][0]
    # not close: the apple on the table seen from the far side of the kitchen
    far = stand_at(state, 0, first(state, "kitchen"))
    far = far.replace(chars=far.chars.replace(pos=far.chars.pos.at[0].set(state.nodes.pos[n["table"]] + 3.0)))
    assert not bool(W.view(far, 0).close[n["apple"]])
    _, info = act(advance, params, far, a("grab", n["apple"]))
    assert not info["action_valid"][0]
    # held by the other character; not grabbable (furniture)
    bob_holds = hold(stand_at(state, 1, n["table"]), 1, 0, n["apple"])
    _, info = act(advance, params, stand_at(bob_holds, 0, n["table"]), a("grab", n["apple"]))
    assert not info["action_valid"][0]
    _, info = act(advance, params, state, a("grab", n["fridge"]))
    assert not info["action_valid"][0]


def test_open_and_close(advance, params, kitchen):
    state, n = kitchen
    opened, info = act(advance, params, state, a("open", n["fridge"]))
    assert info["action_valid"][0] and int(opened.nodes.states[n["fridge"]]) & C.OPEN
    _, info = act(advance, params, opened, a("open", n["fridge"]))  # already open
    assert not info["action_valid"][0]
    closed, info = act(advance, params, opened, a("close", n["fridge"]))
    assert info["action_valid"][0] and not int(closed.nodes.states[n["fridge"]]) & C.OPEN
    _, info = act(advance, params, closed, a("close", n["fridge"]))  # already closed
    assert not info["action_valid"][0]
    _, info = act(advance, params, state, a("open", n["table"]))  # cannot open a table
    assert not info["action_valid"][0]
    far = stand_at(state, 0, first(state, "bed"))
    _, info = act(advance, params, far, a("open", n["fridge"]))  # not close (another room)
    assert not info["action_valid"][0]
    both_hands = hold(hold(state, 0, 0, objects_of(state, "plate")[1]), 0, 1, objects_of(state, "plate")[2])
    _, info = act(advance, params, both_hands, a("open", n["fridge"]))  # opening needs a free hand
    assert not info["action_valid"][0]
    _, info = act(advance, params, both_hands.replace(), a("close", n["fridge"]))
    assert not info["action_valid"][0]  # it is closed already; closing needs no free hand (see below)
    _, info = act(advance, params, set_bits(both_hands, n["fridge"], C.OPEN), a("close", n["fridge"]))
    assert info["action_valid"][0]
    on = set_bits(state, n["fridge"], C.ON)
    _, info = act(advance, params, on, a("open", n["fridge"]))  # cannot open while switched on
    assert not info["action_valid"][0]


def test_putback_and_putin(advance, params, kitchen):
    state, n = kitchen
    holding = hold(stand_at(state, 0, n["table"]), 0, 0, n["plate"])
    put, info = act(advance, params, holding, a("putback_rh", n["table"]))
    assert info["action_valid"][0]
    assert int(put.nodes.parent[n["plate"]]) == n["table"] and int(put.nodes.relation[n["plate"]]) == C.ON_TOP
    assert int(put.chars.hands[0, 0]) == -1
    _, info = act(advance, params, holding, a("putback_lh", n["table"]))  # the left hand is empty
    assert not info["action_valid"][0]
    _, info = act(advance, params, holding, a("putin_rh", n["table"]))  # a table is not a container
    assert not info["action_valid"][0]
    at_fridge = stand_at(holding, 0, n["fridge"])
    _, info = act(advance, params, at_fridge, a("putin_rh", n["fridge"]))  # closed
    assert not info["action_valid"][0]
    _, info = act(advance, params, at_fridge, a("putback_rh", n["fridge"]))  # a fridge is not a surface
    assert not info["action_valid"][0]
    into, info = act(advance, params, set_bits(at_fridge, n["fridge"], C.OPEN), a("putin_rh", n["fridge"]))
    assert info["action_valid"][0]
    assert int(into.nodes.parent[n["plate"]]) == n["fridge"] and int(into.nodes.relation[n["plate"]]) == C.INSIDE
    far = stand_at(holding, 0, first(state, "bed"))
    _, info = act(advance, params, far, a("putback_rh", n["table"]))  # not close
    assert not info["action_valid"][0]
    _, info = act(advance, params, holding, a("putback_rh", n["plate"]))  # not onto itself
    assert not info["action_valid"][0]


def test_switchon(advance, params, kitchen):
    state, n = kitchen
    on, info = act(advance, params, state, a("switchon", n["fridge"]))
    assert info["action_valid"][0] and int(on.nodes.states[n["fridge"]]) & C.ON
    _, info = act(advance, params, on, a("switchon", n["fridge"]))  # already on
    assert not info["action_valid"][0]
    _, info = act(advance, params, stand_at(state, 0, n["table"]), a("switchon", n["table"]))  # no switch
    assert not info["action_valid"][0]
    _, info = act(advance, params, stand_at(state, 0, first(state, "bed")), a("switchon", n["fridge"]))  # far
    assert not info["action_valid"][0]


def test_sit(advance, params, kitchen):
    state, _ = kitchen
    sofa, chair, tv = first(state, "sofa"), first(state, "chair"), first(state, "tv")
    at_sofa = stand_at(state, 0, sofa)
    sat, info = act(advance, params, at_sofa, a("sit", sofa))
    assert info["action_valid"][0] and int(sat.chars.sitting_on[0]) == sofa
    _, info = act(advance, params, sat, a("sit", sofa))  # already sitting
    assert not info["action_valid"][0]
    _, info = act(advance, params, stand_at(state, 0, tv), a("sit", tv))  # not sittable
    assert not info["action_valid"][0]
    _, info = act(advance, params, stand_at(state, 0, first(state, "fridge")), a("sit", sofa))  # far
    assert not info["action_valid"][0]
    # a chair seats one: Bob sits, then Alice cannot
    both = stand_at(stand_at(state, 0, chair), 1, chair)
    bob_sits, info = act(advance, params, both, NOOP, a("sit", chair))
    assert info["action_valid"][1]
    _, info = act(advance, params, bob_sits, a("sit", chair))
    assert not info["action_valid"][0]
    # walking stands a seated character up
    walked, info = act(advance, params, sat, a("walk", first(state, "kitchen")))
    assert info["action_valid"][0] and int(walked.chars.sitting_on[0]) == -1


def test_an_invalid_action_changes_nothing(advance, params, kitchen):
    state, n = kitchen
    for action in (a("grab", n["plate"]), a("putin_lh", n["fridge"]), a("walk", W.DOOR0), a("sit", n["table"])):
        after, info = act(advance, params, state, action)
        assert not info["action_valid"][0]
        unchanged(state, after)
        assert int(after.step) == int(state.step) + 1


# -- walking -----------------------------------------------------------------------------------------------


def test_walk_moves_at_most_one_metre_through_doors(advance, params, base):
    state = stand_at(base, 0, first(base, "bathroom"))
    goal = first(base, "sofa")
    goal_room = int(W.node_rooms(state)[goal])
    rooms = [int(state.chars.room[0])]
    for t in range(60):
        before = np.asarray(state.chars.pos[0])
        state, info = act(advance, params, state, a("walk", goal), key=t)
        assert info["action_valid"][0]
        assert np.linalg.norm(np.asarray(state.chars.pos[0]) - before) <= 1.0 + 1e-5
        rooms.append(int(state.chars.room[0]))
        if bool(W.view(state, 0).close[goal]) and np.allclose(state.chars.pos[0], W.anchors(state)[goal]):
            break
    assert rooms[-1] == goal_room and np.allclose(state.chars.pos[0], W.anchors(state)[goal], atol=1e-5)
    # rooms change only between rooms joined by a door
    doors = {tuple(sorted(map(int, d))) for d in np.asarray(base.door_rooms) if d[0] >= 0}
    for r0, r1 in zip(rooms, rooms[1:]):
        assert r0 == r1 or tuple(sorted((r0, r1))) in doors


def test_teleport_arrives_at_once(params, base):
    state = stand_at(base, 0, first(base, "bathroom"))
    goal = first(base, "sofa")
    teleport = params.replace(teleport=True)
    after, info = jax.jit(E.advance)(jax.random.key(0), state, jnp.array([a("walk", goal), 0]), teleport)[::4]
    assert info["action_valid"][0] and bool(W.view(after, 0).close[goal])


def test_walk_targets(advance, params, kitchen):
    state, n = kitchen
    _, info = act(advance, params, state, a("walk", W.DOOR0))  # doors are waypoints, not targets
    assert not info["action_valid"][0]
    _, info = act(advance, params, state, a("walk", n["plate"]))  # an unseen object's place is unknown
    assert not info["action_valid"][0]
    _, info = act(advance, params, state, a("walk", first(state, "bed")))  # furniture anywhere is known
    assert info["action_valid"][0]


# -- visibility --------------------------------------------------------------------------------------------


def test_closed_containers_hide_their_contents(advance, params, kitchen):
    state, n = kitchen
    vis = W.view(state, 0).visible
    assert not vis[n["plate"]] and vis[n["apple"]] and vis[n["fridge"]]
    assert all(vis[: W.NUM_ROOMS])  # rooms are always visible
    opened, _ = act(advance, params, state, a("open", n["fridge"]))
    assert W.view(opened, 0).visible[n["plate"]]
    obs = W.observe(opened, 0, True)
    assert int(obs["class"][n["plate"]]) == C.CLASS["plate"] and int(obs["parent"][n["plate"]]) == n["fridge"]
    hidden = W.observe(state, 0, True)
    assert int(hidden["class"][n["plate"]]) == 0 and not np.asarray(hidden["position"][n["plate"]]).any()
    # Bob, in the living room, sees neither the table's apple nor Alice
    bob = W.observe(state, 1, False)
    assert not bob["visible"][n["apple"]] and not bob["agent_visible"][1]
    assert (np.asarray(bob["goal"]) == 0).all() and (np.asarray(bob["goal_target"]) == -1).all()
    # what a character holds is visible to it anywhere, and reported as held
    holding = hold(stand_at(state, 1, first(state, "bed")), 1, 1, n["plate"])
    obs = W.observe(holding, 1, False)
    assert obs["visible"][n["plate"]] and int(obs["relation"][n["plate"]]) == C.REL_HOLDS_LH


# -- predicates, reward, termination -----------------------------------------------------------------------


def test_predicates_reward_and_success(advance, params, kitchen):
    state, n = kitchen
    on_plate = PR.PREDICATE["on_plate_kitchentable"]
    goal = jnp.zeros(PR.NUM_PREDICATES, jnp.int8).at[on_plate].set(2)
    target = jnp.full(PR.NUM_PREDICATES, -1, jnp.int16).at[on_plate].set(n["table"])
    state = state.replace(goal_count=goal, goal_target=target)
    plates = objects_of(state, "plate")[:3]
    state = stand_at(state, 0, n["table"])
    rewards = []
    for k, plate in enumerate(plates):
        state = hold(state, 0, 0, plate)
        state, reward, terminated, truncated, info = advance(
            jax.random.key(k), state, jnp.array([a("putback_rh", n["table"]), 0]), params
        )
        rewards.append(float(reward))
        assert int(W.satisfied(state)[on_plate]) == k + 1
        assert bool(terminated) == (k >= 1) == bool(info["success"]) and not truncated
    assert rewards == [2.0, 4.0, 4.0]  # 2 per satisfied instance, up to the count
    for kind, expect in (("progress", [2.0, 2.0, 0.0]), ("paper", [-0.004, 0.996, 0.996])):
        p = params.replace(reward=kind)
        s = stand_at(state.replace(nodes=kitchen[0].nodes), 0, n["table"])
        got = []
        for k, plate in enumerate(plates):
            s = hold(s, 0, 0, plate)
            s, reward, *_ = advance(jax.random.key(k), s, jnp.array([a("putback_rh", n["table"]), 0]), p)
            got.append(float(reward))
        assert np.allclose(got, expect), kind


def test_holds_book_and_sit_sofa(kitchen):
    state, _ = kitchen
    sofa = first(state, "sofa")
    goal = jnp.zeros(PR.NUM_PREDICATES, jnp.int8)
    goal = goal.at[PR.PREDICATE["holds_book"]].set(1).at[PR.PREDICATE["sit_sofa"]].set(1)
    target = jnp.full(PR.NUM_PREDICATES, -1, jnp.int16).at[PR.PREDICATE["sit_sofa"]].set(sofa)
    state = state.replace(goal_count=goal, goal_target=target)
    assert W.progress(state)[0] == 0
    book = objects_of(state, "plate")[1]  # made a book
    state = state.replace(nodes=state.nodes.replace(cls=state.nodes.cls.at[book].set(C.CLASS["book"])))
    state = hold(state, 1, 0, book)  # Bob holding it does not count
    assert int(W.satisfied(state)[PR.PREDICATE["holds_book"]]) == 0
    state = hold(state.replace(chars=state.chars.replace(hands=state.chars.hands.at[1, 0].set(-1))), 0, 1, book)
    state = state.replace(chars=state.chars.replace(sitting_on=state.chars.sitting_on.at[0].set(sofa)))
    achieved, done = W.progress(state)
    assert int(achieved) == 2 and bool(done)


def test_truncation_at_the_step_limit(advance, params, kitchen):
    state, _ = kitchen
    state = state.replace(step=jnp.int32(249))
    _, _, terminated, truncated, info = advance(jax.random.key(0), state, jnp.array([0, 0]), params)
    assert bool(truncated) and not bool(terminated) and int(info["episode_steps"]) == 250


# -- both characters in one step ---------------------------------------------------------------------------


def test_same_object_one_random_character_acts(advance, params, kitchen):
    state, n = kitchen
    both = stand_at(stand_at(state, 0, n["table"]), 1, n["table"])
    winners = set()
    for k in range(12):
        after, info = act(advance, params, both, a("grab", n["apple"]), a("grab", n["apple"]), key=k)
        valid = np.asarray(info["action_valid"])
        assert bool(info["conflict"]) and valid.sum() == 1
        winner = int(np.argmax(valid))
        assert int(after.chars.hands[winner, 0]) == n["apple"] and int(after.chars.hands[1 - winner, 0]) == -1
        winners.add(winner)
    assert winners == {0, 1}
    # a walk never conflicts; different objects do not conflict
    _, info = act(advance, params, both, a("walk", n["apple"]), a("grab", n["apple"]))
    assert not bool(info["conflict"]) and np.asarray(info["action_valid"]).all()
    _, info = act(advance, params, both, a("grab", n["apple"]), a("open", first(state, "dishwasher")), key=3)
    assert not bool(info["conflict"])


def test_preconditions_are_checked_before_either_acts(advance, params, kitchen):
    state, n = kitchen
    opened = set_bits(stand_at(stand_at(state, 0, n["fridge"]), 1, n["fridge"]), n["fridge"], C.OPEN)
    # Bob closes the fridge while Alice grabs the plate inside it: both were possible before the step
    after, info = act(advance, params, opened, a("grab", n["plate"]), a("close", n["fridge"]))
    assert np.asarray(info["action_valid"]).all()
    assert int(after.chars.hands[0, 0]) == n["plate"] and not int(after.nodes.states[n["fridge"]]) & C.OPEN


# -- the environments: contract, determinism, jit/vmap, no retrace, errors ---------------------------------


@pytest.fixture(scope="module")
def two_agent():
    return jaxsoc.make("WatchAndHelp-v0")


def test_two_agent_env_contract_and_determinism(two_agent):
    env, params = two_agent
    obs, state = env.reset(jax.random.key(1), params)
    assert set(obs) == {"alice", "bob"} and env.observation_space("alice").contains(jax.device_get(obs["alice"]))
    assert int(obs["alice"]["goal"].sum()) > 0 and int(obs["bob"]["goal"].sum()) == 0  # Bob is not told
    again = env.reset(jax.random.key(1), params)
    chex.assert_trees_all_equal((obs, state), again)
    actions = {"alice": jnp.int32(a("walk", 3)), "bob": jnp.int32(a("walk", 2))}
    out1 = env.step(jax.random.key(2), state, actions, params)
    out2 = env.step(jax.random.key(2), state, actions, params)
    chex.assert_trees_all_equal(out1, out2)
    obs, _, rewards, dones, info = out1
    assert set(dones) == {"alice", "bob", "__all__"} and set(rewards) == {"alice", "bob"}
    assert {"success", "episode_steps", "terminated", "truncated", "final_observation", "final_state"} <= set(info)


def test_jit_vmap_and_no_retrace(two_agent):
    env, params = two_agent
    keys = jax.random.split(jax.random.key(5), 3)
    obs, states = jax.vmap(env.reset_env, (0, None))(keys, params)
    actions = {"alice": jnp.array([0, a("walk", 1), a("walk", 2)]), "bob": jnp.array([a("walk", 3), 0, 0])}
    chex.clear_trace_counter()
    step = jax.jit(chex.assert_max_traces(env._auto_reset_step, n=1))
    batched = jax.vmap(step, (0, 0, 0, None))(keys, states, actions, params)
    for i in range(3):
        one = step(
            keys[i],
            row(states, i),
            row(actions, i),
            params,
        )
        assert_trees_match(row(batched, i), one)  # vmapped: another program
    for t in range(3):  # other values, same shapes: no new trace
        step(
            jax.random.key(t),
            jax.tree_util.tree_map(lambda x: x[0], states),
            {"alice": jnp.int32(t), "bob": jnp.int32(0)},
            params,
        )


def test_the_helper_view_steps_bob_and_alice(two_agent):
    env, params = jaxsoc.make("WatchAndHelp-Helper-v0")
    obs, state = env.reset(jax.random.key(0), params)
    assert not bool(obs["goal"].any())  # Bob is not told the goal by default
    obs, state, reward, terminated, truncated, info = env.step(
        jax.random.key(1), state, jnp.int32(a("walk", 0)), params
    )
    assert bool(info["action_valid"][1]) and bool(info["action_valid"][0])  # random Alice picks valid actions
    assert int(state.world.step) == 1 and "alice_action" in info


def test_bad_input_is_refused(two_agent, tmp_path):
    env, params = two_agent
    _, state = env.reset(jax.random.key(0), params)
    with pytest.raises(ValueError, match="dict keyed by"):
        env.step(jax.random.key(0), state, {"alice": 0}, params)
    with pytest.raises(ValueError, match="outside Discrete"):
        env.step(jax.random.key(0), state, {"alice": jnp.int32(W.NUM_ACTIONS), "bob": jnp.int32(0)}, params)
    with pytest.raises(ValueError, match="unknown task split"):
        E.params_for("test-3")
    with pytest.raises(ValueError, match="unknown household reward"):
        E.check_params(params.replace(reward="dense"))
    with pytest.raises(KeyError, match="WatchAndHelp-v0"):
        jaxsoc.make("WatchAndHelp-v1")


def test_the_faster_auto_reset_equals_the_base_classes(two_agent, kitchen):
    from jaxsoc.core.env import Environment
    from jaxsoc.core.multi_agent import MultiAgentEnvironment

    env, params = two_agent
    state, n = kitchen
    actions = {"alice": jnp.int32(a("open", n["fridge"])), "bob": jnp.int32(0)}
    for step in (0, 249):  # a plain step and one that truncates (and so resets)
        s = state.replace(step=jnp.int32(step))
        mine = jax.jit(env._auto_reset_step)(jax.random.key(7), s, actions, params)
        base = jax.jit(lambda *x: MultiAgentEnvironment._auto_reset_step(env, *x))(
            jax.random.key(7), s, actions, params
        )
        assert_trees_match(mine, base)  # two programs: floats to rounding
    helper, hparams = jaxsoc.make("WatchAndHelp-Helper-v0")
    _, hstate = helper.reset(jax.random.key(0), hparams)
    for step in (0, 249):
        s = hstate.replace(world=hstate.world.replace(step=jnp.int32(step)))
        mine = jax.jit(helper._auto_reset_step)(jax.random.key(3), s, jnp.int32(0), hparams)
        base = jax.jit(lambda *x: Environment._auto_reset_step(helper, *x))(jax.random.key(3), s, jnp.int32(0), hparams)
        assert_trees_match(mine, base)
