"""Flax networks of the learners behind one policy protocol (``registry``): the BabyAI FiLM actor-critic
(``babyai``), a small recurrent policy for any numeric observations (``grid``), the CHAIC helper's set encoder
with pointer actions and the behaviour model (``chaic``), Watch-And-Help's state encoder and its Hybrid and HRL
policies (``household``), and PyTorch-parity layers. Importing the package registers every network."""

from jaxsoc.learners.networks import registry
from jaxsoc.learners.networks.babyai import PRESETS, ACModel, ModelConfig, preset
from jaxsoc.learners.networks.chaic import ChaicConfig, ChaicPolicy
from jaxsoc.learners.networks.excalibur import ExcaliburConfig, ExcaliburPolicy  # noqa: F401 (registers "excalibur")
from jaxsoc.learners.networks.grid import GridConfig, GridPolicy
from jaxsoc.learners.networks.household import HybridPolicy, LowLevelPolicy  # noqa: F401 (registers household-*)

__all__ = [
    "PRESETS",
    "ACModel",
    "ChaicConfig",
    "ChaicPolicy",
    "GridConfig",
    "GridPolicy",
    "ModelConfig",
    "preset",
    "registry",
]
