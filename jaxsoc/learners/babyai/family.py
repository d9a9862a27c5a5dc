"""The grid family's learner declaration (``core.family.LearnerFamily``): the FiLM actor-critic (``networks.babyai``)
on its ids, and the BabyAI recipe's level as the shared trainers' default env."""

from __future__ import annotations

from jaxsoc.core.family import LearnerFamily

FAMILY = LearnerFamily(name="babyai", order=10, network="babyai", default_env_id="BabyAI-GoToRedBallGrey-v0")
