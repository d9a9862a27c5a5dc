"""BIB's 13 task generators: 4 background (training) tasks and 9 evaluation pair types.

``generate(split, name, key, params)`` returns one episode: ``Episode`` arrays ``[9, ...]`` for a background
task, ``[2, 9, ...]`` for an evaluation type (index 0 the expected outcome, 1 the unexpected one, BIB's
``e``/``u`` files). ``generate_batch`` draws ``num`` of them at once (jitted, vmapped). Every generator is
pure and jittable, with fixed shapes and fixed work: candidate trials are drawn several at a time and the
first that satisfies the construction is kept (``layout.first_valid``).

The constructions follow the paper (Gandhi et al. 2021, §2-3):

- background ``single_object``: one object at a varied location, random walls, an efficient agent.
- background ``preference`` (no-navigation preference): two objects right next to the agent's fixed start,
  at varied places; the agent always takes the same one.
- background ``multi_agent`` (single-object multiple-agent): one object next to the agent; from a random
  trial on a new agent takes the first one's place, the test trial included.
- background ``instrumental_action`` (agent-blocked): the agent starts shut in by a green barrier with the
  key; it brings the key to the lock in the barrier, the barrier vanishes, it goes to the object.
- ``preference``: fixed start, each object near its own place in every familiarisation trial; the test uses
  one trial's two places with the objects' identities swapped. Expected: the agent goes to its preferred
  object at the new place; unexpected: it goes to the other object, retracing that trial's path.
- ``multi_agent``: objects at widely varying places; at test the pair differs only in who acts: a new agent
  goes to the first agent's non-preferred object (expected, no expectation about a new agent's taste)
  against the familiar agent doing so (unexpected). ``multi_agent_outcomes`` gives the paper's four outcomes,
  the preferred object's two included.
- ``inaccessible_goal``: as above with one agent; at test it goes to the non-preferred object, with the
  preferred one walled in on all sides (expected) or accessible (unexpected), along the same path.
- ``efficiency_path``: a rational agent walks around a black barrier to its object; at test one
  familiarisation trial returns with its barrier removed, or moved so that a detour is still needed (half
  the episodes where such a move fits, about one in seven overall): the agent walks efficiently
  (expected) or retraces the old, now inefficient, detour (unexpected, the path control).
- ``efficiency_time``: same familiarisation; at test the unexpected agent takes the detour for as many moves
  as the straight path has, to an object placed there, which is closer (the time control).
- ``efficiency_irrational``: the same detour at test, after familiarisation trials in which the agent made
  those detours with no barrier to justify them (expected: no expectation about an irrational agent) or
  around barriers (unexpected: a rational agent).
- ``instrumental_*``: familiarisation as in the paper's Figure 5: the object is shut in by a green barrier
  with a lock; the agent fetches the key, unlocks, goes to the object. Tests: no barrier (expected: straight
  to the object; unexpected: the key routine), an inconsequential barrier with a gap (the same), and a
  blocking barrier (expected: the key routine) against a non-blocking one (unexpected: the key routine).
"""

from __future__ import annotations

import difflib
import functools

import jax
import jax.numpy as jnp

from jaxsoc.envs.bib import layout as L
from jaxsoc.envs.bib import world as W
from jaxsoc.envs.gridworld import placement as P

BACKGROUND = {"single_object": 10_000, "preference": 10_000, "multi_agent": 4_000, "instrumental_action": 4_000}
EVALUATION = (
    "preference",
    "multi_agent",
    "inaccessible_goal",
    "efficiency_path",
    "efficiency_time",
    "efficiency_irrational",
    "instrumental_no_barrier",
    "instrumental_inconsequential_barrier",
    "instrumental_blocking_barrier",
)
SPLITS = ("background", "evaluation")
# Candidates drawn per trial. A trial whose candidates all fail would be kept invalid, so each count makes that
# chance negligible at the acceptance rate measured per candidate (256 episodes per task, 2026-11-24): at
# least 0.72 for most constructions (24 candidates: below 1e-13), 0.34 for the detour trials of the
# efficiency tasks and 0.50 for the instrumental tests (80 and 48 candidates: below 1e-14).
ATTEMPTS = 24
DETOUR_ATTEMPTS = 80
INSTRUMENTAL_TEST_ATTEMPTS = 48
FAMILIARISATION = W.NUM_TRIALS - 1
DETOUR = 3  # moves by which a key routine the barrier does not call for exceeds the direct walk


def check_task(split: str, name: str) -> None:
    """Raises ``ValueError`` for an unknown split or task name, listing the valid ones."""
    if split not in SPLITS:
        raise ValueError(f"unknown BIB split {split!r}; one of {', '.join(SPLITS)}")
    names = list(BACKGROUND) if split == "background" else list(EVALUATION)
    if name not in names:
        close = difflib.get_close_matches(name, names, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise ValueError(f"unknown BIB {split} task {name!r}{hint}; one of {', '.join(names)}")


def generate(split: str, name: str, key: jax.Array, params: W.BIBParams | None = None) -> W.Episode:
    """Returns one episode of a task: ``Episode`` ``[9, ...]`` (background) or ``[2, 9, ...]`` (evaluation:
    expected, unexpected). Jittable for fixed ``split``, ``name`` and ``params``."""
    check_task(split, name)
    params = params or W.BIBParams()
    params.check()
    return GENERATORS[split][name](key, params)


def generate_batch(split: str, name: str, key: jax.Array, num: int, params: W.BIBParams | None = None) -> W.Episode:
    """Returns ``num`` episodes, leading axis ``[num, ...]``, from keys ``jax.random.split(key, num)``
    (compiled once per split, task, ``num`` and ``params``)."""
    check_task(split, name)
    params = params or W.BIBParams()
    params.check()
    if num < 1:
        raise ValueError(f"num must be a positive integer, got {num}")
    return _batched(split, name, num, params)(key)


@functools.cache
def _batched(split: str, name: str, num: int, params: W.BIBParams):
    generator = GENERATORS[split][name]
    return jax.jit(lambda key: jax.vmap(lambda k: generator(k, params))(jax.random.split(key, num)))


# ---------------------------------------------------------------------------------------------------- helpers


def _cast(agents: jax.Array, switch: jax.Array | int = W.NUM_TRIALS) -> jax.Array:
    """Returns ``int8[9, 2]``: agent 0 acts in the trials before ``switch``, agent 1 from it on."""
    return jnp.where((jnp.arange(W.NUM_TRIALS) < switch)[:, None], agents[0], agents[1])


def _objects(a: jax.Array, b: jax.Array) -> jax.Array:
    return jnp.stack([a, b]).astype(jnp.int8)


def _to_object(free, start, objects, target: int | jax.Array, max_moves: int) -> dict:
    """Walk from ``start`` to object ``target`` (0 or 1); the other object is solid."""
    other = L.cell_mask(objects[1 - target])
    return L.walk(free & ~other, start, objects[target], max_moves)


def _familiarisation(key: jax.Array, attempt, attempts: int = ATTEMPTS) -> tuple[dict, jax.Array]:
    """Draws the 8 familiarisation trials independently; returns the stacked trials and whether all are ok."""
    trials, oks = L.first_valid_each(key, attempt, attempts, FAMILIARISATION)
    return trials, jnp.all(oks)


def _with_test(familiarisation: dict, test: dict) -> dict:
    return jax.tree_util.tree_map(lambda f, t: jnp.concatenate([f, t[None]]), familiarisation, test)


def _outcomes(objects_id, cast, params: W.BIBParams, expected: tuple, unexpected: tuple) -> W.Episode:
    """The evaluation pair, ``[2, 9, ...]``, from each outcome's ``(familiarisation, test)`` trials."""
    episodes = [L.episode(_with_test(*trials), objects_id, cast, params) for trials in (expected, unexpected)]
    return _pair(*episodes)


def _pair(expected: W.Episode, unexpected: W.Episode) -> W.Episode:
    return jax.tree_util.tree_map(lambda e, u: jnp.stack([e, u]), expected, unexpected)


# ---------------------------------------------------------------------------------------------------- background


def single_object(key: jax.Array, params: W.BIBParams) -> W.Episode:
    k_cast, k_trials = jax.random.split(key)
    cast_bits = L.episode_bits(k_cast)
    objects_id, agents = L.identities(cast_bits)

    def attempt(bits):
        walls = L.random_walls(bits, 0.2, jnp.zeros((W.GRID, W.GRID), bool))
        start, ok_start = L.sample_cell(bits.one(), L.INTERIOR & ~walls)
        goal, ok_goal = L.sample_cell(bits.one(), L.INTERIOR & ~walls & (L.chebyshev_map(start) >= 2))
        walk = L.walk(~walls, start, goal, params.max_moves)
        objects = _objects(goal, goal)
        t = L.trial(walls=walls, objects=objects, object_visible=(True, False), goal=0, **_motion(walk))
        return t, ok_start & ok_goal & walk["ok"]

    trials, _ = L.first_valid_each(k_trials, attempt, ATTEMPTS, W.NUM_TRIALS)
    return L.episode(trials, objects_id, _cast(agents), params)


def _motion(walk: dict) -> dict:
    return {"path": walk["path"], "moves": walk["moves"]}


def _near_start_trial(bits: P.Bits, start, preferred, two: bool, max_moves: int):
    """A trial with one object (``two`` False) or two one or two moves from ``start``; the agent goes to
    ``preferred``."""
    near = L.INTERIOR & (L.chebyshev_map(start) >= 1) & (L.chebyshev_map(start) <= 2)
    a, ok = L.sample_cell(bits.one(), near)
    free = jnp.asarray(L.INTERIOR)
    if two:
        b, ok_b = L.sample_cell(bits.one(), near & ~L.cell_mask(a))
        objects, ok = _objects(a, b), ok & ok_b
        walk = _to_object(free, start, objects, preferred, max_moves)
    else:
        objects, preferred = _objects(a, a), 0
        walk = L.walk(free, start, a, max_moves)
    t = L.trial(objects=objects, object_visible=(True, two), goal=preferred, **_motion(walk))
    return t, ok & walk["ok"]


def no_navigation_preference(key: jax.Array, params: W.BIBParams) -> W.Episode:
    k_cast, k_trials = jax.random.split(key)
    cast_bits = L.episode_bits(k_cast)
    objects_id, agents = L.identities(cast_bits)
    start, _ = L.sample_cell(cast_bits.one(), L.INTERIOR)
    preferred = P.randint(cast_bits.one(), 0, 2)

    def attempt(bits):
        return _near_start_trial(bits, start, preferred, True, params.max_moves)

    trials, _ = L.first_valid_each(k_trials, attempt, ATTEMPTS, W.NUM_TRIALS)
    return L.episode(trials, objects_id, _cast(agents), params)


def single_object_multi_agent(key: jax.Array, params: W.BIBParams) -> W.Episode:
    k_cast, k_trials = jax.random.split(key)
    cast_bits = L.episode_bits(k_cast)
    objects_id, agents = L.identities(cast_bits)
    start, _ = L.sample_cell(cast_bits.one(), L.INTERIOR)
    switch = P.randint(cast_bits.one(), 1, W.NUM_TRIALS)  # the new agent acts from this trial on

    def attempt(bits):
        return _near_start_trial(bits, start, 0, False, params.max_moves)

    trials, _ = L.first_valid_each(k_trials, attempt, ATTEMPTS, W.NUM_TRIALS)
    return L.episode(trials, objects_id, _cast(agents, switch), params)


def _key_routine_trial(barrier, start, key_cell, lock, goal, inside, max_moves: int) -> tuple[dict, dict]:
    """A single-object trial with a green ``barrier`` whose lock faces the ``inside`` region; the agent
    fetches the key, unlocks and goes to the object. Returns the trial and the routine (``layout.routine``)."""
    walls = jnp.asarray(W.border())
    run = L.routine(walls, barrier, jnp.zeros_like(barrier), start, key_cell, lock, goal, max_moves)
    t = L.trial(
        barrier=barrier,
        objects=_objects(goal, goal),
        object_visible=(True, False),
        goal=0,
        key=key_cell,
        lock=lock,
        has_key=True,
        rotation=L.facing(lock, inside),
        pickup=run["pickup"],
        unlock=run["unlock"],
        **_motion(run),
    )
    return t, run


def agent_blocked_instrumental(key: jax.Array, params: W.BIBParams) -> W.Episode:
    k_cast, k_trials = jax.random.split(key)
    cast_bits = L.episode_bits(k_cast)
    objects_id, agents = L.identities(cast_bits)

    def attempt(bits):
        size = P.randint(bits.take(2), 1, 3)  # a 1x2, 2x1 or 2x2 pen
        corner = P.randint(bits.take(2), 1, W.GRID - size)
        pen = L.rectangle(corner, size[0], size[1]) & L.INTERIOR
        fence = L.ring(pen)
        start, ok_start = L.sample_cell(bits.one(), pen)
        key_cell, ok_key = L.sample_cell(bits.one(), pen & ~L.cell_mask(start))
        lock, ok_lock = L.sample_cell(bits.one(), L.side_cells(pen))
        barrier = fence & ~L.cell_mask(lock)
        goal, ok_goal = L.sample_cell(bits.one(), L.INTERIOR & ~pen & ~fence)
        walls = jnp.asarray(W.border())
        t, run = _key_routine_trial(barrier, start, key_cell, lock, goal, pen, params.max_moves)
        confined = ~L.reachable(~(walls | barrier | L.cell_mask(lock)), start, goal)
        return t, ok_start & ok_key & ok_lock & ok_goal & run["ok"] & confined

    trials, _ = L.first_valid_each(k_trials, attempt, ATTEMPTS, W.NUM_TRIALS)
    return L.episode(trials, objects_id, _cast(agents), params)


# ---------------------------------------------------------------------------------------------------- evaluation


def _pick(trials: dict, index: jax.Array) -> dict:
    return jax.tree_util.tree_map(lambda x: x[index], trials)


def preference(key: jax.Array, params: W.BIBParams) -> W.Episode:
    k_cast, k_places, k_trials = jax.random.split(key, 3)
    cast_bits = L.episode_bits(k_cast)
    objects_id, agents = L.identities(cast_bits)
    start, _ = L.sample_cell(cast_bits.one(), L.INTERIOR)
    preferred = P.randint(cast_bits.one(), 0, 2)

    def places(bits):  # each object's usual place: apart from each other and from the start
        a, ok_a = L.sample_cell(bits.one(), L.INTERIOR & (L.chebyshev_map(start) >= 3))
        b, ok_b = L.sample_cell(bits.one(), L.INTERIOR & (L.chebyshev_map(start) >= 3) & (L.chebyshev_map(a) >= 4))
        return jnp.stack([a, b]), ok_a & ok_b

    anchors, _ = L.first_valid(k_places, places, ATTEMPTS)

    def attempt(bits):  # each object within one cell of its usual place
        away = L.INTERIOR & (L.chebyshev_map(start) >= 2)
        a, ok_a = L.sample_cell(bits.one(), away & (L.chebyshev_map(anchors[0]) <= 1))
        b, ok_b = L.sample_cell(bits.one(), away & (L.chebyshev_map(anchors[1]) <= 1))
        objects = _objects(a, b)
        walk = _to_object(jnp.asarray(L.INTERIOR), start, objects, preferred, params.max_moves)
        t = L.trial(objects=objects, object_visible=(True, True), goal=preferred, **_motion(walk))
        return t, ok_a & ok_b & walk["ok"]

    familiarisation, _ = _familiarisation(k_trials, attempt)
    swapped = _pick(familiarisation, P.randint(cast_bits.one(), 0, FAMILIARISATION))["objects"][::-1]

    def test(target):
        walk = _to_object(jnp.asarray(L.INTERIOR), start, swapped, target, params.max_moves)
        return L.trial(objects=swapped, object_visible=(True, True), goal=target, **_motion(walk))

    cast = _cast(agents)
    return _outcomes(
        objects_id, cast, params, (familiarisation, test(preferred)), (familiarisation, test(1 - preferred))
    )


def _varied_trial(bits: P.Bits, target, max_moves: int, diverge: bool = False) -> tuple[dict, jax.Array]:
    """Objects at widely varying places among random walls; the agent goes to object ``target``, and the
    other object is reachable too. With ``diverge``, the walk must leave every shortest path to the other
    object before it ends, so that it shows which object the agent wanted."""
    walls = L.random_walls(bits, 0.15, jnp.zeros((W.GRID, W.GRID), bool))
    open_cells = L.INTERIOR & ~walls
    start, ok_start = L.sample_cell(bits.one(), open_cells)
    a, ok_a = L.sample_cell(bits.one(), open_cells & (L.chebyshev_map(start) >= 2))
    b, ok_b = L.sample_cell(bits.one(), open_cells & (L.chebyshev_map(start) >= 2) & (L.chebyshev_map(a) >= 2))
    objects = _objects(a, b)
    walk = _to_object(~walls, start, objects, target, max_moves)
    other = _to_object(~walls, start, objects, 1 - target, max_moves)
    t = L.trial(walls=walls, objects=objects, object_visible=(True, True), goal=target, **_motion(walk))
    ok = ok_start & ok_a & ok_b & walk["ok"] & other["ok"]
    if diverge:
        last = walk["path"][walk["moves"] - 1]  # the cell before the object
        ok = ok & (W.at(other["field"], last) > other["shortest"] - (walk["moves"] - 1))
    return t, ok


def _preference_familiarisation(key: jax.Array, params: W.BIBParams):
    """A cast, the preferred object's index and 8 trials of an agent going to it at varying places."""
    k_cast, k_trials = jax.random.split(key)
    cast_bits = L.episode_bits(k_cast)
    objects_id, agents = L.identities(cast_bits)
    preferred = P.randint(cast_bits.one(), 0, 2)
    familiarisation, _ = _familiarisation(k_trials, lambda bits: _varied_trial(bits, preferred, params.max_moves))
    return objects_id, agents, preferred, familiarisation


MULTI_AGENT_OUTCOMES = (
    "new_agent_nonpreferred",
    "same_agent_nonpreferred",
    "same_agent_preferred",
    "new_agent_preferred",
)


def multi_agent_outcomes(key: jax.Array, params: W.BIBParams) -> W.Episode:
    """All four test outcomes of the paper's multi-agent evaluation (§2.2) after the same familiarisation and
    in the same test layout, ``Episode`` ``[4, 9, ...]`` in the order of ``MULTI_AGENT_OUTCOMES``: the pair
    of ``multi_agent`` (a new agent, then the familiar one, going to the familiar agent's non-preferred
    object), then the familiar agent going to its preferred object (expected) and the new agent doing so (no
    expectation)."""
    k_familiar, k_test = jax.random.split(key)
    objects_id, agents, preferred, familiarisation = _preference_familiarisation(k_familiar, params)
    test, _ = L.first_valid(k_test, lambda bits: _varied_trial(bits, 1 - preferred, params.max_moves, True), ATTEMPTS)
    walk = _to_object(~test["walls"], test["path"][0], test["objects"], preferred, params.max_moves)
    test_preferred = dict(test, goal=preferred.astype(jnp.int8), **_motion(walk))
    new, same = _cast(agents, W.TEST), _cast(agents)
    outcomes = [(test, new), (test, same), (test_preferred, same), (test_preferred, new)]
    episodes = [L.episode(_with_test(familiarisation, t), objects_id, cast, params) for t, cast in outcomes]
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *episodes)


def multi_agent(key: jax.Array, params: W.BIBParams) -> W.Episode:
    return jax.tree_util.tree_map(lambda x: x[:2], multi_agent_outcomes(key, params))


def inaccessible_goal(key: jax.Array, params: W.BIBParams) -> W.Episode:
    k_familiar, k_test = jax.random.split(key)
    objects_id, agents, preferred, familiarisation = _preference_familiarisation(k_familiar, params)

    def attempt(bits):
        t, ok = _varied_trial(bits, 1 - preferred, params.max_moves, diverge=True)
        enclosure = L.neighbourhood(t["objects"][preferred])
        start, other = t["path"][0], t["objects"][1 - preferred]
        clear = ~W.at(enclosure, other) & ~W.at(enclosure, start)
        return (t, enclosure), ok & clear & L.legal(~(t["walls"] | enclosure), t["path"], t["moves"])

    (test, enclosure), _ = L.first_valid(k_test, attempt, ATTEMPTS)
    walled = dict(test, walls=test["walls"] | enclosure)
    cast = _cast(agents)
    return _outcomes(objects_id, cast, params, (familiarisation, walled), (familiarisation, test))


def _detour_trial(bits: P.Bits, max_moves: int) -> tuple[dict, jax.Array]:
    """A black barrier segment between the agent and its object, across the line joining them, so that the
    efficient path bends; with the barrier gone, the bent path's cell after as many moves as the straight
    path has is closer than that (so every trial can serve the time control)."""
    start, ok_start = L.sample_cell(bits.one(), L.INTERIOR)
    goal, ok_goal = L.sample_cell(bits.one(), L.INTERIOR & (L.chebyshev_map(start) >= 3))
    mid = (start + goal) // 2
    length = P.randint(bits.one(), 2, 5)
    low = mid - length // 2 + P.randint(bits.one(), -1, 2)
    rows, cols = jnp.arange(W.GRID)[:, None], jnp.arange(W.GRID)[None, :]
    across_cols = jnp.abs(goal[1] - start[1]) >= jnp.abs(goal[0] - start[0])  # a vertical segment
    vertical = (cols == mid[1]) & (rows >= low[0]) & (rows < low[0] + length)
    horizontal = (rows == mid[0]) & (cols >= low[1]) & (cols < low[1] + length)
    barrier = jnp.where(across_cols, vertical, horizontal) & L.INTERIOR & ~L.cell_mask(start) & ~L.cell_mask(goal)
    free = jnp.asarray(L.INTERIOR)
    detour = L.walk(free & ~barrier, start, goal, max_moves)
    straight = L.walk(free, start, goal, max_moves)
    from_start = W.distance_field(free, W.one_hot_cell(start))
    time_control_goal = detour["path"][straight["moves"]]
    closer = W.at(from_start, time_control_goal) < straight["moves"]
    t = L.trial(walls=barrier, objects=_objects(goal, goal), object_visible=(True, False), goal=0, **_motion(detour))
    ok = ok_start & ok_goal & detour["ok"] & straight["ok"] & (detour["moves"] > straight["moves"]) & closer
    return t, ok


def _efficiency(key: jax.Array, params: W.BIBParams):
    """The cast, 8 detour trials, and one of them (the test's source) with its straight walk."""
    k_cast, k_trials, k_test = jax.random.split(key, 3)
    cast_bits = L.episode_bits(k_cast)
    objects_id, agents = L.identities(cast_bits)
    detour = functools.partial(_detour_trial, max_moves=params.max_moves)
    familiarisation, _ = _familiarisation(k_trials, detour, DETOUR_ATTEMPTS)
    source = _pick(familiarisation, P.randint(cast_bits.one(), 0, FAMILIARISATION))
    straight = L.walk(jnp.asarray(L.INTERIOR), source["path"][0], source["objects"][0], params.max_moves)
    return objects_id, agents, familiarisation, source, straight


def _open_test(source: dict, path, moves, goal) -> dict:
    """The source trial without its barrier, the agent walking ``path`` to an object at ``goal``."""
    return L.trial(objects=_objects(goal, goal), object_visible=(True, False), goal=0, path=path, moves=moves)


def _moved_barrier(bits: P.Bits, source: dict, max_moves: int) -> tuple[dict, jax.Array]:
    """The source trial with its barrier moved (shifted by up to 3 cells each way) so that a detour is still
    needed, the old detour is still open but no longer efficient. Returns the moved barrier and the efficient
    walk around it, and whether such a move was found."""
    shift = P.randint(bits.take(2), -3, 4)
    rows, cols = jnp.arange(W.GRID)[:, None] - shift[0], jnp.arange(W.GRID)[None, :] - shift[1]
    inside = (rows >= 0) & (rows < W.GRID) & (cols >= 0) & (cols < W.GRID)
    old = source["walls"] & L.INTERIOR
    start, goal = source["path"][0], source["objects"][0]
    barrier = old[jnp.clip(rows, 0, W.GRID - 1), jnp.clip(cols, 0, W.GRID - 1)] & inside & L.INTERIOR
    barrier = barrier & ~L.cell_mask(start) & ~L.cell_mask(goal)
    free = L.INTERIOR & ~barrier
    walk = L.walk(free, start, goal, max_moves)
    straight = L.walk(jnp.asarray(L.INTERIOR), start, goal, max_moves)
    old_path_open = L.legal(free, source["path"], source["moves"])
    ok = jnp.any(barrier) & walk["ok"] & (walk["moves"] > straight["moves"]) & old_path_open
    return {"barrier": barrier, **_motion(walk)}, ok & (source["moves"] > walk["moves"])


def efficiency_path(key: jax.Array, params: W.BIBParams) -> W.Episode:
    k_familiar, k_moved = jax.random.split(key)
    objects_id, agents, familiarisation, source, straight = _efficiency(k_familiar, params)
    goal = source["objects"][0]
    # The paper's test removes the barrier or moves it "such that a curved path is still required": half the
    # episodes move it (where a move fits), the others remove it.
    moved, ok = L.first_valid(k_moved, lambda bits: _moved_barrier(bits, source, params.max_moves), ATTEMPTS)
    use_moved = ok & jax.random.bernoulli(jax.random.fold_in(k_moved, 1))
    walk = jax.tree_util.tree_map(lambda m, s: jnp.where(use_moved, m, s), _motion(moved), _motion(straight))
    walls = jnp.where(use_moved, moved["barrier"], False)
    expected = dict(_open_test(source, walk["path"], walk["moves"], goal), walls=walls | W.border())
    unexpected = dict(_open_test(source, source["path"], source["moves"], goal), walls=walls | W.border())
    cast = _cast(agents)  # unexpected: the old detour, the path control
    return _outcomes(objects_id, cast, params, (familiarisation, expected), (familiarisation, unexpected))


def efficiency_time(key: jax.Array, params: W.BIBParams) -> W.Episode:
    objects_id, agents, familiarisation, source, straight = _efficiency(key, params)
    expected = _open_test(source, straight["path"], straight["moves"], source["objects"][0])
    path, moves = L.replay(source["path"], source["moves"], straight["moves"])
    unexpected = _open_test(source, path, moves, path[moves])  # as long as the straight walk, to a closer object
    cast = _cast(agents)
    return _outcomes(objects_id, cast, params, (familiarisation, expected), (familiarisation, unexpected))


def efficiency_irrational(key: jax.Array, params: W.BIBParams) -> W.Episode:
    objects_id, agents, rational, source, _ = _efficiency(key, params)
    test = _open_test(source, source["path"], source["moves"], source["objects"][0])
    irrational = dict(rational, walls=jnp.broadcast_to(jnp.asarray(W.border()), rational["walls"].shape))
    cast = _cast(agents)
    return _outcomes(objects_id, cast, params, (irrational, test), (rational, test))


def _shut_in_trial(bits: P.Bits, max_moves: int) -> tuple[dict, jax.Array]:
    """The instrumental familiarisation: the object shut in by a green barrier with a lock on one side; the
    agent fetches the key, unlocks, goes to the object. The trial also carries ``gap``, a barrier cell on a
    side of the object whose removal would open a way in."""
    goal, ok_goal = L.sample_cell(bits.one(), L.INTERIOR)
    fence = L.neighbourhood(goal)
    lock, ok_lock = L.sample_cell(bits.one(), L.orthogonal(goal))
    barrier = fence & ~L.cell_mask(lock)
    key_cell, ok_key = L.sample_cell(bits.one(), L.INTERIOR & (L.chebyshev_map(goal) >= 2))
    start, ok_start = L.sample_cell(
        bits.one(), L.INTERIOR & (L.chebyshev_map(goal) >= 2) & (L.chebyshev_map(key_cell) >= 2)
    )
    gap, ok_gap = L.sample_cell(bits.one(), L.orthogonal(goal) & ~L.cell_mask(lock))
    t, run = _key_routine_trial(barrier, start, key_cell, lock, goal, L.cell_mask(goal), max_moves)
    return (t, gap), ok_goal & ok_lock & ok_key & ok_start & ok_gap & run["ok"]


def _direct(t: dict, barrier: jax.Array, max_moves: int) -> tuple[dict, jax.Array]:
    """Trial ``t`` with ``barrier``, the agent going straight to the object past the (solid) key and lock."""
    solid = t["walls"] | barrier | L.cell_mask(t["key"]) | L.cell_mask(t["lock"])
    walk = L.walk(~solid, t["path"][0], t["objects"][0], max_moves)
    return dict(t, barrier=barrier, pickup=jnp.int32(-1), unlock=jnp.int32(-1), **_motion(walk)), walk["ok"]


def _instrumental(key: jax.Array, params: W.BIBParams, scenario: str) -> W.Episode:
    k_cast, k_trials, k_test = jax.random.split(key, 3)
    cast_bits = L.episode_bits(k_cast)
    objects_id, agents = L.identities(cast_bits)
    familiarisation, _ = _familiarisation(k_trials, lambda bits: _shut_in_trial(bits, params.max_moves))
    familiarisation = familiarisation[0]

    def attempt(bits):
        (t, gap), ok = _shut_in_trial(bits, params.max_moves)
        barrier = {"no_barrier": jnp.zeros_like(t["barrier"])}.get(scenario, t["barrier"] & ~L.cell_mask(gap))
        direct, ok_direct = _direct(t, barrier, params.max_moves)
        start, goal = t["path"][0], t["objects"][0]
        run = L.routine(
            t["walls"], barrier, jnp.zeros_like(barrier), start, t["key"], t["lock"], goal, params.max_moves
        )
        keyed = dict(t, barrier=barrier, pickup=run["pickup"], unlock=run["unlock"], **_motion(run))
        # Where the barrier does not block, the key routine must be a clear detour, or it would not be unexpected.
        ok = ok & ok_direct & run["ok"] & (run["moves"] >= direct["moves"] + DETOUR)
        if scenario == "blocking":  # the key routine with the barrier closed (expected) or open (unexpected)
            return (t, dict(t, barrier=barrier)), ok & (t["moves"] >= direct["moves"] + DETOUR)
        return (direct, keyed), ok

    (expected, unexpected), _ = L.first_valid(k_test, attempt, INSTRUMENTAL_TEST_ATTEMPTS)
    cast = _cast(agents)
    return _outcomes(objects_id, cast, params, (familiarisation, expected), (familiarisation, unexpected))


GENERATORS = {
    "background": {
        "single_object": single_object,
        "preference": no_navigation_preference,
        "multi_agent": single_object_multi_agent,
        "instrumental_action": agent_blocked_instrumental,
    },
    "evaluation": {
        "preference": preference,
        "multi_agent": multi_agent,
        "inaccessible_goal": inaccessible_goal,
        "efficiency_path": efficiency_path,
        "efficiency_time": efficiency_time,
        "efficiency_irrational": efficiency_irrational,
        "instrumental_no_barrier": functools.partial(_instrumental, scenario="no_barrier"),
        "instrumental_inconsequential_barrier": functools.partial(_instrumental, scenario="inconsequential_barrier"),
        "instrumental_blocking_barrier": functools.partial(_instrumental, scenario="blocking"),
    },
}
