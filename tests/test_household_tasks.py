"""Household tasks: goal sampling against the original's ranges, where objects start, the four task sets (train,
validation, test-1, test-2), apartments, files and their errors."""

from __future__ import annotations

import hashlib
import json
import zipfile

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsoc.envs.household import apartments as A
from jaxsoc.envs.household import classes as C
from jaxsoc.envs.household import predicates as PR
from jaxsoc.envs.household import tasks as T
from jaxsoc.envs.household import world as W

LOW, HIGH, TOTAL = PR.count_ranges()
COUNTED = np.isin(PR.PRED_KIND, (PR.ON_KIND, PR.INSIDE_KIND))


@pytest.fixture(scope="module")
def goals():
    """2,000 goals per activity and 2,000 mixed (setup_table + put_fridge) goals."""
    sample = jax.jit(jax.vmap(T.sample_goal, (0, None)))
    keys = jax.random.split(jax.random.key(0), 2000)
    single = {a: np.asarray(sample(keys, jnp.array([a, -1]))) for a in range(PR.NUM_ACTIVITIES)}
    return single, np.asarray(sample(keys, jnp.array([0, 1])))


def test_goal_counts_follow_the_original_ranges(goals):
    single, _ = goals
    for a, g in single.items():
        name = PR.ACTIVITY_NAMES[a]
        assert (g >= LOW[a]).all() and (g <= HIGH[a]).all(), name
        totals = (g * COUNTED).sum(1)
        assert totals.min() == TOTAL[a, 0] and totals.max() == TOTAL[a, 1], name  # the whole range, no more
        for p in np.flatnonzero(HIGH[a]):  # every count of every predicate occurs
            assert set(np.unique(g[:, p])) == set(range(LOW[a, p], HIGH[a, p] + 1)), (name, PR.PREDICATE_NAMES[p])
        outside = ~PR.activity_masks()[a]
        assert (g[:, outside] == 0).all(), name
    book = single[PR.ACTIVITY_NAMES.index("read_book")]
    assert (book[:, PR.PREDICATE["holds_book"]] == 1).all() and (book[:, PR.PREDICATE["sit_sofa"]] == 1).all()


def test_mixed_goals_take_from_both_activities(goals):
    _, mixed = goals
    masks = PR.activity_masks()
    first, second = (mixed * masks[0] * COUNTED).sum(1), (mixed * masks[1] * COUNTED).sum(1)
    assert (first >= 1).all() and (second >= 1).all()
    assert ((first + second) >= T.MIXED_TOTAL[0]).all() and ((first + second) <= T.MIXED_TOTAL[1]).all()


@pytest.fixture(scope="module")
def generated():
    """48 tasks per activity over every apartment that allows it, and their activities."""
    states, acts = [], []
    gen = jax.jit(jax.vmap(T.generate))
    for a in range(PR.NUM_ACTIVITIES):
        pool = T.allowed_apartments((a,), range(len(A.APARTMENTS)))
        apts = jnp.array([pool[i % len(pool)] for i in range(48)])
        keys = jax.random.split(jax.random.fold_in(jax.random.key(1), a), 48)
        states.append(jax.device_get(gen(keys, apts, jnp.tile(jnp.array([[a, -1]]), (48, 1)))))
        acts += [a] * 48
    return jax.tree_util.tree_map(lambda *x: np.concatenate(x), *states), np.array(acts)


def test_objects_start_where_the_original_allows(generated):
    states, _ = generated
    inside_ok, on_ok = C.placement_tables()
    nodes = states.nodes
    for t in range(len(states.apartment)):
        cls, parent, rel = nodes.cls[t], nodes.parent[t], nodes.relation[t]
        objects = np.flatnonzero(cls[W.OBJECT0 :] > 0) + W.OBJECT0
        assert objects.size and (cls[W.OBJECT0 : W.OBJECT0 + objects.size] > 0).all()  # packed first
        for o in objects:
            f = parent[o]
            assert W.FURNITURE0 <= f < W.OBJECT0, "never on the floor or in a room"
            table = inside_ok if rel[o] == C.INSIDE else on_ok
            assert rel[o] in (C.INSIDE, C.ON_TOP) and table[cls[o], cls[f]], (
                C.CLASS_NAMES[cls[o]],
                C.CLASS_NAMES[cls[f]],
            )
            assert nodes.room[t, o] == nodes.room[t, f]
            if cls[f] == C.CLASS["kitchentable"] and rel[o] == C.ON_TOP:
                assert A.APARTMENTS[states.apartment[t]].table_placement
        # never on / in the goal's own target for that class
        for p in np.flatnonzero(states.goal_count[t]):
            if PR.PRED_KIND[p] in (PR.ON_KIND, PR.INSIDE_KIND):
                same = objects[cls[objects] == PR.PRED_OBJECT[p]]
                assert (parent[same] != states.goal_target[t, p]).all(), PR.PREDICATE_NAMES[p]
        # a surface holds objects covering less than half of it
        for f in np.unique(parent[objects][rel[objects] == C.ON_TOP]):
            on = objects[(parent[objects] == f) & (rel[objects] == C.ON_TOP)]
            used = np.prod(C.SIZE[cls[on]], axis=1).sum()
            assert used < 0.5 * np.prod(nodes.size[t, f]) + 1e-6


def test_goals_are_achievable_as_generated(generated):
    states, acts = generated
    nodes = states.nodes
    for t in range(len(acts)):
        cls = nodes.cls[t]
        for p in np.flatnonzero(states.goal_count[t]):
            target = states.goal_target[t, p]
            if PR.PRED_KIND[p] == PR.HOLDS_KIND:
                assert target == -1 and (cls == C.CLASS["book"]).sum() >= 1
                continue
            assert cls[target] == PR.PRED_TARGET_CLASS[p]
        for c in np.unique(PR.PRED_OBJECT[COUNTED & (states.goal_count[t] > 0)]):
            need = states.goal_count[t][COUNTED & np.equal(PR.PRED_OBJECT, c)].sum()
            assert (cls == c).sum() >= need, C.CLASS_NAMES[c]
        sofa = states.goal_target[t, PR.PREDICATE["sit_sofa"]]
        if sofa >= 0:
            assert nodes.room[t, sofa] == C.ROOM_CLASSES.index("livingroom")
        assert states.chars.room[t, 0] != states.chars.room[t, 1]
        assert (states.chars.hands[t] == -1).all() and (states.chars.sitting_on[t] == -1).all()
        assert (nodes.states[t] == 0).all()  # containers closed, appliances off


def test_distractors_exist_for_goal_classes(generated):
    states, _ = generated
    extra = []
    for t in range(len(states.apartment)):
        for p in np.flatnonzero(states.goal_count[t] * COUNTED):
            extra.append((states.nodes.cls[t] == PR.PRED_OBJECT[p]).sum() > states.goal_count[t, p])
    assert 0.3 < np.mean(extra) < 1.0  # instances uniform in [count, env_max + 1]


@pytest.fixture(scope="module")
def splits():
    return {name: T.cached_split(name, 0) for name in T.SPLITS}


def test_the_four_task_sets(splits):
    train, val, test1, test2 = splits["train"], splits["validation"], splits["test-1"], splits["test-2"]
    assert (len(train), len(val), len(test1), len(test2)) == (1011, 100, 100, 100)
    assert set(np.unique(np.asarray(train.states.apartment))) == set(A.TRAIN_APARTMENTS)
    assert set(np.unique(np.asarray(val.states.apartment))) == set(A.VALIDATION_APARTMENTS)
    for held_out in (test1, test2):
        assert set(np.unique(np.asarray(held_out.states.apartment))) <= set(A.TEST_APARTMENTS)
    assert np.bincount(test1.activities[:, 0], minlength=5).tolist() == [20] * 5
    assert (test1.activities[:, 1] == -1).all() and (test2.activities >= 0).all()
    assert (test2.activities[:, 0] != test2.activities[:, 1]).all()
    # validation: test-1's shape (10 goals per activity) then test-2's (5 per pair of activities)
    single, mixed = val.activities[:50], val.activities[50:]
    assert (single[:, 1] == -1).all() and np.bincount(single[:, 0], minlength=5).tolist() == [10] * 5
    pairs = [tuple(r) for r in mixed.tolist()]
    assert all(a < b for a, b in pairs) and sorted(set(pairs)) == sorted(T._PAIRS) and len(pairs) == 50
    assert all(pairs.count(p) == 5 for p in T._PAIRS)
    # every goal of validation and test-1 distinct, and no goal in two sets
    goals = {name: [g.tobytes() for g in np.asarray(s.states.goal_count)] for name, s in splits.items()}
    assert len(set(goals["validation"])) == 100 and len(set(goals["test-1"])) == 100
    names = list(goals)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert not set(goals[a]) & set(goals[b]), (a, b)
    no_dishwasher = [i for i, a in enumerate(A.APARTMENTS) if a.count("dishwasher") == 0]
    for task_set in splits.values():
        dish = (task_set.activities == PR.ACTIVITY_NAMES.index("put_dishwasher")).any(1)
        assert not np.isin(np.asarray(task_set.states.apartment)[dish], no_dishwasher).any()
        assert (np.asarray(task_set.states.task_id) == np.arange(len(task_set))).all()


def test_task_sets_are_reproducible_from_a_seed(splits):
    for split in ("test-2", "validation"):
        again = T.make_split(split, 0)
        chex.assert_trees_all_equal(again.states, splits[split].states)
        other = T.make_split(split, 1)
        assert not np.array_equal(np.asarray(other.states.goal_count), np.asarray(again.states.goal_count))


#: digests of test-1 and test-2 and of their paired Watch demonstration tasks, recorded from the code before the
#: validation split existed (commit d4709fa): holding apartment 5 out of training must change neither
TEST_DIGESTS = {
    "test-1": ("953e33d26c462a9e", "5df3d8e8b62f051d"),
    "test-2": ("2e00ff7db23bd6d4", "74cd7145da4ef5db"),
}
_DIGEST_FIELDS = (
    "goal_count", "goal_target", "apartment", "task_id", "nodes.cls", "nodes.parent", "nodes.relation", "nodes.room",
    "chars.room",
)  # fmt: skip


def _digest(task_set) -> str:
    """Returns a digest of a task set's integer arrays (floats left out: positions may round differently)."""
    arrays = T.state_arrays(task_set.states)
    digest = hashlib.sha256(np.asarray(task_set.activities, np.int8).tobytes())
    for name in _DIGEST_FIELDS:
        digest.update(np.ascontiguousarray(arrays[name]).tobytes())
    return digest.hexdigest()[:16]


def test_test_sets_and_their_paired_demonstrations_are_unchanged(splits):
    from jaxsoc.envs.household.agents import demos as D

    for split, (tasks_digest, paired_digest) in TEST_DIGESTS.items():
        assert _digest(splits[split]) == tasks_digest, split
        assert _digest(D.paired_tasks(splits[split], 0)) == paired_digest, split


def test_apartments():
    assert len(A.APARTMENTS) == 7
    parts = (A.TRAIN_APARTMENTS, A.VALIDATION_APARTMENTS, A.TEST_APARTMENTS)
    assert sorted(sum(parts, ())) == list(range(7))  # a partition: every apartment in exactly one part
    assert set(A.SEEN_APARTMENTS) == set(A.TRAIN_APARTMENTS) | set(A.VALIDATION_APARTMENTS) == {0, 1, 2, 4, 5}
    assert all(A.APARTMENTS[i].count("dishwasher") for i in A.VALIDATION_APARTMENTS)  # every activity fits
    for apt in A.APARTMENTS:
        for name in A.REQUIRED:
            assert apt.count(name) >= 1, (apt.index, name)
        rooms = apt.room_rect
        for k in np.flatnonzero(apt.furniture_class):  # furniture inside its room, not overlapping
            x0, z0, x1, z1 = rooms[apt.furniture_room[k]]
            lo, hi = apt.furniture_pos[k] - apt.furniture_size[k] / 2, apt.furniture_pos[k] + apt.furniture_size[k] / 2
            assert x0 <= lo[0] and z0 <= lo[1] and hi[0] <= x1 and hi[1] <= z1
        # every room reaches every other through the doors
        assert (apt.next_door[~np.eye(4, dtype=bool)] >= 0).all()
    assert [a.count("dishwasher") for a in A.APARTMENTS] == [1, 0, 1, 1, 1, 1, 0]
    with pytest.raises(ValueError, match="unknown apartment shape"):
        A.generate_apartment(0, "circle")


# -- files ----------------------------------------------------------------------------------------------------


def test_files_round_trip(splits, tmp_path):
    path = T.save(splits["test-1"], tmp_path / "t.npz")
    back = T.load(path)
    chex.assert_trees_all_equal(back.states, splits["test-1"].states)
    assert back.split == "test-1" and back.seed == 0 and (back.activities == splits["test-1"].activities).all()


def _rewrite(src, dst, change):
    data = dict(np.load(src))
    change(data)
    np.savez(dst, **data)
    return dst


def test_malformed_files_are_refused(splits, tmp_path):
    good = T.save(splits["test-1"], tmp_path / "good.npz")
    with pytest.raises(FileNotFoundError):
        T.load(tmp_path / "absent.npz")
    (tmp_path / "text.npz").write_text("not a task file")
    with pytest.raises(ValueError, match="not an .npz archive"):
        T.load(tmp_path / "text.npz")

    def version(d):
        meta = json.loads(str(d["meta"]))
        d["meta"] = np.array(json.dumps({**meta, "version": 99}))

    cases = {
        "version 99": version,
        "missing arrays": lambda d: d.pop("nodes.parent"),
        "'nodes.pos' has shape": lambda d: d.__setitem__("nodes.pos", d["nodes.pos"][:, :10]),
        "'goal_count' has shape": lambda d: d.__setitem__("goal_count", d["goal_count"].astype(np.int64)),
        "'nodes.cls' has values outside": lambda d: d.__setitem__("nodes.cls", d["nodes.cls"] + 100),
        "'activities' must have shape": lambda d: d.pop("activities"),
    }
    for message, change in cases.items():
        with pytest.raises(ValueError, match=message):
            T.load(_rewrite(good, tmp_path / "bad.npz", change))
    with zipfile.ZipFile(tmp_path / "other.npz", "w") as z:
        z.writestr("meta.npy", b"\x93NUMPY garbage")
    with pytest.raises(ValueError, match="not a readable household task file"):
        T.load(tmp_path / "other.npz")
    with pytest.raises(ValueError, match="unknown task split"):
        T.make_split("test-3")
