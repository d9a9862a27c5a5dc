"""Test helpers for minigrid's Dynamic-Obstacles, Memory and MultiRoom envs (test-only; see ``minigrid_reference``).

``record_with_moves`` plays a Dynamic-Obstacles episode in minigrid and returns, besides what
``record_episode`` records, the random words that make jaxsoc's ``step_with_moves`` move the balls exactly as
minigrid did; ``moves_replayer`` replays them in one jitted, vmapped ``lax.scan``. ``walk_onto`` plans a walk
onto a cell; ``features`` reads the generation statistics of a level.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from minigrid_reference import _path_to_face, record_episode

from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld.dynamic_obstacles import NEIGHBOURHOOD, STAY_BELOW

FIELDS = ("image", "direction", "reward", "terminated", "truncated", "pos", "carrying", "grid")


def move_words(types: np.ndarray, agent: tuple[int, int], before: list, after: list) -> np.ndarray:
    """Returns ``uint32[n, 2]``: the words with which jaxsoc's ``move_obstacles`` moves ball ``i`` from
    ``before[i]`` to ``after[i]`` (``(x, y)`` each), in order, in a world whose cell types are ``types``
    (``int[H, W]``, indexed ``[y, x]``, balls at ``before``) with the agent at ``agent``. Word 0 is the middle of
    the ``below`` bin of the cell's rank among the free cells; word 1 says move (``2**32 - 1``) or stay (0)."""
    types = types.copy()
    words = np.zeros((len(before), 2), np.uint32)
    for i, (old, new) in enumerate(zip(before, after)):
        cells = [(old[0] + dx, old[1] + dy) for dx, dy in NEIGHBOURHOOD]
        free = [c for c in cells if types[c[1], c[0]] == C.EMPTY and c != tuple(agent)]
        if tuple(new) == tuple(old):
            if free and STAY_BELOW[len(free)] == 0:
                raise AssertionError(f"minigrid kept a ball with {len(free)} free neighbours in place")
            words[i] = (0, 0)
            continue
        rank = free.index(tuple(new))
        words[i] = (int((rank + 0.5) * 2**32 / len(free)), 2**32 - 1)
        types[old[1], old[0]], types[new[1], new[0]] = C.EMPTY, C.BALL
    return words


def record_with_moves(env, actions: np.ndarray) -> dict:
    """Steps a Dynamic-Obstacles minigrid env through ``actions`` until the episode ends; returns
    ``record_episode``'s arrays plus ``words`` (``uint32[steps, n, 2]``, see ``move_words``)."""
    u = env.unwrapped
    steps, words = [], []
    for action in actions:
        types = u.grid.encode()[..., 0].T
        before = [tuple(int(v) for v in ball.cur_pos) for ball in u.obstacles]
        agent = tuple(int(v) for v in u.agent_pos)
        steps.append(record_episode(env, [action]))
        after = [tuple(int(v) for v in ball.cur_pos) for ball in u.obstacles]
        words.append(move_words(types, agent, before, after))
        if steps[-1]["terminated"][-1] or steps[-1]["truncated"][-1]:
            break
    out = {field: np.concatenate([s[field] for s in steps]) for field in FIELDS}
    out["steps"] = len(steps)
    out["words"] = np.stack(words)
    return out


def moves_replayer(env):
    """Returns ``replay(states, actions, words, params)``: a jitted, vmapped ``lax.scan`` of
    ``env.step_with_moves`` over ``actions`` ``int32[B, T]`` and ``words`` ``uint32[B, T, n, 2]`` that outputs
    per step what ``record_episode`` records."""

    def replay(state, actions, words, params):
        def body(state, inputs):
            action, word = inputs
            obs, state, reward, terminated, truncated, _ = env.step_with_moves(word, state, action, params)
            out = (obs["image"], obs["direction"], reward, terminated, truncated, state.agent_pos)
            return state, out + (state.carrying[:3], state.grid[..., :3])

        return jax.lax.scan(body, state, (actions, words))[1]

    return jax.jit(jax.vmap(replay))


def walk_onto(env, cell: tuple[int, int]) -> list[int]:
    """Returns the actions that walk the agent of a reset minigrid env onto ``cell`` (turns and forward moves
    through passable cells), or ``[]`` when it cannot be reached."""
    path = _path_to_face(env.unwrapped, lambda x, y, obj: (x, y) == tuple(cell))
    return [] if path is None else [*path, 2]


def compare(name: str, seed: int, ours: list, record: dict, actions) -> None:
    """Asserts that the replay outputs ``ours`` (one episode, in ``FIELDS`` order) equal minigrid's ``record``
    at every step (rewards to 1e-6); the message names the first differing step."""
    n = record["steps"]
    for field, mine in zip(FIELDS, ours):
        mine, theirs = np.asarray(mine)[:n], record[field]
        bad = np.abs(mine - theirs) > 1e-6 if field == "reward" else (mine != theirs).reshape(n, -1).any(axis=1)
        if bad.any():
            t = int(np.argmax(bad))
            raise AssertionError(
                f"{name} seed {seed}: {field} differs first at step {t} (action {actions[t]}):\n"
                f"jaxsoc={mine[t]!r}\nminigrid={theirs[t]!r}"
            )


def stack(trees):
    """Returns the pytrees ``trees`` stacked along a new leading axis."""
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *trees)


def pad_batch(items: list, multiple: int = 8) -> list:
    """Returns ``items`` padded with copies of its last element to a multiple of ``multiple`` (fewer shapes)."""
    return items + [items[-1]] * (-len(items) % multiple)
