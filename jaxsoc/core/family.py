"""Family declarations: what each family tells the shared code about itself, once per layer.

A family (the grid worlds with BabyAI, BIB, the household, CHAIC, EXCALIBUR) declares itself in a ``family``
module of its package in each layer, as a module attribute ``FAMILY``:

- ``jaxsoc/envs/<family>/family.py``: an ``EnvFamily`` (its id prefixes and ids, its task names and their
  validation);
- ``jaxsoc/learners/<family>/family.py``: a ``LearnerFamily`` (the PPO network for its ids, its own learners and
  their configs, the env arguments that load a run);
- ``jaxsoc/gpu_suite/<family>.py``: its GPU-suite parts (``PARTS``).

Shared code (the trainers, ``jaxsoc train``, the GPU suite) loops over the declarations (``declarations``) and
never names a family; adding a family or a task touches its own folders only (docs/architecture.md).
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

#: the module of a family's package that holds its declaration
DECLARATION_MODULE = "family"


def resolve(path: str) -> Any:
    """Returns the object named by ``"package.module:attribute"`` (imported on use, so a declaration names a
    learner's config or a loader without importing it)."""
    module, sep, attribute = path.partition(":")
    if not sep or not module or not attribute:
        raise ValueError(f"expected 'module:attribute', got {path!r}")
    return getattr(importlib.import_module(module), attribute)


@dataclasses.dataclass(frozen=True)
class EnvFamily:
    """A family's environments (``jaxsoc/envs/<family>/family.py``).

    Attributes:
        name: the family's package name in every layer (``envs/<name>``, ``learners/<name>``, ``gpu_suite/<name>.py``,
            ``jaxsoc.cli.<name>``).
        title: its name in messages (``"unknown <title> task ..."``).
        order: its place in listings (lower first).
        prefixes: the prefixes of its registered ids; every id it registers starts with one of them and no other
            family's id does.
        ids: ``ids()`` returns the ids it registers (read from the family's own catalogue).
        tasks: its task names (empty: a family without named tasks).
        all_tasks: the name that stands for every task where a view takes them together (``None``: none).
        register: ``register(add)`` registers the family's ids, calling ``add(id, factory)`` (``registry.register``)
            once per id; ``jaxsoc.envs`` calls it for every family on import (``None``: no registered ids).
    """

    name: str
    title: str
    order: int
    prefixes: tuple[str, ...]
    ids: Callable[[], Iterable[str]] = tuple
    tasks: tuple[str, ...] = ()
    all_tasks: str | None = None
    register: Callable[[Callable[..., Any]], None] | None = None

    def owns(self, env_id: str) -> bool:
        """Returns whether ``env_id`` has one of the family's prefixes."""
        return bool(self.prefixes) and env_id.startswith(self.prefixes)

    def check_task(self, task: str, *, allow_all: bool = False) -> str:
        """Returns ``task``; raises ``ValueError`` (``unknown <title> task 'x'; choose from [...]``) unless it is one
        of ``tasks`` (or ``all_tasks`` with ``allow_all``)."""
        choices = [*self.tasks, self.all_tasks] if allow_all and self.all_tasks is not None else list(self.tasks)
        if task not in choices:
            raise ValueError(f"unknown {self.title} task {task!r}; choose from {choices}")
        return task

    def task_names(self, names: str | Iterable[str]) -> tuple[str, ...]:
        """Returns the tasks named by ``names`` (a comma-separated string or names; ``all_tasks`` alone: every
        task). Raises ``ValueError`` (``unknown <title> task(s) [...]; choose from [...] or 'all'``) for an unknown
        name or none."""
        if isinstance(names, str):
            names = names.split(",")
        names = tuple(name.strip() for name in names if name.strip())
        if self.all_tasks is not None and names == (self.all_tasks,):
            return self.tasks
        unknown = [name for name in names if name not in self.tasks]
        if unknown or not names:
            everything = f" or {self.all_tasks!r}" if self.all_tasks is not None else ""
            raise ValueError(f"unknown {self.title} task(s) {unknown}; choose from {list(self.tasks)}{everything}")
        return names


@dataclasses.dataclass(frozen=True)
class Learner:
    """A learner with its own trainer (``jaxsoc train <name>``), run by the family's command module
    ``jaxsoc.cli.<family>`` (``train_command``, ``run_line``).

    Attributes:
        name: its ``jaxsoc train`` name.
        config: its config class as ``"module:Class"`` (``--set`` fields are parsed against it).
    """

    name: str
    config: str

    def config_type(self) -> type:
        """Returns the config class (imported on use)."""
        return resolve(self.config)


@dataclasses.dataclass(frozen=True)
class RunArgument:
    """An env argument that names a run whose model the env carries (``env_args`` ``<name>=RUN``): the learner layer
    loads the run with ``loader`` and hands the model to the env's constructor as ``keyword`` (environments import
    no learner).

    Attributes:
        keyword: the env constructor's keyword that takes the loaded model.
        loader: ``"module:function"``, ``function(run) -> model``.
    """

    keyword: str
    loader: str

    def load(self, run: str) -> Any:
        """Returns the model of ``run`` (``loader(run)``)."""
        return resolve(self.loader)(run)


@dataclasses.dataclass(frozen=True)
class ModelKind:
    """A kind of pretrained model a family ships (``jaxsoc.models``): how one is cut from a training run, rebuilt
    and scored. Every function is ``"module:function"``, imported on use.

    Attributes:
        name: the kind's name (a card's ``kind``), unique within the family.
        snapshot: ``snapshot(run) -> (spec, parameters)``: what rebuilds the network (JSON) and its parameters only
            (nested dicts of arrays), from a training run directory (``jaxsoc.models.snapshot_run`` does the usual
            case).
        load: ``load(card, parameters) -> model``: the object the family's evaluation takes (what its run loader
            returns for a run directory); raises ``ValueError`` when the arrays do not fit the network the card's
            spec builds (``jaxsoc.models.fit``).
        evaluate: ``evaluate(ref, **args) -> {metric: value or {"value", "se", "episodes"}}``: the family's
            evaluation of ``ref`` (``"model:NAME"``, taken wherever a run directory is) with the card's
            ``evaluation.args``.
    """

    name: str
    snapshot: str
    load: str
    evaluate: str

    def snapshot_function(self) -> Callable[..., Any]:
        """Returns ``snapshot`` (imported)."""
        return resolve(self.snapshot)

    def load_function(self) -> Callable[..., Any]:
        """Returns ``load`` (imported)."""
        return resolve(self.load)

    def evaluate_function(self) -> Callable[..., Any]:
        """Returns ``evaluate`` (imported)."""
        return resolve(self.evaluate)


@dataclasses.dataclass(frozen=True)
class LearnerFamily:
    """A family's learners (``jaxsoc/learners/<family>/family.py``).

    Attributes:
        name: the family's name (the ``EnvFamily`` of the same name gives its ids).
        order: its place in listings (``jaxsoc train``'s choices), lower first.
        network: the registered policy network the shared trainers use on its ids (``networks.registry``); None
            keeps the trainers' default.
        learners: its own learners (``Learner``), in the order ``jaxsoc train`` lists them.
        run_arguments: ``{env argument: RunArgument}`` for its environments.
        models: the kinds of pretrained model it ships (``ModelKind``; ``jaxsoc.models``).
        default_env_id: set by the one family whose recipe is the shared trainers' default: the env they train on
            when none is given (its ``network`` is their default network).
    """

    name: str
    order: int
    network: str | None = None
    learners: tuple[Learner, ...] = ()
    run_arguments: Mapping[str, RunArgument] = dataclasses.field(default_factory=dict)
    models: tuple[ModelKind, ...] = ()
    default_env_id: str | None = None


def declarations(package: str, kind: type[T]) -> tuple[T, ...]:
    """Returns the ``FAMILY`` declarations of type ``kind`` of every subpackage of ``package`` that has a ``family``
    module (``<package>.<family>.family``), sorted by ``order`` then name. Only those modules are imported (and
    their packages). Raises ``TypeError`` for a ``FAMILY`` of another type or a name that is not its package's."""
    root = importlib.import_module(package)
    found: list[Any] = []
    for sub in pkgutil.iter_modules(root.__path__):
        if not sub.ispkg:
            continue
        where = [str(Path(p) / sub.name) for p in root.__path__]
        if not any(m.name == DECLARATION_MODULE for m in pkgutil.iter_modules(where)):
            continue
        declaration = getattr(importlib.import_module(f"{package}.{sub.name}.{DECLARATION_MODULE}"), "FAMILY", None)
        if not isinstance(declaration, kind) or getattr(declaration, "name", None) != sub.name:
            raise TypeError(
                f"{package}.{sub.name}.{DECLARATION_MODULE}.FAMILY must be a {kind.__name__} named {sub.name!r}, "
                f"got {declaration!r}"
            )
        found.append(declaration)
    return tuple(sorted(found, key=lambda d: (d.order, d.name)))
