"""A small recurrent policy for any observation dict of numeric arrays (classic MiniGrid tasks, tests).

Every observation leaf is flattened and scaled to floats, concatenated (in key order), passed through one
ReLU layer and a GRU, then the actor and critic heads. It has no per-episode context; its memory is a dict
``{"h": float32[B, memory_dim]}`` (a pytree, to keep the trainers honest about memories that are not one
array). It is the second implementation of the policy protocol (``networks.registry``), next to ``ACModel``.
"""

from __future__ import annotations

import dataclasses

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxsoc.learners.networks import registry
from jaxsoc.learners.networks.layers import GRUCell, Linear


@dataclasses.dataclass(frozen=True)
class GridConfig:
    """Hyper-parameters of ``GridPolicy``.

    Attributes:
        hidden: width of the input layer.
        memory_dim: GRU size.
        scale: observations are multiplied by this before the input layer (1/10 suits MiniGrid's codes).
        num_actions: actor outputs.
    """

    hidden: int = 64
    memory_dim: int = 32
    scale: float = 0.1
    num_actions: int = 7

    def __post_init__(self) -> None:
        for name in ("hidden", "memory_dim", "num_actions"):
            if getattr(self, name) < 1:
                raise ValueError(f"GridConfig.{name} must be positive, got {getattr(self, name)}")


PRESETS = {"small": GridConfig(), "tiny": GridConfig(hidden=32, memory_dim=16)}


class GridPolicy(nn.Module):
    """Flatten, ReLU layer, GRU, actor and critic (module docstring); ``config`` a ``GridConfig``."""

    config: GridConfig

    def setup(self) -> None:
        cfg = self.config
        self.inputs = Linear(cfg.hidden)
        self.gru = GRUCell(cfg.memory_dim)
        self.actor = Linear(cfg.num_actions)
        self.critic = Linear(1)

    def initial_memory(self, batch: int) -> dict[str, jax.Array]:
        """Returns ``{"h": float32[batch, memory_dim]}`` of zeros."""
        return {"h": jnp.zeros((batch, self.config.memory_dim), jnp.float32)}

    def encode_context(self, obs: dict) -> tuple:
        """Returns ``()``: this network has no per-episode context."""
        return ()

    def step(self, obs: dict, context: tuple, memory: dict, train: bool = False):
        """Returns ``(log_probs float32[B, num_actions], value float32[B], memory)``."""
        leaves = [obs[k] for k in sorted(obs)]
        batch = leaves[0].shape[0]
        x = jnp.concatenate([leaf.reshape(batch, -1).astype(jnp.float32) for leaf in leaves], axis=-1)
        x = nn.relu(self.inputs(x * self.config.scale))
        h, _ = self.gru(memory["h"], x)
        return jax.nn.log_softmax(self.actor(h)), self.critic(h)[:, 0], {"h": h}

    def __call__(self, obs: dict, memory: dict, train: bool = False):
        """Returns ``step(obs, (), memory, train)``."""
        return self.step(obs, self.encode_context(obs), memory, train)


registry.register("grid", registry.NetworkSpec(GridPolicy, GridConfig, PRESETS))
