"""The default persistent compilation cache (``jaxsoc.core.compile_cache``): a second process loads what the first
compiled, opting out writes nothing, a cache configured elsewhere (the test suite's, a user's) is left alone, the
folder stays within its bound, and ``jaxsoc --no-compile-cache`` turns it off for the whole process."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import jax
import pytest

from jaxsoc.core import compile_cache

#: compiles one small program with the default cache (programs of any compile time kept) and prints the cache folder
#: it got, the persistent-cache hits jax counted and the folder jax uses
SCRIPT = """
import json
import jax, jax.numpy as jnp
from jax import monitoring
from jaxsoc.core.compile_cache import enable_compile_cache

hits = []
monitoring.register_event_listener(lambda event, **_: hits.append(event) if event.endswith("/cache_hits") else None)
folder = enable_compile_cache(min_compile_secs=0)

@jax.jit
def f(x):
    for _ in range(8):
        x = jnp.tanh(x @ x.T) + jnp.sin(x)
    return x.sum()

f(jnp.ones((32, 32))).block_until_ready()
print(json.dumps({"folder": folder and str(folder), "hits": len(hits), "jax": jax.config.jax_compilation_cache_dir}))
"""

#: the environment variables of jax's cache and of the test suite's, which the subprocesses must not inherit
_OUTSIDE = ("JAX_COMPILATION_CACHE_DIR", "JAX_ENABLE_COMPILATION_CACHE", "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS")


def run_script(tmp_path, **env: str) -> dict:
    """Runs ``SCRIPT`` in a fresh process without the test suite's cache settings, with ``env`` added and
    ``JAXSOC_CACHE`` in ``tmp_path``. Returns its printed dict."""
    drop = (*_OUTSIDE, "JAXSOC_TEST_XLA_CACHE", compile_cache.ENV)
    base = {k: v for k, v in os.environ.items() if k not in drop}
    base.update(JAX_PLATFORMS="cpu", JAXSOC_CACHE=str(tmp_path / "root"), **env)
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=base, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def entries(folder) -> set[str]:
    """Returns the names of the cache entries in ``folder``."""
    return {p.name for p in folder.glob(f"*{compile_cache.ENTRY_SUFFIX}")}


def test_a_second_process_loads_the_programs_the_first_compiled(tmp_path):
    folder = tmp_path / "xla"
    first = run_script(tmp_path, JAXSOC_COMPILE_CACHE=str(folder))
    written = entries(folder)
    assert first == {"folder": str(folder), "hits": 0, "jax": str(folder)} and written
    second = run_script(tmp_path, JAXSOC_COMPILE_CACHE=str(folder))
    assert second["folder"] == str(folder) and second["hits"] >= 1
    assert entries(folder) == written  # everything came from the cache


def test_the_default_folder_is_under_the_cache_root_and_opting_out_writes_nothing(tmp_path):
    off = run_script(tmp_path, JAXSOC_COMPILE_CACHE="off")
    assert off == {"folder": None, "hits": 0, "jax": None} and not (tmp_path / "root").exists()
    default = run_script(tmp_path)
    assert default["folder"] == default["jax"] == str(tmp_path / "root" / "xla") and entries(tmp_path / "root" / "xla")


def test_a_cache_configured_by_the_user_is_left_alone(tmp_path):
    theirs = tmp_path / "theirs"
    result = run_script(tmp_path, JAX_COMPILATION_CACHE_DIR=str(theirs), JAXSOC_COMPILE_CACHE=str(tmp_path / "ours"))
    assert result["folder"] is None and result["jax"] == str(theirs) and not (tmp_path / "ours").exists()


def test_the_test_suites_setting_is_left_alone(tmp_path):
    before = (jax.config.jax_compilation_cache_dir, jax.config.jax_enable_compilation_cache)
    assert compile_cache.enable_compile_cache(tmp_path / "xla") is None  # off (CI) or the session's folder
    assert (jax.config.jax_compilation_cache_dir, jax.config.jax_enable_compilation_cache) == before
    assert not (tmp_path / "xla").exists()


@pytest.mark.parametrize("setting", ["off", "OFF", "0", "none", " false "])
def test_opt_out_values(monkeypatch, setting):
    monkeypatch.setenv(compile_cache.ENV, setting)
    assert compile_cache.opted_out()


def test_the_folder_comes_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("JAXSOC_CACHE", str(tmp_path / "root"))
    monkeypatch.delenv(compile_cache.ENV, raising=False)
    assert compile_cache.default_folder() == tmp_path / "root" / "xla" and not compile_cache.opted_out()
    monkeypatch.setenv(compile_cache.ENV, str(tmp_path / "mine"))
    assert compile_cache.default_folder() == tmp_path / "mine" and not compile_cache.opted_out()


def test_prune_removes_the_least_recently_used_entries_first(tmp_path):
    for age, name in enumerate(["new", "mid", "old"]):
        entry = tmp_path / f"{name}{compile_cache.ENTRY_SUFFIX}"
        entry.write_bytes(b"x" * 100)
        os.utime(entry, (1e9 - age * 1000, 1e9 - age * 1000))
    (tmp_path / f"old{compile_cache.ATIME_SUFFIX}").write_bytes(b"t")
    assert compile_cache.prune(tmp_path, -1) == 0 and compile_cache.prune(tmp_path, 300) == 0
    assert compile_cache.prune(tmp_path, 150) == 200
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"new{compile_cache.ENTRY_SUFFIX}"]


def test_the_command_flag_turns_the_cache_off_for_the_process(monkeypatch, capsys):
    from jaxsoc.cli import build_parser, main

    monkeypatch.setenv(compile_cache.ENV, "")  # restored after the test, whatever main sets
    assert build_parser().parse_args(["--no-compile-cache", "list"]).no_compile_cache
    assert main(["--no-compile-cache", "list"]) == 0 and capsys.readouterr().out
    assert os.environ[compile_cache.ENV] == "off" and compile_cache.enable_compile_cache() is None
