"""EXCALIBUR's object memory and supervised answerer (``learners.excalibur``): the memory holds exactly what was
seen (masses only once lifted) and keeps what it first saw; its relations read only the walls the agent has had in
view (a relation behind an unseen wall is not known before the wall is seen); the answer masks follow the
families' kinds; the pretrained answerer (``model:excalibur-answerer``) beats the question-only prior on small
houses it never saw (training itself: a slow test); the answerer as an agent answers every question from its
memory; checkpoints round-trip and bad ones are refused."""

from __future__ import annotations

import functools
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsoc.envs.excalibur import agents as A
from jaxsoc.envs.excalibur import catalogue as K
from jaxsoc.envs.excalibur import houses as H
from jaxsoc.envs.excalibur import memory as MEM
from jaxsoc.envs.excalibur import play as P
from jaxsoc.envs.excalibur import relations as RL
from jaxsoc.envs.excalibur import state as S
from jaxsoc.envs.excalibur import world as W
from jaxsoc.envs.excalibur.env import ExcaliburEnv, ExcaliburParams
from jaxsoc.learners.excalibur import answerer as ANS
from jaxsoc.learners.networks import excalibur as NET
from tests.cli_checks import files_under, refused
from tests.excalibur_scenes import SMALL_HOUSES, house_from_objects, outer_walls

CONFIG = SMALL_HOUSES


@pytest.fixture(scope="module")
def test_houses():
    """32 houses from a key stream training never uses, with their questions drawn as training draws them."""
    houses = H.generate_batch(jax.random.key(424242), CONFIG, 32)
    return ANS.draw_questions(houses, np.random.default_rng(5), None, CONFIG.max_questions)[0]


#: the pretrained answerer (``jaxsoc.models``; benchmarks/RESULTS.md): trained on houses of the default
#: configuration only
COMMITTED = "model:excalibur-answerer"


@pytest.fixture(scope="module")
def trained():
    """The pretrained answerer: ``(model, variables, meta)``."""
    return ANS.load(COMMITTED)


def test_memory_holds_what_was_seen_and_keeps_its_first_sight():
    house = jax.jit(H.generate, static_argnums=1)(jax.random.key(3), CONFIG)
    state = jax.jit(W.initial_state)(house)
    write, read = jax.jit(MEM.write), jax.jit(MEM.read)
    memory = write(MEM.empty(house), state)
    seen = np.asarray(state.tracks.seen.any(0) & house.valid)
    assert seen.any() and not seen.all()
    np.testing.assert_array_equal(np.asarray(memory.known), seen)
    np.testing.assert_array_equal(np.asarray(memory.type)[seen], np.asarray(house.type)[seen])
    assert (np.asarray(memory.type)[~seen] == -1).all() and not np.asarray(memory.lifted).any()
    assert (np.asarray(memory.mass) == 0).all(), "no mass is known before anything was lifted"
    # a later write with the object moved keeps the first sighting; a lift reveals the mass
    i = int(np.flatnonzero(seen & np.asarray(K.IS_PICKUP)[np.asarray(house.type)])[0])
    moved = state.replace(
        cell=state.cell.at[i].set(jnp.array([1, 1], state.cell.dtype)),
        tracks=state.tracks.replace(lifted=state.tracks.lifted.at[0, i].set(True)),
    )
    later = write(memory, moved)
    np.testing.assert_array_equal(np.asarray(later.cell[i]), np.asarray(house.cell[i]))
    assert bool(later.lifted[i]) and float(later.mass[i]) == pytest.approx(float(house.mass[i]))
    # reading: relations only among remembered objects
    rel = np.asarray(read(later, house)["rel"])
    assert rel.any() and not rel[:, ~seen, :].any() and not rel[:, :, ~seen].any()
    assert not np.asarray(read(MEM.empty(house), house)["rel"]).any()


def test_a_relation_behind_an_unseen_wall_is_not_known_before_the_wall_is_seen():
    # two sofas two cells apart on one row, with a wall between them in one house and none in the other: at an
    # adjacency of 1 m they are adjacent exactly where no wall stands between them
    sofas = [dict(type="Sofa", cell=(1, 3)), dict(type="Sofa", cell=(3, 3))]
    walled = outer_walls(7, 7)
    walled[3, 2] = True
    open_house, walled_house = house_from_objects(sofas), house_from_objects(sofas, walls=walled)
    relations = jax.jit(functools.partial(RL.relations, adjacent_metres=1.0))
    read = jax.jit(functools.partial(MEM.read, adjacent_metres=1.0))
    assert bool(relations(open_house)[K.ADJACENT_TO, 0, 1]) and not bool(relations(walled_house)[K.ADJACENT_TO, 0, 1])
    seen = jnp.arange(16) < 2
    # having seen the sofas but not the cell between them, the memory reads the same in both houses: not adjacent
    glimpse = MEM.from_knowledge(open_house, seen, jnp.zeros(16, bool))
    assert not bool(glimpse.viewed[3, 2]) and bool(glimpse.viewed[3, 1]) and bool(glimpse.viewed[3, 3])
    before = [read(glimpse, h) for h in (open_house, walled_house)]
    jax.tree_util.tree_map(np.testing.assert_array_equal, *before)
    assert not bool(before[0]["rel"][K.ADJACENT_TO, 0, 1])
    # once the cell between was seen, the memory knows what the house holds there
    looked = glimpse.replace(viewed=glimpse.viewed.at[3, 2].set(True))
    assert bool(read(looked, open_house)["rel"][K.ADJACENT_TO, 0, 1])
    assert not bool(read(looked, walled_house)["rel"][K.ADJACENT_TO, 0, 1])
    # the agent's memory records the cells in its view (its tracks), not the house's layout
    state = jax.jit(W.initial_state)(walled_house)
    memory = jax.jit(MEM.write)(MEM.empty(walled_house), state)
    view = np.asarray(W.visible_cells(state, 7))
    np.testing.assert_array_equal(np.asarray(memory.viewed), view)
    assert view.any() and not view.all()


def test_answer_masks_follow_the_family_kinds(test_houses):
    family = np.asarray(test_houses.questions[..., S.FAMILY])
    answers = np.asarray(test_houses.answers)
    mask = np.asarray(NET.answer_mask(jnp.asarray(family)))
    rows = answers >= 0
    assert rows.sum() > 100
    assert mask[rows, answers[rows]].all(), "every true answer is open to its question"
    assert mask[family == 1].sum(-1).max() == K.MAX_COUNT + 1 and mask[family == 5].sum(-1).min() == K.NUM_TYPES
    assert (mask[(family == 2) | (family >= 6)].sum(-1) == 2).all()


def test_the_trained_answerer_beats_the_question_only_prior(trained, test_houses):
    model, variables, meta = trained
    assert meta["command"].startswith("jaxsoc excalibur answerer ") and meta["houses_seen"] > 0
    after = ANS.bank_accuracy(model, variables, test_houses)
    # on unseen houses of another configuration, answering from a full memory beats answering from none (the
    # question-only prior: the answerer on an empty memory) by far, and the prior beats the untrained network's
    untrained = ANS.bank_accuracy(model, ANS.init_variables(model, CONFIG, jax.random.key(0)), test_houses)
    assert after["full"] > 0.9 and after["full"] > after["empty"] + 0.3, after
    assert after["empty"] > untrained["empty"] + 0.05, (untrained, after)


@pytest.mark.slow
def test_training_lowers_the_loss_on_unseen_houses(test_houses):
    config = ANS.TrainConfig(houses=16, batches=24, lr=3e-3, refresh=6, preset="tiny", house_config=CONFIG)
    model = ANS.make_model("tiny")
    variables, info = ANS.train(config, log=lambda _: None)
    assert info["houses_seen"] == 16 * 24 and info["history"][-1]["batch"] == 24
    untrained = ANS.init_variables(model, CONFIG, jax.random.key(config.seed))
    after = ANS.bank_accuracy(model, variables, test_houses)
    assert after["full"] > after["empty"] + 0.15, after
    seen = jnp.zeros_like(test_houses.valid)
    inputs = jax.jit(jax.vmap(ANS.read_knowledge))(test_houses, seen, seen)
    loss = [float(ANS.loss_fn(model, v, inputs, test_houses.questions, test_houses.answers)[0])
            for v in (untrained, variables)]  # fmt: skip
    assert loss[1] < loss[0] - 0.05, loss


def test_the_answerer_agent_answers_from_its_memory(trained, test_houses):
    model, variables, _ = trained
    env = ExcaliburEnv("answers")
    params = ExcaliburParams(houses=test_houses, explore_budget=6, reenter_budget=2)
    agent = ANS.AnswererAgent(explorer=A.make_agent("random"), model=model, variables=variables)
    final = P.rollout(env, params, agent, jax.random.key(0), 4)
    rows = np.arange(CONFIG.max_questions)[None] < np.asarray(final.house.num_questions)[:, None]
    given = np.asarray(final.given)
    assert (given[:, 0][rows] >= 0).all() and (given[:, 1][rows] >= 0).all()
    # its answers are the network's on the memory of what the episode saw
    seen, lifted = final.tracks.seen.any(1), final.tracks.lifted.any(1)
    inputs = jax.jit(jax.vmap(ANS.read_knowledge))(final.house, seen, lifted)
    expected = np.argmax(np.asarray(jax.jit(model.apply)(variables, inputs, final.house.questions)), -1)
    # the same memory up to objects moved before they were seen
    assert (given[:, 1][rows] == expected[rows]).mean() >= 0.75


def test_checkpoints_round_trip_and_bad_ones_are_refused(trained, test_houses, tmp_path):
    model, variables, _ = trained
    ANS.save(tmp_path / "ans", variables, "small", {"command": "test"})
    model2, loaded, meta = ANS.load(tmp_path / "ans")
    assert meta["command"] == "test" and meta["network"] == ANS.NETWORK
    np.testing.assert_array_equal(
        np.asarray(ANS.bank_accuracy(model2, loaded, test_houses)["full"]),
        np.asarray(ANS.bank_accuracy(model, variables, test_houses)["full"]),
    )
    with pytest.raises(FileNotFoundError, match="no such answerer directory"):
        ANS.load(tmp_path / "typo")
    (tmp_path / "run" / "checkpoints").mkdir(parents=True)
    with pytest.raises(ValueError, match="it is a PPO run"):
        ANS.load(tmp_path / "run")
    other = tmp_path / "other"
    other.mkdir()
    (other / "answerer.json").write_text(json.dumps({"network": "excalibur", "preset": "tiny"}))
    with pytest.raises(ValueError, match="network 'excalibur'"):
        ANS.load(other)
    wrong = tmp_path / "wrong"
    ANS.save(wrong, variables, "small")
    (wrong / "answerer.json").write_text(json.dumps({"network": ANS.NETWORK, "preset": "tiny"}))
    with pytest.raises(ValueError, match="do not fit"):
        ANS.load(wrong)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["excalibur", "answerer", "--batches", "0", "--out", "a"], "--batches must be a positive integer, got 0"),
        (["excalibur", "answerer", "--houses", "-1", "--out", "a"], "--houses must be a positive integer"),
        (["excalibur", "answerer", "--lr", "0", "--out", "a"], "--lr must be a positive number"),
        (["excalibur", "answerer", "--preset", "huge", "--out", "a"], "unknown --preset 'huge'"),
        (["excalibur", "answerer", "--curves", "test", "--out", "a"], "training curves read train or val only, not"),
        (["excalibur", "eval", "--answerer", "typo"], "no such answerer directory: typo"),
        (["excalibur", "eval", "--answerer", "run"], "not an answerer checkpoint: no answerer.json (it is a PPO run"),
        (["excalibur", "eval", "--explore-budget", "0", "--answerer", "run"], "--explore-budget must be a positive"),
        (["excalibur", "eval", "--agent", "human"], "unknown agent 'human'"),
    ],
)
def test_bad_answerer_input_is_refused_and_creates_nothing(argv, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run" / "checkpoints").mkdir(parents=True)
    refused(argv, tmp_path, capsys, f"jaxsoc excalibur {argv[1]}: ", message)
    assert set(files_under(tmp_path)) == {"run", "run/checkpoints"}
