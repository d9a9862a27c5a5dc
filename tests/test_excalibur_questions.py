"""EXCALIBUR relations (Table 6), the 11 question families (Table 5), their text, partial-knowledge answers,
candidate generation, the entropy filter (Algorithm 2) and the assignment of questions to houses."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from excalibur_scenes import house_from_objects, random_objects, stack_houses

from jaxsoc.envs.excalibur import catalogue as K
from jaxsoc.envs.excalibur import questions as Q
from jaxsoc.envs.excalibur import state as S
from jaxsoc.envs.excalibur.relations import relations

T = K.TYPE


@pytest.fixture(scope="module")
def rel_fn():
    return jax.jit(relations, static_argnames=("cell_metres", "adjacent_metres"))


@pytest.fixture(scope="module")
def answer_fn():
    return jax.jit(Q.answer_all)


def q(family, rel=None, d1=(0, 0, None), d2=(0, 0, None), d3=(0, 0, None)) -> np.ndarray:
    """A question row from names: ``rel`` a ``catalogue.RELATIONS`` index, descriptors ``(colour, material,
    type)`` names or 0 / None for "any"."""
    row = np.zeros(S.QUESTION_SLOTS, np.int16)
    row[S.FAMILY] = family
    row[S.REL] = 0 if rel is None else rel + 1
    for cols, (c, m, s) in zip(Q._DESCRIPTOR_COLUMNS, (d1, d2, d3)):
        row[list(cols)] = (
            K.COLORS.index(c) + 1 if c else 0,
            K.MATERIALS.index(m) + 1 if m else 0,
            T[s] + 1 if s else 0,
        )
    return row


# -- relations ---------------------------------------------------------------------------------------------------


def test_mass_dead_band(rel_fn):
    house = house_from_objects(
        [
            dict(type="Apple", mass=0.20, cell=(1, 1)),
            dict(type="Apple", mass=0.24, cell=(2, 1)),
            dict(type="Apple", mass=0.26, cell=(3, 1)),
            dict(type="Apple", mass=0.25, cell=(4, 1)),
            dict(type="Sofa", mass=104.0, cell=(1, 3)),
        ]
    )
    rel = np.asarray(rel_fn(house))
    heavier, lighter = rel[K.HEAVIER], rel[K.LIGHTER]
    assert not heavier[1, 0] and not lighter[1, 0] and not heavier[0, 1] and not lighter[0, 1]  # 0.04 kg apart
    assert heavier[2, 0] and lighter[0, 2] and not lighter[2, 0] and not heavier[0, 2]  # 0.06 kg apart
    assert heavier[3, 0] and lighter[0, 3]  # exactly 0.05 kg: the boundary counts (>=)
    assert not heavier[4].any() and not lighter[:, 4].any()  # furniture: its mass is unknowable
    known = jnp.asarray(np.arange(16) != 2)
    rel_known = np.asarray(jax.jit(relations)(house, known_mass=known))
    assert not rel_known[K.HEAVIER, 2, 0] and rel_known[K.HEAVIER, 3, 0]


def test_sizes_and_lengths(rel_fn):
    house = house_from_objects(
        [
            dict(type="Book", dims=(0.40, 0.30, 0.01), cell=(1, 1)),
            dict(type="Book", dims=(0.30, 0.20, 0.10), cell=(2, 1)),  # larger than 0 in 1 of 3 dims only
            dict(type="Box", dims=(0.50, 0.40, 0.20), cell=(3, 1)),  # larger than both
            dict(type="Knife", dims=(0.33, 0.03, 0.01), cell=(1, 3)),
            dict(type="Fork", dims=(0.22, 0.03, 0.01), cell=(2, 3)),
            dict(type="Apple", dims=(0.5, 0.4, 0.3), cell=(3, 3)),
        ]
    )
    rel = np.asarray(rel_fn(house))
    assert not rel[K.LARGER, 0, 1] and not rel[K.SMALLER, 0, 1] and not rel[K.LARGER, 1, 0]
    assert rel[K.LARGER, 2, 0] and rel[K.LARGER, 2, 1] and rel[K.SMALLER, 0, 2] and rel[K.SMALLER, 1, 2]
    assert rel[K.LONGER, 3, 4] and rel[K.SHORTER, 4, 3] and not rel[K.LONGER, 4, 3]
    assert not rel[K.LONGER, 5].any() and not rel[K.SHORTER, :, 5].any()  # an apple is not elongated
    assert not rel[K.LONGER, 3, 5] and not rel[K.SHORTER, 3, 5]
    assert not rel[:, np.arange(16), np.arange(16)].any()


def test_adjacency(rel_fn):
    two_apart = [dict(type="Box", cell=(1, 3)), dict(type="Box", cell=(3, 3))]
    house = house_from_objects([dict(type="Box", cell=(1, 1)), dict(type="GarbageCan", cell=(2, 1)), *two_apart])
    adj = np.asarray(rel_fn(house)[K.ADJACENT_TO])
    assert adj[0, 1] and adj[1, 0]  # one cell apart: 0.5 m
    assert not adj[2, 3] and not adj[0, 2]  # two cells apart: 1.0 m; diagonal 0.71 m
    assert (adj == adj.T).all()
    # within 1 m, two cells apart: clear, or blocked by a chair or a wall in between
    wide = functools.partial(rel_fn, adjacent_metres=1.0)
    assert np.asarray(wide(house_from_objects(two_apart))[K.ADJACENT_TO, 0, 1])
    chair = house_from_objects([*two_apart, dict(type="Chair", cell=(2, 3))])
    assert not np.asarray(wide(chair)[K.ADJACENT_TO, 0, 1])
    on_chair = house_from_objects([*two_apart, dict(type="Chair", cell=(2, 5)), dict(type="Book", parent=2)])
    assert np.asarray(wide(on_chair)[K.ADJACENT_TO, 0, 1])  # furniture elsewhere does not block
    walls = np.zeros((7, 7), bool)
    walls[[0, -1]] = walls[:, [0, -1]] = True
    walls[:, 2] = True
    assert not np.asarray(wide(house_from_objects(two_apart, walls=walls))[K.ADJACENT_TO, 0, 1])


def test_adjacency_containers_and_nesting(rel_fn):
    house = house_from_objects(
        [
            dict(type="Fridge", cell=(2, 2)),
            dict(type="Apple", parent=0, link="in"),
            dict(type="CounterTop", cell=(3, 2)),
            dict(type="Plate", parent=2),
            dict(type="Egg", parent=3),
            dict(type="Bowl", parent=2),
            dict(type="Tomato", parent=5, link="in"),
            dict(type="Box", cell=(4, 2)),
        ]
    )
    rel = np.asarray(rel_fn(house))
    adj = rel[K.ADJACENT_TO]
    assert not adj[1].any() and not adj[:, 1].any()  # in a closed fridge
    assert not adj[6].any()  # in a bowl on a counter: inside a container up the chain
    assert adj[0, 2] and adj[3, 0] and adj[4, 0] and adj[3, 7]  # neighbours; items on the counter
    assert adj[3, 5] and adj[4, 5]  # sharing a cell: 0 m apart
    assert not adj[3, 2] and not adj[4, 3] and not adj[4, 2]  # parent, child and grandparent
    assert rel[K.CONTAINED_BY, 1, 0] and rel[K.CONTAINED_BY, 6, 5] and not rel[K.CONTAINED_BY, 6, 2]
    assert rel[K.ON_TOP_OF, 3, 2] and rel[K.ON_TOP_OF, 4, 3] and not rel[K.ON_TOP_OF, 4, 2]
    assert rel[K.CONTAINED_BY].sum() == 2 and rel[K.ON_TOP_OF].sum() == 3


# -- the families ------------------------------------------------------------------------------------------------

KITCHEN = [
    dict(type="Fridge", colors=("white",), materials=("metal",), cell=(2, 2)),  # 0
    dict(type="Apple", colors=("red",), materials=("food",), parent=0, link="in", mass=0.2),  # 1
    dict(type="Tomato", colors=("red",), materials=("food",), parent=0, link="in", mass=0.12),  # 2
    dict(type="Egg", colors=("brown", "white"), materials=("food",), parent=0, link="in", mass=0.05),  # 3
    dict(type="CounterTop", colors=("gray",), materials=("stone",), cell=(3, 2)),  # 4
    dict(type="Plate", colors=("white",), materials=("ceramic",), parent=4, mass=0.62),  # 5
    dict(type="Knife", colors=("silver",), materials=("metal",), parent=4, dims=(0.33, 0.03, 0.01)),  # 6
    dict(type="Fork", colors=("silver",), materials=("metal",), parent=4, dims=(0.22, 0.03, 0.01)),  # 7
    dict(type="Chair", colors=("red",), materials=("wood",), cell=(2, 4)),  # 8
    dict(type="Box", colors=("brown",), materials=("paper",), cell=(5, 4)),  # 9
]

Y, N = K.YES, K.NO
#: (question, expected answer or None for invalid)
CASES = [
    (q(1, K.CONTAINED_BY, d1=(0, 0, "Fridge"), d2=("red", 0, None)), K.COUNT0 + 2),
    (q(1, K.CONTAINED_BY, d1=("white", "metal", None), d2=(0, "food", None)), K.COUNT0 + 3),
    (q(1, K.ON_TOP_OF, d1=(0, 0, "Fridge")), K.COUNT0 + 0),
    (q(1, K.CONTAINED_BY, d1=(0, "food", None)), None),  # ambiguous: three food objects
    (q(1, K.CONTAINED_BY, d1=(0, 0, "Sofa")), None),  # missing referent
    (q(1, None, d1=(0, 0, "Fridge")), None),  # no relation
    (q(2, K.ON_TOP_OF, d1=(0, 0, "CounterTop"), d2=("red", 0, None)), N),
    (q(2, K.ON_TOP_OF, d1=(0, 0, "CounterTop"), d2=(0, "metal", None)), Y),
    (q(3, K.CONTAINED_BY, d1=(0, 0, "Fridge"), d2=(0, 0, "Egg")), K.COLOR0 + K.COLORS.index("brown")),
    (q(3, K.CONTAINED_BY, d1=(0, 0, "Fridge"), d2=(0, "food", None)), None),  # three food objects inside
    (q(3, K.ON_TOP_OF, d1=(0, 0, "Chair"), d2=(0, 0, "Egg")), None),  # nothing on the chair
    (q(3, K.CONTAINED_BY, d1=(0, 0, "Fridge"), d2=("brown", 0, "Egg")), None),  # family 3 has no C2
    (q(4, K.CONTAINED_BY, d1=(0, 0, "Fridge"), d2=("brown", 0, None)), K.MATERIAL0 + K.MATERIALS.index("food")),
    (q(5, K.ON_TOP_OF, d1=(0, 0, "CounterTop"), d2=(0, "ceramic", None)), K.TYPE0 + T["Plate"]),
    (q(5, K.LONGER, d1=(0, 0, "Fork")), K.TYPE0 + T["Knife"]),
    (q(6, d1=(0, 0, "Chair")), Y),  # the apple and the tomato are red
    (q(6, d1=(0, "stone", None)), N),
    (q(6, d1=(0, 0, "Egg")), Y),  # brown first: the box; the egg's white is second
    (q(6, d1=("silver", 0, None)), None),  # two silver objects
    (q(7, d1=(0, 0, "CounterTop")), N),
    (q(7, d1=(0, 0, "Knife")), Y),
    (q(8, d1=(0, 0, "Apple"), d2=(0, 0, "Tomato")), Y),
    (q(8, d1=(0, 0, "Apple"), d2=(0, 0, "Egg")), N),
    (q(8, d1=(0, "food", None), d2=(0, 0, "Knife")), None),  # ambiguous
    (q(8, d1=(0, 0, "Knife"), d2=(0, 0, "Knife")), None),  # the same object twice
    (q(9, d1=(0, 0, "Knife"), d2=(0, 0, "Fork")), Y),
    (q(9, d1=("white", 0, "Plate"), d2=("white", 0, "Fridge")), N),
    (q(10, K.CONTAINED_BY, d1=(0, 0, "Apple"), d2=(0, 0, "Chair"), d3=(0, 0, "Fridge")), Y),
    (q(10, K.CONTAINED_BY, d1=(0, "food", None), d2=(0, 0, "Chair"), d3=(0, 0, "Fridge")), None),
    (q(10, K.HEAVIER, d1=(0, 0, None), d2=(0, 0, "Box"), d3=(0, 0, "Tomato")), None),  # apple, plate, knife
    (q(11, K.LONGER, d2=(0, 0, "Fork"), d3=(0, 0, "Fork")), Y),  # the knife and the fork: metal
    (q(11, K.SHORTER, d2=(0, 0, "Fork"), d3=(0, 0, "Knife")), None),  # the fork and the fork
    (q(11, K.ON_TOP_OF, d1=(0, 0, "Plate"), d2=(0, 0, "Box"), d3=(0, 0, "CounterTop")), N),
    (np.zeros(S.QUESTION_SLOTS, np.int16), None),  # padding
]


@pytest.fixture(scope="module")
def kitchen():
    return house_from_objects(KITCHEN)


def test_families(kitchen, answer_fn):
    rows = np.stack([row for row, _ in CASES])
    answers, valid = (np.asarray(x) for x in answer_fn(kitchen, jnp.asarray(rows)))
    for k, (row, expected) in enumerate(CASES):
        got = (int(answers[k]), bool(valid[k]))
        assert got == ((-1, False) if expected is None else (expected, True)), (k, Q.question_text(row), got)
    assert {int(row[S.FAMILY]) for row, e in CASES if e is not None} == set(Q.FAMILIES)


def test_partial_knowledge(kitchen, answer_fn):
    rows = jnp.asarray(
        np.stack(
            [
                q(1, K.CONTAINED_BY, d1=(0, 0, "Fridge"), d2=("red", 0, None)),
                q(2, K.HEAVIER, d1=(0, 0, "Egg")),
                q(6, d1=(0, 0, "Chair")),
            ]
        )
    )
    everything = np.ones(16, bool)
    a, v = answer_fn(kitchen, rows)
    assert a.tolist() == [K.COUNT0 + 2, Y, Y] and v.all()
    unseen_tomato = everything.copy()
    unseen_tomato[2] = False
    a, v = answer_fn(kitchen, rows, (jnp.asarray(unseen_tomato), jnp.asarray(everything)))
    assert a.tolist() == [K.COUNT0 + 1, Y, Y] and v.all()
    only_egg_lifted = np.arange(16) == 3
    a, v = answer_fn(kitchen, rows, (jnp.asarray(everything), jnp.asarray(only_egg_lifted)))
    assert a.tolist() == [K.COUNT0 + 2, N, Y] and v.all()
    nothing_red_seen = everything & ~np.isin(np.arange(16), [1, 2, 8])
    a, v = answer_fn(kitchen, rows, (jnp.asarray(nothing_red_seen), jnp.asarray(everything)))
    assert a[:2].tolist() == [K.COUNT0, Y] and not v[2]  # the chair is unseen: "the chair" has no referent


def test_jit_vmap_equivalence(kitchen, answer_fn):
    rows = np.stack([row for row, _ in CASES[:12]])
    single = jax.jit(Q.answer)
    a, v = answer_fn(kitchen, jnp.asarray(rows))
    for k in (0, 3, 8):  # one question at a time, no vmap
        assert tuple(int(x) for x in single(kitchen, jnp.asarray(rows[k]))) == (int(a[k]), int(v[k]))
    other = house_from_objects(KITCHEN[:5])  # no counter top contents, no chair, no box
    both = stack_houses([kitchen, other])
    ab, vb = jax.jit(jax.vmap(Q.answer_all, in_axes=(0, None)))(both, jnp.asarray(rows))
    a2, v2 = answer_fn(other, jnp.asarray(rows))
    np.testing.assert_array_equal(ab, np.stack([a, a2]))
    np.testing.assert_array_equal(vb, np.stack([v, v2]))
    f = jax.jit(Q.facts)(kitchen)
    af, vf = answer_fn(f, jnp.asarray(rows))
    np.testing.assert_array_equal(af, a)
    np.testing.assert_array_equal(vf, v)


def test_question_text():
    texts: dict[int, str] = {}
    for row, expected in CASES:
        if expected is not None:
            texts.setdefault(int(row[S.FAMILY]), Q.question_text(row))  # the first valid case of each family
    assert texts == {
        1: "How many red objects are inside the fridge?",
        2: "Are there any red objects on top of the counter top?",
        3: "What color is the egg inside the fridge?",
        4: "What material is the brown object inside the fridge?",
        5: "What is the ceramic object on top of the counter top?",
        6: "Is there anything else with the same color as the chair?",
        7: "Is there anything else made of the same material as the counter top?",
        8: "Do the apple and the tomato have the same color?",
        9: "Do the knife and the fork have the same material?",
        10: "Do the apple inside the fridge and the chair have the same color?",
        11: "Do the object longer than the fork and the fork have the same material?",
    }
    assert Q.question_text(q(1, K.ADJACENT_TO, d1=(0, 0, "Sofa"), d2=("silver", "metal", "Knife"))) == (
        "How many silver metal knives are next to the sofa?"
    )
    assert Q.question_text(q(2, K.LARGER, d1=("red", 0, "Apple"), d2=(0, 0, "Potato"))).startswith(
        "Are there any potatoes larger than the red apple"
    )
    assert Q.question_text(np.zeros(S.QUESTION_SLOTS, np.int16)) == ""
    assert Q.answer_text(K.TYPE0 + T["DiningTable"]) == "dining table"
    assert Q.answer_text(K.COUNT0 + 3) == "3" and Q.answer_text(K.YES) == "yes" and Q.answer_text(-1) == "none"


# -- generation, filtering, assignment ---------------------------------------------------------------------------


def test_candidates_resolve(kitchen, answer_fn, rel_fn):
    rng = np.random.default_rng(0)
    view = Q._View(kitchen, rel_fn(kitchen))
    for family in Q.FAMILIES:
        rows = Q.candidates(kitchen, rng, family, 6)
        assert 0 < len(rows) <= 6 and len({tuple(r) for r in rows.tolist()}) == len(rows)
        assert (rows[:, S.FAMILY] == family).all()
        assert not (rows & ~Q.FAMILY_SLOTS[family]).any()  # unused slots are 0
        _, valid = answer_fn(kitchen, jnp.asarray(rows))
        if family not in (1, 2):
            assert np.asarray(valid).all(), [Q.question_text(r) for r in rows]
        for row in rows[np.isin(rows[:, S.REL] - 1, [K.HEAVIER, K.LIGHTER])]:
            reference = (S.C3, S.M3, S.S3) if family in (10, 11) else (S.C1, S.M1, S.S1)
            assert view.pickup[view.match(*row[list(reference)])].all()  # no furniture as the mass reference


def _fridge_house(apple_color: str):
    return house_from_objects(
        [
            dict(type="Fridge", colors=("white",), cell=(2, 2)),
            dict(type="Apple", colors=(apple_color,), parent=0, link="in"),
            dict(type="CounterTop", colors=("gray",), materials=("stone",), cell=(3, 2)),
            dict(type="Knife", colors=("silver",), materials=("metal",), parent=2),
        ]
    )


@pytest.fixture(scope="module")
def toy_population():
    return stack_houses([_fridge_house(c) for c in ("red", "green", "yellow", "red", "green", "yellow")])


def test_entropy_ranking(toy_population):
    varying = q(3, K.CONTAINED_BY, d1=(0, 0, "Fridge"), d2=(0, 0, "Apple"))
    constant = q(3, K.ON_TOP_OF, d1=(0, 0, "CounterTop"), d2=(0, 0, "Knife"))
    rows = np.stack([constant, varying])
    answers, valid = Q.evaluate(jax.jit(jax.vmap(Q.facts))(toy_population), rows)
    assert valid.all() and len(set(answers[:, 1].tolist())) == 3 and len(set(answers[:, 0].tolist())) == 1
    kept, entropy, houses = Q.rank_questions(rows, answers, valid, m_per_family=5)
    np.testing.assert_array_equal(kept, np.stack([varying, constant]))
    np.testing.assert_allclose(entropy, [np.log2(3), 0.0], atol=1e-6)
    assert houses.tolist() == [6, 6]
    kept1, _, _ = Q.rank_questions(rows, answers, valid, m_per_family=1)
    np.testing.assert_array_equal(kept1, varying[None])
    assert len(Q.rank_questions(rows, answers, valid, m_per_family=5, min_valid=7)[0]) == 0  # valid in 6 houses


def test_filter_questions(toy_population):
    kept, entropy = Q.filter_questions(toy_population, 0, n_per_house=6, m_per_family=3)
    assert kept.dtype == np.int16 and kept.shape[1] == S.QUESTION_SLOTS and entropy.shape == (len(kept),)
    families = kept[:, S.FAMILY]
    for family in Q.FAMILIES:
        mine = entropy[families == family]
        assert len(mine) <= 3 and (np.diff(mine) <= 1e-6).all()
    colour = entropy[families == 3]
    assert len(colour) and np.isclose(colour[0], np.log2(3))  # the apple's colour varies across the houses
    answers, _ = jax.jit(jax.vmap(Q.answer, in_axes=(0, None)))(toy_population, jnp.asarray(kept[families == 3][0]))
    assert [Q.answer_text(a) for a in answers] == ["red", "green", "yellow"] * 2  # it asks for the apple


def test_assign_interleaves_and_pads(toy_population):
    rows = np.stack(
        [
            q(6, d1=(0, 0, "Apple")),  # no: nothing else shares the apple's colour
            q(7, d1=(0, 0, "Knife")),  # yes: the fridge is metal
            q(7, d1=(0, 0, "Apple")),
            q(3, K.CONTAINED_BY, d1=(0, 0, "Fridge"), d2=(0, 0, "Apple")),
            q(8, d1=(0, 0, "Sofa"), d2=(0, 0, "Apple")),  # valid nowhere
        ]
    )
    entropy = np.array([1.5, 1.4, 1.3, 0.5, 2.0], np.float32)
    questions, answers, num = Q.assign(toy_population, rows, entropy, max_questions=3)
    assert questions.shape == (6, 3, S.QUESTION_SLOTS) and answers.shape == (6, 3) and num.tolist() == [3] * 6
    # round 0: the best of families 6, 7 and 3 (entropy order), before the second-best of family 7
    np.testing.assert_array_equal(questions[0], rows[[0, 1, 3]])
    assert answers[0].tolist() == [N, Y, K.COLOR0 + K.COLORS.index("red")]
    assert answers[1, 2] == K.COLOR0 + K.COLORS.index("green")
    questions, answers, num = Q.assign(toy_population, rows, entropy, max_questions=6)
    assert num.tolist() == [4] * 6
    np.testing.assert_array_equal(questions[0, :4], rows[[0, 1, 3, 2]])
    assert (questions[:, 4:] == 0).all() and (answers[:, 4:] == -1).all()


def test_attach_random_population():
    rng = np.random.default_rng(3)
    houses = stack_houses([house_from_objects(random_objects(rng, 16)) for _ in range(6)])  # as toy_population
    out, report = Q.attach(houses, 0, n_per_house=4, m_per_family=4, max_questions=8)
    assert out.questions.shape == (6, 8, S.QUESTION_SLOTS) and out.answers.dtype == jnp.int16
    assert report["kept"] <= 44 and report["min_questions"] >= 1
    # the stored answers are the answers
    a, v = jax.jit(jax.vmap(Q.answer_all))(out, out.questions)
    used = np.arange(8)[None, :] < np.asarray(out.num_questions)[:, None]
    assert np.asarray(v)[used].all()
    np.testing.assert_array_equal(np.asarray(a)[used], np.asarray(out.answers)[used])
    assert (np.asarray(out.answers)[~used] == -1).all()
