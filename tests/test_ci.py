"""CI's crash handling: ``.ci/crashed_tests.py`` on junit reports with crashed xdist workers, and
``conftest.py``'s crash report (``CRASHED``/``NOT RUN`` lines, tests kept from running reported as failures) in a
real pytest-xdist session, run as ``.ci/run`` runs it, whose worker aborts; and the slices of the slow tier that
``.ci/run`` rotates through (``--slow-slice K/M``)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import conftest
import jax
import numpy as np
import pytest
import tiers

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / ".ci" / "crashed_tests.py"


def load_script():
    spec = importlib.util.spec_from_file_location("crashed_tests", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def crash(worker: str, nodeid: str) -> str:
    """A crashed worker's test case as pytest-xdist 3.8 and junitxml write it."""
    message = f"worker '{worker}' crashed while running '{nodeid}'"
    return (
        f'<testcase classname="tests.test_x" name="{nodeid.split("::")[1]}" time="0.000">'
        f'<error message="failed on setup with &quot;{message}&quot;">{message}</error></testcase>'
    )


def not_run(nodeid: str) -> str:
    """A test that crashes kept from running, as ``conftest.CrashReport`` reports it."""
    message = f"NOT RUN: '{nodeid}': the session ended after 1 crashed worker(s) before it ran"
    return (
        f'<testcase classname="tests.test_x" name="{nodeid.split("::")[1]}" time="0.000">'
        f'<failure message="{message}">{message}</failure></testcase>'
    )


PASSED = '<testcase classname="tests.test_x" name="test_fine" time="0.1"/>'
SKIPPED = '<testcase classname="tests.test_x" name="test_skip" time="0.0"><skipped message="no gpu"/></testcase>'
FAILED = (
    '<testcase classname="tests.test_x" name="test_fails" time="0.1">'
    '<failure message="assert 2 == 3">assert 2 == 3</failure></testcase>'
)


def report(tmp_path, *cases: str) -> str:
    path = tmp_path / "report.xml"
    path.write_text(
        f'<?xml version="1.0"?><testsuites><testsuite name="pytest">{"".join(cases)}</testsuite></testsuites>'
    )
    return str(path)


def test_crashed_tests_lists_crashed_then_not_run_tests_once_and_fails_on_other_failures(tmp_path, capsys):
    script = load_script()
    a, b, c = "tests/test_x.py::test_abort", "tests/test_x.py::test_segfault[2]", "tests/test_y.py::test_after"
    # parametrized ids with quotes and spaces (a truncated id made the rerun find nothing: "no tests ran")
    d = "tests/test_y.py::test_refuses[fields0-unknown network 'transformer'; registered: ['grid']]"
    e = "tests/test_y.py::test_reads[open a door, then go to a key behind you]"
    cases = (
        PASSED,
        not_run(c),
        crash("gw0", a),
        SKIPPED,
        crash("gw2", a),
        crash("gw1", b),
        not_run(d),
        crash("gw3", e),
    )
    assert script.main([report(tmp_path, *cases)]) == 0
    assert capsys.readouterr().out.splitlines() == [a, b, e, c, d]
    assert script.main([report(tmp_path, crash("gw0", a), FAILED)]) == 1, "a real failure is never rerun away"
    assert capsys.readouterr().out.splitlines() == [a]
    assert script.main([report(tmp_path, PASSED, FAILED)]) == 1
    assert capsys.readouterr().out == ""
    assert script.main([report(tmp_path, PASSED)]) == 0
    assert capsys.readouterr().out == ""


def test_crashed_tests_refuses_a_report_it_cannot_use(tmp_path, capsys):
    script = load_script()
    assert script.main([report(tmp_path)]) == 2, "no test: pytest's exit 5 is not a pass"
    assert "holds no test" in capsys.readouterr().err
    (tmp_path / "cut.xml").write_text('<?xml version="1.0"?><testsuites><testsuite')
    assert script.main([str(tmp_path / "cut.xml")]) == 2
    assert script.main([str(tmp_path / "absent.xml")]) == 2
    assert "cannot read the junit report" in capsys.readouterr().err


def test_compilation_cache_folder_is_one_per_process():
    assert conftest.compilation_cache_folder(None, "gw0") is None
    assert (
        conftest.compilation_cache_folder("off", "gw0") is None and conftest.compilation_cache_folder("", None) is None
    )
    assert conftest.compilation_cache_folder("/c", "gw0") == Path("/c/gw0")
    assert conftest.compilation_cache_folder("/c", "gw1") != conftest.compilation_cache_folder("/c", "gw0")
    assert conftest.compilation_cache_folder("/c", None) == Path("/c/main")


CRASHING = textwrap.dedent(
    """
    import os


    def test_fine():
        pass


    def test_abort():
        if os.environ.get("ABORT_IN_TEST"):
            os.abort()


    def test_after():
        pass
    """
)
#: a plugin that kills the worker after its last test, when it would tell the controller that it finished
ABORT_AT_EXIT = textwrap.dedent(
    """
    import os

    import pytest


    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(session):
        if os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get("ABORT_AT_EXIT"):
            os.abort()
    """
)


def run_crashing_session(tmp_path, where: str) -> tuple[subprocess.CompletedProcess, str]:
    """Runs ``CRASHING`` as ``.ci/run`` runs the suite (by module, no worker restart; one worker), with this
    conftest as a plugin; its worker aborts ``where`` ("in_test": in test_abort, "at_exit": after the last test).
    Returns the process and the junit report's path."""
    (tmp_path / "test_crashing.py").write_text(CRASHING)
    (tmp_path / "abort_at_exit.py").write_text(ABORT_AT_EXIT)
    junit = tmp_path / "report.xml"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST_")}  # not a worker of ours
    env = {
        **env,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), str(ROOT), str(tmp_path)]),
        "JAX_PLATFORMS": "cpu",
        {"in_test": "ABORT_IN_TEST", "at_exit": "ABORT_AT_EXIT"}[where]: "1",
    }
    args = ["-n", "1", "--dist", "loadscope", "--max-worker-restart=0", "-p", "conftest", "-p", "abort_at_exit"]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *args, "-p", "no:cacheprovider", "-q", f"--junitxml={junit}", "."],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    return proc, str(junit)


def test_a_crash_in_a_test_is_reported_and_the_tests_it_kept_from_running_fail(tmp_path, capsys):
    # the abort ends the session (no worker restart) before test_after runs
    proc, junit = run_crashing_session(tmp_path, "in_test")
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert "CRASHED: test_crashing.py::test_abort (worker gw0)" in out
    assert "NOT RUN: test_crashing.py::test_after" in out
    assert out.strip().splitlines()[-1].startswith("2 failed, 1 passed"), out
    capsys.readouterr()
    assert load_script().main([junit]) == 0, "crashes and tests they kept from running only: .ci/run reruns them"
    assert capsys.readouterr().out.splitlines() == ["test_crashing.py::test_abort", "test_crashing.py::test_after"]


def test_a_worker_that_dies_outside_any_test_fails_the_run(tmp_path):
    # every test passed, then the worker died: xdist alone would report success
    proc, junit = run_crashing_session(tmp_path, "at_exit")
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert "CRASHED: xdist worker gw0, outside any test" in out and "NOT RUN" not in out
    assert out.strip().splitlines()[-1].startswith("1 failed, 3 passed"), out
    assert load_script().main([junit]) == 1


def test_the_session_compilation_cache_setting_reaches_jax_and_subprocesses():
    folder = conftest.compilation_cache_folder(
        os.environ.get(conftest.XLA_CACHE_ENV), os.environ.get("PYTEST_XDIST_WORKER")
    )
    if folder is None:
        assert os.environ["JAX_ENABLE_COMPILATION_CACHE"] == "false" and "JAX_COMPILATION_CACHE_DIR" not in os.environ
        assert not jax.config.jax_enable_compilation_cache
    else:
        assert os.environ["JAX_COMPILATION_CACHE_DIR"] == str(folder) == jax.config.jax_compilation_cache_dir


def test_compiled_programs_hold_memory_maps_until_the_caches_are_cleared():
    """The mechanism of conftest's ``_release_compiled_programs``: each compiled program keeps memory mappings (a
    process may hold at most ``vm.max_map_count``) until ``jax.clear_caches``, even while its jitted function lives."""
    import jax.numpy as jnp

    if not conftest.memory_maps():
        return  # no /proc on this system: nothing to count (the fixture then never clears)
    assert conftest.max_memory_maps() > 0
    before = conftest.memory_maps()
    kept = [jax.jit(lambda x, i=i: jnp.sin(x * i) @ x.T) for i in range(30)]
    for f in kept:
        f(jnp.ones((4, 4))).block_until_ready()
    grown = conftest.memory_maps()
    assert grown - before >= 60, (before, grown)  # about nine each
    jax.clear_caches()
    assert conftest.memory_maps() < grown - 60 and len(kept) == 30


#: a suite of slow and other tests, as tmp_path/tests/test_ppo.py: the last test is slow because
#: ``tiers.LEFT_OUT_OF_CI`` names it, the others by their marks; ids with spaces, quotes and brackets
SLICED = textwrap.dedent(
    """
    import pytest


    def test_fast():
        pass


    @pytest.mark.slow
    @pytest.mark.parametrize("case", ["a", "b c", "d'e", "f[g]", *map(str, range(16))])
    def test_slow(case):
        pass


    @pytest.mark.parametrize(
        "case", [1, pytest.param(2, marks=pytest.mark.slow), pytest.param(3, marks=pytest.mark.slow)]
    )
    def test_mixed(case):
        pass


    def test_train_then_eval_on_the_command_line():
        pass
    """
)
SLICED_SLOW = [
    *(f"tests/test_ppo.py::test_slow[{case}]" for case in ["a", "b c", "d'e", "f[g]", *map(str, range(16))]),
    "tests/test_ppo.py::test_mixed[2]",
    "tests/test_ppo.py::test_mixed[3]",
    "tests/test_ppo.py::test_train_then_eval_on_the_command_line",
]
SLICED_OTHERS = ["tests/test_ppo.py::test_fast", "tests/test_ppo.py::test_mixed[1]"]


def collect_sliced(tmp_path, *args: str) -> tuple[int, list[str], str]:
    """Collects ``SLICED`` with this conftest as a plugin and ``args``; returns the exit status, the node ids
    collected and pytest's output."""
    (tmp_path / "tests").mkdir(exist_ok=True)
    (tmp_path / "tests" / "test_ppo.py").write_text(SLICED)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # the root of the node ids, as the repository's is
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST_")}
    env = {**env, "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), str(ROOT)]), "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "--import-mode=importlib"]
        + ["--collect-only", "-q", *args, "tests"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    return proc.returncode, [line for line in proc.stdout.splitlines() if "::" in line], proc.stdout + proc.stderr


def test_the_slices_partition_the_slow_tests_and_leave_the_others(tmp_path):
    # the same slice in every process (xdist's workers must collect the same tests) and run: CRC-32, not hash()
    assert tiers.slow_slice("tests/test_ppo.py::test_fast", 2**32) == 4128847200
    slices = 3
    seen = []
    for k in range(slices):
        status, kept, out = collect_sliced(tmp_path, "--slow-slice", f"{k}/{slices}")
        assert status == 0, out
        mine = [nodeid for nodeid in kept if nodeid not in SLICED_OTHERS]
        assert mine == [nodeid for nodeid in SLICED_SLOW if tiers.slow_slice(nodeid, slices) == k], out
        assert mine, f"slice {k} of {slices} is empty: choose other test ids"
        assert [nodeid for nodeid in kept if nodeid in SLICED_OTHERS] == SLICED_OTHERS, "the others are kept"
        assert f"({len(SLICED_SLOW) - len(mine)} deselected)" in out, out
        seen += mine
    assert sorted(seen) == sorted(SLICED_SLOW), "every slow test falls in exactly one slice"


def test_a_slice_can_be_empty_and_a_bad_one_is_refused(tmp_path):
    empty = next(k for k in range(100) if all(tiers.slow_slice(n, 100) != k for n in SLICED_SLOW))
    status, kept, out = collect_sliced(tmp_path, "-m", "slow", "--slow-slice", f"{empty}/100")
    assert status == pytest.ExitCode.NO_TESTS_COLLECTED and kept == [], out  # .ci/run lets an empty slice pass
    status, _, out = collect_sliced(tmp_path, "--slow-slice=3/3")
    assert status == pytest.ExitCode.USAGE_ERROR and "--slow-slice takes K/M" in out, out
    assert tiers.parse_slow_slice(" 2/40") == (2, 40) and tiers.parse_slow_slice("0/1") == (0, 1)
    for bad in ("1", "-1/3", "a/b", "1/0", "1/2/3"):
        with pytest.raises(ValueError, match="takes K/M"):
            tiers.parse_slow_slice(bad)
    with pytest.raises(ValueError):
        tiers.slow_slice("tests/test_x.py::t", 0)


def test_ci_runs_the_slice_of_its_commit_with_the_slices_tiers_computes():
    script = (ROOT / ".ci" / "run").read_text()
    slices = [line for line in script.splitlines() if line.startswith("SLOW_SLICES=")]
    assert len(slices) == 1 and int(slices[0].split("=")[1]) >= 1, "one constant at the top"
    assert "git rev-list --count HEAD) % SLOW_SLICES" in script
    assert script.count('--slow-slice "$SLOW_SLICE"') == 2, "the slice's bitexact tests and the others"


def test_the_heavy_slow_tests_fall_one_per_slice_and_name_real_tests():
    """``tiers.SPREAD_SLOW`` puts each heavy slow test in a slice of its own (at CI's 40 slices and at fewer slices
    than heavy tests, as evenly as can be), and it and ``OUTSIDE_ROTATION`` name tests that exist (a renamed test
    would fall back to its CRC slice silently)."""
    spread = tiers.SPREAD_SLOW
    for slices in (40, len(spread), 7):
        counts = np.bincount([tiers.slow_slice(nodeid, slices) for nodeid in spread], minlength=slices)
        assert counts.max() - counts.min() <= 1, (slices, counts)
    assert len(set(spread)) == len(spread) and not set(spread) & set(tiers.OUTSIDE_ROTATION)
    for nodeid in (*spread, *tiers.OUTSIDE_ROTATION):
        path, name = nodeid.split("::")
        function = name.split("[")[0]
        assert f"def {function}(" in (ROOT / path).read_text(), nodeid
