"""What every family's ``jaxsoc <family> <verb>`` subcommands share."""

from __future__ import annotations

import sys


def clear_errors(command):
    """Returns ``command`` wrapped so that bad input (``ValueError``, ``RuntimeError``, a missing file) prints
    ``jaxsoc <family> <verb>: <message>`` and exits with code 2 instead of a traceback."""

    def run(args) -> int:
        try:
            return command(args)
        except (ValueError, RuntimeError, OSError) as error:
            print(f"jaxsoc {args.command} {args.verb}: {error}", file=sys.stderr)
            return 2

    return run
