"""Sample-efficiency sweeps (``jaxsoc.learners.sweeps``): the grid, the smoothing and threshold of the reference's
``rl_dataeff.py``, the imitation protocol (driven by a scripted trainer, so every decision is checked without
training), the reports and the command line; the ``slow`` part trains real models (vmapped BC seeds equal
separate runs; an RL sweep on the tiny preset)."""

from __future__ import annotations

import json
import math

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_bc import CONFIG, synthetic_demos

from jaxsoc.cli import main
from jaxsoc.learners import sweeps
from jaxsoc.learners.bc import epoch_indices, make_batch, make_learner
from jaxsoc.learners.commands import bc_config


def test_size_grid_follows_the_papers_sqrt2_steps():
    grid = sweeps.size_grid(1_000_000)
    assert grid[:9] == [1_000_000, 707_107, 500_000, 353_553, 250_000, 176_777, 125_000, 88_388, 62_500]
    assert grid[-1] == 1
    assert all(a > b for a, b in zip(grid, grid[1:]))
    assert sweeps.size_grid(400, 100) == [400, 283, 200, 141, 100]
    assert sweeps.size_grid(8, 1, factor=2) == [8, 4, 2, 1]
    for bad in ((10, 20), (10, 0)):
        with pytest.raises(ValueError, match="smallest"):
            sweeps.size_grid(*bad)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.one_of(st.floats(0, 1), st.just(math.nan)), min_size=1, max_size=30),
    st.integers(1, 12),
)
def test_smoothing_is_pandas_centred_rolling_mean(rates, window):
    """Pandas' centred fixed window for label ``i`` ends (exclusive) at ``i + 1 + (window - 1) // 2``."""
    out = sweeps.smoothed_success(np.array(rates), window)
    for i in range(len(rates)):
        end = i + 1 + (window - 1) // 2
        start = end - window
        if start < 0 or end > len(rates) or any(math.isnan(x) for x in rates[start:end]):
            assert math.isnan(out[i])
        else:
            assert out[i] == pytest.approx(np.mean(rates[start:end]))


def test_episodes_to_threshold_counts_up_to_the_first_smoothed_crossing():
    rates = np.array([0.2, 0.5, 0.98, 1.0, 1.0, 0.97, 1.0, 1.0])
    episodes = np.array([10, 11, 12, 13, 14, 15, 16, 17])
    assert sweeps.episodes_to_threshold(rates, episodes, 1, 0.99) == 10 + 11 + 12 + 13
    # window 3 (centred): update 3 averages 0.98, 1, 1 = 0.993; update 2 averages 0.5, 0.98, 1 < 0.99
    assert sweeps.episodes_to_threshold(rates, episodes, 3, 0.99) == 10 + 11 + 12 + 13
    # window 4: update 5 averages updates 3-6 (1, 1, 0.97, 1) = 0.9925; no 4 updates in a row average 0.999
    assert sweeps.episodes_to_threshold(rates, episodes, 4, 0.99) == 10 + 11 + 12 + 13 + 14 + 15
    assert sweeps.episodes_to_threshold(rates, episodes, 4, 0.999) is None
    assert sweeps.episodes_to_threshold(rates[:3], episodes[:3], 1, 0.99) is None


def test_bracket_is_the_smallest_solved_size_before_the_first_failure():
    rows = lambda *solved: [{"demos": 1000 // 2**i, "solved": s} for i, s in enumerate(solved)]  # noqa: E731
    assert sweeps.bracket(rows(True, True, False), factor=2) == {"k": 500, "bracket": [250.0, 500], "closed": True}
    assert sweeps.bracket(rows(True, True), factor=2) == {"k": 500, "bracket": [250.0, 500], "closed": False}
    assert sweeps.bracket(rows(True, False, True), factor=2)["k"] == 1000
    assert sweeps.bracket(rows(False), factor=2) == {"k": None, "bracket": None, "closed": False}


class ScriptedTrainer:
    """``train_bc_seeds`` stand-in: seed 0 reaches the threshold after ``solve_updates`` updates when it has at
    least ``enough`` demonstrations and the budget allows it; other seeds never do. Records its calls."""

    def __init__(self, enough: int, solve_updates: int) -> None:
        self.enough, self.solve_updates, self.calls = enough, solve_updates, []

    def __call__(self, config, demos, num_seeds, max_updates, *, max_len, width, progress):
        self.calls.append((demos.num_episodes, max_updates, max_len, width))
        solved = demos.num_episodes >= self.enough and max_updates >= self.solve_updates
        updates = [self.solve_updates] if solved else [max_updates]
        return {
            "updates": updates,
            "success": [[1.0 if solved else 0.5]] + [[0.4]] * (num_seeds - 1),
            "solved_at": [self.solve_updates if solved else None] + [None] * (num_seeds - 1),
        }


def test_imitation_protocol_trains_twice_t_min_on_shrinking_sets(tmp_path):
    demos = synthetic_demos(400, seed=3)
    trainer = ScriptedTrainer(enough=100, solve_updates=40)
    partial = []
    result = sweeps.bc_sample_efficiency(
        CONFIG,
        demos,
        num_seeds=3,
        max_updates=500,
        train_seeds=trainer,
        on_row=lambda r: partial.append((len(r["rows"]), r["k"])),
        progress=False,
    )
    assert partial == [(1, 400), (2, 283), (3, 200), (4, 141), (5, 100), (6, 100)]
    sizes = [call[0] for call in trainer.calls]
    assert sizes == [400, 283, 200, 141, 100, 71]  # stops at the first unsolved size
    assert [call[1] for call in trainer.calls] == [500] + [80] * 5  # the full budget, then 2 T_min
    assert len({call[2:] for call in trainer.calls}) == 1  # one padded shape for every size
    assert result["t_min"] == 40
    assert (result["k"], result["closed"]) == (100, True)
    assert result["bracket"] == pytest.approx([100 / math.sqrt(2), 100])
    assert [row["seeds_solved"] for row in result["rows"]] == [1, 1, 1, 1, 1, 0]
    paths = sweeps.write_report([result], tmp_path)
    assert json.loads(paths["json"].read_text())[0]["k"] == 100
    table = paths["md"].read_text()
    assert "| GoToRedBallGrey | 40 | 6 | 0.1 | 0.0707–0.1 | yes | 5.7–8.0 |" in table
    assert paths["png"].stat().st_size > 1000


def test_imitation_protocol_reports_an_unreached_threshold():
    trainer = ScriptedTrainer(enough=10**6, solve_updates=1)
    result = sweeps.bc_sample_efficiency(CONFIG, synthetic_demos(50, seed=4), train_seeds=trainer, progress=False)
    assert len(trainer.calls) == 1 and trainer.calls[0][1] == CONFIG.max_epochs * 2  # 16 demos per epoch, batch 8
    assert (result["t_min"], result["k"], result["bracket"]) == (None, None, None)
    assert "not reached" in sweeps.report_table([result])


def test_rl_report_lists_runs_and_the_paper():
    result = {
        "env_id": "BabyAI-GoToLocal-v0",
        "kind": "rl",
        "num_seeds": 2,
        "window": 2,
        "threshold": 0.99,
        "episodes_needed": [1_200_000, None],
        "min": 1_200_000,
        "max": 1_200_000,
        "frames": 5_000,
        "curves": [{"success_rate": [0.5, None, 1.0], "episodes": [3, 0, 4]}] * 2,
    }
    table = sweeps.report_table([result])
    assert "| GoToLocal | 2 | 5,000 | 1,200.0, — | 1,200.0–1,200.0 | 1167.0–1320.0 |" in table


def test_sweep_command_checks_its_arguments(tmp_path, capsys):
    assert main(["sweep", "bc", "--env", "BabyAI-GoToLocal-v0", "--demos", "a", "--demos", "b", "--out", "x"]) == 2
    assert "2 --demos for 1 --env" in capsys.readouterr().err
    assert main(["sweep", "rl", "--env", "BabyAI-GoToLocal-v0", "--set", "lr=fast", "--out", str(tmp_path)]) == 2
    assert "bad value for lr" in capsys.readouterr().err
    assert main(["sweep", "rl", "--env", "BabyAI-Nope-v0", "--out", str(tmp_path)]) == 2


# == slow: real training ======================================================================================
@pytest.mark.slow
def test_vmapped_bc_seeds_equal_separate_runs():
    """Seed ``s`` of the sweep is ``config.seed + s`` trained alone on its own epochs: parameters within 3 lr
    after 3 updates (Adam turns float noise in near-zero gradients into steps of up to lr), far below the
    distance between the seeds."""
    demos = synthetic_demos(24, seed=5)
    result = sweeps.train_bc_seeds(CONFIG, demos, 2, 3, stop_when_solved=False, progress=False)
    assert result["updates"] == [2, 3]  # after each epoch of 2 updates and after the last update
    assert all(len(r) == 2 and all(0 <= x <= 1 for x in r) for r in result["success"])
    learner = make_learner(CONFIG, 2)
    width = result["width"]
    apart = jax.tree.map(lambda x: float(np.max(np.abs(x[0] - x[1]))), result["variables"]["params"])
    assert max(jax.tree.leaves(apart)) > 0.1
    for s in range(2):
        state = learner.init_jit(jax.random.key(s))
        for u in range(3):
            ids = epoch_indices(24, CONFIG.epoch_length, u // 2, s)[(u % 2) * 8 : (u % 2 + 1) * 8]
            state, _ = learner.update_jit(state, make_batch(demos.episodes, ids, CONFIG.max_len, width))
        alone = jax.device_get(learner.variables(state))
        together = jax.tree.map(lambda x, s=s: x[s], result["variables"])
        jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=0, atol=3 * CONFIG.lr), alone, together)


@pytest.mark.slow
def test_rl_sweep_runs_vmapped_seeds_and_finds_the_crossing(tmp_path):
    argv = ["sweep", "rl", "--env", "BabyAI-GoToRedBallGrey-v0", "--preset", "tiny", "--seeds", "2"]
    argv += ["--num-envs", "16", "--frames", "1280", "--window", "1", "--threshold", "0.05", "--quiet"]
    argv += ["--set", "update_epochs=1", "--set", "minibatch_frames=320", "--out", str(tmp_path)]
    assert main(argv) == 0
    (result,) = json.loads((tmp_path / "sweep.json").read_text())
    assert result["updates"] >= 1 and len(result["curves"]) == 2
    for needed, curve in zip(result["episodes_needed"], result["curves"]):
        expected = sweeps.episodes_to_threshold(
            np.array([np.nan if x is None else x for x in curve["success_rate"]]), np.array(curve["episodes"]), 1, 0.05
        )
        assert needed == expected


def test_bc_config_of_the_command_line_takes_the_tiny_model_and_overrides():
    config = bc_config("BabyAI-GoToLocal-v0", "tiny", ["seed=3", "lr=1e-3"], seed=0, success_threshold=0.5)
    assert (config.preset, config.batch_size, config.recurrence, config.seed, config.lr) == ("tiny", 256, 20, 3, 1e-3)
    assert config.success_threshold == 0.5
    assert bc_config("BabyAI-GoToLocal-v0", "large", []).batch_size == 128
    with pytest.raises(ValueError, match="no field 'learning_rate'"):
        bc_config("BabyAI-GoToLocal-v0", "small", ["learning_rate=1"])
