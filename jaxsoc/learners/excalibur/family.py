"""EXCALIBUR's learner declaration (``core.family.LearnerFamily``): the explorer network (``networks.excalibur``) on
its ids, and its pretrained models' kinds (``models``: the supervised answerer, the PPO explorer over the object
memory, a PPO policy of ``jaxsoc train ppo``)."""

from __future__ import annotations

from jaxsoc.core.family import LearnerFamily, ModelKind

_M = "jaxsoc.learners.excalibur.models"

#: the supervised answerer over the object memory (``jaxsoc excalibur answerer``)
ANSWERER = ModelKind(
    "answerer",
    snapshot=f"{_M}:snapshot_answerer",
    load=f"{_M}:load_answerer_model",
    evaluate=f"{_M}:evaluate_answerer_model",
)
#: the PPO explorer over the object memory (``jaxsoc excalibur explorer``), scored with an answerer model
MEMORY_EXPLORER = ModelKind(
    "memory-explorer",
    snapshot=f"{_M}:snapshot_memory_explorer",
    load=f"{_M}:memory_explorer_from_model",
    evaluate=f"{_M}:evaluate_explorer_model",
)
#: a PPO policy of ``jaxsoc train ppo --env EXCALIBUR-*`` exploring while an answerer model answers
POLICY = ModelKind(
    "policy",
    snapshot="jaxsoc.learners.policy:snapshot_policy",
    load=f"{_M}:load_policy_model",
    evaluate=f"{_M}:evaluate_explorer_model",
)

FAMILY = LearnerFamily(name="excalibur", order=50, network="excalibur", models=(ANSWERER, MEMORY_EXPLORER, POLICY))
