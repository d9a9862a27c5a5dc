#!/bin/sh
# Issue 38: the CHAIC helper over options, BC warm start on the RHP rules' options then PPO, on the shared 2-core
# CPU VM (one core). The run was stopped by hand at the time budget (see README.md); its last checkpoint is kept.
set -e
PYTHONPATH=$PWD JAX_PLATFORMS=cpu taskset -c 1 python scripts/chaic_options_ppo.py runs/chaic_options \
  --bc-batches 40 --updates 1000   # interrupted after ~35 min of training
# evaluation: the same 12 test episodes x 3 seeds per task and keys as benchmarks/results/chaic_eval_cpu
cp benchmarks/results/chaic_eval_cpu/chaic_eval.json benchmarks/results/chaic_options_cpu/chaic_eval.json
PYTHONPATH=$PWD JAX_PLATFORMS=cpu taskset -c 1 python -m jaxsoc.cli chaic eval --helper ppo=runs/chaic_options \
  --seeds 3 --out benchmarks/results/chaic_options_cpu --append
PYTHONPATH=$PWD python scripts/chaic_options_curve.py benchmarks/results/chaic_options_cpu/run benchmarks/results/chaic_options_cpu/curve.png
