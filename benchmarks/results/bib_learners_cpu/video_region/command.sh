#!/usr/bin/env bash
# Issue 40 item 4: the Video-RNN's surprise over the whole frame (the paper's) against over the agent's cells
# (`jaxsoc bib eval --region agent`), the same trained model and the same pairs. One CPU core (taskset -c 0).
# Run from the repository root; runs go to runs/bib-region/, tables to this folder.
set -euo pipefail
J="taskset -c 0 python -m jaxsoc.cli"
R=runs/bib-region
OUT=benchmarks/results/bib_learners_cpu/video_region
export JAX_PLATFORMS=cpu

# 1. ATC pretraining of the encoder on 1,000 generated background episodes (the CPU scale's recipe)
$J train bib-atc --out $R/atc --episodes 1000 --quiet \
  --set batch_size=64 --set pairs_per_episode=2 --set epochs=20
# 2. the Video-RNN on the frozen encoder, half-width U-Net, 1 seed, 30 epochs
$J train bib-video-rnn --out $R/video --encoder $R/atc --episodes 1000 --seeds 1 --epochs 30 --quiet \
  --set finetune_encoder=false --set lr=0.001 --set channels=8,16,32
# 3. VOE accuracy on 100 generated pairs per type (seed 1), the frame's surprise and the agent's (these two ran at
#    once, the second on core 1)
$J bib eval $R/video --pairs 100 --seed 1 --batch 50 --out $OUT/frame
$J bib eval $R/video --pairs 100 --seed 1 --batch 50 --no-reference --region agent --out $OUT/agent
