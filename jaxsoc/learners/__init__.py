"""The learners, shared by every family: PPO and A2C (``ppo``, with ``rl_run`` for runs and ``evaluate``), behaviour
cloning (``bc``), interactive imitation (``imitation``, ``expert_cloning``), violation-of-expectation scoring
(``voe``), checkpoints (``checkpoint``), sweeps (``sweeps``) and the policy protocol (``policy``); the networks in
``networks``; each family's own learners in ``<family>/`` with its declaration (``<family>/family.py``, collected by
``families``)."""
