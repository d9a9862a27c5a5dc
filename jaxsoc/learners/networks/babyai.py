"""The BabyAI actor-critic: image encoder, instruction encoder, FiLM, LSTM memory, actor and critic heads.

A Flax port of the reference ``ACModel`` (BabyAI 1.0 ``expert_filmcnn`` and 1.1 ``bow_endpool_res``) with the
reference's layer sizes, parameter counts and initialisation (``layers``). One call advances one step for a
batch of ``B`` worlds::

    model = ACModel(preset("small"))
    variables = model.init(key, obs, model.initial_memory(B))
    (logits, value, memory), updates = model.apply(variables, obs, memory, train=True, mutable=["batch_stats"])

``obs`` is a dict with ``image uint8[B, 7, 7, 3]`` and ``mission int[B, L]`` (token ids, 0-padded at the end);
``memory`` is ``float32[B, 2 * memory_dim]`` = concat(h, c) of the LSTM, as the reference stores it. The
caller resets memory at episode starts (multiply by ``1 - done``).

Architectures (``ModelConfig.arch``):
- ``"bow_endpool_res"`` (1.1, default): bag-of-words image embedding (one 441 x 128 table, channel ``c``
  offset by ``147 c``, the three embeddings summed), two 3x3 convs without pooling, residual FiLM, a 7x7
  max-pool at the end.
- ``"original"`` (ICLR19 ``expert_filmcnn``): the raw integers as floats, conv 2x2 + pool, conv 3x3 + pool,
  FiLM without residual, a final 2x2 max-pool.

Normalisation (``ModelConfig.norm``): ``"batch"`` as the reference (batch statistics in ``train`` mode,
running averages otherwise, kept in the ``batch_stats`` collection); ``"layer"`` normalises each example on
its own, so a world's action never depends on the other worlds of the batch.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.babyai.language import WORD_TO_ID
from jaxsoc.learners.networks import registry
from jaxsoc.learners.networks.layers import Conv, GRUCell, Linear, LSTMCell, Norm

IMAGE_BOW_MAX = 147  # the reference's per-channel vocabulary of the image embedding (obs_space["image"])
ARCHS = ("bow_endpool_res", "original")
INSTR_ARCHS = ("gru", "attgru")
NORMS = ("batch", "layer", "none")
#: the reference tokenizer reads words only (``re.findall("([a-z]+)", mission)``): the comma of ``", then"``
#: is in the observation (so missions decode character for character) but not in the model's input
REFERENCE_IGNORED_TOKENS = (WORD_TO_ID[","],)


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """Hyper-parameters of ``ACModel`` (see ``preset``).

    Attributes:
        arch: image encoder, ``"bow_endpool_res"`` or ``"original"``.
        instr_arch: ``"gru"`` (last output of a GRU) or ``"attgru"`` (bidirectional GRU with attention keyed
            by the memory).
        instr_dim: word embedding size and instruction vector size.
        memory_dim: LSTM size (the memory holds ``2 * memory_dim`` numbers).
        width: channels of the image trunk, the FiLM blocks and the image embedding (128 in the reference;
            smaller widths make CPU-sized models).
        norm: ``"batch"``, ``"layer"`` or ``"none"``.
        vocab_size: rows of the word embedding (100 in the reference; token ids must be below it).
        num_actions: actor outputs.
        ignored_tokens: token ids removed from the mission (the rest shifted left) before the instruction
            encoder reads it; the comma by default, as the reference's word tokenizer.
    """

    arch: str = "bow_endpool_res"
    instr_arch: str = "gru"
    instr_dim: int = 128
    memory_dim: int = 128
    width: int = 128
    norm: str = "batch"
    vocab_size: int = 100
    num_actions: int = 7
    ignored_tokens: tuple[int, ...] = REFERENCE_IGNORED_TOKENS

    def __post_init__(self) -> None:
        for name, value, allowed in (
            ("arch", self.arch, ARCHS),
            ("instr_arch", self.instr_arch, INSTR_ARCHS),
            ("norm", self.norm, NORMS),
        ):
            if value not in allowed:
                raise ValueError(f"ModelConfig.{name} must be one of {allowed}, got {value!r}")
        for name in ("instr_dim", "memory_dim", "width", "vocab_size", "num_actions"):
            if getattr(self, name) < 1:
                raise ValueError(f"ModelConfig.{name} must be positive, got {getattr(self, name)}")
        if self.instr_arch == "attgru" and self.instr_dim % 2:
            raise ValueError(f"attgru needs an even instr_dim (two directions), got {self.instr_dim}")
        if not isinstance(self.ignored_tokens, tuple) or 0 in self.ignored_tokens:
            raise ValueError(f"ignored_tokens must be a tuple of non-padding ids, got {self.ignored_tokens!r}")


PRESETS = {
    # BabyAI's defaults (single-room levels): GRU 128, LSTM 128
    "small": ModelConfig(),
    # efficiency.py's BIG_MODEL_PARAMS (maze levels): attention GRU 256, LSTM 2048
    "large": ModelConfig(instr_arch="attgru", instr_dim=256, memory_dim=2048),
    # not the paper's: the ICLR19 trunk (pooled early) at a quarter of the width, for CPU runs and tests
    "tiny": ModelConfig(arch="original", instr_dim=32, memory_dim=32, width=32),
}


def preset(name: str, **overrides) -> ModelConfig:
    """Returns the ``"small"`` or ``"large"`` configuration with ``overrides`` (fields of ``ModelConfig``).

    Raises:
        ValueError: an unknown preset or field.
    """
    if name not in PRESETS:
        raise ValueError(f"unknown model preset {name!r}; choose one of {sorted(PRESETS)}")
    fields = {f.name for f in dataclasses.fields(ModelConfig)}
    unknown = sorted(set(overrides) - fields)
    if unknown:
        raise ValueError(f"unknown ModelConfig fields {unknown}; known: {sorted(fields)}")
    return dataclasses.replace(PRESETS[name], **overrides)


def drop_tokens(mission: jax.Array, ignored: tuple[int, ...]) -> jax.Array:
    """Returns ``mission`` (``int[B, L]``) without the ``ignored`` ids, the other tokens shifted left in
    order and 0-padded at the end."""
    if not ignored:
        return mission
    keep = ~jnp.isin(mission, jnp.asarray(ignored, mission.dtype))
    order = jnp.argsort(~keep, axis=-1, stable=True)
    return jnp.take_along_axis(jnp.where(keep, mission, 0), order, axis=-1)


def _run(cell: nn.Module, carry, xs: jax.Array, reverse: bool = False):
    """Runs ``cell`` over the time axis 1 of ``xs`` ``[B, L, D]``; returns ``(carry, outputs [B, L, H])``."""
    scan = nn.scan(
        lambda mdl, c, x: mdl(c, x),
        variable_broadcast="params",
        split_rngs={"params": False},
        in_axes=1,
        out_axes=1,
        reverse=reverse,
    )
    return scan(cell, carry, xs)


class FiLM(nn.Module):
    """conv 3x3 -> norm -> ReLU -> conv 3x3 -> ``* gamma(instr) + beta(instr)`` -> norm -> ReLU."""

    channels: int
    norm: str

    @nn.compact
    def __call__(self, x: jax.Array, instr: jax.Array, train: bool) -> jax.Array:
        """Returns ``float32[B, H, W, channels]`` from ``x [B, H, W, C]`` and ``instr [B, D]``."""
        x = nn.relu(Norm(self.norm, train, name="norm1")(Conv(self.channels, 3, 1, name="conv1")(x)))
        x = Conv(self.channels, 3, 1, name="conv2")(x)
        gamma = Linear(self.channels, name="weight")(instr)[:, None, None, :]
        beta = Linear(self.channels, name="bias")(instr)[:, None, None, :]
        return nn.relu(Norm(self.norm, train, name="norm2")(x * gamma + beta))


class ImageEncoder(nn.Module):
    """The convolutional trunk before FiLM (``arch`` as ``ModelConfig``)."""

    arch: str
    norm: str
    width: int

    @nn.compact
    def __call__(self, image: jax.Array, train: bool) -> jax.Array:
        """Returns ``float32[B, 7, 7, width]`` (``bow_endpool_res``) or ``[B, 2, 2, width]`` (``original``)."""
        w = self.width
        if self.arch == "bow_endpool_res":
            offsets = jnp.arange(image.shape[-1], dtype=jnp.int32) * IMAGE_BOW_MAX
            table = nn.Embed(3 * IMAGE_BOW_MAX, w, embedding_init=nn.initializers.normal(1.0), name="bow")
            x = table(image.astype(jnp.int32) + offsets).sum(axis=-2)
            for i in (1, 2):
                x = nn.relu(Norm(self.norm, train, name=f"norm{i}")(Conv(w, 3, 1, name=f"conv{i}")(x)))
            return x
        x = image.astype(jnp.float32)
        for i, kernel in ((1, 2), (2, 3)):
            x = nn.relu(Norm(self.norm, train, name=f"norm{i}")(Conv(w, kernel, 1, name=f"conv{i}")(x)))
            x = nn.max_pool(x, (2, 2), strides=(2, 2))
        return x


class InstructionEncoder(nn.Module):
    """Word embedding and GRU over the mission tokens (``instr_arch`` as ``ModelConfig``)."""

    instr_arch: str
    instr_dim: int
    vocab_size: int

    @nn.compact
    def __call__(self, mission: jax.Array) -> jax.Array:
        """Returns ``gru``: ``float32[B, instr_dim]`` (the GRU output at the last token); ``attgru``:
        ``float32[B, L, instr_dim]`` (both directions' outputs per token, to be attended over)."""
        mission = mission.astype(jnp.int32)
        words = nn.Embed(self.vocab_size, self.instr_dim, embedding_init=nn.initializers.normal(1.0), name="words")(
            mission
        )
        batch = mission.shape[0]
        lengths = jnp.maximum(jnp.sum(mission != 0, axis=-1), 1)
        if self.instr_arch == "gru":
            cell = GRUCell(self.instr_dim, name="gru")
            _, out = _run(cell, jnp.zeros((batch, self.instr_dim)), words)
            return jnp.take_along_axis(out, (lengths - 1)[:, None, None], axis=1)[:, 0]
        half = self.instr_dim // 2
        zeros = jnp.zeros((batch, half))
        _, forward = _run(GRUCell(half, name="forward"), zeros, words)
        # the backward direction starts at each mission's last token (PyTorch's packed sequences)
        positions = jnp.arange(mission.shape[1])
        flip = jnp.where(positions[None] < lengths[:, None], lengths[:, None] - 1 - positions[None], positions[None])
        reversed_words = jnp.take_along_axis(words, flip[:, :, None], axis=1)
        _, backward = _run(GRUCell(half, name="backward"), zeros, reversed_words)
        backward = jnp.take_along_axis(backward, flip[:, :, None], axis=1)
        valid = (positions[None] < lengths[:, None])[:, :, None]
        return jnp.where(valid, jnp.concatenate([forward, backward], axis=-1), 0.0)


class ACModel(nn.Module):
    """The BabyAI actor-critic (module docstring); ``config`` a ``ModelConfig``.

    It implements the policy protocol (``networks.registry``): the per-episode context is the encoded
    mission, so ``__call__`` = ``step(obs, encode_context(obs), memory)``. The mission encoding does not depend
    on the memory: an acting loop encodes a mission once per episode, and a learner replaying ``R`` steps of
    ``M`` sequences encodes all ``R * M`` missions in one batched pass and runs only ``step`` sequentially.
    """

    config: ModelConfig

    def setup(self) -> None:
        cfg = self.config
        self.instr = InstructionEncoder(cfg.instr_arch, cfg.instr_dim, cfg.vocab_size)
        if cfg.instr_arch == "attgru":
            self.memory2key = Linear(cfg.instr_dim)
        self.image = ImageEncoder(cfg.arch, cfg.norm, cfg.width)
        self.film0 = FiLM(cfg.width, cfg.norm)
        self.film1 = FiLM(cfg.width, cfg.norm)
        self.memory = LSTMCell(cfg.memory_dim)
        self.actor_hidden, self.actor_out = Linear(64), Linear(cfg.num_actions)
        self.critic_hidden, self.critic_out = Linear(64), Linear(1)

    def initial_memory(self, batch: int) -> jax.Array:
        """Returns the zero memory ``float32[batch, 2 * memory_dim]``."""
        return jnp.zeros((batch, 2 * self.config.memory_dim), jnp.float32)

    def encode_mission(self, mission: jax.Array) -> jax.Array:
        """Returns the mission encoding: ``float32[B, instr_dim]`` (``gru``) or per token ``[B, L, instr_dim]``
        (``attgru``), from token ids ``[B, L]``."""
        return self.instr(drop_tokens(mission.astype(jnp.int32), self.config.ignored_tokens))

    def encode_context(self, obs: dict) -> jax.Array:
        """Returns ``encode_mission(obs["mission"])``: the per-episode context of the policy protocol."""
        return self.encode_mission(obs["mission"])

    def step(self, obs: dict, encoding: jax.Array, memory: jax.Array, train: bool = False):
        """Returns ``(log_probs float32[B, num_actions], value float32[B], memory float32[B, 2 * memory_dim])``
        from the observation, its mission's ``encode_mission`` and the memory."""
        cfg = self.config
        instr = encoding
        if cfg.instr_arch == "attgru":
            key = self.memory2key(memory)
            mask = (drop_tokens(obs["mission"], cfg.ignored_tokens) != 0).astype(jnp.float32)
            attention = jax.nn.softmax(jnp.einsum("bd,bld->bl", key, encoding) + 1000.0 * mask, axis=-1)
            instr = jnp.einsum("bl,bld->bd", attention, encoding)
        self.sow("intermediates", "instruction", instr)  # [B, instr_dim], for inspection
        x = self.image(obs["image"], train)
        residual = cfg.arch == "bow_endpool_res"
        for film in (self.film0, self.film1):
            out = film(x, instr, train)
            x = out + x if residual else out
        window = (7, 7) if residual else (2, 2)
        x = nn.relu(nn.max_pool(x, window, strides=(2, 2)).reshape(x.shape[0], -1))
        h, c = jnp.split(memory, 2, axis=-1)
        (h, c), _ = self.memory((h, c), x)
        actor = self.actor_out(jnp.tanh(self.actor_hidden(h)))
        critic = self.critic_out(jnp.tanh(self.critic_hidden(h)))
        return jax.nn.log_softmax(actor), critic[:, 0], jnp.concatenate([h, c], axis=-1)

    def __call__(self, obs: dict, memory: jax.Array, train: bool = False):
        """Returns ``(log_probs float32[B, num_actions], value float32[B], memory float32[B, 2 * memory_dim])``.

        ``train`` selects batch statistics for ``norm="batch"`` (pass ``mutable=["batch_stats"]`` to
        ``apply`` to update the running averages).
        """
        return self.step(obs, self.encode_context(obs), memory, train)


def check_observations(config: ModelConfig, space: Any) -> None:
    """Raises ``ValueError`` unless ``space`` (a ``spaces.Dict``) has ``image`` and ``mission`` with token ids
    below ``config.vocab_size``."""
    spaces = getattr(space, "spaces", {})
    missing = sorted({"image", "mission"} - set(spaces))
    if missing:
        raise ValueError(f"the BabyAI network needs observations {missing}, which the env lacks")
    vocab = int(np.max(spaces["mission"].high)) + 1
    if vocab > config.vocab_size:
        raise ValueError(f"mission token ids reach {vocab - 1}, beyond the model's vocab_size {config.vocab_size}")


def _config_from_json(fields: dict[str, Any]) -> dict[str, Any]:
    fields = dict(fields)
    if "ignored_tokens" in fields:
        fields["ignored_tokens"] = tuple(fields["ignored_tokens"])
    return fields


registry.register("babyai", registry.NetworkSpec(ACModel, ModelConfig, PRESETS, check_observations, _config_from_json))
