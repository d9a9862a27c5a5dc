"""Every ``MiniGrid-*`` id jaxsoc registers: ``MINIGRID_ENVS[id] = (environment class, constructor kwargs)``.

The classic six tasks live in ``classic``; each other module ports one family of minigrid 3.2.0's
``minigrid/envs`` and exports its ids as ``ENVS``.
"""

from __future__ import annotations

from jaxsoc.envs.gridworld import (
    classic,
    dynamic_obstacles,
    key_corridor,
    locked_room,
    memory,
    multiroom,
    navigation,
    object_tasks,
    obstructed_maze,
    playground,
    wfc,
)

_MODULES = (
    classic,
    navigation,
    playground,
    dynamic_obstacles,
    memory,
    multiroom,
    object_tasks,
    obstructed_maze,
    locked_room,
    key_corridor,
    wfc,
)


def _merge() -> dict[str, tuple[type, dict]]:
    merged: dict[str, tuple[type, dict]] = {}
    for module in _MODULES:
        envs = module.CLASSIC_ENVS if module is classic else module.ENVS
        clash = sorted(set(envs) & set(merged))
        if clash:
            raise ValueError(f"{module.__name__} registers ids twice: {clash}")
        merged.update(envs)
    return merged


MINIGRID_ENVS = _merge()
