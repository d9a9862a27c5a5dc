"""Demonstrations held in memory: the first episodes of a dataset, or bot episodes played on chosen levels.

Both give a packed episode set (``jaxsoc.data.loader.Episodes``: the arrays of a shard, ``offsets``, per-step
``image``/``direction``/``action`` and per-episode ``mission``/``seed``/``length``/``success``/``reward``/
``expert_failed``), wrapped with the env id in ``MemoryDemos``, so the loader's ``padded_batch`` and
``take_episodes`` work on them unchanged. ``bot_demos`` runs the dataset writer's own rollout
(``jaxsoc.data.demos``), so an episode made here holds the same arrays as the one ``jaxsoc demos`` would
store for the same ``(seed, level index)``; interactive imitation learning uses it to ask the bot for
demonstrations on the levels an agent failed.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax
import numpy as np

import jaxsoc
from jaxsoc.data.demos import _Rollout, _run_batch, _shard_arrays
from jaxsoc.data.loader import EPISODE_FIELDS, STEP_FIELDS, DemoDataset, Episodes, concat_episodes, take_episodes
from jaxsoc.envs.babyai import ALIASES

#: the expert name ``jaxsoc demos`` records for the BabyAI bot
BOT_EXPERT_NAME = "babyai-bot"


def bot_failed(bot_state) -> jax.Array:
    """Returns ``bool[]``: the bot gave up (the ``expert_failed`` of the BabyAI bot). A module-level function,
    so every collection that passes it shares the writer's compiled rollout."""
    return bot_state.failed


def canonical_env_id(env_id: str) -> str:
    """Returns the registered name an env id stands for (BabyAI aliases resolved)."""
    return ALIASES.get(env_id, env_id)


@dataclasses.dataclass(frozen=True)
class MemoryDemos:
    """A packed episode set in memory and the environment it was played in.

    Attributes:
        env_id: the registered environment of the episodes.
        episodes: the packed arrays (``Episodes``; ``E`` episodes, ``T`` steps in all).
    """

    env_id: str
    episodes: Episodes

    @property
    def num_episodes(self) -> int:
        """Returns ``E``, the number of episodes."""
        return len(self.episodes["length"])

    @property
    def num_steps(self) -> int:
        """Returns ``T``, the number of steps of all episodes together."""
        return len(self.episodes["action"])

    def take(self, ids) -> MemoryDemos:
        """Returns the episodes ``ids`` (in that order) as new ``MemoryDemos``."""
        return MemoryDemos(self.env_id, take_episodes(self.episodes, np.asarray(ids, np.int64)))

    def concat(self, other: MemoryDemos) -> MemoryDemos:
        """Returns these episodes followed by ``other``'s.

        Raises:
            ValueError: ``other`` was played in another environment.
        """
        if canonical_env_id(other.env_id) != canonical_env_id(self.env_id):
            raise ValueError(f"cannot join demonstrations of {self.env_id} and {other.env_id}")
        return MemoryDemos(self.env_id, concat_episodes([self.episodes, other.episodes]))


def empty_episodes() -> Episodes:
    """Returns a packed episode set of no episodes (``offsets = [0]``)."""
    out = {name: np.zeros((0, 7, 7, 3) if name == "image" else 0, dtype) for name, dtype in STEP_FIELDS.items()}
    out.update({name: np.zeros((0, 72) if name == "mission" else 0, dtype) for name, dtype in EPISODE_FIELDS.items()})
    out["offsets"] = np.zeros(1, np.int64)
    return out


def load_demos(dataset: str | Path | DemoDataset, num_episodes: int | None = None) -> MemoryDemos:
    """Returns the first ``num_episodes`` stored episodes of a dataset (all when ``None``) in memory,
    reading only the shards that hold them.

    Raises:
        ValueError: ``num_episodes`` is below 1 or above the number of stored episodes.
    """
    data = dataset if isinstance(dataset, DemoDataset) else DemoDataset(dataset)
    total = len(data)
    wanted = total if num_episodes is None else num_episodes
    if not 1 <= wanted <= total:
        raise ValueError(f"asked for {num_episodes} episodes of {data.path}, which stores {total}")
    parts, have = [], 0
    for i in range(data.num_shards):
        if have >= wanted:
            break
        shard = data.shard(i)
        count = len(shard["length"])
        parts.append(shard if have + count <= wanted else take_episodes(shard, np.arange(wanted - have)))
        have += min(count, wanted - have)
    return MemoryDemos(data.manifest["env_id"], concat_episodes(parts))


def bot_demos(
    env_id: str,
    seed: int,
    indices,
    *,
    num_envs: int = 256,
    keep_failed: bool = False,
    chunk_steps: int = 32,
) -> MemoryDemos:
    """Plays the BabyAI bot on levels ``indices`` of the collection ``seed`` (level ``i`` is
    ``env.reset_env(jaxsoc.data.episode_reset_key(seed, i))``, as in datasets and in ``evaluate``).

    The worlds run ``num_envs`` at a time (the last group padded), so the jitted rollout is compiled once per
    ``(env, num_envs, chunk_steps)`` and shared with ``write_demos`` runs that pass ``bot_failed``.

    Args:
        env_id: a registered BabyAI environment.
        seed: the collection's seed.
        indices: level indices (``int[N]``, each in ``[0, 2**31)``); episodes keep this order.
        num_envs: worlds played at once.
        keep_failed: also keep the episodes the bot did not solve (else only its successes).
        chunk_steps: steps per jitted chunk.

    Returns:
        ``MemoryDemos`` of the kept episodes (their ``seed`` field is the level index).

    Raises:
        ValueError: a non-positive ``num_envs``/``chunk_steps`` or an index outside ``[0, 2**31)``.
    """
    from jaxsoc.envs.babyai import bot

    indices = np.asarray(indices, np.int64).reshape(-1)
    if num_envs < 1 or chunk_steps < 1:
        raise ValueError(f"num_envs and chunk_steps must be positive, got {num_envs}, {chunk_steps}")
    if len(indices) and (indices.min() < 0 or indices.max() >= 2**31):
        raise ValueError("level indices must lie in [0, 2**31)")
    env, params = jaxsoc.make(env_id)
    key = jax.random.key(seed)
    rollout = _Rollout(env, params, key, bot.bot_init, bot.bot_act, bot_failed, keep_failed, chunk_steps)
    blocks = []
    for lo in range(0, len(indices), num_envs):
        part = indices[lo : lo + num_envs]
        padded = np.pad(part, (0, num_envs - len(part)), mode="edge")
        blocks.append(_run_batch(rollout, padded, len(part)))
    if not blocks:
        return MemoryDemos(env_id, empty_episodes())
    episodes, _ = _shard_arrays(blocks)
    return MemoryDemos(env_id, episodes)
