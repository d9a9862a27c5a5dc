# Figure 5 (issue 37, item 4) with the fourth round's Watch model (watch_changes/memory_count_cos_s1): the
# inferred-goal helpers (HP, the committing Hybrid, the HRL with the shaped low level) re-evaluated with its goals and
# appended to copies of the test-1 and test-2 tables (help_count_*), whose other rows are those of help_test-*.
# Run from the repository root; one split per core of the 2-core CPU VM.
R=benchmarks/results/household_learners_cpu
for split in test-1 test-2; do
  PYTHONPATH=$PWD JAX_PLATFORMS=cpu taskset -c $([ $split = test-1 ] && echo 0 || echo 1) \
    /work/venv/bin/python -m jaxsoc.cli household eval --helper hp hybrid hrl \
    --watch $R/watch_changes/memory_count_cos_s1 --hybrid $R/hybrid_commit --hrl $R/hrl_shaped --split $split \
    --seeds 1 --append --out $R/help_count_$split > /work/logs/fig5_$split.log 2>&1 &
done
wait
