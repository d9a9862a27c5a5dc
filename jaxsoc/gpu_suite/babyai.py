"""The grid family's GPU-suite parts (``PARTS``): MiniGrid and BabyAI throughput, the rest of minigrid's registry,
the bot's speed and success, PPO and BC to 99%, and the learners' convolution. The measurements are in ``parts``
and ``registry``."""

from __future__ import annotations

from jaxsoc.bench.minigrid import BABYAI_BENCH_ENVS, GPU_BENCH_ENVS
from jaxsoc.envs.babyai.minigrid_levels import PAPER_LEVELS
from jaxsoc.gpu_suite import parts, registry
from jaxsoc.gpu_suite.core import Part

_RBG, _LOCAL = "BabyAI-GoToRedBallGrey-v0", "BabyAI-GoToLocal-v0"

#: the family's parts of the suite (``core.family_parts`` collects them; ``rank``: the place in the suite's order)
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
        rank=10,
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
        rank=20,
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
        rank=30,
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
        rank=40,
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
        rank=50,
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
        rank=60,
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
        rank=150,
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
        rank=160,
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
        rank=180,
    ),
)
