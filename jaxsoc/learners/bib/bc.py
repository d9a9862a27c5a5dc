"""BC-MLP and BC-RNN: BIB's behaviour-cloning observers (``bib-baselines`` ``tom/models.py``).

Both predict the agent's action at a frame of the test trial from that frame and a context summarising the 8
familiarisation trials, and are trained by the mean squared error of the ``tanh`` output against BIB's action
label (``data.step_actions``) at a random step of each background episode's test trial:

- **BC-MLP**: the context is ``context_pairs`` (30) random (frame, action) pairs of the familiarisation
  trials (drawn without replacement), each through an MLP, mean-pooled;
- **BC-RNN**: each familiarisation trial's first ``max_steps`` (30) (frame, action) pairs through a 2-layer
  bidirectional LSTM, the output at its last step, mean over trials.

The frames go through the ATC encoder (``atc``), loaded from a pretraining run (or random) and fine-tuned with
the rest, as in the baselines. With ``finetune_encoder=False`` the encoder stays as loaded and its latents of
every training frame are computed once (``prepare``), which makes a CPU run affordable.

Beyond the baselines' recipe (options that let the BC heads learn from pixels), all off by default:

- ``query_steps``: real steps of the query trial drawn per episode and step (the baselines: 1; 0: every one);
- ``query_trial="any"``: the query trial is drawn among the 9 of each background episode (the other 8, in
  order, are its context: ``data.rotate_trials``) instead of always the last;
- ``aux_weight``: an auxiliary linear head on the query frames' latents predicting the agent's cell (100-way
  cross-entropy, a label the generator gives for free), added to the loss with this weight so that the
  encoder has a reason to encode the agent; the validation loss stays the BC loss alone;
- ``inputs="symbolic"``: no pixels and no encoder, the heads read ``data.symbolic_states`` (the agent,
  objects, walls, key and lock as positions): the diagnostic of whether the heads and data can show the
  paper's pattern when the encoder is out of the way;
- ``encoder="cells"``: ``networks.bib.CellEncoder`` instead of ATC's, one feature vector of ``cell_channels``
  per cell of the grid and ``keypoints`` soft-arg-max coordinates (the states the heads read are
  ``100 * cell_channels + 2 * keypoints`` wide), trained from random, or taken from another BC run with this
  encoder (``--encoder RUN``), e.g. frozen under BC-RNN.

As an observer, the surprise of test step ``k`` is the squared error of the predicted action against the
observed one (mean over the two axes), over the real steps; the context pairs of BC-MLP are drawn with a fixed
key, so a pair's two episodes, whose familiarisation trials are the same, get the same context.
"""

from __future__ import annotations

import dataclasses
import hashlib

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxsoc.envs.bib import world as W
from jaxsoc.learners.bib import data as D
from jaxsoc.learners.bib.learner import CommonConfig, Learner, check_encoder, masked_mean, to_float
from jaxsoc.learners.networks.bib import BCMLP, BCRNN, ATCEncoder, CellEncoder

MODELS = ("mlp", "rnn")
ENCODERS = ("atc", "cells")
CONTEXT_KEY = 0  # the fixed key of the evaluation contexts


@dataclasses.dataclass(frozen=True)
class BCConfig(CommonConfig):
    """The BC recipe (BIB's values: batch 32, Adam 1e-4, clip 10, SWA, dropout 0.2, 30 context pairs or
    steps). ``model`` is ``"mlp"`` or ``"rnn"``."""

    model: str = "mlp"
    latent: int = 128
    context_pairs: int = 30
    max_steps: int = 30
    dropout: float = 0.2
    finetune_encoder: bool = True
    query_steps: int = 1
    query_trial: str = "test"
    aux_weight: float = 0.0
    inputs: str = "pixels"
    encoder: str = "atc"
    cell_channels: int = 8
    keypoints: int = 8

    LATER_FIELDS = ("encoder", "cell_channels", "keypoints")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.model not in MODELS:
            raise ValueError(f"BCConfig.model must be one of {MODELS}, got {self.model!r}")
        if self.context_pairs < 1 or self.max_steps < 1:
            raise ValueError("BCConfig.context_pairs and max_steps must be positive")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"BCConfig.dropout must be in [0, 1), got {self.dropout}")
        if self.query_steps < 0 or self.aux_weight < 0:
            raise ValueError("BCConfig.query_steps and aux_weight must be >= 0")
        if self.query_trial not in ("test", "any") or self.inputs not in ("pixels", "symbolic"):
            raise ValueError(f"BCConfig: query_trial is 'test' or 'any', inputs 'pixels' or 'symbolic'; got {self}")
        if self.encoder not in ENCODERS or self.cell_channels < 1 or self.keypoints < 0:
            raise ValueError(f"BCConfig: encoder is one of {ENCODERS}, cell_channels > 0, keypoints >= 0; got {self}")
        if self.encoder == "cells" and self.aux_weight > 0 and self.keypoints < 1:
            raise ValueError("BCConfig: the cell encoder's auxiliary loss is on its keypoints (keypoints >= 1)")


def context_picks(key: jax.Array, valid: jax.Array, count: int) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Draws ``count`` distinct real steps of the familiarisation trials of each episode.

    ``valid`` is ``bool[B, 8, M]``. Returns ``(trial, step, mask)``, ``int32[B, count]`` twice and
    ``bool[B, count]`` (False where an episode has fewer than ``count`` real steps)."""
    batch, trials, steps = valid.shape
    noise = jnp.where(valid, jax.random.uniform(key, valid.shape), -1.0).reshape(batch, trials * steps)
    top, index = jax.lax.top_k(noise, min(count, trials * steps))
    return (index // steps).astype(jnp.int32), (index % steps).astype(jnp.int32), top >= 0.0


class BCLearner(Learner):
    """BC-MLP / BC-RNN (module docstring). ``params`` holds ``encoder`` (``ATCEncoder``) and ``head``."""

    def __init__(self, config: BCConfig, encoder_params=None) -> None:
        super().__init__(config)
        self.kind = f"bib-bc-{config.model}"
        self.symbolic = config.inputs == "symbolic"
        self.frozen_encoder = not config.finetune_encoder and not self.symbolic
        self.encoder_params = encoder_params
        if config.encoder == "cells":
            self.encoder = CellEncoder(cell_channels=config.cell_channels, keypoints=config.keypoints)
            latent = W.GRID**2 * config.cell_channels + 2 * config.keypoints
        else:
            self.encoder, latent = ATCEncoder(latent=config.latent), config.latent
        if encoder_params is not None:
            check_encoder(self.encoder, encoder_params, D.FRAME_SIZE)
        self.width = D.SYMBOLIC_WIDTH if self.symbolic else latent  # of the states the heads read
        self.head = BCMLP(dropout=config.dropout) if config.model == "mlp" else BCRNN(dropout=config.dropout)
        self.aux = nn.Dense(W.GRID * W.GRID)  # the agent's cell from a latent

    # ------------------------------------------------------------------------------------------------ set-up

    def init_params(self, key: jax.Array) -> dict:
        k_enc, k_head, k_aux = jax.random.split(key, 3)
        frame = jnp.zeros((1, D.FRAME_SIZE, D.FRAME_SIZE, 3))
        if self.symbolic:
            encoder = {}
        elif self.encoder_params is not None:
            encoder = self.encoder_params
        else:
            encoder = self.encoder.init(k_enc, frame)["params"]
        params = {"encoder": encoder, "head": self.head.init(k_head, *self._dummy())["params"]}
        if self.config.aux_weight > 0 and self.config.encoder == "atc":
            params["aux"] = self.aux.init(k_aux, jnp.zeros((1, self.width)))["params"]
        return params

    def _dummy(self):
        cfg, latent = self.config, jnp.zeros((1, self.width))
        if cfg.model == "mlp":
            k = cfg.context_pairs
            return jnp.zeros((1, k, self.width)), jnp.zeros((1, k, 2)), jnp.ones((1, k), bool), latent
        n, steps = D.FAMILIARISATION, cfg.max_steps
        return jnp.zeros((1, n, steps, self.width)), jnp.zeros((1, n, steps, 2)), jnp.ones((1, n), jnp.int32), latent

    def prepare(self, episodes: W.Episode) -> dict:
        """``{"episodes": ...}``, plus ``"latents"`` ``float32[N, 9, M + 1, latent]`` of every frame when the
        encoder is frozen (computed in chunks of 64 episodes)."""
        arrays = {"episodes": episodes}
        if self.frozen_encoder:
            arrays["latents"] = encode_all(self.encoder, self.encoder_params, episodes)
        return arrays

    # ------------------------------------------------------------------------------------------------ states

    def _encode(self, params, frames):
        return self.encoder.apply({"params": params["encoder"]}, to_float(frames))

    def _states_at(self, params, batch, trial, step):
        """Latents ``[B, K, latent]`` of the frames ``(trial, step)`` (``int[B, K]``) of the batch."""
        if self.symbolic:
            return D.symbolic_states(batch["episodes"], trial, step)
        if "latents" in batch:
            rows = jnp.arange(trial.shape[0])[:, None]
            return batch["latents"][rows, trial, step]
        return self._encode(params, D.frames_at(batch["episodes"], trial, step))

    def _trial_states(self, params, batch, steps: int):
        """Latents ``[B, 8, steps, latent]`` of the familiarisation trials' first ``steps`` frames."""
        return self._steps_of(params, batch, tuple(range(D.FAMILIARISATION)), steps)

    def _steps_of(self, params, batch, trials: tuple[int, ...], steps: int):
        """States ``[B, len(trials), steps, width]`` of the given trials' first ``steps`` frames."""
        if "latents" in batch:
            return batch["latents"][:, jnp.asarray(trials), :steps]
        if self.symbolic:
            b, shape = D.num_episodes(batch["episodes"]), (len(trials), steps)
            trial = jnp.broadcast_to(jnp.asarray(trials)[:, None], shape).reshape(1, -1).repeat(b, 0)
            step = jnp.broadcast_to(jnp.arange(steps)[None], shape).reshape(1, -1).repeat(b, 0)
            return D.symbolic_states(batch["episodes"], trial, step).reshape(b, *shape, -1)
        return self._encode(params, D.trial_frames(batch["episodes"], trials, steps))

    def _context(self, params, key, batch):
        """The head's context ``[B, C]`` of the batch's familiarisation trials."""
        cfg, episodes = self.config, batch["episodes"]
        actions = D.step_actions(episodes)[:, : D.FAMILIARISATION]
        valid = D.step_valid(episodes)[:, : D.FAMILIARISATION]
        head = {"params": params["head"]}
        if cfg.model == "mlp":
            trial, step, mask = context_picks(key, valid, cfg.context_pairs)
            states = self._states_at(params, batch, trial, step)
            picked = actions[jnp.arange(trial.shape[0])[:, None], trial, step]
            return self.head.apply(head, states, picked, mask, method=BCMLP.context)
        steps = min(cfg.max_steps, episodes.max_moves)
        states = self._trial_states(params, batch, steps)
        lengths = jnp.minimum(episodes.moves[:, : D.FAMILIARISATION], steps).astype(jnp.int32)
        return self.head.apply(head, states, actions[:, :, :steps], lengths, method=BCRNN.context)

    def _act(self, params, context, query, train: bool, key):
        rngs = {"dropout": key} if train else {}
        return self.head.apply({"params": params["head"]}, context, query, train, method="act", rngs=rngs)

    # ------------------------------------------------------------------------------------------------ loss

    def loss(self, params, target, key, batch, train):
        """The mean squared action error over ``query_steps`` real steps of each episode's query trial, plus
        ``aux_weight`` times the agent-cell cross-entropy when training (module docstring)."""
        cfg = self.config
        k_context, k_query, k_drop, k_trial = jax.random.split(key, 4)
        if cfg.query_trial == "any":
            batch = D.rotate_trials(batch, jax.random.randint(k_trial, (D.num_episodes(batch["episodes"]),), 0, 9))
        episodes = batch["episodes"]
        valid = D.step_valid(episodes)[:, W.TEST]
        _, step, mask = context_picks(k_query, valid[:, None], cfg.query_steps or valid.shape[-1])  # [B, Q]
        test = jnp.full_like(step, W.TEST)
        logits = None  # the cell encoder's keypoint logits, when its auxiliary loss needs them
        if cfg.encoder == "cells" and cfg.aux_weight > 0 and train and "latents" not in batch:
            frames = to_float(D.frames_at(episodes, test, step))  # encoded once for the states and the logits
            query, logits = self.encoder.apply({"params": params["encoder"]}, frames, logits=True)
        else:
            query = self._states_at(params, batch, test, step)  # [B, Q, width]
        context = self._context(params, k_context, batch)
        b, q = step.shape
        tiled = jnp.repeat(context[:, None], q, axis=1).reshape(b * q, -1)
        predicted = self._act(params, tiled, query.reshape(b * q, -1), train, k_drop).reshape(b, q, 2)
        target_action = D.step_actions(episodes)[jnp.arange(b)[:, None], W.TEST, step]
        loss = masked_mean(jnp.mean((predicted - target_action) ** 2, axis=-1), mask)
        metrics = {"loss": loss}
        if cfg.aux_weight > 0 and train:
            aux = self._aux_loss(params, batch, test, step, query, logits, mask)
            metrics = {"loss": loss + cfg.aux_weight * aux, "bc_loss": loss, "aux_loss": aux}
        return metrics["loss"], metrics

    def _aux_loss(self, params, batch, trial, step, states, logits, mask):
        """The auxiliary cross-entropy at the query frames ``(trial, step)`` (``int[B, Q]``, real where ``mask``):
        the ATC encoder's linear head on ``states`` against the agent's cell; the cell encoder's keypoint
        ``logits`` (``[B, Q, P, 100]``; computed here when None), keypoint 0 against the agent's cell and
        keypoints 1 and 2 (where there are) against the two objects' cells where they are in the trial (summed)."""
        episodes = batch["episodes"]
        cells = D.agent_cells(episodes, trial, step)  # [B, Q]
        cross_entropy = optax.softmax_cross_entropy_with_integer_labels
        if self.config.encoder != "cells":
            return masked_mean(cross_entropy(self.aux.apply({"params": params["aux"]}, states), cells), mask)
        if logits is None:
            frames = to_float(D.frames_at(episodes, trial, step))
            _, logits = self.encoder.apply({"params": params["encoder"]}, frames, logits=True)
        total = masked_mean(cross_entropy(logits[:, :, 0], cells), mask)
        objects, present = D.object_cells(episodes, trial)  # [B, Q, 2]
        for slot in range(min(2, logits.shape[2] - 1)):
            total += masked_mean(cross_entropy(logits[:, :, slot + 1], objects[..., slot]), mask & present[..., slot])
        return total

    def surprise(self, params, episodes: W.Episode, steps: int | None = None):
        """``(float32[B, S], bool[B, S])``: the squared action error at each of the first ``S = steps`` (default
        ``max_moves``) test steps, and which are real."""
        batch = {"episodes": episodes}
        context = self._context(params, jax.random.key(CONTEXT_KEY), batch)
        steps = episodes.max_moves if steps is None else steps
        states = self._steps_of(params, batch, (W.TEST,), steps)[:, 0]  # [B, S, width]
        tiled = jnp.repeat(context[:, None], steps, axis=1)
        flat = lambda x: x.reshape(-1, x.shape[-1])  # noqa: E731
        predicted = self._act(params, flat(tiled), flat(states), False, None).reshape(-1, steps, 2)
        observed = D.step_actions(episodes)[:, W.TEST, :steps]
        return jnp.mean((predicted - observed) ** 2, axis=-1), D.step_valid(episodes)[:, W.TEST, :steps]


#: latents computed by ``encode_all`` in this process, by fingerprint of (encoder, params, episodes)
_LATENTS: dict[str, jax.Array] = {}
_LATENTS_KEPT = 4


def _fingerprint(*trees) -> str:
    digest = hashlib.sha256()
    for tree in trees:
        for leaf in jax.tree.leaves(tree):
            array = np.asarray(leaf)
            digest.update(f"{array.dtype}{array.shape}".encode())
            digest.update(array.tobytes())
    return digest.hexdigest()


def encode_all(encoder: ATCEncoder, params, episodes: W.Episode, chunk: int = 64) -> jax.Array:
    """Returns ``float32[N, 9, M + 1, latent]``: the encoder's latents of every frame of ``episodes`` ``[N, 9]``
    (``params`` the encoder's own), computed ``chunk`` episodes at a time. The last few results are kept in
    memory by fingerprint, so the observers trained one after another on one encoder and data encode once."""
    key = _fingerprint(params, episodes) + repr(encoder)
    if key in _LATENTS:
        return _LATENTS[key]
    steps = episodes.max_moves + 1

    @jax.jit
    def encode(part):
        frames = D.trial_frames(part, tuple(range(W.NUM_TRIALS)), steps)
        return encoder.apply({"params": params}, to_float(frames))

    n = D.num_episodes(episodes)
    chunk, out = min(chunk, n), []
    for start in range(0, n, chunk):
        rows = jnp.minimum(jnp.arange(start, start + chunk), n - 1)
        out.append(encode(jax.tree.map(lambda x, rows=rows: x[rows], episodes))[: n - start])
    while len(_LATENTS) >= _LATENTS_KEPT:
        _LATENTS.pop(next(iter(_LATENTS)))
    _LATENTS[key] = jnp.concatenate(out)
    return _LATENTS[key]
