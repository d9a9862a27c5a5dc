"""Trained policies from run directories: loading the newest checkpoint, and recording episodes as frames.

A run directory written by ``jaxsoc train`` holds ``checkpoints/`` whose ``meta`` names the env, the
``network`` and its ``model_config`` (``networks.registry.describe``); its ``state`` holds ``params`` and
``batch_stats`` at the top level (PPO/A2C runners and behaviour-cloning states alike), which is all a policy
needs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp

from jaxsoc import models
from jaxsoc.core.autoreset import select_rows
from jaxsoc.learners.checkpoint import latest_step, read_meta, restore_raw
from jaxsoc.learners.evaluate import VALIDATION_SEED, episode_keys
from jaxsoc.learners.networks import registry
from jaxsoc.learners.ppo import make_env_from


def run_meta(run_dir: str | Path) -> dict[str, Any]:
    """Returns the checkpoint meta of a policy run directory (its newest checkpoint's) or of ``model:NAME`` (the
    meta its card copied). Raises as ``checkpoint.read_meta`` and ``jaxsoc.models.open_ref``."""
    if models.ref_name(run_dir) is not None:
        return models.info(models.ref_name(run_dir)).spec["meta"]
    return read_meta(Path(run_dir) / "checkpoints")


def snapshot_policy(run_dir: str | Path) -> tuple[dict[str, Any], Any]:
    """Returns ``(spec, parameters)`` of a policy run (``ModelKind.snapshot``): its checkpoint meta, ``run.json``
    and ``explorer.json`` where present, and ``params`` / ``batch_stats``."""
    spec, tree = models.snapshot_run(run_dir, files=("run.json", "explorer.json"))
    if "model_config" not in spec["meta"] or "env_id" not in spec["meta"]:
        raise ValueError(f"{run_dir} holds no policy checkpoint (its meta has no model_config/env_id)")
    return spec, tree


def network_from_model(card: models.Card, tree: Any) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """Returns ``(model, variables, meta)`` of a policy model (``load_network``'s result): the network its card's
    meta names, with the stored variables checked against that network initialised on its env's observation.

    Raises:
        ValueError: an unregistered network, or arrays that do not fit it (named).
    """
    meta = card.spec["meta"]
    model = registry.from_description(meta)
    env, params = make_env_from(meta["env_id"], meta.get("config", {}).get("env_args", ""))
    obs = jax.eval_shape(lambda k: env.reset(k, params)[0], jax.random.key(0))
    obs = jax.tree_util.tree_map(lambda s: jnp.zeros((1, *s.shape), s.dtype), obs)
    template = jax.eval_shape(model.init, jax.random.key(0), obs, model.initial_memory(1))
    return model, models.fit(template, tree, card), meta


def load_network(run_dir: str | Path) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """Returns ``(model, variables, meta)`` of the newest checkpoint in ``run_dir/checkpoints`` (or of
    ``model:NAME``): the registered network its meta names, rebuilt from its config, and its ``params`` (and
    ``batch_stats``).

    Raises:
        FileNotFoundError: no checkpoint.
        ValueError: a checkpoint without a model (not a policy), an unregistered network, or no params.
    """
    if models.ref_name(run_dir) is not None:
        return network_from_model(*models.open_ref(run_dir, kind=None))
    directory = Path(run_dir) / "checkpoints"
    meta = read_meta(directory)
    try:
        model = registry.from_description(meta)
    except ValueError as error:
        raise ValueError(f"{directory}: {error}") from error
    state = restore_raw(directory, latest_step(directory))
    if "params" not in state:
        raise ValueError(f"{directory}: the checkpoint state has no params")
    variables = {"params": jax.tree_util.tree_map(jnp.asarray, state["params"])}
    if state.get("batch_stats"):
        variables["batch_stats"] = jax.tree_util.tree_map(jnp.asarray, state["batch_stats"])
    return model, variables, meta


def load_policy(run_dir: str | Path, env_id: str | None = None) -> tuple[Any, Any, Any, dict[str, Any]]:
    """Returns ``(env, env_params, model, variables)`` of the newest checkpoint in ``run_dir/checkpoints`` (or of
    ``model:NAME``), on ``env_id`` (default the run's env, with the run's ``env_args``); ``model`` is the
    registered network the checkpoint names, rebuilt from its config (``load_network``).

    Raises:
        FileNotFoundError: no checkpoint.
        ValueError: a checkpoint without a model (not a policy), an unregistered network, or an env whose
            actions or observations do not fit the model.
    """
    meta = run_meta(run_dir)
    if "model_config" not in meta or "env_id" not in meta:
        raise ValueError(f"{run_dir} holds no policy checkpoint (its meta has no model_config/env_id)")
    model, variables, meta = load_network(run_dir)
    env_id = env_id or meta["env_id"]
    env_args = meta.get("config", {}).get("env_args", "") if env_id == meta["env_id"] else ""
    env, params = make_env_from(env_id, env_args)
    num_actions = int(env.action_space(params).n)
    if num_actions != model.config.num_actions:
        raise ValueError(f"{env_id}: {num_actions} actions, the policy has {model.config.num_actions}")
    name = registry.name_of(model)
    try:
        registry.build(name, model.config, env.observation_space(params))
    except ValueError as error:
        raise ValueError(f"{env_id}: {error}") from error
    return env, params, model, variables


def record_episodes(env, env_params, model, variables, num_episodes: int, seed: int, greedy: bool = True):
    """Returns ``uint8[T, num_episodes, H, W, 3]``: the rendered frames of the first ``num_episodes``
    evaluation episodes of ``seed`` (the levels of ``evaluate``), each frozen on its last frame once it
    ended; ``T`` is the longest episode's length plus one."""
    keys = episode_keys(seed, num_episodes)
    obs, states = jax.vmap(env.reset_env, in_axes=(0, None))(keys, env_params)
    memory = model.initial_memory(num_episodes)
    render = jax.jit(jax.vmap(env.render, in_axes=(0, None)))
    step = jax.jit(jax.vmap(env.step_env, in_axes=(0, 0, 0, None)))
    context = jax.jit(lambda o: model.apply(variables, o, method="encode_context"))(obs)  # worlds never reset
    policy = jax.jit(lambda o, m: model.apply(variables, o, context, m, train=False, method="step"))
    key = jax.random.key(seed)
    ended = jnp.zeros(num_episodes, bool)
    frames = [render(states, env_params)]
    for t in range(100_000):
        if bool(ended.all()):
            break
        log_probs, _, memory = policy(obs, memory)
        key, key_action = jax.random.split(key)
        action = jnp.argmax(log_probs, -1) if greedy else jax.random.categorical(key_action, log_probs)
        new_obs, new_states, _, terminated, truncated, _ = step(
            jax.random.split(jax.random.fold_in(key, t), num_episodes), states, action, env_params
        )
        obs, states = select_rows(ended, (obs, states), (new_obs, new_states))  # ended worlds stay as they were
        ended = ended | terminated | truncated
        frames.append(render(states, env_params))
    return jnp.stack(frames)


def load_policy_model(card: models.Card, tree: Any) -> tuple[Any, Any, Any, dict[str, Any]]:
    """Returns ``load_policy``'s ``(env, env_params, model, variables)`` for a policy model (``ModelKind.load``)."""
    return load_policy(models.PREFIX + str(card.path))


def evaluate_policy_model(
    ref: str, episodes: int = 256, seed: int = VALIDATION_SEED, env_id: str | None = None
) -> dict[str, dict[str, float]]:
    """Returns ``jaxsoc eval``'s figures of a policy model (``ModelKind.evaluate``): ``success_rate`` (sampled
    actions) and ``greedy_success_rate`` with their binomial standard errors, and ``mean_return``, on
    ``episodes`` levels of ``seed``."""
    from jaxsoc.learners.evaluate import evaluate_sampled_and_greedy

    env, params, model, variables = load_policy(ref, env_id)
    result = evaluate_sampled_and_greedy(env, params, model, variables, episodes, seed=seed)
    n = int(result["episodes"])
    return {
        "success_rate": models.rate(result["success_rate"], n),
        "greedy_success_rate": models.rate(result["greedy_success_rate"], n),
        "mean_return": {"value": float(result["mean_return"]), "episodes": n},
    }
