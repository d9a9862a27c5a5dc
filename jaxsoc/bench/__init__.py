"""The benchmark harness behind ``jaxsoc bench`` and the GPU suite's throughput parts.

``minigrid``: random-action throughput of the MiniGrid and BabyAI ids against minigrid's and xminigrid's rates, and
the suites' env lists (``GPU_BENCH_ENVS``, ``BABYAI_BENCH_ENVS``); ``bot``: the BabyAI bot's rate and success against
minigrid's ``BabyAIBot``; ``family``: a family's own throughput table (``jaxsoc bench --suite chaic|household``,
measured by ``envs/<family>/throughput.py``); ``rows``: keyed row files and their resume, shared with the GPU suite.
The generic timing helpers they use live in ``jaxsoc.core.timing``.

Layer: above the environments and the learners, below ``jaxsoc.gpu_suite`` and ``jaxsoc.cli``
(docs/architecture.md).
"""
