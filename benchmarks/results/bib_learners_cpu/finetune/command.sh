#!/usr/bin/env bash
# Issue 40: BC observers with the encoder out of the way (symbolic inputs), and fine-tuned end to end from a
# random encoder with the agent-cell auxiliary head; a background trial drawn as the query, its real steps as
# queries, the other eight trials as context. One CPU core (taskset -c 0), shared with two other sessions.
# Run from the repository root; runs go to runs/bib40/, tables to this folder.
set -euo pipefail
J="taskset -c 0 python -m jaxsoc.cli"
R=runs/bib40
OUT=benchmarks/results/bib_learners_cpu/finetune
export JAX_PLATFORMS=cpu

# 1. the symbolic diagnostic: BC-MLP on positions, 2,000 generated background episodes, 3 seeds (16 min)
$J train bib-bc-mlp --out $R/sym-mlp --episodes 2000 --seeds 3 --epochs 40 --quiet \
  --set inputs=symbolic --set query_steps=0 --set query_trial=any --set lr=0.001

# 2. pixels, the encoder fine-tuned from random with the agent-cell head (weight 1), 1,500 episodes, 1 seed;
#    4 query steps and 10 context pairs per episode, batch 8, to fit the CPU (19 min)
$J train bib-bc-mlp --out $R/ft-mlp --episodes 1500 --seeds 1 --epochs 9 --quiet \
  --set query_steps=4 --set query_trial=any --set aux_weight=1.0 --set context_pairs=10 \
  --set batch_size=8 --set lr=0.0005

# 3. VOE accuracy beside the paper's Table 1: both on 50 pairs per type (pixels are dear to score on a CPU),
#    the symbolic run also on 300; then linear probes of the states
$J bib eval $R/ft-mlp $R/sym-mlp --pairs 50 --seed 1 --no-reference --batch 50 --out $OUT/pairs50
$J bib eval $R/sym-mlp --pairs 300 --seed 1 --no-reference --batch 100 --out $OUT/pairs300
$J bib probe $R/sym-mlp $R/ft-mlp --episodes 200 --out $OUT
# the runs committed here are runs/bib40/{sym-mlp,ft-mlp} with only their last checkpoint step (ft-mlp's removed
# on 2026-12-02, superseded by ../cells/)

# 4. (2026-11-30) the symbolic diagnostic with BC-RNN: 2,000 episodes, 2 seeds, 20 epochs (16.6 min), scored on 200
#    pairs per type in two halves at once (sym_rnn_a/, sym_rnn_b/); committed without its 11 MB checkpoint
$J train bib-bc-rnn --out $R/sym-rnn --episodes 2000 --seeds 2 --epochs 20 --quiet \
  --set inputs=symbolic --set query_steps=0 --set query_trial=any --set lr=0.001
$J bib eval $R/sym-rnn --pairs 200 --seed 1 --no-reference --batch 100 --out $OUT/sym_rnn_a \
  --types preference multi_agent inaccessible_goal efficiency_path efficiency_time
taskset -c 1 python -m jaxsoc.cli bib eval $R/sym-rnn --pairs 200 --seed 1 --no-reference --batch 100 --out $OUT/sym_rnn_b \
  --types efficiency_irrational instrumental_no_barrier instrumental_inconsequential_barrier instrumental_blocking_barrier

# 5. (2026-12-02) the symbolic BC-MLP (the committed sym-mlp/) on 1,000 pairs per type, in two halves at once
F=benchmarks/results/bib_learners_cpu/finetune
$J bib eval $F/sym-mlp --pairs 1000 --seed 1 --no-reference --batch 100 --out $OUT/sym_mlp_1000_a \
  --types preference multi_agent inaccessible_goal efficiency_path efficiency_time
taskset -c 1 python -m jaxsoc.cli bib eval $F/sym-mlp --pairs 1000 --seed 1 --no-reference --batch 100 --out $OUT/sym_mlp_1000_b \
  --types efficiency_irrational instrumental_no_barrier instrumental_inconsequential_barrier instrumental_blocking_barrier
