#!/bin/sh
# Issue 38, second round: CHAIC's helper over options, on the shared 2-core CPU VM (one core per job). The runs were
# written to runs/ and copied here (metrics, curves, the final checkpoint).
set -e
export PYTHONPATH=$PWD JAX_PLATFORMS=cpu
R=benchmarks/results/chaic_options2_cpu
# the baselines: the committed table, then the rules through the options (the teachers' ceilings)
mkdir -p runs/eval_teachers && cp benchmarks/results/chaic_eval_cpu/chaic_eval.json runs/eval_teachers/
python -m jaxsoc.cli chaic eval --helper rhp_options goal_options --seeds 3 --out runs/eval_teachers --append
# 1. clone the RHP rules' options (40 batches), then 30 PPO updates; the small network
taskset -c 1 python scripts/chaic_options_ppo.py runs/chaic_options2 --bc-batches 40 --updates 30
# 2. clone the rules told the true goal (60 batches), the small-partner network reading the partner evidence; 30 updates
taskset -c 0 python scripts/chaic_options_ppo.py runs/chaic_options_goal --bc-batches 60 --updates 30 \
  --preset small-partner --teacher goal
# 3. the goal-teacher run continued to 150 PPO updates (a copy, so the 30-update run stays as it was)
cp -r runs/chaic_options_goal runs/chaic_options_goal_long
taskset -c 1 python scripts/chaic_options_ppo.py runs/chaic_options_goal_long --resume --updates 150 \
  --checkpoint-every 10 --preset small-partner --teacher goal
# evaluation on the committed table's 12 test episodes x 3 seeds per task, same keys, sampled and greedy
for pair in chaic_options2:rhp_teacher chaic_options_goal:goal_teacher chaic_options_goal_long:goal_teacher_long; do
  run=${pair%%:*}; out=runs/eval_${pair##*:}
  mkdir -p $out && cp runs/eval_teachers/chaic_eval.json $out/
  python -m jaxsoc.cli chaic eval --helper ppo=runs/$run ppo_greedy=runs/$run --seeds 3 --out $out --append
done
python scripts/chaic_paired.py runs/eval_goal_teacher_long/chaic_eval.json ppo_greedy rhp
# transport rate against the options seen: every checkpoint (runs 1 and 2 kept their last 3, as the script did then;
# steps 5-15 were copied out while they trained; it keeps every one now), 1 seed
python scripts/chaic_options_tr_curve.py runs/chaic_options2 CKPTS_A $R/rhp_teacher/tr_curve --bc-options 25600
python scripts/chaic_options_tr_curve.py runs/chaic_options_goal CKPTS_B $R/goal_teacher/tr_curve --bc-options 38400
# steps 40, 60, 80, 100, 120, 150 of the continued run, after the first 30 updates' points
python scripts/chaic_options_tr_curve.py runs/chaic_options_goal_long CKPTS_LONG $R/goal_teacher_long/tr_curve \
  --bc-options 38400 --earlier $R/goal_teacher/tr_curve.csv
