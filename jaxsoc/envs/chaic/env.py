"""CHAIC as environments: ``ChaicEnv`` (two agents, JaxMARL dicts keyed ``main``/``helper``) and
``ChaicHelperEnv`` (the single-agent helper view: the rule-based constrained agent acts inside ``step``).

A reset draws an episode from the task bank in ``params.tasks`` (a ``state.State`` with a leading episode axis,
``tasks.cached_split(task, "train")`` by default), so an auto-reset is one gather.

**Time.** ``ChaicEnv.step`` is one event of the asynchronous world (``world.step_event``): the agents whose
previous action has finished start the action given; the clock runs until any action finishes. An agent still
busy ignores its action (its observation's ``status`` is ``ONGOING``, 0). ``ChaicHelperEnv.step`` runs up to
``events_per_step`` events until the helper's action has finished, the constrained agent acting whenever it is
ready; if the helper is still busy after them, the step returns and its next action is ignored (status 0).

**Rewards**: both agents share ``transported`` progress: the change of the transport rate (it sums to the
episode's transport rate). The helper view adds ``params.shaping`` times the change of ``helper_potential`` (0 by
default; ``jaxsoc.make("CHAIC-All-Helper-v0", shaping=1.0)``). ``terminated`` when every target is on the goal
place (``info["success"]``); ``truncated`` at ``max_frames`` (3,000 frames; 1,500 for furniture). ``info`` has
``transport_rate``, ``frame`` and ``episode_steps`` (events or helper steps).
"""

from __future__ import annotations

from typing import Any, Protocol

import jax
import jax.numpy as jnp
from flax import struct

from jaxsoc.core import spaces
from jaxsoc.core.env import Environment, _select_tree
from jaxsoc.core.multi_agent import MultiAgentEnvironment
from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.envs.chaic import observation as O
from jaxsoc.envs.chaic import state as S
from jaxsoc.envs.chaic import world as W
from jaxsoc.envs.chaic.family import FAMILY


class ChaicParams(struct.PyTreeNode):
    """``tasks``: the task bank (``state.State`` with a leading episode axis); ``timing``: ``world.Timing``;
    ``shaping``: the helper view's reward shaping weight (0: none; ``helper_potential``); static: ``sees_goal``
    (which of main, helper see the goal counts), ``rays`` (0: no ray-cast image; else the number of depth/semantic
    rays in the observation), ``events_per_step`` (the helper view's events per step)."""

    tasks: S.State
    timing: W.Timing = W.Timing()
    shaping: float = 0.0
    sees_goal: tuple[bool, bool] = struct.field(pytree_node=False, default=(True, False))
    rays: int = struct.field(pytree_node=False, default=0)
    events_per_step: int = struct.field(pytree_node=False, default=8)


#: the pseudo-task whose bank holds every task's episodes (``CHAIC-All-Helper-v0``: one helper for the 8 tasks)
ALL = "all"


def params_for(task: str = "normal", split: str = "train", seed: int = 0, **kw: Any) -> ChaicParams:
    """Returns ``ChaicParams`` whose bank is ``split`` of ``task`` (``catalogue.TASKS``, ``tasks.SPLITS``), or of
    every task one after another for ``task="all"`` (``ALL``). Raises ``ValueError`` for an unknown task or split."""
    from jaxsoc.envs.chaic import tasks as T

    names = K.TASKS if task == ALL else (task,)
    banks = [T.cached_split(name, split, seed).states for name in names]
    bank = banks[0] if len(banks) == 1 else jax.tree_util.tree_map(lambda *x: jnp.concatenate(x), *banks)
    params = ChaicParams(tasks=bank, **kw)
    check_params(params)
    return params


def check_params(params: ChaicParams) -> None:
    """Raises ``ValueError`` for a task bank of the wrong layout or bad static fields."""
    cls = params.tasks.objects.cls
    if cls.ndim != 2 or cls.shape[1] != S.MAX_OBJECTS:
        raise ValueError(f"params.tasks must be a bank of episodes (objects.cls [T, {S.MAX_OBJECTS}]), got {cls.shape}")
    if params.rays < 0 or params.events_per_step < 1:
        raise ValueError(f"rays must be >= 0 and events_per_step >= 1, got {params.rays}, {params.events_per_step}")


def draw_task(key: jax.Array, params: ChaicParams) -> S.State:
    """Returns an episode drawn uniformly from the bank."""
    num = params.tasks.objects.cls.shape[0]
    index = jax.random.randint(key, (), 0, num)
    return jax.tree_util.tree_map(lambda x: x[index], params.tasks)


def _observe(state: S.State, agent: int, params: ChaicParams) -> dict:
    return O.observe(state, agent, params.sees_goal[agent], params.timing.view_dist, params.rays)


def _outcome(before: S.State, after: S.State):
    reward = (W.transport_rate(after) - W.transport_rate(before)).astype(jnp.float32)
    success = W.success(after)
    truncated = ~success & (after.frame >= after.max_frames)
    return reward, success, truncated


def helper_potential(state: S.State) -> jax.Array:
    """Returns ``float32``: the helper's shaping potential (the paper's RL reward combined "transported objects and
    distance to the nearest target object"; jaxsoc makes it a potential, so the shaping telescopes over an episode and
    does not change which policy is best): half its share of the transport rate for each goal object the helper
    carries (directly or in a held container), minus 0.01 per metre from the helper to the nearest goal object nobody
    carries (to the goal place once it carries one), straight-line distances capped at 20 m. It reads the true goal:
    a training signal only, never part of the observation."""
    obj = state.objects
    goal = (state.goal_count[obj.cls.astype(jnp.int32)] > 0) & (obj.cls > 0) & ~obj.delivered
    carrier = W.object_carrier(state)
    weight = jnp.where(state.task == K.TASK["furniture"], obj.mass, 1.0)  # as world.transported counts
    carried = jnp.where(goal & (carrier == S.HELPER), weight, 0.0).sum()
    me = state.agents.pos[S.HELPER]
    free = goal & (carrier < 0)
    d_object = jnp.where(free, jnp.linalg.norm(W.object_positions(state) - me, axis=-1), 20.0).min()
    d_goal = jnp.linalg.norm(state.scene.goal_pos - me)
    distance = jnp.minimum(jnp.where(carried > 0, d_goal, d_object), 20.0)
    return (0.5 * carried / jnp.maximum(state.total, 1.0) - 0.01 * distance).astype(jnp.float32)


class ChaicEnv(MultiAgentEnvironment):
    """The constrained agent and the helper (JaxMARL dicts); see the module docstring."""

    agents = S.AGENTS

    def __init__(self, task: str = "normal") -> None:
        self.task = FAMILY.check_task(task)
        super().__init__()

    @property
    def name(self) -> str:
        return f"ChaicEnv({self.task})"

    def default_params(self) -> ChaicParams:
        return params_for(self.task)

    def reset_env(self, key, params):
        state = draw_task(key, params)
        return {a: _observe(state, i, params) for i, a in enumerate(self.agents)}, state

    def _transition(self, key, state, actions, params):
        joint = jnp.stack([jnp.asarray(actions[a], jnp.int32) for a in self.agents])
        stepped, info = W.step_event(key, state, joint, params.timing)
        reward, success, truncated = _outcome(state, stepped)
        done = success | truncated
        info = dict(
            info,
            success=success,
            terminated=success,
            truncated=truncated,
            transport_rate=W.transport_rate(stepped),
            frame=stepped.frame,
            episode_steps=stepped.frame,
        )
        return stepped, {a: reward for a in self.agents}, {**{a: done for a in self.agents}, "__all__": done}, info

    def step_env(self, key, state, actions, params):
        state, rewards, dones, info = self._transition(key, state, actions, params)
        return {a: _observe(state, i, params) for i, a in enumerate(self.agents)}, state, rewards, dones, info

    def _auto_reset_step(self, key, state, actions, params):
        """The base class's auto-reset with the state selected before observing (each observation computed once)."""
        key, key_reset = jax.random.split(key)
        stepped, rewards, dones, info = self._transition(key, state, actions, params)
        state = _select_tree(dones["__all__"], draw_task(key_reset, params), stepped)
        final = {a: _observe(stepped, i, params) for i, a in enumerate(self.agents)}
        info = dict(info, final_observation=final, final_state=stepped)
        return {a: _observe(state, i, params) for i, a in enumerate(self.agents)}, state, rewards, dones, info

    def action_space(self, agent: str = "main", params=None) -> spaces.Discrete:
        return spaces.Discrete(S.NUM_ACTIONS)

    def observation_space(self, agent: str = "main", params=None) -> spaces.Dict:
        return O.observation_space(params.rays if params is not None else 0)

    def render(self, state, params=None):
        from jaxsoc.envs.chaic.render import render

        return render(state)


# -- the single-agent helper view ------------------------------------------------------------------------


class MainPolicy(Protocol):
    """The built-in constrained agent of ``ChaicHelperEnv``: ``init(key, state, agent)`` returns its memory;
    ``act(key, memory, state, timing)`` returns ``(action int32, memory)``. Pure and jittable."""

    def init(self, key: jax.Array, state: S.State, agent: int) -> Any: ...

    def act(self, key: jax.Array, memory: Any, state: S.State, timing: W.Timing): ...


class HelperState(struct.PyTreeNode):
    """``world``: the CHAIC world; ``main``: the built-in constrained agent's memory; ``steps``: helper steps."""

    world: S.State
    main: Any
    steps: jax.Array


def episode_frames(params: ChaicParams) -> int:
    """Returns the largest ``max_frames`` of ``params``' task bank (host side): an episode's frame limit."""
    return int(jnp.max(params.tasks.max_frames))


class ChaicHelperEnv(Environment):
    """The helper's view: the rule-based constrained agent (``agents.RuleAgent("main")`` unless ``main`` is
    given) acts inside ``step``; see the module docstring. ``info["main_action"]`` holds its last action.
    ``task="all"`` draws each episode from the 8 tasks' banks together (the task is part of the episode)."""

    stochastic_step = True

    def __init__(self, task: str = "normal", main: MainPolicy | None = None) -> None:
        self.task = FAMILY.check_task(task, allow_all=True)
        if main is None:
            from jaxsoc.envs.chaic.agents import make_agent

            main = make_agent("main")
        self.main = main
        super().__init__()

    @property
    def name(self) -> str:
        return f"ChaicHelperEnv({self.task})"

    def default_params(self) -> ChaicParams:
        return params_for(self.task)

    def max_episode_steps(self, params: ChaicParams | None = None) -> int:
        """Returns the task bank's largest ``max_frames`` (3,000; 1,500 for furniture): a step advances the clock
        by at least one frame."""
        return episode_frames(self.default_params() if params is None else params)

    def reset_env(self, key, params):
        k_task, k_main = jax.random.split(key)
        world = draw_task(k_task, params)
        state = HelperState(world=world, main=self.main.init(k_main, world, S.MAIN), steps=jnp.int32(0))
        return _observe(world, S.HELPER, params), state

    def _transition(self, key, state, action, params):
        action = jnp.asarray(action, jnp.int32)

        def event(carry, k):
            world, memory, started, main_action = carry
            k_main, k_step = jax.random.split(k)
            over = W.success(world) | (world.frame >= world.max_frames)
            finished = started & W.ready(world)[S.HELPER]
            live = ~over & ~finished
            main_ready = W.ready(world)[S.MAIN]
            act, new_memory = self.main.act(k_main, memory, world, params.timing)
            stepped, _ = W.step_event(k_step, world, jnp.stack([act, action]), params.timing)
            world = _select_tree(live, stepped, world)
            memory = _select_tree(live & main_ready, new_memory, memory)
            main_action = jnp.where(live & main_ready, act, main_action)
            return (world, memory, started | live, main_action), None

        carry = (state.world, state.main, jnp.bool_(False), jnp.int32(S.WAIT))
        keys = jax.random.split(key, params.events_per_step)
        (world, memory, _, main_action), _ = jax.lax.scan(event, carry, keys)
        reward, success, truncated = _outcome(state.world, world)
        reward = reward + params.shaping * (helper_potential(world) - helper_potential(state.world))
        steps = state.steps + 1
        info = {
            "success": success,
            "transport_rate": W.transport_rate(world),
            "frame": world.frame,
            "episode_steps": steps,
            "main_action": main_action,
        }
        return HelperState(world=world, main=memory, steps=steps), reward, success, truncated, info

    def step_env(self, key, state, action, params):
        """Returns ``(obs, state, reward, terminated, truncated, info)`` of one helper step (module docstring). The
        base class's auto-reset selects a reset's observation and state where the episode ended: the program
        observes twice (the step's world, the reset's), as selecting the state first and observing it would."""
        state, reward, terminated, truncated, info = self._transition(key, state, action, params)
        return _observe(state.world, S.HELPER, params), state, reward, terminated, truncated, info

    def action_space(self, params=None) -> spaces.Discrete:
        return spaces.Discrete(S.NUM_ACTIONS)

    def observation_space(self, params=None) -> spaces.Dict:
        return O.observation_space(params.rays if params is not None else 0)

    def render(self, state, params=None):
        from jaxsoc.envs.chaic.render import render

        return render(state.world)
