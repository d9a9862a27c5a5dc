"""BIB's learner declaration (``core.family.LearnerFamily``): the ATC encoder and the three observers
(``learners.bib.run.KINDS``), trained by ``jaxsoc train bib-*`` through ``jaxsoc.cli.bib``."""

from __future__ import annotations

from jaxsoc.core.family import Learner, LearnerFamily

FAMILY = LearnerFamily(
    name="bib",
    order=20,
    learners=(
        Learner("bib-atc", "jaxsoc.learners.bib.atc:ATCConfig"),
        Learner("bib-bc-mlp", "jaxsoc.learners.bib.bc:BCConfig"),
        Learner("bib-bc-rnn", "jaxsoc.learners.bib.bc:BCConfig"),
        Learner("bib-video-rnn", "jaxsoc.learners.bib.video:VideoConfig"),
    ),
)
