"""The household as environments: ``HouseholdEnv`` (two agents, JaxMARL dicts keyed ``alice``/``bob``) and
``HelperEnv`` (the single-agent view: the agent is Bob and a built-in Alice policy acts inside ``step``).

A reset draws a task from the bank in ``params.tasks`` (a ``world.State`` with a leading task axis:
``tasks.cached_split("train")`` by default; ``params_for(split)`` gives another set), so a reset is one gather
and auto-resets cost nothing. Episodes follow the original (``envs/unity_environment.py``): both agents share
the reward; ``terminated`` when every predicate of Alice's goal holds (``info["success"]``); ``truncated`` at
``max_steps`` (250). Rewards (``reward``): ``"original"`` gives 2 per satisfied predicate instance (up to its
count) on every step, as the original; ``"progress"`` gives the change of that quantity (it sums to the
final one); ``"paper"`` gives the paper's cumulative reward, 1 on success and -0.004 per step.
"""

from __future__ import annotations

from typing import Any, Protocol

import jax
import jax.numpy as jnp
from flax import struct

from jaxsoc.core import spaces
from jaxsoc.core.env import Environment
from jaxsoc.core.multi_agent import MultiAgentEnvironment
from jaxsoc.envs.household import predicates as PR
from jaxsoc.envs.household import tasks as T
from jaxsoc.envs.household import world as W

REWARDS = ("original", "progress", "paper")


class HouseholdParams(struct.PyTreeNode):
    """``tasks``: the task bank (``world.State`` with a leading task axis); ``max_steps`` (250);
    ``step_length``: metres per walk step (1.0); static: ``teleport`` (walks arrive at once), ``reward``
    (``REWARDS``) and ``goal_for`` (which of Alice, Bob see the goal in their observation)."""

    tasks: W.State
    max_steps: int = 250
    step_length: float = 1.0
    teleport: bool = struct.field(pytree_node=False, default=False)
    reward: str = struct.field(pytree_node=False, default="original")
    goal_for: tuple[bool, bool] = struct.field(pytree_node=False, default=(True, False))


def params_for(split: str = "train", seed: int = 0, **kw: Any) -> HouseholdParams:
    """Returns ``HouseholdParams`` whose bank is task set ``split`` of ``seed`` (``tasks.SPLITS``), other fields
    from ``kw``. Raises ``ValueError`` for an unknown split or reward."""
    params = HouseholdParams(tasks=T.cached_split(split, seed).states, **kw)
    check_params(params)
    return params


def check_params(params: HouseholdParams) -> None:
    """Raises ``ValueError`` for an unknown reward kind or a task bank of the wrong layout."""
    if params.reward not in REWARDS:
        raise ValueError(f"unknown household reward {params.reward!r}; choose from {list(REWARDS)}")
    cls = params.tasks.nodes.cls
    if cls.ndim != 2 or cls.shape[1] != W.NUM_NODES:
        raise ValueError(f"params.tasks must be a bank of tasks (nodes.cls [T, {W.NUM_NODES}]), got {cls.shape}")


def draw_task(key: jax.Array, params: HouseholdParams) -> W.State:
    """Returns a task drawn uniformly from the bank."""
    num = params.tasks.nodes.cls.shape[0]
    index = jax.random.randint(key, (), 0, num)
    return jax.tree_util.tree_map(lambda x: x[index], params.tasks)


def observation_space() -> spaces.Dict:
    """Returns the space of one character's observation (``world.observe``)."""
    n = W.NUM_NODES
    return spaces.Dict(
        {
            "class": spaces.Box(0, 127, (n,), jnp.int16),
            "states": spaces.Box(0, 3, (n,), jnp.uint8),
            "position": spaces.Box(0.0, 100.0, (n, 2), jnp.float32),
            "visible": spaces.Box(0, 1, (n,), jnp.bool_),
            "parent": spaces.Box(-1, n - 1, (n,), jnp.int16),
            "parent_relation": spaces.Box(0, 4, (n,), jnp.int8),
            "relation": spaces.Box(0, 4, (n,), jnp.int8),
            "agent_position": spaces.Box(0.0, 100.0, (2, 2), jnp.float32),
            "agent_room": spaces.Box(0, W.NUM_ROOMS - 1, (2,), jnp.int8),
            "agent_visible": spaces.Box(0, 1, (2,), jnp.bool_),
            "goal": spaces.Box(0, 127, (PR.NUM_PREDICATES,), jnp.int8),
            "goal_target": spaces.Box(-1, n - 1, (PR.NUM_PREDICATES,), jnp.int16),
        }
    )


def advance(key: jax.Array, state: W.State, actions: jax.Array, params: HouseholdParams):
    """Returns ``(state, reward, terminated, truncated, info)`` after both characters' ``actions`` (``int32[2]``)
    and one step of the clock; ``info``: ``success``, ``episode_steps``, ``action_valid`` bool[2], ``conflict``,
    ``satisfied`` int32[30], ``achieved`` (satisfied instances up to the goal counts)."""
    before = W.progress(state)[0] if params.reward == "progress" else None
    state, info = W.transition(key, state, actions, params)
    state = state.replace(step=state.step + 1)
    sat = W.satisfied(state)
    achieved, success = W.progress(state, sat)
    truncated = ~success & (state.step >= params.max_steps)
    if params.reward == "original":
        reward = 2.0 * achieved
    elif params.reward == "progress":
        reward = 2.0 * (achieved - before)
    else:
        reward = success - 0.004
    info = dict(info, success=success, episode_steps=state.step, satisfied=sat, achieved=achieved)
    return state, reward.astype(jnp.float32), success, truncated, info


def _select(pred: jax.Array, on_true, on_false):
    return jax.tree_util.tree_map(lambda a, b: jnp.where(pred, a, b), on_true, on_false)


def _observe_all(state: W.State, params: HouseholdParams) -> dict:
    return {agent: W.observe(state, c, params.goal_for[c]) for c, agent in enumerate(W.AGENTS)}


class HouseholdEnv(MultiAgentEnvironment):
    """Alice and Bob in a household (JaxMARL dicts); see the module docstring. Actions: ``world.NUM_ACTIONS``
    ids (``world.encode_action``); observations: ``world.observe``."""

    agents = W.AGENTS

    def default_params(self) -> HouseholdParams:
        return params_for("train")

    def reset_env(self, key, params):
        state = draw_task(key, params)
        return _observe_all(state, params), state

    def _transition(self, key, state, actions, params):
        joint = jnp.stack([jnp.asarray(actions[a], jnp.int32) for a in self.agents])
        state, reward, terminated, truncated, info = advance(key, state, joint, params)
        done = terminated | truncated
        rewards = {a: reward for a in self.agents}
        dones = {**{a: done for a in self.agents}, "__all__": done}
        return state, rewards, dones, dict(info, terminated=terminated, truncated=truncated)

    def step_env(self, key, state, actions, params):
        state, rewards, dones, info = self._transition(key, state, actions, params)
        return _observe_all(state, params), state, rewards, dones, info

    def _auto_reset_step(self, key, state, actions, params):
        """The base class's auto-reset with the state selected before observing: the observation returned is
        computed once, and ``final_observation`` separately, so a caller that ignores it does not pay for it
        (XLA drops it); the base class observes both the stepped and the fresh state to select between them."""
        key, key_reset = jax.random.split(key)
        stepped, rewards, dones, info = self._transition(key, state, actions, params)
        state = _select(dones["__all__"], draw_task(key_reset, params), stepped)
        info = dict(info, final_observation=_observe_all(stepped, params), final_state=stepped)
        return _observe_all(state, params), state, rewards, dones, info

    def action_space(self, agent: str = "alice", params=None) -> spaces.Discrete:
        return spaces.Discrete(W.NUM_ACTIONS)

    def observation_space(self, agent: str = "alice", params=None) -> spaces.Dict:
        return observation_space()

    def render(self, state, params=None):
        from jaxsoc.envs.household.render import render

        return render(state)


# -- the single-agent helper view ------------------------------------------------------------------------


class AlicePolicy(Protocol):
    """A built-in Alice for ``HelperEnv``: ``init`` returns her memory (any pytree) at the start of an episode;
    ``act`` returns ``(action int32, memory)`` from her observation and the true state (which a policy may
    ignore). Both are pure and jittable."""

    def init(self, key: jax.Array, state: W.State, params: HouseholdParams) -> Any: ...

    def act(self, key: jax.Array, memory: Any, obs: dict, state: W.State, params: HouseholdParams): ...


def random_valid_action(key: jax.Array, state: W.State, char: int) -> jax.Array:
    """Returns a uniformly drawn action (``int32``) among those whose preconditions hold for ``char`` (noop
    counted once)."""
    valid = W.valid_actions(state, char).at[0, 1:].set(False).reshape(-1)
    rank = jax.random.randint(key, (), 0, valid.sum())  # the rank-th valid action: one random number
    return jnp.argmax(jnp.cumsum(valid) > rank).astype(jnp.int32)


class RandomAlice:
    """Alice taking a random valid action every step (the paper's Random agent, here as Alice)."""

    def init(self, key, state, params):
        return jnp.zeros((), jnp.int32)

    def act(self, key, memory, obs, state, params):
        return random_valid_action(key, state, 0), memory


class HelperState(struct.PyTreeNode):
    """``world``: the household; ``alice``: the built-in Alice's memory."""

    world: W.State
    alice: Any


class HelperEnv(Environment):
    """The single-agent view: the agent is Bob; ``alice`` (an ``AlicePolicy``, random by default) acts inside
    ``step`` from her own observation. ``info["alice_action"]`` holds her action. A reset (drawing a task) costs
    about half a step, so ``step`` resets only the worlds whose episode ended (``pooled_resets``)."""

    stochastic_step = True
    pooled_resets = True

    def __init__(self, alice: AlicePolicy | None = None) -> None:
        self.alice = RandomAlice() if alice is None else alice
        super().__init__()

    def default_params(self) -> HouseholdParams:
        return params_for("train")

    def reset_env(self, key, params):
        k_task, k_alice = jax.random.split(key)
        world = draw_task(k_task, params)
        state = HelperState(world=world, alice=self.alice.init(k_alice, world, params))
        return W.observe(world, 1, params.goal_for[1]), state

    def _transition(self, key, state, action, params):
        k_alice, k_step = jax.random.split(key)
        world = state.world
        alice_obs = W.observe(world, 0, params.goal_for[0])
        alice_action, memory = self.alice.act(k_alice, state.alice, alice_obs, world, params)
        joint = jnp.stack([alice_action, jnp.asarray(action, jnp.int32)])
        world, reward, terminated, truncated, info = advance(k_step, world, joint, params)
        info = dict(info, alice_action=alice_action)
        return HelperState(world=world, alice=memory), reward, terminated, truncated, info

    def step_env(self, key, state, action, params):
        state, reward, terminated, truncated, info = self._transition(key, state, action, params)
        return W.observe(state.world, 1, params.goal_for[1]), state, reward, terminated, truncated, info

    def _auto_reset_step(self, key, state, action, params):
        """As ``HouseholdEnv._auto_reset_step``: the state is selected first and observed once."""
        key, key_reset = jax.random.split(key)
        stepped, reward, terminated, truncated, info = self._transition(key, state, action, params)
        state = self._reset_state_where(terminated | truncated, key_reset, params, stepped)
        info = dict(info, final_observation=W.observe(stepped.world, 1, params.goal_for[1]), final_state=stepped)
        return W.observe(state.world, 1, params.goal_for[1]), state, reward, terminated, truncated, info

    def action_space(self, params=None) -> spaces.Discrete:
        return spaces.Discrete(W.NUM_ACTIONS)

    def observation_space(self, params=None) -> spaces.Dict:
        return observation_space()

    def render(self, state, params=None):
        from jaxsoc.envs.household.render import render

        return render(state.world)
