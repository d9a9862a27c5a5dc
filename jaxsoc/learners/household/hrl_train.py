"""Trains the HRL's low-level policy (Watch-And-Help §5.2, appendix C.3-C.4) into a run directory.

``train(config, out)``: the warm start (``hrl_imitation``, when ``HRLConfig.imitation_frames``), then A2C
(``ppo.a2c_config``: RMSprop, lr 1e-3) on ``subgoal_env.SubgoalEnv`` in the paper's two phases, "grab" then "put"
from the grab phase's parameters, on the 1,011 training tasks; the run directory holds ``run.json``,
``metrics.csv`` (``phase`` column), ``curves.png``, ``imitation.csv`` / ``.json`` / ``.png`` and orbax checkpoints
(``hrl_run``); ``resume`` ends where an uninterrupted run does. The final check is ``hrl_eval.subgoal_success``.

Deviations from the paper: the "put" phase goes on training the one policy from the grab phase's parameters (the
paper trains a second policy that calls the grab policy whenever it samples "grab"); the auxiliary closeness
classifier is left out (the ``ppo.Trainer`` has no auxiliary loss); the action set is masked to valid actions (the
paper's variant: ``mask_invalid=False``). The paper's recipe is ``reward="paper"``, ``mask_invalid=False``,
``imitation_frames=0``.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import time
from pathlib import Path
from typing import Any

import flax.linen as nn
import jax
import numpy as np
from tqdm.auto import tqdm

from jaxsoc.envs.household.subgoal_env import PHASES, SubgoalEnv, with_phase
from jaxsoc.learners import ppo
from jaxsoc.learners.checkpoint import Checkpointer
from jaxsoc.learners.household.hrl_config import HRLConfig
from jaxsoc.learners.household.hrl_eval import subgoal_success
from jaxsoc.learners.household.hrl_imitation import imitate
from jaxsoc.learners.household.hrl_run import CHECKPOINTS, KIND, RUN_JSON, meta
from jaxsoc.learners.run_log import MetricsLog, plot_curves, write_json

IMITATION_CSV, IMITATION_PNG = "imitation.csv", "imitation.png"


@functools.lru_cache(maxsize=8)
def _cached_trainer(config: HRLConfig) -> ppo.Trainer:
    return ppo.Trainer(config.a2c(), env=SubgoalEnv(), env_params=config.params("grab"))


def trainer(config: HRLConfig) -> ppo.Trainer:
    """Returns the run's ``ppo.Trainer`` (both phases: a world's phase is in its state, ``with_phase``), shared
    by the configs that differ only in what does not change an update (seed, frames, schedule), so a resumed
    run reuses the compiled updates."""
    one = config.frames_per_update
    fixed = dict(seed=0, grab_frames=one, put_frames=one, chunk_updates=1, checkpoint_every=1, eval_episodes=0)
    return _cached_trainer(dataclasses.replace(config, **fixed))


def _phase_summary(rows: list[dict], phase: str) -> dict[str, Any]:
    """Returns a phase's updates, frames and its last tenth's per-episode means (weighted by episodes)."""
    rows = [r for r in rows if r["phase"] == phase]
    out: dict[str, Any] = {"updates": len(rows)}
    tail = [r for r in rows[-max(1, len(rows) // 10) :] if r["episodes"]]
    for name in ("success_rate", "mean_return", "mean_length"):
        weights = sum(r["episodes"] for r in tail)
        out[name] = sum(r[name] * r["episodes"] for r in tail) / weights if weights else None
    return out


def train(
    config: HRLConfig, out: str | Path, resume: bool = False, progress: bool = True, stop_after: int | None = None
) -> dict[str, Any]:
    """Trains the low-level policy (``HRLConfig``) into run directory ``out``; returns the summary.

    ``out`` gets ``run.json`` (kind, config, model, updates per phase), ``metrics.csv`` (one row per update:
    ``phase``, ``update`` and ``frames`` counted over both phases, ``success_rate`` (share of the update's
    ended episodes that achieved the phase's event), ``mean_return``, ``mean_length``, the losses, ``sps``),
    ``metrics.json`` and ``curves.png``, and ``checkpoints/`` (step = updates over both phases). The "put"
    phase starts from the grab phase's final parameters with a fresh optimizer and fresh worlds; both phases
    run the same compiled update (``trainer``: a world's phase is part of its state).
    ``resume`` continues from the newest checkpoint and ends where an uninterrupted run ends. ``stop_after``
    stops after that many updates in all (an interruption, for tests).

    Summary: ``phases`` (per phase: updates, and the last tenth's success rate, return, length),
    ``steps_per_s`` (env steps per second of training, the first compiled chunk of each phase left out when
    there are others), ``frames``, ``updates``, ``complete``, ``wall_s``, ``device``, ``checkpoint`` and, with
    ``eval_episodes``, ``subgoal`` (``subgoal_success`` on the "put" phase's environment).

    Raises:
        ValueError: a directory holding a run without ``resume``, or a checkpoint of another config.
    """
    began = time.perf_counter()
    out = Path(out)
    if (out / RUN_JSON).exists() and not resume:
        raise ValueError(f"{out} already holds a run; pass resume to continue it or choose another directory")
    tr = trainer(config)
    updates = {phase: config.updates(phase) for phase in PHASES}
    total = sum(updates.values())
    stop = total if stop_after is None else min(total, stop_after)
    checkpointer = Checkpointer(out / CHECKPOINTS, meta(config, tr.model))
    done = checkpointer.latest_step() if resume else None
    if done is not None:
        checkpointer.check_meta()
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / RUN_JSON, {**meta(config, tr.model), "config": dataclasses.asdict(config), "updates": updates})
    log = MetricsLog(out)
    log.truncate("update", done or 0)
    key = jax.random.key(config.seed)
    timed = {"frames": 0, "seconds": 0.0, "all_frames": 0, "all_seconds": 1e-9, "began": began}
    bar = tqdm(total=total, initial=done or 0, unit="upd", desc="hrl low level", disable=not progress)
    warm = None
    if config.imitation_frames and done is None:  # the warm start (a resumed run has it in its checkpoints)
        tick = time.perf_counter()
        warm, rows = imitate(config, tr.init(jax.random.fold_in(key, 0)).params, jax.random.fold_in(key, 7), tr.model)
        imitation = {"seconds": time.perf_counter() - tick, "frames": rows[-1]["frames"], "last": rows[-1]}
        if config.eval_episodes:
            imitation["subgoal"] = _evaluate(tr.model, {"params": warm}, config)
        _write_imitation(out, rows, imitation)
    with bar:
        runner, offset = None, 0
        for p, phase in enumerate(PHASES):
            if (done or 0) <= offset + updates[phase] and stop > offset:  # not finished before, reached now
                fresh = tr.init(jax.random.fold_in(key, p))
                fresh = fresh.replace(env_states=with_phase(fresh.env_states, phase))
                if done is not None and done > offset:
                    runner = checkpointer.restore(fresh, done)  # resumed inside this phase (or at its end)
                elif runner is not None:
                    runner = fresh.replace(params=runner.params)  # from the previous phase's parameters
                elif warm is not None:
                    runner = fresh.replace(params=warm)  # from the warm start
                else:
                    runner = fresh
                runner = _run_phase(tr, runner, phase, offset, updates, stop, config, checkpointer, log, bar, timed)
                done = offset + int(runner.update)
            offset += updates[phase]
    checkpointer.close()
    frames = int(done or 0) * config.frames_per_update
    steady = timed["frames"] > 0
    summary: dict[str, Any] = {
        "title": f"HRL low level ({config.preset}), seed {config.seed}",
        "kind": KIND,
        "phases": {phase: _phase_summary(log.rows, phase) for phase in PHASES},
        "updates": int(done or 0),
        "frames": frames,
        "complete": (done or 0) >= total,
        "steps_per_s": timed["frames"] / timed["seconds"] if steady else timed["all_frames"] / timed["all_seconds"],
        "wall_s": time.perf_counter() - began,
        "device": jax.devices()[0].device_kind,
        "checkpoint": str(out / CHECKPOINTS / str(int(done or 0))),
    }
    if (out / IMITATION_CSV).exists():
        summary["imitation"] = json.loads((out / "imitation.json").read_text())
    if summary["complete"] and config.eval_episodes and runner is not None:
        summary.update(_evaluate(tr.model, {"params": runner.params}, config))
    log.finish(summary, x="frames", curves=("success_rate", "mean_return", "mean_length"))
    return summary


def _evaluate(model: nn.Module, variables: Any, config: HRLConfig) -> dict[str, Any]:
    """Returns ``{"subgoal": ..., "subgoal_heldout": ...}``: ``subgoal_success`` over ``eval_episodes``
    episodes of at most ``eval_steps`` steps in the run's tasks and in ``heldout``'s (held-out apartments; left
    out when ``heldout`` is "")."""
    out = {}
    for name, split in (("subgoal", None), ("subgoal_heldout", config.heldout))[: 2 if config.heldout else 1]:
        params = config.params("put", split).replace(max_steps=config.eval_steps)
        out[name] = subgoal_success(model, variables, params, config.eval_episodes, seed=config.seed + 1)
    return out


def _write_imitation(out: Path, rows: list[dict], imitation: dict[str, Any]) -> None:
    """Writes the warm start's ``imitation.csv`` (one row per update), ``imitation.json`` and
    ``imitation.png`` (loss, accuracy and success rate against frames)."""
    fields = list(rows[0])
    lines = [",".join(fields)] + [",".join(str(r[k]) for k in fields) for r in rows]
    (out / IMITATION_CSV).write_text("\n".join(lines) + "\n")
    write_json(out / "imitation.json", imitation)
    plot_curves(rows, out / IMITATION_PNG, "frames", ("loss", "accuracy", "success_rate"), "HRL warm start (DAgger)")


def _run_phase(tr, runner, phase, offset, updates, stop, config, checkpointer, log, bar, timed):
    """Runs ``phase``'s remaining updates (up to ``updates[phase]``, or the run's ``stop``) in chunks of one
    compiled length for both phases; returns the runner. Rows, checkpoints and timings go to ``log``,
    ``checkpointer`` and ``timed``."""
    size = min(config.chunk_updates, *updates.values())
    last_saved = int(runner.update)
    first_chunk = True
    end = min(updates[phase], stop - offset)
    while int(runner.update) < end:
        tick = time.perf_counter()
        runner, metrics = tr.run(runner, size, np.int32(end))
        metrics = jax.device_get(metrics)
        active = metrics.pop("active")
        metrics = {name: values[active] for name, values in metrics.items()}
        elapsed = time.perf_counter() - tick
        frames = len(metrics["update"]) * config.frames_per_update
        timed["all_frames"] += frames
        timed["all_seconds"] += elapsed
        if not first_chunk:
            timed["frames"] += frames
            timed["seconds"] += elapsed
        first_chunk = False
        rows = []
        for i in range(len(metrics["update"])):
            row = {name: np.asarray(values[i]).item() for name, values in metrics.items()}
            step = offset + int(row["update"])
            row.update(phase=phase, update=step, frames=step * config.frames_per_update)
            row.update(sps=frames / max(elapsed, 1e-9), wall_s=time.perf_counter() - timed["began"])
            rows.append(row)
        log.append(rows)
        bar.update(len(rows))
        done = int(runner.update)
        if done - last_saved >= config.checkpoint_every or done == end:
            checkpointer.save(offset + done, jax.device_get(runner))
            last_saved = done
    return runner
