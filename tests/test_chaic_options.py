"""CHAIC's helper options (``jaxsoc.envs.chaic.options``): names refused, options that end when they should
(the last action issued, a timeout, the rules wanting another plan), the room options, a learned partner model in the
view (stepped once per decision, the BM helper's predictions), DAgger on the rules' options raising what the policy's
own options deliver, masked options never sampled, and (slow) the options view stepped with the rules' choices and a
short warm start then PPO that raises the helper's return on ``normal``."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsoc
from jaxsoc.envs.chaic import agents as A
from jaxsoc.envs.chaic import geometry as G
from jaxsoc.envs.chaic import observation as O
from jaxsoc.envs.chaic import options as OP
from jaxsoc.envs.chaic import state as S
from jaxsoc.envs.chaic import tasks as T
from jaxsoc.envs.chaic import world as W
from jaxsoc.learners.networks import registry


def test_option_names_and_bad_input_are_refused():
    assert OP.option_id("explore") == 0 and OP.option_id("goal") == S.PUT_ON
    assert OP.option_id("fetch", 3) == S.PICK + 3 and OP.option_id("remove", 47) == S.REMOVE + 47
    for args, match in (
        (("fly",), "unknown CHAIC option 'fly'"),
        (("fetch",), "needs an object slot"),
        (("remove", S.MAX_OBJECTS), "needs an object slot"),
        (("wait", 2), "takes no object"),
    ):
        with pytest.raises(ValueError, match=match):
            OP.option_id(*args)
    with pytest.raises(ValueError, match="unknown CHAIC task"):
        OP.ChaicOptionsEnv("kitchen")
    with pytest.raises(ValueError, match="events must be positive"):
        OP.ChaicOptionsEnv("normal", events=0)
    assert "CHAIC-All-Options-v0" in jaxsoc.registered_envs() and "CHAIC-Normal-Options-v0" in jaxsoc.registered_envs()


@pytest.mark.slow
def test_masked_options_are_never_sampled():
    """The ``chaic`` network on the options layout: with random masks (explore and wait always open, as the env's),
    thousands of sampled options all fall inside their mask."""
    space = OP.observation_space()
    model = registry.build("chaic", registry.network_config("chaic", "tiny", OP.NUM_OPTIONS), space)
    batch = 32
    one = space.sample(jax.random.key(0))
    obs = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (batch, *jnp.shape(x))), one)
    obs["objects"]["rel_pos"] = jax.random.normal(jax.random.key(4), (batch, S.MAX_OBJECTS, 2)) * 4
    mask = jax.random.bernoulli(jax.random.key(1), 0.05, (batch, OP.NUM_OPTIONS))
    mask = mask.at[:, OP.EXPLORE].set(False).at[:, OP.WAIT].set(True)
    obs["action_mask"] = mask
    variables = jax.jit(model.init)(jax.random.key(2), obs, model.initial_memory(batch))
    log_probs, _, _ = jax.jit(model.apply)(variables, obs, model.initial_memory(batch))
    samples = jax.random.categorical(jax.random.key(3), log_probs, shape=(200, batch))
    assert np.asarray(jnp.take_along_axis(mask, samples.T, axis=1)).all()
    assert len(np.unique(np.asarray(samples))) > 2  # the masks leave choices, and they are used


@pytest.fixture(scope="module")
def episode():
    """The first test episode of ``normal`` and the helper's memory after a first look."""
    state = jax.tree_util.tree_map(lambda x: x[0], T.make_split("normal", "test", size=1).states)
    mem = OP.init_memory(state)
    return state, mem.replace(agent=jax.jit(A.perceive)(mem.agent, state, W.Timing()))


_decide = jax.jit(OP._decide)


def test_options_end_after_their_last_action_and_on_timeout(episode):
    state, mem = episode
    timing = W.Timing()
    # wait: one action, then the option is over (the next decision ends it)
    act, after, ended = _decide(OP.start(mem, OP.WAIT, state), state, timing)
    assert int(act) == S.WAIT and not bool(ended) and bool(after.issued)
    _, closed, ended = _decide(after, state, timing)
    assert bool(ended) and bool(closed.done)
    # a new option starts fresh after one ended; the running one is continued
    assert not bool(OP.start(closed, OP.WAIT, state).acted)
    # an invalid option at its first decision waits once (the world moves on)
    act, after, ended = _decide(OP.start(mem, OP.GOAL, state), state, timing)  # nothing held
    assert int(act) == S.WAIT and not bool(ended) and bool(after.issued)
    # exploring walks (or turns) and goes on; after MAX_EXPLORE_FRAMES it ends
    act, going, ended = _decide(OP.start(mem, OP.EXPLORE, state), state, timing)
    assert not bool(ended) and int(act) in (S.MOVE, S.TURN_LEFT, S.TURN_RIGHT) and not bool(going.issued)
    assert bool(OP.start(going, OP.EXPLORE, state).acted)  # continued, not restarted
    late = state.replace(frame=state.frame + A.MAX_EXPLORE_FRAMES + 1)
    _, closed, ended = _decide(going, late, timing)
    assert bool(ended) and bool(closed.done)
    # interrupted: the rules' wanted plan kind changed since the option's last decision (here it was "follow")
    assert int(going.want) >= 0 and not bool(_decide(going, state, timing)[2])
    assert bool(_decide(going.replace(want=jnp.int32(A.FOLLOW)), state, timing)[2])
    # looking for the child is an option only in shopping; elsewhere it waits once
    assert OP.option_id("look") == OP.LOOK == 1
    act, after, ended = _decide(OP.start(mem, OP.LOOK, state), state, timing)
    assert int(act) == S.WAIT and bool(after.issued)


@pytest.mark.slow
def test_options_view_follows_the_rules_and_masks():
    """The options env stepped with the RHP rules' choices (``state.expert``) on ``normal``: the expert's option is
    always valid, every episode ends, the helper delivers something (own reward > 0, as the rules do), and each step
    moves the world on. Over 4 episodes: since options are interrupted when the rules want another plan (ce36972),
    the rules through the options delivered 0, 0.125, 0 and 0.25 of the task themselves on keys 0-3 (the helper's
    own deliveries), so one episode alone may show nothing."""
    env, params = jaxsoc.make("CHAIC-Normal-Options-v0")
    reset, step = jax.jit(env.reset), jax.jit(env.step)
    totals = []
    for seed in range(4):
        obs, state = reset(jax.random.key(seed), params)
        total, frame = 0.0, int(state.world.frame)
        for i in range(80):
            assert bool(obs["action_mask"][state.expert])
            obs, new, reward, terminated, truncated, info = step(jax.random.key(i), state, state.expert, params)
            total += float(reward)
            if bool(terminated | truncated):
                break
            assert int(new.world.frame) > frame
            frame, state = int(new.world.frame), new
        assert bool(terminated | truncated), f"key {seed}: no end in 80 decisions"
        totals.append(total)
    assert sum(totals) > 0, totals


@pytest.mark.slow
def test_a_short_warm_start_improves_the_option_policys_return(tmp_path):
    """A tiny options policy on ``normal``: over 24 small behaviour-cloning batches of the rules' options the
    probability it gives the rules' option rises (mean over the last 6 batches against the first 6, each measured
    before the batch's steps: 0.65 against 0.36 at the last measurement; one batch's accuracy, 80 options, swings
    from 0.4 to 0.9), and its sampled options deliver more (the helper's own return: 0.17 against 0.09) than the
    untrained policy's. Slow: compiling the options view's rollout and PPO's update takes minutes on the CPU."""
    from jaxsoc.learners.chaic import options_ppo
    from jaxsoc.learners.ppo import trainer_for

    cfg = options_ppo.config(
        "CHAIC-Normal-Options-v0",
        preset="tiny",
        num_envs=8,
        num_steps=10,
        recurrence=5,
        minibatch_frames=40,
        total_frames=80,
    )
    tr = trainer_for(cfg)
    key = jax.random.key(0)
    before = tr.init(key).params
    after, rows = options_ppo.warm_start(cfg, key, batches=24)
    first, last = (np.mean([row["expert_prob"] for row in part]) for part in (rows[:6], rows[-6:]))
    assert last > first + 0.15, (first, last)

    def episode_return(params):  # the episodes that end in 8 updates (about 25)
        runner = tr.init(jax.random.key(5)).replace(params=params)
        runner, metrics = tr.run(runner, 8, np.int32(8))
        return float(np.nanmean(np.asarray(metrics["mean_return"])))

    assert episode_return(after) > episode_return(before)


def test_dagger_on_the_rules_options_raises_what_the_policys_own_options_deliver():
    """The options view's learning test: a tiny options policy on ``normal``, 20 DAgger batches (8 worlds x 5 of its own
    sampled options each, labelled by the RHP rules' options). On the same fresh worlds and keys (paired), the
    helper's own deliveries over 20 options per world rise above the untrained policy's."""
    from jaxsoc.learners.chaic import options_ppo

    cfg = options_ppo.config(
        "CHAIC-Normal-Options-v0", preset="tiny", num_envs=8, num_steps=5, recurrence=5, minibatch_frames=40
    )
    cloner = options_ppo.Cloner(cfg, follow="policy")
    key = jax.random.key(0)
    params, opt_state, carry = start = cloner.start(key)
    accuracy = []
    for b in range(20):
        params, opt_state, carry, metrics = cloner.batch(params, opt_state, carry, jax.random.fold_in(key, b))
        accuracy.append(float(metrics["accuracy"]))

    def delivered(policy):  # the mean reward per option of 4 batches from the same start, the policy left as it is
        _, opt, worlds = start
        total = 0.0
        for b in range(4):
            _, _, worlds, metrics = cloner.batch(policy, opt, worlds, jax.random.fold_in(key, 100 + b))
            total += float(metrics["reward"]) / 4
        return total

    before, after = delivered(start[0]), delivered(params)
    assert np.mean(accuracy[-5:]) > np.mean(accuracy[:3]) + 0.1, accuracy
    assert after > before + 0.002, (before, after)


def test_the_partner_evidence_is_what_the_helper_sees_the_constrained_agent_hold(episode):
    """``partner_evidence``: the class of what the constrained agent holds, when it stands in the helper's view just
    ahead of it; nothing when it stands behind."""
    state, _ = episode
    a = state.agents
    ahead = G.heading_vector(a.heading[S.HELPER])
    item = int(np.flatnonzero(np.asarray(state.objects.cls) > 0)[0])
    hands = a.hands.at[S.MAIN].set(jnp.asarray([item, -1], a.hands.dtype))
    evidence = jax.jit(OP.partner_evidence, static_argnums=1)
    for offset, expect in ((0.8, True), (-0.8, False)):
        pos = a.pos.at[S.MAIN].set(a.pos[S.HELPER] + offset * ahead)
        seen = np.asarray(evidence(state.replace(agents=a.replace(pos=pos, hands=hands)), W.VIEW_DIST))
        cls = int(state.objects.cls[item])
        assert seen[cls] == expect and seen.sum() == int(expect)


def test_the_partner_presets_read_the_evidence_and_refuse_a_view_without_it():
    """The ``tiny-partner`` network: changing only ``partner_classes`` changes the fetch pointers' scores; the
    helper view's observation without it is refused by name; bad teachers are refused."""
    from jaxsoc.learners.chaic import options_ppo

    space = OP.observation_space()
    model = registry.build("chaic", registry.network_config("chaic", "tiny-partner", OP.NUM_OPTIONS), space)
    obs = jax.tree_util.tree_map(lambda x: x[None], jax.jit(space.sample)(jax.random.key(0)))
    obs["action_mask"] = jnp.ones_like(obs["action_mask"])
    obs["objects"]["visible"] = jnp.ones_like(obs["objects"]["visible"])
    variables = jax.jit(model.init)(jax.random.key(1), obs, model.initial_memory(1))
    with_evidence = dict(obs, partner_classes=jnp.ones_like(obs["partner_classes"]))
    apply = jax.jit(model.apply)
    scores = [apply(variables, o, model.initial_memory(1))[0][0, OP.FETCH :] for o in (obs, with_evidence)]
    assert not np.allclose(*scores)
    with pytest.raises(ValueError, match="partner_classes"):  # the helper view's observation (CHAIC-*-Helper-v0)
        registry.build("chaic", model.config, O.observation_space())
    with pytest.raises(ValueError, match="unknown CHAIC options teacher 'bm'"):
        options_ppo.train("/nonexistent/run", options_ppo.config(), teacher="bm")


class CountingPartner:
    """A stand-in partner model: its state counts its steps; it predicts class ``count`` and constraint 1."""

    num_constraints = 3

    def init(self):
        return jnp.int32(0)

    def step(self, count, obs):
        count = count + 1
        targets = jnp.zeros(obs["partner_hands"].shape[:0] + (OP.K.NUM_CLASSES,)).at[count].set(1.0)
        return count, targets, jnp.asarray([0.0, 1.0, 0.0])


def test_a_partner_model_is_stepped_at_each_decision_and_fills_the_view(episode):
    """``notice`` with a partner model steps it once per decision (once per world frame) and puts its predictions
    in the view (``partner_classes``, ``partner_constraint``); without one the view keeps the hand-built evidence
    and has no constraint. The env's space says the same, and a partner that is not a model is refused."""
    state, _ = episode
    partner, timing = CountingPartner(), W.Timing()
    mem = OP.init_memory(state, partner)
    np.testing.assert_allclose(np.asarray(mem.partner_constraint), 1 / 3)
    later = state.replace(frame=state.frame + 5)
    twice = jax.jit(lambda m, s, t: OP.notice(OP.notice(OP.notice(m, s, t, partner), s, t, partner), later, t, partner))
    mem = twice(mem, state, timing)  # twice at one frame (steps once), then at a later frame
    assert int(mem.partner) == 2 and int(np.argmax(np.asarray(mem.partner_classes))) == 2
    assert int(mem.partner_frame) == int(later.frame)
    _, going, _ = _decide(OP.start(mem, OP.WAIT, state), state, timing)
    assert int(going.partner) == 2 and np.array_equal(going.partner_classes, mem.partner_classes)  # _decide keeps it
    params = jaxsoc.make("CHAIC-Normal-Options-v0")[1].replace(tasks=None)
    observe = jax.jit(OP.observe)
    obs = observe(mem, state, params)
    np.testing.assert_array_equal(obs["partner_constraint"], [0.0, 1.0, 0.0])
    assert OP.observation_space(constraints=3).contains(obs)
    plain = observe(jax.jit(OP.notice)(OP.init_memory(state), state, timing), state, params)
    assert "partner_constraint" not in plain and OP.observation_space().contains(plain)
    for memory in (OP.init_memory(state), OP.init_memory(state, partner)):  # orbax saves no zero-size array
        assert all(np.size(leaf) > 0 for leaf in jax.tree_util.tree_leaves(memory))
    assert (
        len(jax.tree_util.tree_leaves(OP.init_memory(state))) == len(jax.tree_util.tree_leaves(mem.agent)) + 6
    )  # as before partner models
    env = OP.ChaicOptionsEnv("normal", partner=partner)
    assert env.observation_space(params)["partner_constraint"].shape == (3,) and "partner model" in env.name
    with pytest.raises(ValueError, match="partner must be a partner model"):
        OP.ChaicOptionsEnv("normal", partner="runs/bm")


def test_the_bm_partner_predicts_what_the_bm_helper_predicts(episode):
    """``bm.BMPartner`` (the options view's learned partner model) steps the behaviour model as ``BMHelper`` does:
    the same goal and constraint probabilities from the same observation; a run that is not there is refused by
    name when the view is made."""
    from jaxsoc.learners.chaic import bm, bm_config, bm_model
    from jaxsoc.learners.networks.chaic import CONSTRAINTS
    from jaxsoc.learners.ppo import make_env_from

    state, _ = episode
    config = bm_config.BMConfig(embed=8, hidden=8)
    params = bm_model.init_params(config, jax.random.key(0))
    partner, helper = bm.BMPartner(params, config), bm.BMHelper(params, config)
    obs = O.observe(state, S.HELPER, False, W.VIEW_DIST)
    carry, targets, constraint = jax.jit(partner.step)(partner.init(), obs)
    _, memory = jax.jit(helper.act)(jax.random.key(1), helper.init(jax.random.key(2), state), state)
    np.testing.assert_allclose(targets, memory.targets, rtol=1e-5)
    np.testing.assert_allclose(constraint, memory.constraint, rtol=1e-5)
    np.testing.assert_allclose(carry[0], memory.h, rtol=1e-5)
    assert partner.num_constraints == len(CONSTRAINTS)
    with pytest.raises(ValueError, match="/nonexistent/bm is not a chaic-bm training run"):
        make_env_from("CHAIC-Normal-Options-v0", "partner_run=/nonexistent/bm")


def test_the_partner_network_reads_a_learned_models_constraint():
    """With ``partner_constraint`` in the view (a learned partner model), the ``tiny-partner`` network's scores
    change with it."""
    space = OP.observation_space(constraints=3)
    model = registry.build("chaic", registry.network_config("chaic", "tiny-partner", OP.NUM_OPTIONS), space)
    obs = jax.tree_util.tree_map(lambda x: x[None], jax.jit(space.sample)(jax.random.key(0)))
    obs["action_mask"] = jnp.ones_like(obs["action_mask"])
    variables = jax.jit(model.init)(jax.random.key(1), obs, model.initial_memory(1))
    apply = jax.jit(model.apply)
    other = dict(obs, partner_constraint=jnp.asarray([[1.0, 0.0, 0.0]]))
    scores = [apply(variables, o, model.initial_memory(1))[0] for o in (obs, other)]
    assert not np.allclose(*scores)


def test_room_options_explore_their_room_and_the_rules_name_the_room_they_would_explore(episode):
    """The room options (``rooms=True``): ``ROOM + r`` is valid while room r has a viewpoint to walk to; started,
    it walks to the nearest such viewpoint *in room r*; the rules' exploring becomes the room option of the viewpoint
    they would walk to, whose first action is the plain explore option's."""
    state, mem = episode
    timing, agent = W.Timing(), mem.agent
    assert OP.option_id("room", 2) == OP.ROOM + 2 == S.NUM_ACTIONS + 2 and OP.num_options(True) == OP.NUM_ROOM_OPTIONS
    with pytest.raises(ValueError, match="needs a room slot"):
        OP.option_id("room", S.MAX_ROOMS)
    sit = jax.jit(A._situation)(agent, state)
    mask = np.asarray(jax.jit(OP.valid_options, static_argnums=3)(agent, state, sit, True))
    rooms = np.flatnonzero(mask[OP.ROOM :])
    assert mask.shape == (OP.NUM_ROOM_OPTIONS,) and len(rooms) >= 2
    assert not mask[OP.ROOM :][~np.asarray(state.scene.room_valid)].any()
    views = np.asarray(A.viewpoints(state.scene)[0])
    lo, hi = np.asarray(state.scene.rooms)[:, :2], np.asarray(state.scene.rooms)[:, 2:]
    for r in rooms[:3]:
        _, going, ended = _decide(OP.start(mem, OP.ROOM + int(r), state), state, timing)
        view = int(going.agent.plan_view)
        assert not bool(ended) and view // A.VIEWS_PER_ROOM == r and int(going.agent.plan) == A.EXPLORE
        assert np.all(views[view] >= lo[r]) and np.all(views[view] <= hi[r])
    expert = jax.jit(OP.expert_option, static_argnums=(2, 3))
    plain, by_room = int(expert(agent, state, False, False)), int(expert(agent, state, False, True))
    assert plain == OP.EXPLORE and by_room >= OP.ROOM  # this first state: nothing to fetch yet
    act_plain, explore, _ = _decide(OP.start(mem, OP.EXPLORE, state), state, timing)
    act_room, room, _ = _decide(OP.start(mem, by_room, state), state, timing)
    assert int(act_plain) == int(act_room) and int(explore.agent.plan_view) == int(room.agent.plan_view)
    seen = jax.jit(OP.room_view)(agent, state, sit)
    pos = np.asarray(state.agents.pos[S.HELPER])
    assert np.flatnonzero(seen["here"]).tolist() == [
        r for r in range(S.MAX_ROOMS) if state.scene.room_valid[r] and np.all(pos >= lo[r]) and np.all(pos <= hi[r])
    ]
    assert np.all(np.asarray(seen["unexplored"])[np.asarray(state.scene.room_valid)] > 0)


def test_the_room_network_points_at_rooms_and_the_view_is_made_by_name():
    """The ``chaic`` network with the room options' actions scores each room from its own token (permuting the
    rooms permutes their scores), refuses a view without rooms, and ``env_args`` ``rooms=true`` makes the view
    with them (a separate instance of the id)."""
    from jaxsoc.learners.ppo import make_env_from

    space = OP.observation_space(rooms=True)
    model = registry.build("chaic", registry.network_config("chaic", "tiny", OP.NUM_ROOM_OPTIONS), space)
    obs = jax.tree_util.tree_map(lambda x: x[None], jax.jit(space.sample)(jax.random.key(0)))
    obs["action_mask"] = jnp.ones_like(obs["action_mask"])
    variables = jax.jit(model.init)(jax.random.key(1), obs, model.initial_memory(1))
    apply = jax.jit(model.apply)
    order = np.random.default_rng(0).permutation(S.MAX_ROOMS)
    shuffled = dict(obs, rooms=jax.tree_util.tree_map(lambda x: x[:, order], obs["rooms"]))
    (a, _, _), (b, _, _) = (
        apply(variables, obs, model.initial_memory(1)),
        apply(variables, shuffled, model.initial_memory(1)),
    )
    np.testing.assert_allclose(np.asarray(b)[0, OP.ROOM :], np.asarray(a)[0, OP.ROOM :][order], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(b)[0, : OP.ROOM], np.asarray(a)[0, : OP.ROOM], rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="needs obs\\['rooms'\\]"):
        registry.build("chaic", model.config, OP.observation_space())
    env, params = make_env_from("CHAIC-Normal-Options-v0", "rooms=true")
    assert (
        env.rooms
        and env.action_space(params).n == OP.NUM_ROOM_OPTIONS
        and "rooms" in env.observation_space(params).spaces
    )
    assert (
        env is not jaxsoc.make("CHAIC-Normal-Options-v0")[0]
        and env is make_env_from("CHAIC-Normal-Options-v0", "rooms=true")[0]
    )
