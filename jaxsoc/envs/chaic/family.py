"""CHAIC's declaration (``core.family.EnvFamily``): its eight tasks (``catalogue.TASKS``), ``"all"`` for the views
that draw from every task, and the ids registered for them. ``FAMILY.check_task`` and ``FAMILY.task_names`` are
the one check of a CHAIC task name."""

from __future__ import annotations

from jaxsoc.core.family import EnvFamily
from jaxsoc.envs.chaic.catalogue import TASK_IDS, TASKS

#: the name of the views over every task (``env.ALL``)
ALL = "all"


def _ids() -> tuple[str, ...]:
    """``CHAIC-<Task>-v0`` (two agents), ``-Helper-v0`` and ``-Options-v0`` per task, and the all-task views."""
    per_task = [f"CHAIC-{name}-{view}v0" for name in TASK_IDS.values() for view in ("", "Helper-", "Options-")]
    return (*per_task, "CHAIC-All-Helper-v0", "CHAIC-All-Options-v0")


def _register(add) -> None:
    """Registers per task the two-agent world, the helper's view and the options view, then the all-task views (each
    built on first ``make``)."""

    def view(cls: str, task: str):
        def make():
            from jaxsoc.envs.chaic import env

            return getattr(env, cls)(task)

        return make

    def options(task: str):
        def make(**kwargs):  # shared_reward, events, partner, rooms (ChaicOptionsEnv)
            from jaxsoc.envs.chaic.options import ChaicOptionsEnv

            return ChaicOptionsEnv(task, **kwargs)

        return make

    for task, name in TASK_IDS.items():
        add(f"CHAIC-{name}-v0", view("ChaicEnv", task))
        add(f"CHAIC-{name}-Helper-v0", view("ChaicHelperEnv", task))
        add(f"CHAIC-{name}-Options-v0", options(task))
    add("CHAIC-All-Helper-v0", view("ChaicHelperEnv", ALL))
    add("CHAIC-All-Options-v0", options(ALL))


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
