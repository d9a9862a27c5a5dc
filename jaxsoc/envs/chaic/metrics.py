"""The benchmark's metrics (paper §5.1.2, appendix E.1; the original's ``challenge.py`` and ``utils/*.py``) from
``play.play`` results reshaped to ``[episodes, seeds]``.

- **TR**, transport rate: per episode the transported share of the targets (furniture: of their mass), averaged
  over seeds, then over episodes; **STD_TR** its standard error over episodes (the paper's table 4). The
  per-episode rates are kept (``tr_episodes``) so that two helpers played on the same episodes with the same keys
  can be compared pair by pair (``paired_difference``).
- **EI**, efficiency improvement (``utils/EI_calculate.py``): per episode ``(h - a) / max(h, a)`` with ``h``
  and ``a`` the seed-averaged amounts transported with and without the helper (0 when both are 0), averaged.
- **IA**, goal-inference accuracy (``utils/ISR_calculate.py``): the helper's placements the goal still needed
  over all its placements of objects of a possible target class (summed over the runs; None without any).
- **CR**, completion ratio: the helper's share of what was transported (summed over the runs).
- **ER**, emergency rate (shopping): frames the child spent more than 3.5 m from the constrained agent over all
  frames.
"""

from __future__ import annotations

import math

import numpy as np

from jaxsoc.envs.chaic import state as S


def _runs(result: dict, name: str, shape: tuple[int, int]) -> np.ndarray:
    return np.asarray(result[name], np.float64).reshape(shape + np.shape(result[name])[1:])


def summary(helped: dict, alone: dict | None, shape: tuple[int, int]) -> dict:
    """Returns the metrics of ``helped`` (a ``play`` result over ``episodes * seeds`` runs, episode-major) against
    ``alone`` (the same runs without a helper; None: EI is left out): ``tr``, ``std_tr``, ``ei``, ``ia``, ``cr``,
    ``er`` (floats, ``ia``/``cr``/``ei`` None where undefined), ``episodes``, ``seeds``, ``complete`` (share of runs
    that ended within the event budget) and ``tr_episodes`` (the seed-averaged TR of each episode, a list of
    ``episodes`` floats)."""
    tr = _runs(helped, "transport_rate", shape).mean(1)
    amount = _runs(helped, "transported_by", shape).sum(-1)  # [episodes, seeds]
    placed = _runs(helped, "placed", shape)[..., S.HELPER].sum()
    useful = _runs(helped, "useful", shape)[..., S.HELPER].sum()
    by_helper = _runs(helped, "transported_by", shape)[..., S.HELPER].sum()
    frames = _runs(helped, "frames", shape).sum()
    out = {
        "episodes": shape[0],
        "seeds": shape[1],
        "tr": float(tr.mean()),
        "std_tr": float(tr.std(ddof=1) / math.sqrt(len(tr))) if len(tr) > 1 else 0.0,
        "ia": float(useful / placed) if placed > 0 else None,
        "cr": float(by_helper / amount.sum()) if amount.sum() > 0 else None,
        "er": float(_runs(helped, "away_frames", shape).sum() / max(frames, 1.0)),
        "complete": float(np.asarray(helped["complete"]).mean()),
        "ei": None,
        "tr_episodes": [float(x) for x in tr],
    }
    if alone is not None:
        h = amount.mean(1)
        a = _runs(alone, "transported_by", shape).sum(-1).mean(1)
        top = np.maximum(h, a)
        out["ei"] = float(np.where(top > 0, (h - a) / np.where(top > 0, top, 1.0), 0.0).mean())
    return out


def paired_difference(a: dict, b: dict) -> dict:
    """Returns TR of ``b`` minus TR of ``a``, episode by episode, for two ``summary`` results of the same episodes
    played with the same keys (``commands.evaluate`` plays every helper that way): ``diff`` (the mean difference,
    equal to ``b["tr"] - a["tr"]``), ``se`` (its standard error over episodes, ``std(d, ddof=1) / sqrt(n)``; 0
    for one episode), ``episodes`` and ``higher``/``equal``/``lower`` (episodes where ``b``'s seed-averaged TR is
    above, equal to or below ``a``'s). Raises ``ValueError`` when either lacks ``tr_episodes`` (results written
    before they were kept) or their episodes differ in number."""
    missing = [name for name, m in (("first", a), ("second", b)) if "tr_episodes" not in m]
    if missing:
        raise ValueError(f"the {' and '.join(missing)} result has no per-episode TR (tr_episodes): evaluate again")
    x, y = np.asarray(a["tr_episodes"], np.float64), np.asarray(b["tr_episodes"], np.float64)
    if x.shape != y.shape:
        raise ValueError(f"paired results need the same episodes, got {x.size} and {y.size}")
    d = y - x
    return {
        "diff": float(d.mean()),
        "se": float(d.std(ddof=1) / math.sqrt(d.size)) if d.size > 1 else 0.0,
        "episodes": int(d.size),
        "higher": int((d > 0).sum()),
        "equal": int((d == 0).sum()),
        "lower": int((d < 0).sum()),
    }
