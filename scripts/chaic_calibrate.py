"""Calibrates CHAIC's free timing constants on the *train* split; shows what the chosen values give on the test split.

TDW's action durations are emergent from its animations, so three constants of jaxsoc's CHAIC are fitted to the
paper's table 2 (``catalogue.DURATIONS``, ``catalogue.SLOWNESS``, ``world.Timing.child``):

1. ``move`` (frames per 0.5 m): the constrained agent alone (w/o) on the normal task against the paper's w/o TR;
2. the wheelchair's slowness (a factor on its walking time): w/o on low target against the paper's;
3. the child's decision period (frames): w/o and RHP on shopping, their TR and ER against the paper's (a trade-off:
   TR and ER move together, so this one is reported, not chosen).

Each candidate is played on the first ``--episodes`` episodes of the train split (training floor plans, another seed
stream than the 12 test episodes), ``--seeds`` runs each, with ``commands.evaluate``; the slowness is swept through
the move duration (the wheelchair's walks take ``move * slowness`` frames and nothing else it does depends on
either, so with the helper absent ``move = chosen_move * s / SLOWNESS`` plays slowness ``s``). Then the current and
the train-chosen values are played on the test split (12 episodes x 3 seeds, as ``jaxsoc chaic eval``)::

    PYTHONPATH=. python scripts/chaic_calibrate.py --out benchmarks/results/chaic_calibration_cpu

writes ``chaic_calibration.json`` (every candidate's metrics) and ``chaic_calibration.md`` (the tables).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the checkout's jaxsoc, without PYTHONPATH

from jaxsoc.envs.chaic import catalogue as K  # noqa: E402
from jaxsoc.envs.chaic import commands as C  # noqa: E402
from jaxsoc.envs.chaic import world as W  # noqa: E402

MOVES = (8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 16.0)
SLOWNESSES = (1.0, 1.1, 1.2, 1.25)
CHILD_PERIODS = (50.0, 100.0, 200.0)
WHEELCHAIR = float(K.SLOWNESS[K.ABILITY["wheelchair"]])
PAPER_WO = {task: K.PAPER_TR[task][0] for task in K.TASKS}
PAPER_RHP = {task: K.PAPER_TR[task][2] for task in K.TASKS}


def play(task: str, helpers: list[str], split: str, episodes: int | None, seeds: int, **timing) -> dict:
    """Returns ``{helper: metrics.summary}`` for ``task`` played with ``world.Timing(**timing)``."""
    return C.evaluate([task], helpers, seeds, split=split, episodes=episodes, timing=W.Timing(**timing))[task]


def closest(rows: list[dict], target: float) -> dict:
    """Returns the row of ``rows`` whose ``tr`` is closest to ``target`` (the first on a tie)."""
    return min(rows, key=lambda r: abs(r["tr"] - target))


def calibrate(episodes: int, seeds: int) -> dict:
    """Returns the train-split sweeps and the chosen ``move`` and ``slowness``."""
    out: dict = {"episodes": episodes, "seeds": seeds, "split": "train"}
    rows = []
    for move in MOVES:
        m = play("normal", ["none"], "train", episodes, seeds, move=move)["none"]
        rows.append({"move": move, "tr": m["tr"], "std_tr": m["std_tr"]})
        print(f"normal w/o, move {move:g}: TR {m['tr']:.3f} +- {m['std_tr']:.3f}", flush=True)
    out["move"] = rows
    move = closest(rows, PAPER_WO["normal"])["move"]
    rows = []
    for slow in SLOWNESSES:
        m = play("low_target", ["none"], "train", episodes, seeds, move=move * slow / WHEELCHAIR)["none"]
        rows.append({"slowness": slow, "tr": m["tr"], "std_tr": m["std_tr"]})
        print(f"low_target w/o, slowness {slow:g} (move {move:g}): TR {m['tr']:.3f} +- {m['std_tr']:.3f}", flush=True)
    out["slowness"] = rows
    slowness = closest(rows, PAPER_WO["low_target"])["slowness"]
    rows = []
    for child in CHILD_PERIODS:
        # the rider is not slowed, so its walks take ``move`` frames whatever the wheelchair's slowness
        ms = play("shopping", ["none", "rhp"], "train", episodes, seeds, move=move, child=child)
        rows.append({"child": child, **{h: {k: ms[h][k] for k in ("tr", "std_tr", "er")} for h in ms}})
        print(
            f"shopping, child every {child:g}: w/o {ms['none']['tr']:.3f} (ER {ms['none']['er']:.2f}), "
            f"RHP {ms['rhp']['tr']:.3f} (ER {ms['rhp']['er']:.2f})",
            flush=True,
        )
    out["child"] = rows
    out["chosen"] = {"move": move, "slowness": slowness}
    return out


def on_test(move: float, slowness: float) -> dict:
    """Returns ``{task: w/o metrics}`` on the test split (12 episodes x 3 seeds) for normal and low target with
    ``move`` and the wheelchair's ``slowness``."""
    normal = play("normal", ["none"], "test", None, 3, move=move)["none"]
    low = play("low_target", ["none"], "test", None, 3, move=move * slowness / WHEELCHAIR)["none"]
    return {"normal": normal, "low_target": low}


def format_markdown(result: dict) -> str:
    """Returns the sweeps and the test-split check as markdown tables."""
    n, s = result["train"]["episodes"], result["train"]["seeds"]
    lines = [f"Train split, the first {n} episodes x {s} seed(s); w/o = the constrained agent alone.", ""]
    lines += ["| move (frames per 0.5 m) | normal w/o TR | SE |", "|---:|---:|---:|"]
    lines += [f"| {r['move']:g} | {r['tr']:.3f} | {r['std_tr']:.3f} |" for r in result["train"]["move"]]
    lines += [f"| paper | {PAPER_WO['normal']:.2f} | |", ""]
    chosen = result["train"]["chosen"]
    lines += [f"| wheelchair slowness (move {chosen['move']:g}) | low target w/o TR | SE |", "|---:|---:|---:|"]
    lines += [f"| {r['slowness']:g} | {r['tr']:.3f} | {r['std_tr']:.3f} |" for r in result["train"]["slowness"]]
    lines += [f"| paper | {PAPER_WO['low_target']:.2f} | |", ""]
    lines += [f"| child period (frames, move {chosen['move']:g}) | w/o TR | w/o ER | RHP TR | RHP ER |"]
    lines += ["|---:|---:|---:|---:|---:|"]
    for r in result["train"]["child"]:
        lines.append(
            f"| {r['child']:g} | {r['none']['tr']:.3f} | {r['none']['er']:.2f} | {r['rhp']['tr']:.3f} | "
            f"{r['rhp']['er']:.2f} |"
        )
    lines += [f"| paper | {PAPER_WO['shopping']:.2f} | | {PAPER_RHP['shopping']:.2f} | 0.30 |", ""]
    lines += ["Test split (12 episodes x 3 seeds), w/o TR:", ""]
    lines += ["| values | move | slowness | normal | low target |", "|---|---:|---:|---:|---:|"]
    for name, row in result["test"].items():
        lines.append(
            f"| {name} | {row['move']:g} | {row['slowness']:g} | {row['normal']['tr']:.3f} | "
            f"{row['low_target']['tr']:.3f} |"
        )
    lines.append(f"| paper | | | {PAPER_WO['normal']:.2f} | {PAPER_WO['low_target']:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=96, help="train episodes per candidate (default 96)")
    parser.add_argument("--seeds", type=int, default=1, help="runs per episode (default 1)")
    parser.add_argument("--out", help="directory for chaic_calibration.{json,md}")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    train = calibrate(args.episodes, args.seeds)
    current = {"move": float(K.DURATIONS["move"]), "slowness": WHEELCHAIR}
    test = {"current": {**current, **on_test(**current)}}
    if train["chosen"] != current:
        test["train-chosen"] = {**train["chosen"], **on_test(**train["chosen"])}
    result = {"train": train, "current": current, "test": test, "seconds": time.perf_counter() - start}
    text = format_markdown(result)
    print(text)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "chaic_calibration.json").write_text(json.dumps(result, indent=1))
        (out / "chaic_calibration.md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
