"""The grid family's learner declaration (``core.family.LearnerFamily``): the FiLM actor-critic (``networks.babyai``)
on its ids, its policies as pretrained models (``policy``), and the BabyAI recipe's level as the shared trainers'
default env."""

from __future__ import annotations

from jaxsoc.core.family import LearnerFamily, ModelKind

#: a policy trained by ``jaxsoc train ppo|a2c|bc|imitation`` (``jaxsoc eval`` scores it)
POLICY = ModelKind(
    "policy",
    snapshot="jaxsoc.learners.policy:snapshot_policy",
    load="jaxsoc.learners.policy:load_policy_model",
    evaluate="jaxsoc.learners.policy:evaluate_policy_model",
)

FAMILY = LearnerFamily(
    name="babyai", order=10, network="babyai", models=(POLICY,), default_env_id="BabyAI-GoToRedBallGrey-v0"
)
