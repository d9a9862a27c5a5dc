"""Cloning an expert's choices into a recurrent policy: the loss and the rollouts that collect the expert's choices
through an environment whose state carries them (the household Hybrid's warm start on HP_TG's subgoals, CHAIC's
options helper's on the RHP rules' options): following the expert (``expert_rollout``), or following the policy
being trained while the expert labels its states (``policy_rollout``, DAgger)."""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxsoc.core.autoreset import batched_step
from jaxsoc.core.env import Environment
from jaxsoc.learners.networks import registry


def bc_loss(model: nn.Module, params: Any, obs: dict, mask: jax.Array, expert: jax.Array):
    """Returns ``(loss, metrics)``: the cross-entropy of ``expert`` (int32[T, N], the expert's choices) under
    the recurrent policy ``model`` (a network with ``encode_context``, ``step`` and ``initial_memory``) with
    ``params`` on the frame sequences ``obs`` (arrays ``[T, N, ...]``; ``mask`` float32[T, N] is 0 where a frame
    starts a new episode, which resets the memory, zeros at ``t = 0``). ``metrics``: scalars ``loss``,
    ``accuracy`` (argmax equals the expert's choice), ``expert_prob`` (the mean probability of the expert's
    choice), ``entropy`` (of the masked distribution)."""
    steps, num = expert.shape
    flat = jax.tree_util.tree_map(lambda x: x.reshape((steps * num,) + x.shape[2:]), obs)
    context = model.apply({"params": params}, flat, method="encode_context")
    context = jax.tree_util.tree_map(lambda x: x.reshape((steps, num) + x.shape[1:]), context)

    def step(memory, x):
        o, m, e, c = x
        log_probs, _, memory = model.apply(
            {"params": params}, o, c, registry.reset_memory(memory, m), True, method="step"
        )
        chosen = jnp.take_along_axis(log_probs, e[:, None], axis=-1)[:, 0]
        entropy = -jnp.sum(jnp.exp(log_probs) * log_probs, -1)
        return memory, (chosen, jnp.argmax(log_probs, -1) == e, entropy)

    _, (chosen, right, entropy) = jax.lax.scan(step, model.initial_memory(num), (obs, mask, expert, context))
    loss = -chosen.mean()
    metrics = {
        "loss": loss,
        "accuracy": right.mean(),
        "expert_prob": jnp.exp(chosen).mean(),
        "entropy": entropy.mean(),
    }
    return loss, metrics


def expert_rollout(env: Environment, params: Any, key: jax.Array, carry: tuple, num_steps: int, label=None):
    """Returns ``(carry, (obs, mask, expert))``: ``num_steps`` steps of a batch of worlds of ``env`` following
    the expert's choices, the state's ``expert`` field (HP_TG's subgoals in the household's ``HybridState``, the
    RHP rules' options in CHAIC's ``OptionsState``), from ``carry = (obs, states, done)`` (``done`` bool[N]: the
    last frame ended the episode); ``obs`` arrays ``[T, N, ...]`` the observations the choices were made on,
    ``mask`` float32[T, N] ``1 - done`` of the previous frame, ``expert`` int32[T, N]. ``label``: a function of
    the batched states returning int32[N], the choices to follow instead of ``states.expert``."""
    env_step = batched_step(env)

    def body(carry, k):
        obs, states, done = carry
        expert = states.expert if label is None else label(states)
        new_obs, states, _, terminated, truncated, _ = env_step(k, states, expert, params)
        return (new_obs, states, terminated | truncated), (obs, 1.0 - done.astype(jnp.float32), expert)

    return jax.lax.scan(body, carry, jax.random.split(key, num_steps))


def policy_rollout(
    env: Environment,
    env_params: Any,
    model: nn.Module,
    params: Any,
    key: jax.Array,
    carry: tuple,
    num_steps: int,
    label=None,
):
    """Returns ``(carry, (obs, mask, expert, reward))``: ``num_steps`` steps of a batch of worlds of ``env`` following
    the policy ``model`` with ``params`` (sampled choices; its memory reset where an episode starts) while the
    expert's choices label every state (DAgger: ``states.expert``, or ``label(states)`` int32[N]), from ``carry =
    (obs, states, done, memory)`` (``done`` bool[N]: the last frame ended the episode; ``memory`` the policy's);
    ``obs``, ``mask`` and ``expert`` as ``expert_rollout``'s, ``reward`` float32[T, N] the env's rewards of the
    policy's choices."""
    env_step = batched_step(env)

    def body(carry, k):
        obs, states, done, memory = carry
        k_act, k_env = jax.random.split(k)
        expert = states.expert if label is None else label(states)
        mask = 1.0 - done.astype(jnp.float32)
        log_probs, _, memory = model.apply({"params": params}, obs, registry.reset_memory(memory, mask), False)
        action = jax.random.categorical(k_act, log_probs)
        new_obs, states, reward, terminated, truncated, _ = env_step(k_env, states, action, env_params)
        return (new_obs, states, terminated | truncated, memory), (obs, mask, expert, reward)

    return jax.lax.scan(body, carry, jax.random.split(key, num_steps))
