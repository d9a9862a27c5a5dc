"""A family's sample-efficiency reference (``SweepReference``): what the shared protocol (``learners.sweeps``) takes
from the family of a level — the published figures its reports list beside the measured ones, the levels' short
names, the default RL window per level and the architecture of the published RL figures.

A family that has published figures holds its ``REFERENCE`` in ``learners/<family>/sweeps.py``; ``reference_for``
finds it from an env id through the env families' declarations (``envs.families.family_of``), by name, as the GPU
suite finds ``gpu_suite/<family>.py``. Ids of a family without one, or of none, get ``SweepReference()``."""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.util
from collections.abc import Callable, Mapping

#: ``rl_dataeff.py --window`` (logged rows) where a family's reference names no other
RL_WINDOW = 100
#: the module of ``learners/<family>/`` that holds a family's ``REFERENCE``
REFERENCE_MODULE = "sweeps"

#: a report column: its header and ``{level: figure}``, a figure being one number or a ``(low, high)`` range
Column = tuple[str, Mapping[str, float | tuple[float, float]]]


def short_id(env_id: str) -> str:
    """Returns ``env_id`` without its ``-v0`` version suffix (the default level name of the tables)."""
    return env_id.removesuffix("-v0")


def default_rl_window(env_id: str) -> int:
    """Returns ``RL_WINDOW`` whatever ``env_id`` (the default of ``SweepReference.rl_window``)."""
    return RL_WINDOW


@dataclasses.dataclass(frozen=True)
class SweepReference:
    """What a family's levels bring to the protocol: published figures and per-level settings
    (``learners/<family>/sweeps.py``, ``REFERENCE``; ``reference_for`` finds it).

    Attributes:
        level: ``level(env_id) -> str``, the level's name in the tables (and the key of the columns' figures).
        rl_window: ``rl_window(env_id) -> int``, the RL sweep's default window (logged rows) on that level.
        rl_arch: the image architecture the RL sweep runs by default (that of the published RL figures); None
            keeps the config's.
        il_columns: the imitation table's published columns (``Column``), after the measured ones.
        rl_columns: the RL table's published columns.
        rl_note: the RL table's note on its published figures (a sentence or more, ending with a space; empty:
            none).
    """

    level: Callable[[str], str] = short_id
    rl_window: Callable[[str], int] = default_rl_window
    rl_arch: str | None = None
    il_columns: tuple[Column, ...] = ()
    rl_columns: tuple[Column, ...] = ()
    rl_note: str = ""


@functools.cache
def reference_for(env_id: str) -> SweepReference:
    """Returns the ``REFERENCE`` of the ``learners/<family>/sweeps.py`` of ``env_id``'s family
    (``envs.families.family_of``), or ``SweepReference()`` for an id of no family or of a family without one."""
    from jaxsoc.envs.families import family_of

    family = family_of(env_id)
    if family is None:
        return SweepReference()
    name = f"{__package__}.{family.name}.{REFERENCE_MODULE}"
    if importlib.util.find_spec(name) is None:
        return SweepReference()
    reference = getattr(importlib.import_module(name), "REFERENCE", None)
    if not isinstance(reference, SweepReference):
        raise TypeError(f"{name}.REFERENCE must be a SweepReference, got {reference!r}")
    return reference


def rl_window(env_id: str) -> int:
    """Returns the RL sweep's default window on ``env_id``, in logged rows (its family reference's ``rl_window``)."""
    return reference_for(env_id).rl_window(env_id)
