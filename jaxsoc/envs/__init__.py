"""Environment families; importing this module registers them all."""

from jaxsoc.core.registry import register
from jaxsoc.envs.babyai import ALIASES, LEVELS, level_env
from jaxsoc.envs.gridworld.classic import CLASSIC_ENVS


def _register_all() -> None:
    for name, (cls, kwargs) in CLASSIC_ENVS.items():
        register(name, lambda cls=cls, kwargs=kwargs: cls(**kwargs))
    for name in [*LEVELS, *ALIASES]:
        register(name, lambda name=name: level_env(name))
    register("WatchAndHelp-v0", _household("HouseholdEnv"))
    register("WatchAndHelp-Helper-v0", _household("HelperEnv"))


def _household(cls: str):
    def factory():
        from jaxsoc.envs.household import env

        return getattr(env, cls)()

    return factory


_register_all()
