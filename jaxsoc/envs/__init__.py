"""Environment families; importing this module registers them all."""

from jaxsoc.core.registry import register
from jaxsoc.envs.babyai import ALIASES, LEVELS, level_env
from jaxsoc.envs.chaic.catalogue import TASK_IDS
from jaxsoc.envs.gridworld.minigrid_ids import MINIGRID_ENVS

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
    register("CHAIC-All-Helper-v0", _chaic("ChaicHelperEnv", "all"))
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


def _excalibur(variant: str):
    def factory():
        from jaxsoc.envs.excalibur.env import ExcaliburEnv

        return ExcaliburEnv(variant)

    return factory


_register_all()
