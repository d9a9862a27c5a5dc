"""BIB's declaration (``core.family.EnvFamily``): no registered ids (episodes come from ``tasks.generate``); its
tasks are the 4 background tasks and the 9 evaluation pair types (``tasks.BACKGROUND``, ``tasks.EVALUATION``)."""

from __future__ import annotations

from jaxsoc.core.family import EnvFamily
from jaxsoc.envs.bib.tasks import BACKGROUND, EVALUATION

FAMILY = EnvFamily(name="bib", title="BIB", order=20, prefixes=(), tasks=(*BACKGROUND, *EVALUATION))
