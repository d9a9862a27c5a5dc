"""EXCALIBUR's explorer over the object memory (``learners.excalibur.explorer``): the reward adds exactly the
answerer's expected-accuracy gain on exploring steps (nothing on answer steps); the answers given are the answerer's
argmax on the memory whatever the action, and the action mask allows only that answer; the memory table shows what
the memory holds, in the agent's frame; the memory network refuses envs without the memory; bad ``explorer``
commands are refused before any work. Training end to end and the trained explorer as an agent: slow tests."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsoc.envs.excalibur import explorer_env as XE
from jaxsoc.envs.excalibur import houses as H
from jaxsoc.envs.excalibur import memory as MEM
from jaxsoc.envs.excalibur import state as S
from jaxsoc.envs.excalibur.env import ExcaliburEnv, ExcaliburParams
from jaxsoc.learners.excalibur import answerer as ANS
from jaxsoc.learners.excalibur import explorer as X
from jaxsoc.learners.networks import excalibur as NET
from tests.cli_checks import files_under, refused
from tests.excalibur_scenes import SMALL_HOUSES
from tests.test_excalibur_answerer import COMMITTED

MAX_STEPS = 40  # an episode: phases I (8 steps) and III (4) and up to 8 questions twice


@pytest.fixture(scope="module")
def world():
    """``(env, params with gain 1, params with gain 0)`` on 8 small houses with the committed answerer."""
    model, variables, _ = ANS.load(COMMITTED)
    houses = H.generate_batch(jax.random.key(31), SMALL_HOUSES, 8)
    houses = ANS.draw_questions(houses, np.random.default_rng(3), None, SMALL_HOUSES.max_questions)[0]
    base = ExcaliburParams(houses=houses, explore_budget=8, reenter_budget=4)
    params = XE.ExplorerParams(base, variables, 1.0)
    return XE.MemoryExplorerEnv(model, params), params, params.replace(gain_reward=0.0)


@pytest.fixture(scope="module")
def trajectory(world):
    """One episode's steps (random moves, never ``stop``, then arbitrary answer actions) under both gains: a list
    of ``(state, action, next_state, obs, reward_gain1, reward_gain0)``."""
    env, params, flat = world
    reset, step = jax.jit(env.reset_env), jax.jit(env.step_env)
    obs, state = reset(jax.random.key(2), params)
    rng = np.random.default_rng(0)
    rows = []
    for t in range(MAX_STEPS):
        action = jnp.int32(rng.integers(0, S.STOP)) if t % 3 else jnp.int32(S.ANSWER)  # answers while exploring too
        key = jax.random.key(100 + t)
        obs1, nxt, reward, terminated, *_ = step(key, state, action, params)
        _, _, reward0, *_ = step(key, state, action, flat)
        rows.append((state, action, nxt, obs1, float(reward), float(reward0)))
        state = nxt
        if bool(terminated):
            return rows
    raise AssertionError(f"the episode did not end in {MAX_STEPS} steps")


def test_the_reward_adds_the_answerers_expected_accuracy_gain_on_exploring_steps(trajectory):
    gained = 0.0
    for state, _, nxt, _, reward, reward0 in trajectory:
        exploring = int(state.env.phase) in (S.EXPLORE, S.REENTER)
        gain = float(nxt.score - state.score) if exploring else 0.0
        assert reward - reward0 == pytest.approx(gain, abs=1e-6)
        gained += gain
    phases = {int(row[0].env.phase) for row in trajectory}
    assert phases == {S.EXPLORE, S.ANSWER_FIRST, S.REENTER, S.ANSWER_AGAIN}
    assert gained > 0.0  # exploring revealed something the answerer uses


def test_answers_are_the_answerers_and_the_mask_allows_only_them(world, trajectory):
    env, params, _ = world
    read = jax.jit(lambda objects, house: XE.answerer_read(env.model, params.answerer, objects, house))
    overridden = 0
    for state, action, nxt, obs, *_ in trajectory:
        answering = int(state.env.phase) in (S.ANSWER_FIRST, S.ANSWER_AGAIN)
        score, answers = read(state.objects, state.env.house)
        np.testing.assert_array_equal(np.asarray(answers), np.asarray(state.answers))
        assert float(score) == pytest.approx(float(state.score), abs=1e-6)
        if answering:
            k = int(state.env.phase_step)
            row = int(state.env.phase == S.ANSWER_AGAIN)
            assert int(nxt.env.given[row, k]) == int(answers[k])  # whatever ``action`` was
            overridden += int(action) != S.ANSWER + int(answers[k])
        mask = np.asarray(obs["action_mask"])
        if int(nxt.env.phase) in (S.ANSWER_FIRST, S.ANSWER_AGAIN):
            assert mask.sum() == 1 and mask[int(XE.answer_action(nxt.env, nxt.answers))]
        else:  # the moves and interactions; stop masked (``allow_stop`` False)
            assert mask[: S.STOP].all() and not mask[S.STOP :].any()
    assert overridden > 0  # the actions passed on answer steps were not the answers given


def test_the_memory_table_shows_the_memory_in_the_agents_frame(trajectory):
    state = trajectory[-1][2]
    table, sizes = XE.memory_table(state.objects, state.env)
    table, sizes = np.asarray(table), np.asarray(sizes)
    mem = state.objects
    known = np.asarray(mem.known)
    assert known.sum() > 0 and (known == (table[:, XE.KNOWN] == 1)).all()
    assert not table[~known].any() and not sizes[~known].any()
    np.testing.assert_array_equal(table[known, 1], np.asarray(mem.type)[known] + 1)
    np.testing.assert_array_equal(table[known, XE.LIFTED], np.asarray(mem.lifted)[known])
    np.testing.assert_allclose(sizes[known, 3], np.asarray(mem.mass)[known])
    # the remembered cell, back from the agent's frame
    env = state.env
    forward = np.asarray([[1, 0], [0, 1], [-1, 0], [0, -1]])[int(env.agent_dir)]
    right = np.asarray([-forward[1], forward[0]])
    cells = np.asarray(env.agent_pos) + table[:, 7:8] * forward + table[:, 8:9] * right
    np.testing.assert_array_equal(cells[known], np.asarray(mem.cell)[known])
    # the memory grows only: every object known before is still known with what was first stored
    first = trajectory[0][2].objects
    assert (np.asarray(first.known) <= known).all()
    before = np.asarray(first.known)
    np.testing.assert_array_equal(np.asarray(first.cell)[before], np.asarray(mem.cell)[before])


def test_the_memory_network_needs_the_memory(world):
    env, params, _ = world
    config = NET.PRESETS["tiny-memory"]
    NET.check(config, env.observation_space(params))
    with pytest.raises(ValueError, match="reads the explorer's memory"):
        NET.check(config, ExcaliburEnv("answers").observation_space(params.env))
    NET.check(NET.PRESETS["tiny"], env.observation_space(params))  # the plain network ignores it


def test_reset_starts_an_empty_memory_written_with_the_spawn_view(trajectory):
    state, obs = trajectory[0][0], trajectory[0][3]
    expected = jax.jit(lambda s: MEM.write(MEM.empty(s.house), s))(state.env)
    np.testing.assert_array_equal(np.asarray(state.objects.known), np.asarray(expected.known))
    assert obs["memory"].shape == obs["objects"].shape and obs["memory_sizes"].shape == obs["object_sizes"].shape


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--frames", "0"], "--frames must be a positive integer, got 0"),
        (["--explore-budget", "-1"], "--explore-budget must be a positive integer"),
        (["--gain-reward", "-1"], "--gain-reward must be >= 0"),
        (["--preset", "tiny"], "--preset must be an excalibur preset reading the object memory"),
        (["--answerer", "typo"], "no such answerer directory: typo"),
        (["--answerer", "run"], "not an answerer checkpoint: no answerer.json (it is a PPO run"),
        (["--out", "run"], "run already holds a run (pass --overwrite"),
    ],
)
def test_bad_explorer_input_is_refused_and_creates_nothing(argv, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run" / "checkpoints").mkdir(parents=True)
    args = dict(zip(argv[::2], argv[1::2]))
    args = {"--answerer": str(COMMITTED), "--out": "new", **args}
    full = ["excalibur", "explorer"] + [x for pair in args.items() for x in pair]
    refused(full, tmp_path, capsys, "jaxsoc excalibur explorer: ", message)
    assert set(files_under(tmp_path)) == {"run", "run/checkpoints"}


@pytest.mark.slow
def test_a_trained_explorer_plays_with_its_memory_and_the_answerers_answers(tmp_path, capsys):
    from jaxsoc.cli import main

    run = tmp_path / "explorer"
    assert main(["excalibur", "explorer", "--answerer", str(COMMITTED), "--frames", "5120", "--explore-budget",
                 "8", "--reenter-budget", "4", "--eval-episodes", "4", "--out", str(run)]) == 0  # fmt: skip
    model, variables, record = X.load_explorer(run)
    assert model.config.object_memory and record["allow_stop"] is False
    out = tmp_path / "eval"
    argv = ["excalibur", "eval", "--agent", f"mem:ppo={run}", "none", "--answerer", str(COMMITTED), "--episodes",
            "4", "--explore-budget", "8", "--reenter-budget", "4", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    text = (out / "excalibur_eval.md").read_text()
    assert "mem + answerer" in text and "none + answerer" in text
    # without the answerer an explorer run is refused
    assert main(argv[:5] + ["--episodes", "4"]) == 2
    assert "needs --answerer" in capsys.readouterr().err
