"""Environment families; importing this module registers them all: each family's declaration
(``envs/<family>/family.py``, ``core.family.EnvFamily.register``) registers its own ids."""

from jaxsoc.core.registry import register
from jaxsoc.envs import families
from jaxsoc.envs.babyai import ALIASES, LEVELS
from jaxsoc.envs.babyai.minigrid_levels import PAPER_LEVELS
from jaxsoc.envs.gridworld.minigrid_ids import MINIGRID_ENVS

PAPER_LEVEL_IDS = frozenset(f"BabyAI-{name}-v0" for name in PAPER_LEVELS)


def _register_all() -> None:
    for family in families.families():
        if family.register is not None:
            family.register(register)


_register_all()

#: the family of an id is its prefix; the order in which ``jaxsoc list`` shows them
FAMILIES = ("MiniGrid", "BabyAI", "WatchAndHelp", "CHAIC", "EXCALIBUR")


def env_family(name: str) -> tuple[str, str]:
    """Returns ``(family, group)`` of a registered id: the family is its prefix (``"other"`` for ids registered
    by users); the group is the minigrid module of a ``MiniGrid-*`` id (``classic``, ``navigation``...), and for
    ``BabyAI-*`` ids ``paper`` (the ICLR19 levels) or ``bonus`` (minigrid's other levels)."""
    family = name.split("-", 1)[0]
    if family == "MiniGrid" and name in MINIGRID_ENVS:
        return family, MINIGRID_ENVS[name][0].__module__.rsplit(".", 1)[-1]
    if family == "BabyAI" and (name in LEVELS or name in ALIASES):
        return family, "paper" if ALIASES.get(name, name) in PAPER_LEVEL_IDS else "bonus"
    return (family, "") if family in FAMILIES else ("other", "")
