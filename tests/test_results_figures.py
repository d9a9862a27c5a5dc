"""Figures of ``benchmarks/RESULTS.md`` that are copied from result files must match those files: the generated GPU
section is exactly what its row files render (and nothing else sits between its markers), EXCALIBUR's ExQA
constant and the oracle's ExQA are those of the evaluation JSON, the house-generation rate is the throughput
JSON's, and the paired BM-RHP table is what ``scripts/chaic_paired.py`` computes from CHAIC's evaluation JSON.
No jax programs run: every check reads files."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from jaxsoc import gpu_suite
from jaxsoc.gpu_suite import core

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
RESULT_FILES = ROOT / "benchmarks" / "results"


def _text() -> str:
    return RESULTS.read_text()


def test_gpu_section_is_what_the_row_files_render():
    text = _text()
    section = core.read_section(text)
    rows, complete = core.load_rows(RESULT_FILES, gpu_suite.PARTS)
    assert section == gpu_suite.render_markdown(rows, complete)  # a rerun of --render-only changes nothing
    # the generated section is the file's last: hand-written sections after the begin marker would be deleted
    assert text.rstrip().endswith(core.MARK_END) and text.count(core.MARK_BEGIN) == 1


def test_excalibur_exqa_figures_match_the_evaluation_json():
    data = json.loads((RESULT_FILES / "excalibur_eval_cpu" / "full_budgets" / "excalibur_eval.json").read_text())
    k, oracle = data["settings"]["k"], data["results"]["oracle"]
    steps = oracle["explore_steps"] + oracle["reenter_steps"]
    assert abs(oracle["exqa_again"] - (oracle["accuracy_again"] - steps / k)) < 1e-6
    text = _text()
    assert f"is k = {k:.1f} steps per unit of accuracy (oracle ExQA {oracle['exqa_again']:.2f}" in text
    assert f"less its {oracle['explore_steps']:.1f} + {oracle['reenter_steps']:g} steps / k" in text


def test_house_generation_rate_matches_the_throughput_json():
    rows = json.loads((RESULT_FILES / "excalibur_houses_cpu" / "excalibur_throughput.json").read_text())
    houses = {r["num_envs"]: r for r in rows if r["mode"] == "houses"}
    assert houses, "the throughput JSON has no house-generation rows"
    text = _text()
    for n, r in houses.items():
        assert f"| {n:,} | {r['houses_per_s']:,.0f} |" in text
    bank = next(r for r in houses.values() if "bank_s" in r)
    assert f"{bank['bank_s']:.1f} s" in text


def test_paired_bm_rhp_table_is_computed_from_the_evaluation_json():
    spec = importlib.util.spec_from_file_location("chaic_paired_script", ROOT / "scripts" / "chaic_paired.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    data = json.loads((RESULT_FILES / "chaic_eval_cpu" / "chaic_eval.json").read_text())
    rows, pooled = script.paired_table(data["results"], "bm", "rhp")
    assert script.format_table(rows, pooled, "bm", "rhp") in _text()
