"""The CHAIC behaviour model as functions of a ``BMConfig``: the network (``networks.chaic.BehaviourModel``), its
state and parameters, its logits over whole sequences of features, the training loss and the optimiser.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax

from jaxsoc.learners.chaic.bm_config import BMConfig
from jaxsoc.learners.chaic.bm_data import NUM_FEATURES
from jaxsoc.learners.networks.chaic import BehaviourModel


def model(config: BMConfig) -> BehaviourModel:
    """Returns the ``BehaviourModel`` of ``config``."""
    return BehaviourModel(config.embed, config.hidden, config.pool)


def initial_carry(config: BMConfig) -> tuple[jax.Array, jax.Array]:
    """Returns the model's state before the first step: ``(h float32[hidden], m float32[NUM_FEATURES])``, zeros."""
    return jnp.zeros((config.hidden,), jnp.float32), jnp.zeros((NUM_FEATURES,), jnp.float32)


def init_params(config: BMConfig, key: jax.Array) -> Any:
    """Returns fresh parameters of ``config``'s model."""
    return model(config).init(key, initial_carry(config), jnp.zeros((NUM_FEATURES,), jnp.float32))["params"]


def logits(config: BMConfig, params: Any, feats: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Returns ``(targets float32[..., T, NUM_CLASSES], constraint float32[..., T, len(CONSTRAINTS)])``: the model's
    logits after each step of the sequences ``feats`` float32[..., T, NUM_FEATURES] (from ``initial_carry``; the
    same as stepping ``BehaviourModel`` through them)."""
    net = model(config)
    variables = {"params": params}
    pooled = jax.lax.cummax(feats, axis=feats.ndim - 2)
    z = jnp.moveaxis(net.apply(variables, feats, pooled, method=BehaviourModel.encode), -2, 0)

    def body(h, z_t):
        h = net.apply(variables, h, z_t, method=BehaviourModel.recur)
        return h, h

    _, hs = jax.lax.scan(body, jnp.zeros((*z.shape[1:-1], config.hidden), jnp.float32), z)
    return net.apply(variables, jnp.moveaxis(hs, 0, -2), pooled, method=BehaviourModel.heads)


def step_losses(config: BMConfig, targets: jax.Array, constraint: jax.Array, data: dict) -> jax.Array:
    """Returns ``float32[B, L]``: each step's targets binary cross-entropy (summed over the classes) plus
    ``constraint_weight`` times its constraint cross-entropy, 0 on padding."""
    bce = optax.sigmoid_binary_cross_entropy(targets, data["targets"][:, None, :].astype(jnp.float32)).sum(-1)
    labels = jnp.broadcast_to(data["constraint"][:, None], constraint.shape[:-1])
    ce = optax.softmax_cross_entropy_with_integer_labels(constraint, labels)
    return (bce + config.constraint_weight * ce) * data["mask"]


def loss(config: BMConfig, params: Any, data: dict) -> jax.Array:
    """Returns ``float32``: the mean over the real steps (``data["mask"]``) of each step's targets binary
    cross-entropy (summed over the classes) plus ``constraint_weight`` times its constraint cross-entropy (``data``:
    ``record``'s layout, any number of runs)."""
    per_step = step_losses(config, *logits(config, params, data["features"]), data)
    return per_step.sum() / jnp.maximum(data["mask"].sum(), 1)


def optimizer_for(config: BMConfig) -> optax.GradientTransformation:
    """Returns the training's optimiser: Adam at ``config.lr``."""
    return optax.adam(config.lr)


def fresh_state(config: BMConfig, optimizer: optax.GradientTransformation) -> dict[str, Any]:
    """Returns ``{"params", "opt_state"}``: fresh parameters (from ``key(config.seed)``) and ``optimizer``'s state."""
    params = init_params(config, jax.random.key(config.seed))
    return {"params": params, "opt_state": optimizer.init(params)}
