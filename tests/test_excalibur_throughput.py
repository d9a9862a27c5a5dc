"""EXCALIBUR's house-generation rate (``throughput.measure_houses``) and the throughput script's houses table, at
five houses (the size ``test_excalibur_houses.py`` generates, so the compiled generator is shared where the
compilation cache is)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import jax
import pytest

from jaxsoc.envs.excalibur import throughput

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "excalibur_throughput.py"
N = 5


def test_measure_houses_row():
    row = throughput.measure_houses(N, repeats=2)
    assert row["key"] == f"houses|n={N}|repeats=2" and row["mode"] == "houses" and row["num_envs"] == N
    assert row["compile_s"] > 0 and row["run_s"] > 0 and row["run_s"] < row["compile_s"]
    assert row["houses_per_s"] == pytest.approx(N / row["run_s"])
    assert row["device"] == jax.devices()[0].device_kind and "bank_s" not in row
    with pytest.raises(ValueError, match="num_houses"):
        throughput.measure_houses(0)
    table = throughput.format_houses_table([row, {**row, "num_envs": 512, "bank_s": 12.34, "bank_houses": 500}])
    lines = table.splitlines()
    assert lines[0] == "| houses generated at once | houses/s | compile (s) | bank with questions (s) |"
    assert lines[2].startswith(f"| {N} | {row['houses_per_s']:,.0f} |") and lines[2].endswith("| – |")
    assert lines[3].endswith("| 12.3 (500 kept) |")


def test_script_writes_the_houses_rows(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("excalibur_throughput_script", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.main(["--modes", "--houses", str(N), "--repeats", "1", "--out", str(tmp_path)]) == 0
    (row,) = json.loads((tmp_path / "excalibur_throughput.json").read_text())
    assert row["mode"] == "houses" and row["num_envs"] == N and row["houses_per_s"] > 0
    md = (tmp_path / "excalibur_throughput.md").read_text()
    assert "| houses generated at once |" in md and "| mode | N | T |" not in md  # no stepping modes asked for
    assert f"houses N={N}:" in capsys.readouterr().out
