# run from the repository root; 2 shared CPU cores
PYTHONPATH=$PWD JAX_PLATFORMS=cpu /work/venv/bin/python -m jaxsoc.cli train hybrid --out runs/hybrid_commit \
  --set preset=paper --set num_envs=16 --set num_steps=20 --set alice_simulations=10 \
  --set stage1_frames=0 --set stage2_frames=16000 --set bc_updates=100 --set bc_epochs=4 \
  --set chunk_updates=5 --set checkpoint_every=1000
