"""Trains the Hybrid's high-level policy (Watch-And-Help §5.2, appendix C.3 and C.5) into a run directory.

``train``: ``bc_updates`` cross-entropy steps on HP_TG's choices (``warm_start``, RMSprop; 0 for pure RL), then A2C
(RMSprop, lr 1e-4, gamma 0.95 per primitive step) on ``hybrid_env.HybridEnv`` in two stages, teleporting walks
first, then 1 m walks, on the 1,011 training tasks, into a run directory (``run.json``, ``metrics.csv``,
``curves.png``, ``bc.csv`` / ``bc.json`` / ``bc.png``, orbax checkpoints: ``hybrid_run``; ``resume`` gives the
uninterrupted run's result).

Deviations from the paper: the two stages follow the released code (teleporting walks, then walking), Alice
present in both, where the paper's text trains stage 1 without Alice. The warm start (HP_TG as a free expert) is
this project's addition, to start A2C from a policy whose choices already matter.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from tqdm.auto import tqdm

from jaxsoc.envs.household import env as E
from jaxsoc.envs.household import tasks as T
from jaxsoc.envs.household import world as W
from jaxsoc.envs.household.hybrid_env import HybridEnv
from jaxsoc.learners import ppo
from jaxsoc.learners.expert_cloning import bc_loss, expert_rollout
from jaxsoc.learners.household.hybrid_config import HybridConfig
from jaxsoc.learners.household.hybrid_run import CHECKPOINTS, RUN_JSON, checkpointer
from jaxsoc.learners.rl_run import metric_rows
from jaxsoc.learners.run_log import MetricsLog, plot_curves, write_json

_TRAINERS: dict[tuple, tuple[ppo.Trainer, Any]] = {}
#: fields that do not change what an update computes (a trainer serves every value)
_RUN_FIELDS = ("stage1_frames", "stage2_frames", "seed", "chunk_updates", "checkpoint_every")
_RUN_FIELDS += ("bc_updates", "bc_epochs", "bc_lr")


def trainer(config: HybridConfig, teleport: bool, tasks: W.State | None = None) -> ppo.Trainer:
    """Returns the A2C ``Trainer`` of ``config``'s stage with (``teleport``) or without teleporting walks on the
    task bank ``tasks`` (default ``config``'s split), shared by every call with the same update (so a resumed
    run reuses the compiled updates)."""
    tasks = T.cached_split(config.split, config.task_seed).states if tasks is None else tasks
    fields = tuple((k, v) for k, v in dataclasses.asdict(config).items() if k not in _RUN_FIELDS)
    key = (fields, teleport, id(tasks))
    if key not in _TRAINERS:
        params = E.HouseholdParams(tasks=tasks, max_steps=config.max_steps, teleport=teleport)
        E.check_params(params)
        env = HybridEnv(config.alice_simulations, gamma=config.gamma, expert=False, option_end=config.option_end)
        if len(_TRAINERS) >= 4:
            _TRAINERS.pop(next(iter(_TRAINERS)))
        _TRAINERS[key] = (ppo.Trainer(config.a2c(), env=env, env_params=params), tasks)  # tasks: keeps its id
    return _TRAINERS[key][0]


BC_CSV, BC_JSON, BC_PNG = "bc.csv", "bc.json", "bc.png"


_BC_PROGRAMS: dict[tuple, Any] = {}


def _bc_program(tr: ppo.Trainer, config: HybridConfig):
    """Returns ``(program, env, tr)`` for ``tr``'s worlds (cached): ``env`` is ``tr``'s environment with the
    expert on, ``program`` the jitted warm-start step ``(params, opt_state, carry, key) -> (params, opt_state,
    carry, metrics)``: one expert batch collected (``expert_rollout``) and ``bc_epochs`` RMSprop steps on it;
    ``metrics`` are ``bc_loss``'s on the fresh batch before the steps (``first_*``) and after the last but one
    step (``last_*``)."""
    key = (id(tr), config.bc_epochs, config.bc_lr, config.num_steps, config.max_grad_norm)
    if key in _BC_PROGRAMS:
        return _BC_PROGRAMS[key]
    tx = _bc_optimizer(config)
    grad = jax.value_and_grad(functools.partial(bc_loss, tr.model), has_aux=True)
    env = tr.env.with_expert(True)

    @jax.jit
    def program(params, opt_state, carry, key):
        carry, (obs, mask, expert) = expert_rollout(env, tr.env_params, key, carry, config.num_steps)

        def epoch(state, _):
            params, opt_state = state
            (_, metrics), grads = grad(params, obs, mask, expert)
            updates, opt_state = tx.update(grads, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state), metrics

        (params, opt_state), metrics = jax.lax.scan(epoch, (params, opt_state), None, length=config.bc_epochs)
        summary = {f"first_{k}": v[0] for k, v in metrics.items()}
        summary.update({f"last_{k}": v[-1] for k, v in metrics.items()})
        return params, opt_state, carry, summary

    if len(_BC_PROGRAMS) >= 4:
        _BC_PROGRAMS.pop(next(iter(_BC_PROGRAMS)))
    _BC_PROGRAMS[key] = (program, env, tr)  # tr: keeps its id
    return _BC_PROGRAMS[key]


def _bc_optimizer(config: HybridConfig) -> optax.GradientTransformation:
    return optax.chain(
        optax.clip_by_global_norm(config.max_grad_norm), optax.rmsprop(config.bc_lr, decay=0.99, eps=1e-5)
    )


def warm_start(
    config: HybridConfig, tr: ppo.Trainer, params: Any, key: jax.Array, progress: bool = False
) -> tuple[Any, list[dict[str, Any]]]:
    """Returns ``(params, rows)``: the policy's ``params`` after ``config.bc_updates`` behaviour-cloning steps
    on HP_TG's choices (RMSprop, ``bc_lr``; a fresh batch of ``num_envs x num_steps`` expert frames from
    ``tr``'s worlds every ``bc_epochs`` steps, the worlds continuing from batch to batch), and one row per batch:
    ``update`` (steps so far), ``frames`` (expert frames so far), ``seconds``, and ``bc_loss``'s metrics on the
    fresh batch before its steps (``first_*``) and after its last step but one (``last_*``)."""
    program, env, _ = _bc_program(tr, config)
    opt_state = _bc_optimizer(config).init(params)
    k_reset, key = jax.random.split(key)
    reset = jax.jit(jax.vmap(env.reset_env, in_axes=(0, None)))
    obs, states = reset(jax.random.split(k_reset, config.num_envs), tr.env_params)
    carry = (obs, states, jnp.ones(config.num_envs, bool))
    batches = -(-config.bc_updates // config.bc_epochs)
    rows: list[dict[str, Any]] = []
    began = time.perf_counter()
    for b in tqdm(range(batches), unit="batch", desc="hybrid warm start", disable=not progress):
        params, opt_state, carry, metrics = program(params, opt_state, carry, jax.random.fold_in(key, b))
        metrics = {k: float(v) for k, v in jax.device_get(metrics).items()}
        frames = (b + 1) * config.frames_per_update
        rows.append(
            dict(update=(b + 1) * config.bc_epochs, frames=frames, seconds=time.perf_counter() - began, **metrics)
        )
    return params, rows


def _write_bc(out: Path, rows: list[dict[str, Any]], summary: dict[str, Any]) -> None:
    """Writes the warm start's ``bc.csv`` (one row per batch), ``bc.json`` (``summary``) and ``bc.png``."""
    fields = list(rows[0])
    lines = [",".join(fields)] + [",".join(str(r[k]) for k in fields) for r in rows]
    (out / BC_CSV).write_text("\n".join(lines) + "\n")
    write_json(out / BC_JSON, summary)
    curves = ("first_loss", "first_accuracy", "first_entropy")
    plot_curves(rows, out / BC_PNG, "frames", curves, "Hybrid warm start (behaviour cloning of HP_TG)")


def _mean(rows: list[dict[str, Any]], name: str) -> float:
    """Returns the mean of ``name`` over ``rows`` where it is a number (NaN when none is)."""
    values = [r[name] for r in rows if isinstance(r.get(name), (int, float)) and np.isfinite(r[name])]
    return float(np.mean(values)) if values else float("nan")


def train(
    config: HybridConfig,
    out: str | Path,
    resume: bool = False,
    progress: bool = True,
    *,
    tasks: W.State | None = None,
    stop_after: int | None = None,
) -> dict[str, Any]:
    """Trains the Hybrid's high-level policy (module docstring) into the run directory ``out``.

    Args:
        config: the run.
        out: directory of ``run.json``, ``metrics.csv``/``metrics.json``, ``curves.png`` and ``checkpoints/``.
        resume: continue from the newest checkpoint (same config); gives the uninterrupted run's result.
        progress: show a progress bar.
        tasks: a task bank to train on instead of ``config.split`` (tests; not recorded in the run).
        stop_after: stop after this many updates in all (an interruption); a later ``resume`` finishes.

    Returns:
        The summary (also in ``metrics.json``): updates, frames, per stage updates, the last updates' success
        rate and return, ``steps_per_s`` (env steps per second of the last chunk, after compilation when there
        was more than one chunk), wall time, device and checkpoint.

    Raises:
        ValueError: a directory holding a run without ``resume``, or an incompatible checkpoint.
    """
    out = Path(out)
    n1, n2 = config.stage_updates
    total = n1 + n2 if stop_after is None else min(n1 + n2, stop_after)
    if (out / RUN_JSON).exists() and not resume:
        raise ValueError(f"{out} already holds a run; pass resume to continue it or choose another directory")
    stages = {1: trainer(config, True, tasks) if n1 else None, 2: trainer(config, False, tasks) if n2 else None}
    first = stages[1] or stages[2]
    out.mkdir(parents=True, exist_ok=True)
    checkpoints = checkpointer(out, config, first.model)
    log = MetricsLog(out)
    resuming = resume and checkpoints.latest_step() is not None
    if resuming:
        checkpoints.check_meta()
    runner = first.init(jax.random.key(config.seed))
    if resuming:
        runner = checkpoints.restore(runner)
        log.truncate("update", int(runner.update))
    elif log.rows:
        log.truncate("update", 0)
    if config.bc_updates and not resuming:  # the warm start (a resumed run has it in its checkpoints)
        tick = time.perf_counter()
        warm, bc_rows = warm_start(
            config, first, runner.params, jax.random.fold_in(jax.random.key(config.seed), 1), progress
        )
        runner = runner.replace(params=warm)
        bc = {"seconds": time.perf_counter() - tick, "updates": bc_rows[-1]["update"], "frames": bc_rows[-1]["frames"]}
        _write_bc(out, bc_rows, dict(bc, first=bc_rows[0], last=bc_rows[-1]))
    derived = {"frames_per_update": config.frames_per_update, "stage_updates": [n1, n2]}
    derived["num_tasks"] = int(first.env_params.tasks.nodes.cls.shape[0])
    write_json(out / RUN_JSON, {"kind": "hybrid", "config": dataclasses.asdict(config), "derived": derived})
    began = time.perf_counter()
    sps = float("nan")
    last_saved = int(runner.update)
    bar = tqdm(total=n1 + n2, initial=last_saved, unit="upd", desc="hybrid", disable=not progress)
    with bar:
        while int(runner.update) < total:
            stage = 1 if int(runner.update) < n1 else 2
            end = min(n1 if stage == 1 else n1 + n2, total)
            tick = time.perf_counter()
            size = min(config.chunk_updates, n1 + n2)
            runner, metrics = stages[stage].run(runner, size, np.int32(end))
            metrics = jax.device_get(metrics)
            active = metrics.pop("active")
            metrics = {name: values[active] for name, values in metrics.items()}
            elapsed = time.perf_counter() - tick
            rows = metric_rows(metrics, time.perf_counter() - began, config.frames_per_update, elapsed)
            rows = [dict(row, stage=stage) for row in rows]
            log.append(rows)
            sps = rows[-1]["sps"]
            bar.update(len(rows))
            bar.set_postfix(stage=stage, ret=f"{_mean(rows, 'mean_return'):.2f}", sps=f"{sps:.0f}")
            done = int(runner.update)
            if done - last_saved >= config.checkpoint_every or done == total:
                checkpoints.save(done, runner)
                last_saved = done
    checkpoints.close()
    recent = log.rows[-max(1, len(log.rows) // 10) :]
    summary = {
        "title": f"Hybrid A2C ({config.preset}), seed {config.seed}",
        "kind": "hybrid",
        "updates": int(runner.update),
        "frames": int(runner.update) * config.frames_per_update,
        "stage_updates": [n1, n2],
        "success_rate": _mean(recent, "success_rate"),
        "mean_return": _mean(recent, "mean_return"),
        "steps_per_s": sps,
        "wall_s": time.perf_counter() - began,
        "device": jax.devices()[0].device_kind,
        "checkpoint": str(out / CHECKPOINTS / str(int(runner.update))),
    }
    if (out / BC_JSON).exists():
        summary["bc"] = json.loads((out / BC_JSON).read_text())
    log.finish(summary, x="frames", curves=("success_rate", "mean_return", "entropy"))
    return summary
