#!/bin/sh
# Issue 59 (2026-12-08): the CHAIC options helper at the committed budget (60 warm-start batches cloning the goal-told
# rules, then 30 PPO updates: ../chaic_options3_cpu's recipe) under the validation rule, seeds 0-2, with the
# behaviour model of ../chaic_val_cpu (`chaic-bm`) in its view, at commit 4f5599b (the options view's steps all move
# the world on); then the test split scored once. 2-core CPU VM, one core per training job (seeds 0 and 1 together,
# then seed 2), no other jobs but this session's tests. Runs were written to /work/runs/chaic_full and copied here
# without checkpoints (the shipped model is seed 0's last checkpoint: `chaic-options-helper`).
set -e
export PYTHONPATH=$PWD JAX_PLATFORMS=cpu
W=/work/runs/chaic_full
P=/work/runs/chaic_val/bm   # ../chaic_val_cpu's behaviour model run, exported as model:chaic-bm
train() {
  taskset -c "$2" jaxsoc train chaic-options --out $W/bm_view_s"$1" --seed "$1" --set preset=small-partner \
    --set bc_batches=60 --set updates=30 --set teacher=goal --set env_args=partner_run=$P --quiet
}
train 0 0 &
train 1 1 &
wait
train 2 0
# the test split: w/o, RHP, BM and the 3 helper seeds, 12 test episodes x 3 runs per task, the committed table's
# episodes and keys (the functions of `jaxsoc chaic eval` in one process: ../chaic_val_cpu/eval_all.py)
python benchmarks/results/chaic_val_cpu/eval_all.py $W/eval_test 3 $P $W/bm_view_s0 $W/bm_view_s1 $W/bm_view_s2
python benchmarks/results/chaic_options_val_cpu/tables.py $W/eval_test/chaic_eval.json
