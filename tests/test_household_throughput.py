"""The household's throughput measurement (``jaxsoc.envs.household.throughput``), its script and its GPU-suite part
at tiny sizes: positive rates and complete rows for the three action modes, the table, the part's verdicts, its
out-of-memory rows, and a part cut by its budget that a rerun resumes.

Four households for three steps keep each program small; the three programs are compiled once (the module's
fixture) and reused by the part's and the script's tests (``compile_workloads`` caches them per process)."""

from __future__ import annotations

import json

import jax
import pytest

from jaxsoc import gpu_suite
from jaxsoc.bench.family import TABLES
from jaxsoc.cli import main
from jaxsoc.envs.household import throughput
from jaxsoc.envs.household import world as W
from jaxsoc.gpu_suite import core
from jaxsoc.gpu_suite import household as suite_household

N, T = 4, 3


@pytest.fixture(scope="module")
def rows():
    return throughput.measure([N], steps=T, repeats=1)


def test_measure_returns_positive_rates_and_complete_rows(rows):
    assert [r["mode"] for r in rows] == list(throughput.RANDOM_MODES)
    assert [r["env"] for r in rows] == ["HouseholdEnv", "HouseholdEnv", "HelperEnv"]
    for r in rows:
        assert r["num_envs"] == N and r["steps"] == T and r["env_steps"] == N * T and r["repeats"] == 1
        assert r["compile_s"] > 0 and r["run_s"] > 0 and r["steps_per_s"] > 0
        assert r["steps_per_s"] == pytest.approx(N * T / r["run_s"])
        assert r["agent_actions_per_s"] == pytest.approx(2 * r["steps_per_s"])
        assert r["ratio_unity"] == pytest.approx(r["steps_per_s"] / 10) and r["reference_actions_per_s"] == 10
        assert r["key"] == f"{r['mode']}|N={N}|T={T}|repeats=1|split=train|task_seed=0|seed=0"
        assert r["tasks"] == 1011 and r["max_steps"] == 250 and r["obs_checksum"] > 0
        assert 0 <= r["episodes_ended"] <= N * T and len(r["valid_actions"]) == 2
        assert all(0 <= f <= 1 for f in r["valid_fraction"])
        assert r["platform"] == jax.default_backend() and r["device"] and r["jax"]
    uniform, valid, helper = rows
    assert valid["valid_fraction"] == [1.0, 1.0]  # drawn among the valid actions (no conflict at this seed)
    assert max(uniform["valid_fraction"]) < 1  # most of the 968 ids fail their preconditions
    assert helper["valid_fraction"][0] == 1.0  # the built-in Alice acts validly


def test_workloads_are_checked():
    with pytest.raises(ValueError, match="mode"):
        throughput.measure([N], modes=["random"], steps=T)
    with pytest.raises(ValueError, match="size"):
        throughput.measure([0], steps=T)
    with pytest.raises(ValueError, match="repeats"):
        throughput.measure([N], steps=T, repeats=0)
    assert throughput.Workload("valid", N, T).env().agents == W.AGENTS


def test_format_table(rows):
    text = throughput.format_table(rows)
    assert "| mode | env | N | T | steps/s | agent actions/s | × one Unity process |" in text
    assert f"| uniform | HouseholdEnv | {N} | {T} |" in text and f"| helper | HelperEnv | {N} | {T} |" in text
    assert "| valid | HouseholdEnv | 4 | 3 |" in text and "1.00, 1.00" in text and "10 actions/s" in text
    assert "out of memory" in throughput.format_table([{**rows[0], "error": "out of memory"}])


def test_bench_writes_rows_and_resumes(rows, tmp_path, capsys):
    table = TABLES["household"]
    args = ["bench", "--suite", "household", "--num-envs", str(N), "--steps", str(T), "--repeats", "1"]
    args += ["--modes", "uniform", "--out-dir", str(tmp_path)]
    assert main(args) == 0
    saved = json.loads((tmp_path / table.json_name).read_text())
    assert [r["mode"] for r in saved["rows"]] == ["uniform"] and saved["rows"][0]["steps_per_s"] > 0
    assert "| uniform | HouseholdEnv | 4 | 3 |" in (tmp_path / table.md_name).read_text()
    assert main([*args, "--resume"]) == 0
    assert json.loads((tmp_path / table.json_name).read_text())["rows"] == saved["rows"]  # kept, not remeasured
    assert "| uniform | HouseholdEnv | 4 | 3 |" in capsys.readouterr().out


def _row(rate: float, n: int, target: float | None, mode: str = "uniform") -> dict:
    return {
        "mode": mode,
        "env": "HouseholdEnv",
        "num_envs": n,
        "steps": 50,
        "steps_per_s": rate,
        "agent_actions_per_s": 2 * rate,
        "ratio_unity": rate / 10,
        "valid_fraction": [0.1, 0.1],
        "compile_s": 20.0,
        "target_steps_per_s": target,
        "meets_target": None if target is None else rate >= target,
    }


def test_suite_part_verdicts_and_out_of_memory_rows():
    rows = [_row(3e7, 262_144, 1e7), _row(4e6, 262_144, 1e7, "valid"), _row(2e6, 4096, None)]
    lines = suite_household.render_household(rows).splitlines()
    assert lines[0].startswith("1 of 2 rows at the largest size meet the target.")
    assert lines[4].endswith("| 3e+07 | 6e+07 | 3,000,000 | 0.10, 0.10 | 20.0 | 1e+07 | pass |")
    assert lines[5].startswith("| valid |") and lines[5].endswith("| 1e+07 | **FAIL** |")
    assert lines[6].startswith("| uniform | HouseholdEnv | 4,096 |") and lines[6].endswith("| – | – |")
    error = core.guarded_oom(lambda: _raise("RESOURCE_EXHAUSTED: 80 GiB"), {"mode": "uniform"})
    table = suite_household.render_household([{**error, "num_envs": 262_144, "steps": 50}])
    assert "| uniform | – | 262,144 | 50 | out of memory: RESOURCE_EXHAUSTED" in table


def test_suite_part_stops_without_time_and_resumes(rows, tmp_path):
    part = next(p for p in gpu_suite.PARTS if p.name == "household")  # toy workloads: those the fixture compiled
    assert dict(part.toy)["sizes"] == [N] and dict(part.toy)["steps"] == T
    state = core.run_part(part, tmp_path, params=part.toy, budget_s=0, toy=True)
    assert not state["complete"] and state["rows"] == []
    state = core.run_part(part, tmp_path, params=part.toy, budget_s=60, toy=True)
    assert state["complete"] and [r["mode"] for r in state["rows"]] == list(throughput.RANDOM_MODES)
    assert all(r["target_steps_per_s"] == 1e7 and r["meets_target"] is False for r in state["rows"])  # a CPU, N=4
    saved = json.loads(core.row_path(tmp_path, "household").read_text())
    saved.update(complete=False, rows=saved["rows"][:1])  # as if the budget had ended after the first row
    core.row_path(tmp_path, "household").write_text(json.dumps(saved))
    again = core.run_part(part, tmp_path, params=part.toy, budget_s=60, toy=True)
    assert again["complete"] and again["rows"][0] == saved["rows"][0] and len(again["rows"]) == 3
    assert "| helper | HelperEnv | 4 | 3 |" in part.render(again["rows"])


def _raise(message: str):
    raise RuntimeError(message)
