"""EXCALIBUR as an environment: explore a house (phase I), answer questions about it (II), re-enter it knowing the
questions (III), answer again (IV) — one episode, one discrete action space (``state``; ``world``).

A reset draws a house from the bank in ``params.houses`` (``House`` with a leading axis; ``bank.cached_bank`` of
the ``train`` split by default), so an auto-reset is one gather. The episode terminates after phase IV's last
answer; it is never truncated (phases I and III end at their budgets).

**Rewards** (weights in ``ExcaliburParams``):

- ``answer_reward``: each right answer in phases II and IV pays ``answer_reward / num_questions``. It trains the
  answerer in every variant (the paper trains its answer head on the answers; this is jaxsoc's stand-in).
- ``qa_reward`` (the paper's "QA reward", a reconstruction: the main paper's definition could not be found): in
  phases I and III each step pays the increase of the fraction of the house's questions that the agent's
  knowledge answers right (``knowledge_accuracy``: answering with only the objects it has seen and the masses it
  has lifted in the phase; nothing is known before the episode, so the first step also pays for what the spawn
  view showed). It costs a relation table per step (the previous value is cached in ``State.knowledge``; a reset
  computes none, so an auto-reset step costs one table, not two), so the static ``knowledge_reward`` switches its
  computation on (``params_for`` sets it for the variants with a QA reward).
- ``novelty_reward`` (the "Novelty reward"): each exploration step pays the increase of ``world.novelty`` (the mean
  of the fractions of objects seen, objects touched and free cells visited).

``info`` carries ``success`` (phase IV accuracy >= ``success_accuracy`` at the episode's end), ``episode_steps``,
``phase``, ``accuracy_first`` / ``accuracy_again`` (phase II / IV accuracy so far), ``correct`` (this step's
answer was right) and ``novelty``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from jaxsoc.core import spaces
from jaxsoc.core.env import Environment
from jaxsoc.envs.excalibur import observation as O
from jaxsoc.envs.excalibur import state as S
from jaxsoc.envs.excalibur import world as W

#: the reward variants of the paper's learned agents: (qa_reward, novelty_reward)
VARIANTS = {"answers": (0.0, 0.0), "qa": (1.0, 0.0), "novelty": (0.0, 1.0), "novelty_qa": (1.0, 1.0)}


class ExcaliburParams(struct.PyTreeNode):
    """``houses``: the bank (``House`` with a leading axis); budgets of phases I and III (2,500 steps: the human
    study's cap; phase III's is not in the supplementary: 500 by default); reward weights (module docstring);
    ``success_accuracy``; static: ``view_size`` (the egocentric view's side) and ``knowledge_reward`` (compute
    ``qa_reward``'s knowledge accuracy each step)."""

    houses: S.House
    explore_budget: Any = 2500
    reenter_budget: Any = 500
    answer_reward: Any = 1.0
    qa_reward: Any = 0.0
    novelty_reward: Any = 0.0
    success_accuracy: Any = 0.5
    view_size: int = struct.field(pytree_node=False, default=7)
    knowledge_reward: bool = struct.field(pytree_node=False, default=False)


def params_for(variant: str = "answers", split: str = "train", seed: int = 0, **kw: Any) -> ExcaliburParams:
    """Returns ``ExcaliburParams`` over the ``split`` bank (``bank.cached_bank``) with ``variant``'s reward weights
    (``VARIANTS``); ``kw`` replaces fields. Raises ``ValueError`` for an unknown variant or split."""
    from jaxsoc.envs.excalibur import bank

    if variant not in VARIANTS:
        raise ValueError(f"unknown EXCALIBUR reward variant {variant!r}; choose from {list(VARIANTS)}")
    qa, novelty = VARIANTS[variant]
    kw = {"qa_reward": qa, "novelty_reward": novelty, "knowledge_reward": qa != 0.0, **kw}
    params = ExcaliburParams(houses=bank.cached_bank(split, seed), **kw)
    check_params(params)
    return params


def check_params(params: ExcaliburParams) -> None:
    """Raises ``ValueError`` for a bank of the wrong layout or bad budgets."""
    walls = params.houses.walls
    if walls.ndim != 3:
        raise ValueError(f"params.houses must be a bank of houses (walls [T, H, W]), got walls of shape {walls.shape}")
    if params.view_size < 3 or params.view_size % 2 == 0:
        raise ValueError(f"view_size must be odd and >= 3, got {params.view_size}")
    for name in ("explore_budget", "reenter_budget"):
        value = getattr(params, name)
        if not isinstance(value, jax.core.Tracer) and int(value) < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
    if params.qa_reward != 0.0 and not isinstance(params.qa_reward, jax.core.Tracer) and not params.knowledge_reward:
        raise ValueError("qa_reward needs knowledge_reward=True (it switches the per-step knowledge accuracy on)")


def draw_house(key: jax.Array, params: ExcaliburParams) -> S.House:
    """Returns a house drawn uniformly from the bank."""
    num = params.houses.walls.shape[0]
    index = jax.random.randint(key, (), 0, num)
    return jax.tree_util.tree_map(lambda x: x[index], params.houses)


def knowledge_accuracy(state: S.State, track: jax.Array) -> jax.Array:
    """Returns ``float32``: the fraction of the house's questions answered right from what exploration phase
    ``track`` (0: I, 1: III) has seen and lifted (``questions.answer`` with ``known``)."""
    from jaxsoc.envs.excalibur import questions as Q

    return Q.accuracy(state.house, (state.tracks.seen[track], state.tracks.lifted[track]))


class ExcaliburEnv(Environment):
    """The four-phase episode of the module docstring; ``variant`` picks the reward weights (``VARIANTS``). A reset
    (a house from the bank, its questions) costs most of a step, so ``step`` resets only the worlds whose episode
    ended (``pooled_resets``)."""

    pooled_resets = True

    def __init__(self, variant: str = "answers") -> None:
        if variant not in VARIANTS:
            raise ValueError(f"unknown EXCALIBUR reward variant {variant!r}; choose from {list(VARIANTS)}")
        self.variant = variant
        super().__init__()

    @property
    def name(self) -> str:
        return f"ExcaliburEnv({self.variant})"

    def default_params(self) -> ExcaliburParams:
        return params_for(self.variant)

    def max_episode_steps(self, params: ExcaliburParams | None = None) -> int:
        """Returns both exploration budgets plus two answer phases as long as the bank's most questions (every phase
        lasts at least one step)."""
        params = self.default_params() if params is None else params
        questions = int(jnp.shape(params.houses.questions)[-2])
        phases = [int(params.explore_budget), int(params.reenter_budget), questions, questions]
        return sum(max(steps, 1) for steps in phases)

    def reset_env(self, key, params):
        state = W.initial_state(draw_house(key, params), params.view_size)
        return O.observe(state, params.view_size), state

    def step_env(self, key, state, action, params):
        action = jnp.asarray(action, jnp.int32)
        track = (state.phase == S.REENTER).astype(jnp.int32)
        stepped, out = W.step(state, action, params.explore_budget, params.reenter_budget, params.view_size)
        num_q = jnp.maximum(state.house.num_questions, 1)
        reward = params.answer_reward * out["correct"].astype(jnp.float32) / num_q
        reward = reward + params.novelty_reward * out["novelty"]
        if params.knowledge_reward:
            # one knowledge accuracy per step: the exploring phase's track (or, between phases, the track of the
            # phase being entered); the previous one is the state's cached ``knowledge``
            exploring = (state.phase == S.EXPLORE) | (state.phase == S.REENTER)
            track = jnp.where(exploring, track, (stepped.phase == S.REENTER).astype(jnp.int32))
            known = knowledge_accuracy(stepped, track)
            gain = known - state.knowledge[track]
            reward = reward + params.qa_reward * jnp.where(exploring, gain, 0.0)
            stepped = stepped.replace(knowledge=stepped.knowledge.at[track].set(known))
        terminated = out["done"]
        accuracy_again = W.accuracy(stepped, 1)
        info = {
            "success": terminated & (accuracy_again >= params.success_accuracy),
            "episode_steps": stepped.step,
            "phase": state.phase,
            "accuracy_first": W.accuracy(stepped, 0),
            "accuracy_again": accuracy_again,
            "correct": out["correct"],
            "novelty": out["novelty"],
        }
        obs = O.observe(stepped, params.view_size, action)
        return obs, stepped, reward.astype(jnp.float32), terminated, jnp.bool_(False), info

    def action_space(self, params=None) -> spaces.Discrete:
        return spaces.Discrete(S.NUM_ACTIONS)

    def observation_space(self, params=None) -> spaces.Dict:
        params = self.default_params() if params is None else params
        houses = params.houses
        return O.observation_space(houses.valid.shape[-1], houses.questions.shape[-2], params.view_size)

    def render(self, state, params=None):
        from jaxsoc.envs.excalibur.render import render

        return render(state)
