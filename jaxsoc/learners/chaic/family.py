"""CHAIC's learner declaration (``core.family.LearnerFamily``): the set-encoder network (``networks.chaic``) on its
ids, the behaviour-modelling helper's model (``jaxsoc train chaic-bm`` through ``jaxsoc.cli.chaic``), the options
helper's recipe (``jaxsoc train chaic-options``: behaviour cloning of the RHP rules' options, then PPO),
``partner_run=RUN``, which hands the options view a ``chaic-bm`` run's model (or ``model:NAME``, e.g.
``model:chaic-bm``) as its ``partner``, and its pretrained models' kinds (``learners.chaic.pretrained``)."""

from __future__ import annotations

from jaxsoc.core.family import Learner, LearnerFamily, ModelKind, RunArgument

_PRETRAINED = "jaxsoc.learners.chaic.pretrained"
#: a behaviour model (``jaxsoc train chaic-bm``), loaded as the options view's partner model (``bm.BMPartner``)
BM = ModelKind(
    "bm", snapshot=f"{_PRETRAINED}:snapshot_bm", load=f"{_PRETRAINED}:load_bm", evaluate=f"{_PRETRAINED}:evaluate_bm"
)
#: a helper over options (a policy on ``CHAIC-<Task>-Options-v0``), its partner model named by model name
OPTIONS_POLICY = ModelKind(
    "options-policy",
    snapshot=f"{_PRETRAINED}:snapshot_options",
    load=f"{_PRETRAINED}:load_options",
    evaluate=f"{_PRETRAINED}:evaluate_options",
)

FAMILY = LearnerFamily(
    name="chaic",
    order=40,
    network="chaic",
    learners=(
        Learner("chaic-bm", "jaxsoc.learners.chaic.bm_config:BMConfig"),
        Learner("chaic-options", "jaxsoc.learners.chaic.options_recipe:OptionsRecipe"),
    ),
    run_arguments={"partner_run": RunArgument("partner", "jaxsoc.learners.chaic.bm:load_partner")},
    models=(BM, OPTIONS_POLICY),
)
