"""Hand-made CHAIC worlds for the tests: two rooms side by side joined by a door, a goal place, a few objects."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.envs.chaic import state as S


def two_rooms(
    objects: list[tuple[str, tuple[float, float], float]] = (),
    agents: list[tuple[tuple[float, float], int, str]] = (((-3.0, 0.0), 0, "normal"), ((-3.0, 1.5), 0, "helper")),
    goal: dict[str, int] | None = None,
    goal_pos: tuple[float, float] = (3.0, 2.0),
    goal_height: float = 0.6,
    task: str = "normal",
    max_frames: int = 3000,
) -> S.State:
    """Returns a ``State``: rooms ``[-6, 0] x [-3, 3]`` and ``[0, 6] x [-3, 3]``, a 1 m door at ``(0, 0)``, the goal
    place (a bed of extent 2 m) at ``goal_pos``. ``objects``: ``(class name, (x, z), top height)``; ``agents``:
    ``((x, z), heading, ability)`` for the constrained agent, the helper and (optionally) the child."""
    walls = np.zeros((S.MAX_WALLS, 4), np.float32)
    segments = [
        (-6, -3, 6, -3),
        (-6, 3, 6, 3),
        (-6, -3, -6, 3),
        (6, -3, 6, 3),
        (0, -3, 0, -0.5),
        (0, 0.5, 0, 3),
    ]
    walls[: len(segments)] = segments
    wall_valid = np.arange(S.MAX_WALLS) < len(segments)
    rooms = np.zeros((S.MAX_ROOMS, 4), np.float32)
    rooms[:2] = [(-6, -3, 0, 3), (0, -3, 6, 3)]
    doors = np.zeros((S.MAX_DOORS, 2), np.float32)
    door_rooms = np.full((S.MAX_DOORS, 2), -1, np.int8)
    door_rooms[0] = (0, 1)
    furniture = np.zeros((S.MAX_FURNITURE, 5), np.float32)
    furniture[0] = (goal_pos[0], goal_pos[1], 2.0, 1.6, goal_height)
    furniture_cls = np.zeros(S.MAX_FURNITURE, np.int8)
    furniture_cls[0] = 1
    scene = S.Scene(
        walls=jnp.asarray(walls),
        wall_valid=jnp.asarray(wall_valid),
        rooms=jnp.asarray(rooms),
        room_valid=jnp.asarray(np.arange(S.MAX_ROOMS) < 2),
        doors=jnp.asarray(doors),
        door_rooms=jnp.asarray(door_rooms),
        door_valid=jnp.asarray(np.arange(S.MAX_DOORS) < 1),
        furniture=jnp.asarray(furniture),
        furniture_cls=jnp.asarray(furniture_cls),
        goal_pos=jnp.asarray(goal_pos, jnp.float32),
        goal_height=jnp.float32(goal_height),
        goal_extent=jnp.float32(2.0),
        plan=jnp.int8(0),
        layout=jnp.int8(0),
        outdoor=jnp.bool_(False),
    )
    n = S.MAX_OBJECTS
    cls = np.zeros(n, np.int8)
    pos = np.zeros((n, 2), np.float32)
    height = np.zeros(n, np.float32)
    for i, (name, xz, top) in enumerate(objects):
        cls[i], pos[i], height[i] = K.CLASS[name], xz, top
    holder = np.full(n, -1, np.int8)
    hands = np.full((S.NUM_AGENTS, 2), -1, np.int16)
    for i, (name, _, _) in enumerate(objects):
        if name == "bike":
            holder[i], hands[0, 0] = 0, i
    obj = S.Objects(
        cls=jnp.asarray(cls),
        pos=jnp.asarray(pos),
        height=jnp.asarray(height),
        size=jnp.asarray(K.CLASS_SIZE[cls]),
        mass=jnp.asarray(K.CLASS_MASS[cls]),
        holder=jnp.asarray(holder),
        container=jnp.full(n, -1, jnp.int16),
        delivered=jnp.zeros(n, bool),
        delivered_by=jnp.full(n, -1, jnp.int8),
        broken=jnp.zeros(n, bool),
    )
    agents = list(agents) + [((-4.0, -1.0), 0, "kid")] * (S.NUM_AGENTS - len(agents))
    active = np.array([True, True, task == "shopping"])
    pos_a = np.array([xz for xz, _, _ in agents], np.float32)
    ag = S.Agents(
        pos=jnp.asarray(pos_a),
        heading=jnp.asarray([h for _, h, _ in agents], jnp.int32),
        ability=jnp.asarray([K.ABILITY[a] for _, _, a in agents], jnp.int8),
        active=jnp.asarray(active),
        hands=jnp.asarray(hands),
        action=jnp.full(S.NUM_AGENTS, S.WAIT, jnp.int32),
        start_frame=jnp.zeros(S.NUM_AGENTS, jnp.int32),
        done_frame=jnp.zeros(S.NUM_AGENTS, jnp.int32),
        status=jnp.full(S.NUM_AGENTS, S.SUCCEEDED, jnp.int8),
        target_pos=jnp.asarray(pos_a),
    )
    goal_count = np.zeros(K.NUM_CLASSES, np.int8)
    for name, count in (goal or {}).items():
        goal_count[K.CLASS[name]] = count
    total = float(goal_count.sum())
    if task == "furniture":
        total = float(sum(K.CLASS_MASS[K.CLASS[name]] * c for name, c in (goal or {}).items()))
    return S.State(
        scene=scene,
        objects=obj,
        agents=ag,
        goal_count=jnp.asarray(goal_count),
        total=jnp.float32(total),
        task=jnp.int8(K.TASK[task]),
        max_frames=jnp.int32(max_frames),
        frame=jnp.int32(0),
        child_running=jnp.bool_(False),
        child_goal=jnp.zeros(2, jnp.float32),
        away_frames=jnp.int32(0),
        placed=jnp.zeros(S.NUM_AGENTS, jnp.int32),
        useful=jnp.zeros(S.NUM_AGENTS, jnp.int32),
        episode=jnp.int32(-1),
    )
