"""The CHAIC options helper's training recipe (``jaxsoc train chaic-options``): behaviour cloning of the RHP rules'
options, then PPO over the options (``options_ppo.train``), with every checkpoint kept (the transport-rate curve of
``scripts/chaic_options_tr_curve.py`` reads them all).

``OptionsRecipe`` holds the recipe's fields (``--set name=value``); ``train_recipe(recipe, out)`` runs it and returns
``options_ppo.train``'s summary, the same run for the same fields whichever way it is called."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from jaxsoc.learners.chaic import options_ppo

#: the options view every recipe trains on unless ``env_id`` says otherwise
DEFAULT_ENV_ID = "CHAIC-All-Options-v0"


@dataclasses.dataclass(frozen=True)
class OptionsRecipe:
    """The options helper's recipe.

    Attributes:
        env_id: the options view (a ``CHAIC-...-Options-v0`` id).
        preset: the ``chaic`` network's preset (``small``, ``small-partner``, ...).
        bc_batches: warm-start batches of ``num_envs x 20`` options (0: none; ignored on ``resume``).
        updates: PPO updates in all (``num_envs x 20`` options each).
        num_envs: worlds stepped in parallel (the minibatch is ``10 x num_envs`` options).
        teacher: whose options the warm start clones (``options_ppo.TEACHERS``).
        follow: whose choices the warm start's worlds follow (``options_ppo.FOLLOW``; ``policy``: DAgger).
        env_args: the view's arguments, e.g. ``partner_run=RUN`` (a ``chaic-bm`` run's model as its partner).
        checkpoint_every: updates between checkpoints (every checkpoint is kept).
        chunk_updates: updates per compiled chunk.
        eval_episodes: the final evaluation's episodes (0: none).
        seed: the run's seed.
    """

    env_id: str = DEFAULT_ENV_ID
    preset: str = "small"
    bc_batches: int = 40
    updates: int = 1000
    num_envs: int = 32
    teacher: str = "rhp"
    follow: str = "expert"
    env_args: str = ""
    checkpoint_every: int = 5
    chunk_updates: int = 5
    eval_episodes: int = 0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.teacher not in options_ppo.TEACHERS:
            choices = list(options_ppo.TEACHERS)
            raise ValueError(f"unknown CHAIC options teacher {self.teacher!r}; choose from {choices}")
        if self.follow not in options_ppo.FOLLOW:
            raise ValueError(f"follow must be one of {list(options_ppo.FOLLOW)}, got {self.follow!r}")
        for name in ("updates", "num_envs", "checkpoint_every", "chunk_updates"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        for name in ("bc_batches", "eval_episodes"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")

    def ppo_config(self):
        """Returns the PPO config of the recipe (``options_ppo.config``)."""
        n = self.num_envs
        return options_ppo.config(
            self.env_id,
            preset=self.preset,
            num_envs=n,
            minibatch_frames=10 * n,
            total_frames=n * 20 * self.updates,
            env_args=self.env_args,
        )


def train_recipe(recipe: OptionsRecipe, out: str | Path, resume: bool = False, progress: bool = True) -> dict[str, Any]:
    """Runs ``recipe`` into ``out``: the warm start (none on ``resume``, which continues ``out``'s PPO to
    ``recipe.updates`` in all), then PPO, keeping every checkpoint. Returns ``options_ppo.train``'s summary."""
    return options_ppo.train(
        out,
        recipe.ppo_config(),
        0 if resume else recipe.bc_batches,
        recipe.seed,
        teacher=recipe.teacher,
        follow=recipe.follow,
        resume=resume,
        chunk_updates=recipe.chunk_updates,
        checkpoint_every=recipe.checkpoint_every,
        keep_checkpoints=None,  # every one, for scripts/chaic_options_tr_curve.py
        eval_episodes=recipe.eval_episodes,
        progress=progress,
    )
