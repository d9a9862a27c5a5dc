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

# 2. VOE accuracy of each seed on 1,000 generated pairs per type (seed 1), one core each (about 20 min each)
taskset -c 0 python -m jaxsoc.cli bib eval $R/skp-mlp-s0 --pairs 1000 --seed 1 --no-reference --batch 100 \
  --out $OUT/mlp_s0_1000 &
taskset -c 1 python -m jaxsoc.cli bib eval $R/skp-mlp-s1 --pairs 1000 --seed 1 --no-reference --batch 100 \
  --out $OUT/mlp_s1_1000 &
wait

# 3. BC-RNN (every real step of a drawn trial a query, batch 32, 20 epochs of 50 steps) on seed 1's encoder, frozen:
#    its latents of every frame are computed once (13.5 of its 19.4 min); scored on 200 pairs per type
taskset -c 1 python -m jaxsoc.cli train bib-bc-rnn --out $R/skp-rnn-frozen --encoder $R/skp-mlp-s1 --seed 0 \
  --episodes 2000 --seeds 1 --epochs 20 --quiet --set encoder=cells --set finetune_encoder=false \
  --set query_steps=0 --set query_trial=any --set lr=0.001
taskset -c 1 python -m jaxsoc.cli bib eval $R/skp-rnn-frozen --pairs 200 --seed 1 --no-reference --batch 50 \
  --out $OUT/rnn_200
# committed here: the runs with their last checkpoint (skp-mlp-s0/, skp-mlp-s1/, skp-rnn-frozen/)
