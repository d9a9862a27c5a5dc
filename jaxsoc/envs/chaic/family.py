"""CHAIC's declaration (``core.family.EnvFamily``): its eight tasks (``catalogue.TASKS``), ``"all"`` for the views
that draw from every task, and the ids registered for them. ``FAMILY.check_task`` and ``FAMILY.task_names`` are
the one check of a CHAIC task name."""

from __future__ import annotations

from jaxsoc.core.family import EnvFamily, resolve
from jaxsoc.envs.chaic.catalogue import TASK_IDS, TASKS

#: the name of the views over every task (``env.ALL``)
ALL = "all"


def _ids() -> tuple[str, ...]:
    """``CHAIC-<Task>-v0`` (two agents), ``-Helper-v0`` and ``-Options-v0`` per task, and the all-task views."""
    per_task = [f"CHAIC-{name}-{view}v0" for name in TASK_IDS.values() for view in ("", "Helper-", "Options-")]
    return (*per_task, "CHAIC-All-Helper-v0", "CHAIC-All-Options-v0")


def _register(add) -> None:
    """Registers per task the two-agent world, the helper's view and the options view, then the all-task views (each
    built on first ``make``; the classes are named, ``core.family.resolve``, as the env modules import this one)."""

    def view(cls: str, task: str):
        return lambda **kwargs: resolve(f"jaxsoc.envs.chaic.{cls}")(task, **kwargs)

    for task, name in TASK_IDS.items():
        add(f"CHAIC-{name}-v0", view("env:ChaicEnv", task))
        add(f"CHAIC-{name}-Helper-v0", view("env:ChaicHelperEnv", task))
        # shared_reward, events, partner, rooms (ChaicOptionsEnv)
        add(f"CHAIC-{name}-Options-v0", view("options:ChaicOptionsEnv", task))
    add("CHAIC-All-Helper-v0", view("env:ChaicHelperEnv", ALL))
    add("CHAIC-All-Options-v0", view("options:ChaicOptionsEnv", ALL))


FAMILY = EnvFamily(
    name="chaic",
    title="CHAIC",
    order=40,
    prefixes=("CHAIC-",),
    ids=_ids,
    tasks=TASKS,
    all_tasks=ALL,
    register=_register,
)
