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


@struct.dataclass
class _Stream:
    states: object
    bots: B.BotState
    obs: dict
    episode: jax.Array  # int32[W] index of the episode each world plays (>= total: a spare world)
    length: jax.Array  # int32[W]
    next_episode: jax.Array  # int32[] index the next fresh level gets


def _stream_chunk(env: BabyAIEnvironment, params, key: jax.Array, stream: _Stream, num_steps: int):
    """Plays ``num_steps`` steps of every world; a world whose episode ended starts episode
    ``next_episode + k`` (its level from ``fold_in(key, index)``). Returns the new stream and, per step and
    world, ``(ended, episode, success, length, failed)``."""
    act = jax.vmap(B.bot_act, in_axes=(None, 0, 0, 0))
    step = jax.vmap(env.step_env, in_axes=(None, 0, 0, None))
    init = jax.vmap(B.bot_init, in_axes=(None, 0))
    reset = jax.vmap(lambda i: env.reset_env(jax.random.fold_in(key, i), params))

    def body(s: _Stream, _):
        action, bots = act(params, s.bots, s.states, s.obs)
        failed = bots.failed
        obs, states, reward, terminated, truncated, _ = step(key, s.states, action, params)
        length = s.length + ~failed
        ended = failed | terminated | truncated
        record = (ended, s.episode, ~failed & terminated & (reward > 0), length, failed)
        fresh = s.next_episode + jnp.cumsum(ended) - 1
        new_obs, new_states = reset(fresh)
        new_bots = init(params, new_states)
        pick = lambda a, b: jax.tree_util.tree_map(  # noqa: E731
            lambda x, y: jnp.where(ended.reshape((-1,) + (1,) * (x.ndim - 1)), x, y), a, b
        )
        s = _Stream(
            states=pick(new_states, states),
            bots=pick(new_bots, bots),
            obs=pick(new_obs, obs),
            episode=jnp.where(ended, fresh, s.episode),
            length=jnp.where(ended, 0, length),
            next_episode=s.next_episode + jnp.sum(ended, dtype=jnp.int32),
        )
        return s, record

    return jax.lax.scan(body, stream, None, length=num_steps)


@functools.partial(jax.jit, static_argnums=(0, 3))  # one program: op by op, ~30 s of compilations on a CPU
def _first_levels(env: BabyAIEnvironment, params, key: jax.Array, num_worlds: int):
    """Returns ``(obs, states, bots)`` of the levels ``fold_in(key, i)``, ``i < num_worlds``, bots initialised."""
    obs, states = jax.vmap(lambda i: env.reset_env(jax.random.fold_in(key, i), params))(jnp.arange(num_worlds))
    return obs, states, jax.vmap(B.bot_init, in_axes=(None, 0))(params, states)


def bot_stream(env: BabyAIEnvironment, params, key: jax.Array, num_episodes: int, num_worlds: int, chunk: int = 32):
    """Plays episodes ``0 .. num_episodes - 1`` (episode ``i`` on the level of ``fold_in(key, i)``) with the
    bot in ``num_worlds`` worlds that start the next level as soon as theirs ended, so no world idles.
    Returns numpy ``(success bool[E], length int32[E], failed bool[E], world_steps)``; an episode ends at
    success, truncation (``max_steps``) or when the bot gives up, so the host loop is bounded."""
    import numpy as np

    num_worlds = min(num_worlds, num_episodes)
    obs, states, bots = _first_levels(env, params, key, num_worlds)
    stream = _Stream(
        states=states,
        bots=bots,
        obs=obs,
        episode=jnp.arange(num_worlds, dtype=jnp.int32),
        length=jnp.zeros(num_worlds, jnp.int32),
        next_episode=jnp.int32(num_worlds),
    )
    run = jax.jit(_stream_chunk, static_argnums=(0, 4))
    success = np.zeros(num_episodes, bool)
    length = np.zeros(num_episodes, np.int32)
    failed = np.zeros(num_episodes, bool)
    done = np.zeros(num_episodes, bool)
    world_steps = 0
    while not done.all():
        stream, (ended, episode, won, steps, gave_up) = run(env, params, key, stream, chunk)
        ended, episode = np.asarray(ended), np.asarray(episode)
        mine = ended & (episode < num_episodes)
        index = episode[mine]
        success[index], length[index], failed[index] = (
            np.asarray(won)[mine],
            np.asarray(steps)[mine],
            np.asarray(gave_up)[mine],
        )
        done[index] = True
        world_steps += chunk * num_worlds
    return success, length, failed, world_steps
