# The ablation of figure5_belief_eval.sh: the same belief low level (hrl_marks/) under the same high level, but the
# high level choosing a subgoal at every step (--hrl-commit off, as the HRL rows before the belief low level);
# the HRL row written over copies of the fourth round's tables (help_belief_every_step_*).
# Run from the repository root; one split per core of the 2-core CPU VM.
R=benchmarks/results/household_learners_cpu
for split in test-1 test-2; do
  rm -rf $R/help_belief_every_step_$split && cp -r $R/help_count_$split $R/help_belief_every_step_$split
  PYTHONPATH=$PWD JAX_PLATFORMS=cpu taskset -c $([ $split = test-1 ] && echo 0 || echo 1) \
    /work/venv/bin/python -m jaxsoc.cli household eval --helper hrl \
    --watch $R/watch_changes/memory_count_cos_s1 --hybrid $R/hybrid_commit --hrl $R/hrl_marks --hrl-commit off --split $split \
    --seeds 1 --append --out $R/help_belief_every_step_$split > /work/logs/fig5_belief_every_step_$split.log 2>&1 &
done
wait
