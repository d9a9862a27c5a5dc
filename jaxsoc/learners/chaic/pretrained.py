"""CHAIC's pretrained models (``jaxsoc.models``; the kinds are declared in ``learners.chaic.family``):

- ``bm``: a behaviour model (``jaxsoc train chaic-bm``; e.g. ``chaic-bm``). Loaded as ``bm.BMPartner``, the options
  view's partner model (``partner_run=model:NAME``); ``bm.load_bm_helper("model:NAME")`` makes the BM helper of
  it. Scored as training scores it (``evaluate_bm``): recorded runs of the test split, goal Jaccard, micro F1 and
  constraint accuracy.
- ``options-policy``: a helper over options (``jaxsoc train chaic-options`` or ``scripts/chaic_options_ppo.py``;
  e.g. ``chaic-options-helper``): the generic policy model (``learners.policy``) whose env arguments name its
  partner model by model name, never by run directory (``snapshot_options``: the partner run a checkpoint names is
  matched to the stored ``bm`` model with the same parameters). Loaded as the options helper agent
  (``ppo_helper.load_ppo_helper``), scored by ``jaxsoc chaic eval`` (``evaluate_options``: transport rate).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from jaxsoc import models
from jaxsoc.learners.chaic import bm_run

#: the env argument that names the options view's partner model (``learners.chaic.family``)
PARTNER_ARGUMENT = "partner_run"


def _se(values: np.ndarray) -> float:
    return float(np.std(values, ddof=1) / np.sqrt(len(values))) if len(values) > 1 else 0.0


# -- the behaviour model -----------------------------------------------------------------------------------------


def snapshot_bm(run: str | Path) -> tuple[dict[str, Any], Any]:
    """Returns ``(spec, parameters)`` of a ``chaic-bm`` run (``ModelKind.snapshot``): its ``run.json`` (the config
    that rebuilds the model) and checkpoint meta, and the newest checkpoint's ``params`` (no optimiser state)."""
    bm_run.read_run(run)  # a chaic-bm run, or ValueError
    return models.snapshot_run(run, files=(bm_run.RUN_JSON,), keep=("params",))


def load_bm(card: models.Card, tree: Any):
    """Returns the ``bm.BMPartner`` of a behaviour model (``ModelKind.load``; what ``partner_run=`` loads)."""
    from jaxsoc.learners.chaic.bm import BMPartner

    config, params = bm_run.from_model(card, tree)
    return BMPartner(params, config)


def evaluate_bm(
    ref: str, tasks: str = "all", episodes: int | None = None, seed: int | None = None, threshold: float | None = None
) -> dict[str, dict[str, float]]:
    """Returns the behaviour model's scores as training reports them (``report.json``'s ``test.all``): the
    constrained agent recorded beside the config's rule-based helper on the first ``episodes`` (default the
    config's ``eval_episodes``) test-split episodes of ``tasks`` (comma-separated or ``"all"``), one run each with
    the keys of ``seed`` (default the config's ``seed + 1``, as training), scored at ``threshold`` (default the
    config's): ``goal_jaccard`` (SE over the runs), ``micro_f1`` (SE: bootstrap over the runs, 1,000 draws of
    seed 0) and ``constraint_accuracy`` (binomial SE), each at the run's last helper step."""
    from jaxsoc.envs.chaic.episode import check_tasks
    from jaxsoc.learners.chaic.bm_data import record
    from jaxsoc.learners.chaic.bm_eval import predict, scores

    config, params = bm_run.load(ref)
    names = check_tasks(tasks.split(",") if isinstance(tasks, str) else list(tasks))
    episodes = config.eval_episodes if episodes is None else int(episodes)
    seed = config.seed + 1 if seed is None else int(seed)
    threshold = config.threshold if threshold is None else float(threshold)
    data = record(names, "test", episodes, 1, config.helper, config.max_events, config.max_steps, seed=seed)
    probs, constraint = predict(params, data, config)
    summary = scores(probs, constraint, data, threshold)
    # per-run parts of the summary's figures (``bm_eval.scores``: each run's prediction at its last helper step)
    mask = np.asarray(data["mask"])
    truth = np.asarray(data["targets"]).astype(bool)
    length = mask.sum(1)
    rows = np.arange(len(mask))
    last = np.maximum(length - 1, 0)
    end = (probs > threshold)[rows, last] & (length > 0)[:, None]
    jaccard = (end & truth).sum(1) / np.maximum((end | truth).sum(1), 1)
    counts = np.stack([(end & truth).sum(1), (end & ~truth).sum(1), (~end & truth).sum(1)], 1)  # tp, fp, fn
    draws = np.random.default_rng(0).integers(0, len(rows), (1000, len(rows)))
    tp, fp, fn = counts[draws].sum(1).T
    f1 = 2 * tp / np.maximum(2 * tp + fp + fn, 1)
    n, accuracy = len(rows), summary["constraint_accuracy"]
    return {
        "goal_jaccard": {"value": summary["goal_jaccard"], "se": _se(jaccard), "episodes": n},
        "micro_f1": {"value": summary["micro_f1"], "se": float(np.std(f1, ddof=1)), "episodes": n},
        "constraint_accuracy": models.rate(accuracy, n),
    }


# -- the helper over options -------------------------------------------------------------------------------------


def partner_model_name(run: str | Path) -> str:
    """Returns ``model:NAME`` of the stored CHAIC behaviour model whose parameters are those of the ``chaic-bm``
    run ``run`` (or ``run`` itself when it already names a model). Raises ``ValueError`` when none is stored (export
    the partner first)."""
    if models.ref_name(run) is not None:
        bm_run.open_model(run)  # a CHAIC behaviour model, or ValueError
        return str(run)
    config, params = bm_run.load(run)
    for card in models.list(bm_run.FAMILY):
        if card.kind != bm_run.MODEL_KIND:
            continue
        stored_config, stored = bm_run.from_model(*models.open_ref(card.name))
        if stored_config != config:
            continue
        wanted, stored = _flat(params, card.dtype), _flat(stored, "float32")
        if wanted.keys() == stored.keys() and all(np.array_equal(wanted[k], stored[k]) for k in wanted):
            return models.PREFIX + card.name
    raise ValueError(
        f"{PARTNER_ARGUMENT}={run}: no stored CHAIC behaviour model has its parameters; export it first "
        f"(kind {bm_run.FAMILY}/{bm_run.MODEL_KIND})"
    )


def _flat(tree: Any, dtype: str) -> dict[str, np.ndarray]:
    """Returns ``{path: float32 array}`` of ``tree``'s leaves, floats rounded through ``dtype`` (a stored dtype)."""
    import jax
    import jax.numpy as jnp

    flat, _ = jax.tree_util.tree_flatten_with_path(tree)
    return {
        jax.tree_util.keystr(path): np.asarray(jnp.asarray(leaf).astype(dtype).astype(jnp.float32))
        for path, leaf in flat
    }


def rename_partner(env_args: str) -> str:
    """Returns ``env_args`` with its ``partner_run=RUN`` (a run directory) replaced by ``partner_run=model:NAME``
    (``partner_model_name``); the other items unchanged."""
    items = []
    for item in filter(None, (part.strip() for part in env_args.split(","))):
        name, _, value = item.partition("=")
        items.append(f"{name}={partner_model_name(value)}" if name == PARTNER_ARGUMENT else item)
    return ",".join(items)


def snapshot_options(run: str | Path) -> tuple[dict[str, Any], Any]:
    """Returns ``(spec, parameters)`` of a helper over options (``ModelKind.snapshot``): the policy's
    (``policy.snapshot_policy``), with the partner run its ``env_args`` name replaced by the stored behaviour model of
    the same parameters (``rename_partner``), so that loading the model reads no run directory."""
    from jaxsoc.learners.policy import snapshot_policy

    spec, tree = snapshot_policy(run)
    if not spec["meta"]["env_id"].endswith("-Options-v0"):
        raise ValueError(f"{run}: trained on {spec['meta']['env_id']}, not a CHAIC options view")
    config = spec["meta"].get("config", {})
    if config.get("env_args"):
        config["env_args"] = rename_partner(config["env_args"])
    return spec, tree


def load_options(card: models.Card, tree: Any):
    """Returns the helper agent of a helper over options (``ModelKind.load``; ``ppo_helper.load_ppo_helper``, its
    options sampled), stepping the partner model its env arguments name."""
    from jaxsoc.learners.chaic.ppo_helper import load_ppo_helper

    return load_ppo_helper(models.PREFIX + str(card.path))


def evaluate_options(
    ref: str,
    tasks: str = "all",
    seeds: int = 3,
    seed: int = 0,
    episodes: int | None = None,
    split: str = "test",
    task_seed: int = 0,
    greedy: bool = False,
) -> dict[str, dict[str, float]]:
    """Returns ``jaxsoc chaic eval --helper ppo=REF``'s transport rate (``ppo_greedy`` with ``greedy``):
    ``tr``, the mean over the episodes of ``tasks`` (comma-separated or ``"all"``; the first ``episodes`` of each,
    default all, of ``split`` built from ``task_seed``) of each episode's rate averaged over its ``seeds`` runs
    (keys of ``seed``), SE over those episodes."""
    from jaxsoc.envs.chaic.episode import check_tasks
    from jaxsoc.learners.chaic.evaluation import evaluate, learned_helper

    label = "ppo_greedy" if greedy else "ppo"
    names = check_tasks(tasks.split(",") if isinstance(tasks, str) else list(tasks))
    agent = learned_helper(label, ref)
    results = evaluate(
        names, [label], int(seeds), seed=int(seed), split=split, episodes=episodes, agents={label: agent},
        task_seed=int(task_seed), log=None, alone=False,
    )  # fmt: skip
    rates = np.concatenate([np.asarray(results[task][label]["tr_episodes"], np.float64) for task in names])
    return {"tr": {"value": float(rates.mean()), "se": _se(rates), "episodes": int(rates.size)}}
