"""Watch-And-Help's Hybrid helper (§5.2, appendix C.3 and C.5) as Bob: ``HybridHelper``, the trained high-level
policy (``networks.household.HybridPolicy``, trained by ``hybrid_train``) choosing an option, a goal predicate that
the regression planner executes (``options.execute``) until it ends by the rules ``hybrid_env.HybridEnv``'s options
follow (``options.option_ended``); then the policy chooses again. ``HighLevel`` is its high level alone
(``high_init``, ``high_choose``), for the HRL helper (``hrl``) to pair with a learned low level.
``helper_from_run(run)`` reads a run.

An option ends early when its predicate gains an instance or there is nothing left to do (the original code decides
every 24 steps whatever happened), so the high level is not left idle. By default an instance counts once Bob has
seen it (``option_end="observed"``: ``options.observed_satisfied`` of what he has seen, his own puts included); the
privileged ``option_end="true"`` reads the true satisfied counts under his goal, which reveal Alice's placements out of
his view (the rule the committed runs were first evaluated with, kept for that comparison).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from jaxsoc.envs.household import options as OPT
from jaxsoc.envs.household import predicates as PR
from jaxsoc.envs.household import world as W
from jaxsoc.envs.household.agents import belief as B
from jaxsoc.envs.household.options import choice_mask, execute, observation, option_ended
from jaxsoc.learners.household.hybrid_run import load
from jaxsoc.learners.networks.household import HybridPolicy


class HighMemory(struct.PyTreeNode):
    """The high level's memory: ``lstm`` (``{"h", "c"}`` float32[d]) and ``last_choice`` int32 (-1 at first)."""

    lstm: Any
    last_choice: jax.Array


@dataclasses.dataclass(frozen=True)
class HighLevel:
    """The trained high-level policy alone (for the HRL helper to pair with a learned low level): ``policy`` a
    ``HybridPolicy``; ``greedy`` takes the most likely choice instead of sampling one."""

    policy: HybridPolicy
    greedy: bool = False

    def high_init(self, key: jax.Array, state: W.State) -> HighMemory:
        """Returns the memory at the start of an episode (zeros, no previous choice)."""
        lstm = jax.tree_util.tree_map(lambda x: x[0], self.policy.initial_memory(1))
        return HighMemory(lstm=lstm, last_choice=jnp.int32(-1))

    def high_choose(self, params: Any, key: jax.Array, memory: HighMemory, obs: dict) -> tuple[jax.Array, HighMemory]:
        """Returns ``(choice int32, memory)``: a predicate in [0, 30) or ``NOOP_CHOICE``, within the choice mask,
        from Bob's observation ``obs`` (``world.observe`` with the goal filled in, no batch axis; its
        ``choice_mask`` is computed, ``choice_mask``, when it has none) under the network's ``params``."""
        obs = dict(obs, last_choice=memory.last_choice)
        if "choice_mask" not in obs:
            obs["choice_mask"] = choice_mask(obs)
        batch = jax.tree_util.tree_map(lambda x: jnp.asarray(x)[None], (obs, memory.lstm))
        log_probs, _, lstm = self.policy.apply({"params": params}, *batch)
        choice = jnp.argmax(log_probs[0]) if self.greedy else jax.random.categorical(key, log_probs[0])
        choice = choice.astype(jnp.int32)
        return choice, HighMemory(lstm=jax.tree_util.tree_map(lambda x: x[0], lstm), last_choice=choice)


class HybridMemory(struct.PyTreeNode):
    """``HybridHelper``'s memory: its ``belief``, the goal it conditions on (``goal_count`` int8[30],
    ``goal_target`` int16[30]), the high level's memory ``high``, the current option (``choice`` int32, -1 before
    the first; ``since`` int32 the primitive steps it has taken; ``valid`` bool whether its last step had
    something to do), its object ``subgoal_obj`` (-1 none), ``satisfied`` int32[30] the counts the option's end
    compares (under the goal it conditions on; ``HybridHelper.option_end``) at the previous step and ``sightings``
    what Bob has seen (``options.Sightings``)."""

    belief: B.Belief
    goal_count: jax.Array
    goal_target: jax.Array
    high: HighMemory
    subgoal_obj: jax.Array
    choice: jax.Array
    since: jax.Array
    valid: jax.Array
    satisfied: jax.Array
    sightings: OPT.Sightings


@dataclasses.dataclass(frozen=True)
class HybridHelper:
    """The Hybrid helper as Bob (an agent for ``evaluate.play``): ``policy`` and its ``params`` choose an option
    (``greedy``: the most likely choice, else sampled) which Bob keeps, the regression planner executing it in a
    world sampled from his belief each primitive step (``execute``), until it ends as ``HybridEnv``'s options do
    (``option_ended``: nothing to do, an instance of its predicate gained, ``OPTION_STEPS`` steps); then the policy
    chooses again. It helps with the goal of the state its ``init`` gets (``play`` passes the inferred goal there).
    ``option_end`` (``options.OPTION_ENDS``): ``"observed"`` counts the instances Bob has seen
    (``options.observed_satisfied``); ``"true"`` is privileged, the true satisfied counts under his goal."""

    policy: HybridPolicy
    params: Any
    greedy: bool = False
    option_end: str = "observed"

    def __post_init__(self) -> None:
        OPT.check_option_end(self.option_end)

    @property
    def high(self) -> HighLevel:
        return HighLevel(self.policy, self.greedy)

    def init(self, key: jax.Array, state: W.State) -> HybridMemory:
        """Returns the memory at the start of an episode in ``state`` (its goal is the one Bob helps with)."""
        return HybridMemory(
            belief=B.init(state),
            goal_count=state.goal_count.astype(jnp.int8),
            goal_target=state.goal_target.astype(jnp.int16),
            high=self.high.high_init(key, state),
            subgoal_obj=jnp.int32(-1),
            choice=jnp.int32(-1),
            since=jnp.int32(0),
            valid=jnp.array(False),
            satisfied=jnp.zeros(PR.NUM_PREDICATES, jnp.int32),
            sightings=OPT.no_sightings(),
        )

    def act(self, key: jax.Array, memory: HybridMemory, state: W.State, partner: Any = None):
        """Returns ``(action int32, memory)`` for this step in the true ``state``: the current option's action, or
        a new option's first one when the last ended (or none was chosen yet)."""
        k_high, k_low = jax.random.split(key)
        obs = observation(state, memory.goal_count, memory.goal_target, memory.high.last_choice)
        sightings = OPT.sight(memory.sightings, obs)
        if self.option_end == "true":  # privileged: the true counts, Alice's placements out of view included
            mine = state.replace(goal_count=memory.goal_count, goal_target=memory.goal_target)
            satisfied = W.satisfied(mine)
        else:
            satisfied = OPT.observed_satisfied(sightings, memory.goal_target)
        ended = option_ended(memory.choice, memory.valid, memory.satisfied, satisfied, memory.since)
        ended = ended | (memory.choice < 0)
        new_choice, new_high = self.high.high_choose(self.params, k_high, memory.high, obs)
        choice = jnp.where(ended, new_choice, memory.choice)
        high = jax.tree_util.tree_map(lambda a, b: jnp.where(ended, a, b), new_high, memory.high)
        keep = jnp.where(choice == memory.choice, memory.subgoal_obj, -1)
        action, belief, obj, valid = execute(
            k_low, memory.belief, state, memory.goal_count, memory.goal_target, choice, keep
        )
        memory = memory.replace(
            belief=belief,
            high=high,
            subgoal_obj=obj,
            choice=choice,
            since=jnp.where(ended, 1, memory.since + 1),
            valid=valid,
            satisfied=satisfied,
            sightings=sightings,
        )
        return action.astype(jnp.int32), memory


def helper_from_run(run: str | Path, greedy: bool = False, option_end: str = "observed") -> HybridHelper:
    """Returns the ``HybridHelper`` of a Hybrid run directory (``load``), its options ending by ``option_end``
    (``options.OPTION_ENDS``; ``"true"`` is privileged)."""
    OPT.check_option_end(option_end)
    policy, params, _ = load(run)
    return HybridHelper(policy, params, greedy, option_end)
