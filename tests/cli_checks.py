"""Checks shared by the tests of the ``jaxsoc`` commands' refusals of bad input."""

from __future__ import annotations

from pathlib import Path

from jaxsoc.cli import main


def files_under(root: Path) -> dict[str, bytes | None]:
    """Returns every path under ``root`` with its bytes (None for a directory)."""
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else None for p in sorted(root.rglob("*"))}


def refused(argv: list[str], root: Path, capsys, *phrases: str) -> str:
    """Runs ``jaxsoc argv``; asserts exit code 2, every phrase in stderr and ``root`` unchanged. Returns stderr."""
    before = files_under(root)
    assert main(argv) == 2
    err = capsys.readouterr().err
    for phrase in phrases:
        assert phrase in err, err
    assert files_under(root) == before
    return err
