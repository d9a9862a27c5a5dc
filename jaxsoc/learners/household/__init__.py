"""Watch-And-Help's learners (the paper's §5 and appendix C): the goal-inference model and its training (``watch``,
``watch_run``), the Hybrid helper (a learned high-level policy over subgoals executed by the regression planner:
``hybrid`` the helper, ``hybrid_config``, ``hybrid_train``, ``hybrid_run``) and the hierarchical-RL helper (``hrl``
the helper, ``hrl_config``, ``hrl_imitation``, ``hrl_train``, ``hrl_run``, ``hrl_eval``). Their training views are
environments (``envs.household.subgoal_env``, ``hybrid_env``), their networks ``networks.household``; ``family``
declares them (``core.family.LearnerFamily``)."""
