"""Helpers that drive the reference ``minigrid`` 3.2.0 package in tests (test-only dependency)."""

from __future__ import annotations

import gymnasium as gym
import minigrid  # noqa: F401  (registers the MiniGrid ids)
import numpy as np
import pytest
from minigrid.core.grid import Grid
from minigrid.core.mission import MissionSpace
from minigrid.core.world_object import Ball, Box, Door, Floor, Goal, Key, Lava, Wall
from minigrid.minigrid_env import MiniGridEnv

# Action mixes: uniform, and one biased towards object interaction near the agent.
UNIFORM = np.full(7, 1 / 7)
INTERACT = np.array([0.12, 0.12, 0.22, 0.18, 0.16, 0.18, 0.02])


class Playground(MiniGridEnv):
    """A 9x9 room holding every object kind and door state, for corner cases: locked doors with the right
    and a wrong key nearby, closed and open doors in an inner wall, a box holding a key, an empty box,
    balls, floor tiles and a goal. The agent starts anywhere."""

    def __init__(self, seed_layout: int = 0, **kwargs):
        self.seed_layout = seed_layout
        super().__init__(
            mission_space=MissionSpace(mission_func=lambda: "play"),
            width=9,
            height=9,
            max_steps=400,
            see_through_walls=kwargs.pop("see_through_walls", False),
            **kwargs,
        )

    def _gen_grid(self, width, height):
        self.grid = Grid(width, height)
        self.grid.wall_rect(0, 0, width, height)
        self.grid.vert_wall(4, 1, 5)
        self.grid.set(4, 1, Door("red", is_locked=True))
        self.grid.set(4, 3, Door("blue"))
        self.grid.set(4, 5, Door("green", is_open=True))
        self.grid.set(2, 6, Wall())
        self.put_obj(Goal(), 7, 7)
        self.put_obj(Floor(), 6, 7)
        rng = np.random.default_rng(self.seed_layout)
        objects = [
            Key("red"),
            Key("blue"),
            Box("purple", contains=Key("yellow")),
            Box("grey"),
            Ball("red"),
            Ball("red"),
        ]
        for obj in objects[: 3 + int(rng.integers(0, 4))]:
            self.place_obj(obj)
        self.place_agent()
        self.mission = "play"


class LavaRoom(MiniGridEnv):
    """A 6x6 room with a lava strip in front of the agent's start: stepping in ends the episode with 0."""

    def __init__(self, **kwargs):
        super().__init__(mission_space=MissionSpace(mission_func=lambda: "avoid"), width=6, height=6, max_steps=50)

    def _gen_grid(self, width, height):
        self.grid = Grid(width, height)
        self.grid.wall_rect(0, 0, width, height)
        for y in range(1, 5):
            self.put_obj(Lava(), 3, y)
        self.put_obj(Goal(), 4, 4)
        self.agent_pos, self.agent_dir = (1, 2), 0
        self.mission = "avoid"


def make_reference(name: str):
    """Returns a fresh minigrid env for a registered MiniGrid id or one of this module's grids."""
    if name == "Playground":
        return Playground()
    if name == "LavaRoom":
        return LavaRoom()
    return gym.make(name)


def carried_encoding(env) -> np.ndarray:
    """Returns the ``uint8[3]`` encoding of what the agent carries, ``(1, 0, 0)`` for nothing."""
    carrying = env.unwrapped.carrying
    return np.array(carrying.encode() if carrying is not None else (1, 0, 0), np.uint8)


def record_episode(env, actions: np.ndarray) -> dict[str, np.ndarray]:
    """Steps the reference env through ``actions`` until the episode ends; returns per-step arrays
    (``steps`` = number of steps taken): obs image, direction, reward, terminated, truncated, agent
    position, carried encoding and the full grid encoding."""
    u = env.unwrapped
    out = {k: [] for k in ("image", "direction", "reward", "terminated", "truncated", "pos", "carrying", "grid")}
    for action in actions:
        obs, reward, terminated, truncated, _ = env.step(int(action))
        out["image"].append(obs["image"])
        out["direction"].append(obs["direction"])
        out["reward"].append(reward)
        out["terminated"].append(terminated)
        out["truncated"].append(truncated)
        out["pos"].append(np.asarray(u.agent_pos))
        out["carrying"].append(carried_encoding(env))
        out["grid"].append(u.grid.encode().transpose(1, 0, 2))
        if terminated or truncated:
            break
    arrays = {k: np.asarray(v) for k, v in out.items()}
    arrays["steps"] = len(out["reward"])
    return arrays


def assert_episode_matches(label: str, fields, outs, row: int, rec: dict, actions) -> int:
    """Compares row ``row`` of a replay's per-step outputs ``outs`` (one array per name of ``fields``, batch first)
    with minigrid's record ``rec`` (``record_episode``) over its ``rec["steps"]`` steps: rewards to 1e-6, the rest
    exactly. Fails at the first differing field and step, naming ``label`` and the action; returns the steps."""
    n = rec["steps"]
    for field, ours in zip(fields, outs):
        mine, theirs = ours[row, :n], rec[field]
        bad = np.abs(mine - theirs) > 1e-6 if field == "reward" else (mine != theirs).reshape(n, -1).any(axis=1)
        if bad.any():
            t = int(np.argmax(bad))
            pytest.fail(
                f"{label}: {field} differs first at step {t} (action {actions[t]}):\n"
                f"jaxsoc={mine[t]!r}\nminigrid={theirs[t]!r}"
            )
    return n


def _passable(obj) -> bool:
    return obj is None or obj.type in ("goal", "floor") or (obj.type == "door" and obj.is_open)


def _next_to_door(u, x: int, y: int) -> bool:
    cells = (u.grid.get(x + dx, y + dy) for dx, dy in ((1, 0), (0, 1), (-1, 0), (0, -1)))
    return any(c is not None and c.type == "door" for c in cells)


def _path_to_face(u, wanted) -> list[int] | None:
    """BFS over agent poses (turns and forward moves through passable cells) to the nearest pose whose
    front cell satisfies ``wanted(x, y, obj)``; returns the actions, or None when no pose does."""
    from collections import deque

    dirs = [(1, 0), (0, 1), (-1, 0), (0, -1)]
    start = (int(u.agent_pos[0]), int(u.agent_pos[1]), int(u.agent_dir))
    parents = {start: None}
    queue = deque([start])
    while queue:
        x, y, d = queue.popleft()
        fx, fy = x + dirs[d][0], y + dirs[d][1]
        if wanted(fx, fy, u.grid.get(fx, fy)):
            actions, node = [], (x, y, d)
            while parents[node] is not None:
                node, action = parents[node]
                actions.append(action)
            return actions[::-1]
        moves = [((x, y, (d - 1) % 4), 0), ((x, y, (d + 1) % 4), 1)]
        if _passable(u.grid.get(fx, fy)):
            moves.append(((fx, fy, d), 2))
        for nxt, action in moves:
            if nxt not in parents:
                parents[nxt] = ((x, y, d), action)
                queue.append(nxt)
    return None


def solve(env, plan: list[tuple[str, str | None]], max_actions: int = 400) -> np.ndarray:
    """Plays a scripted ``plan`` in a reset minigrid env and returns the actions it took, for replay.

    Each plan item is ``(verb, object type)``: ``("pickup", "key")`` walks to face a key and picks it up,
    ``("toggle", "door")`` faces a closed door and toggles it, ``("drop", None)`` faces an empty cell that
    is not next to a door and drops, ``("enter", "goal")`` walks onto the goal. The env is stepped as the
    plan runs; the caller replays the returned actions on a fresh copy.
    """
    u = env.unwrapped
    taken: list[int] = []
    verbs = {"pickup": 3, "toggle": 5, "drop": 4, "enter": 2}
    for verb, kind in plan:
        if verb == "drop":
            wanted = lambda x, y, o: o is None and not _next_to_door(u, x, y)  # noqa: E731
        elif verb == "toggle":
            wanted = lambda x, y, o, k=kind: o is not None and o.type == k and not o.is_open  # noqa: E731
        else:
            wanted = lambda x, y, o, k=kind: o is not None and o.type == k  # noqa: E731
        path = _path_to_face(u, wanted)
        if path is None:
            break
        for action in [*path, verbs[verb]]:
            taken.append(action)
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated or len(taken) >= max_actions:
                return np.asarray(taken, np.int32)
    return np.asarray(taken, np.int32)


PLANS = {
    "MiniGrid-DoorKey-5x5-v0": [("pickup", "key"), ("toggle", "door"), ("enter", "goal")],
    "MiniGrid-DoorKey-8x8-v0": [("pickup", "key"), ("toggle", "door"), ("enter", "goal")],
    "MiniGrid-Empty-16x16-v0": [("enter", "goal")],
    "MiniGrid-FourRooms-v0": [("enter", "goal")],
    "MiniGrid-Unlock-v0": [("pickup", "key"), ("toggle", "door")],
    "MiniGrid-UnlockPickup-v0": [("pickup", "key"), ("toggle", "door"), ("drop", None), ("pickup", "box")],
    "MiniGrid-BlockedUnlockPickup-v0": [
        ("pickup", "ball"),
        ("drop", None),
        ("pickup", "key"),
        ("toggle", "door"),
        ("drop", None),
        ("pickup", "box"),
    ],
}


def scan_replayer(env, world_of=lambda state: state, params_axis=0):
    """Returns ``replay(states, actions, params)``: a jitted, vmapped ``lax.scan`` of ``env.step_env`` over
    ``actions`` ``int32[B, T]`` that outputs, per step, what ``record_episode`` records (image, direction,
    reward, terminated, truncated, agent position, carried encoding, grid encoding). ``world_of`` maps the
    env state to its ``GridState``; ``params_axis`` is ``None`` for one params shared by the batch."""
    import jax

    def replay(state, actions, params):
        def body(state, action):
            obs, state, reward, terminated, truncated, _ = env.step_env(jax.random.key(0), state, action, params)
            world = world_of(state)
            out = (obs["image"], obs["direction"], reward, terminated, truncated, world.agent_pos)
            return state, out + (world.carrying[:3], world.grid[..., :3])

        return jax.lax.scan(body, state, actions)[1]

    return jax.jit(jax.vmap(replay, in_axes=(0, 0, params_axis)))
