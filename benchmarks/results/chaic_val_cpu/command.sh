#!/bin/sh
# Issue 59 (2026-12-07): CHAIC's behaviour model and options helper re-trained under the validation rule (training
# reads train and validation only), the options helper for 3 training seeds, then the test split scored once.
# Shared 2-core CPU VM (load 11-12: five other jobs), one job of ours at a time, nice 10. Budgets shrunk to fit the
# deadline (see README). Runs were written to /work/runs/chaic_val and copied here without checkpoints.
set -e
export PYTHONPATH=$PWD JAX_PLATFORMS=cpu
W=/work/runs/chaic_val
# 0. the behaviour model (RHP-recorded train episodes, 32 per task, 10 epochs; scored on validation each epoch)
#    trained at commit e78393b (validation split, agents' own `free`; before 848e9d0's pick-up on belief)
nice -n 10 jaxsoc train chaic-bm --out $W/bm --episodes 32 --epochs 10 --quiet
# 1. the options helper, bm_view recipe with the new model in its view, at commit 939911c: 15 warm-start batches
#    cloning the goal-told rules, then 5 PPO updates (the committed recipe: 60 and 30); seeds 0, 1, 2
for s in 0 1 2; do
  nice -n 10 jaxsoc train chaic-options --out $W/bm_view_s$s --seed $s --set preset=small-partner \
    --set bc_batches=15 --set updates=5 --set teacher=goal --set env_args=partner_run=$W/bm --quiet
done
# 2. the test split: w/o, RHP, BM and the 3 helper seeds, 12 test episodes x 3 runs per task as the committed table
#    (the functions of `jaxsoc chaic eval`, in one process: eval_all.py); copied to eval_test/. (A first pass with
#    1 run per episode and seeds 0-1, when seed 2 looked out of reach, is eval_test_1run/: the same episodes,
#    other run keys; nothing was chosen between the two passes)
nice -n 10 python benchmarks/results/chaic_val_cpu/eval_all.py $W/eval_test3 3 $W/bm $W/bm_view_s0 $W/bm_view_s1 \
  $W/bm_view_s2
# the tables of the README (before: ../chaic_options3_cpu)
python benchmarks/results/chaic_val_cpu/tables.py $W/eval_test3/chaic_eval.json
