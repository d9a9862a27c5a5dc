#!/usr/bin/env bash
# The README's main job: set up a virtual environment (with the CUDA build of jax when an NVIDIA GPU is
# present) and train a PPO agent on BabyAI-GoToRedBallGrey: the tiny model with a CPU-friendly recipe
# (2 epochs, lr 1e-3) reaches >90% success in about 200k frames (2-5 minutes on a 2-core CPU), then is
# evaluated on 256 fixed levels (sampled actions, greedy beside them). The last line says what was trained,
# both evaluations, and where the outputs are: runs/quickstart/{metrics.csv,metrics.json,curves.png,
# episodes.gif,checkpoints/}.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then
  .venv/bin/python -m pip install -q -e ".[cuda]"
else
  .venv/bin/python -m pip install -q -e .
fi
.venv/bin/jaxsoc train ppo --env BabyAI-GoToRedBallGrey-v0 --preset tiny --frames 2e5 \
  --set update_epochs=2 --set lr=1e-3 --eval-episodes 256 --out runs/quickstart "$@"
