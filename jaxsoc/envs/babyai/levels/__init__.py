"""The BabyAI level generators (one module per level family) and the registry of the paper's 19 levels.

``LEVELS[name] = (generate, params)``: ``generate(key, params) -> (GridState, Instruction)`` is jittable and
vmappable; ``params`` is the level's ``BabyAIParams`` (room layout, 7x7 view, no see-through walls). Every
episode's step limit depends on its instruction: ``max_steps(instruction, params)``; ``params.max_steps``
holds the limit of a one-navigation instruction (two for the put-next levels).

``BabyAI-PutNext-v0`` is the ICLR19 paper level (minigrid 3.2.0 registers no such id; its ``PutNext`` class
is the bonus ``PutNextS*`` family), also reachable under ``ALIASES``' ``BabyAI-PutNextICLR19-v0``.
"""

from __future__ import annotations

from jaxsoc.envs.babyai.levels import (
    bonus_goto,
    bonus_open,
    bonus_putnext,
    bonus_unlock,
    goto,
    levelgen,
    pickup,
    putnext,
    unlock,
)
from jaxsoc.envs.babyai.levels import open as open_levels
from jaxsoc.envs.babyai.levels.common import LevelGenerator, level_params, max_steps, num_navs

_GENERATORS = {
    **goto.GENERATORS,
    **pickup.GENERATORS,
    **putnext.GENERATORS,
    **open_levels.GENERATORS,
    **unlock.GENERATORS,
    **levelgen.GENERATORS,
}

# (level, room_size, num_rows, num_cols, navigations in params.max_steps), in the paper's table order
_LAYOUTS = (
    ("GoToObj", 8, 1, 1, 1),
    ("GoToRedBallGrey", 8, 1, 1, 1),
    ("GoToRedBall", 8, 1, 1, 1),
    ("GoToLocal", 8, 1, 1, 1),
    ("PutNextLocal", 8, 1, 1, 2),
    ("PickupLoc", 8, 1, 1, 1),
    ("GoToObjMaze", 8, 3, 3, 1),
    ("GoTo", 8, 3, 3, 1),
    ("Pickup", 8, 3, 3, 1),
    ("UnblockPickup", 8, 3, 3, 1),
    ("Open", 8, 3, 3, 1),
    ("Unlock", 8, 3, 3, 1),
    ("PutNext", 8, 3, 3, 2),
    ("Synth", 8, 3, 3, 1),
    ("SynthLoc", 8, 3, 3, 1),
    ("GoToSeq", 8, 3, 3, 1),
    ("SynthSeq", 8, 3, 3, 1),
    ("GoToImpUnlock", 8, 3, 3, 1),
    ("BossLevel", 8, 3, 3, 1),
)

LEVELS: dict[str, tuple[LevelGenerator, object]] = {
    f"BabyAI-{name}-v0": (_GENERATORS[name], level_params(size, rows, cols, navs))
    for name, size, rows, cols, navs in _LAYOUTS
}
# minigrid 3.2.0's other BabyAI ids (its bonus levels): each module's ``LEVELS`` maps ids to (generator, params)
for _module in (bonus_goto, bonus_open, bonus_putnext, bonus_unlock):
    _clash = sorted(set(_module.LEVELS) & set(LEVELS))
    if _clash:
        raise ValueError(f"{_module.__name__} registers ids twice: {_clash}")
    LEVELS.update(_module.LEVELS)
# Levels whose minigrid class passes its own ``max_steps`` (``RoomGridLevel.fixed_max_steps``): id -> limit
FIXED_MAX_STEPS: dict[str, int] = {
    name: limit
    for _module in (bonus_goto, bonus_open, bonus_putnext, bonus_unlock)
    for name, limit in getattr(_module, "FIXED_MAX_STEPS", {}).items()
}
ALIASES = {"BabyAI-PutNextICLR19-v0": "BabyAI-PutNext-v0"}

# Levels whose generation follows the original babyai code where minigrid 3.2.0 has a bug (see their docs).
MINIGRID_DIFFERS = ("BabyAI-Unlock-v0", "BabyAI-GoToImpUnlock-v0")

__all__ = [
    "ALIASES",
    "FIXED_MAX_STEPS",
    "LEVELS",
    "MINIGRID_DIFFERS",
    "LevelGenerator",
    "level_params",
    "max_steps",
    "num_navs",
]
