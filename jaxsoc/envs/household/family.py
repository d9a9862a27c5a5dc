"""The Watch-And-Help household's declaration (``core.family.EnvFamily``): its two registered views."""

from __future__ import annotations

from jaxsoc.core.family import EnvFamily

#: ``HouseholdEnv`` (two agents) and ``HelperEnv`` (Bob, with a built-in Alice)
IDS = ("WatchAndHelp-v0", "WatchAndHelp-Helper-v0")


def _register(add) -> None:
    """Registers the two views (built on first ``make``: the apartments load then)."""

    def factory(cls: str):
        def make():
            from jaxsoc.envs.household import env

            return getattr(env, cls)()

        return make

    add("WatchAndHelp-v0", factory("HouseholdEnv"))
    add("WatchAndHelp-Helper-v0", factory("HelperEnv"))


FAMILY = EnvFamily(
    name="household",
    title="Watch-And-Help",
    order=30,
    prefixes=("WatchAndHelp-",),
    ids=lambda: IDS,
    register=_register,
)
