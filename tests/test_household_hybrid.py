"""The Hybrid helper (``learners.household.hybrid``) at toy size: options of the semi-MDP environment (an option
runs until its predicate is placed, there is nothing to do, the episode ends or ``OPTION_STEPS`` steps), their
discounted reward and ``option_discount``, the choice mask (masked choices never sampled, wait always open),
``gae`` with per-frame discounts against numpy, the behaviour-cloning warm start raising HP_TG's choice's
probability, a run (warm start then two A2C stages) writing its files and resumed equal to the uninterrupted
one, the helper keeping its option inside ``evaluate.play``, and bad configurations refused.

Everything runs on four tasks with teleporting walks, episodes of ``MAX_STEPS`` steps and the ``tiny`` network
(d = 16). To keep the module's compilations few and small, Alice acts at random in the environment (Alice's
tree search is the dearest program to compile; HP_TG's search for the expert's choice still runs, with ``SIMS``
simulations); the environment's step is compiled once for the module."""

from __future__ import annotations

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from household_scenes import first, hold, objects_of, place, stand_at, with_goal

from jaxsoc.envs.household import classes as C
from jaxsoc.envs.household import env as E
from jaxsoc.envs.household import hybrid_env as HE
from jaxsoc.envs.household import options as OPT
from jaxsoc.envs.household import predicates as PR
from jaxsoc.envs.household import tasks as T
from jaxsoc.envs.household import world as W
from jaxsoc.envs.household.agents import agents as AG
from jaxsoc.envs.household.agents import belief as B
from jaxsoc.envs.household.agents import evaluate as EV
from jaxsoc.learners import expert_cloning, ppo
from jaxsoc.learners.household import hybrid as H
from jaxsoc.learners.household import hybrid_config, hybrid_run, hybrid_train
from jaxsoc.learners.networks import household as NH

SIMS = 2
MAX_STEPS = 40
N = 4
GAMMA = 0.95
GLASS = PR.PREDICATE["on_waterglass_kitchentable"]
TINY = hybrid_config.HybridConfig(
    preset="tiny",
    num_envs=N,
    num_steps=4,
    stage1_frames=16,
    stage2_frames=16,
    lr=1e-3,
    gamma=GAMMA,
    alice_simulations=SIMS,
    max_steps=MAX_STEPS,
    chunk_updates=1,
    checkpoint_every=1,
    bc_updates=0,
)


REAL_ENV = HE.HybridEnv  # the class, before a test patches the module's name to build this module's env


def make_env(
    alice_simulations: int = SIMS, alice=None, gamma: float = GAMMA, expert: bool = True, option_end: str = "observed"
) -> HE.HybridEnv:
    """The module's environment: Alice at random (see the module docstring)."""
    alice = E.RandomAlice() if alice is None else alice
    return REAL_ENV(alice_simulations, alice=alice, gamma=gamma, expert=expert, option_end=option_end)


@pytest.fixture(scope="module")
def bank():
    """Four tasks: setup_table, put_fridge, prepare_food and read_book in apartments 0, 1, 2 and 4."""
    keys = jax.random.split(jax.random.key(0), N)
    activities = jnp.array([[0, -1], [1, -1], [2, -1], [4, -1]], jnp.int32)
    return jax.jit(jax.vmap(T.generate))(keys, jnp.array([0, 1, 2, 4], jnp.int32), activities)


@pytest.fixture(scope="module")
def env_fn(bank):
    """The environment, its params (teleporting walks) and its public reset / step vmapped and jitted once."""
    env = make_env()
    params = E.HouseholdParams(tasks=bank, max_steps=MAX_STEPS, teleport=True)
    reset = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))
    step = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))
    return env, params, reset, step


@pytest.fixture(scope="module")
def policy():
    """The tiny policy network and its initial parameters on a batch of observations of the environment."""
    model = NH.HybridPolicy(NH.HYBRID_PRESETS["tiny"])
    obs = jax.tree_util.tree_map(lambda x: jnp.zeros((N, *x.shape), x.dtype), _space_sample())
    variables = jax.jit(model.init)(jax.random.key(0), obs, model.initial_memory(N))
    return model, variables["params"]


def _space_sample() -> dict:
    return {k: np.zeros(s.shape, s.dtype) for k, s in OPT.observation_space().spaces.items()}


def keys(seed: int, n: int = N) -> jax.Array:
    return jax.random.split(jax.random.key(seed), n)


def _state(env, params, world) -> HE.HybridState:
    """Returns the environment's state at the start of an episode in ``world``."""
    alice = env.alice.init(jax.random.key(1), world, params)
    return HE.HybridState(
        world=world,
        alice=alice,
        belief=B.init(world),
        choice=jnp.int32(-1),
        subgoal_obj=jnp.int32(-1),
        expert=jnp.int32(OPT.NOOP_CHOICE),
        sightings=OPT.sight(OPT.no_sightings(), W.observe(world, 1, False)),
    )


@pytest.fixture(scope="module")
def scenes(bank):
    """setup_table in apartment 0 (two water glasses wanted on the kitchen table, both on the living room's
    coffee table), Alice far off in the bathroom; Bob next to a glass (``near``), at the table holding the other
    (``at_table``), or in the bathroom (``elsewhere``)."""
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
    return dict(near=near, at_table=at_table, elsewhere=elsewhere, table=table, glasses=glasses)


def test_an_option_runs_until_its_predicate_is_placed(env_fn, scenes):
    """Bob holding a glass at the table puts it there in one primitive step (+2 - 0.1, discount gamma); next to
    a glass he grabs it, walks (teleports) and puts it: one option of a few steps ending at the placement, with
    the discounted sum of the per-step rewards; wait lasts one step (-0.1); from the bathroom he walks and keeps
    the glass he chose."""
    env, params, _, step = env_fn
    worlds = [scenes["at_table"], scenes["near"], scenes["near"], scenes["elsewhere"]]
    stacked = jax.tree_util.tree_map(lambda *x: jnp.stack(x), *worlds)
    states = jax.jit(jax.vmap(lambda w: _state(env, params, w)))(stacked)
    choice = jnp.array([GLASS, GLASS, OPT.NOOP_CHOICE, GLASS], jnp.int32)
    obs, after, reward, terminated, truncated, info = step(keys(3), states, choice, params)
    tau = np.asarray(info["option_steps"])
    placed = np.asarray(info["satisfied"])[:, GLASS]
    assert tau[0] == 1 and placed[0] == 1 and float(reward[0]) == pytest.approx(2.0 - 0.1)
    assert W.VERBS[int(W.decode_action(info["bob_action"])[0][0])] == "putback_rh"
    # grab, go, put: the option ends on the step that places the glass, not before, not after
    assert 3 <= tau[1] < OPT.OPTION_STEPS and placed[1] == 1
    discounted = sum(-0.1 * GAMMA**k for k in range(tau[1])) + 2.0 * GAMMA ** (tau[1] - 1)
    assert float(reward[1]) == pytest.approx(discounted, rel=1e-5)
    assert W.VERBS[int(W.decode_action(info["bob_action"])[0][1])] == "putback_rh"
    assert tau[2] == 1 and float(reward[2]) == pytest.approx(-0.1) and placed[2] == 0  # wait: one step
    assert 1 <= tau[3] <= OPT.OPTION_STEPS and int(info["subgoal_obj"][3]) in scenes["glasses"]
    np.testing.assert_allclose(info["option_discount"], GAMMA ** tau.astype(np.float64), rtol=1e-5)
    np.testing.assert_array_equal(info["episode_steps"], tau)  # the options started the episodes
    np.testing.assert_array_equal(obs["last_choice"], choice)
    assert not (terminated | truncated).any()


def test_option_end_conditions():
    before = jnp.zeros(PR.NUM_PREDICATES, jnp.int32)
    placed = before.at[GLASS].set(1)
    other = before.at[GLASS + 1].set(1)
    ended = jax.jit(OPT.option_ended)
    assert not ended(GLASS, True, before, before, OPT.OPTION_STEPS - 1)  # under way
    assert not ended(GLASS, True, before, other, 3)  # another predicate's instance does not end it
    assert ended(GLASS, True, before, placed, 3)  # an instance of its predicate placed
    assert ended(GLASS, False, before, before, 1)  # nothing to do (wait, satisfied, no object)
    assert ended(GLASS, True, before, before, OPT.OPTION_STEPS)  # the cap


def test_random_options_discounts_and_the_episode_limit(env_fn):
    """Masked random choices for several options: every option takes 1..24 primitive steps, its discount is
    gamma ** steps, the episode's primitive-step limit is exact (an option is cut at it) and auto-reset restarts
    the episode (last choice -1)."""
    env, params, reset, step = env_fn
    obs, state = reset(keys(0), params)
    assert set(obs) == set(env.observation_space(params).spaces) and obs["choice_mask"].shape == (N, OPT.NUM_CHOICES)
    np.testing.assert_array_equal(obs["goal"], state.world.goal_count)  # the true goal, for training
    space = env.observation_space(params)
    elapsed = np.zeros(N, int)
    ended_once = np.zeros(N, bool)
    for t in range(6):
        logits = jnp.where(obs["choice_mask"], 0.0, -jnp.inf)
        choice = jax.random.categorical(jax.random.key(t), logits).astype(jnp.int32)
        obs, state, reward, terminated, truncated, info = step(keys(10 + t), state, choice, params)
        tau = np.asarray(info["option_steps"])
        assert ((tau >= 1) & (tau <= OPT.OPTION_STEPS)).all() and reward.dtype == jnp.float32
        np.testing.assert_allclose(info["option_discount"], GAMMA ** tau.astype(np.float64), rtol=1e-5)
        ended = np.asarray(terminated | truncated)
        elapsed += tau
        np.testing.assert_array_equal(info["episode_steps"], elapsed)
        assert (elapsed <= MAX_STEPS).all() and (elapsed[np.asarray(truncated)] == MAX_STEPS).all()
        assert space.contains(jax.tree_util.tree_map(lambda x: np.asarray(x[0]), obs))
        np.testing.assert_array_equal(obs["last_choice"], np.where(ended, -1, choice))
        elapsed[ended] = 0
        ended_once |= ended
        assert obs["choice_mask"][:, OPT.NOOP_CHOICE].all()
    assert ended_once.any()


def test_choice_mask_open_predicates_and_wait(scenes):
    """The goal's predicates are open while fewer instances are seen at the target than the goal asks for; a
    predicate outside the goal never is; wait always is."""
    world, table, glasses = scenes["at_table"], scenes["table"], scenes["glasses"]
    one = place(world, glasses[0], table, C.ON_TOP)
    both = place(one, glasses[1], table, C.ON_TOP)
    masks = []
    for w in (world, one, both):
        obs = OPT.observation(w, w.goal_count, w.goal_target, jnp.int32(-1))
        masks.append(np.asarray(obs["choice_mask"]))
    in_goal = np.append(np.asarray(world.goal_count) > 0, True)
    assert masks[0].tolist() == in_goal.tolist() and masks[0][GLASS] and masks[1][GLASS]
    assert not masks[2][GLASS] and masks[2][OPT.NOOP_CHOICE] and masks[2].sum() == in_goal.sum() - 1


def test_masked_choices_are_never_sampled(env_fn, policy):
    """The policy's log-probabilities outside the mask are ~-1e9 (probability 0), inside they sum to 1; many
    samples land inside the mask only; the entropy is the masked distribution's (at most ln of the open
    choices)."""
    _, params, reset, _ = env_fn
    model, variables = policy
    obs, _ = reset(keys(1), params)
    mask = np.asarray(obs["choice_mask"])
    assert mask[:, OPT.NOOP_CHOICE].all() and (~mask).any()
    log_probs, _, _ = jax.jit(model.apply)({"params": variables}, obs, model.initial_memory(N))
    log_probs = np.asarray(log_probs)
    assert (log_probs[~mask] < -1e8).all()
    np.testing.assert_allclose(np.exp(log_probs).sum(-1), 1.0, rtol=1e-5)
    samples = np.asarray(jax.random.categorical(jax.random.key(2), log_probs, shape=(2000, N)))
    assert mask[np.arange(N)[None, :], samples].all()
    entropy = -(np.exp(log_probs) * np.where(mask, log_probs, 0.0)).sum(-1)
    assert (entropy <= np.log(mask.sum(-1)) + 1e-5).all()


def test_gae_with_per_frame_discounts():
    """``gae`` with per-frame discounts equals the recursion computed in numpy; with every discount gamma it
    equals ``gae`` without discounts exactly."""
    rng = np.random.default_rng(0)
    steps, n, lam = 5, 3, 0.9
    values, rewards = rng.normal(size=(steps, n)).astype(np.float32), rng.normal(size=(steps, n)).astype(np.float32)
    dones = rng.random((steps, n)) < 0.3
    discounts = (0.95 ** rng.integers(1, 25, (steps, n))).astype(np.float32)
    last = rng.normal(size=n).astype(np.float32)
    expected = np.zeros((steps, n))
    advantage, next_value = np.zeros(n), last.astype(np.float64)
    for t in reversed(range(steps)):
        keep = 1.0 - dones[t]
        delta = rewards[t] + discounts[t] * next_value * keep - values[t]
        advantage = delta + discounts[t] * lam * keep * advantage
        expected[t], next_value = advantage, values[t]
    adv, ret = ppo.gae(values, rewards, dones, last, 0.99, lam, discounts)
    np.testing.assert_allclose(adv, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ret, expected + values, rtol=1e-5, atol=1e-5)
    plain = ppo.gae(values, rewards, dones, last, 0.99, lam)
    constant = ppo.gae(values, rewards, dones, last, 0.99, lam, jnp.full((steps, n), 0.99, jnp.float32))
    np.testing.assert_array_equal(plain[0], constant[0])
    assert not np.allclose(adv, plain[0])  # the discounts matter


def test_trainer_carries_the_option_discount(bank):
    """The A2C trainer's transitions carry ``info["option_discount"]`` (traced only, nothing compiled)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hybrid_train, "HybridEnv", lambda sims, **kw: make_env(sims, **kw))
        trainer = hybrid_train.trainer(TINY, True, bank)
    runner = jax.eval_shape(trainer.init, jax.random.key(0))
    _, _, transitions, _, _ = jax.eval_shape(trainer._collect, runner)
    assert transitions.discount is not None and transitions.discount.shape == (TINY.num_steps, N)


def test_bc_raises_the_expert_choices_probability(env_fn, policy):
    """A tiny batch of frames following HP_TG's choices; 30 cross-entropy RMSprop steps raise the mean
    probability of the expert's choice well above its start (and the start is low: masked uniform-ish)."""
    _, params, reset, step = env_fn
    model, variables = policy
    obs, state = reset(keys(4), params)
    frames, experts, masks = [], [], []
    done = np.ones(N, bool)
    for t in range(3):
        frames.append(obs)
        experts.append(state.expert)
        masks.append(1.0 - done.astype(np.float32))
        assert np.asarray(obs["choice_mask"])[np.arange(N), np.asarray(state.expert)].all()  # within the mask
        obs, state, _, terminated, truncated, _ = step(keys(30 + t), state, state.expert, params)
        done = np.asarray(terminated | truncated)
    stack = lambda xs: jax.tree_util.tree_map(lambda *x: jnp.stack(x), *xs)  # noqa: E731
    obs_seq, expert, mask = stack(frames), jnp.stack(experts), jnp.asarray(np.stack(masks))
    assert len(set(np.asarray(expert).ravel().tolist())) > 1
    tx = optax.rmsprop(3e-3, decay=0.99, eps=1e-5)
    grad = jax.value_and_grad(lambda p: expert_cloning.bc_loss(model, p, obs_seq, mask, expert), has_aux=True)

    @jax.jit
    def update(p, s):
        (_, metrics), g = grad(p)
        u, s = tx.update(g, s, p)
        return optax.apply_updates(p, u), s, metrics

    p, s = variables, tx.init(variables)
    history = []
    for _ in range(30):
        p, s, metrics = update(p, s)
        history.append(float(metrics["expert_prob"]))
    assert history[0] < 0.5 and history[-1] > 0.8 and float(metrics["accuracy"]) == 1.0


@pytest.fixture(scope="module")
def run(tmp_path_factory, bank):
    """A pure-RL run (two A2C stages of one update each; the warm start is ``test_warm_start_in_a_run``'s) and
    the same run interrupted after stage 1 and
    resumed. To compile one update only, both stages run stage 1's trainer here (the stages differ in
    ``HouseholdParams.teleport`` alone, checked in ``test_stages_use_teleporting_then_walking``); the stages
    requested are recorded. Alice acts at random (the module docstring)."""
    whole, parts = tmp_path_factory.mktemp("whole"), tmp_path_factory.mktemp("parts")
    requested = []

    def one_trainer(config, teleport, tasks=None):
        requested.append(teleport)
        return real_trainer(config, True, tasks)

    real_trainer = hybrid_train.trainer
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hybrid_train, "trainer", one_trainer)
        patch.setattr(hybrid_train, "HybridEnv", lambda sims, **kw: make_env(sims, **kw))
        summary = hybrid_train.train(TINY, whole, progress=False, tasks=bank)
        first_part = hybrid_train.train(TINY, parts, progress=False, tasks=bank, stop_after=1)
        resumed = hybrid_train.train(TINY, parts, resume=True, progress=False, tasks=bank)
    out = {"whole": whole, "parts": parts, "summary": summary, "first": first_part, "resumed": resumed}
    return dict(out, requested=requested)


def test_training_run_writes_its_files(run):
    summary, whole = run["summary"], run["whole"]
    assert summary["updates"] == 2 and summary["stage_updates"] == [1, 1] and summary["frames"] == 32
    for name in ("run.json", "metrics.csv", "metrics.json", "curves.png"):
        assert (whole / name).stat().st_size > 0
    assert not (whole / "bc.csv").exists() and "bc" not in summary  # bc_updates=0: pure RL
    info = json.loads((whole / "run.json").read_text())
    assert info["kind"] == "hybrid" and info["config"]["bc_updates"] == 0 and info["derived"]["num_tasks"] == N
    rows = json.loads((whole / "metrics.json").read_text())["rows"]
    assert [r["stage"] for r in rows] == [1, 2] and [r["update"] for r in rows] == [1, 2]
    assert all(0 <= r["entropy"] <= np.log(OPT.NUM_CHOICES) for r in rows)
    policy, params, config = hybrid_run.load(whole)
    assert config == TINY and policy.config.d == 16 and policy.config.num_actions == OPT.NUM_CHOICES


def test_stages_use_teleporting_then_walking(bank, run):
    stage1, stage2 = hybrid_train.trainer(TINY, True, bank), hybrid_train.trainer(TINY, False, bank)
    assert stage1.env_params.teleport and not stage2.env_params.teleport
    assert hybrid_train.trainer(TINY, True, bank) is stage1  # shared: a resumed run reuses the compiled update
    c = stage1.config
    assert (c.algo, c.optimizer, c.lr, c.gamma, c.num_envs, c.minibatch_frames) == ("a2c", "rmsprop", 1e-3, 0.95, N, 16)
    assert hybrid_config.HybridConfig().a2c().lr == 1e-4 and stage2.env_params.max_steps == MAX_STEPS
    assert stage2.env.gamma == GAMMA and hybrid_config.HybridConfig().bc_updates == 100
    assert not stage1.env.expert and stage1.env.with_expert().expert  # A2C spares the expert's search


def test_warm_start_in_a_run(tmp_path, bank, run):
    """A run with a warm start of two steps (one fresh expert batch each) writes ``bc.csv`` / ``bc.json`` /
    ``bc.png`` and reports it in its summary; the A2C update after it is the pure-RL run's (shared)."""
    config = dataclasses.replace(TINY, bc_updates=2, bc_epochs=1, stage2_frames=0)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hybrid_train, "HybridEnv", lambda sims, **kw: make_env(sims, **kw))
        summary = hybrid_train.train(config, tmp_path, progress=False, tasks=bank)
    for name in ("bc.csv", "bc.json", "bc.png", "metrics.csv"):
        assert (tmp_path / name).stat().st_size > 0
    bc = json.loads((tmp_path / "bc.json").read_text())
    assert bc["updates"] == 2 and bc["frames"] == 2 * TINY.frames_per_update and summary["bc"]["updates"] == 2
    assert 0 <= bc["last"]["first_accuracy"] <= 1 and np.isfinite(bc["last"]["first_loss"])
    assert summary["updates"] == 1


def test_training_run_two_stages_and_resume(run, bank):
    assert run["requested"] == [True, False] * 3
    assert run["first"]["updates"] == 1 and run["resumed"]["updates"] == 2
    _, params, _ = hybrid_run.load(run["whole"])
    _, resumed_params, _ = hybrid_run.load(run["parts"])
    jax.tree_util.tree_map(np.testing.assert_array_equal, params, resumed_params)
    with pytest.raises(ValueError, match="already holds a run"):
        hybrid_train.train(TINY, run["whole"], progress=False, tasks=bank)


def test_helper_keeps_its_option(scenes, policy):
    """The helper keeps its option while it is under way (the high level's memory untouched), and asks the
    policy again after ``OPTION_STEPS`` steps, after an instance of its predicate was placed, or when its last
    step had nothing to do."""
    model, params = policy
    helper = H.HybridHelper(model, params)
    world = scenes["near"]
    memory = helper.init(jax.random.key(0), world)
    satisfied = W.satisfied(world)
    lstm = {"h": jnp.ones(16), "c": jnp.ones(16)}
    base = memory.replace(
        choice=jnp.int32(GLASS),
        since=jnp.int32(5),
        valid=jnp.array(True),
        satisfied=satisfied,
        high=memory.high.replace(lstm=lstm, last_choice=jnp.int32(GLASS)),
    )
    cases = [
        base,  # under way: kept
        base.replace(since=jnp.int32(OPT.OPTION_STEPS)),  # the cap
        base.replace(satisfied=satisfied.at[GLASS].add(-1)),  # an instance placed since the last step
        base.replace(valid=jnp.array(False)),  # nothing to do
        memory,  # the first step
    ]
    stacked = jax.tree_util.tree_map(lambda *x: jnp.stack(x), *cases)
    act = jax.jit(jax.vmap(helper.act, in_axes=(0, 0, None)))
    _, out = act(keys(6, len(cases)), stacked, world)
    assert np.asarray(out.since).tolist() == [6, 1, 1, 1, 1]
    assert int(out.choice[0]) == GLASS and np.asarray(out.high.lstm["h"][0]).tolist() == [1.0] * 16
    assert all(not np.allclose(out.high.lstm["h"][i], 1.0) for i in (1, 2, 3, 4))  # the policy asked again
    choices, masks = np.asarray(out.high.last_choice), np.asarray(helper_mask(world, memory))
    assert masks[choices[1:]].all()


def helper_mask(world, memory):
    return OPT.observation(world, memory.goal_count, memory.goal_target, jnp.int32(-1))["choice_mask"]


def test_helper_in_play_and_high_level(run, bank):
    helper = H.helper_from_run(run["whole"])
    params = E.HouseholdParams(tasks=bank, teleport=True)
    play = jax.jit(lambda t, k: EV.play(t, AG.RandomAgent(char=0), helper, params, k, max_steps=3))
    out = jax.device_get(play(bank, keys(5)))
    assert out["length"].shape == (N,) and (out["valid"][:, 1] > 0).all()  # Bob's moves are planner actions
    # the goal it helps with is the one in the state its init gets (play passes the inferred one there)
    task = jax.tree_util.tree_map(lambda x: x[0], bank)
    guess = task.replace(goal_count=jnp.zeros_like(task.goal_count).at[3].set(1))
    memory = jax.jit(helper.init)(jax.random.key(0), guess)
    np.testing.assert_array_equal(memory.goal_count, guess.goal_count)
    # the high level alone (the HRL helper's): a choice within the mask, computed from an observation without one
    high = H.HighLevel(helper.policy, greedy=False)
    hl = high.high_init(jax.random.key(0), task)
    choose = jax.jit(lambda p, k, m, t: high.high_choose(p, k, m, W.observe(t, 1, True)))
    open_ = np.asarray(OPT.choice_mask(W.observe(task, 1, True)))
    for seed in range(3):
        choice, hl2 = choose(helper.params, jax.random.key(seed), hl, task)
        assert choice.dtype == jnp.int32 and open_[int(choice)] and int(hl2.last_choice) == int(choice)


def test_bad_configs_are_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown Hybrid preset"):
        hybrid_config.HybridConfig(preset="huge")
    with pytest.raises(ValueError, match="at least one update"):
        hybrid_config.HybridConfig(num_envs=4, num_steps=4, stage1_frames=8)
    with pytest.raises(ValueError, match="nothing to train"):
        hybrid_config.HybridConfig(stage1_frames=0, stage2_frames=0)
    with pytest.raises(ValueError, match="num_envs must be positive"):
        hybrid_config.HybridConfig(num_envs=0)
    with pytest.raises(ValueError, match="unknown task split"):
        hybrid_config.HybridConfig(split="valid")
    with pytest.raises(ValueError, match="gamma"):
        hybrid_config.HybridConfig(gamma=1.5)
    with pytest.raises(ValueError, match="bc_updates"):
        hybrid_config.HybridConfig(bc_updates=-1)
    with pytest.raises(ValueError, match="bc_epochs"):
        hybrid_config.HybridConfig(bc_epochs=0)
    with pytest.raises(ValueError, match="bc_lr"):
        hybrid_config.HybridConfig(bc_lr=0.0)
    with pytest.raises(ValueError, match="alice_simulations"):
        HE.HybridEnv(alice_simulations=0)
    with pytest.raises(ValueError, match="gamma"):
        HE.HybridEnv(gamma=-0.1)
    with pytest.raises(ValueError, match="even and a multiple of heads"):
        NH.HybridNetConfig(d=15)
    with pytest.raises(ValueError, match="not a Hybrid training run"):
        hybrid_run.load(tmp_path)
