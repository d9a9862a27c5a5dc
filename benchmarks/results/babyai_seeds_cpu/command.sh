#!/bin/bash
# Issue 59 seeds audit: 2 more training seeds of each single-seed BabyAI model, trained and evaluated as the cards do.
set -x
cd /work/main
J=".venv/bin/jaxsoc"
R=/work/runs/i59
for S in 1 2; do
  [ -f $R/quickstart-s$S/metrics.json ] || nice -n 10 $J train ppo --env BabyAI-GoToRedBallGrey-v0 --preset tiny --frames 2e5 --set update_epochs=2 --set lr=1e-3 --eval-episodes 256 --seed $S --gif-episodes 0 --quiet --out $R/quickstart-s$S
  nice -n 10 $J eval $R/quickstart-s$S --episodes 256 > $R/quickstart-s$S.eval.txt
done
for S in 1 2; do
  [ -f $R/bc-rbg-s$S/metrics.json ] || nice -n 10 $J train bc --env BabyAI-GoToRedBallGrey-v0 --demos /work/runs/demos-rbg --preset tiny --set batch_size=64 --set epoch_length=1280 --set val_episodes=128 --set val_seed=1 --set lr=1e-3 --set max_epochs=50 --seed $S --quiet --out $R/bc-rbg-s$S
  nice -n 10 $J eval $R/bc-rbg-s$S --episodes 512 > $R/bc-rbg-s$S.eval.txt
done
for S in 1 2; do
  [ -f $R/gotolocal-s$S/metrics.json ] || nice -n 10 $J train ppo --env BabyAI-GoToLocal-v0 --preset tiny --frames 5e5 --set update_epochs=2 --set lr=1e-3 --eval-episodes 512 --seed $S --gif-episodes 0 --quiet --out $R/gotolocal-s$S
  nice -n 10 $J eval $R/gotolocal-s$S --episodes 512 > $R/gotolocal-s$S.eval.txt
done
echo ALL DONE
