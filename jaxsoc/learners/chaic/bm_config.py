"""The configuration of a CHAIC behaviour-model run: ``BMConfig`` (the model, its data, its training), and
``model_config``, the fields that shape the model and its update.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from jaxsoc.envs.chaic import play as P
from jaxsoc.envs.chaic import tasks as T
from jaxsoc.envs.chaic.family import FAMILY
from jaxsoc.learners.chaic.bm_data import HELPERS


@dataclasses.dataclass(frozen=True)
class BMConfig:
    """The behaviour model, its data and its training.

    - ``embed``, ``hidden``: widths of the input embedding and of the GRU; ``pool``: the running maximum of the
      features beside the GRU (``BehaviourModel``).
    - ``lr``, ``batch``, ``epochs``: Adam's step size, sequences per step, passes over the training sequences;
      ``constraint_weight``: the constraint's cross-entropy weight beside the targets' (summed over classes).
    - data: ``tasks`` (comma-separated names of ``catalogue.TASKS``, or ``"all"``), ``episodes`` (train-split
      episodes per task: more of them bring more distinct goals, more ``seeds`` only other runs of the same),
      ``seeds`` (runs recorded per episode), ``helper`` (``HELPERS``: beside which rule-based helper the
      constrained agent is recorded), ``max_events`` (events simulated per episode) and ``max_steps`` (helper
      steps kept per episode: the sequences' length); ``eval_episodes`` validation-split episodes per task (1 run
      each; ``tasks.VALIDATION_EPISODES`` at most) evaluate the model after every epoch (the test split is never
      read by training: it is scored once, by ``jaxsoc chaic eval`` or ``jaxsoc models eval``).
    - ``threshold``: a class is predicted in the goal above this probability (accuracies and ``BMHelper``).
    - ``checkpoint_every``: epochs between checkpoints (the last epoch is always saved).
    - ``seed``: initialisation, recording keys and data order.
    """

    embed: int = 128
    hidden: int = 128
    pool: bool = True
    lr: float = 1e-3
    batch: int = 16
    epochs: int = 15
    constraint_weight: float = 1.0
    tasks: str = "all"
    episodes: int = 64
    seeds: int = 1
    helper: str = "rhp"
    max_events: int = P.DEFAULT_MAX_EVENTS
    max_steps: int = 512
    eval_episodes: int = T.VALIDATION_EPISODES
    threshold: float = 0.5
    checkpoint_every: int = 1
    seed: int = 0

    def __post_init__(self) -> None:
        sizes = ("embed", "hidden", "batch", "epochs", "episodes", "seeds", "max_events", "max_steps")
        for name in (*sizes, "checkpoint_every"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"BMConfig.{name} must be a positive integer, got {value!r}")
        if not isinstance(self.eval_episodes, int) or not 0 <= self.eval_episodes <= T.VALIDATION_EPISODES:
            raise ValueError(
                f"BMConfig.eval_episodes (validation episodes per task) must be in 0..{T.VALIDATION_EPISODES}, "
                f"got {self.eval_episodes!r}"
            )
        if self.helper not in HELPERS:
            raise ValueError(f"BMConfig.helper must be one of {list(HELPERS)}, got {self.helper!r}")
        if not self.lr > 0 or not self.constraint_weight >= 0:
            raise ValueError(
                f"BMConfig.lr must be positive and constraint_weight >= 0, got {self.lr}, {self.constraint_weight}"
            )
        if not 0.0 < self.threshold < 1.0:
            raise ValueError(f"BMConfig.threshold must be in (0, 1), got {self.threshold}")
        self.task_names()

    def task_names(self) -> tuple[str, ...]:
        """Returns the tasks of ``tasks`` (all of ``catalogue.TASKS`` for ``"all"``). Raises ``ValueError`` for an
        unknown name."""
        try:
            return FAMILY.task_names(self.tasks)
        except ValueError as error:
            raise ValueError(f"BMConfig.tasks: {error}") from None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def model_config(config: BMConfig) -> BMConfig:
    """Returns ``config`` with only the fields that shape the model and its update (the jitted functions' cache key)."""
    return BMConfig(
        embed=config.embed,
        hidden=config.hidden,
        pool=config.pool,
        lr=config.lr,
        constraint_weight=config.constraint_weight,
    )
