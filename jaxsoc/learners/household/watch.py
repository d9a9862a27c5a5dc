"""The Watch stage's goal-inference model (Watch-And-Help §5.2-5.3, appendix C.1) and its metrics.

``GoalInference`` reads one of Alice's demonstrations and predicts her goal as a count per predicate:

- ``input="graph"`` (the paper's model): every step's observation goes through the shared ``StateEncoder``
  (a Transformer over the visible nodes, mean-pooled), an LSTM (``d`` units) runs over the steps, its outputs
  are averaged over the real steps, and 30 count classifiers (Linear ``d``, tanh, Linear to ``NUM_COUNTS``;
  one head giving ``[30, NUM_COUNTS]`` logits) read the average;
- ``input="last"`` (the paper's ablation): the same on the demonstration's last observation only;
- ``input="actions"`` (the paper's ablation): Alice's actions instead of observations, each embedded from its
  verb and its target node's class (not the node itself), through the same LSTM, average and classifiers.

Padding never changes an output: invisible nodes and steps past ``valid`` are masked out (``code_parity=True``
reproduces the original code's unmasked means over all node slots and all time steps instead; there the padded
steps repeat the final state, as the original repeats its final graph). ``max_frames`` keeps at most that many
observations, spread evenly over each demonstration (``subsample``), to spare the encoder on a CPU.

The metrics follow the original's ``evaluation/eval_pred.py``: goals are multisets of predicates, compared per
demonstration (``multiset_counts``) and pooled over demonstrations (``scores``); ``chance_counts`` is the
chance baseline.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxsoc.envs.household import classes as C
from jaxsoc.envs.household import predicates as PR
from jaxsoc.envs.household import tasks as T
from jaxsoc.envs.household import world as W
from jaxsoc.learners.household.encoder import StateEncoder, masked_mean

#: the largest count any predicate has in a goal (``predicates.count_ranges``: 2)
MAX_COUNT = int(PR.count_ranges()[1].max())
NUM_COUNTS = MAX_COUNT + 1
INPUTS = ("graph", "last", "actions")


@dataclasses.dataclass(frozen=True)
class WatchConfig:
    """The goal-inference model and its training (defaults: the paper's model, the original's optimiser).

    - ``d``: width of the node embeddings, the LSTM and the classifiers; ``heads``: the Transformer's heads;
      ``dropout``: in the Transformer and between the classifiers' layers (training only).
    - ``input``: ``"graph"`` (every observation), ``"last"`` (the last observation) or ``"actions"``.
    - ``lr``, ``batch``, ``epochs``: Adam's step size, demonstrations per step, passes over the training set.
    - ``max_frames``: keep at most this many observations per demonstration, evenly spread (None: all).
    - ``code_parity``: the original code's unmasked means (over all node slots and all padded time steps).
    - ``validation_fraction``: share of the demonstrations held out to validate; ``seed``: initialisation,
      data order and the validation split.
    """

    d: int = 128
    heads: int = 2
    dropout: float = 0.0
    input: str = "graph"
    lr: float = 3e-4
    batch: int = 8
    epochs: int = 20
    max_frames: int | None = None
    code_parity: bool = False
    validation_fraction: float = 0.05
    seed: int = 0

    def __post_init__(self) -> None:
        if self.input not in INPUTS:
            raise ValueError(f"WatchConfig.input must be one of {list(INPUTS)}, got {self.input!r}")
        for name in ("d", "heads", "batch", "epochs"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"WatchConfig.{name} must be a positive integer, got {getattr(self, name)!r}")
        if self.d % 2 or self.d % self.heads:
            raise ValueError(f"WatchConfig.d must be even and divisible by heads, got d={self.d}, heads={self.heads}")
        if self.max_frames is not None and (not isinstance(self.max_frames, int) or self.max_frames < 1):
            raise ValueError(f"WatchConfig.max_frames must be None or a positive integer, got {self.max_frames!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"WatchConfig.dropout must be in [0, 1), got {self.dropout}")
        if not 0.0 <= self.validation_fraction < 1.0:
            raise ValueError(f"WatchConfig.validation_fraction must be in [0, 1), got {self.validation_fraction}")
        if not self.lr > 0:
            raise ValueError(f"WatchConfig.lr must be positive, got {self.lr}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# ---------------------------------------------------------------------------------------------------- inputs


def subsample(obs: dict, valid: jax.Array, max_frames: int) -> tuple[dict, jax.Array]:
    """Returns ``(obs, valid)`` with at most ``max_frames`` steps per demonstration (``obs`` leading ``[B, T]``,
    ``valid`` bool[B, T], real steps first): ``n = min(length, max_frames)`` steps spread evenly over the
    demonstration's ``length`` real steps (its first and last included), then its last real step repeated;
    ``valid`` bool[B, max_frames] marks the ``n``. Unchanged when ``T <= max_frames``."""
    steps = valid.shape[1]
    if steps <= max_frames:
        return obs, valid
    length = jnp.maximum(valid.sum(1), 1)[:, None]  # [B, 1]
    n = jnp.minimum(length, max_frames)
    k = jnp.arange(max_frames)[None, :]
    index = jnp.where(k < n, k * (length - 1) // jnp.maximum(n - 1, 1), length - 1)  # [B, F]

    def take(x):
        return jnp.take_along_axis(x, index.reshape(*index.shape, *([1] * (x.ndim - 2))), axis=1)

    return jax.tree_util.tree_map(take, obs), k < n


def last_observation(obs: dict, valid: jax.Array) -> dict:
    """Returns each demonstration's last real observation as a 1-step sequence (leading ``[B, 1]``)."""
    last = jnp.maximum(valid.sum(1) - 1, 0)
    return jax.tree_util.tree_map(lambda x: jax.vmap(lambda a, t: a[t][None])(x, last), obs)


def target_classes(tasks: W.State, actions: jax.Array) -> jax.Array:
    """Returns ``int32[B, T]``: the class of each action's target node (``tasks``: the demonstrations'
    ``world.State`` [B]; node classes never change in an episode). The ``"actions"`` input reads it as
    ``batch["target_class"]``."""
    _, target = W.decode_action(actions)
    return jnp.take_along_axis(jnp.asarray(tasks.nodes.cls, jnp.int32), target, axis=1)


# ---------------------------------------------------------------------------------------------------- model


class GoalInference(nn.Module):
    """Returns count logits float32[B, 30, NUM_COUNTS] of a batch (``Demos.batch``'s dict: ``obs`` with
    leading ``[B, T]``, ``actions`` int32[B, T], ``valid`` bool[B, T]; ``input="actions"`` reads
    ``target_class`` int32[B, T] (``target_classes``) instead of ``obs``)."""

    config: WatchConfig

    @nn.compact
    def __call__(self, batch: dict, train: bool = False) -> jax.Array:
        cfg = self.config
        valid = jnp.asarray(batch["valid"], bool)
        if cfg.input == "actions":
            if "target_class" not in batch:
                raise ValueError('the "actions" input needs batch["target_class"] (watch.target_classes)')
            verb, _ = W.decode_action(batch["actions"])
            half = cfg.d // 2
            x = jnp.concatenate(
                [
                    nn.Embed(W.NUM_VERBS, half, name="verb")(verb),
                    nn.Embed(C.NUM_CLASSES, half, name="target_class")(batch["target_class"]),
                ],
                -1,
            )
            x = nn.Dense(cfg.d, name="action")(nn.relu(x))
        else:
            obs = batch["obs"]
            if cfg.input == "last":
                obs, valid = last_observation(obs, valid), jnp.ones((valid.shape[0], 1), bool)
            elif cfg.max_frames is not None:
                obs, valid = subsample(obs, valid, cfg.max_frames)
            encoder = StateEncoder(cfg.d, cfg.heads, cfg.dropout, cfg.code_parity, name="encoder")
            x = encoder(obs, train)[1]  # [B, T, d]
        h = nn.RNN(nn.OptimizedLSTMCell(cfg.d), name="lstm")(x)
        pooled = h.mean(1) if cfg.code_parity else masked_mean(jnp.where(valid[..., None], h, 0.0), valid, axis=1)
        z = nn.tanh(nn.Dense(cfg.d, name="classifier_0")(pooled))
        z = nn.Dropout(cfg.dropout, deterministic=not train)(z)
        logits = nn.Dense(PR.NUM_PREDICATES * NUM_COUNTS, name="classifier_1")(z)
        return logits.reshape(-1, PR.NUM_PREDICATES, NUM_COUNTS)


@functools.lru_cache(maxsize=1)
def _observation_shapes() -> dict:
    task = jax.eval_shape(lambda: T.generate(jax.random.key(0), jnp.int32(0), jnp.array([0, -1], jnp.int32)))
    return jax.eval_shape(lambda s: W.observe(s, 0, False), task)


def example_batch(batch: int = 1, steps: int = 1) -> dict:
    """Returns an all-padding batch of ``Demos.batch``'s layout (``obs``, ``actions``, ``valid``,
    ``target_class``; leading ``[batch, steps]``), e.g. to initialise parameters."""
    obs = jax.tree_util.tree_map(lambda s: jnp.zeros((batch, steps, *s.shape), s.dtype), _observation_shapes())
    zeros = jnp.zeros((batch, steps), jnp.int32)
    return {"obs": obs, "actions": zeros, "valid": jnp.zeros((batch, steps), bool), "target_class": zeros}


@functools.lru_cache(maxsize=8)
def _init(config: WatchConfig):
    return jax.jit(lambda key: GoalInference(config).init(key, example_batch())["params"])


def init_params(config: WatchConfig, key: jax.Array) -> Any:
    """Returns fresh parameters of ``GoalInference(config)``."""
    return _init(config)(key)


# ---------------------------------------------------------------------------------------------------- maths


def loss(logits: jax.Array, goal_count: jax.Array) -> jax.Array:
    """Returns the mean cross-entropy (a scalar) of the 30 count classifiers' ``logits`` float32[B, 30,
    NUM_COUNTS] against the goals ``goal_count`` int[B, 30] (counts above ``MAX_COUNT`` count as it)."""
    labels = jnp.clip(jnp.asarray(goal_count, jnp.int32), 0, MAX_COUNT)
    return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()


def predict(logits: jax.Array) -> jax.Array:
    """Returns int32[B, 30]: the most likely count of every predicate."""
    return jnp.argmax(logits, -1).astype(jnp.int32)


def multiset_counts(pred, true) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Returns ``(tp, fp, fn)`` int64[N] per demonstration for predicted and true goals (counts int[N, 30], or
    [30]), as multisets of predicates: ``tp`` = sum of ``min(pred, true)``, ``fp`` = sum of ``max(pred - true,
    0)``, ``fn`` = sum of ``max(true - pred, 0)``."""
    pred, true = np.atleast_2d(np.asarray(pred, np.int64)), np.atleast_2d(np.asarray(true, np.int64))
    if pred.shape != true.shape:
        raise ValueError(f"predicted and true goals differ in shape: {pred.shape} vs {true.shape}")
    tp = np.minimum(pred, true).sum(-1)
    return tp, (pred - np.minimum(pred, true)).sum(-1), (true - np.minimum(pred, true)).sum(-1)


def scores(pred, true) -> dict[str, float]:
    """Returns ``{"precision", "recall", "f1", "accuracy"}`` of predicted vs true goals (counts int[N, 30]):
    true/false positives and false negatives (``multiset_counts``) summed over the demonstrations, then
    precision = TP / (TP + FP), recall = TP / (TP + FN) (0 when undefined) and F1 their harmonic mean;
    accuracy = the share of demonstrations predicted exactly (FP = FN = 0)."""
    tp, fp, fn = multiset_counts(pred, true)
    tp_sum, fp_sum, fn_sum = (int(x.sum()) for x in (tp, fp, fn))
    precision = tp_sum / (tp_sum + fp_sum) if tp_sum + fp_sum else 0.0
    recall = tp_sum / (tp_sum + fn_sum) if tp_sum + fn_sum else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "accuracy": float(np.mean((fp + fn) == 0))}


def chance_counts(key: jax.Array, train_goal_counts, n: int) -> np.ndarray:
    """Returns int8[n, 30]: the chance baseline's guesses. Chance = the goal of a training demonstration drawn
    uniformly at random (with replacement) from ``train_goal_counts`` int[M, 30], independently of the
    demonstration watched: it knows which goals occur, not which one is shown."""
    goals = np.asarray(train_goal_counts, np.int8)
    if goals.ndim != 2 or not len(goals):
        raise ValueError(f"chance_counts needs training goals int[M, 30] with M >= 1, got shape {goals.shape}")
    return goals[np.asarray(jax.random.randint(key, (n,), 0, len(goals)))]
