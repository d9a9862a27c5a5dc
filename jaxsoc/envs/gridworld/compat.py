"""Import a live ``minigrid`` (3.2.0) environment into a jaxsoc state, for differential tests.

``minigrid`` is only needed by the caller (it is a test dependency); this module reads the env's
attributes and never imports it.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld.state import GridParams, GridState, make_state


def encode_object(obj: Any, obj_id: int = 0) -> np.ndarray:
    """Returns the jaxsoc cell ``uint8[NUM_CHANNELS]`` of a minigrid ``WorldObj`` (or ``None``)."""
    if obj is None:
        return C.EMPTY_CELL.copy()
    kind, color, state = (int(v) for v in obj.encode())
    contents = 0
    inner = getattr(obj, "contains", None)
    if inner is not None:
        if getattr(inner, "contains", None) is not None or inner.type == "door":
            raise ValueError(f"a box may hold one key, ball, box or goal; got {inner.type} holding more")
        inner_kind, inner_color, _ = (int(v) for v in inner.encode())
        contents = C.pack_contents(inner_kind, inner_color)
    return C.cell(kind, color, state, contents, obj_id if kind not in (C.WALL, C.EMPTY) else 0)


def object_ids(env: Any) -> dict[int, int]:
    """Returns ``{id(obj): obj_id}`` numbering the env's non-wall objects 1, 2, ... in minigrid's x-major
    scan order, then the carried object. The numbering is what jaxsoc stores in the ``OBJ_ID`` channel."""
    u = env.unwrapped
    ids: dict[int, int] = {}
    for x in range(u.grid.width):
        for y in range(u.grid.height):
            obj = u.grid.get(x, y)
            if obj is not None and obj.type != "wall":
                ids[id(obj)] = len(ids) + 1
    if u.carrying is not None:
        ids[id(u.carrying)] = len(ids) + 1
    if len(ids) > 255:
        raise ValueError(f"{len(ids)} objects do not fit the uint8 object-id channel")
    return ids


def grid_state_from_minigrid(env: Any) -> GridState:
    """Returns the ``GridState`` of a reset (or mid-episode) minigrid env: grid with box contents and
    object ids, agent pose, carried object and step count. ``target_*`` are left unset."""
    u = env.unwrapped
    ids = object_ids(env)
    grid = np.zeros((u.grid.height, u.grid.width, C.NUM_CHANNELS), np.uint8)
    for x in range(u.grid.width):
        for y in range(u.grid.height):
            obj = u.grid.get(x, y)
            grid[y, x] = encode_object(obj, ids.get(id(obj), 0))
    carrying = encode_object(u.carrying, ids.get(id(u.carrying), 0)) if u.carrying is not None else None
    return make_state(
        grid,
        (int(u.agent_pos[0]), int(u.agent_pos[1])),
        int(u.agent_dir),
        carrying=carrying,
        step_count=int(u.step_count),
    )


def grid_params_from_minigrid(env: Any) -> GridParams:
    """Returns the ``GridParams`` (size, view, occlusion, ``max_steps``) of a minigrid env."""
    u = env.unwrapped
    return GridParams(
        max_steps=int(u.max_steps),
        height=int(u.grid.height),
        width=int(u.grid.width),
        view_size=int(u.agent_view_size),
        see_through_walls=bool(u.see_through_walls),
    )


def from_minigrid(env: Any) -> tuple[GridState, GridParams]:
    """Returns ``(state, params)`` for a live minigrid env of one of the classic tasks, or any grid built
    from minigrid's objects (then the task is "reach the goal"). The task target is read from the env:
    the door of ``Unlock`` (``env.door``), the box of ``UnlockPickup``/``BlockedUnlockPickup``
    (``env.obj``), the goal otherwise."""
    u = env.unwrapped
    state = grid_state_from_minigrid(env)
    door = getattr(u, "door", None)
    target = getattr(u, "obj", None)
    goals = [(x, y) for x in range(u.grid.width) for y in range(u.grid.height) if _is_goal(u.grid.get(x, y))]
    if door is not None:
        state = state.replace(target_pos=jnp.asarray(door.cur_pos, jnp.int32))
    elif goals:
        state = state.replace(target_pos=jnp.asarray(goals[0], jnp.int32))
    if target is not None:
        kind, color, _ = (int(v) for v in target.encode())
        state = state.replace(target_obj=jnp.array([kind, color], jnp.uint8))
    return state, grid_params_from_minigrid(env)


def _is_goal(obj: Any) -> bool:
    return obj is not None and obj.type == "goal"
