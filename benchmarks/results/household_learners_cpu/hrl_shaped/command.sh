# run from the repository root; 2 shared CPU cores
PYTHONPATH=$PWD JAX_PLATFORMS=cpu /work/venv/bin/python -m jaxsoc.cli train hrl --out runs/hrl_shaped --quiet \
  --set preset=tiny --set max_steps=50 --set imitation_frames=192000 --set imitation_lr=3e-3 --set imitation_epochs=4 \
  --set lr=1e-4 --set grab_frames=640 --set put_frames=64000 --set eval_episodes=256
