"""EXCALIBUR's evaluation of explorers and answerers on a bank of houses: the scripted explorers, learned policies
and explorers over the object memory, each answering symbolically or with the supervised answerer (``jaxsoc
excalibur eval`` and the pretrained models' evaluations call ``evaluate_agents``).

``args`` is any object with the ``jaxsoc excalibur eval`` fields: ``episodes``, ``seed``, ``explore_budget``,
``reenter_budget``, ``sample`` (sampled moves for learned agents), ``split``, ``bank_seed`` and ``house``.
"""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Any

import jax

from jaxsoc import models

#: the family and kind of EXCALIBUR's PPO policy models (``learners.excalibur.family``)
FAMILY, POLICY = "excalibur", "policy"


def run_label(run: str) -> str:
    """Returns the label of a learned agent: ``"memory explorer"`` for an explorer over the object memory, else its
    run's (or model's) env id."""
    from jaxsoc.learners.excalibur.explorer import is_explorer_run
    from jaxsoc.learners.policy import run_meta

    if is_explorer_run(run):
        return "memory explorer"

    return str(run_meta(run).get("env_id", run))


@functools.cache
def excalibur_env():
    """Returns the one ``ExcaliburEnv("answers")`` the commands use: rollouts are compiled per env instance."""
    from jaxsoc.envs.excalibur.env import ExcaliburEnv

    return ExcaliburEnv("answers")


def house_config(args):
    """Returns the ``HouseConfig`` of ``args.house`` (``houses.PRESETS``)."""
    from jaxsoc.envs.excalibur import houses as H

    return H.preset(args.house)


def env_and_params(args):
    """Returns ``(env, params)``: ``excalibur_env()`` on the bank of ``args.split`` / ``args.bank_seed`` /
    ``args.house`` with the ``args`` budgets (checked)."""
    from jaxsoc.envs.excalibur import bank
    from jaxsoc.envs.excalibur.env import ExcaliburParams, check_params

    params = ExcaliburParams(
        houses=bank.cached_bank(args.split, args.bank_seed, house_config(args)),
        explore_budget=args.explore_budget,
        reenter_budget=args.reenter_budget,
    )
    check_params(params)
    return excalibur_env(), params


def evaluate_agents(agents: dict[str, tuple[str, str | None]], args, answerer=None) -> dict[str, dict[str, float]]:
    """Returns ``{label: play.evaluate summary}`` for each agent on the ``args`` bank and budgets. Every learned
    agent's run is read before the first agent plays. With ``answerer = (model, variables)`` every agent answers with
    it (``answerer.AnswererAgent``: the scripted explorer or the learned policy explores, the answerer answers from
    the object memory; labels ``"<label> + answerer"``)."""
    from jaxsoc.envs.excalibur import agents as A
    from jaxsoc.envs.excalibur import play
    from jaxsoc.learners.excalibur import explorer as X
    from jaxsoc.learners.excalibur.answerer import AnswererAgent

    explorers = {label: run for label, (_, run) in agents.items() if run is not None and X.is_explorer_run(run)}
    if explorers and answerer is None:
        raise ValueError(f"{', '.join(explorers.values())}: an explorer over the object memory needs --answerer")
    policies = {
        label: (None, None, *X.load_explorer(run)) if label in explorers else learned_agent(run)
        for label, (_, run) in agents.items()
        if run is not None
    }
    env, params = env_and_params(args)
    results = {}
    for label, (kind, run) in agents.items():
        start = time.perf_counter()
        key = jax.random.key(args.seed)
        if run is None and answerer is not None:
            label = f"{label} + answerer"
            agent = AnswererAgent(explorer=A.make_agent(kind), model=answerer[0], variables=answerer[1])
            summary = play.evaluate(env, params, agent, key, args.episodes)
        elif run is None:
            summary = play.evaluate(env, params, A.make_agent(kind), key, args.episodes)
        elif label in explorers:  # the explorer reads its object memory; the answerer answers from it
            _, _, model, variables, record = policies[label]
            label = f"{label} + answerer"
            agent = X.MemoryPolicyAgent(
                policy=model,
                policy_variables=variables,
                answerer=answerer[0],
                answerer_variables=answerer[1],
                view_size=params.view_size,
                greedy=not args.sample,
            )
            summary = play.evaluate(env, params, agent, key, args.episodes)
        elif answerer is not None:  # the learned policy explores, the answerer answers from its memory
            _, _, model, variables = policies[label]
            label = f"{label} + answerer"
            policy = play.PolicyAgent(
                model=model, variables=variables, view_size=params.view_size, greedy=not args.sample
            )
            agent = AnswererAgent(explorer=policy, model=answerer[0], variables=answerer[1])
            summary = play.evaluate(env, params, agent, key, args.episodes)
        else:
            _, _, model, variables = policies[label]
            summary = play.evaluate_policy(env, params, model, variables, key, args.episodes, greedy=not args.sample)
        results[label] = dict(summary, seconds=time.perf_counter() - start)
        print(
            f"{label}: phase II {summary['accuracy_first']:.3f}, phase IV {summary['accuracy_again']:.3f}", flush=True
        )
    return results


def learned_agent(run: str | Path) -> tuple[Any, Any, Any, Any]:
    """Returns the policy of a learned agent of ``jaxsoc excalibur eval --agent ppo=RUN`` as ``load_policy`` does,
    ``(env, env_params, model, variables)``, with ``None`` for the env and params of ``model:NAME`` (its network
    only: an EXCALIBUR ``policy`` model)."""
    from jaxsoc.learners.policy import load_policy

    if models.ref_name(run) is None:
        return load_policy(run)
    return (None, None, *models.load(run, POLICY, FAMILY)[:2])
