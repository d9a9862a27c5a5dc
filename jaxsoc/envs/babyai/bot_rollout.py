"""Episodes played by the BabyAI bot in a batch of worlds: success, lengths and throughput.

``bot_episodes(env, params, states, num_steps)`` plays one episode per world from the given reset states
(generated on the device, or imported from minigrid) for at most ``num_steps`` steps, with one jitted
``lax.scan`` over ``vmap``ped ``bot_act`` + ``step_env``. A world freezes once its episode ended (success,
truncation or the bot giving up), so every world plays exactly one episode.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from flax import struct

from jaxsoc.envs.babyai import bot as B
from jaxsoc.envs.babyai.env import BabyAIEnvironment, observe_babyai
from jaxsoc.envs.gridworld import constants as C


@struct.dataclass
class BotEpisodes:
    """One bot episode per world; ``B`` worlds, ``T`` steps.

    Attributes:
        actions: ``int32[B, T]`` the bot's actions (``done`` after the episode ended).
        success: ``bool[B]`` the instruction was achieved (terminated with a positive reward).
        length: ``int32[B]`` steps taken.
        reward: ``float32[B]`` the episode's reward.
        failed: ``bool[B]`` the bot gave up.
        ended: ``bool[B]`` the episode ended within ``T`` steps.
    """

    actions: jax.Array
    success: jax.Array
    length: jax.Array
    reward: jax.Array
    failed: jax.Array
    ended: jax.Array


@functools.partial(jax.jit, static_argnums=(0, 3))
def bot_episodes(env: BabyAIEnvironment, params, states, num_steps: int) -> BotEpisodes:
    """Returns the ``BotEpisodes`` of one bot episode per world of ``states`` (a batched ``BabyAIState``
    of freshly reset levels), at most ``num_steps`` steps each."""
    observe = jax.vmap(observe_babyai, in_axes=(0, None))
    bots = jax.vmap(B.bot_init, in_axes=(None, 0))(params, states)
    batch = bots.sp.shape[0]
    act = jax.vmap(B.bot_act, in_axes=(None, 0, 0, 0))
    step = jax.vmap(env.step_env, in_axes=(None, 0, 0, None))
    key = jax.random.key(0)  # BabyAI transitions are deterministic

    def body(carry, _):
        states, bots, obs, ended, success, length, reward = carry
        action, new_bots = act(params, bots, states, obs)
        action = jnp.where(ended, C.DONE, action)
        new_obs, new_states, r, terminated, truncated, _ = step(key, states, action, params)
        live = ~ended
        keep = lambda new, old: jax.tree_util.tree_map(  # noqa: E731
            lambda a, b: jnp.where(live.reshape((-1,) + (1,) * (a.ndim - 1)), a, b), new, old
        )
        states, bots, obs = keep(new_states, states), keep(new_bots, bots), keep(new_obs, obs)
        failed_now = live & new_bots.failed
        took_step = live & ~failed_now
        length = length + took_step
        success = success | (took_step & terminated & (r > 0))
        reward = jnp.where(took_step, reward + r, reward)
        ended = ended | (took_step & (terminated | truncated)) | failed_now
        return (states, bots, obs, ended, success, length, reward), jnp.where(took_step, action, C.DONE)

    obs = observe(states, params)
    zeros = jnp.zeros(batch, bool)
    init = (states, bots, obs, zeros, zeros, jnp.zeros(batch, jnp.int32), jnp.zeros(batch, jnp.float32))
    (_, bots, _, ended, success, length, reward), actions = jax.lax.scan(body, init, None, length=num_steps)
    return BotEpisodes(actions.T, success, length, reward, bots.failed, ended)


def generated_states(env: BabyAIEnvironment, params, key: jax.Array, num_worlds: int):
    """Returns ``num_worlds`` freshly generated levels (a batched ``BabyAIState``)."""
    _, states = jax.vmap(env.reset_env, in_axes=(0, None))(jax.random.split(key, num_worlds), params)
    return states
