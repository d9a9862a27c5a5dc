"""Behaviour cloning of the BabyAI bot: the BabyAI imitation-learning recipe (``babyai/imitation.py``).

``train_bc(config, dataset)`` trains an ``ACModel`` on demonstrations of ``config.env_id`` and validates it
every epoch by its greedy success rate on ``config.val_episodes`` fixed levels (``jaxsoc.learners.evaluate``)::

    config = BCConfig.for_preset("BabyAI-GoToRedBallGrey-v0", "small")
    variables, history = train_bc(config, "demos/GoToRedBallGrey", num_demos=8_000)

The recipe (models-and-excalibur.md §3.7): per step the loss is the cross-entropy of the expert's action
minus ``entropy_coef`` times the policy's entropy, averaged over the real steps of a batch of
``batch_size`` demonstrations; Adam (``lr``, eps ``1e-5``, no gradient clipping), the learning rate times
``lr_decay`` every ``lr_decay_epochs`` epochs (PyTorch's ``StepLR``); an epoch is ``epoch_length``
demonstrations drawn without replacement through successive reshuffles of the training set (the reference's
``EpochIndexSampler``); validation after every epoch, the best variables kept, early stopping after more than
``patience`` epochs without a better success rate, and a stop once ``success_threshold`` is reached.

**Truncated backpropagation through time, on padded batches.** A batch is ``B`` demonstrations padded to a
static ``T = max_len`` steps (``[B, T]`` arrays with a mask; ``T`` a multiple of ``recurrence``). The
update runs the model over the ``T`` steps with one ``lax.scan`` and cuts the gradient of the LSTM memory
(``jax.lax.stop_gradient``) where each chunk of ``recurrence`` steps starts, and takes **one optimiser step
per batch** whose gradient is the sum of the chunks' gradients divided by the number of real steps. This is
the reference's computation in another layout: the reference concatenates the (length-sorted)
demonstrations of a batch into one flat sequence, computes the memory at every frame in a no-gradient pass,
then backpropagates through chunks of ``recurrence`` frames that start at every ``recurrence``-th frame of the
flat sequence (so chunks cross demonstration boundaries, with the memory reset by the mask) and takes one
optimiser step per batch. Here the memory entering a chunk is the same value (the model's memory under the
current parameters, without gradient), and chunk boundaries fall at steps ``recurrence, 2 recurrence, ...``
of each demonstration: an episode no longer than ``recurrence`` is backpropagated whole. The reference drops
the frames of a final partial chunk from the loss; here every real step counts.

**BatchNorm** (``norm="batch"``) runs in train mode on each step's ``B`` observations, updating the running
averages (every forward call of the reference does too); validation uses the running averages. Padding
steps would put all-zero observations into those statistics, so a padding step shows its episode's own
observations again, cyclically (``image[b, t] = image[b, t % length_b]``): each step's batch statistics are
computed over real observations, and padding steps are masked out of the loss. (The reference normalises
its gradient pass over the frames that share a position within their chunks, and its no-gradient pass over
the demonstrations still running; here over the ``B`` demonstrations at one step, replays included.)
``"layer"``/``"none"`` models have no ``batch_stats``.

**Other differences.** The reference steps its ``StepLR`` at the start of every epoch (PyTorch >= 1.1
semantics), so its first decay comes one epoch early (after 99 epochs); here it comes after
``lr_decay_epochs``. The instruction is encoded once per demonstration and batch (the network's
per-episode context), as the reference does. The reference also reports
an accuracy on held-out demonstrations at validation; here validation is the success rate only. The
training demonstrations are held in memory (``jaxsoc.data.memory``), as the reference holds its pickles.

**Cost.** A padded batch computes ``B * T`` steps for the ``sum(lengths)`` real ones (``T`` defaults to the
longest demonstration rounded up to ``recurrence``): the price of one static shape, hence one compilation.
Mission token arrays are cut to the widest mission of the data rounded up to 8 (``mission_width``): the
instruction GRU reads up to each mission's last token only, so the outputs are those of the full 72 tokens.

**Several seeds.** ``BCLearner.init(key)`` and ``BCLearner.update(state, batch)`` are pure and jittable;
``jax.vmap(learner.init)(keys)`` and ``jax.vmap(learner.update)(states, batches)`` train independent seeds
in one program (BatchNorm statistics stay per seed).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import flax.linen as nn
import flax.serialization
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct
from tqdm.auto import tqdm

import jaxsoc
from jaxsoc.data.loader import DemoDataset, padded_batch
from jaxsoc.data.memory import MemoryDemos, canonical_env_id, load_demos
from jaxsoc.learners import families
from jaxsoc.learners.evaluate import SELECTION_SEED, evaluate
from jaxsoc.learners.networks import registry

#: the Small and Large recipes (models-and-excalibur.md §3.5; the 1.1 README's Large lr 5e-5 is not what
#: ``efficiency.py`` runs, which leaves the default 1e-4)
RECIPES = {
    "small": {"batch_size": 256, "recurrence": 20, "epoch_length": 25_600, "lr": 1e-4},
    "large": {"batch_size": 128, "recurrence": 80, "epoch_length": 51_200, "lr": 1e-4},
}
MISSION_TOKENS = 72  # width of the ``mission`` observation
#: arrays of a padded batch that ``BCLearner.update`` reads
BATCH_FIELDS = ("image", "mission", "action", "mask")

DemoSource = str | Path | DemoDataset | MemoryDemos


def _is_int(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


@dataclasses.dataclass(frozen=True)
class BCConfig:
    """Hyper-parameters of behaviour cloning (module docstring); ``for_preset`` gives the recipes.

    Attributes:
        env_id: the environment of the demonstrations and of validation.
        network: the registered policy network (``networks.registry``); default: the network of the family whose
            recipe the shared learners' defaults are (``learners.families.default``: BabyAI's ``ACModel``).
        preset: the network's preset (BabyAI: ``"small"``, ``"large"``, ``"tiny"``).
        model: config overrides of the network, a mapping or ``(name, value)`` pairs (kept as sorted pairs).
        batch_size: demonstrations per update (256 Small, 128 Large); lowered to the number of training
            demonstrations when there are fewer, as the reference does.
        recurrence: truncated-BPTT length in steps (20 Small, 80 Large).
        epoch_length: demonstrations per epoch (25,600 Small, 51,200 Large); an epoch is
            ``epoch_length // batch_size`` updates.
        lr: Adam's learning rate.
        adam_eps: Adam's epsilon.
        entropy_coef: weight of the entropy bonus.
        lr_decay: factor applied to the learning rate every ``lr_decay_epochs`` epochs.
        lr_decay_epochs: epochs between decays.
        max_epochs: the most epochs trained.
        val_episodes: validation episodes per epoch.
        val_seed: seed of the validation levels that stop training (``evaluate``'s ``seed``; by default
            ``evaluate.SELECTION_SEED``, not the levels ``jaxsoc eval`` reports on).
        patience: epochs without a better validation success rate tolerated before stopping.
        success_threshold: stop once the validation success rate reaches it.
        seed: seed of the parameters' initialisation and of the demonstration order.
        max_len: the static padded length ``T`` (a multiple of ``recurrence``); ``None``: the longest
            training demonstration rounded up to a multiple of ``recurrence``.
    """

    env_id: str
    network: str = families.default().network
    preset: str = "small"
    model: Any = ()
    batch_size: int = 256
    recurrence: int = 20
    epoch_length: int = 25_600
    lr: float = 1e-4
    adam_eps: float = 1e-5
    entropy_coef: float = 0.01
    lr_decay: float = 0.9
    lr_decay_epochs: int = 100
    max_epochs: int = 10_000
    val_episodes: int = 512
    val_seed: int = SELECTION_SEED
    patience: int = 100
    success_threshold: float = 0.99
    seed: int = 0
    max_len: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.env_id, str) or not self.env_id:
            raise ValueError(f"BCConfig.env_id must be an environment name, got {self.env_id!r}")
        overrides = self.model.items() if isinstance(self.model, Mapping) else self.model
        try:
            pairs = tuple(sorted((str(name), value) for name, value in overrides))
        except (TypeError, ValueError) as error:
            raise ValueError(f"BCConfig.model must map network config fields to values, got {self.model!r}") from error
        object.__setattr__(self, "model", pairs)
        self.model_config  # noqa: B018 (raises ValueError on unknown fields or bad values)
        for name in ("batch_size", "recurrence", "epoch_length", "lr_decay_epochs", "max_epochs", "val_episodes"):
            value = getattr(self, name)
            if not _is_int(value) or value < 1:
                raise ValueError(f"BCConfig.{name} must be a positive integer, got {value!r}")
        if not _is_int(self.patience) or self.patience < 0:
            raise ValueError(f"BCConfig.patience must be a non-negative integer, got {self.patience!r}")
        for name in ("seed", "val_seed"):
            value = getattr(self, name)
            if not _is_int(value) or not 0 <= value < 2**32:
                raise ValueError(f"BCConfig.{name} must be an integer in [0, 2**32), got {value!r}")
        for name, value, ok, rule in (
            ("lr", self.lr, self.lr > 0, "positive"),
            ("adam_eps", self.adam_eps, self.adam_eps > 0, "positive"),
            ("entropy_coef", self.entropy_coef, self.entropy_coef >= 0, "non-negative"),
            ("lr_decay", self.lr_decay, 0 < self.lr_decay <= 1, "in (0, 1]"),
            ("success_threshold", self.success_threshold, 0 < self.success_threshold <= 1, "in (0, 1]"),
        ):
            if not ok or not math.isfinite(value):
                raise ValueError(f"BCConfig.{name} must be {rule}, got {value!r}")
        if self.epoch_length < self.batch_size:
            raise ValueError(
                f"BCConfig.epoch_length ({self.epoch_length}) must be at least batch_size ({self.batch_size})"
            )
        if self.max_len is not None and (
            not _is_int(self.max_len) or self.max_len < 1 or self.max_len % self.recurrence
        ):
            raise ValueError(
                f"BCConfig.max_len must be a positive multiple of recurrence={self.recurrence}, got {self.max_len!r}"
            )

    @classmethod
    def for_preset(cls, env_id: str, preset: str = "small", **overrides: Any) -> BCConfig:
        """Returns the Small or Large recipe for ``env_id`` (``RECIPES``: batch 256 / 128 demos, recurrence
        20 / 80, epochs of 25,600 / 51,200 demos, lr 1e-4) with ``overrides`` (``BCConfig`` fields).

        Raises:
            ValueError: an unknown preset or field, or an invalid value.
        """
        if preset not in RECIPES:
            raise ValueError(f"unknown BC preset {preset!r}; choose one of {sorted(RECIPES)}")
        return cls(env_id=env_id, preset=preset, **RECIPES[preset]).replace(**overrides)

    def replace(self, **changes: Any) -> BCConfig:
        """Returns a copy with ``changes`` (``BCConfig`` fields).

        Raises:
            ValueError: an unknown field or an invalid value.
        """
        known = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise ValueError(f"unknown BCConfig fields {unknown}; known: {sorted(known)}")
        return dataclasses.replace(self, **changes)

    @property
    def model_config(self) -> Any:
        """Returns the network's config (the preset with the ``model`` overrides).

        Raises:
            ValueError: an unknown network, preset or field, or a bad value.
        """
        return registry.network_config(self.network, self.preset, **dict(self.model))

    def to_dict(self) -> dict[str, Any]:
        """Returns the fields as JSON-serialisable values (``model`` as a dict)."""
        out = dataclasses.asdict(self)
        out["model"] = dict(self.model)
        return out


@struct.dataclass
class BCState:
    """What an update changes. With ``vmap`` over seeds every leaf gains a leading seed axis.

    Attributes:
        params: the model's parameters.
        batch_stats: BatchNorm running averages (``{}`` for ``norm`` ``"layer"``/``"none"``).
        opt_state: Adam's state (its step count drives the learning-rate schedule).
        step: ``int32[]`` updates done.
    """

    params: Any
    batch_stats: Any
    opt_state: Any
    step: jax.Array


class BCLearner:
    """Pure, jittable behaviour-cloning ``init``/``update`` for one model and optimiser (see ``make_learner``).

    Attributes:
        model: the network (policy protocol, ``networks.registry``).
        has_batch_stats: the model's variables hold a ``batch_stats`` collection (BatchNorm).
        recurrence: truncated-BPTT length.
        entropy_coef: weight of the entropy bonus.
        schedule: the learning rate as a function of the update count (``optax`` schedule).
        optimizer: Adam with that schedule (``optax.flatten``: its state is one flat vector per moment).
        init_jit, update_jit, unroll_jit: ``jax.jit`` of ``init``, ``update`` and ``unroll``.
    """

    def __init__(
        self,
        model: nn.Module,
        *,
        recurrence: int,
        entropy_coef: float,
        lr: float,
        adam_eps: float,
        lr_decay: float,
        decay_every: int,
    ) -> None:
        """``model``: a network of the policy protocol (``networks.registry``) reading ``image`` and
        ``mission`` observations; ``decay_every``: updates between learning-rate decays
        (``lr_decay_epochs`` times the updates of an epoch)."""
        self.model = model
        shapes = jax.eval_shape(self._init_variables, jax.random.key(0))
        self.has_batch_stats = "batch_stats" in shapes
        self.recurrence = recurrence
        self.entropy_coef = entropy_coef
        self.schedule = optax.exponential_decay(lr, decay_every, lr_decay, staircase=True)
        # one flat vector for Adam: the same arithmetic per parameter, a fraction of the compile time
        self.optimizer = optax.flatten(optax.adam(self.schedule, eps=adam_eps))
        self.init_jit = jax.jit(self.init)
        self.update_jit = jax.jit(self.update)
        self.unroll_jit = jax.jit(self.unroll)

    def _init_variables(self, key: jax.Array) -> dict[str, Any]:
        obs = {"image": jnp.zeros((1, 7, 7, 3), jnp.uint8), "mission": jnp.zeros((1, 1), jnp.int32)}
        return self.model.init(key, obs, self.model.initial_memory(1))

    def init(self, key: jax.Array) -> BCState:
        """Returns a fresh ``BCState`` with parameters initialised from ``key``."""
        variables = self._init_variables(key)
        params = variables["params"]
        batch_stats = variables["batch_stats"] if self.has_batch_stats else {}
        return BCState(params, batch_stats, self.optimizer.init(params), jnp.zeros((), jnp.int32))

    def variables(self, state: BCState) -> dict[str, Any]:
        """Returns the model variables of ``state`` for the network's ``apply`` / ``evaluate``."""
        if self.has_batch_stats:
            return {"params": state.params, "batch_stats": state.batch_stats}
        return {"params": state.params}

    def unroll(self, params: Any, batch_stats: Any, batch: Mapping[str, jax.Array]):
        """Runs the model in train mode over a padded batch from the zero memory, cutting the gradient of the
        memory (``stop_gradient``) where each chunk of ``recurrence`` steps starts: the loss of step ``t``
        sends gradient back through the steps of its own chunk only, while the memory's value flows on.

        Args:
            params, batch_stats: model variables (``batch_stats`` ignored without BatchNorm).
            batch: ``image uint8[B, T, 7, 7, 3]``, ``mission int[B, L]``, ``action int[B, T]``,
                ``mask bool[B, T]`` (real steps first); with ``T`` not a multiple of ``recurrence`` the last
                chunk is shorter.

        Returns:
            ``(steps, batch_stats)``: ``steps`` holds ``nll float32[B, T]`` (cross-entropy of the action),
            ``entropy float32[B, T]`` and ``correct bool[B, T]`` (argmax equals the action), padding steps
            included; ``batch_stats`` the running averages after every step (unchanged without BatchNorm).
        """
        image, action, mask = batch["image"], batch["action"].astype(jnp.int32), batch["mask"]
        num, width = mask.shape
        length = jnp.maximum(jnp.sum(mask, axis=1), 1)
        # padding steps replay their episode's observations, so BatchNorm only ever sees real observations
        source = jnp.arange(width)[None, :] % length[:, None]
        image = jnp.take_along_axis(image, source[:, :, None, None, None], axis=1)
        mission = batch["mission"].astype(jnp.int32)
        # the per-episode context (the encoded instruction) once per demonstration, as the reference does
        first = {"image": image[:, 0], "mission": mission}
        context = self.model.apply({"params": params}, first, method="encode_context")

        def step(carry, inputs):
            memory, stats = carry
            t, image_t, action_t = inputs
            cut = t % self.recurrence == 0
            memory = jax.tree_util.tree_map(lambda m: jnp.where(cut, jax.lax.stop_gradient(m), m), memory)
            args = ({"image": image_t, "mission": mission}, context, memory)
            if self.has_batch_stats:
                variables = {"params": params, "batch_stats": stats}
                (log_probs, _, memory), updates = self.model.apply(
                    variables, *args, train=True, mutable=["batch_stats"], method="step"
                )
                stats = jax.lax.stop_gradient(updates["batch_stats"])
            else:
                log_probs, _, memory = self.model.apply({"params": params}, *args, train=True, method="step")
            nll = -jnp.take_along_axis(log_probs, action_t[:, None], axis=-1)[:, 0]
            entropy = -jnp.sum(jnp.exp(log_probs) * log_probs, axis=-1)
            correct = jnp.argmax(log_probs, axis=-1) == action_t
            return (memory, stats), (nll, entropy, correct)

        stats = batch_stats if self.has_batch_stats else {}
        inputs = (jnp.arange(width), jnp.moveaxis(image, 1, 0), jnp.moveaxis(action, 1, 0))
        (_, stats), outputs = jax.lax.scan(step, (self.model.initial_memory(num), stats), inputs)
        nll, entropy, correct = (jnp.moveaxis(x, 0, 1) for x in outputs)
        return {"nll": nll, "entropy": entropy, "correct": correct}, (stats if self.has_batch_stats else batch_stats)

    def loss(self, params: Any, batch_stats: Any, batch: Mapping[str, jax.Array]):
        """Returns ``(loss, (batch_stats, metrics))``: ``loss`` the mean over real steps of
        ``nll - entropy_coef * entropy`` (a scalar), the updated running averages, and scalar ``metrics``
        ``loss``, ``policy_loss`` (mean nll), ``entropy``, ``accuracy`` and ``frames`` (real steps)."""
        mask = batch["mask"].astype(jnp.float32)
        steps, batch_stats = self.unroll(params, batch_stats, batch)
        frames = jnp.sum(mask)
        mean = lambda x: jnp.sum(x * mask) / jnp.maximum(frames, 1.0)  # noqa: E731
        loss = mean(steps["nll"] - self.entropy_coef * steps["entropy"])
        metrics = {
            "loss": loss,
            "policy_loss": mean(steps["nll"]),
            "entropy": mean(steps["entropy"]),
            "accuracy": mean(steps["correct"].astype(jnp.float32)),
            "frames": frames,
        }
        return loss, (batch_stats, metrics)

    def update(self, state: BCState, batch: Mapping[str, jax.Array]) -> tuple[BCState, dict[str, jax.Array]]:
        """One optimiser step on a padded batch (``unroll``'s ``batch``).

        Returns:
            ``(state, metrics)``: the new ``BCState`` and scalar metrics ``loss``, ``policy_loss``,
            ``entropy``, ``accuracy``, ``frames`` (before the step), ``grad_norm`` and ``lr`` (the learning
            rate of this step).
        """
        grad_fn = jax.value_and_grad(self.loss, has_aux=True)
        (_, (batch_stats, metrics)), grads = grad_fn(state.params, state.batch_stats, batch)
        updates, opt_state = self.optimizer.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        metrics = dict(metrics, grad_norm=optax.tree.norm(grads), lr=self.schedule(state.step))
        return BCState(params, batch_stats, opt_state, state.step + 1), metrics


@functools.lru_cache(maxsize=16)
def _learner(network, model_config, recurrence, entropy_coef, lr, adam_eps, lr_decay, decay_every) -> BCLearner:
    return BCLearner(
        registry.build(network, model_config),
        recurrence=recurrence,
        entropy_coef=entropy_coef,
        lr=lr,
        adam_eps=adam_eps,
        lr_decay=lr_decay,
        decay_every=decay_every,
    )


def make_learner(config: BCConfig, updates_per_epoch: int) -> BCLearner:
    """Returns the ``BCLearner`` of ``config`` for epochs of ``updates_per_epoch`` updates. Equal
    arguments return the same learner (its jitted functions compiled once per batch shape)."""
    if updates_per_epoch < 1:
        raise ValueError(f"updates_per_epoch must be positive, got {updates_per_epoch}")
    return _learner(
        config.network,
        config.model_config,
        config.recurrence,
        float(config.entropy_coef),
        float(config.lr),
        float(config.adam_eps),
        float(config.lr_decay),
        config.lr_decay_epochs * updates_per_epoch,
    )


# -- data ------------------------------------------------------------------------------------------------
def epoch_indices(num_examples: int, epoch_length: int, epoch: int, seed: int) -> np.ndarray:
    """Returns the ``int64[epoch_length]`` training indices of epoch ``epoch`` (the reference's
    ``EpochIndexSampler``): the concatenation of permutations ``p_0, p_1, ...`` of ``range(num_examples)``
    (``p_k`` drawn from ``np.random.default_rng([seed, k])``) cut into consecutive epochs, so every example is
    seen once before any is seen twice."""
    start = epoch * epoch_length
    out, k, offset = [], start // num_examples, start % num_examples
    while sum(len(x) for x in out) < epoch_length:
        perm = np.random.default_rng([seed, k]).permutation(num_examples)
        out.append(perm[offset : offset + epoch_length - sum(len(x) for x in out)])
        k, offset = k + 1, 0
    return np.concatenate(out).astype(np.int64)


def mission_width(missions: np.ndarray) -> int:
    """Returns the static mission width for ``missions`` (``uint8[E, 72]``, 0-padded at the end): the widest
    mission rounded up to a multiple of 8, at most 72 and at least 8."""
    nonzero = np.asarray(missions) != 0
    widest = int(np.max(np.where(nonzero.any(axis=1), nonzero.shape[1] - np.argmax(nonzero[:, ::-1], axis=1), 0)))
    return min(MISSION_TOKENS, max(8, -(-widest // 8) * 8))


def load_training_demos(config: BCConfig, data: DemoSource, num_demos: int | None = None) -> MemoryDemos:
    """Returns the training demonstrations in memory (the first ``num_demos`` episodes of ``data``, all when
    ``None``), checked against ``config``.

    Raises:
        ValueError: ``num_demos`` out of range, demonstrations of another environment, an episode longer
            than ``config.max_len``, an empty episode, or a mission token id not below the model's
            ``vocab_size``.
    """
    if isinstance(data, MemoryDemos):
        if num_demos is not None and not 1 <= num_demos <= data.num_episodes:
            raise ValueError(f"asked for {num_demos} demonstrations of {data.num_episodes} in memory")
        demos = data if num_demos is None else data.take(np.arange(num_demos))
    else:
        demos = load_demos(data, num_demos)
    if canonical_env_id(demos.env_id) != canonical_env_id(config.env_id):
        raise ValueError(f"the demonstrations are of {demos.env_id}, the config trains on {config.env_id}")
    episodes = demos.episodes
    lengths = episodes["length"]
    if len(lengths) == 0:
        raise ValueError("no demonstrations to train on")
    if lengths.min() < 1:
        raise ValueError("a demonstration has no steps")
    if config.max_len is not None and lengths.max() > config.max_len:
        raise ValueError(
            f"a demonstration has {int(lengths.max())} steps, more than max_len={config.max_len}; raise max_len"
        )
    vocab = config.model_config.vocab_size
    if episodes["mission"].max(initial=0) >= vocab:
        raise ValueError(
            f"a mission holds token id {int(episodes['mission'].max())}, not below the model's vocab_size={vocab}"
        )
    return demos


def padded_length(config: BCConfig, demos: MemoryDemos) -> int:
    """Returns ``T``: ``config.max_len``, or the longest demonstration rounded up to ``recurrence``."""
    if config.max_len is not None:
        return config.max_len
    return -(-int(demos.episodes["length"].max()) // config.recurrence) * config.recurrence


def make_batch(episodes: dict[str, np.ndarray], ids: np.ndarray, max_len: int, width: int) -> dict[str, np.ndarray]:
    """Returns the ``BATCH_FIELDS`` of episodes ``ids`` padded to ``max_len`` (``padded_batch``), missions cut
    to ``width`` tokens: ``image uint8[B, T, 7, 7, 3]``, ``mission uint8[B, width]``, ``action uint8[B, T]``,
    ``mask bool[B, T]``."""
    batch = padded_batch(episodes, ids, max_len)
    batch["mission"] = batch["mission"][:, :width]
    return {name: batch[name] for name in BATCH_FIELDS}


# -- training --------------------------------------------------------------------------------------------
def _write_json(path: Path, value: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(value, indent=2) + "\n")
    tmp.replace(path)


def train_bc(
    config: BCConfig,
    data: DemoSource,
    out_dir: str | Path | None = None,
    num_demos: int | None = None,
    progress: bool = True,
    callback: Callable[[dict[str, Any], dict[str, Any]], bool | None] | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Trains ``config.network`` by behaviour cloning (module docstring).

    Args:
        config: the hyper-parameters.
        data: a dataset directory, a ``DemoDataset``, or ``MemoryDemos``.
        out_dir: when given, receives ``bc_config.json`` (the config and derived sizes), ``history.jsonl``
            (one line per epoch, written as training goes) and ``best_variables.msgpack`` (the best
            variables, ``flax.serialization.msgpack_serialize`` of a dict of numpy arrays).
        num_demos: train on the first ``num_demos`` episodes of ``data`` only (all when ``None``).
        progress: show a tqdm progress bar over epochs.
        callback: called after each epoch with the epoch's record and the current variables; returning
            ``True`` stops training.

    Returns:
        ``(variables, history)``: the variables (numpy ``{"params": ..., "batch_stats": ...}``, no
        ``batch_stats`` without BatchNorm) of the epoch with the best validation success rate (the first
        such epoch), and one dict per epoch: ``epoch`` (1-based), ``updates``, ``demos_seen``, ``frames``
        (real steps trained on, cumulative), ``loss``, ``policy_loss``, ``accuracy``, ``entropy``,
        ``grad_norm`` (means over the epoch's updates), ``lr`` (of its last update), ``val_success_rate``,
        ``val_mean_return``, ``val_mean_length``, ``best_val_success_rate`` and ``wall_s`` (seconds since
        the start).

    Raises:
        ValueError: see ``load_training_demos``; an unknown ``config.env_id``.
    """
    start = time.perf_counter()
    try:
        env, env_params = jaxsoc.make(config.env_id)
    except KeyError as error:
        raise ValueError(str(error.args[0])) from error
    demos = load_training_demos(config, data, num_demos)
    episodes = demos.episodes
    num_examples = demos.num_episodes
    batch_size = min(config.batch_size, num_examples)
    updates_per_epoch = config.epoch_length // batch_size
    max_len = padded_length(config, demos)
    width = mission_width(episodes["mission"])
    learner = make_learner(config, updates_per_epoch)
    out = None if out_dir is None else Path(out_dir)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        derived = {
            "env_id_of_data": demos.env_id,
            "num_demos": num_examples,
            "batch_size": batch_size,
            "updates_per_epoch": updates_per_epoch,
            "max_len": max_len,
            "mission_width": width,
        }
        _write_json(out / "bc_config.json", {"config": config.to_dict(), "derived": derived})
        (out / "history.jsonl").write_text("")

    state = learner.init_jit(jax.random.key(config.seed))
    history: list[dict[str, Any]] = []
    best_success, best_variables, since_best = -1.0, None, 0
    demos_seen = frames = updates = 0
    bar = tqdm(total=config.max_epochs, unit="epoch", desc=f"BC {config.env_id}", disable=not progress)
    with bar:
        for epoch in range(config.max_epochs):
            ids = epoch_indices(num_examples, config.epoch_length, epoch, config.seed)
            step_metrics = []
            for b in range(updates_per_epoch):
                batch = make_batch(episodes, ids[b * batch_size : (b + 1) * batch_size], max_len, width)
                state, metrics = learner.update_jit(state, batch)
                step_metrics.append(metrics)
            metrics = jax.device_get(jax.tree.map(lambda *x: jnp.stack(x), *step_metrics))
            variables = learner.variables(state)
            summary = evaluate(
                env, env_params, learner.model, variables, config.val_episodes, config.val_seed, greedy=True
            ).summary()
            updates += updates_per_epoch
            demos_seen += updates_per_epoch * batch_size
            frames += int(np.sum(metrics["frames"]))
            success = summary["success_rate"]
            if success > best_success:
                best_success, since_best = success, 0
                best_variables = jax.device_get(variables)
                if out is not None:
                    (out / "best_variables.msgpack").write_bytes(flax.serialization.msgpack_serialize(best_variables))
            else:
                since_best += 1
            record = {
                "epoch": epoch + 1,
                "updates": updates,
                "demos_seen": demos_seen,
                "frames": frames,
                **{
                    name: float(np.mean(metrics[name]))
                    for name in ("loss", "policy_loss", "accuracy", "entropy", "grad_norm")
                },
                "lr": float(metrics["lr"][-1]),
                "val_success_rate": success,
                "val_mean_return": summary["mean_return"],
                "val_mean_length": summary["mean_length"],
                "best_val_success_rate": best_success,
                "wall_s": time.perf_counter() - start,
            }
            history.append(record)
            if out is not None:
                with open(out / "history.jsonl", "a") as f:
                    f.write(json.dumps(record) + "\n")
            bar.update(1)
            bar.set_postfix(loss=f"{record['loss']:.3f}", acc=f"{record['accuracy']:.3f}", val=f"{success:.3f}")
            stop = callback(record, variables) if callback is not None else None
            if stop or best_success >= config.success_threshold or since_best > config.patience:
                break
    return best_variables, history
