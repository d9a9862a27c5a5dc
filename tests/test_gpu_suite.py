"""The GPU suite (``jaxsoc.gpu_suite``, ``benchmarks/gpu_suite.py``) at toy sizes on the CPU: the generated markdown
section is exactly ``render_markdown`` of the rows, a rerun skips the complete parts, text outside the markers is
kept, and budgets cut parts that later runs resume (on the two quickest parts, ``SMALL``); every part runs end to end
in a subprocess and writes rows (the ``slow`` tests: the non-learner parts compile about a dozen programs, minutes on
a 2-core CPU; the learners' parts, ``LEARNER_PARTS``, compile whole trainers). The subprocesses inherit the session's
jax settings (``conftest.py``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import jax
import pytest

from jaxsoc import gpu_suite
from jaxsoc.cli import main as jaxsoc_main
from jaxsoc.gpu_suite import core

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "gpu_suite.py"
PREFIX = "# Results\n\nHand-written text before the generated section.\n"
LEARNER_PARTS = ("ppo", "ppo_paper", "household_learners", "bib_learners", "chaic_learners", "excalibur_learners")
NAMES = [p.name for p in gpu_suite.PARTS if p.name not in LEARNER_PARTS]


def _suite(*args: str, timeout: float = 1200) -> tuple[subprocess.CompletedProcess, float]:
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=timeout, cwd=ROOT
    )
    return proc, time.perf_counter() - start


def _toy_run(tmp_path_factory, parts: tuple[str, ...]):
    """Runs ``parts`` at toy sizes; returns ``(out_dir, results_md, args, seconds)``."""
    base = tmp_path_factory.mktemp("gpu_suite")
    out, md = base / "results", base / "RESULTS.md"
    md.write_text(PREFIX)
    args = ("--toy", "--out-dir", str(out), "--results-md", str(md), "--workers", "2", "--parts", *parts)
    proc, seconds = _suite(*args)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out, md, args, seconds


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory):
    """Every part but the learners' at toy sizes, once (``_toy_run``)."""
    return _toy_run(tmp_path_factory, NAMES)


#: the parts of the run the markdown and rerun tests read: the two quickest to compile (8 s on a 2-core CPU; every part
#: takes minutes, so ``toy_run`` is for the slow test only)
SMALL = ("classic", "conv")


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """The ``SMALL`` parts at toy sizes, once (``_toy_run``)."""
    return _toy_run(tmp_path_factory, SMALL)


@pytest.fixture
def suite_copy(small_run, tmp_path):
    """Returns ``small_run``'s ``(out_dir, results_md, args, seconds)`` with the rows and the markdown copied into this
    test's ``tmp_path`` and ``args`` pointing at the copies: a test may rerun the suite or edit the markdown
    without another test seeing it, so each passes alone and in any order."""
    out, md, args, seconds = small_run
    own_out, own_md = tmp_path / "results", tmp_path / "RESULTS.md"
    shutil.copytree(out, own_out)
    shutil.copyfile(md, own_md)
    moved = {str(out): str(own_out), str(md): str(own_md)}
    return own_out, own_md, tuple(moved.get(arg, arg) for arg in args), seconds


def _check_stamped_rows(out, names) -> dict:
    """Asserts every part of ``names`` wrote complete rows stamped with the CPU; returns ``{part: rows}``."""
    for part in gpu_suite.PARTS:
        if part.name not in names:
            continue
        state = json.loads(core.row_path(out, part.name).read_text())
        assert state["complete"] and state["toy"] and "error" not in state, part.name
        assert state["params"] == json.loads(json.dumps(dict(part.toy)))
        assert state["rows"], part.name
        for row in state["rows"]:
            assert row["key"] and row["device"] == "cpu" and row["platform"] == "cpu" and row["toy"]
            assert row["jax"] and row["date"] and not row.get("partial")
    return {p: json.loads(core.row_path(out, p).read_text())["rows"] for p in names}


def test_every_part_writes_complete_stamped_rows(toy_run):
    out, md, _, _ = toy_run
    rows = _check_stamped_rows(out, NAMES)
    section = core.read_section(md.read_text())
    assert "| GoToRedBallGrey | 1x1 | vmap | 16 | 8 | 1 |" in section  # the BabyAI table, both steps, with targets
    assert "| GoToRedBallGrey | 1x1 | batched | 16 | 8 | 1 |" in section
    assert "1e+08" in section and "1e+06" not in section  # BossLevel's bot target only where BossLevel is
    assert {r["see_through_walls"] for r in rows["classic"]} == {True, False}
    assert rows["babyai"][0]["rooms"] == "1x1" and {r["resets"] for r in rows["babyai"]} == {"pooled"}
    assert sorted(r["path"] for r in rows["babyai"]) == ["batched", "vmap"]
    assert rows["bot_success"][0]["episodes"] == 8 and rows["bot_success"][0]["success"] == 1.0
    assert [r["demos"] for r in rows["bc"]] == [16, 11]
    assert {(r["map"], r["impl"]) for r in rows["conv"]} == {(m, i) for m in (7, 2) for i in ("native", "im2col")}
    bib_set, bib_size = rows["bib"]  # the background set (a smaller run at toy sizes), then one throughput row
    assert bib_set["kind"] == "background_set" and not bib_set["full_set"] and bib_set["meets_target"] is None
    assert bib_size["kind"] == "throughput" and bib_size["episodes_per_s"] > 0 and bib_size["frame_checksum"] > 0
    household = rows["household"]  # one row per action mode, N=4 for 3 steps, the target judged at the largest N
    assert [r["mode"] for r in household] == ["uniform", "valid", "helper"]
    assert all(r["steps_per_s"] > 0 and r["env_steps"] == 12 and r["meets_target"] is False for r in household)
    (agents,) = rows["household_agents"]  # the planning Alice and helper: measured, no target
    assert agents["mode"] == "planners" and agents["steps_per_s"] > 0 and agents["meets_target"] is None
    assert [r["mode"] for r in rows["chaic"]] == ["uniform", "agents"]  # the world, then the rule-based agents
    assert all(r["agent_steps_per_s"] > 0 and r["checksum"] > 0 for r in rows["chaic"])


@pytest.mark.slow
def test_learner_parts_write_complete_stamped_rows(tmp_path):
    out = tmp_path / "results"
    proc, _ = _suite("--toy", "--out-dir", str(out), "--results-md", str(tmp_path / "R.md"), "--parts", *LEARNER_PARTS)
    assert proc.returncode == 0, proc.stderr[-4000:]
    rows = _check_stamped_rows(out, LEARNER_PARTS)
    ppo = rows["ppo"][0]  # the final row replaced the progress row of the first chunk
    assert ppo["updates"] == 2 and ppo["stopped"] == "max_updates" and ppo["frames_per_s"] > 0
    paper = rows["ppo_paper"][0]  # two seeds of the paper's recipe in one program
    assert paper["updates"] == 2 and paper["arch"] == "original" and len(paper["episodes_needed"]) == 2
    assert paper["frames_per_s"] > 0 and paper["paper_thousands"] == [377.0, 379.0]
    household_learners = rows["household_learners"]  # the goal model's and the HRL's training programs
    assert [(r["learner"], r["size"]) for r in household_learners] == [("watch", 2), ("hrl", 2)]
    watch, *rl = household_learners
    assert watch["demos_per_s"] > 0 and watch["projected_epoch_s"] == pytest.approx(6314 / watch["demos_per_s"])
    assert all(r["env_steps_per_s"] > 0 and r["projected_hours"] > 0 and r["updates"] == 1 for r in rl)
    learners = rows["bib_learners"]  # one row per toy kind, each learner class: two seeds, two steps timed
    assert [r["kind"] for r in learners] == ["bib-atc", "bib-bc-mlp", "bib-video-rnn"]
    for r in learners:
        assert "error" not in r and r["seeds"] == 2 and len(r["loss"]) == 2 and r["steps_measured"] == 2
        assert r["steps_per_s"] > 0 and r["episodes_per_s"] == pytest.approx(r["steps_per_s"] * r["batch"] * 2)
        assert r["train_episodes"] == 8 and r["steps_per_epoch"] == -(-8 * r["repeats"] // r["batch"])
        assert r["projected_minutes"] == pytest.approx(r["epochs"] * r["steps_per_epoch"] / r["steps_per_s"] / 60)
        assert r["meets_target"] == (r["projected_minutes"] <= 30) and not r["fused"]  # a CPU: Python-driven steps
    assert [r["repeats"] for r in learners] == [2, 1, 1] and learners[0]["batch"] == 8
    answerer, explorer, memory = rows["excalibur_learners"]  # the answerer's loop, then the explorers' programs
    assert (answerer["learner"], answerer["size"], explorer["learner"], explorer["size"]) == ("answerer", 2, "ppo", 2)
    assert (memory["learner"], memory["size"]) == ("memory", 2) and "error" not in memory
    assert memory["env_steps_per_s"] == pytest.approx(2 * 8 / memory["run_s"])
    assert answerer["houses_per_s"] == pytest.approx(2 / answerer["second_half_s"])  # one batch of 2 houses
    assert answerer["projected_hours"] == pytest.approx(2.56e7 / answerer["houses_per_s"] / 3600)
    assert explorer["env_steps_per_s"] == pytest.approx(2 * 8 / explorer["run_s"])  # 2 worlds x 8 frames
    assert explorer["projected_hours"] == pytest.approx(1.536e9 / explorer["env_steps_per_s"] / 3600)


def test_markdown_section_is_rendered_from_the_rows(suite_copy):
    out, md, _, _ = suite_copy
    text = md.read_text()
    assert text.startswith(PREFIX) and text.rstrip().endswith(core.MARK_END)
    rows, complete = core.load_rows(out, gpu_suite.PARTS)
    assert set(rows) == set(SMALL) and all(complete.values())
    section = core.read_section(text)
    assert section == gpu_suite.render_markdown(rows, complete)
    for part in gpu_suite.PARTS:
        assert (f"### {part.title} (toy sizes" in section) == (part.name in SMALL)
    assert "| MiniGrid-Empty-5x5-v0 | 16 | yes | vmap | every step |" in section  # the classic table, both view modes
    assert "| MiniGrid-Empty-5x5-v0 | 16 | no (minigrid occlusion) |" in section and "| 7×7 | 4 | 8 |" in section


def test_rerun_skips_complete_parts(suite_copy):
    out, md, args, first = suite_copy
    before = {p: core.row_path(out, p).read_text() for p in SMALL}
    proc, seconds = _suite(*args)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stderr.count("skipped") == len(SMALL)
    assert {p: core.row_path(out, p).read_text() for p in SMALL} == before  # nothing measured again
    assert seconds < first
    assert "all parts complete" in proc.stdout


def test_text_outside_the_markers_is_kept(suite_copy):
    out, md, _, _ = suite_copy
    suffix = "\nHand-written text after the generated section.\n"
    md.write_text(md.read_text() + suffix)
    before = md.read_text()
    assert gpu_suite.main(["--render-only", "--toy", "--out-dir", str(out), "--results-md", str(md)]) == 0
    assert md.read_text() == before  # same rows, same text; outside text untouched
    stale = before.replace("### ", "### stale ", 1)
    md.write_text(stale)
    assert gpu_suite.main(["--render-only", "--toy", "--out-dir", str(out), "--results-md", str(md)]) == 0
    assert md.read_text() == before


def test_help_of_the_script_and_of_jaxsoc_bench(capsys):
    proc, _ = _suite("--help", timeout=120)
    assert proc.returncode == 0 and "--budget-minutes" in proc.stdout and "Adding a part" in proc.stdout
    with pytest.raises(SystemExit) as exit_info:
        jaxsoc_main(["bench", "--help"])
    assert exit_info.value.code == 0
    help_text = capsys.readouterr().out
    assert "gpu" in help_text and "--time-limit" in help_text and "--parts" in help_text
    assert gpu_suite.main(["--list-parts"]) == 0
    listing = capsys.readouterr().out
    assert all(name in listing for name in NAMES)


def test_budgets_fit_the_documented_totals():
    assert sum(p.budget_s for p in gpu_suite.PARTS) == 25 * 60
    assert sum(p.quick_budget_s for p in gpu_suite.PARTS if p.quick is not None) == 8 * 60
    assert [p.name for p in gpu_suite.PARTS if p.quick is not None] == ["classic", "babyai", "bot_speed"]


def test_replace_section_touches_nothing_outside_the_markers():
    assert core.replace_section("", "S\n") == f"{core.MARK_BEGIN}\nS\n{core.MARK_END}\n"
    appended = core.replace_section("# Title\ntext\n", "S\n")
    assert appended == f"# Title\ntext\n\n{core.MARK_BEGIN}\nS\n{core.MARK_END}\n"
    text = f"before\n{core.MARK_BEGIN}\nold\nlines\n{core.MARK_END}\nafter\n"
    new = core.replace_section(text, "new\n")
    assert new == f"before\n{core.MARK_BEGIN}\nnew\n{core.MARK_END}\nafter\n"
    assert core.read_section(new) == "new\n" and core.read_section("no markers") is None


def test_no_rows_says_nothing_was_measured_and_gives_the_command():
    section = gpu_suite.render_markdown({})
    assert "No GPU figures have been measured yet" in section and core.COMMAND in section


def _fake_part(calls: list[str]):
    def run(ctx: core.Context):
        for i in range(3):
            key = f"row{i}"
            previous = ctx.previous(key)
            if previous is not None:
                yield previous
                continue
            if ctx.out_of_time(ctx.params["need_s"] if i == 2 else 0):
                return
            calls.append(key)
            yield {"key": key, "value": i, "nan": float("nan")}

    def render(rows):
        return "| key | value |\n|---|---:|\n" + "\n".join(f"| {r['key']} | {r['value']} |" for r in rows)

    return core.Part("fake", "A fake part", run, render, budget_s=60, params={"need_s": 0}, toy={"need_s": 0})


def test_a_part_out_of_budget_keeps_its_rows_and_a_rerun_continues_it(tmp_path):
    calls: list[str] = []
    part = _fake_part(calls)
    state = core.run_part(part, tmp_path, params={"need_s": 1e9}, budget_s=60, toy=True)
    assert not state["complete"] and [r["key"] for r in state["rows"]] == ["row0", "row1"] and calls == ["row0", "row1"]
    saved = json.loads(core.row_path(tmp_path, "fake").read_text())
    assert saved["rows"][0]["nan"] is None and not saved["complete"]  # strict JSON
    state = core.run_part(part, tmp_path, params={"need_s": 0}, budget_s=60, toy=True)
    assert state["complete"] and calls == ["row0", "row1", "row2"]  # only the missing row was measured
    assert state["rows"][:2] == saved["rows"]  # kept as they were (dates included)
    again = core.run_part(part, tmp_path, params={"need_s": 0}, budget_s=60, toy=True)
    assert again == json.loads(core.row_path(tmp_path, "fake").read_text()) and len(calls) == 3  # skipped
    core.run_part(part, tmp_path, params={"need_s": 0}, budget_s=60, toy=True, force=True)
    assert len(calls) == 6
    section = core.render_markdown({"fake": state["rows"]}, {"fake": False}, [part])
    assert "### A fake part (toy sizes" in section and "**Incomplete**" in section and "| row2 | 2 |" in section


def test_a_failing_part_is_recorded_and_the_suite_goes_on(tmp_path):
    def broken(ctx):
        yield {"key": "a", "value": 1}
        raise RuntimeError("out of memory")

    bad = core.Part("bad", "Broken", broken, lambda rows: "table", budget_s=1, params={}, toy={})
    good = _fake_part([])
    md = tmp_path / "R.md"
    results = core.run_suite([bad, good], tmp_path, md, toy=True, budget_minutes=25)
    assert results["bad"]["error"] == "RuntimeError: out of memory" and not results["bad"]["complete"]
    assert len(results["bad"]["rows"]) == 1 and results["fake"]["complete"]
    assert "### Broken" in md.read_text() and "### A fake part" in md.read_text()


def test_zero_budget_stops_a_real_part_before_compiling(tmp_path, capsys):
    args = ["--toy", "--parts", "conv", "--budget-minutes", "0", "--out-dir", str(tmp_path), "--results-md"]
    assert jaxsoc_main(["bench", "--suite", "gpu", *args, str(tmp_path / "R.md")]) == core.EXIT_MORE
    assert jaxsoc_main(["bench", "--suite", "gpu", "--envs", "MiniGrid-Empty-5x5-v0", *args, "x.md"]) == 2
    assert "--envs" in capsys.readouterr().err
    state = json.loads(core.row_path(tmp_path, "conv").read_text())
    assert not state["complete"] and state["rows"] == []
    assert "No GPU figures have been measured yet" in (tmp_path / "R.md").read_text()


def test_the_excalibur_learners_table_and_its_refusals():
    from jaxsoc.gpu_suite import excalibur_learners as part

    rows = [
        {"learner": "answerer", "size": 64, "houses_per_s": 512.0, "projected_hours": 13.9, "first_half_s": 31.0},
        {
            "learner": "ppo",
            "size": 256,
            "num_steps": 80,
            "env_steps_per_s": 2.5e5,
            "projected_hours": 1.71,
            "compile_s": 40.0,
        },
        {"learner": "answerer", "size": 8192, "error": "out of memory: RESOURCE_EXHAUSTED"},
        {"learner": "memory", "size": 64, "num_steps": 80, "env_steps_per_s": 1e5, "projected_hours": 4.27,
         "compile_s": 90.0},
    ]  # fmt: skip
    lines = part.render_excalibur_learners(rows).splitlines()
    assert lines[2] == "| answerer (small), houses | 64 | 512 | 13.9 | 31 |"
    assert lines[3] == "| PPO explorer (tiny) on EXCALIBUR-QA, frames | 256 x 80 | 2.5e+05 | 1.71 | 40 |"
    assert lines[4] == "| answerer (small), houses | 8192 | out of memory: RESOURCE_EXHAUSTED | – | – |"
    assert lines[5] == "| PPO explorer over the memory (tiny-memory), frames | 64 x 80 | 1e+05 | 4.27 | 90 |"
    for batches in (0, 1, 3, True, 2.0):  # timed by halves: an even count of batches
        with pytest.raises(ValueError, match="even int"):
            part.answerer_rate(2, batches)


def test_trainer_program_times_the_updates_and_projects_the_hours():
    class Trainer:  # the RL trainers' interface: init(key), _run(runner, updates, stop) -> (runner, metrics)
        def init(self, key):
            return jax.random.uniform(key)

        def _run(self, runner, updates, stop):
            return runner, {"loss": runner * jax.numpy.ones(updates)}

    program = core.trainer_program("toy|updates=3", Trainer, 3, 40, 1.2e7, 2, learner="toy", size=5)
    assert (program.key, program.repeats) == ("toy|updates=3", 2)
    assert program.build()(jax.random.key(0)).shape == (3,)
    row = program.finish(7.0, 0.5, None)
    assert row == {
        "learner": "toy",
        "size": 5,
        "updates": 3,
        "compile_s": 7.0,
        "run_s": 0.5,
        "env_steps_per_s": 240.0,  # 3 updates x 40 frames in half a second
        "projected_hours": pytest.approx(1.2e7 / 240 / 3600),
    }


def test_learner_variants_are_measured_under_their_own_keys():
    """The learner parts' variants (the toy runs leave them out: each is another compile): the options view's
    (``rooms=true``, the shipped behaviour model ``model:chaic-bm`` as partner) and BIB's cell encoder, keyed apart
    from the plain rows, with configs that build."""
    from jaxsoc.gpu_suite import bib_learners, chaic_learners
    from jaxsoc.learners.bib import run

    params = {p.name: p.params for p in gpu_suite.PARTS}
    variants = params["chaic_learners"]["options_env_args"]
    keys = {args: chaic_learners._ppo_program(2, 2, 1, 1, options=True, env_args=args).key for args in variants}
    assert len(set(keys.values())) == len(variants) == 3 and "|" not in keys[""].split("updates=")[1]
    partner = next(args for args in variants if args.startswith("partner_run="))
    from jaxsoc import models

    card = models.info(partner.split("=", 1)[1])  # the shipped behaviour model, by name
    assert (card.family, card.kind) == ("chaic", "bm")
    assert (
        "bib-bc-mlp:cells" in params["bib_learners"]["kinds"]
        and bib_learners.run_kind("bib-bc-mlp:cells") == "bib-bc-mlp"
    )
    config = run.make_config("bib-bc-mlp", **bib_learners._overrides(params["bib_learners"], "bib-bc-mlp:cells"))
    plain = run.make_config("bib-bc-mlp", **bib_learners._overrides(params["bib_learners"], "bib-bc-mlp"))
    assert config.encoder == "cells" and config.aux_weight == 1.0 and plain.encoder != "cells"
    p = params["bib_learners"]
    assert bib_learners._key(p, "bib-bc-mlp:cells", config) != bib_learners._key(p, "bib-bc-mlp", plain)
