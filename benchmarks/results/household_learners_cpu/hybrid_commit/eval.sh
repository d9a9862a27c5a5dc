# run from the repository root after command.sh; test-1 paired demonstrations recorded first
PYTHONPATH=$PWD JAX_PLATFORMS=cpu /work/venv/bin/python -m jaxsoc.cli household demos --split test-1 --out /tmp/demos
PYTHONPATH=$PWD JAX_PLATFORMS=cpu /work/venv/bin/python -m jaxsoc.cli household eval --helper hybrid random \
  --watch benchmarks/results/household_learners_cpu/watch_relational/full --hybrid runs/hybrid_commit \
  --demos /tmp/demos --split test-1 --seeds 1 --out benchmarks/results/household_learners_cpu/hybrid_commit/help_test-1
