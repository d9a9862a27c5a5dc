"""Watch-And-Help's learner declaration (``core.family.LearnerFamily``): the goal-inference model, the Hybrid and
the HRL helpers, trained by ``jaxsoc train watch|hybrid|hrl`` through ``jaxsoc.cli.household``."""

from __future__ import annotations

from jaxsoc.core.family import Learner, LearnerFamily

FAMILY = LearnerFamily(
    name="household",
    order=30,
    learners=(
        Learner("watch", "jaxsoc.learners.household.watch:WatchConfig"),
        Learner("hybrid", "jaxsoc.learners.household.hybrid_config:HybridConfig"),
        Learner("hrl", "jaxsoc.learners.household.hrl_config:HRLConfig"),
    ),
)
