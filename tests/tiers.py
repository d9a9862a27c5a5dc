"""The CI tier of parametrized tests: ``.ci/run`` must finish in 20 minutes on 2 cores, so where every case of a
test compiles its own program (a level generator, an env's reset), a few cases that together reach every code path
run in CI and the rest are marked ``slow`` (``pytest -m slow`` runs them; ``pytest -m "slow or not slow"`` runs the
whole suite). ``.ci/run`` also runs one slice of the slow tier, a different one at each commit
(``slow_slice``; the option ``--slow-slice K/M`` of tests/conftest.py)."""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Iterable
from typing import Any

import pytest


def ci_subset(values: Iterable, keep: Iterable) -> list:
    """Returns ``values`` as pytest parameters, those not in ``keep`` marked ``slow``. Raises ``ValueError`` when
    ``keep`` names a value that is not among ``values`` (a renamed case would otherwise leave CI silently)."""
    values, keep = list(values), set(keep)
    missing = keep - set(values)
    if missing:
        raise ValueError(f"ci_subset: {sorted(map(str, missing))} are not among the cases")
    return [v if v in keep else pytest.param(v, marks=pytest.mark.slow) for v in values]


def first_of_each(values: Iterable, group: Callable[[Any], Any]) -> list:
    """Returns ``values`` as pytest parameters, each value after the first of its ``group(value)`` marked ``slow``
    (ids that share a generator module: CI runs one of each)."""
    seen, out = set(), []
    for value in values:
        key = group(value)
        out.append(pytest.param(value, marks=pytest.mark.slow) if key in seen else value)
        seen.add(key)
    return out


def _recorded_evaluation(name: str) -> str:
    return f"tests/test_models.py::test_every_stored_models_recorded_evaluation_reproduces_within_its_se[{name}]"


#: slow tests of a minute or more each (2026-12-08: measured, or a training run or a whole model evaluation): the
#: i-th falls in slice ``i`` modulo the number of slices, so no slice holds two of them (by CRC-32, four fell in one
#: slice and took CI past 20 minutes: bib-bc-rnn-pixels' evaluation 199 s, excalibur-answerer's 87 s, the inverse
#: planner's fixture 65 s, the RL sweep 32 s)
SPREAD_SLOW = (
    *map(
        _recorded_evaluation,
        (
            "bib-bc-rnn-pixels",
            "chaic-options-helper",
            "excalibur-answerer",
            "babyai-bc",
            "babyai-gotolocal-ppo",
            "bib-atc-encoder",
            "bib-bc-mlp-pixels",
            "bib-bc-mlp-symbolic",
            "bib-video-rnn",
            "excalibur-memory-explorer",
            "excalibur-qa-explorer",
            "wah-hrl-low",
        ),
    ),
    "tests/test_bib_observers.py::test_inverse_planner_passes_every_evaluation",
    "tests/test_gpu_suite.py::test_every_part_writes_complete_stamped_rows",
    "tests/test_ppo.py::test_ppo_learns_on_the_default_path",
    "tests/test_ppo.py::test_quick_start_recipe_learns_well_above_random",
    "tests/test_household_demos.py::test_cli_writes_demos",
    "tests/test_chaic_options.py::test_a_short_warm_start_improves_the_option_policys_return",
    "tests/test_chaic_options.py::test_options_view_follows_the_rules_and_masks",
    "tests/test_chaic_options.py::test_dagger_on_the_rules_options_raises_what_the_policys_own_options_deliver",
    "tests/test_household_hybrid.py::test_training_run_two_stages_and_resume",
    "tests/test_household_hybrid.py::test_warm_start_in_a_run",
    "tests/test_household_hrl.py::test_resume_ends_where_an_uninterrupted_run_ends",
    "tests/test_bib_learners.py::test_resumed_run_equals_uninterrupted",
    "tests/test_bib_learners.py::test_observer_run_uses_the_atc_encoder_and_evaluates",
    "tests/test_chaic_ppo.py::test_resume_equals_the_uninterrupted_run",
    "tests/test_sweeps.py::test_rl_sweep_runs_vmapped_seeds_and_finds_the_crossing",
)

#: slow tests longer than any CI slice can hold (each alone would take ``.ci/run`` past 20 minutes on 2 cores):
#: ``--slow-slice`` never selects them; ``pytest -m slow`` runs them, and each says what else checks its claim
OUTSIDE_ROTATION = {
    _recorded_evaluation("wah-hybrid"): (
        "Figure 5's Hybrid on 100 test-1 tasks with Alice's 100-simulation planner: 10-25 minutes; "
        "`jaxsoc models eval wah-hybrid` runs it, and the CI tier loads the model and chooses options "
        "(tests/test_models_household.py)"
    ),
    _recorded_evaluation("wah-watch"): (
        "records 200 test demonstrations with Alice's 100-simulation planner first: many minutes; "
        "`jaxsoc models eval wah-watch`; the CI tier infers goals with it (tests/test_models_household.py)"
    ),
    _recorded_evaluation("chaic-bm"): (
        "records the RHP helper's 96 test runs first (about 7 s each on a loaded core); `jaxsoc models eval chaic-bm`; "
        "the CI tier steps it as the partner model (tests/test_models_chaic.py)"
    ),
}
_SPREAD_INDEX = {nodeid: i for i, nodeid in enumerate(SPREAD_SLOW)}


def slow_slice(nodeid: str, slices: int) -> int:
    """Returns the slice, ``0`` to ``slices - 1``, of the test ``nodeid``: its place in ``SPREAD_SLOW`` modulo
    ``slices`` for a test listed there, else the CRC-32 of its node id (as pytest writes it from the repository root)
    modulo ``slices``, the same in every process, run and machine (unlike Python's salted ``hash``)."""
    if slices < 1:
        raise ValueError(f"slices must be at least 1, not {slices}")
    if nodeid in _SPREAD_INDEX:
        return _SPREAD_INDEX[nodeid] % slices
    return zlib.crc32(nodeid.encode("utf-8")) % slices


def parse_slow_slice(text: str) -> tuple[int, int]:
    """Returns ``(K, M)`` of the option value ``"K/M"`` (``0 <= K < M``); raises ``ValueError`` otherwise."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not match or not int(match[1]) < int(match[2]):
        raise ValueError(f"--slow-slice takes K/M with 0 <= K < M (slice K of M), not {text!r}")
    return int(match[1]), int(match[2])


#: tests left out of the CI tier (marked ``slow`` by tests/conftest.py), each with what still covers its ground in CI
LEFT_OUT_OF_CI = {
    "tests/test_household_demos.py::test_cli_writes_demos": (
        "recording a minute of MCTS again; recording, files and the command's refusals run in CI"
    ),
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
    "tests/test_chaic_options.py::test_dagger_on_the_rules_options_raises_what_the_policys_own_options_deliver": (
        "71-75 s of CI (the DAgger program over the options view); the options view's warm start learning: "
        "test_a_short_warm_start_improves_the_option_policys_return (slow too), and the trained options helper's "
        "recorded evaluation; in CI the options' decisions, masks and the partner model"
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
    # the CI tier cut to fit 20 minutes on a 2-core host without AVX-512 (2026-11-29 profile): a test that compiles
    # a program of its own for over ~5 s runs in CI only where no other CI test covers its ground
    "tests/test_ppo.py::test_ppo_learns_on_the_default_path": (
        "learning on BabyAI, 15k frames (over a minute of running); in CI the PPO update changes the parameters "
        "deterministically, and BC, the Watch model and the BIB observer learn"
    ),
    "tests/test_ppo.py::test_an_incompatible_checkpoint_is_refused_with_the_differences": (
        "needs a trained half run (a second PPO program); checkpoint refusals: tests/test_excalibur_answerer.py, "
        "tests/test_household_watch.py"
    ),
    "tests/test_ppo.py::test_a_corrupt_checkpoint_is_refused": (
        "needs a trained half run; corrupt checkpoints: tests/test_excalibur_answerer.py"
    ),
    "tests/test_household_hrl.py::test_imitation_loss_falls_on_a_tiny_config[planner-tiny]": (
        "a training run (over a minute); the A2C step lowers the loss on a fixed batch in CI"
    ),
    "tests/test_household_hrl.py::test_hrl_helper_plays_as_bob": (
        "a play program of its own; the helpers in play: tests/test_household_agents.py::test_play_alice_alone"
    ),
    "tests/test_household_hrl.py::test_joint_log_probs_are_normalised_and_invisible_nodes_impossible": (
        "masked actions are never sampled (CI)"
    ),
    "tests/test_household_hrl.py::test_the_regression_planner_finishes_every_subgoal": (
        "the planner's subgoals: tests/test_household_agents.py"
    ),
    "tests/test_household_hrl.py::test_shaping_pays_for_carrying_towards_the_goal_never_for_holding": (
        "its own reward program; the HRL update runs in CI"
    ),
    "tests/test_household_hrl.py::test_subgoal_rewards_and_termination_per_phase": (
        "its own reward program; the HRL update runs in CI"
    ),
    "tests/test_chaic_bm.py::test_load_round_trip_and_the_helper_plays": (
        "needs a trained run; checkpoint round trips: tests/test_excalibur_answerer.py"
    ),
    "tests/test_chaic_bm.py::test_resume_equals_an_uninterrupted_run": (
        "resume: the Watch and demos runs (bit-exact job)"
    ),
    "tests/test_chaic_bm.py::test_the_model_overfits_a_few_episodes": (
        "needs recorded episodes (a minute); learning signals: the Watch model, BC, the BIB observer"
    ),
    "tests/test_chaic_bm.py::test_record_layout_and_determinism": (
        "records episodes with the rule agents (a minute); the rule agents play in tests/test_chaic_agents.py"
    ),
    "tests/test_chaic_bm.py::test_a_sequence_equals_stepping_the_model": "needs the recorded episodes above",
    "tests/test_chaic_bm.py::test_features_read_only_the_observation": (
        "its own feature program; the command front end runs in CI"
    ),
    "tests/test_bib_learners.py::test_video_rnn_beats_copying_the_frame": (
        "a training run; the symbolic BC learner's held-out test runs in CI"
    ),
    "tests/test_bib_learners.py::test_frames_and_labels_are_bibs_subsampled_video": (
        "renders the batches' videos (its own program)"
    ),
    "tests/test_bib_learners.py::test_linear_probe_finds_the_agent_in_symbolic_states_not_in_noise": (
        "the symbolic states' contents run in CI"
    ),
    "tests/test_bib_learners.py::test_fine_tuning_moves_the_encoder": (
        "a training run on frames; the symbolic BC learner runs in CI"
    ),
    "tests/test_bib_learners.py::test_atc_loss_decreases": (
        "a training run on frames; the symbolic BC learner runs in CI"
    ),
    "tests/test_bib_observers.py::test_inverse_planner_passes_every_evaluation": (
        "the planner over every evaluation pair (over two minutes); its surprise on a blocking barrier and on new "
        "agents runs in CI"
    ),
    "tests/test_bib_observers.py::test_nearest_object_heuristic_fails_where_the_papers_models_fail": (
        "needs the accuracies above"
    ),
    "tests/test_household_hybrid.py::test_training_run_writes_its_files": (
        "a training run; the cloning loss's signal and the masks run in CI"
    ),
    "tests/test_household_hybrid.py::test_an_option_runs_until_its_predicate_is_placed": (
        "the options' program (a minute); the choice mask runs in CI"
    ),
    "tests/test_household_hybrid.py::test_helper_in_play_and_high_level": (
        "a play program of its own; the helpers in play: tests/test_household_agents.py::test_play_alice_alone"
    ),
    "tests/test_household_hybrid.py::test_random_options_discounts_and_the_episode_limit": (
        "the option discount in the trainer runs in CI"
    ),
    "tests/test_household_hybrid.py::test_helper_keeps_its_option": "the options' program; the choice mask runs in CI",
    "tests/test_babyai_bot.py::test_advising_mode_suggestions_match_the_reference": (
        "the bot's actions match the reference on imported levels in CI"
    ),
    "tests/test_babyai_bot.py::test_generated_rollouts_are_deterministic": (
        "the bot's reference match in CI; determinism of the envs in every contract"
    ),
    "tests/test_household_agents.py::test_helper_never_takes_alices_subgoal": (
        "a play program of its own; play runs in CI"
    ),
    "tests/test_household_agents.py::test_eval_command_alice_alone_and_refusals": (
        "household eval's refusals: tests/test_bad_input.py"
    ),
    "tests/test_household_agents.py::test_play_gives_the_helper_the_inferred_goal": (
        "a play program of its own; play runs in CI"
    ),
    "tests/test_household_agents.py::test_a_learned_helper_plugs_into_play": (
        "a play program of its own; play runs in CI"
    ),
    "tests/test_babyai_generation.py::test_level_statistics_match_minigrid_and_levels_are_solvable[BossLevel]": (
        "the GoToRedBallGrey and PutNextLocal cases; BossLevel's episodes are played step for step against minigrid "
        "in CI"
    ),
    "tests/test_babyai_generation.py::test_level_statistics_match_minigrid_and_levels_are_solvable[PickupLoc]": (
        "the GoToRedBallGrey and PutNextLocal cases; PickupLoc is played step for step in CI"
    ),
    "tests/test_babyai_generation.py::test_level_statistics_match_minigrid_and_levels_are_solvable[GoToObj]": (
        "the GoToRedBallGrey and PutNextLocal cases"
    ),
    "tests/test_babyai_generation.py::test_level_statistics_match_minigrid_and_levels_are_solvable[GoToLocal]": (
        "the GoToRedBallGrey and PutNextLocal cases; GoToLocal is played step for step in CI"
    ),
    "tests/test_babyai_generation.py::test_sample_keeps_the_first_accepted_attempt_of_the_sequential_key_chain[5]": (
        "the [1] case"
    ),
    "tests/test_household_watch.py::test_command_line_trains_and_scores": (
        "the model overfits four demonstrations in CI; household's refusals: tests/test_bad_input.py"
    ),
    "tests/test_household_watch.py::test_logits_shape_for_every_input": "the overfit test's input in CI",
    "tests/test_chaic_ppo.py::test_eval_helpers_are_parsed_with_clear_errors": (
        "needs a trained half run; --helper ppo=... refusals: tests/test_bad_input.py"
    ),
    "tests/test_chaic_ppo.py::test_the_loaded_helper_takes_valid_actions_in_play": (
        "needs a trained half run; masked actions are never sampled in CI"
    ),
    "tests/test_chaic_ppo.py::test_the_all_task_view_draws_from_every_task": (
        "the per-task helper view: tests/test_chaic_env.py"
    ),
    "tests/test_excalibur_env.py::test_network_reads_real_observations": (
        "the network's shapes and masks: tests/test_excalibur_network.py"
    ),
    "tests/test_excalibur_env.py::test_knowledge_reward_is_the_change_of_knowledge_accuracy": (
        "test_knowledge_reward_hand_computed and the cached reward through all phases"
    ),
    "tests/test_excalibur_env.py::test_bank_holds_questions_with_their_true_answers": (
        "the oracle answers every question right in CI (tests/test_excalibur_agents.py)"
    ),
    "tests/test_excalibur_agents.py::test_policy_adapter": "the oracle and the answerer agent run in CI",
    "tests/test_excalibur_agents.py::test_hand_house_questions_need_exploring": "the oracle on the hand house in CI",
    "tests/test_excalibur_agents.py::test_random_explorer_answers_fewer_right": "the oracle's answers in CI",
    "tests/test_excalibur_answerer.py::test_the_answerer_agent_answers_from_its_memory": (
        "the trained answerer beats the question-only prior in CI"
    ),
    "tests/test_excalibur_houses.py::test_render": (
        "tests/test_excalibur_houses.py's shapes; renderers: tests/test_chaic_render.py, tests/test_bib_render.py"
    ),
    "tests/test_excalibur_network.py::test_jit_matches_eager": "the agents' jit equals eager (bit-exact job)",
    "tests/test_household_demos.py::test_paired_tasks_keep_the_goal_in_another_training_apartment": (
        "the three task sets in CI (tests/test_household_tasks.py)"
    ),
    "tests/test_household_demos.py::test_spread_and_extra_tasks": "the three task sets in CI",
    "tests/test_household_demos.py::test_record_shapes_and_padding": (
        "records with Alice's planner (a minute); the Watch model overfits demonstrations in CI"
    ),
    "tests/test_household_demos.py::test_replay_reproduces_the_recording": "needs the recording above",
    "tests/test_household_demos.py::test_observations_withhold_the_goal": "needs the recording above",
    "tests/test_bc.py::test_cli_trains_bc_end_to_end": "the BC update and the imitation command's routing run in CI",
    "tests/test_bc.py::test_acmodel_update_with_batchnorm": "batch norm: tests/test_learners_networks.py",
    "tests/test_household_watch_relations.py::test_runs_from_before_the_relational_options_load_without_them": (
        "the model's loading: tests/test_household_watch.py"
    ),
    "tests/test_household_watch_relations.py::test_the_batch_shows_the_observation_after_the_last_action": (
        "event frames keep the last observation (CI)"
    ),
    "tests/test_bib_json.py::test_generated_episodes_round_trip": "the exact round trip of hand-made episodes in CI",
    "tests/test_bib_throughput.py::test_measure_returns_sane_rows": (
        "the frame checksum in CI; the GPU suite's toy run -m slow"
    ),
    "tests/test_bib_throughput.py::test_suite_part_stops_without_time_and_resumes": "the CHAIC part's resume in CI",
    "tests/test_bib_cli.py::test_eval_writes_the_table_the_plot_and_the_record": (
        "bib eval's refusals: tests/test_bad_input.py; the evaluation: tests/test_bib_voe.py"
    ),
    "tests/test_chaic_env.py::test_helper_view_runs_events_until_the_helper_is_ready": (
        "the two-agent API in CI; the helper view in the CHAIC throughput count"
    ),
    "tests/test_chaic_cli.py::test_tasks_and_a_tiny_evaluation": "chaic's refusals: tests/test_bad_input.py",
    "tests/test_household_cli.py::test_render_an_episode_gif": "rendering: tests/test_household_render.py",
    "tests/test_minigrid_wfc.py::test_placement_distribution_matches_minigrid": (
        "the real bank and play match minigrid in CI"
    ),
    "tests/test_learners_networks.py::test_batch_norm_train_mode_updates_running_statistics_and_eval_mode_uses_them": (
        "the networks' outputs and gradients in CI"
    ),
    "tests/test_learners_networks.py::test_the_attended_instruction_depends_on_the_memory_and_the_gru_one_does_not": (
        "the networks' outputs and gradients in CI"
    ),
    "tests/test_household_solver.py::test_scripted_alice_in_helper_env_with_an_idle_bob": (
        "the solver completes every activity in CI"
    ),
    "tests/test_policy_protocol.py::test_ppo_trains_a_non_babyai_network_on_a_classic_env": (
        "a PPO program of its own; the protocol's checks run in CI"
    ),
    "tests/test_cli.py::test_render_babyai_level_with_mission_caption": "the demo command writes a gif in CI",
    "tests/test_bib_networks.py::test_bilstm_one_layer_directions": "the packed BiLSTM semantics in CI",
    "tests/test_demos.py::test_manifest_and_shard_format": "the demonstrations replay to success in CI",
    "tests/test_demos.py::test_resume_after_lost_shards_is_byte_identical": (
        "resume after a shorter run (bit-exact job)"
    ),
    "tests/test_bib_voe.py::test_evaluate_with_a_toy_surprise_and_unknown_types": (
        "the observer's evaluation on efficiency pairs in CI"
    ),
    "tests/test_chaic_render.py::test_vmap_matches_single_renders": "jit equals eager in CI",
    "tests/test_babyai_bonus_open.py::test_generation_matches_minigrid[BabyAI-PickupDistDebug-v0]": (
        "the OpenDoorLoc case and the debug levels step for step"
    ),
    "tests/test_no_dynamic_loops.py::test_bib_learners_fused_epochs_and_surprises_have_no_dynamic_loop": (
        "tests/test_bib_voe.py::test_observer_jit_and_batch_match_per_episode"
    ),
    "tests/test_no_dynamic_loops.py::test_bib_generators_renderer_and_observers_have_no_dynamic_loop": (
        "the BabyAI and minigrid traces; BIB's generators are vmapped in tests/test_bib_tasks.py"
    ),
    "tests/test_no_dynamic_loops.py::test_excalibur_has_no_data_dependent_loops": (
        "the BabyAI and minigrid traces; EXCALIBUR is vmapped in its tests"
    ),
    "tests/test_no_dynamic_loops.py::test_the_ppo_update_has_no_dynamic_loop[BabyAI-GoToRedBallGrey-v0]": (
        "the PPO update runs in CI (tests/test_ppo.py)"
    ),
    "tests/test_gridworld_generation.py::test_feature_distributions_match_minigrid[MiniGrid-BlockedUnlockPickup-v0]": (
        "the DoorKey-5x5, FourRooms and UnlockPickup cases"
    ),
    "tests/test_gridworld_generation.py::test_feature_distributions_match_minigrid[MiniGrid-Unlock-v0]": (
        "the DoorKey-5x5, FourRooms and UnlockPickup cases"
    ),
    "tests/test_gridworld_generation.py::test_feature_distributions_match_minigrid[MiniGrid-DoorKey-8x8-v0]": (
        "the DoorKey-5x5, FourRooms and UnlockPickup cases"
    ),
    "tests/test_docs.py::test_python_blocks_run[docs/babyai.md]": (
        "family pages' examples (minutes of compiling each); README's and the architecture page's run in CI, the "
        "pages' APIs are tested by their families' modules"
    ),
    "tests/test_docs.py::test_python_blocks_run[docs/excalibur.md]": (
        "family pages' examples (minutes of compiling each); README's and the architecture page's run in CI, the "
        "pages' APIs are tested by their families' modules"
    ),
    "tests/test_docs.py::test_python_blocks_run[docs/chaic.md]": (
        "family pages' examples (minutes of compiling each); README's and the architecture page's run in CI, the "
        "pages' APIs are tested by their families' modules"
    ),
    "tests/test_docs.py::test_python_blocks_run[docs/household.md]": (
        "family pages' examples (minutes of compiling each); README's and the architecture page's run in CI, the "
        "pages' APIs are tested by their families' modules"
    ),
    "tests/test_docs.py::test_python_blocks_run[docs/bib.md]": (
        "family pages' examples (minutes of compiling each); README's and the architecture page's run in CI, the "
        "pages' APIs are tested by their families' modules"
    ),
    "tests/test_docs.py::test_python_blocks_run[docs/learners.md]": (
        "family pages' examples (minutes of compiling each); README's and the architecture page's run in CI, the "
        "pages' APIs are tested by their families' modules"
    ),
    "tests/test_bib_networks.py::test_jit_agrees[lstm2]": "the [encoder], [contrast] and [bcmlp] cases",
    "tests/test_bib_networks.py::test_jit_agrees[bcrnn]": "the [encoder], [contrast] and [bcmlp] cases",
    "tests/test_bib_networks.py::test_jit_agrees[video]": "the [encoder], [contrast] and [bcmlp] cases",
    "tests/test_babyai_bot.py::test_bot_solves_generated_levels[PutNextLocal-shape0]": (
        "the bot takes the reference's actions on imported levels (CI)"
    ),
    "tests/test_household_belief.py::test_determinism_jit_and_vmap": (
        "the belief's updates in CI; it runs jitted and vmapped in play"
    ),
    "tests/test_household_throughput.py::test_measure_returns_positive_rates_and_complete_rows": (
        "builds the throughput table's workloads (a minute); the workloads' checks and the part's verdicts run in CI,"
        " as does CHAIC's counting"
    ),
    "tests/test_household_throughput.py::test_format_table": (
        "builds the throughput table's workloads (a minute); the workloads' checks and the part's verdicts run in CI,"
        " as does CHAIC's counting"
    ),
    "tests/test_household_throughput.py::test_bench_writes_rows_and_resumes": (
        "builds the throughput table's workloads (a minute); the workloads' checks and the part's verdicts run in CI,"
        " as does CHAIC's counting"
    ),
    "tests/test_household_throughput.py::test_suite_part_stops_without_time_and_resumes": (
        "builds the throughput table's workloads (a minute); the workloads' checks and the part's verdicts run in CI,"
        " as does CHAIC's counting"
    ),
    "tests/test_excalibur_questions.py::test_jit_vmap_equivalence": (
        "EXCALIBUR's world jit, vmap and determinism (bit-exact job)"
    ),
    "tests/test_learners_networks.py::test_mission_padding_does_not_change_the_output[gru]": (
        "the networks' outputs and gradients in CI"
    ),
    "tests/test_ppo.py::test_resume_from_a_checkpoint_equals_the_uninterrupted_run": (
        "2 minutes at XLA's default level; resume at that level in CI: the Watch model and the demonstrations"
    ),
    "tests/test_bib_observers.py::test_surprise_is_masked_finite_and_batched": (
        "the evaluation pairs of every type and the planner's surprises (over two minutes of compiling); VOE scoring "
        "on efficiency pairs: tests/test_bib_voe.py"
    ),
    "tests/test_bib_observers.py::test_the_key_is_worth_fetching_only_behind_a_blocking_barrier": (
        "the evaluation pairs of every type and the planner's surprises (over two minutes of compiling); VOE scoring "
        "on efficiency pairs: tests/test_bib_voe.py"
    ),
    "tests/test_bib_observers.py::test_a_new_agent_inherits_no_preference": (
        "the evaluation pairs of every type and the planner's surprises (over two minutes of compiling); VOE scoring "
        "on efficiency pairs: tests/test_bib_voe.py"
    ),
    "tests/test_bib_observers.py::test_multi_agent_outcomes_all_four": (
        "the evaluation pairs of every type and the planner's surprises (over two minutes of compiling); VOE scoring "
        "on efficiency pairs: tests/test_bib_voe.py"
    ),
    "tests/test_household_hybrid.py::test_stages_use_teleporting_then_walking": (
        "the Hybrid's env, policy and run programs (minutes); its GAE, option ends, trainer discount and refusals run"
        " in CI"
    ),
    "tests/test_household_hybrid.py::test_bc_raises_the_expert_choices_probability": (
        "the Hybrid's env, policy and run programs (minutes); its GAE, option ends, trainer discount and refusals run"
        " in CI"
    ),
    "tests/test_household_hybrid.py::test_masked_choices_are_never_sampled": (
        "the Hybrid's env, policy and run programs (minutes); its GAE, option ends, trainer discount and refusals run"
        " in CI"
    ),
    "tests/test_household_hybrid.py::test_choice_mask_open_predicates_and_wait": (
        "the Hybrid's env, policy and run programs (minutes); its GAE, option ends, trainer discount and refusals run"
        " in CI"
    ),
    "tests/test_bc.py::test_cli_trains_il_interactive_end_to_end": "the imitation command's routing and checks in CI",
    "tests/test_chaic_bm.py::test_command_front_end": (
        "records episodes with the rule agents and trains (a minute); chaic's refusals: tests/test_bad_input.py"
    ),
    "tests/test_chaic_bm.py::test_clear_errors": (
        "records episodes with the rule agents and trains (a minute); chaic's refusals: tests/test_bad_input.py"
    ),
    "tests/test_household_watch.py::test_padding_and_invisible_nodes_never_change_the_output": (
        "the overfit test's model in CI"
    ),
    "tests/test_household_agents.py::test_random_goal": "the planner's subgoal and search tests in CI",
    "tests/test_bib_tasks.py::test_efficiency_familiarisation_detours_around_barriers[efficiency_time]": (
        "the efficiency_path case"
    ),
    "tests/test_bib_tasks.py::test_efficiency_familiarisation_detours_around_barriers[efficiency_irrational]": (
        "the efficiency_path case"
    ),
    "tests/test_bib_tasks.py::test_instrumental_scenarios[no_barrier]": "the other instrumental scenarios",
    "tests/test_bib_tasks.py::test_instrumental_scenarios[inconsequential_barrier]": (
        "the blocking_barrier scenario (its own generator program, 20 s)"
    ),
    "tests/test_bib_tasks.py::test_multi_agent_test_differs_only_in_the_agent": (
        "the evaluation multi-agent generator's program (15 s); the background multi-agent paths in CI"
    ),
    "tests/test_chaic_throughput.py::test_tiny_rows_have_consistent_counts": (
        "compiles the primitive env (30 s); the counts checked in CI on the GPU suite's committed CHAIC rows"
    ),
    "tests/test_excalibur_env.py::test_cached_knowledge_reward_matches_recomputing_it_through_all_phases": (
        "test_knowledge_reward_hand_computed"
    ),
    "tests/test_excalibur_env.py::test_bank_is_deterministic_and_splits_differ": (
        "the bank cache round trip in tests/test_excalibur_questions.py"
    ),
    "tests/test_household_solver.py::test_solver_action_is_branch_free_and_vmaps": (
        "the solver completes every activity (CI); it runs vmapped in play"
    ),
    "tests/test_bib_throughput.py::test_format_table": (
        "builds the throughput table's workloads (half a minute); the frame checksum and the render chunks run in CI"
    ),
    "tests/test_bib_throughput.py::test_background_set_smaller_run_says_so": (
        "builds the throughput table's workloads (half a minute); the frame checksum and the render chunks run in CI"
    ),
    "tests/test_bib_throughput.py::test_suite_part_verdicts_and_out_of_memory_rows": (
        "builds the throughput table's workloads (half a minute); the frame checksum and the render chunks run in CI"
    ),
    "tests/test_household_hrl.py::test_masked_actions_are_never_sampled": (
        "the masked choices of the CHAIC helper in CI (tests/test_chaic_ppo.py)"
    ),
    "tests/test_household_demos.py::test_save_load_round_trip": (
        "records demonstrations with Alice's planner (half a minute); the Watch model overfits demonstrations in CI"
    ),
    "tests/test_household_demos.py::test_malformed_files_are_refused": (
        "records demonstrations with Alice's planner (half a minute); the Watch model overfits demonstrations in CI"
    ),
    "tests/test_babyai_bot.py::test_bot_gives_up_on_unsolvable_levels_instead_of_hanging": (
        "the bot's episodes against minigrid's (tests/test_babyai_differential.py)"
    ),
    "tests/test_babyai_bot.py::test_bot_takes_the_reference_actions_on_imported_levels": (
        "the bot's episodes played step for step against minigrid's bot on 8 levels (tests/test_babyai_differential.py)"
    ),
    "tests/test_babyai_differential.py::test_verifier_corner_cases_match_minigrid[GoToLocal]": (
        "the GoTo and BossLevel cases"
    ),
    "tests/test_demos.py::test_failed_episodes_are_counted_but_not_stored": (
        "its own dataset; the stored episodes replay to their outcome in CI"
    ),
    "tests/test_chaic_world.py::test_container_capacity_is_three_and_contents_deliver_with_it": (
        "the bike basket holds three (CI)"
    ),
    "tests/test_gridworld_generation.py::test_room_grid_agent_never_faces_an_object[MiniGrid-BlockedUnlockPickup-v0]": (
        "the Unlock case"
    ),
    "tests/test_gridworld_generation.py::test_room_grid_agent_never_faces_an_object[MiniGrid-DoorKey-8x8-v0]": (
        "the Unlock case"
    ),
    "tests/test_household_watch.py::test_resume_equals_an_uninterrupted_run": (
        "90 s at XLA's default level; resume at that level in CI: the demonstrations (tests/test_demos.py)"
    ),
    "tests/test_babyai_differential.py::test_verifier_corner_cases_match_minigrid[BossLevel]": (
        "the GoTo case; BossLevel's episodes against minigrid in CI"
    ),
    "tests/test_babyai_generation.py::test_level_statistics_match_minigrid_and_levels_are_solvable[PutNextLocal]": (
        "the GoToRedBallGrey case; PutNextLocal's episodes against minigrid in CI"
    ),
    "tests/test_bib_networks.py::test_video_rnn_entry_points": "the parameter counts of every network in CI",
    "tests/test_bib_networks.py::test_bcrnn_entry_points_and_empty_trials": (
        "the parameter counts of every network in CI"
    ),
    "tests/test_babyai_bot.py::test_wrong_inputs_raise": (
        "needs the imported levels' rollouts (a minute); its errors are JAX's shape checks and dict indexing, no "
        "validation of jaxsoc's"
    ),
    "tests/test_babyai_generation.py::test_the_comparison_tells_levels_apart": (
        "the comparison's verdicts on GoToRedBallGrey in CI"
    ),
    "tests/test_minigrid_navigation.py::test_generation_matches_minigrid[MiniGrid-Playground-v0]": (
        "the LavaCrossing case; Playground step for step in tests/test_gridworld_differential.py"
    ),
    "tests/test_bib_tasks.py::test_efficiency_time_control_takes_as_long_as_the_efficient_path": (
        "the generators' legality and efficiency_path's detours in CI"
    ),
    "tests/test_bib_tasks.py::test_efficiency_irrational_agent_detours_with_no_barrier": (
        "the generators' legality and efficiency_path's detours in CI"
    ),
    "tests/test_excalibur_agents.py::test_act_jit_matches_eager": (
        "a minute at XLA's default level; jit against eager at that level in CI: EXCALIBUR's world, the grid engine, "
        "BIB's renderer"
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

#: seconds each dear test module took in one CI-tier run on 2 cores (junit times: fixtures included; modules under
#: 5 s count 0), used only to hand out the work units dearest first (tests/conftest.py); from a run of the CI tier
#: on 2 quiet workers of this machine kind, 2026-12-08 (1,796 worker-seconds in all); a stale figure costs time,
#: never a result
MODULE_SECONDS = {
    "tests/test_chaic_options.py": 122,
    "tests/test_bib_learners.py": 78,
    "tests/test_contract_every_id.py": 68,
    "tests/test_excalibur_agents.py": 52,
    "tests/test_bib_tasks.py": 49,
    "tests/test_adapter_gymnasium.py": 49,
    "tests/test_household_hrl.py": 48,
    "tests/test_household_watch.py": 44,
    "tests/test_docs.py": 43,
    "tests/test_household_watch_relations.py": 42,
    "tests/test_excalibur_env.py": 41,
    "tests/test_models_household.py": 34,
    "tests/test_chaic_agents.py": 34,
    "tests/test_household_help_observable.py": 33,
    "tests/test_household_agents.py": 33,
    "tests/test_household_world.py": 32,
    "tests/test_models_bib.py": 31,
    "tests/test_chaic_world.py": 31,
    "tests/test_babyai_differential.py": 28,
    "tests/test_chaic_hidden.py": 27,
    "tests/test_ci.py": 27,
    "tests/test_models_chaic.py": 26,
    "tests/test_gridworld_differential.py": 25,
    "tests/test_excalibur_answerer.py": 25,
    "tests/test_ppo.py": 24,
    "tests/test_no_dynamic_loops.py": 23,
    "tests/test_excalibur_hidden.py": 22,
    "tests/test_adapter_gymnax.py": 22,
    "tests/test_bib_networks.py": 21,
    "tests/test_hidden_state_bib.py": 20,
    "tests/test_minigrid_wfc.py": 20,
    "tests/test_excalibur_houses.py": 20,
    "tests/test_gridworld_engine.py": 20,
    "tests/test_excalibur_network.py": 20,
    "tests/test_chaic_equivalence.py": 18,
    "tests/test_models.py": 18,
    "tests/test_minigrid_registry.py": 18,
    "tests/test_observation_kinds.py": 18,
    "tests/test_learners_networks.py": 18,
    "tests/test_household_solver.py": 17,
    "tests/test_excalibur_explorer.py": 17,
    "tests/test_bib_dataset.py": 17,
    "tests/test_demos.py": 17,
    "tests/test_gpu_suite.py": 15,
    "tests/test_household_tasks.py": 15,
    "tests/test_hidden_state_babyai.py": 15,
    "tests/test_gridworld_generation.py": 15,
    "tests/test_chaic_render.py": 14,
    "tests/test_babyai_bonus_open.py": 14,
    "tests/test_bib_voe.py": 14,
    "tests/test_minigrid_obstructed_maze.py": 14,
    "tests/test_autoreset.py": 13,
    "tests/test_babyai_generation.py": 13,
    "tests/test_models_babyai.py": 13,
    "tests/test_minigrid_object_tasks.py": 12,
    "tests/test_models_excalibur.py": 11,
    "tests/test_bib_render.py": 11,
    "tests/test_vector.py": 11,
    "tests/test_compile_cache.py": 11,
    "tests/test_excalibur_questions.py": 10,
    "tests/test_household_render.py": 10,
    "tests/test_household_belief.py": 10,
    "tests/test_babyai_bonus_goto.py": 10,
    "tests/test_program_size.py": 9,
    "tests/test_bc.py": 9,
    "tests/test_chaic_env.py": 9,
    "tests/test_minigrid_navigation.py": 9,
    "tests/test_minigrid_dynamic_memory.py": 8,
    "tests/test_babyai_bot.py": 8,
    "tests/test_minigrid_multiroom.py": 8,
    "tests/test_policy_protocol.py": 8,
    "tests/test_wrappers.py": 8,
    "tests/test_babyai_bonus_putnext.py": 7,
    "tests/test_household_invariants.py": 7,
    "tests/test_excalibur_world.py": 6,
    "tests/test_bib_throughput.py": 6,
    "tests/test_chaic_tasks.py": 5,
    "tests/test_cli.py": 5,
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
