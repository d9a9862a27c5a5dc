"""CHAIC's helper options (issue 38, ``jaxsoc.envs.chaic.options``): names refused, options that end when they should
(the last action issued, a timeout, the rules wanting another plan), masked options never sampled, and (slow) the
options view stepped with the rules' choices and a short warm start that raises the helper's return on ``normal``."""

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
    always valid, an episode ends, the helper delivers something (own reward > 0, as the rules do), and each step
    moves the world on."""
    env, params = jaxsoc.make("CHAIC-Normal-Options-v0")
    obs, state = jax.jit(env.reset)(jax.random.key(0), params)
    step = jax.jit(env.step)
    total, frame = 0.0, int(state.world.frame)
    for i in range(80):
        assert bool(obs["action_mask"][state.expert])
        obs, new, reward, terminated, truncated, info = step(jax.random.key(i), state, state.expert, params)
        total += float(reward)
        if bool(terminated | truncated):
            break
        assert int(new.world.frame) > frame
        frame, state = int(new.world.frame), new
    assert bool(terminated | truncated) and total > 0


@pytest.mark.slow
def test_a_short_warm_start_improves_the_option_policys_return(tmp_path):
    """A tiny options policy on ``normal``: after 24 small behaviour-cloning batches of the rules' options its
    sampled options deliver more (the helper's own return) than the untrained policy's. Slow: compiling the options
    view's rollout and PPO's update takes minutes on the CPU."""
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
    assert rows[-1]["accuracy"] > rows[0]["accuracy"] + 0.1

    def episode_return(params):  # the episodes that end in 8 updates (about 25)
        runner = tr.init(jax.random.key(5)).replace(params=params)
        runner, metrics = tr.run(runner, 8, np.int32(8))
        return float(np.nanmean(np.asarray(metrics["mean_return"])))

    assert episode_return(after) > episode_return(before)


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
