"""BIB task generators: each construction of the paper checked as invariants on generated episodes.

Paths are checked against an independent numpy breadth-first search (8 moves, a diagonal needs both
orthogonal neighbours free), so "efficient" means shortest by a reference, not by the planner under test.
"""

from collections import deque

import jax
import numpy as np
import pytest

from jaxsoc.envs.bib import tasks
from jaxsoc.envs.bib import world as W

N = 16
PARAMS = W.BIBParams.compact()  # one frame per cell: the tests need paths, not long videos
MOVES = {tuple(m) for m in W.MOVES.tolist()}


@pytest.fixture(scope="module")
def batches():
    """One batch of ``N`` episodes per task, compiled once for the module."""
    cache = {}

    def get(split, name):
        if (split, name) not in cache:
            episode = tasks.generate_batch(split, name, jax.random.key(7), N, PARAMS)
            cache[split, name] = jax.tree_util.tree_map(np.asarray, episode)
        return cache[split, name]

    return get


def trial(episode, *index):
    """The fields of one trial of a numpy episode."""
    return {f: getattr(episode, f)[index] for f in ("walls", "barrier", "objects", "object_visible", "path")} | {
        f: getattr(episode, f)[index] for f in ("moves", "pickup", "unlock", "goal", "key", "lock", "has_key")
    }


def solid(t, stage=2, target=None):
    """Cells the agent cannot enter: walls, visible non-target objects, and, before the unlock, the barrier and
    (without the key) the lock."""
    cells = t["walls"].copy()
    for i in range(2):
        if t["object_visible"][i] and i != target and not np.array_equal(t["objects"][i], t["objects"][target or 0]):
            cells[tuple(t["objects"][i])] = True
    if stage < 2:
        cells |= t["barrier"]
    if stage < 1 and t["has_key"]:
        cells[tuple(t["lock"])] = True
    return cells


def bfs(blocked, start, goal):
    """Fewest moves from start to goal (None if unreachable), by breadth-first search."""
    start, goal = tuple(int(x) for x in start), tuple(int(x) for x in goal)
    dist = {start: 0}
    queue = deque([start])
    while queue:
        r, c = queue.popleft()
        if (r, c) == goal:
            return dist[r, c]
        for dr, dc in MOVES:
            nr, nc = r + dr, c + dc
            if blocked[nr, nc] or (dr and dc and (blocked[r + dr, c] or blocked[r, c + dc])) or (nr, nc) in dist:
                continue
            dist[nr, nc] = dist[r, c] + 1
            queue.append((nr, nc))
    return None


def cells(t):
    return [tuple(int(x) for x in cell) for cell in t["path"][: t["moves"] + 1]]


def check_legal(t):
    """Every move is one of the 8, into a cell free at that moment (barrier until the unlock)."""
    path = cells(t)
    for k, (a, b) in enumerate(zip(path[:-1], path[1:])):
        d = (b[0] - a[0], b[1] - a[1])
        assert d in MOVES, (k, a, b)
        stage = 2 if 0 <= t["unlock"] <= k else (1 if 0 <= t["pickup"] <= k else 0)
        blocked = t["walls"] | (t["barrier"] if stage < 2 else False)
        assert not blocked[b], (k, b)
        if d[0] and d[1]:
            assert not blocked[a[0] + d[0], a[1]] and not blocked[a[0], a[1] + d[1]], (k, a, b)
    assert np.all(t["path"][t["moves"] :] == t["path"][t["moves"]])


def ends_at_goal(t):
    return t["goal"] >= 0 and cells(t)[-1] == tuple(t["objects"][t["goal"]])


def shortest(t):
    """The trial's path is a shortest path to its goal among the trial's obstacles."""
    return t["moves"] == bfs(solid(t, 2, t["goal"]), t["path"][0], t["objects"][t["goal"]])


ALL = [("background", n) for n in tasks.BACKGROUND] + [("evaluation", n) for n in tasks.EVALUATION]
#: the generators checked in CI (each compiles its own; ``-m slow`` checks all 13): the two background ones that
#: place objects, an efficiency and an instrumental evaluation
CI_TASKS = [
    ("background", "single_object"),
    ("background", "preference"),
    ("evaluation", "efficiency_path"),
    ("evaluation", "instrumental_blocking_barrier"),
]


@pytest.mark.parametrize("split,name", [p if p in CI_TASKS else pytest.param(*p, marks=pytest.mark.slow) for p in ALL])
def test_every_trial_is_legal_and_reaches_its_object(batches, split, name):
    episode = batches(split, name)
    lead = (N, 2) if split == "evaluation" else (N,)
    assert episode.moves.shape == (*lead, W.NUM_TRIALS)
    assert episode.agent_xy.shape == (*lead, W.NUM_TRIALS, PARAMS.num_frames, 2)
    for index in np.ndindex(*lead, W.NUM_TRIALS):
        t = trial(episode, *index)
        assert 1 <= t["moves"] <= PARAMS.max_moves
        check_legal(t)
        assert ends_at_goal(t), index
        assert W.border()[W.border()].all() and t["walls"][W.border()].all()


@pytest.mark.parametrize("name", ["single_object", "preference", "multi_agent"])
def test_background_agents_take_shortest_paths(batches, name):
    episode = batches("background", name)
    for index in np.ndindex(N, W.NUM_TRIALS):
        assert shortest(trial(episode, *index)), index


def test_background_preference_and_multi_agent(batches):
    pref = batches("background", "preference")
    assert np.all(pref.goal == pref.goal[:, :1])  # one object, always
    assert np.all(pref.path[:, :, 0] == pref.path[:, :1, 0])  # from a fixed start
    near = np.max(np.abs(pref.objects - pref.path[:, :, :1]), axis=-1)
    assert np.all((near >= 1) & (near <= 2))
    multi = batches("background", "multi_agent")
    agent = multi.agent_shape * 16 + multi.agent_color
    changes = np.sum(agent[:, 1:] != agent[:, :-1], axis=1)
    assert np.all(changes == 1) and np.all(agent[:, -1] != agent[:, 0])  # the new agent stays, test included


def test_background_instrumental_agent_is_shut_in(batches):
    episode = batches("background", "instrumental_action")
    for index in np.ndindex(N, W.NUM_TRIALS):
        t = trial(episode, *index)
        start, goal = t["path"][0], t["objects"][0]
        assert bfs(solid(t, 0), start, goal) is None  # the barrier and lock confine the agent
        assert 0 < t["pickup"] < t["unlock"] < t["moves"]
        assert tuple(t["path"][t["pickup"]]) == tuple(t["key"]) and tuple(t["path"][t["unlock"]]) == tuple(t["lock"])


def test_preference_swaps_identities_between_two_familiar_places(batches):
    episode = batches("evaluation", "preference")
    for i in range(N):
        e, u = trial(episode, i, 0, W.TEST), trial(episode, i, 1, W.TEST)
        fam = [trial(episode, i, 0, k) for k in range(W.TEST)]
        preferred = fam[0]["goal"]
        assert all(f["goal"] == preferred for f in fam) and e["goal"] == preferred and u["goal"] == 1 - preferred
        sources = [f for f in fam if np.array_equal(f["objects"][::-1], e["objects"])]
        assert sources, "the test objects sit at one familiarisation trial's places, swapped"
        assert any(np.array_equal(f["path"], u["path"]) for f in sources)  # unexpected: the familiar path
        assert shortest(e) and not np.array_equal(e["path"], u["path"])
        assert np.all(episode.path[i, :, :, 0] == episode.path[i, 0, 0, 0])  # fixed start


def test_multi_agent_test_differs_only_in_the_agent(batches):
    episode = batches("evaluation", "multi_agent")
    agent = episode.agent_shape * 16 + episode.agent_color
    assert np.all(agent[:, 0, W.TEST] != agent[:, 0, 0]) and np.all(agent[:, 1, W.TEST] == agent[:, 1, 0])
    assert np.all(agent[:, :, : W.TEST] == agent[:, :, :1])
    for field in ("path", "objects", "walls", "goal"):
        assert np.array_equal(getattr(episode, field)[:, 0], getattr(episode, field)[:, 1]), field
    assert np.all(episode.goal[:, 0, W.TEST] == 1 - episode.goal[:, 0, 0])  # the non-preferred object
    assert np.all(episode.goal[:, :, : W.TEST] == episode.goal[:, :, :1])


def test_inaccessible_goal_is_walled_in_only_in_the_expected_outcome(batches):
    episode = batches("evaluation", "inaccessible_goal")
    for i in range(N):
        e, u = trial(episode, i, 0, W.TEST), trial(episode, i, 1, W.TEST)
        preferred = trial(episode, i, 0, 0)["goal"]
        assert e["goal"] == u["goal"] == 1 - preferred and np.array_equal(e["path"], u["path"])
        start = e["path"][0]
        assert bfs(e["walls"], start, e["objects"][preferred]) is None
        assert bfs(u["walls"], start, u["objects"][preferred]) is not None
        assert shortest(e) and shortest(u)


@pytest.mark.parametrize("name", ["efficiency_path", "efficiency_time", "efficiency_irrational"])
def test_efficiency_familiarisation_detours_around_barriers(batches, name):
    episode = batches("evaluation", name)
    rational = 1 if name == "efficiency_irrational" else 0
    for i in range(N):
        for k in range(W.TEST):
            f = trial(episode, i, rational, k)
            assert shortest(f)
            assert f["moves"] > bfs(W.border(), f["path"][0], f["objects"][0])  # the barrier forces a detour


def test_efficiency_path_control_repeats_a_familiarisation_path(batches):
    episode = batches("evaluation", "efficiency_path")
    moved = 0
    for i in range(N):
        e, u = trial(episode, i, 0, W.TEST), trial(episode, i, 1, W.TEST)
        assert np.array_equal(e["walls"], u["walls"]) and shortest(e) and not shortest(u)
        source = [k for k in range(W.TEST) if np.array_equal(u["path"], episode.path[i, 1, k])]
        assert source, "the unexpected path is a familiarisation path"
        assert u["moves"] > e["moves"]
        if not np.array_equal(e["walls"], W.border()):  # a moved barrier: a detour is still needed
            moved += 1
            assert not np.array_equal(e["walls"], episode.walls[i, 0, source[0]])
            assert e["moves"] > bfs(W.border(), e["path"][0], e["objects"][0])
    assert 0 < moved < N  # both variants occur


def test_efficiency_time_control_takes_as_long_as_the_efficient_path(batches):
    episode = batches("evaluation", "efficiency_time")
    for i in range(N):
        e, u = trial(episode, i, 0, W.TEST), trial(episode, i, 1, W.TEST)
        assert shortest(e) and u["moves"] == e["moves"]
        assert bfs(u["walls"], u["path"][0], u["objects"][0]) < u["moves"]  # a closer object, reached late
        source = [k for k in range(W.TEST) if np.array_equal(episode.path[i, 1, k, : u["moves"] + 1], cells(u))]
        assert source, "the unexpected path is the start of a familiarisation detour"


def test_efficiency_irrational_agent_detours_with_no_barrier(batches):
    episode = batches("evaluation", "efficiency_irrational")
    assert np.array_equal(episode.path[:, 0], episode.path[:, 1])
    assert np.all(episode.walls[:, 0, : W.TEST] == W.border())  # the irrational agent: nothing in the way
    assert np.all(episode.walls[:, 1, : W.TEST].sum(axis=(-1, -2)) > W.border().sum())  # the rational one: barriers
    for i in range(N):
        test = trial(episode, i, 0, W.TEST)
        assert test["moves"] > bfs(test["walls"], test["path"][0], test["objects"][0])  # inefficient at test


def _blocks(t):
    return bfs(solid(t, 0), t["path"][0], t["objects"][0]) is None


@pytest.mark.parametrize("scenario", ["no_barrier", "inconsequential_barrier", "blocking_barrier"])
def test_instrumental_scenarios(batches, scenario):
    episode = batches("evaluation", f"instrumental_{scenario}")
    for i in range(N):
        for k in range(W.TEST):  # familiarisation: shut in, key routine
            f = trial(episode, i, 0, k)
            assert _blocks(f) and 0 < f["pickup"] < f["unlock"] < f["moves"]
        e, u = trial(episode, i, 0, W.TEST), trial(episode, i, 1, W.TEST)
        assert u["pickup"] > 0 and u["unlock"] > u["pickup"]  # the unexpected agent always fetches the key
        assert tuple(u["path"][u["pickup"]]) == tuple(u["key"]) and tuple(u["path"][u["unlock"]]) == tuple(u["lock"])
        if scenario == "blocking_barrier":
            assert _blocks(e) and not _blocks(u) and np.array_equal(e["path"], u["path"])
        else:
            assert e["pickup"] == -1 and e["unlock"] == -1 and not _blocks(e)
            assert e["moves"] == bfs(solid(e, 0) | _key_cell(e), e["path"][0], e["objects"][0])
        if scenario == "no_barrier":
            assert not e["barrier"].any() and not u["barrier"].any()


def _key_cell(t):
    mask = np.zeros_like(t["walls"])
    mask[tuple(t["key"])] = True
    return mask


def test_determinism_and_jit_vmap_equivalence():
    """One jitted episode equals its row of the vmapped batch; the same key gives the same batch."""
    key, task = jax.random.key(3), ("background", "multi_agent")
    batch = tasks.generate_batch(*task, key, N, PARAMS)
    again = tasks.generate_batch(*task, key, N, PARAMS)
    one = jax.jit(lambda k: tasks.generate(*task, k, PARAMS))(jax.random.split(key, N)[5])
    for a, b, c in zip(*[jax.tree_util.tree_leaves(x) for x in (one, batch, again)]):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b)[5])
        np.testing.assert_array_equal(np.asarray(b), np.asarray(c))
    other = tasks.generate_batch(*task, jax.random.key(4), N, PARAMS)
    assert not np.array_equal(np.asarray(batch.path), np.asarray(other.path))


def test_identities_are_distinct(batches):
    episode = batches("evaluation", "multi_agent")
    assert np.all(episode.object_shape[..., 0] != episode.object_shape[..., 1])
    assert np.all(episode.object_color[..., 0] != episode.object_color[..., 1])
    agent_colors = episode.agent_color[:, 0, [0, W.TEST]]
    assert np.all(agent_colors[:, :1] != episode.object_color[:, 0, 0])
    assert np.all(agent_colors[:, 0] != agent_colors[:, 1])


def test_unknown_task_names_are_refused():
    with pytest.raises(ValueError, match="did you mean efficiency_path"):
        tasks.check_task("evaluation", "efficency_path")
    with pytest.raises(ValueError, match="unknown BIB split"):
        tasks.generate("training", "single_object", jax.random.key(0))
    with pytest.raises(ValueError, match="instrumental_action"):
        tasks.generate("background", "instrumental", jax.random.key(0))
    with pytest.raises(ValueError, match="positive"):
        tasks.generate_batch("background", "single_object", jax.random.key(0), 0)
    with pytest.raises(ValueError, match="BIBParams"):
        tasks.generate("background", "single_object", jax.random.key(0), W.BIBParams(frames_per_cell=0))
