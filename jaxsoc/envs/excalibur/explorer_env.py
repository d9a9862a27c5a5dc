"""The training view of EXCALIBUR's explorer, rewarded for what its exploration reveals to the answerer.

``MemoryExplorerEnv`` is the single-agent view in which PPO trains the explorer: EXCALIBUR's episode (``envs.excalibur
.env.ExcaliburEnv``, the ``answers`` variant: every right answer pays ``1 / num_questions``) with the agent's object
memory (``envs.excalibur.memory.ObjectMemory``) kept in the state and a trained supervised answerer
(``learners.excalibur.answerer``; the view takes its network and variables) reading it.

- **Observations**: EXCALIBUR's own (``envs.excalibur.observation``) plus the memory, ``memory`` int16[N, 13] (one
  row per object slot, zeros until the object is seen: known, 1 + type, 1 + colours (2), 1 + materials (3), the
  remembered cell ahead / right of the agent now, 1 + parent slot, link, lifted, held now) and ``memory_sizes``
  float32[N, 4] (the sorted dimensions, the mass once felt), so the policy (the ``excalibur`` network with
  ``object_memory``) sees what it has found so far, wherever it is.
- **No stop by default**: ``allow_stop`` False masks ``stop`` in phases I and III, so they last their budgets. With
  it open, a near-uniform initial policy stops phase I after about 7 steps, and what 7 more steps would reveal is
  far below the noise of the answers' reward: a first run's episodes were still 40 steps long after 37 updates.
  (The mask is what keeps a policy from stopping; a ``stop`` given anyway still ends the phase.)
- **Answers from the supervised head**: in phases II and IV the answer given is the answerer's argmax on the memory,
  whatever the action (the observation's ``action_mask`` allows only that answer, so a policy's answer steps carry
  probability 1 and no policy gradient).
- **Reward for what is revealed** (the QA reward over the memory): each step of phases I and III also pays
  ``gain_reward`` times the increase of the answerer's expected accuracy on the house's questions (the mean
  probability of the true answer) from the memory before the step to the memory after it. It is potential-based and
  telescopes to the answerer's expected accuracy after exploring minus that from the spawn view; the answers of
  phases II and IV pay the accuracy actually reached. The questions are read by the reward only: the agent sees them
  from phase II on, as in the paper (phase III re-enters knowing them).

``MemoryExplorerEnv`` is the view; ``learners.excalibur.explorer`` trains a policy on it and plays it as an agent.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsoc.core import spaces
from jaxsoc.core.env import Environment
from jaxsoc.envs.excalibur import env as E
from jaxsoc.envs.excalibur import memory as MEM
from jaxsoc.envs.excalibur import observation as O
from jaxsoc.envs.excalibur import state as S

MEMORY_COLUMNS = 13
#: the ``memory`` row's columns (the object table's layout, with ``LIFTED`` and ``HELD`` in the last two)
KNOWN, LIFTED, HELD = 0, 11, 12


class ExplorerParams(struct.PyTreeNode):
    """``env``: the EXCALIBUR params (bank, budgets; the ``answers`` rewards); ``answerer``: the answerer's
    variables; ``gain_reward``: the weight of the answerer's expected-accuracy gain per exploring step; static
    ``allow_stop``: ``stop`` is a valid action in phases I and III (module docstring)."""

    env: E.ExcaliburParams
    answerer: Any
    gain_reward: Any = 1.0
    allow_stop: bool = struct.field(pytree_node=False, default=False)


class ExplorerState(struct.PyTreeNode):
    """``env``: EXCALIBUR's state; ``objects``: the object memory; ``score`` float32: the answerer's expected
    accuracy from it; ``answers`` int32[Q]: the answerer's argmax answer to each question from it."""

    env: S.State
    objects: MEM.ObjectMemory
    score: jax.Array
    answers: jax.Array


def answerer_read(model, variables, objects: MEM.ObjectMemory, house: S.House) -> tuple[jax.Array, jax.Array]:
    """Returns ``(score float32, answers int32[Q])``: the mean over the house's questions of the answerer's
    probability of the true answer, and its argmax answer id to each question, from memory ``objects``."""
    inputs = jax.tree_util.tree_map(lambda x: x[None], MEM.read(objects, house))
    logits = model.apply(variables, inputs, house.questions[None])[0]  # [Q, NUM_ANSWERS]
    log_probs = jax.nn.log_softmax(logits)
    truth = jnp.clip(house.answers.astype(jnp.int32), 0, logits.shape[-1] - 1)
    p_true = jnp.exp(jnp.take_along_axis(log_probs, truth[:, None], -1)[:, 0])
    asked = jnp.arange(house.questions.shape[0]) < house.num_questions
    score = jnp.where(asked, p_true, 0.0).sum() / jnp.maximum(house.num_questions, 1)
    return score.astype(jnp.float32), jnp.argmax(logits, -1).astype(jnp.int32)


def memory_table(objects: MEM.ObjectMemory, state: S.State) -> tuple[jax.Array, jax.Array]:
    """Returns ``(memory int16[N, 13], memory_sizes float32[N, 4])`` of the module docstring: what ``objects``
    remembers, its cells in the agent's frame now."""
    offset = objects.cell.astype(jnp.int32) - state.agent_pos
    held = jnp.arange(objects.known.shape[0]) == state.held
    look = (objects.type, objects.colors, objects.materials, objects.parent, objects.link)
    table = O.object_rows(objects.known, state.agent_dir, offset, *look, (objects.lifted, held))
    known = objects.known[:, None]
    sizes = jnp.where(known, jnp.concatenate([objects.dims, objects.mass[:, None]], -1), 0.0)
    return table, sizes.astype(jnp.float32)


def answering(state: S.State) -> jax.Array:
    """Returns ``bool``: whether ``state`` is in an answer phase (II or IV)."""
    return (state.phase == S.ANSWER_FIRST) | (state.phase == S.ANSWER_AGAIN)


def answer_action(state: S.State, answers: jax.Array) -> jax.Array:
    """Returns ``int32``: the action giving ``answers``' answer to the question being asked (meaningful in phases
    II and IV)."""
    k = jnp.clip(state.phase_step, 0, answers.shape[0] - 1)
    return (S.ANSWER + answers[k]).astype(jnp.int32)


def observe(obs: dict, state: S.State, objects: MEM.ObjectMemory, answers: jax.Array, allow_stop: bool) -> dict:
    """Returns EXCALIBUR's observation ``obs`` of ``state`` with the memory table of ``objects`` added and, in the
    answer phases, the action mask reduced to the answerer's answer (``answers`` int32[Q]); without
    ``allow_stop``, ``stop`` masked in the exploring phases."""
    table, sizes = memory_table(objects, state)
    only = jax.nn.one_hot(answer_action(state, answers), S.NUM_ACTIONS) > 0
    explore = obs["action_mask"] & ((jnp.arange(S.NUM_ACTIONS) != S.STOP) | allow_stop)
    mask = jnp.where(answering(state), only, explore)
    return dict(obs, memory=table, memory_sizes=sizes, action_mask=mask)


class MemoryExplorerEnv(Environment):
    """The explorer's view of the module docstring; ``model``: the answerer network (``ExcaliburAnswerer``, static)
    whose variables are ``ExplorerParams.answerer``; ``params``: the default params (``make_params``)."""

    def __init__(self, model, params: ExplorerParams | None = None) -> None:
        self.model = model
        self.base = E.ExcaliburEnv("answers")
        self._params = params
        super().__init__()

    @property
    def name(self) -> str:
        return "MemoryExplorerEnv"

    def default_params(self) -> ExplorerParams:
        if self._params is None:
            raise ValueError("MemoryExplorerEnv needs params with the answerer's variables (make_params)")
        return self._params

    def _read(self, params, objects, house):
        return answerer_read(self.model, params.answerer, objects, house)

    def reset_env(self, key, params):
        obs, state = self.base.reset_env(key, params.env)
        objects = MEM.write(MEM.empty(state.house), state)
        score, answers = self._read(params, objects, state.house)
        return observe(obs, state, objects, answers, params.allow_stop), ExplorerState(state, objects, score, answers)

    def step_env(self, key, state, action, params):
        env = state.env
        exploring = (env.phase == S.EXPLORE) | (env.phase == S.REENTER)
        action = jnp.where(answering(env), answer_action(env, state.answers), jnp.asarray(action, jnp.int32))
        obs, stepped, reward, terminated, truncated, info = self.base.step_env(key, env, action, params.env)
        objects = MEM.write(state.objects, stepped)
        score, answers = self._read(params, objects, stepped.house)
        gain = jnp.where(exploring, score - state.score, 0.0)
        reward = reward + params.gain_reward * gain
        info = dict(info, answerer_score=score)
        new = ExplorerState(stepped, objects, score, answers)
        obs = observe(obs, stepped, objects, answers, params.allow_stop)
        return obs, new, reward.astype(jnp.float32), terminated, truncated, info

    def action_space(self, params=None) -> spaces.Discrete:
        return spaces.Discrete(S.NUM_ACTIONS)

    def observation_space(self, params=None) -> spaces.Dict:
        params = self.default_params() if params is None else params
        base = self.base.observation_space(params.env)
        num = params.env.houses.valid.shape[-1]
        big = np.iinfo(np.int16).max
        extra = {
            "memory": spaces.Box(-big, big, (num, MEMORY_COLUMNS), jnp.int16),
            "memory_sizes": spaces.Box(0.0, 1e3, (num, 4), jnp.float32),
        }
        return spaces.Dict({**base.spaces, **extra})

    def render(self, state, params=None):
        """Returns EXCALIBUR's rendering of the episode's state (``uint8[H, W, 3]``)."""
        return self.base.render(state.env)


def make_params(
    answerer_variables, split: str = "train", seed: int = 0, gain_reward: float = 1.0, allow_stop: bool = False, **kw
):
    """Returns ``ExplorerParams`` over the ``split`` bank (``env.params_for("answers", ...)``; ``kw`` e.g. the
    budgets) with the answerer's variables."""
    return ExplorerParams(E.params_for("answers", split, seed, **kw), answerer_variables, gain_reward, allow_stop)
