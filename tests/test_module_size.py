"""No module of the package is over ``MAX_LINES`` lines: a module that grows past it holds more than one idea and is
split by idea (as ``envs/bib/bibjson.py`` and ``bibjson_read.py``: the format and the writer, and the reader's
machinery). The modules still over it are listed in ``PENDING``, each with its reason; a listed module that has come
under the limit must leave the list."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 700
#: modules allowed over ``MAX_LINES`` for now, with the reason
PENDING: dict[str, str] = {}


def _sizes() -> dict[str, int]:
    """Returns ``{path relative to the repository: lines}`` of every module under ``jaxsoc/``."""
    return {
        str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted((ROOT / "jaxsoc").rglob("*.py"))
    }


def test_no_module_over_the_limit():
    sizes = _sizes()
    over = {path: n for path, n in sizes.items() if n > MAX_LINES and path not in PENDING}
    assert not over, f"modules over {MAX_LINES} lines (split them by idea, or list them in PENDING with why): {over}"


def test_pending_modules_are_still_over_the_limit():
    sizes = _sizes()
    assert all(reason for reason in PENDING.values())
    missing = [path for path in PENDING if path not in sizes]
    done = [path for path in PENDING if path in sizes and sizes[path] <= MAX_LINES]
    assert not missing, f"PENDING lists modules that do not exist: {missing}"
    assert not done, f"these modules are now within {MAX_LINES} lines: remove them from PENDING: {done}"
