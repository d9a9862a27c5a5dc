"""EXCALIBUR's pretrained models (``jaxsoc.models``; the kinds are declared in ``family``):

- ``answerer``: the supervised answerer over the object memory (``answerer.load`` of a checkpoint directory,
  ``answerer.json`` copied onto the card); scored by ``jaxsoc excalibur eval --agent none random oracle --answerer
  model:NAME`` at the paper's budgets, with its accuracy on the test bank from a full and an empty memory.
- ``memory-explorer``: a PPO explorer over that memory (``explorer.load_explorer`` of a run of ``jaxsoc excalibur
  explorer``, its ``explorer.json`` copied onto the card with the answerer it was trained with named by model
  name); scored with the answerer by ``jaxsoc excalibur eval --agent ppo=model:NAME --answerer model:ANSWERER``.
- ``policy``: a PPO policy of ``jaxsoc train ppo --env EXCALIBUR-*`` (``learners.policy``'s generic snapshot; loaded
  as ``policy.load_network`` gives it, on shapes only, so that no train bank is built); scored as the memory
  explorer, exploring while the answerer answers.

The family's run loaders take ``model:NAME`` through ``jaxsoc.models.load`` (which refuses another family's or
kind's model, naming it), so nothing here is imported by them.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc import models

FAMILY = "excalibur"
ANSWERER, MEMORY_EXPLORER, POLICY = "answerer", "memory-explorer", "policy"
#: the pretrained answerer the explorers are scored with (and were trained with)
DEFAULT_ANSWERER = models.PREFIX + "excalibur-answerer"


# -- the answerer -------------------------------------------------------------------------------------------------


def snapshot_answerer(run: str | Path) -> tuple[dict[str, Any], Any]:
    """Returns ``(spec, parameters)`` of an answerer checkpoint directory (``ModelKind.snapshot``): its
    ``answerer.json`` and its variables (``{"params": ...}``)."""
    from jaxsoc.learners.excalibur import answerer as ANS

    model, variables, meta = ANS.load(run)
    return {"files": {"answerer.json": meta}}, jax.tree_util.tree_map(np.asarray, variables)


def answerer_from_model(card: models.Card, tree: Any, house_config=None) -> tuple[Any, Any, dict]:
    """Returns ``answerer.load``'s ``(model, variables, meta)`` of an answerer model: the network of its preset with
    the stored variables checked against it (``models.fit``)."""
    from jaxsoc.learners.excalibur import answerer as ANS

    meta = ANS._check_meta(card.spec["files"]["answerer.json"], card.path)
    model, template = ANS.template(meta, *(() if house_config is None else (house_config,)))
    return model, models.fit(template, tree, card, keep=("params",)), meta


def load_answerer_model(card: models.Card, tree: Any, house_config=None) -> tuple[Any, Any, dict]:
    """``ModelKind.load`` of an answerer: ``answerer.load``'s ``(model, variables, meta)`` (its network for
    ``house_config``, default the default houses)."""
    return answerer_from_model(card, tree, house_config)


def _eval_args(
    episodes: int, seed: int, explore_budget: int, reenter_budget: int, sample: bool, split: str, bank_seed: int,
    house: str,
) -> argparse.Namespace:  # fmt: skip
    """Returns the arguments ``jaxsoc excalibur eval`` hands ``evaluation.evaluate_agents``."""
    return argparse.Namespace(
        episodes=int(episodes), seed=int(seed), explore_budget=int(explore_budget), reenter_budget=int(reenter_budget),
        sample=bool(sample), split=split, bank_seed=int(bank_seed), house=house,
    )  # fmt: skip


def _figures(summary: dict[str, float], prefix: str = "", keys=("accuracy_first", "accuracy_again")) -> dict:
    n = int(summary["episodes"])
    return {prefix + k: {"value": summary[k], "se": summary[k + "_se"], "episodes": n} for k in keys}


def evaluate_answerer_model(
    ref: str,
    agents: tuple[str, ...] = ("oracle", "none", "random"),
    episodes: int = 256,
    seed: int = 0,
    explore_budget: int = 2500,
    reenter_budget: int = 500,
    split: str = "test",
    bank_seed: int = 0,
    house: str = "default",
) -> dict[str, dict[str, float]]:
    """``ModelKind.evaluate`` of an answerer: ``jaxsoc excalibur eval --agent AGENTS --answerer REF`` (each
    scripted explorer explores, the answerer answers from its memory): ``<agent>_accuracy_first`` /
    ``_again`` (phases II and IV) with their standard errors over episodes; then ``test_full`` / ``test_empty``:
    ``answerer.bank_accuracy`` on the whole bank from a full and from an empty memory (the question-only prior),
    with binomial standard errors over its questions."""
    from jaxsoc.envs.excalibur import bank
    from jaxsoc.envs.excalibur import houses as H
    from jaxsoc.learners.excalibur import answerer as ANS
    from jaxsoc.learners.excalibur.evaluation import evaluate_agents

    args = _eval_args(episodes, seed, explore_budget, reenter_budget, False, split, bank_seed, house)
    model, variables, _ = ANS.load(ref, H.preset(house))
    results = evaluate_agents({agent: (agent, None) for agent in agents}, args, (model, variables))
    out = {}
    for agent in agents:
        out.update(_figures(results[f"{agent} + answerer"], agent + "_"))
    houses = bank.cached_bank(split, bank_seed, H.preset(house))
    questions = int(np.asarray(houses.num_questions).sum())
    for name, value in ANS.bank_accuracy(model, variables, houses).items():
        out[f"test_{name}"] = models.rate(value, questions)
    return out


# -- the explorers ------------------------------------------------------------------------------------------------


def _answerer_ref(answerer: str) -> str:
    """Returns ``model:NAME`` of the store's answerer model whose weights are those of the answerer checkpoint
    ``answerer`` (how an explorer's card names the answerer it was trained with), else ``answerer`` itself."""
    if models.ref_name(answerer) is not None:
        return answerer
    from jaxsoc.learners.excalibur import answerer as ANS

    try:
        _, variables, _ = ANS.load(answerer)
    except (OSError, ValueError):
        return answerer
    mine = jax.tree_util.tree_leaves(jax.tree_util.tree_map(np.asarray, variables))
    for card in models.list(FAMILY):
        if card.kind != ANSWERER:
            continue
        theirs = jax.tree_util.tree_leaves(models.read_params(card))
        if len(mine) == len(theirs) and all(a.shape == b.shape and np.array_equal(a, b) for a, b in zip(mine, theirs)):
            return models.ref_of(card)
    return answerer


def snapshot_memory_explorer(run: str | Path) -> tuple[dict[str, Any], Any]:
    """Returns ``(spec, parameters)`` of a run of ``jaxsoc excalibur explorer`` (``ModelKind.snapshot``): its
    checkpoint meta and ``explorer.json`` (the answerer it was trained with named by model name, there and in its
    command, when the store holds its weights), and its ``params``."""
    from jaxsoc.learners.excalibur import explorer as X

    if not X.is_explorer_run(run):
        raise ValueError(f"{run} is not an explorer run (no {X.EXPLORER_FILE})")
    spec, tree = models.snapshot_run(run, files=(X.EXPLORER_FILE,))
    record = spec["files"][X.EXPLORER_FILE]
    path = str(record.get("answerer", ""))
    record["answerer"] = _answerer_ref(path)
    if record["answerer"] != path and "command" in record:  # the command names the answerer as the card does
        record["command"] = record["command"].replace(f"--answerer {path} ", f"--answerer {record['answerer']} ")
    return spec, tree


def zero_observation(meta: dict[str, Any], memory: bool = False) -> dict[str, jax.Array]:
    """Returns a zero observation of one world (leading axis 1) of EXCALIBUR with the budgets and view of the run's
    ``env_args`` (in ``meta["config"]``), with ``MemoryExplorerEnv``'s memory table (shaped as the visible
    objects') when ``memory``. Built from shapes only: no bank of houses is made."""
    from jaxsoc.envs.excalibur import bank as B
    from jaxsoc.envs.excalibur import houses as H
    from jaxsoc.envs.excalibur.env import ExcaliburEnv, ExcaliburParams
    from jaxsoc.learners.ppo import env_kwargs

    fields = set(ExcaliburParams.__dataclass_fields__) - {"houses"}
    args = {k: v for k, v in env_kwargs(meta.get("config", {}).get("env_args", "")).items() if k in fields}
    key = jax.random.key(0)
    houses = jax.eval_shape(lambda k: H.generate_batch(k, B.DEFAULT_CONFIG, 1), key)
    env = ExcaliburEnv("answers")
    obs = jax.eval_shape(lambda k, h: env.reset_env(k, ExcaliburParams(houses=h, **args))[0], key, houses)
    if memory:
        obs = dict(obs, memory=obs["objects"], memory_sizes=obs["object_sizes"])
    return jax.tree_util.tree_map(lambda s: jnp.zeros((1, *s.shape), s.dtype), obs)


def network_template(meta: dict[str, Any]) -> tuple[Any, Any]:
    """Returns ``(model, variables template)`` of an EXCALIBUR policy: the network its checkpoint meta names
    (``registry.from_description``, as ``policy.load_network`` rebuilds it) initialised, in shapes only, on
    ``zero_observation`` (with the memory table for a network reading the object memory)."""
    from jaxsoc.learners.networks import registry

    model = registry.from_description(meta)
    obs = zero_observation(meta, memory=getattr(model.config, "object_memory", False))
    return model, jax.eval_shape(model.init, jax.random.key(0), obs, model.initial_memory(1))


def load_policy_model(card: models.Card, tree: Any) -> tuple[Any, Any, dict]:
    """``ModelKind.load`` of a PPO policy: ``policy.load_network``'s ``(model, variables, meta)`` (what an explorer
    needs; ``learners.policy.load_policy`` of ``model:NAME`` gives it with its env, whose train bank it builds)."""
    model, template = network_template(card.spec["meta"])
    return model, models.fit(template, tree, card), card.spec["meta"]


def memory_explorer_from_model(card: models.Card, tree: Any) -> tuple[Any, Any, dict]:
    """Returns ``explorer.load_explorer``'s ``(model, variables, record)`` of a memory-explorer model (``ValueError``
    when its arrays do not fit the network its card describes)."""
    from jaxsoc.learners.excalibur import explorer as X

    model, template = network_template(card.spec["meta"])
    return model, models.fit(template, tree, card), dict(card.spec["files"][X.EXPLORER_FILE])


def evaluate_explorer_model(
    ref: str,
    answerer: str = DEFAULT_ANSWERER,
    episodes: int = 256,
    seed: int = 0,
    explore_budget: int = 200,
    reenter_budget: int = 50,
    sample: bool = True,
    split: str = "test",
    bank_seed: int = 0,
    house: str = "default",
) -> dict[str, dict[str, float]]:
    """``ModelKind.evaluate`` of an explorer (``memory-explorer`` or ``policy``): ``jaxsoc excalibur eval --agent
    ppo=REF --answerer ANSWERER [--sample]``: the explorer explores, the answerer answers from the memory its
    exploration wrote; ``accuracy_first`` / ``_again`` (phases II and IV) and ``knowledge_first`` / ``_again`` (what
    the symbolic answering makes of the same exploration), with standard errors over episodes."""
    from jaxsoc.envs.excalibur import houses as H
    from jaxsoc.learners.excalibur import answerer as ANS
    from jaxsoc.learners.excalibur.evaluation import evaluate_agents

    args = _eval_args(episodes, seed, explore_budget, reenter_budget, sample, split, bank_seed, house)
    model, variables, _ = ANS.load(answerer, H.preset(house))
    results = evaluate_agents({"explorer": ("ppo", ref)}, args, (model, variables))
    keys = ("accuracy_first", "accuracy_again", "knowledge_first", "knowledge_again")
    return _figures(results["explorer + answerer"], keys=keys)
