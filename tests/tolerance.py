"""Comparing results that two different programs computed (jit and eager, vmapped and single, two jitted
functions, another shape): integers, booleans and PRNG keys must agree exactly, float32 values only to rounding.

XLA rounds float32 arithmetic per program (fusion, the order of sums, kernels chosen by CPU). Measured on the
CPU with XLA's default optimisations: ``1 - 0.9 * x`` jitted differs from the same ops run one by one in the last
bit of about a third of the values, ``a + u * (b - a)`` in about a sixth, and ``x / 7`` jitted differs from
numpy's float32 division in about half; a 128-wide matmul sums in another order on another CPU. Where one
compiled program computes both sides (the same call twice, a resumed run with the same compiled step) the tests
compare exactly instead.
"""

from __future__ import annotations

import jax
import numpy as np

#: float32 results a few operations deep (an env step, a waypoint, a house's sizes): a few ulps
SHALLOW = {"rtol": 1e-5, "atol": 1e-6}


def _leaf(x) -> np.ndarray:
    """Returns ``x`` as a numpy array (a typed PRNG key as its raw ``uint32`` data)."""
    if isinstance(x, jax.Array) and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
        x = jax.random.key_data(x)
    return np.asarray(x)


def assert_trees_match(actual, expected, rtol: float = SHALLOW["rtol"], atol: float = SHALLOW["atol"]) -> None:
    """Asserts that pytrees ``actual`` and ``expected`` have the same structure, equal non-float leaves and float
    leaves within ``rtol`` and ``atol`` (as ``np.testing.assert_allclose``); a failure names the leaf's path."""
    got, got_def = jax.tree_util.tree_flatten_with_path(actual)
    want, want_def = jax.tree_util.tree_flatten(expected)
    assert got_def == want_def, f"tree structures differ: {got_def} != {want_def}"
    for (path, a), b in zip(got, want):
        a, b, where = _leaf(a), _leaf(b), jax.tree_util.keystr(path)
        if np.issubdtype(a.dtype, np.inexact) or np.issubdtype(b.dtype, np.inexact):
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=where)
        else:
            np.testing.assert_array_equal(a, b, err_msg=where)
