"""Video-RNN: BIB's video-prediction observer (the paper's Figure 7; its code was never released).

A character net (2-layer bidirectional LSTM over the ATC latents of each familiarisation trial's frames, the
output at each trial's last frame, mean over trials) gives an agent embedding, after ToMnet (Rabinowitz et al.
2018); a U-Net predicts the next frame of the test trial from the current frame and the embedding (the
embedding tiled over the U-Net's bottleneck). It is trained by the pixel mean squared error at a random step of
each background episode's test trial, and its surprise at test step ``k`` is that error for frame ``k + 1``.
Frames are one per cell (``data.LEARNER_PARAMS``), so the next frame shows the agent one cell further.

Where the surprise is measured (``SURPRISE_REGIONS``): ``"frame"``, every pixel, is the paper's (it scores a
test trial by its frame of highest prediction error and masks nothing). ``"agent"`` counts only the pixels of
the agent's cells before and after the step (``data.agent_step_weights``), so that scripted scene changes away
from the agent (the barrier and lock vanishing at the unlock) do not count as surprise about the agent.

What is a reconstruction (``networks.bib``): the LSTM sizes (BC-RNN's), the U-Net's depth and widths
(16, 32, 64 channels at 84, 42 and 21 px) and where the embedding enters. ``metrics["copy_loss"]`` is the
error of predicting the current frame unchanged, the baseline a working model must beat.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from jaxsoc.envs.bib import world as W
from jaxsoc.learners.bib import data as D
from jaxsoc.learners.bib.bc import encode_all
from jaxsoc.learners.bib.learner import CommonConfig, Learner, check_encoder, masked_mean, to_float
from jaxsoc.learners.networks.bib import ATCEncoder, VideoRNN

#: where ``VideoLearner.surprise`` measures the prediction error (module docstring)
SURPRISE_REGIONS = ("frame", "agent")


def region_error(squared: jax.Array, weights: jax.Array | None) -> jax.Array:
    """Returns ``float32[B, S]``: the per-pixel errors ``squared`` (``float32[B, S, H, W]``) averaged over every
    pixel (``weights`` None) or weighted by ``weights`` (same shape; a step whose weights are all 0 scores 0)."""
    if weights is None:
        return jnp.mean(squared, axis=(2, 3))
    total = jnp.sum(weights, axis=(2, 3))
    return jnp.sum(squared * weights, axis=(2, 3)) / jnp.maximum(total, 1e-6)


@dataclasses.dataclass(frozen=True)
class VideoConfig(CommonConfig):
    """The Video-RNN recipe: the BC baselines' optimiser (batch 32, Adam 1e-4, clip 10, SWA) and sizes."""

    latent: int = 128
    hidden: int = 32
    channels: tuple[int, ...] = (16, 32, 64)
    max_steps: int = 30
    finetune_encoder: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.hidden < 1 or self.max_steps < 1 or len(self.channels) != 3 or min(self.channels) < 1:
            raise ValueError("VideoConfig needs hidden >= 1, max_steps >= 1 and three positive channel widths")


class VideoLearner(Learner):
    """Video-RNN (module docstring). ``params`` holds ``encoder`` (``ATCEncoder``) and ``model`` (``VideoRNN``)."""

    kind = "bib-video-rnn"

    def __init__(self, config: VideoConfig, encoder_params=None) -> None:
        super().__init__(config)
        self.frozen_encoder = not config.finetune_encoder
        self.encoder_params = encoder_params
        self.encoder = ATCEncoder(latent=config.latent)
        if encoder_params is not None:
            check_encoder(self.encoder, encoder_params, D.FRAME_SIZE)
        self.model = VideoRNN(hidden=config.hidden, channels=tuple(config.channels))

    def init_params(self, key: jax.Array) -> dict:
        cfg = self.config
        k_enc, k_model = jax.random.split(key)
        frame = jnp.zeros((1, D.FRAME_SIZE, D.FRAME_SIZE, 3))
        encoder = self.encoder_params if self.encoder_params is not None else self.encoder.init(k_enc, frame)["params"]
        trials = jnp.zeros((1, D.FAMILIARISATION, cfg.max_steps, cfg.latent))
        lengths = jnp.ones((1, D.FAMILIARISATION), jnp.int32)
        return {"encoder": encoder, "model": self.model.init(k_model, trials, lengths, frame)["params"]}

    def prepare(self, episodes: W.Episode) -> dict:
        """``{"episodes": ...}``, plus ``"latents"`` of every frame when the encoder is frozen (``bc.encode_all``)."""
        arrays = {"episodes": episodes}
        if self.frozen_encoder:
            arrays["latents"] = encode_all(self.encoder, self.encoder_params, episodes)
        return arrays

    def _embedding(self, params, batch):
        """The agent embeddings ``[B, 2 * hidden]`` of the batch's familiarisation trials."""
        episodes = batch["episodes"]
        steps = min(self.config.max_steps, episodes.max_moves + 1)
        if "latents" in batch:
            latents = batch["latents"][:, : D.FAMILIARISATION, :steps]
        else:
            frames = D.trial_frames(episodes, tuple(range(D.FAMILIARISATION)), steps)
            latents = self.encoder.apply({"params": params["encoder"]}, to_float(frames))
        lengths = jnp.minimum(episodes.moves[:, : D.FAMILIARISATION] + 1, steps).astype(jnp.int32)
        return self.model.apply({"params": params["model"]}, latents, lengths, method=VideoRNN.character)

    def _predict(self, params, embedding, frames):
        return self.model.apply({"params": params["model"]}, embedding, frames, method=VideoRNN.predict)

    def loss(self, params, target, key, batch, train):
        episodes = batch["episodes"]
        valid = D.step_valid(episodes)[:, W.TEST]
        step = D.random_step(key, valid)
        rows = jnp.arange(step.shape[0])
        test = jnp.full((step.shape[0], 2), W.TEST)
        pair = to_float(D.frames_at(episodes, test, jnp.stack([step, step + 1], axis=1)))  # [B, 2, 84, 84, 3]
        predicted = self._predict(params, self._embedding(params, batch), pair[:, 0])
        real = valid[rows, step]
        loss = masked_mean(jnp.mean((predicted - pair[:, 1]) ** 2, axis=(1, 2, 3)), real)
        copy = masked_mean(jnp.mean((pair[:, 0] - pair[:, 1]) ** 2, axis=(1, 2, 3)), real)
        return loss, {"loss": loss, "copy_loss": copy}

    def surprise(self, params, episodes: W.Episode, steps: int | None = None, region: str = "frame"):
        """``(float32[B, S], bool[B, S])``: the pixel MSE of the predicted frame ``k + 1`` at each of the first
        ``S = steps`` (default ``max_moves``) test steps ``k``, over the ``region`` (``SURPRISE_REGIONS``), and
        which steps are real. Raises ``ValueError`` on an unknown region."""
        if region not in SURPRISE_REGIONS:
            raise ValueError(f"unknown surprise region {region!r}: use one of {SURPRISE_REGIONS}")
        steps = episodes.max_moves if steps is None else steps
        frames = to_float(D.trial_frames(episodes, (W.TEST,), steps + 1)[:, 0])  # [B, S + 1, 84, 84, 3]
        embedding = self._embedding(params, {"episodes": episodes})
        batch = frames.shape[0]
        current = frames[:, :-1].reshape(batch * steps, *frames.shape[2:])
        tiled = jnp.repeat(embedding, steps, axis=0)
        predicted = self._predict(params, tiled, current).reshape(batch, steps, *frames.shape[2:])
        squared = jnp.mean((predicted - frames[:, 1:]) ** 2, axis=-1)  # [B, S, H, W]
        weights = D.agent_step_weights(episodes, steps, frames.shape[2]) if region == "agent" else None
        return region_error(squared, weights), D.step_valid(episodes)[:, W.TEST, :steps]
