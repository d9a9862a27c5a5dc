"""Test helpers for ObstructedMaze and LockedRoom: goal-directed play in minigrid 3.2.0, a replay that also
returns the mission tokens, host-side level features and a solvability check on jaxsoc grids."""

from __future__ import annotations

import jax
import numpy as np
from minigrid_reference import _next_to_door, _path_to_face

from jaxsoc.envs.gridworld import constants as C

LEFT, RIGHT, FORWARD, PICKUP, DROP, TOGGLE, DONE = range(7)


# ---------------------------------------------------------------------------------------------------------
# goal-directed play (in minigrid)


def _faced(u) -> dict[tuple[int, int], object]:
    """Returns ``{(x, y): object}`` of every cell the agent can come to face (BFS over its poses)."""
    seen: dict[tuple[int, int], object] = {}
    _path_to_face(u, lambda x, y, o: seen.setdefault((x, y), o) is None and False)
    return seen


def _macro(u, wanted, verb: int) -> list[int] | None:
    path = _path_to_face(u, wanted)
    return None if path is None else [*path, verb]


def _drop_macro(u, step: int = 5) -> list[int] | None:
    """Walks to drop what the agent holds on an empty cell away from doors: a room corner if one can be
    reached (an object there blocks no path), else a cell along a room wall, else any cell."""

    def edge(v: int) -> bool:
        return v % step in (1, step - 1)

    tiers = (lambda x, y: edge(x) and edge(y), lambda x, y: edge(x) or edge(y), lambda x, y: True)
    for tier in tiers:
        actions = _macro(u, lambda x, y, o, t=tier: o is None and t(x, y) and not _next_to_door(u, x, y), DROP)
        if actions is not None:
            return actions
    return None


def _is(o, kind: str, color: str | None = None) -> bool:
    return o is not None and o.type == kind and (color is None or o.color == color)


def _blocks_door(u, x: int, y: int) -> bool:
    return _next_to_door(u, x, y)


def _next_obstructed_move(u) -> list[int] | None:
    """One macro (a walk and an action) of a greedy ObstructedMaze player, or None when it is stuck."""
    held = u.carrying
    if held is not None and held.type == "ball":
        return _drop_macro(u)
    faced = _faced(u).items()
    if any(_is(o, "ball", "blue") for _, o in faced):
        return _drop_macro(u) if held is not None else _macro(u, lambda x, y, o: _is(o, "ball", "blue"), PICKUP)
    if any(_is(o, "door") and not o.is_open and not o.is_locked for _, o in faced):
        return _macro(u, lambda x, y, o: _is(o, "door") and not o.is_open and not o.is_locked, TOGGLE)
    if held is not None and any(_is(o, "door", held.color) and o.is_locked for _, o in faced):
        return _macro(u, lambda x, y, o: _is(o, "door", held.color) and o.is_locked, TOGGLE)
    if any(_is(o, "box") for _, o in faced):
        return _macro(u, lambda x, y, o: _is(o, "box"), TOGGLE)
    if any(_is(o, "ball") and _blocks_door(u, *xy) for xy, o in faced):
        return (
            _drop_macro(u)
            if held is not None
            else _macro(u, lambda x, y, o: _is(o, "ball") and _blocks_door(u, x, y), PICKUP)
        )
    wanted = {o.color for _, o in faced if _is(o, "door") and o.is_locked}
    if held is not None:
        wanted.discard(held.color)
    if any(_is(o, "key") and o.color in wanted for _, o in faced):
        return (
            _drop_macro(u)
            if held is not None
            else _macro(u, lambda x, y, o: _is(o, "key") and o.color in wanted, PICKUP)
        )
    if held is None and any(_is(o, "key") for _, o in faced):  # a key in the way: carry it along
        return _macro(u, lambda x, y, o: _is(o, "key"), PICKUP)
    return None


def _play(env, next_move, max_actions: int) -> np.ndarray:
    u = env.unwrapped
    taken: list[int] = []
    for _ in range(200):
        actions = next_move(u)
        if actions is None:
            break
        for action in actions:
            taken.append(action)
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated or len(taken) >= max_actions:
                return np.asarray(taken, np.int32)
    return np.asarray(taken, np.int32)


def solve_obstructed_maze(env, max_actions: int = 600) -> np.ndarray:
    """Plays a reset minigrid ObstructedMaze greedily and returns the actions taken, for replay: it drops any
    ball it holds, picks up the blue ball when it can reach it, else opens closed doors, unlocks a reachable
    locked door with the key it holds, opens boxes, clears balls from in front of doors and fetches keys of
    reachable locked doors (dropping what it holds first), and at last picks up a key in its way. It can
    fail (minigrid's v0 can cover a key)."""
    return _play(env, _next_obstructed_move, max_actions)


def solve_locked_room(env, max_actions: int = 190) -> np.ndarray:
    """Plays a reset minigrid LockedRoom by its mission: open the key room's door, take the key, unlock
    the locked door, walk onto the goal. Returns the actions taken."""
    words = env.unwrapped.mission.split()
    locked, key_room = words[2], words[6]
    plan = [
        (lambda x, y, o: _is(o, "door", key_room) and not o.is_open, TOGGLE),
        (lambda x, y, o: _is(o, "key"), PICKUP),
        (lambda x, y, o: _is(o, "door", locked) and not o.is_open, TOGGLE),
        (lambda x, y, o: _is(o, "goal"), FORWARD),
    ]
    steps = iter(plan)
    return _play(env, lambda u: next((_macro(u, *step) for step in steps), None), max_actions)


# ---------------------------------------------------------------------------------------------------------
# replay in jaxsoc


def mission_replayer(env):
    """Returns ``replay(states, actions, params)``: like ``minigrid_reference.scan_replayer`` (one jitted,
    vmapped ``lax.scan`` of ``step_env``), with the mission tokens of every step appended to its outputs."""

    def replay(state, actions, params):
        def body(state, action):
            obs, state, reward, terminated, truncated, _ = env.step_env(jax.random.key(0), state, action, params)
            out = (obs["image"], obs["direction"], reward, terminated, truncated, state.agent_pos)
            return state, out + (state.carrying[:3], state.grid[..., :3], env.mission_tokens(state, params))

        return jax.lax.scan(body, state, actions)[1]

    return jax.jit(jax.vmap(replay))


# ---------------------------------------------------------------------------------------------------------
# level features and solvability (jaxsoc grids ``uint8[H, W, C]``, host side)


def _wall_of(x: int, y: int, step: int) -> str:
    """Names the inner wall a door cell lies on (room grid of ``step = room_size - 1``)."""
    return f"v{x // step},{y // step}" if x % step == 0 else f"h{x // step},{y // step}"


def maze_features(grid: np.ndarray, pos, direction: int, step: int = 5) -> dict[str, list]:
    """Returns ``{feature: [observations]}`` of one ObstructedMaze level: the agent pose, the blue ball's
    cell, every door's cell and state and colour (by wall), the number of distinct door colours, every
    blocking (green) ball's cell, every key or box (cell, kind, key colour by room), the number of keys and
    whether the level is solvable (``maze_solvable``)."""
    kind, color, state, contents = (grid[..., c].astype(int) for c in (C.TYPE, C.COLOR, C.STATE, C.CONTENTS))
    out: dict[str, list] = {
        "agent_x": [int(pos[0])],
        "agent_y": [int(pos[1])],
        "agent_dir": [int(direction)],
    }
    ys, xs = np.nonzero((kind == C.BALL) & (color == C.BLUE))
    out["target"] = [f"{x},{y}" for x, y in zip(xs, ys)]
    ys, xs = np.nonzero(kind == C.DOOR)
    out["door"] = [f"{x},{y},{state[y, x]}" for x, y in zip(xs, ys)]
    out["door_color"] = [f"{_wall_of(x, y, step)}:{color[y, x]}" for x, y in zip(xs, ys)]
    out["door_colors"] = [len(set(color[ys, xs].tolist()))]
    ys, xs = np.nonzero((kind == C.BALL) & (color == C.GREEN))
    out["blocker"] = [f"{x},{y}" for x, y in zip(xs, ys)]
    ys, xs = np.nonzero((kind == C.KEY) | (kind == C.BOX))
    key_colors = np.where(kind == C.BOX, contents & 7, color)
    out["key"] = [f"{x},{y},{kind[y, x]}" for x, y in zip(xs, ys)]
    out["key_color"] = [f"{x // step},{y // step}:{key_colors[y, x]}" for x, y in zip(xs, ys)]
    out["num_keys"] = [len(xs)]
    out["solvable"] = [maze_solvable(grid, pos)]
    return out


def maze_solvable(grid: np.ndarray, pos) -> bool:
    """True when the blue ball can be reached from ``pos``: a flood fill through every cell but walls and
    the locked doors whose key (loose or in a box) has not been reached yet, repeated until no new key is
    found. Keys, boxes and balls count as passable (the agent can move them out of its way)."""
    kind, color, contents = (grid[..., c].astype(int) for c in (C.TYPE, C.COLOR, C.CONTENTS))
    key_color = np.where(kind == C.KEY, color, np.where((kind == C.BOX) & (contents >> 3 == C.KEY), contents & 7, -1))
    locked = (kind == C.DOOR) & (grid[..., C.STATE] == C.LOCKED)
    have: set[int] = set()
    while True:
        passable = (kind != C.WALL) & ~(locked & ~np.isin(color, list(have)))
        reach = np.zeros_like(passable)
        stack = [(int(pos[1]), int(pos[0]))]
        while stack:
            y, x = stack.pop()
            if reach[y, x] or not passable[y, x]:
                continue
            reach[y, x] = True
            stack += [(y + 1, x), (y - 1, x), (y, x + 1), (y, x - 1)]
        found = set(key_color[reach & (key_color >= 0)].tolist())
        if found <= have:
            return bool(np.any(reach & (kind == C.BALL) & (color == C.BLUE)))
        have |= found
