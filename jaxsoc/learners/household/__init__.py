"""Watch-And-Help's learners (the paper's §5 and appendix C): the shared state ``encoder``, the goal-inference
model and its training (``watch``), the Hybrid helper (a learned high-level policy over subgoals executed by the
regression planner, ``hybrid``) and the hierarchical-RL helper (``hrl``)."""
