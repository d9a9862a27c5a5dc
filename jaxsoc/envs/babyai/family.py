"""The grid family's declaration (``core.family.EnvFamily``): the MiniGrid ids of the grid engine
(``envs.gridworld.minigrid_ids``) and BabyAI's levels and aliases (``envs.babyai.levels``)."""

from __future__ import annotations

from jaxsoc.core.family import EnvFamily


def _ids() -> tuple[str, ...]:
    from jaxsoc.envs.babyai.levels import ALIASES, LEVELS
    from jaxsoc.envs.gridworld.minigrid_ids import MINIGRID_ENVS

    return (*MINIGRID_ENVS, *LEVELS, *ALIASES)


def _register(add) -> None:
    """Registers minigrid's ``MiniGrid-*`` ids (one class and keywords each) and every ``BabyAI-*`` level and alias."""
    from jaxsoc.envs.babyai import level_env
    from jaxsoc.envs.babyai.levels import ALIASES, LEVELS
    from jaxsoc.envs.gridworld.minigrid_ids import MINIGRID_ENVS

    for name, (cls, kwargs) in MINIGRID_ENVS.items():
        add(name, lambda cls=cls, kwargs=kwargs: cls(**kwargs))
    for name in [*LEVELS, *ALIASES]:
        add(name, lambda name=name: level_env(name))


FAMILY = EnvFamily(
    name="babyai", title="BabyAI", order=10, prefixes=("MiniGrid-", "BabyAI-"), ids=_ids, register=_register
)
