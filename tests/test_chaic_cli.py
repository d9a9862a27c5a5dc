"""``jaxsoc chaic``: the metrics on hand-made results, the table, clear errors, and a tiny evaluation end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest

from jaxsoc.cli import main
from jaxsoc.envs.chaic import metrics as M
from jaxsoc.envs.chaic.episode import parse_timing
from jaxsoc.learners.chaic.evaluation import format_table


def _result(rates, by_helper, by_main, placed, useful, away=0, frames=3000):
    n = len(rates)
    transported_by = np.zeros((n, 3))
    transported_by[:, 0], transported_by[:, 1] = by_main, by_helper
    placed_a = np.zeros((n, 3), np.int32)
    useful_a = np.zeros((n, 3), np.int32)
    placed_a[:, 1], useful_a[:, 1] = placed, useful
    return {
        "transport_rate": np.asarray(rates, np.float32),
        "transported_by": transported_by,
        "placed": placed_a,
        "useful": useful_a,
        "away_frames": np.full(n, away),
        "frames": np.full(n, frames),
        "complete": np.ones(n, bool),
    }


def test_metrics_follow_the_papers_definitions():
    # 2 episodes x 2 seeds (episode-major): alone 4 and 2 objects; helped 6 (2 by the helper) and 2 (0 by it)
    alone = _result([0.4, 0.4, 0.2, 0.2], [0, 0, 0, 0], [4, 4, 2, 2], [0, 0, 0, 0], [0, 0, 0, 0])
    helped = _result([0.6, 0.6, 0.2, 0.2], [2, 2, 0, 0], [4, 4, 2, 2], [4, 4, 1, 1], [2, 2, 0, 0], away=300)
    m = M.summary(helped, alone, (2, 2))
    assert m["tr"] == pytest.approx(0.4)
    assert m["std_tr"] == pytest.approx(np.std([0.6, 0.2], ddof=1) / np.sqrt(2))
    assert m["ei"] == pytest.approx(((6 - 4) / 6 + 0.0) / 2)  # (h - a) / max(h, a), averaged over episodes
    assert m["ia"] == pytest.approx(4 / 10)  # useful placements over all helper placements
    assert m["cr"] == pytest.approx(4 / 16)  # the helper's share of what was transported
    assert m["er"] == pytest.approx(0.1)
    alone_only = M.summary(alone, None, (2, 2))
    assert alone_only["ei"] is None and alone_only["ia"] is None and alone_only["cr"] == 0.0
    table = format_table({"normal": {"none": alone_only, "rhp": m}})
    assert "| normal | rhp | 0.40 (+0.17) | 0.40 | 0.25 |" in table and "0.64 |" in table  # the paper's RHP TR


def test_timing_overrides_and_errors():
    assert parse_timing(["move=10", "turn=2.5"]).move == 10.0
    with pytest.raises(ValueError, match="unknown timing"):
        parse_timing(["speed=3"])
    with pytest.raises(ValueError, match="not a number"):
        parse_timing(["move=fast"])


@pytest.mark.parametrize(
    "argv, message",
    [
        (["chaic", "eval", "--helper", "gpt4"], "unknown helper"),
        (["chaic", "eval", "--tasks", "kitchen"], "unknown CHAIC task"),
        (["chaic", "eval", "--seeds", "0"], "--seeds must be a positive integer"),
        (["chaic", "render", "--episode", "12"], "--episode must be in"),
    ],
)
def test_bad_input_exits_2_with_a_message(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_tasks_and_a_tiny_evaluation(tmp_path, capsys):
    assert main(["chaic", "tasks", "--tasks", "furniture", "shopping"]) == 0
    out = capsys.readouterr().out
    assert "furniture" in out and "goal total" in out and "shopping" in out
    argv = ["chaic", "eval", "--tasks", "furniture", "--helper", "none", "--seeds", "1", "--episodes", "2"]
    assert main([*argv, "--max-events", "400", "--out", str(tmp_path)]) == 0
    saved = json.loads((tmp_path / "chaic_eval.json").read_text())
    row = saved["results"]["furniture"]["none"]
    assert row["episodes"] == 2 and 0.0 <= row["tr"] <= 1.0 and saved["setting"]["max_events"] == 400
    # the constrained agent delivers on its own, and nothing is credited to a helper that is not there
    assert row["tr"] > 0.0 and row["cr"] == 0.0
    assert (tmp_path / "chaic_eval.png").stat().st_size > 0
