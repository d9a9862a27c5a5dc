"""EXCALIBUR's learner declaration (``core.family.LearnerFamily``): the explorer network (``networks.excalibur``) on
its ids."""

from __future__ import annotations

from jaxsoc.core.family import LearnerFamily

FAMILY = LearnerFamily(name="excalibur", order=50, network="excalibur")
