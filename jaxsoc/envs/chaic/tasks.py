"""CHAIC's tasks: host-side numpy generators of frame-0 ``state.State`` worlds, and the train/test task sets.

The generators follow the original's (``scenes/scene_generate_indoor.py``, the outdoor generators; spec §2.3,
paper §3.3.1 and appendix G):

- **Indoor** (normal, high_target, high_container, high_goalplace, low_target, obstacle): for each target
  group of ``catalogue.INDOOR_GROUPS`` a balanced list of ``len(group) + 4`` instances (every name once, the rest
  spread evenly) -> 31 target-category objects, plus 6 containers (3 food, 3 stuff). The goal is every instance
  of one group plus one instance of another group's class (8-10 objects), plus 2 vases in high_target (10-12).
  Objects stand on furniture slots (``scenes.slots``: 3 per table, 2 per sofa/chair/bed/shelf/high place) with
  ``height`` = slot top + the class's own height, about 10 % on the floor (``FLOOR_FRACTION``; top =
  ``scenes.FLOOR_Y`` + own height < 0.25 m). The goal place is a random bed (high_goalplace: a random cabinet or
  fridge, top > 1.5 m) and nothing starts on it. Task twists:

  - high_target: the 2 vases and 6 more objects (2 of them goal instances) on high places (2 slots each);
  - high_container: one container on each high place (4 or 5 containers, all above 1.5 m; the rest left out);
  - low_target: ``LOW_FRACTION`` (60 %) of the objects on the floor (~55 % of the tops below 0.25 m, the
    original's measured 56 %);
  - obstacle: an obstacle (fire extinguisher or trash bin) at the centre of every door but one.

- **shopping** (``street``): the 6 shops sell one of the 3 ``SHOPPING_GROUPS`` each, every category in exactly
  2 shops, 7 items per shop (a balanced list of the category's 4 names) on its counter; the goal is 10-12 of the
  14 items of one category plus one item of another (11-13); the 3 ``SHOPPING_CONTAINERS`` on 3 random shops;
  the goal place is the fire hydrant. The rider (agent 0) holds the bike (a ``BIKE`` object, ``holder`` 0) in
  hand 0; the child (agent 2) is active and starts 1-2.5 m from him.
- **furniture** (``yard``): 5 different pieces of ``FURNITURE_NAMES`` placed without overlap in the place area in
  front of the house; the goal place is the truck ~10 m away; ``total`` is their total mass.

Agents start at random walkable points at least 0.5 m from walls and furniture, 1 m from door centres and 1 m
from each other (yard: next to the place area), with random headings, idle (``WAIT``, ``SUCCEEDED``).

``make_split(task, split, seed, size)`` builds a ``TaskSet``: ``test`` is the original's 12 episodes (indoor:
test plans 2a, 2b, 5a, 5c x layouts 0-2; episode ``i`` uses seed ``seed + 123456 * i``), ``validation``
``VALIDATION_EPISODES`` episodes on the training plan held out from training (``VALIDATION_PLANS``, 4b x layouts 0-2;
outdoor: its own seeds) and ``train`` ``size`` episodes on the other training plans (1a, 1b, 4a x layouts), each from
its own seed stream. Validation is shaped like the test shift (a floor plan training never sees) and is what
training curves and model choices read; the test split is scored once, by ``jaxsoc chaic eval``.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.envs.chaic import scenes as SC
from jaxsoc.envs.chaic import state as S
from jaxsoc.envs.chaic.family import FAMILY

SPLITS = ("train", "validation", "test")
TEST_EPISODES = 12
VALIDATION_EPISODES = 12
VALIDATION_PLANS = ("4b",)  # the training plan (all its layouts) held out from train for validation
TRAIN_SIZE = 256
_STREAM = {"train": 1, "validation": 2}  # each split's own seed stream (the test split's seeds are the original's)
SEED_STRIDE = 123456  # the original's episode seed: seed + 123456 * seed_num
INDOOR_TASKS = ("normal", "high_target", "high_container", "high_goalplace", "low_target", "obstacle")
TASK_PLAN = {"shopping": "street", "furniture": "yard"}  # the outdoor tasks' scenes

FLOOR_FRACTION = 0.1  # indoor tasks other than low_target: this share of the objects starts on the floor
LOW_FRACTION = 0.6  # low_target: this share starts on the floor (containers on it stay above 0.25 m: ~55 % below)
HIGH_TARGET_SLOTS = 8  # high_target: objects on high places (the 2 vases among them; ~20 % of 39)
HIGH_TARGET_GOAL = 2  # of which at least this many goal instances besides the vases
SHOP_ITEMS = 7  # items per shop
SHOP_GOAL = (10, 12)  # goal items of the chosen category (plus one of another)
NUM_FURNITURE = 5
FURNITURE_GAP = 0.3  # between the furniture pieces' footprints (discs of diameter CLASS_SIZE)
AGENT_GAP = 1.0  # between agents at the start
OBJECT_GAP = 0.4  # between an agent and an object on the floor (plus half its size)
CHILD_NEAR = (1.0, 2.5)  # shopping: the child starts this far from the rider


def check_task(task: str) -> None:
    """Raises ``ValueError`` for an unknown task name."""
    FAMILY.check_task(task)


def check_split(split: str) -> None:
    """Raises ``ValueError`` for an unknown split name."""
    if split not in SPLITS:
        raise ValueError(f"unknown CHAIC task split {split!r}; choose from {list(SPLITS)}")


def check_training_split(split: str) -> None:
    """Raises ``ValueError`` unless ``split`` may be scored during training (curves, checkpoint choices): any split
    but ``test``, which is scored once, after training, by ``jaxsoc chaic eval``."""
    check_split(split)
    if split == "test":
        raise ValueError(
            "training curves and model choices read the 'validation' split, not 'test': the test split is scored "
            "once, after training, by `jaxsoc chaic eval`"
        )


def task_plans(task: str, split: str) -> tuple[str, ...]:
    """Returns the plans the episodes of ``task`` in ``split`` use (indoor: the training plans but the held-out
    ``VALIDATION_PLANS``, those, or the test plans; outdoor: the task's one scene, every split)."""
    check_task(task)
    check_split(split)
    if task in TASK_PLAN:
        return (TASK_PLAN[task],)
    if split == "train":
        return tuple(p for p in SC.TRAIN_PLANS if p not in VALIDATION_PLANS)
    return VALIDATION_PLANS if split == "validation" else SC.TEST_PLANS


def balanced(names: tuple[str, ...], count: int, rng: np.random.Generator) -> list[int]:
    """Returns ``count`` class ids drawn from ``names`` as evenly as possible (every name ``count // len``
    times, a random ``count % len`` of them once more), shuffled."""
    full, extra = divmod(count, len(names))
    picks = list(names) * full + list(rng.choice(names, extra, replace=False))
    return [K.CLASS[n] for n in rng.permutation(picks)]


# -- placement helpers -------------------------------------------------------------------------------------------


def _jitter(points: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return (points + rng.uniform(-0.45, 0.45, points.shape) * SC.GRID).astype(np.float32)


def _floor_points(lay: SC.Layout, n: int, rng: np.random.Generator, gap: float = 0.4) -> np.ndarray:
    """Returns float32[n, 2]: random floor spots of ``lay`` at least ``gap`` apart."""
    spots = lay.floor_spots[:, :2]
    out: list[np.ndarray] = []
    while len(out) < n:
        for p in _jitter(spots[rng.integers(len(spots), size=4 * n)], rng):
            if all(np.hypot(*(p - q)) >= gap for q in out):
                out.append(p)
                if len(out) == n:
                    break
    return np.array(out, np.float32).reshape(n, 2)


def _agent_points(lay: SC.Layout, rng, floor_pos: np.ndarray, floor_size: np.ndarray) -> np.ndarray:
    """Returns float32[3, 2]: the agents' start points: the constrained agent and the helper at random agent
    spots ``AGENT_GAP`` apart, the child ``CHILD_NEAR`` from the constrained agent; all clear of the objects on
    the floor (``floor_pos``/``floor_size``) and of each other."""
    spots = lay.agent_spots

    def ok(p, taken):
        if len(floor_pos) and (np.linalg.norm(floor_pos - p, axis=1) < floor_size / 2 + OBJECT_GAP).any():
            return False
        return all(np.hypot(*(p - q)) >= AGENT_GAP for q in taken)

    taken: list[np.ndarray] = []
    for _ in range(2):
        for _ in range(1000):
            p = _jitter(spots[rng.integers(len(spots))], rng)
            if ok(p, taken):
                taken.append(p)
                break
        else:
            raise RuntimeError(f"no start point for an agent in {lay.plan}")
    d = np.linalg.norm(spots - taken[0], axis=1)
    near = spots[(d >= CHILD_NEAR[0] + 0.1) & (d <= CHILD_NEAR[1] - 0.1)]
    for _ in range(1000):
        p = _jitter(near[rng.integers(len(near))], rng) if len(near) else taken[0]
        if not len(near) or ok(p, taken):
            taken.append(p)
            break
    else:
        raise RuntimeError(f"no start point for the child in {lay.plan}")
    return np.array(taken, np.float32)


# -- the generators ----------------------------------------------------------------------------------------------


@dataclasses.dataclass
class _World:
    """What a generator decides: objects ``(cls, x, z, height)``, the goal furniture, goal counts and total."""

    cls: list[int]
    pos: list[np.ndarray]
    height: list[float]
    on_floor: list[bool]
    goal: int
    goal_count: np.ndarray
    total: float


def _add(world: _World, cls: int, pos, height: float, on_floor: bool) -> None:
    world.cls.append(int(cls))
    world.pos.append(np.asarray(pos, np.float32)[:2])
    world.height.append(float(height))
    world.on_floor.append(on_floor)


def _indoor(task: str, lay: SC.Layout, rng: np.random.Generator) -> _World:
    # the objects: 4 balanced target groups, then the containers (and the vases)
    groups = list(K.INDOOR_GROUPS.values())
    items, group_of = [], []
    for g, names in enumerate(groups):
        ids = balanced(names, len(names) + 4, rng)
        items += ids
        group_of += [g] * len(ids)
    items_a, group_a = np.array(items), np.array(group_of)
    containers = [K.CLASS[n] for n in K.FOOD_CONTAINERS + K.STUFF_CONTAINERS]

    # the goal: all of one group + one instance of another group's class (+ 2 vases)
    goal_group = int(rng.integers(len(groups)))
    goal_count = np.zeros(K.NUM_CLASSES, np.int64)
    np.add.at(goal_count, items_a[group_a == goal_group], 1)
    extra = int(rng.choice(np.flatnonzero(group_a != goal_group)))
    goal_count[items_a[extra]] += 1
    goal_instance = (group_a == goal_group) | (np.arange(len(items)) == extra)

    # the goal place
    high_places = lay.high_places()
    beds = lay.of_class("bed")
    goal = int(rng.choice(high_places if task == "high_goalplace" else beds))
    free = lay.slots[lay.slots[:, 3] != goal]
    high_slot = free[:, 2] > SC.HIGH_PLACE
    high_slots, low_slots = free[high_slot], free[~high_slot]

    # where each object goes: "high" (a high-place slot), "floor" or "low" (a low-surface slot)
    objects = items + containers
    where = ["low"] * len(objects)
    if task == "high_target":
        objects += [K.CLASS["vase"]] * 2
        where += ["high", "high"]
        goal_count[K.CLASS["vase"]] += 2
        n_more = min(HIGH_TARGET_SLOTS, len(high_slots)) - 2
        goal_idx = np.flatnonzero(goal_instance)
        first = rng.choice(goal_idx, min(HIGH_TARGET_GOAL, n_more), replace=False)
        rest = np.setdiff1d(np.arange(len(items)), first)
        more = np.concatenate([first, rng.choice(rest, n_more - len(first), replace=False)])
        for i in more:
            where[int(i)] = "high"
    elif task == "high_container":
        places = rng.permutation(np.unique(high_slots[:, 3]))[: len(containers)]
        keep = rng.choice(len(containers), len(places), replace=False)
        objects = items + [containers[int(i)] for i in sorted(keep)]
        where = ["low"] * len(items) + ["high"] * len(places)
        # one container per high place: keep one random slot of each
        chosen = [high_slots[high_slots[:, 3] == f][int(rng.integers(2))] for f in places]
        high_slots = np.array(chosen, np.float32).reshape(-1, 4)
    fraction = LOW_FRACTION if task == "low_target" else FLOOR_FRACTION
    movable = [i for i, w in enumerate(where) if w == "low"]
    n_floor = int(round(fraction * len(objects)))
    for i in rng.choice(movable, n_floor, replace=False):
        where[int(i)] = "floor"

    world = _World([], [], [], [], goal, goal_count, 0.0)
    n_high = where.count("high")
    n_low = where.count("low")
    assert n_high <= len(high_slots) and n_low <= len(low_slots), (lay.plan, lay.index, task, n_high, n_low)
    high_pick = high_slots[rng.choice(len(high_slots), n_high, replace=False)] if n_high else high_slots[:0]
    low_pick = low_slots[rng.choice(len(low_slots), n_low, replace=False)]
    floor_pick = _floor_points(lay, where.count("floor"), rng)
    queues = {"high": iter(high_pick), "low": iter(low_pick)}
    floor_iter = iter(floor_pick)
    for c, w in zip(objects, where):
        if w == "floor":
            _add(world, c, next(floor_iter), SC.FLOOR_Y + K.CLASS_HEIGHT[c], True)
        else:
            x, z, top, _ = next(queues[w])
            _add(world, c, (x, z), top + K.CLASS_HEIGHT[c], False)
    if task == "obstacle":  # an obstacle in every doorway but one
        blocked = rng.permutation(len(lay.doors))[: max(len(lay.doors) - 1, 0)]
        for d in sorted(blocked):
            c = K.CLASS[K.OBSTACLES[int(rng.integers(len(K.OBSTACLES)))]]
            _add(world, c, lay.doors[d], K.CLASS_HEIGHT[c], True)
    world.total = float(goal_count.sum())
    return world


def _shopping(lay: SC.Layout, rng: np.random.Generator) -> _World:
    groups = list(K.SHOPPING_GROUPS.values())
    shop_group = rng.permutation(np.repeat(np.arange(len(groups)), 2))
    container_shops = set(rng.choice(len(SC.SHOP_FURNITURE), len(K.SHOPPING_CONTAINERS), replace=False).tolist())
    containers = iter(rng.permutation([K.CLASS[n] for n in K.SHOPPING_CONTAINERS]))
    world = _World([], [], [], [], lay.goal, np.zeros(K.NUM_CLASSES, np.int64), 0.0)
    item_group = []
    for shop, f in enumerate(SC.SHOP_FURNITURE):
        slots = lay.slots[lay.slots[:, 3] == f][rng.permutation(8)]
        goods = balanced(groups[shop_group[shop]], SHOP_ITEMS, rng)
        if shop in container_shops:
            goods = goods + [int(next(containers))]
        for c, (x, z, top, _) in zip(goods, slots):
            _add(world, c, (x, z), top + K.CLASS_HEIGHT[c], False)
            item_group.append(shop_group[shop] if K.CLASS_KIND[c] == K.ITEM else -1)
    cls, item_group = np.array(world.cls), np.array(item_group)
    category = int(rng.integers(len(groups)))
    n_goal = int(rng.integers(SHOP_GOAL[0], SHOP_GOAL[1] + 1))
    chosen = rng.choice(np.flatnonzero(item_group == category), n_goal, replace=False)
    np.add.at(world.goal_count, cls[chosen], 1)
    other = np.flatnonzero((item_group >= 0) & (item_group != category))
    world.goal_count[cls[int(rng.choice(other))]] += 1
    world.total = float(world.goal_count.sum())
    return world


def _furniture(lay: SC.Layout, rng: np.random.Generator) -> _World:
    x0, z0, x1, z1 = SC.PLACE_AREA
    names = rng.choice(K.FURNITURE_NAMES, NUM_FURNITURE, replace=False)
    classes = [K.CLASS[str(n)] for n in names]
    for _ in range(100):
        pos: list[np.ndarray] = []
        for c in classes:
            r = K.CLASS_SIZE[c] / 2
            for _ in range(100):
                p = np.array([rng.uniform(x0 + r, x1 - r), rng.uniform(z0 + r, z1 - r)], np.float32)
                if all(np.hypot(*(p - q)) >= r + K.CLASS_SIZE[d] / 2 + FURNITURE_GAP for q, d in zip(pos, classes)):
                    pos.append(p)
                    break
            else:
                break
        if len(pos) == len(classes):
            break
    else:
        raise RuntimeError("the furniture does not fit the place area")
    world = _World([], [], [], [], lay.goal, np.zeros(K.NUM_CLASSES, np.int64), 0.0)
    for c, p in zip(classes, pos):
        _add(world, c, p, K.CLASS_HEIGHT[c], True)
        world.goal_count[c] += 1
    world.total = float(sum(K.CLASS_MASS[c] for c in classes))
    return world


def generate(task: str, plan: str, layout: int, rng: np.random.Generator) -> S.State:
    """Returns one frame-0 world of ``task`` on layout ``layout`` of ``plan`` drawn with ``rng`` (a ``State``
    with numpy leaves of ``state.py``'s shapes and dtypes, no episode axis; ``episode`` -1). Deterministic for
    the generator's state."""
    check_task(task)
    SC.check_plan(plan)
    outdoor = TASK_PLAN.get(task)
    if outdoor is not None and plan != outdoor:
        raise ValueError(f"task {task!r} is played in plan {outdoor!r}, not {plan!r}")
    if outdoor is None and plan not in SC.INDOOR_PLANS:
        raise ValueError(f"task {task!r} is played in an indoor plan {list(SC.INDOOR_PLANS)}, not {plan!r}")
    lay = SC.layout(plan, layout)
    if task == "shopping":
        world = _shopping(lay, rng)
    elif task == "furniture":
        world = _furniture(lay, rng)
    else:
        world = _indoor(task, lay, rng)

    # objects in a random order
    n = len(world.cls)
    n_total = n + (task == "shopping")
    assert n_total <= S.MAX_OBJECTS, (task, n_total)
    order = rng.permutation(n_total)
    cls = np.zeros(S.MAX_OBJECTS, np.int8)
    pos = np.zeros((S.MAX_OBJECTS, 2), np.float32)
    height = np.zeros(S.MAX_OBJECTS, np.float32)
    cls[order[:n]] = world.cls
    pos[order[:n]] = np.array(world.pos, np.float32).reshape(n, 2)
    height[order[:n]] = world.height
    floor = np.array(world.on_floor, bool)
    floor_pos = np.array(world.pos, np.float32).reshape(n, 2)[floor]
    floor_size = K.CLASS_SIZE[np.array(world.cls, np.int64)[floor]]
    agent_pos = _agent_points(lay, rng, floor_pos, floor_size)
    holder = np.full(S.MAX_OBJECTS, -1, np.int8)
    hands = np.full((S.NUM_AGENTS, 2), -1, np.int16)
    if task == "shopping":  # the rider walks the bike: an object he holds in hand 0
        bike = int(order[n])
        cls[bike], pos[bike], height[bike] = K.CLASS["bike"], agent_pos[S.MAIN], K.CLASS_HEIGHT[K.CLASS["bike"]]
        holder[bike] = S.MAIN
        hands[S.MAIN, 0] = bike
    objects = S.Objects(
        cls=cls,
        pos=pos,
        height=height,
        size=K.CLASS_SIZE[cls].astype(np.float32),
        mass=K.CLASS_MASS[cls].astype(np.float32),
        holder=holder,
        container=np.full(S.MAX_OBJECTS, -1, np.int16),
        delivered=np.zeros(S.MAX_OBJECTS, bool),
        delivered_by=np.full(S.MAX_OBJECTS, -1, np.int8),
        broken=np.zeros(S.MAX_OBJECTS, bool),
    )
    ability = [K.ABILITY[K.TASK_ABILITY[task]], K.ABILITY["helper"], K.ABILITY["kid"]]
    agents = S.Agents(
        pos=agent_pos,
        heading=rng.integers(0, K.NUM_HEADINGS, S.NUM_AGENTS).astype(np.int32),
        ability=np.array(ability, np.int8),
        active=np.array([True, True, task == "shopping"]),
        hands=hands,
        action=np.full(S.NUM_AGENTS, S.WAIT, np.int32),
        start_frame=np.zeros(S.NUM_AGENTS, np.int32),
        done_frame=np.zeros(S.NUM_AGENTS, np.int32),
        status=np.full(S.NUM_AGENTS, S.SUCCEEDED, np.int8),
        target_pos=agent_pos.copy(),
    )
    assert world.goal_count.max() <= np.iinfo(np.int8).max
    return S.State(
        scene=SC.scene_state(plan, layout, world.goal),
        objects=objects,
        agents=agents,
        goal_count=world.goal_count.astype(np.int8),
        total=np.float32(world.total),
        task=np.int8(K.TASK[task]),
        max_frames=np.int32(K.TASK_FRAMES[task]),
        frame=np.int32(0),
        child_running=np.bool_(False),
        child_goal=np.zeros(2, np.float32),
        away_frames=np.int32(0),
        placed=np.zeros(S.NUM_AGENTS, np.int32),
        useful=np.zeros(S.NUM_AGENTS, np.int32),
        episode=np.int32(-1),
    )


# -- task sets ---------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class TaskSet:
    """A set of episodes of one task: ``states`` (a ``state.State`` of jnp arrays with a leading episode axis of
    ``len(self)``; ``episode`` = 0..len-1), each episode's ``plans`` (names), ``layouts`` int64[E] and
    ``seeds`` int64[E] (``generate``'s ``np.random.default_rng(seed)``), the ``task`` and the ``split``."""

    task: str
    split: str
    states: S.State
    plans: list[str]
    layouts: np.ndarray
    seeds: np.ndarray

    def __len__(self) -> int:
        return len(self.plans)

    def episode(self, index: int) -> S.State:
        """Returns episode ``index`` as a single ``state.State``."""
        return jax.tree_util.tree_map(lambda x: x[index], self.states)


def split_episodes(task: str, split: str, seed: int = 0, size: int | None = None) -> list[tuple[str, int, int]]:
    """Returns the ``(plan, layout, seed)`` of every episode of ``make_split(task, split, seed, size)``."""
    plans = task_plans(task, split)
    if split == "test":
        size = TEST_EPISODES if size is None else size
        if not 0 < size <= TEST_EPISODES:
            raise ValueError(f"the test split has {TEST_EPISODES} episodes; size must be in 1..{TEST_EPISODES}")
        seeds = [seed + SEED_STRIDE * i for i in range(size)]
    else:
        size = (TRAIN_SIZE if split == "train" else VALIDATION_EPISODES) if size is None else size
        if size <= 0:
            raise ValueError(f"size must be positive, not {size}")
        # the task in the seed: each task's train / validation bank draws its own episodes from its own stream
        # (the test split is unchanged)
        seeds = np.random.default_rng((seed, _STREAM[split], K.TASK_SEED[task])).integers(0, 2**62, size).tolist()
    combos = [(p, i) for p in plans for i in range(SC.num_layouts(p))]
    return [(*combos[e % len(combos)], int(s)) for e, s in enumerate(seeds)]


def make_split(task: str, split: str, seed: int = 0, size: int | None = None) -> TaskSet:
    """Returns the ``TaskSet`` of ``task`` for ``split`` (``SPLITS``): ``test`` the 12 episodes of the original
    (indoor: the 4 test plans x 3 layouts, episode ``i`` with seed ``seed + 123456 * i``; outdoor: 12 seeds),
    ``validation`` ``size`` (default 12) episodes cycling over the held-out training plan's layouts, ``train``
    ``size`` (default 256) episodes cycling over the other training plans and layouts, each seeded from its own
    stream. Deterministic for ``(task, split, seed, size)``."""
    check_task(task)
    check_split(split)
    episodes = split_episodes(task, split, seed, size)
    states = [generate(task, p, i, np.random.default_rng(s)) for p, i, s in episodes]
    stacked = jax.tree_util.tree_map(lambda *xs: np.stack(xs), *states)
    stacked = stacked.replace(episode=np.arange(len(states), dtype=np.int32))
    return TaskSet(
        task=task,
        split=split,
        states=jax.tree_util.tree_map(jnp.asarray, stacked),
        plans=[p for p, _, _ in episodes],
        layouts=np.array([i for _, i, _ in episodes], np.int64),
        seeds=np.array([s for _, _, s in episodes], np.int64),
    )


@functools.lru_cache(maxsize=32)
def cached_split(task: str, split: str, seed: int = 0) -> TaskSet:
    """Returns ``make_split(task, split, seed)`` (default size), built once per process."""
    return make_split(task, split, seed)
