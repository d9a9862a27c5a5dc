"""The command layer: ``jaxsoc`` and every subcommand, above the environments, learners and GPU suite.

``common`` (``list``, ``demo``, ``render``, ``demos``), ``bench`` (``bench``), ``learn`` (``train``, ``eval``,
``sweep``) and one module per family (``bib``, ``household``, ``chaic``, ``excalibur``: ``jaxsoc <family> <verb>``
and the family's ``jaxsoc train`` front end); ``errors.clear_errors`` turns bad input into exit code 2. Nothing
below this package imports it (docs/architecture.md, tests/test_layers.py).
"""

from __future__ import annotations

import argparse
import sys

#: the ``jaxsoc --help`` description
DESCRIPTION = "The ``jaxsoc`` command: ``list``, ``demo``, ``render``, ``bench``, ``demos``, ``train`` and ``eval``."


def build_parser() -> argparse.ArgumentParser:
    """Returns the ``jaxsoc`` parser with every subcommand; each sets ``func(args) -> exit code``."""
    from jaxsoc.cli import bench, bib, chaic, common, excalibur, household, learn

    parser = argparse.ArgumentParser(prog="jaxsoc", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True)
    common.add_parsers(sub)
    bench.add_parser(sub)
    common.add_demos_parser(sub)
    learn.add_parsers(sub)
    for family in (bib, household, chaic, excalibur):
        family.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Runs ``jaxsoc`` with ``argv`` (default ``sys.argv[1:]``). Returns the exit code: the command's, or 2 for an
    unknown environment name (any other ``KeyError`` is a bug and keeps its traceback)."""
    from jaxsoc.core.registry import UnknownEnvironment

    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except UnknownEnvironment as error:
        print(f"jaxsoc: {error.args[0]}", file=sys.stderr)
        return 2
