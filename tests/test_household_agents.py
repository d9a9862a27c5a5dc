"""The household's human-like agents (``household.agents``): the subgoal list's rules, the tree search's choice on
small hand-built problems, the regression planner's action sequences stepped in the real world, the closing
heuristic, the helper leaving Alice's subgoal to her, batched agents, random goals for HPRG, the Help-stage
metrics by hand, ``play`` and the ``jaxsoc household eval`` command at toy size.

Hand-built scenes start from a read_book task in apartment 0 (three plates, one wineglass, one pancake, one book)
with the goal cleared: each test sets the goal it needs (``with_goal``) and moves things around (``place``,
``hold``, ``stand_at``, as in ``test_household_world.py``). Everything is compiled once per module and the tree
search runs few simulations (``SIMS``) to keep the CPU suite short."""

from __future__ import annotations

import json

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from household_scenes import first, hold, objects_of, place, set_bits, stand_at, with_goal
from hypothesis import given, settings
from hypothesis import strategies as st
from tolerance import assert_trees_match

from jaxsoc.cli import main
from jaxsoc.envs.household import classes as C
from jaxsoc.envs.household import env as E
from jaxsoc.envs.household import predicates as PR
from jaxsoc.envs.household import tasks as T
from jaxsoc.envs.household import world as W
from jaxsoc.envs.household.agents import agents as AG
from jaxsoc.envs.household.agents import belief as B
from jaxsoc.envs.household.agents import evaluate as EV
from jaxsoc.envs.household.agents import planner as P
from jaxsoc.learners.household import help_eval

SIMS = 8  # tree-search simulations everywhere (the eval command's test uses the same, so it shares the compile)
PLATE = PR.PREDICATE["on_plate_kitchentable"]
HOLDS, SIT = PR.PREDICATE["holds_book"], PR.PREDICATE["sit_sofa"]
NONE_SEEN = jnp.zeros(W.NUM_NODES, bool)
ALL_SEEN = jnp.ones(W.NUM_NODES, bool)


# -- hand-built states ---------------------------------------------------------------------------------------


def listed(goals) -> list[tuple[int, int, int]]:
    """Returns the valid subgoals as ``(pred, obj, dest)``, in list order."""
    valid = np.asarray(goals.valid)
    return [
        (int(p), int(o), int(d))
        for p, o, d in zip(*(np.asarray(x)[valid] for x in (goals.pred, goals.obj, goals.dest)))
    ]


def row(tree, i: int):
    return jax.tree_util.tree_map(lambda x: x[i], tree)


def decoded(action) -> tuple[str, int]:
    verb, target = W.decode_action(action)
    return W.VERBS[int(verb)], int(target)


def collapsed(actions: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """Returns ``actions`` with each run of walks merged into its last walk (a walk takes several steps)."""
    out: list[tuple[str, int]] = []
    for a in actions:
        if out and a[0] == "walk" and out[-1][0] == "walk":
            out[-1] = a
        else:
            out.append(a)
    return out


@pytest.fixture(scope="module")
def scene():
    """A read_book task in apartment 0 with no goal and every container closed: plates INSIDE the fridge, ON the
    bedroom's cabinet and INSIDE the living room's cabinet, the book ON the bench; Alice in the living room,
    Bob in the bedroom."""
    state = jax.jit(T.generate)(jax.random.key(0), jnp.int32(0), jnp.array([4, -1], jnp.int32))
    names = ("fridge", "dishwasher", "kitchentable", "sofa", "coffeetable", "bench", "bedroom", "livingroom")
    n = {name: first(state, name) for name in names}
    n.update(book=first(state, "book"), wineglass=first(state, "wineglass"), pancake=first(state, "pancake"))
    n["plates"] = objects_of(state, "plate")
    assert len(n["plates"]) == 3 and len(objects_of(state, "book")) == 1
    assert len(objects_of(state, "wineglass")) == 1 and len(objects_of(state, "pancake")) == 1
    rooms = np.asarray(state.nodes.room)
    n["cabinet"] = next(i for i in objects_of(state, "cabinet") if rooms[i] == n["bedroom"])
    living_cabinet = next(i for i in objects_of(state, "cabinet") if rooms[i] == n["livingroom"])
    state = state.replace(nodes=state.nodes.replace(states=jnp.zeros_like(state.nodes.states)))
    for obj, furniture, relation in zip(
        (*n["plates"], n["book"]),
        (n["fridge"], n["cabinet"], living_cabinet, n["bench"]),
        (C.INSIDE, C.ON_TOP, C.INSIDE, C.ON_TOP),
    ):
        state = place(state, obj, furniture, relation)
    state = stand_at(stand_at(with_goal(state), 0, n["livingroom"]), 1, n["bedroom"])
    return state, n


@pytest.fixture(scope="module")
def fn(scene):
    """The planner's functions and the world's step, jitted once for the module (characters traced; the step
    does not read the task bank, so it serves any task)."""
    state, _ = scene
    params = E.HouseholdParams(tasks=jax.tree_util.tree_map(lambda x: x[None], state))

    @jax.jit
    def plan(state, char, choice):
        """The regression planner on the true world, every object known (as an omniscient agent plans)."""
        goals = P.subgoals(state, char, ALL_SEEN)
        return P.subgoal_action(state, char, goals, choice, W.view(state, char).visible), goals

    return {
        "subgoals": jax.jit(P.subgoals),
        "search": jax.jit(P.search, static_argnames="num_simulations"),
        "plan": plan,
        "visible": jax.jit(lambda s, c: W.view(s, c).visible),
        "advance": jax.jit(lambda k, s, a: E.advance(k, s, a, params)),
    }


# -- 1. the subgoal list -------------------------------------------------------------------------------------


def test_subgoals_list_the_plates_still_to_place(fn, scene):
    state, n = scene
    table, (p_fridge, p_cabinet, p_living) = n["kitchentable"], n["plates"]
    # two plates wanted on the table, one there already: the two others, not the one that counts
    s = place(with_goal(state, on_plate_kitchentable=(2, table)), p_fridge, table, C.ON_TOP)
    goals = fn["subgoals"](s, 0, NONE_SEEN, -1)
    assert sorted(listed(goals)) == [(PLATE, p_cabinet, table), (PLATE, p_living, table)]
    assert goals.pred.shape == (P.MAX_SUBGOALS,) and int(goals.valid.sum()) == 2
    # three wanted and none there: every plate, wherever it is (inside the closed fridge too)
    s3 = place(with_goal(state, on_plate_kitchentable=(3, table)), p_fridge, n["fridge"], C.INSIDE)
    assert sorted(o for _, o, _ in listed(fn["subgoals"](s3, 0, NONE_SEEN, -1))) == n["plates"]
    # Alice in the bedroom sees the plate on its cabinet: only that one
    bedroom = stand_at(s, 0, n["cabinet"])
    seen = fn["visible"](bedroom, 0)
    assert bool(seen[p_cabinet]) and not bool(seen[p_living])
    assert listed(fn["subgoals"](bedroom, 0, seen, -1)) == [(PLATE, p_cabinet, table)]
    # seeing no candidate (only the one on the table): all of them again
    at_table = stand_at(s, 0, table)
    assert len(listed(fn["subgoals"](at_table, 0, fn["visible"](at_table, 0), -1))) == 2
    # holding a matching plate: that subgoal alone (also when others are seen); a non-matching object does not
    holding = hold(bedroom, 0, 1, p_living)
    assert listed(fn["subgoals"](holding, 0, fn["visible"](holding, 0), -1)) == [(PLATE, p_living, table)]
    wine = hold(s, 0, 0, n["wineglass"])
    assert len(listed(fn["subgoals"](wine, 0, NONE_SEEN, -1))) == 2
    # the other character's plate is not a candidate; Bob's own is his only one
    bob_holds = hold(s, 1, 0, p_living)
    assert listed(fn["subgoals"](bob_holds, 0, NONE_SEEN, -1)) == [(PLATE, p_cabinet, table)]
    assert listed(fn["subgoals"](bob_holds, 1, NONE_SEEN, -1)) == [(PLATE, p_living, table)]


def test_subgoals_exclude_unless_the_only_candidate(fn, scene):
    state, n = scene
    table, (p_fridge, p_cabinet, p_living) = n["kitchentable"], n["plates"]
    s = place(with_goal(state, on_plate_kitchentable=(2, table)), p_fridge, table, C.ON_TOP)
    assert listed(fn["subgoals"](s, 1, NONE_SEEN, p_cabinet)) == [(PLATE, p_living, table)]
    assert listed(fn["subgoals"](s, 1, NONE_SEEN, p_living)) == [(PLATE, p_cabinet, table)]
    assert len(listed(fn["subgoals"](s, 1, NONE_SEEN, n["book"]))) == 2  # excluding a non-candidate: no change
    only = hold(s, 0, 0, p_living)  # Alice holds one: the cabinet's plate is Bob's only candidate
    assert listed(fn["subgoals"](only, 1, NONE_SEEN, p_cabinet)) == [(PLATE, p_cabinet, table)]


def test_subgoals_book_then_sofa_for_alice_only(fn, scene):
    state, n = scene
    table, sofa, (p_fridge, p_cabinet, _) = n["kitchentable"], n["sofa"], n["plates"]
    goal = with_goal(state, on_plate_kitchentable=(2, table), holds_book=(1, -1), sit_sofa=(1, sofa))
    s = place(goal, p_fridge, table, C.ON_TOP)
    # plates left to place: neither the book nor the sofa
    assert {p for p, _, _ in listed(fn["subgoals"](s, 0, ALL_SEEN, -1))} == {PLATE}
    # nothing left to place: the book (Alice only), not yet the sofa
    done = place(s, p_cabinet, table, C.ON_TOP)
    assert listed(fn["subgoals"](done, 0, ALL_SEEN, -1)) == [(HOLDS, n["book"], -1)]
    assert listed(fn["subgoals"](done, 1, ALL_SEEN, -1)) == []
    # holding the book: the sofa last, alone
    reading = hold(done, 0, 0, n["book"])
    assert listed(fn["subgoals"](reading, 0, ALL_SEEN, -1)) == [(SIT, -1, sofa)]
    assert listed(fn["subgoals"](reading, 1, ALL_SEEN, -1)) == []
    # a book goal without a sofa: nothing once the book is held; a sofa goal alone: the sofa
    assert listed(fn["subgoals"](hold(with_goal(state, holds_book=(1, -1)), 0, 0, n["book"]), 0, ALL_SEEN, -1)) == []
    assert listed(fn["subgoals"](with_goal(state, sit_sofa=(1, sofa)), 0, ALL_SEEN, -1)) == [(SIT, -1, sofa)]
    # Bob never sits nor reads for Alice, even with nothing else to do
    assert listed(fn["subgoals"](with_goal(state, sit_sofa=(1, sofa)), 1, ALL_SEEN, -1)) == []


# -- 2. the tree search --------------------------------------------------------------------------------------


def _two_plates(state, n, near: int, far: int):
    """One plate wanted on the kitchen table (one of two there already): ``near`` ON the coffee table in Alice's
    room, ``far`` INSIDE the closed bedroom cabinet."""
    s = with_goal(state, on_plate_kitchentable=(2, n["kitchentable"]))
    third = next(p for p in n["plates"] if p not in (near, far))
    s = place(s, third, n["kitchentable"], C.ON_TOP)
    s = place(place(s, near, n["coffeetable"], C.ON_TOP), far, n["cabinet"], C.INSIDE)
    return set_bits(stand_at(s, 0, n["livingroom"]), n["cabinet"], 0)


def test_search_picks_the_near_plate(fn, scene):
    state, n = scene
    a, b = n["plates"][1], n["plates"][2]
    for near, far in ((a, b), (b, a)):  # either slot order: the choice follows the place, not the index
        s = _two_plates(state, n, near, far)
        goals = fn["subgoals"](s, 0, NONE_SEEN, -1)
        assert sorted(o for _, o, _ in listed(goals)) == sorted((near, far))
        for seed in range(3):
            choice, tree = fn["search"](jax.random.key(seed), s, 0, goals, num_simulations=SIMS)
            assert int(goals.obj[choice]) == near
            assert int(tree.visits[0].sum()) == SIMS and int(tree.size) > 1


def test_search_is_deterministic_and_empty_without_subgoals(fn, scene):
    state, n = scene
    s = _two_plates(state, n, n["plates"][1], n["plates"][2])
    goals = fn["subgoals"](s, 0, NONE_SEEN, -1)
    once = fn["search"](jax.random.key(7), s, 0, goals, num_simulations=SIMS)
    chex.assert_trees_all_equal(once, fn["search"](jax.random.key(7), s, 0, goals, num_simulations=SIMS))
    nothing = fn["subgoals"](state, 0, NONE_SEEN, -1)  # the scene's goal is empty
    assert not bool(nothing.valid.any())
    choice, tree = fn["search"](jax.random.key(0), state, 0, nothing, num_simulations=SIMS)
    assert int(choice) == -1 and int(tree.visits.sum()) == 0
    action, _ = fn["plan"](state, 0, choice)
    assert int(action) == 0  # the regression planner idles (noop)


@settings(max_examples=12, deadline=None)
@given(
    furniture=st.integers(0, 24),
    inside=st.booleans(),
    opened=st.booleans(),
    where=st.integers(0, 24),
    seed=st.integers(0, 2**16),
)
def test_search_with_one_candidate_chooses_it(fn, scene, furniture, inside, opened, where, seed):
    state, n = scene
    cls, props = np.asarray(state.nodes.cls), np.asarray(state.nodes.properties)
    fur = [f for f in range(W.FURNITURE0, W.OBJECT0) if cls[f] > 0]
    bit = C.CONTAINERS if inside else C.SURFACES
    holders = [f for f in fur if props[f] & bit and f != n["kitchentable"]] or fur[:1]
    f = holders[furniture % len(holders)]
    s = place(
        with_goal(state, on_wineglass_kitchentable=(1, n["kitchentable"])),
        n["wineglass"],
        f,
        C.INSIDE if inside else C.ON_TOP,
    )
    s = set_bits(stand_at(s, 0, fur[where % len(fur)]), f, C.OPEN if opened and props[f] & C.CAN_OPEN else 0)
    goals = fn["subgoals"](s, 0, fn["visible"](s, 0), -1)
    assert int(goals.valid.sum()) == 1
    choice, _ = fn["search"](jax.random.key(seed), s, 0, goals, num_simulations=SIMS)
    assert int(choice) == 0 and int(goals.obj[0]) == n["wineglass"]


# -- 3. the regression planner, stepped in the world ---------------------------------------------------------


def drive(fn, state, char: int = 0, steps: int = 40) -> tuple[list[tuple[str, int]], object, bool]:
    """Returns ``(actions, state, success)``: ``char`` following the regression planner for the only subgoal
    (re-listed on the true state every step) until the goal holds; the other character idles."""
    actions = []
    for t in range(steps):
        action, goals = fn["plan"](state, char, jnp.int32(0))
        assert int(goals.valid.sum()) == 1
        pair = jnp.array([0, 0], jnp.int32).at[char].set(action)
        state, _, success, _, info = fn["advance"](jax.random.key(t), state, pair)
        assert bool(info["action_valid"][char]), decoded(action)
        actions.append(decoded(action))
        if bool(success):
            return actions, state, True
    return actions, state, False


def test_planner_fetches_from_a_closed_fridge_to_the_table(fn, scene):
    state, n = scene
    fridge, table, glass = n["fridge"], n["kitchentable"], n["wineglass"]
    s = place(with_goal(state, on_wineglass_kitchentable=(1, table)), glass, fridge, C.INSIDE)
    actions, end, success = drive(fn, s)
    assert success
    assert collapsed(actions) == [
        ("walk", fridge),
        ("open", fridge),
        ("grab", glass),
        ("walk", table),
        ("putback_rh", table),
    ]
    assert actions.count(("walk", fridge)) > 1  # it walked from the living room, a metre a step


def test_planner_puts_into_a_closed_dishwasher(fn, scene):
    state, n = scene
    dishwasher, glass = n["dishwasher"], n["wineglass"]
    s = place(with_goal(state, inside_wineglass_dishwasher=(1, dishwasher)), glass, n["coffeetable"], C.ON_TOP)
    actions, end, success = drive(fn, stand_at(s, 0, n["coffeetable"]))
    assert success and int(end.nodes.parent[glass]) == dishwasher and int(end.nodes.relation[glass]) == C.INSIDE
    assert collapsed(actions) == [("grab", glass), ("walk", dishwasher), ("open", dishwasher), ("putin_rh", dishwasher)]
    # already holding it in the left hand: straight to the dishwasher, the left hand puts it in
    held = hold(stand_at(s, 0, n["coffeetable"]), 0, 1, glass)
    actions, _, success = drive(fn, held)
    assert success and collapsed(actions) == [("walk", dishwasher), ("open", dishwasher), ("putin_lh", dishwasher)]


def test_planner_grabs_a_book_and_sits_on_the_sofa(fn, scene):
    state, n = scene
    kitchen = stand_at(state, 0, n["fridge"])
    actions, end, success = drive(fn, with_goal(kitchen, holds_book=(1, -1)))
    assert success and int(end.chars.hands[0, 0]) == n["book"]
    verbs = collapsed(actions)
    assert [v for v, _ in verbs] == ["walk", "grab"] and verbs[1][1] == n["book"]
    assert verbs[0][1] in (n["book"], n["bench"])  # to the bench while the book is unseen, then to the book
    actions, end, success = drive(fn, with_goal(kitchen, sit_sofa=(1, n["sofa"])))
    assert success and int(end.chars.sitting_on[0]) == n["sofa"]
    assert collapsed(actions) == [("walk", n["sofa"]), ("sit", n["sofa"])]


# -- 4. the closing heuristic --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def oracle(fn):
    """Returns ``run(state, steps) -> (actions, state, success)``: the omniscient Alice acting alone."""
    agent = AG.PlanningAgent(char=0, omniscient=True, num_simulations=SIMS)
    init, act = jax.jit(agent.init), jax.jit(agent.act)

    def run(state, steps=40):
        memory, actions = init(jax.random.key(0), state), []
        for t in range(steps):
            action, memory = act(jax.random.key(t), memory, state)
            state, _, success, _, info = fn["advance"](jax.random.key(t), state, jnp.stack([action, jnp.int32(0)]))
            assert bool(info["action_valid"][0]), decoded(action)
            actions.append(decoded(action))
            if bool(success):
                return actions, state, True
        return actions, state, False

    return run


def test_closes_the_fridge_after_taking_the_last_object(oracle, scene):
    state, n = scene
    fridge, table, glass = n["fridge"], n["kitchentable"], n["wineglass"]
    s = place(with_goal(state, on_wineglass_kitchentable=(1, table)), glass, fridge, C.INSIDE)
    actions, end, success = oracle(s)
    assert success and not int(end.nodes.states[fridge]) & C.OPEN
    assert collapsed(actions) == [
        ("walk", fridge),
        ("open", fridge),
        ("grab", glass),
        ("close", fridge),
        ("walk", table),
        ("putback_rh", table),
    ]


def test_keeps_the_dishwasher_open_while_it_is_still_needed(oracle, scene):
    state, n = scene
    dishwasher, table, glass, plate = n["dishwasher"], n["kitchentable"], n["wineglass"], n["plates"][0]
    s = with_goal(state, inside_wineglass_dishwasher=(1, dishwasher), inside_plate_dishwasher=(1, dishwasher))
    s = place(place(s, glass, table, C.ON_TOP), plate, table, C.ON_TOP)
    actions, end, success = oracle(s)
    assert success and int(end.nodes.states[dishwasher]) & C.OPEN
    steps = collapsed(actions)
    assert ("close", dishwasher) not in steps and steps.count(("open", dishwasher)) == 1
    first_put = next(i for i, (v, _) in enumerate(steps) if v == "putin_rh")
    assert steps[first_put + 1][0] == "walk"  # walks away from the open dishwasher to fetch the second object
    assert [v for v, _ in steps].count("putin_rh") == 2


def test_keeps_the_fridge_open_while_another_object_is_inside(oracle, scene):
    state, n = scene
    fridge, table, glass, pancake = n["fridge"], n["kitchentable"], n["wineglass"], n["pancake"]
    s = with_goal(state, on_wineglass_kitchentable=(1, table), on_pancake_kitchentable=(1, table))
    s = place(place(s, glass, fridge, C.INSIDE), pancake, fridge, C.INSIDE)
    actions, end, success = oracle(s)
    steps = collapsed(actions)
    assert success and steps.count(("open", fridge)) == 1
    assert steps.index(("close", fridge)) > [v for v, _ in steps].index("grab") + 1  # not right after the first grab


# -- 5./6. the helper and Alice together; batched agents -----------------------------------------------------


@pytest.fixture(scope="module")
def test1():
    return T.cached_split("test-1")


@pytest.fixture(scope="module")
def pair():
    """Alice and the HP helper (``make_agent``), their ``init`` / ``act`` jitted once."""
    alice, helper = AG.make_agent("alice", SIMS), AG.make_agent("hp", SIMS)
    return {
        "alice": alice,
        "helper": helper,
        "init_a": jax.jit(alice.init),
        "init_b": jax.jit(helper.init),
        "act_a": jax.jit(alice.act),
        "act_b": jax.jit(helper.act),
    }


@jax.jit
def _bob_candidates(key, memory, state, alice_obj):
    """Returns whether Bob's subgoal list (in the world he samples in ``act`` with ``key``, nothing excluded)
    holds an object other than ``alice_obj``, and the list's objects."""
    k_sample, _ = jax.random.split(key)
    belief = B.update(memory.belief, state, 1)
    _, world = B.sample_world(k_sample, belief, state, 1)
    world = world.replace(goal_count=memory.goal_count, goal_target=memory.goal_target)
    goals = P.subgoals(world, 1, W.view(state, 1).visible)
    objs = jnp.where(goals.valid, goals.obj, -1)
    return ((objs >= 0) & (objs != alice_obj)).any(), objs


def test_helper_never_takes_alices_subgoal(fn, pair, test1):
    contested = 0
    for index in (10, 22):  # setup_table with 5 objects, put_fridge with 6
        state = test1.task(index)
        key = jax.random.key(index)
        k_a, k_b, key = jax.random.split(key, 3)
        mem_a, mem_b = pair["init_a"](k_a, state), pair["init_b"](k_b, state)
        for _ in range(25):
            key, ka, kb, ks = jax.random.split(key, 4)
            act_a, mem_a = pair["act_a"](ka, mem_a, state)
            others, objs = _bob_candidates(kb, mem_b, state, mem_a.subgoal_obj)
            act_b, mem_b = pair["act_b"](kb, mem_b, state, mem_a)
            alice_obj, bob_obj = int(mem_a.subgoal_obj), int(mem_b.subgoal_obj)
            assert bob_obj == -1 or bob_obj in np.asarray(objs)  # the reproduction of Bob's list is his list
            if alice_obj >= 0 and bool(others):
                contested += 1
                assert bob_obj != alice_obj
            state, _, success, _, _ = fn["advance"](ks, state, jnp.stack([act_a, act_b]))
            if bool(success):
                break
    assert contested >= 15  # the rule was exercised


def test_vmapped_agent_equals_single_calls(pair, test1):
    alice = pair["alice"]
    states = T.take(test1.states, [0, 35, 80])
    keys = jax.random.split(jax.random.key(3), 3)
    init = jax.vmap(alice.init)(keys, states)
    act = jax.jit(jax.vmap(alice.act))
    step1 = act(keys, init, states)
    step2 = act(jax.random.split(keys[0], 3), step1[1], states)
    for i in range(3):
        state = row(states, i)
        one = pair["act_a"](keys[i], pair["init_a"](keys[i], state), state)
        assert_trees_match(one, row(step1, i))  # vmapped: another program
        two = pair["act_a"](jax.random.split(keys[0], 3)[i], one[1], state)
        assert_trees_match(two, row(step2, i))
    assert len({int(a) for a in step1[0]}) > 1  # three different decisions, not one broadcast


# -- 7. random goals (HPRG) ----------------------------------------------------------------------------------


def test_random_goal(test1):
    state = test1.task(0)  # setup_table: Alice's goal names a kitchen table
    keys = jax.random.split(jax.random.key(0), 300)
    draw = jax.jit(jax.vmap(AG.random_goal, in_axes=(0, None)))
    count, target = draw(keys, state)
    count, target = np.asarray(count, np.int32), np.asarray(target, np.int32)
    assert count.shape == (300, PR.NUM_PREDICATES) and target.shape == (300, PR.NUM_PREDICATES)
    assert set(np.unique(count)) <= {0, 1, 2}
    assert ((count > 0).sum(1) <= 6).all() and (count > 0).sum(1).max() == 6
    assert (count[:, [HOLDS, SIT]] == 0).all()
    assert (target[count == 0] == -1).all()
    cls = np.asarray(state.nodes.cls)
    rows, preds = np.nonzero(count)
    assert (cls[target[rows, preds]] == PR.PRED_TARGET_CLASS[preds]).all()
    table = np.asarray(state.goal_target)[PLATE]
    on_table = PR.PRED_TARGET_CLASS[preds] == C.CLASS["kitchentable"]
    assert on_table.any() and (target[rows, preds][on_table] == table).all()
    assert set(preds) == set(np.flatnonzero(np.isin(PR.PRED_KIND, (PR.ON_KIND, PR.INSIDE_KIND))))  # all 28 drawn
    # without a dishwasher its predicates never get a count; the helper's goal is this draw
    dish = first(state, "dishwasher")
    no_dish = state.replace(nodes=state.nodes.replace(cls=state.nodes.cls.at[dish].set(0)))
    count2, _ = draw(keys, no_dish)
    into_dish = np.equal(PR.PRED_TARGET_CLASS, C.CLASS["dishwasher"])
    assert (np.asarray(count2)[:, into_dish] == 0).all() and (np.asarray(count2) > 0).any()
    memory = AG.make_agent("hprg").init(keys[5], state)
    chex.assert_trees_all_equal((memory.goal_count, memory.goal_target), AG.random_goal(keys[5], state))


# -- 8. the metrics by hand ----------------------------------------------------------------------------------


def test_metrics_by_hand():
    alone = {
        "success": np.array([[True, False], [True, True]]),
        "length": np.array([[100, 250], [50, 70]]),
        "conflicts": np.zeros((2, 2), np.int32),
    }
    helped = {
        "success": np.array([[True, True], [True, True]]),
        "length": np.array([[80, 120], [40, 50]]),
        "conflicts": np.array([[0, 3], [0, 0]]),
    }
    activities = np.array([[0, -1], [4, -1]], np.int8)  # setup_table, read_book
    out = EV.metrics(alone, helped, activities)
    assert set(out) == {"all", "setup_table", "read_book"}
    row = out["all"]
    se = lambda a, b: abs(a - b) / 2  # noqa: E731  (std with ddof 1 of two values over sqrt 2)
    assert row["tasks"] == 2
    assert row["alone_success"] == pytest.approx((0.75, se(0.5, 1.0)))
    assert row["helped_success"] == pytest.approx((1.0, 0.0))
    assert row["alone_length"] == pytest.approx(((175 + 60) / 2, se(175, 60)))
    assert row["helped_length"] == pytest.approx(((100 + 45) / 2, se(100, 45)))
    r_alone = (0.5 - 175 / 250, 1 - 60 / 250)
    assert row["alone_reward"] == pytest.approx((sum(r_alone) / 2, se(*r_alone)))
    r_help = (1 - 100 / 250, 1 - 45 / 250)
    assert row["helped_reward"] == pytest.approx((sum(r_help) / 2, se(*r_help)))
    speedup = (175 / 100 - 1, 60 / 45 - 1)  # per task, runs averaged first
    assert row["speedup"] == pytest.approx((sum(speedup) / 2, se(*speedup)))
    assert row["speedup"][0] != pytest.approx(235 / 145 - 1)  # not the ratio of the means
    assert row["conflict_runs"] == pytest.approx((0.25, 0.25))
    one = out["setup_table"]
    assert one["tasks"] == 1 and one["alone_success"] == (0.5, 0.0) and one["speedup"] == pytest.approx((0.75, 0.0))
    assert out["read_book"]["alone_length"] == (60.0, 0.0)
    solo = EV.metrics(alone, None, activities)
    assert "speedup" not in solo["all"] and "helped_success" not in solo["all"]
    assert solo["all"]["alone_reward"] == pytest.approx(row["alone_reward"])


# -- 9./10. play and the eval command ------------------------------------------------------------------------


def test_play_alice_alone(test1):
    params = E.HouseholdParams(tasks=test1.states)
    alice = AG.make_agent("alice", SIMS)
    easy = test1.task(0)  # one plate and one water glass on the kitchen table
    impossible = easy.replace(goal_count=easy.goal_count.at[PLATE].set(9))  # more plates than the apartment has
    tasks = jax.tree_util.tree_map(lambda a, b: jnp.stack([a, b]), easy, impossible)
    out = jax.device_get(
        jax.jit(lambda t, k: EV.play(t, alice, None, params, k))(tasks, jax.random.split(jax.random.key(0), 2))
    )
    assert out["success"].tolist() == [True, False]
    assert 0 < out["length"][0] < 250 and out["length"][1] == 250
    assert out["conflicts"].tolist() == [0, 0]
    assert out["valid"].shape == (2, 2) and (out["valid"] >= 0).all() and (out["valid"] <= 1).all()
    assert out["valid"][0, 0] > 0.9 and out["valid"][0, 1] == 1.0  # Bob idles: noops are always valid


def _eval(tmp_path, helper: str) -> dict:
    """Runs ``jaxsoc household eval`` at toy size (2 tasks, 1 seed) and returns its JSON record."""
    args = ["household", "eval", "--helper", helper, "--num-tasks", "2", "--seeds", "1", "--simulations", str(SIMS)]
    assert main([*args, "--batch", "2", "--out", str(tmp_path)]) == 0
    for suffix in ("json", "md", "png"):
        assert (tmp_path / f"household_help.{suffix}").stat().st_size > 0
    record = json.loads((tmp_path / "household_help.json").read_text())
    assert record["split"] == "test-1" and record["tasks"] == 2 and record["seeds"] == 1
    assert record["simulations"] == SIMS and list(record["results"]) == [helper]
    alone = np.array(record["lengths"][helper]["alone"])
    assert alone.shape == (2, 1) and ((alone > 0) & (alone <= 250)).all()
    return record


def test_eval_command_alice_alone_and_refusals(tmp_path, capsys):
    """The command's whole path with Alice alone (its episodes are ``test_play_alice_alone``'s program, which
    the compilation cache already holds), then bad input refused with exit code 2 and a clear message."""
    record = _eval(tmp_path, "alice-alone")
    row = record["results"]["alice-alone"]["all"]
    assert row["tasks"] == 2 and "speedup" not in row and record["lengths"]["alice-alone"]["helped"] is None
    assert "| alice-alone | all | 2 |" in capsys.readouterr().out
    assert "| alice-alone | all |" in (tmp_path / "household_help.md").read_text()
    assert main(["household", "eval", "--helper", "hp-tg", "bogus", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "jaxsoc household eval: unknown helper 'bogus'" in err and "oracle-ab" in err
    assert main(["household", "eval", "--seeds", "0"]) == 2
    assert "--seeds, --batch, --simulations and --num-tasks must be positive" in capsys.readouterr().err
    assert main(["household", "eval", "--num-tasks", "0"]) == 2
    assert "must be positive" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
    # --append adds helpers to results of the same setting only (checked before anything runs)
    args = ["household", "eval", "--helper", "random", "--num-tasks", "2", "--seeds", "1", "--simulations", str(SIMS)]
    assert main([*args, "--seed", "1", "--append", "--out", str(tmp_path)]) == 2
    assert "--append:" in capsys.readouterr().err
    assert main([*args, "--append"]) == 2
    assert "give --out" in capsys.readouterr().err
    merged = help_eval.merged(record, {"results": {"random": 1}, "lengths": {"random": 2}, "runs": {}, "seconds": 1.0})
    assert list(merged["results"]) == ["alice-alone", "random"] and merged["seconds"] == record["seconds"] + 1.0


@pytest.mark.slow
def test_eval_command_with_the_hp_helper(tmp_path, capsys):
    """The command with a helper: Alice alone and Alice with HP (a second episode program, ~15 s to compile)."""
    record = _eval(tmp_path, "hp-tg")
    assert "| hp-tg | all | 2 |" in capsys.readouterr().out
    assert np.array(record["lengths"]["hp-tg"]["helped"]).shape == (2, 1)
    row = record["results"]["hp-tg"]["all"]
    assert {"alone_success", "helped_success", "speedup", "helped_reward", "conflict_runs"} <= set(row)
    assert 0.0 <= row["helped_success"][0] <= 1.0 and row["speedup"][0] > -1.0


class _WalkToKitchen:
    """A stand-in learned helper: walks to the kitchen and counts its steps in its recurrent state."""

    def helper_init(self, key, state):
        return jnp.int32(0)

    def helper_act(self, params, helper_state, state, obs):
        assert obs["goal"].shape == (PR.NUM_PREDICATES,)
        return W.encode_action("walk", params), helper_state + 1


def test_a_learned_helper_plugs_into_play():
    test1 = T.cached_split("test-1", 0)
    params = E.HouseholdParams(tasks=test1.states)
    kitchen = C.ROOM_CLASSES.index("kitchen")
    helper = AG.PolicyHelper(_WalkToKitchen(), params=kitchen)
    tasks = T.take(test1.states, np.array([0]))
    out = jax.jit(lambda t, k: EV.play(t, AG.RandomAgent(char=0), helper, params, k, max_steps=12))(
        tasks, jax.random.split(jax.random.key(0), 1)
    )
    assert float(out["valid"][0, 1]) == 1.0  # walking to a room is always possible


class _ActsOnItsGoal:
    """A stand-in helper whose moves show which goal it was given: a noop while its goal asks for a plate on
    the table, an invalid action (grabbing a room) otherwise."""

    def init(self, key, state):
        return state.goal_count[PLATE] > 0

    def act(self, key, memory, state, partner=None):
        return jnp.where(memory, 0, W.encode_action("grab", 0)).astype(jnp.int32), memory


def test_goal_targets_place_an_inferred_goal(test1):
    state = test1.task(0)  # setup_table: Alice's goal names a kitchen table
    fridge_cupcake = PR.PREDICATE["inside_cupcake_fridge"]
    dish_plate = PR.PREDICATE["inside_plate_dishwasher"]
    count = np.zeros(PR.NUM_PREDICATES, np.int32)
    count[[PLATE, HOLDS, fridge_cupcake, dish_plate]] = [2, 1, 1, 1]
    c, t = jax.device_get(jax.jit(AG.goal_targets)(state, count))
    np.testing.assert_array_equal(c, count)
    assert t[PLATE] == int(state.goal_target[PLATE]) and t[HOLDS] == -1
    cls = np.asarray(state.nodes.cls)
    assert cls[t[fridge_cupcake]] == C.CLASS["fridge"] and cls[t[dish_plate]] == C.CLASS["dishwasher"]
    assert (t[count == 0] == -1).all()
    dish = first(state, "dishwasher")
    no_dish = state.replace(nodes=state.nodes.replace(cls=state.nodes.cls.at[dish].set(0)))
    c2, t2 = AG.goal_targets(no_dish, count)
    assert int(c2[dish_plate]) == 0 and int(t2[dish_plate]) == -1 and int(c2[PLATE]) == 2


def test_play_gives_the_helper_the_inferred_goal(test1):
    """``helper_goals`` replaces the goal the helper's ``init`` sees (Alice keeps hers): the stand-in idles
    with a plate in its goal and acts invalidly without one."""
    params = E.HouseholdParams(tasks=test1.states)
    tasks = T.take(test1.states, np.array([0, 0]))  # Alice's true goal has a plate on the table
    goals = np.zeros((2, PR.NUM_PREDICATES), np.int8)
    goals[0, PLATE] = 1  # episode 0: an inferred goal with a plate; episode 1: one without
    run = jax.jit(lambda t, k, g: EV.play(t, AG.RandomAgent(char=0), _ActsOnItsGoal(), params, k, 12, g))
    keys = jax.random.split(jax.random.key(0), 2)
    valid = np.asarray(run(tasks, keys, jnp.asarray(goals))["valid"][:, 1])
    assert valid[0] == 1.0 and valid[1] == 0.0
    assert (np.asarray(run(tasks, keys, None)["valid"][:, 1]) == 1.0).all()  # no helper_goals: the true goal


def test_eval_refuses_inferred_goal_helpers_without_their_runs(capsys):
    for helper, missing in (("hp", "--watch RUN"), ("hybrid", "--watch RUN"), ("hrl", "--watch RUN")):
        assert main(["household", "eval", "--helper", helper, "--num-tasks", "1"]) == 2
        assert missing in capsys.readouterr().err
    assert main(["household", "eval", "--helper", "hybrid", "--watch", "w", "--num-tasks", "1"]) == 2
    assert "needs --hybrid RUN" in capsys.readouterr().err
    assert main(["household", "eval", "--helper", "hrl", "--watch", "w", "--hrl", "h", "--num-tasks", "1"]) == 2
    assert "give --hybrid RUN as well" in capsys.readouterr().err
