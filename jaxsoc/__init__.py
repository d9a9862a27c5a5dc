"""jaxsoc: JAX-vectorised environments and learners for machine social intelligence."""

from jaxsoc import envs as _envs  # noqa: F401  (registers the environments)
from jaxsoc.core.registry import make, register, registered_envs

__version__ = "0.1.0"

__all__ = ["__version__", "make", "register", "registered_envs"]
