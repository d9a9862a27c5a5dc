"""Tests of jaxsoc's BabyAI bot (``babyai.bot``) against minigrid 3.2.0's ``BabyAIBot``.

Episodes start from reset minigrid levels imported with ``babyai.compat.from_minigrid``. jaxsoc's bot plays
them in one jitted ``bot_episodes`` rollout per grid shape (8x8 one-room levels, 22x22 3x3-room levels) and
must take exactly the reference bot's actions and reach its outcome, in every episode (a failure names the
level, seed and first differing step of each episode that differs). In advising mode a seeded learner deviates from
the suggestions and both bots must suggest the same action at every step. The bot also has to give up (not
hang) on minigrid's unsolvable levels, solve jaxsoc-generated levels, and give the same results batched and
unbatched. Two scripted rooms check minigrid's object order after a ``drop`` (stale positions), and
``-m slow`` runs the agreement check on 15 seeds of every level.

The reference runs with a guard: its hangs keep pushing subgoals (explore, open the locked door, fetch the
key, explore...), so its stack raises ``ReferenceHang`` past ``REF_STACK_LIMIT`` entries, with a 5 s alarm
as a backstop; the known hang seeds are never given to it.

Compilation dominates the run time, so every rollout of a grid shape uses the same batch size, number of
steps and stepping environment (``bot_episodes`` only calls ``env.step_env``, which does not depend on the
level), and the unbatched functions are jitted once at module level.
"""

from __future__ import annotations

import signal
import traceback

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from babyai_reference import PAPER_LEVELS, make_level, scripted_room
from minigrid.utils.baby_ai_bot import BabyAIBot

import jaxsoc
from jaxsoc.envs.babyai import bot as B
from jaxsoc.envs.babyai.bot_rollout import bot_episodes, generated_states
from jaxsoc.envs.babyai.compat import from_minigrid
from jaxsoc.envs.babyai.env import observe_babyai
from jaxsoc.envs.gridworld import constants as C

# minigrid seeds whose reference bot loops forever (the key is locked inside its own room): never run it there
HANG_SEEDS = {"Unlock": {63, 161, 165, 178}, "GoToImpUnlock": {6, 14, 35, 63, 107, 110, 157, 163, 169, 171}}
ONE_ROOM = PAPER_LEVELS[:6]  # 8x8 grids
MULTI_ROOM = PAPER_LEVELS[6:]  # 3x3 rooms, 22x22 grids
# one compiled rollout per grid shape: (batch, steps)
SMALL = (64, 64)
BIG = (32, 256)
STEPPER = jaxsoc.make("BabyAI-BossLevel-v0")[0]  # steps any level: step_env only reads state and params
KEY = jax.random.key(0)  # BabyAI transitions are deterministic
REF_STACK_LIMIT = 64  # the reference's hangs grow its subgoal stack without bound; jaxsoc's holds 32
DONE = int(C.DONE)
HANG = "hang seed"  # the reference outcome of a hang seed, which the reference is never given

_init = jax.jit(B.bot_init)
_act = jax.jit(B.bot_act)
_observe = jax.jit(observe_babyai)
_step = jax.jit(STEPPER.step_env)
_generate = jax.jit(generated_states, static_argnums=(0, 3))  # eager generation compiles op by op: slower


class ReferenceHang(Exception):
    """minigrid's bot looped (its stack outgrew ``REF_STACK_LIMIT`` or a call took over 5 s)."""


class _BoundedStack(list):
    def append(self, item):
        if len(self) >= REF_STACK_LIMIT:
            raise ReferenceHang(f"the reference stack outgrew {REF_STACK_LIMIT} subgoals")
        super().append(item)


def _alarm(*_):
    raise ReferenceHang("minigrid's bot did not answer within 5 s")


def reference_bot(env) -> BabyAIBot:
    """Returns minigrid's bot for a reset env, with a stack that raises ``ReferenceHang`` when it loops."""
    bot = BabyAIBot(env.unwrapped)
    bot.stack = _BoundedStack(bot.stack)
    return bot


def replan(bot: BabyAIBot, taken: int | None) -> tuple[int | None, Exception | None]:
    """Returns ``(action, None)`` of ``bot.replan(taken)``, or ``(None, error)`` if it raised or hung."""
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(5)
    try:
        return int(bot.replan(taken)), None
    except Exception as error:  # the reference's assertion errors, DisappearedBoxError, TypeError, hangs
        return None, error
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def raised_in(error: Exception, function: str) -> bool:
    return any(frame.name == function for frame in traceback.extract_tb(error.__traceback__))


def level_seeds(name: str, count: int, start: int) -> list[int]:
    """Returns the first ``count`` seeds from ``start`` on that are not reference hang seeds."""
    seeds, seed = [], start
    while len(seeds) < count:
        if seed not in HANG_SEEDS.get(name, ()):
            seeds.append(seed)
        seed += 1
    return seeds


def stack(trees):
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *trees)


def reference_episode(env, limit: int) -> tuple[list[int], str]:
    """Plays minigrid's bot on a reset env. Returns its actions and the outcome: ``success``, ``failed`` (it
    raised or hung), ``terminated`` (without reward), ``truncated`` or ``unfinished`` (``limit`` steps)."""
    bot = reference_bot(env)
    actions = []
    for _ in range(limit):
        action, error = replan(bot, None)
        if error is not None:
            return actions, "failed"
        actions.append(action)
        _, reward, terminated, truncated, _ = env.step(action)
        if terminated:
            return actions, "success" if reward > 0 else "terminated"
        if truncated:
            return actions, "truncated"
    return actions, "unfinished"


def jaxsoc_outcome(success: bool, failed: bool, ended: bool) -> str:
    if success:
        return "success"
    if failed:
        return "failed"
    return "truncated" if ended else "unfinished"  # no paper level terminates without reward


def rollout(states: list, params, shape: tuple[int, int]):
    """Returns the host ``BotEpisodes`` of ``bot_episodes`` runs over ``states``, in batches of the shape's size
    (the last one padded), concatenated and cut to ``len(states)``."""
    batch, steps = shape
    padded = states + [states[-1]] * (-len(states) % batch)
    parts = [
        jax.device_get(bot_episodes(STEPPER, params, stack(padded[start : start + batch]), steps))
        for start in range(0, len(padded), batch)
    ]
    return jax.tree_util.tree_map(lambda *xs: np.concatenate(xs)[: len(states)], *parts)


def play_unbatched(params, state, limit: int) -> dict:
    """Plays jaxsoc's bot on one state with the jitted, unbatched ``bot_act`` and ``step_env`` (a Python loop),
    with ``bot_episodes``'s semantics: a step on which the bot gives up is not taken."""
    bot, obs = _init(params, state), _observe(state, params)
    actions, success, failed, ended = [], False, False, False
    for _ in range(limit):
        action, bot = _act(params, bot, state, obs, np.int32(-1))
        if bool(bot.failed):
            failed = ended = True
            break
        actions.append(int(action))
        obs, state, reward, terminated, truncated, _ = _step(KEY, state, action, params)
        if bool(terminated) or bool(truncated):
            success, ended = bool(terminated) and float(reward) > 0, True
            break
    return dict(actions=actions, success=success, failed=failed, ended=ended, bot=bot, state=state, obs=obs)


# ---------------------------------------------------------------------------------------------------------
# agreement with the reference bot on imported levels


def _agreement_run(seeds_per_level: dict[str, int], shape, extra=(), first_seed: int | None = None) -> list[dict]:
    """Imports the given number of seeds of each level (from ``first_seed``, by default 10 times the level's
    index) on which the reference is played, and jaxsoc's bot plays all of them in batched rollouts. The known
    hang seeds met in a level's range (``HANG_SEEDS``) and the ``extra`` ``(name, seed)`` pairs are played by
    jaxsoc only: their records have ``ref=None`` and ``ref_outcome=HANG``. Returns one record per episode."""
    episodes = []
    for name, count in seeds_per_level.items():
        start = 10 * PAPER_LEVELS.index(name) if first_seed is None else first_seed
        seeds = level_seeds(name, count, start)
        for seed in range(start, seeds[-1] + 1):
            env = make_level(name, seed)
            state, params = from_minigrid(env)
            if seed in seeds:
                actions, outcome = reference_episode(env, shape[1])
            else:  # a hang seed inside the range: never given to the reference
                actions, outcome = None, HANG
            episodes.append(dict(name=name, seed=seed, state=state, params=params, ref=actions, ref_outcome=outcome))
    for name, seed in extra:
        assert seed in HANG_SEEDS.get(name, ()), f"{name} seed {seed} is not a known hang seed"
        state, params = from_minigrid(make_level(name, seed))
        episodes.append(dict(name=name, seed=seed, state=state, params=params, ref=None, ref_outcome=HANG))
    # the levels of a shape differ only in params.max_steps, which stepping does not read (state.max_steps)
    result = rollout([e["state"] for e in episodes], episodes[0]["params"], shape)
    for k, episode in enumerate(episodes):
        length = int(result.length[k])
        episode.update(
            actions=[int(a) for a in result.actions[k, :length]],
            outcome=jaxsoc_outcome(bool(result.success[k]), bool(result.failed[k]), bool(result.ended[k])),
            length=length,
            failed=bool(result.failed[k]),
            success=bool(result.success[k]),
            ended=bool(result.ended[k]),
        )
    return episodes


@pytest.fixture(scope="module")
def small_episodes():
    """4 seeds of each one-room level (24 episodes)."""
    return _agreement_run(dict.fromkeys(ONE_ROOM, 4), SMALL)


@pytest.fixture(scope="module")
def big_episodes():
    """2 seeds of each 3x3-room level, 3 of the four hardest (30 episodes), and two reference hang seeds played
    by jaxsoc only: GoToImpUnlock 171 (inside its seed range 170-173) and Unlock 63 (extra)."""
    seeds = dict.fromkeys(MULTI_ROOM, 2) | dict.fromkeys(("PutNext", "SynthSeq", "GoToImpUnlock", "BossLevel"), 3)
    return _agreement_run(seeds, BIG, extra=[("Unlock", 63)])


def first_difference(e: dict) -> str:
    """Returns where an episode's actions or outcome first differ from the reference's: the step and both
    actions (or that one of them had ended), and both outcomes."""
    ref, ours = e["ref"], e["actions"]
    step = next((t for t, (a, b) in enumerate(zip(ref, ours)) if a != b), min(len(ref), len(ours)))
    theirs = f"action {ref[step]}" if step < len(ref) else "ended"
    mine = f"action {ours[step]}" if step < len(ours) else "ended"
    return (
        f"{e['name']} seed {e['seed']} step {step}: reference {theirs}, jaxsoc {mine} "
        f"(outcome: reference {e['ref_outcome']}, jaxsoc {e['outcome']})"
    )


def check_agreement(episodes: list[dict], hangs: set, actions: int | None = None, reference_failures: int = 0):
    """Checks that jaxsoc's bot took exactly the reference's actions, with the same outcome, on every episode
    the reference played, and accounts for the others. The reference is not run on its known hang seeds: they
    must be exactly ``hangs`` (``{(level, seed)}``), and jaxsoc's bot must give up on them. ``reference_failures``
    is the number of episodes in which the reference raised (its documented assertion errors): those count as
    compared, jaxsoc's bot must give up at the same step. ``actions``: the number of reference actions compared,
    when given. Failures name every differing episode (level, seed and the first differing step)."""
    played = {(e["name"], e["seed"]) for e in episodes if e["ref_outcome"] == HANG}
    assert played == hangs, f"reference hang seeds played by jaxsoc only: {sorted(played)}, expected {sorted(hangs)}"
    for e in episodes:
        if e["ref_outcome"] == HANG:
            assert e["failed"] and not e["success"], f"{e['name']} seed {e['seed']}: jaxsoc's bot {e['outcome']}"
    compared = [e for e in episodes if e["ref_outcome"] != HANG]
    raised = [f"{e['name']} seed {e['seed']}" for e in compared if e["ref_outcome"] == "failed"]
    differing = [first_difference(e) for e in compared if e["actions"] != e["ref"] or e["outcome"] != e["ref_outcome"]]
    total = sum(len(e["ref"]) for e in compared)
    print(
        f"\nbot agreement on {len(compared)} imported episodes of {len({e['name'] for e in compared})} levels "
        f"({total} reference actions, {len(raised)} episodes in which the reference raised, {len(played)} hang "
        f"seeds played by jaxsoc only): {len(compared) - len(differing)} identical episodes (actions and outcome)"
    )
    assert not differing, f"{len(differing)} of {len(compared)} episodes differ:\n" + "\n".join(differing)
    assert len(raised) == reference_failures, f"the reference raised on {raised}"
    if actions is not None:
        assert total == actions
    return compared


def test_bot_takes_the_reference_actions_on_imported_levels(small_episodes, big_episodes):
    # docs/babyai.md's figure: 2,125 of 2,125 actions
    hangs = {("GoToImpUnlock", 171), ("Unlock", 63)}
    compared = check_agreement(small_episodes + big_episodes, hangs, actions=2125)
    assert {e["name"] for e in compared} == set(PAPER_LEVELS) and len(compared) == 54
    assert all(e["ref_outcome"] == "success" for e in compared)


@pytest.mark.slow
@pytest.mark.parametrize("levels", [ONE_ROOM, MULTI_ROOM], ids=["one-room", "multi-room"])
def test_bot_takes_the_reference_actions_on_more_seeds(levels):
    """Seeds 0-14 of every level (15 per level, 285 episodes; GoToImpUnlock's hang seeds 6 and 14 are played by
    jaxsoc only, so its range goes on to 16): docs/babyai.md's 14,927 of 14,927 actions (616 + 14,311). Minutes on
    2 CPU cores."""
    one_room = levels == ONE_ROOM
    shape = (128, 64) if one_room else (64, 320)
    hangs = set() if one_room else {("GoToImpUnlock", 6), ("GoToImpUnlock", 14)}
    episodes = _agreement_run(dict.fromkeys(levels, 15), shape, first_seed=0)
    check_agreement(episodes, hangs, actions=616 if one_room else 14_311)


def test_bot_gives_up_on_unsolvable_levels_instead_of_hanging(big_episodes):
    # minigrid's bot loops forever on these (its key is locked inside its own room)
    hang = [e for e in big_episodes if e["ref_outcome"] == HANG]
    assert {(e["name"], e["seed"]) for e in hang} == {("GoToImpUnlock", 171), ("Unlock", 63)}
    for e in hang:
        assert e["failed"] and not e["success"], f"{e['name']} seed {e['seed']}: {e['outcome']}"
        # it gives up once it has seen every cell it can reach and found no way on (160 steps on Unlock 63)
        assert e["length"] < int(e["state"].max_steps), f"{e['name']} seed {e['seed']}: {e['length']} steps"
        print(f"\n{e['name']} seed {e['seed']}: jaxsoc's bot gave up after {e['length']} steps")
    # after giving up the bot keeps answering done and stays failed
    e = hang[0]
    played = play_unbatched(e["params"], e["state"], BIG[1])
    assert played["failed"] and played["actions"] == e["actions"]
    bot, state, obs = played["bot"], played["state"], played["obs"]
    for taken in (-1, int(C.LEFT), -1):
        action, bot = _act(e["params"], bot, state, obs, np.int32(taken))
        assert int(action) == DONE and bool(bot.failed)


def test_batched_rollout_equals_unbatched_steps(small_episodes, big_episodes):
    # (level, which of its seeds): a pickup and drop, a pickup, a blocker moved away, 189 steps with 8 toggles
    picks = [("PutNextLocal", 0), ("PickupLoc", 1), ("UnblockPickup", 0), ("PutNext", 0)]
    for name, which in picks:
        e = [e for e in small_episodes + big_episodes if e["name"] == name][which]
        played = play_unbatched(e["params"], e["state"], 400)
        where = f"{e['name']} seed {e['seed']}"
        assert played["actions"] == e["actions"], where
        for field in ("success", "failed", "ended"):
            assert played[field] == e[field], f"{where}: {field}"


# ---------------------------------------------------------------------------------------------------------
# advising mode

# the learner's deviations: mostly moves, sometimes an interaction; a toggle may open a box (the reference then
# raises DisappearedBoxError and jaxsoc gives up)
DEVIATIONS = np.array([C.LEFT, C.RIGHT, C.FORWARD, C.PICKUP, C.DROP, C.TOGGLE], np.int32)
MOVES_MOSTLY = (0.25, 0.25, 0.25, 0.1, 0.1, 0.05)
INTERACTIONS = (0.15, 0.15, 0.15, 0.2, 0.2, 0.15)
ADVISE_STEPS = 150
# (level, seed, deviation probability) with interaction-heavy learners that reach the reference's stops: a box
# opened (BossLevel 103, PutNextLocal 150) and an unreachable seen target (GoToImpUnlock 155)
INTERACTIVE_EPISODES = [("BossLevel", 103, 0.5), ("PutNextLocal", 150, 0.8), ("GoToImpUnlock", 155, 0.8)]


def advise_episode(name: str, seed: int, deviate: float, probabilities=MOVES_MOSTLY) -> dict:
    """Drives both bots on one imported level; the learner follows the suggestion, except with probability
    ``deviate`` when it takes one of ``DEVIATIONS`` (``probabilities``). Returns the comparison: ``steps``
    compared, ``deviations``, ``stop`` (why it ended), ``mismatch`` (the first difference, or ``None``) and
    ``jaxsoc_failed`` (jaxsoc's bot had given up when the comparison stopped)."""
    env = make_level(name, seed)
    state, params = from_minigrid(env)
    ref = reference_bot(env)
    rng = np.random.default_rng(seed)
    bot, obs = _init(params, state), _observe(state, params)
    taken, deviations = -1, 0
    result = dict(name=name, seed=seed, mismatch=None, stop="step limit", jaxsoc_failed=False)
    for t in range(ADVISE_STEPS):
        result["steps"], result["deviations"] = t, deviations
        ours, bot = _act(params, bot, state, obs, np.int32(taken))
        ours, failed = int(ours), bool(bot.failed)
        result["jaxsoc_failed"] = failed
        theirs, error = replan(ref, None if taken < 0 else taken)
        if error is not None:
            result["stop"] = type(error).__name__ + (" in _find_obj_pos" if raised_in(error, "_find_obj_pos") else "")
            # every reference assertion but one is a jaxsoc failure; the exception: the reference asserts that
            # every seen object of a description is reachable, jaxsoc skips unreachable ones and goes on
            if not raised_in(error, "_find_obj_pos") and not (failed and ours == DONE):
                result["mismatch"] = f"step {t}: the reference raised {error!r}, jaxsoc answered {ours}"
            return result
        if ours != theirs or failed:
            result["mismatch"] = f"step {t}: jaxsoc {ours} (failed={failed}), reference {theirs}"
            return result
        action = int(rng.choice(DEVIATIONS, p=probabilities)) if rng.random() < deviate else theirs
        deviations += action != theirs
        taken = -1 if action == theirs else action
        _, _, terminated, truncated, _ = env.step(action)
        obs, state, _, our_terminated, _, _ = _step(KEY, state, np.int32(action), params)
        assert bool(our_terminated) == terminated, f"{name} seed {seed} step {t}: the environments diverged"
        if terminated or truncated:
            result["steps"], result["stop"] = t + 1, "terminated" if terminated else "truncated"
            return result
    return result


def test_advising_mode_suggestions_match_the_reference():
    results = []
    for name in PAPER_LEVELS:
        for seed in level_seeds(name, 2, 10 * PAPER_LEVELS.index(name) + 5):
            results.append(advise_episode(name, seed, deviate=0.25))
    for name, seed, deviate in INTERACTIVE_EPISODES:
        results.append(advise_episode(name, seed, deviate, INTERACTIONS))
    steps, deviations = sum(r["steps"] for r in results), sum(r["deviations"] for r in results)
    stops = {}
    for r in results:
        stops[r["stop"]] = stops.get(r["stop"], 0) + 1
    print(f"\nadvising mode: {len(results)} episodes, {steps} identical suggestions, {deviations} deviations; {stops}")
    mismatches = [f"{r['name']} seed {r['seed']}: {r['mismatch']}" for r in results if r["mismatch"]]
    assert not mismatches, "\n".join(mismatches)
    assert steps > 1000 and deviations > 200
    # the interaction-heavy episodes reach the reference's stops; jaxsoc gives up when a box is opened
    interactive = {(r["name"], r["seed"]): r for r in results[-len(INTERACTIVE_EPISODES) :]}
    for key in [("BossLevel", 103), ("PutNextLocal", 150)]:
        assert interactive[key]["stop"] == "DisappearedBoxError" and interactive[key]["jaxsoc_failed"], key
    assert interactive[("GoToImpUnlock", 155)]["stop"] == "AssertionError in _find_obj_pos"


# ---------------------------------------------------------------------------------------------------------
# a known divergence: minigrid's object bookkeeping after a drop


def _after_drop_cases():
    from minigrid.core.world_object import Ball, Box, Key
    from minigrid.envs.babyai.core.verifier import AfterInstr, BeforeInstr, ObjDesc, PickupInstr, PutNextInstr

    # "put the red ball next to the blue key, then pick up a ball": after the drop the red ball (in front, at
    # (3, 4)) and the grey ball (beside the agent, at (4, 3)) tie at distance 1
    tie = (
        {(1, 4): Box("yellow"), (1, 5): Ball("green"), (3, 3): Key("blue"), (4, 3): Ball("grey"), (5, 5): Ball("red")},
        (4, 5, 0),
        BeforeInstr(PutNextInstr(ObjDesc("ball", "red"), ObjDesc("key", "blue")), PickupInstr(ObjDesc("ball"))),
    )
    # "put a ball next to a ball after you put the green ball next to the key": the bot picks the green ball up
    # again; minigrid skips the wrong index as "carried" and heads for the green ball's stale cell
    carried = (
        {(2, 5): Ball("red"), (2, 6): Box("yellow"), (4, 3): Ball("green"), (4, 5): Ball("grey"), (6, 5): Key("blue")},
        (6, 3, 3),
        AfterInstr(
            PutNextInstr(ObjDesc("ball"), ObjDesc("ball")), PutNextInstr(ObjDesc("ball", "green"), ObjDesc("key"))
        ),
    )
    return {"distance tie": tie, "carried object": carried}


@pytest.mark.parametrize("case", ["distance tie", "carried object"])
def test_object_order_after_a_drop_follows_the_reference(case):
    """After a ``drop`` minigrid rebuilds every description's ``obj_poss`` in the grid's x-major order but keeps
    ``obj_set`` in reset order, so ``BabyAIBot._find_obj_pos`` pairs objects with other objects' positions: it
    breaks distance ties by the new scan order, and skips the position at the carried object's reset index
    (in the second case the reference then drops the ball and answers ``done`` with the mission unfinished).
    jaxsoc reproduces the pairing, so it takes the same actions, wrong turns included."""
    objects, agent, instruction = _after_drop_cases()[case]
    env = scripted_room(objects, agent, instruction)
    state, params = from_minigrid(env)
    reference, outcome = reference_episode(env, 40)
    ours = play_unbatched(params, state, 40)
    assert C.DROP in ours["actions"][:-1]  # the divergence comes after a drop
    assert ours["actions"] == reference, f"reference ({outcome}): {reference}"
    assert jaxsoc_outcome(ours["success"], ours["failed"], ours["ended"]) == outcome


# ---------------------------------------------------------------------------------------------------------
# jaxsoc-generated levels


@pytest.mark.parametrize(("name", "shape"), [("PutNextLocal", SMALL), ("BossLevel", BIG)])
def test_bot_solves_generated_levels(name, shape):
    env, params = jaxsoc.make(f"BabyAI-{name}-v0")
    batch, steps = shape
    states = _generate(env, params, jax.random.key(7), batch)
    result = jax.device_get(bot_episodes(STEPPER, params, states, steps))
    length, limit = np.asarray(result.length), np.asarray(states.max_steps)
    print(f"\n{name}: {batch} generated levels, mean length {length.mean():.1f}, longest {length.max()}")
    assert not result.failed.any(), f"{name}: the bot gave up on worlds {np.flatnonzero(result.failed)}"
    assert result.ended.all(), f"{name}: unfinished within {steps} steps: {np.flatnonzero(~result.ended)}"
    assert result.success.all(), f"{name}: no success on worlds {np.flatnonzero(~result.success)}"
    assert np.all(length > 0) and np.all(length < limit)
    # after its episode ends a world only records done
    assert np.all(result.actions[np.arange(steps)[None] >= length[:, None]] == DONE)


def test_generated_rollouts_are_deterministic():
    env, params = jaxsoc.make("BabyAI-GoToLocal-v0")
    runs = []
    for key in (3, 3, 4):
        states = _generate(env, params, jax.random.key(key), SMALL[0])
        runs.append((states, bot_episodes(STEPPER, params, states, SMALL[1])))
    (states_a, a), (states_b, b), (states_c, c) = runs
    for x, y in zip(jax.tree_util.tree_leaves((states_a, a)), jax.tree_util.tree_leaves((states_b, b))):
        np.testing.assert_array_equal(x, y)
    # another key: other levels, so other episodes (a rollout that ignored its states would repeat itself)
    assert not np.array_equal(states_a.world.grid, states_c.world.grid)
    assert not np.array_equal(a.actions, c.actions)
    assert bool(a.success.all()) and bool(c.success.all())


# ---------------------------------------------------------------------------------------------------------
# wrong input


def test_wrong_inputs_raise(small_episodes, big_episodes):
    # there is no explicit validation: these errors come from JAX's shape checks and from dict indexing
    state, small_params = small_episodes[0]["state"], small_episodes[0]["params"]
    big_state, big_params = big_episodes[0]["state"], big_episodes[0]["params"]
    obs, big_obs = _observe(state, small_params), _observe(big_state, big_params)
    bot = B.bot_init(small_params, state)
    with pytest.raises((TypeError, ValueError)):  # a bot of an 8x8 grid on a 22x22 state
        B.bot_act(big_params, bot, big_state, big_obs)
    with pytest.raises((TypeError, ValueError)):  # a batch of states given to the unbatched bot_init
        B.bot_init(small_params, stack([state, state]))
    with pytest.raises(KeyError):  # an observation without its image
        B.bot_act(small_params, bot, state, {"direction": obs["direction"]})
    with pytest.raises(TypeError):  # the image instead of the observation dict
        B.bot_act(small_params, bot, state, obs["image"])


# ---------------------------------------------------------------------------------------------------------
# the search: a static number of rounds, the reference's visit order

from jaxsoc.envs.babyai import bot_search as S  # noqa: E402


def reference_visits(expands: np.ndarray, starts: list[tuple[int, int]]) -> dict:
    """The reference bot's FIFO BFS over ``expands`` (``bool[H, W]``) from ``starts``, ``[(flat cell,
    heading)]`` in queue order: a cell is visited by its first entry; a visited cell that expands pushes its
    four neighbours in the order (straight, swap, -swap, back) of its heading. Returns ``{cell: (order, depth,
    heading, first, source)}`` (``first`` -1 for a start cell)."""
    height, width = expands.shape
    queue = [(cell, heading, -1, cell, 0) for cell, heading in starts]
    visits = {}
    for cell, heading, first, source, depth in queue:  # the list grows while it is read
        if cell in visits:
            continue
        visits[cell] = (len(visits), depth, heading, first, source)
        y, x = divmod(cell, width)
        if not expands[y, x]:
            continue
        dx, dy = S.DIR_VECS[heading]
        for mx, my in ((dx, dy), (dy, dx), (-dy, -dx), (-dx, -dy)):
            if 0 <= x + mx < width and 0 <= y + my < height:
                move = next(k for k, v in enumerate(S.DIR_VECS.tolist()) if v == [mx, my])
                neighbour = (y + my) * width + x + mx
                queue.append((neighbour, move, neighbour if depth == 0 else first, source, depth + 1))
    return visits


@pytest.mark.parametrize("shape", [(8, 8), (22, 22), (5, 17)])
def test_visit_order_is_the_reference_bfs_order(shape):
    # random masks (any density, mazes of one-cell corridors) and one to five start cells in a random order
    height, width = shape
    rng = np.random.default_rng(height * width)
    count = 64
    expands = rng.random((count, height, width)) < rng.uniform(0.3, 1.0, (count, 1, 1))
    expands[::3] = rng.random((count // 3 + 1, height, width)) < 0.15  # sparse: short runs
    expands[1::3, ::2] = True  # corridors joined at random places: long paths
    order = np.full((count, height, width), S.UNVISITED, np.int32)
    heading = rng.integers(0, 4, (count, height, width)).astype(np.int32)
    starts = []
    for n in range(count):
        cells = rng.choice(height * width, rng.integers(1, 6), replace=False)
        order[n].flat[cells] = np.arange(len(cells))
        starts.append([(int(c), int(heading[n].flat[c])) for c in cells])
    cells = np.broadcast_to(np.arange(height * width, dtype=np.int32).reshape(height, width), order.shape)
    start = S.Sweep(order, np.zeros_like(order), heading, np.full_like(order, -1), np.array(cells))
    sweep = jax.device_get(jax.jit(jax.vmap(S.visit_order))(expands, start))
    for n in range(count):
        visits = reference_visits(expands[n], starts[n])
        for field, k in (("order", 0), ("depth", 1), ("heading", 2), ("first", 3), ("source", 4)):
            got = getattr(sweep, field)[n].ravel()
            expected = [visits[c][k] for c in sorted(visits)]
            np.testing.assert_array_equal(got[sorted(visits)], expected, err_msg=f"{shape} case {n}: {field}")
        unvisited = np.setdiff1d(np.arange(height * width), list(visits))
        assert np.all(sweep.order[n].ravel()[unvisited] == S.UNVISITED)
    # the cases need their rounds: with a quarter of them, some search stops early
    short = jax.jit(jax.vmap(lambda e, s: S.visit_order(e, s, height * width // 4)))(expands, start)
    assert np.any(np.asarray(short.order) != sweep.order)
