"""Scores one answerer (a checkpoint directory or model:NAME) as the excalibur-answerer card is scored:
oracle / none / random explorers + answerer at budgets 2500 / 500 (256 test episodes) and the test bank from a
full and an empty memory; and its validation-bank accuracies. Writes JSON to argv[2]."""

import json
import sys
import time
from pathlib import Path

from jaxsoc.envs.excalibur import bank
from jaxsoc.learners.excalibur import answerer as ANS
from jaxsoc.learners.excalibur.models import evaluate_answerer_model

ref, out = sys.argv[1], sys.argv[2]
start = time.time()
figures = evaluate_answerer_model(ref)
model, variables, _ = ANS.load(ref)
val = ANS.bank_accuracy(model, variables, bank.cached_bank("val", 0))
blob = {"ref": ref, "figures": figures, "val": val, "seconds": time.time() - start}
Path(out).write_text(json.dumps(blob, indent=1))
print(json.dumps({"ref": ref, "val": val, **{k: v["value"] for k, v in figures.items()}}))
