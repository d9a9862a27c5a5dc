"""Timing and device helpers shared by every benchmark: compiling programs (in parallel, cached), timing compiled
programs, keeping their outputs live, and recording the device. The families' ``throughput.py``, the benchmark
harness (``jaxsoc.bench``), the ``jaxsoc bench`` command and the GPU suite all import them from here."""

from __future__ import annotations

import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


def timed_compile(lowered) -> tuple[Any, float]:
    """Returns ``(compiled, seconds)``: a lowered program compiled, and how long that took."""
    start = time.perf_counter()
    compiled = lowered.compile()
    return compiled, time.perf_counter() - start


def compile_cached(workloads: Iterable[Any], cache: dict, workers: int = 1) -> list[tuple[Any, float]]:
    """Returns ``(compiled, compile_s)`` per workload (hashable, with ``build() -> run(key)``), in order. Each is
    traced in this thread and compiled in one of ``workers`` threads (at once: their ``compile_s`` then share
    the machine); a workload already in ``cache`` is not compiled again (its first ``compile_s`` is returned).
    Interrupted (SIGTERM in the GPU suite), it leaves without waiting for the compilations in flight."""
    workloads = list(workloads)
    todo = [w for w in dict.fromkeys(workloads) if w not in cache]
    key = jax.random.key(0)
    pool = ThreadPoolExecutor(max(1, workers))
    try:
        futures = [pool.submit(timed_compile, jax.jit(w.build()).lower(key)) for w in todo]
        for w, future in zip(todo, futures):
            cache[w] = future.result()
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return [cache[w] for w in workloads]


def positive_int(name: str, value) -> int:
    """Returns ``value`` as an int; raises ``ValueError`` unless it is a positive integer (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return int(value)


def tree_checksum(tree: Any) -> jax.Array:
    """Returns ``uint32``: the wrapping sum of every leaf of ``tree`` (floats scaled by 256 and rounded first), so a
    benchmark's outputs stay live without copying them back."""
    total = jnp.zeros((), jnp.uint32)
    for leaf in jax.tree.leaves(tree):
        x = jnp.round(leaf * 256) if jnp.issubdtype(leaf.dtype, jnp.floating) else leaf
        total = total + jnp.sum(x.astype(jnp.int32).astype(jnp.uint32), dtype=jnp.uint32)
    return total


def device_info() -> dict[str, str]:
    """Returns ``{"device", "platform", "jax"}``: the first device's kind, the backend, jax's version."""
    device = jax.devices()[0]
    return {"device": str(device.device_kind), "platform": device.platform, "jax": jax.__version__}


def time_compiled(compiled, key, repeats: int, keep_output: bool = True) -> tuple[Any, float]:
    """Returns ``(output, best_run_s)`` of a compiled ``run``: ``output`` of a warm-up call on ``key`` (it
    absorbs allocations; None unless ``keep_output``, so it does not occupy memory while timing), then the
    best wall time of ``repeats`` calls on ``fold_in(key, r + 1)``."""
    output = jax.block_until_ready(compiled(key))
    if not keep_output:
        output = None
    best = float("inf")
    for r in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(compiled(jax.random.fold_in(key, r + 1)))
        best = min(best, time.perf_counter() - start)
    return output, best
