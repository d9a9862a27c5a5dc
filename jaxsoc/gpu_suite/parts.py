"""The measurements of the GPU suite's parts and their tables (``gpu_suite.babyai.PARTS`` declares them).

Each part is a generator ``part(ctx) -> Iterator[dict]`` of rows, each row with a ``key`` naming every
parameter it depends on (an incomplete part resumed later keeps the rows whose key it plans again), and a
``render_<part>(rows) -> str`` giving its markdown table(s). The measurements themselves are the project's:
``jaxsoc.bench.minigrid`` (random-action throughput), ``jaxsoc.bench.bot`` (the bot's rate, success and
lengths), ``jaxsoc.learners.ppo`` (``Trainer``), ``jaxsoc.learners.bc`` (``train_bc``) and
``jaxsoc.learners.networks.layers`` (the two convolutions).
"""

from __future__ import annotations

import collections
import dataclasses
import importlib.util
import time
from collections.abc import Iterator
from typing import Any

import jax
import jax.numpy as jnp

import jaxsoc
from jaxsoc.gpu_suite.core import Context, Program, measure_programs

#: the targets: random-action steps/s of a BabyAI level by its rooms, the bot's steps/s, PPO frames/s
#: single-room levels 1e8 steps/s, multi-room levels 3e7 (``babyai_target``)
BABYAI_TARGET = {"1x1": 1e8}
BABYAI_MULTI_ROOM_TARGET = 3e7
BOT_TARGET = {"BabyAI-BossLevel-v0": 1e6}
PPO_TARGET = {"BabyAI-GoToLocal-v0": 2e6}


def _num(x: Any, spec: str = ".3g") -> str:
    return "–" if x is None else format(x, spec)


def _importable(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _verdict(value: float | None, target: float | None) -> str:
    if target is None:
        return "–"
    return "–" if value is None else ("pass" if value >= target else "**FAIL**")


def _rooms(env_id: str) -> str:
    _, params = jaxsoc.make(env_id)
    return f"{getattr(params, 'num_rows', 1)}x{getattr(params, 'num_cols', 1)}"


def _level(env_id: str) -> str:
    return env_id.removeprefix("BabyAI-").removesuffix("-v0")


def _common(rows: list[dict], names: tuple[str, ...]) -> str:
    """Returns "name value, ..." for the parameters every row shares, as a sentence (empty when none)."""
    parts = []
    for name in names:
        values = {str(r.get(name)) for r in rows}
        if len(values) == 1 and None not in (r.get(name) for r in rows):
            parts.append(f"{name} {values.pop()}")
    return ("Parameters: " + ", ".join(parts) + ".\n\n") if parts else ""


# -- classic MiniGrid throughput -----------------------------------------------------------------------------
def classic(ctx: Context) -> Iterator[dict]:
    """Random-action steps/s of the classic MiniGrid envs (``bench.minigrid.jaxsoc_scan``, the method of
    ``jaxsoc bench``) at every ``num_envs``, both occlusion modes, against minigrid's single-process rate (when
    minigrid is importable) and xminigrid's (when importable)."""
    from jaxsoc.bench.minigrid import compare_row, jaxsoc_scan, measure_minigrid, measure_xminigrid

    p = ctx.params
    steps, repeats = p["steps"], p["repeats"]
    with_minigrid = p["reference_seconds"] > 0 and _importable("minigrid")
    with_xminigrid = _importable("xminigrid")
    if not with_minigrid:
        ctx.log("minigrid not importable (or reference_seconds 0): no reference rate")
    references: dict[str, Any] = {}
    theirs: dict[tuple[str, int], Any] = {}

    def program(env: str, n: int, see_through: bool) -> Program:
        made = {}

        def build():
            made["run"], made["info"] = jaxsoc_scan(env, n, steps, see_through_walls=see_through)
            return made["run"]

        def finish(compile_s, run_s, _):
            if env not in references:
                references[env] = measure_minigrid(env, p["reference_seconds"]) if with_minigrid else None
            if (env, n) not in theirs:
                theirs[(env, n)] = measure_xminigrid(env, n, steps, repeats) if with_xminigrid else None
            ours = {**made["info"], "compile_s": compile_s, "run_s": run_s, "steps_per_s": n * steps / run_s}
            row = compare_row(ours, references[env], theirs[(env, n)])
            row["reference_seconds"] = p["reference_seconds"] if with_minigrid else 0
            return row

        key = f"{env}|N={n}|T={steps}|repeats={repeats}|see_through_walls={see_through}"
        return Program(key, build, finish, repeats)

    yield from measure_programs(
        ctx, [program(e, n, s) for n in p["num_envs"] for e in p["envs"] for s in p["see_through_walls"]]
    )


def render_classic(rows: list[dict]) -> str:
    """Returns the classic throughput table (``bench.minigrid.format_table``)."""
    from jaxsoc.bench.minigrid import format_table

    return _common(rows, ("steps", "repeats", "reference_seconds")) + format_table(rows)


# -- BabyAI throughput ---------------------------------------------------------------------------------------
def babyai(ctx: Context) -> Iterator[dict]:
    """Random-action steps/s of the BabyAI levels (minigrid occlusion) for every ``runs`` entry ``[num_envs,
    steps, repeats]`` and every ``paths`` entry (``"vmap"``: ``jax.vmap(env.step)`` as gymnax-style code calls it;
    ``"batched"``: ``core.autoreset.batched_step``), with the target of the level's rooms (``BABYAI_TARGET``)."""
    from jaxsoc.bench.minigrid import jaxsoc_scan

    def program(env: str, n: int, steps: int, repeats: int, path: str) -> Program:
        made = {}

        def build():
            made["run"], made["info"] = jaxsoc_scan(env, n, steps, pooled=path == "batched", see_through_walls=False)
            return made["run"]

        def finish(compile_s, run_s, _):
            rooms = _rooms(env)
            rate = n * steps / run_s
            target = BABYAI_TARGET.get(rooms, BABYAI_MULTI_ROOM_TARGET)
            row = {**made["info"], "compile_s": compile_s, "run_s": run_s, "steps_per_s": rate, "rooms": rooms}
            return {**row, "target_steps_per_s": target, "meets_target": None if target is None else rate >= target}

        return Program(f"{env}|N={n}|T={steps}|repeats={repeats}|{path}", build, finish, repeats)

    runs, paths = ctx.params["runs"], ctx.params.get("paths", ["batched"])
    programs = [program(e, n, t, r, path) for n, t, r in runs for e in ctx.params["levels"] for path in paths]
    yield from measure_programs(ctx, programs)


def render_babyai(rows: list[dict]) -> str:
    """Returns the BabyAI throughput table with each level's target and whether it is met."""
    lines = [
        "| level | rooms | step | N | T | repeats | steps/s | target | pass | compile s |",
        "|---|---|---|---:|---:|---:|---:|---:|---|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {_level(r['env'])} | {r['rooms']} | {r.get('path', 'batched')} | {r['num_envs']} | {r['steps']} | "
            f"{r['repeats']} | "
            f"{_num(r['steps_per_s'])} | {_num(r['target_steps_per_s'], '.0e')} | "
            f"{_verdict(r['steps_per_s'], r['target_steps_per_s'])} | {_num(r['compile_s'], '.1f')} |"
        )
    met = [r for r in rows if r.get("meets_target")]
    summary = f"{len(met)} of {len(rows)} measurements meet their target.\n\n"
    return summary + "\n".join(lines)


# -- the bot ----------------------------------------------------------------------------------------------------
def bot_speed(ctx: Context) -> Iterator[dict]:
    """The JAX bot's steps/s on every level (``bench.bot.bot_scan``: ``num_envs`` fresh levels played for
    ``steps`` steps, worlds whose episode ended included), with the target where the issue sets one."""
    from jaxsoc.bench.bot import bot_row, bot_scan

    p = ctx.params
    n, steps, repeats = p["num_envs"], p["steps"], p["repeats"]

    def program(env: str) -> Program:
        def finish(compile_s, run_s, output):
            row = bot_row(env, n, steps, compile_s, run_s, output)
            target = BOT_TARGET.get(env)
            return {
                **row,
                "target_steps_per_s": target,
                "meets_target": None if target is None else row["steps_per_s"] >= target,
            }

        key = f"{env}|N={n}|T={steps}|repeats={repeats}"
        return Program(key, lambda: bot_scan(env, n, steps), finish, repeats, needs_output=True)

    yield from measure_programs(ctx, [program(env) for env in p["levels"]])


def render_bot_speed(rows: list[dict]) -> str:
    """Returns the bot throughput table."""
    lines = [
        "| level | N | T | bot steps/s | compile s | success in T | target | pass |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {_level(r['env'])} | {r['num_envs']} | {r['num_steps']} | {_num(r['steps_per_s'])} | "
            f"{_num(r['compile_s'], '.1f')} | {_num(r['success'], '.3f')} | {_num(r['target_steps_per_s'], '.0e')} | "
            f"{_verdict(r['steps_per_s'], r['target_steps_per_s'])} |"
        )
    return "\n".join(lines)


def bot_success(ctx: Context) -> Iterator[dict]:
    """The bot's success rate and mean episode length over ``episodes`` generated levels of every level
    (``bench.bot.bot_success``, as ``scripts/babyai_bot_success.py``), ``ctx.workers`` levels played at
    once in threads (their compilations overlap; their seconds and rates then share the machine)."""
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    from jaxsoc.bench.bot import bot_success as measure

    p = ctx.params
    episodes, worlds, seed = p["episodes"], p["worlds"], p["seed"]
    keys = {level: f"{level}|episodes={episodes}|worlds={worlds}|seed={seed}" for level in p["levels"]}
    todo = []
    for level, key in keys.items():
        row = ctx.previous(key)
        if row is not None:
            yield row
        else:
            todo.append(level)
    running: dict[Any, str] = {}
    pool = ThreadPoolExecutor(ctx.workers)
    try:
        while todo or running:
            while todo and len(running) < ctx.workers and not ctx.truncated and not ctx.out_of_time(0):
                level = todo.pop(0)
                running[pool.submit(measure, level, episodes, worlds, seed)] = level
            if not running:
                return
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                level = running.pop(future)
                row = future.result()
                ctx.log(f"{level}: success {row['success']:.4f}, mean length {row['mean']:.1f}")
                yield {**row, "key": keys[level], "concurrent_levels": ctx.workers}
    finally:  # stopped early (SIGTERM): leave without waiting for the levels in flight
        pool.shutdown(wait=False, cancel_futures=True)


def render_bot_success(rows: list[dict]) -> str:
    """Returns the bot success table of ``scripts/babyai_bot_success.py``."""
    from jaxsoc.bench.bot import BOT_SUCCESS_HEADER, bot_success_line
    from jaxsoc.envs.babyai.minigrid_levels import PAPER_LEVELS

    order = {name: i for i, name in enumerate(PAPER_LEVELS)}
    rows = sorted(rows, key=lambda r: order.get(r["level"], len(order)))
    head = _common(rows, ("worlds", "seed", "concurrent_levels"))
    return head + BOT_SUCCESS_HEADER + "\n" + "\n".join(bot_success_line(r) for r in rows)


# -- learners --------------------------------------------------------------------------------------------------
class _Rolling:
    """The success rate over the fewest most recent updates that hold at least ``min_episodes`` episodes."""

    def __init__(self, min_episodes: float) -> None:
        self.min_episodes = max(min_episodes, 1e-9)
        self.window: collections.deque = collections.deque()
        self.episodes = self.successes = 0.0

    def add(self, episodes: float, success_rate: float) -> float | None:
        """Adds one update; returns the rolling rate, or None while fewer than ``min_episodes`` episodes ended."""
        successes = success_rate * episodes if episodes > 0 else 0.0
        self.window.append((episodes, successes))
        self.episodes += episodes
        self.successes += successes
        while self.window and self.episodes - self.window[0][0] >= self.min_episodes:
            e, s = self.window.popleft()
            self.episodes -= e
            self.successes -= s
        return self.successes / self.episodes if self.episodes >= self.min_episodes else None


def ppo(ctx: Context) -> Iterator[dict]:
    """PPO (``learners.ppo.throughput_config`` with ``config`` overrides, ``Trainer.run`` in chunks of
    ``chunk_updates``) on every level until the rolling training success rate (``_Rolling``: the sampled
    policy's, over at least ``min_episodes`` episodes) reaches ``threshold``, ``max_updates`` are done, or the
    level's share of the budget (what is left, split evenly over the levels left) ends. A progress row
    (``partial``) is written every ``progress_s`` seconds."""
    from jaxsoc.learners.ppo import throughput_config, trainer_for

    p = ctx.params

    def plan(env_id: str):
        config = throughput_config(env_id=env_id, preset=p["preset"], **p["config"])
        key = f"{env_id}|{dataclasses.asdict(config)}|chunk={p['chunk_updates']}|max_updates={p['max_updates']}"
        return config, key + f"|threshold={p['threshold']}|min_episodes={p['min_episodes']}|seed={p['seed']}"

    yield from _each_level(ctx, plan, lambda c, k, d: _ppo_level(ctx, c, trainer_for(c), k, d))


def _each_level(ctx: Context, plan, run) -> Iterator[dict]:
    """Yields, for each of ``ctx.params["levels"]``, the stored row of ``plan(env_id) -> (config, key)`` or
    the rows of ``run(config, key, deadline)``, each level with an even share of what is left of the budget;
    stops when less than ``min_seconds`` is left."""
    levels = list(ctx.params["levels"])
    for i, env_id in enumerate(levels):
        config, key = plan(env_id)
        previous = ctx.previous(key)
        if previous is not None:
            yield previous
            continue
        if ctx.out_of_time(ctx.params["min_seconds"]):
            return
        yield from run(config, key, time.perf_counter() + ctx.time_left() / (len(levels) - i))


def _ppo_level(ctx: Context, config, trainer, key: str, deadline: float) -> Iterator[dict]:
    p = ctx.params
    chunk, fpu = p["chunk_updates"], config.frames_per_update
    began = time.perf_counter()
    runner = jax.block_until_ready(trainer.init(jax.random.key(p["seed"])))
    init_s = time.perf_counter() - began
    rolling = _Rolling(p["min_episodes"])
    updates = episodes = 0
    rate = best = None
    hit: dict[str, Any] = {}
    first_chunk_s = steady_s = last_chunk_s = 0.0
    steady_frames = 0
    last_progress = time.perf_counter()
    stopped = "max_updates"

    def row(partial: bool) -> dict:
        out = {
            "env": config.env_id,
            "preset": config.preset,
            "config": dataclasses.asdict(config),
            "frames_per_update": fpu,
            "chunk_updates": chunk,
            "threshold": p["threshold"],
            "min_episodes": p["min_episodes"],
            "seed": p["seed"],
            "max_updates": p["max_updates"],
            "budget_s": deadline - began,
            "updates": updates,
            "frames": updates * fpu,
            "episodes": episodes,
            "wall_s": time.perf_counter() - began,
            "init_s": init_s,
            "first_chunk_s": first_chunk_s,
            "frames_per_s": steady_frames / steady_s if steady_s > 0 else None,
            "success": rate,
            "best_success": best,
            "reached": bool(hit),
            "updates_to_threshold": hit.get("updates"),
            "frames_to_threshold": hit.get("frames"),
            "wall_to_threshold_s": hit.get("wall_s"),
            "target_frames_per_s": PPO_TARGET.get(config.env_id),
            "stopped": "running" if partial else stopped,
            "key": key,
        }
        return {**out, "partial": True} if partial else out

    while updates < p["max_updates"]:
        if updates and time.perf_counter() + last_chunk_s > deadline:
            stopped = "budget"
            break
        tick = time.perf_counter()
        runner, metrics = trainer.run(runner, chunk)
        metrics = jax.device_get(metrics)
        last_chunk_s = time.perf_counter() - tick
        if updates == 0:
            first_chunk_s = last_chunk_s  # compilation included
        else:
            steady_s += last_chunk_s
            steady_frames += chunk * fpu
        for e, s in zip(metrics["episodes"], metrics["success_rate"]):
            updates += 1
            episodes += int(e)
            rate = rolling.add(float(e), float(s))
            if rate is not None:
                best = rate if best is None else max(best, rate)
            if rate is not None and rate >= p["threshold"] and not hit:
                hit = {"updates": updates, "frames": updates * fpu, "wall_s": time.perf_counter() - began}
        if hit:
            stopped = "reached"
            break
        if time.perf_counter() - last_progress > p["progress_s"]:
            last_progress = time.perf_counter()
            ctx.log(f"{config.env_id}: {updates} updates, success {_num(rate, '.4f')}")
            yield row(partial=True)
    ctx.log(f"{config.env_id}: {stopped} after {updates} updates, success {_num(rate, '.4f')}")
    yield row(partial=False)


def render_ppo(rows: list[dict]) -> str:
    """Returns the PPO table: frames, updates, time and frames/s to the threshold (or to the end of the
    budget), with the frames/s target where the issue sets one."""
    lines = [
        "| level | preset | worlds × frames | updates | frames | wall s | frames/s | success | reached | "
        "frames to it | updates to it | s to it | stopped | frames/s target |",
        "|---|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---|---|",
    ]
    for r in rows:
        c = r["config"]
        target = r.get("target_frames_per_s")
        target_text = "–" if target is None else f"{target:.0e}: {_verdict(r['frames_per_s'], target)}"
        lines.append(
            f"| {_level(r['env'])} | {r['preset']} | {c['num_envs']} × {c['num_steps']} | {r['updates']} | "
            f"{r['frames']:,} | {r['wall_s']:.0f} | {_num(r['frames_per_s'])} | {_num(r['success'], '.4f')} | "
            f"{'yes' if r['reached'] else 'no'} | {_num(r['frames_to_threshold'], ',')} | "
            f"{_num(r['updates_to_threshold'])} | {_num(r['wall_to_threshold_s'], '.0f')} | {r['stopped']} | "
            f"{target_text} |"
        )
    head = f"Threshold {_span_of(rows, 'threshold')} on the training (sampled) success rate over the most recent "
    head += f"updates holding at least {_span_of(rows, 'min_episodes')} episodes; wall s includes compilation, "
    head += "frames/s does not (it leaves out the first chunk).\n\n"
    return head + "\n".join(lines)


def _span_of(rows: list[dict], name: str) -> str:
    return "/".join(sorted({str(r.get(name)) for r in rows}))


def ppo_paper(ctx: Context) -> Iterator[dict]:
    """The paper's PPO recipe (``learners.ppo.paper_config``: 64 worlds x 40 frames, ``arch="original"``),
    ``seeds`` runs at once (``Trainer.run_seeds``, pooled resets over a named seed axis), on each level until
    every run has reached the threshold by the reference's definition (``learners.sweeps.episodes_to_threshold``:
    rows every 10 updates over at least 64 episodes, centred rolling mean), ``max_updates`` are done, or the
    level's share of the budget ends. Rows give the episodes each run needed (the paper's unit) and the
    frames/s of all runs together."""
    import numpy as np

    from jaxsoc.learners.babyai.sweeps import PAPER_RL, rl_window
    from jaxsoc.learners.ppo import paper_config, trainer_for
    from jaxsoc.learners.sweeps import episodes_to_threshold

    p = ctx.params

    def plan(env_id: str):
        config = paper_config(env_id=env_id, preset=p["preset"], **p["config"])
        key = f"{env_id}|{dataclasses.asdict(config)}|seeds={p['seeds']}|chunk={p['chunk_updates']}"
        return config, key + f"|max_updates={p['max_updates']}|threshold={p['threshold']}"

    def run(config, key: str, deadline: float) -> Iterator[dict]:
        env_id = config.env_id
        trainer = trainer_for(config, seed_axis="seeds")
        began = time.perf_counter()
        runners = trainer.init_seeds(jax.random.split(jax.random.key(p["seed"]), p["seeds"]))
        rates, counts, needed = [], [], [None] * p["seeds"]
        steady_s, steady_frames, updates, last_s = 0.0, 0, 0, 0.0
        window = rl_window(env_id) if p["window"] is None else p["window"]
        while updates < p["max_updates"] and (updates == 0 or time.perf_counter() + last_s < deadline):
            tick = time.perf_counter()
            runners, metrics = trainer.run_seeds(runners, p["chunk_updates"])
            metrics = jax.device_get(metrics)
            last_s = time.perf_counter() - tick
            if updates:
                steady_s += last_s
                steady_frames += p["seeds"] * p["chunk_updates"] * config.frames_per_update
            updates += p["chunk_updates"]
            rates.append(np.asarray(metrics["success_rate"], float))
            counts.append(np.asarray(metrics["episodes"], int))
            rate, count = np.concatenate(rates, axis=1), np.concatenate(counts, axis=1)
            needed = [episodes_to_threshold(rate[s], count[s], window, p["threshold"]) for s in range(p["seeds"])]
            if all(n is not None for n in needed):
                break
        reached = [n for n in needed if n is not None]
        ctx.log(f"{env_id}: {len(reached)}/{p['seeds']} runs reached {p['threshold']} in {updates} updates")
        yield {
            "env": env_id,
            "preset": config.preset,
            "arch": config.arch,
            "config": dataclasses.asdict(config),
            "seeds": p["seeds"],
            "threshold": p["threshold"],
            "window": window,
            "updates": updates,
            "frames_per_run": updates * config.frames_per_update,
            "wall_s": time.perf_counter() - began,
            "frames_per_s": steady_frames / steady_s if steady_s > 0 else None,
            "episodes_needed": needed,
            "reached": len(reached),
            "min_episodes_needed": min(reached) if reached else None,
            "max_episodes_needed": max(reached) if reached else None,
            "paper_thousands": PAPER_RL.get(_level(env_id)),
            "key": key,
        }

    yield from _each_level(ctx, plan, run)


def render_ppo_paper(rows: list[dict]) -> str:
    """Returns the paper-recipe table: runs that reached the threshold, the episodes they needed (min–max,
    thousands) beside the paper's, and the frames/s of all runs together."""
    lines = [
        "| level | arch | runs | reached | updates | episodes to 99% (k, min–max) | paper (k) | wall s | frames/s |",
        "|---|---|---:|---:|---:|---|---|---:|---:|",
    ]
    for r in rows:
        low, high = r["min_episodes_needed"], r["max_episodes_needed"]
        ours = "–" if low is None else f"{low / 1000:.0f}–{high / 1000:.0f}"
        paper = r["paper_thousands"]
        lines.append(
            f"| {_level(r['env'])} | {r['arch']} | {r['seeds']} | {r['reached']} | {r['updates']} | {ours} | "
            f"{'–' if paper is None else f'{paper[0]:.0f}–{paper[1]:.0f}'} | {r['wall_s']:.0f} | "
            f"{_num(r['frames_per_s'])} |"
        )
    return "Episodes to 99% by the reference's definition (`learners.sweeps.episodes_to_threshold`).\n\n" + "\n".join(
        lines
    )


def bc(ctx: Context) -> Iterator[dict]:
    """Behaviour cloning (``learners.bc.train_bc``, the ``preset``'s recipe with ``config`` overrides) on
    bot demonstrations generated in memory (``data.memory.bot_demos``, the first ``max(demos)`` levels of
    ``demo_seed``), one run per size in ``demos`` (the first ``n`` of them), each until the validation success
    reaches the recipe's threshold, its epochs end, or its share of the budget ends. All sizes share one
    padded length (one compiled update)."""
    from jaxsoc.data.memory import bot_demos
    from jaxsoc.learners.bc import BCConfig, padded_length, train_bc

    p = ctx.params
    env_id, preset = p["env"], p["preset"]
    base = BCConfig.for_preset(env_id, "small" if preset == "tiny" else preset).replace(preset=preset, **p["config"])
    keys = {n: f"{env_id}|demos={n}|{base.to_dict()}|demo_seed={p['demo_seed']}" for n in p["demos"]}
    todo = []
    for n, key in keys.items():
        row = ctx.previous(key)
        if row is not None:
            yield row
        else:
            todo.append(n)
    if not todo or ctx.out_of_time(p["min_seconds"]):
        return
    start = time.perf_counter()
    demos = bot_demos(env_id, p["demo_seed"], range(max(p["demos"])), num_envs=p["bot_worlds"])
    demo_s = time.perf_counter() - start
    config = base.replace(max_len=padded_length(base, demos))
    ctx.log(f"{demos.num_episodes} bot demonstrations in {demo_s:.1f} s")
    for i, n in enumerate(todo):
        if i and ctx.out_of_time(p["min_seconds"]):
            return
        deadline = time.perf_counter() + ctx.time_left() / (len(todo) - i)
        state = {"wall": 0.0, "budget": False}

        def callback(record: dict, _variables: Any, deadline: float = deadline, state: dict = state) -> bool:
            epoch_s = record["wall_s"] - state["wall"] if record["epoch"] > 1 else 0.0  # the first compiles
            state["wall"] = record["wall_s"]
            state["budget"] = time.perf_counter() + epoch_s > deadline
            return state["budget"]

        began = time.perf_counter()
        used = min(n, demos.num_episodes)
        _, history = train_bc(config, demos, num_demos=used, progress=False, callback=callback)
        rates = [h["val_success_rate"] for h in history]
        best = max(rates)
        first = next((h for h in history if h["val_success_rate"] >= config.success_threshold), None)
        if first is not None:
            stopped = "reached"
        elif state["budget"]:
            stopped = "budget"
        else:
            stopped = "max_epochs" if len(history) >= config.max_epochs else "patience"
        ctx.log(f"{used} demos: best validation success {best:.4f} after {len(history)} epochs ({stopped})")
        yield {
            "key": keys[n],
            "env": env_id,
            "preset": preset,
            "config": config.to_dict(),
            "demos": used,
            "demo_seed": p["demo_seed"],
            "demo_s": demo_s,
            "epochs": len(history),
            "updates": history[-1]["updates"],
            "best_val_success": best,
            "final_val_success": rates[-1],
            "threshold": config.success_threshold,
            "reached": first is not None,
            "updates_to_threshold": None if first is None else first["updates"],
            "wall_s": time.perf_counter() - began,
            "budget_s": deadline - began,
            "stopped": stopped,
        }


def render_bc(rows: list[dict]) -> str:
    """Returns the BC table, with the paper's bracket for the level where it has one."""
    from jaxsoc.learners.babyai.sweeps import PAPER_IL

    lines = [
        "| level | preset | demos | epochs | updates | best validation success | reached | updates to it | "
        "wall s | stopped | paper: demos for 99% |",
        "|---|---|---:|---:|---:|---:|---|---:|---:|---|---|",
    ]
    for r in rows:
        paper = PAPER_IL.get(_level(r["env"]))
        paper_text = "–" if paper is None else f"{paper[0]}k–{paper[1]}k"
        lines.append(
            f"| {_level(r['env'])} | {r['preset']} | {r['demos']:,} | {r['epochs']} | {r['updates']} | "
            f"{r['best_val_success']:.4f} | {'yes' if r['reached'] else 'no'} | {_num(r['updates_to_threshold'])} | "
            f"{r['wall_s']:.0f} | {r['stopped']} | {paper_text} |"
        )
    c = rows[0]["config"] if rows else {}
    head = (
        f"Recipe: batch {c.get('batch_size')}, epochs of {c.get('epoch_length')} demos, lr {c.get('lr')}, "
        f"{c.get('val_episodes')} greedy validation episodes per epoch, threshold {c.get('success_threshold')}.\n\n"
    )
    return head + "\n".join(lines)


# -- convolution ------------------------------------------------------------------------------------------------
def conv(ctx: Context) -> Iterator[dict]:
    """Time per forward+backward call of a 3x3 convolution (padding 1) on ``[batch, m, m, channels]`` maps,
    XLA's (``layers.conv_native``: cuDNN on a GPU) against patches times kernel (``layers.conv_im2col``), inside
    a ``lax.fori_loop`` of ``iterations`` calls, as the learners' scans run it."""
    from jaxsoc.learners.networks.layers import conv_im2col, conv_native

    p = ctx.params
    c, iterations, repeats = p["channels"], p["iterations"], p["repeats"]
    impls = {"native": conv_native, "im2col": conv_im2col}

    def program(m: int, b: int, impl: str) -> Program:
        fn = impls[impl]

        def build():
            def run(key):
                kx, kk = jax.random.split(key)
                x = jax.random.normal(kx, (b, m, m, c))
                kernel = 0.05 * jax.random.normal(kk, (3, 3, c, c))
                grad = jax.grad(lambda k, x: jnp.mean(fn(x, k, 1) ** 2), argnums=(0, 1))

                def body(_, carry):
                    kernel, x = carry
                    g_kernel, g_x = grad(kernel, x)
                    return kernel - 1e-3 * g_kernel, x - 1e-3 * g_x

                return jax.lax.fori_loop(0, iterations, body, (kernel, x))

            return run

        def finish(compile_s, run_s, _):
            return {
                "map": m,
                "batch": b,
                "channels": c,
                "kernel": 3,
                "padding": 1,
                "iterations": iterations,
                "impl": impl,
                "compile_s": compile_s,
                "run_s": run_s,
                "us_per_call": 1e6 * run_s / iterations,
            }

        return Program(f"{m}x{m}|B={b}|C={c}|{impl}|iterations={iterations}", build, finish, repeats)

    yield from measure_programs(ctx, [program(m, b, i) for m in p["maps"] for b in p["batches"] for i in impls])


def render_conv(rows: list[dict]) -> str:
    """Returns the convolution table: µs per forward+backward call of each implementation and their ratio."""
    cells: dict[tuple, dict[str, float]] = {}
    for r in rows:
        cells.setdefault((r["map"], r["batch"], r["channels"]), {})[r["impl"]] = r["us_per_call"]
    lines = [
        "| map | batch | channels | XLA conv µs/call | im2col µs/call | im2col / XLA |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for (m, b, c), t in cells.items():
        native, im2col = t.get("native"), t.get("im2col")
        ratio = im2col / native if native and im2col else None
        lines.append(f"| {m}×{m} | {b} | {c} | {_num(native)} | {_num(im2col)} | {_num(ratio, '.2f')} |")
    return _common(rows, ("iterations", "repeats")) + "\n".join(lines)
