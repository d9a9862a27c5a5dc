"""CHAIC's throughput measurement (``jaxsoc.envs.chaic.throughput``), its script and its GPU-suite part at tiny sizes:
complete rows with consistent counts for the four modes, the table, the part's verdicts, its out-of-memory rows, and
a part cut by its budget that a rerun resumes.

In CI, ``test_the_committed_gpu_rows_have_consistent_counts`` checks the counts of the four modes' rows that the GPU
suite's CHAIC part measured on a GPU (benchmarks/results/gpu_chaic.json), compiling nothing;
``test_tiny_rows_have_consistent_counts`` counts the primitive env at two worlds for two steps (half a minute of
compiling, -m slow). The other measuring tests, the
four modes' counts among them, use four worlds for three steps, the GPU suite's toy workloads, compiled once (the
module's fixture) and reused by the part's and the script's tests (``compile_workloads`` caches them per process);
they are ``slow`` (another minute of compilation on a 2-core CPU), as is the GPU suite's toy run of every part
(``tests/test_gpu_suite.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import jax
import pytest

from jaxsoc import gpu_suite
from jaxsoc.bench.family import TABLES
from jaxsoc.cli import main
from jaxsoc.envs.chaic import throughput
from jaxsoc.gpu_suite import chaic as suite_chaic
from jaxsoc.gpu_suite import core

RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"

N, T = 4, 3
TINY_N, TINY_T = 2, 2  # CI: the counting test at the tiniest size
TINY_MODES = ("uniform",)  # CI: the primitive env (ChaicEnv); the helper view, valid and agents run -m slow


@pytest.fixture(scope="module")
def rows():
    return throughput.measure([N], steps=T, repeats=1, workers=2)


@pytest.fixture(scope="module")
def tiny_rows():
    """``TINY_MODES`` at the tiniest size: two worlds for two steps, timed once (CI)."""
    return throughput.measure([TINY_N], modes=TINY_MODES, steps=TINY_T, repeats=1)


def check_counts(rows: list[dict], n: int, t: int, repeats: int = 1, platform: str | None = None) -> None:
    """Asserts that ``measure``'s rows of some modes, in ``MODES`` order, at ``n`` worlds for ``t`` steps, timed
    ``repeats`` times on ``platform`` (default: this process's backend), have consistent counts."""
    modes = [r["mode"] for r in rows]
    assert modes == [m for m in throughput.MODES if m in modes] and len(set(modes)) == len(modes) > 0
    env = {"uniform": "ChaicEnv", "valid": "ChaicEnv", "helper": "ChaicHelperEnv", "agents": "rule agents"}
    assert [r["env"] for r in rows] == [env[m] for m in modes]
    for r in rows:
        assert r["num_envs"] == n and r["steps"] == t and r["env_steps"] == n * t and r["repeats"] == repeats
        assert r["key"] == f"{r['mode']}|task=normal|N={n}|T={t}|repeats={repeats}|split=train|task_seed=0|seed=0"
        assert r["task"] == "normal" and r["tasks"] == 256 and r["compile_s"] > 0 and r["run_s"] > 0
        assert r["env_steps_per_s"] == pytest.approx(n * t / r["run_s"])
        started = sum(r["started"])
        assert started > 0 and all(s >= 0 for s in r["started"])
        assert r["agent_steps_per_s"] == pytest.approx(started / r["run_s"])
        assert r["helper_steps_per_s"] == pytest.approx(r["started"][1] / r["run_s"])
        assert r["frames"] > 0 and r["frames_per_s"] == pytest.approx(r["frames"] / r["run_s"])
        assert r["reference_steps_per_s"] == pytest.approx(1e4 / 86400)
        assert r["ratio_reference"] == pytest.approx(r["agent_steps_per_s"] * 8.64)
        assert 0 <= r["episodes_ended"] <= n * t and r["checksum"] > 0
        assert r["platform"] == (platform or jax.default_backend()) and r["device"] and r["jax"]
        if r["mode"] == "helper":  # up to 8 events per helper step, not reported; the helper starts at most once
            assert r["events"] is None and r["events_per_s"] is None and r["events_per_step"] == 8
            assert r["started"][1] <= n * t and r["started"][0] <= 8 * n * t
            assert r["frames"] >= r["started"][1]  # every helper action lasts at least a frame
        else:  # one event per step: each agent starts at most one action in it, and the clock moves on
            assert r["events"] == n * t and r["events_per_s"] == pytest.approx(r["env_steps_per_s"])
            assert all(s <= r["events"] for s in r["started"]) and started <= 2 * r["events"]
            assert r["frames"] >= r["events"] and r["events_per_step"] == 1
    # at frame 0 every agent is ready: each world's first event starts both agents' actions
    assert all(min(r["started"]) >= n for r in rows if r["mode"] != "helper")
    by_mode = {r["mode"]: r for r in rows}
    if "valid" in by_mode:  # drawn among the valid actions, so never refused
        assert by_mode["valid"]["refused"] == [0, 0]
    if "uniform" in by_mode:  # most of the 96 pick/remove ids are refused
        assert sum(by_mode["uniform"]["refused"]) > 0
    if "helper" in by_mode:
        assert by_mode["helper"]["refused"][0] is None and by_mode["helper"]["refused_fraction"][0] is None
    for r in rows:
        for refused, started, fraction in zip(r["refused"], r["started"], r["refused_fraction"]):
            assert refused is None or (0 <= refused <= started and fraction == pytest.approx(refused / started))


def test_tiny_rows_have_consistent_counts(tiny_rows):
    assert [r["mode"] for r in tiny_rows] == list(TINY_MODES)
    check_counts(tiny_rows, TINY_N, TINY_T)


def test_the_committed_gpu_rows_have_consistent_counts():
    # CI's check of the counting (no compiling): the rows the GPU suite's CHAIC part measured on a GPU, each mode's
    # counts at its own size and step count
    rows = json.loads((RESULTS / "gpu_chaic.json").read_text())["rows"]
    assert {r["mode"] for r in rows} == set(throughput.MODES) and all(r["platform"] == "gpu" for r in rows)
    for r in rows:
        check_counts([r], r["num_envs"], r["steps"], r["repeats"], "gpu")


@pytest.mark.slow
def test_measure_returns_complete_rows_with_consistent_counts(rows):
    assert [r["mode"] for r in rows] == list(throughput.MODES)
    check_counts(rows, N, T)


def test_workloads_are_checked():
    with pytest.raises(ValueError, match="mode"):
        throughput.measure([N], modes=["random"], steps=T)
    with pytest.raises(ValueError, match="task"):
        throughput.measure([N], modes=["uniform"], steps=T, tasks=["kitchen"])
    with pytest.raises(ValueError, match="size"):
        throughput.measure([0], steps=T)
    with pytest.raises(ValueError, match="repeats"):
        throughput.measure([N], steps=T, repeats=0)
    assert throughput.Workload("uniform", N, T).env().agents == ("main", "helper")
    assert isinstance(throughput.Workload("helper", N, T).env().main, throughput.CountingAgent)


@pytest.mark.slow
def test_format_table(rows):
    text = throughput.format_table(rows)
    assert "| mode | env | task | N | T | env steps/s | events/s | agent steps/s | frames/s | × paper (TDW) |" in text
    assert f"| uniform | ChaicEnv | normal | {N} | {T} |" in text and f"| agents | rule agents | normal | {N} |" in text
    helper = next(line for line in text.splitlines() if line.startswith("| helper |"))
    assert helper.split("|")[7].strip() == "–"  # the helper view's events are not reported
    assert "0.116 steps/s" in text and "appendix E.3" in text
    assert helper.split("|")[12].strip().startswith("–, ")  # the constrained agent's refusals: not seen
    assert "out of memory" in throughput.format_table([{**rows[0], "error": "out of memory"}])


@pytest.mark.slow
def test_bench_writes_rows_and_resumes(rows, tmp_path, capsys):
    table = TABLES["chaic"]
    args = ["bench", "--suite", "chaic", "--num-envs", str(N), "--steps", str(T), "--repeats", "1"]
    args += ["--modes", "uniform", "helper", "--out-dir", str(tmp_path)]
    assert main(args) == 0
    saved = json.loads((tmp_path / table.json_name).read_text())
    assert [r["mode"] for r in saved["rows"]] == ["uniform", "helper"] and saved["rows"][0]["agent_steps_per_s"] > 0
    assert saved["device"] and saved["seconds"] > 0
    md = (tmp_path / table.md_name).read_text()
    assert "| uniform | ChaicEnv | normal | 4 | 3 |" in md and "| helper | ChaicHelperEnv | normal | 4 | 3 |" in md
    assert main([*args, "--resume"]) == 0
    assert json.loads((tmp_path / table.json_name).read_text())["rows"] == saved["rows"]  # kept, not remeasured
    assert "| uniform | ChaicEnv | normal | 4 | 3 |" in capsys.readouterr().out


def _row(rate: float, n: int, target: float | None, mode: str = "uniform") -> dict:
    return {
        "mode": mode,
        "env": "ChaicEnv",
        "task": "normal",
        "num_envs": n,
        "steps": 100,
        "env_steps_per_s": rate,
        "events_per_s": rate,
        "agent_steps_per_s": 1.5 * rate,
        "frames_per_s": 5 * rate,
        "ratio_reference": 1.5 * rate * 8.64,
        "started_per_step": [0.75, 0.75],
        "refused_fraction": [0.5, 0.0],
        "compile_s": 20.0,
        "target_agent_steps_per_s": target,
        "meets_target": None if target is None else 1.5 * rate >= target,
    }


def test_suite_part_verdicts_and_out_of_memory_rows():
    rows = [
        _row(2e6, 65_536, 1e6),
        _row(4e5, 65_536, 1e6, "valid"),
        _row(2e5, 4096, None),
        _row(1e4, 65_536, None, "agents"),
    ]
    lines = suite_chaic.render_chaic(rows).splitlines()
    assert lines[0].startswith("1 of 2 rows judged at the largest size meet the target")
    assert lines[4].startswith("| uniform | ChaicEnv | normal | 65,536 | 100 | 2e+06 | 2e+06 | 3e+06 | 1e+07 |")
    assert lines[4].endswith("| 0.75, 0.75 | 0.50, 0.00 | 20.0 | 1,000,000 | pass |")
    assert lines[5].startswith("| valid |") and lines[5].endswith("| 1,000,000 | **FAIL** |")
    assert lines[6].startswith("| agents |") and lines[6].endswith("| – | – |")
    assert lines[7].startswith("| uniform | ChaicEnv | normal | 4,096 |") and lines[7].endswith("| – | – |")
    error = core.guarded_oom(lambda: _raise("RESOURCE_EXHAUSTED: 80 GiB"), {"mode": "uniform", "task": "normal"})
    table = suite_chaic.render_chaic([{**error, "num_envs": 65_536, "steps": 100}])
    assert "| uniform | – | normal | 65,536 | 100 | out of memory: RESOURCE_EXHAUSTED" in table


@pytest.mark.slow
def test_suite_part_stops_without_time_and_resumes(rows, tmp_path):
    part = next(p for p in gpu_suite.PARTS if p.name == "chaic")  # toy workloads: some the fixture compiled
    toy = dict(part.toy)
    assert toy["sizes"] == [N] and toy["steps"] == T and set(toy["modes"]) <= set(throughput.MODES)
    assert sum(p.budget_s for p in gpu_suite.PARTS) == 1500 and part.budget_s == 90
    state = core.run_part(part, tmp_path, params=part.toy, budget_s=0, toy=True)
    assert not state["complete"] and state["rows"] == []
    state = core.run_part(part, tmp_path, params=part.toy, budget_s=60, toy=True)
    assert state["complete"] and [r["mode"] for r in state["rows"]] == toy["modes"]
    for r in state["rows"]:  # a CPU, N=4: the judged modes fail the target; the rule agents are not judged
        judged = r["mode"] in toy["target_modes"]
        assert r["target_agent_steps_per_s"] == (1e6 if judged else None)
        assert r["meets_target"] is (False if judged else None)
    saved = json.loads(core.row_path(tmp_path, "chaic").read_text())
    saved.update(complete=False, rows=saved["rows"][:1])  # as if the budget had ended after the first row
    core.row_path(tmp_path, "chaic").write_text(json.dumps(saved))
    again = core.run_part(part, tmp_path, params=part.toy, budget_s=60, toy=True)
    assert again["complete"] and again["rows"][0] == saved["rows"][0] and len(again["rows"]) == len(toy["modes"])
    assert f"| {toy['modes'][-1]} |" in part.render(again["rows"])


def _raise(message: str):
    raise RuntimeError(message)
