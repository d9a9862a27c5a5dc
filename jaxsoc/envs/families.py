"""The environment families' declarations (``envs/<family>/family.py``, ``core.family.EnvFamily``), for shared
code that needs a family's ids or tasks without naming it."""

from __future__ import annotations

import functools

from jaxsoc.core.family import EnvFamily, declarations


@functools.cache
def families() -> tuple[EnvFamily, ...]:
    """Returns every family's ``EnvFamily``, in listing order."""
    return declarations(__package__, EnvFamily)


def family(name: str) -> EnvFamily:
    """Returns the ``EnvFamily`` named ``name``. Raises ``KeyError`` listing the families."""
    for declared in families():
        if declared.name == name:
            return declared
    raise KeyError(f"no environment family {name!r}; families: {[f.name for f in families()]}")


def family_of(env_id: str) -> EnvFamily | None:
    """Returns the family whose prefix ``env_id`` has (None for an id no family declares, e.g. a user's)."""
    owners = [declared for declared in families() if declared.owns(env_id)]
    return owners[0] if owners else None
