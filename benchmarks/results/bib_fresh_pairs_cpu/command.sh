#!/bin/bash
# Issue 59: the stored BIB observers scored once on generated pairs of a seed never used before (59), with the
# cards' own commands otherwise (pairs, batch, --no-reference); runs after seeds.sh, one process at a time.
set -x
cd /work/main
J=".venv/bin/jaxsoc"
R=/work/runs/i59/bib_seed59
mkdir -p $R
nice -n 10 $J bib eval model:bib-bc-mlp-symbolic --pairs 300 --seed 59 --no-reference --batch 100 --out $R/sym-mlp
nice -n 10 $J bib eval model:bib-bc-mlp-pixels --pairs 100 --seed 59 --no-reference --batch 50 --out $R/pix-mlp
nice -n 10 $J bib eval model:bib-bc-rnn-pixels --pairs 20 --seed 59 --no-reference --batch 20 --out $R/pix-rnn
nice -n 10 $J bib eval model:bib-video-rnn --pairs 40 --seed 59 --no-reference --batch 40 --out $R/video
echo ALL DONE
