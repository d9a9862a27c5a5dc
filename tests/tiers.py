"""The CI tier of parametrized tests: ``.ci/run`` must finish in 20 minutes on 2 cores, so where every case of a
test compiles its own program (a level generator, an env's reset), a few cases that together reach every code path
run in CI and the rest are marked ``slow`` (``pytest -m slow`` runs them; ``pytest -m "slow or not slow"`` runs the
whole suite)."""

from __future__ import annotations

from collections.abc import Iterable

import pytest


def ci_subset(values: Iterable, keep: Iterable) -> list:
    """Returns ``values`` as pytest parameters, those not in ``keep`` marked ``slow``. Raises ``ValueError`` when
    ``keep`` names a value that is not among ``values`` (a renamed case would otherwise leave CI silently)."""
    values, keep = list(values), set(keep)
    missing = keep - set(values)
    if missing:
        raise ValueError(f"ci_subset: {sorted(map(str, missing))} are not among the cases")
    return [v if v in keep else pytest.param(v, marks=pytest.mark.slow) for v in values]
