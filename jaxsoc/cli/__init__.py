"""The command layer: ``jaxsoc`` and every subcommand, above the environments, learners and GPU suite.

``common`` (``list``, ``demo``, ``render``, ``demos``), ``bench`` (``bench``), ``learn`` (``train``, ``eval``,
``sweep``) and one module per family (``bib``, ``household``, ``chaic``, ``excalibur``: ``jaxsoc <family> <verb>``
and the family's ``jaxsoc train`` front end); ``errors.clear_errors`` turns bad input into exit code 2. Nothing
below this package imports it (docs/architecture.md, tests/test_layers.py).

Every command but ``bench`` runs with jax's persistent compilation cache (``jaxsoc.core.compile_cache``: in
``~/.cache/jaxsoc/xla``, off with ``--no-compile-cache`` or ``JAXSOC_COMPILE_CACHE=off``), so a rerun of the same
configuration loads its programs instead of compiling them; ``bench`` times compilation, and its GPU suite keeps its
own cache (``--compile-cache``).
"""

from __future__ import annotations

import argparse
import os
import sys

#: the ``jaxsoc --help`` description
DESCRIPTION = "The ``jaxsoc`` command: ``list``, ``demo``, ``render``, ``bench``, ``demos``, ``train`` and ``eval``."
#: commands run without the default compilation cache (module docstring)
NO_DEFAULT_COMPILE_CACHE = frozenset({"bench"})


def build_parser() -> argparse.ArgumentParser:
    """Returns the ``jaxsoc`` parser with every subcommand; each sets ``func(args) -> exit code``."""
    from jaxsoc.cli import bench, bib, chaic, common, excalibur, household, learn, models

    parser = argparse.ArgumentParser(prog="jaxsoc", description=DESCRIPTION)
    parser.add_argument(
        "--no-compile-cache",
        action="store_true",
        help="no persistent compilation cache (default: in ~/.cache/jaxsoc/xla, or $JAXSOC_COMPILE_CACHE; 'off' there "
        "also turns it off)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    common.add_parsers(sub)
    bench.add_parser(sub)
    common.add_demos_parser(sub)
    learn.add_parsers(sub)
    for family in (bib, household, chaic, excalibur):
        family.add_parser(sub)
    models.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Runs ``jaxsoc`` with ``argv`` (default ``sys.argv[1:]``). Returns the exit code: the command's, or 2 for an
    unknown environment name (any other ``KeyError`` is a bug and keeps its traceback). Turns on the persistent
    compilation cache first, or off for the whole process with ``--no-compile-cache`` (module docstring)."""
    from jaxsoc.core import compile_cache
    from jaxsoc.core.registry import UnknownEnvironment

    args = build_parser().parse_args(argv)
    if args.no_compile_cache:  # through the environment: ``train_rl`` and subprocesses honour it too
        os.environ[compile_cache.ENV] = "off"
    elif args.command not in NO_DEFAULT_COMPILE_CACHE:
        compile_cache.enable_compile_cache()
    try:
        return args.func(args)
    except UnknownEnvironment as error:
        print(f"jaxsoc: {error.args[0]}", file=sys.stderr)
        return 2
