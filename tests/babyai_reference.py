"""Helpers that drive minigrid 3.2.0's BabyAI levels in tests (test-only dependency).

``make_level(name, seed)`` returns the gymnasium env of one of the 19 paper levels by its short name
(``GoTo``, ``BossLevel``...); ``PutNext`` is the ICLR19 level, re-created in ``jaxsoc.envs.babyai.minigrid_levels``.
"""

from __future__ import annotations

from jaxsoc.envs.babyai.minigrid_levels import PAPER_LEVELS, make_minigrid_level, minigrid_id, register_reference_levels

register_reference_levels()

make_level = make_minigrid_level

__all__ = ["PAPER_LEVELS", "make_level", "minigrid_id"]
