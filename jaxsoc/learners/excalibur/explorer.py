"""EXCALIBUR's explorer trained for what its exploration reveals to the answerer (issue 39, item 3).

``MemoryExplorerEnv`` is the single-agent view in which PPO trains the explorer: EXCALIBUR's episode (``envs.excalibur
.env.ExcaliburEnv``, the ``answers`` variant: every right answer pays ``1 / num_questions``) with the agent's object
memory (``memory.ObjectMemory``) kept in the state and a trained supervised answerer (``answerer``) reading it.

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

``MemoryPolicyAgent`` plays a trained explorer in ``play.evaluate`` (the same observation, built from a state), and
``train`` runs PPO (``rl_run.train_rl``) on the view; ``load_explorer`` reads a run back.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsoc.core import spaces
from jaxsoc.core.env import Environment
from jaxsoc.envs.excalibur import env as E
from jaxsoc.envs.excalibur import observation as O
from jaxsoc.envs.excalibur import state as S
from jaxsoc.learners.excalibur import memory as MEM

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


def _answering(state: S.State) -> jax.Array:
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
    mask = jnp.where(_answering(state), only, explore)
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
        action = jnp.where(_answering(env), answer_action(env, state.answers), jnp.asarray(action, jnp.int32))
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


class MemoryPolicyAgent(struct.PyTreeNode):
    """A trained explorer (a network reading ``observe``'s memory) as an agent of ``play.evaluate``: ``policy``
    (static) and ``policy_variables``, the answerer ``answerer`` (static) and ``answerer_variables``, ``view_size``
    and ``greedy`` (static). Its memory is ``{"net", "last", "objects"}``; each step writes the object memory, builds
    the explorer's observation as ``MemoryExplorerEnv`` does, and acts; in phases II and IV it gives the
    answerer's answer; ``allow_stop`` (static) as the run was trained (``ExplorerParams``)."""

    policy: Any = struct.field(pytree_node=False)
    policy_variables: Any
    answerer: Any = struct.field(pytree_node=False)
    answerer_variables: Any
    view_size: int = struct.field(pytree_node=False, default=7)
    greedy: bool = struct.field(pytree_node=False, default=True)
    allow_stop: bool = struct.field(pytree_node=False, default=False)

    def init(self, key: jax.Array, state: S.State) -> dict:
        """Returns ``{"net": policy.initial_memory(1), "last": NUM_ACTIONS, "objects": memory.empty(house)}``."""
        return {
            "net": self.policy.initial_memory(1),
            "last": jnp.int32(S.NUM_ACTIONS),
            "objects": MEM.empty(state.house),
        }

    def act(self, key: jax.Array, memory: dict, state: S.State) -> tuple[jax.Array, dict]:
        """Returns ``(action int32, memory)`` (class docstring)."""
        objects = MEM.write(memory["objects"], state)
        _, answers = answerer_read(self.answerer, self.answerer_variables, objects, state.house)
        obs = observe(O.observe(state, self.view_size, memory["last"]), state, objects, answers, self.allow_stop)
        obs = jax.tree_util.tree_map(lambda x: jnp.asarray(x)[None], obs)
        context = self.policy.apply(self.policy_variables, obs, method="encode_context")
        log_probs, _, net = self.policy.apply(
            self.policy_variables, obs, context, memory["net"], train=False, method="step"
        )
        log_probs = log_probs[0]
        action = jnp.argmax(log_probs) if self.greedy else jax.random.categorical(key, log_probs)
        action = jnp.where(_answering(state), answer_action(state, answers), action).astype(jnp.int32)
        return action, {"net": net, "last": action, "objects": objects}


# -- training and loading -----------------------------------------------------------------------------------------

EXPLORER_FILE = "explorer.json"


def ppo_config(**overrides: Any):
    """Returns the explorer's ``PPOConfig``: the ``excalibur`` network's ``tiny-memory`` preset, 64 worlds x 80
    steps per update, recurrence 20, lambda 0.95, advantages normalised (the issue-22 QA run's setup, with the
    memory), with lr 1e-3 and no discount (gamma 1: the episode is finite, and with gamma 0.999 the answers' reward
    comes sooner after a ``stop``, which paid for stopping at once in a first run)."""
    from jaxsoc.learners.ppo import PPOConfig

    base = dict(
        env_id="EXCALIBUR-v0",
        network="excalibur",
        preset="tiny-memory",
        num_envs=64,
        num_steps=80,
        recurrence=20,
        minibatch_frames=1280,
        total_frames=64 * 80 * 300,
        lr=1e-3,
        gamma=1.0,
        gae_lambda=0.95,
        normalize_advantages=True,
    )
    return PPOConfig(**{**base, **overrides})


def trainer(
    config,
    answerer: tuple[Any, Any],
    explore_budget: int,
    reenter_budget: int,
    gain_reward: float = 1.0,
    allow_stop: bool = False,
):
    """Returns a ``ppo.Trainer`` of ``config`` on ``MemoryExplorerEnv`` with ``answerer = (model, variables)``,
    the budgets, the gain's weight and ``allow_stop``, over the train bank."""
    from jaxsoc.learners.ppo import Trainer

    model, variables = answerer
    params = make_params(
        variables, gain_reward=gain_reward, allow_stop=allow_stop, explore_budget=explore_budget,
        reenter_budget=reenter_budget,
    )  # fmt: skip
    return Trainer(config, env=MemoryExplorerEnv(model, params), env_params=params)


def train(
    out: str | Path,
    answerer_dir: str | Path,
    *,
    explore_budget: int = 200,
    reenter_budget: int = 50,
    gain_reward: float = 1.0,
    allow_stop: bool = False,
    seed: int = 0,
    eval_episodes: int = 256,
    command: str = "",
    **overrides: Any,
) -> dict:
    """Trains an explorer by PPO (``ppo_config(**overrides)``) into ``out`` and returns the run's summary;
    ``explorer.json`` records the answerer, the budgets, the gain weight and ``command``."""
    from jaxsoc.learners.excalibur import answerer as ANS
    from jaxsoc.learners.rl_run import train_rl

    config = ppo_config(env_args=f"explore_budget={explore_budget},reenter_budget={reenter_budget}", **overrides)
    model, variables, meta = ANS.load(answerer_dir)
    tr = trainer(config, (model, variables), explore_budget, reenter_budget, gain_reward, allow_stop)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    record = {
        "answerer": str(answerer_dir),
        "answerer_preset": meta["preset"],
        "explore_budget": explore_budget,
        "reenter_budget": reenter_budget,
        "gain_reward": gain_reward,
        "allow_stop": allow_stop,
        "seed": seed,
        "config": dataclasses.asdict(config),
        "command": command,
    }
    (out / EXPLORER_FILE).write_text(json.dumps(record, indent=1))
    return train_rl(config, out, seed=seed, eval_episodes=eval_episodes, trainer=tr, progress=False)


def is_explorer_run(run: str | Path) -> bool:
    """Returns whether ``run`` is a run of ``train`` (it holds ``explorer.json``)."""
    return (Path(run) / EXPLORER_FILE).exists()


def load_explorer(run: str | Path) -> tuple[Any, Any, dict]:
    """Returns ``(model, variables, record)`` of the newest checkpoint of the explorer run ``run`` (``record``: its
    ``explorer.json``). Raises ``ValueError`` for a run that is not an explorer run or whose checkpoint holds
    another network."""
    from jaxsoc.learners.policy import load_network

    run = Path(run)
    if not is_explorer_run(run):
        raise ValueError(f"{run} is not an explorer run (no {EXPLORER_FILE})")
    model, variables, meta = load_network(run)
    if not getattr(model.config, "object_memory", False):
        network = meta.get("network")
        raise ValueError(f"{run / 'checkpoints'}: the policy does not read the object memory (network {network})")
    record = json.loads((run / EXPLORER_FILE).read_text())
    return model, variables, record
