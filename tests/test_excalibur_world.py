"""EXCALIBUR's dynamics and observation on a hand-built house: moves, pick/drop/open, hidden attributes, the four
phases, answers and rewards, action masks, jit/vmap equivalence and clear errors."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tolerance import assert_trees_match

from jaxsoc.envs.excalibur import catalogue as K
from jaxsoc.envs.excalibur import observation as O
from jaxsoc.envs.excalibur import state as S
from jaxsoc.envs.excalibur import world as W
from tests.excalibur_scenes import house_from_objects

FRIDGE, APPLE, TABLE, BOOK, PLATE, EGG = range(6)


def _question(family: int, rel: int = 0, s1: str | None = None, s2: str | None = None) -> np.ndarray:
    row = np.zeros(S.QUESTION_SLOTS, np.int16)
    row[S.FAMILY] = family
    row[S.REL] = rel
    row[S.S1] = 0 if s1 is None else K.TYPE[s1] + 1
    row[S.S2] = 0 if s2 is None else K.TYPE[s2] + 1
    return row


def _house():
    house = house_from_objects(
        [
            dict(type="Fridge", cell=(3, 1)),
            dict(type="Apple", parent=FRIDGE, link="in", mass=0.3),
            dict(type="DiningTable", cell=(5, 3)),
            dict(type="Book", parent=TABLE),
            dict(type="Plate", parent=TABLE),
            dict(type="Egg", parent=PLATE),
        ],
        spawn=(2, 2),
        max_questions=4,
    )
    questions = np.zeros((4, S.QUESTION_SLOTS), np.int16)
    # "Are there any apples inside the fridge?" yes; "What number of objects are on top of the dining table?" 2
    questions[0] = _question(2, 1 + K.CONTAINED_BY, "Fridge", "Apple")
    questions[1] = _question(1, 1 + K.ON_TOP_OF, "DiningTable")
    answers = np.array([K.YES, K.COUNT0 + 2, -1, -1], np.int16)
    return house.replace(questions=jnp.asarray(questions), answers=jnp.asarray(answers), num_questions=jnp.int32(2))


HOUSE = _house()


@pytest.fixture(scope="module")
def step():
    return jax.jit(lambda s, a: W.step(s, a, 40, 10))


@pytest.fixture(scope="module")
def observe():
    return jax.jit(O.observe)


def _play(step, state, actions):
    for a in actions:
        state, out = step(state, jnp.int32(a))
    return state, out


# the agent starts at (2, 2) facing east: to face the fridge at (3, 1) go east one cell and turn north
TO_FRIDGE = [S.FORWARD, S.LEFT]
# from facing the fridge: to face the table at (5, 3) go east, south, then turn east
FRIDGE_TO_TABLE = [S.RIGHT, S.FORWARD, S.RIGHT, S.FORWARD, S.LEFT]


def test_moves_block_on_furniture_and_walls(step):
    state = W.initial_state(HOUSE)
    state, _ = _play(step, state, [S.LEFT, S.FORWARD, S.FORWARD])  # north: (2, 1) then the wall
    assert state.agent_pos.tolist() == [2, 1]
    state, _ = _play(step, state, [S.RIGHT, S.FORWARD])  # east: the fridge at (3, 1) blocks
    assert state.agent_pos.tolist() == [2, 1] and int(state.agent_dir) == 0


def test_contents_are_hidden_until_opened_and_mass_until_lifted(step, observe):
    state = W.initial_state(HOUSE)
    seen = np.asarray(state.tracks.seen[0])
    assert seen[[FRIDGE, TABLE, BOOK, PLATE, EGG]].all() and not seen[APPLE]
    state, _ = _play(step, state, [*TO_FRIDGE, S.PICKUP])
    assert int(state.held) == -1, "nothing can be taken out of a closed fridge"
    assert not bool(state.tracks.seen[0, APPLE]) and int(observe(state)["objects"][APPLE, O.VISIBLE]) == 0
    state, _ = _play(step, state, [S.TOGGLE])
    obs = observe(state)
    assert bool(state.is_open[FRIDGE]) and bool(state.tracks.seen[0, APPLE])
    assert obs["objects"][APPLE, O.VISIBLE] == 1 and obs["objects"][APPLE, O.TYPE] == K.TYPE["Apple"] + 1
    assert float(obs["object_sizes"][APPLE, 3]) == 0.0, "mass is felt only while lifting"
    assert obs["image"][3, 5, 3] in (O.OPEN, O.LOADED)  # the fridge, straight ahead, is open
    state, _ = _play(step, state, [S.PICKUP])
    obs = observe(state)
    assert int(state.held) == APPLE and int(obs["held"]) == APPLE + 1
    assert float(obs["object_sizes"][APPLE, 3]) == pytest.approx(0.3)
    assert bool(state.tracks.lifted[0, APPLE]) and int(state.tracks.first_touch[0]) == 3  # the 4th step's touch


def test_pick_and_drop_cycle_through_a_cell(step):
    state, _ = _play(step, W.initial_state(HOUSE), [*TO_FRIDGE, S.TOGGLE, S.PICKUP, *FRIDGE_TO_TABLE, S.DROP])
    assert int(state.held) == -1 and int(state.parent[APPLE]) == TABLE and int(state.link[APPLE]) == S.ON
    picked = []
    for _ in range(4):
        state, _ = _play(step, state, [S.PICKUP])
        picked.append(int(state.held))
        state, _ = _play(step, state, [S.DROP])
    # the book first, then the egg (the plate carries it), then the plate, then the apple dropped last
    assert picked == [BOOK, EGG, PLATE, APPLE]
    assert np.asarray(state.tracks.lifted[0])[[APPLE, BOOK, PLATE, EGG]].all()


def test_drop_needs_an_open_container_or_a_free_cell(step):
    state, _ = _play(step, W.initial_state(HOUSE), [*TO_FRIDGE, S.TOGGLE, S.PICKUP, S.TOGGLE, S.DROP])
    assert int(state.held) == APPLE, "a closed fridge takes nothing"
    state, _ = _play(step, state, [S.TOGGLE, S.DROP])
    assert int(state.held) == -1 and int(state.link[APPLE]) == S.IN and int(state.parent[APPLE]) == FRIDGE
    state, _ = _play(step, state, [S.PICKUP, S.LEFT, S.DROP])  # west of (3, 2): the free cell (2, 2)
    assert int(state.link[APPLE]) == S.FLOOR and state.cell[APPLE].tolist() == [2, 2]
    state, _ = _play(step, state, [S.FORWARD])
    assert state.agent_pos.tolist() == [3, 2], "a floor item blocks the way"


def test_the_four_phases(step, observe):
    state = W.initial_state(HOUSE)
    obs = observe(state)
    assert int(obs["phase"]) == S.EXPLORE and not np.asarray(obs["questions"]).any()
    assert np.asarray(obs["action_mask"])[: S.ANSWER].all() and not np.asarray(obs["action_mask"])[S.ANSWER :].any()
    state, _ = _play(step, state, [*TO_FRIDGE, S.TOGGLE, S.PICKUP, S.STOP])
    obs = observe(state)
    assert int(state.phase) == S.ANSWER_FIRST and int(state.tracks.steps[0]) == 5
    assert (np.asarray(obs["questions"]) == np.asarray(HOUSE.questions)).all()
    assert (np.asarray(obs["question"]) == np.asarray(HOUSE.questions[0])).all()
    assert np.asarray(obs["action_mask"])[S.ANSWER :].all() and not np.asarray(obs["action_mask"])[: S.ANSWER].any()
    state, out = step(state, jnp.int32(S.ANSWER + K.YES))
    assert bool(out["correct"]) and bool(out["answered"])
    state, out = step(state, jnp.int32(S.ANSWER + K.COUNT0 + 3))  # wrong: 2 things are on the table
    assert not bool(out["correct"])
    assert float(W.accuracy(state, 0)) == pytest.approx(0.5)
    # phase III starts from the house as generated
    assert int(state.phase) == S.REENTER and int(state.held) == -1 and not bool(state.is_open[FRIDGE])
    assert state.agent_pos.tolist() == [2, 2] and int(state.parent[APPLE]) == FRIDGE
    assert bool(state.tracks.lifted[0, APPLE]) and not bool(state.tracks.lifted[1, APPLE])
    state, _ = _play(step, state, [S.FORWARD] * 10)  # the budget of 10 steps ends phase III
    assert int(state.phase) == S.ANSWER_AGAIN and int(state.tracks.steps[1]) == 10
    state, out = step(state, jnp.int32(S.FORWARD))  # not an answer: wrong
    assert not bool(out["correct"]) and not bool(out["done"])
    state, out = step(state, jnp.int32(S.ANSWER + K.COUNT0 + 2))
    assert bool(out["done"]) and float(W.accuracy(state, 1)) == pytest.approx(0.5)
    assert np.asarray(state.given[1, :2]).tolist() == [-1, K.COUNT0 + 2]


def test_exploration_budget_ends_phase_one(step):
    state, _ = _play(step, W.initial_state(HOUSE), [S.LEFT] * 40)
    assert int(state.phase) == S.ANSWER_FIRST and int(state.tracks.steps[0]) == 40


def test_novelty_grows_with_what_is_seen_and_touched(step):
    state = W.initial_state(HOUSE)
    total = 0.0
    for a in [*TO_FRIDGE, S.TOGGLE, S.PICKUP]:
        state, out = step(state, jnp.int32(a))
        assert float(out["novelty"]) >= 0.0
        total += float(out["novelty"])
    start = float(W.novelty(W.initial_state(HOUSE).tracks, jnp.int32(0), HOUSE))
    assert total == pytest.approx(float(W.novelty(state.tracks, jnp.int32(0), HOUSE)) - start, abs=1e-6)
    assert total > 0


@pytest.mark.bitexact
def test_jit_vmap_and_determinism(step):
    actions = jnp.array([S.FORWARD, S.LEFT, S.TOGGLE, S.PICKUP, S.RIGHT])
    state = W.initial_state(HOUSE)
    states = jax.tree_util.tree_map(lambda x: jnp.stack([x] * 5), state)
    batched, _ = jax.jit(jax.vmap(lambda s, a: W.step(s, a, 40, 10)))(states, actions)
    for i in range(5):
        single, _ = step(state, actions[i])
        eager, _ = W.step(state, actions[i], 40, 10)
        assert_trees_match(single, eager)  # three programs: floats to rounding
        assert_trees_match(single, jax.tree_util.tree_map(lambda x, i=i: x[i], batched))
