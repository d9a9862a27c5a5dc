"""A PPO/A2C training run on disk: chunks of jitted updates, progress, metrics, checkpoints and ``resume``.

``train_rl(config, run_dir)`` trains ``config.num_updates`` updates in chunks of ``chunk_updates`` (one
compiled ``Trainer.run`` length for the whole run: the updates of a last chunk that would pass the end are
computed and discarded, ``Trainer.run``'s ``stop``), appends every update's metrics to
``run_dir/metrics.csv``, saves a checkpoint under ``run_dir/checkpoints`` every ``checkpoint_every`` updates
and at the end, and finishes with a greedy evaluation (sampled actions as the headline, greedy beside it),
``metrics.json`` + ``curves.png`` and, with ``gif_episodes``, ``episodes.gif`` of evaluated episodes. With
``resume=True`` it restores the newest checkpoint and continues; since every update is the same pure function
of the runner, the resumed run ends with exactly the state of the uninterrupted one. The compiled programs go to
jax's persistent compilation cache (``core.compile_cache.enable_compile_cache``: off with ``JAXSOC_COMPILE_CACHE=off``),
so a rerun of the same configuration loads them.

Data parallelism: with ``devices`` (default: one), the worlds, and with them every minibatch, are sharded
over a ``jax.sharding.Mesh`` of those devices on the ``data`` axis; the parameters are replicated and XLA
averages the gradients across devices. Multi-host runs (``distributed=True``, one process per host, all
running the same command) join with ``jax.distributed.initialize()`` (``init_distributed``) and shard over
every process's devices: each process builds the same initial state and keeps its own shards of it, all
processes save each checkpoint together (with the whole state: it restores in one process), and only
process 0 writes ``metrics.csv``, ``metrics.json``, ``curves.png`` and the GIF. ``tests/test_distributed.py``
checks that two CPU processes of two devices end where one process of four devices does.
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

from jaxsoc.core.compile_cache import enable_compile_cache
from jaxsoc.learners.checkpoint import Checkpointer, is_key, to_storable
from jaxsoc.learners.evaluate import VALIDATION_SEED, evaluate_sampled_and_greedy
from jaxsoc.learners.networks import registry
from jaxsoc.learners.ppo import PPOConfig, Runner, Trainer, trainer_for
from jaxsoc.learners.run_log import MetricsLog

CHECKPOINTS = "checkpoints"
EPISODES_GIF = "episodes.gif"


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
        return _put(x, split if np.ndim(x) and np.shape(x)[0] == num_envs else whole)

    worlds = (runner.env_states, runner.obs, runner.done, runner.memory, runner.episode_return, runner.episode_length)
    placed = jax.tree_util.tree_map(place, worlds)
    shared = jax.tree_util.tree_map(
        lambda x: _put(x, whole), (runner.params, runner.batch_stats, runner.opt_state, runner.key)
    )
    env_states, obs, done, memory, episode_return, episode_length = placed
    params, batch_stats, opt_state, key = shared
    return runner.replace(
        params=params,
        batch_stats=batch_stats,
        opt_state=opt_state,
        key=key,
        update=_put(runner.update, whole),
        env_states=env_states,
        obs=obs,
        done=done,
        memory=memory,
        episode_return=episode_return,
        episode_length=episode_length,
    )


def _put(x: Any, sharding: NamedSharding) -> jax.Array:
    """Returns ``x`` placed with ``sharding``. In a multi-process run every process holds the whole value of
    ``x`` (computed identically) and builds only its addressable shards from it: ``jax.device_put`` refuses a
    process-local array for a global sharding."""
    if jax.process_count() == 1:
        return jax.device_put(x, sharding)
    if is_key(x):
        return jax.random.wrap_key_data(_put(jax.random.key_data(x), sharding), impl=jax.random.key_impl(x))
    value = np.asarray(x)
    return jax.make_array_from_callback(value.shape, sharding, lambda index: value[index])


def _identity(tree: Any) -> Any:
    return tree


def host_local(tree: Any, mesh: Mesh) -> Any:
    """Returns ``tree``'s arrays as numpy arrays of their whole value (``jax.device_get``). In a multi-process
    run, where no process can read the others' shards, the arrays are first replicated over ``mesh`` (one
    jitted gather; every process must call this), and typed PRNG keys become their raw ``uint32`` data."""
    if jax.process_count() == 1:
        return jax.device_get(tree)
    whole = jax.jit(_identity, out_shardings=NamedSharding(mesh, PartitionSpec()))(to_storable(tree))
    return jax.tree_util.tree_map(np.asarray, whole)


def init_distributed(
    coordinator: str | None = None, num_processes: int | None = None, process_id: int | None = None
) -> None:
    """Joins a multi-process run (``jax.distributed.initialize``), once per process, before any JAX
    computation. Arguments left None are auto-detected (SLURM, Open MPI, TPU pods, Kubernetes; the coordinator
    also from ``JAX_COORDINATOR_ADDRESS``). On CPU, cross-process collectives use gloo."""
    if jax.distributed.is_initialized():
        return
    # older jax has no cross-process CPU collectives unless asked for (newer ones default to gloo)
    if getattr(jax.config, "jax_cpu_collectives_implementation", "gloo") in (None, "none"):
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator, num_processes, process_id)


class _NoLog:
    """The metrics log of the processes of a multi-process run but process 0, which alone writes files."""

    rows: tuple = ()

    def truncate(self, key: str, last: float) -> None:
        pass

    def append(self, rows: list[dict[str, Any]]) -> None:
        pass

    def finish(self, summary: dict[str, Any], **kwargs: Any) -> None:
        pass


def _mesh_context(mesh: Mesh):
    """Returns the context that makes ``mesh`` current (``jax.set_mesh`` where jax has it); none for one
    device, so single-device runs share their compiled updates with ``Trainer.run`` called directly (a mesh
    context is part of jit's cache key)."""
    if mesh.devices.size == 1:
        return contextlib.nullcontext()
    return jax.set_mesh(mesh) if hasattr(jax, "set_mesh") else mesh


def run_meta(config: PPOConfig, trainer: Trainer) -> dict[str, Any]:
    """Returns the checkpoint ``meta`` of a PPO/A2C run: ``kind``, ``config``, ``env_id``, ``network`` and
    ``model_config`` (``networks.registry.describe``)."""
    return {
        "kind": config.algo,
        "env_id": config.env_id,
        "config": dataclasses.asdict(config),
        **registry.describe(trainer.model),
    }


def metric_rows(metrics: dict[str, np.ndarray], wall: float, frames_per_update: int, elapsed: float) -> list[dict]:
    """Returns one log row per update of a ``Trainer.run`` chunk's ``metrics`` (``[U]`` arrays): its values, the
    chunk's frames per second ``sps`` (``frames_per_update * U / elapsed``) and the run's ``wall_s``."""
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
    gif_episodes: int = 0,
    devices: list[Any] | None = None,
    distributed: bool = False,
    coordinator: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    progress: bool = True,
    init_params: Any = None,
    trainer: Trainer | None = None,
    keep_checkpoints: int | None = 3,
    eval_params: Any = None,
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
        eval_episodes: evaluation episodes at the end (0 skips it): ``eval_success_rate`` etc. with sampled
            actions, ``eval_greedy_success_rate`` etc. with argmax actions, on the same levels.
        gif_episodes: write ``run_dir/episodes.gif`` of this many evaluation episodes (sampled actions).
        devices: devices of the data-parallel mesh (default: the first device only).
        distributed: join a multi-process run (``init_distributed``) and use every process's devices; only
            process 0 writes the metrics, curves and GIF, all processes write the checkpoints together.
        coordinator, num_processes, process_id: of a distributed run: process 0's ``host:port``, the number of
            processes and this one's index (each None: auto-detected, see ``init_distributed``).
        progress: show a progress bar with the success rate and steps per second.
        init_params: the policy's parameters to start from (a warm start; ignored when resuming).
        trainer: the ``Trainer`` of ``config`` to use, for an env that is not registered (a learner's own view,
            e.g. ``envs.excalibur.explorer_env.MemoryExplorerEnv``); default ``trainer_for(config)``.
        keep_checkpoints: the newest checkpoints kept on disk (None: every one, for a curve over them).
        eval_params: the env params the final evaluation runs on (default the training ones), e.g. a validation
            task bank.

    Raises:
        ValueError: bad arguments, or an incompatible checkpoint (see ``Checkpointer.restore``).
    """
    if chunk_updates < 1 or checkpoint_every < 1 or eval_episodes < 0 or gif_episodes < 0:
        raise ValueError("chunk_updates and checkpoint_every must be positive, eval_episodes and gif_episodes >= 0")
    enable_compile_cache()  # a rerun loads its programs (off: JAXSOC_COMPILE_CACHE=off; core.compile_cache)
    if distributed:
        init_distributed(coordinator, num_processes, process_id)
        devices = jax.devices()
    mesh = data_mesh(devices if devices is not None else jax.devices()[:1])
    trainer = trainer_for(config) if trainer is None else trainer
    run_dir = Path(run_dir)
    primary = jax.process_index() == 0  # of a multi-process run, only process 0 writes files (but checkpoints)
    log = MetricsLog(run_dir) if primary else _NoLog()
    checkpointer = Checkpointer(run_dir / CHECKPOINTS, run_meta(config, trainer), max_to_keep=keep_checkpoints)
    resuming = resume and checkpointer.latest_step() is not None
    if resuming:
        checkpointer.check_meta()  # before compiling anything for a run it would refuse
    runner = trainer.init(jax.random.key(seed))
    if init_params is not None and not resuming:
        runner = runner.replace(params=init_params)
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
    bar = tqdm(total=total, initial=start, unit="upd", desc=config.env_id, disable=not (progress and primary))
    last_saved = start
    with bar, _mesh_context(mesh):
        # one compiled chunk length; a last chunk that would pass ``total`` has its extra updates discarded
        size = min(chunk_updates, total)
        while int(runner.update) < total:
            tick = time.perf_counter()
            runner, metrics = trainer.run(runner, size, np.int32(total))
            metrics = host_local(metrics, mesh)
            active = metrics.pop("active")
            metrics = {name: values[active] for name, values in metrics.items()}
            elapsed = time.perf_counter() - tick
            rows = metric_rows(metrics, time.perf_counter() - began, config.frames_per_update, elapsed)
            log.append(rows)
            bar.update(len(rows))
            recent = [r["success_rate"] for r in rows if not np.isnan(r["success_rate"])]
            bar.set_postfix(success=f"{np.mean(recent):.3f}" if recent else "-", sps=f"{rows[-1]['sps']:,.0f}")
            done = int(runner.update)
            if done - last_saved >= checkpoint_every or done == total:
                checkpointer.save(done, host_local(runner, mesh))
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
    summary["checkpoint"] = str(run_dir / CHECKPOINTS / str(int(runner.update)))
    variables = host_local(trainer.variables(runner), mesh)
    policy = (trainer.env, trainer.env_params, trainer.model, variables)
    if eval_episodes:
        scored = policy if eval_params is None else (trainer.env, eval_params, *policy[2:])
        summary.update({f"eval_{k}": v for k, v in evaluate_sampled_and_greedy(*scored, eval_episodes).items()})
    if gif_episodes and primary:
        summary["gif"] = str(write_episodes_gif(*policy, run_dir / EPISODES_GIF, gif_episodes))
    log.finish(summary, x="frames", curves=("success_rate", "mean_return", "entropy"))
    return summary


def write_episodes_gif(
    env,
    env_params,
    model,
    variables,
    path: str | Path,
    num_episodes: int,
    greedy: bool = False,
    seed: int = VALIDATION_SEED,
    fps: float = 8,
) -> Path:
    """Writes a GIF of the first ``num_episodes`` evaluation episodes of ``seed`` (the levels of ``evaluate``,
    sampled actions unless ``greedy``), tiled four to a row; returns its path.

    Raises:
        ValueError: ``num_episodes < 1``.
    """
    from jaxsoc.core.render import save_gif, tile_frames
    from jaxsoc.learners.policy import record_episodes

    if num_episodes < 1:
        raise ValueError(f"a GIF needs at least one episode, got {num_episodes}")
    frames = record_episodes(env, env_params, model, variables, num_episodes, seed, greedy)
    return save_gif(tile_frames(np.asarray(frames), columns=min(4, num_episodes)), path, fps=fps)
