"""Plots an options run's curves (issue 38): the warm start's accuracy and loss (``bc.csv``) and PPO's mean episode
return and entropy (``metrics.csv``) against the options seen. Usage: ``python scripts/chaic_options_curve.py RUN
OUT.png``."""

import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from jaxsoc.learners.run_log import save_figure  # noqa: E402


def rows(path):
    with open(path) as f:
        return [{k: float(v) for k, v in r.items()} for r in csv.DictReader(f)]


def main() -> None:
    run, out = sys.argv[1], sys.argv[2]
    bc, ppo = rows(f"{run}/bc.csv"), rows(f"{run}/metrics.csv")
    offset = bc[-1]["options"]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.5))
    a.plot([r["options"] for r in bc], [r["accuracy"] for r in bc], label="BC accuracy (rules' option)")
    a.plot([r["options"] for r in bc], [r["loss"] for r in bc], label="BC loss")
    a.set_xlabel("expert options")
    a.legend()
    x = [offset + r["frames"] for r in ppo]
    b.plot(x, [r["mean_return"] for r in ppo], "o-", label="mean return (own transported share)")
    b.plot(x, [r["entropy"] for r in ppo], "s-", label="entropy")
    b.set_xlabel("options (warm start + PPO)")
    b.legend()
    fig.suptitle("CHAIC options helper: warm start, then PPO")
    fig.tight_layout()
    save_figure(fig, out, dpi=100)


if __name__ == "__main__":
    main()
