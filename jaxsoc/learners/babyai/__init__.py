"""The grid family's learners: the shared trainers with the BabyAI recipe (``learners.ppo``, ``learners.bc``,
``learners.imitation``, ``learners.sweeps``) and the FiLM network (``networks.babyai``); ``family`` declares them,
``sweeps`` holds the paper's sample-efficiency figures and per-level settings (``learners.sweep_reference``)."""
