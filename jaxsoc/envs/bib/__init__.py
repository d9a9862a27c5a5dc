"""BIB, the Baby Intuitions Benchmark (Gandhi et al. 2021), as a procedural on-device generator.

- ``world``: the 10x10 grid, palettes, the ``Episode`` arrays (9 trials; frames from cell paths).
- ``tasks``: the 4 background tasks and 9 evaluation pair types, ``generate``/``generate_batch``.
- ``render``: frames at 84x84 or 200x200 and GIF/MP4 export; ``bibjson`` and ``dataset``: BIB's JSON layout,
  datasets on disk, and fresh episodes in memory.
- ``observers`` and ``inverse_planner``: two reference observers for violation-of-expectation scoring
  (``jaxsoc.learners.bib.voe``); ``OBSERVERS`` names them for ``jaxsoc bib eval``.
"""

from jaxsoc.envs.bib.inverse_planner import inverse_planning_surprise
from jaxsoc.envs.bib.observers import nearest_object_surprise
from jaxsoc.envs.bib.tasks import BACKGROUND, EVALUATION, generate, generate_batch
from jaxsoc.envs.bib.world import BIBParams, Episode

OBSERVERS = {"inverse_planner": inverse_planning_surprise, "nearest_object": nearest_object_surprise}

__all__ = [
    "BACKGROUND",
    "EVALUATION",
    "OBSERVERS",
    "BIBParams",
    "Episode",
    "generate",
    "generate_batch",
    "inverse_planning_surprise",
    "nearest_object_surprise",
]
