"""What every family's ``jaxsoc <family> <verb>`` subcommands share: bad input becomes a message and exit code 2."""

from __future__ import annotations

import math
import sys

#: names of the runtime errors that jax and XLA raise for the device (out of memory, a failed compilation...):
#: these are not bad input, so ``clear_errors`` lets them through with their traceback
DEVICE_ERRORS = ("JaxRuntimeError", "XlaRuntimeError")


def is_device_error(error: BaseException) -> bool:
    """Returns whether ``error`` is one of jax's / XLA's runtime errors (``DEVICE_ERRORS``, by class name along
    its MRO, so it holds for every jax version whichever module defines the class)."""
    return any(cls.__name__ in DEVICE_ERRORS for cls in type(error).__mro__)


def clear_errors(command):
    """Returns ``command`` wrapped so that bad input (``ValueError``, ``RuntimeError``, a missing file) prints
    ``jaxsoc <family> <verb>: <message>`` and exits with code 2 instead of a traceback. jax's and XLA's runtime
    errors (``is_device_error``: out of memory, ...) are re-raised: they are not the input's fault."""

    def run(args) -> int:
        try:
            return command(args)
        except (ValueError, RuntimeError, OSError) as error:
            if is_device_error(error):
                raise
            print(f"jaxsoc {args.command} {args.verb}: {error}", file=sys.stderr)
            return 2

    return run


def flag(name: str) -> str:
    """Returns the command-line flag of the ``args`` attribute ``name`` (``max_events`` -> ``--max-events``)."""
    return "--" + name.replace("_", "-")


def require_positive(args, *names: str) -> None:
    """Checks that every ``args.<name>`` that is given (not None) is a finite number > 0.

    Raises:
        ValueError: naming the flag and the value, for the first that is not.
    """
    for name in names:
        value = getattr(args, name)
        if value is not None and not (math.isfinite(value) and value > 0):
            kind = "integer" if isinstance(value, int) else "number"
            raise ValueError(f"{flag(name)} must be a positive {kind}, got {value}")
