"""The behaviour-modelling (BM) helper of CHAIC: a learned model of the constrained agent, and the RHP acting on it.

The paper's LLM+BM helper (section 4.1) recognises the constrained agent's actions and their outcomes and lets a
language model decide; appendix E.3's SmartHelp predicts its goal and constraint from the helper's observations.
Here a small recurrent model plays that part and the rule-based RHP planner acts on its prediction:

- ``features(obs)``: what one helper observation (``observation.observe(state, HELPER)``) shows of the constrained
  agent and its surroundings, as ``float32[NUM_FEATURES]`` (``FEATURES`` lists the blocks): whether the partner is
  visible, its action kind, the class its pick / put is about, its status, the classes in its hands, the height of
  the visible object of that class nearest to it (and that height again when the action failed or succeeded), its
  distance, the child, the goal place and its height, the episode's time, and the classes of the visible objects
  by where they are (free, held by the helper, held by another agent, in a container, on the goal place). Only
  the observation is read.
- ``BehaviourModel`` (flax): a GRU over the helper's steps (one step each time the helper is ready to act) beside a
  running maximum of the features (what was ever observed), and two heads: ``targets`` (multi-label logits over
  the classes: class ``c`` is in the goal, ``goal_count[c] > 0``) and ``constraint`` (logits over ``CONSTRAINTS``,
  the constrained agents' abilities).
- ``record(...)``: runs the rule-based constrained agent with the RHP (or the paper's random) helper on a split's
  episodes, vmapped and jitted, and keeps the features of every helper step with the labels.
- ``train(config, out)``: Adam on the targets' binary cross-entropy plus the constraint's cross-entropy at every
  real step (the model must infer online), a run directory as ``jaxsoc train`` writes (``run.json``,
  ``metrics.csv`` / ``metrics.json``, ``curves.png``, ``report.json``, ``checkpoints/``).
- ``evaluate(params, data, config)``: goal accuracy (the predicted target set equals the true one: at the last
  helper step and averaged over the steps), the sets' Jaccard index, per-class F1, constraint accuracy, per task
  and overall. (The paper's
  IA is another quantity: the helper's useful pick-ups ratio, ``envs.chaic.metrics``.)
- ``BMHelper``: an agent for ``play.play`` / ``play.make_player``: each act it observes, advances the model, hands
  the RHP the predicted target classes (those of probability above ``threshold`` among the task's possible
  targets; all possible targets while none is predicted) as the goal it fetches for, and acts as the RHP.
  ``load_bm_helper(run)`` rebuilds it from a run directory.

The helper reads the task id only as the RHP does (``agents.possible_target_classes``); the model never sees it.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from pathlib import Path
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct
from tqdm.auto import tqdm

from jaxsoc.envs.chaic import agents as A
from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.envs.chaic import observation as O
from jaxsoc.envs.chaic import play as P
from jaxsoc.envs.chaic import state as S
from jaxsoc.envs.chaic import tasks as T
from jaxsoc.envs.chaic import world as W
from jaxsoc.learners.checkpoint import Checkpointer
from jaxsoc.learners.networks.layers import GRUCell
from jaxsoc.learners.run_log import MetricsLog, read_run_json, write_json

KIND = "chaic-bm"
RUN_JSON, REPORT_JSON, CHECKPOINTS = "run.json", "report.json", "checkpoints"
HELPERS = ("rhp", "random")  # the rule-based helpers beside which episodes are recorded
RECORD_CHUNK = 64  # runs recorded per jitted call
SCORED_TRAIN_RUNS = 128  # training runs (evenly spread) scored after each epoch
TARGET_BIAS = -2.0  # the targets head's initial bias: a goal holds few of the classes (sigmoid(-2) = 0.12)
#: the constrained agents' abilities, the constraint head's classes (``catalogue.TASK_ABILITY``'s values)
CONSTRAINTS = tuple(dict.fromkeys(K.TASK_ABILITY.values()))
TASK_CONSTRAINT = np.array([CONSTRAINTS.index(K.TASK_ABILITY[t]) for t in K.TASKS], np.int32)
_C = K.NUM_CLASSES
#: the feature blocks, in order: (name, width)
FEATURES = (
    ("partner_visible", 1),
    ("partner_action", len(S.ACTION_NAMES) + 1),
    ("partner_target", _C),
    ("partner_status", 3),
    ("partner_hands", _C),
    ("target_height", 1),
    ("target_found", 1),
    ("failed_height", 1),
    ("succeeded_height", 1),
    ("partner_distance", 1),
    ("child_visible", 1),
    ("goal_visible", 1),
    ("goal_height", 1),
    ("time", 1),
    *((f"where_{name}", _C) for name in O.WHERE_NAMES),
)
NUM_FEATURES = sum(width for _, width in FEATURES)


# ---------------------------------------------------------------------------------------------------- config


@dataclasses.dataclass(frozen=True)
class BMConfig:
    """The behaviour model, its data and its training.

    - ``embed``, ``hidden``: widths of the input embedding and of the GRU; ``pool``: the running maximum of the
      features beside the GRU (``BehaviourModel``).
    - ``lr``, ``batch``, ``epochs``: Adam's step size, sequences per step, passes over the training sequences;
      ``constraint_weight``: the constraint's cross-entropy weight beside the targets' (summed over classes).
    - data: ``tasks`` (comma-separated names of ``catalogue.TASKS``, or ``"all"``), ``episodes`` (train-split
      episodes per task: more of them bring more distinct goals, more ``seeds`` only other runs of the same),
      ``seeds`` (runs recorded per episode), ``helper`` (``HELPERS``: beside which rule-based helper the
      constrained agent is recorded), ``max_events`` (events simulated per episode) and ``max_steps`` (helper
      steps kept per episode: the sequences' length); ``eval_episodes`` test-split episodes per task (1 run each)
      evaluate the model after every epoch.
    - ``threshold``: a class is predicted in the goal above this probability (accuracies and ``BMHelper``).
    - ``checkpoint_every``: epochs between checkpoints (the last epoch is always saved).
    - ``seed``: initialisation, recording keys and data order.
    """

    embed: int = 128
    hidden: int = 128
    pool: bool = True
    lr: float = 1e-3
    batch: int = 16
    epochs: int = 15
    constraint_weight: float = 1.0
    tasks: str = "all"
    episodes: int = 64
    seeds: int = 1
    helper: str = "rhp"
    max_events: int = P.DEFAULT_MAX_EVENTS
    max_steps: int = 512
    eval_episodes: int = T.TEST_EPISODES
    threshold: float = 0.5
    checkpoint_every: int = 1
    seed: int = 0

    def __post_init__(self) -> None:
        sizes = ("embed", "hidden", "batch", "epochs", "episodes", "seeds", "max_events", "max_steps")
        for name in (*sizes, "checkpoint_every"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"BMConfig.{name} must be a positive integer, got {value!r}")
        if not isinstance(self.eval_episodes, int) or not 0 <= self.eval_episodes <= T.TEST_EPISODES:
            raise ValueError(f"BMConfig.eval_episodes must be in 0..{T.TEST_EPISODES}, got {self.eval_episodes!r}")
        if self.helper not in HELPERS:
            raise ValueError(f"BMConfig.helper must be one of {list(HELPERS)}, got {self.helper!r}")
        if not self.lr > 0 or not self.constraint_weight >= 0:
            raise ValueError(
                f"BMConfig.lr must be positive and constraint_weight >= 0, got {self.lr}, {self.constraint_weight}"
            )
        if not 0.0 < self.threshold < 1.0:
            raise ValueError(f"BMConfig.threshold must be in (0, 1), got {self.threshold}")
        self.task_names()

    def task_names(self) -> tuple[str, ...]:
        """Returns the tasks of ``tasks`` (all of ``catalogue.TASKS`` for ``"all"``). Raises ``ValueError`` for an
        unknown name."""
        if self.tasks == "all":
            return K.TASKS
        names = tuple(name.strip() for name in self.tasks.split(",") if name.strip())
        unknown = [name for name in names if name not in K.TASK]
        if unknown or not names:
            raise ValueError(f"BMConfig.tasks: unknown CHAIC task(s) {unknown}; choose from {list(K.TASKS)} or 'all'")
        return names

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# ---------------------------------------------------------------------------------------------------- features


def _multi_hot(cls: jax.Array, on: jax.Array | bool = True) -> jax.Array:
    """Returns ``float32[NUM_CLASSES]``: 1 at the classes ``cls`` (any shape) where ``on``, class 0 (none) left 0."""
    on = jnp.broadcast_to(jnp.asarray(on, jnp.float32), cls.shape)
    return jnp.zeros(_C, jnp.float32).at[cls.astype(jnp.int32).ravel()].max(on.ravel()).at[0].set(0.0)


def _features(obs: dict) -> jax.Array:
    objects = obs["objects"]
    vis = objects["visible"]
    cls = objects["cls"].astype(jnp.int32)
    seen = obs["partner_visible"].astype(jnp.float32)
    action = obs["partner_action"].astype(jnp.int32)
    target = obs["partner_target"].astype(jnp.int32)
    status = obs["partner_status"].astype(jnp.int32)
    # the visible object of the class the partner's action is about that is nearest to the partner
    dist = jnp.linalg.norm(objects["rel_pos"] - obs["partner_pose"][:2], axis=-1)
    candidate = vis & (cls == target) & (target > 0) & obs["partner_visible"]
    found = candidate.any()
    height = jnp.where(found, objects["height"][jnp.argmin(jnp.where(candidate, dist, jnp.inf))], 0.0)
    where = objects["where"].astype(jnp.int32)
    by_where = [_multi_hot(cls, vis & (where == i)) for i in range(len(O.WHERE_NAMES))]
    parts = [
        seen[None],
        jax.nn.one_hot(action, len(S.ACTION_NAMES) + 1),
        jax.nn.one_hot(target, _C),
        jax.nn.one_hot(status, 3) * seen,
        _multi_hot(obs["partner_hands"]),
        height[None],
        found.astype(jnp.float32)[None],
        jnp.where(status == S.FAILED, height, 0.0)[None] * seen,
        jnp.where(status == S.SUCCEEDED, height, 0.0)[None] * seen,
        (jnp.linalg.norm(obs["partner_pose"][:2]) / W.VIEW_DIST)[None] * seen,
        obs["child_visible"].astype(jnp.float32)[None],
        obs["goal_visible"].astype(jnp.float32)[None],
        obs["goal_height"].astype(jnp.float32)[None],
        obs["time"].astype(jnp.float32)[None],
        *by_where,
    ]
    return jnp.concatenate(parts).astype(jnp.float32)


def features(obs: dict) -> jax.Array:
    """Returns ``float32[..., NUM_FEATURES]``: the BM features (``FEATURES``, module docstring) of helper
    observations (``observation.observe`` dicts, any leading batch axes). Reads nothing but ``obs``."""
    batch_axes = jnp.ndim(obs["partner_visible"])
    fn = _features
    for _ in range(batch_axes):
        fn = jax.vmap(fn)
    return fn(obs)


# ---------------------------------------------------------------------------------------------------- model


class BehaviourModel(nn.Module):
    """A GRU beside a running maximum of the features. One step (``__call__((h, m), x)``): the memory ``m`` float32[...,
    NUM_FEATURES] becomes ``max(m, x)`` (what was ever observed: every class ever seen in the partner's hands, on
    the goal place, ...), Dense(``embed``) + ReLU of ``[x, m]`` feeds the GRU (``h`` float32[..., hidden]) and two
    linear heads read ``[h, m]``; it returns ``((h', m'), targets float32[..., NUM_CLASSES], constraint
    float32[..., len(CONSTRAINTS)])`` (logits). Without ``pool`` ``m`` is left out of the input and the heads (the
    GRU alone). ``encode``, ``recur`` and ``heads`` are its parts (``logits`` runs a whole sequence with them)."""

    embed: int
    hidden: int
    pool: bool = True

    def setup(self) -> None:
        self.input = nn.Dense(self.embed)
        self.gru = GRUCell(self.hidden)
        self.targets = nn.Dense(_C, bias_init=nn.initializers.constant(TARGET_BIAS))
        self.constraint = nn.Dense(len(CONSTRAINTS))

    def _with(self, y: jax.Array, m: jax.Array) -> jax.Array:
        return jnp.concatenate([y, m], -1) if self.pool else y

    def encode(self, x: jax.Array, m: jax.Array) -> jax.Array:
        return nn.relu(self.input(self._with(x, m)))

    def recur(self, h: jax.Array, z: jax.Array) -> jax.Array:
        return self.gru(h, z)[0]

    def heads(self, h: jax.Array, m: jax.Array) -> tuple[jax.Array, jax.Array]:
        y = self._with(h, m)
        return self.targets(y), self.constraint(y)

    def __call__(self, carry: tuple[jax.Array, jax.Array], x: jax.Array):
        h, m = carry
        m = jnp.maximum(m, x)
        h = self.recur(h, self.encode(x, m))
        return ((h, m), *self.heads(h, m))


def model(config: BMConfig) -> BehaviourModel:
    """Returns the ``BehaviourModel`` of ``config``."""
    return BehaviourModel(config.embed, config.hidden, config.pool)


def initial_carry(config: BMConfig) -> tuple[jax.Array, jax.Array]:
    """Returns the model's state before the first step: ``(h float32[hidden], m float32[NUM_FEATURES])``, zeros."""
    return jnp.zeros((config.hidden,), jnp.float32), jnp.zeros((NUM_FEATURES,), jnp.float32)


def init_params(config: BMConfig, key: jax.Array) -> Any:
    """Returns fresh parameters of ``config``'s model."""
    return model(config).init(key, initial_carry(config), jnp.zeros((NUM_FEATURES,), jnp.float32))["params"]


def logits(config: BMConfig, params: Any, feats: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Returns ``(targets float32[..., T, NUM_CLASSES], constraint float32[..., T, len(CONSTRAINTS)])``: the model's
    logits after each step of the sequences ``feats`` float32[..., T, NUM_FEATURES] (from ``initial_carry``; the
    same as stepping ``BehaviourModel`` through them)."""
    net = model(config)
    variables = {"params": params}
    pooled = jax.lax.cummax(feats, axis=feats.ndim - 2)
    z = jnp.moveaxis(net.apply(variables, feats, pooled, method=BehaviourModel.encode), -2, 0)

    def body(h, z_t):
        h = net.apply(variables, h, z_t, method=BehaviourModel.recur)
        return h, h

    _, hs = jax.lax.scan(body, jnp.zeros((*z.shape[1:-1], config.hidden), jnp.float32), z)
    return net.apply(variables, jnp.moveaxis(hs, 0, -2), pooled, method=BehaviourModel.heads)


def _step_losses(config: BMConfig, targets: jax.Array, constraint: jax.Array, data: dict) -> jax.Array:
    """Returns ``float32[B, L]``: each step's targets binary cross-entropy (summed over the classes) plus
    ``constraint_weight`` times its constraint cross-entropy, 0 on padding."""
    bce = optax.sigmoid_binary_cross_entropy(targets, data["targets"][:, None, :].astype(jnp.float32)).sum(-1)
    labels = jnp.broadcast_to(data["constraint"][:, None], constraint.shape[:-1])
    ce = optax.softmax_cross_entropy_with_integer_labels(constraint, labels)
    return (bce + config.constraint_weight * ce) * data["mask"]


def loss(config: BMConfig, params: Any, data: dict) -> jax.Array:
    """Returns ``float32``: the mean over the real steps (``data["mask"]``) of each step's targets binary
    cross-entropy (summed over the classes) plus ``constraint_weight`` times its constraint cross-entropy (``data``:
    ``record``'s layout, any number of runs)."""
    per_step = _step_losses(config, *logits(config, params, data["features"]), data)
    return per_step.sum() / jnp.maximum(data["mask"].sum(), 1)


# ---------------------------------------------------------------------------------------------------- data


@functools.partial(jax.jit, static_argnames=("max_events", "max_steps"))
def _rollout(states: S.State, keys: jax.Array, timing: W.Timing, random: jax.Array, max_events: int, max_steps: int):
    """Runs ``B`` episodes of the constrained agent and the RHP helper (the random helper where ``random``: the
    role is data in the rule agents' memory, so both share this compilation; the keys are split as in
    ``play.play``, so the episodes are the same) and returns ``(features float32[B, max_steps, NUM_FEATURES],
    steps int32[B] (helper steps, possibly more than max_steps), final State)``."""

    def init(state, key):
        k_main, k_helper, k_run = jax.random.split(key, 3)
        helper = A.RuleAgent("rhp").init(k_helper, state, S.HELPER).replace(random=jnp.asarray(random, bool))
        mems = jax.tree_util.tree_map(lambda a, b: jnp.stack([a, b]), A.RuleAgent("main").init(k_main, state), helper)
        return state, mems, k_run, jnp.zeros((max_steps, NUM_FEATURES), jnp.float32), jnp.int32(0)

    def event(state, mems, key, buffer, count):
        key, k_m, k_h, k_s = jax.random.split(key, 4)
        done = P.finished(state)
        ready = W.ready(state) & ~done
        x = features(O.observe(state, S.HELPER, False, timing.view_dist))
        buffer = buffer.at[jnp.where(ready[S.HELPER], count, max_steps)].set(x, mode="drop")
        count = count + ready[S.HELPER].astype(jnp.int32)
        acts, news = jax.vmap(A.rule_act, in_axes=(0, 0, None, None))(jnp.stack([k_m, k_h]), mems, state, timing)
        pick = lambda new, old: jnp.where(ready[:2].reshape((2,) + (1,) * (new.ndim - 1)), new, old)  # noqa: E731
        mems = jax.tree_util.tree_map(pick, news, mems)
        stepped, _ = W.step_event(k_s, state, acts.astype(jnp.int32), timing)
        return W.jnp_select(done, state, stepped), mems, key, buffer, count

    def body(carry, _):
        step = lambda c: jax.vmap(event)(*c)  # noqa: E731
        return jax.lax.cond(jax.vmap(P.finished)(carry[0]).all(), lambda c: c, step, carry), None

    carry, _ = jax.lax.scan(body, jax.vmap(init)(states, keys), None, length=max_events)
    final, _, _, buffer, count = carry
    return buffer, count, final


def record(
    tasks: list[str] | tuple[str, ...],
    split: str = "train",
    episodes: int | None = None,
    seeds: int = 1,
    helper: str = "rhp",
    max_events: int = P.DEFAULT_MAX_EVENTS,
    max_steps: int | None = None,
    seed: int = 0,
    chunk: int | None = None,
    timing: W.Timing | None = None,
) -> dict:
    """Records the constrained agent (``agents.RuleAgent("main")``) beside the rule-based ``helper`` (``HELPERS``)
    on the first ``episodes`` episodes (default all) of ``split`` of each task, ``seeds`` runs each (keys from
    ``seed`` and the task), ``chunk`` runs per jitted call (default ``min(RECORD_CHUNK, runs)``; the last call
    padded to it: one compilation per chunk size), and returns, with ``N = len(tasks) * episodes * seeds`` runs
    (task-major, then episode, then seed) and ``L = max_steps`` (default ``max_events``):

    - ``features`` float32[N, L, NUM_FEATURES]: the helper's observation at each of its steps (each event at which
      it was ready), in order, zero after the last; ``mask`` bool[N, L]: the real steps;
    - ``targets`` bool[N, NUM_CLASSES] (``goal_count > 0``), ``constraint`` int32[N] (index in ``CONSTRAINTS``),
      ``task`` int32[N] (index in ``catalogue.TASKS``), ``episode`` int32[N] (in the split);
    - ``steps`` int32[N] (helper steps, more than ``L`` where the sequence was cut), ``complete`` bool[N] (the
      episode ended within ``max_events``), ``transport_rate`` float32[N].

    Everything stays on the device. Raises ``ValueError`` for an unknown task, split or helper or a non-positive
    count."""
    for task in tasks:
        T.check_task(task)
    T.check_split(split)
    if helper not in HELPERS:
        raise ValueError(f"unknown recording helper {helper!r}; choose from {list(HELPERS)}")
    max_steps = max_events if max_steps is None else max_steps
    for name, value in (("episodes", episodes), ("seeds", seeds), ("max_events", max_events), ("chunk", chunk)):
        if value is not None and (not isinstance(value, int) or value < 1):
            raise ValueError(f"record: {name} must be a positive integer, got {value!r}")
    if not tasks or not isinstance(max_steps, int) or max_steps < 1:
        raise ValueError(f"record needs at least one task and a positive max_steps, got {tasks!r}, {max_steps!r}")
    timing = W.Timing() if timing is None else timing
    runs, keys = [], []
    for task in tasks:
        states = T.cached_split(task, split).states
        count = int(states.total.shape[0]) if episodes is None else min(episodes, int(states.total.shape[0]))
        runs.append(jax.tree_util.tree_map(lambda x, n=count: jnp.repeat(x[:n], seeds, axis=0), states))
        keys.append(jax.random.split(jax.random.fold_in(jax.random.key(seed), K.TASK[task]), count * seeds))
    states = jax.tree_util.tree_map(lambda *xs: jnp.concatenate(xs), *runs)
    keys = jnp.concatenate(keys)
    n = int(keys.shape[0])
    chunk = min(RECORD_CHUNK, n) if chunk is None else chunk
    parts = []
    for start in range(0, n, chunk):
        rows = jnp.minimum(jnp.arange(start, start + chunk), n - 1)
        batch = jax.tree_util.tree_map(lambda x, r=rows: x[r], states)
        feats, steps, final = _rollout(batch, keys[rows], timing, helper == "random", max_events, max_steps)
        parts.append((feats, steps, jax.vmap(P.finished)(final), jax.vmap(W.transport_rate)(final)))
    feats, steps, complete, rate = (jnp.concatenate(xs)[:n] for xs in zip(*parts))
    task = states.task.astype(jnp.int32)
    return {
        "features": feats,
        "mask": jnp.arange(max_steps)[None, :] < steps[:, None],
        "targets": states.goal_count > 0,
        "constraint": jnp.asarray(TASK_CONSTRAINT)[task],
        "task": task,
        "episode": states.episode.astype(jnp.int32),
        "steps": steps,
        "complete": complete,
        "transport_rate": rate,
    }


def select(data: dict, rows: Any) -> dict:
    """Returns the runs ``rows`` (int[M] or bool[N]) of ``record``'s data."""
    rows = jnp.asarray(rows)
    return {name: value[rows] for name, value in data.items()}


# ---------------------------------------------------------------------------------------------------- evaluation


@functools.partial(jax.jit, static_argnames="config")
def _forward(config: BMConfig, params: Any, data: dict):
    """Returns ``(targets float32[B, L, C] probabilities, constraint int32[B, L], loss sum float32[B], real steps
    float32[B])`` of a chunk of ``record``'s runs."""
    targets, constraint = logits(config, params, data["features"])
    per_run = _step_losses(config, targets, constraint, data).sum(-1)
    mask = data["mask"].astype(jnp.float32)
    return jax.nn.sigmoid(targets), jnp.argmax(constraint, -1).astype(jnp.int32), per_run, mask.sum(-1)


def _forward_all(params: Any, data: dict, config: BMConfig, chunk: int = 64) -> tuple[np.ndarray, ...]:
    """``_forward`` over all of ``data``, ``chunk`` runs at a time (the last chunk padded); numpy results."""
    n = int(data["mask"].shape[0])
    chunk = max(1, min(chunk, n))
    fields = ("features", "mask", "targets", "constraint")
    out = []
    for start in range(0, n, chunk):
        rows = jnp.minimum(jnp.arange(start, start + chunk), n - 1)
        out.append(jax.device_get(_forward(_model_config(config), params, {k: data[k][rows] for k in fields})))
    return tuple(np.concatenate(xs)[:n] for xs in zip(*out))


def predict(params: Any, data: dict, config: BMConfig, chunk: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """Returns ``(targets float32[N, L, NUM_CLASSES], constraint int32[N, L])``: after each step of ``data``'s
    sequences (``record``), the probability of each class being in the goal and the predicted constraint (index in
    ``CONSTRAINTS``), computed ``chunk`` runs at a time."""
    probs, constraint, _, _ = _forward_all(params, data, config, chunk)
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


# ---------------------------------------------------------------------------------------------------- the helper


class BMMemory(struct.PyTreeNode):
    """``BMHelper``'s memory: ``rule`` (the RHP's ``agents.AgentMemory``), the model's state ``h`` float32[hidden]
    (the GRU) and ``m`` float32[NUM_FEATURES] (the running maximum), ``targets`` float32[NUM_CLASSES] (the latest
    goal probabilities) and ``constraint`` float32[len(CONSTRAINTS)] (the latest constraint probabilities)."""

    rule: A.AgentMemory
    h: jax.Array
    m: jax.Array
    targets: jax.Array
    constraint: jax.Array


@dataclasses.dataclass(frozen=True, eq=False)
class BMHelper:
    """The BM helper (module docstring): ``agents.RuleAgent``'s interface (``init``, ``act``), for ``play.play``
    and ``play.make_player``. ``threshold`` defaults to ``config.threshold``."""

    params: Any
    config: BMConfig
    threshold: float | None = None

    def init(self, key: jax.Array, state: S.State, agent: int | jax.Array = S.HELPER) -> BMMemory:
        """Returns the memory at the start of the episode ``state``: the RHP's, the model's at 0, no prediction."""
        h, m = initial_carry(self.config)
        return BMMemory(
            rule=A.RuleAgent("rhp").init(key, state, agent),
            h=h,
            m=m,
            targets=jnp.zeros((_C,), jnp.float32),
            constraint=jnp.full((len(CONSTRAINTS),), 1.0 / len(CONSTRAINTS), jnp.float32),
        )

    def act(self, key: jax.Array, memory: BMMemory, state: S.State, timing: W.Timing = A.DEFAULT_TIMING):
        """Returns ``(action int32, memory)``: observe, advance the model, set the RHP's goal to the predicted target
        classes (among the task's possible targets; all of them while none is predicted), act as the RHP (call it
        only when the helper is ready, as ``play`` does)."""
        x = features(O.observe(state, S.HELPER, False, timing.view_dist))
        (h, m), targets, constraint = model(self.config).apply({"params": self.params}, (memory.h, memory.m), x)
        probs = jax.nn.sigmoid(targets)
        threshold = self.config.threshold if self.threshold is None else self.threshold
        possible = A.possible_target_classes(state.task)
        chosen = (probs > threshold) & possible
        goal = jnp.where(chosen.any(), chosen, possible).astype(jnp.int8)
        action, rule = A.rule_act(key, memory.rule.replace(goal_count=goal), state, timing)
        return action, BMMemory(rule=rule, h=h, m=m, targets=probs, constraint=jax.nn.softmax(constraint))


@dataclasses.dataclass(frozen=True, eq=False)
class BMPartner:
    """The behaviour model as the options view's partner model (``envs.chaic.options.PartnerModel``): its state is
    ``(h, m)`` (``initial_carry``), and each step reads the helper's observation through ``features`` and returns
    the goal's class probabilities (sigmoid of ``targets``) and the constraint's (softmax), as ``BMHelper`` computes
    them."""

    params: Any
    config: BMConfig

    @property
    def num_constraints(self) -> int:
        return len(CONSTRAINTS)

    def init(self) -> tuple[jax.Array, jax.Array]:
        """Returns ``initial_carry(config)``."""
        return initial_carry(self.config)

    def step(self, carry: tuple[jax.Array, jax.Array], obs: dict):
        """Returns ``((h, m), targets float32[NUM_CLASSES], constraint float32[len(CONSTRAINTS)])`` after one helper
        observation ``obs`` (``observation.observe``)."""
        carry, targets, constraint = model(self.config).apply({"params": self.params}, carry, features(obs))
        return carry, jax.nn.sigmoid(targets), jax.nn.softmax(constraint)


def load_partner(run: str | Path) -> BMPartner:
    """Returns the ``BMPartner`` of a ``chaic-bm`` run directory (``load``); raises ``ValueError`` as ``load``."""
    config, params = load(run)
    return BMPartner(params, config)


# ---------------------------------------------------------------------------------------------------- runs


def _model_meta(config: BMConfig) -> dict[str, Any]:
    return {
        "embed": config.embed,
        "hidden": config.hidden,
        "pool": config.pool,
        "features": [list(block) for block in FEATURES],
        "classes": _C,
        "constraints": list(CONSTRAINTS),
    }


def _checkpointer(run: Path, config: BMConfig) -> Checkpointer:
    """The run's checkpoints; a restore checks the kind, the config (all but ``epochs`` and ``checkpoint_every``)
    and the model layout."""
    saved = {k: v for k, v in config.to_dict().items() if k not in ("epochs", "checkpoint_every")}
    return Checkpointer(run / CHECKPOINTS, {"kind": KIND, "config": saved, "model_config": _model_meta(config)})


def _read_run(run: str | Path) -> dict[str, Any]:
    return read_run_json(run, KIND)


def _fresh_state(config: BMConfig, optimizer) -> dict[str, Any]:
    params = init_params(config, jax.random.key(config.seed))
    return {"params": params, "opt_state": optimizer.init(params)}


@functools.lru_cache(maxsize=8)
def _epoch_fn(config: BMConfig):
    """Returns ``epoch(state, data, plan int32[S, B]) -> (state, losses float32[S])``: jitted Adam steps over the
    batches of rows ``plan`` (``config`` without its data and length fields)."""
    optimizer = optax.adam(config.lr)

    def step(state, rows, data):
        batch = {name: data[name][rows] for name in ("features", "mask", "targets", "constraint")}
        value, grads = jax.value_and_grad(lambda p: loss(config, p, batch))(state["params"])
        updates, opt_state = optimizer.update(grads, state["opt_state"], state["params"])
        return {"params": optax.apply_updates(state["params"], updates), "opt_state": opt_state}, value

    @jax.jit
    def epoch(state, data, plan):
        return jax.lax.scan(lambda s, rows: step(s, rows, data), state, plan)

    return optimizer, epoch


def _model_config(config: BMConfig) -> BMConfig:
    """``config`` with only the fields that shape the model and its update (the jitted functions' cache key)."""
    return BMConfig(
        embed=config.embed,
        hidden=config.hidden,
        pool=config.pool,
        lr=config.lr,
        constraint_weight=config.constraint_weight,
    )


def train(config: BMConfig, out: str | Path, resume: bool = False, progress: bool = True) -> dict[str, Any]:
    """Records the training runs (``config``'s tasks, train split, ``episodes`` x ``seeds``, beside
    ``config.helper``) and the evaluation runs (the first ``eval_episodes`` test episodes of each task, one run
    each), trains the behaviour model on the first for ``epochs`` and writes the run directory ``out`` (module
    docstring). After each epoch the loss and the main ``scores`` of ``SCORED_TRAIN_RUNS`` training runs (evenly
    spread) and of the evaluation runs go to ``metrics.csv``, and every ``checkpoint_every`` epochs the parameters
    and optimiser state to a checkpoint (and after the last epoch). Each epoch's data order comes from
    ``fold_in(key(seed), epoch)`` and the recording is deterministic, so ``resume`` continues from the newest
    checkpoint and ends with the parameters of an uninterrupted run (``epochs`` may be raised on resume).

    Returns:
        The summary (also in ``metrics.json``): epochs done, final train and test loss, train and test goal and
        constraint accuracies (``scores``), the per-task test report (also ``report.json``), data sizes, wall
        time, device.

    Raises:
        ValueError: a directory holding a run without ``resume``, a run of another kind, or a checkpoint of
            another config.
    """
    start = time.perf_counter()
    out = Path(out)
    if (out / RUN_JSON).exists():
        if not resume:
            raise ValueError(f"{out} already holds a run; pass resume to continue it or choose another directory")
        _read_run(out)
    elif (out / CHECKPOINTS).exists():
        raise ValueError(f"{out} holds checkpoints but no {RUN_JSON}: not a {KIND} run; choose another directory")
    out.mkdir(parents=True, exist_ok=True)
    checkpointer = _checkpointer(out, config)
    try:
        first = checkpointer.check_meta() if resume and checkpointer.latest_step() is not None else 0
    except ValueError:
        checkpointer.close()
        raise
    optimizer, epoch_fn = _epoch_fn(_model_config(config))
    state = _fresh_state(config, optimizer)
    if first:
        state = checkpointer.restore(state, first)

    tasks = config.task_names()
    tick = time.perf_counter()
    runs = len(tasks) * max(min(config.episodes, T.TRAIN_SIZE) * config.seeds, config.eval_episodes)
    chunk = min(RECORD_CHUNK, runs)  # one size for both recordings: one compilation
    common = {"helper": config.helper, "max_events": config.max_events, "max_steps": config.max_steps, "chunk": chunk}
    train_data = record(tasks, "train", config.episodes, config.seeds, seed=config.seed, **common)
    test_data = (
        record(tasks, "test", config.eval_episodes, 1, seed=config.seed + 1, **common) if config.eval_episodes else None
    )
    record_s = time.perf_counter() - tick
    n = int(train_data["mask"].shape[0])
    sizes = {
        "train_runs": n,
        "test_runs": 0 if test_data is None else int(test_data["mask"].shape[0]),
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
            if test_data is not None:
                row.update(_epoch_scores(config, state["params"], test_data, "test"))
            row["wall_s"] = time.perf_counter() - start
            log.append([row])
            if (epoch + 1) % config.checkpoint_every == 0 or epoch + 1 == config.epochs:
                checkpointer.save(epoch + 1, state)
            bar.update(1)
            bar.set_postfix(loss=f"{row['train_loss']:.3f}", goal=f"{row['train_goal_accuracy']:.2f}")
    checkpointer.close()
    report = {"train": evaluate(state["params"], train_data, config)}
    if test_data is not None:
        report["test"] = evaluate(state["params"], test_data, config)
    write_json(out / REPORT_JSON, report)
    final = log.rows[-1] if log.rows else {}
    summary = {
        "title": f"CHAIC behaviour model, {n} training runs of {len(tasks)} task(s)",
        "kind": KIND,
        "epochs_done": int(final.get("epoch", 0)),
        "epochs": config.epochs,
        **{k: v for k, v in final.items() if k.startswith(("train_", "test_"))},
        "test_report": {
            task: {k: v for k, v in s.items() if k != "class_f1"} for task, s in report.get("test", {}).items()
        },
        "sizes": sizes,
        "wall_s": time.perf_counter() - start,
        "device": jax.devices()[0].device_kind,
        "checkpoint": str(out / CHECKPOINTS),
    }
    curves = ("train_loss", "test_loss", "test_goal_accuracy", "test_constraint_accuracy")
    log.finish(summary, x="epoch", curves=curves)
    return summary


def _epoch_scores(config: BMConfig, params: Any, data: dict, prefix: str) -> dict[str, float]:
    """Returns ``{prefix_loss, prefix_goal_accuracy, ...}``: the loss and main ``scores`` of ``data``."""
    probs, constraint, loss_sum, steps = _forward_all(params, data, config)
    s = scores(probs, constraint, data, config.threshold)
    names = ("goal_accuracy", "goal_jaccard", "micro_f1", "constraint_accuracy", "constraint_accuracy_mean")
    return {f"{prefix}_loss": float(loss_sum.sum() / max(steps.sum(), 1.0)), **{f"{prefix}_{k}": s[k] for k in names}}


def load(run: str | Path) -> tuple[BMConfig, Any]:
    """Returns ``(config, params)`` of a ``chaic-bm`` run directory: its config and the newest checkpoint's
    parameters.

    Raises:
        ValueError: not a chaic-bm run (no or a foreign ``run.json``), a bad config, no checkpoint yet, or a
            checkpoint of another kind or config.
    """
    info = _read_run(run)
    if not (Path(run) / CHECKPOINTS).is_dir():
        raise ValueError(f"{run} has no checkpoint yet (no {CHECKPOINTS}/)")
    try:
        config = BMConfig(**info["config"])
    except (TypeError, KeyError) as error:
        raise ValueError(f"{run}: bad config in {RUN_JSON}: {error}") from error
    optimizer, _ = _epoch_fn(_model_config(config))
    template = jax.tree_util.tree_map(
        lambda s: jnp.zeros(s.shape, s.dtype), jax.eval_shape(lambda: _fresh_state(config, optimizer))
    )
    checkpointer = _checkpointer(Path(run), config)
    try:
        state = checkpointer.restore(template)
    except FileNotFoundError as error:
        raise ValueError(f"{run} has no checkpoint yet") from error
    finally:
        checkpointer.close()
    return config, state["params"]


def load_bm_helper(run: str | Path, threshold: float | None = None) -> BMHelper:
    """Returns the ``BMHelper`` of a ``chaic-bm`` run directory (``load``; ``threshold`` overrides the config's).
    Raises ``ValueError`` as ``load``."""
    config, params = load(run)
    return BMHelper(params, config, threshold)
