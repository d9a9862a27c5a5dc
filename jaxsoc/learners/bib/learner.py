"""What BIB's four learners share: the training state, the optimiser, SWA, and the update step.

A learner (``atc.ATCLearner``, ``bc.BCLearner``, ``video.VideoLearner``) is a config plus four pure functions
that ``run`` drives, ``vmap`` ped over seeds and ``scan`` ned over the steps of an epoch:

- ``init(key) -> TrainState``;
- ``prepare(episodes) -> arrays``: what an epoch indexes, a dict of arrays with leading axis ``N``
  (``{"episodes": Episode}``, plus frozen-encoder features where a learner caches them);
- ``loss(params, target, key, batch, train) -> (loss, metrics)`` on a batch of those arrays;
- ``surprise(params, episodes) -> (float32[B, S], bool[B, S])`` per test-trial step, for
  ``jaxsoc.learners.bib.voe`` (the observers; ``None`` for the ATC encoder).

The optimiser is the baselines' Adam with the gradient norm clipped at ``grad_clip``. Stochastic weight
averaging (``swa``) keeps the mean of the parameters at the end of every epoch from ``swa_start`` (a fraction
of the epochs) on; evaluation uses that mean.
"""

from __future__ import annotations

import abc
import dataclasses
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import optax
from flax import struct


@struct.dataclass
class TrainState:
    """One seed's training state (a pytree; ``run`` stacks seeds on a leading axis).

    Attributes:
        params: ``{"encoder": ..., <head>: ...}`` flax parameters.
        opt_state: the optimiser's state.
        swa: the running mean of ``params`` at epoch ends since ``swa_start`` (``params`` before).
        swa_count: ``int32[]``, epochs averaged into ``swa``.
        target: the ATC target encoder (an EMA of ``params["encoder"]``); ``{}`` for the other learners.
        step: ``int32[]``, optimiser steps taken.
    """

    params: Any
    opt_state: Any
    swa: Any
    swa_count: jax.Array
    target: Any
    step: jax.Array


@dataclasses.dataclass(frozen=True)
class CommonConfig:
    """Fields every BIB learner's config has (the baselines' values)."""

    batch_size: int = 32
    lr: float = 1e-4
    epochs: int = 100
    grad_clip: float = 10.0
    swa: bool = True
    swa_start: float = 0.75

    def __post_init__(self) -> None:
        for name in ("batch_size", "epochs"):
            if getattr(self, name) < 1:
                raise ValueError(f"{type(self).__name__}.{name} must be positive, got {getattr(self, name)}")
        if not 0.0 <= self.swa_start <= 1.0:
            raise ValueError(f"swa_start is a fraction of the epochs in [0, 1], got {self.swa_start}")
        if self.lr <= 0 or self.grad_clip <= 0:
            raise ValueError(f"lr and grad_clip must be positive, got {self.lr} and {self.grad_clip}")

    def swa_first_epoch(self) -> int:
        """Returns the first (0-based) epoch whose end parameters enter the average."""
        return min(int(self.swa_start * self.epochs), self.epochs - 1)

    #: fields added after runs were committed: written only when they differ from their defaults, so the configs
    #: (and checkpoints) of those runs still match
    LATER_FIELDS: ClassVar[tuple[str, ...]] = ()

    def to_dict(self) -> dict[str, Any]:
        """Returns the fields as a dict, less the ``LATER_FIELDS`` that hold their defaults."""
        out = dataclasses.asdict(self)
        for field in dataclasses.fields(self):
            if field.name in self.LATER_FIELDS and out[field.name] == field.default:
                del out[field.name]
        return out


class Learner(abc.ABC):
    """The base of BIB's learners (module docstring); subclasses set ``kind``, ``init_params``, ``loss`` and
    ``surprise``, and ``frozen_encoder`` when the encoder is not trained."""

    kind = ""
    frozen_encoder = False

    def __init__(self, config: CommonConfig) -> None:
        self.config = config
        self.optimizer = optax.chain(optax.clip_by_global_norm(config.grad_clip), optax.adam(config.lr))

    # ------------------------------------------------------------------------------------------------ hooks

    @abc.abstractmethod
    def init_params(self, key: jax.Array) -> dict[str, Any]:
        """Returns fresh parameters ``{"encoder": ..., <head>: ...}``."""

    def init_target(self, params: dict[str, Any]) -> Any:
        return {}

    def update_target(self, target: Any, params: dict[str, Any]) -> Any:
        return target

    @abc.abstractmethod
    def loss(self, params, target, key: jax.Array, batch: dict, train: bool) -> tuple[jax.Array, dict]:
        """Returns ``(loss, metrics)`` (scalars) of a batch of ``prepare`` d arrays."""

    def prepare(self, episodes) -> dict[str, Any]:
        return {"episodes": episodes}

    def repeats(self) -> int:
        """Samples drawn from each episode per epoch."""
        return 1

    surprise = None

    # ------------------------------------------------------------------------------------------------ steps

    def init(self, key: jax.Array) -> TrainState:
        """Returns a fresh ``TrainState`` (jittable, vmappable over keys)."""
        params = self.init_params(key)
        return TrainState(
            params=params,
            opt_state=self.optimizer.init(params),
            swa=params,
            swa_count=jnp.zeros((), jnp.int32),
            target=self.init_target(params),
            step=jnp.zeros((), jnp.int32),
        )

    def update(self, state: TrainState, key: jax.Array, batch: dict) -> tuple[TrainState, dict]:
        """One optimiser step on ``batch``; returns the new state and the batch's metrics (scalars)."""
        grad_fn = jax.value_and_grad(lambda p: self.loss(p, state.target, key, batch, True), has_aux=True)
        (_, metrics), grads = grad_fn(state.params)
        if self.frozen_encoder:
            grads = {**grads, "encoder": jax.tree.map(jnp.zeros_like, grads["encoder"])}
        updates, opt_state = self.optimizer.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        metrics = {**metrics, "grad_norm": optax.tree.norm(grads)}
        state = state.replace(
            params=params,
            opt_state=opt_state,
            target=self.update_target(state.target, params),
            step=state.step + 1,
        )
        return state, metrics

    def end_epoch(self, state: TrainState, epoch: jax.Array) -> TrainState:
        """Folds the epoch's end parameters into the SWA mean once ``epoch`` (0-based) reaches ``swa_start``."""
        active = epoch >= self.config.swa_first_epoch()
        count = state.swa_count + active.astype(jnp.int32)
        weight = jnp.where(active, 1.0 / jnp.maximum(count, 1), 1.0)
        swa = jax.tree.map(lambda s, p: s + weight * (p - s), state.swa, state.params)
        return state.replace(swa=swa, swa_count=count)

    def final_params(self, state: TrainState) -> Any:
        """The parameters to evaluate: the SWA mean when ``config.swa``, else the last ones."""
        return state.swa if self.config.swa else state.params


# ---------------------------------------------------------------------------------------------------- helpers


def masked_mean(values: jax.Array, mask: jax.Array) -> jax.Array:
    """Returns the mean of ``values`` over the True entries of ``mask`` (same shape), 0 if there are none."""
    mask = mask.astype(values.dtype)
    return jnp.sum(values * mask) / jnp.maximum(jnp.sum(mask), 1.0)


def check_encoder(encoder, params, frame_size: int = 84) -> None:
    """Raises ``ValueError`` when ``params`` (a pretrained encoder's, e.g. from ``--encoder RUN``) do not have the
    structure and shapes of the parameters of the flax module ``encoder``, naming the module."""
    frame = jax.ShapeDtypeStruct((1, frame_size, frame_size, 3), jnp.float32)
    want = jax.eval_shape(encoder.init, jax.random.key(0), frame)["params"]
    shapes = lambda tree: jax.tree.map(lambda x: tuple(x.shape), tree)  # noqa: E731
    try:
        same = shapes(want) == shapes(params)
    except (TypeError, ValueError):
        same = False
    if not same:
        raise ValueError(f"the pretrained encoder's parameters do not fit this learner's encoder {encoder!r}")


def to_float(frames: jax.Array) -> jax.Array:
    """Returns ``uint8`` frames as ``float32`` in ``[0, 1]`` (same shape)."""
    return frames.astype(jnp.float32) / 255.0
