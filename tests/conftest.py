"""Test-session settings: XLA's cheaper CPU compilation and a compilation cache shared by the workers.

The CPU suite is dominated by XLA compile time (level generators, the bot, trainers), not by running the
compiled code: ``jax_disable_most_optimizations`` roughly thirds the compile time of a BabyAI level and the
persistent compilation cache lets the second xdist worker (and the subprocess tests, which inherit the
environment) load what the first one already compiled. Both are set through the environment so that
subprocesses get them too; an environment that sets them already wins. ``.ci/run`` empties the cache first,
so CI always measures a cold run.
"""

import os
from pathlib import Path

import jax

CACHE = Path(__file__).resolve().parent.parent / ".jax-test-cache"

os.environ.setdefault("JAX_DISABLE_MOST_OPTIMIZATIONS", "1")
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(CACHE))
jax.config.update("jax_disable_most_optimizations", os.environ["JAX_DISABLE_MOST_OPTIMIZATIONS"] == "1")
jax.config.update("jax_compilation_cache_dir", os.environ["JAX_COMPILATION_CACHE_DIR"])
