"""Bad input to the ``jaxsoc`` commands is refused before any work: exit code 2, a message naming the flag or file
and what is wrong, and nothing written on disk. Each refusal runs in-process and fails before anything compiles.
Device errors (jax's / XLA's runtime errors) are not bad input: they keep their traceback."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import jax
import numpy as np
import pytest

from jaxsoc.cli import chaic as C
from jaxsoc.cli import main
from jaxsoc.cli.errors import clear_errors, is_device_error
from jaxsoc.envs.chaic.episode import parse_timing
from jaxsoc.learners.chaic import evaluation as CE
from jaxsoc.learners.household import help_eval as H
from tests.cli_checks import files_under, refused


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    """Runs every test in ``tmp_path``, so that default outputs (``chaic.gif``, ...) would land there."""
    monkeypatch.chdir(tmp_path)


# ---------------------------------------------------------------------------------------------------- --append


def _chaic_setting() -> dict:
    """The setting ``jaxsoc chaic eval`` records with its default flags."""
    return {
        "split": "test",
        "task_seed": 0,
        "seeds": 3,
        "seed": 0,
        "episodes": None,
        "max_events": None,
        "timing": {k: float(v) for k, v in vars(parse_timing(None)).items()},
        "device": jax.devices()[0].device_kind,
    }


ROW = {"episodes": 12, "seeds": 3, "tr": 0.5, "std_tr": 0.1, "ia": None, "cr": None, "er": 0.0, "ei": None}


@pytest.mark.parametrize(
    "text, message",
    [
        ("{not json", "is not readable JSON"),
        ("[1, 2]", "must hold an object with 'setting' and 'results', not a list"),
        (json.dumps({"results": {}}), "'setting' is missing or not an object"),
        (json.dumps({"setting": [], "results": {}}), "'setting' is missing or not an object"),  # was a TypeError
        (json.dumps({"setting": {}, "results": []}), "'results' is missing or not an object"),
        (json.dumps({"setting": {}, "results": {"normal": [1]}}), "results['normal'] must map helpers"),
        (json.dumps({"setting": {}, "results": {"normal": {"rhp": {**ROW, "tr": "high"}}}}),
         "results['normal']['rhp']['tr'] is missing or not a number"),
        (json.dumps({"setting": {}, "results": {"normal": {"rhp": {k: v for k, v in ROW.items() if k != "ei"}}}}),
         "results['normal']['rhp']['ei'] is missing"),
    ],
)  # fmt: skip
def test_chaic_append_onto_a_malformed_results_file(text, message, tmp_path, capsys):
    out = tmp_path / "results"
    out.mkdir()
    (out / "chaic_eval.json").write_text(text)
    argv = ["chaic", "eval", "--tasks", "normal", "--helper", "none", "--append", "--out", str(out)]
    refused(argv, tmp_path, capsys, f"--append: {out / 'chaic_eval.json'}", message)


HOUSEHOLD_ROW = {"tasks": 2, "alone_success": [0.5, 0.1], "alone_length": [100.0, 5.0], "alone_reward": [0.1, 0.0]}


def _household(results, **fields) -> str:
    return json.dumps({"results": results, "lengths": {}, "runs": {}, "seconds": 1.0, **fields})


@pytest.mark.parametrize(
    "text, message",
    [
        ("{", "is not readable JSON"),
        ("[]", "must hold an object, not a list"),
        (json.dumps({"split": "test-1", "results": {"x": []}}), "'lengths' is missing or not an object"),
        (_household({}, seconds="long"), "'seconds' is missing or not a number"),
        (_household({"hp-tg": []}), "results['hp-tg'] must map groups, 'all' among them"),  # was an AttributeError
        (_household({"hp-tg": {"all": {**HOUSEHOLD_ROW, "tasks": "2"}}}), "results['hp-tg']['all'] must be an object"),
        (_household({"hp-tg": {"all": {**HOUSEHOLD_ROW, "alone_length": [1.0]}}}),
         "results['hp-tg']['all']['alone_length'] is missing or not [mean, standard error]"),
        (_household({"hp-tg": {"all": {**HOUSEHOLD_ROW, "speedup": None}}}), "['speedup'] is missing or not [mean"),
    ],
)  # fmt: skip
def test_household_append_onto_a_malformed_record(text, message, tmp_path, capsys):
    out = tmp_path / "help"
    out.mkdir()
    (out / "household_help.json").write_text(text)
    argv = ["household", "eval", "--helper", "alice-alone", "--append", "--out", str(out)]
    refused(argv, tmp_path, capsys, f"--append: {out / 'household_help.json'}", message)


def test_household_append_reads_an_older_records_task_seed_as_its_seed(tmp_path):
    setting = {"split": "test-1", "task_seed": 0, "tasks": 100, "seeds": 1, "simulations": 100, "teleport": False}
    older = {k: v for k, v in setting.items() if k != "task_seed"}  # written before --task-seed existed
    H.check_setting({**older, "seed": 0}, {**setting, "seed": 0}, tmp_path)
    with pytest.raises(ValueError, match="'task_seed': 3"):
        H.check_setting({**older, "seed": 3}, {**setting, "seed": 0}, tmp_path)


# ---------------------------------------------------------------------------------------------------- chaic eval


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--timing", "move=-1"], "--timing move=-1: move is a number of frames and must be >= 0"),
        (["--timing", "fail=-0.5"], "fail is a number of frames and must be >= 0"),
        (["--timing", "child=-100"], "child is a number of frames"),
        (["--timing", "child_run_prob=1.5"], "--timing child_run_prob=1.5: child_run_prob is a probability"),
        (["--timing", "child_run_prob=-0.1"], "must be in [0, 1], got -0.1"),
        (["--timing", "view_dist=-1"], "view_dist is a distance in metres and must be >= 0"),
        (["--timing", "view_dist=nan"], "--timing view_dist=nan: view_dist must be a finite number"),
        (["--timing", "turn=inf"], "turn must be a finite number, got inf"),
        (["--timing", "move=1", "child_run_prob=NaN"], "child_run_prob must be a finite number"),
        (["--episodes", "13"], "--episodes 13: the test split of normal has 12 episodes"),
        (["--episodes", "0"], "--episodes must be a positive integer, got 0"),
        (["--seeds", "-1"], "--seeds must be a positive integer, got -1"),
        (["--max-events", "0"], "--max-events must be a positive integer"),
        (["--helper", "ppo=typo"], "--helper ppo=typo: no such run directory"),
        (["--helper", "bm=typo"], "--helper bm=typo: no such run directory"),
    ],
)
def test_chaic_eval_refuses_bad_flags(flags, message, tmp_path, capsys):
    argv = ["chaic", "eval", "--tasks", "normal", "--out", str(tmp_path / "out"), *flags]
    refused(argv, tmp_path, capsys, "jaxsoc chaic eval: ", message)


def test_a_run_directory_without_checkpoints_stays_as_it_was(tmp_path, capsys):
    (tmp_path / "run").mkdir()
    refused(["chaic", "eval", "--helper", "ppo=run"], tmp_path, capsys, "no checkpoint in", "run/checkpoints")
    refused(["excalibur", "eval", "--agent", "ppo=run"], tmp_path, capsys, "no checkpoint in")
    refused(["excalibur", "eval", "--agent", "me:ppo=typo"], tmp_path, capsys, "--agent me:ppo=typo: no such run")


def test_reading_a_missing_checkpoint_creates_nothing(tmp_path):
    from jaxsoc.learners.checkpoint import latest_step, read_meta, restore_raw

    with pytest.raises(FileNotFoundError, match="no such directory"):
        read_meta(tmp_path / "typo" / "checkpoints")
    with pytest.raises(FileNotFoundError):
        restore_raw(tmp_path / "typo" / "checkpoints", 0)
    assert latest_step(tmp_path / "typo" / "checkpoints") is None
    assert files_under(tmp_path) == {}


# ---------------------------------------------------------------------------------------------------- render and counts


@pytest.mark.parametrize(
    "argv, message",
    [
        (["excalibur", "render", "--fps", "0"], "jaxsoc excalibur render: --fps must be a positive number, got 0.0"),
        (["excalibur", "render", "--fps", "-2"], "--fps must be a positive number, got -2.0"),
        (["excalibur", "render", "--steps", "0"], "--steps must be a positive integer, got 0"),
        (["excalibur", "render", "--tile", "-1"], "--tile must be a positive integer"),
        (["excalibur", "eval", "--episodes", "0"], "jaxsoc excalibur eval: --episodes must be a positive integer"),
        (["excalibur", "bank", "--houses", "0"], "--houses must be a positive integer"),
        (["chaic", "render", "--events", "0"], "jaxsoc chaic render: --events must be a positive integer, got 0"),
        (["chaic", "render", "--frame-step", "0"], "--frame-step must be a positive integer"),
        (["chaic", "render", "--fps", "0"], "--fps must be a positive number"),
        (["household", "render", "--fps", "0"], "jaxsoc household render: --fps must be a positive number"),
        (["bib", "render", "--fps", "0"], "jaxsoc bib render: --fps must be a positive integer"),
        (["bib", "data", "--split", "background", "--out", "d", "--episodes", "0"], "--episodes must be a positive"),
    ],
)
def test_render_and_counts_must_be_positive(argv, message, tmp_path, capsys):
    refused(argv, tmp_path, capsys, message)


# ---------------------------------------------------------------------------------------------------- bib eval


@pytest.fixture
def no_pairs(monkeypatch):
    """Makes generating or reading evaluation pairs fail: a refusal must come before either."""
    from jaxsoc.envs.bib import dataset, tasks
    from jaxsoc.learners.bib import data

    def fail(*args, **kwargs):
        raise AssertionError("pairs were generated or read before the input was checked")

    for module, name in ((data, "evaluation_pairs"), (tasks, "generate_batch"), (dataset, "load_pairs")):
        monkeypatch.setattr(module, name, fail)


def _bib_run(root: Path, name: str, info, checkpoints: bool = True) -> Path:
    run = root / name
    run.mkdir()
    (run / "run.json").write_text(info if isinstance(info, str) else json.dumps(info))
    if checkpoints:
        from jaxsoc.learners.checkpoint import Checkpointer

        kind = info.get("kind") if isinstance(info, dict) else "bib-bc-mlp"
        saver = Checkpointer(run / "checkpoints", {"kind": checkpoints if isinstance(checkpoints, str) else kind})
        saver.save(1, {"x": np.zeros(1, np.float32)})
        saver.close()
    return run


BIB_INFO = {"kind": "bib-bc-mlp", "config": {}, "seeds": 1, "seed": 0, "data": "generated", "encoder": None}


def test_bib_eval_checks_every_run_before_any_pairs(tmp_path, capsys, no_pairs):
    good = _bib_run(tmp_path, "good", BIB_INFO)
    argv = lambda *runs: ["bib", "eval", str(good), *map(str, runs), "--pairs", "4"]  # noqa: E731
    refused(argv(tmp_path / "missing"), tmp_path, capsys, f"{tmp_path / 'missing'}: no such run directory")
    corrupt = _bib_run(tmp_path, "corrupt", '{"kind": "bib-bc-mlp", ')
    refused(argv(corrupt), tmp_path, capsys, f"{corrupt / 'run.json'} is not readable JSON")
    listed = _bib_run(tmp_path, "listed", "[1]")
    refused(argv(listed), tmp_path, capsys, f"{listed / 'run.json'}: 'kind' must be one of", "got 'list'")
    lacking = _bib_run(tmp_path, "lacking", {k: v for k, v in BIB_INFO.items() if k != "seeds"})
    refused(argv(lacking), tmp_path, capsys, f"{lacking / 'run.json'} lacks 'seeds'")
    bad_config = _bib_run(tmp_path, "bad_config", {**BIB_INFO, "config": {"layers": 3}})
    refused(argv(bad_config), tmp_path, capsys, f"{bad_config / 'run.json'}: bad BCConfig field")
    unfinished = _bib_run(tmp_path, "unfinished", BIB_INFO, checkpoints=False)
    refused(argv(unfinished), tmp_path, capsys, f"{unfinished} has no checkpoint yet")
    empty = _bib_run(tmp_path, "empty", BIB_INFO, checkpoints=False)
    (empty / "checkpoints").mkdir()
    refused(argv(empty), tmp_path, capsys, f"{empty} has no checkpoint yet (nothing saved in {empty / 'checkpoints'})")
    other = _bib_run(tmp_path, "other", BIB_INFO, checkpoints="bib-video-rnn")
    refused(argv(other), tmp_path, capsys, f"{other / 'checkpoints'} holds a 'bib-video-rnn' checkpoint")
    broken = _bib_run(tmp_path, "broken", BIB_INFO)
    for meta in (broken / "checkpoints").rglob("*"):
        if meta.is_file() and meta.parent.name == "meta":
            meta.write_text("{not json")
    refused(argv(broken), tmp_path, capsys, f"unreadable checkpoint meta in {(broken / 'checkpoints').absolute()}/1")
    atc = _bib_run(tmp_path, "atc", {**BIB_INFO, "kind": "bib-atc"})
    refused(argv(atc), tmp_path, capsys, f"{atc} is a bib-atc run, which is not an observer")
    refused(["bib", "probe", str(atc)], tmp_path, capsys, f"{atc} is a bib-atc run; bib probe takes bc runs")
    refused(["bib", "probe", str(corrupt)], tmp_path, capsys, f"{corrupt / 'run.json'} is not readable JSON")
    refused(["bib", "eval", "--data", "nowhere"], tmp_path, capsys, "--data nowhere: no such directory")
    refused(["bib", "eval", "--pairs", "0"], tmp_path, capsys, "--pairs must be a positive integer")
    refused(argv("--region", "agent"), tmp_path, capsys, f"--region agent: {good} is a bib-bc-mlp run")
    refused(["bib", "eval", "--region", "agent"], tmp_path, capsys, "--region agent applies to video runs")


# ---------------------------------------------------------------------------------------------------- errors


class XlaRuntimeError(RuntimeError):
    """Stands in for jaxlib's ``XlaRuntimeError`` (a ``RuntimeError`` subclass, named so in every jax version)."""


@pytest.mark.parametrize(
    "error",
    [
        XlaRuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate 80.00GiB"),
        jax.errors.JaxRuntimeError("RESOURCE_EXHAUSTED: Out of memory"),
    ],
    ids=["XlaRuntimeError", "JaxRuntimeError"],
)
def test_device_errors_keep_their_traceback(error, monkeypatch, capsys):
    def oom(args):
        raise error

    monkeypatch.setattr(C, "cmd_tasks", oom)  # build_parser wraps the module's cmd_tasks in clear_errors
    assert is_device_error(error)
    with pytest.raises(type(error), match="RESOURCE_EXHAUSTED"):
        main(["chaic", "tasks"])
    assert capsys.readouterr().err == ""


def test_bad_input_errors_still_exit_2_and_other_key_errors_are_bugs(monkeypatch, capsys):
    args = argparse.Namespace(command="chaic", verb="tasks")
    for error in (RuntimeError("MP4 export needs imageio-ffmpeg"), ValueError("bad"), FileNotFoundError("x.npz")):

        def fail(args, error=error):
            raise error

        assert clear_errors(fail)(args) == 2
        assert capsys.readouterr().err == f"jaxsoc chaic tasks: {error}\n"

    def bug(args):
        return {}["setting"]  # once "jaxsoc: setting" and exit code 2

    monkeypatch.setattr(C, "cmd_tasks", bug)
    with pytest.raises(KeyError, match="setting"):
        main(["chaic", "tasks"])
    assert main(["render", "MiniGrid-Nope-v0", "--out", "x.gif"]) == 2  # an unknown environment is still bad input
    assert "unknown environment 'MiniGrid-Nope-v0'" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------------- seeds


def test_chaic_task_seed_builds_the_split_and_seed_the_runs(monkeypatch):
    from jaxsoc.envs.chaic import tasks as T

    built = []

    class Built(Exception):
        pass

    def cached_split(task, split, seed=0):
        built.append((task, split, seed))
        raise Built

    monkeypatch.setattr(T, "cached_split", cached_split)
    for seed, task_seed in ((5, 0), (0, 7)):
        with pytest.raises(Built):
            CE.evaluate(["normal"], ["none"], 1, seed=seed, task_seed=task_seed)
    assert built == [("normal", "test", 0), ("normal", "test", 7)]


def test_chaic_eval_records_both_seeds_and_appends_only_to_the_same_split(tmp_path, monkeypatch, capsys):
    calls = []

    def evaluate(tasks, helpers, seeds, **kwargs):
        calls.append(kwargs)
        return {task: {h: dict(ROW) for h in helpers} for task in tasks}

    monkeypatch.setattr(C, "evaluate", evaluate)
    monkeypatch.setattr(CE, "plot", lambda results, path: path)
    out = tmp_path / "out"
    base = ["chaic", "eval", "--tasks", "normal", "--helper", "none", "--out", str(out)]
    assert main([*base, "--seed", "5"]) == 0
    assert (calls[-1]["seed"], calls[-1]["task_seed"]) == (5, 0)
    setting = json.loads((out / "chaic_eval.json").read_text())["setting"]
    assert (setting["seed"], setting["task_seed"]) == (5, 0)
    refused([*base, "--seed", "5", "--task-seed", "1", "--append"], tmp_path, capsys, "measured with another task_seed")
    assert main([*base, "--seed", "5", "--helper", "rhp", "--append"]) == 0  # same split and runs: appended
    assert list(json.loads((out / "chaic_eval.json").read_text())["results"]["normal"]) == ["none", "rhp"]
    # a file written before --task-seed existed: its split was built from its seed
    old = {"setting": {k: v for k, v in _chaic_setting().items() if k != "task_seed"}, "results": {"normal": {}}}
    (out / "chaic_eval.json").write_text(json.dumps({**old, "setting": {**old["setting"], "seed": 5}}))
    refused([*base, "--seed", "5", "--append"], tmp_path, capsys, "measured with another task_seed")
    assert main([*base, "--seed", "5", "--task-seed", "5", "--append"]) == 0
    assert calls[-1]["task_seed"] == 5


def test_household_batches_are_sized_to_the_work():
    assert H.batch_size(10, 100) == 10  # one batch of the run's size: no dummy episodes
    assert H.batch_size(100, 100) == 100
    assert H.batch_size(150, 100) == 75  # two even batches, not 100 + 50 padded to 100
    assert H.batch_size(201, 100) == 67
    for episodes in range(1, 260):
        for most in (1, 7, 64, 100):
            batch = H.batch_size(episodes, most)
            batches = -(-episodes // batch)
            assert batch <= most and batches == -(-episodes // most)  # no more batches than needed
            assert batches * batch - episodes < batches  # fewer padded episodes than batches
