"""Watch-And-Help's household (Puig et al. 2021) as a symbolic, jittable VirtualHome-Social.

- ``classes``: object classes, categories, property and state bits; ``apartments``: the 7 layouts.
- ``predicates``: the 30 goal predicates and the 5 activities' goal ranges.
- ``world``: the state arrays, actions, preconditions and effects, visibility, observations, goal checks.
- ``tasks``: on-device task generation and the train / test-1 / test-2 sets (``.npz`` files).
- ``env``: ``HouseholdEnv`` (two agents, ``WatchAndHelp-v0``) and ``HelperEnv`` (Bob, with a built-in Alice,
  ``WatchAndHelp-Helper-v0``); ``agents/``: Alice and the rule-based helpers; ``solver``: the regression planner.
- the learners' training views: ``subgoal_env`` (the HRL low level, with its teachers in ``subgoal_teachers``) and
  ``hybrid_env`` (the Hybrid's semi-MDP over the predicate options of ``options``).
- ``family``: the family's declaration (its ids and their registration).
"""

from jaxsoc.envs.household.env import HelperEnv, HouseholdEnv, HouseholdParams, params_for
from jaxsoc.envs.household.tasks import SPLITS, TaskSet, load, make_split, save

__all__ = [
    "SPLITS",
    "HelperEnv",
    "HouseholdEnv",
    "HouseholdParams",
    "TaskSet",
    "load",
    "make_split",
    "params_for",
    "save",
]
