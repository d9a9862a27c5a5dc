"""Flax networks of the learners: the BabyAI FiLM actor-critic (``babyai``) and PyTorch-parity layers."""

from jaxsoc.learners.networks.babyai import PRESETS, ACModel, ModelConfig, preset

__all__ = ["PRESETS", "ACModel", "ModelConfig", "preset"]
