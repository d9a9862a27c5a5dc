"""Paired comparisons of CHAIC helpers (``metrics.paired_difference``, ``scripts/chaic_paired.py``): the per-episode
rates ``summary`` keeps, the paired standard error against a hand computation, and the script's table."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest

from jaxsoc.envs.chaic import metrics as M

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "chaic_paired.py"


def _result(rates: list[float]) -> dict:
    """A ``play`` result of ``len(rates)`` runs with these transport rates (nothing else matters to TR)."""
    n = len(rates)
    return {
        "transport_rate": np.asarray(rates, np.float32),
        "transported_by": np.zeros((n, 3), np.float32),
        "placed": np.zeros((n, 3), np.int32),
        "useful": np.zeros((n, 3), np.int32),
        "away_frames": np.zeros(n),
        "frames": np.full(n, 3000.0),
        "complete": np.ones(n, bool),
    }


def test_summary_keeps_the_seed_averaged_rate_of_each_episode():
    m = M.summary(_result([0.5, 0.25, 1.0, 0.0, 0.75, 0.75]), None, (3, 2))  # 3 episodes x 2 seeds, episode-major
    assert m["tr_episodes"] == [0.375, 0.5, 0.75]
    assert m["tr"] == pytest.approx(np.mean(m["tr_episodes"]))
    json.dumps(m)  # plain floats: the eval JSON holds them


def test_paired_difference_by_hand():
    a = {"tr_episodes": [0.2, 0.5, 0.5, 0.1]}
    b = {"tr_episodes": [0.3, 0.5, 0.9, 0.0]}
    d = M.paired_difference(a, b)  # b - a: 0.1, 0, 0.4, -0.1
    assert d["diff"] == pytest.approx(0.1)
    sd = math.sqrt(((0.0) ** 2 + 0.1**2 + 0.3**2 + 0.2**2) / 3)  # deviations from the mean 0.1
    assert d["se"] == pytest.approx(sd / 2)
    assert (d["episodes"], d["higher"], d["equal"], d["lower"]) == (4, 2, 1, 1)
    # pairing removes what the episodes share: a constant gap has no error, unpaired errors would be large
    assert M.paired_difference({"tr_episodes": [0.1, 0.9]}, {"tr_episodes": [0.2, 1.0]})["se"] == pytest.approx(0.0)
    with pytest.raises(ValueError, match="per-episode TR"):
        M.paired_difference({"tr": 0.5}, b)
    with pytest.raises(ValueError, match="same episodes"):
        M.paired_difference(a, {"tr_episodes": [0.1]})


def test_script_table(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("chaic_paired_script", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    results = {
        "normal": {"rhp": {"tr": 0.4, "tr_episodes": [0.2, 0.6]}, "bm": {"tr": 0.6, "tr_episodes": [0.5, 0.7]}},
        "obstacle": {"rhp": {"tr": 0.3, "tr_episodes": [0.3, 0.3]}, "bm": {"tr": 0.3, "tr_episodes": [0.2, 0.4]}},
    }
    path = tmp_path / "chaic_eval.json"
    path.write_text(json.dumps({"setting": {"split": "test", "seeds": 3}, "results": results}))
    out = tmp_path / "paired.md"
    assert script.main([str(path), "bm", "rhp", "--out", str(out)]) == 0
    text = out.read_text()
    assert text == capsys.readouterr().out
    # normal: differences 0.3 and 0.1 (mean 0.2, SE 0.1); obstacle: -0.1 and 0.1 (mean 0, SE 0.1)
    assert "| normal | 0.600 | 0.400 | +0.200 | 0.100 | +2.0 | 2 / 0 / 0 |" in text
    assert "| obstacle | 0.300 | 0.300 | +0.000 | 0.100 | +0.0 | 1 / 0 / 1 |" in text
    pooled = np.array([0.3, 0.1, -0.1, 0.1])
    se = pooled.std(ddof=1) / 2
    assert f"| **all 4** | 0.450 | 0.350 | +0.100 | {se:.3f} | {0.1 / se:+.1f} | 3 / 0 / 1 |" in text
    del results["obstacle"]["bm"]
    path.write_text(json.dumps({"results": results}))
    assert script.main([str(path), "bm", "rhp"]) == 2
    assert "task obstacle: no results for helper 'bm'" in capsys.readouterr().err
