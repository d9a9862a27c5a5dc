"""The benchmark's metrics (paper §5.1.2, appendix E.1; the original's ``challenge.py`` and ``utils/*.py``) from
``play.play`` results reshaped to ``[episodes, seeds]``.

- **TR**, transport rate: per episode the transported share of the targets (furniture: of their mass), averaged
  over seeds, then over episodes; **STD_TR** its standard error over episodes (the paper's table 4).
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
    that ended within the event budget)."""
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
    }
    if alone is not None:
        h = amount.mean(1)
        a = _runs(alone, "transported_by", shape).sum(-1).mean(1)
        top = np.maximum(h, a)
        out["ei"] = float(np.where(top > 0, (h - a) / np.where(top > 0, top, 1.0), 0.0).mean())
    return out
