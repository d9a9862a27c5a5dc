#!/bin/sh
# Issue 38, third round (2026-12-02): a learned partner model in the options view, and room options. Shared 2-core
# CPU VM (AVX2), one core per job. Runs were written to /work/runs/chaic38/ and copied here (metrics, curves, the
# headline's final checkpoint). Run from the repository root.
set -e
export PYTHONPATH=$PWD JAX_PLATFORMS=cpu
R=benchmarks/results/chaic_options3_cpu
W=runs/chaic38
# 0. the behaviour model (the BM helper's, default config: 64 recorded episodes per task of the RHP helper, 15
#    epochs); its run is committed as $R/bm (last checkpoint only) and the views below load it by that path
jaxsoc train chaic-bm --out $W/bm --quiet    # then: cp the run to $R/bm, keeping checkpoints/15 only
# 1. the goal-told teacher cloned (60 batches of 640 options) then 30 PPO updates, small-partner network, as the
#    second round's goal_teacher run, with the behaviour model in the view instead of the hand-built evidence
taskset -c 0 python scripts/chaic_options_ppo.py $W/bm_view --bc-batches 60 --updates 30 --preset small-partner \
  --teacher goal --env-args partner_run=$R/bm &
# 2. the same with the room options (and the hand-built evidence)
taskset -c 1 python scripts/chaic_options_ppo.py $W/rooms --bc-batches 60 --updates 30 --preset small-partner \
  --teacher goal --env-args rooms=true &
wait
# evaluation on the committed table's 12 test episodes x 3 seeds per task, same keys (the second round's table as
# the base, so its rows sit beside the new ones)
for run in bm_view rooms; do
  mkdir -p $W/eval_$run && cp benchmarks/results/chaic_options2_cpu/goal_teacher_long/chaic_eval.json $W/eval_$run/
  python -m jaxsoc.cli chaic eval --helper ppo_greedy=$W/$run --seeds 3 --out $W/eval_$run --append
done
python -m jaxsoc.cli chaic eval --helper ppo=$W/bm_view --seeds 3 --out $W/eval_bm_view --append
python scripts/chaic_paired.py $W/eval_bm_view/chaic_eval.json ppo_greedy rhp
# a second training seed of both runs (--seed 1), evaluated the same way
for pair in 0:bm_view:partner_run=$R/bm 1:rooms:rooms=true; do
  core=${pair%%:*}; rest=${pair#*:}; run=${rest%%:*}; args=${rest#*:}
  (taskset -c $core python scripts/chaic_options_ppo.py $W/${run}_s1 --seed 1 --bc-batches 60 --updates 30 \
    --preset small-partner --teacher goal --env-args $args && mkdir -p $W/eval_${run}_s1 && \
   cp benchmarks/results/chaic_options2_cpu/goal_teacher_long/chaic_eval.json $W/eval_${run}_s1/ && \
   python -m jaxsoc.cli chaic eval --helper ppo_greedy=$W/${run}_s1 ppo=$W/${run}_s1 --seeds 3 \
     --out $W/eval_${run}_s1 --append) &
done
wait
# the checkpoint curve of bm_view (every 5 updates, 1 seed each)
python scripts/chaic_options_tr_curve.py $W/bm_view $W/bm_view/checkpoints $R/bm_view/tr_curve --bc-options 38400
