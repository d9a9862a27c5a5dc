"""ATC: the image encoder of BIB's baselines, pretrained by augmented temporal contrast (Stooke et al. 2021).

BIB's ``atc/train_atc.py`` (the baselines' ATC training script): the anchor is a background frame, its positive
the frame ``shift`` frames later of the same video; both are randomly shifted (edge-replicated padding of
``pad`` pixels, then a random 84x84 crop); the anchor goes through the encoder and a residual MLP, the positive
through a target encoder that is an exponential moving average of the encoder (``tau`` per step); the logits
``anchor W positive^T`` over a batch are trained by cross-entropy to pick each anchor's own positive.

Frames come from the background episodes at ``frames_per_cell`` frames per cell (BIB's videos: 10, the agent
moving 2 px per frame at 200 px), without the still frames; each training step draws one trial and frame of
each episode of the batch, and an epoch draws ``pairs_per_episode`` such pairs from every episode.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import optax

from jaxsoc.envs.bib import world as W
from jaxsoc.learners.bib import data as D
from jaxsoc.learners.bib.learner import CommonConfig, Learner, to_float
from jaxsoc.learners.networks.bib import ATCContrast, ATCEncoder


@dataclasses.dataclass(frozen=True)
class ATCConfig(CommonConfig):
    """The ATC recipe (BIB's values: batch 512, Adam 1e-4, 100 epochs, clip 10, SWA, tau 0.01, shift 1, pad 1)."""

    batch_size: int = 512
    latent: int = 128
    hidden: int = 256
    tau: float = 0.01
    shift: int = 1
    pad: int = 1
    frames_per_cell: int = 10
    pairs_per_episode: int = 9

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 < self.tau <= 1.0:
            raise ValueError(f"tau must be in (0, 1], got {self.tau}")
        for name in ("shift", "frames_per_cell", "pairs_per_episode", "latent", "hidden"):
            if getattr(self, name) < 1:
                raise ValueError(f"ATCConfig.{name} must be positive, got {getattr(self, name)}")
        if self.pad < 0:
            raise ValueError(f"ATCConfig.pad must be >= 0, got {self.pad}")


def random_shift(key: jax.Array, frames: jax.Array, pad: int) -> jax.Array:
    """Returns ``frames`` (``[B, H, W, C]``) each padded by ``pad`` edge pixels and cropped back to ``H x W`` at
    a random offset (ATC's augmentation); same shape and dtype."""
    if pad == 0:
        return frames
    batch, height, width, channels = frames.shape
    padded = jnp.pad(frames, ((0, 0), (pad, pad), (pad, pad), (0, 0)), mode="edge")
    offsets = jax.random.randint(key, (batch, 2), 0, 2 * pad + 1)

    def crop(image, offset):
        return jax.lax.dynamic_slice(image, (offset[0], offset[1], 0), (height, width, channels))

    return jax.vmap(crop)(padded, offsets)


def sample_pairs(key: jax.Array, episodes: W.Episode, frames_per_cell: int, shift: int) -> tuple[jax.Array, jax.Array]:
    """Returns ``(anchors, positives)``, ``uint8[B, 84, 84, 3]`` each: for each episode of ``episodes`` ``[B, 9]``
    a random trial and frame ``t`` of its motion, and frame ``t + shift`` (the last frame when beyond it)."""
    k_trial, k_frame = jax.random.split(key)
    batch = D.num_episodes(episodes)
    trial = jax.random.randint(k_trial, (batch,), 0, W.NUM_TRIALS)
    trials = jax.tree.map(lambda x: x[jnp.arange(batch), trial], episodes)
    last = jnp.maximum(trials.moves * frames_per_cell - shift, 0)
    start = jnp.floor(jax.random.uniform(k_frame, (batch,)) * (last + 1)).astype(jnp.int32)
    anchors = D.motion_frames(trials, start, frames_per_cell)
    positives = D.motion_frames(trials, start + shift, frames_per_cell)
    return anchors, positives


class ATCLearner(Learner):
    """Pretrains ``networks.bib.ATCEncoder`` by ATC (module docstring). ``params`` holds ``encoder`` and
    ``contrast`` (the anchor MLP and ``W``); the target encoder is ``TrainState.target``."""

    kind = "bib-atc"

    def __init__(self, config: ATCConfig) -> None:
        super().__init__(config)
        self.encoder = ATCEncoder(latent=config.latent)
        self.contrast = ATCContrast(latent=config.latent, hidden=config.hidden)

    def init_params(self, key: jax.Array) -> dict:
        k_enc, k_con = jax.random.split(key)
        frame = jnp.zeros((1, D.FRAME_SIZE, D.FRAME_SIZE, 3))
        latent = jnp.zeros((1, self.config.latent))
        return {
            "encoder": self.encoder.init(k_enc, frame)["params"],
            "contrast": self.contrast.init(k_con, latent, latent)["params"],
        }

    def init_target(self, params: dict) -> dict:
        return params["encoder"]

    def update_target(self, target: dict, params: dict) -> dict:
        return optax.incremental_update(params["encoder"], target, self.config.tau)

    def repeats(self) -> int:
        return self.config.pairs_per_episode

    def loss(self, params, target, key, batch, train):
        cfg = self.config
        k_pairs, k_a, k_p = jax.random.split(key, 3)
        anchors, positives = sample_pairs(k_pairs, batch["episodes"], cfg.frames_per_cell, cfg.shift)
        anchors = to_float(random_shift(k_a, anchors, cfg.pad))
        positives = to_float(random_shift(k_p, positives, cfg.pad))
        z_anchor = self.encoder.apply({"params": params["encoder"]}, anchors)
        z_positive = jax.lax.stop_gradient(self.encoder.apply({"params": target}, positives))
        logits = self.contrast.apply({"params": params["contrast"]}, z_anchor, z_positive)
        labels = jnp.arange(logits.shape[0])
        loss = optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()
        accuracy = jnp.mean(jnp.argmax(logits, axis=-1) == labels)
        return loss, {"loss": loss, "accuracy": accuracy}

    def encode(self, params: dict, frames: jax.Array) -> jax.Array:
        """Returns ``float32[..., latent]``: the encoder's latents of ``uint8[..., 84, 84, 3]`` frames."""
        return self.encoder.apply({"params": params["encoder"]}, to_float(frames))
