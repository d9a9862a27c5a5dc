"""Test-session settings (compilation, caches) and the session's report of crashed xdist workers.

Compilation. The CPU suite is dominated by XLA compile time (level generators, the bot, trainers), not by running
the compiled code: ``jax_disable_most_optimizations`` roughly thirds the compile time of a BabyAI level. It is set
through the environment (``JAX_DISABLE_MOST_OPTIMIZATIONS``, default ``1``) so that subprocesses get it too, and
an environment that sets it wins: ``.ci/run`` runs the ``bitexact`` tests (claims that two ways of computing give
the same bits: jit and eager, compiled and op by op, resumed and uninterrupted) apart, only with
``JAX_DISABLE_MOST_OPTIMIZATIONS=0``, the optimisation level users run.

Persistent compilation cache: ``JAXSOC_TEST_XLA_CACHE`` is ``off`` (the default) or a folder. Off, the tests and
their subprocesses compile everything themselves (``JAX_ENABLE_COMPILATION_CACHE=false``, an outside
``JAX_COMPILATION_CACHE_DIR`` is dropped). It costs nothing measurable: six compile-heavy modules (the GPU suite's
toy run in a subprocess, the CLI tests, the bot) took 435 s of CPU in one process without a cache and 444 s with a
cold one (2026-11-27, 2 shared cores). In a folder (``JAXSOC_TEST_XLA_CACHE=.jax-test-cache``, for warm local
reruns) every process of the session writes only to its own subfolder, ``<folder>/<xdist worker id>`` (``main``
without xdist), which the subprocesses a test starts inherit, so no two pytest processes share one: jax writes
entries unlocked and in place, and an xdist worker once segfaulted while writing one. (A test that starts several
processes at once, as ``test_distributed`` does, still shares its worker's folder among them.)

Generated data. ``JAXSOC_CACHE`` (the EXCALIBUR and WFC banks, ``jaxsoc.cache``) is a fresh temporary folder for
the session unless the environment sets it; every xdist worker and subprocess inherits it, so the tests build the
banks they use from the code under test. The session that made the folder removes it at its end.

Compiled programs. Every executable XLA:CPU compiles holds about nine memory mappings (its code and data) for as long
as jax's caches keep it, and a process may hold at most ``vm.max_map_count`` mappings (65,530 by default): an xdist
worker that has compiled some 7,000 programs can no longer map a new one, and XLA segfaults inside the compilation
(four CI runs on 2026-11-27/28 crashed so, each at 75-90% of the suite, in whatever test was compiling; each crashed
test passed in a fresh process). After each test module, when the process holds more than a quarter of the limit,
jax's caches are cleared (``jax.clear_caches``), which unmaps the executables no test still holds.

Crashed workers. Under pytest-xdist a worker that dies (a segfault, an abort) fails the test it was running, and
the controller prints ``CRASHED: <node id>`` for each in its summary; a worker that dies outside any test (after its
last one, which xdist alone lets pass) is a failure too. When crashes ended the session before every collected test
ran (``.ci/run`` runs with ``--max-worker-restart=0``: pytest-xdist 3.8's ``loadscope`` scheduler can hang after it
replaces a crashed worker), each test that never ran is reported as a failure, ``NOT RUN: '<node id>': ...``.
``.ci/crashed_tests.py`` lists the crashed and not-run tests from the junit report, and ``.ci/run`` runs them once
more in fresh processes without a compilation cache.

Slices of the slow tier. ``--slow-slice K/M`` keeps, of the ``slow`` tests, only those of slice ``K`` of ``M``
(``tiers.slow_slice``: the listed heavy tests one per slice, the others by the CRC-32 of the node id modulo ``M``)
and reports the others as deselected; tests not marked ``slow`` are left to ``-m``. The ``M`` slices partition the
slow tier but ``tiers.OUTSIDE_ROTATION`` (three model evaluations of 5-25 minutes each, which no slice selects), and
``.ci/run`` runs one, chosen by the commit, so that every other slow test runs within ``M`` landings.
"""

import gc
import os
import shutil
import tempfile
from pathlib import Path

import jax
import pytest

XLA_CACHE_ENV = "JAXSOC_TEST_XLA_CACHE"
CRASH_MESSAGE = "crashed while running"
SHOWN_NOT_RUN = 20  # NOT RUN lines printed in the summary

os.environ.setdefault("JAX_DISABLE_MOST_OPTIMIZATIONS", "1")
jax.config.update("jax_disable_most_optimizations", os.environ["JAX_DISABLE_MOST_OPTIMIZATIONS"] == "1")


def compilation_cache_folder(setting: str | None, worker: str | None) -> Path | None:
    """Returns this process's persistent compilation cache folder for the ``JAXSOC_TEST_XLA_CACHE`` value
    ``setting`` and the xdist worker id ``worker`` (None outside xdist): None when the cache is off (unset, empty
    or ``off``), else ``<setting>/<worker or "main">``."""
    if not setting or setting.lower() == "off":
        return None
    return Path(setting) / (worker or "main")


_folder = compilation_cache_folder(os.environ.get(XLA_CACHE_ENV), os.environ.get("PYTEST_XDIST_WORKER"))
if _folder is None:
    os.environ.pop("JAX_COMPILATION_CACHE_DIR", None)
    os.environ["JAX_ENABLE_COMPILATION_CACHE"] = "false"
    jax.config.update("jax_enable_compilation_cache", False)
else:
    os.environ["JAX_COMPILATION_CACHE_DIR"] = str(_folder)
    os.environ["JAX_ENABLE_COMPILATION_CACHE"] = "true"
    jax.config.update("jax_enable_compilation_cache", True)
    jax.config.update("jax_compilation_cache_dir", str(_folder))

_OWN_BANK_CACHE = None
if not os.environ.get("JAXSOC_CACHE"):  # the controller (or a run without xdist) makes it; workers inherit it
    _OWN_BANK_CACHE = tempfile.mkdtemp(prefix="jaxsoc-test-cache-")
    os.environ["JAXSOC_CACHE"] = _OWN_BANK_CACHE


def memory_maps() -> int:
    """Returns the number of memory mappings this process holds (0 where ``/proc`` is missing)."""
    try:
        with open(f"/proc/{os.getpid()}/maps") as maps:
            return sum(1 for _ in maps)
    except OSError:
        return 0


def max_memory_maps() -> int:
    """Returns ``vm.max_map_count``, the most memory mappings a process may hold (Linux's default where unreadable)."""
    try:
        return int(Path("/proc/sys/vm/max_map_count").read_text())
    except (OSError, ValueError):
        return 65530


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """After a test module, clears jax's caches when the process holds over a quarter of its memory mappings (module
    docstring: each compiled program keeps about nine)."""
    yield
    if memory_maps() > max_memory_maps() // 4:
        jax.clear_caches()
        gc.collect()


def pytest_unconfigure(config):
    if _OWN_BANK_CACHE is not None:
        shutil.rmtree(_OWN_BANK_CACHE, ignore_errors=True)


# -- crashed xdist workers ----------------------------------------------------------------------------------------


def is_crash(report) -> bool:
    """Whether ``report`` is pytest-xdist's report of a worker that died while running the test."""
    return report.failed and report.when == "???" and CRASH_MESSAGE in str(report.longrepr)


class CrashReport:
    """The session's crashes, seen from the xdist controller (which gets every worker's reports; a worker sees no
    crash of its own): prints ``CRASHED``/``NOT RUN`` lines in the summary, and reports as failures a worker that
    died outside any test (at its exit, say) and the tests that crashes kept from running."""

    def __init__(self):
        self.collected: list[str] = []  # node ids, as the first worker collected them
        self.ended: set[str] = set()  # node ids with a final report
        self.crashes: list = []  # xdist's reports of a worker that died while running a test
        self.down: dict[str, str] = {}  # worker id -> why, for every worker that went down abnormally
        self.outside: dict[str, str] = {}  # the same, for those that died outside any test
        self.not_run: list[str] = []

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        if not self.collected:
            self.collected.extend(ids)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):
        if error is not None:
            self.down[node.gateway.id] = str(error).strip()

    def pytest_runtest_logreport(self, report):
        if is_crash(report):
            self.crashes.append(report)
        if report.when in ("call", "???") or (report.when == "setup" and not report.passed):
            self.ended.add(report.nodeid)

    @pytest.hookimpl(tryfirst=True)  # before junitxml writes its file
    def pytest_sessionfinish(self, session):
        in_tests = {getattr(getattr(r, "node", None), "gateway", None) for r in self.crashes}
        in_tests = {gateway.id for gateway in in_tests if gateway is not None}
        self.outside = {worker: why for worker, why in self.down.items() if worker not in in_tests}
        if not self.crashes and not self.outside:
            return
        self.not_run = [n for n in self.collected if n not in self.ended]
        failures = [
            (f"<xdist worker {w}>", f"worker '{w}' died outside any test: {why}") for w, why in self.outside.items()
        ]
        ended = f"the session ended after {len(self.crashes) + len(self.outside)} crashed worker(s) before it ran"
        failures += [(nodeid, f"NOT RUN: '{nodeid}': {ended}") for nodeid in self.not_run]
        for nodeid, message in failures:
            location = (nodeid.split("::")[0], None, nodeid)
            report = pytest.TestReport(nodeid, location, {}, "failed", message, "call")
            session.config.hook.pytest_runtest_logreport(report=report)
        if failures and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter):
        for report in self.crashes:
            worker = getattr(getattr(report, "node", None), "gateway", None)
            terminalreporter.write_line(f"CRASHED: {report.nodeid}" + (f" (worker {worker.id})" if worker else ""))
        for worker, why in self.outside.items():
            terminalreporter.write_line(f"CRASHED: xdist worker {worker}, outside any test ({why})")
        for nodeid in self.not_run[:SHOWN_NOT_RUN]:
            terminalreporter.write_line(f"NOT RUN: {nodeid}")
        if len(self.not_run) > SHOWN_NOT_RUN:
            terminalreporter.write_line(f"NOT RUN: {len(self.not_run) - SHOWN_NOT_RUN} more (all in the junit report)")


def pytest_addoption(parser):
    parser.addoption(
        "--slow-slice",
        metavar="K/M",
        help="of the tests marked slow, keep only slice K of M (CRC-32 of the node id modulo M; tests/tiers.py); "
        "the others are deselected",
    )


def pytest_configure(config):
    config.pluginmanager.register(CrashReport(), "jaxsoc-crash-report")
    from tiers import parse_slow_slice

    option = config.getoption("slow_slice", None)
    try:
        config.slow_slice = None if option is None else parse_slow_slice(option)
    except ValueError as error:
        raise pytest.UsageError(str(error)) from None


def pytest_report_header(config):
    if getattr(config, "slow_slice", None) is not None:
        k, m = config.slow_slice
        return f"slow tests: slice {k}/{m} (CRC-32 of the node id modulo {m}; tests/tiers.py)"
    return None


@pytest.hookimpl(tryfirst=True)  # before the `-m 'not slow'` of pyproject's addopts deselects
def pytest_collection_modifyitems(config, items):
    """Marks ``slow`` the tests ``tiers.LEFT_OUT_OF_CI`` names (so that ``.ci/run`` stays within 20 minutes), with
    ``--slow-slice K/M`` deselects the slow tests of the other slices, then orders the tests by their work unit's cost
    (``tiers.unit_order``), dearest first, keeping each module's order: with ``--dist loadscope
    --no-loadscope-reorder`` the workers take the dear units first and end on cheap ones, instead of one worker idling
    while the other builds a late module's fixtures."""
    from tiers import LEFT_OUT_OF_CI, OUTSIDE_ROTATION, slow_slice, unit_order

    for item in items:
        if item.nodeid in LEFT_OUT_OF_CI:
            item.add_marker(pytest.mark.slow)
    if getattr(config, "slow_slice", None) is not None:
        k, m = config.slow_slice
        other = [
            item
            for item in items
            if item.get_closest_marker("slow") and (item.nodeid in OUTSIDE_ROTATION or slow_slice(item.nodeid, m) != k)
        ]
        if other:
            config.hook.pytest_deselected(items=other)
            dropped = set(map(id, other))
            items[:] = [item for item in items if id(item) not in dropped]
    items.sort(key=lambda item: unit_order(item.nodeid))  # stable: a module's tests keep their order


def pytest_xdist_make_scheduler(config, log):
    """Returns, for ``--dist loadscope``, xdist's scheduler with the work units of ``tiers.work_scope``: modules
    that compile the same programs run on one worker."""
    if config.getvalue("dist") != "loadscope":
        return None
    from tiers import work_scope
    from xdist.scheduler import LoadScopeScheduling

    class SharedScopeScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_scope(nodeid)

    return SharedScopeScheduling(config, log)
