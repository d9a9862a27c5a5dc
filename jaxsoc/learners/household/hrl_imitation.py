"""The HRL low level's warm start: DAgger on a subgoal teacher (``subgoal_teachers.TEACHERS``) before A2C.

``imitate`` runs ``HRLConfig.imitation_frames`` frames of it on the "put" phase's worlds: each update
(``imitation_update``) steps every world ``IMITATION_STEPS`` frames with the teacher's action with probability
``beta`` (falling linearly from 1 to 0 over the first three quarters of the updates), else the policy's, labels
every frame with the teacher's action, and takes Adam steps on the cross-entropy of the labels.
"""

from __future__ import annotations

import functools
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from tqdm.auto import tqdm

from jaxsoc.envs.household import world as W
from jaxsoc.envs.household.subgoal_env import SubgoalEnv
from jaxsoc.envs.household.subgoal_teachers import TEACHERS
from jaxsoc.learners.household.hrl_config import HRLConfig
from jaxsoc.learners.networks import registry

IMITATION_STEPS = 20  # frames per world of one update


@functools.partial(jax.jit, static_argnames=("policy", "tx", "num_steps", "epochs", "teacher"))
def imitation_update(
    policy, tx, params, opt_state, carry, beta, env_params, num_steps: int, epochs: int, teacher: str = "planner"
):
    """One DAgger update: ``num_steps`` frames in every world (actions: the teacher's with probability ``beta``,
    else sampled from the policy), labelled by ``TEACHERS[teacher]``, then ``epochs`` Adam steps on the
    cross-entropy of the labels (BPTT over the frames). ``carry``: ``(obs, states, memory, done, key)`` of the
    worlds. Returns ``(params, opt_state, carry, metrics)``: ``loss`` (mean cross-entropy before the first
    step), ``accuracy`` (the policy's mode equal to the label, before it), ``episodes`` ended and their
    ``successes``."""
    env = SubgoalEnv()
    step = jax.vmap(env.step, in_axes=(0, 0, 0, None))
    obs, states, memory, done, key = carry
    start_memory = registry.reset_memory(memory, 1.0 - done.astype(jnp.float32))

    def act(c, k):
        obs, states, memory, done = c
        k_act, k_mix, k_step = jax.random.split(k, 3)
        mask = 1.0 - done.astype(jnp.float32)
        memory = registry.reset_memory(memory, mask)
        log_probs, _, memory = policy.apply({"params": params}, obs, (), memory, method="step")
        label = jax.vmap(TEACHERS[teacher])(states)
        own = jax.random.categorical(k_act, log_probs).astype(jnp.int32)
        action = jnp.where(jax.random.uniform(k_mix, label.shape) < beta, label, own)
        new_obs, states, _, terminated, truncated, info = step(
            jax.random.split(k_step, label.shape[0]), states, action, env_params
        )
        ended = terminated | truncated
        return (new_obs, states, memory, ended), (obs, mask, label, ended, info["success"])

    key, k_run = jax.random.split(key)
    (obs, states, memory, done), (seq_obs, masks, labels, ended, success) = jax.lax.scan(
        act, (obs, states, memory, done), jax.random.split(k_run, num_steps)
    )
    # a label counts when the policy can take it (a valid action on a visible target, or the destination)
    node = labels % W.NUM_NODES
    seen = jnp.take_along_axis(seq_obs["visible"], node[..., None], -1)[..., 0] | (node == 0)
    seen = seen | ((node == seq_obs["subgoal_target"]) & policy.config.belief)
    usable = (jnp.take_along_axis(seq_obs["valid"], labels[..., None], -1)[..., 0] & seen).astype(jnp.float32)

    def loss_fn(p):
        def body(m, x):
            o, mask, label = x
            log_probs, _, m = policy.apply({"params": p}, o, (), registry.reset_memory(m, mask), method="step")
            picked = jnp.take_along_axis(log_probs, label[:, None], -1)[:, 0]
            return m, (picked, jnp.argmax(log_probs, -1) == label)

        _, (picked, right) = jax.lax.scan(body, start_memory, (seq_obs, masks, labels))
        weight = usable / jnp.maximum(usable.sum(), 1.0)
        return -(picked * weight).sum(), (right * weight).sum()

    def epoch(carry, _):
        params, opt_state = carry
        (loss, accuracy), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), (loss, accuracy)

    (params, opt_state), (loss, accuracy) = jax.lax.scan(epoch, (params, opt_state), None, length=epochs)
    metrics = {"loss": loss[0], "accuracy": accuracy[0], "episodes": ended.sum(), "successes": (ended & success).sum()}
    return params, opt_state, (obs, states, memory, done, key), metrics


def imitation_optimizer(config: HRLConfig) -> optax.GradientTransformation:
    """Returns the warm start's optimizer: Adam at ``config.imitation_lr`` after clipping the global norm to 1."""
    return optax.chain(optax.clip_by_global_norm(1.0), optax.adam(config.imitation_lr))


def imitate(
    config: HRLConfig, params: Any, key: jax.Array, model: nn.Module, progress: bool = False
) -> tuple[Any, list[dict]]:
    """Returns ``(params, rows)``: ``params`` after ``config.imitation_frames`` frames of DAgger (on
    ``config.teacher``'s labels) on the "put"
    phase's worlds (``imitation_update``; ``num_envs`` worlds, ``IMITATION_STEPS`` frames per update, ``beta``
    falling linearly from 1 to 0 over the first three quarters of the updates), and
    one row per update (``update``, ``frames``, ``beta``, ``loss``, ``accuracy``, ``episodes``,
    ``success_rate`` of the episodes that ended)."""
    env_params = config.params("put")
    frames = config.num_envs * IMITATION_STEPS
    updates = max(1, config.imitation_frames // frames)
    tx = imitation_optimizer(config)
    opt_state = tx.init(params)
    k_reset, key = jax.random.split(key)
    obs, states = jax.vmap(SubgoalEnv().reset, in_axes=(0, None))(
        jax.random.split(k_reset, config.num_envs), env_params
    )
    carry = (obs, states, model.initial_memory(config.num_envs), jnp.zeros(config.num_envs, bool), key)
    rows = []
    for u in tqdm(range(updates), unit="upd", desc="hrl imitation", disable=not progress):
        beta = max(0.0, 1.0 - u / max(1.0, updates * 0.75))
        params, opt_state, carry, m = imitation_update(
            model,
            tx,
            params,
            opt_state,
            carry,
            jnp.float32(beta),
            env_params,
            IMITATION_STEPS,
            config.imitation_epochs,
            config.teacher,
        )
        m = {k: np.asarray(v).item() for k, v in jax.device_get(m).items()}
        rate = m["successes"] / m["episodes"] if m["episodes"] else float("nan")
        rows.append({"update": u + 1, "frames": (u + 1) * frames, "beta": beta, **m, "success_rate": rate})
    return params, rows
