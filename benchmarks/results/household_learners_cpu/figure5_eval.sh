# Figure 5 (issue 37, item 4): the inferred-goal helpers (HP, the committing Hybrid, the HRL with the shaped low
# level) re-evaluated with the relational Watch model's goals and appended to the test-1 and test-2 tables, which
# keep the goal-independent rows (HP_TG, HP_RG, Random, the oracles) measured with the same setting.
# Run from the repository root; 2 shared CPU cores.
R=benchmarks/results/household_learners_cpu
for split in test-1 test-2; do
  PYTHONPATH=$PWD JAX_PLATFORMS=cpu /work/venv/bin/python -m jaxsoc.cli household eval --helper hp hybrid hrl \
    --watch $R/watch_relational/full --hybrid $R/hybrid_commit --hrl $R/hrl_shaped --split $split --seeds 1 \
    --append --out $R/help_$split
done
