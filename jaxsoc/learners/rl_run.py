"""A PPO/A2C training run on disk: chunks of jitted updates, progress, metrics, checkpoints and ``resume``.

``train_rl(config, run_dir)`` trains ``config.num_updates`` updates in chunks of ``chunk_updates`` (one
compiled ``Trainer.run`` each), appends every update's metrics to ``run_dir/metrics.csv``, saves a checkpoint
under ``run_dir/checkpoints`` every ``checkpoint_every`` updates and at the end, and finishes with a greedy
evaluation and ``metrics.json`` + ``curves.png``. With ``resume=True`` it restores the newest checkpoint and
continues; since every update is the same pure function of the runner, the resumed run ends with exactly
the state of the uninterrupted one.

Data parallelism: with ``devices`` (default: one), the worlds, and with them every minibatch, are sharded
over a ``jax.sharding.Mesh`` of those devices on the ``data`` axis; the parameters are replicated and XLA
averages the gradients across devices. Multi-host runs call ``jax.distributed.initialize()`` first
(``distributed=True``) and use every process's devices.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from pathlib import Path
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec
from tqdm.auto import tqdm

from jaxsoc.learners.checkpoint import Checkpointer
from jaxsoc.learners.evaluate import evaluate
from jaxsoc.learners.ppo import PPOConfig, Runner, Trainer, trainer_for
from jaxsoc.learners.run_log import MetricsLog

CHECKPOINTS = "checkpoints"


def data_mesh(devices: list[Any] | None = None) -> Mesh:
    """Returns a one-axis ``Mesh`` named ``data`` over ``devices`` (default all devices)."""
    devices = jax.devices() if devices is None else devices
    return Mesh(np.asarray(devices), ("data",))


def shard_runner(runner: Runner, mesh: Mesh, num_envs: int) -> Runner:
    """Returns ``runner`` placed on ``mesh``: arrays with a leading axis of ``num_envs`` (the worlds) split on
    ``data``, everything else replicated.

    Raises:
        ValueError: ``num_envs`` is not a multiple of the number of devices.
    """
    size = mesh.devices.size
    if num_envs % size:
        raise ValueError(f"num_envs ({num_envs}) must be a multiple of the number of devices ({size})")
    split = NamedSharding(mesh, PartitionSpec("data"))
    whole = NamedSharding(mesh, PartitionSpec())

    def place(x):
        return jax.device_put(x, split if np.ndim(x) and np.shape(x)[0] == num_envs else whole)

    worlds = (runner.env_states, runner.obs, runner.done, runner.memory, runner.episode_return, runner.episode_length)
    placed = jax.tree_util.tree_map(place, worlds)
    shared = jax.tree_util.tree_map(
        lambda x: jax.device_put(x, whole), (runner.params, runner.batch_stats, runner.opt_state, runner.key)
    )
    env_states, obs, done, memory, episode_return, episode_length = placed
    params, batch_stats, opt_state, key = shared
    return runner.replace(
        params=params,
        batch_stats=batch_stats,
        opt_state=opt_state,
        key=key,
        update=jax.device_put(runner.update, whole),
        env_states=env_states,
        obs=obs,
        done=done,
        memory=memory,
        episode_return=episode_return,
        episode_length=episode_length,
    )


def _mesh_context(mesh: Mesh):
    """Returns the context that makes ``mesh`` current (``jax.set_mesh`` where jax has it); none for one
    device, so single-device runs share their compiled updates with ``Trainer.run`` called directly (a mesh
    context is part of jit's cache key)."""
    if mesh.devices.size == 1:
        return contextlib.nullcontext()
    return jax.set_mesh(mesh) if hasattr(jax, "set_mesh") else mesh


def run_meta(config: PPOConfig, trainer: Trainer) -> dict[str, Any]:
    """Returns the checkpoint ``meta`` of a PPO/A2C run: ``kind``, ``config``, ``model_config``, ``env_id``."""
    return {
        "kind": config.algo,
        "env_id": config.env_id,
        "config": dataclasses.asdict(config),
        "model_config": dataclasses.asdict(trainer.model_config),
    }


def _rows(metrics: dict[str, np.ndarray], wall: float, frames_per_update: int, elapsed: float) -> list[dict]:
    count = len(metrics["update"])
    rows = []
    for i in range(count):
        row = {name: np.asarray(values[i]).item() for name, values in metrics.items()}
        row["sps"] = frames_per_update * count / max(elapsed, 1e-9)
        row["wall_s"] = wall
        rows.append(row)
    return rows


def train_rl(
    config: PPOConfig,
    run_dir: str | Path,
    *,
    seed: int = 0,
    chunk_updates: int = 10,
    checkpoint_every: int = 100,
    resume: bool = False,
    eval_episodes: int = 512,
    devices: list[Any] | None = None,
    distributed: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """Trains (or resumes) a run in ``run_dir``; returns its summary (final evaluation and totals).

    Args:
        config: the run's hyper-parameters.
        run_dir: directory of ``metrics.csv``, ``metrics.json``, ``curves.png``, ``checkpoints/``.
        seed: the run's seed (model init, worlds, actions).
        chunk_updates: updates per compiled chunk (progress and checkpoints happen between chunks).
        checkpoint_every: updates between checkpoints (rounded up to whole chunks); always at the end.
        resume: continue from the newest checkpoint in ``run_dir`` (its config must match ``config`` except
            ``total_frames``); without one, start afresh.
        eval_episodes: greedy evaluation episodes at the end (0 skips it).
        devices: devices of the data-parallel mesh (default: the first device only).
        distributed: call ``jax.distributed.initialize()`` and use all global devices.
        progress: show a progress bar with the success rate and steps per second.

    Raises:
        ValueError: bad arguments, or an incompatible checkpoint (see ``Checkpointer.restore``).
    """
    if chunk_updates < 1 or checkpoint_every < 1 or eval_episodes < 0:
        raise ValueError("chunk_updates and checkpoint_every must be positive and eval_episodes >= 0")
    if distributed:
        jax.distributed.initialize()
        devices = jax.devices()
    mesh = data_mesh(devices if devices is not None else jax.devices()[:1])
    trainer = trainer_for(config)
    run_dir = Path(run_dir)
    log = MetricsLog(run_dir)
    checkpointer = Checkpointer(run_dir / CHECKPOINTS, run_meta(config, trainer))
    resuming = resume and checkpointer.latest_step() is not None
    if resuming:
        checkpointer.check_meta()  # before compiling anything for a run it would refuse
    runner = trainer.init(jax.random.key(seed))
    start = 0
    if resuming:
        runner = checkpointer.restore(runner)
        start = int(runner.update)
        log.truncate("update", start)
    elif log.rows:
        log.truncate("update", 0)
    if mesh.devices.size > 1:
        runner = shard_runner(runner, mesh, config.num_envs)
    total = config.num_updates
    began = time.perf_counter()
    bar = tqdm(total=total, initial=start, unit="upd", desc=config.env_id, disable=not progress)
    last_saved = start
    with bar, _mesh_context(mesh):
        while int(runner.update) < total:
            remaining = total - int(runner.update)
            # equal chunks (one compiled scan length): the largest divisor of what remains
            size = max(d for d in range(1, min(chunk_updates, remaining) + 1) if remaining % d == 0)
            tick = time.perf_counter()
            runner, metrics = trainer.run(runner, size)
            metrics = jax.device_get(metrics)
            elapsed = time.perf_counter() - tick
            rows = _rows(metrics, time.perf_counter() - began, config.frames_per_update, elapsed)
            log.append(rows)
            bar.update(size)
            recent = [r["success_rate"] for r in rows if not np.isnan(r["success_rate"])]
            bar.set_postfix(success=f"{np.mean(recent):.3f}" if recent else "-", sps=f"{rows[-1]['sps']:,.0f}")
            done = int(runner.update)
            if done - last_saved >= checkpoint_every or done == total:
                checkpointer.save(done, jax.device_get(runner))
                last_saved = done
    checkpointer.close()
    summary: dict[str, Any] = {
        "title": f"{config.algo.upper()} {config.env_id} ({config.preset}), seed {seed}",
        "env_id": config.env_id,
        "algo": config.algo,
        "updates": int(runner.update),
        "frames": int(runner.update) * config.frames_per_update,
        "wall_s": time.perf_counter() - began,
        "device": jax.devices()[0].device_kind,
        "num_devices": int(mesh.devices.size),
    }
    if eval_episodes:
        result = evaluate(trainer.env, trainer.env_params, trainer.model, trainer.variables(runner), eval_episodes)
        summary.update({f"eval_{k}": v for k, v in result.summary().items()})
    log.finish(summary, x="frames", curves=("success_rate", "mean_return", "entropy"))
    return summary
