"""EXCALIBUR as an environment: banks, the contract (observation space, rewards of each variant, auto-reset at the
end of phase IV), the metrics and the Eq. 5 fit, the network on real observations, and the command line."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsoc
from jaxsoc.envs.excalibur import bank as B
from jaxsoc.envs.excalibur import metrics as M
from jaxsoc.envs.excalibur import state as S
from jaxsoc.envs.excalibur.env import ExcaliburEnv, ExcaliburParams, check_params, knowledge_accuracy
from jaxsoc.envs.excalibur.houses import HouseConfig

SMALL = HouseConfig(num_rows=1, num_cols=2, max_objects=24, max_questions=6)


@pytest.fixture(scope="module")
def small_bank():
    houses, report = B.make_bank("test", config=SMALL, num_houses=24, m_per_family=6)
    return houses, report


@pytest.fixture(scope="module")
def env_params(small_bank):
    params = ExcaliburParams(
        houses=small_bank[0], explore_budget=12, reenter_budget=4, novelty_reward=1.0, qa_reward=1.0
    ).replace(knowledge_reward=True)
    return ExcaliburEnv("novelty_qa"), params


def test_bank_holds_questions_with_their_true_answers(small_bank):
    from jaxsoc.envs.excalibur import questions as Q

    houses, report = small_bank
    assert report["kept_houses"] == houses.walls.shape[0] and int(houses.num_questions.min()) >= 1
    for h in range(4):
        house = jax.tree_util.tree_map(lambda x, h=h: x[h], houses)
        answers, valid = Q.answer_all(house, house.questions)
        rows = np.arange(house.questions.shape[0]) < int(house.num_questions)
        assert np.asarray(valid)[rows].all()
        np.testing.assert_array_equal(np.asarray(answers)[rows], np.asarray(house.answers)[rows])
        assert (np.asarray(house.answers)[~rows] == -1).all() and not np.asarray(house.questions)[~rows].any()


def test_bank_is_deterministic_and_splits_differ(small_bank):
    again, _ = B.make_bank("test", config=SMALL, num_houses=24, m_per_family=6)
    for a, b in zip(jax.tree_util.tree_leaves(small_bank[0]), jax.tree_util.tree_leaves(again)):
        np.testing.assert_array_equal(a, b)
    train, _ = B.make_bank("train", config=SMALL, num_houses=24, m_per_family=6)
    assert not np.array_equal(np.asarray(train.walls), np.asarray(small_bank[0].walls))
    with pytest.raises(ValueError, match="unknown EXCALIBUR split"):
        B.make_bank("validation")


def test_disk_cache_round_trip(tmp_path, small_bank, monkeypatch):
    path = tmp_path / "bank.npz"
    B._save(path, small_bank[0])
    loaded = B._load(path)
    for a, b in zip(jax.tree_util.tree_leaves(small_bank[0]), jax.tree_util.tree_leaves(loaded)):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    path.write_bytes(b"not a bank")
    assert B._load(path) is None, "a corrupt cache file is rebuilt, not trusted"


def test_episode_through_the_contract(env_params):
    env, params = env_params
    obs, state = env.reset(jax.random.key(0), params)
    space = env.observation_space(params)
    assert space.contains(jax.device_get(obs))
    step = jax.jit(env.step)
    phases, rewards, answered = [], [], 0
    for t in range(60):
        mask = np.asarray(obs["action_mask"])
        action = jnp.int32(np.flatnonzero(mask)[t % mask.sum()])
        obs, state, reward, terminated, truncated, info = step(jax.random.key(t), state, action, params)
        assert space.contains(jax.device_get(obs)) and not bool(truncated)
        phases.append(int(info["phase"]))
        rewards.append(float(reward))
        answered += int(info["phase"]) in (S.ANSWER_FIRST, S.ANSWER_AGAIN)
        if bool(terminated):
            final = info["final_state"]
            assert int(final.phase) == S.ANSWER_AGAIN and int(state.phase) == S.EXPLORE and int(state.step) == 0
            assert bool(info["success"]) == (float(info["accuracy_again"]) >= 0.5)
            break
    else:
        pytest.fail("the episode did not end within its budgets")
    assert sorted(set(phases)) == [0, 1, 2, 3] and answered >= 2
    assert max(rewards) > 0.0


def test_knowledge_reward_is_the_change_of_knowledge_accuracy(env_params):
    env, params = env_params
    base = params.replace(qa_reward=0.0, novelty_reward=0.0, answer_reward=0.0, knowledge_reward=False)
    obs, state = env.reset_env(jax.random.key(3), params)
    step = jax.jit(env.step_env)
    num_q = int(state.house.num_questions)
    revealing = []
    for t, action in enumerate([S.FORWARD, S.LEFT, S.FORWARD, S.PICKUP, S.TOGGLE]):
        _, after, reward, *_ = step(jax.random.key(t), state, jnp.int32(action), params.replace(novelty_reward=0.0))
        # nothing is known before the episode: the first step also pays for the spawn view
        before = knowledge_accuracy(state, jnp.int32(0)) if t else 0.0
        gain = float(knowledge_accuracy(after, jnp.int32(0)) - before)
        assert float(reward) == pytest.approx(gain, abs=1e-6)
        # the state caches the knowledge accuracy, so that the next step computes it once
        assert float(after.knowledge[0]) == pytest.approx(float(knowledge_accuracy(after, jnp.int32(0))), abs=1e-6)
        # the reward pays whole questions: a multiple of 1 / num_questions
        assert float(reward) * num_q == pytest.approx(round(float(reward) * num_q), abs=1e-4)
        if float(reward) > 0.0 and t:  # (the first step's reward may be the spawn view's)
            revealing.append(int(after.tracks.seen[0].sum()) > int(state.tracks.seen[0].sum()))
        _, _, zero, *_ = step(jax.random.key(t), state, jnp.int32(action), base)
        assert float(zero) == 0.0
        state = after
    assert revealing and all(revealing), "some step sees new objects and pays for the questions they answer"


def test_cached_knowledge_reward_matches_recomputing_it_through_all_phases(env_params):
    """Phase I, the answers, phase III (its first step after re-entering) and IV: each exploration step pays the
    change of the knowledge accuracy of its phase's tracks, computed afresh on both sides (0 before the episode's
    first step)."""
    env, params = env_params
    params = params.replace(novelty_reward=0.0, answer_reward=0.0)
    _, state = env.reset_env(jax.random.key(5), params)
    step, known = jax.jit(env.step_env), jax.jit(knowledge_accuracy)
    rng = np.random.default_rng(0)
    phases = set()
    for t in range(200):
        phase = int(state.phase)
        phases.add(phase)
        exploring = phase in (S.EXPLORE, S.REENTER)
        action = int(rng.choice([S.FORWARD, S.LEFT, S.PICKUP, S.TOGGLE, S.DROP])) if exploring else S.ANSWER
        _, after, reward, terminated, *_ = step(jax.random.key(t), state, jnp.int32(action), params)
        track = jnp.int32(phase == S.REENTER)
        before = known(state, track) if t else 0.0  # nothing is known before the episode
        expected = float(known(after, track) - before) if exploring else 0.0
        assert float(reward) == pytest.approx(expected, abs=1e-6), (t, phase)
        state = after
        if bool(terminated):
            break
    assert phases == {S.EXPLORE, S.ANSWER_FIRST, S.REENTER, S.ANSWER_AGAIN}


def test_knowledge_reward_hand_computed(env_params):
    """One question, "is there anything else with the same colour as the <type>?", about an object that is in view
    at the spawn and whose type and first colour are unique in the house (true answer: no). With nothing seen the
    question has no referent (knowledge accuracy 0); a no-op step (drop with empty hands) records the view, the
    object is seen and the question is answered right (accuracy 1): the step pays ``qa_reward * (1 - 0)``."""
    from jaxsoc.envs.excalibur import catalogue as K

    env, params = env_params
    params = params.replace(qa_reward=0.5, novelty_reward=0.0, answer_reward=0.0)
    _, state = env.reset_env(jax.random.key(3), params)
    house = state.house
    valid, types = np.asarray(house.valid), np.asarray(house.type)
    first_color, in_view = np.asarray(house.colors)[:, 0], np.asarray(state.tracks.seen[0])
    unique = [
        i
        for i in np.flatnonzero(valid & in_view)
        if (valid & (types == types[i])).sum() == 1 and (valid & (first_color == first_color[i])).sum() == 1
    ]
    assert unique, "house of key 3 has an object of unique type and colour in view at the spawn"
    question = np.zeros_like(np.asarray(house.questions))
    question[0, S.FAMILY], question[0, S.S1] = 6, types[unique[0]] + 1
    answers = np.full_like(np.asarray(house.answers), -1)
    answers[0] = K.NO
    house = house.replace(questions=jnp.asarray(question), answers=jnp.asarray(answers), num_questions=jnp.int32(1))
    tracks = state.tracks.replace(seen=jnp.zeros_like(state.tracks.seen))
    state = state.replace(house=house, tracks=tracks, knowledge=jnp.zeros(2))  # the cache follows the surgery
    assert float(knowledge_accuracy(state, jnp.int32(0))) == 0.0
    _, after, reward, *_ = jax.jit(env.step_env)(jax.random.key(0), state, jnp.int32(S.DROP), params)
    assert bool(after.tracks.seen[0][unique[0]])
    assert float(reward) == pytest.approx(0.5, abs=1e-6)


def test_clear_errors(env_params):
    env, params = env_params
    _, state = env.reset(jax.random.key(0), params)
    with pytest.raises(ValueError, match="outside Discrete"):
        env.step(jax.random.key(0), state, jnp.int32(S.NUM_ACTIONS), params)
    with pytest.raises(ValueError, match="view_size"):
        check_params(params.replace(view_size=4))
    with pytest.raises(ValueError, match="explore_budget"):
        check_params(params.replace(explore_budget=0))
    with pytest.raises(ValueError, match="knowledge_reward"):
        check_params(params.replace(knowledge_reward=False))
    with pytest.raises(ValueError, match="bank of houses"):
        check_params(params.replace(houses=jax.tree_util.tree_map(lambda x: x[0], params.houses)))
    with pytest.raises(ValueError, match="reward variant"):
        ExcaliburEnv("curiosity")
    with pytest.raises(KeyError, match="EXCALIBUR-v0"):
        jaxsoc.make("EXCALIBUR-V0")


def test_fit_k_maximises_the_eq5_likelihood():
    rng = np.random.default_rng(0)
    steps = rng.uniform(50, 500, 200)
    accuracy = np.clip(0.3 + steps / 700 + rng.normal(0, 0.05, 200), 0, 1)
    k = M.fit_k(accuracy, steps)
    grid = np.geomspace(10, 1e5, 2000)
    best = grid[np.argmax([M.eq5_objective(g, accuracy, steps) for g in grid])]
    assert k == pytest.approx(best, rel=0.01)
    assert M.eq5_objective(k, accuracy, steps) >= max(M.eq5_objective(g, accuracy, steps) for g in grid) - 1e-9
    assert M.fit_k(1.0 - accuracy, steps) == float("inf"), "longer exploration that does not help: plain accuracy"
    np.testing.assert_array_equal(M.exqa(accuracy, steps, float("inf")), accuracy)
    with pytest.raises(ValueError, match="two equal 1-D arrays"):
        M.fit_k(accuracy[:1], steps[:1])


def test_network_reads_real_observations(env_params):
    from jaxsoc.learners.networks import registry

    env, params = env_params
    model = registry.build("excalibur", registry.network_config("excalibur", "tiny"), env.observation_space(params))
    obs, _ = jax.vmap(env.reset_env, in_axes=(0, None))(jax.random.split(jax.random.key(0), 3), params)
    # random weights without compiling the initialisers (jit(model.init) costs seconds on a small CPU)
    shapes = jax.eval_shape(model.init, jax.random.key(1), obs, model.initial_memory(3))
    rng = np.random.default_rng(0)
    variables = jax.tree_util.tree_map(lambda s: jnp.asarray(0.3 * rng.standard_normal(s.shape), s.dtype), shapes)
    log_probs, value, _ = jax.jit(model.apply)(variables, obs, model.initial_memory(3))
    assert log_probs.shape == (3, S.NUM_ACTIONS) and value.shape == (3,)
    probs = np.exp(np.asarray(log_probs))
    assert probs[:, S.ANSWER :].max() == 0.0, "phase I: no answer action"


def test_cli_bank_eval_render(tmp_path, capsys, monkeypatch):
    from jaxsoc.cli import excalibur as commands
    from jaxsoc.cli import main

    assert main(["excalibur", "bank", "--split", "test", "--houses", "24", "--show", "1"]) == 0
    out = capsys.readouterr().out
    assert "house 0:" in out and "->" in out
    # eval and render on a small bank (the command's own bank is the full test split)
    houses = B.make_bank("test", config=SMALL, num_houses=24, m_per_family=6)[0]
    # cached_bank(split, seed, config), as jaxsoc/cli/excalibur.py calls it
    monkeypatch.setattr(B, "cached_bank", lambda split="train", seed=0, config=None: houses)
    argv = ["--explore-budget", "30", "--reenter-budget", "5"]
    assert (
        main(["excalibur", "eval", "--agent", "oracle", "random", "--episodes", "6", *argv, "--out", str(tmp_path)])
        == 0
    )
    blob = json.loads((tmp_path / "excalibur_eval.json").read_text())
    oracle, random = blob["results"]["oracle"], blob["results"]["random"]
    assert oracle["explore_seen"] > random["explore_seen"] and oracle["accuracy_again"] >= random["accuracy_again"]
    assert "Human w/o replay (paper)" in (tmp_path / "excalibur_eval.md").read_text()
    gif = tmp_path / "x.gif"
    assert main(["excalibur", "render", "--steps", "20", *argv, "--out", str(gif)]) == 0 and gif.stat().st_size > 0
    assert main(["excalibur", "eval", "--agent", "wizard", *argv]) == 2
    assert "unknown agent" in capsys.readouterr().err
    with pytest.raises(ValueError, match="given twice"):
        commands.parse_agents(["oracle", "oracle"])
