"""Watch-And-Help's agents: the human-like Alice, the planning helpers, the oracles and the random helper.

``PlanningAgent`` is the original's ``MCTS_agent`` for one character: each step it updates its belief from what
it sees (``belief.update``), samples a world from it (``belief.sample_world``), lists its subgoals towards its
goal, searches them (``planner.search``), and takes the first action of the regression planner's plan, closing
a container it opened before walking away once nothing more is needed from it (the original's ``last_opened``
heuristic). Configurations (``make_agent``):

- ``alice``: character 0 with the true goal (Alice, the paper's human-like agent);
- ``hp``: character 1 with the true goal, leaving Alice's current subgoal object to her unless nothing else
  remains (the paper's HP_TG; ``recursive`` in the original);
- ``hprg``: character 1 with a random goal: 6 of the 28 ON / INSIDE predicates, each with a count in {0, 1, 2}
  (``test_hp_random_goal.py``), on this apartment's targets;
- ``oracle-b``: ``hp`` knowing where everything is (its belief is the truth);
- ``alice-oracle``: Alice knowing where everything is (with ``oracle-b``: the paper's Oracle_A,B);
- ``random``: a random valid action every step.

Every agent is a pair of pure functions, ``init(key, state) -> memory`` and ``act(key, memory, state, partner)
-> (action, memory)``, where ``partner`` is the other agent's memory (or None); ``AgentMemory.subgoal_obj`` is
the object of the agent's current subgoal (-1 if none). ``helper_act(params, helper_state, state, obs)`` is the
interface the learned helpers of the next issues implement (see ``HelperPolicy``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsoc.envs.household import classes as C
from jaxsoc.envs.household import env as E
from jaxsoc.envs.household import predicates as PR
from jaxsoc.envs.household import world as W
from jaxsoc.envs.household.agents import belief as B
from jaxsoc.envs.household.agents import planner as P

KINDS = ("alice", "alice-oracle", "hp", "hprg", "oracle-b", "random")
_RANDOM_GOAL_PREDICATES = np.flatnonzero(np.isin(PR.PRED_KIND, (PR.ON_KIND, PR.INSIDE_KIND)))  # the 28


class AgentMemory(struct.PyTreeNode):
    """An agent's memory: its ``belief``, its goal (``goal_count`` int8[30], ``goal_target`` int16[30]), the
    container it last opened (``last_opened``, -1), and its current subgoal (``subgoal_obj``, ``subgoal_pred``;
    -1 when it has none)."""

    belief: B.Belief
    goal_count: jax.Array
    goal_target: jax.Array
    last_opened: jax.Array
    subgoal_obj: jax.Array
    subgoal_pred: jax.Array


def random_goal(key: jax.Array, state: W.State) -> tuple[jax.Array, jax.Array]:
    """Returns ``(count int8[30], target int16[30])``: 6 of the 28 ON / INSIDE predicates drawn without
    replacement, each with a count uniform in {0, 1, 2}, on this apartment's targets (``goal_targets``: the first
    kitchen table, not the one Alice's goal names; the fridge; the dishwasher, if any; the coffee table). A
    predicate whose target furniture the apartment lacks gets count 0."""
    k_pick, k_count = jax.random.split(key)
    picked = jax.random.permutation(k_pick, jnp.asarray(_RANDOM_GOAL_PREDICATES))[:6]
    counts = jax.random.randint(k_count, (6,), 0, 3)
    return goal_targets(state, jnp.zeros(PR.NUM_PREDICATES, jnp.int32).at[picked].set(counts))


def goal_targets(state: W.State, count: jax.Array, table: jax.Array | int = -1) -> tuple[jax.Array, jax.Array]:
    """Returns ``(count int8[30], target int16[30])``: goal counts ``count`` (int[30], e.g. a random or an inferred
    goal) placed in ``state``'s apartment: each predicate's target is the first furniture of its target class
    (for the kitchen-table predicates the kitchen's table: the kitchen comes before the living room, where some
    apartments have a second), except that the kitchen-table predicates use ``table`` (a kitchen-table node the
    caller knows its goal names, e.g. from a goal it already holds; -1: none). ``state``'s own goal is not read,
    so a helper given an inferred goal does not learn which table Alice's true goal names. A predicate whose
    target furniture the apartment lacks gets count 0; holds_book (no target) keeps its count."""
    count = jnp.asarray(count, jnp.int32)
    table = jnp.asarray(table, jnp.int32)
    cls = state.nodes.cls
    furniture = jnp.asarray(W.NODE_KIND == 2)

    def first(target_class):
        hits = furniture & (cls == target_class)
        return jnp.where(hits.any(), jnp.argmax(hits), -1)

    by_class = jnp.stack([first(c) for c in PR.PRED_TARGET_CLASS])
    on_table = jnp.asarray(np.equal(PR.PRED_TARGET_CLASS, C.CLASS["kitchentable"]))  # the kitchen-table predicates
    target = jnp.where(on_table & (table >= 0), table, by_class)
    needs_target = jnp.asarray(PR.PRED_KIND != PR.HOLDS_KIND)
    count = jnp.where((target >= 0) | ~needs_target, count, 0)
    return count.astype(jnp.int8), jnp.where((count > 0) & needs_target, target, -1).astype(jnp.int16)


@dataclasses.dataclass(frozen=True)
class PlanningAgent:
    """A belief + MCTS + regression-planning agent (see the module docstring). ``char``: 0 Alice, 1 Bob;
    ``goal``: "true" or "random"; ``omniscient``: its belief is the true world; ``avoid_partner``: leave the
    partner's current subgoal object alone; ``num_simulations``: the tree search's simulations."""

    char: int = 0
    goal: str = "true"
    omniscient: bool = False
    avoid_partner: bool = False
    num_simulations: int = P.NUM_SIMULATIONS

    def init(self, key: jax.Array, state: W.State) -> AgentMemory:
        """Returns the agent's memory at the start of an episode in ``state``."""
        if self.goal == "random":
            count, target = random_goal(key, state)
        else:
            count, target = state.goal_count, state.goal_target
        belief = B.full_knowledge(state) if self.omniscient else B.init(state)
        return AgentMemory(
            belief=belief,
            goal_count=count.astype(jnp.int8),
            goal_target=target.astype(jnp.int16),
            last_opened=jnp.int32(-1),
            subgoal_obj=jnp.int32(-1),
            subgoal_pred=jnp.int32(-1),
        )

    def act(self, key: jax.Array, memory: AgentMemory, state: W.State, partner: AgentMemory | None = None):
        """Returns ``(action int32, memory)`` for this step in the true ``state``."""
        k_sample, k_search = jax.random.split(key)
        char = self.char
        if self.omniscient:
            belief, world = memory.belief, state
        else:
            belief = B.update(memory.belief, state, char)
            belief, world = B.sample_world(k_sample, belief, state, char)
        world = world.replace(goal_count=memory.goal_count, goal_target=memory.goal_target)
        seen = W.view(state, char).visible
        exclude = partner.subgoal_obj if (self.avoid_partner and partner is not None) else -1
        goals = P.subgoals(world, char, seen | self.omniscient, exclude)
        choice, _ = P.search(k_search, world, char, goals, self.num_simulations)
        action = P.subgoal_action(world, char, goals, choice, seen)  # walks go to what it actually sees
        action, last_opened = _closing(world, state, char, goals, action, memory.last_opened)
        c = jnp.maximum(choice, 0)
        memory = memory.replace(
            belief=belief,
            last_opened=last_opened,
            subgoal_obj=jnp.where(choice >= 0, goals.obj[c], -1),
            subgoal_pred=jnp.where(choice >= 0, goals.pred[c], -1),
        )
        return action.astype(jnp.int32), memory


def _closing(world, state, char, goals, action, last_opened):
    """Returns ``(action, last_opened)``: a ``close`` of the container the agent last opened instead of a walk
    away from it, once nothing more is needed from it (the original's closing heuristic)."""
    verb, target = W.decode_action(action)
    lo = jnp.maximum(last_opened, 0)
    is_open = (state.nodes.states[lo] & C.OPEN) > 0
    near = W.view(state, char).close[lo]
    needed = P.needed_containers(world, char)[lo]
    close_now = (last_opened >= 0) & (verb == W.V["walk"]) & (target != lo) & is_open & near & ~needed
    action = jnp.where(close_now, W.encode_action("close", lo), action)
    opened = (verb == W.V["open"]) & ~close_now
    last_opened = jnp.where(close_now, -1, jnp.where(opened, target, last_opened))
    return action, last_opened.astype(jnp.int32)


@dataclasses.dataclass(frozen=True)
class RandomAgent:
    """A random valid action every step (the paper's Random helper)."""

    char: int = 1

    def init(self, key, state) -> AgentMemory:
        return PlanningAgent(char=self.char).init(key, state)

    def act(self, key, memory, state, partner=None):
        return E.random_valid_action(key, state, self.char), memory


def make_agent(kind: str, num_simulations: int = P.NUM_SIMULATIONS):
    """Returns the agent ``kind`` (``KINDS``). Raises ``ValueError`` for an unknown kind."""
    if kind not in KINDS:
        raise ValueError(f"unknown household agent {kind!r}; choose from {list(KINDS)}")
    n = num_simulations
    return {
        "alice": PlanningAgent(char=0, num_simulations=n),
        "alice-oracle": PlanningAgent(char=0, omniscient=True, num_simulations=n),
        "hp": PlanningAgent(char=1, avoid_partner=True, num_simulations=n),
        "hprg": PlanningAgent(char=1, goal="random", num_simulations=n),
        "oracle-b": PlanningAgent(char=1, omniscient=True, avoid_partner=True, num_simulations=n),
        "random": RandomAgent(char=1),
    }[kind]


class PlanningAlice:
    """``HelperEnv``'s Alice as the human-like planner (an ``env.AlicePolicy``)."""

    def __init__(self, agent: PlanningAgent | None = None) -> None:
        self.agent = PlanningAgent(char=0) if agent is None else agent

    def init(self, key, state, params):
        return self.agent.init(key, state)

    def act(self, key, memory, obs, state, params):
        return self.agent.act(key, memory, state)


class HelperPolicy(Protocol):
    """The learned helpers' interface: ``helper_act(params, helper_state, state, obs) -> (action, helper_state)``
    with ``params`` the helper's parameters, ``helper_state`` its recurrent state (any pytree), ``state`` the
    true ``world.State`` (which a learned helper should not read beyond what ``obs`` shows) and ``obs`` Bob's
    observation (``world.observe``)."""

    def helper_init(self, key: jax.Array, state: W.State) -> Any: ...

    def helper_act(self, params: Any, helper_state: Any, state: W.State, obs: dict) -> tuple[jax.Array, Any]: ...


@dataclasses.dataclass(frozen=True)
class PolicyHelper:
    """A ``HelperPolicy`` (a learned helper) with its parameters, as an agent ``evaluate.play`` and ``jaxsoc
    household eval`` can run as Bob: it sees Bob's observation (``world.observe``; the goal only when
    ``sees_goal``) and keeps its recurrent state as its memory. ``subgoal_obj`` is not defined for it, so an
    ``hp``-style partner cannot avoid its subgoal."""

    policy: Any
    params: Any
    sees_goal: bool = False

    def init(self, key: jax.Array, state: W.State) -> Any:
        return self.policy.helper_init(key, state)

    def act(self, key: jax.Array, memory: Any, state: W.State, partner: AgentMemory | None = None):
        obs = W.observe(state, 1, self.sees_goal)
        action, memory = self.policy.helper_act(self.params, memory, state, obs)
        return jnp.asarray(action, jnp.int32), memory
