# Figure 5's learned rows (issue 59, item 3) with both option-end rules: the Hybrid (model:wah-hybrid, the run
# household_learners_cpu/hybrid_commit) and the HRL helper (model:wah-hrl-low, hrl_marks, under the Hybrid's high
# level, committing) given the goals model:wah-watch infers from the paired demonstrations; all 100 tasks of test-1
# and test-2, 1 run per task, Alice with 100 simulations, seed 0. The stored models were copied to $M first (the
# Watch model is being re-trained meanwhile: these are the goals of the wah-watch committed at d4709fa), the paired
# demonstrations recorded once into $M/demos with `jaxsoc household demos --split S --out $M/demos` (the recording
# `household eval` makes without --demos: same seed, simulations and batch).
# Run from the repository root, one process at a time, on the 2-core CPU VM shared with other runs.
R=benchmarks/results/household_help_observable_cpu
M=/work/runs/i59_help
for rule in observed true; do
  for split in test-1 test-2; do
    JAX_PLATFORMS=cpu nice -n 10 .venv/bin/python -m jaxsoc.cli household eval --helper hybrid hrl \
      --watch model:$M/wah-watch.json --hybrid model:$M/wah-hybrid.json --hrl model:$M/wah-hrl-low.json \
      --demos $M/demos --split $split --seeds 1 --option-end $rule --out $R/help_${rule}_$split
  done
done
