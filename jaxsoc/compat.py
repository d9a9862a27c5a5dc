"""Import any live minigrid 3.2.0 env (a ``MiniGrid-*`` or ``BabyAI-*`` id) into jaxsoc.

``from_minigrid(env)`` finds the jaxsoc environment registered under the env's id and returns it with the
imported state and params, so an episode started in minigrid can go on in jaxsoc (and be compared step for
step). minigrid is needed only by the caller; this module reads the env's attributes and never imports it.
"""

from __future__ import annotations

from typing import Any

from jaxsoc.core.registry import make


def minigrid_env_id(env: Any) -> str:
    """Returns the gymnasium id of a minigrid env (``env.spec.id``). Raises ``ValueError`` when the env
    was not made with ``gymnasium.make``."""
    spec = getattr(env, "spec", None) or getattr(getattr(env, "unwrapped", None), "spec", None)
    if spec is None or not getattr(spec, "id", None):
        raise ValueError("the env has no gymnasium spec: make it with gymnasium.make(<id>) to import it")
    return spec.id


def from_minigrid(env: Any) -> tuple[Any, Any, Any]:
    """Returns ``(jaxsoc_env, state, params)`` for a live minigrid env made with ``gymnasium.make``:
    the registered jaxsoc environment of the same id, and the env's current state and params in jaxsoc's
    form (``jaxsoc_env.import_minigrid``). Raises ``KeyError`` for an id jaxsoc does not register."""
    jaxsoc_env, _ = make(minigrid_env_id(env))
    state, params = jaxsoc_env.import_minigrid(env)
    return jaxsoc_env, state, params
