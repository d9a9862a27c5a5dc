"""Environment families; importing this module registers them all."""

from jaxsoc.core.registry import register
from jaxsoc.envs.babyai import ALIASES, LEVELS, level_env
from jaxsoc.envs.babyai.minigrid_levels import PAPER_LEVELS
from jaxsoc.envs.chaic.catalogue import TASK_IDS
from jaxsoc.envs.gridworld.minigrid_ids import MINIGRID_ENVS

PAPER_LEVEL_IDS = frozenset(f"BabyAI-{name}-v0" for name in PAPER_LEVELS)

#: EXCALIBUR's ids by reward variant (``excalibur.env.VARIANTS``)
EXCALIBUR_IDS = {
    "answers": "EXCALIBUR-v0",
    "qa": "EXCALIBUR-QA-v0",
    "novelty": "EXCALIBUR-Novelty-v0",
    "novelty_qa": "EXCALIBUR-NoveltyQA-v0",
}


def _register_all() -> None:
    for name, (cls, kwargs) in MINIGRID_ENVS.items():
        register(name, lambda cls=cls, kwargs=kwargs: cls(**kwargs))
    for name in [*LEVELS, *ALIASES]:
        register(name, lambda name=name: level_env(name))
    register("WatchAndHelp-v0", _household("HouseholdEnv"))
    register("WatchAndHelp-Helper-v0", _household("HelperEnv"))
    for task, name in TASK_IDS.items():
        register(f"CHAIC-{name}-v0", _chaic("ChaicEnv", task))
        register(f"CHAIC-{name}-Helper-v0", _chaic("ChaicHelperEnv", task))
        register(f"CHAIC-{name}-Options-v0", _chaic_options(task))
    register("CHAIC-All-Helper-v0", _chaic("ChaicHelperEnv", "all"))
    register("CHAIC-All-Options-v0", _chaic_options("all"))
    for variant, name in EXCALIBUR_IDS.items():
        register(name, _excalibur(variant))


def _household(cls: str):
    def factory():
        from jaxsoc.envs.household import env

        return getattr(env, cls)()

    return factory


def _chaic(cls: str, task: str):
    def factory():
        from jaxsoc.envs.chaic import env

        return getattr(env, cls)(task)

    return factory


def _chaic_options(task: str):
    def factory(**kwargs):  # shared_reward, events, partner, rooms (ChaicOptionsEnv)
        from jaxsoc.envs.chaic.options import ChaicOptionsEnv

        return ChaicOptionsEnv(task, **kwargs)

    return factory


def _excalibur(variant: str):
    def factory():
        from jaxsoc.envs.excalibur.env import ExcaliburEnv

        return ExcaliburEnv(variant)

    return factory


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
