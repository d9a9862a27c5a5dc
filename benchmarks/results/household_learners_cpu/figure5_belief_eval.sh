# Figure 5 (issue 37, item 3) with the belief low level (hrl_marks/, the HRL helper committing to its subgoals):
# the HRL row of the fourth round's tables (help_count_*, goals of watch_changes/memory_count_cos_s1, the committing
# Hybrid's high level) measured again and written over it in copies of those tables (help_belief_*).
# Run from the repository root; one split per core of the 2-core CPU VM.
R=benchmarks/results/household_learners_cpu
for split in test-1 test-2; do
  rm -rf $R/help_belief_$split && cp -r $R/help_count_$split $R/help_belief_$split
  PYTHONPATH=$PWD JAX_PLATFORMS=cpu taskset -c $([ $split = test-1 ] && echo 0 || echo 1) \
    /work/venv/bin/python -m jaxsoc.cli household eval --helper hrl \
    --watch $R/watch_changes/memory_count_cos_s1 --hybrid $R/hybrid_commit --hrl $R/hrl_marks --split $split \
    --seeds 1 --append --out $R/help_belief_$split > /work/logs/fig5_belief_$split.log 2>&1 &
done
wait
