"""Adapters that present a jaxsoc environment to other libraries' APIs: ``gymnax`` (JAX clients such as rejax
and PureJaxRL-style loops) and ``gymnasium`` (a single-world ``gymnasium.Env`` per id and the vector env).

Each adapter is its own module and imports its client library only when that module is imported, so
``import jaxsoc`` never needs gymnax or gymnasium.
"""
