#!/usr/bin/env bash
# The README's main job: set up a virtual environment (with the CUDA build of jax when an NVIDIA GPU is
# present) and run `jaxsoc demo`, which runs thousands of worlds in parallel and writes a GIF.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then
  .venv/bin/python -m pip install -q -e ".[cuda]"
else
  .venv/bin/python -m pip install -q -e .
fi
.venv/bin/jaxsoc demo "$@"
