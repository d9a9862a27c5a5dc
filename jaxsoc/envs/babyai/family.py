"""The grid family's declaration (``core.family.EnvFamily``): the MiniGrid ids of the grid engine
(``envs.gridworld.minigrid_ids``) and BabyAI's levels and aliases (``envs.babyai.levels``)."""

from __future__ import annotations

from jaxsoc.core.family import EnvFamily


def _ids() -> tuple[str, ...]:
    from jaxsoc.envs.babyai.levels import ALIASES, LEVELS
    from jaxsoc.envs.gridworld.minigrid_ids import MINIGRID_ENVS

    return (*MINIGRID_ENVS, *LEVELS, *ALIASES)


FAMILY = EnvFamily(name="babyai", title="BabyAI", order=10, prefixes=("MiniGrid-", "BabyAI-"), ids=_ids)
