#!/usr/bin/env bash
# Issue 40, 2026-12-02: BC on pixels through the cell-aligned encoder (networks.bib.CellEncoder), trained end to end
# from random with the keypoint auxiliary loss (agent, then objects). One CPU core per job (taskset), two at once.
# Run from the repository root; runs go to runs/bib41/, tables to this folder.
set -euo pipefail
R=runs/bib41
OUT=benchmarks/results/bib_learners_cpu/cells
export JAX_PLATFORMS=cpu
CELLS="--set encoder=cells --set query_steps=8 --set query_trial=any --set aux_weight=1.0 --set context_pairs=16
  --set batch_size=16 --set lr=0.001"

# 1. BC-MLP, 2,000 generated background episodes, 20 epochs of 100 steps, seeds 0 and 1 at once (about 35 min each)
for s in 0 1; do
  taskset -c $s python -m jaxsoc.cli train bib-bc-mlp --out $R/skp-mlp-s$s --seed $s --episodes 2000 --seeds 1 \
    --epochs 20 --quiet $CELLS &
done
wait
