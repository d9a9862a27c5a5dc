"""The CI tier of parametrized tests: ``.ci/run`` must finish in 20 minutes on 2 cores, so where every case of a
test compiles its own program (a level generator, an env's reset), a few cases that together reach every code path
run in CI and the rest are marked ``slow`` (``pytest -m slow`` runs them; ``pytest -m "slow or not slow"`` runs the
whole suite)."""

from __future__ import annotations

from collections.abc import Iterable

import pytest


def ci_subset(values: Iterable, keep: Iterable) -> list:
    """Returns ``values`` as pytest parameters, those not in ``keep`` marked ``slow``. Raises ``ValueError`` when
    ``keep`` names a value that is not among ``values`` (a renamed case would otherwise leave CI silently)."""
    values, keep = list(values), set(keep)
    missing = keep - set(values)
    if missing:
        raise ValueError(f"ci_subset: {sorted(map(str, missing))} are not among the cases")
    return [v if v in keep else pytest.param(v, marks=pytest.mark.slow) for v in values]


#: tests left out of the CI tier (marked ``slow`` by tests/conftest.py), each with what still covers its ground in CI
LEFT_OUT_OF_CI = {
    "tests/test_gpu_suite.py::test_every_part_writes_complete_stamped_rows": (
        "every GPU-suite part on toy sizes in a subprocess (minutes); the parts' row checks run in CI"
    ),
    "tests/test_bib_learners.py::test_resumed_run_equals_uninterrupted": "resume: PPO, HRL and Watch runs in CI",
    "tests/test_bib_learners.py::test_bc_overfits_a_handful_of_episodes[rnn]": "the [mlp] case runs in CI",
    "tests/test_bib_learners.py::test_files_written_by_bib_data_load_as_the_generated_set": (
        "file round trips: tests/test_bib_json.py"
    ),
    "tests/test_bib_learners.py::test_observer_run_uses_the_atc_encoder_and_evaluates": (
        "the ATC, BC and fine-tuning steps run in CI one by one"
    ),
    "tests/test_bib_cli.py::test_render_write_read_and_score_files": "bib eval's table and record run in CI",
    "tests/test_chaic_ppo.py::test_eval_command_with_a_ppo_run_and_append": (
        "chaic eval on the command line: tests/test_chaic_cli.py"
    ),
    "tests/test_chaic_options.py::test_masked_options_are_never_sampled": (
        "the same network mask on primitive actions in CI: "
        "tests/test_chaic_ppo.py::test_invalid_actions_get_no_probability_and_are_never_sampled"
    ),
    "tests/test_chaic_options.py::test_options_view_follows_the_rules_and_masks": (
        "the options env compiles for minutes; its decisions (_decide: ending, fallback, continuing) run in CI"
    ),
    "tests/test_chaic_options.py::test_a_short_warm_start_improves_the_option_policys_return": (
        "warm start and PPO on the options env (minutes of compiling); masking and the options' ends run in CI"
    ),
    "tests/test_chaic_ppo.py::test_resume_equals_the_uninterrupted_run": "resume: PPO, HRL and Watch runs in CI",
    "tests/test_chaic_ppo.py::test_the_ray_image_option_runs_on_an_env_with_rays": "a third network configuration",
    "tests/test_ppo.py::test_train_then_eval_on_the_command_line": (
        "a third PPO compilation; train on the command line: tests/test_bc.py, evaluation: tests/test_cli.py"
    ),
    "tests/test_babyai_bot.py::test_bot_solves_generated_levels[BossLevel-shape1]": "the PutNextLocal case",
    "tests/test_babyai_bonus_goto.py::test_red_blue_ball_generation_matches_minigrid": "bonus one-room levels",
    "tests/test_babyai_bonus_goto.py::test_key_corridor_generation_matches_minigrid": (
        "test_key_corridor_matches_minigrid"
    ),
    "tests/test_household_hybrid.py::test_training_run_two_stages_and_resume": "the A2C update and play run in CI",
    "tests/test_household_hybrid.py::test_warm_start_in_a_run": (
        "its own program (the expert's rollouts); the cloning loss's learning signal runs in CI"
    ),
    "tests/test_household_hrl.py::test_resume_ends_where_an_uninterrupted_run_ends": (
        "resume: PPO and Watch runs in CI; the HRL update runs in CI"
    ),
    "tests/test_no_dynamic_loops.py::test_the_ppo_update_has_no_dynamic_loop[BabyAI-BossLevel-v0]": (
        "the GoToRedBallGrey case (the same update program)"
    ),
    "tests/test_bib_learners.py::test_bad_input_is_refused": (
        "needs the trained runs above; bib eval's refusals: tests/test_bad_input.py"
    ),
    "tests/test_bib_learners.py::test_bc_overfits_a_handful_of_episodes[mlp]": (
        "learning signal: the ATC loss, the Video-RNN and fine-tuning tests"
    ),
    "tests/test_chaic_ppo.py::test_shaping_adds_the_change_of_the_helper_potential": "a second helper-view program",
    "tests/test_chaic_env.py::test_helper_view_is_deterministic_and_vmaps": (
        "the contract of CHAIC-Normal-Helper-v0 (tests/test_gridworld_engine.py)"
    ),
    "tests/test_chaic_world.py::test_deterministic_and_jit_vmap_equivalent": (
        "the contract of the CHAIC ids (tests/test_chaic_env.py, tests/test_gridworld_engine.py)"
    ),
    "tests/test_chaic_agents.py::test_act_vmapped_over_four_worlds_equals_each_world_alone": (
        "the agents run vmapped in every play test"
    ),
    "tests/test_household_world.py::test_jit_vmap_and_no_retrace": (
        "the contract of WatchAndHelp-Helper-v0 and test_two_agent_env_contract_and_determinism"
    ),
    "tests/test_household_world.py::test_the_faster_auto_reset_equals_the_base_classes": "the contract's auto-reset",
    "tests/test_household_agents.py::test_vmapped_agent_equals_single_calls": "the agents run vmapped in play",
    "tests/test_household_solver.py::test_teleport_finishes_sooner_than_walking": "the solver's other tests",
    "tests/test_excalibur_env.py::test_cli_bank_eval_render": (
        "the commands' refusals: tests/test_bad_input.py; evaluation and its table: "
        "tests/test_excalibur_agents.py::test_evaluate_and_table; rendering: tests/test_excalibur_houses.py"
    ),
    "tests/test_excalibur_houses.py::test_attributes_compiled_equal_op_by_op": (
        "test_deterministic_jit_and_vmap_agree; the other bit-exact claims"
    ),
    "tests/test_learners_networks.py::test_mission_padding_does_not_change_the_output[attgru]": "the [gru] case",
    "tests/test_learners_networks.py::test_layer_norm_makes_each_world_independent_in_train_mode": (
        "batch norm's train/eval test; layer norm trains in tests/test_distributed.py"
    ),
    "tests/test_babyai_bot.py::test_batched_rollout_equals_unbatched_steps": "the bot's rollouts are vmapped elsewhere",
    "tests/test_babyai_generation.py::test_sample_keeps_the_first_accepted_attempt_of_the_sequential_key_chain[16]": (
        "the [1] and [5] cases"
    ),
}


#: test modules that build the same compiled programs (``functools.cache``d jitted functions keyed on equal
#: arguments) and so run on one xdist worker, as one work unit (tests/conftest.py's scheduler): each program is
#: then compiled once per CI run instead of once per module
SHARED_SCOPES = {
    module: "bib generated batches (16 compact episodes per task)"
    for module in (
        "tests/test_bib_tasks.py",
        "tests/test_bib_observers.py",
        "tests/test_bib_json.py",
        "tests/test_bib_learners.py",
    )
}

#: seconds each dear test module took in one CI-tier run on 2 cores (fixtures included; the others count 0), used
#: only to hand out the work units dearest first (tests/conftest.py); measured 2026-11-29 (a quiet profile on an
#: AVX2 host about twice as slow as CI's, halved; less the tests slow-tiered since); a stale figure costs time,
#: never a result
MODULE_SECONDS = {
    "tests/test_gridworld_engine.py": 171,
    "tests/test_no_dynamic_loops.py": 124,
    "tests/test_docs.py": 114,
    "tests/test_household_hrl.py": 99,
    "tests/test_chaic_bm.py": 90,
    "tests/test_bib_learners.py": 86,
    "tests/test_bib_observers.py": 84,
    "tests/test_ppo.py": 82,
    "tests/test_household_hybrid.py": 80,
    "tests/test_babyai_bot.py": 77,
    "tests/test_household_agents.py": 66,
    "tests/test_babyai_generation.py": 64,
    "tests/test_chaic_throughput.py": 59,
    "tests/test_household_watch.py": 56,
    "tests/test_chaic_ppo.py": 55,
    "tests/test_excalibur_env.py": 53,
    "tests/test_household_demos.py": 48,
    "tests/test_excalibur_agents.py": 45,
    "tests/test_babyai_differential.py": 42,
    "tests/test_bc.py": 41,
    "tests/test_household_watch_relations.py": 37,
    "tests/test_chaic_world.py": 37,
    "tests/test_chaic_agents.py": 36,
    "tests/test_learners_networks.py": 35,
    "tests/test_minigrid_registry.py": 35,
    "tests/test_bib_networks.py": 35,
    "tests/test_bib_json.py": 32,
    "tests/test_bib_tasks.py": 31,
    "tests/test_bib_throughput.py": 29,
    "tests/test_minigrid_wfc.py": 29,
    "tests/test_excalibur_answerer.py": 27,
    "tests/test_household_world.py": 26,
    "tests/test_chaic_env.py": 26,
    "tests/test_demos.py": 23,
    "tests/test_excalibur_network.py": 23,
    "tests/test_gridworld_differential.py": 23,
    "tests/test_babyai_bonus_open.py": 21,
    "tests/test_bib_cli.py": 21,
    "tests/test_excalibur_houses.py": 21,
    "tests/test_household_solver.py": 20,
    "tests/test_bib_voe.py": 20,
    "tests/test_minigrid_obstructed_maze.py": 19,
    "tests/test_gridworld_generation.py": 18,
    "tests/test_household_tasks.py": 18,
    "tests/test_chaic_cli.py": 17,
    "tests/test_minigrid_navigation.py": 17,
    "tests/test_household_throughput.py": 17,
    "tests/test_minigrid_object_tasks.py": 16,
    "tests/test_excalibur_questions.py": 16,
    "tests/test_household_belief.py": 15,
    "tests/test_bib_dataset.py": 14,
    "tests/test_household_cli.py": 14,
    "tests/test_policy_protocol.py": 13,
    "tests/test_bib_render.py": 13,
    "tests/test_chaic_render.py": 13,
    "tests/test_minigrid_dynamic_memory.py": 13,
    "tests/test_minigrid_multiroom.py": 12,
    "tests/test_cli.py": 12,
    "tests/test_autoreset.py": 11,
    "tests/test_babyai_bonus_goto.py": 11,
    "tests/test_wrappers.py": 9,
    "tests/test_household_render.py": 9,
    "tests/test_babyai_bonus_putnext.py": 9,
    "tests/test_ci.py": 9,
    "tests/test_household_invariants.py": 9,
    "tests/test_gpu_suite.py": 9,
}


def work_scope(nodeid: str) -> str:
    """Returns the xdist work unit of the test ``nodeid``: its ``SHARED_SCOPES`` group, else its module (or class),
    as ``--dist loadscope`` would."""
    return SHARED_SCOPES.get(nodeid.split("::", 1)[0], nodeid.rsplit("::", 1)[0])


def unit_order(nodeid: str) -> tuple[int, str]:
    """Returns the sort key of the test ``nodeid``: minus the seconds ``MODULE_SECONDS`` gives its module's work unit
    (a ``SHARED_SCOPES`` group counts all its modules), then the unit's name, so that a unit's modules stay together."""
    module = nodeid.split("::", 1)[0]
    unit = SHARED_SCOPES.get(module, module)
    members = [m for m, group in SHARED_SCOPES.items() if group == unit] or [module]
    return -sum(MODULE_SECONDS.get(m, 0) for m in members), unit
