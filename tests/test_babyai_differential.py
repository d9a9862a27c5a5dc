"""Differential tests: BabyAI levels against minigrid 3.2.0, step for step.

Every episode starts from a reset minigrid level imported with ``babyai.compat.from_minigrid`` (grid, object
identities, instruction tree and the objects each description matched). The same actions are replayed in
minigrid and in one jitted, vmapped ``lax.scan`` of ``step_env``; observation, direction, reward (1e-6),
terminated, truncated, agent position, carried object and grid must agree at every step. Actions come from
random play (uniform and interaction-biased, some episodes with a short ``max_steps`` so truncation is
tested) and from minigrid's expert bot, whose goal-directed episodes reach success through every verifier
path. Corner cases of the verifier get hand-built instruction trees driven by the bot.
"""

from __future__ import annotations

import functools
import signal

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from babyai_reference import PAPER_LEVELS, make_level, scripted_room
from minigrid.envs.babyai.core.verifier import (
    AfterInstr,
    AndInstr,
    BeforeInstr,
    GoToInstr,
    ObjDesc,
    OpenInstr,
    PickupInstr,
    PutNextInstr,
)
from minigrid.utils.baby_ai_bot import BabyAIBot
from minigrid_reference import INTERACT, UNIFORM, assert_episode_matches, record_episode, scan_replayer
from tiers import ci_subset

import jaxsoc
from jaxsoc.envs.babyai import language
from jaxsoc.envs.babyai.compat import from_minigrid

FIELDS = ("image", "direction", "reward", "terminated", "truncated", "pos", "carrying", "grid")
RANDOM_STEPS = 160  # random actions per episode (3x3 levels allow 576+ steps; truncation comes from short limits)
BOT_STEPS = 400


class BotHang(Exception):
    pass


def _alarm(*_):
    raise BotHang("minigrid's bot did not answer within 5 s")


def bot_actions(env, limit: int = BOT_STEPS, strict: bool = False) -> np.ndarray:
    """Runs minigrid's bot on a reset env (which it steps) and returns its actions, ``int32[n]``. The bot
    can loop forever inside ``replan`` (reference §0.3), so each call has a watchdog. By default a hang or one
    of the bot's documented assertion errors ends the episode with the steps so far; ``strict`` raises it."""
    bot = BabyAIBot(env.unwrapped)
    actions = []
    previous = signal.signal(signal.SIGALRM, _alarm)
    try:
        for _ in range(limit):
            signal.alarm(5)
            try:
                action = int(bot.replan())
            except Exception:
                if strict:
                    raise
                break
            finally:
                signal.alarm(0)
            actions.append(action)
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                break
    finally:
        signal.signal(signal.SIGALRM, previous)
    return np.asarray(actions, np.int32)


@functools.cache
def _replayer(name: str):
    return scan_replayer(jaxsoc.make(f"BabyAI-{name}-v0")[0], world_of=lambda state: state.world, params_axis=None)


def _stack(trees):
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *trees)


def compare(name: str, episodes: list) -> int:
    """Replays ``episodes`` (``(state, params, actions, record)``) in jaxsoc and fails at the first step
    that differs from the minigrid record. Returns the number of compared steps."""
    length = max(len(actions) for _, _, actions, _ in episodes)
    length = int(2 ** np.ceil(np.log2(max(length, 1))))  # few distinct scan lengths, few compiles
    batch = list(episodes)
    while len(batch) % 4:
        batch.append(batch[-1])
    states = _stack([state for state, *_ in batch])
    actions = np.full((len(batch), length), 6, np.int32)
    for k, (_, _, acts, _) in enumerate(batch):
        actions[k, : len(acts)] = acts
    outs = _replayer(name)(states, jnp.asarray(actions), episodes[0][1])
    outs = [np.asarray(o) for o in outs]
    return sum(
        assert_episode_matches(f"{name} episode {k}", FIELDS, outs, k, rec, acts)
        for k, (_, _, acts, rec) in enumerate(episodes)
    )


def imported(name: str, seed: int, max_steps: int | None = None):
    """Returns ``(env, state, params)``: minigrid level ``name`` reset with ``seed`` and its import."""
    ref = make_level(name, seed)
    if max_steps is not None:
        ref.unwrapped.max_steps = max_steps
    state, params = from_minigrid(ref)
    return ref, state, params


SEEDS = {name: 6 for name in PAPER_LEVELS}


#: in CI: the generator modules, doors and keys (Unlock), the maze and the full grammar; -m slow runs the other 13
CI_LEVELS = ("GoToRedBallGrey", "PickupLoc", "PutNextLocal", "GoToObjMaze", "Unlock")
CI_LEVELS += ("BossLevel",)


@pytest.mark.parametrize("name", ci_subset(PAPER_LEVELS, CI_LEVELS))
def test_random_and_bot_episodes_match_minigrid(name):
    episodes, successes = [], 0
    for seed in range(SEEDS[name]):
        rng = np.random.default_rng(seed)
        short = int(rng.integers(10, 80)) if seed % 2 else None
        ref, state, params = imported(name, seed, short)
        assert language.decode(state.mission) == ref.unwrapped.mission
        acts = rng.choice(7, size=RANDOM_STEPS, p=INTERACT if seed % 3 else UNIFORM).astype(np.int32)
        episodes.append((state, params, acts, record_episode(ref, acts)))

        planner, _, _ = imported(name, seed)
        acts = bot_actions(planner)
        ref, state, params = imported(name, seed)
        rec = record_episode(ref, acts)
        successes += bool(rec["terminated"][-1] and rec["reward"][-1] > 0)
        episodes.append((state, params, acts, rec))
    assert compare(name, episodes) > 0
    assert successes >= SEEDS[name] - 1, f"{name}: the bot succeeded in only {successes} episodes"


@pytest.mark.parametrize("name", ["GoToLocal", "PutNextLocal", "SynthLoc", "BossLevel"])
def test_mission_text_and_tokens_match_minigrid(name):
    env = jaxsoc.make(f"BabyAI-{name}-v0")[0]
    for seed in range(20):
        ref, state, _ = imported(name, seed)
        mission = ref.unwrapped.mission
        assert env.mission_text(state) == mission
        np.testing.assert_array_equal(language.tokenize(mission), np.asarray(state.mission))


def _desc(obj, loc=None):
    return ObjDesc(obj.type, obj.color, loc)


def _objects(u, kinds=("key", "ball", "box")):
    return [
        u.grid.get(x, y)
        for x in range(u.grid.width)
        for y in range(u.grid.height)
        if u.grid.get(x, y) is not None and u.grid.get(x, y).type in kinds
    ]


PICKUP, DROP, TOGGLE = 3, 4, 5


def _ends_with(action: int):
    return lambda actions, env: actions[-1] == action


def _door_of(u, color: str, where) -> bool:
    """Whether a door of ``color`` is at one of the cells ``where``."""
    cells = [u.grid.get(x, y) for x, y in where if 0 <= x < u.grid.width and 0 <= y < u.grid.height]
    return any(c is not None and c.type == "door" and c.color == color for c in cells)


def _corner_cases(u):
    """Hand-built instruction trees for the verifier's corner cases (reference §8.5), on a reset level:
    ``{case: (instruction, event)}``. ``event(actions, env)`` tells whether the bot's successful episode did
    what the case is about (on the recording env after the episode). Levels without doors (GoToLocal) get
    door-free versions of the two door cases, under their own names."""
    objs = _objects(u)
    doors = _objects(u, ("door",))
    a, b, c = objs[0], objs[1], objs[2]
    cases = {
        # go to an object after picking it up: its position is stale, so the go to succeeds at the pickup itself
        "pickup then goto same": (BeforeInstr(PickupInstr(_desc(a)), GoToInstr(_desc(a))), _ends_with(PICKUP)),
        "goto after pickup": (AfterInstr(GoToInstr(_desc(b)), PickupInstr(_desc(b))), _ends_with(PICKUP)),
        # both objects picked up, one at a time
        "and of pickups": (
            AndInstr(PickupInstr(_desc(a)), PickupInstr(_desc(b))),
            lambda actions, env: np.sum(actions == PICKUP) >= 2 and DROP in actions,
        ),
        "after with put next": (AfterInstr(PutNextInstr(_desc(b), _desc(c)), PickupInstr(_desc(a))), _ends_with(DROP)),
        # the drop refreshes the positions: facing the object just put down completes the go to at once
        "put next then goto moved": (
            BeforeInstr(PutNextInstr(_desc(a), _desc(b)), GoToInstr(_desc(a))),
            _ends_with(DROP),
        ),
    }
    if doors:
        d = doors[0]

        def next_to_door(actions, env):  # the object put down (in front of the agent) touches a door of d's colour
            (x, y), u = env.unwrapped.front_pos, env.unwrapped
            return actions[-1] == DROP and _door_of(u, d.color, [(x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)])

        def opened_door(actions, env):  # a door of d's colour was toggled open
            doors = _objects(env.unwrapped, ("door",))
            return TOGGLE in actions and any(door.color == d.color and door.is_open for door in doors)

        cases["put next to a door"] = (PutNextInstr(_desc(a), _desc(d)), next_to_door)
        cases["seq of ands"] = (
            BeforeInstr(
                AndInstr(GoToInstr(_desc(c)), PickupInstr(_desc(a))), AndInstr(OpenInstr(_desc(d)), GoToInstr(_desc(b)))
            ),
            opened_door,
        )
    else:
        cases["put next to an object"] = (PutNextInstr(_desc(a), _desc(c)), _ends_with(DROP))
        cases["seq of goto and pickup"] = (
            BeforeInstr(GoToInstr(_desc(c)), PickupInstr(_desc(a))),
            lambda actions, env: PICKUP in actions,
        )
    return cases


DOOR_CASES = {"put next to a door", "seq of ands"}
NO_DOOR_CASES = {"put next to an object", "seq of goto and pickup"}
COMMON_CASES = {
    "pickup then goto same",
    "goto after pickup",
    "and of pickups",
    "after with put next",
    "put next then goto moved",
}


@pytest.mark.parametrize(
    ("name", "cases"),
    [("GoToLocal", NO_DOOR_CASES), ("GoTo", DOOR_CASES), ("BossLevel", DOOR_CASES)],
    ids=["GoToLocal", "GoTo", "BossLevel"],
)
def test_verifier_corner_cases_match_minigrid(name, cases):
    """Every case on 3 seeds: the bot (which must not raise or hang) completes the instruction, the case's event
    happens in minigrid, and jaxsoc's replay matches minigrid at every step."""
    episodes, exercised, problems = [], set(), []
    for seed in range(3):
        for case in _corner_cases(make_level(name, seed).unwrapped):
            envs, events = [], []
            for _ in range(2):  # one env for the bot to plan on, one to record
                ref = make_level(name, seed)
                u = ref.unwrapped
                u.instrs, event = _corner_cases(u)[case]
                u.instrs.reset_verifier(u)
                u.max_steps = 600
                envs.append(ref)
                events.append(event)
            acts = bot_actions(envs[0], strict=True)
            state, params = from_minigrid(envs[1])
            rec = record_episode(envs[1], acts)
            where = f"{name} seed {seed} {case!r}"
            if not len(acts):
                problems.append(f"{where}: no step")
                continue
            if not (rec["terminated"][-1] and rec["reward"][-1] > 0):
                problems.append(f"{where}: no success in {rec['steps']} steps")
            elif not events[1](acts, envs[1]):
                problems.append(f"{where}: the case's event did not happen (actions {acts.tolist()})")
            else:
                exercised.add(case)
            episodes.append((state, params, acts, rec))
    assert not problems, "\n".join(problems)
    assert exercised == COMMON_CASES | cases
    assert compare(name, episodes) > 0


def scripted(objects, agent, instruction, actions):
    """Returns one episode ``(state, params, actions, record)`` on an emptied GoToLocal room: ``objects``
    ``{(x, y): WorldObj}``, ``agent`` ``(x, y, dir)``, the instruction tree built from the placed objects."""
    ref = scripted_room(objects, agent, instruction)
    state, params = from_minigrid(ref)
    actions = np.asarray(actions, np.int32)
    return state, params, actions, record_episode(ref, actions)


def test_scripted_verifier_cases_match_minigrid():
    from minigrid.core.world_object import Ball, Key

    left, right, pickup, drop = 0, 1, 3, 4
    ball, key = Ball("red"), Key("blue")
    # "go to the key, then pick up the ball" with the ball picked up first: the pickup clause is first
    # evaluated while the ball is carried, so picking up again does not count; drop and pick up does
    carried_early = scripted(
        {(3, 3): ball, (2, 2): key},
        (2, 3, 0),
        BeforeInstr(GoToInstr(ObjDesc("key")), PickupInstr(ObjDesc("ball"))),
        [pickup, left, pickup, drop, right, drop, pickup],
    )
    assert carried_early[3]["reward"][-1] > 0 and carried_early[3]["steps"] == 7
    assert compare("GoToLocal", [carried_early]) > 0
