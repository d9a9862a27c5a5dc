"""The HRL helper's low level (``jaxsoc.learners.household.hrl``) at toy size: the joint action distribution
and its valid-action mask, the subgoal environment's rewards on scripted states (the paper's and the
potential-based shaping, which never pays for holding), the regression-planner expert, the imitation warm
start's loss falling, an A2C step on a fixed batch, a run and its resume, the helper inside
``evaluate.play`` and the errors of bad configs."""

from __future__ import annotations

import dataclasses
import functools
import json

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from household_scenes import first, objects_of, place, roll_hidden_objects, set_bits, stand_at

from jaxsoc.envs.household import apartments as A
from jaxsoc.envs.household import classes as C
from jaxsoc.envs.household import env as E
from jaxsoc.envs.household import predicates as PR
from jaxsoc.envs.household import subgoal_env as SE
from jaxsoc.envs.household import subgoal_teachers as ST
from jaxsoc.envs.household import tasks as T
from jaxsoc.envs.household import world as W
from jaxsoc.envs.household.agents import evaluate as EV
from jaxsoc.learners import ppo
from jaxsoc.learners.checkpoint import restore_raw
from jaxsoc.learners.household import hrl, hrl_config, hrl_eval, hrl_imitation, hrl_run, hrl_train
from jaxsoc.learners.networks import household as NH
from jaxsoc.learners.networks import registry

TINY = NH.LowLevelPolicy(NH.LOW_PRESETS["tiny"])
NOOP = W.encode_action("noop", 0)


@pytest.fixture(scope="module")
def bank() -> T.TaskSet:
    """One task per activity in a training apartment (generated here: far quicker than a whole split)."""
    acts = np.array([[a, -1] for a in range(PR.NUM_ACTIVITIES)], np.int32)
    apts = np.array([T.allowed_apartments((a,), A.TRAIN_APARTMENTS)[0] for a in range(PR.NUM_ACTIVITIES)], np.int32)
    keys = jax.random.split(jax.random.key(0), len(acts))
    states = jax.jit(jax.vmap(T.generate))(keys, jnp.asarray(apts), jnp.asarray(acts))
    return T.TaskSet(states=states, activities=acts.astype(np.int8), split="toy", seed=0)


START = jax.jit(SE.SubgoalEnv().start, static_argnums=2)  # (world, pred, phase) -> (obs, state)


def first_subgoal(world) -> int:
    """Returns the first ON / INSIDE predicate of ``world``'s goal."""
    return int(np.argmax((np.asarray(world.goal_count) > 0) & SE.SUBGOAL_KINDS))


@pytest.fixture(scope="module")
def low(bank):
    """A tiny low-level policy's variables, the first observations of 4 tasks and the policy's outputs on them."""
    tasks = [bank.task(i) for i in range(4)]
    obs = jax.tree_util.tree_map(lambda *x: jnp.stack(x), *[START(w, first_subgoal(w), "grab")[0] for w in tasks])
    outputs, variables = jax.jit(TINY.init_with_output)(jax.random.key(2), obs, TINY.initial_memory(4))
    return variables, obs, outputs


def test_joint_log_probs_are_normalised_and_invisible_nodes_impossible(low):
    _, obs, (log_probs, value, memory) = low
    assert log_probs.shape == (4, W.NUM_ACTIONS) and value.shape == (4,) and memory["h"].shape == (4, 16)
    np.testing.assert_allclose(jax.scipy.special.logsumexp(log_probs, -1), 0.0, atol=1e-5)
    per_target = np.exp(np.asarray(log_probs)).reshape(4, W.NUM_VERBS, W.NUM_NODES).sum(1)
    visible = np.asarray(obs["visible"])
    assert (per_target[~visible] == 0.0).all() and (per_target[visible] > 0).all()
    # the env's observations fit the registered network; the helper env's (no subgoal) do not
    registry.build("household-low", NH.LOW_PRESETS["tiny"], SE.observation_space())
    with pytest.raises(ValueError, match="subgoal"):
        registry.build("household-low", NH.LOW_PRESETS["tiny"], E.observation_space())


def test_masked_actions_are_never_sampled(low):
    variables, obs, (log_probs, _, _) = low
    valid = np.asarray(obs["valid"])
    assert valid.shape == (4, W.NUM_ACTIONS) and valid.any(1).all() and (~valid).any(1).all()
    # the mask is world.valid_actions: e.g. no put while the hands are empty
    verbs = valid.reshape(4, W.NUM_VERBS, W.NUM_NODES)
    assert not verbs[:, W.V["putback_rh"] : W.V["putin_lh"] + 1].any() and verbs[:, W.V["walk"]].any()
    assert (np.asarray(log_probs)[~valid] <= -1e8).all()
    samples = jax.random.categorical(jax.random.key(0), log_probs, shape=(512, 4))
    assert np.take_along_axis(valid, np.asarray(samples).T, 1).all()
    # without the mask (the paper's variant) invalid actions on visible targets keep some probability
    unmasked, _, _ = TINY.apply(variables, {**obs, "valid": jnp.ones_like(obs["valid"])}, TINY.initial_memory(4))
    seen = np.tile(np.asarray(obs["visible"]), (1, W.NUM_VERBS))
    assert (np.asarray(unmasked)[~valid & seen] > -1e8).all()


@pytest.fixture(scope="module")
def step(bank):
    """``step(state, action, max_steps=250, reward="paper", gamma=0.99) -> (reward, terminated, truncated,
    info, state)``, jitted once per reward."""
    env = SE.SubgoalEnv()
    params = SE.SubgoalParams(E.HouseholdParams(tasks=bank.states))
    runs = {
        r: jax.jit(lambda s, a, p, r=r: env.step_env(jax.random.key(0), s, a, p.replace(reward=r))) for r in SE.REWARDS
    }

    def call(state, action, max_steps=250, reward="paper", gamma=0.99):
        out = runs[reward](state, action, params.replace(max_steps=max_steps, gamma=gamma))
        _, new, r, terminated, truncated, info = out
        return float(r), bool(terminated), bool(truncated), jax.device_get(info), new

    return call


def test_subgoal_rewards_and_termination_per_phase(bank, step):
    world = bank.task(0)  # setup_table: glasses, forks on a kitchen table
    pred = first_subgoal(world)
    name, table = PR.PREDICATES[pred][2], int(world.goal_target[pred])
    glass = next(o for o in objects_of(world, name) if int(world.nodes.parent[o]) != table)
    for phase in SE.PHASES:
        _, state = START(stand_at(world, 1, glass), pred, phase)
        reward, terminated, truncated, _, _ = step(state, NOOP)  # close to a glass: the bonus only
        assert np.isclose(reward, SE.CLOSE_BONUS) and not terminated and not truncated
        reward, terminated, _, info, held = step(state, W.encode_action("grab", glass))
        assert info["grabbed"] and not info["placed"]  # +10 and the end of phase "grab" only
        assert np.isclose(reward, SE.CLOSE_BONUS + SE.EVENT_REWARD * (phase == "grab"))
        assert terminated == (phase == "grab")
        at_table = held.replace(world=stand_at(held.world, 1, table))
        reward, terminated, _, info, _ = step(at_table, W.encode_action("putback_rh", table))
        assert info["placed"] and not info["grabbed"]  # +10 and the end of phase "put" only
        assert np.isclose(reward, SE.CLOSE_BONUS + SE.EVENT_REWARD * (phase == "put"))
        assert terminated == (phase == "put")
    # far from every glass and from the table: nothing
    _, far = START(stand_at(world, 1, first(world, "bathroom")), pred, "grab")
    close = np.asarray(W.view(far.world, 1).close)
    assert not close[table] and not close[np.asarray(world.nodes.cls) == C.CLASS[name]].any()
    assert step(far, NOOP)[:3] == (0.0, False, False)
    assert step(far, NOOP, max_steps=1)[1:3] == (False, True)  # truncated at max_steps
    # a glass already on the table is not one to grab: no reward beyond the bonus, no end
    _, on_table = START(stand_at(place(world, glass, table, C.ON_TOP), 1, table), pred, "grab")
    reward, terminated, _, info, _ = step(on_table, W.encode_action("grab", glass))
    assert np.isclose(reward, SE.CLOSE_BONUS) and not terminated and not info["grabbed"]


def test_shaping_pays_for_carrying_towards_the_goal_never_for_holding(bank, step):
    world = bank.task(0)  # setup_table: glasses, forks on a kitchen table
    pred = first_subgoal(world)
    name, table = PR.PREDICATES[pred][2], int(world.goal_target[pred])
    glass = next(o for o in objects_of(world, name) if int(world.nodes.parent[o]) != table)
    shelf = int(world.nodes.parent[glass])
    _, state = START(stand_at(world, 1, glass), pred, "put")
    shaped = functools.partial(step, reward="shaped", gamma=1.0)  # gamma 1: standing still pays exactly 0
    assert shaped(state, NOOP)[0] == pytest.approx(0.0, abs=1e-5)
    reward, terminated, _, info, held = shaped(state, W.encode_action("grab", glass))
    assert info["grabbed"] and not terminated and reward == pytest.approx(0.0, abs=1e-5)  # grabbing: nothing
    for _ in range(3):  # holding still: nothing, step after step (the paper's bonus pays for it)
        reward, _, _, _, held = shaped(held, NOOP)
        assert reward == pytest.approx(0.0, abs=1e-5)
    assert step(held, NOOP)[0] == pytest.approx(SE.CLOSE_BONUS)
    # carrying the glass a step towards the table pays; carrying it back costs as much
    towards, _, _, _, moved = shaped(held, W.encode_action("walk", table))
    gained = SE.potential(moved.world, pred, 1) - SE.potential(held.world, pred, 1)
    assert towards > 0.05 and towards == pytest.approx(float(gained), abs=1e-4)
    back = shaped(moved, W.encode_action("walk", shelf))[0]
    assert back == pytest.approx(-towards, abs=1e-4)
    # with the training discount, standing still pays at most (1 - gamma) of the potential's size
    assert 0.0 <= step(held, NOOP, reward="shaped")[0] <= 0.01 * -float(SE.potential(held.world, pred, 1)) + 1e-6
    # phase "grab": walking from the bathroom towards the glass's furniture pays
    _, far = START(stand_at(world, 1, first(world, "bathroom")), pred, "grab")
    assert shaped(far, W.encode_action("walk", shelf))[0] > 0.0


def test_the_regression_planner_finishes_every_subgoal(bank):
    env = SE.SubgoalEnv()
    params = SE.SubgoalParams(E.HouseholdParams(tasks=bank.states), max_steps=50, phase="put")
    n = 16

    @jax.jit
    def run(key):
        _, states = jax.vmap(env.reset_env, in_axes=(0, None))(jax.random.split(key, n), params)

        def body(carry, k):
            states, ended = carry
            action = jax.vmap(ST.expert_action)(states)
            _, new, _, terminated, truncated, info = jax.vmap(env.step_env, in_axes=(0, 0, 0, None))(
                jax.random.split(k, n), states, action, params
            )
            states = jax.tree_util.tree_map(
                lambda a, b: jnp.where(ended.reshape((-1,) + (1,) * (a.ndim - 1)), b, a), new, states
            )
            return (states, ended | terminated | truncated), (~ended, info["action_valid"][:, 1], info["placed"])

        _, (live, valid, placed) = jax.lax.scan(body, (states, jnp.zeros(n, bool)), jax.random.split(key, 50))
        return live, valid, placed

    live, valid, placed = map(np.asarray, run(jax.random.key(5)))
    assert (placed & live).any(0).all()  # every subgoal achieved within 50 steps
    assert valid[live].all()  # with valid actions only
    assert 2 < live.sum(0).mean() < 50


def _hide_elsewhere(world):
    """Returns ``world`` with the places of the objects Bob cannot see permuted among themselves (each hidden
    object takes another hidden one's parent, relation, room and position, so all stay hidden), and whether
    some object of the first subgoal's class moved."""
    nodes = jax.device_get(world.nodes)
    hidden, fields = roll_hidden_objects(world)
    cls = PR.PRED_OBJECT[first_subgoal(world)]
    changed = (nodes.cls[hidden] == cls).any() and len(hidden) > 1
    return world.replace(nodes=world.nodes.replace(**fields)), changed


def test_the_belief_teacher_reads_only_what_bob_knows_and_finishes_subgoals(bank):
    env = SE.SubgoalEnv()
    params = SE.SubgoalParams(E.HouseholdParams(tasks=bank.states), max_steps=50, phase="put")
    teachers = jax.jit(lambda s: (ST.belief_action(s), ST.expert_action(s)))
    # where the objects Bob cannot see lie changes the privileged planner's first action, never the belief
    # teacher's
    differs = 0
    for i in range(len(bank.activities)):
        world = stand_at(bank.task(i), 1, first(bank.task(i), "bathroom"))
        _, state = START(world, first_subgoal(world), "put")
        shuffled, moved = _hide_elsewhere(world)
        _, other = START(shuffled, first_subgoal(world), "put")
        (belief, expert), (belief_2, expert_2) = teachers(state), teachers(other)
        assert int(belief) == int(belief_2), i
        differs += moved and int(expert) != int(expert_2)
    assert differs > 0

    n = 16

    @jax.jit
    def run(key):
        obs, states = jax.vmap(env.reset_env, in_axes=(0, None))(jax.random.split(key, n), params)

        def body(carry, k):
            obs, states, ended = carry
            action = jax.vmap(ST.belief_action)(states)
            node = action % W.NUM_NODES
            choosable = obs["visible"][jnp.arange(n), node] | (node == 0) | (node == obs["subgoal_target"])
            new_obs, new, _, terminated, truncated, info = jax.vmap(env.step_env, in_axes=(0, 0, 0, None))(
                jax.random.split(k, n), states, action, params
            )
            obs, states = jax.tree_util.tree_map(
                lambda a, b: jnp.where(ended.reshape((-1,) + (1,) * (a.ndim - 1)), b, a), (new_obs, new), (obs, states)
            )
            out = (~ended, info["action_valid"][:, 1], choosable, info["placed"], obs["visited"].sum(-1))
            return (obs, states, ended | terminated | truncated), out

        start = obs["visited"]
        _, out = jax.lax.scan(body, (obs, states, jnp.zeros(n, bool)), jax.random.split(key, 50))
        return start, out

    start, out = jax.device_get(run(jax.random.key(5)))
    live, valid, choosable, placed, rooms = map(np.asarray, out)
    assert (start.sum(-1) == 1).all()  # an episode begins with Bob's room visited
    assert (np.diff(rooms, axis=0) >= 0).all() and (rooms[-1] > 1).any()  # rooms are added as he walks
    assert (placed & live).any(0).mean() >= 0.9  # nearly every subgoal within 50 steps, without privilege
    assert valid[live].all() and choosable[live].all()  # valid actions a belief policy can choose
    assert 2 < live.sum(0).mean() < 50


def test_the_belief_network_may_walk_to_the_destination_out_of_sight_and_reads_the_rooms_visited(low):
    _, obs, _ = low
    policy = NH.LowLevelPolicy(NH.LOW_PRESETS["tiny-belief"])
    target = np.asarray(obs["subgoal_target"]).astype(int)
    hidden = {**obs, "visible": obs["visible"].at[jnp.arange(4), target].set(False)}
    variables = policy.init(jax.random.key(0), hidden, policy.initial_memory(4))
    apply = jax.jit(lambda v, o: policy.apply(v, o, policy.initial_memory(4))[0])
    walk_there = np.asarray(W.encode_action("walk", jnp.asarray(target)))
    log_probs = np.asarray(apply(variables, hidden))
    assert (log_probs[np.arange(4), walk_there] > -1e8).all()
    # the plain network cannot choose it
    plain, _, _ = TINY.apply(low[0], hidden, TINY.initial_memory(4))
    assert (np.asarray(plain)[np.arange(4), walk_there] <= -1e8).all()
    # the rooms visited change the choice
    other = apply(variables, {**hidden, "visited": ~hidden["visited"]})
    assert not np.allclose(log_probs, np.asarray(other))
    with pytest.raises(ValueError, match="visited"):
        space = SE.observation_space()
        registry.build(
            "household-low",
            NH.LOW_PRESETS["tiny-belief"],
            type(space)({k: v for k, v in space.spaces.items() if k != "visited"}),
        )


def test_subgoal_marks_by_hand(bank):
    world = bank.task(0)
    pred = first_subgoal(world)
    dest = int(world.goal_target[pred])
    wanted = int(PR.PRED_OBJECT[pred])
    objs = np.flatnonzero(np.asarray(world.nodes.cls) == wanted)
    relation = C.INSIDE if PR.PRED_KIND[pred] == PR.INSIDE_KIND else C.ON_TOP
    world = stand_at(place(world, int(objs[0]), dest, relation), 1, dest)
    if relation == C.INSIDE:
        world = set_bits(world, dest, C.OPEN)
    obs = jax.tree_util.tree_map(lambda x: x[None], START(world, pred, "put")[0])
    marks = np.asarray(SE.subgoal_marks(obs))[0]
    visible, cls = np.asarray(obs["visible"])[0], np.asarray(obs["class"])[0]
    np.testing.assert_array_equal(marks[:, 0], visible & (cls == wanted))
    assert marks[objs[0], 0] == marks[objs[0], 1] == 1.0
    np.testing.assert_array_equal(np.flatnonzero(marks[:, 1]), [objs[0]])  # the others are not in place
    keeps = C.placement_tables()[0][wanted, cls] & visible & (W.NODE_KIND == 2)
    np.testing.assert_array_equal(marks[:, 2], keeps)
    assert keeps.any()


@pytest.mark.parametrize(
    "teacher, preset", [("planner", "tiny"), pytest.param("belief", "tiny-marks", marks=pytest.mark.slow)]
)
def test_imitation_loss_falls_on_a_tiny_config(task_file, teacher, preset):
    frames = 12 * 8 * hrl_imitation.IMITATION_STEPS
    config = _config(task_file, num_envs=8, imitation_frames=frames, imitation_lr=1e-2, teacher=teacher, preset=preset)
    tr = hrl_train.trainer(config)
    start = tr.init(jax.random.key(0)).params
    params, rows = hrl_imitation.imitate(config, start, jax.random.key(1), tr.model)
    losses = [r["loss"] for r in rows]
    assert len(rows) == 12 and rows[0]["beta"] == 1.0 and rows[-1]["beta"] == 0.0
    assert np.mean(losses[-3:]) < np.mean(losses[:3]) - 0.3, losses
    assert not np.array_equal(params["type_head"]["kernel"], start["type_head"]["kernel"])


def _config(tasks: str, **kw) -> hrl_config.HRLConfig:
    fields = dict(
        preset="tiny",
        tasks=tasks,
        num_envs=4,
        num_steps=4,
        grab_frames=32,
        put_frames=32,
        max_steps=6,
        chunk_updates=1,
        eval_episodes=0,
        heldout="",
    )
    return hrl_config.HRLConfig(**{**fields, **kw})


@pytest.fixture(scope="module")
def task_file(bank, tmp_path_factory):
    return str(T.save(bank, tmp_path_factory.mktemp("tasks") / "toy.npz"))


def test_a2c_step_lowers_the_loss_on_a_fixed_batch(task_file, low):
    tr = hrl_train.trainer(_config(task_file))
    assert tr.config.algo == "a2c" and tr.config.optimizer == "rmsprop" and tr.config.lr == 1e-3
    variables, obs, _ = low
    n, t = tr.config.num_envs, tr.config.num_steps
    seq = ppo.Transition(  # a fixed batch: the first observations, repeated, with fixed actions and returns
        obs=jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x[None], (t, *x.shape)), obs),
        mask=jnp.ones((t, n)),
        action=jnp.tile(jnp.asarray([NOOP, W.encode_action("walk", 2)], jnp.int32), (t, n // 2)),
        log_prob=jnp.zeros((t, n)),
        value=jnp.zeros((t, n)),
        reward=jnp.zeros((t, n)),
        done=jnp.zeros((t, n), bool),
    )
    advantages, returns = jnp.ones((t, n)), jnp.full((t, n), 2.0)

    @jax.jit
    def learn(params, opt_state):
        grad_fn = jax.value_and_grad(tr._sequence_loss, has_aux=True)
        (loss, _), grads = grad_fn(params, {}, TINY.initial_memory(n), seq, advantages, returns)
        updates, opt_state = tr.tx.update(grads, opt_state, params)
        return loss, optax.apply_updates(params, updates), opt_state

    params = variables["params"]
    opt_state = tr.tx.init(params)
    losses = []
    for _ in range(4):
        loss, params, opt_state = learn(params, opt_state)
        losses.append(float(loss))
    assert losses[-1] < losses[0], losses


def test_resume_ends_where_an_uninterrupted_run_ends(task_file, tmp_path):
    config = _config(task_file, imitation_frames=4 * hrl_imitation.IMITATION_STEPS)  # one warm-start update first
    whole = hrl_train.train(config, tmp_path / "whole", progress=False)
    assert whole["complete"] and whole["updates"] == 4 and whole["steps_per_s"] > 0
    assert whole["imitation"]["frames"] == 4 * hrl_imitation.IMITATION_STEPS
    assert (tmp_path / "whole" / "imitation.png").exists()
    assert [whole["phases"][p]["updates"] for p in SE.PHASES] == [2, 2]
    rows = (tmp_path / "whole" / "metrics.csv").read_text().splitlines()
    assert rows[0].split(",").count("phase") == 1 and len(rows) == 5
    assert [r.split(",")[rows[0].split(",").index("phase")] for r in rows[1:]] == ["grab", "grab", "put", "put"]
    assert (tmp_path / "whole" / "curves.png").exists()
    assert json.loads((tmp_path / "whole" / "run.json").read_text())["updates"] == {"grab": 2, "put": 2}
    with pytest.raises(ValueError, match="already holds a run"):
        hrl_train.train(config, tmp_path / "whole", progress=False)

    part = tmp_path / "part"
    assert not hrl_train.train(config, part, progress=False, stop_after=1)["complete"]  # inside "grab"
    resumed = hrl_train.train(config, part, resume=True, progress=False, stop_after=3)
    assert resumed["updates"] == 3  # across, into "put"
    # the schedule may change on resume; the end-of-run evaluation runs on the finished policy
    last = hrl_train.train(
        dataclasses.replace(config, checkpoint_every=9, eval_episodes=4), part, resume=True, progress=False
    )
    assert last["complete"] and 0 <= last["subgoal"]["achieved"] <= last["subgoal"]["grabbed"] <= 1
    policy, a, loaded = hrl_run.load(tmp_path / "whole")
    _, b, _ = hrl_run.load(part)
    assert loaded == config and isinstance(policy, NH.LowLevelPolicy)
    jax.tree_util.tree_map(np.testing.assert_array_equal, a, b)
    grabbing = restore_raw(tmp_path / "whole" / hrl_run.CHECKPOINTS, 2)["params"]  # the end of phase "grab"
    assert not np.array_equal(grabbing["critic"]["kernel"], a["params"]["critic"]["kernel"])  # "put" trained on
    with pytest.raises(ValueError, match="incompatible checkpoint"):
        hrl_train.train(dataclasses.replace(config, lr=5e-4), part, resume=True, progress=False)


class FirstGoalPredicate:
    """A stand-in high level: the first ON / INSIDE predicate of the goal in Bob's observation; its memory
    counts its calls."""

    def high_init(self, key, state):
        return jnp.int32(0)

    def high_choose(self, params, key, memory, obs):
        usable = (obs["goal"] > 0) & jnp.asarray(SE.SUBGOAL_KINDS)
        return jnp.where(usable.any(), jnp.argmax(usable), hrl.NONE).astype(jnp.int32), memory + 1


class IdleAlice:
    """Alice doing nothing (a cheap partner for ``play``)."""

    def init(self, key, state):
        return jnp.int32(0)

    def act(self, key, memory, state, partner=None):
        return jnp.int32(0), memory


def test_hrl_helper_plays_as_bob(bank, low):
    variables = low[0]
    helper = hrl.HRLHelper(high=FirstGoalPredicate(), high_params=None, low=TINY, low_params=variables)
    tasks = T.take(bank.states, np.array([0, 1]))
    house = E.HouseholdParams(tasks=bank.states)
    out = jax.jit(lambda t, k: EV.play(t, IdleAlice(), helper, house, k, max_steps=5))(
        tasks, jax.random.split(jax.random.key(3), 2)
    )
    assert out["length"].shape == (2,) and ((np.asarray(out["valid"]) >= 0) & (np.asarray(out["valid"]) <= 1)).all()
    memory = helper.init(jax.random.key(4), bank.task(0))
    assert int(memory.subgoal) == -1 and memory.low["h"].shape == (1, 16)

    # what the helper does there, step by step (Alice idle): it follows the high level's subgoal and names only
    # nodes Bob sees, and it acts (a helper stuck on noops would pass the range checks above)
    def rollout(task, key):
        def body(carry, k):
            state, memory = carry
            action, memory = helper.act(k, memory, state)
            seen = W.observe(state, 1, False)["visible"][action % W.NUM_NODES]
            state = E.advance(k, state, jnp.stack([jnp.int32(0), action]), house)[0]
            return (state, memory), (action, seen)

        return jax.lax.scan(body, (task, helper.init(key, task)), jax.random.split(key, 5))

    (_, memory), (actions, seen) = jax.jit(jax.vmap(rollout))(tasks, jax.random.split(jax.random.key(3), 2))
    np.testing.assert_array_equal(memory.subgoal, [first_subgoal(bank.task(i)) for i in (0, 1)])
    actions, seen = np.asarray(actions), np.asarray(seen)
    assert seen[actions != NOOP].all() and (actions != NOOP).any()


class AlternatingHigh:
    """A high level choosing predicate 0, then 1, then 0, ... (its memory counts its choices)."""

    def high_init(self, key, state):
        return jnp.int32(0)

    def high_choose(self, params, key, memory, obs):
        return memory % 2, memory + 1


def test_a_committing_hrl_helper_keeps_its_subgoal_until_it_times_out(bank, low):
    house = E.HouseholdParams(tasks=bank.states)
    task = bank.task(0)

    def subgoals(commit):
        helper = hrl.HRLHelper(AlternatingHigh(), None, TINY, low[0], subgoal_steps=3, commit=commit)

        def body(carry, k):
            state, memory = carry
            action, memory = helper.act(k, memory, state)
            state = E.advance(k, state, jnp.stack([jnp.int32(0), action]), house)[0]
            return (state, memory), (memory.subgoal, memory.since, memory.high)

        key = jax.random.key(0)
        return jax.lax.scan(body, (task, helper.init(key, task)), jax.random.split(key, 7))[1]

    run = jax.jit(subgoals, static_argnums=0)
    chosen, since, high = map(np.asarray, run(True))
    np.testing.assert_array_equal(chosen, [0, 0, 0, 1, 1, 1, 0])  # an option lasts subgoal_steps steps
    np.testing.assert_array_equal(since, [0, 1, 2, 0, 1, 2, 0])
    np.testing.assert_array_equal(high, [1, 1, 1, 2, 2, 2, 3])  # the high level steps once per choice
    chosen, _, _ = map(np.asarray, run(False))
    np.testing.assert_array_equal(chosen, [0, 1, 0, 1, 0, 1, 0])  # without commit it chooses every step


def test_bad_configs_raise_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown preset"):
        hrl_config.HRLConfig(preset="huge")
    with pytest.raises(ValueError, match="less than one update"):
        hrl_config.HRLConfig(num_envs=4, num_steps=4, put_frames=8)
    with pytest.raises(ValueError, match="unknown task split"):
        hrl_config.HRLConfig(split="test-3")
    with pytest.raises(ValueError, match="unknown reward"):
        hrl_config.HRLConfig(reward="dense")
    with pytest.raises(ValueError, match="unknown teacher"):
        hrl_config.HRLConfig(teacher="oracle")
    with pytest.raises(ValueError, match="tiny-belief"):
        hrl_config.HRLConfig(preset="tiny", teacher="belief")
    with pytest.raises(ValueError, match="unknown subgoal reward"):
        SE.check_subgoal_params(SE.SubgoalParams(E.HouseholdParams(tasks=None), reward="dense"))
    with pytest.raises(ValueError, match="must be positive"):
        hrl_config.HRLConfig(max_steps=0)
    with pytest.raises(ValueError, match="even"):
        NH.LowLevelConfig(d=15)
    with pytest.raises(ValueError, match="marks needs belief"):
        NH.LowLevelConfig(marks=True)
    with pytest.raises(ValueError, match="phase"):
        SE.check_subgoal_params(SE.SubgoalParams(E.HouseholdParams(tasks=None), phase="drop"))
    with pytest.raises(ValueError, match="not an HRL low-level run"):
        hrl_run.load(tmp_path)
    with pytest.raises(ValueError, match="Hybrid"):
        hrl.helper_from_run(tmp_path, tmp_path)  # the high level comes from a Hybrid run
    with pytest.raises(ValueError, match="num_episodes"):
        hrl_eval.subgoal_success(TINY, {}, None, num_episodes=0)
