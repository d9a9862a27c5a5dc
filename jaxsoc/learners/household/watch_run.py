"""Training runs of the Watch stage's goal-inference model (``jaxsoc train watch``) and their evaluation.

``train(config, out, demos_dir)`` reads the successful demonstrations of ``train.npz`` (and ``extra.npz`` when present)
written by ``jaxsoc household demos``, validates on ``validation.npz`` there (the validation split: an apartment and
goals training never sees, shaped like the test shift; ``jaxsoc household demos --split validation``) or, only where
there is none, on a random ``config.validation_fraction`` of the training demonstrations (a fixed split of
``config.seed``; the explicit fallback, which saturates), and trains ``watch.GoalInference`` with Adam on the mean
cross-entropy of its count classifiers. The test splits are never read during training: ``curves`` refuses them; they
are scored once, at the end, by ``jaxsoc household goals``. The demonstrations live on the device as tasks and actions;
each optimiser step gathers its batch there and rebuilds Alice's observations by replay (``demos.observations``) inside
one jitted step. A batch's time axis is cut to its longest demonstration rounded up to a multiple of ``TIME_STEP`` (the
whole ``max_steps`` with ``code_parity``, whose means cover the padding), so a short batch does not pay for 250 steps:
the step is compiled once per distinct length, which is why an epoch is a Python loop over jitted steps rather than one
``lax.scan`` (dispatch is asynchronous, so the loop costs little on a GPU). Each epoch's data order and dropout keys
come from ``fold_in(key(seed), epoch)``, so ``resume`` continues from the newest checkpoint and gives the same
parameters as an uninterrupted run; ``epochs`` may be raised on resume (a ``lr_schedule="cosine"`` then follows the new
total from there).

After each epoch the validation loss, precision, recall, F1 and accuracy (``watch.scores``) go to
``metrics.csv`` with the training loss and speed, and the parameters and optimiser state to an orbax
checkpoint. A run directory holds ``run.json`` (kind ``"watch"``, config, data), ``metrics.csv`` /
``metrics.json``, ``curves.png`` and ``checkpoints/``. ``load(run)`` returns its config and parameters,
``infer_goals`` predicts goals of demonstrations and ``evaluate`` scores them (e.g. on ``test-1.npz``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from tqdm.auto import tqdm

from jaxsoc.envs.household import predicates as PR
from jaxsoc.envs.household.agents import demos as D
from jaxsoc.learners.checkpoint import Checkpointer
from jaxsoc.learners.household import watch as WA
from jaxsoc.learners.run_log import MetricsLog, read_run_json, write_json

KIND = "watch"
RUN_JSON = "run.json"
CHECKPOINTS = "checkpoints"
TRAIN_FILES = ("train.npz", "extra.npz")
VALIDATION_FILE = "validation.npz"
#: demonstration splits scored once, after training (``jaxsoc household goals``), never during it
TEST_SPLITS = ("test-1", "test-2")
TIME_STEP = 16
_SPLIT_KEY = 10**6  # folded into key(seed) for the validation split
_METRICS = ("precision", "recall", "f1", "accuracy")
_CURVE_METRICS = ("precision", "recall", "f1")
CURVE_TRAIN = 100  # training demonstrations scored after every epoch (the first of the training rows)


# ---------------------------------------------------------------------------------------------------- data


def _concat(parts: list[D.Demos]) -> D.Demos:
    """Returns the demonstrations of ``parts`` one after the other (actions padded with noops to the longest
    ``max_steps``)."""
    if len(parts) == 1:
        return parts[0]
    steps = max(p.max_steps for p in parts)
    cat = lambda *xs: np.concatenate([np.asarray(x) for x in xs])  # noqa: E731
    tasks = dataclasses.replace(
        parts[0].tasks,
        states=jax.tree_util.tree_map(cat, *[p.tasks.states for p in parts]),
        activities=cat(*[p.tasks.activities for p in parts]),
    )
    actions = cat(*[np.pad(p.actions, ((0, 0), (0, steps - p.max_steps))) for p in parts])
    return dataclasses.replace(
        parts[0],
        tasks=tasks,
        actions=actions,
        length=cat(*[p.length for p in parts]),
        success=cat(*[p.success for p in parts]),
        satisfied=cat(*[p.satisfied for p in parts]),
    )


def read_demos(demos_dir: str | Path, episodes: int | None = None) -> tuple[D.Demos, list[str]]:
    """Returns ``(demos, files)``: the successful demonstrations of ``TRAIN_FILES`` under ``demos_dir``
    (``train.npz`` required, ``extra.npz`` optional), the first ``episodes`` of them when given.

    Raises:
        ValueError: no such directory or no ``train.npz``, an unreadable file, no successful demonstration,
            or a non-positive ``episodes``.
    """
    root = Path(demos_dir)
    if not root.is_dir():
        raise ValueError(f"no demonstrations directory {root} (write one with `jaxsoc household demos`)")
    if not (root / TRAIN_FILES[0]).is_file():
        raise ValueError(f"{root} has no {TRAIN_FILES[0]} (`jaxsoc household demos --split train --out {root}`)")
    if episodes is not None and episodes < 1:
        raise ValueError(f"episodes must be positive, got {episodes}")
    files = [name for name in TRAIN_FILES if (root / name).is_file()]
    demos = _concat([D.load(root / name, successful_only=True) for name in files])
    if not len(demos):
        raise ValueError(f"{root}: no successful demonstration in {', '.join(files)}")
    if episodes is not None and episodes < len(demos):
        demos = demos.select(np.arange(episodes))
    return demos, files


def split_rows(num: int, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Returns ``(train, validation)`` int64 row indices of ``num`` demonstrations: a random ``fraction`` of
    them (at least one when ``fraction > 0``) validates. Raises ``ValueError`` when no row is left to train."""
    n_val = max(1, round(fraction * num)) if fraction > 0 else 0
    if num - n_val < 1:
        raise ValueError(f"{num} demonstration(s) leave none to train on after validation_fraction={fraction}")
    perm = np.asarray(jax.random.permutation(jax.random.fold_in(jax.random.key(seed), _SPLIT_KEY), num))
    return np.sort(perm[n_val:]), np.sort(perm[:n_val])


def read_validation(demos_dir: str | Path, config: WA.WatchConfig) -> D.Demos | None:
    """Returns the validation demonstrations of a run on ``demos_dir``: every episode of its ``validation.npz``
    (the validation split; failed episodes too, as the test splits are scored), or ``None`` when there is none
    (then ``config.validation_fraction`` of the training demonstrations validates, if above 0).

    Raises:
        ValueError: both a ``validation.npz`` and a ``validation_fraction`` above 0 (choose one), a file that is
            not the validation split's, or an unreadable one.
    """
    path = Path(demos_dir) / VALIDATION_FILE
    if not path.is_file():
        return None
    if config.validation_fraction > 0:
        raise ValueError(
            f"{path} is the validation set; validation_fraction={config.validation_fraction} would also hold out "
            "training demonstrations: leave validation_fraction at 0 (or move the file to validate on the random "
            "holdout)"
        )
    demos = D.load(path)
    if demos.split != "validation":
        raise ValueError(f"{path} holds the {demos.split!r} split, not 'validation'")
    return demos


def check_curves(curves: dict[str, D.Demos]) -> None:
    """Raises ``ValueError`` when a curve of ``train``'s ``curves`` is a test split (by name or by the split its
    demonstrations were recorded from): test splits are scored once, by ``jaxsoc household goals``."""
    for name, demos in curves.items():
        if name in TEST_SPLITS or demos.split in TEST_SPLITS:
            split = name if name in TEST_SPLITS else demos.split
            raise ValueError(
                f"curves: {split} is a test split; test splits are never scored during training (model choices "
                "read the validation split only); score them once, after training, with `jaxsoc household goals "
                "RUN --demos DIR`"
            )


def device_bank(demos: D.Demos) -> dict[str, Any]:
    """The demonstrations on the device: ``tasks`` (``world.State`` [N]), ``actions`` int32[N, max_steps],
    ``length`` int32[N]."""
    return {
        "tasks": jax.tree_util.tree_map(jnp.asarray, demos.tasks.states),
        "actions": jnp.asarray(demos.actions, jnp.int32),
        "length": jnp.asarray(demos.length, jnp.int32),
    }


def time_steps(lengths: np.ndarray, max_steps: int, config: WA.WatchConfig) -> int:
    """Returns the time axis of a batch of demonstrations of ``lengths``: the longest rounded up to a multiple
    of ``TIME_STEP``, at most ``max_steps`` (always ``max_steps`` with ``code_parity``)."""
    if config.code_parity:
        return max_steps
    return int(min(max_steps, math.ceil(int(np.max(lengths)) / TIME_STEP) * TIME_STEP))


def device_batch(config: WA.WatchConfig, bank: dict, rows: jax.Array, steps: int) -> dict:
    """Returns the batch of demonstrations ``rows`` (int32[B]) of ``bank`` cut to ``steps`` steps, in
    ``Demos.batch``'s layout (``obs`` only when the model reads observations, ``target_class`` when it reads
    actions). Jittable with ``steps`` static."""
    tasks = jax.tree_util.tree_map(lambda x: x[rows], bank["tasks"])
    actions = bank["actions"][rows, :steps]
    length = bank["length"][rows]
    batch = {
        "actions": actions,
        "valid": jnp.arange(steps)[None, :] < length[:, None],
        "length": length,
        "goal_count": tasks.goal_count,
    }
    if config.input == "actions":
        batch["target_class"] = WA.target_classes(tasks, actions)
    elif config.final_observation:  # observation k: after k actions (a trailing noop shows the last one's result)
        batch["obs"] = D.observations(tasks, jnp.pad(actions, ((0, 0), (0, 1))))
        batch["valid"] = jnp.arange(steps + 1)[None, :] <= length[:, None]
    else:
        batch["obs"] = D.observations(tasks, actions)
    return batch


# ---------------------------------------------------------------------------------------------------- steps


class Functions:
    """The jitted functions of one model and optimiser (``compiled`` shares them between runs):

    - ``init(key) -> state``: ``{"params", "opt_state"}``, fresh;
    - ``step(state, key, bank, rows, steps=..., lr_factor=1.0) -> (state, loss)``: one Adam step (its update
      scaled by ``lr_factor``, ``WatchConfig.lr_factor``: Adam's update is proportional to its step size) on the
      demonstrations ``rows`` int32[B] of ``bank`` (``device_bank``) cut to ``steps`` steps (``time_steps``);
    - ``forward(params, bank, rows, steps=...) -> (loss float32[B], logits float32[B, 30, NUM_COUNTS])``:
      evaluation mode.
    """

    def __init__(self, config: WA.WatchConfig) -> None:
        self.config, self.model, self.optimizer = config, WA.GoalInference(config), optax.adam(config.lr)
        self.step = jax.jit(self._step, static_argnames="steps")
        self.forward = jax.jit(self._forward, static_argnames="steps")

    def init(self, key: jax.Array) -> dict[str, Any]:
        params = WA.init_params(self.config, key)
        return {"params": params, "opt_state": self.optimizer.init(params)}

    def _step(self, state, key, bank, rows, steps, lr_factor=1.0):
        batch = device_batch(self.config, bank, rows, steps)

        def objective(params):
            logits = self.model.apply({"params": params}, batch, train=True, rngs={"dropout": key})
            return WA.loss(logits, batch["goal_count"])

        value, grads = jax.value_and_grad(objective)(state["params"])
        updates, opt_state = self.optimizer.update(grads, state["opt_state"], state["params"])
        updates = jax.tree_util.tree_map(lambda u: u * lr_factor, updates)
        return {"params": optax.apply_updates(state["params"], updates), "opt_state": opt_state}, value

    def _forward(self, params, bank, rows, steps):
        batch = device_batch(self.config, bank, rows, steps)
        logits = self.model.apply({"params": params}, batch)
        losses = jax.vmap(lambda lg, g: WA.loss(lg[None], g[None]))(logits, batch["goal_count"])
        return losses, logits


@functools.lru_cache(maxsize=8)
def _cached_functions(config: WA.WatchConfig) -> Functions:
    return Functions(config)


def compiled(config: WA.WatchConfig) -> Functions:
    """The jitted functions of ``config``'s model (epochs, seed, batch and validation split do not matter)."""
    return _cached_functions(dataclasses.replace(config, epochs=1, seed=0, batch=1, validation_fraction=0.0))


def predict_all(fns: Functions, params, bank: dict, lengths: np.ndarray, max_steps: int, batch: int):
    """Returns ``(losses float32[N], logits float32[N, 30, NUM_COUNTS])`` of every demonstration of ``bank``
    (``lengths`` int[N] on the host), run in batches of similar lengths (the last padded by repetition)."""
    order = np.argsort(lengths, kind="stable")
    losses = np.zeros(len(order), np.float32)
    logits = np.zeros((len(order), PR.NUM_PREDICATES, WA.NUM_COUNTS), np.float32)
    for start in range(0, len(order), batch):
        rows = order[start : start + batch]
        padded = np.concatenate([rows, np.full(batch - len(rows), rows[-1])])
        steps = time_steps(lengths[rows], max_steps, fns.config)
        loss, out = jax.device_get(fns.forward(params, bank, jnp.asarray(padded, jnp.int32), steps=steps))
        losses[rows], logits[rows] = loss[: len(rows)], out[: len(rows)]
    return losses, logits


def split_scores(logits: np.ndarray, true) -> dict[str, float]:
    """Returns ``watch.scores`` of both decodings of ``logits`` against the goals ``true`` int[N, 30]: the raw
    argmax's as ``precision`` etc., the grammar's as ``grammar_precision`` etc."""
    raw = WA.scores(WA.decode(logits, "argmax"), true)
    grammar = WA.scores(WA.decode(logits, "grammar"), true)
    return {**raw, **{f"grammar_{k}": v for k, v in grammar.items()}}


# ---------------------------------------------------------------------------------------------------- runs


def _checkpointer(run: Path, config: WA.WatchConfig, data: dict[str, Any]) -> Checkpointer:
    """The run's checkpoints; a restore checks the config (all but ``epochs``) and the data."""
    # options at their LEGACY value are left out, so the checkpoints of runs older than them still match
    saved = {k: v for k, v in config.to_dict().items() if k != "epochs" and WA.LEGACY.get(k, ()) != v}
    return Checkpointer(run / CHECKPOINTS, {"kind": KIND, "config": saved, "model_config": {"data": data}})


def _read_run(run: str | Path) -> dict[str, Any]:
    return read_run_json(run, KIND)


def train(
    config: WA.WatchConfig,
    out: str | Path,
    demos_dir: str | Path,
    resume: bool = False,
    progress: bool = True,
    episodes: int | None = None,
    curves: dict[str, D.Demos] | None = None,
) -> dict[str, Any]:
    """Trains the goal-inference model of ``config`` on the demonstrations in ``demos_dir`` into ``out``
    (module docstring).

    Args:
        config: the model and its training.
        out: the run directory.
        demos_dir: a directory with ``train.npz`` (and optionally ``extra.npz``) from ``jaxsoc household demos``.
        resume: continue from the newest checkpoint in ``out`` (same config but ``epochs``, same data).
        progress: show a progress bar over epochs.
        episodes: use only the first this many successful demonstrations (``train.npz``, then ``extra.npz``).
        curves: more demonstrations to score after every epoch, by name (e.g. ``{"extra": ...}``; never a test
            split, ``check_curves``): their precision / recall / F1 under both decodings go to ``metrics.csv`` as
            ``<name>_<metric>`` and ``<name>_grammar_<metric>`` beside the validation's and those of up to
            ``CURVE_TRAIN`` training demonstrations (``train_*``), so under- and over-fitting show.

    Returns:
        The summary (also in ``metrics.json``): epochs done, final train and validation loss, validation
        precision/recall/F1/accuracy, demonstrations per second, data sizes, wall time and device.

    Raises:
        ValueError: bad demonstrations (``read_demos``, ``read_validation``), a test split among ``curves``, a
            directory holding a run without ``resume``, a run of another kind, or a checkpoint of another config or
            data.
    """
    start = time.perf_counter()
    out = Path(out)
    check_curves(curves or {})
    demos, files = read_demos(demos_dir, episodes)
    validation = read_validation(demos_dir, config)
    data = {"demos_dir": str(Path(demos_dir).absolute()), "files": files, "episodes": episodes}
    if validation is None:  # the fallback: a random share of the training demonstrations (none at 0)
        train_rows, val_rows = split_rows(len(demos), config.validation_fraction, config.seed)
        val_demos = demos.select(val_rows)
    else:
        train_rows, val_demos = np.arange(len(demos)), validation
        data["validation"] = VALIDATION_FILE
    sizes = {"demos": len(demos), "train": len(train_rows), "validation": len(val_demos)}
    if (out / RUN_JSON).exists():
        if not resume:
            raise ValueError(f"{out} already holds a run; pass resume to continue it or choose another directory")
        _read_run(out)
    out.mkdir(parents=True, exist_ok=True)

    checkpointer = _checkpointer(out, config, data)
    try:
        first = checkpointer.check_meta() if resume and checkpointer.latest_step() is not None else 0
    except ValueError:
        checkpointer.close()
        raise
    fns = compiled(config)
    state = fns.init(jax.random.key(config.seed))
    if first:
        state = checkpointer.restore(state, first)
    log = MetricsLog(out)
    if resume:
        log.truncate("epoch", first)
    write_json(out / RUN_JSON, {"kind": KIND, "config": config.to_dict(), "data": data, "sizes": sizes})

    bank, lengths, max_steps = device_bank(demos), np.asarray(demos.length), demos.max_steps
    val_bank = device_bank(val_demos) if len(val_demos) else None
    val_lengths, val_goals = np.asarray(val_demos.length), np.asarray(val_demos.tasks.states.goal_count)
    watched = {"train": demos.select(train_rows[:CURVE_TRAIN]), **(curves or {})}
    watched = {
        name: (device_bank(d), np.asarray(d.length), d.max_steps, d.tasks.states.goal_count)
        for name, d in watched.items()
    }
    batch = min(config.batch, len(train_rows))
    num_steps = math.ceil(len(train_rows) / batch)
    bar = tqdm(total=config.epochs, initial=first, unit="epoch", desc=KIND, disable=not progress)
    with bar:
        for epoch in range(first, config.epochs):
            k_order, k_steps = jax.random.split(jax.random.fold_in(jax.random.key(config.seed), epoch))
            perm = np.asarray(jax.random.permutation(k_order, len(train_rows)))
            plan = train_rows[np.resize(perm, num_steps * batch).reshape(num_steps, batch)]
            keys = jax.random.split(k_steps, num_steps)
            tick, losses = time.perf_counter(), []
            for i, (rows, key) in enumerate(zip(plan, keys)):
                steps = time_steps(lengths[rows], max_steps, config)
                factor = np.float32(config.lr_factor(epoch * num_steps + i, config.epochs * num_steps))
                state, value = fns.step(state, key, bank, jnp.asarray(rows, jnp.int32), steps=steps, lr_factor=factor)
                losses.append(value)
            train_loss = float(jnp.mean(jnp.stack(losses)))
            speed = num_steps * batch / (time.perf_counter() - tick)
            row = {"epoch": epoch + 1, "steps": (epoch + 1) * num_steps, "train_loss": train_loss}
            if val_bank is not None:
                val_loss, logits = predict_all(fns, state["params"], val_bank, val_lengths, val_demos.max_steps, batch)
                row["val_loss"] = float(val_loss.mean())
                scored = split_scores(logits, val_goals)
                row.update({f"val_{k}": v for k, v in scored.items()})
            else:
                row.update({name: math.nan for name in ("val_loss", *(f"val_{k}" for k in _METRICS))})
            for name, (w_bank, w_lengths, w_steps, w_goals) in watched.items():
                _, logits = predict_all(fns, state["params"], w_bank, w_lengths, w_steps, batch)
                scored = split_scores(logits, w_goals)
                row.update({f"{name}_{k}": v for k, v in scored.items() if k.split("_")[-1] in _CURVE_METRICS})
            row.update({"demos_per_s": speed, "wall_s": time.perf_counter() - start})
            log.append([row])
            checkpointer.save(epoch + 1, state)
            bar.update(1)
            bar.set_postfix(train=f"{train_loss:.4f}", val=f"{row['val_loss']:.4f}", f1=f"{row['val_f1']:.3f}")
    checkpointer.close()
    final = log.rows[-1] if log.rows else {}
    summary = {
        "title": f"watch ({config.input}), {sizes['train']} training demonstrations",
        "kind": KIND,
        "epochs_done": int(final.get("epoch", 0)),
        "epochs": config.epochs,
        "steps": int(final.get("steps", 0)),
        **{name: final.get(name) for name in ("train_loss", "val_loss", *(f"val_{k}" for k in _METRICS))},
        **{name: final.get(name) for name in (f"val_grammar_{k}" for k in _METRICS)},
        "demos_per_s": final.get("demos_per_s"),
        "sizes": sizes,
        "wall_s": time.perf_counter() - start,
        "device": jax.devices()[0].device_kind,
        "checkpoint": str(out / CHECKPOINTS),
    }
    log.finish(summary, x="epoch", curves=("train_loss", "val_loss", "val_f1", "val_grammar_f1"))
    return summary


def config_of(info: dict[str, Any], where: str | Path) -> WA.WatchConfig:
    """Returns the ``WatchConfig`` of a run's ``run.json`` content ``info`` (options added since the run was
    written at their ``LEGACY`` value). Raises ``ValueError`` naming ``where`` for a config this version does not
    read."""
    try:
        return WA.WatchConfig(**{**WA.LEGACY, **info["config"]})
    except (TypeError, KeyError) as error:
        raise ValueError(f"{where}: bad config in {RUN_JSON}: {error}") from error


def state_template(config: WA.WatchConfig) -> dict[str, Any]:
    """Returns a zero state (``{"params", "opt_state"}``) of ``config``'s model: the shapes a checkpoint or a
    model's parameters are checked against."""
    template = jax.eval_shape(compiled(config).init, jax.random.key(0))
    return jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), template)


def load(run: str | Path) -> tuple[WA.WatchConfig, Any]:
    """Returns ``(config, params)`` of a watch run directory (or of ``model:NAME``, a ``watch`` model of
    ``jaxsoc.models``): its config and the newest checkpoint's parameters.

    Raises:
        ValueError: not a watch run, no checkpoint yet, or a checkpoint that does not match ``run.json``; a
            model of another kind, or parameters that do not fit its config's network.
    """
    from jaxsoc import models

    if models.ref_name(run) is not None:
        return models.load(run, KIND, "household")
    info = _read_run(run)
    config = config_of(info, run)
    checkpointer = _checkpointer(Path(run), config, info.get("data", {}))
    try:
        state = checkpointer.restore(state_template(config))
    except FileNotFoundError as error:
        raise ValueError(f"{run} has no checkpoint yet") from error
    finally:
        checkpointer.close()
    return config, state["params"]


def goal_logits(run: str | Path | tuple[WA.WatchConfig, Any], demos: D.Demos, batch: int = 32) -> np.ndarray:
    """Returns float32[N, 30, NUM_COUNTS]: a model's count logits for each of ``demos`` (``run``: a run
    directory or a ``(config, params)`` pair), run ``batch`` demonstrations at a time."""
    config, params = run if isinstance(run, tuple) else load(run)
    if not len(demos):
        raise ValueError("no demonstrations to infer goals from")
    fns = compiled(config)
    batch = min(batch, len(demos))
    return predict_all(fns, params, device_bank(demos), np.asarray(demos.length), demos.max_steps, batch)[1]


def infer_goals(
    run: str | Path | tuple[WA.WatchConfig, Any], demos: D.Demos, batch: int = 32, decoding: str = "grammar"
) -> np.ndarray:
    """Returns int8[N, 30]: the goal counts a model predicts for each of ``demos`` (``goal_logits``), decoded by
    ``decoding`` (``watch.decode``: ``"grammar"``, the goals the task grammar allows, or ``"argmax"``)."""
    return WA.decode(goal_logits(run, demos, batch), decoding)


def evaluate(run: str | Path | tuple[WA.WatchConfig, Any], demos: D.Demos, batch: int = 32) -> dict[str, Any]:
    """Returns the scores of a model's goals on ``demos`` (e.g. ``demos.load("test-1.npz")``) against their true
    goals (``split_scores``: the raw argmax's ``precision`` etc. and the grammar decoding's
    ``grammar_precision`` etc.), plus ``episodes`` (how many)."""
    return {**split_scores(goal_logits(run, demos, batch), demos.tasks.states.goal_count), "episodes": len(demos)}
