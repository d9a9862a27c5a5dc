"""Reading demonstration datasets: the manifest, the shards, and shuffled minibatches of episodes.

``DemoDataset(path)`` opens a directory written by ``jaxsoc.data.write_demos`` (format described in
``jaxsoc.data.demos``). It reads only the manifest when opened; shards are loaded when needed, and
``iterate`` streams minibatches holding at most ``buffer_shards`` shards (plus one partial batch) in memory::

    data = DemoDataset("demos/GoToLocal")
    for batch in data.iterate(256, seed=0, mode="padded", max_len=64):
        ...  # batch["image"] uint8[256, 64, 7, 7, 3], batch["mask"] bool[256, 64], ...

This module needs only numpy (no jax), so data loading can run in worker processes.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

FORMAT_NAME = "jaxsoc-demos"
FORMAT_VERSION = 1
MANIFEST_NAME = "manifest.json"

#: per-step arrays of a shard, packed episode after episode (first axis: the shard's steps).
STEP_FIELDS = {"image": np.uint8, "direction": np.uint8, "action": np.uint8}
#: per-episode arrays of a shard (first axis: the shard's stored episodes).
EPISODE_FIELDS = {
    "mission": np.uint8,
    "seed": np.int64,
    "length": np.int32,
    "success": np.bool_,
    "reward": np.float32,
    "expert_failed": np.bool_,
}
SHARD_FIELDS = ("offsets", *STEP_FIELDS, *EPISODE_FIELDS)

_MANIFEST_KEYS = (
    "format",
    "format_version",
    "env_id",
    "seed",
    "episodes",
    "shard_episodes",
    "keep_failed",
    "shards",
)
_SHARD_KEYS = ("index", "file", "start", "stop", "episodes", "steps", "bytes", "sha256")

Episodes = dict[str, np.ndarray]  # the arrays of a shard (SHARD_FIELDS): a packed set of episodes


# -- manifest and shards -----------------------------------------------------------------------------------
def read_manifest(directory: str | Path) -> dict[str, Any]:
    """Returns the parsed ``manifest.json`` of a dataset directory.

    Raises:
        FileNotFoundError: no manifest in ``directory``.
        ValueError: the manifest is not valid JSON, not a jaxsoc demonstration manifest, of another format
            version, or lacks a required field.
    """
    path = Path(directory) / MANIFEST_NAME
    if not path.is_file():
        raise FileNotFoundError(f"no demonstration dataset at {directory}: {MANIFEST_NAME} is missing")
    try:
        manifest = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"corrupt manifest {path}: {error}") from error
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        raise ValueError(f"{path} is not a jaxsoc demonstration manifest (format must be {FORMAT_NAME!r})")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise ValueError(
            f"{path}: format version {manifest.get('format_version')!r}, this jaxsoc reads version {FORMAT_VERSION}"
        )
    missing = [key for key in _MANIFEST_KEYS if key not in manifest]
    if missing:
        raise ValueError(f"corrupt manifest {path}: missing fields {missing}")
    if not isinstance(manifest["shards"], list):
        raise ValueError(f"corrupt manifest {path}: 'shards' must be a list")
    for entry in manifest["shards"]:
        if not isinstance(entry, dict) or any(key not in entry for key in _SHARD_KEYS):
            raise ValueError(f"corrupt manifest {path}: shard entry {entry!r} lacks one of {list(_SHARD_KEYS)}")
    return manifest


def file_sha256(path: str | Path) -> str:
    """Returns the hex SHA-256 digest of a file."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_shard(path: str | Path, entry: dict[str, Any] | None = None) -> Episodes:
    """Returns the arrays of one shard file (``SHARD_FIELDS``), checked for consistency: ``offsets``
    ``int64[E + 1]`` from 0 to ``T``, per-step arrays of length ``T``, per-episode arrays of length ``E``, and
    (given its manifest ``entry``) ``E`` and ``T`` as recorded.

    Raises:
        FileNotFoundError: the file is missing.
        ValueError: the file is unreadable, lacks an array or disagrees with itself or with ``entry``.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"missing shard {path}")
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as error:
        raise ValueError(f"corrupt shard {path}: {error}") from error
    missing = [name for name in SHARD_FIELDS if name not in arrays]
    if missing:
        raise ValueError(f"corrupt shard {path}: missing arrays {missing}")
    _check_episodes(arrays, str(path))
    if entry is not None:
        stored = (len(arrays["length"]), len(arrays["action"]))
        if stored != (entry["episodes"], entry["steps"]):
            raise ValueError(
                f"corrupt shard {path}: holds {stored[0]} episodes / {stored[1]} steps, the manifest says "
                f"{entry['episodes']} / {entry['steps']}"
            )
    return arrays


def _check_episodes(arrays: Episodes, where: str) -> None:
    offsets = arrays["offsets"]
    num_episodes, num_steps = len(arrays["length"]), len(arrays["action"])
    problems = []
    if offsets.shape != (num_episodes + 1,) or offsets[0] != 0 or offsets[-1] != num_steps:
        problems.append(f"offsets {offsets.shape} do not span {num_episodes} episodes / {num_steps} steps")
    elif not np.array_equal(np.diff(offsets), arrays["length"]):
        problems.append("offsets disagree with lengths")
    problems += [f"{name} has {len(arrays[name])} rows" for name in STEP_FIELDS if len(arrays[name]) != num_steps]
    problems += [f"{name} has {len(arrays[name])} rows" for name in EPISODE_FIELDS if len(arrays[name]) != num_episodes]
    if problems:
        raise ValueError(f"corrupt shard {where}: {'; '.join(problems)}")


# -- packed episode sets ---------------------------------------------------------------------------------
def _step_indices(offsets: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Returns ``(steps, lengths)``: the flat step indices of episodes ``ids`` one after the other
    (``int64[sum(lengths)]``) and their lengths (``int64[len(ids)]``)."""
    starts, lengths = offsets[ids], offsets[ids + 1] - offsets[ids]
    before = np.cumsum(lengths) - lengths
    steps = np.arange(lengths.sum(), dtype=np.int64) + np.repeat(starts - before, lengths)
    return steps, lengths


def take_episodes(episodes: Episodes, ids: np.ndarray) -> Episodes:
    """Returns a new packed episode set holding episodes ``ids`` (in that order) of ``episodes``."""
    ids = np.asarray(ids, np.int64)
    steps, lengths = _step_indices(episodes["offsets"], ids)
    out = {name: episodes[name][steps] for name in STEP_FIELDS}
    out.update({name: episodes[name][ids] for name in EPISODE_FIELDS})
    out["offsets"] = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return out


def concat_episodes(parts: list[Episodes]) -> Episodes:
    """Returns the packed episode set of ``parts`` one after the other."""
    out = {name: np.concatenate([p[name] for p in parts]) for name in (*STEP_FIELDS, *EPISODE_FIELDS)}
    out["offsets"] = np.concatenate([[0], np.cumsum(out["length"], dtype=np.int64)])
    return out


def padded_batch(episodes: Episodes, ids: np.ndarray, max_len: int | None = None) -> dict[str, np.ndarray]:
    """Returns episodes ``ids`` as a padded batch (``B = len(ids)``, ``T = max_len`` or the longest length):
    ``image uint8[B, T, 7, 7, 3]``, ``direction uint8[B, T]``, ``action uint8[B, T]`` (zeros past an
    episode's end), ``mask bool[B, T]`` (True on real steps), ``length int32[B]``, ``mission uint8[B, 72]``,
    ``seed int64[B]``, ``success bool[B]``, ``reward float32[B]`` and ``expert_failed bool[B]``.

    Raises:
        ValueError: an episode is longer than ``max_len``.
    """
    ids = np.asarray(ids, np.int64)
    steps, lengths = _step_indices(episodes["offsets"], ids)
    longest = int(lengths.max(initial=0))
    width = longest if max_len is None else max_len
    if longest > width:
        raise ValueError(f"an episode has {longest} steps, more than max_len={max_len}; raise max_len")
    row = np.repeat(np.arange(len(ids)), lengths)
    col = np.arange(len(steps)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    batch = {}
    for name in STEP_FIELDS:
        values = episodes[name]
        batch[name] = np.zeros((len(ids), width, *values.shape[1:]), values.dtype)
        batch[name][row, col] = values[steps]
    batch["mask"] = np.arange(width)[None, :] < lengths[:, None]
    batch.update({name: episodes[name][ids] for name in EPISODE_FIELDS})
    return batch


def packed_batch(episodes: Episodes, ids: np.ndarray, max_len: int | None = None) -> dict[str, np.ndarray]:
    """Returns episodes ``ids`` packed one after the other into ``N`` steps (``N = max_len`` or the total
    number of steps): ``image uint8[N, 7, 7, 3]``, ``direction uint8[N]``, ``action uint8[N]``,
    ``segment_ids int32[N]`` (the step's episode, ``0..B-1`` by position in the batch, ``-1`` on padding),
    ``episode_start bool[N]`` (first step of an episode), ``position int32[N]`` (step index within its
    episode), ``mask bool[N]``, ``offsets int64[B + 1]`` (episode ``b`` is steps ``offsets[b]:offsets[b+1]``),
    and the per-episode ``length int32[B]``, ``mission uint8[B, 72]``, ``seed``, ``success``, ``reward``,
    ``expert_failed`` (``[B]``).

    Raises:
        ValueError: the episodes hold more than ``max_len`` steps together.
    """
    ids = np.asarray(ids, np.int64)
    steps, lengths = _step_indices(episodes["offsets"], ids)
    total = len(steps)
    width = total if max_len is None else max_len
    if total > width:
        raise ValueError(f"the batch holds {total} steps, more than max_len={max_len}; raise max_len")
    pad = width - total
    batch = {
        name: np.concatenate([episodes[name][steps], np.zeros((pad, *episodes[name].shape[1:]), episodes[name].dtype)])
        for name in STEP_FIELDS
    }
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    position = np.arange(total) - np.repeat(offsets[:-1], lengths)
    batch["segment_ids"] = np.concatenate([np.repeat(np.arange(len(ids)), lengths), np.full(pad, -1)]).astype(np.int32)
    batch["position"] = np.concatenate([position, np.zeros(pad, np.int64)]).astype(np.int32)
    batch["episode_start"] = np.concatenate([position == 0, np.zeros(pad, bool)])
    batch["mask"] = np.arange(width) < total
    batch["offsets"] = offsets
    batch.update({name: episodes[name][ids] for name in EPISODE_FIELDS})
    return batch


# -- the dataset -----------------------------------------------------------------------------------------
class DemoDataset:
    """A demonstration dataset on disk (a directory holding ``manifest.json`` and its shards).

    Attributes:
        path: the dataset directory.
        manifest: the parsed manifest (``env_id``, ``level``, ``seed``, ``shards``...).
        complete: every shard planned for the requested episode count has been written.

    Only the shards listed in the manifest are read (an interrupted collection gives a usable, smaller
    dataset). Episode ``k`` (``0 <= k < len(self)``) counts stored episodes shard after shard.
    """

    def __init__(self, path: str | Path, *, verify: bool = False) -> None:
        """Opens a dataset: reads and checks the manifest and that every listed shard file exists with its
        recorded size (and, with ``verify``, its SHA-256 digest).

        Raises:
            FileNotFoundError: no manifest, or a listed shard file is missing.
            ValueError: a corrupt manifest, or a shard file of the wrong size or digest.
        """
        path = Path(path)
        self.path = path.parent if path.name == MANIFEST_NAME else path
        self.manifest = read_manifest(self.path)
        self._entries = sorted(self.manifest["shards"], key=lambda entry: entry["index"])
        for entry in self._entries:
            self._check_file(entry, verify)
        counts = [entry["episodes"] for entry in self._entries]
        self._first = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])
        self.complete = bool(self.manifest.get("totals", {}).get("complete", False))
        self._cached: tuple[int, Episodes] | None = None

    def _check_file(self, entry: dict[str, Any], verify: bool) -> None:
        file = self.path / entry["file"]
        if not file.is_file():
            raise FileNotFoundError(f"missing shard {file} (listed in {self.path / MANIFEST_NAME})")
        size = file.stat().st_size
        if size != entry["bytes"]:
            raise ValueError(f"corrupt shard {file}: {size} bytes, the manifest says {entry['bytes']}")
        if verify and file_sha256(file) != entry["sha256"]:
            raise ValueError(f"corrupt shard {file}: SHA-256 differs from the manifest")

    def __len__(self) -> int:
        """Returns the number of stored episodes."""
        return int(self._first[-1])

    @property
    def num_shards(self) -> int:
        """Returns the number of shards listed in the manifest."""
        return len(self._entries)

    @property
    def num_steps(self) -> int:
        """Returns the number of stored steps."""
        return sum(entry["steps"] for entry in self._entries)

    def shard(self, i: int) -> Episodes:
        """Returns the arrays of the ``i``-th listed shard (see ``read_shard``); the last one read is cached."""
        if self._cached is None or self._cached[0] != i:
            entry = self._entries[i]
            self._cached = (i, read_shard(self.path / entry["file"], entry))
        return self._cached[1]

    def episode(self, k: int) -> dict[str, np.ndarray]:
        """Returns stored episode ``k``: ``image uint8[T, 7, 7, 3]``, ``direction uint8[T]``, ``action uint8[T]``
        (``T`` its length; ``image``/``direction`` observed before each action), ``mission uint8[72]`` and the
        scalars ``seed`` (level seed: the episode's index in the collection), ``length``, ``success``,
        ``reward`` and ``expert_failed``.

        Raises:
            IndexError: ``k`` outside ``[-len(self), len(self))``.
        """
        if not -len(self) <= k < len(self):
            raise IndexError(f"episode {k} out of range for a dataset of {len(self)} episodes")
        k %= len(self)
        i = bisect.bisect_right(self._first.tolist(), k) - 1
        episodes = self.shard(i)
        local = k - int(self._first[i])
        start, stop = episodes["offsets"][local], episodes["offsets"][local + 1]
        out = {name: episodes[name][start:stop] for name in STEP_FIELDS}
        out.update({name: episodes[name][local] for name in EPISODE_FIELDS})
        return out

    def iterate(
        self,
        batch_size: int,
        *,
        seed: int,
        mode: str = "padded",
        max_len: int | None = None,
        shuffle_shards: bool = True,
        buffer_shards: int = 2,
        drop_last: bool = False,
    ) -> Iterator[dict[str, np.ndarray]]:
        """Yields shuffled minibatches of ``batch_size`` episodes, one pass over the dataset.

        Shards are visited in a random order (``shuffle_shards``), ``buffer_shards`` at a time: the episodes
        of those shards and the remainder of the previous group (fewer than ``batch_size``) are shuffled
        together and cut into batches. Each stored episode appears exactly once per pass (the last batch is
        smaller unless ``drop_last``); the same ``seed`` gives the same batches.

        Args:
            batch_size: episodes per batch.
            seed: seed of the shuffle (``np.random.default_rng``).
            mode: ``"padded"`` (see ``padded_batch``: ``[B, T, ...]`` arrays with ``mask``) or ``"packed"``
                (see ``packed_batch``: ``[N, ...]`` steps with ``segment_ids`` and ``episode_start``).
            max_len: padded: ``T`` (default the longest episode of the batch); packed: ``N`` (default the
                batch's step count). A fixed value keeps shapes static for ``jit``; an episode (padded) or
                batch (packed) that does not fit raises ``ValueError``.
            shuffle_shards: visit shards in a random order (else in file order; episodes are still shuffled
                within each group).
            buffer_shards: shards held in memory at a time.
            drop_last: skip the final batch when it has fewer than ``batch_size`` episodes.

        Returns:
            an iterator of dicts of numpy arrays, as ``padded_batch`` or ``packed_batch`` returns them.
        """
        if batch_size < 1 or buffer_shards < 1:
            raise ValueError(f"batch_size and buffer_shards must be positive, got {batch_size}, {buffer_shards}")
        if mode not in ("padded", "packed"):
            raise ValueError(f"mode must be 'padded' or 'packed', got {mode!r}")
        make_batch = padded_batch if mode == "padded" else packed_batch
        rng = np.random.default_rng(seed)
        order = rng.permutation(self.num_shards) if shuffle_shards else np.arange(self.num_shards)
        rest: Episodes | None = None
        for lo in range(0, len(order), buffer_shards):
            parts = [self._read_uncached(int(i)) for i in order[lo : lo + buffer_shards]]
            pool = concat_episodes(parts if rest is None else [rest, *parts])
            ids = rng.permutation(len(pool["length"]))
            full = len(ids) - len(ids) % batch_size
            for start in range(0, full, batch_size):
                yield make_batch(pool, ids[start : start + batch_size], max_len)
            rest = take_episodes(pool, ids[full:])
        if rest is not None and len(rest["length"]) and not drop_last:
            yield make_batch(rest, np.arange(len(rest["length"])), max_len)

    def _read_uncached(self, i: int) -> Episodes:
        entry = self._entries[i]
        return read_shard(self.path / entry["file"], entry)
