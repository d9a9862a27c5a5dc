"""The learned baseline observers of the Baby Intuitions Benchmark (BIB; Gandhi et al. 2021, "Baby Intuitions
Benchmark (BIB): Discerning the goals, preferences, and actions of others", NeurIPS 2021).

BIB's baselines share one frame encoder and differ in what they learn on top of it:

- ``ATCEncoder``: the encoder of Augmented Temporal Contrast (ATC; Stooke et al. 2021), four 3x3 convolutions
  and a linear layer from an ``84 x 84`` RGB frame to a 128-wide state. It is pretrained with ``ATCContrast``
  (ATC's residual anchor MLP and bilinear similarity) and then frozen.
- ``CellEncoder``: not the paper's; an encoder whose output is aligned with BIB's ``10 x 10`` cells (features
  of a strided convolution pooled into each cell by pixel overlap, a per-cell MLP, the cells flattened), so that
  where the agent stands is where its features lie rather than something a dense layer must learn.
- ``BCMLP``: behaviour cloning with an MLP context: each (state, action) pair of the familiarisation trials is
  embedded by an MLP and the pairs are averaged; ``PolicyMLP`` maps [context, query state] to an action in
  ``(-1, 1)^2``.
- ``BCRNN``: behaviour cloning with a recurrent context: each familiarisation trial's (state, action) sequence
  runs through a ``BiLSTM``; its last valid output, averaged over the trials, is the context of the same policy.
- ``VideoRNN``: next-frame prediction: a ToMnet-style ``CharacterNet`` (a ``BiLSTM`` over each trial's encoded
  frames) embeds the agent, and a ``UNet`` predicts the next frame from the current one and that embedding.

The heads take encoded states, not frames (only ``ATCEncoder`` and ``UNet`` see pixels), so a trainer can cache
the frozen encoder's features. Variable numbers of pairs, trials and steps are given as masks and lengths (the
``BiLSTM`` has PyTorch's packed-sequence semantics), so every shape is static and every entry point jits and
vmaps. Models with several entry points (``context``, ``act``, ``character``, ``predict``) define their layers in
``setup``: ``model.apply(variables, ..., method=Model.context)`` uses the variables ``model.init`` made.
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxsoc.envs.bib.render import cell_overlap
from jaxsoc.learners.networks.layers import LSTMCell, torch_uniform


def param_count(variables) -> int:
    """Returns the number of scalars in ``variables["params"]``."""
    return sum(leaf.size for leaf in jax.tree_util.tree_leaves(variables["params"]))


def masked_mean(values: jax.Array, mask: jax.Array) -> jax.Array:
    """Returns the mean of ``values [B, K, F]`` over the ``K`` entries where ``mask [B, K]`` is true: ``[B, F]``
    (zeros where none is)."""
    total = jnp.where(mask[..., None], values, 0.0).sum(axis=1)
    return total / jnp.maximum(mask.sum(axis=1), 1)[:, None]


# ---------------------------------------------------------------------------------------------------- encoder


class ATCEncoder(nn.Module):
    """ATC's convolutional encoder (VALID padding, ReLU after each convolution, then a linear layer).

    Attributes:
        latent: output width.
        channels: channels of every convolution.
        strides: one stride per 3x3 convolution (84 -> 41 -> 20 -> 9 -> 7 pixels with the default).
    """

    latent: int = 128
    channels: int = 32
    strides: tuple = (2, 2, 2, 1)

    @nn.compact
    def __call__(self, frames: jax.Array) -> jax.Array:
        """Returns ``float32[..., latent]`` for ``frames [..., 84, 84, 3]``: floats in [0, 1], or ``uint8``
        (divided by 255)."""
        lead = frames.shape[:-3]
        x = frames.reshape(-1, *frames.shape[-3:]).astype(jnp.float32)
        if frames.dtype == jnp.uint8:
            x = x / 255.0
        for stride in self.strides:
            x = nn.relu(nn.Conv(self.channels, (3, 3), strides=stride, padding="VALID")(x))
        return nn.Dense(self.latent)(x.reshape(x.shape[0], -1)).reshape(*lead, self.latent)


class CellEncoder(nn.Module):
    """An encoder aligned with BIB's cells: ``float32[..., 100 * cell_channels + 2 * keypoints]``.

    A 4x4 convolution of stride 2 (84 -> 42 pixels, 4.2 per cell) and 3x3 ones (ReLU, SAME padding) give each
    pixel features, with the frame's colours beside them; ``render.cell_overlap`` pools them into the ``10 x 10``
    cells (each cell the mean over the pixels it covers, weighted by overlap); a per-cell MLP (one ReLU layer)
    maps each cell to ``cell_channels``, flattened row by row. Nothing mixes cells after the convolutions' 2-3
    pixels of context, so what a cell's features say comes from that cell. Then ``keypoints`` spatial
    soft-arg-maxes (Levine et al. 2016): each a softmax over the 100 cells of a logit read from the per-cell
    hidden layer, giving the expected (row, col) in [0, 1]: where things are as coordinates, from which an MLP
    reads directions linearly, as it does from the symbolic states' scaled positions.

    Why it exists: ATC's encoder fine-tuned end to end held the agent's cell (96% linearly), yet the BC heads
    on it stayed at chance on efficiency, while the same heads on symbols reached 100%; on the cells alone (no
    keypoints) the agent's cell was learned within 400 steps but the BC loss did not fall in 600.

    Attributes:
        channels: widths of the convolutions (the first strided).
        cell_hidden: width of the per-cell hidden layer.
        cell_channels: features per cell.
        keypoints: number of soft-arg-max coordinates pairs.
    """

    channels: tuple = (16, 16)
    cell_hidden: int = 32
    cell_channels: int = 8
    keypoints: int = 8

    @nn.compact
    def __call__(self, frames: jax.Array, logits: bool = False):
        """Returns ``float32[..., 100 * cell_channels + 2 * keypoints]`` (the cells row by row, then each keypoint's
        (row, col)) for ``frames [..., S, S, 3]`` (``S`` even): floats in [0, 1], or ``uint8`` (divided by 255).
        With ``logits``, also the keypoints' logits over the cells, ``float32[..., keypoints, 100]``: an
        auxiliary loss can tell a keypoint where something is (the BC learner's: the agent, then the objects)."""
        lead, size = frames.shape[:-3], frames.shape[-2]
        x = frames.reshape(-1, *frames.shape[-3:]).astype(jnp.float32)
        if frames.dtype == jnp.uint8:
            x = x / 255.0
        colours = nn.avg_pool(x, (2, 2), strides=(2, 2))
        for index, width in enumerate(self.channels):
            x = nn.relu(nn.Conv(width, (4, 4) if index == 0 else (3, 3), strides=2 if index == 0 else 1)(x))
        x = jnp.concatenate([x, colours], axis=-1)
        weights = cell_overlap(size // 2)
        weights = jnp.asarray(weights / weights.sum(axis=0, keepdims=True))  # [S/2, 10], columns sum to 1
        hidden = nn.relu(nn.Dense(self.cell_hidden)(jnp.einsum("bhwc,hi,wj->bijc", x, weights, weights)))
        parts = [nn.Dense(self.cell_channels)(hidden).reshape(hidden.shape[0], -1)]
        grid = hidden.shape[1]
        cell_logits = nn.Dense(self.keypoints)(hidden).reshape(hidden.shape[0], grid * grid, self.keypoints)
        if self.keypoints:
            attention = jax.nn.softmax(cell_logits, axis=1)
            position = jnp.arange(grid, dtype=jnp.float32) / (grid - 1)
            rows, cols = jnp.repeat(position, grid), jnp.tile(position, grid)  # of cell index row * grid + col
            parts += [jnp.einsum("bnk,n->bk", attention, rows), jnp.einsum("bnk,n->bk", attention, cols)]
        features = jnp.concatenate(parts, axis=-1).reshape(*lead, -1)
        if logits:
            return features, jnp.swapaxes(cell_logits, 1, 2).reshape(*lead, self.keypoints, grid * grid)
        return features


class ATCContrast(nn.Module):
    """ATC's contrastive head: a residual MLP on the anchors and a bilinear similarity with the positives.

    Attributes:
        latent: width of the encoded states.
        hidden: width of the anchor MLP.
    """

    latent: int = 128
    hidden: int = 256

    def setup(self) -> None:
        self.mlp_hidden = nn.Dense(self.hidden)
        self.mlp_out = nn.Dense(self.latent)
        self.w = self.param("W", torch_uniform(self.latent), (self.latent, self.latent))

    def anchor(self, z: jax.Array) -> jax.Array:
        """Returns ``z + MLP(z)``: ``float32[B, latent]``."""
        return z + self.mlp_out(nn.relu(self.mlp_hidden(z)))

    def logits(self, anchors: jax.Array, positives: jax.Array) -> jax.Array:
        """Returns ``anchors @ W @ positives.T`` less each row's maximum: ``float32[B, B]`` (row ``i``'s
        positive is column ``i``)."""
        logits = anchors @ self.w @ positives.T
        return logits - jnp.max(logits, axis=1, keepdims=True)

    def __call__(self, anchors_z: jax.Array, positives_z: jax.Array) -> jax.Array:
        """Returns ``logits(anchor(anchors_z), positives_z)``: ``float32[B, B]``."""
        return self.logits(self.anchor(anchors_z), positives_z)


# ---------------------------------------------------------------------------------------------------- sequences

# An LSTM over axis 1 of ``[B, L, D]``, one set of parameters for every step.
_ScanLSTM = nn.scan(LSTMCell, variable_broadcast="params", split_rngs={"params": False}, in_axes=1, out_axes=1)


class BiLSTM(nn.Module):
    """A stacked bidirectional LSTM with PyTorch's packed-sequence semantics (PyTorch's cells and parameters).

    Each layer runs a forward LSTM over steps ``0 .. len - 1`` and a backward LSTM over ``len - 1 .. 0`` of each
    sequence and feeds ``[forward, backward]`` to the next layer; steps from ``len`` on never reach a valid step.

    Attributes:
        hidden: size of each direction's LSTM.
        layers: number of stacked layers.
    """

    hidden: int
    layers: int = 2

    @nn.compact
    def __call__(self, x: jax.Array, lengths: jax.Array) -> jax.Array:
        """Returns ``float32[B, L, 2 * hidden]`` for ``x [B, L, D]`` and ``lengths int32[B]`` (``0 <= len <= L``);
        zeros at steps ``t >= len``."""
        steps = jnp.arange(x.shape[1])
        valid = steps < lengths[:, None]  # [B, L]
        # Step t of the reversed sequence is step len - 1 - t (the same map takes it back); padding stays put.
        reverse = jnp.where(valid, lengths[:, None] - 1 - steps, steps)[..., None]
        zeros = jnp.zeros((x.shape[0], self.hidden), jnp.float32)
        for layer in range(self.layers):
            _, forward = _ScanLSTM(self.hidden, name=f"forward_{layer}")((zeros, zeros), x)
            reversed_x = jnp.take_along_axis(x, reverse, axis=1)
            _, backward = _ScanLSTM(self.hidden, name=f"backward_{layer}")((zeros, zeros), reversed_x)
            backward = jnp.take_along_axis(backward, reverse, axis=1)
            x = jnp.where(valid[..., None], jnp.concatenate([forward, backward], axis=-1), 0.0)
        return x


def last_valid(outputs: jax.Array, lengths: jax.Array) -> jax.Array:
    """Returns ``outputs [B, L, F]`` at step ``len - 1`` of each sequence: ``[B, F]`` (zeros where ``len == 0``)."""
    last = jnp.take_along_axis(outputs, jnp.maximum(lengths - 1, 0)[:, None, None], axis=1)[:, 0]
    return jnp.where(lengths[:, None] > 0, last, 0.0)


def trial_embedding(bilstm: BiLSTM, x: jax.Array, lengths: jax.Array) -> jax.Array:
    """Returns the mean over trials of ``bilstm``'s last valid output for each trial ``x [B, N, L, D]`` of
    ``lengths [B, N]`` steps: ``float32[B, 2 * hidden]``; trials of length 0 are left out (zeros if all are)."""
    b, n, steps, width = x.shape
    flat_lengths = lengths.reshape(b * n)
    last = last_valid(bilstm(x.reshape(b * n, steps, width), flat_lengths), flat_lengths)
    return masked_mean(last.reshape(b, n, -1), lengths > 0)


# ---------------------------------------------------------------------------------------------------- BC heads


class PolicyMLP(nn.Module):
    """BIB's policy MLP: ReLU layers with dropout, then a linear layer and tanh.

    Attributes:
        hidden: widths of the hidden layers.
        dropout: dropout rate after each hidden layer (when training; rng stream ``"dropout"``).
        actions: output width.
    """

    hidden: tuple = (256, 128, 256)
    dropout: float = 0.2
    actions: int = 2

    @nn.compact
    def __call__(self, x: jax.Array, train: bool) -> jax.Array:
        """Returns ``float32[B, actions]`` in (-1, 1) for ``x [B, D]``."""
        for width in self.hidden:
            x = nn.Dropout(self.dropout, deterministic=not train)(nn.relu(nn.Dense(width)(x)))
        return jnp.tanh(nn.Dense(self.actions)(x))


class BCMLP(nn.Module):
    """BIB's BC-MLP head: a masked mean of embedded (state, action) pairs as context, then ``PolicyMLP``.

    Attributes:
        context_hidden: widths of the pair MLP's ReLU layers.
        context_dim: width of a pair's embedding (the context).
        policy_hidden, dropout, actions: ``PolicyMLP``'s.
    """

    context_hidden: tuple = (64, 64)
    context_dim: int = 32
    policy_hidden: tuple = (256, 128, 256)
    dropout: float = 0.2
    actions: int = 2

    def setup(self) -> None:
        self.pair_layers = [nn.Dense(width) for width in self.context_hidden]
        self.pair_out = nn.Dense(self.context_dim)
        self.policy = PolicyMLP(self.policy_hidden, self.dropout, self.actions)

    def context(self, context_states: jax.Array, context_actions: jax.Array, context_mask: jax.Array) -> jax.Array:
        """Returns ``float32[B, context_dim]``, the mean embedding of the pairs ``context_states [B, K, S]``,
        ``context_actions [B, K, 2]`` where ``context_mask bool[B, K]`` (zeros if none)."""
        x = jnp.concatenate([context_states, context_actions], axis=-1)
        for layer in self.pair_layers:
            x = nn.relu(layer(x))
        return masked_mean(self.pair_out(x), context_mask)

    def act(self, context: jax.Array, query_state: jax.Array, train: bool = False) -> jax.Array:
        """Returns ``float32[B, actions]`` in (-1, 1) for ``context [B, context_dim]`` and ``query_state [B, S]``."""
        return self.policy(jnp.concatenate([context, query_state], axis=-1), train)

    def __call__(self, context_states, context_actions, context_mask, query_state, train: bool = False):
        """Returns ``act(context(context_states, context_actions, context_mask), query_state, train)``."""
        return self.act(self.context(context_states, context_actions, context_mask), query_state, train)


class BCRNN(nn.Module):
    """BIB's BC-RNN head: a ``BiLSTM`` embedding of each familiarisation trial, averaged, then ``PolicyMLP``.

    Attributes:
        hidden: size of each LSTM direction (the context is ``2 * hidden`` wide).
        layers: stacked BiLSTM layers.
        policy_hidden, dropout, actions: ``PolicyMLP``'s.
    """

    hidden: int = 32
    layers: int = 2
    policy_hidden: tuple = (256, 128, 256)
    dropout: float = 0.2
    actions: int = 2

    def setup(self) -> None:
        self.bilstm = BiLSTM(self.hidden, self.layers)
        self.policy = PolicyMLP(self.policy_hidden, self.dropout, self.actions)

    def context(self, trial_states: jax.Array, trial_actions: jax.Array, trial_lengths: jax.Array) -> jax.Array:
        """Returns ``float32[B, 2 * hidden]`` for ``trial_states [B, N, L, S]``, ``trial_actions [B, N, L, 2]`` and
        ``trial_lengths int32[B, N]`` (``trial_embedding`` of the [state, action] sequences)."""
        return trial_embedding(self.bilstm, jnp.concatenate([trial_states, trial_actions], axis=-1), trial_lengths)

    def act(self, context: jax.Array, query_state: jax.Array, train: bool = False) -> jax.Array:
        """Returns ``float32[B, actions]`` in (-1, 1) for ``context [B, 2 * hidden]`` and ``query_state [B, S]``."""
        return self.policy(jnp.concatenate([context, query_state], axis=-1), train)

    def __call__(self, trial_states, trial_actions, trial_lengths, query_state, train: bool = False):
        """Returns ``act(context(trial_states, trial_actions, trial_lengths), query_state, train)``."""
        return self.act(self.context(trial_states, trial_actions, trial_lengths), query_state, train)


# ---------------------------------------------------------------------------------------------------- Video-RNN


def _conv_block(x: jax.Array, width: int) -> jax.Array:
    """Returns two 3x3 SAME convolutions with ReLU of ``x [B, H, W, C]``: ``[B, H, W, width]``."""
    for _ in range(2):
        x = nn.relu(nn.Conv(width, (3, 3))(x))
    return x


class UNet(nn.Module):
    """A U-Net predicting a frame from a frame and an embedding tiled over its bottleneck.

    Encoder levels at 84, 42 and 21 pixels (two 3x3 convolutions each, 2x2 max-pooling between); the embedding
    is concatenated to the 21x21 maps before the bottleneck's convolutions; the decoder upsamples 2x (nearest,
    then a 3x3 convolution), concatenates the encoder's maps of that level and applies two convolutions; a 1x1
    convolution, zero at initialisation, gives the change added to the input frame (clipped to [0, 1]). So an
    untrained U-Net copies its input, which is most of a next frame, and learns only the motion. On BIB frames
    (tests, 2 episodes, Adam 2e-3) its error fell below copying within 50 steps and to 0.53 of it after 300;
    a U-Net that outputs the frame through a sigmoid was still above copying after 400 steps, and without a
    direct path from the input frame it stalled at a constant frame.

    Attributes:
        channels: widths of the levels, finest first (the last is the bottleneck).
        embed_dim: width of the embedding.
    """

    channels: tuple = (16, 32, 64)
    embed_dim: int = 64

    @nn.compact
    def __call__(self, frame: jax.Array, embedding: jax.Array) -> jax.Array:
        """Returns the predicted frame ``float32[B, 84, 84, 3]`` in [0, 1] for ``frame [B, 84, 84, 3]`` in [0, 1] and
        ``embedding [B, embed_dim]``."""
        if embedding.shape[-1] != self.embed_dim:
            raise ValueError(f"UNet expects embeddings of width {self.embed_dim}, got {embedding.shape[-1]}")
        x, skips = frame, []
        for level, width in enumerate(self.channels):
            if level > 0:
                skips.append(x)
                x = nn.max_pool(x, (2, 2), strides=(2, 2))
            if level == len(self.channels) - 1:
                tiled = jnp.broadcast_to(embedding[:, None, None, :], (*x.shape[:3], self.embed_dim))
                x = jnp.concatenate([x, tiled], axis=-1)
            x = _conv_block(x, width)
        for width, skip in zip(reversed(self.channels[:-1]), reversed(skips)):
            x = jax.image.resize(x, (*skip.shape[:3], x.shape[-1]), "nearest")
            x = nn.relu(nn.Conv(width, (3, 3))(x))
            x = _conv_block(jnp.concatenate([x, skip], axis=-1), width)
        change = nn.Conv(3, (1, 1), kernel_init=nn.initializers.zeros)(x)
        return jnp.clip(frame + change, 0.0, 1.0)


class CharacterNet(nn.Module):
    """The Video-RNN's ToMnet-style character net: ``trial_embedding`` of each trial's encoded frames.

    Attributes:
        hidden: size of each LSTM direction (the embedding is ``2 * hidden`` wide).
        layers: stacked BiLSTM layers.
    """

    hidden: int = 32
    layers: int = 2

    @nn.compact
    def __call__(self, trial_features: jax.Array, trial_lengths: jax.Array) -> jax.Array:
        """Returns ``float32[B, 2 * hidden]`` for ``trial_features [B, N, L, S]`` and ``trial_lengths int32[B, N]``."""
        return trial_embedding(BiLSTM(self.hidden, self.layers), trial_features, trial_lengths)


class VideoRNN(nn.Module):
    """BIB's Video-RNN: ``CharacterNet`` embeds the familiarisation trials, ``UNet`` predicts the next frame.

    Attributes:
        hidden, layers: ``CharacterNet``'s.
        channels: ``UNet``'s.
    """

    hidden: int = 32
    layers: int = 2
    channels: tuple = (16, 32, 64)

    def setup(self) -> None:
        self.character_net = CharacterNet(self.hidden, self.layers)
        self.unet = UNet(self.channels, 2 * self.hidden)

    def character(self, trial_features: jax.Array, trial_lengths: jax.Array) -> jax.Array:
        """Returns ``float32[B, 2 * hidden]`` for ``trial_features [B, N, L, S]`` and ``trial_lengths int32[B, N]``."""
        return self.character_net(trial_features, trial_lengths)

    def predict(self, embedding: jax.Array, frame: jax.Array) -> jax.Array:
        """Returns the next frame ``float32[B, 84, 84, 3]`` in [0, 1] for ``embedding [B, 2 * hidden]`` and
        ``frame [B, 84, 84, 3]``."""
        return self.unet(frame, embedding)

    def __call__(self, trial_features: jax.Array, trial_lengths: jax.Array, frame: jax.Array) -> jax.Array:
        """Returns ``predict(character(trial_features, trial_lengths), frame)``: ``float32[B, 84, 84, 3]``."""
        return self.predict(self.character(trial_features, trial_lengths), frame)
