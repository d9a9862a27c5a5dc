"""Watch-And-Help's HRL helper (the paper's §5.2 and appendix C.3-C.4) as Bob: ``HRLHelper``, a learned low-level
policy (``networks.household.LowLevelPolicy``, trained by ``hrl_train``) under the Hybrid's learned high-level
policy (``hybrid.HighLevel``). The high level picks a predicate of the goal Bob was given (at every step, or with
``commit`` as an option kept until it gains an instance or times out), the low level picks his world action for it
from the subgoal observation ``subgoal_env.SubgoalEnv`` trains on. ``helper_from_run`` builds it from a low-level
run and a Hybrid run.
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
from jaxsoc.envs.household.subgoal_env import placed_count, subgoal_observation, valid_mask, visit
from jaxsoc.learners.household.hrl_run import load as load_low
from jaxsoc.learners.household.hybrid import HighLevel
from jaxsoc.learners.household.hybrid_run import load as load_hybrid
from jaxsoc.learners.networks import registry
from jaxsoc.learners.networks.household import LowLevelPolicy

NONE = PR.NUM_PREDICATES  # the high level's "no subgoal"


class HRLMemory(struct.PyTreeNode):
    """The helper's memory: ``high`` the high level's, ``low`` the low level's LSTM (``[1, memory_dim]``),
    ``subgoal`` int32 the current predicate (-1 before the first step, ``NONE`` when idle), ``since`` int32 the
    steps spent on it, ``visited`` bool[4] the rooms Bob has stood in since it began, ``start`` int32 its instances
    (under Bob's goal, counted as ``HRLHelper.option_end`` says) when it began, the goal Bob was given
    (``goal_count`` int8[30], ``goal_target`` int16[30]) and ``sightings`` what he has seen
    (``options.Sightings``)."""

    high: Any
    low: Any
    subgoal: jax.Array
    since: jax.Array
    visited: jax.Array
    start: jax.Array
    goal_count: jax.Array
    goal_target: jax.Array
    sightings: OPT.Sightings


@dataclasses.dataclass(frozen=True)
class HRLHelper:
    """The HRL baseline as Bob (an agent for ``evaluate.play`` and ``jaxsoc household eval``).

    ``high`` has ``high_init(key, state) -> memory`` and ``high_choose(params, key, memory, obs) -> (pred int32
    in [0, 31), memory)`` (30: no subgoal), with ``high_params``; ``low`` a ``LowLevelPolicy`` with
    ``low_params`` (``{"params": ...}``, ``load``). Each step the high level picks a predicate from Bob's
    observation with the goal he was given at ``init`` (``state.goal_count`` / ``goal_target``: the lead passes
    the inferred goal there) and the low level Bob's world action for it (sampled, or its mode with
    ``greedy``); its LSTM restarts when the subgoal changes. The low level's ``time_left`` counts down over
    ``subgoal_steps`` steps from the subgoal's start (as in a training episode of that many steps); its
    ``valid`` actions are ``world.valid_actions``'s (``mask_invalid``). No subgoal: a noop.

    ``commit``: the subgoal is kept, as an option, until it gains an instance under Bob's goal or ``subgoal_steps``
    steps pass (a wait lasts one step); only then does the high level choose again (its memory steps once per
    choice). Without it the high level chooses at every step (the runs before the belief low level were evaluated
    so). ``option_end`` (``options.OPTION_ENDS``) is how the instances are counted: ``"observed"`` those Bob has
    seen (``options.observed_satisfied``: his own puts, what he has seen at the destination); ``"true"`` is
    privileged, the true count (``subgoal_env.placed_count``), Alice's placements out of his view included."""

    high: Any
    high_params: Any
    low: LowLevelPolicy
    low_params: Any
    greedy: bool = False
    subgoal_steps: int = 100
    mask_invalid: bool = True
    commit: bool = False
    option_end: str = "observed"

    def __post_init__(self) -> None:
        OPT.check_option_end(self.option_end)

    def init(self, key: jax.Array, state: W.State) -> HRLMemory:
        """Returns the memory at the start of an episode in ``state`` (whose goal is Bob's)."""
        return HRLMemory(
            high=self.high.high_init(key, state),
            low=self.low.initial_memory(1),
            subgoal=jnp.int32(-1),
            since=jnp.int32(0),
            visited=jnp.zeros(W.NUM_ROOMS, bool),
            start=jnp.int32(0),
            goal_count=state.goal_count.astype(jnp.int8),
            goal_target=state.goal_target.astype(jnp.int16),
            sightings=OPT.no_sightings(),
        )

    def act(self, key: jax.Array, memory: HRLMemory, state: W.State, partner: Any = None):
        """Returns ``(action int32, memory)`` for this step in the true ``state`` (read through Bob's eyes)."""
        k_high, k_low = jax.random.split(key)
        obs = {**W.observe(state, 1, False), "goal": memory.goal_count, "goal_target": memory.goal_target}
        choice, high = self.high.high_choose(self.high_params, k_high, memory.high, obs)
        choice = jnp.asarray(choice, jnp.int32)
        sightings = OPT.sight(memory.sightings, obs)
        if self.option_end == "true":  # privileged: the true count, Alice's placements out of view included
            bobs = state.replace(goal_target=memory.goal_target.astype(state.goal_target.dtype))
            placed = lambda p: placed_count(bobs, jnp.clip(p, 0, PR.NUM_PREDICATES - 1))  # noqa: E731
        else:
            seen = OPT.observed_satisfied(sightings, memory.goal_target)
            placed = lambda p: seen[jnp.clip(p, 0, PR.NUM_PREDICATES - 1)]  # noqa: E731
        if self.commit:
            ended = (memory.subgoal < 0) | (memory.subgoal >= NONE) | (memory.since + 1 >= self.subgoal_steps)
            ended = ended | (placed(memory.subgoal) > memory.start)
            pred = jnp.where(ended, choice, memory.subgoal)
            high = jax.tree_util.tree_map(lambda new, old: jnp.where(ended, new, old), high, memory.high)
            same = ~ended
        else:
            pred = choice
            same = pred == memory.subgoal
        start = jnp.where(same, memory.start, placed(pred))
        keep = same.astype(jnp.float32)[None]
        since = jnp.where(same, memory.since + 1, 0)
        visited = visit(jnp.where(same, memory.visited, False), state)
        left = jnp.clip(1.0 - since / self.subgoal_steps, 0.0, 1.0)
        valid = valid_mask(state, self.mask_invalid)
        low_obs = subgoal_observation(obs, pred, memory.goal_target, valid, left, visited)
        batch = jax.tree_util.tree_map(lambda x: x[None], low_obs)
        log_probs, _, low = self.low.apply(
            self.low_params, batch, (), registry.reset_memory(memory.low, keep), method="step"
        )
        sampled = jax.random.categorical(k_low, log_probs[0])
        action = jnp.where(pred >= NONE, 0, jnp.argmax(log_probs[0]) if self.greedy else sampled)
        memory = memory.replace(
            high=high, low=low, subgoal=pred, since=since, visited=visited, start=start, sightings=sightings
        )
        return action.astype(jnp.int32), memory


def helper_from_run(
    run: str | Path,
    hybrid_run: str | Path,
    greedy: bool = False,
    commit: bool | None = None,
    option_end: str = "observed",
) -> HRLHelper:
    """Returns the HRL helper of a low-level run ``run`` under the high level of a Hybrid run ``hybrid_run``
    (``hybrid_run.load``, ``hybrid.HighLevel``); ``greedy`` takes both levels' most likely choices; ``commit``
    (``HRLHelper.commit``; None: when the low level is a ``belief`` network, whose training episodes pursue one
    subgoal to its end, as the committing Hybrid's options do); ``option_end`` (``HRLHelper.option_end``;
    ``"true"`` is privileged)."""
    OPT.check_option_end(option_end)
    policy, high_params, _ = load_hybrid(hybrid_run)
    low, low_params, config = load_low(run)
    high = HighLevel(policy, greedy)
    return HRLHelper(
        high=high,
        high_params=high_params,
        low=low,
        low_params=low_params,
        greedy=greedy,
        subgoal_steps=config.max_steps,
        mask_invalid=config.mask_invalid,
        commit=low.config.belief if commit is None else commit,
        option_end=option_end,
    )
