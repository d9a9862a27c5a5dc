"""Sample-efficiency sweeps: the BabyAI paper's data-efficiency protocol (seed 004 §4.2) as functions.

**Imitation** (``bc_sample_efficiency``). ``num_seeds`` models are trained on the full dataset, ``vmap``ped
over seeds in one program, until one of them reaches the success threshold on the validation episodes (checked
after every epoch); the updates that took are ``T_min``. Then the first ``n`` demonstrations, for ``n`` on a
grid shrinking by ``factor`` (√2) from the full size, are each trained by ``num_seeds`` models for ``2 T_min``
updates. A size is *solved* when at least one model reaches the threshold at a validation (every epoch and
after the last update), as in the paper ("in at least 1 run out of 3"). The sweep stops at the first unsolved
size; the smallest solved size ``k`` gives the bracket ``[k / factor, k]`` that holds the minimum number of
demonstrations. ``T_min`` is taken from the first model to cross (consistent with that criterion).

**Reinforcement learning** (``rl_sample_efficiency``). ``num_seeds`` PPO (or A2C) runs, ``vmap``ped over
seeds; the success rate of the episodes that ended in each update is smoothed by a centred rolling mean over
``window`` updates (the reference's ``scripts/rl_dataeff.py``: pandas ``rolling(window, center=True)``, NaN
where the window is incomplete or holds an update without episodes), and the episodes needed by a run are
the episodes that ended up to the first update whose smoothed rate reaches the threshold. The paper reports
the minimum and maximum over runs.

``write_report`` writes ``sweep.json``, ``sweep.md`` (a table per level, with the paper's numbers where it
has them) and ``sweep.png``; ``jaxsoc sweep {bc,rl}`` runs a sweep over several levels from the command line.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from tqdm.auto import tqdm

import jaxsoc
from jaxsoc.data.memory import MemoryDemos
from jaxsoc.learners.bc import (
    BCConfig,
    BCLearner,
    epoch_indices,
    load_training_demos,
    make_batch,
    make_learner,
    mission_width,
    padded_length,
)
from jaxsoc.learners.evaluate import evaluate
from jaxsoc.learners.ppo import PPOConfig, Trainer, trainer_for

SQRT2 = math.sqrt(2.0)
#: the paper's Table 3, thousands of demonstrations (IL from the bot, a ``[k/√2, k]`` bracket) and of episodes
#: (RL, minimum and maximum over runs) to reach 99% success
PAPER_IL = {
    "GoToRedBallGrey": (5.7, 8.0),
    "GoToRedBall": (44.2, 62.5),
    "GoToLocal": (125.2, 177.0),
    "PickupLoc": (250.0, 354.0),
    "PutNextLocal": (354.0, 500.0),
    "GoTo": (250.0, 354.0),
}
PAPER_RL = {
    "GoToRedBallGrey": (377.0, 379.0),
    "GoToRedBall": (453.0, 470.0),
    "GoToLocal": (1167.0, 1320.0),
    "PickupLoc": (2591.0, 2608.0),
    "PutNextLocal": (1875.0, 2587.0),
    "GoTo": (1057.0, 2177.0),
}


def _level(env_id: str) -> str:
    return env_id.removeprefix("BabyAI-").removesuffix("-v0")


def size_grid(full: int, smallest: int = 1, factor: float = SQRT2) -> list[int]:
    """Returns the dataset sizes ``round(full / factor**i)``, ``i = 0, 1, ...``, down to ``smallest``
    (duplicates after rounding dropped): ``size_grid(1_000_000)`` holds 707,107, 500,000, 353,553, 250,000 ...

    Raises:
        ValueError: ``full < smallest``, ``smallest < 1`` or ``factor <= 1``.
    """
    if smallest < 1 or full < smallest or not factor > 1:
        raise ValueError(f"need 1 <= smallest <= full and factor > 1, got {full=}, {smallest=}, {factor=}")
    sizes, i = [], 0
    while (n := round(full / factor**i)) >= smallest:
        if not sizes or n < sizes[-1]:
            sizes.append(n)
        i += 1
    return sizes


def smoothed_success(success_rate: np.ndarray, window: int) -> np.ndarray:
    """Returns ``float64[U]``: the centred rolling mean of ``success_rate[U]`` over ``window`` updates
    (pandas' ``rolling(window, center=True).mean()``: update ``i`` averages ``[i - window // 2, i - window // 2
    + window)``), NaN where that window leaves ``[0, U)`` or holds a NaN."""
    if window < 1:
        raise ValueError(f"window must be positive, got {window}")
    rates = np.asarray(success_rate, np.float64)
    out = np.full(len(rates), np.nan)
    if len(rates) >= window:
        # window sums (a NaN inside makes its sum NaN), label i = first index + window // 2
        means = np.convolve(rates, np.ones(window), "valid") / window
        out[window // 2 : window // 2 + len(means)] = means
    return out


def episodes_to_threshold(success_rate: np.ndarray, episodes: np.ndarray, window: int, threshold: float) -> int | None:
    """Returns the episodes that ended up to and including the first update whose smoothed success rate
    (``smoothed_success``) reaches ``threshold``, or ``None`` if none does. ``success_rate[U]`` and
    ``episodes[U]`` are per update (not cumulative)."""
    smooth = smoothed_success(success_rate, window)
    hits = np.flatnonzero(smooth >= threshold)
    return None if len(hits) == 0 else int(np.sum(np.asarray(episodes)[: hits[0] + 1]))


def bracket(rows: list[dict[str, Any]], factor: float = SQRT2) -> dict[str, Any]:
    """Returns ``{"k", "bracket", "closed"}`` for sweep rows (``demos``, ``solved``) in decreasing size: ``k``
    the smallest solved size reached before the first unsolved one, ``bracket`` ``[k / factor, k]``, and
    ``closed`` whether a smaller size was tried and failed (otherwise the lower end is not established).
    ``k`` is ``None`` when the full size is not solved."""
    k, closed = None, False
    for row in rows:
        if not row["solved"]:
            closed = k is not None
            break
        k = row["demos"]
    return {"k": k, "bracket": None if k is None else [k / factor, k], "closed": closed}


# -- imitation ---------------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=8)
def _seeded(learner: BCLearner) -> tuple[Callable, Callable]:
    return jax.jit(jax.vmap(learner.init)), jax.jit(jax.vmap(learner.update))


def train_bc_seeds(
    config: BCConfig,
    demos: MemoryDemos,
    num_seeds: int,
    max_updates: int,
    *,
    max_len: int | None = None,
    width: int | None = None,
    stop_when_solved: bool = True,
    progress: bool = True,
) -> dict[str, Any]:
    """Trains ``num_seeds`` models (seeds ``config.seed + s``) on ``demos`` for up to ``max_updates`` updates,
    ``vmap``ped over seeds, validating each after every epoch and after the last update.

    Each seed draws its own epochs (``epoch_indices`` with its seed), as ``train_bc`` with that seed would.

    Args:
        config: the recipe (its ``success_threshold``, ``val_episodes`` and ``val_seed`` drive validation).
        demos: the training demonstrations.
        num_seeds: models trained at once.
        max_updates: the update budget.
        max_len, width: the padded length and mission width (defaults from ``demos``; pass the full
            dataset's to share one compiled update across sizes).
        stop_when_solved: stop at the first validation where any seed reaches the threshold.
        progress: show a progress bar over updates.

    Returns:
        ``{"updates": int[V], "success": float[S][V], "solved_at": [int | None] * S, "variables", "width"}``:
        the update count of each validation, every seed's validation success rates, per seed the update count
        of its first validation at or above the threshold, the final variables (numpy, leading axis ``S``) and
        the mission width used.
    """
    if num_seeds < 1 or max_updates < 1:
        raise ValueError(f"num_seeds and max_updates must be positive, got {num_seeds}, {max_updates}")
    env, env_params = jaxsoc.make(config.env_id)
    episodes, count = demos.episodes, demos.num_episodes
    batch_size = min(config.batch_size, count)
    updates_per_epoch = config.epoch_length // batch_size
    max_len = max_len or padded_length(config, demos)
    width = width or mission_width(episodes["mission"])
    learner = make_learner(config, updates_per_epoch)
    init, update = _seeded(learner)
    seeds = [config.seed + s for s in range(num_seeds)]
    states = init(jax.vmap(jax.random.key)(jnp.asarray(seeds, jnp.uint32)))
    updates, success, solved_at = [], [[] for _ in seeds], [None] * num_seeds
    bar = tqdm(total=max_updates, unit="update", desc=f"{num_seeds} seeds x {count} demos", disable=not progress)
    with bar:
        for u in range(max_updates):
            epoch, b = divmod(u, updates_per_epoch)
            if b == 0:
                ids = [epoch_indices(count, config.epoch_length, epoch, seed) for seed in seeds]
            batches = [make_batch(episodes, i[b * batch_size : (b + 1) * batch_size], max_len, width) for i in ids]
            states, _ = update(states, {k: np.stack([x[k] for x in batches]) for k in batches[0]})
            bar.update(1)
            if b + 1 < updates_per_epoch and u + 1 < max_updates:
                continue
            updates.append(u + 1)
            variables = learner.variables(states)
            for s in range(num_seeds):
                one = jax.tree.map(lambda x, s=s: x[s], variables)
                rate = evaluate(
                    env, env_params, learner.model, one, config.val_episodes, config.val_seed, greedy=True
                ).summary()["success_rate"]
                success[s].append(rate)
                if solved_at[s] is None and rate >= config.success_threshold:
                    solved_at[s] = u + 1
            bar.set_postfix(best=f"{max(max(r) for r in success):.3f}")
            if stop_when_solved and any(x is not None for x in solved_at):
                break
    variables = jax.device_get(learner.variables(states))
    return {"updates": updates, "success": success, "solved_at": solved_at, "variables": variables, "width": width}


def bc_sample_efficiency(
    config: BCConfig,
    data: Any,
    *,
    num_seeds: int = 3,
    full_demos: int | None = None,
    min_demos: int = 1,
    factor: float = SQRT2,
    max_updates: int | None = None,
    train_seeds: Callable[..., dict[str, Any]] = train_bc_seeds,
    on_row: Callable[[dict[str, Any]], None] | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Runs the imitation protocol (module docstring) on one level.

    Args:
        config: the BC recipe (``config.success_threshold`` is the 99% criterion).
        data: a dataset directory, ``DemoDataset`` or ``MemoryDemos``; sizes take its first episodes.
        num_seeds: models per size.
        full_demos: the full size (all of ``data`` when ``None``).
        min_demos: the smallest size tried.
        factor: the grid's ratio.
        max_updates: the budget of the full-size runs (default ``config.max_epochs`` epochs).
        train_seeds: the trainer (``train_bc_seeds``'s signature; replaceable in tests).
        on_row: called with the result so far (the return value's layout) after every size, e.g. to write
            a partial report that survives an interrupted sweep.
        progress: progress bars.

    Returns:
        ``{"env_id", "kind": "bc", "num_seeds", "factor", "threshold", "t_min", "rows", "k", "bracket",
        "closed"}``; ``rows`` one dict per size tried (``demos``, ``updates`` budget, ``solved``,
        ``seeds_solved``, ``best_success`` per seed, ``solved_at`` per seed); ``t_min`` is ``None`` (and the
        sweep stops) when no full-size run reaches the threshold within ``max_updates``.
    """
    demos = load_training_demos(config, data, full_demos)
    full = demos.num_episodes
    shape = {"max_len": padded_length(config, demos), "width": mission_width(demos.episodes["mission"])}
    budget = max_updates or config.max_epochs * (config.epoch_length // min(config.batch_size, full))
    out = {"env_id": config.env_id, "kind": "bc", "num_seeds": num_seeds, "factor": factor}
    out.update(threshold=config.success_threshold, config=config.to_dict(), rows=[])

    def row(n: int, result: dict[str, Any], budget: int) -> dict[str, Any]:  # JSON-able, no variables
        hits = [x for x in result["solved_at"] if x is not None]
        return {
            "demos": n,
            "updates": budget,
            "solved": bool(hits),
            "seeds_solved": len(hits),
            "best_success": [max(r) for r in result["success"]],
            "solved_at": result["solved_at"],
        }

    def add(n: int, result: dict[str, Any], budget: int) -> bool:
        out["rows"].append(row(n, result, budget))
        out.update(bracket(out["rows"], factor))
        if on_row is not None:
            on_row(out)
        return out["rows"][-1]["solved"]

    first = train_seeds(config, demos, num_seeds, budget, progress=progress, **shape)
    hits = [x for x in first["solved_at"] if x is not None]
    out["t_min"] = min(hits) if hits else None
    if add(full, first, budget):
        for n in size_grid(full, min_demos, factor)[1:]:
            result = train_seeds(
                config, demos.take(np.arange(n)), num_seeds, 2 * out["t_min"], progress=progress, **shape
            )
            if not add(n, result, 2 * out["t_min"]):
                break
    return out


# -- reinforcement learning ----------------------------------------------------------------------------------
@functools.partial(jax.jit, static_argnums=(0, 2))
def _run_seeds(trainer: Trainer, runners: Any, num_updates: int) -> tuple[Any, dict[str, jax.Array]]:
    def run(runner):
        return jax.lax.scan(lambda r, _: trainer.update(r), runner, None, length=num_updates)

    return jax.vmap(run)(runners)


def rl_sample_efficiency(
    config: PPOConfig,
    *,
    num_seeds: int = 3,
    window: int = 100,
    threshold: float = 0.99,
    seed: int = 0,
    chunk_updates: int = 50,
    progress: bool = True,
) -> dict[str, Any]:
    """Runs the RL protocol (module docstring) on ``config.env_id``: ``num_seeds`` runs of ``config``
    (``pool_resets`` turned off for ``vmap``), keys ``fold_in(key(seed), s)``, for at most
    ``config.total_frames`` frames each, stopping once every run has reached the threshold.

    Returns:
        ``{"env_id", "kind": "rl", "num_seeds", "window", "threshold", "episodes_needed": [int | None] * S,
        "min", "max" (over runs that reached it, ``None`` if none), "updates", "frames", "curves"}``;
        ``curves`` holds per run the per-update ``success_rate`` and ``episodes`` lists (NaN as ``None``).
    """
    if num_seeds < 1 or window < 1 or not 0 < threshold <= 1 or chunk_updates < 1:
        raise ValueError(f"bad sweep settings: {num_seeds=}, {window=}, {threshold=}, {chunk_updates=}")
    config = dataclasses.replace(config, pool_resets=False)
    trainer = trainer_for(config)
    keys = jax.vmap(lambda s: jax.random.fold_in(jax.random.key(seed), s))(jnp.arange(num_seeds))
    runners = jax.jit(jax.vmap(trainer.init))(keys)
    rates = np.zeros((num_seeds, 0))
    counts = np.zeros((num_seeds, 0), np.int64)
    needed: list[int | None] = [None] * num_seeds
    total, done = config.num_updates, 0
    bar = tqdm(total=total, unit="update", desc=f"RL {config.env_id} x{num_seeds}", disable=not progress)
    with bar:
        while done < total and any(x is None for x in needed):
            size = min(chunk_updates, total - done)
            runners, metrics = _run_seeds(trainer, runners, size)
            metrics = jax.device_get(metrics)
            rates = np.concatenate([rates, np.asarray(metrics["success_rate"], np.float64)], axis=1)
            counts = np.concatenate([counts, np.asarray(metrics["episodes"], np.int64)], axis=1)
            done += size
            needed = [episodes_to_threshold(rates[s], counts[s], window, threshold) for s in range(num_seeds)]
            bar.update(size)
            bar.set_postfix(reached=sum(x is not None for x in needed), rate=f"{np.nanmean(rates[:, -size:]):.3f}")
    reached = [x for x in needed if x is not None]
    curves = [
        {"success_rate": [None if math.isnan(x) else x for x in rates[s]], "episodes": counts[s].tolist()}
        for s in range(num_seeds)
    ]
    return {
        "env_id": config.env_id,
        "kind": "rl",
        "num_seeds": num_seeds,
        "window": window,
        "threshold": threshold,
        "config": dataclasses.asdict(config),
        "episodes_needed": needed,
        "min": min(reached) if reached else None,
        "max": max(reached) if reached else None,
        "updates": done,
        "frames": done * config.frames_per_update,
        "curves": curves,
    }


# -- report --------------------------------------------------------------------------------------------------
def _thousands(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x / 1000:,.1f}" if x >= 10_000 else f"{x / 1000:.3g}"


def report_table(results: list[dict[str, Any]]) -> str:
    """Returns a markdown summary of sweep results (thousands of demonstrations or episodes, as the paper's
    Table 3), one row per level, with the paper's figures where it has them."""
    if not results:
        return ""
    if results[0]["kind"] == "bc":
        lines = [
            "| level | T_min (updates) | sizes tried | k | bracket [k/√2, k] | closed | paper |",
            "|---|---:|---:|---:|---|---|---|",
        ]
        for r in results:
            paper = PAPER_IL.get(_level(r["env_id"]))
            lo_hi = "—" if r["bracket"] is None else f"{_thousands(r['bracket'][0])}–{_thousands(r['bracket'][1])}"
            lines.append(
                f"| {_level(r['env_id'])} | {r['t_min'] if r['t_min'] is not None else 'not reached'} | "
                f"{len(r['rows'])} | {_thousands(r['k'])} | {lo_hi} | {'yes' if r['closed'] else 'no'} | "
                f"{'—' if paper is None else f'{paper[0]}–{paper[1]}'} |"
            )
        lines += ["", "| level | demos | updates | seeds solved | best success per seed |", "|---|---:|---:|---:|---|"]
        for r in results:
            for row in r["rows"]:
                best = ", ".join(f"{x:.3f}" for x in row["best_success"])
                lines.append(
                    f"| {_level(r['env_id'])} | {row['demos']} | {row['updates']} | "
                    f"{row['seeds_solved']}/{len(row['best_success'])} | {best} |"
                )
        return "\n".join(lines) + "\n"
    lines = [
        "| level | runs | frames per run | episodes needed per run | min–max | paper |",
        "|---|---:|---:|---|---|---|",
    ]
    for r in results:
        paper = PAPER_RL.get(_level(r["env_id"]))
        per_run = ", ".join(_thousands(x) for x in r["episodes_needed"])
        lines.append(
            f"| {_level(r['env_id'])} | {r['num_seeds']} | {r['frames']:,} | {per_run} | "
            f"{_thousands(r['min'])}–{_thousands(r['max'])} | {'—' if paper is None else f'{paper[0]}–{paper[1]}'} |"
        )
    return "\n".join(lines) + "\n"


def plot_results(results: list[dict[str, Any]], path: str | Path) -> Path:
    """Writes a PNG with one panel per level: for BC the best validation success of every seed against the
    dataset size (log scale), for RL every run's smoothed success rate against episodes; the threshold as a
    dashed line. Returns the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(4.5 * len(results), 3.4), squeeze=False)
    for ax, r in zip(axes[0], results):
        if r["kind"] == "bc":
            sizes = [row["demos"] for row in r["rows"]]
            for s in range(r["num_seeds"]):
                ax.plot(sizes, [row["best_success"][s] for row in r["rows"]], "o-", ms=3, lw=1, label=f"seed {s}")
            ax.set_xscale("log")
            ax.set_xlabel("demonstrations")
            ax.set_ylabel("best validation success")
        else:
            for s, curve in enumerate(r["curves"]):
                rates = np.array([np.nan if x is None else x for x in curve["success_rate"]])
                ax.plot(np.cumsum(curve["episodes"]), smoothed_success(rates, r["window"]), lw=1, label=f"run {s}")
            ax.set_xlabel("episodes")
            ax.set_ylabel(f"success rate (rolling {r['window']})")
        ax.axhline(r["threshold"], ls="--", color="grey", lw=0.8)
        ax.set_title(_level(r["env_id"]), fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


def write_report(results: list[dict[str, Any]], out_dir: str | Path) -> dict[str, Path]:
    """Writes ``sweep.json`` (the results), ``sweep.md`` (``report_table``) and ``sweep.png``
    (``plot_results``) into ``out_dir``; returns their paths by kind."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "sweep.json", "md": out / "sweep.md", "png": out / "sweep.png"}
    paths["json"].write_text(json.dumps(results, indent=1) + "\n")
    paths["md"].write_text(report_table(results))
    if results:
        plot_results(results, paths["png"])
    return paths
