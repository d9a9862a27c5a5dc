"""The household's learned helpers read only what Bob observes (issue 59, item 3).

- An option of the Hybrid and HRL helpers ends on progress Bob has seen (``options.observed_satisfied`` of his
  ``Sightings``), not on the true satisfied counts: Alice's placement out of his view, or inside a closed container
  in his room, ends an option only under the privileged ``option_end="true"`` rule.
- An inferred goal is placed in the apartment without reading Alice's goal (``agents.goal_targets``).
- Permuting what Bob cannot see (the places of the objects out of his view, the open / closed state of the furniture
  of the other rooms, Alice's true goal) changes no decision of the Hybrid or the HRL helper (tiny networks at
  random: the property is about what they read), nor the goals a Watch model infers from a demonstration when the
  demonstration's true goal is permuted.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from household_scenes import first, hold, objects_of, place, roll_hidden_objects, set_bits, stand_at, with_goal

from jaxsoc.envs.household import apartments as A
from jaxsoc.envs.household import classes as C
from jaxsoc.envs.household import env as E
from jaxsoc.envs.household import hybrid_env as HE
from jaxsoc.envs.household import options as OPT
from jaxsoc.envs.household import predicates as PR
from jaxsoc.envs.household import subgoal_env as SE
from jaxsoc.envs.household import tasks as T
from jaxsoc.envs.household import world as W
from jaxsoc.envs.household.agents import agents as AG
from jaxsoc.envs.household.agents import demos as D
from jaxsoc.learners.household import hrl as HR
from jaxsoc.learners.household import hybrid as H
from jaxsoc.learners.household import hybrid_config, hybrid_run
from jaxsoc.learners.household import watch as WA
from jaxsoc.learners.household import watch_run as WR
from jaxsoc.learners.networks import household as NH

GLASS = PR.PREDICATE["on_waterglass_kitchentable"]
CUPCAKE = PR.PREDICATE["inside_cupcake_fridge"]
N = 4


@pytest.fixture(scope="module")
def bank() -> W.State:
    """Four tasks: setup_table, put_fridge, prepare_food and read_book in apartments 0, 1, 2 and 4."""
    keys = jax.random.split(jax.random.key(0), N)
    activities = jnp.array([[0, -1], [1, -1], [2, -1], [4, -1]], jnp.int32)
    return jax.jit(jax.vmap(T.generate))(keys, jnp.array([0, 1, 2, 4], jnp.int32), activities)


@pytest.fixture(scope="module")
def scenes(bank):
    """Task 0 (apartment 0) with the goal "two glasses on the kitchen table, a cupcake in the fridge", Alice in the
    kitchen, each scene a step after which the count of one predicate rose by one:

    - ``away``: Alice put a glass on the table while Bob stands in the bathroom (out of his view);
    - ``closed``: a cupcake lies in the closed fridge while Bob stands at it (in his room, hidden inside);
    - ``seen``: Bob at the table sees the glass there (as after his own put).

    ``before`` is the same world without the new instance (Bob where he stands in ``away``)."""
    world = jax.tree_util.tree_map(lambda x: x[0], bank)
    table, fridge = first(world, "kitchentable"), first(world, "fridge")
    glass, cupcake = objects_of(world, "waterglass")[0], objects_of(world, "cupcake")[0]
    world = with_goal(world, on_waterglass_kitchentable=(2, table), inside_cupcake_fridge=(1, fridge))
    world = place(world, cupcake, first(world, "coffeetable"), C.ON_TOP)
    world = place(world, glass, first(world, "coffeetable"), C.ON_TOP)
    world = stand_at(world, 0, table)
    before = stand_at(world, 1, first(world, "bathroom"))
    away = place(before, glass, table, C.ON_TOP)
    closed = stand_at(set_bits(place(world, cupcake, fridge, C.INSIDE), fridge, 0), 1, fridge)
    seen = stand_at(away, 1, table)
    return dict(before=before, away=away, closed=closed, seen=seen)


def test_observed_counts_see_only_what_bob_saw(scenes):
    """``observed_satisfied`` counts what Bob has seen; the true counts also count the hidden instances; a
    sighting is kept once the object is out of view."""
    counts = jax.jit(
        lambda w: OPT.observed_satisfied(OPT.sight(OPT.no_sightings(), W.observe(w, 1, False)), w.goal_target)
    )
    for name, pred in (("away", GLASS), ("closed", CUPCAKE)):
        world = scenes[name]
        assert int(W.satisfied(world)[pred]) == 1 and int(counts(world)[pred]) == 0, name
    assert int(counts(scenes["seen"])[GLASS]) == 1
    sightings = OPT.sight(OPT.no_sightings(), W.observe(scenes["seen"], 1, False))
    later = OPT.sight(sightings, W.observe(scenes["before"].replace(nodes=scenes["away"].nodes), 1, False))
    assert int(OPT.observed_satisfied(later, scenes["away"].goal_target)[GLASS]) == 1  # remembered out of view
    with pytest.raises(ValueError, match="unknown option end 'oracle'; choose from"):
        OPT.check_option_end("oracle")


@pytest.fixture(scope="module")
def networks(scenes):
    """A tiny high-level policy and a tiny low-level policy with their parameters at random."""
    high = NH.HybridPolicy(NH.HYBRID_PRESETS["tiny"])
    obs = {k: jnp.zeros((1, *s.shape), s.dtype) for k, s in OPT.observation_space().spaces.items()}
    high_params = jax.jit(high.init)(jax.random.key(0), obs, high.initial_memory(1))["params"]
    low = NH.LowLevelPolicy(NH.LOW_PRESETS["tiny"])
    low_obs, _ = SE.SubgoalEnv().start(scenes["before"], GLASS, "grab")
    low_obs = jax.tree_util.tree_map(lambda x: x[None], low_obs)
    low_params = jax.jit(low.init)(jax.random.key(1), low_obs, low.initial_memory(1))
    return high, high_params, low, low_params


def _helpers(networks, option_end: str):
    high, high_params, low, low_params = networks
    hybrid = H.HybridHelper(high, high_params, option_end=option_end)
    hrl = HR.HRLHelper(H.HighLevel(high), high_params, low, low_params, commit=True, option_end=option_end)
    return hybrid, hrl


@pytest.mark.parametrize("option_end", ["observed", "true"])
def test_an_option_ends_on_hidden_progress_only_under_the_privileged_rule(scenes, networks, option_end):
    """Mid-option (5 steps in, count 0 seen before), after each scene's step: under the observable rule the
    Hybrid's and the HRL's options run on through Alice's placement out of view and the cupcake in the closed
    fridge, and end when Bob sees the glass at the table; under ``"true"`` all three end."""
    hybrid, hrl = _helpers(networks, option_end)
    preds = {"away": GLASS, "closed": CUPCAKE, "seen": GLASS}
    before = scenes["before"]

    @jax.jit
    def ended(world, pred):
        memory = hybrid.init(jax.random.key(0), before)
        memory = memory.replace(choice=pred, since=jnp.int32(5), valid=jnp.array(True))
        memory = memory.replace(sightings=OPT.sight(memory.sightings, W.observe(before, 1, False)))
        _, out = hybrid.act(jax.random.key(1), memory, world)
        low = hrl.init(jax.random.key(0), before)
        low = low.replace(subgoal=pred, since=jnp.int32(5), sightings=memory.sightings)
        _, low_out = hrl.act(jax.random.key(1), low, world)
        return out.since == 1, low_out.since == 0

    for name, pred in preds.items():
        hybrid_ended, hrl_ended = map(bool, ended(scenes[name], jnp.int32(pred)))
        expected = option_end == "true" or name == "seen"
        assert hybrid_ended == expected and hrl_ended == expected, (name, option_end)
    with pytest.raises(ValueError, match="unknown option end"):
        H.HybridHelper(*networks[:2], option_end="oracle")


class PutsTheGlass:
    """An Alice (``env.AlicePolicy``) who puts what her right hand holds on ``table`` at once, then idles."""

    def __init__(self, table: int) -> None:
        self.table = table

    def init(self, key, state, params):
        return jnp.int32(0)

    def act(self, key, memory, obs, state, params):
        return jnp.where(memory == 0, W.encode_action("putback_rh", self.table), 0).astype(jnp.int32), memory + 1


@pytest.mark.slow  # two compiled option programs; the helpers' option ends run in CI
def test_the_training_environments_options_end_by_the_same_rule(scenes):
    """``HybridEnv``: Bob walks for a glass from the bathroom while Alice puts the one she holds on the kitchen
    table in the first primitive step: the option ends there under ``"true"``, and runs on under ``"observed"``."""
    world = scenes["before"]
    table, glass = first(world, "kitchentable"), objects_of(world, "waterglass")[1]
    world = hold(world, 0, 0, glass)
    params = E.HouseholdParams(tasks=jax.tree_util.tree_map(lambda x: x[None], world), max_steps=50)
    taus = {}
    for rule in OPT.OPTION_ENDS:
        env = HE.HybridEnv(2, alice=PutsTheGlass(table), expert=False, option_end=rule)
        _, state = jax.jit(env.reset)(jax.random.key(0), params)
        _, _, _, _, _, info = jax.jit(env.step)(jax.random.key(1), state, jnp.int32(GLASS), params)
        assert int(info["satisfied"][GLASS]) >= 1, rule  # Alice's put happened
        taus[rule] = int(info["option_steps"])
    assert taus["true"] == 1 and taus["observed"] > 1, taus
    with pytest.raises(ValueError, match="unknown option end"):
        HE.HybridEnv(2, option_end="oracle")


def test_an_inferred_goal_is_placed_without_alices_table(bank):
    """``goal_targets`` does not read the state's goal: in an apartment with a dining table besides the kitchen's,
    Alice's goal naming the dining table leaves an inferred goal on the kitchen's table (the first), unless the
    caller passes the table it knows."""
    dining = [i for i, a in enumerate(A.APARTMENTS) if a.count("kitchentable") > 1]
    task = jax.jit(T.generate)(jax.random.key(3), jnp.int32(dining[0]), jnp.array([0, -1], jnp.int32))
    tables = objects_of_class(task, "kitchentable")
    assert len(tables) == 2
    alice = with_goal(task, on_waterglass_kitchentable=(1, tables[1]))
    count = np.zeros(PR.NUM_PREDICATES, np.int32)
    count[GLASS] = 1
    _, target = AG.goal_targets(alice, count)
    assert int(target[GLASS]) == tables[0]
    _, known = AG.goal_targets(alice, count, tables[1])
    assert int(known[GLASS]) == tables[1]


def objects_of_class(state, name: str) -> list[int]:
    """Returns every furniture node of class ``name``."""
    cls = np.asarray(state.nodes.cls)
    return [int(i) for i in np.flatnonzero((cls == C.CLASS[name]) & (W.NODE_KIND == 2))]


def hide_and_permute(world: W.State) -> W.State:
    """Returns ``world`` with what Bob cannot see permuted: the hidden objects' places rolled among themselves
    (each takes another hidden one's parent, relation, room and position), the open bit of every piece of
    furniture outside his room flipped, and Alice's goal rolled by one predicate."""
    nodes = jax.device_get(world.nodes)
    hidden, fields = roll_hidden_objects(world)
    away = (W.NODE_KIND == 2) & (nodes.room != int(world.chars.room[1])) & ((nodes.properties & C.CAN_OPEN) > 0)
    fields["states"] = jnp.asarray(np.where(away, nodes.states ^ C.OPEN, nodes.states).astype(np.uint8))
    goal = dict(goal_count=jnp.roll(world.goal_count, 1), goal_target=jnp.roll(world.goal_target, 1))
    return world.replace(nodes=world.nodes.replace(**fields), **goal)


def test_hidden_state_permuted_changes_no_decision(bank, networks):
    """Over the four tasks, Bob in the kitchen and in the bathroom, two steps each: the Hybrid's and the HRL's
    actions and whole memories (choices, beliefs, sightings, network states) are the same when what he cannot see
    is permuted; the permutation did move hidden objects onto other places, flip containers and change the goal."""
    hybrid, hrl = _helpers(networks, "observed")
    worlds, permuted = [], []
    for i in range(N):
        task = jax.tree_util.tree_map(lambda x, i=i: x[i], bank)
        for room in ("kitchen", "bathroom"):
            world = stand_at(task, 1, first(task, room))
            worlds.append(world)
            permuted.append(hide_and_permute(world))
    stack = lambda ws: jax.tree_util.tree_map(lambda *x: jnp.stack(x), *ws)  # noqa: E731
    worlds, permuted = stack(worlds), stack(permuted)
    assert (np.asarray(worlds.nodes.parent) != np.asarray(permuted.nodes.parent)).any()
    assert (np.asarray(worlds.nodes.states) != np.asarray(permuted.nodes.states)).any()
    assert (np.asarray(worlds.goal_count) != np.asarray(permuted.goal_count)).any()

    def two_steps(helper, given, world, key):
        memory = helper.init(key, given)  # the goal it helps with, given at init (play passes the inferred one)
        actions = []
        for k in jax.random.split(key, 2):
            action, memory = helper.act(k, memory, world)
            actions.append(action)
        return jnp.stack(actions), memory

    @jax.jit
    def decisions(given, worlds, keys):
        return {
            name: jax.vmap(lambda g, w, k, h=helper: two_steps(h, g, w, k))(given, worlds, keys)
            for name, helper in (("hybrid", hybrid), ("hrl", hrl))
        }

    keys = jax.random.split(jax.random.key(7), len(worlds.step))
    plain = jax.device_get(decisions(worlds, worlds, keys))
    shuffled = jax.device_get(decisions(worlds, permuted, keys))  # same given goal, permuted hidden state
    for name in plain:
        assert (plain[name][0] != 0).any(), name  # it acts (noops everywhere would pass trivially)
        for a, b in zip(jax.tree_util.tree_leaves(plain[name]), jax.tree_util.tree_leaves(shuffled[name])):
            np.testing.assert_array_equal(a, b, err_msg=name)


@pytest.fixture(scope="module")
def demos(bank):
    """Two synthetic demonstrations (tasks 0 and 1, Alice walking to random furniture for 6 steps)."""
    states = T.take(bank, np.arange(2)).replace(task_id=jnp.arange(2, dtype=jnp.int32))
    rng = np.random.default_rng(0)
    actions = (W.V["walk"] * W.NUM_NODES + rng.integers(W.FURNITURE0, W.OBJECT0, (2, 6))).astype(np.int16)
    goal = np.asarray(states.goal_count, np.int8)
    task_set = T.TaskSet(states=states, activities=np.array([[0, -1], [1, -1]], np.int8), split="train", seed=0)
    return D.Demos(task_set, actions, np.full(2, 6, np.int32), np.ones(2, bool), goal, seed=0, num_simulations=1)


def test_watch_goals_do_not_read_the_demonstrations_true_goal(demos):
    """A Watch model (tiny, at random) infers the same goal logits when the demonstrations' true goals (their
    tasks' goal, the final satisfied counts) are swapped between them: it reads Alice's actions and what they
    show, not the answer."""
    config = WA.WatchConfig(d=16, input="memory")
    params = WA.init_params(config, jax.random.key(0))
    states = demos.tasks.states
    swapped = states.replace(goal_count=states.goal_count[::-1], goal_target=states.goal_target[::-1])
    other = D.Demos(
        T.TaskSet(swapped, demos.tasks.activities, demos.tasks.split, demos.tasks.seed),
        demos.actions,
        demos.length,
        demos.success,
        demos.satisfied[::-1],
        demos.seed,
        demos.num_simulations,
    )
    assert (np.asarray(swapped.goal_count) != np.asarray(states.goal_count)).any()
    a, b = WR.goal_logits((config, params), demos), WR.goal_logits((config, params), other)
    np.testing.assert_array_equal(a, b)


def test_a_run_written_before_the_rule_existed_reads_as_trained_with_true_counts():
    """New Hybrid runs train with the observable rule; a ``run.json`` without ``option_end`` (the committed runs,
    trained before it existed) reads as the privileged ``"true"``; an unknown rule is refused."""
    assert hybrid_config.HybridConfig().option_end == "observed"
    assert hybrid_run.config_of({"kind": "hybrid", "config": {}}, "old").option_end == "true"
    new = {"kind": "hybrid", "config": {"option_end": "observed"}}
    assert hybrid_run.config_of(new, "new").option_end == "observed"
    with pytest.raises(ValueError, match="unknown HybridConfig.option_end 'seen'; choose from"):
        hybrid_config.HybridConfig(option_end="seen")
