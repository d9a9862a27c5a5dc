"""Helpers that drive minigrid 3.2.0's BabyAI levels in tests (test-only dependency).

``make_level(name, seed)`` returns the gymnasium env of one of the 19 paper levels by its short name
(``GoTo``, ``BossLevel``...); ``PutNext`` is the ICLR19 level, re-created in ``jaxsoc.envs.babyai.minigrid_levels``.
"""

from __future__ import annotations

import numpy as np

from jaxsoc.envs.babyai.minigrid_levels import PAPER_LEVELS, make_minigrid_level, minigrid_id, register_reference_levels

register_reference_levels()

make_level = make_minigrid_level

__all__ = ["PAPER_LEVELS", "make_level", "minigrid_id"]


def scripted_room(objects: dict, agent: tuple[int, int, int], instruction, level: str = "GoToLocal"):
    """Returns minigrid's one-room ``level`` (seed 0) emptied and refilled with ``objects`` (``{(x, y): WorldObj}``),
    the agent at ``(x, y, dir)`` and ``instruction`` (its verifier reset)."""
    env = make_level(level, 0)
    u = env.unwrapped
    for x in range(1, u.room_size - 1):
        for y in range(1, u.room_size - 1):
            u.grid.set(x, y, None)
    for (x, y), obj in objects.items():
        u.grid.set(x, y, obj)
        obj.init_pos = obj.cur_pos = np.array([x, y])
    u.agent_pos, u.agent_dir = np.array(agent[:2]), agent[2]
    u.instrs = instruction
    u.instrs.reset_verifier(u)
    return env
