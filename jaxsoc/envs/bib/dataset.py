"""BIB datasets: generated episodes written in BIB's file layout, loaded back, or sampled in memory.

**Writing.** ``write_dataset(split, out)`` generates the episodes of each task of ``split`` (``"background"``
or ``"evaluation"``) on the device and writes, like BIB's releases, one JSON file (``bibjson``) and one video
per episode::

    out/<split>/manifest.json
    out/<split>/<task>/<task>_000000.json, <task>_000000.mp4, ...          background
    out/<split>/<task>/<task>_000000e.json, <task>_000000u.json, ...       evaluation (expected, unexpected)
    out/<split>/<task>/shard_00000.done, ...                                finished shards

**Keys.** Episode (or evaluation pair) ``index`` of ``task`` in a dataset written with ``seed`` is
``tasks.generate_batch(split, task, key, 1, params)[0]`` with ``key = episode_keys(seed, split, task,
[index])[0]`` (``fold_in(fold_in(key(seed), crc32("<split>/<task>") & 0x7fffffff), index)``): it depends on
``(seed, split, task, index, params)`` only, not on the batch size or on which shards a run wrote.

**Shards and resuming.** Each task's indices are grouped in shards of ``shard_episodes``; shard ``s`` is done
when ``<task>/shard_{s:05d}.done`` exists (it lists the shard's files, which must exist too). Rerunning the
same command skips done shards and writes the rest, so an interrupted run finishes with the same files as an
uninterrupted one. The manifest is written before any work and after every shard; a run into a directory
whose manifest has other settings (seed, params, shard size, video, a task's episode count) raises
``ValueError`` naming the setting. Further tasks can be added to a directory by later runs.

**Manifest** (``manifest.json``): format, jaxsoc version, split, settings, and per task its episode count,
done shards (range, files, bytes), files, bytes and whether it is complete; ``totals``; for the background
split, ``train`` and ``validation`` lists of JSON files (relative to ``out/<split>``): the first 80% and the
last 20% of each complete task's files by sorted name, as BIB's baselines split them.

**Loading.** ``list_episodes`` lists JSON files (from the manifest, or by scanning the folders of a dataset
without one, such as BIB's own), ``load_episodes`` reads them into one ``Episode`` batch ``[N, 9, ...]`` and
``load_pairs`` reads an evaluation task as ``[N, 2, 9, ...]``.

**In memory.** ``sample_background(key, batch)`` draws a fresh batch of the 4 background tasks in the
paper's proportions (10:10:4:4) without files; ``background_stream`` yields such batches forever.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import json
import os
import zlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from tqdm.auto import tqdm

import jaxsoc
from jaxsoc.envs.bib import bibjson
from jaxsoc.envs.bib import world as W

FORMAT_NAME = "jaxsoc-bib"
FORMAT_VERSION = 1
MANIFEST_NAME = "manifest.json"
SPLITS = ("background", "evaluation")
VIDEOS = ("mp4", "gif", "none")
EVALUATION_EPISODES = 1000  # default pairs per evaluation type
TRAIN_FRACTION = (4, 5)  # 80% train, 20% validation, by sorted filename within each task
PAIR_SUFFIXES = ("e", "u")  # expected, unexpected


def _tasks() -> ModuleType:
    """Returns ``jaxsoc.envs.bib.tasks`` (imported on use; tests may put a stand-in in ``sys.modules``)."""
    return importlib.import_module("jaxsoc.envs.bib.tasks")


# ---------------------------------------------------------------------------------------------------- keys


def task_id(split: str, task: str) -> int:
    """Returns the 31-bit ``fold_in`` data of a task: ``crc32("<split>/<task>") & 0x7fffffff``."""
    return zlib.crc32(f"{split}/{task}".encode()) & 0x7FFFFFFF


def episode_keys(seed: int, split: str, task: str, indices) -> jax.Array:
    """Returns the keys ``[N]`` of episodes ``indices`` (``int[N]``) of ``task`` in a dataset with ``seed``."""
    base = jax.random.fold_in(jax.random.key(seed), task_id(split, task))
    return jax.vmap(jax.random.fold_in, in_axes=(None, 0))(base, jnp.asarray(indices, jnp.uint32))


@functools.partial(jax.jit, static_argnums=(0, 1, 2, 3))
def _generate(generate_batch, split: str, task: str, params: W.BIBParams, keys: jax.Array) -> W.Episode:
    """Returns one episode per key, ``[N, 9, ...]`` (background) or ``[N, 2, 9, ...]`` (evaluation)."""
    return jax.vmap(lambda k: jax.tree.map(lambda x: x[0], generate_batch(split, task, k, 1, params)))(keys)


def generate_episodes(
    split: str,
    task: str,
    indices,
    *,
    seed: int = 0,
    params: W.BIBParams = W.BIBParams(),  # noqa: B008
) -> W.Episode:
    """Returns the episodes ``indices`` (``int[N]``) of ``task`` of a dataset with ``seed`` and ``params``, as
    ``write_dataset`` writes them: ``[N, 9, ...]`` (background) or ``[N, 2, 9, ...]`` (evaluation pairs), on
    the device (compiled once per split, task, ``params`` and ``N``)."""
    keys = episode_keys(seed, split, task, indices)
    return _generate(_tasks().generate_batch, split, task, params, keys)


# ---------------------------------------------------------------------------------------------------- names


def episode_files(split: str, task: str, index: int) -> list[str]:
    """Returns the JSON file names of episode ``index``: ``[<task>_<index:06d>.json]`` (background) or the
    expected and unexpected files ``[<task>_<index:06d>e.json, <task>_<index:06d>u.json]`` (evaluation)."""
    stem = f"{task}_{index:06d}"
    return [f"{stem}.json"] if split == "background" else [f"{stem}{s}.json" for s in PAIR_SUFFIXES]


def _marker(root: Path, task: str, shard: int) -> Path:
    return root / task / f"shard_{shard:05d}.done"


def _shard_range(shard: int, size: int, count: int) -> tuple[int, int]:
    return shard * size, min((shard + 1) * size, count)


def _num_shards(count: int, size: int) -> int:
    return -(-count // size)


# ---------------------------------------------------------------------------------------------------- writing


def write_dataset(
    split: str,
    out: str | Path,
    *,
    tasks: list[str] | tuple[str, ...] | None = None,
    episodes: int | dict[str, int] | None = None,
    seed: int = 0,
    params: W.BIBParams = W.BIBParams(),  # noqa: B008 (a frozen, static dataclass)
    shard_episodes: int = 1000,
    video: str = "mp4",
    video_size: int = 200,
    batch: int = 256,
    progress: bool = True,
    workers: int = min(8, os.cpu_count() or 1),
) -> Path:
    """Generates and writes the episodes of ``split`` under ``out/<split>`` (layout: module docstring).

    Args:
        split: ``"background"`` or ``"evaluation"``.
        out: the dataset folder.
        tasks: the tasks to write (default: all of the split, or the keys of an ``episodes`` dict).
        episodes: episodes per task (evaluation: pairs per type): an int for every task or a dict per task;
            default the paper's counts (``tasks.BACKGROUND``) and 1000 pairs per evaluation type.
        seed: the dataset's seed (see Keys).
        params: the episodes' sizes and timing.
        shard_episodes: indices per shard (the unit of resuming).
        video: ``"mp4"`` (needs the optional ``imageio-ffmpeg``), ``"gif"`` or ``"none"``.
        video_size: the videos' frame side in pixels.
        batch: episodes generated at once on the device (does not change the dataset).
        progress: show a tqdm progress bar over episodes.
        workers: threads writing files (JSON and videos) while the next batch is prepared; the files do not
            depend on it.

    Returns:
        The path of ``manifest.json``.

    Raises:
        ValueError: an unknown split or task, bad counts or sizes, or a directory written with other settings.
        RuntimeError: ``video="mp4"`` without ``imageio-ffmpeg`` (raised before any work).
    """
    tasks_module = _tasks()
    counts = _plan(tasks_module, split, tasks, episodes)
    _check_sizes(shard_episodes, batch, video_size, params)
    save = _video_saver(video, video_size)
    root = Path(out) / split
    settings = _settings(seed, params, shard_episodes, video, video_size)
    manifest = _start_manifest(root, split, settings, counts)
    todo = [
        (task, shard)
        for task, count in counts.items()
        for shard in range(_num_shards(count, shard_episodes))
        if not _shard_done(root, task, shard)
    ]
    ranges = {(task, shard): _shard_range(shard, shard_episodes, counts[task]) for task, shard in todo}
    remaining = sum(hi - lo for lo, hi in ranges.values())
    total = sum(counts.values())
    unit = "episode" if split == "background" else "pair"
    bar = tqdm(total=total, initial=total - remaining, unit=unit, desc=f"BIB {split}", disable=not progress)
    with ThreadPoolExecutor(max(1, workers)) as pool:  # video encoders (ffmpeg, pillow) run beside each other
        writer = _ShardWriter(split, root, seed, params, min(batch, shard_episodes), save, pool)
        for (task, shard), (lo, hi) in ranges.items():
            writer.write(task, shard, lo, hi, bar)
            _write_manifest(root, manifest)
    bar.close()
    return _write_manifest(root, manifest)


def _plan(tasks_module: ModuleType, split: str, tasks, episodes) -> dict[str, int]:
    """Returns ``{task: count}`` to write, checking split, names and counts."""
    if split not in SPLITS:
        raise ValueError(f"unknown BIB split {split!r}; one of {', '.join(SPLITS)}")
    if tasks is None:
        tasks = list(episodes) if isinstance(episodes, dict) else list(_split_tasks(tasks_module, split))
    tasks = list(tasks)
    if not tasks or len(set(tasks)) != len(tasks):
        raise ValueError(f"tasks must be a non-empty list of distinct task names, got {tasks}")
    for task in tasks:
        tasks_module.check_task(split, task)
    if isinstance(episodes, dict):
        extra = sorted(set(episodes) - set(tasks))
        if extra:
            raise ValueError(f"episodes names tasks that are not written: {', '.join(extra)}")
    counts = {}
    for task in tasks:
        count = episodes.get(task) if isinstance(episodes, dict) else episodes
        if count is None:
            count = tasks_module.BACKGROUND[task] if split == "background" else EVALUATION_EPISODES
        if isinstance(count, bool) or not isinstance(count, int | np.integer) or count < 1:
            raise ValueError(f"episodes for {task!r} must be a positive int, got {count!r}")
        counts[task] = int(count)
    return counts


def _split_tasks(tasks_module: ModuleType, split: str) -> tuple[str, ...]:
    return tuple(tasks_module.BACKGROUND) if split == "background" else tuple(tasks_module.EVALUATION)


def _check_sizes(shard_episodes: int, batch: int, video_size: int, params: W.BIBParams) -> None:
    for name, value in (("shard_episodes", shard_episodes), ("batch", batch), ("video_size", video_size)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    params.check()


def has_ffmpeg() -> bool:
    """Returns whether the optional ``imageio-ffmpeg`` (needed for MP4 videos) is installed."""
    return importlib.util.find_spec("imageio_ffmpeg") is not None


def _video_saver(video: str, size: int):
    """Returns ``save(episode, path_without_suffix) -> Path | None`` for the video format; fails early."""
    if video not in VIDEOS:
        raise ValueError(f"video must be one of {', '.join(VIDEOS)}, got {video!r}")
    if video == "none":
        return lambda episode, stem: None
    if video == "mp4" and not has_ffmpeg():
        raise RuntimeError(
            "video='mp4' needs the optional imageio-ffmpeg package: pip install 'jaxsoc[video]' (or pip install "
            "imageio-ffmpeg), or write GIFs or no videos with video='gif' or 'none' (--video gif|none)"
        )
    from jaxsoc.envs.bib.render import save_episode_video

    return lambda episode, stem: save_episode_video(episode, stem.with_suffix(f".{video}"), size=size)


class _ShardWriter:
    """Generates the episodes of a shard in fixed-size batches and writes their files and marker."""

    def __init__(self, split: str, root: Path, seed: int, params: W.BIBParams, size: int, save, pool):
        self.split, self.root, self.seed = split, root, seed
        self.params, self.size, self.save, self.pool = params, size, save, pool

    def write(self, task: str, shard: int, lo: int, hi: int, bar) -> None:
        folder = self.root / task
        folder.mkdir(parents=True, exist_ok=True)
        files: list[str] = []
        for start in range(lo, hi, self.size):
            indices = np.arange(start, min(start + self.size, hi))
            padded = np.concatenate([indices, np.full(self.size - len(indices), indices[-1])])
            episodes = generate_episodes(self.split, task, padded, seed=self.seed, params=self.params)
            episodes = jax.device_get(episodes)
            jobs = [
                self.pool.submit(
                    self._write_episode, folder, task, int(index), jax.tree.map(lambda x, j=j: x[j], episodes)
                )
                for j, index in enumerate(indices)
            ]
            for job in jobs:  # in index order, so the marker's file list does not depend on the workers
                files += job.result()
                bar.update(1)
        size = sum((folder / name).stat().st_size for name in files)
        _atomic_write(
            _marker(self.root, task, shard), json.dumps({"start": lo, "stop": hi, "files": files, "bytes": size})
        )

    def _write_episode(self, folder: Path, task: str, index: int, episode: W.Episode) -> list[str]:
        """Writes one episode (or pair) as JSON and video. Returns the file names written."""
        names = episode_files(self.split, task, index)
        parts = (
            [episode] if self.split == "background" else [jax.tree.map(lambda x, k=k: x[k], episode) for k in (0, 1)]
        )
        written = []
        for name, part in zip(names, parts):
            text = json.dumps(bibjson.episode_to_json(part), separators=(",", ":"))
            _atomic_write(folder / name, text)
            video = self.save(part, folder / name)
            written += [name] + ([Path(video).name] if video is not None else [])
        return written


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _shard_done(root: Path, task: str, shard: int, check_files: bool = True) -> bool:
    """Whether a shard's marker exists and (with ``check_files``) lists files that all exist."""
    marker = _marker(root, task, shard)
    if not marker.exists() or not check_files:
        return marker.exists()
    try:
        files = json.loads(marker.read_text())["files"]
    except (json.JSONDecodeError, KeyError, TypeError):
        return False
    return all((root / task / name).exists() for name in files)


# ---------------------------------------------------------------------------------------------------- manifest


def _settings(seed: int, params: W.BIBParams, shard_episodes: int, video: str, video_size: int) -> dict[str, Any]:
    return {
        "seed": int(seed),
        "params": {
            "frames_per_cell": params.frames_per_cell,
            "intro_frames": params.intro_frames,
            "outro_frames": params.outro_frames,
            "max_moves": params.max_moves,
        },
        "shard_episodes": shard_episodes,
        "video": video,
        "video_size": video_size,
    }


def read_manifest(root: str | Path, split: str) -> dict[str, Any] | None:
    """Returns the parsed ``root/<split>/manifest.json``, ``None`` if there is none; ``ValueError`` if it
    is not a valid manifest of this format."""
    path = Path(root) / split / MANIFEST_NAME
    if not path.exists():
        return None
    try:
        manifest = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"corrupt manifest {path}: {error}") from error
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        raise ValueError(f"{path} is not a jaxsoc BIB dataset manifest (format must be {FORMAT_NAME!r})")
    if manifest.get("format_version") != FORMAT_VERSION or manifest.get("split") != split:
        raise ValueError(
            f"{path}: format version {manifest.get('format_version')!r} of split {manifest.get('split')!r}; "
            f"this jaxsoc reads version {FORMAT_VERSION} of split {split!r}"
        )
    return manifest


def _start_manifest(root: Path, split: str, settings: dict, counts: dict[str, int]) -> dict[str, Any]:
    """Returns the manifest to update: the directory's (checked against ``settings`` and ``counts``, with
    new tasks added) or a new one, written before any work."""
    manifest = read_manifest(root.parent, split)
    if manifest is None:
        manifest = {"format": FORMAT_NAME, "format_version": FORMAT_VERSION, "split": split, "settings": settings}
        manifest["tasks"] = {}
    else:
        _compare(f"{root} was written with", manifest["settings"], settings)
        for task, count in counts.items():
            old = manifest["tasks"].get(task, {}).get("episodes", count)
            if old != count:
                raise ValueError(
                    f"{root} was written with episodes[{task!r}]={old}, this run asks for {count}: use the same "
                    "settings to resume, or another directory"
                )
    manifest["jaxsoc_version"] = jaxsoc.__version__
    for task, count in counts.items():
        manifest["tasks"].setdefault(task, {"episodes": count})
    root.mkdir(parents=True, exist_ok=True)
    _write_manifest(root, manifest)
    return manifest


def _compare(where: str, old: dict, new: dict, prefix: str = "") -> None:
    """Raises ``ValueError`` naming the first setting that differs between ``old`` and ``new``."""
    for name in sorted(set(old) | set(new)):
        a, b = old.get(name), new.get(name)
        if isinstance(a, dict) and isinstance(b, dict):
            _compare(where, a, b, f"{prefix}{name}.")
        elif a != b:
            raise ValueError(
                f"{where} {prefix}{name}={a!r}, this run has {prefix}{name}={b!r}: use the same settings to "
                "resume, or another directory"
            )


def _write_manifest(root: Path, manifest: dict[str, Any]) -> Path:
    """Refreshes the per-task shard records from the markers and writes the manifest. Returns its path."""
    size = manifest["settings"]["shard_episodes"]
    totals = {"episodes": 0, "files": 0, "bytes": 0, "complete": True}
    for task, info in manifest["tasks"].items():
        shards = {}
        for shard in range(_num_shards(info["episodes"], size)):
            if _shard_done(root, task, shard, check_files=False):
                record = json.loads(_marker(root, task, shard).read_text())
                shards[f"{shard:05d}"] = {k: record[k] for k in ("start", "stop", "bytes")} | {
                    "files": len(record["files"])
                }
        info["shards"] = shards
        info["written"] = sum(s["stop"] - s["start"] for s in shards.values())
        info["files"] = sum(s["files"] for s in shards.values())
        info["bytes"] = sum(s["bytes"] for s in shards.values())
        info["complete"] = info["written"] == info["episodes"]
        for key in ("episodes", "files", "bytes"):
            totals[key] += info["written" if key == "episodes" else key]
        totals["complete"] &= info["complete"]
    manifest["totals"] = totals
    if manifest["split"] == "background":
        subsets = [_train_validation(sorted(_json_names(manifest, task))) for task in _complete(manifest)]
        manifest["train"] = [name for train, _ in subsets for name in train]
        manifest["validation"] = [name for _, valid in subsets for name in valid]
    path = root / MANIFEST_NAME
    _atomic_write(path, json.dumps(manifest, indent=1))
    return path


def _complete(manifest: dict) -> list[str]:
    return [task for task, info in manifest["tasks"].items() if info.get("complete")]


def _json_names(manifest: dict, task: str) -> list[str]:
    """Returns the JSON files (``<task>/<name>``) of a task's done shards; evaluation: the ``e`` files."""
    names = []
    for record in manifest["tasks"][task].get("shards", {}).values():
        for index in range(record["start"], record["stop"]):
            names.append(f"{task}/{episode_files(manifest['split'], task, index)[0]}")
    return names


def _train_validation(names: list[str]) -> tuple[list[str], list[str]]:
    """Splits sorted names: the first 80% train, the rest validation."""
    cut = len(names) * TRAIN_FRACTION[0] // TRAIN_FRACTION[1]
    return names[:cut], names[cut:]


# ---------------------------------------------------------------------------------------------------- loading


def list_episodes(root: str | Path, split: str, subset: str | None = None, task: str | None = None) -> list[Path]:
    """Returns the JSON files of a dataset split under ``root/<split>``, sorted by task and name.

    Background: all episodes, or the ``subset`` ``"train"`` / ``"validation"`` (from the manifest; for a
    dataset without one, such as BIB's own files, 80/20 by sorted filename within each task). Evaluation:
    the expected (``e``) files, each with its unexpected (``u``) sibling (``subset`` must be None). ``task``
    keeps one task. With a manifest only the files of finished shards are listed; without one the task
    folders are scanned.

    Raises:
        ValueError: an unknown split, subset or task, a subset of an unfinished task, or an ``e`` file whose
            ``u`` file is missing.
    """
    if split not in SPLITS:
        raise ValueError(f"unknown BIB split {split!r}; one of {', '.join(SPLITS)}")
    if subset not in (None, "train", "validation") or (subset is not None and split != "background"):
        raise ValueError(f"subset must be None, 'train' or 'validation' (background only), got {subset!r}")
    base = Path(root) / split
    manifest = read_manifest(root, split)
    names = _names_from_manifest(manifest, subset) if manifest is not None else _names_from_folders(base, split, subset)
    if task is not None:
        known = sorted({name.split("/")[0] for name in names} | set((manifest or {}).get("tasks", {})))
        if task not in known:
            raise ValueError(f"no task {task!r} in {base}; found {', '.join(known) or 'none'}")
        names = [name for name in names if name.split("/")[0] == task]
    paths = [base / name for name in sorted(names)]
    if split == "evaluation":
        for path in paths:
            if not _unexpected(path).exists():
                raise ValueError(f"{path} has no unexpected sibling {_unexpected(path).name}")
    return paths


def _names_from_manifest(manifest: dict, subset: str | None) -> list[str]:
    if subset is not None:
        unfinished = sorted(set(manifest["tasks"]) - set(_complete(manifest)))
        if unfinished:
            raise ValueError(f"tasks {', '.join(unfinished)} are unfinished: rerun write_dataset to finish them")
        return list(manifest[subset])
    return [name for task in manifest["tasks"] for name in _json_names(manifest, task)]


def _names_from_folders(base: Path, split: str, subset: str | None) -> list[str]:
    if not base.is_dir():
        raise ValueError(f"no BIB {split} dataset at {base}")
    names = []
    for folder in sorted(p for p in base.iterdir() if p.is_dir()):
        pattern = "*.json" if split == "background" else "*e.json"
        found = sorted(f"{folder.name}/{p.name}" for p in folder.glob(pattern))
        if subset is not None:
            found = _train_validation(found)[subset == "validation"]
        names += found
    return names


def _unexpected(path: Path) -> Path:
    return path.with_name(path.name[: -len("e.json")] + "u.json")


def load_episodes(paths: list[str | Path], params: W.BIBParams | None = None) -> W.Episode:
    """Returns the episodes of JSON files ``paths`` stacked ``[N, 9, ...]``.

    With ``params``, the files must have its timing and are read with its ``max_moves`` and ``num_frames``;
    without, with the longest path among them as ``max_moves`` and the frames they need (padded to the
    longest). Raises ``ValueError`` naming the file for an invalid file, a path longer than ``max_moves`` or
    a timing that differs."""
    if params is None:
        return bibjson.read_many(list(paths))
    episodes = bibjson.read_many(list(paths), max_moves=params.max_moves)
    got = (episodes.frames_per_cell, episodes.intro_frames, episodes.outro_frames)
    want = (params.frames_per_cell, params.intro_frames, params.outro_frames)
    if got != want:
        raise ValueError(
            f"{paths[0]}: (frames_per_cell, intro_frames, outro_frames) = {got}, but params has {want}; "
            "pass params=None to read the files' own timing"
        )
    return episodes  # with params' timing and max_moves it has params.num_frames frames


def load_pairs(root: str | Path, task: str, params: W.BIBParams | None = None) -> W.Episode:
    """Returns the evaluation pairs of ``task`` under ``root/evaluation``, ``[N, 2, 9, ...]`` (index 0 the
    expected episode, 1 the unexpected one), read as ``load_episodes`` does."""
    expected = list_episodes(root, "evaluation", task=task)
    if not expected:
        raise ValueError(f"no evaluation pairs of {task!r} under {Path(root) / 'evaluation'}")
    both = [path for e in expected for path in (e, _unexpected(e))]
    episodes = load_episodes(both, params)
    return jax.tree.map(lambda x: x.reshape(len(expected), 2, *x.shape[1:]), episodes)


# ---------------------------------------------------------------------------------------------------- in memory


def background_shares(batch: int) -> dict[str, int]:
    """Returns ``{task: count}``, the background tasks' static shares of a batch in the paper's proportions
    (``tasks.BACKGROUND``, 10:10:4:4), summing to ``batch`` (largest remainders; ties to the earlier task)."""
    weights = _tasks().BACKGROUND
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch must be a positive int, got {batch!r}")
    total = sum(weights.values())
    exact = {task: batch * w / total for task, w in weights.items()}
    shares = {task: int(v) for task, v in exact.items()}
    by_remainder = sorted(weights, key=lambda task: -(exact[task] - shares[task]))  # stable: ties keep order
    for task in by_remainder[: batch - sum(shares.values())]:
        shares[task] += 1
    return shares


def sample_background(key: jax.Array, batch: int, params: W.BIBParams = W.BIBParams()) -> W.Episode:  # noqa: B008
    """Returns ``batch`` fresh background episodes ``[batch, 9, ...]``: each task's ``background_shares``,
    drawn by ``tasks.generate_batch`` with ``fold_in(key, task_id)`` and concatenated in ``tasks.BACKGROUND``
    order (rows ``0 .. n_0 - 1`` the first task, and so on). Jittable with ``batch`` and ``params`` static."""
    tasks_module = _tasks()
    parts = [
        tasks_module.generate_batch("background", task, jax.random.fold_in(key, task_id("background", task)), n, params)
        for task, n in background_shares(batch).items()
        if n
    ]
    return jax.tree.map(lambda *xs: jnp.concatenate(xs), *parts)


def background_stream(
    key: jax.Array,
    batch: int,
    params: W.BIBParams = W.BIBParams(),  # noqa: B008
) -> Iterator[W.Episode]:
    """Yields ``sample_background`` batches ``[batch, 9, ...]`` forever, each from the next key of a
    ``jax.random.split`` chain starting at ``key`` (compiled once)."""
    sample = jax.jit(functools.partial(sample_background, batch=batch, params=params))
    while True:
        key, sub = jax.random.split(key)
        yield sample(sub)
