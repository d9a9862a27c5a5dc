"""The transport rate of an options run's checkpoints against the options it had seen (issue 38): each checkpoint
of ``CHECKPOINTS`` (a run's ``checkpoints/`` or a copy holding more steps than the run keeps) is played as the
helper on the validation episodes of every task (``--split``; ``learners.chaic.evaluation.evaluate``, as ``jaxsoc
chaic eval``; ``--seeds`` runs each; the test split is refused: it is scored once, after training), and the mean TR
over the tasks is written to ``OUT.csv`` and plotted in ``OUT.png`` beside the rule helpers' means in
``--baselines`` (a ``chaic_eval.json``, of the same split). Usage: ``python scripts/chaic_options_tr_curve.py RUN
CHECKPOINTS OUT [--seeds 1] [--bc-options 25600] [--earlier EARLIER.csv]``; ``RUN`` (a ``jaxsoc train
chaic-options`` run) gives the options per update (``metrics.csv``)."""

import argparse
import csv
import shutil
import tempfile
from pathlib import Path

import numpy as np

from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.envs.chaic import tasks as T
from jaxsoc.learners.chaic.evaluation import evaluate, read_results
from jaxsoc.learners.chaic.ppo_helper import load_ppo_helper
from jaxsoc.learners.run_log import save_figure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("run")
    parser.add_argument("checkpoints")
    parser.add_argument("out")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--split", default="validation", help="the episodes scored (any split but test)")
    parser.add_argument("--bc-options", type=int, default=0, help="options cloned before PPO (the x offset)")
    parser.add_argument("--baselines", default="benchmarks/results/chaic_eval_cpu/chaic_eval.json")
    parser.add_argument("--earlier", help="an earlier OUT.csv of the same run's earlier checkpoints, prepended")
    args = parser.parse_args()
    T.check_training_split(args.split)
    with open(Path(args.run) / "metrics.csv") as f:
        first = next(csv.DictReader(f))
    per_update = int(float(first["frames"])) // int(float(first["update"]))
    steps = sorted(int(p.name) for p in Path(args.checkpoints).iterdir() if p.name.isdigit())
    tasks = list(K.TASKS)
    rows = []
    if args.earlier:
        with open(args.earlier) as f:
            rows = [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]
    for step in steps:
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copytree(Path(args.checkpoints) / str(step), Path(tmp) / "checkpoints" / str(step))
            helper = load_ppo_helper(tmp)
            results = evaluate(tasks, ["ppo"], seeds=args.seeds, split=args.split, agents={"ppo": helper})
        tr = {task: results[task]["ppo"]["tr"] for task in tasks}
        options = args.bc_options + step * per_update
        rows.append({"update": step, "options": options, **tr, "mean": float(np.mean(list(tr.values())))})
        print(rows[-1], flush=True)
    with open(f"{args.out}.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    base = read_results(Path(args.baselines))["results"]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot([r["options"] for r in rows], [r["mean"] for r in rows], "o-", label=f"options PPO ({args.seeds} seed(s))")
    for helper, style in (("none", ":"), ("rhp", "--"), ("bm", "-.")):
        if helper in base[tasks[0]]:
            ax.axhline(np.mean([base[t][helper]["tr"] for t in tasks]), ls=style, color="k", lw=1, label=helper)
    ax.set_xlabel("options seen (warm start + PPO)")
    ax.set_ylabel(f"mean TR, 8 tasks x 12 {args.split} episodes")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, f"{args.out}.png", dpi=100)


if __name__ == "__main__":
    main()
