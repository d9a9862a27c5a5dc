"""Test helpers for minigrid's object tasks (Fetch, GoToDoor, GoToObject, PutNear, RedBlueDoors): scripted
players that drive a reset minigrid env to each task's success or to its failure, a replayer that also
returns the observed mission tokens, and level features for the distribution comparison."""

from __future__ import annotations

from collections import deque

import numpy as np
from minigrid_reference import _path_to_face

from jaxsoc.envs.gridworld import constants as C

LEFT, RIGHT, FORWARD, PICKUP, DROP, TOGGLE, DONE = range(7)


def family(name: str) -> str:
    """Returns the task family of an id: ``"Fetch"``, ``"GoToDoor"``, ``"GoToObject"``, ``"PutNear"`` or
    ``"RedBlueDoors"``."""
    return name.split("-")[1]


def _is(obj, kind: str, color: str) -> bool:
    return obj is not None and obj.type == kind and obj.color == color


def _act(env, taken: list[int], actions: list[int], max_actions: int) -> bool:
    """Steps ``actions``; returns True when the episode ended (or the budget ran out)."""
    for action in actions:
        taken.append(action)
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated or len(taken) >= max_actions:
            return True
    return False


def _steps(env, goal: bool, variant: int) -> list[tuple]:
    """Returns the scripted plan, ``[(wanted(x, y, obj), action), ...]``: face a cell ``wanted`` accepts,
    then act. ``goal`` picks the plan that reaches the task's success, else one of two (``variant`` 0 or 1)
    that end it in failure."""
    u = env.unwrapped
    name = family(env.spec.id)
    if name == "Fetch":
        if goal:
            return [(lambda x, y, o: _is(o, u.targetType, u.targetColor), PICKUP)]
        wrong = lambda x, y, o: o is not None and o.type != "wall" and not _is(o, u.targetType, u.targetColor)  # noqa: E731
        return [(wrong, PICKUP)]
    if name in ("GoToDoor", "GoToObject"):
        target = tuple(int(v) for v in u.target_pos)
        if goal:
            return [(lambda x, y, o: (x, y) == target, DONE)]
        kinds = ("door",) if name == "GoToDoor" else ("key", "ball", "box")
        # face another object and declare done there; or toggle the target itself
        other = lambda x, y, o: o is not None and o.type in kinds and (x, y) != target  # noqa: E731
        return [(other, DONE)] if variant else [(lambda x, y, o: (x, y) == target, TOGGLE)]
    if name == "PutNear":
        tx, ty = (int(v) for v in u.target_pos)
        move = lambda x, y, o: _is(o, u.move_type, u.moveColor)  # noqa: E731
        if goal:
            near = lambda x, y, o: o is None and max(abs(x - tx), abs(y - ty)) <= 1  # noqa: E731
            return [(move, PICKUP), (near, DROP)]
        if variant:
            return [(lambda x, y, o: _is(o, u.target_type, u.target_color), PICKUP)]
        far = lambda x, y, o: o is None and max(abs(x - tx), abs(y - ty)) > 1  # noqa: E731
        return [(move, PICKUP), (far, DROP)]
    if name == "RedBlueDoors":
        red = lambda x, y, o: _is(o, "door", "red") and not o.is_open  # noqa: E731
        blue = lambda x, y, o: _is(o, "door", "blue") and not o.is_open  # noqa: E731
        return [(red, TOGGLE), (blue, TOGGLE)] if goal else [(blue, TOGGLE)]
    raise KeyError(name)


def play(env, goal: bool, variant: int = 0, max_actions: int = 200) -> np.ndarray:
    """Plays a reset minigrid env of an object task towards success (``goal``) or failure and returns the
    actions taken, ``int32[T]``, for replay on a fresh copy. The env is stepped as the plan runs."""
    taken: list[int] = []
    for wanted, action in _steps(env, goal, variant % 2):
        path = _path_to_face(env.unwrapped, wanted)
        if path is None or _act(env, taken, [*path, action], max_actions):
            break
    return np.asarray(taken, np.int32)


def replayer(env):
    """Returns ``replay(states, actions, params)``: a jitted, vmapped ``lax.scan`` of ``env.step_env`` over
    ``actions`` ``int32[B, T]``; per step it outputs what ``minigrid_reference.record_episode`` records
    (image, direction, reward, terminated, truncated, agent position, carried encoding, grid encoding) and
    the observed mission tokens (``int32[B, T, MAX_TOKENS]``, zeros for a task with a fixed mission)."""
    import jax
    import jax.numpy as jnp

    def replay(state, actions, params):
        def body(state, action):
            obs, state, reward, terminated, truncated, _ = env.step_env(jax.random.key(0), state, action, params)
            mission = obs.get("mission", jnp.zeros(20, jnp.int32))
            out = (obs["image"], obs["direction"], reward, terminated, truncated, state.agent_pos)
            return state, out + (state.carrying[:3], state.grid[..., :3], mission)

        return jax.lax.scan(body, state, actions)[1]

    return jax.jit(jax.vmap(replay))


# ----------------------------------------------------------------------------------------------
# level features, for the comparison of generators


def described(mission: str) -> list[tuple[int, int]]:
    """Returns the ``(type, colour)`` codes of the objects a mission names, in order."""
    words = mission.split()
    return [
        (C.OBJECT_TO_IDX[kind], C.COLOR_TO_IDX[color])
        for color, kind in zip(words, words[1:])
        if color in C.COLOR_TO_IDX and kind in C.OBJECT_TO_IDX
    ]


def reachable(grid: np.ndarray, start) -> np.ndarray:
    """Returns ``bool[H, W]``: the empty cells the agent can walk to from ``start`` (closed doors block)."""
    height, width = grid.shape[:2]
    free = (grid[..., C.TYPE] == C.EMPTY) | ((grid[..., C.TYPE] == C.DOOR) & (grid[..., C.STATE] == C.OPEN))
    seen = np.zeros((height, width), bool)
    seen[start[1], start[0]] = True
    queue = deque([tuple(int(v) for v in start)])
    while queue:
        x, y = queue.popleft()
        for dx, dy in C.DIR_TO_VEC.tolist():
            nx, ny = x + dx, y + dy
            if 0 <= nx < width and 0 <= ny < height and free[ny, nx] and not seen[ny, nx]:
                seen[ny, nx] = True
                queue.append((nx, ny))
    return seen


def features(grid: np.ndarray, pos, direction: int, mission: str) -> dict[str, object]:
    """Returns a level's categorical features: agent pose; per object kind the count and the first one's
    (row-major) cell and colour; the mission's words by position; for each described object the cell of
    the first match, the number of matches and whether the agent can walk next to it; the smallest
    Chebyshev distance between two objects; the filled cells of the top row and left column (GoToDoor's
    room size)."""
    out: dict[str, object] = {"agent_x": int(pos[0]), "agent_y": int(pos[1]), "agent_dir": int(direction)}
    kinds = grid[..., C.TYPE]
    for name in ("key", "ball", "box", "door"):
        ys, xs = np.nonzero(kinds == C.OBJECT_TO_IDX[name])
        out[f"{name}_count"] = len(xs)
        if len(xs):
            out.update({f"{name}_x": int(xs[0]), f"{name}_y": int(ys[0]), f"{name}_color": int(grid[ys[0], xs[0], 1])})
    words = mission.split()
    out.update({f"word{i}": words[i] if i < len(words) else "-" for i in range(8)})
    walk = reachable(grid, pos)
    padded = np.pad(walk, 1)
    next_to_walk = padded[:-2, 1:-1] | padded[2:, 1:-1] | padded[1:-1, :-2] | padded[1:-1, 2:]
    for i, (kind, color) in enumerate(described(mission)):
        ys, xs = np.nonzero((kinds == kind) & (grid[..., C.COLOR] == color))
        out[f"described{i}_count"] = len(xs)
        out[f"described{i}_cell"] = f"{xs[0]},{ys[0]}" if len(xs) else "-"
        out[f"described{i}_reachable"] = bool(next_to_walk[ys, xs].any())
    ys, xs = np.nonzero(np.isin(kinds, (C.KEY, C.BALL, C.BOX)))
    gaps = [max(abs(xs[i] - xs[j]), abs(ys[i] - ys[j])) for i in range(len(xs)) for j in range(i)]
    out["min_gap"] = int(min(gaps)) if gaps else -1
    out["top_row_filled"] = int((kinds[0] != C.EMPTY).sum())
    out["left_column_filled"] = int((kinds[:, 0] != C.EMPTY).sum())
    return out
