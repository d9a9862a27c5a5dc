"""The Watch stage's goal-inference model (Watch-And-Help §5.2-5.3, appendix C.1) and its metrics.

``GoalInference`` reads one of Alice's demonstrations and predicts her goal as a count per predicate:

- ``input="graph"`` (the paper's model): every step's observation goes through the shared ``StateEncoder``
  (a Transformer over the visible nodes, mean-pooled), an LSTM (``d`` units) runs over the steps, its outputs
  are averaged over the real steps, and 30 count classifiers (Linear ``d``, tanh, Linear to ``NUM_COUNTS``;
  one head giving ``[30, NUM_COUNTS]`` logits) read the average;
- ``input="last"`` (the paper's ablation): the same on the demonstration's last observation only;
- ``input="memory"`` (beyond the paper): the same on one frame holding every node as the observer last saw it
  over the demonstration (``remembered_observation``): the final observation shows one room, a goal that spans
  rooms (test-2's two activities) is out of its view;
- ``input="actions"`` (the paper's ablation): Alice's actions instead of observations, each embedded from its
  verb and its target node's class (not the node itself), through the same LSTM, average and classifiers.

Padding never changes an output: invisible nodes and steps past ``valid`` are masked out (``code_parity=True``
reproduces the original code's unmasked means over all node slots and all time steps instead; there the padded
steps repeat the final state, as the original repeats its final graph). ``max_frames`` keeps at most that many
observations, spread evenly over each demonstration (``subsample``), to spare the encoder on a CPU. Two options
beyond the paper (``WatchConfig.pooling``, ``readout``) let a frame keep how many nodes of a kind it shows and the
classifiers read the final state beside the average, and a third (``WatchConfig.changes``) marks on every node token
of a frame whether the demonstration has changed the node by then (``change_marks``): a goal is the relations Alice
*made*, and one frame alone cannot tell them from the relations the apartment began with.

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
from jaxsoc.learners.networks.household import StateEncoder, masked_mean

#: the largest count any predicate has in a goal (``predicates.count_ranges``: 2)
MAX_COUNT = int(PR.count_ranges()[1].max())
NUM_COUNTS = MAX_COUNT + 1
INPUTS = ("graph", "last", "memory", "actions")
FRAMES = ("even", "events")
POOLINGS = ("mean", "mean_sum", "mean_changed")
READOUTS = ("mean", "mean_last")
DECODINGS = ("argmax", "grammar")
LR_SCHEDULES = ("constant", "cosine")
#: the options a run written before they existed was trained with (``watch_run.load`` fills them in)
LEGACY = {
    "relational": False,
    "final_observation": False,
    "frames": "even",
    "pooling": "mean",
    "readout": "mean",
    "changes": False,
    "lr_schedule": "constant",
    "counting": False,
}
#: ``pooling="mean_sum"``: the token sum is divided by this (a typical number of visible nodes), to keep it near 1
SUM_SCALE = 32.0
#: ``pooling="mean_changed"``: the changed tokens' sum is divided by this (a typical number of objects a goal moves)
CHANGED_SCALE = 4.0


@dataclasses.dataclass(frozen=True)
class WatchConfig:
    """The goal-inference model and its training (defaults: the paper's model, the original's optimiser).

    - ``d``: width of the node embeddings, the LSTM and the classifiers; ``heads``: the Transformer's heads;
      ``dropout``: in the Transformer and between the classifiers' layers (training only).
    - ``input``: ``"graph"`` (every observation), ``"last"`` (the last observation), ``"memory"`` (every node as
      last seen, ``remembered_observation``) or ``"actions"``.
    - ``lr``, ``batch``, ``epochs``: Adam's step size, demonstrations per step, passes over the training set;
      ``lr_schedule``: ``"constant"`` (the original's) or ``"cosine"``, the step size decayed from ``lr`` to 0
      over the ``epochs`` (``lr_factor``), so the final parameters are not one noisy step among many.
    - ``max_frames``: keep at most this many observations per demonstration (None: all), chosen by ``frames``:
      ``"even"`` spread evenly, ``"events"`` the steps where a relation changes first, then the last, then
      evenly spread fillers (``event_frames``).
    - ``relational``: tokens carry their parent's class and the characters what they hold
      (``encoder.relational_features``).
    - ``final_observation``: also show the observation after Alice's last action.
    - ``code_parity``: the original code's unmasked means (over all node slots and all padded time steps).
    - ``pooling``: how a frame's node tokens become one vector: ``"mean"`` (the paper's) or ``"mean_sum"``, the
      mean beside the sum (over ``SUM_SCALE``), which keeps *how many* nodes of a kind there are (a goal is a
      count per predicate; a mean divides it by the number of visible nodes, which varies), or
      ``"mean_changed"`` (needs ``changes``), the mean beside the sum (over ``CHANGED_SCALE``) of the tokens the
      demonstration has changed (``change_marks``): a count of what Alice made, by kind, that no mean dilutes.
    - ``readout``: what the classifiers read of the LSTM's outputs: ``"mean"`` (the paper's average over the real
      steps) or ``"mean_last"``, the average beside the output at the last real step (the final state, which the
      last-observation ablation reads alone).
    - ``changes``: every node token also reads whether the demonstration has changed the node's relation and its
      open/on bits since it was first seen (``change_marks``, computed over every step before frames are chosen;
      with ``input="last"`` the model therefore reads the whole demonstration, not the ablation's one frame).
    - ``counting`` (needs ``changes`` and a one-frame input, ``"last"`` or ``"memory"``): each ON / INSIDE
      predicate's count logits come from a soft count of the frame's changed tokens that match it
      (``CountLogits``) instead of the pooled classifiers, so a goal's counts add up token by token and a mixture
      of two activities reads as the sum of its parts (test-2); the other predicates keep the classifiers.
    - ``validation_fraction``: the fallback validation when the demonstrations directory has no
      ``validation.npz`` (the validation split, which ``watch_run.train`` reads when present): this share of the
      training demonstrations, drawn at random, held out to validate (0, the default: none). Not shaped like
      the test shift (same apartments, goals of the training distribution), so it saturates; set it only without
      a validation set. ``seed``: initialisation, data order and that random holdout.
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
    validation_fraction: float = 0.0
    seed: int = 0
    relational: bool = True
    final_observation: bool = True
    frames: str = "events"
    pooling: str = "mean"
    readout: str = "mean"
    changes: bool = False
    lr_schedule: str = "constant"
    counting: bool = False

    def __post_init__(self) -> None:
        if self.input not in INPUTS:
            raise ValueError(f"WatchConfig.input must be one of {list(INPUTS)}, got {self.input!r}")
        if self.frames not in FRAMES:
            raise ValueError(f"WatchConfig.frames must be one of {list(FRAMES)}, got {self.frames!r}")
        if self.pooling not in POOLINGS:
            raise ValueError(f"WatchConfig.pooling must be one of {list(POOLINGS)}, got {self.pooling!r}")
        if self.readout not in READOUTS:
            raise ValueError(f"WatchConfig.readout must be one of {list(READOUTS)}, got {self.readout!r}")
        if self.counting and not (self.changes and self.input in ("last", "memory")):
            raise ValueError(
                "WatchConfig.counting counts one frame's changed tokens: set changes=True and input last/memory"
            )
        if self.lr_schedule not in LR_SCHEDULES:
            raise ValueError(f"WatchConfig.lr_schedule must be one of {list(LR_SCHEDULES)}, got {self.lr_schedule!r}")
        if self.pooling == "mean_changed" and not self.changes:
            raise ValueError("WatchConfig.pooling='mean_changed' sums the changed tokens: set changes=True")
        if self.code_parity and (self.pooling, self.readout) != ("mean", "mean"):
            raise ValueError("WatchConfig.code_parity replays the original's model: set pooling and readout to 'mean'")
        if self.changes and self.input == "actions":
            raise ValueError("WatchConfig.changes marks observation tokens: it needs input 'graph', 'last' or 'memory'")
        if self.code_parity and self.changes:
            raise ValueError("WatchConfig.code_parity replays the original's model: set changes=False")
        if self.code_parity and self.final_observation:
            raise ValueError("WatchConfig.code_parity replays the original's inputs: set final_observation=False")
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

    def lr_factor(self, step: int, total: int) -> float:
        """Returns the share of ``lr`` Adam steps with at optimiser step ``step`` of ``total``: 1 for
        ``lr_schedule="constant"``; for ``"cosine"``, ``(1 + cos(pi * step / total)) / 2`` (1 at the first
        step, falling to 0 at the last)."""
        if self.lr_schedule == "constant":
            return 1.0
        return 0.5 * (1.0 + float(np.cos(np.pi * min(step, total) / max(total, 1))))


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


def relation_events(obs: dict) -> jax.Array:
    """Returns bool[B, T]: whether observation ``t`` differs from observation ``t - 1`` in some relation of a node
    visible in both (its parent, its relation to the parent, its open/on bits, or whether the observer holds it
    or sits on it); False at ``t = 0`` (``obs`` leading ``[B, T]``)."""
    hold_sit = jnp.isin(obs["relation"], jnp.array([C.REL_HOLDS_RH, C.REL_HOLDS_LH, C.REL_SITTING_ON]))
    keys = (obs["parent"], obs["parent_relation"], obs["states"], hold_sit)
    both = obs["visible"][:, 1:] & obs["visible"][:, :-1]
    changed = jnp.zeros(both.shape, bool)
    for x in keys:
        changed |= x[:, 1:] != x[:, :-1]
    events = (changed & both).any(-1)
    return jnp.concatenate([jnp.zeros((events.shape[0], 1), bool), events], 1)


def event_frames(obs: dict, valid: jax.Array, max_frames: int) -> tuple[dict, jax.Array]:
    """Returns ``(obs, valid)`` with at most ``max_frames`` observations per demonstration (``obs`` leading
    ``[B, T]``, ``valid`` bool[B, T], real steps first), in time order: its last real observation, then the
    observations where a relation changes (``relation_events``; the latest first when there are too many), then
    fillers spread over the rest (a low-discrepancy order). ``valid`` bool[B, max_frames] marks the
    ``min(length, max_frames)`` kept; past them the last real observation is repeated."""
    steps = valid.shape[1]
    if steps <= max_frames:
        return obs, valid
    t = jnp.arange(steps)[None, :]
    length = jnp.maximum(valid.sum(1), 1)[:, None]
    frac = jnp.mod(t * 0.6180339887, 1.0) * 0.5  # fillers: spread evenly whatever their number
    priority = jnp.where(t == length - 1, 4.0, 0.0) + relation_events(obs) * (2.0 + t / steps) + frac
    priority = jnp.where(valid, priority, -1.0)
    top = jax.lax.top_k(priority, max_frames)[1]  # [B, F]
    n = jnp.minimum(length, max_frames)
    k = jnp.arange(max_frames)[None, :]
    index = jnp.sort(jnp.where(k < n, top, steps), axis=1)
    index = jnp.where(index >= steps, length - 1, index)

    def take(x):
        return jnp.take_along_axis(x, index.reshape(*index.shape, *([1] * (x.ndim - 2))), axis=1)

    return jax.tree_util.tree_map(take, obs), k < n


def change_marks(obs: dict, valid: jax.Array) -> jax.Array:
    """Returns float32[B, T, N, NUM_CHANGE_FEATURES]: for every step and node (``obs`` leading ``[B, T]``, node axis
    ``N``; ``valid`` bool[B, T]), whether the node, visible at that step, differs from the first real step at
    which it was visible in its relation (its parent or its relation to it; held counts) and in its open/on bits.
    Zero where the node is not visible or the step not real."""
    seen = obs["visible"].astype(bool) & valid[..., None]  # [B, T, N]
    first = jnp.argmax(seen, axis=1)[:, None, :]  # [B, 1, N]: the first step a node is seen (0 when never)

    def differs(x):
        return x != jnp.take_along_axis(x, first, axis=1)

    relation = differs(obs["parent"]) | differs(obs["parent_relation"])
    return (jnp.stack([relation, differs(obs["states"])], -1) & seen[..., None]).astype(jnp.float32)


def remembered_observation(obs: dict, valid: jax.Array) -> dict:
    """Returns one frame per demonstration (leading ``[B, 1]``; ``obs`` leading ``[B, T]``, ``valid`` bool[B, T]):
    every node as the observer last saw it at a real step (its node-axis entries, ``changed`` included, taken
    from that step; ``visible`` where it was ever seen), the rest (the characters' ``agent_*``, the goal's
    entries) as at the last real step.
    Coordinates stay the world's, so the tokens place every node relative to the observer's final position."""
    seen = obs["visible"].astype(bool) & valid[..., None]  # [B, T, N]
    t = jnp.arange(seen.shape[1])[None, :, None]
    last_seen = jnp.max(jnp.where(seen, t, -1), axis=1)  # [B, N]
    index = jnp.maximum(last_seen, 0)[:, None, :]  # [B, 1, N]
    final = last_observation(obs, valid)

    def take(x):
        return jnp.take_along_axis(x, index.reshape(*index.shape, *([1] * (x.ndim - 3))), axis=1)

    nodes = {k for k, v in obs.items() if v.ndim >= 3 and v.shape[2] == W.NUM_NODES and not k.startswith("agent_")}
    out = {k: (take(obs[k]) if k in nodes else v) for k, v in final.items()}
    out["visible"] = (last_seen >= 0)[:, None, :].astype(obs["visible"].dtype)
    return out


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


def pool_frames(
    nodes: jax.Array, mean: jax.Array, mask: jax.Array, pooling: str, changed: jax.Array | None = None
) -> jax.Array:
    """Returns each frame's vector from its node tokens ``nodes`` float32[..., N, d] (``mask`` bool[..., N] the
    real ones) and their mean ``mean`` float32[..., d]: ``mean`` for ``pooling="mean"``; for ``"mean_sum"``
    float32[..., 2d], the mean beside the tokens' sum over ``SUM_SCALE``; for ``"mean_changed"`` float32[..., 2d],
    the mean beside the sum over ``CHANGED_SCALE`` of the real tokens where ``changed`` bool[..., N] holds
    (``WatchConfig.pooling``)."""
    if pooling == "mean":
        return mean
    if pooling == "mean_sum":
        return jnp.concatenate([mean, (nodes * mask[..., None]).sum(-2) / SUM_SCALE], -1)
    if changed is None:
        raise ValueError('pooling="mean_changed" needs the tokens\' change marks')
    return jnp.concatenate([mean, (nodes * (mask & changed)[..., None]).sum(-2) / CHANGED_SCALE], -1)


def read_out(h: jax.Array, valid: jax.Array, readout: str) -> jax.Array:
    """Returns what the classifiers read of the LSTM's outputs ``h`` float32[B, T, d] (``valid`` bool[B, T], real
    steps first): their mean over the real steps, float32[B, d], for ``readout="mean"``; for ``"mean_last"``
    float32[B, 2d], that mean beside the output at the last real step (``WatchConfig.readout``)."""
    mean = masked_mean(jnp.where(valid[..., None], h, 0.0), valid, axis=1)
    if readout == "mean":
        return mean
    last = jnp.maximum(valid.sum(1) - 1, 0)
    return jnp.concatenate([mean, jnp.take_along_axis(h, last[:, None, None], axis=1)[:, 0]], -1)


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
            if cfg.changes:
                obs = {**obs, "changed": change_marks(obs, valid)}
            if cfg.input == "last":
                obs, valid = last_observation(obs, valid), jnp.ones((valid.shape[0], 1), bool)
            elif cfg.input == "memory":
                obs, valid = remembered_observation(obs, valid), jnp.ones((valid.shape[0], 1), bool)
            elif cfg.max_frames is not None and cfg.frames == "events":
                obs, valid = event_frames(obs, valid, cfg.max_frames)
            elif cfg.max_frames is not None:
                obs, valid = subsample(obs, valid, cfg.max_frames)
            encoder = StateEncoder(
                cfg.d, cfg.heads, cfg.dropout, cfg.code_parity, cfg.relational, cfg.changes, name="encoder"
            )
            nodes, x, mask = encoder(obs, train)
            changed = None
            if cfg.changes:  # the two character tokens are never marked
                changed = jnp.pad(obs["changed"].max(-1) > 0, [(0, 0)] * (mask.ndim - 1) + [(0, 2)])
            x = pool_frames(nodes, x, mask, cfg.pooling, changed)
        h = nn.RNN(nn.OptimizedLSTMCell(cfg.d), name="lstm")(x)
        pooled = h.mean(1) if cfg.code_parity else read_out(h, valid, cfg.readout)
        z = nn.tanh(nn.Dense(cfg.d, name="classifier_0")(pooled))
        z = nn.Dropout(cfg.dropout, deterministic=not train)(z)
        logits = nn.Dense(PR.NUM_PREDICATES * NUM_COUNTS, name="classifier_1")(z)
        logits = logits.reshape(-1, PR.NUM_PREDICATES, NUM_COUNTS)
        if cfg.counting:
            counted = jnp.asarray(np.isin(PR.PRED_KIND, (PR.ON_KIND, PR.INSIDE_KIND)))
            counts = CountLogits(name="counts")(nodes[:, 0], (mask & changed)[:, 0])
            logits = jnp.where(counted[:, None], counts, logits)
        return logits


def _count_slopes(sharpness: float):
    """``CountLogits``' initial slopes: ``sharpness * c`` for count ``c`` (of every predicate)."""
    return lambda key, shape, dtype=jnp.float32: jnp.broadcast_to(sharpness * jnp.arange(shape[-1], dtype=dtype), shape)


def _count_offsets(sharpness: float):
    """``CountLogits``' initial offsets: ``-sharpness * c**2 / 2`` for count ``c``."""
    return lambda key, shape, dtype=jnp.float32: jnp.broadcast_to(
        -sharpness * jnp.arange(shape[-1], dtype=dtype) ** 2 / 2, shape
    )


class CountLogits(nn.Module):
    """Returns float32[B, 30, NUM_COUNTS] count logits from a frame's tokens ``tokens`` float32[B, N, d] and the
    ones to count ``counted`` bool[B, N]: each predicate ``p`` scores every token, ``m = sigmoid(Linear(token))``
    (does it make ``p`` true?), sums ``m`` over the counted tokens to a soft count ``s_p``, and gives count ``c``
    the logit ``a_pc * s_p + b_pc`` (initialised to ``k (c s_p - c**2 / 2)``, which peaks at ``c = s_p``)."""

    sharpness: float = 4.0

    @nn.compact
    def __call__(self, tokens: jax.Array, counted: jax.Array) -> jax.Array:
        match = nn.sigmoid(nn.Dense(PR.NUM_PREDICATES, name="match")(tokens))  # [B, N, 30]
        soft = (match * counted[..., None]).sum(1)  # [B, 30]
        shape = (PR.NUM_PREDICATES, NUM_COUNTS)
        slope = self.param("slope", _count_slopes(self.sharpness), shape)
        offset = self.param("offset", _count_offsets(self.sharpness), shape)
        return soft[..., None] * slope + offset


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


def _activity_tables(log_probs: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """For each activity ``a``, returns ``(best float64[N, S], choice int8[N, S, 30])``: over its predicates'
    allowed counts (``count_ranges``) with counted total ``s`` (``S`` = 1 + the largest total), the largest sum of
    ``log_probs[n, p, c] - log_probs[n, p, 0]`` (-inf where ``s`` is unreachable) and the counts achieving it
    (0 outside the activity). ``log_probs`` float[N, 30, NUM_COUNTS]."""
    low, high, _ = PR.count_ranges()
    counted = np.isin(PR.PRED_KIND, (PR.ON_KIND, PR.INSIDE_KIND))
    n = log_probs.shape[0]
    gain = log_probs - log_probs[:, :, :1]
    size = int(high.sum(1).max()) + 1
    tables = []
    for a in range(PR.NUM_ACTIVITIES):
        best = np.full((n, size), -np.inf)
        best[:, 0] = 0.0
        choice = np.zeros((n, size, PR.NUM_PREDICATES), np.int8)
        for p in np.flatnonzero(high[a] > 0):
            new_best, new_choice = np.full_like(best, -np.inf), np.zeros_like(choice)
            for c in range(int(low[a, p]), int(high[a, p]) + 1):
                shift = c if counted[p] else 0
                cand = np.full_like(best, -np.inf)
                cand[:, shift:] = best[:, : size - shift] + gain[:, p, c][:, None]
                src = np.zeros_like(choice)
                src[:, shift:] = choice[:, : size - shift]
                src[:, :, p] = c
                better = cand > new_best
                new_best = np.where(better, cand, new_best)
                new_choice = np.where(better[..., None], src, new_choice)
            best, choice = new_best, new_choice
        tables.append((best, choice))
    return tables


def grammar_decode(log_probs, mixed: bool = True) -> np.ndarray:
    """Returns int8[N, 30]: for each demonstration the goal of largest log-probability (``log_probs`` float[N, 30,
    NUM_COUNTS], the count classifiers' log-softmax; predicates independent) among the goals the task grammar
    allows: one activity's predicates, each within its count range and their counted total within the
    activity's (``predicates.count_ranges``), or, with ``mixed``, two activities' each giving at least one and
    together a total in ``tasks.MIXED_TOTAL`` (test-2's goals)."""
    lp = np.asarray(log_probs, np.float64)
    _, _, total = PR.count_ranges()
    tables = _activity_tables(lp)
    size = tables[0][0].shape[1]
    sums = np.arange(size)
    best_score = np.full(lp.shape[0], -np.inf)
    best_goal = np.zeros((lp.shape[0], PR.NUM_PREDICATES), np.int8)

    def consider(score, goal):
        nonlocal best_score, best_goal
        better = score > best_score
        best_score = np.where(better, score, best_score)
        best_goal = np.where(better[:, None], goal, best_goal)

    rows = np.arange(lp.shape[0])
    for a, (best, choice) in enumerate(tables):
        ok = (sums >= total[a, 0]) & (sums <= total[a, 1])
        masked = np.where(ok[None], best, -np.inf)
        s = masked.argmax(1)
        consider(masked[rows, s], choice[rows, s])
    if mixed:
        from jaxsoc.envs.household.tasks import MIXED_TOTAL

        lo, hi = MIXED_TOTAL
        for a in range(PR.NUM_ACTIVITIES):
            for b in range(a + 1, PR.NUM_ACTIVITIES):
                (best_a, choice_a), (best_b, choice_b) = tables[a], tables[b]
                pair = best_a[:, :, None] + best_b[:, None, :]  # [N, S, S]
                ok = (sums[:, None] >= 1) & (sums[None, :] >= 1) & (sums[:, None] + sums[None, :] >= lo)
                ok &= sums[:, None] + sums[None, :] <= hi
                pair = np.where(ok[None], pair, -np.inf).reshape(len(rows), -1)
                flat = pair.argmax(1)
                sa, sb = np.divmod(flat, size)
                consider(pair[rows, flat], np.maximum(choice_a[rows, sa], choice_b[rows, sb]))
    return best_goal


def decode(logits, how: str = "argmax") -> np.ndarray:
    """Returns int8[N, 30] goals from count ``logits`` float[N, 30, NUM_COUNTS]: ``"argmax"`` per predicate
    (``predict``) or ``"grammar"`` (``grammar_decode``)."""
    if how not in DECODINGS:
        raise ValueError(f"decoding must be one of {list(DECODINGS)}, got {how!r}")
    if how == "argmax":
        return np.asarray(predict(jnp.asarray(logits)), np.int8)
    return grammar_decode(np.asarray(jax.nn.log_softmax(jnp.asarray(logits, jnp.float32), -1)))


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
