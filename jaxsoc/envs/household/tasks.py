"""Tasks: an apartment populated afresh plus Alice's goal, generated on the device; the benchmark's task sets.

``generate(key, apartment, activities)`` (jittable, vmappable) draws a goal the way the original's goal setter
does (``predicates``), picks the target furniture (a random kitchen table; the fridge; the dishwasher; the
living room's coffee table and sofa), places ``uniform[required, env_max + 1]`` instances of every grabbable
class (so goal classes have distractors) INSIDE or ON the furniture the original allows for that class (never
on the floor, never on or in the goal's own target for that class, a surface only while the objects on it
cover less than half of it: ``check_placeable``), and puts the two characters in two distinct rooms.

``make_split(split, seed)`` builds the paper's three sets and a validation set reproducibly: ``train`` (1,011
tasks in 4 of the paper's 5 training apartments, ``apartments.TRAIN_APARTMENTS``, activities in turn, no goal
of ``test-1`` or ``validation``), ``validation`` (100 tasks in the training apartment jaxsoc holds out,
``apartments.VALIDATION_APARTMENTS``: 50 single-activity goals, 10 per activity, and 50 goals mixing two
activities, 5 per pair; goals distinct and never in ``train``, ``test-1`` or ``test-2``: the test shift in
miniature, for model selection), ``test-1`` (100 tasks in the 2 held-out apartments, 20 per activity, goals
distinct and never used in ``train``) and ``test-2`` (100 tasks whose goals mix the predicates of two
activities, 10 per pair). The test sets are what they were before the validation set existed (they depend on
neither the training nor the validation apartments). ``save``/``load`` write and read them as ``.npz`` files.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.household import apartments as A
from jaxsoc.envs.household import classes as C
from jaxsoc.envs.household import predicates as PR
from jaxsoc.envs.household import world as W

SPLITS = {"train": 1011, "validation": 100, "test-1": 100, "test-2": 100}
FORMAT_VERSION = 1
#: the goal-count draws tried at once per task; the first whose totals are in range is kept
GOAL_ATTEMPTS = 64

_GRAB = np.array([C.CLASS[n] for n in C.GRABBABLE_CLASSES], np.int16)
_INSIDE, _ON = C.placement_tables()
_LOW, _HIGH, _TOTAL = PR.count_ranges()
_COUNTED = np.isin(PR.PRED_KIND, (PR.ON_KIND, PR.INSIDE_KIND))  # predicates the totals count
_PAIRS = tuple(itertools.combinations(range(PR.NUM_ACTIVITIES), 2))
MIXED_TOTAL = (2, 8)  # test-2: the combined total (each activity contributing at least one)


def allowed_apartments(activities, pool) -> list[int]:
    """Returns the apartments of ``pool`` that can hold tasks of all ``activities`` (indices): dishwasher tasks
    need a dishwasher."""
    needs = any(PR.ACTIVITY_NAMES[a] == "put_dishwasher" for a in activities if a >= 0)
    return [i for i in pool if not needs or A.APARTMENTS[i].count("dishwasher") > 0]


def sample_goal(key: jax.Array, activities: jax.Array) -> jax.Array:
    """Returns ``int8[30]`` goal counts for one or two activities (``int32[2]``, -1 for none): per predicate
    uniform in the activity's range, redrawn (``GOAL_ATTEMPTS`` draws at once) until each activity's counted
    total is in its range (``predicates.count_ranges``), and with two activities each gives at least one and
    their sum is in ``MIXED_TOTAL``."""
    low, high, total = jnp.asarray(_LOW), jnp.asarray(_HIGH), jnp.asarray(_TOTAL)
    present = activities >= 0
    act = jnp.maximum(activities, 0)
    u = jax.random.uniform(key, (GOAL_ATTEMPTS, 2, PR.NUM_PREDICATES))
    lo, hi = low[act].astype(jnp.int32), high[act].astype(jnp.int32)
    parts = jnp.floor(lo + u * (hi - lo + 1)).astype(jnp.int32) * present[None, :, None]
    sums = (parts * jnp.asarray(_COUNTED)).sum(-1)  # [K, 2]
    mixed = present.all()
    single_ok = (sums >= total[act, 0]) & (sums <= total[act, 1])
    mixed_ok = (sums >= 1).all(-1) & (sums.sum(-1) >= MIXED_TOTAL[0]) & (sums.sum(-1) <= MIXED_TOTAL[1])
    ok = jnp.where(mixed, mixed_ok, (single_ok | ~present).all(-1))
    pick = jnp.argmax(ok)
    return parts[pick].max(0).astype(jnp.int8)  # two activities never share a predicate


def _apartment(index: jax.Array) -> dict[str, jax.Array]:
    return {k: jnp.asarray(v)[index] for k, v in A.stacked().items()}


def _targets(key, apt) -> jax.Array:
    """Returns ``int16[30]`` the goal's target node per predicate (-1 for holds_book)."""
    fcls = apt["furniture_class"]
    froom = apt["furniture_room"]
    living = C.ROOM_CLASSES.index("livingroom")

    def pick(k, mask):
        score = jax.random.uniform(k, mask.shape) + mask
        return (jnp.argmax(score) + W.FURNITURE0).astype(jnp.int16)

    keys = jax.random.split(key, 5)
    table = pick(keys[0], fcls == C.CLASS["kitchentable"])
    fridge = pick(keys[1], fcls == C.CLASS["fridge"])
    dishwasher = pick(keys[2], fcls == C.CLASS["dishwasher"])
    coffee = pick(keys[3], (fcls == C.CLASS["coffeetable"]) * (1 + (froom == living)))
    sofa = pick(keys[4], (fcls == C.CLASS["sofa"]) * (1 + (froom == living)))
    by_class = {"kitchentable": table, "fridge": fridge, "dishwasher": dishwasher, "coffeetable": coffee, "sofa": sofa}
    return jnp.stack([by_class[p[3]] if p[3] in by_class else jnp.int16(-1) for p in PR.PREDICATES]).astype(jnp.int16)


def _object_counts(key, goal) -> jax.Array:
    """Returns ``int32[len(GRABBABLE_CLASSES)]`` instances per grabbable class: uniform in
    ``[required, max(required, env_max + 1)]``."""
    goal = goal.astype(jnp.int32)
    counted = jnp.asarray(_COUNTED)
    obj = jnp.asarray(PR.PRED_OBJECT)
    required = ((obj[None, :] == jnp.asarray(_GRAB)[:, None]) * (goal * counted)[None, :]).sum(1)
    book = C.CLASS["book"] == _GRAB
    holds = goal[PR.PREDICATE["holds_book"]] > 0
    required = jnp.where(jnp.asarray(book) & holds, jnp.maximum(required, 1), required)
    high = jnp.maximum(required, jnp.asarray(C.ENV_MAX)[_GRAB].astype(jnp.int32) + 1)
    u = jax.random.uniform(key, required.shape)
    return jnp.floor(required + u * (high - required + 1)).astype(jnp.int32)


def generate(key: jax.Array, apartment: jax.Array, activities: jax.Array, goal: jax.Array | None = None) -> W.State:
    """Returns a task (``world.State`` at step 0, ``task_id`` -1) in apartment ``apartment`` (int) for one or two
    ``activities`` (``int32[2]``, -1 for none); ``goal`` (int8[30] counts) fixes the goal instead of drawing it
    (the rest of the task is drawn as usual). Jittable; vmap over keys for many."""
    apt = _apartment(apartment)
    k_goal, k_target, k_count, k_place, k_rooms = jax.random.split(key, 5)
    goal = sample_goal(k_goal, activities) if goal is None else jnp.asarray(goal, jnp.int8)
    target = _targets(k_target, apt)
    counts = _object_counts(k_count, goal)
    cum = jnp.cumsum(counts)
    slot = jnp.arange(W.MAX_OBJECTS)
    slot_class = jnp.asarray(_GRAB)[jnp.minimum(jnp.searchsorted(cum, slot, side="right"), len(_GRAB) - 1)]
    slot_class = jnp.where(slot < cum[-1], slot_class, 0).astype(jnp.int16)

    fcls = apt["furniture_class"]
    fsize = apt["furniture_size"]
    farea = fsize[:, 0] * fsize[:, 1]
    table_ok = (fcls != C.CLASS["kitchentable"]) | apt["table_placement"]
    goal_obj = jnp.where(goal > 0, jnp.asarray(PR.PRED_OBJECT), -1)
    goal_target_f = target - W.FURNITURE0  # furniture index of each predicate's target

    def place(used, inputs):
        k, c = inputs
        forbidden = (
            jnp.zeros(A.MAX_FURNITURE, bool)
            .at[jnp.where(goal_obj == c, goal_target_f, A.MAX_FURNITURE)]
            .set(True, mode="drop")
        )
        area = jnp.asarray(C.SIZE)[c].prod()
        inside = jnp.asarray(_INSIDE)[c, fcls] & (fcls > 0) & ~forbidden
        on = jnp.asarray(_ON)[c, fcls] & (fcls > 0) & table_ok & ~forbidden & (used + area < 0.5 * farea)
        k1, k2 = jax.random.split(k)
        choice = jnp.argmax(jax.random.uniform(k1, (2, A.MAX_FURNITURE)) + jnp.stack([inside, on]))
        rel_on, f = choice // A.MAX_FURNITURE, choice % A.MAX_FURNITURE
        real = c > 0
        used = used.at[f].add(jnp.where(real & (rel_on == 1), area, 0.0))
        spread = jnp.where(rel_on == 1, 0.7, 0.3)
        pos = apt["furniture_pos"][f] + jax.random.uniform(k2, (2,), minval=-0.5, maxval=0.5) * fsize[f] * spread
        return used, (f, jnp.where(rel_on == 1, C.ON_TOP, C.INSIDE), pos)

    _, (obj_f, obj_rel, obj_pos) = jax.lax.scan(
        place, jnp.zeros(A.MAX_FURNITURE), (jax.random.split(k_place, W.MAX_OBJECTS), slot_class)
    )
    return _assemble(apt, apartment, goal, target, slot_class, obj_f, obj_rel, obj_pos, k_rooms)


def _assemble(apt, apartment, goal, target, slot_class, obj_f, obj_rel, obj_pos, key) -> W.State:
    rect = apt["room_rect"]
    room_cls = jnp.array([C.CLASS[n] for n in C.ROOM_CLASSES], jnp.int16)
    door_present = apt["door_rooms"][:, 0] >= 0
    cls = jnp.concatenate(
        [
            room_cls,
            jnp.where(door_present, C.CLASS["doorjamb"], 0).astype(jnp.int16),
            apt["furniture_class"],
            slot_class,
        ]
    )
    room_of_door = jnp.maximum(apt["door_rooms"][:, 0], 0)
    froom = apt["furniture_room"]
    room = jnp.concatenate([jnp.arange(W.NUM_ROOMS), room_of_door, froom, froom[obj_f]]).astype(jnp.int8)
    parent = jnp.concatenate(
        [jnp.full(W.NUM_ROOMS, -1), room_of_door, froom.astype(jnp.int32), obj_f + W.FURNITURE0]
    ).astype(jnp.int16)
    relation = jnp.concatenate(
        [
            jnp.full(W.NUM_ROOMS, C.NO_PARENT),
            jnp.full(A.MAX_DOORS, C.IN_ROOM),
            jnp.full(A.MAX_FURNITURE, C.IN_ROOM),
            obj_rel,
        ]
    ).astype(jnp.int8)
    pos = jnp.concatenate([(rect[:, :2] + rect[:, 2:]) / 2, apt["door_pos"], apt["furniture_pos"], obj_pos]).astype(
        jnp.float32
    )
    size = jnp.concatenate(
        [
            rect[:, 2:] - rect[:, :2],
            jnp.tile(jnp.asarray(C.SIZE)[C.CLASS["doorjamb"]], (A.MAX_DOORS, 1)),
            apt["furniture_size"],
            jnp.asarray(C.SIZE)[slot_class],
        ]
    ).astype(jnp.float32)
    valid = cls > 0
    nodes = W.Nodes(
        cls=cls,
        category=jnp.where(valid, jnp.asarray(C.CATEGORY)[cls], 0).astype(jnp.int8),
        properties=jnp.asarray(C.PROPERTIES)[cls],
        states=jnp.zeros(W.NUM_NODES, jnp.uint8),
        parent=jnp.where(valid, parent, -1).astype(jnp.int16),
        relation=jnp.where(valid, relation, C.NO_PARENT).astype(jnp.int8),
        room=jnp.where(valid, room, 0).astype(jnp.int8),
        pos=jnp.where(valid[:, None], pos, 0.0),
        size=jnp.where(valid[:, None], size, 0.0),
    )
    rooms = jax.random.permutation(key, W.NUM_ROOMS)[:2].astype(jnp.int8)
    centre = (rect[rooms, :2] + rect[rooms, 2:]) / 2
    chars = W.Characters(
        room=rooms,
        pos=centre.astype(jnp.float32),
        hands=jnp.full((2, 2), -1, jnp.int16),
        sitting_on=jnp.full(2, -1, jnp.int16),
    )
    return W.State(
        nodes=nodes,
        chars=chars,
        door_rooms=apt["door_rooms"].astype(jnp.int8),
        next_door=apt["next_door"].astype(jnp.int8),
        goal_count=goal,
        goal_target=jnp.where(goal > 0, target, -1).astype(jnp.int16),
        apartment=jnp.asarray(apartment, jnp.int8),
        task_id=jnp.int32(-1),
        step=jnp.int32(0),
    )


_generate_batch = jax.jit(jax.vmap(generate))


# -- task sets -------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class TaskSet:
    """A set of tasks: ``states`` (a ``world.State`` with a leading axis of ``len(self)``), ``activities``
    ``int8[T, 2]`` (-1 pads a single activity), and where it came from (``split``, ``seed``)."""

    states: W.State
    activities: np.ndarray
    split: str
    seed: int

    def __len__(self) -> int:
        return int(self.activities.shape[0])

    def goal_texts(self) -> list[str]:
        """Returns each task's goal as text (``predicates.goal_text``)."""
        counts, targets = np.asarray(self.states.goal_count), np.asarray(self.states.goal_target)
        return [PR.goal_text(c, t) for c, t in zip(counts, targets)]

    def task(self, index: int) -> W.State:
        """Returns task ``index`` as a single ``world.State``."""
        return jax.tree_util.tree_map(lambda x: x[index], self.states)


def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"unknown task split {split!r}; choose from {sorted(SPLITS)}")


def _candidates(key, plan: list[tuple[tuple[int, int], list[int]]], per: int):
    """Generates ``per`` candidate tasks for each ``(activities, apartments)`` entry of ``plan``; returns
    ``(states, activities int32[M, 2])`` on the host."""
    acts, apts = [], []
    rng = np.random.default_rng(np.asarray(jax.random.key_data(key)).ravel()[-1])
    for activities, pool in plan:
        acts += [activities] * per
        apts += list(rng.choice(pool, per))
    acts_a, apts_a = np.array(acts, np.int32), np.array(apts, np.int32)
    states = _generate_batch(jax.random.split(key, len(acts)), jnp.asarray(apts_a), jnp.asarray(acts_a))
    return jax.device_get(states), acts_a


def _goal_key(count: np.ndarray) -> bytes:
    return np.asarray(count, np.int8).tobytes()


def take(states: W.State, index) -> W.State:
    """Returns the tasks ``index`` (int array) of a bank ``states`` (a ``world.State`` with a task axis)."""
    return jax.tree_util.tree_map(lambda x: x[np.asarray(index, np.int64)], states)


def _test1(seed: int) -> tuple[W.State, np.ndarray]:
    key = jax.random.fold_in(jax.random.key(seed), 1)
    plan = [((a, -1), allowed_apartments((a,), A.TEST_APARTMENTS)) for a in range(PR.NUM_ACTIVITIES)]
    states, acts = _candidates(key, plan, 200)
    chosen, seen = [], set()
    for a in range(PR.NUM_ACTIVITIES):
        taken = 0
        for i in np.flatnonzero(acts[:, 0] == a):
            g = _goal_key(states.goal_count[i])
            if g not in seen and taken < SPLITS["test-1"] // PR.NUM_ACTIVITIES:
                seen.add(g)
                chosen.append(i)
                taken += 1
        if taken < SPLITS["test-1"] // PR.NUM_ACTIVITIES:
            raise RuntimeError(f"test-1: only {taken} distinct goals for {PR.ACTIVITY_NAMES[a]}")
    return take(states, chosen), acts[chosen]


def _test2(seed: int) -> tuple[W.State, np.ndarray]:
    key = jax.random.fold_in(jax.random.key(seed), 2)
    plan = [(pair, allowed_apartments(pair, A.TEST_APARTMENTS)) for pair in _PAIRS]
    return _candidates(key, plan, SPLITS["test-2"] // len(_PAIRS))


def _distinct(states: W.State, groups: np.ndarray, per: int, avoid: set[bytes], name: str) -> list[int]:
    """Returns candidate indices: the first ``per`` of each group (``groups`` int[M], in order of first
    appearance) whose goals are distinct and not in ``avoid``. Raises ``RuntimeError`` when a group has fewer."""
    chosen, seen = [], set(avoid)
    for group in dict.fromkeys(groups.tolist()):
        taken = 0
        for i in np.flatnonzero(groups == group):
            g = _goal_key(states.goal_count[i])
            if g not in seen and taken < per:
                seen.add(g)
                chosen.append(int(i))
                taken += 1
        if taken < per:
            raise RuntimeError(f"{name}: only {taken} distinct new goals for group {group}")
    return chosen


def _validation(seed: int) -> tuple[W.State, np.ndarray]:
    """The validation set: in ``apartments.VALIDATION_APARTMENTS``, 10 single-activity goals per activity (like
    test-1) then 5 two-activity goals per pair (like test-2), all distinct and none of test-1's or test-2's
    (``train`` then avoids these). Its keys fold 5 into ``key(seed)`` (``make_split``'s other sets use 0-2, the
    Watch stage's ``extra`` 3 and its paired tasks 4)."""
    base = jax.random.fold_in(jax.random.key(seed), 5)
    avoid = {_goal_key(g) for g in np.asarray(_test1(seed)[0].goal_count)}
    avoid |= {_goal_key(g) for g in np.asarray(_test2(seed)[0].goal_count)}
    half = SPLITS["validation"] // 2
    single_plan = [((a, -1), allowed_apartments((a,), A.VALIDATION_APARTMENTS)) for a in range(PR.NUM_ACTIVITIES)]
    single, single_acts = _candidates(jax.random.fold_in(base, 0), single_plan, 200)
    keep = _distinct(single, single_acts[:, 0], half // PR.NUM_ACTIVITIES, avoid, "validation")
    avoid |= {_goal_key(single.goal_count[i]) for i in keep}
    mixed_plan = [(pair, allowed_apartments(pair, A.VALIDATION_APARTMENTS)) for pair in _PAIRS]
    mixed, mixed_acts = _candidates(jax.random.fold_in(base, 1), mixed_plan, SPLITS["test-2"] // len(_PAIRS))
    pair_id = mixed_acts[:, 0] * PR.NUM_ACTIVITIES + mixed_acts[:, 1]
    keep_mixed = _distinct(mixed, pair_id, (SPLITS["validation"] - half) // len(_PAIRS), avoid, "validation")
    states = jax.tree_util.tree_map(
        lambda a, b: np.concatenate([np.asarray(a)[keep], np.asarray(b)[keep_mixed]]), single, mixed
    )
    return states, np.concatenate([single_acts[keep], mixed_acts[keep_mixed]])


def make_split(split: str, seed: int = 0) -> TaskSet:
    """Returns task set ``split`` (``SPLITS``) built reproducibly from ``seed`` (module docstring). ``train``
    avoids every goal of ``test-1`` (the paper's unseen test goals) and of ``validation`` of the same seed;
    ``validation`` avoids those of both tests; ``test-2`` mixes two activities per goal."""
    _check_split(split)
    if split == "test-1":
        states, acts = _test1(seed)
    elif split == "validation":
        states, acts = _validation(seed)
    elif split == "train":
        test_goals = {_goal_key(g) for g in np.asarray(_test1(seed)[0].goal_count)}
        test_goals |= {_goal_key(g) for g in np.asarray(_validation(seed)[0].goal_count)}
        key = jax.random.fold_in(jax.random.key(seed), 0)
        plan = [((a, -1), allowed_apartments((a,), A.TRAIN_APARTMENTS)) for a in range(PR.NUM_ACTIVITIES)]
        states, acts = _candidates(key, plan, 600)
        per_act = [
            [i for i in np.flatnonzero(acts[:, 0] == a) if _goal_key(states.goal_count[i]) not in test_goals]
            for a in range(PR.NUM_ACTIVITIES)
        ]
        chosen = [per_act[t % PR.NUM_ACTIVITIES][t // PR.NUM_ACTIVITIES] for t in range(SPLITS["train"])]
        states, acts = take(states, chosen), acts[chosen]
    else:
        states, acts = _test2(seed)
    states = states.replace(task_id=np.arange(len(acts), dtype=np.int32))
    return TaskSet(
        states=jax.tree_util.tree_map(jnp.asarray, states), activities=acts.astype(np.int8), split=split, seed=seed
    )


@functools.lru_cache(maxsize=8)
def cached_split(split: str, seed: int = 0) -> TaskSet:
    """Returns ``make_split(split, seed)``, built once per process."""
    return make_split(split, seed)


# -- files -----------------------------------------------------------------------------------------------


def state_arrays(states: W.State) -> dict[str, np.ndarray]:
    """Returns a task bank's arrays by their file names (``nodes.cls``, ``chars.hands``, ``goal_count``, ...)."""
    leaves = jax.tree_util.tree_flatten_with_path(jax.device_get(states))[0]
    return {_name(p): np.asarray(v) for p, v in leaves}


def state_from_arrays(data: dict[str, np.ndarray]) -> W.State:
    """Returns the task bank (``world.State`` with a task axis) stored in ``data`` under ``state_layout``'s names."""
    layout, treedef = state_layout()
    return jax.tree_util.tree_unflatten(treedef, [jnp.asarray(data[name]) for name in layout])


def state_layout() -> tuple[dict[str, tuple[tuple[int, ...], str]], jax.tree_util.PyTreeDef]:
    """Returns the task arrays' file names -> (shape after the task axis, dtype), and the ``world.State`` treedef."""
    example = jax.eval_shape(generate, jax.random.key(0), jnp.int32(0), jnp.array([0, -1], jnp.int32))
    leaves, treedef = jax.tree_util.tree_flatten_with_path(example)
    return {_name(p): (tuple(v.shape), str(v.dtype)) for p, v in leaves}, treedef


def _name(path) -> str:
    return ".".join(k.name for k in path)


def read_archive(path: str | Path, what: str, fmt: str, version: int) -> tuple[dict[str, np.ndarray], dict]:
    """Returns ``(arrays, meta)`` of a household ``.npz`` file whose JSON ``meta`` names format ``fmt`` at
    ``version``; ``what`` ("task", "demonstration") names the file kind in messages.

    Raises:
        FileNotFoundError: no such file.
        ValueError: not an archive, unreadable, no or unreadable ``meta``, another format or version.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no household {what} file at {path}")
    with open(path, "rb") as f:
        if f.read(4) != b"PK\x03\x04":
            raise ValueError(f"{path}: not a household {what} file (not an .npz archive)")
    try:
        data = dict(np.load(path, allow_pickle=False))
    except Exception as error:  # zip or npy errors: the file is damaged or not ours
        raise ValueError(f"{path}: not a readable household {what} file ({error})") from error
    if "meta" not in data:
        raise ValueError(f"{path}: not a household {what} file (no 'meta' array)")
    try:
        meta = json.loads(str(data.pop("meta")))
        if not isinstance(meta, dict):
            raise TypeError("meta is not a JSON object")
    except Exception as error:
        raise ValueError(f"{path}: not a readable household {what} file: unreadable 'meta' ({error})") from error
    if meta.get("format") != fmt:
        raise ValueError(f"{path}: not a household {what} file (format {meta.get('format')!r})")
    if meta.get("version") != version:
        raise ValueError(f"{path}: {what} file version {meta.get('version')}, this jaxsoc reads {version}")
    return data, meta


def check_arrays(path, data: dict[str, np.ndarray], expected: dict[str, tuple[tuple[int, ...], str]]) -> None:
    """Raises ``ValueError`` naming the missing arrays of ``expected`` (name -> (shape, dtype)), or the first one
    of another shape or dtype."""
    missing = sorted(set(expected) - set(data))
    if missing:
        raise ValueError(f"{path}: missing arrays {missing}")
    for name, (shape, dtype) in expected.items():
        got = data[name]
        if got.shape != shape or str(got.dtype) != dtype:
            raise ValueError(
                f"{path}: array {name!r} has shape {got.shape} and dtype {got.dtype}; expected {shape} {dtype}"
            )


def save(task_set: TaskSet, path: str | Path) -> Path:
    """Writes ``task_set`` to ``path`` (``.npz``: the state arrays, ``activities`` and a JSON ``meta`` with the
    format version, split, seed and each task's goal text). Returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "format": "jaxsoc.household.tasks",
        "version": FORMAT_VERSION,
        "split": task_set.split,
        "seed": task_set.seed,
        "num_tasks": len(task_set),
        "goals": task_set.goal_texts(),
    }
    arrays = state_arrays(task_set.states)
    with open(path, "wb") as f:
        np.savez_compressed(f, meta=np.array(json.dumps(meta)), activities=task_set.activities, **arrays)
    return path


def load(path: str | Path) -> TaskSet:
    """Returns the ``TaskSet`` stored at ``path`` by ``save``.

    Raises:
        FileNotFoundError: no such file.
        ValueError: not a household task file, another format version, or an array with a missing name, a wrong
            shape or dtype, or values out of range (class ids, parents, rooms, hands) — the message names it.
    """
    data, meta = read_archive(path, "task", "jaxsoc.household.tasks", FORMAT_VERSION)
    num = int(meta.get("num_tasks", -1))
    acts = data.pop("activities", None)
    if acts is None or acts.shape != (num, 2):
        raise ValueError(f"{path}: 'activities' must have shape ({num}, 2)")
    layout, _ = state_layout()
    check_arrays(path, data, {name: ((num, *shape), dtype) for name, (shape, dtype) in layout.items()})
    check_ranges(path, data)
    states = state_from_arrays(data)
    return TaskSet(states=states, activities=acts, split=str(meta.get("split")), seed=int(meta.get("seed", -1)))


def check_ranges(path, data) -> None:
    """Raises ``ValueError`` naming the first task array of ``data`` (dotted names, as in the files) whose values
    fall outside their range (class ids, parents, rooms, relations, hands, seats, goals, apartments)."""
    checks = {
        "nodes.cls": (0, C.NUM_CLASSES - 1),
        "nodes.parent": (-1, W.NUM_NODES - 1),
        "nodes.room": (0, W.NUM_ROOMS - 1),
        "nodes.relation": (0, len(C.RELATION_NAMES) - 1),
        "chars.room": (0, W.NUM_ROOMS - 1),
        "chars.hands": (-1, W.NUM_NODES - 1),
        "chars.sitting_on": (-1, W.NUM_NODES - 1),
        "goal_count": (0, 127),
        "goal_target": (-1, W.NUM_NODES - 1),
        "apartment": (0, len(A.APARTMENTS) - 1),
    }
    for name, (lo, hi) in checks.items():
        values = data[name]
        if values.size and (values.min() < lo or values.max() > hi):
            raise ValueError(f"{path}: array {name!r} has values outside [{lo}, {hi}]")
