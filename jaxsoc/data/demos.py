"""Demonstration datasets: an expert plays thousands of worlds at once; episodes go to compressed shards.

``write_demos(env_id, out_dir, episodes, expert_init=..., expert_act=...)`` runs a batch of ``num_envs``
worlds with ``jax.vmap``, stepping under ``jit`` ``chunk_steps`` steps at a time until every world of the
batch has ended (terminated, truncated or expert failed), and writes the episodes shard after shard.

**Experts.** A pair of pure, jittable functions of one (unbatched) world: ``expert_init(params, state) ->
expert_state`` at reset and ``expert_act(params, expert_state, state, obs) -> (action int32[], expert_state)``
each step, plus optionally ``expert_failed(expert_state) -> bool[]``. When ``expert_failed`` turns True after
``expert_act`` (or after ``expert_init``) the episode ends there: that action is neither taken nor recorded,
and the episode counts as failed. The BabyAI bot is ``bot.bot_init``, ``bot.bot_act`` and
``lambda s: s.failed``.

**Level seeds.** Episode ``i`` (``0 <= i < episodes``) of a dataset written with ``seed`` is the level
``env.reset_env(reset_key, params)`` with ``reset_key = jax.random.fold_in(jax.random.key(seed), i)``
(``episode_reset_key(seed, i)``); its step ``t`` (0-based) is ``env.step_env(step_key, ...)`` with
``step_key = jax.random.fold_in(jax.random.fold_in(reset_key, STEP_KEY_DATA), t)`` (``episode_step_key``;
BabyAI steps are deterministic and ignore it). ``i`` is stored as the episode's ``seed`` (its level seed), so
any stored episode can be regenerated and replayed. An episode depends only on ``(seed, i)``, not on the
batch it ran in, so ``num_envs`` can change between an interrupted run and its resumption.

**Shards.** Shard ``s`` covers episode indices ``[s * shard_episodes, min((s + 1) * shard_episodes,
episodes))`` and is the file ``shard-{s:05d}.npz``: a zip of ``.npy`` arrays (deflate; readable with
``np.load``), written with fixed timestamps so that the same episodes give the same bytes. It keeps the
successful episodes of its range (all of them with ``keep_failed``), in index order:

- steps, packed episode after episode (``T`` steps): ``image uint8[T, 7, 7, 3]`` and ``direction uint8[T]``
  (the observation before the action) and ``action uint8[T]``;
- episodes (``E``): ``offsets int64[E + 1]`` (episode ``e`` is steps ``offsets[e]:offsets[e+1]``),
  ``mission uint8[E, 72]`` (word ids of ``language.VOCAB``, 0-padded), ``seed int64[E]`` (level seed),
  ``length int32[E]``, ``success bool[E]``, ``reward float32[E]`` (the episode's return) and
  ``expert_failed bool[E]``.

**Manifest.** ``manifest.json`` records the env id, level, jaxsoc version, format version, seed, requested
episodes, shard size, ``keep_failed``, the expert's name, the vocabulary, and per written shard its index,
file, episode range (``start``, ``stop``), ``generated``, stored ``episodes``, ``successes``, ``failures``,
``expert_failures``, ``steps``, ``bytes`` and ``sha256``; ``totals`` sums them and says whether the dataset is
``complete``. Shards and the manifest are written to a temporary name and renamed, and the manifest is
updated after each shard, so rerunning an interrupted command skips the shards it lists and produces the same
bytes as an uninterrupted run.
"""

from __future__ import annotations

import functools
import json
import os
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from tqdm.auto import tqdm

import jaxsoc
from jaxsoc.core.autoreset import select_rows
from jaxsoc.data.loader import (
    EPISODE_FIELDS,
    FORMAT_NAME,
    FORMAT_VERSION,
    MANIFEST_NAME,
    STEP_FIELDS,
    Episodes,
    file_sha256,
    read_manifest,
)
from jaxsoc.envs.babyai import ALIASES, language

#: ``fold_in`` data that separates an episode's step keys from its reset key (ASCII "STEP").
STEP_KEY_DATA = 0x53544550
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)
# manifest fields a resumed run must share with the directory's manifest
_RESUME_FIELDS = ("format_version", "env_id", "seed", "shard_episodes", "keep_failed", "expert")

ExpertInit = Callable[[Any, Any], Any]
ExpertAct = Callable[[Any, Any, Any, Any], tuple[jax.Array, Any]]
ExpertFailed = Callable[[Any], jax.Array]


# -- keys ------------------------------------------------------------------------------------------------
def episode_reset_key(seed: int, index: int | jax.Array) -> jax.Array:
    """Returns the reset key of episode ``index`` of a collection with ``seed``:
    ``jax.random.fold_in(jax.random.key(seed), index)``."""
    return jax.random.fold_in(jax.random.key(seed), index)


def episode_step_key(reset_key: jax.Array, t: int | jax.Array) -> jax.Array:
    """Returns the key of step ``t`` (0-based) of the episode with ``reset_key``:
    ``jax.random.fold_in(jax.random.fold_in(reset_key, STEP_KEY_DATA), t)``."""
    return jax.random.fold_in(jax.random.fold_in(reset_key, STEP_KEY_DATA), t)


# -- the batched rollout ---------------------------------------------------------------------------------
class _Worlds(NamedTuple):
    """A batch of ``N`` worlds in a collection: env and expert states plus per-episode records ``[N]``."""

    obs: Any
    state: Any
    expert: Any
    active: jax.Array  # bool[N]: the episode goes on
    length: jax.Array  # int32[N]: steps taken
    success: jax.Array  # bool[N]
    reward: jax.Array  # float32[N]: return so far
    expert_failed: jax.Array  # bool[N]
    t: jax.Array  # int32[]: steps since reset (all worlds start together)


def _gave_up(expert_failed: ExpertFailed | None, expert: Any, n: int) -> jax.Array:
    if expert_failed is None:
        return jnp.zeros(n, bool)
    return jax.vmap(expert_failed)(expert).astype(bool)


def _step_limits(state: Any, params: Any, n: int) -> jax.Array:
    """Returns each world's step limit ``int32[N]``: ``state.max_steps`` (BabyAI) or ``params.max_steps``."""
    limit = state.max_steps if hasattr(state, "max_steps") else params.max_steps
    return jnp.broadcast_to(jnp.asarray(limit, jnp.int32), (n,))


@functools.partial(jax.jit, static_argnames=("env", "expert_init", "expert_failed"))
def _start(env, params, base_key, indices, expert_init, expert_failed):
    """Resets worlds ``indices`` (``int32[N]``). Returns ``(worlds, mission uint8[N, 72], limits int32[N])``."""
    n = indices.shape[0]
    keys = jax.vmap(jax.random.fold_in, in_axes=(None, 0))(base_key, indices)
    obs, state = jax.vmap(env.reset_env, in_axes=(0, None))(keys, params)
    expert = jax.vmap(expert_init, in_axes=(None, 0))(params, state)
    gave_up = _gave_up(expert_failed, expert, n)
    zeros = jnp.zeros(n, jnp.int32)
    worlds = _Worlds(obs, state, expert, ~gave_up, zeros, zeros > 0, jnp.zeros(n), gave_up, jnp.int32(0))
    return worlds, obs["mission"].astype(jnp.uint8), _step_limits(state, params, n)


@functools.partial(jax.jit, static_argnames=("env", "expert_act", "expert_failed", "num_steps"))
def _advance(env, params, base_key, indices, worlds, expert_act, expert_failed, num_steps):
    """Runs ``num_steps`` steps of every world (finished ones stay frozen). Returns ``(worlds, record)``:
    ``record`` holds ``image uint8[K, N, 7, 7, 3]``, ``direction uint8[K, N]``, ``action uint8[K, N]`` and
    ``valid bool[K, N]`` (the world took that step), ``K = num_steps``."""
    n = indices.shape[0]
    reset_keys = jax.vmap(jax.random.fold_in, in_axes=(None, 0))(base_key, indices)
    step_roots = jax.vmap(jax.random.fold_in, in_axes=(0, None))(reset_keys, STEP_KEY_DATA)
    act = jax.vmap(expert_act, in_axes=(None, 0, 0, 0))
    step = jax.vmap(env.step_env, in_axes=(0, 0, 0, None))

    def one_step(worlds: _Worlds, _):
        action, expert = act(params, worlds.expert, worlds.state, worlds.obs)
        action = jnp.asarray(action, jnp.int32)
        gave_up = worlds.active & _gave_up(expert_failed, expert, n)
        take = worlds.active & ~gave_up
        keys = jax.vmap(jax.random.fold_in, in_axes=(0, None))(step_roots, worlds.t)
        obs, state, reward, terminated, truncated, info = step(keys, worlds.state, action, params)
        record = {
            "image": worlds.obs["image"].astype(jnp.uint8),
            "direction": worlds.obs["direction"].astype(jnp.uint8),
            "action": action.astype(jnp.uint8),
            "valid": take,
        }
        worlds = _Worlds(
            obs=select_rows(take, obs, worlds.obs),
            state=select_rows(take, state, worlds.state),
            expert=expert,
            active=take & ~(terminated | truncated),
            length=worlds.length + take,
            success=worlds.success | (take & info["success"]),
            reward=worlds.reward + jnp.where(take, reward, 0.0),
            expert_failed=worlds.expert_failed | gave_up,
            t=worlds.t + 1,
        )
        return worlds, record

    return jax.lax.scan(one_step, worlds, length=num_steps)


class _Rollout(NamedTuple):
    """What ``_run_batch`` needs besides the episode indices."""

    env: Any
    params: Any
    base_key: jax.Array
    expert_init: ExpertInit
    expert_act: ExpertAct
    expert_failed: ExpertFailed | None
    keep_failed: bool
    chunk_steps: int


def _run_batch(rollout: _Rollout, indices: np.ndarray, num_real: int) -> dict[str, np.ndarray]:
    """Plays episodes ``indices`` (``int64[N]``; only the first ``num_real`` are kept, the rest is padding).
    Returns a *block*: per generated episode (``[num_real]``) ``index``, ``keep`` and the ``EPISODE_FIELDS``
    (``seed`` = ``index``), and the packed steps (``STEP_FIELDS``) of the kept episodes in index order."""
    r = rollout
    idx = jnp.asarray(indices, jnp.int32)
    worlds, mission, limits = _start(r.env, r.params, r.base_key, idx, r.expert_init, r.expert_failed)
    max_chunks = -(-int(np.max(limits)) // r.chunk_steps)  # every episode ends by its step limit
    pieces = []
    while True:
        worlds, record = _advance(
            r.env, r.params, r.base_key, idx, worlds, r.expert_act, r.expert_failed, r.chunk_steps
        )
        pieces.append(_compact(jax.device_get(record)))
        if not bool(worlds.active.any()):
            break
        if len(pieces) >= max_chunks:
            raise RuntimeError(f"{r.env.name}: episodes ran past their step limit ({int(np.max(limits))})")
    finals = jax.device_get((worlds.length, worlds.success, worlds.reward, worlds.expert_failed))
    length, success, reward, expert_failed = (np.asarray(x)[:num_real] for x in finals)
    keep = success | r.keep_failed
    keep_world = np.zeros(len(indices), bool)
    keep_world[:num_real] = keep
    world_of_step = np.concatenate([world for world, _ in pieces])
    order = np.argsort(world_of_step, kind="stable")  # world-major; the chunks are in time order
    order = order[keep_world[world_of_step[order]]]
    block = {name: np.concatenate([steps[name] for _, steps in pieces])[order] for name in STEP_FIELDS}
    block.update(
        index=np.asarray(indices[:num_real], np.int64),
        keep=keep,
        mission=np.asarray(mission)[:num_real],
        seed=np.asarray(indices[:num_real], np.int64),
        length=length.astype(np.int32),
        success=success,
        reward=reward.astype(np.float32),
        expert_failed=expert_failed,
    )
    if len(block["action"]) != int(length[keep].sum()):
        raise AssertionError("recorded steps disagree with episode lengths")
    return block


def _compact(record: dict[str, np.ndarray]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Returns ``(world, steps)``: the steps of a chunk record that worlds took, world-major (``STEP_FIELDS``
    arrays ``[S, ...]``), and each one's world (``int64[S]``)."""
    valid = np.asarray(record["valid"]).T  # [N, K]
    world = np.nonzero(valid)[0]
    steps = {name: np.asarray(record[name]).swapaxes(0, 1)[valid] for name in STEP_FIELDS}
    return world, steps


# -- blocks and shards -----------------------------------------------------------------------------------
def _slice_block(block: dict[str, np.ndarray], lo: int, hi: int) -> dict[str, np.ndarray]:
    """Returns the part of a block whose episode indices lie in ``[lo, hi)``."""
    a, b = np.searchsorted(block["index"], [lo, hi])
    cum = np.concatenate([[0], np.cumsum(block["length"] * block["keep"], dtype=np.int64)])
    out = {name: block[name][cum[a] : cum[b]] for name in STEP_FIELDS}
    out.update({name: block[name][a:b] for name in ("index", "keep", *EPISODE_FIELDS)})
    return out


def _shard_arrays(blocks: list[dict[str, np.ndarray]]) -> tuple[Episodes, dict[str, int]]:
    """Returns the shard arrays of a shard's blocks (kept episodes only) and its counts: ``generated``,
    ``episodes`` (stored), ``successes``, ``failures``, ``expert_failures`` and ``steps``."""
    merged = {name: np.concatenate([b[name] for b in blocks]) for name in ("keep", *STEP_FIELDS, *EPISODE_FIELDS)}
    keep = merged.pop("keep")
    arrays = {name: merged[name] for name in STEP_FIELDS}
    arrays.update({name: merged[name][keep].astype(dtype) for name, dtype in EPISODE_FIELDS.items()})
    arrays["offsets"] = np.concatenate([[0], np.cumsum(arrays["length"], dtype=np.int64)])
    counts = {
        "generated": len(keep),
        "episodes": int(keep.sum()),
        "successes": int(merged["success"].sum()),
        "failures": int((~merged["success"]).sum()),
        "expert_failures": int(merged["expert_failed"].sum()),
        "steps": len(arrays["action"]),
    }
    return arrays, counts


def write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Writes ``arrays`` as a deflate-compressed ``.npz`` (``np.load`` reads it) with fixed member timestamps,
    so equal arrays give equal bytes; written to ``path + ".tmp"`` and renamed, so ``path`` is never partial."""
    tmp = path.with_name(path.name + ".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(arrays):
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            with archive.open(info, "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.ascontiguousarray(arrays[name]), allow_pickle=False)
    _sync_and_rename(tmp, path)


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    _sync_and_rename(tmp, path)


def _sync_and_rename(tmp: Path, path: Path) -> None:
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    os.replace(tmp, path)


# -- the manifest ----------------------------------------------------------------------------------------
def level_name(env_id: str) -> str:
    """Returns the level name of an env id: ``"BabyAI-GoToLocal-v0" -> "GoToLocal"`` (aliases resolved)."""
    name = ALIASES.get(env_id, env_id)
    return name.removeprefix("BabyAI-").removeprefix("MiniGrid-").rsplit("-v", 1)[0]


def _plan(episodes: int, shard_episodes: int) -> list[tuple[int, int, int]]:
    """Returns ``(shard, start, stop)`` of every shard of a collection."""
    return [(s, lo, min(lo + shard_episodes, episodes)) for s, lo in enumerate(range(0, episodes, shard_episodes))]


def _fresh_manifest(env_id: str, seed: int, episodes: int, shard_episodes: int, keep_failed: bool, expert: str):
    return {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "jaxsoc_version": jaxsoc.__version__,
        "env_id": env_id,
        "level": level_name(env_id),
        "seed": seed,
        "episodes": episodes,
        "shard_episodes": shard_episodes,
        "keep_failed": keep_failed,
        "expert": expert,
        "reset_key": "jax.random.fold_in(jax.random.key(seed), level_seed)",
        "step_key": f"jax.random.fold_in(jax.random.fold_in(reset_key, {STEP_KEY_DATA}), t)",
        "vocab": list(language.VOCAB),
        "shards": [],
        "totals": {},
    }


def _resume(out_dir: Path, manifest: dict[str, Any], plan: list[tuple[int, int, int]]) -> list[dict[str, Any]]:
    """Returns the shard entries of an existing manifest in ``out_dir`` that can be kept: same plan range, file
    present with the recorded size and digest. Returns ``[]`` when there is no manifest.

    Raises:
        ValueError: the existing manifest is corrupt, was written with other settings (``_RESUME_FIELDS``), or
            holds episodes beyond the requested count.
    """
    if not (out_dir / MANIFEST_NAME).exists():
        return []
    old = read_manifest(out_dir)
    differ = [
        f"{key}: {old.get(key)!r} there, {manifest[key]!r} here"
        for key in _RESUME_FIELDS
        if old.get(key) != manifest[key]
    ]
    if differ:
        raise ValueError(f"cannot resume into {out_dir}, written with other settings ({'; '.join(differ)})")
    if any(entry["stop"] > manifest["episodes"] for entry in old["shards"]):
        raise ValueError(
            f"{out_dir} already holds episodes beyond the requested {manifest['episodes']}; ask for at least "
            f"{max(entry['stop'] for entry in old['shards'])} episodes or use another directory"
        )
    ranges = {s: (lo, hi) for s, lo, hi in plan}
    kept = []
    for entry in old["shards"]:
        file = out_dir / entry["file"]
        if ranges.get(entry["index"]) != (entry["start"], entry["stop"]) or not file.is_file():
            continue
        if file.stat().st_size == entry["bytes"] and file_sha256(file) == entry["sha256"]:
            kept.append(entry)
    return kept


def _totals(shards: list[dict[str, Any]], planned: int) -> dict[str, Any]:
    keys = ("generated", "episodes", "successes", "failures", "expert_failures", "steps", "bytes")
    totals = {key: sum(entry[key] for entry in shards) for key in keys}
    return dict(totals, shards=len(shards), shards_planned=planned, complete=len(shards) == planned)


def _save_manifest(out_dir: Path, manifest: dict[str, Any], planned: int) -> None:
    manifest["shards"].sort(key=lambda entry: entry["index"])
    manifest["totals"] = _totals(manifest["shards"], planned)
    _write_text(out_dir / MANIFEST_NAME, json.dumps(manifest, indent=2) + "\n")


# -- the collection --------------------------------------------------------------------------------------
def _batches(todo: list[tuple[int, int, int]], batch: int) -> Iterator[tuple[np.ndarray, int]]:
    """Yields ``(indices int64[batch], num_real)``: the episode indices of the shards to do, ``batch`` at a
    time (crossing shard boundaries), the last batch padded by repeating its last index."""
    indices = np.concatenate([np.arange(lo, hi, dtype=np.int64) for _, lo, hi in todo])
    for lo in range(0, len(indices), batch):
        part = indices[lo : lo + batch]
        yield np.pad(part, (0, batch - len(part)), mode="edge"), len(part)


def write_demos(
    env_id: str,
    out_dir: str | Path,
    episodes: int,
    *,
    expert_init: ExpertInit,
    expert_act: ExpertAct,
    expert_failed: ExpertFailed | None = None,
    expert_name: str = "expert",
    num_envs: int = 4096,
    seed: int = 0,
    shard_episodes: int = 10_000,
    keep_failed: bool = False,
    chunk_steps: int = 32,
    progress: bool = True,
) -> Path:
    """Collects ``episodes`` expert episodes of ``env_id`` into ``out_dir`` (format: the module docstring).

    Rerunning the same call after an interruption skips the shards the manifest lists and writes the same
    bytes as an uninterrupted run (``num_envs``, ``chunk_steps`` and ``progress`` may differ).

    Args:
        env_id: a registered BabyAI environment (its observation must hold ``image``, ``direction`` and
            ``mission``).
        out_dir: the dataset directory (created if needed).
        episodes: episodes to generate (indices ``0..episodes-1``); failed ones are counted but only stored
            with ``keep_failed``.
        expert_init, expert_act, expert_failed: the expert (module docstring).
        expert_name: recorded in the manifest; a resumed run must use the same name.
        num_envs: worlds run at once.
        seed: the collection's seed (level seeds are episode indices under it).
        shard_episodes: episode indices per shard.
        keep_failed: also store the episodes that did not succeed.
        chunk_steps: steps per jitted chunk (worlds that finish wait for the rest of their batch).
        progress: show a tqdm progress bar with the success rate.

    Returns:
        the path of the manifest.

    Raises:
        ValueError: non-positive counts, an env without a mission observation, or an ``out_dir`` whose
            manifest cannot be resumed (see ``_resume``).
    """
    for name, value in (("episodes", episodes), ("num_envs", num_envs), ("shard_episodes", shard_episodes)):
        if value < 1:
            raise ValueError(f"{name} must be positive, got {value}")
    if episodes >= 2**31 or chunk_steps < 1:
        raise ValueError(f"episodes must be below 2**31 and chunk_steps positive, got {episodes}, {chunk_steps}")
    env, params = jaxsoc.make(env_id)
    if "mission" not in env.observation_space(params).spaces:
        raise ValueError(f"{env_id} has no mission observation; demonstrations are for BabyAI levels")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = _fresh_manifest(env_id, seed, episodes, shard_episodes, keep_failed, expert_name)
    plan = _plan(episodes, shard_episodes)
    manifest["shards"] = _resume(out_dir, manifest, plan)
    _save_manifest(out_dir, manifest, len(plan))
    done = {entry["index"] for entry in manifest["shards"]}
    todo = [shard for shard in plan if shard[0] not in done]
    if not todo:
        return out_dir / MANIFEST_NAME
    rollout = _Rollout(
        env, params, jax.random.key(seed), expert_init, expert_act, expert_failed, keep_failed, chunk_steps
    )
    batch = min(num_envs, sum(hi - lo for _, lo, hi in todo))
    totals = manifest["totals"]
    bar = tqdm(total=episodes, initial=totals["generated"], unit="ep", desc=manifest["level"], disable=not progress)
    generated, successes = totals["generated"], totals["successes"]
    pending: dict[int, list[dict[str, np.ndarray]]] = {s: [] for s, _, _ in todo}
    with bar:
        for indices, num_real in _batches(todo, batch):
            block = _run_batch(rollout, indices, num_real)
            generated, successes = generated + num_real, successes + int(block["success"].sum())
            bar.update(num_real)
            bar.set_postfix(success=f"{successes / generated:.3f}")
            for s, lo, hi in todo:
                if s in pending and lo <= indices[num_real - 1] and indices[0] < hi:
                    pending[s].append(_slice_block(block, lo, hi))
                    if sum(len(part["index"]) for part in pending[s]) == hi - lo:
                        manifest["shards"].append(_write_shard(out_dir, s, lo, hi, pending.pop(s)))
                        _save_manifest(out_dir, manifest, len(plan))
    return out_dir / MANIFEST_NAME


def _write_shard(out_dir: Path, s: int, lo: int, hi: int, blocks: list[dict[str, np.ndarray]]) -> dict[str, Any]:
    """Writes shard ``s`` (episodes ``[lo, hi)``). Returns its manifest entry."""
    arrays, counts = _shard_arrays(blocks)
    file = out_dir / f"shard-{s:05d}.npz"
    write_npz(file, arrays)
    return {
        "index": s,
        "file": file.name,
        "start": lo,
        "stop": hi,
        **counts,
        "bytes": file.stat().st_size,
        "sha256": file_sha256(file),
    }
