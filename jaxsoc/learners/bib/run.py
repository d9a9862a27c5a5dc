"""Training runs of BIB's learners: ``jaxsoc train bib-atc|bib-bc-mlp|bib-bc-rnn|bib-video-rnn``.

``train(kind, config, out, ...)`` trains ``seeds`` independent copies of a learner in one program (the state
``vmap`` ped over seeds, each seed with its own initialisation and data order) on the background set, 80% to
train and 20% to validate (``data``), generated on the device or read from files. One epoch is one jitted
``lax.scan`` over its optimiser steps: every step gathers a batch of episodes from the arrays on the device,
renders the frames it needs and updates. After each epoch the validation loss is computed (a fixed key, so
epochs are comparable), a row goes to ``metrics.csv`` and a checkpoint (orbax) is saved; ``--resume``
continues from the newest one and gives the same result as an uninterrupted run, since each epoch's keys
are ``fold_in(key(seed + s), epoch)``.

A run directory holds ``run.json`` (kind, config, data and seeds), ``metrics.csv``/``metrics.json``,
``curves.png`` (train and validation loss) and ``checkpoints/``. ``load(run)`` returns its learner and
states; ``evaluate(run, pairs)`` its VOE accuracies per seed.
"""

from __future__ import annotations

import functools
import json
import math
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from tqdm.auto import tqdm

from jaxsoc.envs.bib import world as W
from jaxsoc.learners.bib import data as D
from jaxsoc.learners.bib import voe
from jaxsoc.learners.bib.atc import ATCConfig, ATCLearner
from jaxsoc.learners.bib.bc import BCConfig, BCLearner
from jaxsoc.learners.bib.learner import Learner
from jaxsoc.learners.bib.video import VideoConfig, VideoLearner
from jaxsoc.learners.checkpoint import Checkpointer, read_meta
from jaxsoc.learners.run_log import MetricsLog, write_json

RUN_JSON = "run.json"
CHECKPOINTS = "checkpoints"
#: kind -> (config class, fields fixed by the kind)
KINDS: dict[str, tuple[type, dict[str, Any]]] = {
    "bib-atc": (ATCConfig, {}),
    "bib-bc-mlp": (BCConfig, {"model": "mlp"}),
    "bib-bc-rnn": (BCConfig, {"model": "rnn"}),
    "bib-video-rnn": (VideoConfig, {}),
}
#: the paper's names of the observers, for tables
PAPER_NAMES = {"bib-bc-mlp": "BC-MLP", "bib-bc-rnn": "BC-RNN", "bib-video-rnn": "Video-RNN"}
VALIDATION_KEY = 10**6  # folded into a seed's key for its validation batches


def make_config(kind: str, **fields: Any):
    """Returns the config of ``kind`` with ``fields`` (``ValueError`` for an unknown kind or field)."""
    if kind not in KINDS:
        raise ValueError(f"unknown BIB learner {kind!r}; one of {', '.join(KINDS)}")
    config_type, fixed = KINDS[kind]
    clash = {name for name in fields if name in fixed and fields[name] != fixed[name]}
    if clash:
        raise ValueError(f"{kind} fixes {', '.join(sorted(clash))}")
    try:
        return config_type(**{**fields, **fixed})
    except TypeError as error:
        raise ValueError(f"bad {config_type.__name__} field: {error}") from None


def make_learner(kind: str, config, encoder_params=None) -> Learner:
    """Returns the learner of ``kind`` (``encoder_params``: a pretrained ATC encoder for the observers)."""
    if kind == "bib-atc":
        if encoder_params is not None:
            raise ValueError("bib-atc trains its own encoder; it takes no --encoder")
        return ATCLearner(config)
    pixels = getattr(config, "inputs", "pixels") == "pixels"
    if pixels and getattr(config, "finetune_encoder", True) is False and encoder_params is None:
        raise ValueError(f"{kind} with finetune_encoder=false needs a pretrained encoder (--encoder RUN)")
    learner_type = VideoLearner if kind == "bib-video-rnn" else BCLearner
    return learner_type(config, encoder_params)


def _config_from(kind: str, saved: dict[str, Any]):
    fields = {k: tuple(v) if isinstance(v, list) else v for k, v in saved.items()}
    return make_config(kind, **{k: v for k, v in fields.items() if k not in KINDS[kind][1]})


# ---------------------------------------------------------------------------------------------------- epochs


class Epochs:
    """Runs the epochs and validations of all seeds of a run (module docstring).

    An epoch of a seed is ``steps = ceil(num_train * repeats / batch)`` optimiser steps over batches of
    successive permutations of the training rows, then the SWA update; a validation is the mean loss over
    ``ceil(num_val / val_batch)`` batches of the validation rows (the last wraps around) in evaluation mode.
    ``fused`` (default: on an accelerator) runs an epoch of every seed as one program, ``vmap`` over seeds and
    ``lax.scan`` over steps; otherwise one jitted step is called from Python for each seed and step, the same
    computation: XLA:CPU runs a convolution inside a loop about 15 times slower than outside one, and a
    ``vmap`` over convolution kernels becomes a grouped convolution, slower still.
    """

    def __init__(self, learner: Learner, num_train: int, num_val: int, batch: int, val_batch: int, fused=None):
        self.learner, self.num_train, self.batch = learner, num_train, batch
        self.steps = math.ceil(num_train * learner.repeats() / batch)
        self.rounds = math.ceil(self.steps * batch / num_train)
        count = math.ceil(num_val / val_batch)
        self.val_rows = (jnp.arange(count * val_batch) % num_val).reshape(count, val_batch)
        self.fused = jax.default_backend() != "cpu" if fused is None else fused
        self._order = jax.jit(jax.vmap(self.order))
        if self.fused:
            self._epoch = jax.jit(jax.vmap(self._scan_epoch, in_axes=(0, 0, 0, None, None)))
            self._validate = jax.jit(jax.vmap(self._scan_validation, in_axes=(0, 0, None)))
        else:
            self._step = jax.jit(lambda state, key, rows, arrays: learner.update(state, key, D.take(arrays, rows)))
            self._end = jax.jit(learner.end_epoch)
            self._loss = jax.jit(self._batch_loss)

    def order(self, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Returns one seed's epoch plan: the rows of each step ``int32[steps, batch]`` and its keys ``[steps]``."""
        k_order, k_steps = jax.random.split(key)
        perms = [jax.random.permutation(jax.random.fold_in(k_order, r), self.num_train) for r in range(self.rounds)]
        rows = jnp.concatenate(perms)[: self.steps * self.batch].reshape(self.steps, self.batch)
        return rows, jax.random.split(k_steps, self.steps)

    def _scan_epoch(self, state, rows, keys, arrays, index):
        def step(state, inputs):
            return self.learner.update(state, inputs[1], D.take(arrays, inputs[0]))

        state, metrics = jax.lax.scan(step, state, (rows, keys))
        return self.learner.end_epoch(state, index), jax.tree.map(jnp.mean, metrics)

    def _batch_loss(self, state, key, rows, arrays):
        return self.learner.loss(state.params, state.target, key, D.take(arrays, rows), False)[0]

    def _scan_validation(self, state, key, arrays):
        keys = jax.random.split(key, len(self.val_rows))
        _, losses = jax.lax.scan(
            lambda _, x: (None, self._batch_loss(state, x[1], x[0], arrays)), None, (self.val_rows, keys)
        )
        return jnp.mean(losses)

    def epoch(self, states, keys: jax.Array, arrays, index: int):
        """Returns ``(states, metrics)`` after epoch ``index`` (0-based) of every seed; ``metrics`` maps names to
        ``[seeds]`` means over the epoch's steps."""
        rows, step_keys = self._order(keys)
        if self.fused:
            return self._epoch(states, rows, step_keys, arrays, jnp.int32(index))
        out, metrics = [], []
        for s in range(len(keys)):
            state, seen = _row(states, s), []
            for i in range(self.steps):
                state, m = self._step(state, step_keys[s, i], rows[s, i], arrays)
                seen.append(m)
            out.append(self._end(state, jnp.int32(index)))
            metrics.append(jax.tree.map(lambda *x: jnp.mean(jnp.stack(x)), *seen))
        return _stack(out), _stack(metrics)

    def validate(self, states, keys: jax.Array, arrays) -> np.ndarray:
        """Returns ``float32[seeds]``: every seed's validation loss."""
        if self.fused:
            return np.asarray(self._validate(states, keys, arrays))
        losses = []
        for s in range(len(keys)):
            state, batch_keys = _row(states, s), jax.random.split(keys[s], len(self.val_rows))
            losses.append(np.mean([float(self._loss(state, k, r, arrays)) for k, r in zip(batch_keys, self.val_rows)]))
        return np.asarray(losses, np.float32)


def _row(tree, index: int):
    return jax.tree.map(lambda x: x[index], tree)


def _stack(trees: list):
    return jax.tree.map(lambda *x: jnp.stack(x), *trees)


def _checkpointer(run_dir: Path, kind: str, config, options: dict[str, Any]) -> Checkpointer:
    """The run's checkpoints; a restore checks the kind, config and ``options`` (seeds, data, encoder)."""
    return Checkpointer(run_dir / CHECKPOINTS, {"kind": kind, "config": config.to_dict(), "model_config": options})


def seed_keys(seed: int, seeds: int) -> jax.Array:
    """Returns the keys ``[seeds]`` of seeds ``seed .. seed + seeds - 1`` (``key(seed + s)``)."""
    return jnp.stack([jax.random.key(seed + s) for s in range(seeds)])


def load_data(data, episodes: int | None, data_seed: int):
    """Returns ``(train, validation, description)``: the background set from files under ``data`` (a path),
    given (``data`` a ``(train, validation)`` pair of ``Episode`` s ``[N, 9]``, put in ``data.LEARNER_PARAMS``'
    timing), or generated (``episodes`` in all, default the paper's 28,000; ``data_seed``)."""
    if isinstance(data, tuple):
        train, validation = (D.compact(part) for part in data)
        return train, validation, {"given": [D.num_episodes(train), D.num_episodes(validation)]}
    if data is not None:
        train, validation = D.background_from_files(data)
        return train, validation, {"files": str(Path(data).absolute())}
    train, validation = D.background(seed=data_seed, episodes=episodes)
    return train, validation, {"generated": episodes or sum(D.PAPER_BACKGROUND.values()), "seed": data_seed}


def encoder_from(run: str | Path) -> Any:
    """Returns the encoder parameters of seed 0 of an ATC run or of a BC run on pixels (its SWA mean when the run
    uses SWA); the learner that takes them checks that they fit its encoder.

    ``run`` may be ``model:NAME``: an encoder model (``learners.bib.models``) or a pixel observer model.

    Raises:
        ValueError: ``run`` is not a finished ``bib-atc`` or pixel ``bib-bc-*`` run (or such a model).
    """
    from jaxsoc import models

    if models.ref_name(run) is not None and models.info(run).kind == "encoder":
        return models.load(run, "encoder", "bib")
    learner, states, info = load(run)
    if info["kind"] not in ("bib-atc", "bib-bc-mlp", "bib-bc-rnn") or info["config"].get("inputs") == "symbolic":
        raise ValueError(f"{run} is a {info['kind']} run; --encoder takes a bib-atc run or a BC run on pixels")
    return jax.tree.map(lambda x: x[0], learner.final_params(states))["encoder"]


def train(
    kind: str,
    config,
    out: str | Path,
    *,
    data: str | Path | None = None,
    episodes: int | None = None,
    data_seed: int = 0,
    seeds: int = 1,
    seed: int = 0,
    encoder: str | Path | None = None,
    resume: bool = False,
    stop_after: int | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Trains ``seeds`` copies of the ``kind`` learner (module docstring) into ``out``.

    Args:
        kind, config: the learner (``KINDS``) and its config (``make_config``).
        data: a background dataset root (``jaxsoc bib data``, or BIB's files), or a ``(train,
            validation)`` pair of ``Episode`` s; without it ``episodes`` background episodes are generated
            with ``data_seed``.
        seeds, seed: seeds ``seed .. seed + seeds - 1`` are trained together.
        encoder: an ATC run whose encoder the observers start from (else a random one).
        resume: continue from the newest checkpoint in ``out`` (same kind, config, data and seeds).
        stop_after: stop after this many epochs in all (an interruption, for tests); a later ``resume``
            finishes the run.
        progress: show a progress bar over epochs.

    Returns:
        The summary (also in ``metrics.json``): final train and validation losses (means over seeds and per
        seed), epochs, optimiser steps, wall time and device.

    Raises:
        ValueError: bad arguments, a run directory holding another run, or an incompatible checkpoint.
    """
    start = time.perf_counter()
    if seeds < 1:
        raise ValueError(f"seeds must be >= 1, got {seeds}")
    out = Path(out)
    encoder_params = encoder_from(encoder) if encoder is not None else None
    learner = make_learner(kind, config, encoder_params)
    train_eps, val_eps, source = load_data(data, episodes, data_seed)
    n_train, n_val = D.num_episodes(train_eps), D.num_episodes(val_eps)
    batch = min(config.batch_size, n_train)
    epochs = Epochs(learner, n_train, n_val, batch, min(config.batch_size, n_val))
    steps = epochs.steps
    options = {
        "seeds": seeds,
        "seed": seed,
        "data": source,
        "encoder": None if encoder is None else _encoder_name(encoder),
    }
    info = {"kind": kind, "config": config.to_dict(), **options}
    derived = {"train_episodes": n_train, "validation_episodes": n_val, "batch": batch, "steps_per_epoch": steps}
    out.mkdir(parents=True, exist_ok=True)
    if (out / RUN_JSON).exists() and not resume:
        raise ValueError(f"{out} already holds a run; pass resume to continue it or choose another directory")

    train_arrays, val_arrays = learner.prepare(train_eps), learner.prepare(val_eps)
    keys = seed_keys(seed, seeds)
    states = jax.jit(jax.vmap(learner.init))(keys)
    checkpointer = _checkpointer(out, kind, config, options)
    log = MetricsLog(out)
    first = 0
    if resume and checkpointer.latest_step() is not None:
        first = checkpointer.check_meta()
        states = checkpointer.restore(states, first)
        log.truncate("epoch", first)
    elif resume:
        log.truncate("epoch", 0)
    write_json(out / RUN_JSON, {**info, "derived": derived})

    val_keys = jax.vmap(lambda k: jax.random.fold_in(k, VALIDATION_KEY))(keys)
    last = config.epochs if stop_after is None else min(config.epochs, stop_after)
    bar = tqdm(total=config.epochs, initial=first, unit="epoch", desc=kind, disable=not progress)
    with bar:
        for epoch in range(first, last):
            epoch_keys = jax.vmap(lambda k, e=epoch: jax.random.fold_in(k, e))(keys)
            states, metrics = epochs.epoch(states, epoch_keys, train_arrays, epoch)
            val_loss = epochs.validate(states, val_keys, val_arrays)
            metrics = jax.device_get(metrics)
            row = {"epoch": epoch + 1, "steps": (epoch + 1) * steps}
            row.update({f"train_{name}": float(np.mean(value)) for name, value in metrics.items()})
            row["val_loss"] = float(np.mean(val_loss))
            row.update({f"val_loss_seed{s}": float(v) for s, v in enumerate(val_loss)})
            row["wall_s"] = time.perf_counter() - start
            log.append([row])
            checkpointer.save(epoch + 1, states)
            bar.update(1)
            bar.set_postfix(train=f"{row['train_loss']:.4f}", val=f"{row['val_loss']:.4f}")
    checkpointer.close()
    final = log.rows[-1] if log.rows else {}
    summary = {
        "title": f"{kind}, {seeds} seed(s), {n_train} training episodes",
        "kind": kind,
        "seeds": seeds,
        "epochs_done": int(final.get("epoch", 0)),
        "epochs": config.epochs,
        "steps": int(final.get("steps", 0)),
        "train_loss": final.get("train_loss"),
        "val_loss": final.get("val_loss"),
        "val_loss_per_seed": [final.get(f"val_loss_seed{s}") for s in range(seeds)],
        "wall_s": time.perf_counter() - start,
        "device": jax.devices()[0].device_kind,
        "checkpoint": str(out / CHECKPOINTS),
        **derived,
    }
    log.finish(summary, x="epoch", curves=("train_loss", "val_loss"))
    return summary


def _encoder_name(encoder: str | Path) -> str:
    """What ``run.json`` records of ``--encoder``: ``model:NAME`` as given, a run directory as an absolute path."""
    from jaxsoc import models

    return str(encoder) if models.ref_name(encoder) is not None else str(Path(encoder).absolute())


#: what ``run.json`` holds besides ``kind`` and ``config`` (``train``'s options)
RUN_OPTIONS = ("seeds", "seed", "data", "encoder")


def read_info(run: str | Path) -> dict[str, Any]:
    """Returns the ``run.json`` of a BIB run directory after checking it, without reading the checkpoint or
    creating anything: a dict with ``kind`` (``KINDS``), ``config`` and ``RUN_OPTIONS``.

    ``run`` may be ``model:NAME`` (an observer model, ``learners.bib.models``): the ``run.json`` its card copied.

    Raises:
        ValueError: naming the directory or file: no such directory, no ``run.json``, unreadable JSON, an
            unknown kind, a missing field, a bad config or seed count, no checkpoint saved yet, or an unreadable
            checkpoint meta or one of another kind (the arrays are read by ``load``); a model of another kind.
    """
    from jaxsoc import models

    if models.ref_name(run) is not None:  # the run.json its card copied
        return models.open_ref(run, "observer", "bib", arrays=False)[0].spec["files"][RUN_JSON]
    run = Path(run)
    path = run / RUN_JSON
    if not run.is_dir():
        raise ValueError(f"{run}: no such run directory")
    if not path.is_file():
        raise ValueError(f"{run} is not a BIB training run (no {RUN_JSON})")
    try:
        info = json.loads(path.read_text())
    except ValueError as error:  # JSONDecodeError, UnicodeDecodeError
        raise ValueError(f"{path} is not readable JSON: {error}") from None
    if not isinstance(info, dict) or info.get("kind") not in KINDS:
        found = info.get("kind") if isinstance(info, dict) else type(info).__name__
        raise ValueError(f"{path}: 'kind' must be one of {', '.join(KINDS)}, got {found!r}")
    missing = [name for name in ("config", *RUN_OPTIONS) if name not in info]
    if missing:
        raise ValueError(f"{path} lacks {', '.join(map(repr, missing))}")
    for name, least in (("seed", 0), ("seeds", 1)):
        if isinstance(info[name], bool) or not isinstance(info[name], int) or info[name] < least:
            raise ValueError(f"{path}: {name!r} must be an integer >= {least}, got {info[name]!r}")
    if not isinstance(info["config"], dict):
        raise ValueError(f"{path}: 'config' must be an object, got {info['config']!r}")
    try:
        _config_from(info["kind"], info["config"])
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None
    if not (run / CHECKPOINTS).is_dir():
        raise ValueError(f"{run} has no checkpoint yet (no {CHECKPOINTS}/)")
    try:
        meta = read_meta(run / CHECKPOINTS)  # the newest step's small JSON, not its arrays
    except FileNotFoundError:
        raise ValueError(f"{run} has no checkpoint yet (nothing saved in {run / CHECKPOINTS})") from None
    if meta.get("kind") != info["kind"]:
        raise ValueError(
            f"{run / CHECKPOINTS} holds a {meta.get('kind')!r} checkpoint but {path} says {info['kind']!r}"
        )
    return info


def load(run: str | Path) -> tuple[Learner, Any, dict[str, Any]]:
    """Returns ``(learner, states, info)`` of a run directory (or of ``model:NAME``, an observer model): its
    learner, the newest checkpoint's states (seeds on the leading axis) and ``run.json``.

    Raises:
        ValueError: not a BIB run directory (``read_info``), no checkpoint, or a checkpoint that does not match
            the run; a model of another kind, or one whose arrays do not fit its network.
    """
    from jaxsoc import models

    if models.ref_name(run) is not None:
        return models.load(run, "observer", "bib")
    info = read_info(run)
    kind = info["kind"]
    config = _config_from(kind, info["config"])
    learner, template = restore_template(info)
    template = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), template)
    options = {name: info[name] for name in RUN_OPTIONS}
    checkpointer = _checkpointer(Path(run), kind, config, options)
    try:
        states = checkpointer.restore(template)
    except FileNotFoundError as error:
        raise ValueError(f"{run} has no checkpoint yet") from error
    finally:
        checkpointer.close()
    return learner, states, info


def restore_template(info: dict[str, Any]) -> tuple[Learner, Any]:
    """Returns ``(learner, template)`` of a run's ``run.json`` ``info``: the learner to restore it into and the
    shapes of its states (``jax.ShapeDtypeStruct`` s, seeds on the leading axis)."""
    kind = info["kind"]
    config = _config_from(kind, info["config"])
    learner = make_learner(kind, config) if kind == "bib-atc" else _observer(kind, config)
    return learner, jax.eval_shape(jax.vmap(learner.init), seed_keys(info["seed"], info["seeds"]))


def _observer(kind: str, config) -> Learner:
    """An observer learner for restoring a run: its encoder comes from the checkpoint, not from ``--encoder``."""
    learner_type = VideoLearner if kind == "bib-video-rnn" else BCLearner
    learner = learner_type(config)
    learner.frozen_encoder = False  # restoring only: no features are cached
    return learner


def evaluate(
    run: str | Path, pairs: dict[str, Any], reduce: str = "max", batch: int = 64, region: str = "frame"
) -> dict[str, Any]:
    """VOE accuracies of every seed of an observer run on ``pairs`` (``{type: Episode [N, 2, 9]}`` in
    ``data.LEARNER_PARAMS``' timing); a Video-RNN's surprise over ``region`` (``video.SURPRISE_REGIONS``).

    Returns ``{"per_seed": [{type: accuracy}], "mean": {...}, "se": {...}}`` (fractions; averages
    included; ``se`` the standard error over seeds, 0 for one seed). The surprise of a type's pairs is
    computed over its longest test trial's steps rounded up to a multiple of 8 (the steps past it are not
    real and do not count), to spare the work of padding steps.

    Raises:
        ValueError: an ATC run (it has no surprise), a region other than ``"frame"`` for a BC run, an unknown
            region, or bad pairs.
    """
    learner, states, info = load(run)
    if learner.surprise is None:
        raise ValueError(f"{run} is a {info['kind']} run, which is not an observer; evaluate a bc or video run")
    video = isinstance(learner, VideoLearner)  # an unknown region: VideoLearner.surprise refuses it when traced
    if region != "frame" and not video:
        raise ValueError(f"{run} is a {info['kind']} run: a surprise region applies to bib-video-rnn runs only")
    params = learner.final_params(states)

    @functools.partial(jax.jit, static_argnums=2)
    def one(p, episodes, steps):
        surprise = learner.surprise(p, episodes, steps, region) if video else learner.surprise(p, episodes, steps)
        return voe.episode_scores(*surprise, reduce)

    seeds = range(info["seeds"])
    all_seeds = jax.jit(jax.vmap(one, in_axes=(0, None, None)), static_argnums=2)

    def scorer(steps: int):
        if jax.default_backend() != "cpu":
            return lambda episodes: all_seeds(params, episodes, steps).T  # [B, seeds]
        return lambda episodes: jnp.stack([one(_row(params, s), episodes, steps) for s in seeds], 1)  # see Epochs

    per_seed = [{} for _ in range(info["seeds"])]
    for name, episodes in pairs.items():
        longest = int(np.max(np.asarray(episodes.moves)[..., W.TEST]))
        steps = min(episodes.max_moves, max(8, -(-longest // 8) * 8))  # the test steps that can be real
        scores = voe.pair_scores(scorer(steps), episodes, batch)  # [N, seeds, 2]
        for s, acc in enumerate(per_seed):
            acc[name] = voe.pair_accuracy(scores[:, s, 0], scores[:, s, 1])
    per_seed = [{**acc, **voe.averages(acc)} for acc in per_seed]
    names = list(per_seed[0])
    table = np.array([[acc[name] for name in names] for acc in per_seed])
    se = table.std(axis=0, ddof=1) / np.sqrt(len(table)) if len(table) > 1 else np.zeros(len(names))
    return {
        "per_seed": per_seed,
        "mean": dict(zip(names, table.mean(axis=0).tolist())),
        "se": dict(zip(names, se.tolist())),
    }
