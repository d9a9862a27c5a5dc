# run from the repository root after command.sh; /tmp/demos: jaxsoc household demos --split test-1 --out /tmp/demos
PYTHONPATH=$PWD JAX_PLATFORMS=cpu /work/venv/bin/python -m jaxsoc.cli household eval --helper hybrid \
  --watch benchmarks/results/household_learners_cpu/watch_relational/full --hybrid runs/hybrid_commit_rl \
  --demos /tmp/demos --split test-1 --seeds 1 --out benchmarks/results/household_learners_cpu/hybrid_commit_rl/help_test-1
