# run from the repository root; 2 shared CPU cores
PYTHONPATH=$PWD JAX_PLATFORMS=cpu /work/venv/bin/python -m jaxsoc.cli train hrl --out runs/hrl_paper --quiet \
  --set preset=tiny --set reward=paper --set mask_invalid=false --set imitation_frames=0 \
  --set grab_frames=64000 --set put_frames=64000 --set eval_episodes=256
