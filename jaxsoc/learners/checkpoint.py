"""Checkpoints of training runs with orbax-checkpoint: the whole state, its config, and checks on restore.

``Checkpointer(directory, meta)`` keeps the last ``max_to_keep`` steps under ``directory``. Each step holds
two items: ``state`` (any pytree of arrays: a PPO ``Runner``, BC variables...; typed PRNG keys are stored as
their raw ``uint32`` data) and ``meta`` (JSON: what wrote it, ``kind``, ``config``, ``model_config``, the
jaxsoc version). ``restore`` refuses a checkpoint whose ``kind``, ``config`` or ``model_config`` differs
from the caller's, naming every differing field, and one whose arrays do not have the template's structure,
shapes and dtypes, naming the first mismatching paths. ``read_meta`` and ``restore_raw`` read a checkpoint
without knowing its config (for ``jaxsoc eval``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp

import jaxsoc

#: config fields that may change when a run is resumed (they do not change what an update computes)
RESUMABLE_FIELDS = ("total_frames",)


def is_key(x: Any) -> bool:
    """Returns whether ``x`` is an array of typed PRNG keys."""
    return isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jax.dtypes.prng_key)


def to_storable(tree: Any) -> Any:
    """Returns ``tree`` with typed PRNG keys replaced by their raw ``uint32`` data."""
    return jax.tree_util.tree_map(lambda x: jax.random.key_data(x) if is_key(x) else x, tree)


def _describe(x: Any) -> str:
    return f"{np.dtype(x.dtype).name}{list(np.shape(x))}"


def _differences(saved: dict[str, Any], current: dict[str, Any], prefix: str) -> list[str]:
    out = []
    for name in sorted(set(saved) | set(current)):
        if name in RESUMABLE_FIELDS and prefix == "config":
            continue
        a, b = saved.get(name, "<absent>"), current.get(name, "<absent>")
        if a != b:
            out.append(f"{prefix}.{name}: checkpoint {a!r}, this run {b!r}")
    return out


def _jsonable(meta: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(meta, default=str))


class Checkpointer:
    """Saves and restores the steps of one run (module docstring).

    Args:
        directory: the checkpoint directory (created if needed).
        meta: JSON-serialisable description of the run; ``kind``, ``config`` and ``model_config`` are
            compared on restore.
        max_to_keep: steps kept on disk (older ones are deleted; None keeps every step).
    """

    def __init__(self, directory: str | Path, meta: dict[str, Any], max_to_keep: int | None = 3) -> None:
        self.directory = Path(directory).absolute()
        self.meta = _jsonable({**meta, "jaxsoc_version": jaxsoc.__version__})
        options = ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, create=True)
        self._manager = ocp.CheckpointManager(self.directory, options=options, item_names=("state", "meta"))

    def latest_step(self) -> int | None:
        """Returns the newest saved step, or None."""
        return self._manager.latest_step()

    def save(self, step: int, state: Any, wait: bool = True) -> None:
        """Saves ``state`` as ``step`` (asynchronously unless ``wait``)."""
        args = ocp.args.Composite(state=ocp.args.StandardSave(to_storable(state)), meta=ocp.args.JsonSave(self.meta))
        self._manager.save(step, args=args, force=True)
        if wait:
            self._manager.wait_until_finished()

    def restore(self, template: Any, step: int | None = None) -> Any:
        """Returns the state saved at ``step`` (default the newest) with the structure of ``template``.

        Raises:
            FileNotFoundError: no checkpoint.
            ValueError: a checkpoint written by another kind of run, another config or architecture, or whose
                arrays do not match ``template`` (the message names the differences).
        """
        step = self.check_meta(step)
        raw = restore_raw(self.directory, step)
        return _match(raw, template, f"{self.directory}/{step}")

    def check_meta(self, step: int | None = None) -> int:
        """Returns the step (default the newest) after checking that its ``meta`` matches this run's.

        Raises:
            FileNotFoundError: no checkpoint.
            ValueError: another kind of run, config or architecture (the message names the differences).
        """
        step = self._step(step)
        saved_meta = read_meta(self.directory, step)
        problems = []
        if saved_meta.get("kind") != self.meta.get("kind"):
            problems.append(f"kind: checkpoint {saved_meta.get('kind')!r}, this run {self.meta.get('kind')!r}")
        for name in ("config", "model_config"):
            problems += _differences(saved_meta.get(name) or {}, self.meta.get(name) or {}, name)
        if problems:
            raise ValueError(f"incompatible checkpoint {self.directory}/{step}: " + "; ".join(problems))
        return step

    def _step(self, step: int | None) -> int:
        step = self.latest_step() if step is None else step
        if step is None:
            raise FileNotFoundError(f"no checkpoint in {self.directory}")
        return step

    def close(self) -> None:
        """Waits for pending saves and releases the manager."""
        self._manager.wait_until_finished()
        self._manager.close()


def _reader(directory: Path) -> ocp.CheckpointManager:
    """Returns a manager that reads the checkpoints in ``directory`` and creates nothing on disk.

    Raises:
        FileNotFoundError: ``directory`` does not exist (a plain ``CheckpointManager`` would create it).
    """
    if not directory.is_dir():
        raise FileNotFoundError(f"no checkpoint in {directory} (no such directory)")
    options = ocp.CheckpointManagerOptions(create=False, read_only=True)
    return ocp.CheckpointManager(directory, options=options, item_names=("state", "meta"))


def latest_step(directory: str | Path) -> int | None:
    """Returns the newest step saved in ``directory``, or None (also when ``directory`` does not exist)."""
    directory = Path(directory).absolute()
    if not directory.is_dir():
        return None
    with _reader(directory) as manager:
        return manager.latest_step()


def read_meta(directory: str | Path, step: int | None = None) -> dict[str, Any]:
    """Returns the ``meta`` JSON of a checkpoint (``step`` default the newest).

    Raises:
        FileNotFoundError: no checkpoint there (nothing is created when ``directory`` does not exist).
        ValueError: the step has no readable meta (not a jaxsoc checkpoint, or corrupt).
    """
    directory = Path(directory).absolute()
    with _reader(directory) as manager:
        step = manager.latest_step() if step is None else step
        if step is None:
            raise FileNotFoundError(f"no checkpoint in {directory}")
        try:
            return dict(manager.restore(step, args=ocp.args.Composite(meta=ocp.args.JsonRestore()))["meta"])
        except Exception as error:  # orbax raises many types for unreadable data
            raise ValueError(f"unreadable checkpoint meta in {directory}/{step}: {error}") from error


def restore_raw(directory: str | Path, step: int) -> Any:
    """Returns the ``state`` of a checkpoint as saved: nested dicts of numpy arrays (keys as raw ``uint32``).

    Raises:
        FileNotFoundError: ``directory`` does not exist.
        ValueError: the state cannot be read (corrupt or not a jaxsoc checkpoint).
    """
    directory = Path(directory).absolute()
    with _reader(directory) as manager:
        try:
            restored = manager.restore(step, args=ocp.args.Composite(state=ocp.args.StandardRestore()))
        except Exception as error:
            raise ValueError(f"unreadable checkpoint state in {directory}/{step}: {error}") from error
    return restored["state"]


def _child(node: Any, key: Any) -> Any:
    """Returns ``node[key]`` of a restored tree (dict keys are strings; lists are indexed), or None."""
    if isinstance(node, dict):
        return node.get(str(key), node.get(key))
    if isinstance(node, (list, tuple)) and isinstance(key, int) and 0 <= key < len(node):
        return node[key]
    return None


def _match(raw: Any, template: Any, where: str) -> Any:
    """Returns ``raw`` (nested dicts) rebuilt with ``template``'s structure, after checking every leaf."""
    leaves, treedef = jax.tree_util.tree_flatten_with_path(template)
    out, problems = [], []
    for path, leaf in leaves:
        node = raw
        name = jax.tree_util.keystr(path)
        for entry in path:
            node = _child(node, getattr(entry, "key", getattr(entry, "name", getattr(entry, "idx", None))))
            if node is None:
                break
        want = jax.random.key_data(leaf) if is_key(leaf) else leaf
        if node is None:
            problems.append(f"{name} missing")
        elif np.shape(node) != np.shape(want) or np.dtype(node.dtype) != np.dtype(want.dtype):
            problems.append(f"{name}: checkpoint {_describe(node)}, expected {_describe(want)}")
        else:
            # through numpy: orbax returns device-committed arrays, and committed inputs miss the jit cache of
            # a fresh run's (uncommitted) state, recompiling the whole update on every resume
            value = jnp.asarray(np.asarray(node))
            out.append(jax.random.wrap_key_data(value, impl=jax.random.key_impl(leaf)) if is_key(leaf) else value)
    if problems:
        shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
        raise ValueError(f"checkpoint {where} does not match this run's state: {shown}")
    return jax.tree_util.tree_unflatten(treedef, out)
