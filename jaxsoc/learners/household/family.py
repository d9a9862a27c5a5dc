"""Watch-And-Help's learner declaration (``core.family.LearnerFamily``): the goal-inference model, the Hybrid and
the HRL helpers, trained by ``jaxsoc train watch|hybrid|hrl`` through ``jaxsoc.cli.household``, and their
pretrained models (``models``: kinds ``watch``, ``hybrid``, ``hrl-low``)."""

from __future__ import annotations

from jaxsoc.core.family import Learner, LearnerFamily, ModelKind

_MODELS = "jaxsoc.learners.household.models"


def _kind(name: str, function: str) -> ModelKind:
    return ModelKind(
        name,
        snapshot=f"{_MODELS}:snapshot_{function}",
        load=f"{_MODELS}:load_{function}",
        evaluate=f"{_MODELS}:evaluate_{function}",
    )


FAMILY = LearnerFamily(
    name="household",
    order=30,
    learners=(
        Learner("watch", "jaxsoc.learners.household.watch:WatchConfig"),
        Learner("hybrid", "jaxsoc.learners.household.hybrid_config:HybridConfig"),
        Learner("hrl", "jaxsoc.learners.household.hrl_config:HRLConfig"),
    ),
    #: the goal-inference model, the Hybrid's high level and the HRL low level
    models=(_kind("watch", "watch"), _kind("hybrid", "hybrid"), _kind("hrl-low", "hrl_low")),
)
