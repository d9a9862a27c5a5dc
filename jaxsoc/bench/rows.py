"""Keyed row files, shared by the GPU suite (``gpu_suite.core``) and the family throughput tables (``bench.family``):
every row names all its parameters in a ``"key"``, a file is rewritten atomically after every row, and a later run
on the same device kind keeps the rows of the keys it would measure again (``keyed_rows``) instead of measuring
them."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def read_json(path: str | Path) -> Any:
    """Returns the content of the JSON file ``path``, or None when there is none (or it is unreadable)."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def write_json(path: str | Path, value: Any, *, allow_nan: bool = True) -> None:
    """Writes ``value`` to ``path`` as indented JSON (and a final newline) through a temporary file replaced at once,
    so an interrupted run leaves the previous file whole."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(value, indent=1, allow_nan=allow_nan) + "\n")
    tmp.replace(path)


def keyed_rows(rows: Iterable[dict], device: str | None = None, skip: Iterable[str] = ("partial",)) -> dict[str, dict]:
    """Returns ``{key: row}`` of the ``rows`` that have a ``"key"``, measured on ``device`` (any when None), without
    a true value under any of the fields ``skip`` (``"partial"``: a progress row; ``"error"``: a failed one)."""
    skip = tuple(skip)
    return {
        r["key"]: r
        for r in rows
        if "key" in r and (device is None or r.get("device") == device) and not any(r.get(f) for f in skip)
    }
