# run from the repository root; one core of the shared 2-core CPU VM (9.5 min); --set seed=1 and seed=2 for the other seeds (hrl_marks_s1/, hrl_marks_s2/: curves and metrics, no checkpoint)
PYTHONPATH=$PWD JAX_PLATFORMS=cpu /work/venv/bin/python -m jaxsoc.cli train hrl --out runs/hrl_marks --quiet \
  --set preset=tiny-marks --set teacher=belief --set max_steps=50 --set imitation_frames=256000 \
  --set imitation_lr=3e-3 --set imitation_epochs=4 --set lr=1e-4 --set grab_frames=640 --set put_frames=64000 \
  --set eval_episodes=256
# the other rows of RESULTS' table: --set preset=tiny-belief or small-belief (seeds 0 and 1), same flags
