"""The behaviour-modelling (BM) helper of CHAIC: a learned model of the constrained agent, and the RHP acting on it.

The paper's LLM+BM helper (section 4.1) recognises the constrained agent's actions and their outcomes and lets a
language model decide; appendix E.3's SmartHelp predicts its goal and constraint from the helper's observations.
Here a small recurrent model (``networks.chaic.BehaviourModel`` on ``bm_data.features``, trained by ``bm_train``)
plays that part and the rule-based RHP planner acts on its prediction:

- ``BMHelper``: an agent for ``play.play`` / ``play.make_player``: each act it observes, advances the model, hands
  the RHP the predicted target classes (those of probability above ``threshold`` among the task's possible
  targets; all possible targets while none is predicted) as the goal it fetches for, and acts as the RHP.
  ``load_bm_helper(run)`` rebuilds it from a run directory.
- ``BMPartner``: the model alone as the options view's partner model (``envs.chaic.options.PartnerModel``);
  ``load_partner(run)``.

The helper reads the task id only as the RHP does (``agents.possible_target_classes``); the model never sees it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from jaxsoc.envs.chaic import agents as A
from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.envs.chaic import observation as O
from jaxsoc.envs.chaic import state as S
from jaxsoc.envs.chaic import world as W
from jaxsoc.learners.chaic.bm_config import BMConfig
from jaxsoc.learners.chaic.bm_data import features
from jaxsoc.learners.chaic.bm_model import initial_carry, model
from jaxsoc.learners.chaic.bm_run import load
from jaxsoc.learners.networks.chaic import CONSTRAINTS

_C = K.NUM_CLASSES


class BMMemory(struct.PyTreeNode):
    """``BMHelper``'s memory: ``rule`` (the RHP's ``agents.AgentMemory``), the model's state ``h`` float32[hidden]
    (the GRU) and ``m`` float32[NUM_FEATURES] (the running maximum), ``targets`` float32[NUM_CLASSES] (the latest
    goal probabilities) and ``constraint`` float32[len(CONSTRAINTS)] (the latest constraint probabilities)."""

    rule: A.AgentMemory
    h: jax.Array
    m: jax.Array
    targets: jax.Array
    constraint: jax.Array


@dataclasses.dataclass(frozen=True, eq=False)
class BMHelper:
    """The BM helper (module docstring): ``agents.RuleAgent``'s interface (``init``, ``act``), for ``play.play``
    and ``play.make_player``. ``threshold`` defaults to ``config.threshold``."""

    params: Any
    config: BMConfig
    threshold: float | None = None

    def init(self, key: jax.Array, state: S.State, agent: int | jax.Array = S.HELPER) -> BMMemory:
        """Returns the memory at the start of the episode ``state``: the RHP's, the model's at 0, no prediction."""
        h, m = initial_carry(self.config)
        return BMMemory(
            rule=A.RuleAgent("rhp").init(key, state, agent),
            h=h,
            m=m,
            targets=jnp.zeros((_C,), jnp.float32),
            constraint=jnp.full((len(CONSTRAINTS),), 1.0 / len(CONSTRAINTS), jnp.float32),
        )

    def act(self, key: jax.Array, memory: BMMemory, state: S.State, timing: W.Timing = A.DEFAULT_TIMING):
        """Returns ``(action int32, memory)``: observe, advance the model, set the RHP's goal to the predicted target
        classes (among the task's possible targets; all of them while none is predicted), act as the RHP (call it
        only when the helper is ready, as ``play`` does)."""
        x = features(O.observe(state, S.HELPER, False, timing.view_dist))
        (h, m), targets, constraint = model(self.config).apply({"params": self.params}, (memory.h, memory.m), x)
        probs = jax.nn.sigmoid(targets)
        threshold = self.config.threshold if self.threshold is None else self.threshold
        possible = A.possible_target_classes(state.task)
        chosen = (probs > threshold) & possible
        goal = jnp.where(chosen.any(), chosen, possible).astype(jnp.int8)
        action, rule = A.rule_act(key, memory.rule.replace(goal_count=goal), state, timing)
        return action, BMMemory(rule=rule, h=h, m=m, targets=probs, constraint=jax.nn.softmax(constraint))


@dataclasses.dataclass(frozen=True, eq=False)
class BMPartner:
    """The behaviour model as the options view's partner model (``envs.chaic.options.PartnerModel``): its state is
    ``(h, m)`` (``initial_carry``), and each step reads the helper's observation through ``features`` and returns
    the goal's class probabilities (sigmoid of ``targets``) and the constraint's (softmax), as ``BMHelper`` computes
    them."""

    params: Any
    config: BMConfig

    @property
    def num_constraints(self) -> int:
        return len(CONSTRAINTS)

    def init(self) -> tuple[jax.Array, jax.Array]:
        """Returns ``initial_carry(config)``."""
        return initial_carry(self.config)

    def step(self, carry: tuple[jax.Array, jax.Array], obs: dict):
        """Returns ``((h, m), targets float32[NUM_CLASSES], constraint float32[len(CONSTRAINTS)])`` after one helper
        observation ``obs`` (``observation.observe``)."""
        carry, targets, constraint = model(self.config).apply({"params": self.params}, carry, features(obs))
        return carry, jax.nn.sigmoid(targets), jax.nn.softmax(constraint)


def load_partner(run: str | Path) -> BMPartner:
    """Returns the ``BMPartner`` of a ``chaic-bm`` run directory (``load``); raises ``ValueError`` as ``load``."""
    config, params = load(run)
    return BMPartner(params, config)


def load_bm_helper(run: str | Path, threshold: float | None = None) -> BMHelper:
    """Returns the ``BMHelper`` of a ``chaic-bm`` run directory (``load``; ``threshold`` overrides the config's).
    Raises ``ValueError`` as ``load``."""
    config, params = load(run)
    return BMHelper(params, config, threshold)
