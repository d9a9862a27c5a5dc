"""Layers with PyTorch's parameterisation and initialisation, so jaxsoc's models have the reference's exact
parameter counts and can load its weights.

- ``torch_linear_init``: BabyAI's ``initialize_parameters`` for every ``nn.Linear``: weights ``N(0, 1)``, then
  each output unit's weight vector rescaled to unit L2 norm (Flax kernels are ``[in, out]``: columns).
- ``torch_uniform``: PyTorch's default for convolutions and recurrent cells, ``U(-1/sqrt(n), 1/sqrt(n))``
  (``n`` the fan-in, or the hidden size for recurrent cells), weights and biases alike.
- ``GRUCell`` / ``LSTMCell``: PyTorch's cells with both input and hidden biases (``b_ih``, ``b_hh``).
- ``Conv``: on the CPU backend a convolution is computed as patches times the kernel (im2col): XLA's CPU
  convolution gradient inside a loop (the learners' scans) runs about 7x slower than this (1.68 s against
  0.23 s for 20 gradients of a 3x3, 32-channel conv on 64 7x7 maps); elsewhere it is ``lax.conv``. Both use
  the same ``[k, k, in, out]`` kernel, so parameters and results are the same (``conv_im2col``,
  ``conv_native``; the GPU suite's ``conv`` part times both on a GPU).
"""

from __future__ import annotations

import math

import flax.linen as nn
import jax
import jax.numpy as jnp


def torch_linear_init(key: jax.Array, shape: tuple[int, ...], dtype=jnp.float32) -> jax.Array:
    """Returns a ``[in, out]`` kernel drawn from ``N(0, 1)`` with every column scaled to unit L2 norm."""
    w = jax.random.normal(key, shape, dtype)
    return w / jnp.sqrt(jnp.sum(w**2, axis=0, keepdims=True))


def torch_uniform(bound_of: int):
    """Returns an initializer drawing from ``U(-1/sqrt(bound_of), 1/sqrt(bound_of))``."""
    bound = 1.0 / math.sqrt(bound_of)

    def init(key, shape, dtype=jnp.float32):
        return jax.random.uniform(key, shape, dtype, -bound, bound)

    return init


def Linear(features: int, name: str | None = None) -> nn.Dense:  # noqa: N802 (a layer constructor)
    """Returns a dense layer initialised as BabyAI's linear layers (unit-norm rows, zero bias)."""
    return nn.Dense(features, kernel_init=torch_linear_init, bias_init=nn.initializers.zeros, name=name)


class Conv(nn.Module):
    """A ``k x k`` convolution over ``[..., H, W, C]`` with PyTorch's default initialisation.

    Attributes:
        features: output channels.
        kernel: kernel size.
        padding: zero padding on every side.
    """

    features: int
    kernel: int
    padding: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        """Returns ``float32[..., H + 2p - k + 1, W + 2p - k + 1, features]``."""
        k, p = self.kernel, self.padding
        init = torch_uniform(x.shape[-1] * k * k)
        kernel = self.param("kernel", init, (k, k, x.shape[-1], self.features))
        bias = self.param("bias", init, (self.features,))
        conv = conv_native if jax.default_backend() != "cpu" else conv_im2col
        return conv(x, kernel, p) + bias


def conv_native(x: jax.Array, kernel: jax.Array, padding: int) -> jax.Array:
    """Returns XLA's convolution (cuDNN on a GPU) of ``x [B, H, W, C]`` with ``kernel [k, k, C, F]``, stride 1,
    ``padding`` zeros on every side: ``[B, H + 2p - k + 1, W + 2p - k + 1, F]``."""
    p = padding
    return jax.lax.conv_general_dilated(x, kernel, (1, 1), [(p, p)] * 2, dimension_numbers=("NHWC", "HWIO", "NHWC"))


def conv_im2col(x: jax.Array, kernel: jax.Array, padding: int) -> jax.Array:
    """Returns ``conv_native``'s result computed as patches times the kernel (im2col); ``x`` may have any
    number of leading axes (``[..., H, W, C]``)."""
    k, p = kernel.shape[0], padding
    padded = jnp.pad(x, [(0, 0)] * (x.ndim - 3) + [(p, p), (p, p), (0, 0)])
    h, w = padded.shape[-3] - k + 1, padded.shape[-2] - k + 1
    patches = jnp.concatenate([padded[..., i : i + h, j : j + w, :] for i in range(k) for j in range(k)], axis=-1)
    return patches @ kernel.reshape(-1, kernel.shape[-1])


class _Gates(nn.Module):
    """``x @ W_i + b_i`` and ``h @ W_h + b_h`` with ``gates * hidden`` outputs each (PyTorch layout)."""

    hidden: int
    gates: int

    @nn.compact
    def __call__(self, x: jax.Array, h: jax.Array) -> tuple[jax.Array, jax.Array]:
        init = torch_uniform(self.hidden)
        size = self.gates * self.hidden
        gi = nn.Dense(size, kernel_init=init, bias_init=init, name="input")(x)
        gh = nn.Dense(size, kernel_init=init, bias_init=init, name="hidden")(h)
        return gi, gh


class GRUCell(nn.Module):
    """PyTorch's GRU cell: ``r, z = sigmoid(...)``, ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``,
    ``h' = (1 - z) * n + z * h``. Called as ``(h, x) -> (h', h')`` (``[B, hidden]``, ``[B, in]``)."""

    hidden: int

    @nn.compact
    def __call__(self, h: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        gi, gh = _Gates(self.hidden, 3, name="gates")(x, h)
        i_r, i_z, i_n = jnp.split(gi, 3, axis=-1)
        h_r, h_z, h_n = jnp.split(gh, 3, axis=-1)
        r = jax.nn.sigmoid(i_r + h_r)
        z = jax.nn.sigmoid(i_z + h_z)
        n = jnp.tanh(i_n + r * h_n)
        h = (1.0 - z) * n + z * h
        return h, h


class LSTMCell(nn.Module):
    """PyTorch's LSTM cell (gates ``i, f, g, o``). Called as ``((h, c), x) -> ((h', c'), h')``."""

    hidden: int

    @nn.compact
    def __call__(self, carry: tuple[jax.Array, jax.Array], x: jax.Array):
        h, c = carry
        gi, gh = _Gates(self.hidden, 4, name="gates")(x, h)
        i, f, g, o = jnp.split(gi + gh, 4, axis=-1)
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        return (h, c), h


def Norm(kind: str, train: bool, name: str | None = None):  # noqa: N802 (a layer constructor)
    """Returns the normalisation layer of ``kind`` for ``[B, H, W, C]`` feature maps.

    ``"batch"``: PyTorch's ``BatchNorm2d`` (batch statistics over ``B, H, W`` when ``train``, running
    averages otherwise; momentum 0.1 and eps 1e-5 as PyTorch). ``"layer"``: per-example normalisation over
    ``H, W, C`` (no dependence on the rest of the batch). ``"none"``: identity.
    """
    if kind == "batch":
        return nn.BatchNorm(use_running_average=not train, momentum=0.9, epsilon=1e-5, name=name)
    if kind == "layer":
        return nn.LayerNorm(epsilon=1e-5, reduction_axes=(-3, -2, -1), feature_axes=-1, name=name)
    if kind == "none":
        return lambda x: x
    raise ValueError(f"norm must be 'batch', 'layer' or 'none', got {kind!r}")


def masked_pool(tokens: jax.Array, mask: jax.Array) -> jax.Array:
    """Returns ``float32[B, 2 D]``: the mean and the max of ``tokens [B, N, D]`` over the slots ``mask [B, N]``
    (zeros where no slot is set): a set encoder's pooling, independent of the order of the slots."""
    m = mask[..., None].astype(tokens.dtype)
    count = m.sum(-2)
    mean = (tokens * m).sum(-2) / jnp.maximum(count, 1.0)
    peak = jnp.where(m > 0, tokens, -jnp.inf).max(-2)
    return jnp.concatenate([mean, jnp.where(count > 0, peak, 0.0)], -1)
