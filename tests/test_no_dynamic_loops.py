"""No loop with a data-dependent trip count in the hot paths of BabyAI, BIB (learners included) and the household.

On XLA:GPU a ``while`` loop whose trip count is not known at compile time reads its condition back to the
host on every iteration. ``dynamic_whiles`` walks a closed jaxpr, every sub-jaxpr included (``pjit``,
``closed_call``, ``custom_jvp``/``custom_vjp``, ``cond``/``switch`` branches, ``scan`` and ``while`` bodies),
and returns the ``while`` equations whose trip count is not static. A ``fori_loop`` with Python-int bounds
lowers to ``scan`` and never appears; the one ``while`` accepted is the pattern of a ``fori_loop`` with
constant bounds (a counter from a literal, ``counter < bound`` with a literal or loop-invariant literal
bound, the body adding 1). Here: the pooled ``batched_step`` of four BabyAI generator families, ``bot_act`` on every
grid shape of the ``BabyAI-*`` ids, BIB, EXCALIBUR and the PPO update (``make_jaxpr`` on abstract inputs: tracing
only, nothing is compiled). Every registered id's ``reset`` and ``step`` are walked by
``tests/test_contract_every_id.py``, in CI.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import pytest
from excalibur_scenes import with_small_banks
from jax.extend.core import ClosedJaxpr

import jaxsoc
from jaxsoc.bench.jaxpr_walk import static_trip_count, sub_jaxprs
from jaxsoc.core.autoreset import batched_step
from jaxsoc.envs.babyai import bot as B
from jaxsoc.envs.babyai.levels import LEVELS as GENERATORS
from jaxsoc.envs.babyai.levels import LevelGenerator

#: the levels whose pooled batched step is traced: the three paper generator modules, doors and keys, and the full
#: grammar
CI_LEVELS = {f"BabyAI-{name}-v0" for name in ("GoToRedBallGrey", "PutNextLocal", "Unlock", "BossLevel")}


NUM_ENVS = 4


#: the one data-dependent loop a step may hold: ``core.pooled``'s rounds of resets (``ceil(d / chunk)`` rounds for
#: ``d`` ended episodes, typically one: a read-back per round, as a switch over pool sizes costs one per step)
POOLED_RESET_LOOP = "_pooled_reset_chunks"
#: the CPU's rejection sampler stops at the first accepted attempt (``LevelGenerator._first_accepted``; on a CPU a
#: loop's condition never leaves the device); ``test_the_accelerator_path_of_the_sampler_is_static_too`` checks
#: that the accelerators' path has no such loop
CPU_ONLY_LOOPS = ("_first_accepted_attempt",) if jax.default_backend() == "cpu" else ()
ALLOWED_LOOPS = (POOLED_RESET_LOOP, *CPU_ONLY_LOOPS)


def dynamic_whiles(closed_jaxpr) -> list:
    """Returns the ``while`` equations of ``closed_jaxpr`` (a ``ClosedJaxpr`` or ``Jaxpr``), at any depth of
    nesting, whose trip count is not static (see ``static_trip_count``), except the top loop of a ``jit`` named
    in ``ALLOWED_LOOPS`` (its body is walked like any other)."""
    found, stack = [], [(closed_jaxpr.jaxpr if isinstance(closed_jaxpr, ClosedJaxpr) else closed_jaxpr, False)]
    while stack:
        jaxpr, pooled_loop = stack.pop()
        for eqn in jaxpr.eqns:
            if eqn.primitive.name == "while" and static_trip_count(eqn) is None and not pooled_loop:
                found.append(eqn)
            named = eqn.primitive.name in ("jit", "pjit") and eqn.params.get("name") in ALLOWED_LOOPS
            for value in eqn.params.values():
                stack.extend((sub, named) for sub in sub_jaxprs(value))
    return found


def _describe(eqns) -> str:
    return "\n".join(f"  {e.primitive.name} at {e.source_info.traceback}" for e in eqns[:3])


# ---------------------------------------------------------------------------------------------------------
# the walker itself


def test_walker_flags_a_data_dependent_while_loop_at_any_depth():
    def data_dependent(x):
        return jax.lax.while_loop(lambda c: c < x, lambda c: c * 2.0, 1.0)

    assert len(dynamic_whiles(jax.make_jaxpr(data_dependent)(5.0))) == 1
    # inside jit, cond, vmap and scan
    nested = jax.jit(lambda x: jax.lax.cond(x > 0, data_dependent, lambda y: y, x))
    in_scan = lambda xs: jax.lax.scan(lambda c, x: (c + nested(x), None), 0.0, xs)[0]  # noqa: E731
    assert len(dynamic_whiles(jax.make_jaxpr(jax.vmap(in_scan))(jnp.ones((3, 4))))) == 1
    # inside custom_jvp and custom_vjp functions
    smooth = jax.custom_jvp(data_dependent)
    smooth.defjvp(lambda primals, tangents: (data_dependent(*primals), tangents[0]))
    assert len(dynamic_whiles(jax.make_jaxpr(smooth)(5.0))) == 1
    rough = jax.custom_vjp(data_dependent)
    rough.defvjp(lambda x: (data_dependent(x), None), lambda _, g: (g,))
    assert len(dynamic_whiles(jax.make_jaxpr(rough)(5.0))) == 1
    # a fori_loop whose bound is data
    assert len(dynamic_whiles(jax.make_jaxpr(lambda n: jax.lax.fori_loop(0, n, lambda i, c: c + i, 0))(7))) == 1
    # a counter that starts at data
    counted = lambda n: jax.lax.while_loop(lambda c: c < 10, lambda c: c + 1, n)  # noqa: E731
    assert len(dynamic_whiles(jax.make_jaxpr(counted)(3))) == 1


def test_walker_accepts_the_pooled_reset_loop_only():
    """``core.pooled``'s loop of reset rounds is accepted, a data-dependent loop inside its rounds is not."""
    from jaxsoc.core.pooled import pooled_chunks

    done = jnp.arange(8) % 3 == 0
    fine = lambda d: pooled_chunks(d, lambda rows: rows * 2, jnp.zeros(8, jnp.int32), 2)  # noqa: E731
    assert dynamic_whiles(jax.make_jaxpr(fine)(done)) == []

    def grow(rows):
        return jax.lax.while_loop(lambda c: jnp.all(c < 100), lambda c: c * 2 + 1, rows)

    inner = lambda d: pooled_chunks(d, grow, jnp.zeros(8, jnp.int32), 2)  # noqa: E731
    assert len(dynamic_whiles(jax.make_jaxpr(inner)(done))) == 1


def test_walker_accepts_static_loops():
    def loops(x):
        x = jax.lax.fori_loop(0, 5, lambda i, c: c * 2.0, x)  # a scan
        x = jax.lax.scan(lambda c, _: (c + 1.0, None), x, None, length=3)[0]
        counter = jax.lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 2.0), (0, x))[1]
        return jax.lax.switch(0, [lambda y: y, lambda y: y + 1.0], counter)

    jaxpr = jax.make_jaxpr(loops)(1.0)
    assert any(e.primitive.name == "while" for e in jaxpr.jaxpr.eqns)
    assert dynamic_whiles(jaxpr) == []


# ---------------------------------------------------------------------------------------------------------
# every BabyAI level


@functools.cache
def traced_reset(name: str):
    """Returns ``(env, params, key, reset_jaxpr, (obs, state))``: ``env.reset``'s jaxpr and the abstract
    (``ShapeDtypeStruct``) observation and state of one world."""
    env, params = jaxsoc.make(name)
    key = jax.eval_shape(lambda: jax.random.key(0))
    jaxpr, episode = jax.make_jaxpr(lambda k: env.reset(k, params), return_shape=True)(key)
    return env, params, key, jaxpr, episode


_BOT_ACT_JAXPRS: dict = {}


def bot_act_jaxpr(params, state, obs, bot):
    """``bot_act``'s jaxpr; the levels of one grid shape share it (it depends on the static params only)."""
    shape = (params.height, params.width, params.view_size, params.room_size, params.num_rows, params.num_cols)
    if shape not in _BOT_ACT_JAXPRS:
        act = lambda b, s, o: B.bot_act(params, b, s, o, jnp.int32(-1))  # noqa: E731
        _BOT_ACT_JAXPRS[shape] = jax.make_jaxpr(act)(bot, state, obs)
    return _BOT_ACT_JAXPRS[shape]


def _grid_shape(params) -> tuple:
    return (params.height, params.width, params.view_size, params.room_size, params.num_rows, params.num_cols)


def _bot_shapes() -> list:
    """One ``BabyAI-*`` id per grid shape (``bot_act``'s program depends on the shape only; 25 shapes, about a second
    of tracing each)."""
    first: dict = {}
    for name in jaxsoc.registered_envs():
        if name.startswith("BabyAI-"):
            first.setdefault(_grid_shape(jaxsoc.make(name)[1]), name)
    return list(first.values())


def _all_eqns(jaxpr) -> list:
    """Returns every equation of ``jaxpr`` (a ``Jaxpr``), sub-jaxprs included."""
    found, stack = [], [jaxpr]
    while stack:
        for eqn in stack.pop().eqns:
            found.append(eqn)
            for value in eqn.params.values():
                stack.extend(sub.jaxpr if isinstance(sub, ClosedJaxpr) else sub for sub in sub_jaxprs(value))
    return found


@pytest.mark.parametrize("name", sorted(CI_LEVELS))
def test_pooled_batched_step_has_no_loop_but_the_rounds_of_resets(name):
    """Under ``vmap`` the reset of ended worlds runs in ``core.pooled``'s loop of rounds, the one loop accepted; the
    level generator inside it is the code that ``tests/test_contract_every_id.py`` walks in every id's unbatched
    reset and step, so the four generator families of ``CI_LEVELS`` reach the batched path's own code."""
    env, params, key, _, (_, state) = traced_reset(name)
    step = batched_step(env)
    states = jax.tree_util.tree_map(lambda x: jax.ShapeDtypeStruct((NUM_ENVS, *x.shape), x.dtype), state)
    actions = jax.ShapeDtypeStruct((NUM_ENVS,), jnp.int32)
    stepped = jax.make_jaxpr(lambda k, s, a: step(k, s, a, params))(key, states, actions)
    names = {e.params.get("name") for e in _all_eqns(stepped.jaxpr) if e.primitive.name in ("jit", "pjit")}
    assert POOLED_RESET_LOOP in names, f"{name}: the batched step resets without the pooled rounds"
    assert not (found := dynamic_whiles(stepped)), f"{name} batched_step:\n{_describe(found)}"


@pytest.mark.parametrize("name", _bot_shapes())
def test_the_bot_has_no_data_dependent_loop_on_any_grid_shape(name):
    """``bot_act`` on one level of each grid shape that a ``BabyAI-*`` id has (its program depends on the shape
    only, so this reaches every level's bot; every id's reset and step are walked by
    ``tests/test_contract_every_id.py``, in CI)."""
    _, params, _, _, (obs, state) = traced_reset(name)
    bot = jax.eval_shape(lambda s: B.bot_init(params, s), state)
    assert not (found := dynamic_whiles(bot_act_jaxpr(params, state, obs, bot))), f"{name} bot_act:\n{_describe(found)}"


@pytest.mark.parametrize("name", ["BabyAI-GoToLocal-v0", "BabyAI-Unlock-v0"])
def test_the_accelerator_path_of_the_sampler_is_static_too(name):
    # on CPU the attempts run one per round; on accelerators up to MAX_PARALLEL per round (here all in one)
    generator, params = GENERATORS[name]
    wide = LevelGenerator(generator.name, generator.attempt, parallel=generator.max_tries)
    key = jax.eval_shape(lambda: jax.random.key(0))
    assert dynamic_whiles(jax.make_jaxpr(lambda k: wide.sample(k, params))(key)) == []


# ---------------------------------------------------------------------------------------------------------
# the PPO update (acting with pooled resets and the pooled context refresh, GAE, learning) and a chunk of
# updates as Trainer.run and Trainer.run_seeds compile them


@pytest.mark.parametrize("level", ["BabyAI-GoToRedBallGrey-v0", "BabyAI-BossLevel-v0"])
def test_the_ppo_update_has_no_dynamic_loop(level):
    from jaxsoc.learners import ppo

    config = ppo.PPOConfig(
        env_id=level, preset="tiny", num_envs=4, num_steps=4, recurrence=2, minibatch_frames=8, total_frames=16
    )
    trainer, seeded = ppo.Trainer(config), ppo.Trainer(config, seed_axis="seeds")
    key = jax.eval_shape(lambda: jax.random.key(0))
    runner = jax.eval_shape(trainer.init, key)
    found = dynamic_whiles(jax.make_jaxpr(lambda r: trainer._run(r, 2, 1))(runner))
    assert not found, _describe(found)
    runners = jax.eval_shape(lambda k: seeded.init_seeds(jax.random.split(k, 2)), key)
    found = dynamic_whiles(jax.make_jaxpr(lambda r: seeded.run_seeds(r, 2))(runners))
    assert not found, _describe(found)


def test_bib_generators_renderer_and_observers_have_no_dynamic_loop():
    """BIB: every task generator (fixed attempts, static relaxation rounds), the renderer and both observers."""
    from jaxsoc.envs.bib import BIBParams, inverse_planning_surprise, nearest_object_surprise, tasks
    from jaxsoc.envs.bib.render import render

    params = BIBParams.compact()
    key = jax.random.key(0)
    for split, names in (("background", list(tasks.BACKGROUND)), ("evaluation", list(tasks.EVALUATION))):
        for name in names:
            closed = jax.make_jaxpr(lambda k, s=split, n=name: tasks.GENERATORS[s][n](k, params))(key)
            assert not dynamic_whiles(closed), (split, name, _describe(dynamic_whiles(closed)))
    pair = jax.eval_shape(lambda k: tasks.GENERATORS["evaluation"]["preference"](k, params), key)
    for fn in (inverse_planning_surprise, nearest_object_surprise, lambda e: render(e, 84)):
        closed = jax.make_jaxpr(fn)(pair)
        assert not dynamic_whiles(closed), _describe(dynamic_whiles(closed))


def test_bib_learners_fused_epochs_and_surprises_have_no_dynamic_loop():
    """BIB's learners as they run on a GPU: an epoch of two seeds (vmap over seeds, scan over steps) and the
    observers' surprise."""
    from jaxsoc.envs.bib import BIBParams, tasks
    from jaxsoc.learners.bib import run

    params, keys = BIBParams.compact(), run.seed_keys(0, 2)
    generate = tasks.GENERATORS["background"]["single_object"]
    episodes = jax.eval_shape(lambda k: jax.vmap(lambda kk: generate(kk, params))(jax.random.split(k, 4)), keys[0])
    for kind in run.KINDS:
        short = {} if kind in ("bib-atc", "bib-bc-mlp") else {"max_steps": 4}
        learner = run.make_learner(kind, run.make_config(kind, batch_size=2, **short))
        epochs = run.Epochs(learner, 4, 4, 2, 2, fused=True)
        states = jax.eval_shape(jax.vmap(learner.init), keys)
        rows, step_keys = jax.eval_shape(epochs._order, keys)
        closed = jax.make_jaxpr(epochs._epoch)(states, rows, step_keys, {"episodes": episodes}, jnp.int32(0))
        assert not dynamic_whiles(closed), (kind, _describe(dynamic_whiles(closed)))
        if learner.surprise is not None:
            one = jax.eval_shape(learner.init, keys[0]).params
            closed = jax.make_jaxpr(learner.surprise)(one, episodes)
            assert not dynamic_whiles(closed), (kind, _describe(dynamic_whiles(closed)))


def test_household_generator_steps_and_observations_have_no_dynamic_loop():
    """The household: the task generator, both environments' auto-reset steps and the random valid action."""
    from jaxsoc.envs.household import env as E
    from jaxsoc.envs.household import tasks

    key = jax.random.key(0)
    closed = jax.make_jaxpr(lambda k: tasks.generate(k, jnp.int32(0), jnp.array([0, 1])))(key)
    assert not dynamic_whiles(closed), _describe(dynamic_whiles(closed))
    task = jax.eval_shape(lambda k: tasks.generate(k, jnp.int32(0), jnp.array([0, -1])), key)
    bank = jax.tree_util.tree_map(lambda x: jax.ShapeDtypeStruct((3, *x.shape), x.dtype), task)
    params = E.HouseholdParams(tasks=bank)
    two, helper = E.HouseholdEnv(), E.HelperEnv()
    _, state = jax.eval_shape(two.reset_env, key, params)
    actions = {"alice": jnp.int32(0), "bob": jnp.int32(0)}
    for closed in (
        jax.make_jaxpr(two._auto_reset_step)(key, state, actions, params),
        jax.make_jaxpr(lambda k, s, p: helper._auto_reset_step(k, s, jnp.int32(0), p))(
            key, jax.eval_shape(helper.reset_env, key, params)[1], params
        ),
    ):
        assert not dynamic_whiles(closed), _describe(dynamic_whiles(closed))


def test_excalibur_has_no_data_dependent_loops():
    """EXCALIBUR's house generation, reset, step (with the knowledge reward) and the oracle explorer's act."""
    from jaxsoc.envs.excalibur import houses
    from jaxsoc.envs.excalibur.agents import OracleExplorer

    with with_small_banks():  # the loops do not depend on the number of houses
        env, params = jaxsoc.make("EXCALIBUR-NoveltyQA-v0")
    key = jax.random.key(0)
    _, state = env.reset_env(key, params)
    oracle = OracleExplorer()
    programs = {
        "generate": jax.make_jaxpr(lambda k: houses.generate(k, houses.HouseConfig()))(key),
        "reset": jax.make_jaxpr(env.reset_env)(key, params),
        "step": jax.make_jaxpr(env._auto_reset_step)(key, state, jnp.int32(0), params),
        "oracle": jax.make_jaxpr(oracle.act)(key, oracle.init(key, state), state),
    }
    for name, jaxpr in programs.items():
        found = dynamic_whiles(jaxpr)
        assert not found, f"EXCALIBUR {name} has data-dependent loops:\n{_describe(found)}"
