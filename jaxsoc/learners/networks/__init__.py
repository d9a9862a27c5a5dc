"""Flax networks of the learners behind one policy protocol (``registry``): the BabyAI FiLM actor-critic
(``babyai``), a small recurrent policy for any numeric observations (``grid``), and PyTorch-parity layers."""

from jaxsoc.learners.networks import registry
from jaxsoc.learners.networks.babyai import PRESETS, ACModel, ModelConfig, preset
from jaxsoc.learners.networks.grid import GridConfig, GridPolicy

__all__ = ["PRESETS", "ACModel", "GridConfig", "GridPolicy", "ModelConfig", "preset", "registry"]
