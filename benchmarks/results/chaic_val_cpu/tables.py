"""Before / after tables for issue 59 (CHAIC): per task TR of w/o, RHP, BM and the options helper's training seeds,
and the means over the 8 tasks (each task's mean of 12 test episodes x eval seeds).

Usage: python tables.py AFTER.json"""

import json
import sys
from pathlib import Path

import numpy as np

TASKS = ["normal", "high_target", "high_container", "high_goalplace", "low_target", "obstacle", "shopping", "furniture"]
B = "benchmarks/results/chaic_options3_cpu"
RUNS = ((0, "bm_view"), (1, "bm_view_s1"))
before = {s: json.loads(Path(f"{B}/{d}/chaic_eval.json").read_text())["results"] for s, d in RUNS}
after_doc = json.loads(Path(sys.argv[1]).read_text())
after = after_doc["results"]
seeds = sorted(int(h[5:]) for h in after["normal"] if h.startswith("ppo_s"))


def mean_se(res, h):
    tr = np.array([res[t][h]["tr"] for t in TASKS])
    se = np.array([res[t][h]["std_tr"] for t in TASKS])
    return tr.mean(), np.sqrt((se**2).sum()) / len(TASKS)


def over_seeds(values):
    v = np.array(values)
    return v.mean(), (v.std(ddof=1) / np.sqrt(len(v)) if len(v) > 1 else float("nan"))


print(
    "| task | w/o before / after | RHP before / after | BM before / after | helper before (s0, s1) | helper after ("
    + ", ".join(f"s{s}" for s in seeds)
    + ") | helper after, mean ± SE over seeds |"
)
print("|---|---|---|---|---|---|---|")
for t in TASKS:
    row = [t]
    for h in ("none", "rhp", "bm"):
        row.append(f"{before[0][t][h]['tr']:.3f} / {after[t][h]['tr']:.3f}")
    row.append(", ".join(f"{before[s][t]['ppo']['tr']:.3f}" for s in (0, 1)))
    vals = [after[t][f"ppo_s{s}"]["tr"] for s in seeds]
    row.append(", ".join(f"{v:.3f}" for v in vals))
    m, se = over_seeds(vals)
    row.append(f"{m:.3f} ± {se:.3f}")
    print("| " + " | ".join(row) + " |")
row = ["**mean of 8 tasks**"]
for h in ("none", "rhp", "bm"):
    (mb, sb), (ma, sa) = mean_se(before[0], h), mean_se(after, h)
    row.append(f"{mb:.3f} ± {sb:.3f} / {ma:.3f} ± {sa:.3f}")
bvals = [mean_se(before[s], "ppo")[0] for s in (0, 1)]
row.append(", ".join(f"{v:.3f}" for v in bvals) + f" (mean {np.mean(bvals):.3f} ± {abs(bvals[0] - bvals[1]) / 2:.3f})")
avals = [mean_se(after, f"ppo_s{s}")[0] for s in seeds]
row.append(", ".join(f"{v:.3f}" for v in avals))
m, se = over_seeds(avals)
row.append(f"**{m:.3f} ± {se:.3f}**")
print("| " + " | ".join(row) + " |")
print()
print("after setting:", {k: v for k, v in after_doc["setting"].items() if k != "timing"})
print("per-seed mean TR (after):", {f"s{s}": round(v, 4) for s, v in zip(seeds, avals)})
print("per-seed episode SE (after):", {f"s{s}": round(mean_se(after, f"ppo_s{s}")[1], 4) for s in seeds})
