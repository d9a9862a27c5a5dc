"""CHAIC's navigation, rule-based agents and episode runner (``jaxsoc/envs/chaic/{navigation,agents,play}.py``).

The scenes are built by hand here (a 2 x 2 ring of rooms and an L of three rooms, 5 m rooms with 1 m doors), so the
tests do not depend on the task generators (2 generated normal-task episodes are added). Compile time dominates on the
CPU, so every episode runs in one compiled runner (``play`` with ``record``): the constrained agent with a test helper,
``_ByCondition``, that is the RHP, the Oracle or the random helper according to the episode's condition code (stored in
``state.episode``); the helper (or the constrained agent) is taken out by making it inactive in the state itself. The
navigation walks (through two doors; the wheelchair round a blocked door) are episodes of that runner too: the rule
agent walks with ``navigation.next_waypoint`` + ``steer_clear`` and ``world.step_event``.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tolerance import assert_trees_match

from jaxsoc.envs.chaic import agents as A
from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.envs.chaic import navigation as N
from jaxsoc.envs.chaic import play as P
from jaxsoc.envs.chaic import state as S
from jaxsoc.envs.chaic import world as W

DOOR_WIDTH = 1.0
# a 2 x 2 ring: A [0,5]x[0,5], B [5,10]x[0,5], C [0,5]x[5,10], D [5,10]x[5,10]; doors A-B, A-C, B-D, C-D
RING_ROOMS = [(0, 0, 5, 5), (5, 0, 10, 5), (0, 5, 5, 10), (5, 5, 10, 10)]
RING_DOORS = [((5.0, 2.5), 0, 1), ((2.5, 5.0), 0, 2), ((7.5, 5.0), 1, 3), ((5.0, 7.5), 2, 3)]
# an L of three rooms: A [0,5]x[0,5], B [5,10]x[0,5], C [5,10]x[5,10]; doors A-B, B-C
L_ROOMS = [(0, 0, 5, 5), (5, 0, 10, 5), (5, 5, 10, 10)]
L_DOORS = [((5.0, 4.0), 0, 1), ((7.5, 5.0), 1, 2)]

# the conditions of the shared runner's episodes (state.episode)
ALONE, RHP, ORACLE, RANDOM, RHP_SOLO, GENERATED, WALK, WHEELCHAIR = range(8)
CONDITIONS = (ALONE, RHP, ORACLE, RANDOM, RHP_SOLO)
LAYOUTS = 3
MAX_EVENTS = 400  # every episode here ends by its frame limit within 340 events (measured: 67 to 334)
FRAMES = 2000  # long enough for the container rule (before T - 1500), short enough for the CPU


# -- hand-made worlds ---------------------------------------------------------------------------------------------


def build_scene(rooms, doors, goal, goal_height=0.6, goal_extent=2.0) -> S.Scene:
    """Returns a ``Scene`` of axis-aligned ``rooms`` ``(x0, z0, x1, z1)`` and ``doors`` ``((x, z), room_a, room_b)``
    (1 m gaps in the walls), the goal place at ``goal``."""
    walls = []
    for x0, z0, x1, z1 in rooms:
        for a, b in (((x0, z0), (x1, z0)), ((x1, z0), (x1, z1)), ((x0, z1), (x1, z1)), ((x0, z0), (x0, z1))):
            a, b = np.array(a, float), np.array(b, float)
            axis = 0 if a[1] == b[1] else 1
            cuts = sorted(
                c[axis] for c, _, _ in doors if abs(c[1 - axis] - a[1 - axis]) < 1e-6 and a[axis] < c[axis] < b[axis]
            )
            ends = [a[axis]] + [e for c in cuts for e in (c - DOOR_WIDTH / 2, c + DOOR_WIDTH / 2)] + [b[axis]]
            for i in range(0, len(ends), 2):
                p, q = a.copy(), a.copy()
                p[axis], q[axis] = ends[i], ends[i + 1]
                walls.append([p[0], p[1], q[0], q[1]])
    w = np.zeros((S.MAX_WALLS, 4), np.float32)
    w[: len(walls)] = walls
    rm = np.zeros((S.MAX_ROOMS, 4), np.float32)
    rm[: len(rooms)] = rooms
    dp = np.zeros((S.MAX_DOORS, 2), np.float32)
    dr = np.full((S.MAX_DOORS, 2), -1, np.int8)
    for i, (c, a, b) in enumerate(doors):
        dp[i], dr[i] = c, (a, b)
    return S.Scene(
        walls=jnp.asarray(w),
        wall_valid=jnp.arange(S.MAX_WALLS) < len(walls),
        rooms=jnp.asarray(rm),
        room_valid=jnp.arange(S.MAX_ROOMS) < len(rooms),
        doors=jnp.asarray(dp),
        door_rooms=jnp.asarray(dr),
        door_valid=jnp.arange(S.MAX_DOORS) < len(doors),
        furniture=jnp.zeros((S.MAX_FURNITURE, 5), jnp.float32),
        furniture_cls=jnp.zeros(S.MAX_FURNITURE, jnp.int8),
        goal_pos=jnp.asarray(goal, jnp.float32),
        goal_height=jnp.float32(goal_height),
        goal_extent=jnp.float32(goal_extent),
        plan=jnp.int8(0),
        layout=jnp.int8(0),
        outdoor=jnp.bool_(False),
    )


def build_state(
    scene, objects, goal, start, helper_start=None, task="normal", ability="normal", max_frames=FRAMES, episode=-1
) -> S.State:
    """Returns a ``State`` at frame 0: ``objects`` a list of ``(class name, (x, z), top height)``, ``goal`` a dict
    class name -> count, the constrained agent at ``start`` and the helper at ``helper_start`` (both facing +x,
    ready); the child inactive."""
    n = S.MAX_OBJECTS
    cls, pos = np.zeros(n, np.int8), np.zeros((n, 2), np.float32)
    height, size, mass = np.zeros(n, np.float32), np.zeros(n, np.float32), np.zeros(n, np.float32)
    for i, (name, p, h) in enumerate(objects):
        c = K.CLASS[name]
        cls[i], pos[i], height[i], size[i], mass[i] = c, p, h, K.CLASS_SIZE[c], K.CLASS_MASS[c]
    count = np.zeros(K.NUM_CLASSES, np.int8)
    for name, k in goal.items():
        count[K.CLASS[name]] = k
    apos = np.array([start, helper_start if helper_start is not None else start, start], np.float32)
    ability = np.array([K.ABILITY[ability], K.ABILITY["helper"], K.ABILITY["kid"]], np.int8)
    objs = S.Objects(
        cls=jnp.asarray(cls),
        pos=jnp.asarray(pos),
        height=jnp.asarray(height),
        size=jnp.asarray(size),
        mass=jnp.asarray(mass),
        holder=jnp.full(n, -1, jnp.int8),
        container=jnp.full(n, -1, jnp.int16),
        delivered=jnp.zeros(n, bool),
        delivered_by=jnp.full(n, -1, jnp.int8),
        broken=jnp.zeros(n, bool),
    )
    agents = S.Agents(
        pos=jnp.asarray(apos),
        heading=jnp.zeros(3, jnp.int32),
        ability=jnp.asarray(ability),
        active=jnp.array([True, True, False]),
        hands=jnp.full((3, 2), -1, jnp.int16),
        action=jnp.full(3, S.WAIT, jnp.int32),
        start_frame=jnp.zeros(3, jnp.int32),
        done_frame=jnp.zeros(3, jnp.int32),
        status=jnp.full(3, S.SUCCEEDED, jnp.int8),
        target_pos=jnp.asarray(apos),
    )
    return S.State(
        scene=scene,
        objects=objs,
        agents=agents,
        goal_count=jnp.asarray(count),
        total=jnp.float32(sum(goal.values())),
        task=jnp.int8(K.TASK[task]),
        max_frames=jnp.int32(max_frames),
        frame=jnp.int32(0),
        child_running=jnp.bool_(False),
        child_goal=jnp.zeros(2, jnp.float32),
        away_frames=jnp.int32(0),
        placed=jnp.zeros(3, jnp.int32),
        useful=jnp.zeros(3, jnp.int32),
        episode=jnp.int32(episode),
    )


GOAL = {"apple": 3, "banana": 2, "orange": 2}
TARGETS = ("apple", "apple", "apple", "apple", "banana", "banana", "orange", "orange", "orange")
DISTRACTORS = ("pen", "mouse", "key", "calculator", "purse", "bread", "burger", "lighter")


def layout(seed: int, condition: int = ALONE) -> S.State:
    """Returns a ring house with the goal place (a bed) in room D, the constrained agent in room A facing a bowl 1.5 m
    away, and targets (apples, bananas, oranges) and distractors (work and school items, bread) scattered at
    random (seed) on tables 0.8 m high. ``condition`` says who takes part (stored in ``state.episode``)."""
    rng = np.random.default_rng(seed)

    def spot(room, margin=0.7):
        x0, z0, x1, z1 = RING_ROOMS[room]
        return (float(rng.uniform(x0 + margin, x1 - margin)), float(rng.uniform(z0 + margin, z1 - margin)))

    goal = spot(3, 1.6)
    start = (float(rng.uniform(0.8, 2.5)), float(rng.uniform(0.8, 4.2)))
    objects = [("bowl", (start[0] + 1.5, start[1]), 0.8)]  # in front of it
    for name in TARGETS + DISTRACTORS:
        objects.append((name, spot(int(rng.integers(4))), 0.8))
    state = build_state(build_scene(RING_ROOMS, RING_DOORS, goal), objects, GOAL, start, episode=condition)
    active = jnp.array([condition != RHP_SOLO, condition != ALONE, False])
    return state.replace(agents=state.agents.replace(active=active))


def stack(states):
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *states)


def take(tree, i: int):
    return jax.tree_util.tree_map(lambda x: x[i], tree)


@dataclasses.dataclass(frozen=True)
class _ByCondition(A.RuleAgent):
    """A helper that is the RHP, the Oracle or the random helper according to ``state.episode`` (``CONDITIONS``):
    the rule agents' role is in their memory, so one compiled runner plays every helper."""

    role: str = "rhp"

    def init(self, key, state, agent=S.HELPER):
        memories = [A.RuleAgent(role).init(key, state, agent) for role in ("rhp", "oracle", "random")]
        which = jnp.select([state.episode == ORACLE, state.episode == RANDOM], [1, 2], 0)
        return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs)[which], *memories)


# -- shared compiled functions ------------------------------------------------------------------------------------


def generated_episodes():
    """Returns 2 episodes of the normal task's test split (``tasks.make_split``) with the constrained agent alone
    (condition ``GENERATED``)."""
    from jaxsoc.envs.chaic import tasks

    states = tasks.make_split("normal", "test", 0, size=2).states
    active = states.agents.active.at[:, S.HELPER].set(False)
    states = states.replace(agents=states.agents.replace(active=active), episode=jnp.full(2, GENERATED, jnp.int32))
    return [take(states, i) for i in range(2)]


def walking_episodes():
    """Returns two worlds where the constrained agent alone must walk through doors to its only target, an apple,
    and to the goal place beside it: the L (through A-B and B-C to room C) and, for the wheelchair, the ring with a
    trash bin in the door A-B in front of it (the short way to room D): it must go round through room C."""
    l_scene = build_scene(L_ROOMS, L_DOORS, (7.0, 8.5))
    walk = build_state(l_scene, [("apple", (9.0, 9.0), 0.8)], {"apple": 1}, (1.0, 1.0), episode=WALK)
    ring = build_scene(RING_ROOMS, RING_DOORS, (7.0, 8.5))
    objects = [("trashbin", (5.0, 2.5), 0.7), ("apple", (9.0, 9.0), 0.8)]
    wheelchair = build_state(ring, objects, {"apple": 1}, (3.6, 2.5), ability="wheelchair", episode=WHEELCHAIR)
    inactive = jnp.array([True, False, False])
    return [s.replace(agents=s.agents.replace(active=inactive)) for s in (walk, wheelchair)]


@pytest.fixture(scope="module")
def episodes():
    """Returns ``(out, states, conditions)``: the shared runner's results (``play(record=True)``) on ``LAYOUTS``
    hand-made layouts x ``CONDITIONS``, the two walking worlds and 2 generated normal-task episodes with the
    constrained agent alone (when ``tasks`` is available), the initial states and each episode's condition."""
    states = [layout(seed, c) for seed in range(LAYOUTS) for c in CONDITIONS]
    states += walking_episodes() + generated_episodes()
    conditions = np.array([int(s.episode) for s in states])
    keys = jax.random.split(jax.random.key(7), len(states))
    run = P.make_player(A.make_agent("main"), _ByCondition(), max_events=MAX_EVENTS, record=True)
    out = jax.tree_util.tree_map(np.asarray, run(stack(states), keys, W.Timing()))
    return out, stack(states), conditions


# -- navigation -----------------------------------------------------------------------------------------------------


def test_door_distances_follow_the_door_graph_and_drop_blocked_doors():
    scene = build_scene(RING_ROOMS, RING_DOORS, (8.0, 8.0))
    d = np.asarray(N.door_distances(scene))
    side = np.hypot(2.5, 2.5)  # A-B to A-C: both open on room A
    assert d[0, 1] == pytest.approx(side) and d[0, 0] == 0
    assert d[0, 3] == pytest.approx(2 * side)  # A-B to C-D goes through A-C (or B-D)
    assert np.isinf(d[:, 4:]).all() and np.isinf(d[4:, :4]).all()  # invalid doors
    blocked = np.asarray(N.door_distances(scene, jnp.arange(S.MAX_DOORS) == 1))
    assert np.isinf(blocked[1]).all() and np.isinf(blocked[:, 1]).all()
    assert blocked[0, 3] == pytest.approx(2 * side)  # still through B-D
    both = np.asarray(N.door_distances(scene, (jnp.arange(S.MAX_DOORS) == 1) | (jnp.arange(S.MAX_DOORS) == 2)))
    assert np.isinf(both[0, 3])  # room A and the door C-D are cut off from each other


def test_next_waypoint_goes_through_the_door_along_its_normal():
    scene = build_scene(L_ROOMS, L_DOORS, (8.0, 8.0))
    dist = N.door_distances(scene)
    nxt = jax.jit(N.next_waypoint)
    # far from the door A-B (5, 4): aim in front of it, 0.7 m inside room A
    wp, length, ok = nxt(scene, jnp.array([1.0, 1.0]), jnp.array([8.0, 8.0]), dist)
    assert bool(ok) and np.allclose(wp, [4.3, 4.0], atol=1e-5)
    expected = np.hypot(4.0, 3.0) + np.hypot(2.5, 1.0) + np.hypot(0.5, 3.0)
    assert float(length) == pytest.approx(expected, rel=1e-5)
    # in front of it: through it, to 0.7 m inside room B
    wp, _, _ = nxt(scene, jnp.array([4.2, 3.9]), jnp.array([8.0, 8.0]), dist)
    assert np.allclose(wp, [5.7, 4.0], atol=1e-5)
    # same room: straight to the destination
    wp, length, _ = nxt(scene, jnp.array([6.0, 1.0]), jnp.array([9.0, 2.0]), dist)
    assert np.allclose(wp, [9.0, 2.0]) and float(length) == pytest.approx(np.hypot(3.0, 1.0))
    # a room every route to which is blocked is unreachable
    blocked = N.door_distances(scene, jnp.arange(S.MAX_DOORS) == 1)
    _, length, ok = nxt(scene, jnp.array([1.0, 1.0]), jnp.array([8.0, 8.0]), blocked)
    assert not bool(ok) and np.isinf(float(length))


def test_steer_turns_the_shorter_way_and_steer_clear_avoids_walls():
    scene = build_scene(L_ROOMS, L_DOORS, (8.0, 8.0))

    @jax.jit
    def check(scene):
        src = jnp.array([2.0, 2.0])
        steer = jnp.stack(
            [
                N.steer(0, src, jnp.array([4.0, 2.1])),  # 3 degrees off: move
                N.steer(0, src, jnp.array([2.0, 4.0])),  # 90 degrees to the left
                N.steer(0, src, jnp.array([2.0, 0.0])),  # 90 degrees to the right
                N.steer(6, src, jnp.array([0.0, 1.9])),  # facing +z, the target at ~183 degrees: left is shorter
            ]
        )
        # against the wall x = 5 beside the door A-B, facing it, the waypoint behind the wall
        ok = N.move_ok(scene, jnp.array([4.7, 2.0]), jnp.zeros((1, 2)), jnp.zeros(1))
        wall = N.steer_clear(scene, jnp.int32(0), jnp.array([4.7, 2.0]), jnp.array([8.0, 2.0]))
        # a point to avoid straight ahead, the waypoint dead ahead
        avoid = N.steer_clear(
            scene, jnp.int32(0), jnp.array([6.0, 2.0]), jnp.array([9.0, 2.0]), jnp.array([[6.5, 2.0]]), jnp.array([0.3])
        )
        free = N.steer_clear(scene, jnp.int32(0), jnp.array([6.0, 2.0]), jnp.array([9.0, 2.0]))
        return steer, ok, wall, avoid, free

    steer, ok, wall, avoid, free = check(scene)
    assert np.asarray(steer).tolist() == [S.MOVE, S.TURN_LEFT, S.TURN_RIGHT, S.TURN_LEFT]
    assert not ok[0] and ok[12]  # +x crosses the wall; -x is free
    assert int(wall) in (S.TURN_LEFT, S.TURN_RIGHT) and int(avoid) in (S.TURN_LEFT, S.TURN_RIGHT)
    assert int(free) == S.MOVE


def test_next_waypoint_jitted_equals_eager():
    scene = build_scene(RING_ROOMS, RING_DOORS, (8.0, 8.0))
    dist = N.door_distances(scene)
    args = (scene, jnp.array([1.0, 1.2]), jnp.array([8.0, 8.5]), dist)
    assert_trees_match(jax.jit(N.next_waypoint)(*args), N.next_waypoint(*args))


def test_walk_through_two_doors_arrives(episodes):
    out, states, conditions = episodes
    e = int(np.flatnonzero(conditions == WALK)[0])
    assert out["success"][e] and not out["failed"][e].any()  # it got there without bumping into a door jamb
    scene = take(states.scene, e)
    steps = out["pos"][e, : out["events"][e], 0]
    rooms = np.asarray(jax.vmap(lambda p: N.G.room_of(scene, p))(jnp.asarray(steps)))
    entered = [r for i, r in enumerate(rooms) if i == 0 or r != rooms[i - 1]]
    assert entered[:3] == [0, 1, 2]  # room A, then B, then C (then it may look for the goal place)


def test_wheelchair_goes_round_a_blocked_door(episodes):
    out, states, conditions = episodes
    e = int(np.flatnonzero(conditions == WHEELCHAIR)[0])
    assert out["success"][e] and not out["failed"][e].any()  # it never tried to pass the trash bin
    steps = out["pos"][e, : out["events"][e], 0]
    assert (np.linalg.norm(steps - [5.0, 2.5], axis=-1) > W.OBSTACLE_BLOCK).all()
    # unblocked, the shortest route from its start to room D is through A-B; knowing the bin, through A-C
    scene = take(states.scene, e)
    start, dst = jnp.array([3.6, 2.5]), jnp.array([9.0, 9.0])
    open_way, _, _ = N.next_waypoint(scene, start, dst, N.door_distances(scene))
    round_way, _, _ = N.next_waypoint(scene, start, dst, N.door_distances(scene, jnp.arange(S.MAX_DOORS) == 0))
    assert float(open_way[0]) > 4.0 and float(round_way[1]) > 4.0
    # room B seen straight through the blocked doorway is not walked to straight
    src, dst = jnp.array([4.0, 2.5]), jnp.array([7.0, 2.5])
    assert np.allclose(N.next_waypoint(scene, src, dst, N.door_distances(scene))[0], dst)
    way, length, ok = N.next_waypoint(scene, src, dst, N.door_distances(scene, jnp.arange(S.MAX_DOORS) == 0))
    assert bool(ok) and float(way[1]) > 4.0 and float(length) > 8.0  # round through C and D


# -- the agents -----------------------------------------------------------------------------------------------------


def test_make_agent_kinds_and_errors():
    assert isinstance(A.make_agent("main"), A.RuleAgent) and A.make_agent("main").role == "main"
    assert A.make_agent("rhp").role == "rhp" and A.make_agent("oracle").role == "oracle"
    assert isinstance(A.make_agent("random"), A.RandomHelper) and isinstance(A.make_agent("none"), A.NoHelper)
    with pytest.raises(ValueError, match="unknown CHAIC agent 'alice'.*'main', 'none', 'random', 'rhp', 'oracle'"):
        A.make_agent("alice")
    with pytest.raises(ValueError, match="role"):
        A.RuleAgent("helper")


def test_main_alone_picks_up_its_targets_and_delivers_them(episodes):
    out, states, conditions = episodes
    alone = conditions == ALONE
    assert (out["transport_rate"][alone] > 0).all()
    assert out["transport_rate"][alone].mean() >= 0.5
    assert (out["useful"][alone, 0] > 0).all() and (out["placed"][alone, 1] == 0).all()


def test_main_never_picks_non_target_classes(episodes):
    out, states, conditions = episodes
    cls = np.asarray(states.objects.cls).astype(int)
    goal = np.asarray(states.goal_count).astype(int)
    for e in np.flatnonzero(conditions != RHP_SOLO):
        actions = out["actions"][e, :, 0]
        picks = actions[(actions >= S.PICK) & (actions < S.REMOVE)] - S.PICK
        assert len(picks) > 0
        kinds = K.CLASS_KIND[cls[e, picks]]
        assert ((goal[e, cls[e, picks]] > 0) | (kinds == K.CONTAINER)).all(), e
        valid = out["valid"][e, :, 0]
        if conditions[e] == ALONE:
            assert valid.all(), e  # alone, its memory is the truth: every action was valid when taken
        else:  # a partner can take an object out of its view: only a pick-up or removal tried on belief fails
            refused = actions[~valid]
            assert ((refused >= S.PICK) & (refused < S.NUM_ACTIONS)).all(), (e, refused)


def test_main_uses_a_container_when_one_is_near(episodes):
    out, states, conditions = episodes
    bowl = K.CLASS["bowl"]
    for e in np.flatnonzero(conditions == ALONE):
        actions = out["actions"][e, :, 0]
        picked = actions[(actions >= S.PICK) & (actions < S.REMOVE)] - S.PICK
        assert int(states.objects.cls[e, picked[0]]) == bowl  # its first pick is the bowl beside it
        assert (actions == S.PUT_IN).sum() >= 2
        final = out["final"]
        assert (final.objects.delivered[e] & (final.objects.container[e] == picked[0])).sum() >= 1


def test_rhp_delivers_possible_targets_without_the_goal(episodes):
    out, states, conditions = episodes
    solo = conditions == RHP_SOLO
    assert (out["placed"][solo, 1] > 0).all()
    assert (out["transport_rate"][solo] > 0).all()
    assert (out["transported_by"][solo, 0] == 0).all()
    # it does not know the goal, so it also delivers distractors: placed > useful somewhere
    assert (out["placed"][solo, 1] > out["useful"][solo, 1]).any()
    # with the constrained agent it helps: the team is at least as good as the agent alone on average
    assert out["transport_rate"][conditions == RHP].mean() >= out["transport_rate"][conditions == ALONE].mean()


def test_oracle_helps_at_least_as_much_as_rhp(episodes):
    out, _, conditions = episodes
    oracle, rhp = conditions == ORACLE, conditions == RHP
    assert out["transport_rate"][oracle].mean() >= out["transport_rate"][rhp].mean()
    # in these small houses both teams finish: the Oracle's team sooner
    assert out["frames"][oracle].mean() < out["frames"][rhp].mean()
    assert out["helper_rate"][oracle].mean() > 0
    # knowing the goal, its deliveries are the needed ones (goal inference accuracy, IA)
    ia = {
        c: out["useful"][conditions == c, 1].sum() / max(out["placed"][conditions == c, 1].sum(), 1)
        for c in (ORACLE, RHP)
    }
    assert ia[ORACLE] >= 0.9 and ia[ORACLE] > ia[RHP]


def test_random_helper_only_takes_valid_actions(episodes):
    out, _, conditions = episodes
    random = conditions == RANDOM
    acted = out["actions"][random, :, 1]
    assert (acted >= 0).sum() > 50
    assert out["valid"][random, :, 1].all()
    kinds = set(np.unique(np.asarray(S.decode_action(acted[acted >= 0])[0])).tolist())
    assert {S.MOVE, 7} <= kinds  # it walks and picks things up


def test_runner_reports_and_stops_at_the_end(episodes):
    out, states, _ = episodes
    final = out["final"]
    limit = np.asarray(states.max_frames)
    assert (out["frames"] <= limit).all() and (out["success"] | (out["frames"] >= limit)).all()
    assert (np.asarray(final.frame) == out["frames"]).all()
    total = np.asarray(states.total)
    np.testing.assert_allclose(out["transported_by"].sum(-1), out["transport_rate"] * total, rtol=1e-5)
    np.testing.assert_allclose(out["helper_rate"], out["transported_by"][:, 1] / total, rtol=1e-5)
    assert out["complete"].all() and (out["events"] <= MAX_EVENTS).all()
    # nothing is recorded after an episode ended
    frames = out["frame"]
    for e in range(len(frames)):
        over = frames[e] >= out["frames"][e]
        assert (out["actions"][e][over] == -1).all()


def test_main_alone_delivers_on_generated_normal_tasks(episodes):
    out, _, conditions = episodes
    generated = conditions == GENERATED
    assert generated.sum() == 2
    assert (out["transport_rate"][generated] > 0).all()
    assert (out["placed"][generated, 0] > 0).all() and (out["placed"][generated, 1] == 0).all()
    assert (out["success"] | (out["frames"] == 3000))[generated].all()


def test_act_vmapped_over_four_worlds_equals_each_world_alone():
    """One compiled ``vmap(act)``: four different worlds in a batch decide as each world does in a batch of its
    own copies (no cross-talk between batch entries)."""
    main = A.make_agent("main")
    states = stack([layout(seed) for seed in range(4)])
    mems = jax.vmap(lambda s: main.init(jax.random.key(0), s, S.MAIN))(states)
    keys = jax.random.split(jax.random.key(1), 4)
    act = jax.jit(jax.vmap(main.act, in_axes=(0, 0, 0, None)))
    batched = act(keys, mems, states, W.Timing())
    assert np.unique(np.asarray(batched[1].agent_pos[:, 0, 0])).size == 4  # the worlds differ
    for i in range(4):
        copies = jax.tree_util.tree_map(lambda x, i=i: jnp.stack([x[i]] * 4), (keys, mems, states))
        alone = act(*copies, W.Timing())
        # one program, but row 0 and row i may take other vector lanes: floats to rounding
        assert_trees_match(
            jax.tree_util.tree_map(lambda x: x[0], alone), jax.tree_util.tree_map(lambda x, i=i: x[i], batched)
        )


def test_play_has_no_data_dependent_loop():
    """The episode runner with two rule agents (traced only: nothing is compiled) has no ``while`` loop with a
    data-dependent trip count (``test_no_dynamic_loops``: each would read back to the host on a GPU)."""
    from test_no_dynamic_loops import dynamic_whiles

    states = stack([layout(0), layout(1)])
    keys = jax.random.split(jax.random.key(0), 2)
    main, helper = A.make_agent("main"), A.make_agent("rhp")
    jaxpr = jax.make_jaxpr(lambda s, k: P.play(s, main, helper, W.Timing(), k, 4))(states, keys)
    assert dynamic_whiles(jaxpr) == []


@pytest.mark.slow
def test_act_jitted_equals_eager():
    """Op by op, one act compiles hundreds of primitives (~15 s on a CPU): slow."""
    main = A.make_agent("main")
    state = layout(0)
    mem = main.init(jax.random.key(0), state, S.MAIN)
    jitted = jax.jit(main.act)(jax.random.key(1), mem, state)
    eager = main.act(jax.random.key(1), mem, state)
    assert_trees_match(jitted, eager)


def test_no_helper_is_taken_out_and_policy_helper_adapts_a_policy():
    state = layout(0, RHP)
    assert not bool(P.prepare(state, A.make_agent("none")).agents.active[S.HELPER])
    assert bool(P.prepare(state, A.NoHelper(inactive=False)).agents.active[S.HELPER])
    assert bool(P.prepare(state, A.make_agent("rhp")).agents.active[S.HELPER])

    class Waiting:
        def helper_init(self, key, state):
            return jnp.zeros((), jnp.int32)

        def helper_act(self, params, helper_state, state, obs):
            assert obs["objects"]["cls"].shape == (S.MAX_OBJECTS,) and obs["action_mask"].shape == (S.NUM_ACTIONS,)
            return jnp.int32(S.WAIT), helper_state + params + obs["goal"].sum()  # a helper is not told the goal

    helper = A.PolicyHelper(Waiting(), jnp.int32(1))
    memory = helper.init(jax.random.key(0), state)
    action, memory = jax.jit(helper.act)(jax.random.key(1), memory, state, W.Timing())
    assert int(action) == S.WAIT and int(memory) == 1


def test_free_is_what_the_helper_last_saw_not_the_true_state():
    """A non-omniscient agent's ``free`` is its memory: an object the constrained agent took out of the helper's
    view still counts as free (a candidate) until the helper sees it; one it sees taken (here: broken in view)
    updates at once; the Oracle reads the true state."""
    from jaxsoc.envs.chaic import tasks as T

    bank = T.cached_split("normal", "test").states
    timing = W.Timing()
    perceive, situation = jax.jit(A.perceive), jax.jit(A._situation)
    sightings = jax.jit(W.sightings, static_argnums=1)
    for episode in range(12):  # the first episode and heading where the helper sees two objects at the start
        for heading in range(0, K.NUM_HEADINGS, 6):
            state = take(bank, episode)
            state = state.replace(agents=state.agents.replace(heading=state.agents.heading.at[S.HELPER].set(heading)))
            mem = perceive(A.make_agent("rhp").init(jax.random.key(0), state), state, timing)
            free = np.asarray(mem.free)
            pickable = np.isin(K.CLASS_KIND[np.asarray(state.objects.cls)], (K.ITEM, K.VASE))
            seen = np.flatnonzero(np.asarray(mem.seen) & free & pickable)
            if len(seen) >= 2:
                break
        if len(seen) >= 2:
            break
    assert len(seen) >= 2 and not free[~np.asarray(mem.seen)].any()
    taken, broken = int(seen[0]), int(seen[1])
    assert bool(situation(mem, state)["pick_cand"][taken])

    # the constrained agent holds `taken`, standing where the helper cannot see it
    o, a = state.objects, state.agents
    spots = [np.array([x, z], np.float32) for x in np.linspace(-20, 20, 41) for z in np.linspace(-20, 20, 41)]
    moved = None
    for spot in spots:
        candidate = state.replace(
            objects=o.replace(holder=o.holder.at[taken].set(S.MAIN)),
            agents=a.replace(pos=a.pos.at[S.MAIN].set(spot), hands=a.hands.at[S.MAIN, 0].set(taken)),
            frame=state.frame + 1,
        )
        if not bool(sightings(candidate, S.HELPER, timing.view_dist)["objects"][taken]):
            moved = candidate
            break
    assert moved is not None
    after = perceive(mem, moved, timing)
    assert bool(after.free[taken]) and bool(situation(after, moved)["pick_cand"][taken])  # not known to be gone
    oracle = perceive(A.make_agent("oracle").init(jax.random.key(0), moved, S.HELPER), moved, timing)
    assert not bool(oracle.free[taken]) and not bool(situation(oracle, moved)["pick_cand"][taken])

    # in view: `broken` breaks where the helper sees it; `taken` comes into view in the constrained agent's hand
    assert bool(sightings(moved, S.HELPER, timing.view_dist)["objects"][broken])
    seen_now = moved.replace(
        objects=moved.objects.replace(broken=moved.objects.broken.at[broken].set(True)),
        agents=moved.agents.replace(pos=moved.agents.pos.at[S.MAIN].set(state.objects.pos[broken])),
    )
    assert bool(sightings(seen_now, S.HELPER, timing.view_dist)["objects"][taken])
    again = perceive(after, seen_now, timing)
    assert not bool(again.free[taken]) and not bool(again.free[broken])
    sit = situation(again, seen_now)
    assert not bool(sit["pick_cand"][taken]) and not bool(sit["pick_cand"][broken])
    # the rest of what it knew is unchanged
    others = np.ones(S.MAX_OBJECTS, bool)
    others[[taken, broken]] = False
    np.testing.assert_array_equal(np.asarray(again.free)[others], free[others])
