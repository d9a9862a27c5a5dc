"""Sample-efficiency sweeps: the BabyAI paper's data-efficiency protocol (seed 004 §4.2) as functions, measured
as the reference's analysis scripts measure it.

**Imitation** (``bc_sample_efficiency``; the reference's ``scripts/il_dataeff.py`` and ``min_num_samples`` in
``babyai/plotting.py``). Every model is validated after every epoch; its curve is the *centred* rolling mean
of ``window`` consecutive validation success rates (pandas ``rolling(window, center=True).mean()``: the value
at validation ``i`` averages validations ``i - window // 2`` to ``i + (window - 1) // 2``, NaN where that
span leaves the run; ``window=10`` as the reference's documented ``il_dataeff.py --window 10``, "results of
10 subsequent validations are averaged"; the script's own default is 1). A model *solves* at the first
validation whose rolling mean is strictly above the threshold (``> 0.99``); its ``T`` is that validation's
update count (the centre of the window, as the reference labels it).

1. ``num_seeds`` models train on the full dataset (``vmap``ped over seeds) until every one has solved (or
   the budget ends); ``T_min`` is the **mean over seeds** of their ``T`` (the reference averages the runs
   with the most demonstrations and gives up when one of them has not solved).
2. The size budget is ``ceil(2 T_min)`` updates (``bc_budget``): the reference's normal time is
   ``mean(patience * T + 1)`` with ``patience=2`` and it admits validations with update counts strictly
   below it, i.e. up to ``ceil(2 T_min)``.
3. The first ``n`` demonstrations, for ``n`` on a grid shrinking by ``factor`` (√2) from the full size, are
   each trained by ``num_seeds`` models; a size is *solved* when at least one model's rolling mean at a
   validation within the budget is above the threshold (the paper's "at least 1 run out of 3"; the
   reference's ``max_within_normal_time > 0.99`` per model). The centred window of a validation near the end
   of the budget reaches ``(window - 1) // 2`` validations beyond it (the reference's runs go on past the
   normal time and are cut when analysed), so every run trains that many epochs past its budget; those
   extra validations only complete windows, they are never labels themselves.
4. The sweep stops at the first unsolved size; the smallest solved size ``k`` gives the bracket
   ``[k / factor, k]`` (the paper's Table 3; the reference's script fits a Gaussian process instead).

Differences from the reference: time is counted in parameter updates (the paper's unit; ``il_dataeff.py``
defaults to ``--limit frames``, demonstration frames seen, which grows with updates at a fixed batch size).

**Reinforcement learning** (``rl_sample_efficiency``; the reference's ``scripts/train_rl.py`` logging and
``scripts/rl_dataeff.py``). ``num_seeds`` PPO (or A2C) runs, ``vmap``ped over seeds. Their per-update
episode counts are turned into the rows the reference logs (``log_rows``): a row every ``log_interval`` (10)
updates, whose success rate is over the episodes that ended in that update and, when fewer than
``min_episodes`` (64, the reference's number of processes) did, over whole earlier updates until at least
``min_episodes`` are covered (the reference keeps the ``max(episodes ended, 64)`` most recent episodes,
``babyai/rl/algos/base.py``; jaxsoc counts episodes per update, not their order inside one, so it takes whole
updates); before that many episodes have ended at all the missing ones count as failures (the reference's
episode list starts as 64 zero returns). The rows' success rates are smoothed by the centred rolling mean
over ``window`` **rows** (NaN where incomplete; the family reference's ``rl_window``: for BabyAI 100 rows, 10
for GoToRedBallGrey, as the reference's ``EXPERIMENTS.md``), so a window spans ``window * log_interval`` updates
as in the reference, and the episodes needed by a run are the episodes ended up to the first row whose smoothed
rate is ``>= 0.99`` (``rl_dataeff.py``: ``df[smoothed >= 0.99].iloc[0].episodes``; runs that never get there are
left out). The paper reports the minimum and maximum over runs (``rl_dataeff.py`` of 1.1 prints ``mean ± 2.576 std``;
the mean is reported too).

**The family's reference** (``sweep_reference.SweepReference``, ``reference_for``). What is specific to a family's
levels — the published figures the report lists beside the measured ones, the short level names of its tables,
the default RL window per level and the architecture of the published RL figures — is not here: the family of an
env id holds it as ``REFERENCE`` in its ``learners/<family>/sweeps.py`` (``sweep_reference`` says how it is
found); ids of a family without one get ``SweepReference()`` (the id without ``-v0``, a window of ``RL_WINDOW``
rows, the config's architecture, no published columns). The grid family's (``learners/babyai/sweeps.py``) holds
the paper's Table 3 and the BabyAI 1.1 figures; its RL figures were measured with the ICLR19 model
(``arch="original"``), so the RL sweep runs that architecture there unless told otherwise and records which one
it ran.

``write_report`` writes ``sweep.json``, ``sweep.md`` (a table per level, with the reference's numbers where
known) and ``sweep.png``; ``jaxsoc sweep {bc,rl}`` runs a sweep over several levels from the command line.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Callable, Sequence
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
from jaxsoc.learners.networks import preset
from jaxsoc.learners.ppo import PPOConfig, trainer_for
from jaxsoc.learners.run_log import save_figure
from jaxsoc.learners.sweep_reference import (  # noqa: F401 (the protocol's names)
    RL_WINDOW,
    Column,
    SweepReference,
    reference_for,
    rl_window,
)

SQRT2 = math.sqrt(2.0)
#: ``il_dataeff.py --window`` of the reference's documented runs (validations)
BC_WINDOW = 10
#: the reference's ``train_rl.py --log-interval`` (updates per logged row) and its number of processes (the
#: fewest recent episodes a row covers)
LOG_INTERVAL = 10
MIN_EPISODES = 64
#: ``rl_sample_efficiency``'s default ``arch``: the family reference's ``rl_arch``
REFERENCE_ARCH = "reference"


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
    """Returns ``float64[U]``: the centred rolling mean of ``success_rate[U]`` over ``window`` entries
    (pandas' ``rolling(window, center=True).mean()``: entry ``i`` averages ``[i - window // 2, i - window // 2
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


# -- imitation bookkeeping -----------------------------------------------------------------------------------------
def seed_summary(
    updates: Sequence[int], success: Sequence[float], window: int, threshold: float, budget: int | None = None
) -> dict[str, Any]:
    """Returns one model's verdict from its validations (``success[i]`` after ``updates[i]`` updates), the
    reference's ``min_num_samples``: ``solved_at``, the update count of the first validation within ``budget``
    (``updates <= budget``; all when ``None``) whose centred rolling mean over ``window`` validations
    (``smoothed_success``) is strictly above ``threshold`` (``None`` if none), ``best_smoothed``, the largest
    such rolling mean within the budget (``None`` where no window is complete), and ``best_success``, the best
    single validation within the budget (``None`` without one)."""
    updates, success = np.asarray(updates, np.int64), np.asarray(success, np.float64)
    if updates.shape != success.shape:
        raise ValueError(f"{len(updates)} update counts for {len(success)} validations")
    smooth = smoothed_success(success, window)
    within = np.ones(len(updates), bool) if budget is None else updates <= budget
    hits = np.flatnonzero(within & (smooth > threshold))
    complete = smooth[within & ~np.isnan(smooth)]
    return {
        "solved_at": int(updates[hits[0]]) if len(hits) else None,
        "best_smoothed": float(complete.max()) if len(complete) else None,
        "best_success": float(success[within].max()) if within.any() else None,
    }


def bc_budget(t_per_seed: Sequence[int], patience: int = 2) -> int:
    """Returns the update budget of the smaller datasets: ``ceil(patience * mean(T))`` over the full-size
    models' ``T``. The reference keeps the validations with update counts ``< mean(patience * T + 1)``, i.e.
    (counts being whole) up to ``ceil(patience * mean(T))``: seeds with ``T`` 10, 20, 30 give 40."""
    if not t_per_seed or min(t_per_seed) < 1 or patience < 1:
        raise ValueError(f"need positive T per seed and patience, got {list(t_per_seed)}, {patience}")
    return -(-patience * sum(t_per_seed) // len(t_per_seed))  # exact ceil of patience * mean


def lookahead(window: int) -> int:
    """Returns the validations a centred window of ``window`` reaches past its label: ``(window - 1) // 2``."""
    return (window - 1) // 2


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


# -- imitation training ----------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=8)
def _seeded(learner: BCLearner) -> tuple[Callable, Callable]:
    return jax.jit(jax.vmap(learner.init)), jax.jit(jax.vmap(learner.update))


STOPS = ("any", "all", "never")


def train_bc_seeds(
    config: BCConfig,
    demos: MemoryDemos,
    num_seeds: int,
    max_updates: int,
    *,
    window: int = 1,
    stop_when: str = "any",
    max_len: int | None = None,
    width: int | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Trains ``num_seeds`` models (seeds ``config.seed + s``) on ``demos`` with a budget of ``max_updates``
    updates, ``vmap``ped over seeds, validating each after every epoch and after the last update.

    The run goes ``lookahead(window)`` epochs past the budget, so that the centred rolling mean of every
    validation within the budget is complete (``seed_summary``). Each seed draws its own epochs
    (``epoch_indices`` with its seed), as ``train_bc`` with that seed would.

    Args:
        config: the recipe (its ``success_threshold``, ``val_episodes`` and ``val_seed`` drive validation).
        demos: the training demonstrations.
        num_seeds: models trained at once.
        max_updates: the update budget (the validations that count are within it).
        window: validations in the rolling mean.
        stop_when: stop once ``"any"`` or ``"all"`` seeds have solved within the budget (``seed_summary``), or
            ``"never"``.
        max_len, width: the padded length and mission width (defaults from ``demos``; pass the full
            dataset's to share one compiled update across sizes).
        progress: show a progress bar over updates.

    Returns:
        ``{"updates": int[V], "success": float[S][V], "solved_at": [int | None] * S, "variables", "width"}``:
        the update count of each validation, every seed's validation success rates, per seed
        ``seed_summary``'s ``solved_at``, the final variables (numpy, leading axis ``S``) and the mission width
        used.
    """
    if num_seeds < 1 or max_updates < 1 or window < 1 or stop_when not in STOPS:
        raise ValueError(f"bad settings: {num_seeds=}, {max_updates=}, {window=}, {stop_when=} (one of {STOPS})")
    env, env_params = jaxsoc.make(config.env_id)
    episodes, count = demos.episodes, demos.num_episodes
    batch_size = min(config.batch_size, count)
    updates_per_epoch = config.epoch_length // batch_size
    total = max_updates + lookahead(window) * updates_per_epoch
    max_len = max_len or padded_length(config, demos)
    width = width or mission_width(episodes["mission"])
    learner = make_learner(config, updates_per_epoch)
    init, update = _seeded(learner)
    seeds = [config.seed + s for s in range(num_seeds)]
    states = init(jax.vmap(jax.random.key)(jnp.asarray(seeds, jnp.uint32)))
    updates, success = [], [[] for _ in seeds]

    def solved_at() -> list[int | None]:
        return [
            seed_summary(updates, rates, window, config.success_threshold, max_updates)["solved_at"]
            for rates in success
        ]

    bar = tqdm(total=total, unit="update", desc=f"{num_seeds} seeds x {count} demos", disable=not progress)
    with bar:
        for u in range(total):
            epoch, b = divmod(u, updates_per_epoch)
            if b == 0:
                ids = [epoch_indices(count, config.epoch_length, epoch, seed) for seed in seeds]
            batches = [make_batch(episodes, i[b * batch_size : (b + 1) * batch_size], max_len, width) for i in ids]
            states, _ = update(states, {k: np.stack([x[k] for x in batches]) for k in batches[0]})
            bar.update(1)
            if b + 1 < updates_per_epoch and u + 1 < total:
                continue
            updates.append(u + 1)
            variables = learner.variables(states)
            for s in range(num_seeds):
                one = jax.tree.map(lambda x, s=s: x[s], variables)
                rate = evaluate(
                    env, env_params, learner.model, one, config.val_episodes, config.val_seed, greedy=True
                ).summary()["success_rate"]
                success[s].append(rate)
            bar.set_postfix(last=f"{max(r[-1] for r in success):.3f}")
            solved = [x is not None for x in solved_at()]
            if (stop_when == "any" and any(solved)) or (stop_when == "all" and all(solved)):
                break
    variables = jax.device_get(learner.variables(states))
    return {"updates": updates, "success": success, "solved_at": solved_at(), "variables": variables, "width": width}


def bc_row(demos: int, budget: int, result: dict[str, Any], window: int, threshold: float) -> dict[str, Any]:
    """Returns a sweep row (JSON-able) for one size from a trainer's ``updates`` and ``success``: ``demos``,
    ``updates`` (the budget), ``solved`` (a seed solved within it), ``seeds_solved``, per seed ``solved_at``,
    ``best_smoothed`` and ``best_success`` (``seed_summary``), ``validations`` and ``trained`` (updates run,
    the look-ahead included)."""
    per_seed = [seed_summary(result["updates"], rates, window, threshold, budget) for rates in result["success"]]
    hits = [s["solved_at"] for s in per_seed if s["solved_at"] is not None]
    return {
        "demos": demos,
        "updates": budget,
        "solved": bool(hits),
        "seeds_solved": len(hits),
        "solved_at": [s["solved_at"] for s in per_seed],
        "best_smoothed": [s["best_smoothed"] for s in per_seed],
        "best_success": [s["best_success"] for s in per_seed],
        "validations": len(result["updates"]),
        "trained": int(result["updates"][-1]) if len(result["updates"]) else 0,
    }


def bc_sample_efficiency(
    config: BCConfig,
    data: Any,
    *,
    num_seeds: int = 3,
    full_demos: int | None = None,
    min_demos: int = 1,
    factor: float = SQRT2,
    window: int = BC_WINDOW,
    patience: int = 2,
    max_updates: int | None = None,
    train_seeds: Callable[..., dict[str, Any]] = train_bc_seeds,
    on_row: Callable[[dict[str, Any]], None] | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Runs the imitation protocol (module docstring) on one level.

    Args:
        config: the BC recipe (``config.success_threshold`` is the 99% criterion, crossed strictly).
        data: a dataset directory, ``DemoDataset`` or ``MemoryDemos``; sizes take its first episodes.
        num_seeds: models per size.
        full_demos: the full size (all of ``data`` when ``None``).
        min_demos: the smallest size tried.
        factor: the grid's ratio.
        window: validations in the centred rolling mean (10 as the reference's runs).
        patience: the smaller sizes' budget is ``ceil(patience * T_min)`` (``bc_budget``; 2 in the paper).
        max_updates: the budget of the full-size runs (default ``config.max_epochs`` epochs).
        train_seeds: the trainer (``train_bc_seeds``'s signature; replaceable in tests).
        on_row: called with the result so far (the return value's layout) after every size, e.g. to write
            a partial report that survives an interrupted sweep.
        progress: progress bars.

    Returns:
        ``{"env_id", "kind": "bc", "num_seeds", "factor", "window", "patience", "threshold", "t_per_seed",
        "t_min", "budget", "rows", "k", "bracket", "closed"}``; ``rows`` one ``bc_row`` per size tried;
        ``t_per_seed`` the full-size models' ``T`` (``None`` where one did not solve), ``t_min`` their mean and
        ``budget`` the smaller sizes' (both ``None``, and the sweep stops, unless every full-size model solved
        within ``max_updates``).
    """
    if num_seeds < 1 or window < 1 or patience < 1:
        raise ValueError(f"num_seeds, window and patience must be positive, got {num_seeds}, {window}, {patience}")
    demos = load_training_demos(config, data, full_demos)
    full = demos.num_episodes
    shape = {"max_len": padded_length(config, demos), "width": mission_width(demos.episodes["mission"])}
    first_budget = max_updates or config.max_epochs * (config.epoch_length // min(config.batch_size, full))
    threshold = config.success_threshold
    out = {"env_id": config.env_id, "kind": "bc", "num_seeds": num_seeds, "factor": factor, "window": window}
    out.update(patience=patience, threshold=threshold, config=config.to_dict(), rows=[])

    def add(n: int, result: dict[str, Any], budget: int) -> bool:
        out["rows"].append(bc_row(n, budget, result, window, threshold))
        out.update(bracket(out["rows"], factor))
        if on_row is not None:
            on_row(out)
        return out["rows"][-1]["solved"]

    def train(n: int, budget: int, stop_when: str) -> dict[str, Any]:
        subset = demos if n == full else demos.take(np.arange(n))
        return train_seeds(
            config, subset, num_seeds, budget, window=window, stop_when=stop_when, progress=progress, **shape
        )

    first = train(full, first_budget, "all")
    t_per_seed = [
        seed_summary(first["updates"], r, window, threshold, first_budget)["solved_at"] for r in first["success"]
    ]
    every = all(t is not None for t in t_per_seed)
    out.update(
        t_per_seed=t_per_seed,
        t_min=sum(t_per_seed) / num_seeds if every else None,
        budget=bc_budget(t_per_seed, patience) if every else None,
    )
    if add(full, first, first_budget) and every:
        for n in size_grid(full, min_demos, factor)[1:]:
            if not add(n, train(n, out["budget"], "any"), out["budget"]):
                break
    return out


# -- reinforcement learning bookkeeping ---------------------------------------------------------------------------
def log_rows(
    success_rate: np.ndarray,
    episodes: np.ndarray,
    log_interval: int = LOG_INTERVAL,
    min_episodes: int = MIN_EPISODES,
) -> dict[str, np.ndarray]:
    """Returns the rows the reference's ``train_rl.py`` would log for a run whose update ``t`` (1-based) ended
    ``episodes[t - 1]`` episodes with success rate ``success_rate[t - 1]`` (NaN or anything where none ended).

    A row is logged after every ``log_interval``-th update ``t``. Its success rate is over the episodes that
    ended in update ``t`` and, while they are fewer than ``min_episodes``, in whole earlier updates too (back
    to the latest start that covers ``min_episodes``); when the run has not yet ended ``min_episodes``
    episodes, it is the successes over ``min_episodes`` (the missing episodes count as failures, as the
    reference's zero-filled list of returns). With ``min_episodes=0`` a row covers update ``t`` alone (NaN if
    no episode ended in it).

    Returns:
        ``{"update": int[R], "episodes": int[R], "success_rate": float64[R], "covered": int[R]}``: the update
        of each row, the episodes ended up to it (cumulative), its success rate and the episodes it covers.
    """
    if log_interval < 1 or min_episodes < 0:
        raise ValueError(f"need log_interval >= 1 and min_episodes >= 0, got {log_interval}, {min_episodes}")
    counts = np.asarray(episodes, np.int64)
    rates = np.asarray(success_rate, np.float64)
    if counts.shape != rates.shape or counts.ndim != 1:
        raise ValueError(f"need two [U] arrays, got {rates.shape} and {counts.shape}")
    wins = np.where(counts > 0, np.rint(np.nan_to_num(rates) * counts), 0).astype(np.int64)
    ended = np.concatenate([[0], np.cumsum(counts)])  # ended[t]: episodes of updates 1..t
    won = np.concatenate([[0], np.cumsum(wins)])
    t = np.arange(log_interval, len(counts) + 1, log_interval)
    # the latest p < t with ended[t] - ended[p] >= min_episodes (updates p+1..t), 0 if there is none
    p = np.clip(np.searchsorted(ended, ended[t] - min_episodes, side="right") - 1, 0, t - 1)
    covered = ended[t] - ended[p]
    denominator = np.maximum(covered, min_episodes)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(denominator > 0, (won[t] - won[p]) / np.maximum(denominator, 1), np.nan)
    return {"update": t, "episodes": ended[t], "success_rate": rate, "covered": covered}


def episodes_to_threshold(
    success_rate: np.ndarray,
    episodes: np.ndarray,
    window: int,
    threshold: float,
    *,
    log_interval: int = LOG_INTERVAL,
    min_episodes: int = MIN_EPISODES,
) -> int | None:
    """Returns the episodes ended up to the first logged row (``log_rows`` of the per-update
    ``success_rate[U]`` and ``episodes[U]``) whose centred rolling mean over ``window`` rows
    (``smoothed_success``) is at least ``threshold``, as ``rl_dataeff.py``; ``None`` if no row gets there."""
    rows = log_rows(success_rate, episodes, log_interval, min_episodes)
    hits = np.flatnonzero(smoothed_success(rows["success_rate"], window) >= threshold)
    return None if len(hits) == 0 else int(rows["episodes"][hits[0]])


# -- reinforcement learning ----------------------------------------------------------------------------------
def rl_sample_efficiency(
    config: PPOConfig,
    *,
    num_seeds: int = 3,
    window: int | None = None,
    log_interval: int = LOG_INTERVAL,
    min_episodes: int = MIN_EPISODES,
    threshold: float = 0.99,
    arch: str | None = REFERENCE_ARCH,
    seed: int = 0,
    chunk_updates: int = 50,
    progress: bool = True,
) -> dict[str, Any]:
    """Runs the RL protocol (module docstring) on ``config.env_id``: ``num_seeds`` runs of ``config``
    (``Trainer.run_seeds``: one program, pooled resets over the named seed axis), keys
    ``fold_in(key(seed), s)``, for at most ``config.total_frames`` frames each,
    stopping once every run has reached the threshold.

    Args:
        config: the run's recipe.
        num_seeds: runs, vmapped.
        window: logged rows in the centred rolling mean (default ``rl_window``, the family reference's: for
            BabyAI 10 on GoToRedBallGrey, else 100).
        log_interval, min_episodes: the rows (``log_rows``).
        threshold: the success rate to reach (``>=``).
        arch: the image architecture, replacing ``config.arch``; ``REFERENCE_ARCH`` (the default): the family
            reference's ``rl_arch`` (for BabyAI ``"original"``, the ICLR19 model of the paper's figures); ``None``
            keeps the config's.
        seed: the runs' base key.
        chunk_updates: updates per compiled call between checks.
        progress: a progress bar.

    Returns:
        ``{"env_id", "kind": "rl", "arch", "num_seeds", "window", "log_interval", "min_episodes", "threshold",
        "episodes_needed": [int | None] * S, "min", "max", "mean" (over runs that reached it, ``None`` if
        none), "updates", "frames", "curves"}``; ``curves`` holds per run the per-update ``success_rate`` and
        ``episodes`` lists (NaN as ``None``), from which ``log_rows`` rebuilds the rows.
    """
    reference = reference_for(config.env_id)
    window = reference.rl_window(config.env_id) if window is None else window
    arch = reference.rl_arch if arch == REFERENCE_ARCH else arch
    if num_seeds < 1 or window < 1 or not 0 < threshold <= 1 or chunk_updates < 1:
        raise ValueError(f"bad sweep settings: {num_seeds=}, {window=}, {threshold=}, {chunk_updates=}")
    if log_interval < 1 or min_episodes < 0:
        raise ValueError(f"need log_interval >= 1 and min_episodes >= 0, got {log_interval}, {min_episodes}")
    config = dataclasses.replace(config, **({} if arch is None else {"arch": arch}))
    ran_arch = config.arch or preset(config.preset).arch
    trainer = trainer_for(config, seed_axis="seeds")
    keys = jax.vmap(lambda s: jax.random.fold_in(jax.random.key(seed), s))(jnp.arange(num_seeds))
    runners = trainer.init_seeds(keys)
    rates = np.zeros((num_seeds, 0))
    counts = np.zeros((num_seeds, 0), np.int64)
    needed: list[int | None] = [None] * num_seeds
    total, done = config.num_updates, 0
    rows = {"log_interval": log_interval, "min_episodes": min_episodes}
    bar = tqdm(total=total, unit="update", desc=f"RL {config.env_id} x{num_seeds}", disable=not progress)
    with bar:
        while done < total and any(x is None for x in needed):
            size = min(chunk_updates, total - done)
            # one compiled chunk length; updates past ``total`` are computed and discarded (``active``)
            runners, metrics = trainer.run_seeds(runners, min(chunk_updates, total), np.int32(total))
            metrics = {k: v[:, :size] for k, v in jax.device_get(metrics).items()}
            rates = np.concatenate([rates, np.asarray(metrics["success_rate"], np.float64)], axis=1)
            counts = np.concatenate([counts, np.asarray(metrics["episodes"], np.int64)], axis=1)
            done += size
            needed = [episodes_to_threshold(rates[s], counts[s], window, threshold, **rows) for s in range(num_seeds)]
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
        "arch": ran_arch,
        "num_seeds": num_seeds,
        "window": window,
        **rows,
        "threshold": threshold,
        "config": dataclasses.asdict(config),
        "episodes_needed": needed,
        "min": min(reached) if reached else None,
        "max": max(reached) if reached else None,
        "mean": float(np.mean(reached)) if reached else None,
        "updates": done,
        "frames": done * config.frames_per_update,
        "curves": curves,
    }


# -- report --------------------------------------------------------------------------------------------------
def _thousands(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x / 1000:,.1f}" if x >= 10_000 else f"{x / 1000:.3g}"


def _rate(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def _figure(x: float | tuple[float, float] | None) -> str:
    if x is None:
        return "—"
    return f"{x[0]}–{x[1]}" if isinstance(x, tuple) else f"{x:g}"


def _published(columns: Sequence[Column], level: str) -> str:
    """Returns the cells (``" | x | y"``) of the published ``columns`` for ``level``, "—" where one has none."""
    return "".join(f" | {_figure(figures.get(level))}" for _, figures in columns)


def report_table(results: list[dict[str, Any]], reference: SweepReference | None = None) -> str:
    """Returns a markdown summary of sweep results (thousands of demonstrations or episodes, as the paper's
    Table 3), one row per level, with the published figures of ``reference`` (default: ``reference_for`` the
    first result's env id) where they are known."""
    if not results:
        return ""
    reference = reference_for(results[0]["env_id"]) if reference is None else reference
    level = reference.level
    if results[0]["kind"] == "bc":
        columns = reference.il_columns
        lines = [
            "| level | window | T per seed (updates) | T_min (mean) | budget | sizes tried | k | "
            "bracket [k/√2, k] | closed |" + "".join(f" {name} |" for name, _ in columns),
            "|---|---:|---|---:|---:|---:|---:|---|---|" + "---|" * len(columns),
        ]
        for r in results:
            lo_hi = "—" if r["bracket"] is None else f"{_thousands(r['bracket'][0])}–{_thousands(r['bracket'][1])}"
            per_seed = ", ".join("not reached" if t is None else str(t) for t in r["t_per_seed"])
            lines.append(
                f"| {level(r['env_id'])} | {r['window']} | {per_seed} | "
                f"{'not reached by every seed' if r['t_min'] is None else format(r['t_min'], 'g')} | "
                f"{'—' if r['budget'] is None else r['budget']} | {len(r['rows'])} | {_thousands(r['k'])} | "
                f"{lo_hi} | {'yes' if r['closed'] else 'no'}{_published(columns, level(r['env_id']))} |"
            )
        lines += [
            "",
            "| level | demos | budget (updates) | seeds solved | solved at (updates) | best rolling mean | "
            "best validation |",
            "|---|---:|---:|---:|---|---|---|",
        ]
        for r in results:
            for row in r["rows"]:
                at = ", ".join("—" if x is None else str(x) for x in row["solved_at"])
                lines.append(
                    f"| {level(r['env_id'])} | {row['demos']} | {row['updates']} | "
                    f"{row['seeds_solved']}/{len(row['solved_at'])} | {at} | "
                    f"{', '.join(_rate(x) for x in row['best_smoothed'])} | "
                    f"{', '.join(_rate(x) for x in row['best_success'])} |"
                )
        lines += [
            "",
            "A seed solves at the first validation within the budget whose centred rolling mean over `window` "
            "validations exceeds the threshold; T_min is the mean over the full-size seeds, the budget "
            "ceil(2 T_min).",
        ]
        return "\n".join(lines) + "\n"
    columns = reference.rl_columns
    lines = [
        "| level | arch | runs | frames per run | window (rows x updates) | episodes needed per run | min–max | "
        "mean |" + "".join(f" {name} |" for name, _ in columns),
        "|---|---|---:|---:|---|---|---|---|" + "---|" * len(columns),
    ]
    for r in results:
        per_run = ", ".join(_thousands(x) for x in r["episodes_needed"])
        lines.append(
            f"| {level(r['env_id'])} | {r['arch']} | {r['num_seeds']} | {r['frames']:,} | "
            f"{r['window']} x {r['log_interval']} | {per_run} | {_thousands(r['min'])}–{_thousands(r['max'])} | "
            f"{_thousands(r['mean'])}{_published(columns, level(r['env_id']))} |"
        )
    lines += [
        "",
        f"Thousands of episodes. {reference.rl_note}Rows are logged every `log_interval` updates over at least "
        f"{results[0].get('min_episodes', MIN_EPISODES)} recent episodes, smoothed by a centred rolling mean "
        "over `window` rows; a run needs the episodes ended up to the first row at or above the threshold.",
    ]
    return "\n".join(lines) + "\n"


def plot_results(results: list[dict[str, Any]], path: str | Path) -> Path:
    """Writes a PNG with one panel per level: for BC every seed's best rolling-mean validation success within
    the budget against the dataset size (log scale), for RL every run's smoothed logged success rate against
    episodes; the threshold as a dashed line. Returns the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(4.5 * len(results), 3.4), squeeze=False)
    level = reference_for(results[0]["env_id"]).level
    for ax, r in zip(axes[0], results):
        if r["kind"] == "bc":
            sizes = [row["demos"] for row in r["rows"]]
            for s in range(r["num_seeds"]):
                best = [np.nan if row["best_smoothed"][s] is None else row["best_smoothed"][s] for row in r["rows"]]
                ax.plot(sizes, best, "o-", ms=3, lw=1, label=f"seed {s}")
            ax.set_xscale("log")
            ax.set_xlabel("demonstrations")
            ax.set_ylabel(f"best validation success (rolling {r['window']})")
        else:
            for s, curve in enumerate(r["curves"]):
                rates = np.array([np.nan if x is None else x for x in curve["success_rate"]])
                rows = log_rows(rates, np.array(curve["episodes"]), r["log_interval"], r["min_episodes"])
                smooth = smoothed_success(rows["success_rate"], r["window"])
                ax.plot(rows["episodes"], smooth, lw=1, label=f"run {s}")
            ax.set_xlabel("episodes")
            ax.set_ylabel(f"success rate (rolling {r['window']} rows)")
        ax.axhline(r["threshold"], ls="--", color="grey", lw=0.8)
        ax.set_title(level(r["env_id"]), fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
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
