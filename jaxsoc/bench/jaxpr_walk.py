"""The jaxpr walker of the program-size benchmark (``jaxsoc.bench.program``): ``jaxpr_stats`` counts a program's
equations, loops and conds with every sub-jaxpr included (``sub_jaxprs``), and ``static_trip_count`` tells a ``while``
loop with a static trip count from a data-dependent one (``program``'s module docstring defines each figure)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from jax.extend.core import ClosedJaxpr, Jaxpr, Literal


def sub_jaxprs(value: Any) -> Iterator[Jaxpr]:
    """Yields the jaxprs inside one equation parameter: a ``Jaxpr``, a ``ClosedJaxpr`` (its jaxpr), or a tuple or list
    of them (``cond`` branches), at any depth; nothing for any other value."""
    if isinstance(value, ClosedJaxpr):
        yield value.jaxpr
    elif isinstance(value, Jaxpr):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from sub_jaxprs(item)


def _index(var: Any, variables: Sequence[Any]) -> int | None:
    return next((k for k, v in enumerate(variables) if v is var), None)


def _literal_int(var: Any) -> int | None:
    """Returns the integer value of a scalar ``Literal`` (None for anything else)."""
    if not isinstance(var, Literal):
        return None
    value = np.asarray(var.val)
    if value.shape != () or not (np.issubdtype(value.dtype, np.integer) or np.issubdtype(value.dtype, np.floating)):
        return None
    return int(value)


def static_trip_count(eqn: Any) -> int | None:
    """Returns the trip count of a ``while`` equation that is a ``fori_loop`` with constant bounds, else None (its
    trip count depends on data). The pattern: the condition is one ``counter < bound``; the counter starts at a
    literal and the body adds the literal 1 to it; the bound is a literal, or a carried value that starts at a literal
    and that the body passes through unchanged. A ``fori_loop`` with Python-int bounds lowers to ``scan`` instead."""
    cond, body = eqn.params["cond_jaxpr"].jaxpr, eqn.params["body_jaxpr"].jaxpr
    cond_consts, body_consts = eqn.params["cond_nconsts"], eqn.params["body_nconsts"]
    init = eqn.invars[cond_consts + body_consts :]
    carry_in, body_in = cond.invars[cond_consts:], body.invars[body_consts:]
    if len(cond.eqns) != 1 or cond.eqns[0].primitive.name != "lt" or cond.eqns[0].outvars[0] is not cond.outvars[0]:
        return None
    counter, bound = cond.eqns[0].invars
    k = _index(counter, carry_in)
    if k is None or (start := _literal_int(init[k])) is None:
        return None
    stop = _literal_int(bound)
    if stop is None:
        j = _index(bound, carry_in)
        if j is None or (stop := _literal_int(init[j])) is None or body.outvars[j] is not body_in[j]:
            return None
    step = [e for e in body.eqns if any(out is body.outvars[k] for out in e.outvars)]
    if len(step) != 1 or step[0].primitive.name != "add":
        return None
    a, b = step[0].invars
    if not ((a is body_in[k] and _literal_int(b) == 1) or (b is body_in[k] and _literal_int(a) == 1)):
        return None
    return max(0, stop - start)


_COUNTS = ("eqns", "whiles", "dynamic_whiles", "scans", "conds", "loop_trips", "serial_iterations")


def _walk(jaxpr: Jaxpr, memo: dict[int, dict[str, int]], seen: dict[int, int]) -> dict[str, int]:
    """Returns the ``_COUNTS`` of ``jaxpr``, its sub-jaxprs included (memoized by identity in ``memo``; ``seen`` maps
    each distinct jaxpr visited to its own equation count)."""
    if id(jaxpr) in memo:
        return memo[id(jaxpr)]
    seen[id(jaxpr)] = len(jaxpr.eqns)
    total = dict.fromkeys(_COUNTS, 0)
    for eqn in jaxpr.eqns:
        total["eqns"] += 1
        subs = [_walk(sub, memo, seen) for value in eqn.params.values() for sub in sub_jaxprs(value)]
        for sub in subs:
            for name in _COUNTS[:-1]:
                total[name] += sub[name]
        inner = [sub["serial_iterations"] for sub in subs]
        name = eqn.primitive.name
        if name == "scan":
            trips = int(eqn.params["length"])
            total["scans"] += 1
            total["loop_trips"] += trips
            total["serial_iterations"] += trips * (1 + sum(inner))
        elif name == "while":
            trips = static_trip_count(eqn)
            total["whiles"] += 1
            if trips is None:
                total["dynamic_whiles"] += 1  # unknown trips: the body's loops still count once
                total["serial_iterations"] += sum(inner)
            else:
                total["loop_trips"] += trips
                total["serial_iterations"] += trips * (1 + sum(inner))
        elif name == "cond":
            total["conds"] += 1
            total["serial_iterations"] += max(inner, default=0)
        else:
            total["serial_iterations"] += sum(inner)
    memo[id(jaxpr)] = total
    return total


def jaxpr_stats(closed_jaxpr: ClosedJaxpr | Jaxpr) -> dict[str, int]:
    """Returns the size of a program (a ``ClosedJaxpr`` or ``Jaxpr``, e.g. ``jax.make_jaxpr(f)(*args)``), every
    sub-jaxpr at any depth included, as a dict of ints:

    - ``eqns``: equations, each counted once per appearance in the program text (a sub-jaxpr reached from ``k``
      equations counts ``k`` times), not multiplied by trip counts; ``unique_eqns``: each distinct jaxpr once;
    - ``whiles`` and ``dynamic_whiles`` (trip count not static, ``static_trip_count``), ``scans``, ``conds``;
    - ``loop_trips``: the sum of the static trip counts of the ``scan`` and ``while`` loops (each appearance once);
    - ``serial_iterations``: loop iterations run in sequence, nested trip counts multiplied, a ``cond``'s longest
      branch (a data-dependent loop adds nothing of its own: see ``dynamic_whiles``)."""
    jaxpr = closed_jaxpr.jaxpr if isinstance(closed_jaxpr, ClosedJaxpr) else closed_jaxpr
    seen: dict[int, int] = {}
    out = dict(_walk(jaxpr, {}, seen))
    out["unique_eqns"] = sum(seen.values())
    return out
