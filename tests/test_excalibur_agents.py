"""EXCALIBUR's scripted players (``agents``) and rollouts (``play``): the oracle explorer opens, lifts and sees
everything of a hand-built house, stops, and answers every question right; the random explorer answers fewer right;
rollouts are deterministic; one act is the same jitted or not; the breadth-first distances; the learned-policy
adapter with a tiny network; the behaviour table."""

from __future__ import annotations

import collections
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tolerance import assert_trees_match

from jaxsoc.envs.excalibur import agents as A
from jaxsoc.envs.excalibur import catalogue as K
from jaxsoc.envs.excalibur import houses as H
from jaxsoc.envs.excalibur import metrics as M
from jaxsoc.envs.excalibur import play as P
from jaxsoc.envs.excalibur import questions as Q
from jaxsoc.envs.excalibur import state as S
from jaxsoc.envs.excalibur import world as W
from jaxsoc.envs.excalibur.env import ExcaliburEnv, ExcaliburParams
from tests.excalibur_scenes import SMALL_HOUSES, house_from_objects

# small generated houses; the hand-built house has the same shapes, so one compiled rollout serves both
CONFIG = SMALL_HOUSES
EPISODES = 4
ORACLE_BUDGETS = dict(explore_budget=300, reenter_budget=20)
FRIDGE, APPLE, TABLE, BOOK, PLATE, EGG, BALL, DRESSER, WATCH, LAMP, SINK, CUP = range(12)


def _row(family: int, rel: int | None = None, s1: str | None = None, s2: str | None = None) -> np.ndarray:
    row = np.zeros(S.QUESTION_SLOTS, np.int16)
    row[S.FAMILY] = family
    row[S.REL] = 0 if rel is None else rel + 1
    row[S.S1] = 0 if s1 is None else K.TYPE[s1] + 1
    row[S.S2] = 0 if s2 is None else K.TYPE[s2] + 1
    return row


def hand_house(table: tuple[int, int] = (5, 1)) -> S.House:
    """Two rooms (a wall at x = 6 with a doorway at y = 3): a fridge holding an apple, a table with a book and a
    plate holding an egg, a basketball on the floor, a dresser holding a watch, a floor lamp, and a sink holding a
    cup behind the wall; eight questions that each need exploring (opening, lifting or seeing). ``table``: the
    table's cell ((5, 3) blocks the doorway: the right room cannot be reached)."""
    walls = np.zeros((CONFIG.height, CONFIG.width), bool)
    walls[[0, -1], :] = walls[:, [0, -1]] = True
    walls[:, 6] = True
    walls[3, 6] = False
    room = np.where(walls, -1, np.where(np.arange(CONFIG.width)[None, :] < 6, 0, 1))
    house = house_from_objects(
        [
            dict(type="Fridge", cell=(3, 1)),
            dict(type="Apple", parent=FRIDGE, link="in", mass=0.3),
            dict(type="DiningTable", cell=table),
            dict(type="Book", parent=TABLE, mass=0.6),
            dict(type="Plate", parent=TABLE),
            dict(type="Egg", parent=PLATE),
            dict(type="BasketBall", cell=(1, 5)),
            dict(type="Dresser", cell=(3, 5)),
            dict(type="Watch", parent=DRESSER, link="in"),
            dict(type="FloorLamp", cell=(5, 5)),
            dict(type="Sink", cell=(11, 5)),
            dict(type="Cup", parent=SINK, link="in"),
        ],
        height=CONFIG.height,
        width=CONFIG.width,
        walls=walls,
        room=room,
        max_objects=CONFIG.max_objects,
        max_questions=CONFIG.max_questions,
        spawn=(2, 2),
    )
    rows = np.stack(
        [
            _row(2, K.CONTAINED_BY, "Fridge", "Apple"),
            _row(1, K.ON_TOP_OF, "DiningTable"),
            _row(2, K.HEAVIER, "Apple"),
            _row(3, K.CONTAINED_BY, "Dresser"),
            _row(5, K.ON_TOP_OF, "Plate"),
            _row(5, K.CONTAINED_BY, "Sink"),
            _row(9, None, "Book", "Watch"),
            _row(1, K.LIGHTER, "Book"),
        ]
    )
    answers = np.asarray(jax.vmap(lambda q: Q.answer(house, q))(jnp.asarray(rows))[0], np.int16)
    return house.replace(
        room_type=house.room_type[: CONFIG.num_rooms],
        questions=jnp.asarray(rows),
        answers=jnp.asarray(answers),
        num_questions=jnp.int32(len(rows)),
    )


@functools.cache
def hand() -> S.House:
    """Returns ``hand_house()``, built once, when a test first needs it (not at collection: six seconds op by op)."""
    return hand_house()


@pytest.fixture(scope="module")
def env():
    return ExcaliburEnv()


@pytest.fixture(scope="module")
def generated():
    """Six generated houses with questions (``questions.attach`` over them; those without a question dropped)."""
    houses, _ = Q.attach(H.generate_batch(jax.random.key(7), CONFIG, 6), 7)
    keep = np.flatnonzero(np.asarray(houses.num_questions) > 0)
    assert keep.size >= 4
    return jax.tree_util.tree_map(lambda x: x[keep], houses)


@pytest.fixture(scope="module")
def hand_bank(generated):
    """The hand-built house repeated as often as the generated bank has houses (the same shapes)."""
    num = generated.valid.shape[0]
    return jax.tree_util.tree_map(lambda x: jnp.repeat(x[None], num, 0), hand())


@pytest.fixture(scope="module")
def oracle_hand(env, hand_bank):
    params = ExcaliburParams(houses=hand_bank, **ORACLE_BUDGETS)
    return P.rollout(env, params, A.OracleExplorer(), jax.random.key(0), EPISODES)


@pytest.fixture(scope="module")
def oracle_generated(env, generated):
    params = ExcaliburParams(houses=generated, **ORACLE_BUDGETS)
    final = P.rollout(env, params, A.OracleExplorer(), jax.random.key(1), EPISODES)
    return final, P.episode_metrics(final)


@pytest.fixture(scope="module")
def random_params(generated):
    return ExcaliburParams(houses=generated, explore_budget=12, reenter_budget=6)


def test_hand_house_questions_need_exploring():
    assert int(hand().num_questions) == 8 and (np.asarray(hand().answers) >= 0).all()
    nothing = (jnp.zeros(CONFIG.max_objects, bool), jnp.zeros(CONFIG.max_objects, bool))
    _, valid = Q.answer_all(hand(), hand().questions, nothing)
    assert not np.asarray(valid).any()


def test_oracle_explores_everything_and_answers_right(oracle_hand):
    final = oracle_hand
    valid = np.asarray(hand().valid)
    types = np.asarray(hand().type)
    pickup = valid & K.IS_PICKUP[types]
    openable = valid & K.IS_OPENABLE[types]
    tracks = jax.device_get(final.tracks)
    for e in range(EPISODES):
        seen, lifted, touched = tracks.seen[e, 0], tracks.lifted[e, 0], tracks.touched[e, 0]
        assert seen[valid].all(), "the oracle sees every object"
        assert lifted[pickup].all(), "the oracle lifts every item"
        assert touched[openable].all(), "the oracle opens every openable container (it only toggles closed ones)"
        assert 0 < tracks.steps[e, 0] < ORACLE_BUDGETS["explore_budget"], "the oracle stops before its budget"
        assert tracks.steps[e, 1] == 1, "phase III: the oracle stops at once"
    # every question right in phases II and IV
    given = np.asarray(final.given)
    assert (given == np.asarray(hand().answers)[None, None]).all()
    assert np.allclose(jax.vmap(W.accuracy, in_axes=(0, None))(final, 0), 1.0)
    assert np.allclose(jax.vmap(W.accuracy, in_axes=(0, None))(final, 1), 1.0)
    assert (np.asarray(final.phase) == S.ANSWER_AGAIN).all() and (np.asarray(final.held) == -1).all()


def test_oracle_on_generated_houses(oracle_generated):
    final, rows = oracle_generated
    assert np.allclose(rows["accuracy_first"], 1.0) and np.allclose(rows["accuracy_again"], 1.0)
    assert np.allclose(rows["explore_seen"], 100.0)
    assert (rows["explore_steps"] < ORACLE_BUDGETS["explore_budget"]).all()
    assert (rows["reenter_steps"] == 1).all()
    valid = np.asarray(final.house.valid)
    pickup = valid & K.IS_PICKUP[np.asarray(final.house.type)]
    assert np.asarray(final.tracks.lifted[:, 0])[pickup].all()


def test_oracle_gives_up_on_unreachable_objects(env, hand_bank):
    blocked = hand_house(table=(5, 3))  # the table stands in front of the doorway
    houses = jax.tree_util.tree_map(lambda x, like: jnp.broadcast_to(x, like.shape), blocked, hand_bank)
    final = P.rollout(env, ExcaliburParams(houses=houses, **ORACLE_BUDGETS), A.OracleExplorer(), jax.random.key(0), 4)
    tracks = jax.device_get(final.tracks)
    left = np.asarray(blocked.cell)[:, 0] < 6
    pickup = np.asarray(blocked.valid) & K.IS_PICKUP[np.asarray(blocked.type)]
    assert (tracks.steps[:, 0] < ORACLE_BUDGETS["explore_budget"]).all(), "it stops instead of wandering"
    assert tracks.lifted[:, 0][:, pickup & left].all() and not tracks.lifted[:, 0, CUP].any()


def test_random_explorer_answers_fewer_right(env, random_params, oracle_generated):
    final = P.rollout(env, random_params, A.RandomExplorer(), jax.random.key(2), EPISODES)
    rows = P.episode_metrics(final)
    assert (rows["explore_steps"] == 12).all() and (rows["reenter_steps"] == 6).all()  # no STOP: the whole budget
    oracle = oracle_generated[1]
    assert rows["accuracy_first"].mean() < oracle["accuracy_first"].mean()
    assert rows["accuracy_again"].mean() < oracle["accuracy_again"].mean()
    assert rows["explore_seen"].mean() < 100.0
    # determinism under a fixed key, and a different key plays differently
    again = P.rollout(env, random_params, A.RandomExplorer(), jax.random.key(2), EPISODES)
    for a, b in zip(jax.tree_util.tree_leaves(final), jax.tree_util.tree_leaves(again)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    other = P.rollout(env, random_params, A.RandomExplorer(), jax.random.key(3), EPISODES)
    assert not np.array_equal(np.asarray(other.tracks.visited), np.asarray(final.tracks.visited))


def test_random_stop_prob():
    agent = A.RandomExplorer(stop_prob=1.0)
    state = W.initial_state(hand())
    action, _ = jax.jit(agent.explore_act)(jax.random.key(0), agent.init(jax.random.key(0), state), state)
    assert int(action) == S.STOP


@pytest.mark.bitexact
def test_act_jit_matches_eager(oracle_hand):
    """One exploration act (the answer acts are checked by the rollouts) of the oracle, eager and jitted, at the
    start and after a few steps."""
    agent = A.OracleExplorer()
    act = jax.jit(agent.explore_act)
    key = jax.random.key(5)
    state = W.initial_state(hand())
    memory = agent.init(key, state)
    for _ in range(3):
        eager_action, eager_memory = agent.explore_act(key, memory, state)
        jit_action, jit_memory = act(key, memory, state)
        assert int(eager_action) == int(jit_action)
        assert S.LEFT <= int(jit_action) < S.STOP  # exploring
        assert_trees_match(eager_memory, jit_memory)
        state = W.explore_step(state, jit_action)
        memory = jit_memory


def _bfs(free: np.ndarray, goal: np.ndarray) -> np.ndarray:
    h, w = free.shape
    dist = np.full((h, w), h * w, np.int32)
    queue = collections.deque()
    for y, x in zip(*np.nonzero(goal & free)):
        dist[y, x] = 0
        queue.append((y, x))
    while queue:
        y, x = queue.popleft()
        for dy, dx in ((0, 1), (1, 0), (0, -1), (-1, 0)):
            ny, nx = y + dy, x + dx
            if 0 <= ny < h and 0 <= nx < w and free[ny, nx] and dist[ny, nx] > dist[y, x] + 1:
                dist[ny, nx] = dist[y, x] + 1
                queue.append((ny, nx))
    return dist


@pytest.mark.parametrize("width", [9, 40])
def test_distances_match_breadth_first_search(width):
    rng = np.random.default_rng(width)
    free = rng.random((7, width)) < 0.7
    goal = rng.random((7, width)) < 0.05
    expected = _bfs(free, goal)
    field = np.asarray(A.distance_field(jnp.asarray(free), jnp.asarray(goal)))
    np.testing.assert_array_equal(field, expected)
    probes = np.array([[x, y] for y in range(-1, 8) for x in range(-1, width + 1)], np.int32)
    got = np.asarray(A.probe_distances(jnp.asarray(free), jnp.asarray(goal), jnp.asarray(probes)))
    inside = (probes[:, 0] >= 0) & (probes[:, 0] < width) & (probes[:, 1] >= 0) & (probes[:, 1] < 7)
    want = np.where(inside, expected[np.clip(probes[:, 1], 0, 6), np.clip(probes[:, 0], 0, width - 1)], 7 * width)
    np.testing.assert_array_equal(got, want)


def test_free_cells_match_is_free():
    state = W.initial_state(hand())
    free = np.asarray(A.free_cells(state))
    for y in range(CONFIG.height):
        for x in range(CONFIG.width):
            assert free[y, x] == bool(W.is_free(state, jnp.asarray([x, y])))


def test_policy_adapter(env, hand_bank):
    from jaxsoc.learners.networks import registry

    params = ExcaliburParams(houses=hand_bank, explore_budget=4, reenter_budget=2)
    model = registry.build("excalibur", registry.network_config("excalibur", "tiny"), env.observation_space(params))
    obs = jax.tree_util.tree_map(lambda x: jnp.asarray(x)[None], P.O.observe(W.initial_state(hand())))
    # random weights without compiling the initialisers (jit(model.init) costs seconds on a small CPU)
    shapes = jax.eval_shape(model.init, jax.random.key(0), obs, model.initial_memory(1))
    rng = np.random.default_rng(0)
    variables, other = (
        jax.tree_util.tree_map(lambda s: jnp.asarray(0.3 * rng.standard_normal(s.shape), s.dtype), shapes)
        for _ in range(2)
    )
    result = P.evaluate_policy(env, params, model, variables, jax.random.key(1), 2)
    assert result["episodes"] == 2.0 and 0.0 <= result["accuracy_first"] <= 1.0
    assert result["explore_steps"] <= 4 and result["reenter_steps"] <= 2
    agent = P.PolicyAgent(model=model, variables=variables, view_size=params.view_size)
    final = P.rollout(env, params, agent, jax.random.key(1), 2)
    given = np.asarray(final.given)[:, :, : int(hand().num_questions)]
    assert (given >= 0).all(), "the masked network answers every question in phases II and IV"
    # the network drives the agent: its first action is the network's argmax on the env's own first observation,
    # and other weights play the same houses differently
    env_obs, start = env.reset_env(jax.random.key(1), params)
    env_obs = jax.tree_util.tree_map(lambda x: jnp.asarray(x)[None], env_obs)
    context = model.apply(variables, env_obs, method="encode_context")
    log_probs = model.apply(variables, env_obs, context, model.initial_memory(1), train=False, method="step")[0]
    first, _ = jax.jit(agent.act)(jax.random.key(2), agent.init(jax.random.key(2), start), start)
    assert int(first) == int(jnp.argmax(log_probs[0]))
    final_other = P.rollout(env, params, agent.replace(variables=other), jax.random.key(1), 2)
    assert not np.array_equal(np.asarray(final_other.given), np.asarray(final.given))


def test_evaluate_and_table(env, hand_bank, random_params):
    oracle = P.evaluate(env, ExcaliburParams(houses=hand_bank, **ORACLE_BUDGETS), A.OracleExplorer(),
                        jax.random.key(0), EPISODES, k=1000.0)  # fmt: skip
    rand = P.evaluate(env, random_params, A.RandomExplorer(), jax.random.key(2), EPISODES)
    assert oracle["accuracy_again"] == 1.0 and oracle["explore_seen"] == 100.0
    # the scripted explorers answer from what they saw: their accuracy is their knowledge accuracy
    assert oracle["knowledge_again"] == 1.0 and rand["knowledge_again"] == pytest.approx(rand["accuracy_again"])
    assert oracle["exqa_first"] == pytest.approx(1.0 - oracle["explore_steps"] / 1000.0)
    assert set(M.BEHAVIOUR) <= {k.split("_", 1)[1] for k in rand if k.startswith("explore_")}
    table = P.behaviour_table({"oracle": oracle, "random": rand})
    lines = table.splitlines()
    assert len(lines) == 2 + 2 + len(M.PAPER_TABLE7)
    assert lines[2].startswith("| oracle | ") and "| 100.0 | 100.0 |" in lines[2]
    assert all(line.count("|") == 16 for line in lines)
    assert "Human w/o replay (paper)" in table
    assert len(P.behaviour_table({"oracle": oracle}, paper=False).splitlines()) == 3


def test_errors_and_budget(env, random_params):
    with pytest.raises(ValueError, match="unknown EXCALIBUR agent"):
        A.make_agent("human")
    assert isinstance(A.make_agent("random", stop_prob=0.5), A.RandomExplorer)
    assert P.max_steps(random_params) == 12 + 6 + 2 * CONFIG.max_questions + 2
    with pytest.raises(ValueError, match="num_episodes"):
        P.rollout(env, random_params, A.RandomExplorer(), jax.random.key(0), 0)
