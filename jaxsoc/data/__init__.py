"""Demonstration datasets: ``write_demos`` collects expert episodes into sharded files, ``DemoDataset`` reads
them back and streams shuffled minibatches for behaviour cloning."""

from jaxsoc.data.demos import STEP_KEY_DATA, episode_reset_key, episode_step_key, level_name, write_demos
from jaxsoc.data.loader import DemoDataset, packed_batch, padded_batch, read_manifest, read_shard

__all__ = [
    "STEP_KEY_DATA",
    "DemoDataset",
    "episode_reset_key",
    "episode_step_key",
    "level_name",
    "packed_batch",
    "padded_batch",
    "read_manifest",
    "read_shard",
    "write_demos",
]
