"""The options helper at the committed budget (60 warm-start batches + 30 PPO updates) against the cut budget of
``../chaic_val_cpu`` (15 + 5): per task TR of each training seed, the means over the 8 tasks (each task's mean of 12
test episodes x 3 runs) and the paired difference against RHP on the same episodes and keys.

Usage: python tables.py FULL.json (the eval_all.py output of this directory's runs)"""

import json
import sys
from pathlib import Path

import numpy as np

TASKS = ["normal", "high_target", "high_container", "high_goalplace", "low_target", "obstacle", "shopping", "furniture"]
CUT = json.loads(Path("benchmarks/results/chaic_val_cpu/eval_test/chaic_eval.json").read_text())["results"]
FULL = json.loads(Path(sys.argv[1]).read_text())["results"]
SEEDS = (0, 1, 2)


def task_mean(res, helper):
    """Returns the mean TR over the 8 tasks of ``helper`` in ``res``."""
    return float(np.mean([res[t][helper]["tr"] for t in TASKS]))


def over_seeds(values):
    v = np.asarray(values, float)
    return v.mean(), v.std(ddof=1) / np.sqrt(len(v))


print("| task | w/o | RHP | BM | helper, 15 + 5 (s0, s1, s2) | helper, 60 + 30 (s0, s1, s2) | 60 + 30, mean ± SE |")
print("|---|---|---|---|---|---|---|")
for t in TASKS:
    cut = [CUT[t][f"ppo_s{s}"]["tr"] for s in SEEDS]
    full = [FULL[t][f"ppo_s{s}"]["tr"] for s in SEEDS]
    m, se = over_seeds(full)
    base = " | ".join(f"{FULL[t][h]['tr']:.3f}" for h in ("none", "rhp", "bm"))
    print(
        f"| {t} | {base} | {', '.join(f'{v:.3f}' for v in cut)} | {', '.join(f'{v:.3f}' for v in full)} | "
        f"{m:.3f} ± {se:.3f} |"
    )
cut = [task_mean(CUT, f"ppo_s{s}") for s in SEEDS]
full = [task_mean(FULL, f"ppo_s{s}") for s in SEEDS]
(mc, sc), (mf, sf) = over_seeds(cut), over_seeds(full)
base = " | ".join(f"{task_mean(FULL, h):.3f}" for h in ("none", "rhp", "bm"))
print(
    f"| **mean of 8 tasks** | {base} | {', '.join(f'{v:.3f}' for v in cut)} (mean {mc:.3f} ± {sc:.3f}) | "
    f"{', '.join(f'{v:.3f}' for v in full)} | **{mf:.3f} ± {sf:.3f}** |"
)
rhp = task_mean(FULL, "rhp")
print()
print(
    "paired against RHP (same episodes and keys), mean over 8 tasks, per seed:",
    {f"s{s}": round(v - rhp, 4) for s, v in zip(SEEDS, full)},
)
diff = over_seeds([v - rhp for v in full])
print(f"helper - RHP over seeds: {diff[0]:+.3f} ± {diff[1]:.3f}")
