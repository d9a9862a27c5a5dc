"""The learner families' declarations (``learners/<family>/family.py``, ``core.family.LearnerFamily``), for the
shared trainers and ``jaxsoc train``: the network for an env id, the family that owns a learner, the env arguments
that load a run, and the trainers' default env and network."""

from __future__ import annotations

import functools

from jaxsoc.core.family import Learner, LearnerFamily, RunArgument, declarations


@functools.cache
def families() -> tuple[LearnerFamily, ...]:
    """Returns every family's ``LearnerFamily``, in listing order."""
    return declarations(__package__, LearnerFamily)


def default() -> LearnerFamily:
    """Returns the one family that declares ``default_env_id`` (its recipe is the shared trainers' default)."""
    (family,) = [f for f in families() if f.default_env_id is not None]
    return family


def network_for(env_id: str) -> str | None:
    """Returns the network the shared trainers use on ``env_id`` (its family's ``network``), or None (the trainers'
    default) for an id no family with a network declares."""
    from jaxsoc.envs.families import family_of

    env_family = family_of(env_id)
    for family in families():
        if env_family is not None and family.name == env_family.name:
            return family.network
    return None


def learners() -> tuple[tuple[LearnerFamily, Learner], ...]:
    """Returns ``(family, learner)`` for every family's own learners, in ``jaxsoc train``'s order."""
    return tuple((family, learner) for family in families() for learner in family.learners)


def owner(name: str) -> tuple[LearnerFamily, Learner] | None:
    """Returns ``(family, learner)`` of the learner ``name`` (None: not a family's own learner)."""
    return next(((f, lrn) for f, lrn in learners() if lrn.name == name), None)


def run_arguments() -> dict[str, RunArgument]:
    """Returns ``{env argument: RunArgument}`` over every family (``ppo.make_env_from`` loads them)."""
    out: dict[str, RunArgument] = {}
    for family in families():
        for name, argument in family.run_arguments.items():
            if name in out:
                raise ValueError(f"env argument {name!r} is declared by two learner families")
            out[name] = argument
    return out
