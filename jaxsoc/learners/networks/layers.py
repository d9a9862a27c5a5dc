"""Layers with PyTorch's parameterisation and initialisation, so jaxsoc's models have the reference's exact
parameter counts and can load its weights.

- ``torch_linear_init``: BabyAI's ``initialize_parameters`` for every ``nn.Linear``: weights ``N(0, 1)``, then
  each output unit's weight vector rescaled to unit L2 norm (Flax kernels are ``[in, out]``: columns).
- ``torch_uniform``: PyTorch's default for convolutions and recurrent cells, ``U(-1/sqrt(n), 1/sqrt(n))``
  (``n`` the fan-in, or the hidden size for recurrent cells), weights and biases alike.
- ``GRUCell`` / ``LSTMCell``: PyTorch's cells with both input and hidden biases (``b_ih``, ``b_hh``).
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
        init = torch_uniform(x.shape[-1] * self.kernel * self.kernel)
        return nn.Conv(
            self.features,
            (self.kernel, self.kernel),
            padding=[(self.padding, self.padding)] * 2,
            kernel_init=init,
            bias_init=init,
        )(x)


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
