"""The Hybrid helper (``learners.household.hybrid``) at toy size: the environment's shapes under jit and vmap and
its reward, a chosen predicate driving Bob through the regression planner on hand-built states, the A2C update
lowering its loss on a fixed batch, a two-stage run resumed equal to the uninterrupted one, the trained helper
and its high level inside ``evaluate.play``, and bad configurations refused.

Everything runs on four tasks with Alice planning with ``SIMS`` simulations, episodes of ``MAX_STEPS`` steps and
the ``tiny`` network (d = 16); the environment's step is compiled once for the module."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from household_scenes import first, hold, objects_of, place, stand_at, with_goal

from jaxsoc.envs.household import classes as C
from jaxsoc.envs.household import env as E
from jaxsoc.envs.household import predicates as PR
from jaxsoc.envs.household import tasks as T
from jaxsoc.envs.household import world as W
from jaxsoc.envs.household.agents import agents as AG
from jaxsoc.envs.household.agents import belief as B
from jaxsoc.envs.household.agents import evaluate as EV
from jaxsoc.learners import ppo
from jaxsoc.learners.household import hybrid as H

SIMS = 2
MAX_STEPS = 6
N = 4
GLASS = PR.PREDICATE["on_waterglass_kitchentable"]
TINY = H.HybridConfig(
    preset="tiny",
    num_envs=N,
    num_steps=4,
    stage1_frames=16,
    stage2_frames=16,
    lr=1e-3,
    alice_simulations=SIMS,
    max_steps=MAX_STEPS,
    chunk_updates=1,
    checkpoint_every=1,
)


@pytest.fixture(scope="module")
def bank():
    """Four tasks: setup_table, put_fridge, prepare_food and read_book in apartments 0, 1, 2 and 4."""
    keys = jax.random.split(jax.random.key(0), N)
    activities = jnp.array([[0, -1], [1, -1], [2, -1], [4, -1]], jnp.int32)
    return jax.jit(jax.vmap(T.generate))(keys, jnp.array([0, 1, 2, 4], jnp.int32), activities)


@pytest.fixture(scope="module")
def env_fn(bank):
    """The environment, its params and its public reset / step vmapped over worlds and jitted once."""
    env = H.HybridEnv(SIMS)
    params = E.HouseholdParams(tasks=bank, max_steps=MAX_STEPS)
    reset = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))
    step = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))
    return env, params, reset, step


def keys(seed: int, n: int = N) -> jax.Array:
    return jax.random.split(jax.random.key(seed), n)


def test_reset_and_step_shapes_and_reward(env_fn):
    env, params, reset, step = env_fn
    assert env.action_space(params).n == H.NUM_CHOICES == 31
    obs, state = reset(keys(0), params)
    space = env.observation_space(params)
    assert set(obs) == set(space.spaces) and obs["class"].shape == (N, W.NUM_NODES)
    assert obs["last_choice"].tolist() == [-1] * N
    np.testing.assert_array_equal(obs["goal"], state.world.goal_count)  # the true goal, for training
    progress = jax.jit(jax.vmap(lambda w: W.progress(w)[0]))
    ended_once = np.zeros(N, bool)
    for t in range(MAX_STEPS + 1):
        choice = jax.random.randint(jax.random.key(t), (N,), 0, H.NUM_CHOICES)
        before = progress(state.world)
        obs, state, reward, terminated, truncated, info = step(keys(10 + t), state, choice, params)
        assert reward.shape == (N,) and reward.dtype == jnp.float32 and terminated.shape == (N,)
        expected = 2.0 * (info["achieved"] - before) - 0.1
        np.testing.assert_allclose(reward, expected, rtol=1e-6, atol=1e-6)
        assert space.contains(jax.tree_util.tree_map(lambda x: np.asarray(x[0]), obs))
        ended = np.asarray(terminated | truncated)
        np.testing.assert_array_equal(obs["last_choice"], np.where(ended, -1, choice))  # auto-reset
        ended_once |= ended
    assert ended_once.all()  # episodes of MAX_STEPS steps


def _state(env, params, world) -> H.HybridState:
    """Returns the environment's state at the start of an episode in ``world``."""
    alice = env.alice.init(jax.random.key(1), world, params)
    return H.HybridState(
        world=world, alice=alice, belief=B.init(world), choice=jnp.int32(-1), subgoal_obj=jnp.int32(-1)
    )


def test_a_chosen_predicate_drives_bob(env_fn, bank):
    """setup_table in apartment 0 (two water glasses wanted on the kitchen table, both on the living room's
    coffee table), Alice far off in the bathroom: Bob next to them grabs one when he chooses
    on_waterglass_kitchentable; holding one at the table he puts it there (+2 - 0.1); with noop he stays still
    (-0.1); from the bathroom he walks, and keeps the instance he chose while the choice stays the same."""
    env, params, _, step = env_fn
    world = jax.tree_util.tree_map(lambda x: x[0], bank)
    table, glasses = int(world.goal_target[GLASS]), objects_of(world, "waterglass")
    assert table == first(world, "kitchentable") and len(glasses) >= 2
    coffeetable, bathroom = first(world, "coffeetable"), first(world, "bathroom")
    world = with_goal(world, on_waterglass_kitchentable=(2, table))
    world = place(place(world, glasses[0], coffeetable, C.ON_TOP), glasses[1], coffeetable, C.ON_TOP)
    world = stand_at(world, 0, bathroom)
    near = stand_at(world, 1, glasses[0])
    at_table = stand_at(hold(world, 1, 0, glasses[1]), 1, table)
    elsewhere = stand_at(world, 1, bathroom)
    worlds = [near, at_table, near, elsewhere]
    stacked = jax.tree_util.tree_map(lambda *x: jnp.stack(x), *worlds)
    states = jax.jit(jax.vmap(lambda w: _state(env, params, w)))(stacked)
    choice = jnp.array([GLASS, GLASS, H.NOOP_CHOICE, GLASS], jnp.int32)
    _, after, reward, _, _, info = step(keys(3), states, choice, params)
    verbs, targets = (np.asarray(x) for x in W.decode_action(info["bob_action"]))
    assert (W.VERBS[verbs[0]], int(info["subgoal_obj"][0])) == ("grab", targets[0]) and targets[0] in glasses[:2]
    assert (W.VERBS[verbs[1]], targets[1]) == ("putback_rh", table) and bool(info["action_valid"][1, 1])
    assert float(reward[1]) == pytest.approx(2.0 - 0.1)
    assert (verbs[2], float(reward[2])) == (0, pytest.approx(-0.1))
    assert W.VERBS[verbs[3]] == "walk" and int(info["subgoal_obj"][3]) in glasses
    # the next step keeps the instance while the choice stays the same
    _, _, _, _, _, info2 = step(keys(4), after, choice, params)
    assert int(info2["subgoal_obj"][3]) == int(info["subgoal_obj"][3])


def test_a2c_update_lowers_its_loss_on_a_fixed_batch(env_fn):
    """A fixed batch of frames from the environment (actions drawn at random, returns discounted from the
    rewards); ten A2C updates on it (``Trainer._learn``: RMSprop, one step each) lower the loss."""
    _, params, reset, step = env_fn
    trainer = H.trainer(TINY, True, params.tasks)  # the training test's: its init is compiled once
    runner = trainer.init(jax.random.key(0))
    obs, state = reset(keys(0), params)
    frames, rewards, dones = [], [], []
    for t in range(TINY.num_steps):
        action = jax.random.randint(jax.random.key(t), (N,), 0, H.NUM_CHOICES)
        frames.append((obs, action))
        obs, state, reward, terminated, truncated, _ = step(keys(20 + t), state, action, params)
        rewards.append(reward)
        dones.append(terminated | truncated)
    stack = lambda xs: jax.tree_util.tree_map(lambda *x: jnp.stack(x), *xs)  # noqa: E731
    (obs_seq, actions), rewards, dones = stack(frames), jnp.stack(rewards), jnp.stack(dones)
    zeros = jnp.zeros_like(rewards)
    mask = jnp.concatenate([jnp.ones((1, N)), 1.0 - dones[:-1]], 0)
    transitions = ppo.Transition(obs_seq, mask, actions, zeros, zeros, rewards, dones)
    advantages, returns = ppo.gae(zeros, rewards, dones, jnp.zeros(N), TINY.gamma, 1.0)
    starts = jax.tree_util.tree_map(lambda x: x[None], trainer.model.initial_memory(N))
    learn = jax.jit(lambda r: trainer._learn(r, transitions, starts, advantages, returns))
    losses = []
    for _ in range(10):
        runner, metrics = learn(runner)
        losses.append(float(metrics["loss"]))
    assert np.isfinite(losses).all() and losses[-1] < losses[0]


@pytest.fixture(scope="module")
def run(tmp_path_factory, bank):
    """A two-stage run (one update each) and the same run interrupted after stage 1 and resumed. To compile one
    update only, both stages run stage 1's trainer here (the stages differ in ``HouseholdParams.teleport`` alone,
    checked in ``test_stages_use_teleporting_then_walking``); the stages requested are recorded."""
    whole, parts = tmp_path_factory.mktemp("whole"), tmp_path_factory.mktemp("parts")
    requested = []

    def one_trainer(config, teleport, tasks=None):
        requested.append(teleport)
        return real_trainer(config, True, tasks)

    real_trainer = H.trainer
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(H, "trainer", one_trainer)
        summary = H.train(TINY, whole, progress=False, tasks=bank)
        first_part = H.train(TINY, parts, progress=False, tasks=bank, stop_after=1)
        resumed = H.train(TINY, parts, resume=True, progress=False, tasks=bank)
    out = {"whole": whole, "parts": parts, "summary": summary, "first": first_part, "resumed": resumed}
    return dict(out, requested=requested)


def test_stages_use_teleporting_then_walking(bank):
    stage1, stage2 = H.trainer(TINY, True, bank), H.trainer(TINY, False, bank)
    assert stage1.env_params.teleport and not stage2.env_params.teleport
    assert H.trainer(TINY, True, bank) is stage1  # shared: a resumed run reuses the compiled update
    c = stage1.config
    assert (c.algo, c.optimizer, c.lr, c.gamma, c.num_envs, c.minibatch_frames) == ("a2c", "rmsprop", 1e-3, 0.95, N, 16)
    assert H.HybridConfig().a2c().lr == 1e-4 and stage2.env_params.max_steps == MAX_STEPS


def test_training_run_two_stages_and_resume(run, bank):
    summary, whole = run["summary"], run["whole"]
    assert run["requested"] == [True, False] * 3
    assert summary["updates"] == 2 and summary["stage_updates"] == [1, 1] and summary["frames"] == 32
    assert summary["steps_per_s"] > 0 and run["first"]["updates"] == 1 and run["resumed"]["updates"] == 2
    for name in ("run.json", "metrics.csv", "metrics.json", "curves.png"):
        assert (whole / name).stat().st_size > 0
    info = json.loads((whole / "run.json").read_text())
    assert info["kind"] == "hybrid" and info["config"]["stage1_frames"] == 16 and info["derived"]["num_tasks"] == N
    rows = json.loads((whole / "metrics.json").read_text())["rows"]
    assert [r["stage"] for r in rows] == [1, 2] and [r["update"] for r in rows] == [1, 2]
    policy, params, config = H.load(whole)
    assert config == TINY and policy.config.d == 16 and policy.config.num_actions == H.NUM_CHOICES
    _, resumed_params, _ = H.load(run["parts"])
    jax.tree_util.tree_map(np.testing.assert_array_equal, params, resumed_params)
    with pytest.raises(ValueError, match="already holds a run"):
        H.train(TINY, whole, progress=False, tasks=bank)


def test_helper_in_play_and_high_level(run, bank):
    helper = H.helper_from_run(run["whole"])
    params = E.HouseholdParams(tasks=bank)
    play = jax.jit(lambda t, k: EV.play(t, AG.RandomAgent(char=0), helper, params, k, max_steps=3))
    out = jax.device_get(play(bank, keys(5)))
    assert out["length"].shape == (N,) and (out["valid"][:, 1] > 0).all()  # Bob's moves are planner actions
    # the goal it helps with is the one in the state its init gets (play passes the inferred one there)
    task = jax.tree_util.tree_map(lambda x: x[0], bank)
    guess = task.replace(goal_count=jnp.zeros_like(task.goal_count).at[3].set(1))
    memory = jax.jit(helper.init)(jax.random.key(0), guess)
    np.testing.assert_array_equal(memory.goal_count, guess.goal_count)
    # the high level alone: a choice in [0, 31) from Bob's observation with the goal filled in
    high = H.HighLevel(helper.policy, greedy=True)
    hl = high.high_init(jax.random.key(0), task)
    choose = jax.jit(lambda p, k, m, t: high.high_choose(p, k, m, W.observe(t, 1, True)))
    choice, hl = choose(helper.params, jax.random.key(1), hl, task)
    assert choice.dtype == jnp.int32 and 0 <= int(choice) < H.NUM_CHOICES and int(hl.last_choice) == int(choice)


def test_bad_configs_are_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown Hybrid preset"):
        H.HybridConfig(preset="huge")
    with pytest.raises(ValueError, match="at least one update"):
        H.HybridConfig(num_envs=4, num_steps=4, stage1_frames=8)
    with pytest.raises(ValueError, match="nothing to train"):
        H.HybridConfig(stage1_frames=0, stage2_frames=0)
    with pytest.raises(ValueError, match="num_envs must be positive"):
        H.HybridConfig(num_envs=0)
    with pytest.raises(ValueError, match="unknown task split"):
        H.HybridConfig(split="valid")
    with pytest.raises(ValueError, match="gamma"):
        H.HybridConfig(gamma=1.5)
    with pytest.raises(ValueError, match="alice_simulations"):
        H.HybridEnv(alice_simulations=0)
    with pytest.raises(ValueError, match="even and a multiple of heads"):
        H.HybridNetConfig(d=15)
    with pytest.raises(ValueError, match="not a Hybrid training run"):
        H.load(tmp_path)
