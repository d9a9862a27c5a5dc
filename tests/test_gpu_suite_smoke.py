"""The GPU-suite programs no other toy run covers: the Hybrid helper's training and the HRL low level's warm start
(``household_learners``).

The toy parameters of the ``household_learners`` part leave the Hybrid out (``hybrid_envs=[]``: compiling Alice's
planner inside the A2C update takes about a minute on a 2-core CPU), so neither CI's toy run
(``tests/test_gpu_suite.py``) nor the slow run of the learner parts ever measured it. This ``slow`` test runs the
part through ``core.run_part`` with the Hybrid alone at toy size (two worlds, one update) and checks its row and
its line of the table; with ``tests/test_gpu_suite.py``'s slow test, every program of every part has run at toy
size. The HRL warm start's program (``hrl_imitation_envs``, also left out of the toy parameters) gets the same
check in a second test.
"""

from __future__ import annotations

import pytest

from jaxsoc import gpu_suite
from jaxsoc.gpu_suite import core
from jaxsoc.gpu_suite import household_learners as HL


@pytest.mark.slow
def test_the_hybrid_program_of_the_household_learners_part(tmp_path):
    part = next(p for p in gpu_suite.PARTS if p.name == "household_learners")
    assert part.toy["hybrid_envs"] == []  # the reason for this test: the toy run leaves it out
    params = {**part.toy, "watch_batches": [], "hrl_envs": [], "hybrid_envs": [2]}
    state = core.run_part(part, tmp_path, params=params, budget_s=1800, toy=True)
    assert state["complete"] and "error" not in state, state.get("error")
    (row,) = state["rows"]
    assert row["learner"] == "hybrid" and row["size"] == 2 and row["updates"] == 1 and row["toy"]
    assert row["env_steps_per_s"] == pytest.approx(1 * 2 * 20 / row["run_s"])  # one update of 2 worlds x 20 frames
    assert row["projected_hours"] == pytest.approx(HL.PAPER_HYBRID_FRAMES / row["env_steps_per_s"] / 3600)
    assert row["compile_s"] > 0 and row["device"] == "cpu"
    assert "| Hybrid (Alice in the loop) | 2 |" in part.render(state["rows"])


@pytest.mark.slow
def test_the_hrl_warm_start_program_of_the_household_learners_part(tmp_path):
    part = next(p for p in gpu_suite.PARTS if p.name == "household_learners")
    assert part.toy["hrl_imitation_envs"] == []
    params = {**part.toy, "watch_batches": [], "hrl_envs": [], "hrl_imitation_envs": [2]}
    state = core.run_part(part, tmp_path, params=params, budget_s=1800, toy=True)
    assert state["complete"] and "error" not in state, state.get("error")
    (row,) = state["rows"]
    assert row["learner"] == "hrl_imitation" and row["size"] == 2 and row["updates"] == 1 and row["toy"]
    assert row["env_steps_per_s"] == pytest.approx(1 * 2 * 20 / row["run_s"])  # one update of 2 worlds x 20 frames
    assert row["projected_hours"] == pytest.approx(HL.BELIEF_WARM_START_FRAMES / row["env_steps_per_s"] / 3600)
    assert "| HRL low level's warm start (belief teacher, tiny-marks) | 2 |" in part.render(state["rows"])
