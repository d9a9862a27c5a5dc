"""Paired differences of CHAIC transport rates between two helpers of one ``jaxsoc chaic eval`` result.

``jaxsoc chaic eval`` plays every helper on the same episodes with the same keys, so the difference of two helpers'
TR is best judged episode by episode (``metrics.paired_difference``): per task the mean difference, its standard
error over the task's episodes and how many episodes went each way, then over every task's episodes together::

    PYTHONPATH=. python scripts/chaic_paired.py benchmarks/results/chaic_eval_cpu/chaic_eval.json bm rhp
    PYTHONPATH=. python scripts/chaic_paired.py RESULTS.json bm rhp --out paired.md

(``A B``: the table gives A minus B.) Results written before per-episode rates were kept have no ``tr_episodes``:
evaluate again.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the checkout's jaxsoc, without PYTHONPATH

from jaxsoc.envs.chaic import metrics as M  # noqa: E402


def paired_table(results: dict, first: str, second: str) -> tuple[list[dict], dict]:
    """Returns ``(rows, pooled)``: per task of ``results`` (``{task: {helper: metrics.summary}}``) the paired
    difference ``first - second`` (``metrics.paired_difference`` plus ``task``, and ``tr`` of each helper), and the
    same over every task's episodes together (``task`` "all", the mean over all episodes and its standard error)."""
    rows, pooled_a, pooled_b = [], [], []
    for task, helpers in results.items():
        for name in (first, second):
            if name not in helpers:
                raise ValueError(f"task {task}: no results for helper {name!r} (has {sorted(helpers)})")
        a, b = helpers[second], helpers[first]
        rows.append({"task": task, first: b["tr"], second: a["tr"], **M.paired_difference(a, b)})
        pooled_a += a["tr_episodes"]
        pooled_b += b["tr_episodes"]
    pooled = M.paired_difference({"tr_episodes": pooled_a}, {"tr_episodes": pooled_b})
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    return rows, {"task": "all", first: mean(pooled_b), second: mean(pooled_a), **pooled}


def format_table(rows: list[dict], pooled: dict, first: str, second: str) -> str:
    """Returns the markdown table of ``paired_table``'s rows and pooled row: TRs, the difference with its standard
    error, the difference in standard errors, and the episodes that went each way."""
    lines = [
        f"| task | {first} TR | {second} TR | {first} - {second} | SE (paired) | diff / SE | episodes higher / equal / "
        "lower |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in [*rows, pooled]:
        z = r["diff"] / r["se"] if r["se"] > 0 else math.copysign(math.inf, r["diff"]) if r["diff"] else 0.0
        name = f"**all {r['episodes']}**" if r is pooled else r["task"]
        lines.append(
            f"| {name} | {r[first]:.3f} | {r[second]:.3f} | {r['diff']:+.3f} | {r['se']:.3f} | {z:+.1f} | "
            f"{r['higher']} / {r['equal']} / {r['lower']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", help="a chaic_eval.json")
    parser.add_argument("first", help="helper A (the table gives A - B)")
    parser.add_argument("second", help="helper B")
    parser.add_argument("--out", help="also write the table to this markdown file")
    args = parser.parse_args(argv)
    data = json.loads(Path(args.results).read_text())
    try:
        rows, pooled = paired_table(data["results"], args.first, args.second)
    except ValueError as err:
        print(f"chaic_paired: {err}", file=sys.stderr)
        return 2
    setting = data.get("setting", {})
    head = (
        f"{args.first} - {args.second}, transport rate, paired by episode ({setting.get('split', '?')} split, "
        f"{setting.get('seeds', '?')} seeds per episode, the same keys for both helpers); SE: standard error of the "
        "mean difference over episodes."
    )
    text = f"{head}\n\n{format_table(rows, pooled, args.first, args.second)}"
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
