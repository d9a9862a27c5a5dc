"""BabyAI: Baby Language instructions, the verifier and the paper's 19 levels on the grid engine.

``level_env(name)`` builds the environment of a level id (``BabyAI-GoTo-v0``...); ``jaxsoc.make`` does the
same through the registry. Each episode's ``max_steps`` follows its instruction (params ``max_steps=0``);
set ``max_steps`` to a positive value to use one fixed limit instead.
"""

from __future__ import annotations

from jaxsoc.envs.babyai.env import BabyAIEnvironment
from jaxsoc.envs.babyai.levels import ALIASES, FIXED_MAX_STEPS, LEVELS


def level_env(name: str) -> BabyAIEnvironment:
    """Returns the ``BabyAIEnvironment`` of a level id or alias (``KeyError`` if unknown). Its episodes'
    ``max_steps`` follow their instructions, except for the levels of ``FIXED_MAX_STEPS``."""
    level = ALIASES.get(name, name)
    generator, params = LEVELS[level]
    return BabyAIEnvironment(name, generator, params.replace(max_steps=FIXED_MAX_STEPS.get(level, 0)))


__all__ = ["ALIASES", "LEVELS", "BabyAIEnvironment", "level_env"]
