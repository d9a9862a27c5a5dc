"""The GPU suite's household-learners part: how fast Watch-And-Help's learners train.

One row per (learner, size), each a jitted program timed by ``core.measure_programs`` (compiled in parallel,
a warm-up call, then the best of ``repeats``):

- ``watch``: ``steps`` Adam steps of the goal-inference model (``watch_run.compiled``: the paper's d=128, every
  frame) on batches of ``size`` demonstrations of ``length`` steps, each step replaying its demonstrations'
  observations on the device as training does. The demonstrations are Alice-like stand-ins (training tasks,
  walks to random nodes: the cost does not depend on what she does). ``demos_per_s`` and the projected seconds
  of one epoch over the paper's 6,314 training demonstrations (1,011 + 5,303).
- ``hybrid``: ``updates`` A2C updates of the Hybrid helper (``hybrid_train.trainer``: ``size`` worlds x 20 frames,
  Alice planning with 100 simulations in every world every step, Bob's belief and regression planner, the
  policy) without teleporting walks. ``env_steps_per_s`` and the projected hours of the original's 100,000
  episodes of at most 250 steps (``PAPER_HYBRID_FRAMES``, an upper bound).
- ``hrl``: ``updates`` A2C updates of the HRL low level (``hrl_train.trainer``, the paper preset, ``size`` worlds x
  20 frames, Bob alone), with the projected hours of ``HRLConfig``'s default curriculum (7.6 M frames).
- ``hrl_imitation``: ``updates`` updates of the HRL low level's DAgger warm start on the belief teacher
  (``hrl_imitation.imitation_update``: ``size`` worlds x 20 frames labelled by
  ``subgoal_teachers.belief_action``, 4 Adam steps on each batch with BPTT; the ``tiny-marks`` network of
  ``hrl_marks/``), with the projected hours of that run's 256,000 frames (``BELIEF_WARM_START_FRAMES``).

Sizes go smallest first: a program that runs out of device memory fails the part (recorded with its error)
after the smaller rows are saved.
"""

from __future__ import annotations

from collections.abc import Iterator

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.gpu_suite.core import Context, Program, measure_programs, trainer_program

#: the paper's goal-inference training set: 1,011 helping-task demonstrations and 5,303 extra ones
PAPER_WATCH_DEMOS = 1011 + 5303
#: the original's Hybrid training: 100,000 episodes of at most 250 steps
PAPER_HYBRID_FRAMES = 100_000 * 250
#: the frames of the HRL low level's warm start on the belief teacher (``household_learners_cpu/hrl_marks``)
BELIEF_WARM_START_FRAMES = 256_000


def _watch_program(size: int, length: int, steps: int, repeats: int) -> Program:
    from jaxsoc.envs.household import tasks as T
    from jaxsoc.envs.household import world as W
    from jaxsoc.learners.household import watch as WA
    from jaxsoc.learners.household import watch_run as WR

    config = WA.WatchConfig(batch=size)
    max_steps = 250

    def build():
        fns = WR.compiled(config)
        tasks = T.cached_split("train").states
        num = int(tasks.step.shape[0])
        rng = np.random.default_rng(0)
        actions = W.V["walk"] * W.NUM_NODES + rng.integers(W.FURNITURE0, W.NUM_NODES, (num, max_steps))
        actions[:, length:] = 0
        bank = {"tasks": tasks, "actions": jnp.asarray(actions, jnp.int32), "length": jnp.full(num, length, jnp.int32)}
        time_axis = WR.time_steps(np.array([length]), max_steps, config)

        def run(key):
            state = fns.init(key)

            def body(state, k):
                rows = jax.random.randint(k, (size,), 0, num)
                return fns._step(state, k, bank, rows, time_axis)

            state, losses = jax.lax.scan(body, state, jax.random.split(key, steps))
            return losses[-1]

        return run

    def finish(compile_s: float, run_s: float, _) -> dict:
        rate = steps * size / run_s
        return {
            "learner": "watch",
            "size": size,
            "length": length,
            "steps": steps,
            "compile_s": compile_s,
            "run_s": run_s,
            "demos_per_s": rate,
            "projected_epoch_s": PAPER_WATCH_DEMOS / rate,
        }

    return Program(f"watch|batch={size}|length={length}|steps={steps}", build, finish, repeats)


def _rl_program(learner: str, size: int, updates: int, repeats: int) -> Program:
    from jaxsoc.learners.household import hrl_config, hrl_train, hybrid_config, hybrid_train

    if learner == "hybrid":
        config = hybrid_config.HybridConfig(num_envs=size)
        frames = PAPER_HYBRID_FRAMES
        make = lambda: hybrid_train.trainer(config, teleport=False)  # noqa: E731
    else:
        config = hrl_config.HRLConfig(num_envs=size)
        frames = config.grab_frames + config.put_frames
        make = lambda: hrl_train.trainer(config)  # noqa: E731
    per_update = config.num_envs * config.num_steps
    key = f"{learner}|envs={size}|updates={updates}"
    return trainer_program(key, make, updates, per_update, frames, repeats, learner=learner, size=size)


def _imitation_program(size: int, updates: int, repeats: int) -> Program:
    from jaxsoc.envs.household.subgoal_env import SubgoalEnv
    from jaxsoc.learners.household import hrl_imitation
    from jaxsoc.learners.household.hrl_config import HRLConfig
    from jaxsoc.learners.networks.household import LOW_PRESETS, LowLevelPolicy

    config = HRLConfig(preset="tiny-marks", teacher="belief", num_envs=size, max_steps=50)
    per_update = size * hrl_imitation.IMITATION_STEPS

    def build():
        model = LowLevelPolicy(LOW_PRESETS[config.preset])
        env, env_params = SubgoalEnv(), config.params("put")
        tx = hrl_imitation.imitation_optimizer(config)

        def run(key):
            k_init, k_reset, k_run = jax.random.split(key, 3)
            obs, states = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(k_reset, size), env_params)
            memory = model.initial_memory(size)
            params = model.init(k_init, obs, memory)["params"]
            carry = (obs, states, memory, jnp.zeros(size, bool), k_run)

            def body(c, _):
                params, opt_state, carry = c
                args = (params, opt_state, carry, jnp.float32(0.5), env_params, hrl_imitation.IMITATION_STEPS)
                params, opt_state, carry, metrics = hrl_imitation.imitation_update(
                    model, tx, *args, config.imitation_epochs, config.teacher
                )
                return (params, opt_state, carry), metrics["loss"]

            _, losses = jax.lax.scan(body, (params, tx.init(params), carry), None, length=updates)
            return losses[-1]

        return run

    def finish(compile_s: float, run_s: float, _) -> dict:
        rate = updates * per_update / run_s
        return {
            "learner": "hrl_imitation",
            "size": size,
            "updates": updates,
            "compile_s": compile_s,
            "run_s": run_s,
            "env_steps_per_s": rate,
            "projected_hours": BELIEF_WARM_START_FRAMES / rate / 3600,
        }

    return Program(f"hrl_imitation|envs={size}|updates={updates}", build, finish, repeats)


def household_learners(ctx: Context) -> Iterator[dict]:
    """Yields one row per program (module docstring), each kind's sizes in the order given. Parameters:
    ``watch_batches``, ``watch_length``, ``watch_steps``, ``hybrid_envs``, ``hrl_envs``, ``hrl_imitation_envs``,
    ``updates``, ``repeats``."""
    p = ctx.params
    programs = [_watch_program(b, p["watch_length"], p["watch_steps"], p["repeats"]) for b in p["watch_batches"]]
    programs += [_rl_program("hybrid", n, p["updates"], p["repeats"]) for n in p["hybrid_envs"]]
    programs += [_rl_program("hrl", n, p["updates"], p["repeats"]) for n in p["hrl_envs"]]
    programs += [_imitation_program(n, p["updates"], p["repeats"]) for n in p["hrl_imitation_envs"]]
    yield from measure_programs(ctx, programs)


def _num(x, spec: str) -> str:
    return "–" if x is None else format(x, spec)


def render_household_learners(rows: list[dict]) -> str:
    """Returns the part's markdown: one line per row (learner, size, rate, projected time, compile seconds)."""
    lines = [
        "| learner | batch / worlds | rate | projected | compile (s) |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        if r["learner"] == "watch":
            lines.append(
                f"| watch (d=128, {r['length']}-step demonstrations) | {r['size']} | "
                f"{_num(r['demos_per_s'], '.3g')} demos/s | {_num(r['projected_epoch_s'], '.3g')} s per epoch "
                f"of {PAPER_WATCH_DEMOS:,} | {_num(r['compile_s'], '.0f')} |"
            )
        else:
            names = {"hybrid": "Hybrid (Alice in the loop)", "hrl": "HRL low level"}
            what = names.get(r["learner"], "HRL low level's warm start (belief teacher, tiny-marks)")
            frames = "the warm start's 256k frames" if r["learner"] == "hrl_imitation" else "the paper's frames"
            lines.append(
                f"| {what} | {r['size']} | {_num(r['env_steps_per_s'], '.3g')} env steps/s | "
                f"{_num(r['projected_hours'], '.3g')} h for {frames} | {_num(r['compile_s'], '.0f')} |"
            )
    return "\n".join(lines)
