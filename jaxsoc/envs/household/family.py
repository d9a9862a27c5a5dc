"""The Watch-And-Help household's declaration (``core.family.EnvFamily``): its two registered views."""

from __future__ import annotations

from jaxsoc.core.family import EnvFamily

#: ``HouseholdEnv`` (two agents) and ``HelperEnv`` (Bob, with a built-in Alice)
IDS = ("WatchAndHelp-v0", "WatchAndHelp-Helper-v0")

FAMILY = EnvFamily(name="household", title="Watch-And-Help", order=30, prefixes=("WatchAndHelp-",), ids=lambda: IDS)
