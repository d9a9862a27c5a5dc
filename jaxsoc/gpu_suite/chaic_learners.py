"""The GPU suite's CHAIC-learners part: how fast the PPO helpers train, over primitive actions and over options.

One row per size and learner. ``ppo``: ``updates`` PPO updates (``ppo.Trainer``, the ``chaic`` network's ``small``
preset) of a helper on ``CHAIC-All-Helper-v0`` (the 8 tasks' training banks, the rule-based constrained agent acting
inside every step, reward shaping on) with ``size`` worlds x ``num_steps`` frames per update, timed by
``core.measure_programs`` (compiled apart, a warm-up call, then the best of ``repeats``). ``env_steps_per_s`` counts
helper steps, and the projected hours are those of ``PROJECTED_FRAMES`` helper steps (10^4 times the paper's 10^4 RL
steps per task, over the 8 tasks). ``options-ppo``: ``updates`` PPO updates of the helper over options
(``learners.chaic.options_ppo``'s config on ``CHAIC-All-Options-v0``: each step one option of up to 48 world events)
with ``size`` worlds x ``num_steps`` options per update; ``env_steps_per_s`` counts options, and the projected hours
are those of ``PROJECTED_OPTIONS`` options (1,000 times the CPU run's PPO stage, 12,800 options:
``benchmarks/results/chaic_options_cpu``); ``options_env_args`` adds the view's variants (``rooms=true``: the room
options; ``partner_run=model:chaic-bm``: the pretrained behaviour model stepped at every decision of the helper), a
row each, keyed by them. Sizes go smallest first: a program that runs out of device memory fails the part after the
smaller rows are saved.
"""

from __future__ import annotations

from collections.abc import Iterator

from jaxsoc.gpu_suite.core import Context, Program, measure_programs, trainer_program

#: the paper trained its RL helper 10^4 steps per task; the part projects 10^4 times more, over the 8 tasks
PROJECTED_FRAMES = 8 * 10**8
#: 1,000 times the options helper's CPU run (20 updates of 32 worlds x 20 options)
PROJECTED_OPTIONS = 1_280 * 10**4


def _ppo_program(
    size: int, num_steps: int, updates: int, repeats: int, options: bool = False, env_args: str = ""
) -> Program:
    from jaxsoc.learners import ppo
    from jaxsoc.learners.chaic import options_ppo

    frames = size * num_steps
    if options:
        config = options_ppo.config(
            num_envs=size,
            num_steps=num_steps,
            recurrence=min(10, num_steps),
            minibatch_frames=frames // 2,
            total_frames=frames * updates,
            env_args=env_args,
        )
    else:
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

    name = "options-ppo" if options else "ppo"
    projected = PROJECTED_OPTIONS if options else PROJECTED_FRAMES
    fields = dict(learner=name, size=size, num_steps=num_steps, env_args=env_args)
    key = f"{name}|envs={size}|steps={num_steps}|updates={updates}" + (f"|{env_args}" if env_args else "")
    return trainer_program(key, lambda: ppo.Trainer(config), updates, frames, projected, repeats, **fields)


def chaic_learners(ctx: Context) -> Iterator[dict]:
    """Yields one row per size and learner (module docstring). Parameters: ``ppo_envs``, ``num_steps``,
    ``options_envs``, ``option_steps`` (options per world per update), ``options_env_args`` (the options view's
    variants, ``""`` the plain one), ``updates``, ``repeats``."""
    p = ctx.params
    programs = [_ppo_program(n, p["num_steps"], p["updates"], p["repeats"]) for n in p["ppo_envs"]]
    programs += [
        _ppo_program(n, p["option_steps"], p["updates"], p["repeats"], options=True, env_args=args)
        for args in p.get("options_env_args", [""])
        for n in p.get("options_envs", [])
    ]
    yield from measure_programs(ctx, programs)


def render_chaic_learners(rows: list[dict]) -> str:
    """Returns the part's markdown: one line per row (learner, worlds x frames, steps or options per second,
    projected hours, compile seconds)."""
    names = {
        "ppo": "PPO helper (chaic small), helper steps",
        "options-ppo": "options PPO helper (chaic small), options",
    }
    lines = [
        "| learner, counted | worlds x frames | per second | hours for 8e8 steps / 1.28e7 options | compile (s) |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        rate = "–" if r.get("env_steps_per_s") is None else f"{r['env_steps_per_s']:.3g}"
        hours = "–" if r.get("projected_hours") is None else f"{r['projected_hours']:.3g}"
        compile_s = "–" if r.get("compile_s") is None else f"{r['compile_s']:.0f}"
        name = names[r.get("learner", "ppo")] + (f", {r['env_args']}" if r.get("env_args") else "")
        lines.append(f"| {name} | {r['size']} x {r['num_steps']} | {rate} | {hours} | {compile_s} |")
    return "\n".join(lines)
