"""BIB's learner declaration (``core.family.LearnerFamily``): the ATC encoder and the three observers
(``learners.bib.run.KINDS``), trained by ``jaxsoc train bib-*`` through ``jaxsoc.cli.bib``, and the pretrained
models it ships (``learners.bib.models``: observers and encoders)."""

from __future__ import annotations

from jaxsoc.core.family import Learner, LearnerFamily, ModelKind

#: a trained BC-MLP, BC-RNN or Video-RNN, every seed (``jaxsoc bib eval model:NAME`` scores it)
OBSERVER = ModelKind(
    "observer",
    snapshot="jaxsoc.learners.bib.models:snapshot_observer",
    load="jaxsoc.learners.bib.models:load_observer",
    evaluate="jaxsoc.learners.bib.models:evaluate_observer",
)
#: an image encoder (``--encoder model:NAME``; ``jaxsoc bib probe model:NAME`` scores it)
ENCODER = ModelKind(
    "encoder",
    snapshot="jaxsoc.learners.bib.models:snapshot_encoder",
    load="jaxsoc.learners.bib.models:load_encoder",
    evaluate="jaxsoc.learners.bib.models:evaluate_encoder",
)

FAMILY = LearnerFamily(
    name="bib",
    order=20,
    learners=(
        Learner("bib-atc", "jaxsoc.learners.bib.atc:ATCConfig"),
        Learner("bib-bc-mlp", "jaxsoc.learners.bib.bc:BCConfig"),
        Learner("bib-bc-rnn", "jaxsoc.learners.bib.bc:BCConfig"),
        Learner("bib-video-rnn", "jaxsoc.learners.bib.video:VideoConfig"),
    ),
    models=(OBSERVER, ENCODER),
)
