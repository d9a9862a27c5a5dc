"""The GPU suite's EXCALIBUR-learners part: how fast the answerer and the PPO explorer train.

One row per size and learner. ``answerer``: the supervised answerer's own training loop
(``learners.excalibur.answerer.train``, ``small`` preset, the default 2 x 2 houses) on ``size`` freshly generated
houses per batch for ``answerer_batches`` batches: each batch generates its houses on the device, draws their
questions on the host (Algorithm 2 every ``refresh`` = 4 batches, the assignment every batch) and takes one Adam
step on the device. The clock is read when the loop logs its half and its end; the rate counts the houses of the
second half (compiled by then), host work included, as a user's run pays it, and the projected hours are those of
``PROJECTED_HOUSES`` (1,000 times the CPU run's 25,600 houses: the model ``excalibur-answerer``).
``ppo``: ``updates`` PPO updates (``ppo.Trainer``, the ``excalibur`` network's ``tiny`` preset, the CPU run's
settings) of the explorer on ``EXCALIBUR-QA-v0`` with the CPU run's budgets (200 exploration and 50 re-entry steps)
and ``size`` worlds x ``num_steps`` frames per update, timed by ``core.measure_programs``; the projected hours are
those of ``PROJECTED_FRAMES`` (1,000 times the CPU run's 1.536 M frames: the models ``excalibur-qa-explorer`` and
``excalibur-memory-explorer``, curves in ``benchmarks/results/excalibur_learned_cpu``). ``memory``: the same for the
explorer over the object memory (``learners.excalibur.explorer``: ``MemoryExplorerEnv``, whose every step writes the
memory and runs the answerer on it for the reward, and the ``tiny-memory`` network; an untrained ``small`` answerer,
which costs what the trained one does), with the same projection. Sizes go smallest first.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from jaxsoc.gpu_suite.core import Context, Program, guarded_oom, measure_programs, trainer_program

#: 1,000 times the answerer's CPU run (400 batches of 64 houses)
PROJECTED_HOUSES = 25_600 * 1000
#: 1,000 times the PPO explorer's CPU run (300 updates of 64 worlds x 80 frames)
PROJECTED_FRAMES = 1_536_000 * 1000
#: the PPO explorer's budgets in its CPU run (``env_args``)
EXPLORER_ENV_ARGS = "explore_budget=200,reenter_budget=50"


def answerer_rate(houses: int, batches: int) -> dict:
    """Returns the answerer's measured training rate (module docstring): ``houses_per_s`` over the second half of
    a ``batches``-batch run of ``houses`` houses each, ``first_half_s`` (compilation included), ``second_half_s``
    and ``projected_hours``. Raises ``ValueError`` unless ``batches`` is an even number >= 2."""
    from jaxsoc.learners.excalibur import answerer as A

    if isinstance(batches, bool) or not isinstance(batches, int) or batches < 2 or batches % 2:
        raise ValueError(f"answerer batches must be an even int >= 2 (timed by halves), got {batches!r}")
    config = A.TrainConfig(houses=houses, batches=batches, eval_every=batches // 2)
    clock = [time.perf_counter()]  # the loop logs a row at its half and at its end
    A.train(config, log=lambda _: clock.append(time.perf_counter()))
    start, half, end = clock
    rate = houses * (batches // 2) / (end - half)
    return {
        "houses_per_s": rate,
        "first_half_s": half - start,
        "second_half_s": end - half,
        "projected_hours": PROJECTED_HOUSES / rate / 3600,
    }


def _answerer_rows(ctx: Context) -> Iterator[dict]:
    p = ctx.params
    last_s = 0.0
    for size in p["answerer_houses"]:
        key = f"answerer|houses={size}|batches={p['answerer_batches']}|preset=small|refresh=4"
        previous = ctx.previous(key)
        if previous is not None:
            yield previous
            continue
        if ctx.out_of_time(last_s):
            return
        began = time.perf_counter()
        base = {"learner": "answerer", "size": size, "num_steps": None, "updates": p["answerer_batches"]}
        row = guarded_oom(lambda b=base: {**b, **answerer_rate(b["size"], b["updates"])}, base)
        last_s = time.perf_counter() - began
        yield {**row, "key": key, "wall_s": last_s}


def _ppo_program(size: int, num_steps: int, updates: int, repeats: int) -> Program:
    from jaxsoc.learners import ppo

    frames = size * num_steps
    config = ppo.PPOConfig(
        env_id="EXCALIBUR-QA-v0",
        env_args=EXPLORER_ENV_ARGS,
        network="excalibur",
        preset="tiny",
        num_envs=size,
        num_steps=num_steps,
        recurrence=min(20, num_steps // 2),  # the CPU run's 20; 4 minibatches of whole sequences
        minibatch_frames=frames // 4,
        total_frames=frames * updates,
        lr=3e-4,
        gamma=0.999,
        gae_lambda=0.95,
        reward_scale=20.0,
    )

    key = f"ppo|envs={size}|steps={num_steps}|updates={updates}|{EXPLORER_ENV_ARGS}"
    fields = dict(learner="ppo", size=size, num_steps=num_steps)
    return trainer_program(key, lambda: ppo.Trainer(config), updates, frames, PROJECTED_FRAMES, repeats, **fields)


def _memory_program(size: int, num_steps: int, updates: int, repeats: int) -> Program:
    import jax

    from jaxsoc.envs.excalibur import bank
    from jaxsoc.learners.excalibur import answerer as A
    from jaxsoc.learners.excalibur import explorer as X

    frames = size * num_steps
    config = X.ppo_config(
        env_args=EXPLORER_ENV_ARGS,
        num_envs=size,
        num_steps=num_steps,
        recurrence=min(20, num_steps // 2),
        minibatch_frames=frames // 4,
        total_frames=frames * updates,
    )

    def make_trainer():
        model = A.make_model("small")
        variables = A.init_variables(model, bank.DEFAULT_CONFIG, jax.random.key(0))
        return X.trainer(config, (model, variables), 200, 50)

    key = f"memory|envs={size}|steps={num_steps}|updates={updates}|{EXPLORER_ENV_ARGS}|preset={config.preset}"
    fields = dict(learner="memory", size=size, num_steps=num_steps)
    return trainer_program(key, make_trainer, updates, frames, PROJECTED_FRAMES, repeats, **fields)


def excalibur_learners(ctx: Context) -> Iterator[dict]:
    """Yields one row per size and learner (module docstring), the answerer's first. Parameters:
    ``answerer_houses``, ``answerer_batches``, ``ppo_envs``, ``num_steps``, ``updates``, ``repeats``."""
    p = ctx.params
    yield from _answerer_rows(ctx)
    if ctx.truncated:
        return
    programs = [_ppo_program(n, p["num_steps"], p["updates"], p["repeats"]) for n in p["ppo_envs"]]
    programs += [_memory_program(n, p["num_steps"], p["updates"], p["repeats"]) for n in p["ppo_envs"]]
    yield from measure_programs(ctx, programs)


#: the table's name of each RL learner's rows
RL_NAMES = {
    "ppo": "PPO explorer (tiny) on EXCALIBUR-QA, frames",
    "memory": "PPO explorer over the memory (tiny-memory), frames",
}


def render_excalibur_learners(rows: list[dict]) -> str:
    """Returns the part's markdown: one line per row (learner, size, houses or frames per second, projected
    hours, compile or first-half seconds)."""
    lines = [
        "| learner, counted | houses per batch / worlds x frames | per second | hours for 2.56e7 houses / "
        "1.536e9 frames | compile or first half (s) |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        answerer = r.get("learner") == "answerer"
        rate = r.get("houses_per_s" if answerer else "env_steps_per_s")
        hours, first = r.get("projected_hours"), r.get("first_half_s" if answerer else "compile_s")
        name = "answerer (small), houses" if answerer else RL_NAMES.get(r.get("learner"), r.get("learner"))
        size = f"{r['size']}" if answerer else f"{r['size']} x {r['num_steps']}"
        cells = ["–" if v is None else f"{v:.3g}" for v in (rate, hours)] + ["–" if first is None else f"{first:.0f}"]
        if r.get("error"):
            cells[0] = r["error"][:60]
        lines.append(f"| {name} | {size} | {' | '.join(cells)} |")
    return "\n".join(lines)
