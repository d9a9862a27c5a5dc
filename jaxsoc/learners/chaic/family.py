"""CHAIC's learner declaration (``core.family.LearnerFamily``): the set-encoder network (``networks.chaic``) on its
ids, the behaviour-modelling helper's model (``jaxsoc train chaic-bm`` through ``jaxsoc.cli.chaic``), the options
helper's recipe (``jaxsoc train chaic-options``: behaviour cloning of the RHP rules' options, then PPO), and
``partner_run=RUN``, which hands the options view a ``chaic-bm`` run's model as its ``partner``."""

from __future__ import annotations

from jaxsoc.core.family import Learner, LearnerFamily, RunArgument

FAMILY = LearnerFamily(
    name="chaic",
    order=40,
    network="chaic",
    learners=(
        Learner("chaic-bm", "jaxsoc.learners.chaic.bm_config:BMConfig"),
        Learner("chaic-options", "jaxsoc.learners.chaic.options_recipe:OptionsRecipe"),
    ),
    run_arguments={"partner_run": RunArgument("partner", "jaxsoc.learners.chaic.bm:load_partner")},
)
