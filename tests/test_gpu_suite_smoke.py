"""The GPU-suite programs no other toy run covers: the Hybrid helper's training and the HRL low level's warm start
(``household_learners``).

The toy parameters of the ``household_learners`` part leave both out (``hybrid_envs=[]``: compiling Alice's planner
inside the A2C update takes about a minute on a 2-core CPU; ``hrl_imitation_envs=[]``: the warm start's own program),
so neither CI's toy run (``tests/test_gpu_suite.py``) nor the slow run of the learner parts ever measured them. This
``slow`` test runs the part through ``core.run_part`` with each alone at toy size (two worlds, one update) and checks
its row and its line of the table; with ``tests/test_gpu_suite.py``'s slow test, every program of every part has
run at toy size.
"""

from __future__ import annotations

import pytest

from jaxsoc import gpu_suite
from jaxsoc.gpu_suite import core
from jaxsoc.gpu_suite import household_learners as HL

#: the programs the toy parameters leave out: (learner, its sizes' parameter, projected frames, its table line)
LEFT_OUT = [
    ("hybrid", "hybrid_envs", HL.PAPER_HYBRID_FRAMES, "| Hybrid (Alice in the loop) | 2 |"),
    (
        "hrl_imitation",
        "hrl_imitation_envs",
        HL.BELIEF_WARM_START_FRAMES,
        "| HRL low level's warm start (belief teacher, tiny-marks) | 2 |",
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize("learner, sizes, frames, line", LEFT_OUT, ids=[c[0] for c in LEFT_OUT])
def test_the_programs_the_toy_household_learners_part_leaves_out(tmp_path, learner, sizes, frames, line):
    part = next(p for p in gpu_suite.PARTS if p.name == "household_learners")
    assert part.toy[sizes] == []  # the reason for this test: the toy run leaves it out
    empty = {"watch_batches": [], "hrl_envs": [], "hybrid_envs": [], "hrl_imitation_envs": []}
    state = core.run_part(part, tmp_path, params={**part.toy, **empty, sizes: [2]}, budget_s=1800, toy=True)
    assert state["complete"] and "error" not in state, state.get("error")
    (row,) = state["rows"]
    assert row["learner"] == learner and row["size"] == 2 and row["updates"] == 1 and row["toy"]
    assert row["env_steps_per_s"] == pytest.approx(1 * 2 * 20 / row["run_s"])  # one update of 2 worlds x 20 frames
    assert row["projected_hours"] == pytest.approx(frames / row["env_steps_per_s"] / 3600)
    assert row["compile_s"] > 0 and row["device"] == "cpu"
    assert line in part.render(state["rows"])
