"""The household's pretrained models (``jaxsoc.models``): the kinds ``family`` declares, each cut from a training
run (``snapshot_*``), rebuilt as its run loader returns it (``load_*``) and scored (``evaluate_*``).

- ``watch``: the goal-inference model (``watch_run.load``'s ``(config, params)``), scored as ``jaxsoc household
  goals`` scores it: precision, recall and F1 of the raw argmax decoding on the paired test-1 and test-2
  demonstrations (read from ``demos``, else recorded as ``jaxsoc household demos`` records them);
- ``hybrid``: the Hybrid's high level (``hybrid_run.load``'s ``(policy, params, config)``), scored by the Help
  stage (``jaxsoc household eval --helper hybrid --watch WATCH --hybrid model:NAME``): success and speedup over
  Alice alone with the goals a Watch model infers;
- ``hrl-low``: the HRL low level (``hrl_run.load``'s ``(policy, variables, config)``), scored by its own check
  (``hrl_eval.subgoal_success``, the training run's final one): the share of single-predicate subgoals achieved
  in 50 steps in the training apartments and in the held-out ones.

Each run loader takes ``model:NAME`` through ``jaxsoc.models.load`` (nothing here is imported by them), so every
flag that takes such a run (``--watch``, ``--hybrid``, ``--hrl``, ``jaxsoc household goals RUN``) takes a model
too. Every snapshot keeps the ``params``
subtree of the newest checkpoint only (no optimiser state) and the run's ``run.json``, which rebuilds the network.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc import models

FAMILY = "household"
#: the ``run.json`` kinds of the run loaders, which are also the model kinds
WATCH, HYBRID, HRL_LOW = "watch", "hybrid", "hrl-low"
KEEP = ("params",)


# -- snapshots ---------------------------------------------------------------------------------------------------


def _snapshot(run: str | Path, kind: str) -> tuple[dict[str, Any], Any]:
    from jaxsoc.learners.run_log import read_run_json

    read_run_json(run, kind)  # a run of another kind is refused here, by name
    return models.snapshot_run(run, files=("run.json",), keep=KEEP)


def snapshot_watch(run: str | Path) -> tuple[dict[str, Any], Any]:
    """Returns ``(spec, parameters)`` of a ``jaxsoc train watch`` run (``ModelKind.snapshot``)."""
    return _snapshot(run, WATCH)


def snapshot_hybrid(run: str | Path) -> tuple[dict[str, Any], Any]:
    """Returns ``(spec, parameters)`` of a ``jaxsoc train hybrid`` run (``ModelKind.snapshot``)."""
    return _snapshot(run, HYBRID)


def snapshot_hrl_low(run: str | Path) -> tuple[dict[str, Any], Any]:
    """Returns ``(spec, parameters)`` of a ``jaxsoc train hrl`` run (``ModelKind.snapshot``)."""
    return _snapshot(run, HRL_LOW)


# -- loading -----------------------------------------------------------------------------------------------------


def _run_json(card: models.Card) -> dict[str, Any]:
    info = card.spec.get("files", {}).get("run.json")
    if not isinstance(info, dict):
        raise ValueError(f"{card.path}: the card's spec has no run.json (files.run.json)")
    return info


def _zeros(space) -> Any:
    """A batch of one zero observation of ``space`` (``core.spaces.Dict`` of ``Box``)."""
    return {name: jnp.zeros((1, *sub.shape), sub.dtype) for name, sub in space.spaces.items()}


def _fit_policy(card: models.Card, tree: Any, policy, space) -> dict[str, Any]:
    """Returns ``{"params": ...}`` of ``tree`` checked against ``policy`` initialised on ``space``'s observation."""
    template = jax.eval_shape(policy.init, jax.random.key(0), _zeros(space), policy.initial_memory(1))
    return models.fit({"params": template["params"]}, tree, card, keep=KEEP)


def load_watch(card: models.Card, tree: Any) -> tuple[Any, Any]:
    """Returns ``watch_run.load``'s ``(config, params)`` of a ``watch`` model (``ModelKind.load``)."""
    from jaxsoc.learners.household import watch_run

    config = watch_run.config_of(_run_json(card), card.path)
    template = {"params": watch_run.state_template(config)["params"]}
    return config, models.fit(template, tree, card, keep=KEEP)["params"]


def load_hybrid(card: models.Card, tree: Any) -> tuple[Any, Any, Any]:
    """Returns ``hybrid_run.load``'s ``(policy, params, config)`` of a ``hybrid`` model (``ModelKind.load``)."""
    from jaxsoc.envs.household.hybrid_env import observation_space
    from jaxsoc.learners.household import hybrid_run

    config = hybrid_run.config_of(_run_json(card), card.path)
    policy = hybrid_run.policy_of(config)
    return policy, _fit_policy(card, tree, policy, observation_space())["params"], config


def load_hrl_low(card: models.Card, tree: Any) -> tuple[Any, dict[str, Any], Any]:
    """Returns ``hrl_run.load``'s ``(policy, variables, config)`` of an ``hrl-low`` model (``ModelKind.load``)."""
    from jaxsoc.envs.household.subgoal_env import observation_space
    from jaxsoc.learners.household import hrl_run

    policy, config = hrl_run.config_of(_run_json(card), card.path)
    return policy, _fit_policy(card, tree, policy, observation_space()), config


# -- evaluation --------------------------------------------------------------------------------------------------


_RECORDED: dict[tuple[int, int, int], Path] = {}  # (task_seed, seed, simulations) -> this process's recordings


def paired_demos(demos: str | None, splits: tuple[str, ...], task_seed: int, seed: int, simulations: int) -> str:
    """Returns a directory holding ``<split>.npz`` paired demonstrations for each of ``splits``: ``demos`` when it
    has them all, else a temporary one where the missing ones are recorded as ``jaxsoc household demos --split S
    --task-seed task_seed --seed seed --simulations simulations`` records them (kept for this process, so the
    models' evaluations share them)."""
    from jaxsoc.envs.household.agents import demos as D

    if demos and all((Path(demos) / f"{split}.npz").is_file() for split in splits):
        return demos
    key = (task_seed, seed, simulations)
    if key not in _RECORDED or not _RECORDED[key].is_dir():
        _RECORDED[key] = Path(tempfile.mkdtemp(prefix="jaxsoc-demos-"))
    out = _RECORDED[key]
    for split in splits:
        if not (out / f"{split}.npz").is_file():
            print(f"recording the paired {split} demonstrations (give demos=DIR to reuse them)", flush=True)
            tasks = D.split_tasks(split, task_seed)
            D.save(D.record(tasks, seed, num_simulations=simulations), out / f"{split}.npz")
    return str(out)


def ratio_scores(pred, true) -> dict[str, tuple[float, float]]:
    """Returns ``{"precision", "recall", "f1"}``, each ``(value, standard error)``: ``watch.scores``' figures of
    predicted vs true goals (int[N, 30]) and their delete-one jackknife standard errors over the N
    demonstrations."""
    from jaxsoc.learners.household import watch as WA

    tp, fp, fn = (np.asarray(x, np.float64) for x in WA.multiset_counts(pred, true))

    def figures(tp_sum, fp_sum, fn_sum):
        precision = np.where(tp_sum + fp_sum > 0, tp_sum / np.maximum(tp_sum + fp_sum, 1), 0.0)
        recall = np.where(tp_sum + fn_sum > 0, tp_sum / np.maximum(tp_sum + fn_sum, 1), 0.0)
        f1 = np.where(precision + recall > 0, 2 * precision * recall / np.maximum(precision + recall, 1e-12), 0.0)
        return {"precision": precision, "recall": recall, "f1": f1}

    full = figures(tp.sum(), fp.sum(), fn.sum())
    n = len(tp)
    leave_one = figures(tp.sum() - tp, fp.sum() - fp, fn.sum() - fn)  # [N] each
    out = {}
    for name, value in full.items():
        others = leave_one[name]
        se = np.sqrt((n - 1) / n * np.sum((others - others.mean()) ** 2)) if n > 1 else 0.0
        out[name] = (float(value), float(se))
    return out


def evaluate_watch(
    ref: str,
    splits: tuple[str, ...] | list[str] = ("test-1", "test-2"),
    demos: str | None = None,
    task_seed: int = 0,
    seed: int = 0,
    simulations: int = 100,
) -> dict[str, dict[str, float]]:
    """Returns a ``watch`` model's goal inference on the paired demonstrations of ``splits`` (``ModelKind.evaluate``):
    ``<split>_f1``, ``_precision``, ``_recall`` of the raw argmax decoding (``jaxsoc household goals``' argmax rows),
    each with its jackknife standard error over the demonstrations. ``demos``: a directory with ``<split>.npz``
    (``jaxsoc household demos``), else they are recorded from the splits built from ``task_seed`` with Alice's keys
    from ``seed`` (the default is how the committed figures' demonstrations were recorded)."""
    from jaxsoc.envs.household.agents import demos as D
    from jaxsoc.learners.household import watch as WA
    from jaxsoc.learners.household import watch_run

    splits = tuple(splits)
    directory = paired_demos(demos, splits, task_seed, seed, simulations)
    loaded = watch_run.load(ref)
    out = {}
    for split in splits:
        paired = D.load(Path(directory) / f"{split}.npz")
        pred = WA.decode(watch_run.goal_logits(loaded, paired), "argmax")
        scored = ratio_scores(pred, paired.tasks.states.goal_count)
        for name in ("f1", "precision", "recall"):  # F1 first: the card's headline
            out[f"{split}_{name}"] = models.figure(*scored[name], len(paired))
    return out


def evaluate_hybrid(
    ref: str,
    watch: str = "model:wah-watch",
    split: str = "test-1",
    num_tasks: int | None = None,
    seeds: int = 1,
    simulations: int = 100,
    task_seed: int = 0,
    seed: int = 0,
    demos: str | None = None,
    batch: int = 100,
) -> dict[str, dict[str, float]]:
    """Returns a ``hybrid`` model's Help stage (``ModelKind.evaluate``), as ``jaxsoc household eval --helper hybrid
    --watch WATCH --hybrid REF --split SPLIT --seeds SEEDS`` measures it: ``speedup`` and ``success`` (Alice with
    the helper), mean ± standard error over tasks, with the goals ``watch`` infers from the paired demonstrations
    (``demos``, else recorded)."""
    from jaxsoc.envs.household import tasks as T
    from jaxsoc.learners.household.help_eval import evaluate_help

    task_set = T.cached_split(split, task_seed)
    demos = paired_demos(demos, (split,), task_seed, seed, simulations)
    record = evaluate_help(
        task_set, ["hybrid"], num_tasks=num_tasks, seeds=seeds, simulations=simulations, batch=batch, seed=seed,
        watch=watch, demos=demos, hybrid=ref, task_seed=task_seed,
    )  # fmt: skip
    row = record["results"]["hybrid"]["all"]
    tasks = row["tasks"]
    return {
        f"{split}_speedup": models.figure(*row["speedup"], tasks * seeds),
        f"{split}_success": models.figure(*row["helped_success"], tasks * seeds),
    }


def evaluate_hrl_low(
    ref: str, episodes: int | None = None, seed: int | None = None, heldout: str | None = None
) -> dict[str, dict[str, float]]:
    """Returns an ``hrl-low`` model's ``subgoal_success`` (``ModelKind.evaluate``; the training run's final check):
    ``achieved_train`` and ``achieved_heldout``, the share of ``episodes`` subgoal episodes (default the run's
    ``eval_episodes``) achieved in the run's training apartments and in ``heldout``'s (default the run's), with the
    binomial standard error; ``seed`` defaults to the run's ``seed + 1``, as the run's check."""
    from jaxsoc.learners.household import hrl_run
    from jaxsoc.learners.household.hrl_eval import subgoal_success

    policy, variables, config = hrl_run.load(ref)
    episodes = config.eval_episodes if episodes is None else episodes
    seed = config.seed + 1 if seed is None else seed
    heldout = config.heldout if heldout is None else heldout
    out = {}
    for name, split in (("train", None), ("heldout", heldout or None)):
        if name == "heldout" and split is None:
            continue
        params = config.params("put", split).replace(max_steps=config.eval_steps)
        share = subgoal_success(policy, variables, params, episodes, seed=seed)["achieved"]
        out[f"achieved_{name}"] = models.figure(share, np.sqrt(share * (1 - share) / episodes), episodes)
    return out
