"""Trains the CHAIC behaviour model into a run directory: ``train(config, out)`` records the training and
evaluation runs (``bm_data.record``), then Adam on the targets' binary cross-entropy plus the constraint's
cross-entropy at every real step (the model must infer online, ``bm_model.loss``), scoring each epoch
(``bm_eval``) and writing the run directory as ``jaxsoc train`` does (``run.json``, ``metrics.csv`` /
``metrics.json``, ``curves.png``, ``report.json``, ``checkpoints/``: ``bm_run``).
"""

from __future__ import annotations

import functools
import math
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from tqdm.auto import tqdm

from jaxsoc.envs.chaic import tasks as T
from jaxsoc.learners.chaic.bm_config import BMConfig, model_config
from jaxsoc.learners.chaic.bm_data import RECORD_CHUNK, record, select
from jaxsoc.learners.chaic.bm_eval import evaluate, forward_all, scores
from jaxsoc.learners.chaic.bm_model import fresh_state, loss, optimizer_for
from jaxsoc.learners.chaic.bm_run import CHECKPOINTS, KIND, REPORT_JSON, RUN_JSON, checkpointer, read_run
from jaxsoc.learners.run_log import MetricsLog, write_json

SCORED_TRAIN_RUNS = 128  # training runs (evenly spread) scored after each epoch


@functools.lru_cache(maxsize=8)
def _epoch_fn(config: BMConfig):
    """Returns ``epoch(state, data, plan int32[S, B]) -> (state, losses float32[S])``: jitted Adam steps over the
    batches of rows ``plan`` (``config`` without its data and length fields)."""
    optimizer = optimizer_for(config)

    def step(state, rows, data):
        batch = {name: data[name][rows] for name in ("features", "mask", "targets", "constraint")}
        value, grads = jax.value_and_grad(lambda p: loss(config, p, batch))(state["params"])
        updates, opt_state = optimizer.update(grads, state["opt_state"], state["params"])
        return {"params": optax.apply_updates(state["params"], updates), "opt_state": opt_state}, value

    @jax.jit
    def epoch(state, data, plan):
        return jax.lax.scan(lambda s, rows: step(s, rows, data), state, plan)

    return optimizer, epoch


def train(config: BMConfig, out: str | Path, resume: bool = False, progress: bool = True) -> dict[str, Any]:
    """Records the training runs (``config``'s tasks, train split, ``episodes`` x ``seeds``, beside
    ``config.helper``) and the validation runs (the first ``eval_episodes`` validation episodes of each task, one
    run each; the test split is never read here), trains the behaviour model on the first for ``epochs`` and writes
    the run directory ``out`` (module docstring). After each epoch the loss and the main ``scores`` of
    ``SCORED_TRAIN_RUNS`` training runs (evenly spread) and of the validation runs (``val_*``) go to
    ``metrics.csv``, and every ``checkpoint_every`` epochs the parameters and optimiser state to a checkpoint (and
    after the last epoch). Each epoch's data order comes from ``fold_in(key(seed), epoch)`` and the recording is
    deterministic, so ``resume`` continues from the newest checkpoint and ends with the parameters of an
    uninterrupted run (``epochs`` may be raised on resume).

    Returns:
        The summary (also in ``metrics.json``): epochs done, final train and validation loss, train and
        validation goal and constraint accuracies (``scores``), the per-task validation report (also
        ``report.json``), data sizes, wall time, device.

    Raises:
        ValueError: a directory holding a run without ``resume``, a run of another kind, or a checkpoint of
            another config.
    """
    start = time.perf_counter()
    out = Path(out)
    if (out / RUN_JSON).exists():
        if not resume:
            raise ValueError(f"{out} already holds a run; pass resume to continue it or choose another directory")
        read_run(out)
    elif (out / CHECKPOINTS).exists():
        raise ValueError(f"{out} holds checkpoints but no {RUN_JSON}: not a {KIND} run; choose another directory")
    out.mkdir(parents=True, exist_ok=True)
    checkpoints = checkpointer(out, config)
    try:
        first = checkpoints.check_meta() if resume and checkpoints.latest_step() is not None else 0
    except ValueError:
        checkpoints.close()
        raise
    optimizer, epoch_fn = _epoch_fn(model_config(config))
    state = fresh_state(config, optimizer)
    if first:
        state = checkpoints.restore(state, first)

    tasks = config.task_names()
    tick = time.perf_counter()
    runs = len(tasks) * max(min(config.episodes, T.TRAIN_SIZE) * config.seeds, config.eval_episodes)
    chunk = min(RECORD_CHUNK, runs)  # one size for both recordings: one compilation
    common = {"helper": config.helper, "max_events": config.max_events, "max_steps": config.max_steps, "chunk": chunk}
    train_data = record(tasks, "train", config.episodes, config.seeds, seed=config.seed, **common)
    val_data = (
        record(tasks, "validation", config.eval_episodes, 1, seed=config.seed + 1, **common)
        if config.eval_episodes
        else None
    )
    record_s = time.perf_counter() - tick
    n = int(train_data["mask"].shape[0])
    sizes = {
        "train_runs": n,
        "val_runs": 0 if val_data is None else int(val_data["mask"].shape[0]),
        "mean_steps": float(jnp.mean(train_data["steps"])),
        "cut": float(jnp.mean(train_data["steps"] > config.max_steps)),
        "complete": float(jnp.mean(train_data["complete"])),
        "record_s": record_s,
    }
    log = MetricsLog(out)
    if resume:
        log.truncate("epoch", first)
    write_json(out / RUN_JSON, {"kind": KIND, "config": config.to_dict(), "sizes": sizes})

    batch = min(config.batch, n)
    num_steps = math.ceil(n / batch)
    scored = select(train_data, np.unique(np.linspace(0, n - 1, min(n, SCORED_TRAIN_RUNS)).astype(int)))
    bar = tqdm(total=config.epochs, initial=first, unit="epoch", desc=KIND, disable=not progress)
    with bar:
        for epoch in range(first, config.epochs):
            tick = time.perf_counter()
            perm = np.asarray(jax.random.permutation(jax.random.fold_in(jax.random.key(config.seed), epoch), n))
            plan = jnp.asarray(np.resize(perm, num_steps * batch).reshape(num_steps, batch), jnp.int32)
            state, losses = epoch_fn(state, train_data, plan)
            row = {"epoch": epoch + 1, "steps": (epoch + 1) * num_steps, "train_loss": float(losses.mean())}
            row["epoch_s"] = time.perf_counter() - tick
            row.update(_epoch_scores(config, state["params"], scored, "train"))
            if val_data is not None:
                row.update(_epoch_scores(config, state["params"], val_data, "val"))
            row["wall_s"] = time.perf_counter() - start
            log.append([row])
            if (epoch + 1) % config.checkpoint_every == 0 or epoch + 1 == config.epochs:
                checkpoints.save(epoch + 1, state)
            bar.update(1)
            bar.set_postfix(loss=f"{row['train_loss']:.3f}", goal=f"{row['train_goal_accuracy']:.2f}")
    checkpoints.close()
    report = {"train": evaluate(state["params"], train_data, config)}
    if val_data is not None:
        report["validation"] = evaluate(state["params"], val_data, config)
    write_json(out / REPORT_JSON, report)
    final = log.rows[-1] if log.rows else {}
    summary = {
        "title": f"CHAIC behaviour model, {n} training runs of {len(tasks)} task(s)",
        "kind": KIND,
        "epochs_done": int(final.get("epoch", 0)),
        "epochs": config.epochs,
        **{k: v for k, v in final.items() if k.startswith(("train_", "val_"))},
        "val_report": {
            task: {k: v for k, v in s.items() if k != "class_f1"} for task, s in report.get("validation", {}).items()
        },
        "sizes": sizes,
        "wall_s": time.perf_counter() - start,
        "device": jax.devices()[0].device_kind,
        "checkpoint": str(out / CHECKPOINTS),
    }
    curves = ("train_loss", "val_loss", "val_goal_accuracy", "val_constraint_accuracy")
    log.finish(summary, x="epoch", curves=curves)
    return summary


def _epoch_scores(config: BMConfig, params: Any, data: dict, prefix: str) -> dict[str, float]:
    """Returns ``{prefix_loss, prefix_goal_accuracy, ...}``: the loss and main ``scores`` of ``data``."""
    probs, constraint, loss_sum, steps = forward_all(params, data, config)
    s = scores(probs, constraint, data, config.threshold)
    names = ("goal_accuracy", "goal_jaccard", "micro_f1", "constraint_accuracy", "constraint_accuracy_mean")
    return {f"{prefix}_loss": float(loss_sum.sum() / max(steps.sum(), 1.0)), **{f"{prefix}_{k}": s[k] for k in names}}
