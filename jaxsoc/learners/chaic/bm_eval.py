"""Scoring the CHAIC behaviour model on recorded runs (``bm_data.record``): its predictions after each step
(``predict``) and their accuracies (``scores``, ``evaluate``): goal accuracy (the predicted target set equals the
true one: at the last helper step and averaged over the steps), the sets' Jaccard index, per-class F1, constraint
accuracy, per task and overall. (The paper's IA is another quantity: the helper's useful pick-ups ratio,
``envs.chaic.metrics``.)
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.learners.chaic.bm_config import BMConfig, model_config
from jaxsoc.learners.chaic.bm_data import select
from jaxsoc.learners.chaic.bm_model import logits, step_losses

_C = K.NUM_CLASSES


@functools.partial(jax.jit, static_argnames="config")
def _forward(config: BMConfig, params: Any, data: dict):
    """Returns ``(targets float32[B, L, C] probabilities, constraint int32[B, L], loss sum float32[B], real steps
    float32[B])`` of a chunk of ``record``'s runs."""
    targets, constraint = logits(config, params, data["features"])
    per_run = step_losses(config, targets, constraint, data).sum(-1)
    mask = data["mask"].astype(jnp.float32)
    return jax.nn.sigmoid(targets), jnp.argmax(constraint, -1).astype(jnp.int32), per_run, mask.sum(-1)


def forward_all(params: Any, data: dict, config: BMConfig, chunk: int = 64) -> tuple[np.ndarray, ...]:
    """``_forward`` over all of ``data``, ``chunk`` runs at a time (the last chunk padded); numpy results."""
    n = int(data["mask"].shape[0])
    chunk = max(1, min(chunk, n))
    fields = ("features", "mask", "targets", "constraint")
    out = []
    for start in range(0, n, chunk):
        rows = jnp.minimum(jnp.arange(start, start + chunk), n - 1)
        out.append(jax.device_get(_forward(model_config(config), params, {k: data[k][rows] for k in fields})))
    return tuple(np.concatenate(xs)[:n] for xs in zip(*out))


def predict(params: Any, data: dict, config: BMConfig, chunk: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """Returns ``(targets float32[N, L, NUM_CLASSES], constraint int32[N, L])``: after each step of ``data``'s
    sequences (``record``), the probability of each class being in the goal and the predicted constraint (index in
    ``CONSTRAINTS``), computed ``chunk`` runs at a time."""
    probs, constraint, _, _ = forward_all(params, data, config, chunk)
    return probs, constraint


def _f1(tp: float, fp: float, fn: float) -> float | None:
    return None if tp + fp + fn == 0 else float(2 * tp / (2 * tp + fp + fn))


def scores(probs: np.ndarray, constraint: np.ndarray, data: dict, threshold: float = 0.5) -> dict:
    """Returns the accuracies of predictions (``predict``'s pair) on ``data`` (``record``'s runs): ``runs``;
    ``goal_accuracy`` (the set of classes above ``threshold`` equals the true goal's, at each run's last helper
    step) and ``goal_accuracy_mean`` (averaged over its steps, then the runs); ``goal_jaccard`` (the predicted and
    true sets' intersection over union at the last step, averaged over the runs); ``micro_precision`` /
    ``micro_recall`` / ``micro_f1`` (of the classes at the last step, pooled), ``class_f1`` (``{class name: F1}``
    for the classes in a true or predicted goal) and ``macro_f1`` (their mean); ``constraint_accuracy`` (at the
    last step) and ``constraint_accuracy_mean`` (averaged over the steps). A run without a helper step counts as
    wrong."""
    mask = np.asarray(data["mask"])
    truth = np.asarray(data["targets"]).astype(bool)
    label = np.asarray(data["constraint"])
    length = mask.sum(1)
    last = np.maximum(length - 1, 0)
    rows = np.arange(len(mask))
    pred = probs > threshold
    exact = (pred == truth[:, None, :]).all(-1) & mask
    right = (constraint == label[:, None]) & mask
    end = pred[rows, last] & (length > 0)[:, None]
    tp, fp, fn = (end & truth).sum(0), (end & ~truth).sum(0), (~end & truth).sum(0)
    per_class = {K.CLASS_NAMES[c]: _f1(tp[c], fp[c], fn[c]) for c in range(_C) if tp[c] + fp[c] + fn[c] > 0}
    steps = np.maximum(length, 1)
    return {
        "runs": len(mask),
        "goal_accuracy": float(exact[rows, last].mean()),
        "goal_accuracy_mean": float((exact.sum(1) / steps).mean()),
        "goal_jaccard": float(((end & truth).sum(1) / np.maximum((end | truth).sum(1), 1)).mean()),
        "micro_precision": float(tp.sum() / max(tp.sum() + fp.sum(), 1)),
        "micro_recall": float(tp.sum() / max(tp.sum() + fn.sum(), 1)),
        "micro_f1": _f1(tp.sum(), fp.sum(), fn.sum()) or 0.0,
        "macro_f1": float(np.mean(list(per_class.values()))) if per_class else 0.0,
        "class_f1": per_class,
        "constraint_accuracy": float(right[rows, last].mean()),
        "constraint_accuracy_mean": float((right.sum(1) / steps).mean()),
    }


def evaluate(params: Any, data: dict, config: BMConfig) -> dict:
    """Returns ``{"all": scores, task name: scores, ...}`` (``scores``) of the model ``(config, params)`` on
    ``data`` (``record``'s runs), overall and per task, at ``config.threshold``."""
    probs, constraint = predict(params, data, config)
    task = np.asarray(data["task"])
    out = {"all": scores(probs, constraint, data, config.threshold)}
    for t in np.unique(task):
        rows = task == t
        out[K.TASKS[t]] = scores(probs[rows], constraint[rows], select(data, np.flatnonzero(rows)), config.threshold)
    return out
