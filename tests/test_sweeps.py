"""Sample-efficiency sweeps (``jaxsoc.learners.sweeps``) against the reference's definitions, on scripted runs: the
grid; the rows ``train_rl.py`` logs (every 10 updates, at least 64 recent episodes) and ``rl_dataeff.py``'s
centred rolling mean and threshold over them; ``il_dataeff.py``'s rolling mean of validations, mean T_min and
budget; the imitation protocol (driven by a scripted trainer, so every decision is checked without training);
the reports and the command line. The ``slow`` part trains real models (vmapped BC seeds equal separate runs;
an RL sweep on the tiny preset)."""

from __future__ import annotations

import json
import math

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_bc import CONFIG, synthetic_demos

from jaxsoc.cli import build_parser, main
from jaxsoc.cli.learn import bc_config
from jaxsoc.learners import sweeps
from jaxsoc.learners.babyai import sweeps as babyai_sweeps
from jaxsoc.learners.bc import epoch_indices, make_batch, make_learner


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
    """With a row per update over that update's episodes alone, rows are the per-update rates."""
    rates = np.array([0.2, 0.5, 0.98, 1.0, 1.0, 0.97, 1.0, 1.0])
    episodes = np.array([100, 110, 100, 130, 140, 100, 160, 170])  # rates x episodes are whole successes
    per_update = dict(log_interval=1, min_episodes=0)
    assert sweeps.log_rows(rates, episodes, **per_update)["success_rate"] == pytest.approx(rates)
    assert sweeps.episodes_to_threshold(rates, episodes, 1, 0.99, **per_update) == episodes[:4].sum()
    # window 3 (centred): update 4 averages 0.98, 1, 1 = 0.993; update 3 averages 0.5, 0.98, 1 < 0.99
    assert sweeps.episodes_to_threshold(rates, episodes, 3, 0.99, **per_update) == episodes[:4].sum()
    # window 4: update 5 averages updates 3-6 (0.98, 1, 1, 0.97) < 0.99, update 6 averages 4-7 = 0.9925
    assert sweeps.episodes_to_threshold(rates, episodes, 4, 0.99, **per_update) == episodes[:6].sum()
    assert sweeps.episodes_to_threshold(rates, episodes, 4, 0.999, **per_update) is None
    assert sweeps.episodes_to_threshold(rates[:3], episodes[:3], 1, 0.99, **per_update) is None
    episodes[1], rates[1] = 0, np.nan  # an update without episodes is a NaN row; windows holding it never cross
    assert sweeps.episodes_to_threshold(rates, episodes, 3, 0.0, **per_update) == episodes[:4].sum()


def test_rows_are_logged_every_10_updates_over_at_least_64_recent_episodes():
    """The reference's ``train_rl.py`` logs after every 10th update the episodes that ended in it, or the 64 most
    recent when fewer did (here whole updates: 13 updates of 5 episodes), the missing ones failures at first."""
    episodes = np.full(40, 5)
    wins = np.arange(1, 41) % 6  # 0 to 5 successes per update
    rows = sweeps.log_rows(wins / 5, episodes)
    assert rows["update"].tolist() == [10, 20, 30, 40]
    assert rows["episodes"].tolist() == [50, 100, 150, 200]
    assert rows["covered"].tolist() == [50, 65, 65, 65]
    assert rows["success_rate"][0] == pytest.approx(wins[:10].sum() / 64)  # 14 zero-return episodes pad the list
    for i, t in enumerate([20, 30, 40], 1):
        assert rows["success_rate"][i] == pytest.approx(wins[t - 13 : t].sum() / 65)
    # an update that ended at least 64 episodes is a row on its own; the updates between rows are not read
    episodes, rates = np.full(30, 70), np.where(np.arange(1, 31) % 10 == 0, 1.0, 0.0)
    rows = sweeps.log_rows(rates, episodes)
    assert (rows["covered"].tolist(), rows["success_rate"].tolist()) == ([70, 70, 70], [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="log_interval"):
        sweeps.log_rows(rates, episodes, log_interval=0)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 40), st.floats(0, 1)), min_size=1, max_size=40),
    st.integers(1, 5),
    st.integers(0, 70),
)
def test_rows_cover_the_fewest_whole_updates_holding_min_episodes(updates, log_interval, min_episodes):
    episodes = np.array([n for n, _ in updates])
    rates = np.array([r if n else math.nan for n, r in updates])
    wins = np.rint(np.nan_to_num(rates) * episodes)
    rows = sweeps.log_rows(rates, episodes, log_interval, min_episodes)
    assert rows["update"].tolist() == list(range(log_interval, len(updates) + 1, log_interval))
    for t, covered, rate, ended in zip(rows["update"], rows["covered"], rows["success_rate"], rows["episodes"]):
        j = t  # updates j..t: from update t back until min_episodes are covered or the run's start
        while episodes[j - 1 : t].sum() < min_episodes and j > 1:
            j -= 1
        assert covered == episodes[j - 1 : t].sum() and ended == episodes[:t].sum()
        if max(covered, min_episodes) == 0:
            assert math.isnan(rate)
        else:
            assert rate == pytest.approx(wins[j - 1 : t].sum() / max(covered, min_episodes))


def test_episodes_to_threshold_smooths_logged_rows_as_rl_dataeff():
    """``rl_dataeff.py``: the centred rolling mean over rows, the first row at or above 0.99, its episodes."""
    episodes = np.full(200, 100)
    rates = np.where(np.arange(1, 201) <= 100, 0.5, 1.0)
    # rows at 10, 20, ..., 200: 0.5 up to update 100, then 1; window 3 rows first all 1.0 centred on update 120
    assert sweeps.episodes_to_threshold(rates, episodes, 3, 0.99) == 120 * 100
    # the same window over updates (the former definition) spans a tenth of the episodes and crosses at 102
    assert sweeps.episodes_to_threshold(rates, episodes, 3, 0.99, log_interval=1) == 102 * 100
    assert sweeps.episodes_to_threshold(rates, episodes, 21, 0.99) is None  # rows 1..21 hold a 0.5
    assert sweeps.episodes_to_threshold(rates, episodes, 3, 1.0) == 120 * 100  # at or above, as the reference
    assert sweeps.rl_window("BabyAI-GoToRedBallGrey-v0") == 10 and sweeps.rl_window("BabyAI-GoToLocal-v0") == 100
    assert babyai_sweeps.rl_window("BabyAI-GoToRedBallGrey-v0") == 10


def test_bracket_is_the_smallest_solved_size_before_the_first_failure():
    rows = lambda *solved: [{"demos": 1000 // 2**i, "solved": s} for i, s in enumerate(solved)]  # noqa: E731
    assert sweeps.bracket(rows(True, True, False), factor=2) == {"k": 500, "bracket": [250.0, 500], "closed": True}
    assert sweeps.bracket(rows(True, True), factor=2) == {"k": 500, "bracket": [250.0, 500], "closed": False}
    assert sweeps.bracket(rows(True, False, True), factor=2)["k"] == 1000
    assert sweeps.bracket(rows(False), factor=2) == {"k": None, "bracket": None, "closed": False}


def test_a_seed_solves_when_10_consecutive_validations_average_above_the_threshold():
    updates = 100 * np.arange(1, 26)
    spike = [0.9] * 12 + [1.0] + [0.9] * 12
    assert sweeps.seed_summary(updates, spike, 1, 0.99)["solved_at"] == 1300  # one validation was the old rule
    summary = sweeps.seed_summary(updates, spike, 10, 0.99)
    assert summary["solved_at"] is None and summary["best_success"] == 1.0
    assert summary["best_smoothed"] == pytest.approx(0.91)
    ten = [0.9] * 10 + [1.0] * 10 + [0.9] * 5
    # centred: validation i averages i - 5 .. i + 4, so only validation 15 (update 1600) sees ten 1.0s
    assert sweeps.seed_summary(updates, ten, 10, 0.99)["solved_at"] == 1600
    almost = [0.9] * 10 + [1.0] * 4 + [0.95] + [1.0] * 5 + [0.9] * 5  # mean 0.995
    assert sweeps.seed_summary(updates, almost, 10, 0.99)["solved_at"] == 1600
    # strictly above; only validations within the budget count (their windows may look past it)
    assert sweeps.seed_summary([100], [0.99], 1, 0.99)["solved_at"] is None
    assert sweeps.seed_summary(updates, ten, 10, 0.99, budget=1599)["solved_at"] is None
    assert sweeps.seed_summary(updates, ten, 10, 0.99, budget=1600)["solved_at"] == 1600
    assert sweeps.seed_summary(updates[:19], ten[:19], 10, 0.99)["solved_at"] is None  # window 11..20 incomplete
    assert sweeps.lookahead(10) == 4 and sweeps.lookahead(11) == 5 and sweeps.lookahead(1) == 0


def test_budget_is_twice_the_mean_t_min_over_seeds():
    assert sweeps.bc_budget([10, 20, 30]) == 40
    assert sweeps.bc_budget([100, 200, 200]) == 334  # 2 x 166.7, rounded up
    assert sweeps.bc_budget([7]) == 14 and sweeps.bc_budget([10, 20, 30], patience=3) == 60
    with pytest.raises(ValueError, match="positive"):
        sweeps.bc_budget([])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 10_000), min_size=1, max_size=5), st.integers(1, 25_000), st.integers(1, 3))
def test_budget_admits_the_validations_the_reference_keeps(t_per_seed, updates, patience):
    """``min_num_samples``: ``normal_time = mean(patience * T + 1)``, validations with ``updates < normal_time``."""
    normal_time = np.mean([patience * t + 1 for t in t_per_seed])
    assert (updates < normal_time) == (updates <= sweeps.bc_budget(t_per_seed, patience))


class ScriptedTrainer:
    """``train_bc_seeds`` stand-in: validations every 10 updates up to the budget plus the window's look-ahead,
    with the success rates ``script(seed, demos, update)``. Records its calls."""

    def __init__(self, script) -> None:
        self.script, self.calls = script, []

    def __call__(self, config, demos, num_seeds, max_updates, *, window, stop_when, max_len, width, progress):
        n = demos.num_episodes
        self.calls.append((n, max_updates, window, stop_when, max_len, width))
        updates = list(range(10, max_updates + 10 * sweeps.lookahead(window) + 1, 10))
        return {"updates": updates, "success": [[self.script(s, n, u) for u in updates] for s in range(num_seeds)]}


def redball_script(seed, demos, update):
    """Full size: seed s is at 1.0 from update 50 + 100 s, so its window of 10 (centred) is first all 1.0 at
    update 100 (s + 1): T = 100, 200, 300, T_min 200, budget 400. Smaller sizes: seed 0 from update 50 while it
    has 100 demonstrations or more, seed 1 only from update 450 (its windows are past the budget), seed 2 once
    at update 200 among 0.9s; below 100 demonstrations seed 0 too has a single 1.0."""
    if demos == 400:
        return 1.0 if update >= 50 + 100 * seed else 0.5
    if seed == 0 and demos >= 100:
        return 1.0 if update >= 50 else 0.5
    if seed == 1:
        return 1.0 if update >= 450 else 0.9
    return 1.0 if update == 200 else 0.9


def test_imitation_protocol_trains_twice_the_mean_t_min_on_shrinking_sets(tmp_path):
    demos = synthetic_demos(400, seed=3)
    trainer = ScriptedTrainer(redball_script)
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
    assert [call[0] for call in trainer.calls] == [400, 283, 200, 141, 100, 71]  # stops at the first unsolved
    assert [call[1:4] for call in trainer.calls] == [(500, 10, "all")] + [(400, 10, "any")] * 5
    assert len({call[4:] for call in trainer.calls}) == 1  # one padded shape for every size
    assert (result["t_per_seed"], result["t_min"], result["budget"]) == ([100, 200, 300], 200, 400)
    assert (result["k"], result["closed"]) == (100, True)
    assert result["bracket"] == pytest.approx([100 / math.sqrt(2), 100])
    assert [row["seeds_solved"] for row in result["rows"]] == [3, 1, 1, 1, 1, 0]
    assert result["rows"][1]["solved_at"] == [100, None, None]  # seed 1's 1.0s come after the budget
    last = result["rows"][-1]
    assert last["best_success"] == [1.0, 0.9, 1.0] and last["best_smoothed"] == pytest.approx([0.91, 0.9, 0.91])
    assert last["trained"] == 440 and last["validations"] == 44  # 4 validations past the budget
    paths = sweeps.write_report([result], tmp_path)
    assert json.loads(paths["json"].read_text())[0]["k"] == 100
    table = paths["md"].read_text()
    assert "| GoToRedBallGrey | 10 | 100, 200, 300 | 200 | 400 | 6 | 0.1 | 0.0707–0.1 | yes | 5.7–8.0 |" in table
    assert "| GoToRedBallGrey | 71 | 400 | 0/3 | —, —, — | 0.910, 0.900, 0.910 | 1.000, 0.900, 1.000 |" in table
    assert paths["png"].stat().st_size > 1000


def test_imitation_protocol_needs_every_full_size_seed_to_solve():
    """One full-size seed with a single 1.0 has no T: the reference's mean T_min is not defined, the sweep stops."""
    script = lambda seed, demos, update: 1.0 if seed == 0 or update == 100 else 0.9  # noqa: E731
    trainer = ScriptedTrainer(script)
    result = sweeps.bc_sample_efficiency(
        CONFIG, synthetic_demos(40, seed=3), num_seeds=2, max_updates=200, train_seeds=trainer, progress=False
    )
    assert len(trainer.calls) == 1
    assert (result["t_per_seed"], result["t_min"], result["budget"]) == ([60, None], None, None)
    assert (result["k"], result["rows"][0]["seeds_solved"]) == (40, 1)
    assert "| 60, not reached | not reached by every seed | — |" in sweeps.report_table([result])


def test_imitation_protocol_reports_an_unreached_threshold():
    trainer = ScriptedTrainer(lambda seed, demos, update: 0.5)
    result = sweeps.bc_sample_efficiency(CONFIG, synthetic_demos(50, seed=4), train_seeds=trainer, progress=False)
    assert len(trainer.calls) == 1 and trainer.calls[0][1] == CONFIG.max_epochs * 2  # 16 demos per epoch, batch 8
    assert (result["t_min"], result["k"], result["bracket"]) == (None, None, None)
    assert "not reached" in sweeps.report_table([result])
    with pytest.raises(ValueError, match="window"):
        sweeps.bc_sample_efficiency(CONFIG, synthetic_demos(50, seed=4), window=0, train_seeds=trainer)


def test_rl_report_lists_runs_the_paper_and_babyai_1_1():
    result = {
        "env_id": "BabyAI-GoToLocal-v0",
        "kind": "rl",
        "arch": "original",
        "num_seeds": 2,
        "window": 2,
        "log_interval": 1,
        "min_episodes": 0,
        "threshold": 0.99,
        "episodes_needed": [1_200_000, None],
        "min": 1_200_000,
        "max": 1_200_000,
        "mean": 1_200_000.0,
        "frames": 5_000,
        "curves": [{"success_rate": [0.5, None, 1.0], "episodes": [3, 0, 4]}] * 2,
    }
    table = sweeps.report_table([result])
    row = "| GoToLocal | original | 2 | 5,000 | 2 x 1 | 1,200.0, — | 1,200.0–1,200.0 | 1,200.0 | "
    row += "1167.0–1320.0 | 1311 | 611 |"
    assert row in table
    assert "— |" in sweeps.report_table([{**result, "env_id": "BabyAI-BossLevel-v0"}]).splitlines()[2]


def test_the_family_reference_comes_from_the_env_ids_family(monkeypatch):
    for env_id in ("BabyAI-GoToLocal-v0", "MiniGrid-Empty-5x5-v0"):  # one family, one reference
        assert sweeps.reference_for(env_id) is babyai_sweeps.REFERENCE
    generic = sweeps.SweepReference()
    assert sweeps.reference_for("CHAIC-Normal-Helper-v0") == generic  # a family without learners/<family>/sweeps.py
    assert sweeps.reference_for("Someone-Else-v0") == generic
    assert (generic.level("Someone-Else-v0"), generic.rl_window("Someone-Else-v0"), generic.rl_arch) == (
        "Someone-Else",
        sweeps.RL_WINDOW,
        None,
    )
    assert sweeps.rl_window("CHAIC-Normal-Helper-v0") == 100
    seen = []

    def stop(config, **kwargs):
        seen.append(config)
        raise ValueError("stopped before training")

    monkeypatch.setattr(sweeps, "trainer_for", stop)
    from jaxsoc.learners.ppo import PPOConfig

    for env_id, kwargs in (("BabyAI-GoToLocal-v0", {}), ("BabyAI-GoToLocal-v0", {"arch": None})):
        with pytest.raises(ValueError, match="stopped"):
            sweeps.rl_sample_efficiency(PPOConfig(env_id=env_id, arch="bow_endpool_res"), progress=False, **kwargs)
    assert [c.arch for c in seen] == ["original", "bow_endpool_res"]  # the reference's arch, or the config's


def test_a_report_without_published_figures_has_only_the_measured_columns():
    bc = {"env_id": "CHAIC-Normal-Helper-v0", "kind": "bc", "window": 1, "t_per_seed": [5], "t_min": 5.0}
    bc |= {"budget": 10, "rows": [], "k": None, "bracket": None, "closed": False}
    table = sweeps.report_table([bc]).splitlines()
    assert table[0].endswith("| closed |") and table[1].count("|") == table[0].count("|")
    assert table[2] == "| CHAIC-Normal-Helper | 1 | 5 | 5 | 10 | 0 | — | — | no |"
    rl = {"env_id": "CHAIC-Normal-Helper-v0", "kind": "rl", "arch": None, "num_seeds": 1, "window": 1}
    rl |= {"log_interval": 1, "min_episodes": 0, "episodes_needed": [None], "min": None, "max": None, "mean": None}
    table = sweeps.report_table([rl | {"frames": 10}])
    assert "| CHAIC-Normal-Helper | None | 1 | 10 | 1 x 1 | — | —–— | — |\n" in table
    assert "Thousands of episodes. Rows are logged" in table and "paper" not in table
    published = sweeps.report_table([rl | {"frames": 10}], reference=babyai_sweeps.REFERENCE)
    assert "| CHAIC-Normal-Helper | None | 1 | 10 | 1 x 1 | — | —–— | — | — | — | — |" in published


def test_sweep_command_checks_its_arguments(tmp_path, capsys):
    assert main(["sweep", "bc", "--env", "BabyAI-GoToLocal-v0", "--demos", "a", "--demos", "b", "--out", "x"]) == 2
    assert "2 --demos for 1 --env" in capsys.readouterr().err
    assert main(["sweep", "rl", "--env", "BabyAI-GoToLocal-v0", "--set", "lr=fast", "--out", str(tmp_path)]) == 2
    assert "bad value for lr" in capsys.readouterr().err
    assert main(["sweep", "rl", "--env", "BabyAI-Nope-v0", "--out", str(tmp_path)]) == 2
    assert main(["sweep", "rl", "--env", "BabyAI-GoToLocal-v0", "--log-interval", "0", "--out", str(tmp_path)]) == 2
    assert "log_interval >= 1" in capsys.readouterr().err
    args = build_parser().parse_args(["sweep", "rl", "--env", "BabyAI-GoToLocal-v0", "--out", "x"])
    assert (args.arch, args.window, args.log_interval, args.min_episodes) == ("original", None, 10, 64)


# == slow: real training ======================================================================================
@pytest.mark.slow
def test_vmapped_bc_seeds_equal_separate_runs():
    """Seed ``s`` of the sweep is ``config.seed + s`` trained alone on its own epochs: parameters within 3 lr
    after 3 updates (Adam turns float noise in near-zero gradients into steps of up to lr), far below the
    distance between the seeds."""
    demos = synthetic_demos(24, seed=5)
    result = sweeps.train_bc_seeds(CONFIG, demos, 2, 3, stop_when="never", progress=False)
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
    argv += ["--log-interval", "1", "--min-episodes", "16"]
    argv += ["--set", "update_epochs=1", "--set", "minibatch_frames=320", "--out", str(tmp_path)]
    assert main(argv) == 0
    (result,) = json.loads((tmp_path / "sweep.json").read_text())
    assert result["updates"] >= 1 and len(result["curves"]) == 2
    assert (result["arch"], result["config"]["arch"], result["log_interval"], result["min_episodes"]) == (
        "original",
        "original",
        1,
        16,
    )
    for needed, curve in zip(result["episodes_needed"], result["curves"]):
        expected = sweeps.episodes_to_threshold(
            np.array([np.nan if x is None else x for x in curve["success_rate"]]),
            np.array(curve["episodes"]),
            1,
            0.05,
            log_interval=1,
            min_episodes=16,
        )
        assert needed == expected


def test_bc_config_of_the_command_line_takes_the_tiny_model_and_overrides():
    config = bc_config("BabyAI-GoToLocal-v0", "tiny", ["seed=3", "lr=1e-3"], seed=0, success_threshold=0.5)
    assert (config.preset, config.batch_size, config.recurrence, config.seed, config.lr) == ("tiny", 256, 20, 3, 1e-3)
    assert config.success_threshold == 0.5
    assert bc_config("BabyAI-GoToLocal-v0", "large", []).batch_size == 128
    with pytest.raises(ValueError, match="no field 'learning_rate'"):
        bc_config("BabyAI-GoToLocal-v0", "small", ["learning_rate=1"])
