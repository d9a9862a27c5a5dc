"""BIB's learned observers (Gandhi et al. 2021, §4 and appendix C): the ATC image encoder, BC-MLP, BC-RNN and
the Video-RNN, trained on background episodes (``data``) by ``run`` and scored by ``jaxsoc.learners.bib.voe``.

- ``data``: episodes on the device, their frames (rendered on demand) and BIB's action labels.
- ``learner``: the shared training state, optimiser, SWA and update step.
- ``atc``, ``bc``, ``video``: the four learners; ``run``: training runs (seeds vmapped, checkpoints, resume) and
  their evaluation; ``probe``: linear probes of the observers' states (the agent's cell, its action). Their
  commands (``jaxsoc train bib-*``, ``jaxsoc bib eval RUN``, ``jaxsoc bib probe RUN``) live in ``jaxsoc.cli.bib``.
"""
