"""The GPU suite's CHAIC-learners part: how fast the PPO helper trains.

One row per size: ``updates`` PPO updates (``ppo.Trainer``, the ``chaic`` network's ``small`` preset) of a helper on
``CHAIC-All-Helper-v0`` (the 8 tasks' training banks, the rule-based constrained agent acting inside every step,
reward shaping on) with ``size`` worlds x ``num_steps`` frames per update, timed by ``core.measure_programs``
(compiled apart, a warm-up call, then the best of ``repeats``). ``env_steps_per_s`` counts helper steps, and the
projected hours are those of ``PROJECTED_FRAMES`` helper steps (10^4 times the paper's 10^4 RL steps per task, over
the 8 tasks). Sizes go smallest first: a program that runs out of device memory fails the part after the smaller rows
are saved.
"""

from __future__ import annotations

from collections.abc import Iterator

from jaxsoc.gpu_suite.core import Context, Program, measure_programs

#: the paper trained its RL helper 10^4 steps per task; the part projects 10^4 times more, over the 8 tasks
PROJECTED_FRAMES = 8 * 10**8


def _ppo_program(size: int, num_steps: int, updates: int, repeats: int) -> Program:
    from jaxsoc.learners import ppo

    frames = size * num_steps
    config = ppo.PPOConfig(
        env_id="CHAIC-All-Helper-v0",
        env_args="shaping=1.0",
        network="chaic",
        preset="small",
        num_envs=size,
        num_steps=num_steps,
        recurrence=min(20, num_steps),
        minibatch_frames=frames // 4,
        total_frames=frames * updates,
        lr=3e-4,
        gae_lambda=0.95,
        reward_scale=10.0,
    )

    def build():
        trainer = ppo.Trainer(config)
        return lambda key: trainer._run(trainer.init(key), updates, None)[1]["loss"]

    def finish(compile_s: float, run_s: float, _) -> dict:
        rate = updates * frames / run_s
        return {
            "learner": "ppo",
            "size": size,
            "num_steps": num_steps,
            "updates": updates,
            "compile_s": compile_s,
            "run_s": run_s,
            "env_steps_per_s": rate,
            "projected_hours": PROJECTED_FRAMES / rate / 3600,
        }

    return Program(f"ppo|envs={size}|steps={num_steps}|updates={updates}", build, finish, repeats)


def chaic_learners(ctx: Context) -> Iterator[dict]:
    """Yields one row per size (module docstring). Parameters: ``ppo_envs``, ``num_steps``, ``updates``,
    ``repeats``."""
    p = ctx.params
    programs = [_ppo_program(n, p["num_steps"], p["updates"], p["repeats"]) for n in p["ppo_envs"]]
    yield from measure_programs(ctx, programs)


def render_chaic_learners(rows: list[dict]) -> str:
    """Returns the part's markdown: one line per row (worlds, helper steps/s, projected hours, compile seconds)."""
    lines = [
        "| learner | worlds x frames | helper steps/s | hours for 8e8 steps | compile (s) |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        rate = "–" if r.get("env_steps_per_s") is None else f"{r['env_steps_per_s']:.3g}"
        hours = "–" if r.get("projected_hours") is None else f"{r['projected_hours']:.3g}"
        compile_s = "–" if r.get("compile_s") is None else f"{r['compile_s']:.0f}"
        lines.append(f"| PPO helper (chaic small) | {r['size']} x {r['num_steps']} | {rate} | {hours} | {compile_s} |")
    return "\n".join(lines)
