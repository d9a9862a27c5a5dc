"""jax's persistent compilation cache, on by default for the ``jaxsoc`` command and ``train_rl``: a second run of
the same configuration loads its compiled programs from disk instead of compiling them again.

``enable_compile_cache()`` puts the cache in ``<jaxsoc's cache root>/xla`` (the root is ``$JAXSOC_CACHE``, else
``~/.cache/jaxsoc``, as ``jaxsoc.cache.cache_root`` says one layer up), keeps only programs that took at least
``MIN_COMPILE_SECS`` to compile (tiny ones cost more files than time) and bounds the folder to ``MAX_BYTES``.

Who decides. ``JAXSOC_COMPILE_CACHE`` set to ``off`` (or ``0``, ``none``, ``false``, ``no``) turns it off; any other
value is the folder. jax's own settings always win: when the cache is configured already (``jax_compilation_cache_dir``
set, in code or by ``JAX_COMPILATION_CACHE_DIR``) or disabled (``jax_enable_compilation_cache`` false, as
``JAX_ENABLE_COMPILATION_CACHE=false`` and the test suite's ``JAXSOC_TEST_XLA_CACHE=off`` make it), nothing changes.

The size bound. jax's own least-recently-used eviction (``jax_compilation_cache_max_size``) needs the ``filelock``
package, which jaxsoc does not depend on, and without it jax fails every read of the cache (a warning per program,
nothing cached). So the bound is kept here: when the cache is turned on, the least recently used entries (by file
access time, else modification time) go until the folder holds at most ``max_bytes``. One run may pass the bound by
what it writes; the next start brings it back.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import jax

#: the environment variable: ``off`` (``OFF``) or the cache folder
ENV = "JAXSOC_COMPILE_CACHE"
OFF = frozenset({"off", "0", "none", "false", "no"})
#: the default bound of the folder (bytes) and the least compile time of a program worth keeping (seconds)
MAX_BYTES = 2 * 2**30
MIN_COMPILE_SECS = 0.5
#: the file name endings of jax's entries: the program, and its access time (written only by jax's own eviction)
ENTRY_SUFFIX, ATIME_SUFFIX = "-cache", "-atime"

_enabled: Path | None = None  # the folder an earlier call turned on


def default_folder() -> Path:
    """Returns the cache folder: ``$JAXSOC_COMPILE_CACHE`` when it names one, else ``<cache root>/xla``."""
    setting = os.environ.get(ENV, "").strip()
    if setting and setting.lower() not in OFF:
        return Path(setting).expanduser()
    root = os.environ.get("JAXSOC_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "jaxsoc")
    return Path(root) / "xla"


def opted_out() -> bool:
    """Returns whether ``JAXSOC_COMPILE_CACHE`` turns the cache off."""
    return os.environ.get(ENV, "").strip().lower() in OFF


def configured_elsewhere() -> bool:
    """Returns whether jax's cache is already set up or disabled by someone else (a user, the test suite)."""
    if not jax.config.jax_enable_compilation_cache:
        return True
    folder = jax.config.jax_compilation_cache_dir
    if _enabled is not None and folder == str(_enabled):
        return False
    return folder is not None or "JAX_COMPILATION_CACHE_DIR" in os.environ


def prune(folder: str | Path, max_bytes: int) -> int:
    """Removes the least recently used entries of the cache ``folder`` until it holds at most ``max_bytes`` of them
    (``max_bytes < 0``: no bound). Returns the bytes removed."""
    if max_bytes < 0:
        return 0
    entries = []
    for path in Path(folder).glob(f"*{ENTRY_SUFFIX}"):
        try:
            stat = path.stat()
        except OSError:  # removed meanwhile by another process
            continue
        entries.append((max(stat.st_atime, stat.st_mtime), stat.st_size, path))
    total, removed = sum(size for _, size, _ in entries), 0
    for _, size, path in sorted(entries):
        if total - removed <= max_bytes:
            break
        try:
            path.unlink(missing_ok=True)
            path.with_name(path.name.removesuffix(ENTRY_SUFFIX) + ATIME_SUFFIX).unlink(missing_ok=True)
        except OSError:  # not ours to remove: it stays, and counts
            continue
        removed += size
    return removed


def use_compile_cache(
    folder: str | Path, *, max_bytes: int = MAX_BYTES, min_compile_secs: float = MIN_COMPILE_SECS
) -> Path:
    """Turns on jax's persistent compilation cache in ``folder`` (created), unconditionally, keeping programs that
    compiled in at least ``min_compile_secs`` and pruning the folder to ``max_bytes`` (``prune``). Returns the
    folder as a ``Path``. Raises ``OSError`` when the folder cannot be made."""
    global _enabled
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    prune(folder, max_bytes)
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", float(min_compile_secs))
    _enabled = folder
    return folder


def enable_compile_cache(
    path: str | Path | None = None, *, max_bytes: int = MAX_BYTES, min_compile_secs: float | None = None
) -> Path | None:
    """Turns on jax's persistent compilation cache unless opted out or configured elsewhere (module docstring).

    Args:
        path: the folder (default ``default_folder()``: ``$JAXSOC_COMPILE_CACHE`` or ``<cache root>/xla``).
        max_bytes: the folder's bound (``prune``; negative: none).
        min_compile_secs: the least compile time of a program it keeps (default: ``MIN_COMPILE_SECS``, or
            ``$JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS`` where set).

    Returns:
        The cache folder, also on a repeated call (the first call's folder stays); None when ``JAXSOC_COMPILE_CACHE``
        opts out, jax's cache is configured or disabled elsewhere (left alone), or the folder cannot be made (a
        warning).
    """
    if opted_out() or configured_elsewhere():
        return None
    if _enabled is not None and jax.config.jax_compilation_cache_dir == str(_enabled):
        return _enabled
    if min_compile_secs is None:
        min_compile_secs = float(os.environ.get("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", MIN_COMPILE_SECS))
    try:
        return use_compile_cache(path or default_folder(), max_bytes=max_bytes, min_compile_secs=min_compile_secs)
    except OSError as error:
        warnings.warn(f"jaxsoc: no persistent compilation cache ({error})", RuntimeWarning, stacklevel=2)
        return None
