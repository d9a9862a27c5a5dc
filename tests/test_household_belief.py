"""Alice's belief over object locations (``household.agents.belief``) on hand-built scenes: the prior, updates
from what is seen (one-hot, ruled-out places, open containers, resets, the other character's hands), sampled
worlds (kept samples, placements, the hands rule), full knowledge, determinism, jit and vmap."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from household_scenes import first, hold, place, set_bits, stand_at

from jaxsoc.envs.household import classes as C
from jaxsoc.envs.household import tasks as T
from jaxsoc.envs.household import world as W
from jaxsoc.envs.household.agents import belief as B

KITCHEN, BEDROOM, LIVING = (C.ROOM_CLASSES.index(r) for r in ("kitchen", "bedroom", "livingroom"))
MF = B.MAX_FURNITURE


def objects(state) -> list[int]:
    """Returns the nodes of the real object slots."""
    return [W.OBJECT0 + int(i) for i in np.flatnonzero(np.asarray(state.nodes.cls)[W.OBJECT0 :] > 0)]


def on(node: int) -> int:
    return node - W.FURNITURE0


def inside(node: int) -> int:
    return MF + node - W.FURNITURE0


@pytest.fixture(scope="module")
def fn():
    """The belief's functions, jitted once for the module (``char`` is traced)."""
    return {
        "init": jax.jit(B.init),
        "prior": jax.jit(B.prior),
        "update": jax.jit(B.update),
        "sample": jax.jit(B.sample_world),
        "full": jax.jit(B.full_knowledge),
        "truth": jax.jit(B.true_places),
    }


@pytest.fixture(scope="module")
def scene():
    """A setup_table task in apartment 0: Alice at the closed fridge in the kitchen, Bob in the living room; a
    plate INSIDE the fridge, another ON the bedroom's cabinet, a cupcake ON the kitchen table."""
    state = jax.jit(T.generate)(jax.random.key(0), jnp.int32(0), jnp.array([0, -1], jnp.int32))
    fridge, table = first(state, "fridge"), first(state, "kitchentable")
    bed_cabinet = first(state, "cabinet", BEDROOM)
    plates = [int(i) for i in np.flatnonzero(np.asarray(state.nodes.cls) == C.CLASS["plate"])]
    cupcake = first(state, "cupcake")
    state = place(
        place(place(state, plates[0], fridge, C.INSIDE), plates[1], bed_cabinet, C.ON_TOP), cupcake, table, C.ON_TOP
    )
    state = stand_at(stand_at(state, 0, fridge), 1, first(state, "coffeetable"))
    names = {"fridge": fridge, "table": table, "bed_cabinet": bed_cabinet, "cupcake": cupcake}
    return state, {**names, "plate_in": plates[0], "plate_away": plates[1], "plate3": plates[2]}


def allowed(logits, obj: int) -> set[int]:
    return {int(p) for p in np.flatnonzero(np.asarray(logits)[obj - W.OBJECT0] > B.THRESHOLD)}


# -- the prior -------------------------------------------------------------------------------------------


def test_prior_is_uniform_over_the_allowed_places(fn, scene):
    state, _ = scene
    slot = objects(state)[0]
    book = state.replace(nodes=state.nodes.replace(cls=state.nodes.cls.at[slot].set(C.CLASS["book"])))
    logits = fn["prior"](book)
    fcls = np.asarray(state.nodes.cls)[W.FURNITURE0 : W.OBJECT0]
    names = [C.CLASS_NAMES[c] for c in fcls]
    ons = {"cabinet", "bench", "nightstand", "kitchentable", "coffeetable"}
    ins = {"cabinet", "kitchencabinet", "fridge", "dishwasher"}
    expected = {f for f, n in enumerate(names) if n in ons} | {MF + f for f, n in enumerate(names) if n in ins}
    assert allowed(logits, slot) == expected
    probs = np.asarray(B.probabilities(B.Belief(logits=logits, sample=jnp.zeros(B.MAX_OBJECTS, jnp.int16))))
    np.testing.assert_allclose(probs[slot - W.OBJECT0][sorted(expected)], 1 / len(expected), rtol=1e-6)
    assert probs[slot - W.OBJECT0].sum() == pytest.approx(1.0)
    # a plate: the generator's places (default) plus the targets; never held at first; empty slots: nothing
    plate = first(book, "plate")
    ons = {"cabinet", "coffeetable", "bench", "kitchentable"}
    ins = {"fridge", "kitchencabinet", "cabinet", "microwave", "dishwasher", "stove"}
    expected = {f for f, n in enumerate(names) if n in ons} | {MF + f for f, n in enumerate(names) if n in ins}
    assert allowed(logits, plate) == expected
    logits = np.asarray(logits)
    assert (logits[:, B.HELD] == B.IMPOSSIBLE).all()
    empty = np.asarray(state.nodes.cls)[W.OBJECT0 :] == 0
    assert empty.any() and (logits[empty] == B.IMPOSSIBLE).all() and (probs[empty] == 0).all()
    assert set(np.unique(logits)) == {0.0, np.float32(B.IMPOSSIBLE)}
    belief = fn["init"](book)
    np.testing.assert_array_equal(belief.logits, logits)
    assert (np.asarray(belief.sample) == -1).all() and belief.sample.dtype == jnp.int16


# -- updates ---------------------------------------------------------------------------------------------


def test_seen_objects_become_certain(fn, scene):
    state, n = scene
    after = fn["update"](fn["init"](state), state, 0)
    visible = np.asarray(W.view(state, 0).visible)[W.OBJECT0 :]
    truth = np.asarray(fn["truth"](state))
    logits = np.asarray(after.logits)
    assert visible[n["cupcake"] - W.OBJECT0] and not visible[n["plate_in"] - W.OBJECT0]
    for j in np.flatnonzero(visible):
        assert allowed(logits, W.OBJECT0 + j) == {truth[j]}
    assert allowed(logits, n["cupcake"]) == {on(n["table"])}
    np.testing.assert_array_equal(after.sample, fn["init"](state).sample)  # updates do not sample


def test_unseen_objects_lose_the_places_in_view(fn, scene):
    state, n = scene
    before = np.asarray(fn["prior"](state))
    logits = np.asarray(fn["update"](fn["init"](state), state, 0).logits)
    fur = np.arange(W.FURNITURE0, W.OBJECT0)
    cls, room = np.asarray(state.nodes.cls)[fur], np.asarray(state.nodes.room)[fur]
    kitchen = np.flatnonzero((room == KITCHEN) & (cls > 0))
    elsewhere = np.flatnonzero((room != KITCHEN) & (cls > 0))
    for obj in (n["plate_in"], n["plate_away"]):
        row, was = logits[obj - W.OBJECT0], before[obj - W.OBJECT0]
        assert (row[kitchen] == B.IMPOSSIBLE).all()  # every surface of the kitchen is seen
        np.testing.assert_array_equal(row[MF + kitchen], was[MF + kitchen])  # closed containers hide
        np.testing.assert_array_equal(row[elsewhere], was[elsewhere])
        np.testing.assert_array_equal(row[MF + elsewhere], was[MF + elsewhere])
    assert inside(n["fridge"]) in allowed(logits, n["plate_away"])
    assert on(n["table"]) in allowed(before, n["plate_away"]) and on(n["table"]) not in allowed(logits, n["plate_away"])


def test_opening_a_container_rules_it_out(fn, scene):
    state, n = scene
    belief = fn["update"](fn["init"](state), state, 0)
    opened = set_bits(state, n["fridge"], C.OPEN)
    belief = fn["update"](belief, opened, 0)
    assert inside(n["fridge"]) not in allowed(belief.logits, n["plate_away"])
    assert allowed(belief.logits, n["plate_in"]) == {inside(n["fridge"])}  # now seen inside
    # closing it again does not bring the place back (nothing is forgotten)
    belief = fn["update"](belief, state, 0)
    assert inside(n["fridge"]) not in allowed(belief.logits, n["plate_away"])
    assert allowed(belief.logits, n["plate_in"]) == {inside(n["fridge"])}


def test_a_row_ruled_out_everywhere_resets(fn, scene):
    state, n = scene
    prior = np.asarray(fn["prior"](state))
    seen = np.asarray(B.seen_places(state, 0))
    j = n["plate_away"] - W.OBJECT0
    # believed ON the kitchen table, which Alice sees empty of it: the prior without what she sees
    wrong = fn["init"](state)
    wrong = wrong.replace(logits=wrong.logits.at[j].set(B.IMPOSSIBLE).at[j, on(n["table"])].set(0.0))
    row = np.asarray(fn["update"](wrong, state, 0).logits)[j]
    np.testing.assert_array_equal(row, np.where(seen, B.IMPOSSIBLE, prior[j]).astype(np.float32))
    # when Alice sees every place of the prior (all furniture moved to the kitchen and opened) and Bob holds the
    # plate elsewhere: the plain prior
    nodes = state.nodes
    everything = state.replace(
        nodes=nodes.replace(
            room=nodes.room.at[W.FURNITURE0 :].set(KITCHEN),
            states=nodes.states.at[W.FURNITURE0 : W.OBJECT0].set(C.OPEN),
        )
    )
    everything = hold(everything, 1, 0, n["plate_away"])
    assert not bool(W.view(everything, 0).visible[n["plate_away"]])
    row = np.asarray(fn["update"](fn["init"](state), everything, 0).logits)[j]
    np.testing.assert_array_equal(row, prior[j])


def test_the_other_characters_hands(fn, scene):
    state, n = scene
    obj, j = n["plate_away"], n["plate_away"] - W.OBJECT0
    near = stand_at(state, 1, n["table"])  # Bob in the kitchen holding the plate, Alice holding the cupcake
    near = hold(hold(near, 1, 0, obj), 0, 0, n["cupcake"])
    belief = fn["update"](fn["init"](state), near, 0)
    assert allowed(belief.logits, obj) == {B.HELD} and allowed(belief.logits, n["cupcake"]) == {B.HELD}
    # Bob leaves with it: still believed in his hand
    away = stand_at(near, 1, first(state, "sofa"))
    belief = fn["update"](belief, away, 0)
    assert allowed(belief.logits, obj) == {B.HELD}
    # Bob comes back without it: HELD is ruled out, the row resets to the prior less what Alice sees
    back = stand_at(place(away, obj, n["bed_cabinet"], C.ON_TOP), 1, n["table"])
    row = np.asarray(fn["update"](belief, back, 0).logits)[j]
    seen = np.asarray(B.seen_places(back, 0))
    assert seen[B.HELD]
    np.testing.assert_array_equal(row, np.where(seen, B.IMPOSSIBLE, np.asarray(fn["prior"](state))[j]))


# -- sampled worlds --------------------------------------------------------------------------------------


def check_world(state, belief, world, char: int = 0, possible: bool = True):
    """The sampled world is ``state`` with the unseen objects at their samples (possible under the belief unless
    ``possible`` is false) and ``char`` sees in it what it sees in ``state``."""
    truth = np.asarray(B.true_places(state))
    sample = np.asarray(belief.sample)
    logits = np.asarray(belief.logits)
    visible = np.asarray(W.view(state, char).visible)[W.OBJECT0 :]
    real = np.asarray(state.nodes.cls)[W.OBJECT0 :] > 0
    assert (sample[~real] == -1).all()
    assert not possible or (logits[np.flatnonzero(real), sample[real]] > B.THRESHOLD).all()
    np.testing.assert_array_equal(sample[visible], truth[visible])
    np.testing.assert_array_equal(B.true_places(world), sample)
    for field in ("parent", "relation", "room", "pos"):
        got, was = np.asarray(getattr(world.nodes, field)), np.asarray(getattr(state.nodes, field))
        np.testing.assert_array_equal(got[: W.OBJECT0], was[: W.OBJECT0])
        same = np.flatnonzero(sample == truth) + W.OBJECT0
        np.testing.assert_array_equal(got[same], was[same])
    for j in np.flatnonzero(real & (sample != truth) & (sample < B.HELD)):
        f = W.FURNITURE0 + sample[j] % MF
        node = W.OBJECT0 + j
        assert int(world.nodes.parent[node]) == f and int(world.nodes.room[node]) == int(state.nodes.room[f])
        np.testing.assert_array_equal(world.nodes.pos[node], state.nodes.pos[f])
        assert int(world.nodes.relation[node]) == (C.ON_TOP if sample[j] < MF else C.INSIDE)
    chex.assert_trees_all_equal(world.chars.replace(hands=state.chars.hands), state.chars)
    np.testing.assert_array_equal(world.chars.hands[char], state.chars.hands[char])
    np.testing.assert_array_equal(W.view(world, char).visible, W.view(state, char).visible)
    chex.assert_trees_all_equal(W.observe(world, char, True), W.observe(state, char, True))


def test_samples_are_kept_unless_contradicted(fn, scene):
    state, n = scene
    belief = fn["update"](fn["init"](state), state, 0)
    belief, world = fn["sample"](jax.random.key(1), belief, state, 0)
    check_world(state, belief, world)
    first_sample = np.asarray(belief.sample)
    # Alice walks to the bedroom and looks around
    bedroom = stand_at(state, 0, first(state, "nightstand"))
    moved = fn["update"](belief, bedroom, 0)
    moved, world = fn["sample"](jax.random.key(2), moved, bedroom, 0)
    check_world(bedroom, moved, world)
    logits, second = np.asarray(moved.logits), np.asarray(moved.sample)
    real = np.flatnonzero(np.asarray(state.nodes.cls)[W.OBJECT0 :] > 0)
    still = logits[real, first_sample[real]] > B.THRESHOLD
    assert still.any() and (~still).any()
    np.testing.assert_array_equal(second[real[still]], first_sample[real[still]])
    assert (second[real[~still]] != first_sample[real[~still]]).all()


def test_sampled_world_places_objects(fn, scene):
    state, n = scene
    belief = fn["update"](fn["init"](state), state, 0)
    for seed in range(3):
        sampled, world = fn["sample"](jax.random.key(seed), belief, state, 0)
        check_world(state, sampled, world)
    # full knowledge: the sampled world is the truth itself
    full = fn["full"](state)
    sampled, world = fn["sample"](jax.random.key(0), full, state, 0)
    chex.assert_trees_all_equal(world, state)
    np.testing.assert_array_equal(sampled.sample, full.sample)


def test_sampled_held_objects_go_to_the_other_characters_hands(fn, scene):
    state, n = scene
    a, b, c = n["plate_away"], n["plate3"], n["cupcake"]
    # Bob (in the living room, unseen) really holds b; Alice believes Bob holds a and b
    truth = hold(state, 1, 1, b)
    held_row = jnp.full(B.PLACES, B.IMPOSSIBLE).at[B.HELD].set(0.0)
    belief = fn["update"](fn["init"](truth), truth, 0)
    belief = belief.replace(logits=belief.logits.at[a - W.OBJECT0].set(held_row).at[b - W.OBJECT0].set(held_row))
    sampled, world = fn["sample"](jax.random.key(0), belief, truth, 0)
    check_world(truth, sampled, world)
    assert sorted(np.asarray(world.chars.hands[1]).tolist()) == sorted([a, b])
    assert int(world.chars.hands[1, 1]) == b  # what he really holds stays in its hand
    assert int(world.nodes.relation[a]) == C.HELD and int(world.nodes.parent[a]) == -1
    assert int(world.nodes.room[a]) == LIVING
    np.testing.assert_array_equal(world.nodes.pos[a], truth.chars.pos[1])
    # b sampled elsewhere: it leaves his hand
    free = fn["update"](fn["init"](truth), truth, 0)
    sampled, world = fn["sample"](jax.random.key(0), free, truth, 0)
    check_world(truth, sampled, world)
    assert (np.asarray(world.chars.hands[1]) == -1).all() and int(world.nodes.relation[b]) != C.HELD
    # three objects believed held (an unseen cupcake too): two fit, the third is redrawn from its prior
    hidden = place(truth, c, n["bed_cabinet"], C.ON_TOP)
    belief = fn["update"](fn["init"](hidden), hidden, 0)
    logits = belief.logits
    for obj in (a, b, c):
        logits = logits.at[obj - W.OBJECT0].set(held_row)
    sampled, world = fn["sample"](jax.random.key(0), belief.replace(logits=logits), hidden, 0)
    check_world(hidden, sampled, world, possible=False)
    assert sorted(np.asarray(world.chars.hands[1]).tolist()) == sorted([a, b])
    cupcake_place = int(sampled.sample[c - W.OBJECT0])
    assert cupcake_place in allowed(fn["prior"](hidden), c) and not B.seen_places(hidden, 0)[cupcake_place]
    assert int(B.true_places(world)[c - W.OBJECT0]) == cupcake_place


def test_determinism_jit_and_vmap(fn):
    keys = jax.random.split(jax.random.key(5), 3)
    states = jax.jit(jax.vmap(T.generate, (0, None, None)))(keys, jnp.int32(1), jnp.array([1, -1], jnp.int32))
    chars = jnp.array([0, 1, 0], jnp.int32)
    sample_keys = jax.random.split(jax.random.key(6), 3)

    def run(key, state, char):
        belief = B.update(B.init(state), state, char)
        return B.sample_world(key, belief, state, char)

    batched = jax.jit(jax.vmap(run))(sample_keys, states, chars)
    for i in range(3):
        one = jax.tree_util.tree_map(lambda x, i=i: x[i], states)
        belief = fn["update"](fn["init"](one), one, chars[i])
        single = fn["sample"](sample_keys[i], belief, one, chars[i])
        chex.assert_trees_all_equal(jax.tree_util.tree_map(lambda x, i=i: x[i], batched), single)
        check_world(one, single[0], single[1], int(chars[i]))
    again = jax.jit(jax.vmap(run))(sample_keys, states, chars)
    chex.assert_trees_all_equal(again, batched)
    other = jax.jit(jax.vmap(run))(jax.random.split(jax.random.key(7), 3), states, chars)
    assert not np.array_equal(other[0].sample, batched[0].sample)
