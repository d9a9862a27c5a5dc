"""The GPU suite: every GPU figure of the project in one command that fits the ~30 minutes a GPU is lent.

    PYTHONPATH=. python3 benchmarks/gpu_suite.py                  # every part: 25 minutes of budgets on an H100
    PYTHONPATH=. python3 benchmarks/gpu_suite.py --quick          # the throughput parts only, <= 8 minutes
    jaxsoc bench --suite gpu --parts ppo bc --force               # the same from the installed command

**Parts** (``PARTS``, in order of importance; ``--list-parts`` prints them with their budgets): ``classic``
(MiniGrid throughput, both occlusion modes, minigrid and xminigrid rates where importable), ``babyai`` (the 19
levels' throughput against the issue's targets), ``registry`` (every other id of minigrid's registry: the other
MiniGrid tasks and the bonus BabyAI levels, next to xminigrid where it has the id), ``bot_speed`` (the bot's
steps/s), ``bot_success`` (the bot's success and episode lengths over 2,000 levels each), ``bib`` (BIB episodes
generated and rendered per second, and the 28,000-episode background set against the issue's 60 s), ``household``
(the Watch-And-Help household's random-action steps/s against the issue's 1e7), ``household_agents`` (Alice and the
HP helper planning every step), ``chaic`` (CHAIC's world events and agent steps/s, random actions against the
issue's 1e6 agent steps/s, and the rule-based agents'), ``chaic_learners`` (the PPO helper's training rate),
``household_learners`` (the goal-inference model's, the Hybrid's and the HRL's training rates, and the HRL
warm start's), ``excalibur``
(EXCALIBUR's steps/s against the issue's 1e8), ``excalibur_learners`` (the answerer's and the PPO explorers'
training rates), ``ppo`` (the Small model to 99% on GoToRedBallGrey and GoToLocal),
``bc`` (the Small model by behaviour cloning on 8,000 and 5,657 bot demonstrations), ``bib_learners`` (BIB's four
learners' training rate and the projected time of a full run against the issue's 30 minutes) and ``conv`` (XLA's
convolution against im2col). Each has a time budget; the budgets of the default run add up to 25 minutes
(``--budget-minutes`` scales them).

**Rows.** Part ``p`` writes ``<out-dir>/gpu_<p>.json`` after every row it measures (``core.run_part``): the
part's parameters, device, jax version, dates, budget, ``complete``, and the rows, each of which also records
the device kind, platform, jax version, date and every parameter of its measurement. A part that runs out of
budget keeps what it measured with ``"complete": false``; a part that raises is recorded with its error and
the suite goes on. Then the GPU section of ``--results-md`` (between ``<!-- gpu-suite:begin -->`` and
``<!-- gpu-suite:end -->``, appended when absent; nothing outside them is touched) is rewritten from every
row file present (``render_markdown``): tables written by code, never by hand.

**Reruns.** A part whose file is complete, with the same parameters and size, is skipped whatever device
measured it (``--force`` redoes it; ``--parts a b`` selects parts). An incomplete part continues: its rows
measured on the same device kind are kept and the rest measured (rows of another device kind are replaced,
never mixed in). Where one command may run 10 minutes at most, as on this project's device machines, run the
same command with ``--time-limit 560`` until it exits 0 (3: parts remain; 1: a part failed; SIGTERM also
saves the rows and the markdown). The rows must survive between calls; on a machine that sends back only
``$OUT``::

    PYTHONPATH=. python3 benchmarks/gpu_suite.py --time-limit 560; cp benchmarks/results/gpu_*.json "$OUT"/

then copy the returned ``gpu_*.json`` into ``benchmarks/results/`` of the checkout (the next call continues
from them) and run ``python benchmarks/gpu_suite.py --render-only`` to rewrite ``benchmarks/RESULTS.md``
from them. Compiled programs go to jax's persistent compilation cache (``--compile-cache``, in the machine's
temp dir), so a call that was cut off does not pay its compilations again on the same machine.

**Sizes.** ``--toy`` runs every part at toy sizes (a CPU smoke test); its rows say so and its default output is a
temporary directory, never ``benchmarks/``. CI's ``tests/test_gpu_suite.py`` runs every part but the learners'
(``ppo``, ``ppo_paper``, ``household_learners``, ``bib_learners``, ``chaic_learners``, ``excalibur_learners``) at
toy sizes; those run in
its ``slow`` test, where the toy ``household_learners`` leaves the Hybrid and the HRL warm start out, and
``tests/test_gpu_suite_smoke.py`` (``slow``) runs those two programs. Without ``--toy`` the suite
refuses to run on a CPU (``--allow-cpu`` overrides).

**Adding a part** (the household, CHAIC and EXCALIBUR families): write, in a module of this package, a
generator ``my_part(ctx: core.Context) -> Iterator[dict]`` that reads its sizes from ``ctx.params``, yields
one row per measurement, each with a ``"key"`` naming all the row's parameters (a row yielded again with the
same key replaces it; ``"partial": True`` marks a progress row), yields ``ctx.previous(key)`` instead of
measuring when it returns a row, and returns early when ``ctx.out_of_time(seconds_needed)`` says so (jitted
benchmarks can use ``core.measure_programs``, which does all of this and compiles in parallel); and
``render_my_part(rows) -> str``, its markdown table. Then add one ``Part(...)`` entry to ``PARTS`` at its
place in importance order, with full and toy parameters and a budget taken from the others so the default
run still fits 25 minutes.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path

from jaxsoc.bench.minigrid import BABYAI_BENCH_ENVS, GPU_BENCH_ENVS
from jaxsoc.envs.babyai.minigrid_levels import PAPER_LEVELS
from jaxsoc.envs.chaic import throughput as chaic_throughput
from jaxsoc.envs.household import throughput as household_throughput
from jaxsoc.gpu_suite import (
    bib,
    bib_learners,
    chaic,
    chaic_learners,
    core,
    excalibur,
    excalibur_learners,
    household,
    household_learners,
    parts,
    registry,
)
from jaxsoc.gpu_suite.core import EXIT_DONE, EXIT_ERROR, EXIT_MORE, Context, Part, Program

__all__ = ["PARTS", "Context", "Part", "Program", "add_arguments", "main", "render_markdown", "run_from_args"]

_RBG, _LOCAL = "BabyAI-GoToRedBallGrey-v0", "BabyAI-GoToLocal-v0"

#: the registry, in order of importance; budgets in seconds add up to 25 minutes (full) and 8 (quick)
PARTS: tuple[Part, ...] = (
    Part(
        "classic",
        "Random-action throughput, classic MiniGrid envs",
        parts.classic,
        parts.render_classic,
        budget_s=90,
        params=dict(
            envs=GPU_BENCH_ENVS,
            num_envs=[262_144, 65_536],
            steps=500,
            repeats=2,
            see_through_walls=[True, False],
            reference_seconds=3.0,
        ),
        quick=dict(
            envs=GPU_BENCH_ENVS,
            num_envs=[262_144],
            steps=500,
            repeats=2,
            see_through_walls=[True, False],
            reference_seconds=3.0,
        ),
        quick_budget_s=80,
        toy=dict(
            envs=["MiniGrid-Empty-5x5-v0"],
            num_envs=[16],
            steps=8,
            repeats=1,
            see_through_walls=[True, False],
            reference_seconds=0.05,
        ),
        note="Method of `jaxsoc bench`: random actions, one jitted `lax.scan` of `vmap(env.step)` with "
        "auto-reset, compile time apart, a warm-up call, then the best of `repeats` timed calls. minigrid: one "
        "process on the same machine's CPU (– where not installed); xminigrid: the same scan (– where not installed).",
    ),
    Part(
        "babyai",
        "Random-action throughput, the 19 BabyAI levels",
        parts.babyai,
        parts.render_babyai,
        budget_s=180,  # 30 s went to registry
        params=dict(levels=BABYAI_BENCH_ENVS, runs=[[262_144, 250, 1]], paths=["vmap", "batched"]),
        quick=dict(levels=BABYAI_BENCH_ENVS, runs=[[262_144, 250, 1]], paths=["vmap", "batched"]),
        quick_budget_s=260,
        toy=dict(levels=[_RBG], runs=[[16, 8, 1]], paths=["vmap", "batched"]),
        note="Both steps users take: `vmap` is `jax.vmap(env.step)` (gymnax-style code), `batched` is "
        "`core.autoreset.batched_step`; both reset only ended worlds (`core.pooled`). Minigrid occlusion. Targets "
        "(issue 57): ≥1e8 steps/s on single-room levels, ≥3e7 on the multi-room levels, compile ≤15 s per level. "
        "Programs compiled in parallel threads.",
    ),
    Part(
        "ppo",
        "PPO, the Small model, to 99% success",
        parts.ppo,
        parts.render_ppo,
        budget_s=150,  # 30 s went to registry
        params=dict(
            levels=[_RBG, _LOCAL],
            preset="small",
            config={},
            chunk_updates=10,
            max_updates=1_000_000,
            threshold=0.99,
            min_episodes=2000,
            seed=0,
            min_seconds=60,
            progress_s=30,
        ),
        toy=dict(
            levels=[_RBG],
            preset="tiny",
            config=dict(num_envs=8, num_steps=20, minibatch_frames=160, update_epochs=1),
            chunk_updates=1,
            max_updates=2,
            threshold=1.01,  # never reached: the toy run goes through a progress row and a steady frames/s
            min_episodes=1,
            seed=0,
            min_seconds=0,
            progress_s=0,
        ),
        note="`learners.ppo.throughput_config` (4,096 worlds × 20 frames, 4 epochs of 8 minibatches of 10,240 "
        "frames, lr 5e-4), `Trainer.run` in chunks, one seed; each level gets an even share of what is left of "
        "the budget. Target (the issue): ≥2e6 frames/s on GoToLocal.",
    ),
    Part(
        "registry",
        "Random-action throughput, the rest of minigrid's registry",
        registry.registry,
        registry.render_registry,
        budget_s=90,  # 30 s each from babyai, bot_speed, bot_success and ppo; 30 s to excalibur_learners
        params=dict(envs=None, num_envs=[65_536], steps=250, repeats=1),
        toy=dict(envs=["MiniGrid-LavaGapS5-v0"], num_envs=[8], steps=4, repeats=1),
        note="Every MiniGrid id beyond the classic six and every bonus BabyAI level (`bench.minigrid.registry_ids`), "
        "each with minigrid's occlusion setting for the id, BabyAI levels with pooled resets; the method of "
        "`jaxsoc bench`; xminigrid's rate where it has the id and is importable (– otherwise). Programs compiled "
        "in parallel threads; a part cut off by its budget resumes on the next call.",
    ),
    Part(
        "bot_speed",
        "BabyAI bot throughput",
        parts.bot_speed,
        parts.render_bot_speed,
        budget_s=90,  # 30 s went to registry
        params=dict(levels=BABYAI_BENCH_ENVS, num_envs=65_536, steps=64, repeats=1),
        quick=dict(levels=BABYAI_BENCH_ENVS, num_envs=65_536, steps=64, repeats=1),
        quick_budget_s=140,
        toy=dict(levels=[_RBG], num_envs=16, steps=8, repeats=1),
        note="`bot_act` + `step_env` on N fresh levels for T steps (`bench.bot.bot_scan`), finished "
        "worlds included. Target (the issue): ≥1e6 bot steps/s on BossLevel.",
    ),
    Part(
        "bot_success",
        "BabyAI bot success and episode length",
        parts.bot_success,
        parts.render_bot_success,
        budget_s=90,  # 30 s went to registry
        params=dict(levels=list(PAPER_LEVELS), episodes=2000, worlds=2000, seed=0),
        toy=dict(levels=["GoToRedBallGrey"], episodes=8, worlds=8, seed=0),
        note="`bench.bot.bot_success` (as `scripts/babyai_bot_success.py`): success ≥99.9% over ≥2,000 "
        "episodes and a mean length within 10% of minigrid's bot. Levels played concurrently: their seconds "
        "and rates share the machine.",
    ),
    Part(
        "bib",
        "BIB: episodes generated and rendered per second, and the background set",
        bib.bib,
        bib.render_bib,
        budget_s=60,
        params=dict(
            params="video",
            task=None,
            sizes=[1024, 4096, 16384],
            repeats=1,
            render_size=84,
            chunk_mib=1024,
            background_batch=4096,
            background_episodes=None,
            target_s=bib.TARGET_S,
            seed=0,
        ),
        toy=dict(
            params="compact",
            task="single_object",
            sizes=[4],
            repeats=1,
            render_size=84,
            chunk_mib=1024,
            background_batch=4,
            background_episodes=6,
            target_s=bib.TARGET_S,
            seed=0,
        ),
        note="`envs.bib.throughput`: one jitted program per batch generates the background mix "
        "(`dataset.sample_background`, 10:10:4:4) with BIB's video-like params (434 frames per trial), renders "
        "every frame at 84×84 a chunk of episodes at a time and reduces them to a checksum on the device; compile "
        "time apart. The set: 7 batches of 4,096 dispatched back to back, timed to the last result. Target (the "
        "issue): ≤60 s on an H100. Throughput rows: a warm-up call, then the best of `repeats`.",
    ),
    Part(
        "household",
        "Watch-And-Help household: random-action steps per second",
        household.household,
        household.render_household,
        budget_s=60,
        params=dict(
            modes=list(household_throughput.RANDOM_MODES),
            sizes=[262_144, 65_536, 4096],
            steps=50,
            repeats=1,
            split="train",
            task_seed=0,
            seed=0,
            target_steps_per_s=household.TARGET_STEPS_PER_S,
        ),
        toy=dict(
            modes=list(household_throughput.RANDOM_MODES),
            sizes=[4],
            steps=3,
            repeats=1,
            split="train",
            task_seed=0,
            seed=0,
            target_steps_per_s=household.TARGET_STEPS_PER_S,
        ),
        note="`envs.household.throughput`: N households reset from the train tasks, stepped T times in one jitted "
        "`lax.scan` of `vmap(env._auto_reset_step)` (auto-reset computed every step), actions drawn inside the "
        "scan: uniform over all 968 ids, uniform over the valid ones, or `HelperEnv` (Bob uniform, its random "
        "Alice inside `step`); compile time apart, a warm-up call, then the best of `repeats`. Target (the issue): "
        "≥1e7 steps/s on one H100, against the paper's 10 actions/s per Unity process.",
    ),
    Part(
        "household_agents",
        "Watch-And-Help household: Alice and the HP helper planning every step, steps per second",
        household.household,
        household.render_household,
        budget_s=60,
        params=dict(
            modes=["planners"],
            sizes=[32_768, 4096, 512],
            steps=20,
            repeats=1,
            split="test-1",
            task_seed=0,
            seed=0,
            target_steps_per_s=None,
        ),
        toy=dict(
            modes=["planners"],
            sizes=[2],
            steps=2,
            repeats=1,
            split="test-1",
            task_seed=0,
            seed=0,
            target_steps_per_s=None,
        ),
        note="`envs.household.throughput` mode `planners`: N households of test-1, the human-like Alice and the HP "
        "helper each updating a belief, sampling a world and searching 100 simulations per step (planning "
        "included), memories restarted with each episode; compile apart, a warm-up call, then one timed call. "
        "The original replans for about 0.05 s per step per agent on a CPU (20 steps/s).",
    ),
    Part(
        "chaic",
        "CHAIC: world events and agent steps per second, random actions and the rule-based agents",
        chaic.chaic,
        chaic.render_chaic,
        budget_s=90,  # taken from classic, babyai, bot_success and bib_learners (30 s each); 30 s to chaic_learners
        params=dict(
            modes=list(chaic_throughput.MODES),
            task="normal",
            sizes=[65_536, 4096],
            steps=dict(uniform=100, valid=100, helper=25, agents=50),
            repeats=2,
            split="train",
            task_seed=0,
            seed=0,
            target_agent_steps_per_s=chaic.TARGET_AGENT_STEPS_PER_S,
            target_modes=["uniform", "valid", "helper"],
        ),
        toy=dict(
            modes=["uniform", "agents"],  # the env and the rule agents; every mode is tested in test_chaic_throughput
            task="normal",
            sizes=[4],
            steps=3,
            repeats=1,
            split="train",
            task_seed=0,
            seed=0,
            target_agent_steps_per_s=chaic.TARGET_AGENT_STEPS_PER_S,
            target_modes=["uniform", "valid", "helper"],
        ),
        note="`envs.chaic.throughput`: N worlds of the normal task's train bank stepped T times in one jitted "
        "`lax.scan` with auto-reset (uniform, valid: `ChaicEnv`, one event per step; helper: `ChaicHelperEnv`, "
        "the rule-based constrained agent inside step, up to 8 events per step; agents: the rule-based constrained "
        "agent and the RHP helper deciding at every event, fresh episodes and memories as episodes end); the "
        "programs of one size compiled together, a warm-up call, then the best of `repeats`. Target (the issue): "
        "≥1e6 agent steps/s (actions started by the two agents) on one H100, judged on the random-action modes at "
        "the largest N; the paper collects 10^4 steps per day in ThreeDWorld on an A10G.",
    ),
    Part(
        "household_learners",
        "Watch-And-Help learners: goal-inference, Hybrid and HRL training rates",
        household_learners.household_learners,
        household_learners.render_household_learners,
        budget_s=90,  # 30 s went to chaic_learners
        params=dict(
            watch_batches=[8, 64, 256],
            watch_length=80,
            watch_steps=20,
            hybrid_envs=[16, 256, 2048],
            hrl_envs=[32, 1024, 8192],
            hrl_imitation_envs=[32, 1024],
            updates=10,
            repeats=1,
        ),
        toy=dict(
            watch_batches=[2],
            watch_length=4,
            watch_steps=1,
            hybrid_envs=[],  # its compile (Alice's planner: ~50 s on a CPU) is tested in test_household_hybrid.py
            hrl_envs=[2],
            hrl_imitation_envs=[],  # its own program at toy size: tests/test_gpu_suite_smoke.py (slow)
            updates=1,
            repeats=1,
        ),
        note="`gpu_suite/household_learners.py`: jitted programs of `watch_steps` Adam steps of the goal-inference "
        "model (d=128, every frame of stand-in demonstrations of `watch_length` steps, observations replayed on the "
        "device) and of `updates` A2C updates of the Hybrid helper (Alice planning with 100 simulations in every "
        "world, Bob's belief and regression planner) and of the HRL low level (paper preset, Bob alone), 20 frames "
        "per world per update; compile apart, a warm-up call, then one timed call. Projections: one goal-model "
        "epoch over the paper's 6,314 demonstrations; the original's 100,000 Hybrid episodes of at most 250 steps; "
        "the HRL curriculum's 7.6 M frames. `hrl_imitation_envs`: the HRL low level's DAgger warm start on the "
        "belief teacher (`tiny-marks`, 4 Adam steps per batch of 20 frames per world), projected over its 256k frames.",
    ),
    Part(
        "chaic_learners",
        "CHAIC learners: the PPO helpers' training rates (primitive actions, options)",
        chaic_learners.chaic_learners,
        chaic_learners.render_chaic_learners,
        budget_s=60,  # 30 s each from chaic and household_learners
        params=dict(
            ppo_envs=[256, 2048, 8192],
            num_steps=40,
            options_envs=[256, 2048],
            option_steps=20,
            options_env_args=["", "rooms=true", "partner_run=benchmarks/results/chaic_options3_cpu/bm"],
            updates=3,
            repeats=1,
        ),
        toy=dict(ppo_envs=[4], num_steps=4, options_envs=[2], option_steps=2, updates=1, repeats=1),
        note="`gpu_suite/chaic_learners.py`: jitted programs of `updates` PPO updates of the CHAIC helper (the "
        "`chaic` set-encoder network, small preset) on `CHAIC-All-Helper-v0` with reward shaping, the rule-based "
        "constrained agent acting inside every step (up to 8 events per helper step), `num_steps` frames per world "
        "per update, 4 epochs of 4 minibatches; compile apart, a warm-up call, then one timed call. Projection: "
        "8e8 helper steps (10^4 times the paper's 10^4 RL steps per task, 8 tasks). The options helper "
        "(`learners/chaic/options_ppo.py`, `CHAIC-All-Options-v0`, up to 48 events per option): the same "
        "with `option_steps` options per world per update, 2 minibatches, advantages normalised; projection: 1.28e7 "
        "options, 1,000 times the CPU run's PPO stage; its variants with the room options (`rooms=true`) and the "
        "behaviour model stepped in the view at every decision (`partner_run=`).",
    ),
    Part(
        "excalibur",
        "EXCALIBUR: steps per second of thousands of houses",
        excalibur.excalibur,
        excalibur.render_excalibur,
        budget_s=60,  # 30 s each from ppo_paper and bc
        params=dict(
            modes=["random", "knowledge", "oracle"],
            sizes=[4096, 65_536, 262_144],
            steps=100,
            repeats=2,
            target_steps_per_s=excalibur.TARGET_STEPS_PER_S,
            target_mode="random",
        ),
        toy=dict(
            modes=["random"],
            sizes=[4],
            steps=3,
            repeats=1,
            target_steps_per_s=excalibur.TARGET_STEPS_PER_S,
            target_mode="random",
        ),
        note="`envs.excalibur.throughput`: N houses of the train bank stepped T times in one jitted `lax.scan` with "
        "auto-reset (random: `EXCALIBUR-v0`, a uniformly random valid action; knowledge: `EXCALIBUR-NoveltyQA-v0`, "
        "whose QA reward answers every question from what was seen at each exploration step; oracle: the oracle "
        "explorer choosing every action, its BFS over the house included); compile apart, a warm-up call, then the "
        "best of `repeats`. Target (the issue): >= 1e8 steps/s on one H100, random mode, largest N.",
    ),
    Part(
        "excalibur_learners",
        "EXCALIBUR learners: the answerer's and the two PPO explorers' training rates",
        excalibur_learners.excalibur_learners,
        excalibur_learners.render_excalibur_learners,
        budget_s=60,  # 30 s each from registry and bib_learners
        params=dict(
            answerer_houses=[64, 1024, 8192],
            answerer_batches=8,
            ppo_envs=[256, 4096],
            num_steps=80,
            updates=3,
            repeats=1,
        ),
        toy=dict(answerer_houses=[2], answerer_batches=2, ppo_envs=[2], num_steps=8, updates=1, repeats=1),
        note="`gpu_suite/excalibur_learners.py`: the supervised answerer's own training loop "
        "(`learners.excalibur.answerer.train`, small preset, houses generated on the device every batch, questions "
        "drawn on the host), timed by its own clock over the second half of `answerer_batches` batches, host work "
        "included; and jitted programs of `updates` PPO updates of the explorer (excalibur network, tiny preset) on "
        "`EXCALIBUR-QA-v0` with the CPU run's settings and budgets (200 + 50 steps), and of the explorer over the "
        "object memory (`learners.excalibur.explorer`, tiny-memory preset, the answerer run every step for its "
        "reward), `num_steps` frames per world per update; compile apart, a warm-up call, then one timed call. "
        "Projections: 2.56e7 houses and 1.536e9 frames, 1,000 times the CPU runs of "
        "`benchmarks/results/excalibur_answerer_cpu` and `excalibur_learned_cpu`.",
    ),
    Part(
        "ppo_paper",
        "PPO, the paper's recipe (64 worlds, arch original), many seeds at once, to 99% success",
        parts.ppo_paper,
        parts.render_ppo_paper,
        budget_s=90,  # 30 s went to excalibur
        params=dict(
            levels=[_RBG],
            preset="small",
            config={},
            seeds=32,
            chunk_updates=50,
            max_updates=100_000,
            threshold=0.99,
            window=None,
            seed=0,
            min_seconds=60,
        ),
        toy=dict(
            levels=[_RBG],
            preset="tiny",
            config=dict(num_envs=4, num_steps=20, minibatch_frames=40, update_epochs=1),
            seeds=2,
            chunk_updates=1,
            max_updates=2,
            threshold=0.99,
            window=1,
            seed=0,
            min_seconds=0,
        ),
        note="`learners.ppo.paper_config` run as `seeds` runs in one program (`Trainer.run_seeds`); episodes "
        "to 99% as the reference counts them, against the paper's 377k–379k on GoToRedBallGrey.",
    ),
    Part(
        "bc",
        "Behaviour cloning, the Small model, in the paper's demonstration bracket",
        parts.bc,
        parts.render_bc,
        budget_s=90,  # 30 s went to excalibur
        params=dict(
            env=_RBG,
            demos=[8000, 5657],
            preset="small",
            config={},
            demo_seed=0,
            bot_worlds=4096,
            min_seconds=60,
        ),
        toy=dict(
            env=_RBG,
            demos=[16, 11],
            preset="tiny",
            config=dict(batch_size=8, epoch_length=16, val_episodes=8, max_epochs=1),
            demo_seed=0,
            bot_worlds=16,
            min_seconds=0,
        ),
        note="`learners.bc.train_bc` with the Small recipe on bot demonstrations generated in memory "
        "(`data.memory.bot_demos`), one seed per size, each size an even share of what is left of the budget. "
        "The paper: 5.7k–8k demonstrations reach 99%.",
    ),
    Part(
        "bib_learners",
        "BIB's learners: training steps per second and the projected time of a full run",
        bib_learners.bib_learners,
        bib_learners.render_bib_learners,
        budget_s=60,  # 30 s went to excalibur_learners
        params=dict(
            kinds=[*bib_learners.KINDS, *bib_learners.VARIANTS],
            config=dict(bib_learners.VARIANTS),
            seeds=3,
            seed=0,
            steps_measured=50,
            background_episodes=None,
            data_seed=0,
            target_minutes=bib_learners.TARGET_MINUTES,
        ),
        toy=dict(
            kinds=["bib-atc", "bib-bc-mlp", "bib-video-rnn"],  # each learner class; compiling is most of the time
            config={
                "bib-atc": dict(batch_size=8, pairs_per_episode=2),
                "bib-bc-mlp": dict(batch_size=4, context_pairs=8),
                "bib-bc-rnn": dict(batch_size=2, max_steps=4),
                "bib-video-rnn": dict(batch_size=2, max_steps=4, hidden=8, channels=[4, 8, 8]),
            },
            seeds=2,
            seed=0,
            steps_measured=2,
            background_episodes={"single_object": 10},  # one task: one generator to compile
            data_seed=0,
            target_minutes=bib_learners.TARGET_MINUTES,
        ),
        note="`learners.bib.run.Epochs` as `jaxsoc train bib-*` runs it (seeds vmapped, one `lax.scan` per epoch "
        "on a GPU), the paper's configs (ATC batch 512, the observers batch 32, encoder fine-tuned), on the "
        "background set generated on the device (`data.background`, 28,000 episodes, 22,400 to train). Each kind: "
        "an epoch cut to `steps_measured` steps, called once to compile, then timed once; the full set's epoch "
        "and its `epochs` (100) projected from that rate, optimiser steps only (no validation). Target (the "
        "issue): each model trained on the full background set in ≤30 minutes on one H100. `bib-bc-mlp:cells`: "
        "BC-MLP through the cell encoder with its keypoint loss, the CPU recipe (batch 16, 20 epochs).",
    ),
    Part(
        "conv",
        "The learners' convolution: XLA against im2col",
        parts.conv,
        parts.render_conv,
        budget_s=30,
        params=dict(maps=[7, 2], batches=[256, 4096], channels=128, iterations=50, repeats=2),
        toy=dict(maps=[7, 2], batches=[4], channels=8, iterations=2, repeats=1),
        note="A 3×3 convolution, padding 1, forward and backward (gradients of kernel and input) inside a "
        "`lax.fori_loop`, as the learners' scans run it; `layers.conv_native` (cuDNN on a GPU) against "
        "`layers.conv_im2col` (what `Conv` uses on a CPU).",
    ),
)
assert sum(p.budget_s for p in PARTS) == core.FULL_MINUTES * 60
assert sum(p.quick_budget_s for p in PARTS if p.quick is not None) == core.QUICK_MINUTES * 60


def render_markdown(rows_by_part: Mapping[str, list[dict]], complete: Mapping[str, bool] | None = None) -> str:
    """Returns the generated GPU section of the results markdown (without its markers) for ``rows_by_part``
    (``{part name: rows}``, as in the row files) in ``PARTS`` order; ``complete`` marks incomplete parts
    (default: all complete). Pure: the same rows give the same text."""
    return core.render_markdown(rows_by_part, complete, PARTS)


def add_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """Adds the suite's options to ``parser`` (the script's and ``jaxsoc bench --suite gpu``'s)."""
    names = [p.name for p in PARTS]
    parser.add_argument("--parts", nargs="+", choices=names, metavar="PART", help=f"parts to run: {', '.join(names)}")
    parser.add_argument("--quick", action="store_true", help="the throughput parts only, in <= 8 minutes")
    parser.add_argument("--force", action="store_true", help="measure complete parts again")
    parser.add_argument(
        "--budget-minutes", type=float, help="scales the part budgets to this total (default 25; 8 with --quick)"
    )
    parser.add_argument("--time-limit", type=float, help="seconds this call may run (parts it cuts stay incomplete)")
    parser.add_argument("--out-dir", help="row files (default benchmarks/results; a temp dir with --toy)")
    parser.add_argument(
        "--results-md", help="markdown to update (default benchmarks/RESULTS.md; in --out-dir w/ --toy)"
    )
    parser.add_argument("--toy", action="store_true", help="toy sizes: a smoke test that runs on a CPU")
    parser.add_argument("--workers", type=int, help="programs compiled at once (default: CPU cores, at most 12)")
    parser.add_argument(
        "--compile-cache",
        help=f"jax's persistent compilation cache, or 'none' (default {core.default_compile_cache()})",
    )
    parser.add_argument("--allow-cpu", action="store_true", help="run full sizes without an accelerator")
    parser.add_argument("--list-parts", action="store_true", help="print the parts and their budgets, then exit")
    parser.add_argument("--render-only", action="store_true", help="only rewrite the markdown from the row files")


def build_parser() -> argparse.ArgumentParser:
    """Returns the suite's argument parser."""
    parser = argparse.ArgumentParser(
        prog="gpu_suite", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_arguments(parser)
    return parser


def _list_parts() -> str:
    lines = ["part         budget s  quick s  title"]
    for p in PARTS:
        quick = f"{p.quick_budget_s:7.0f}" if p.quick is not None else "      –"
        lines.append(f"{p.name:<12} {p.budget_s:8.0f}  {quick}  {p.title}")
    return "\n".join(lines)


def run_from_args(args: argparse.Namespace) -> int:
    """Runs the suite as ``args`` (``add_arguments``'s options) say. Returns the exit status: 0 when every
    selected part is complete, 3 when some are not (rerun to continue), 1 when a part failed, 2 for bad
    options."""
    if args.list_parts:
        print(_list_parts())
        return EXIT_DONE
    out_dir = Path(
        args.out_dir
        or (os.path.join(tempfile.gettempdir(), "jaxsoc-gpu-suite-toy") if args.toy else "benchmarks/results")
    )
    results_md = Path(args.results_md or (out_dir / "RESULTS.md" if args.toy else "benchmarks/RESULTS.md"))
    selected = [p for p in PARTS if args.parts is None or p.name in args.parts]
    if args.render_only:
        rows, complete = core.load_rows(out_dir, PARTS)
        core.update_results_md(results_md, render_markdown(rows, complete))
        print(f"rewrote the GPU section of {results_md} from {len(rows)} row files in {out_dir}")
        return EXIT_DONE
    import jax

    if jax.default_backend() == "cpu" and not (args.toy or args.allow_cpu):
        print("gpu_suite: no accelerator; use --toy for a smoke test (or --allow-cpu)", file=sys.stderr)
        return 2
    cache = args.compile_cache or ("none" if args.toy else core.default_compile_cache())
    if cache.lower() != "none":
        core.enable_compile_cache(cache)
    workers = args.workers or min(12, os.cpu_count() or 1)
    results = core.run_suite(
        selected,
        out_dir,
        results_md,
        quick=args.quick,
        toy=args.toy,
        budget_minutes=args.budget_minutes,
        time_limit_s=args.time_limit,
        force=args.force,
        workers=workers,
        registry=PARTS,
    )
    wanted = [p.name for p in selected if not (args.quick and p.quick is None)]
    for name in wanted:
        state = results.get(name)
        status = "not started" if state is None else ("complete" if state["complete"] else "INCOMPLETE")
        error = f" ({state['error']})" if state and state.get("error") else ""
        print(f"{name:<12} {status}{error}")
    if any(results.get(n, {}).get("error") for n in wanted):
        return EXIT_ERROR
    done = all(results.get(n, {}).get("complete") for n in wanted)
    print("all parts complete" if done else "parts remain: run the same command again to continue")
    return EXIT_DONE if done else EXIT_MORE


class _Terminated(BaseException):
    """SIGTERM (``timeout``'s signal) as an exception, so the rows and the markdown are written on the way out."""


def _terminate(signum, frame) -> None:
    raise _Terminated


def main(argv: list[str] | None = None) -> int:
    """The suite's command line (``benchmarks/gpu_suite.py``). Returns the exit status (``run_from_args``;
    3 when stopped by SIGTERM)."""
    args = build_parser().parse_args(argv)
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if main_thread else None
    try:
        return run_from_args(args)
    except (_Terminated, KeyboardInterrupt) as stop:
        print("gpu_suite: interrupted; the rows measured so far are kept: rerun to continue", file=sys.stderr)
        if isinstance(stop, _Terminated):  # rows and markdown are written: exit now, not after the compilations
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(EXIT_MORE)
        return EXIT_MORE
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)
