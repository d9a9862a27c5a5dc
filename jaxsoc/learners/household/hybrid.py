"""Watch-And-Help's Hybrid helper (§5.2, appendix C.3 and C.5): a learned high-level policy chooses a goal
predicate as Bob's subgoal, the regression planner executes it, and A2C trains the policy with Alice in the loop.

- ``HybridEnv``: the single-agent view in which the agent is Bob's high level. Its action is one of
  ``NUM_CHOICES = 31``: predicate ``p < 30`` ("put an object of class ``PRED_OBJECT[p]`` on / in the target of
  class ``PRED_TARGET_CLASS[p]``"; holds_book fetches a book, sit_sofa sits on the sofa, as the planner treats
  them) or ``NOOP_CHOICE`` (30, do nothing). Each step Alice (``PlanningAlice``) acts; Bob updates his belief
  from his observation and samples a world from it (``belief.update``, ``belief.sample_world``); the chosen
  predicate becomes a one-entry ``planner.Subgoals`` (``predicate_subgoal``) whose first regression-planner
  action (``planner.subgoal_action``) is Bob's action. Reward (App. C.3): +2 per goal predicate instance newly
  satisfied by either character (-2 per one undone), -0.1 per step.
- ``HybridPolicy`` (registered as ``"household-hybrid"``): Fig. 18's network, ``StateEncoder`` over Bob's
  observation, a bag-of-predicates goal encoding gating the pooled state, an LSTM, actor over the 31 choices
  and critic.
- ``train``: A2C (RMSprop, lr 1e-4, gamma 0.95) in two stages, teleporting walks first, then 1 m walks, on the
  1,011 training tasks, into a run directory (``run.json``, ``metrics.csv``, ``curves.png``, orbax checkpoints;
  ``resume`` gives the uninterrupted run's result).
- ``HybridHelper``: the trained policy as Bob for ``evaluate.play`` and ``jaxsoc household eval``;
  ``HighLevel`` is its high level alone (``high_init``, ``high_choose``), for the HRL helper to pair with a
  learned low level. ``load(run)`` and ``helper_from_run(run)`` read a run.

Deviations from the paper, all small: the policy picks one of the 30 predicates (object and target class
together) instead of two independent class heads (the 30 predicates are the only pairs a goal can hold); the
goal encoding learns an embedding per predicate instead of word2vec class vectors; the LSTM also sees the goal
encoding and the previous choice next to the gated state (the paper's gate alone cannot tell which predicates
a goal holds once the state is gated); the two stages follow the released code (teleporting walks, then
walking), Alice present in both, where the paper's text trains stage 1 without Alice.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from tqdm.auto import tqdm

from jaxsoc.core import spaces
from jaxsoc.core.env import Environment
from jaxsoc.envs.household import classes as C
from jaxsoc.envs.household import env as E
from jaxsoc.envs.household import predicates as PR
from jaxsoc.envs.household import tasks as T
from jaxsoc.envs.household import world as W
from jaxsoc.envs.household.agents import agents as AG
from jaxsoc.envs.household.agents import belief as B
from jaxsoc.envs.household.agents import planner as P
from jaxsoc.learners import ppo
from jaxsoc.learners.checkpoint import Checkpointer, restore_raw
from jaxsoc.learners.household.encoder import StateEncoder
from jaxsoc.learners.networks import registry
from jaxsoc.learners.networks.layers import LSTMCell
from jaxsoc.learners.rl_run import metric_rows
from jaxsoc.learners.run_log import MetricsLog, write_json

BOB = 1
NOOP_CHOICE = PR.NUM_PREDICATES
NUM_CHOICES = PR.NUM_PREDICATES + 1
STEP_PENALTY = 0.1
PREDICATE_REWARD = 2.0
NETWORK = "household-hybrid"
RUN_JSON = "run.json"
CHECKPOINTS = "checkpoints"
_RELATION = np.where(PR.PRED_KIND == PR.INSIDE_KIND, C.INSIDE, C.ON_TOP).astype(np.int8)


# -- executing a chosen predicate -----------------------------------------------------------------------------


def destinations(world: W.State) -> jax.Array:
    """Returns ``int32[30]``: where each predicate puts its object in ``world`` (Bob's world with the goal he
    conditions on): the goal's target node when the goal names one, else ``agents.goal_targets``' choice (the
    first furniture of the target class; the goal's kitchen table for the kitchen-table predicates), -1 when
    the apartment has none (and for holds_book)."""
    _, default = AG.goal_targets(world, jnp.ones(PR.NUM_PREDICATES, jnp.int32))
    return jnp.where(world.goal_target >= 0, world.goal_target, default).astype(jnp.int32)


def predicate_subgoal(
    key: jax.Array, world: W.State, choice: jax.Array, seen: jax.Array, keep: jax.Array | int = -1
) -> P.Subgoals:
    """Returns the one-entry ``planner.Subgoals`` (arrays ``[1]``) for Bob's ``choice`` in ``world`` (his sampled
    world, carrying the goal he conditions on); ``valid[0]`` False when there is nothing to do (the noop choice,
    no candidate object, no destination).

    The object is an instance of the predicate's class that does not count towards the goal already, is not
    at the destination already and is not in Alice's hands: one Bob holds, else ``keep`` (the instance of the
    previous step, -1 for none) while it is still such a candidate, else one drawn at random among those Bob
    sees (``seen`` bool[NUM_NODES]), or among all when he sees none. holds_book takes any book Alice does not
    hold; sit_sofa has no object (-1)."""
    p = jnp.clip(choice, 0, PR.NUM_PREDICATES - 1)
    dest = destinations(world)[p]
    nodes = world.nodes
    holder = W.holders(world)
    is_obj = jnp.asarray(W.NODE_KIND == 3) & (nodes.cls > 0)
    there = (nodes.parent == dest) & (nodes.relation == jnp.asarray(_RELATION)[p]) & (dest >= 0)
    cand = is_obj & (nodes.cls == jnp.asarray(PR.PRED_OBJECT)[p]) & ~P.satisfying(world) & ~there
    cand = cand & ((holder < 0) | (holder == BOB))
    idx = jnp.arange(W.NUM_NODES)
    mine = cand & (holder == BOB)
    kept = (idx == keep) & cand
    visible = cand & seen
    pool = jnp.where(mine.any(), mine, jnp.where(kept.any(), kept, jnp.where(visible.any(), visible, cand)))
    obj = jnp.argmax(jnp.where(pool, jax.random.uniform(key, (W.NUM_NODES,)), -1.0))
    sit = p == P.SIT
    holds = p == P.HOLDS
    valid = (choice >= 0) & (choice < NOOP_CHOICE) & jnp.where(sit, dest >= 0, cand.any() & ((dest >= 0) | holds))
    obj = jnp.where(valid & ~sit, obj, -1)
    one = lambda x: jnp.asarray(x, jnp.int32)[None]  # noqa: E731
    return P.Subgoals(
        pred=one(jnp.where(valid, p, -1)), obj=one(obj), dest=one(jnp.where(valid, dest, -1)), valid=valid[None]
    )


def execute(
    key: jax.Array,
    belief: B.Belief,
    state: W.State,
    goal_count: jax.Array,
    goal_target: jax.Array,
    choice: jax.Array,
    keep: jax.Array,
) -> tuple[jax.Array, B.Belief, jax.Array]:
    """Returns ``(action int32, belief, obj int32)``: Bob's low-level action for ``choice`` in the true
    ``state`` (the regression planner's first action in a world sampled from his updated belief, with the goal
    ``goal_count`` int8[30] / ``goal_target`` int16[30]), his belief after this step's observation and sample,
    and the subgoal's object (-1 for none; pass it as ``keep`` next step while the choice stays the same)."""
    k_sample, k_pick = jax.random.split(key)
    belief = B.update(belief, state, BOB)
    belief, world = B.sample_world(k_sample, belief, state, BOB)
    world = world.replace(goal_count=goal_count, goal_target=goal_target)
    seen = W.view(state, BOB).visible
    goals = predicate_subgoal(k_pick, world, choice, seen, keep)
    action = P.subgoal_action(world, BOB, goals, jnp.where(goals.valid[0], 0, -1), seen)
    return action, belief, goals.obj[0]


# -- the environment -------------------------------------------------------------------------------------------


class HybridState(struct.PyTreeNode):
    """``world``: the household; ``alice``: Alice's memory; ``belief``: Bob's belief; ``choice`` int32: the
    predicate chosen at the previous step (-1 at the start); ``subgoal_obj`` int32: its object (-1 none)."""

    world: W.State
    alice: Any
    belief: B.Belief
    choice: jax.Array
    subgoal_obj: jax.Array


def observation(world: W.State, goal_count: jax.Array, goal_target: jax.Array, last_choice: jax.Array) -> dict:
    """Returns the policy's observation: Bob's observation (``world.observe``) with the goal ``goal_count`` /
    ``goal_target`` in its ``goal`` / ``goal_target`` fields, and ``last_choice`` int32 (the previous choice,
    -1 at the start of an episode)."""
    obs = W.observe(world, BOB, False)
    return dict(
        obs,
        goal=jnp.asarray(goal_count, jnp.int8),
        goal_target=jnp.asarray(goal_target, jnp.int16),
        last_choice=jnp.asarray(last_choice, jnp.int32),
    )


def observation_space() -> spaces.Dict:
    """Returns the space of ``HybridEnv``'s observations."""
    base = E.observation_space().spaces
    return spaces.Dict({**base, "last_choice": spaces.Box(-1, NUM_CHOICES - 1, (), jnp.int32)})


class HybridEnv(Environment):
    """Bob's high level with a built-in Alice (module docstring); params: ``env.HouseholdParams`` (``teleport``:
    stage 1). ``info``: ``advance``'s plus ``alice_action``, ``bob_action`` and ``subgoal_obj``.

    Args:
        alice_simulations: Alice's tree-search simulations (``PlanningAlice``).
        alice: another built-in Alice (an ``env.AlicePolicy``); overrides ``alice_simulations``.
    """

    stochastic_step = True

    def __init__(self, alice_simulations: int = P.NUM_SIMULATIONS, alice: E.AlicePolicy | None = None) -> None:
        if alice is None:
            if alice_simulations < 1:
                raise ValueError(f"alice_simulations must be positive, got {alice_simulations}")
            alice = AG.PlanningAlice(AG.PlanningAgent(char=0, num_simulations=alice_simulations))
        self.alice = alice
        super().__init__()

    def default_params(self) -> E.HouseholdParams:
        return E.params_for("train")

    def _observe(self, state: HybridState) -> dict:
        world = state.world
        return observation(world, world.goal_count, world.goal_target, state.choice)

    def reset_env(self, key, params):
        k_task, k_alice = jax.random.split(key)
        world = E.draw_task(k_task, params)
        state = HybridState(
            world=world,
            alice=self.alice.init(k_alice, world, params),
            belief=B.init(world),
            choice=jnp.int32(-1),
            subgoal_obj=jnp.int32(-1),
        )
        return self._observe(state), state

    def _transition(self, key, state: HybridState, action, params):
        k_alice, k_bob, k_step = jax.random.split(key, 3)
        world = state.world
        alice_obs = W.observe(world, 0, params.goal_for[0])
        alice_action, alice = self.alice.act(k_alice, state.alice, alice_obs, world, params)
        choice = jnp.asarray(action, jnp.int32)
        keep = jnp.where(choice == state.choice, state.subgoal_obj, -1)
        bob_action, belief, obj = execute(k_bob, state.belief, world, world.goal_count, world.goal_target, choice, keep)
        before = W.progress(world)[0]
        world, _, terminated, truncated, info = E.advance(k_step, world, jnp.stack([alice_action, bob_action]), params)
        reward = PREDICATE_REWARD * (info["achieved"] - before) - STEP_PENALTY
        info = dict(info, alice_action=alice_action, bob_action=bob_action, subgoal_obj=obj)
        state = HybridState(world=world, alice=alice, belief=belief, choice=choice, subgoal_obj=obj)
        return state, reward.astype(jnp.float32), terminated, truncated, info

    def step_env(self, key, state, action, params):
        state, reward, terminated, truncated, info = self._transition(key, state, action, params)
        return self._observe(state), state, reward, terminated, truncated, info

    def _auto_reset_step(self, key, state, action, params):
        """As ``HelperEnv._auto_reset_step``: the state is selected first and observed once."""
        key, key_reset = jax.random.split(key)
        stepped, reward, terminated, truncated, info = self._transition(key, state, action, params)
        _, fresh = self.reset_env(key_reset, params)
        state = jax.tree_util.tree_map(lambda a, b: jnp.where(terminated | truncated, a, b), fresh, stepped)
        info = dict(info, final_observation=self._observe(stepped), final_state=stepped)
        return self._observe(state), state, reward, terminated, truncated, info

    def action_space(self, params=None) -> spaces.Discrete:
        return spaces.Discrete(NUM_CHOICES)

    def observation_space(self, params=None) -> spaces.Dict:
        return observation_space()

    def render(self, state, params=None):
        from jaxsoc.envs.household.render import render

        return render(state.world)


# -- the policy ------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class HybridNetConfig:
    """Hyper-parameters of ``HybridPolicy``: ``d`` the width of every layer (the paper's 128), ``heads`` the
    Transformer's attention heads, ``num_actions`` the choices (31)."""

    d: int = 128
    heads: int = 2
    num_actions: int = NUM_CHOICES

    def __post_init__(self) -> None:
        for name in ("d", "heads", "num_actions"):
            if getattr(self, name) < 1:
                raise ValueError(f"HybridNetConfig.{name} must be positive, got {getattr(self, name)}")
        if self.d % 2 or self.d % self.heads:
            raise ValueError(f"HybridNetConfig.d ({self.d}) must be even and a multiple of heads ({self.heads})")


PRESETS = {"paper": HybridNetConfig(d=128), "tiny": HybridNetConfig(d=16)}
_OBS_KEYS = ("class", "states", "position", "visible", "relation", "parent_relation", "agent_position")
_OBS_KEYS += ("agent_visible", "goal", "last_choice")


def _check(config: HybridNetConfig, space: Any) -> None:
    keys = set(getattr(space, "spaces", {}))
    missing = [k for k in _OBS_KEYS if k not in keys]
    if missing:
        raise ValueError(f"the household-hybrid network needs observation keys {missing} (use HybridEnv)")


class HybridPolicy(nn.Module):
    """The high-level policy of Fig. 18 (``config`` a ``HybridNetConfig``), on observations of ``HybridEnv``
    (``observation``) with a leading batch axis ``B``:

    - state: ``StateEncoder(d)`` over Bob's observation, pooled (``float32[B, d]``);
    - goal (the per-episode context): a bag of predicates, ``sum_p goal[p] * embedding[p]``, then Linear ``d``
      and ReLU; the gate ``sigma_g = sigmoid(Linear(goal))`` multiplies the pooled state;
    - the gated state, the goal encoding and an embedding of the previous choice go through Linear ``d`` and
      ReLU into an LSTM (``d``); actor (``num_actions`` log-probabilities) and critic read its output.
    Memory: ``{"h", "c"}`` float32[B, d]."""

    config: HybridNetConfig

    def setup(self) -> None:
        cfg = self.config
        self.encoder = StateEncoder(cfg.d, cfg.heads, name="encoder")
        self.predicates = self.param("predicates", nn.initializers.normal(1.0), (PR.NUM_PREDICATES, cfg.d))
        self.goal_fc = nn.Dense(cfg.d, name="goal")
        self.gate = nn.Dense(cfg.d, name="gate")
        self.previous = nn.Embed(NUM_CHOICES + 1, cfg.d, name="previous")
        self.inputs = nn.Dense(cfg.d, name="inputs")
        self.lstm = LSTMCell(cfg.d, name="lstm")
        self.actor = nn.Dense(cfg.num_actions, name="actor")
        self.critic = nn.Dense(1, name="critic")

    def initial_memory(self, batch: int) -> dict[str, jax.Array]:
        """Returns ``{"h", "c"}``: zeros ``float32[batch, d]``."""
        zeros = jnp.zeros((batch, self.config.d), jnp.float32)
        return {"h": zeros, "c": zeros}

    def encode_context(self, obs: dict) -> dict[str, jax.Array]:
        """Returns ``{"goal", "gate"}`` float32[B, d]: the goal encoding and the attention ``sigma_g``."""
        bag = obs["goal"].astype(jnp.float32) @ self.predicates
        goal = nn.relu(self.goal_fc(bag))
        return {"goal": goal, "gate": jax.nn.sigmoid(self.gate(goal))}

    def step(self, obs: dict, context: dict, memory: dict, train: bool = False):
        """Returns ``(log_probs float32[B, num_actions], value float32[B], memory)``."""
        _, pooled, _ = self.encoder(obs, train)
        previous = self.previous(jnp.clip(obs["last_choice"].astype(jnp.int32) + 1, 0, NUM_CHOICES))
        x = jnp.concatenate([context["gate"] * pooled, context["goal"], previous], -1)
        (h, c), out = self.lstm((memory["h"], memory["c"]), nn.relu(self.inputs(x)))
        return jax.nn.log_softmax(self.actor(out)), self.critic(out)[:, 0], {"h": h, "c": c}

    def __call__(self, obs: dict, memory: dict, train: bool = False):
        """Returns ``step(obs, encode_context(obs), memory, train)``."""
        return self.step(obs, self.encode_context(obs), memory, train)


registry.register(NETWORK, registry.NetworkSpec(HybridPolicy, HybridNetConfig, PRESETS, _check))


# -- the helper ------------------------------------------------------------------------------------------------


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
        """Returns ``(choice int32, memory)``: a predicate in [0, 30) or ``NOOP_CHOICE``, from Bob's observation
        ``obs`` (``world.observe`` with the goal filled in, no batch axis) under the network's ``params``."""
        obs = dict(obs, last_choice=memory.last_choice)
        batch = jax.tree_util.tree_map(lambda x: jnp.asarray(x)[None], (obs, memory.lstm))
        log_probs, _, lstm = self.policy.apply({"params": params}, *batch)
        choice = jnp.argmax(log_probs[0]) if self.greedy else jax.random.categorical(key, log_probs[0])
        choice = choice.astype(jnp.int32)
        return choice, HighMemory(lstm=jax.tree_util.tree_map(lambda x: x[0], lstm), last_choice=choice)


class HybridMemory(struct.PyTreeNode):
    """``HybridHelper``'s memory: its ``belief``, the goal it conditions on (``goal_count`` int8[30],
    ``goal_target`` int16[30]), the high level's memory ``high`` and the current subgoal object
    ``subgoal_obj`` (-1 none)."""

    belief: B.Belief
    goal_count: jax.Array
    goal_target: jax.Array
    high: HighMemory
    subgoal_obj: jax.Array


@dataclasses.dataclass(frozen=True)
class HybridHelper:
    """The Hybrid helper as Bob (an agent for ``evaluate.play``): ``policy`` and its ``params`` choose a
    predicate each step (``greedy``: the most likely one, else sampled), the regression planner executes it in
    a world sampled from Bob's belief (``execute``). It helps with the goal of the state its ``init`` gets
    (``play`` passes the inferred goal there)."""

    policy: HybridPolicy
    params: Any
    greedy: bool = False

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
        )

    def act(self, key: jax.Array, memory: HybridMemory, state: W.State, partner: Any = None):
        """Returns ``(action int32, memory)`` for this step in the true ``state``."""
        k_high, k_low = jax.random.split(key)
        obs = observation(state, memory.goal_count, memory.goal_target, memory.high.last_choice)
        previous = memory.high.last_choice
        choice, high = self.high.high_choose(self.params, k_high, memory.high, obs)
        keep = jnp.where(choice == previous, memory.subgoal_obj, -1)
        action, belief, obj = execute(k_low, memory.belief, state, memory.goal_count, memory.goal_target, choice, keep)
        return action.astype(jnp.int32), memory.replace(belief=belief, high=high, subgoal_obj=obj)


# -- training --------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class HybridConfig:
    """A Hybrid training run (``train``).

    Attributes:
        preset: the network's preset (``"paper"`` d=128, ``"tiny"`` d=16).
        num_envs: worlds stepped in parallel (the A2C batch).
        num_steps: frames per world per update (also the BPTT length).
        stage1_frames: frames with teleporting walks (stage 1); 0 skips the stage.
        stage2_frames: frames with 1 m walks (stage 2); 0 skips the stage.
        lr, gamma, entropy_coef, value_coef, max_grad_norm: A2C (RMSprop) settings.
        alice_simulations: Alice's tree-search simulations.
        max_steps: episode length limit (250).
        split, task_seed: the task set trained on (``tasks.cached_split``).
        seed: the run's seed (initialisation, worlds, actions).
        chunk_updates: updates per compiled chunk (progress, metrics and checkpoints between chunks).
        checkpoint_every: updates between checkpoints (rounded up to chunks; always at the end).
    """

    preset: str = "paper"
    num_envs: int = 16
    num_steps: int = 20
    stage1_frames: int = 1_000_000
    stage2_frames: int = 1_000_000
    lr: float = 1e-4
    gamma: float = 0.95
    entropy_coef: float = 0.01
    value_coef: float = 0.5
    max_grad_norm: float = 0.5
    alice_simulations: int = P.NUM_SIMULATIONS
    max_steps: int = 250
    split: str = "train"
    task_seed: int = 0
    seed: int = 0
    chunk_updates: int = 10
    checkpoint_every: int = 50

    def __post_init__(self) -> None:
        if self.preset not in PRESETS:
            raise ValueError(f"unknown Hybrid preset {self.preset!r}; choose from {sorted(PRESETS)}")
        if self.split not in T.SPLITS:
            raise ValueError(f"unknown task split {self.split!r}; choose from {sorted(T.SPLITS)}")
        positive = ("num_envs", "num_steps", "alice_simulations", "max_steps", "chunk_updates", "checkpoint_every")
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"HybridConfig.{name} must be positive, got {getattr(self, name)}")
        for name in ("stage1_frames", "stage2_frames"):
            frames = getattr(self, name)
            if frames < 0 or 0 < frames < self.frames_per_update:
                raise ValueError(
                    f"HybridConfig.{name} ({frames}) must be 0 (no such stage) or at least one update "
                    f"({self.num_envs} worlds x {self.num_steps} steps = {self.frames_per_update} frames)"
                )
        if self.stage1_frames + self.stage2_frames == 0:
            raise ValueError("HybridConfig: stage1_frames and stage2_frames are both 0; nothing to train")
        for name in ("lr", "max_grad_norm"):
            if not getattr(self, name) > 0:
                raise ValueError(f"HybridConfig.{name} must be positive, got {getattr(self, name)}")
        if not 0 <= self.gamma <= 1:
            raise ValueError(f"HybridConfig.gamma must be in [0, 1], got {self.gamma}")

    @property
    def frames_per_update(self) -> int:
        """Returns ``num_envs * num_steps``."""
        return self.num_envs * self.num_steps

    @property
    def stage_updates(self) -> tuple[int, int]:
        """Returns the updates of stage 1 and of stage 2."""
        return self.stage1_frames // self.frames_per_update, self.stage2_frames // self.frames_per_update

    def a2c(self) -> ppo.PPOConfig:
        """Returns the A2C recipe (``ppo.a2c_config``) of one update of this run."""
        return ppo.a2c_config(
            env_id="household-hybrid",
            network=NETWORK,
            preset=self.preset,
            num_envs=self.num_envs,
            num_steps=self.num_steps,
            recurrence=self.num_steps,
            minibatch_frames=self.frames_per_update,
            total_frames=self.frames_per_update,
            lr=self.lr,
            gamma=self.gamma,
            entropy_coef=self.entropy_coef,
            value_coef=self.value_coef,
            max_grad_norm=self.max_grad_norm,
        )


_TRAINERS: dict[tuple, tuple[ppo.Trainer, Any]] = {}
#: fields that do not change what an update computes (a trainer serves every value)
_RUN_FIELDS = ("stage1_frames", "stage2_frames", "seed", "chunk_updates", "checkpoint_every")


def trainer(config: HybridConfig, teleport: bool, tasks: W.State | None = None) -> ppo.Trainer:
    """Returns the A2C ``Trainer`` of ``config``'s stage with (``teleport``) or without teleporting walks on the
    task bank ``tasks`` (default ``config``'s split), shared by every call with the same update (so a resumed
    run reuses the compiled updates)."""
    tasks = T.cached_split(config.split, config.task_seed).states if tasks is None else tasks
    fields = tuple((k, v) for k, v in dataclasses.asdict(config).items() if k not in _RUN_FIELDS)
    key = (fields, teleport, id(tasks))
    if key not in _TRAINERS:
        params = E.HouseholdParams(tasks=tasks, max_steps=config.max_steps, teleport=teleport)
        E.check_params(params)
        env = HybridEnv(config.alice_simulations)
        if len(_TRAINERS) >= 4:
            _TRAINERS.pop(next(iter(_TRAINERS)))
        _TRAINERS[key] = (ppo.Trainer(config.a2c(), env=env, env_params=params), tasks)  # tasks: keeps its id
    return _TRAINERS[key][0]


def _mean(rows: list[dict[str, Any]], name: str) -> float:
    """Returns the mean of ``name`` over ``rows`` where it is a number (NaN when none is)."""
    values = [r[name] for r in rows if isinstance(r.get(name), (int, float)) and np.isfinite(r[name])]
    return float(np.mean(values)) if values else float("nan")


def _checkpointer(out: Path, config: HybridConfig, model: nn.Module) -> Checkpointer:
    meta = {"kind": "hybrid", "config": dataclasses.asdict(config), **registry.describe(model)}
    return Checkpointer(out / CHECKPOINTS, meta)


def train(
    config: HybridConfig,
    out: str | Path,
    resume: bool = False,
    progress: bool = True,
    *,
    tasks: W.State | None = None,
    stop_after: int | None = None,
) -> dict[str, Any]:
    """Trains the Hybrid's high-level policy (module docstring) into the run directory ``out``.

    Args:
        config: the run.
        out: directory of ``run.json``, ``metrics.csv``/``metrics.json``, ``curves.png`` and ``checkpoints/``.
        resume: continue from the newest checkpoint (same config); gives the uninterrupted run's result.
        progress: show a progress bar.
        tasks: a task bank to train on instead of ``config.split`` (tests; not recorded in the run).
        stop_after: stop after this many updates in all (an interruption); a later ``resume`` finishes.

    Returns:
        The summary (also in ``metrics.json``): updates, frames, per stage updates, the last updates' success
        rate and return, ``steps_per_s`` (env steps per second of the last chunk, after compilation when there
        was more than one chunk), wall time, device and checkpoint.

    Raises:
        ValueError: a directory holding a run without ``resume``, or an incompatible checkpoint.
    """
    out = Path(out)
    n1, n2 = config.stage_updates
    total = n1 + n2 if stop_after is None else min(n1 + n2, stop_after)
    if (out / RUN_JSON).exists() and not resume:
        raise ValueError(f"{out} already holds a run; pass resume to continue it or choose another directory")
    stages = {1: trainer(config, True, tasks) if n1 else None, 2: trainer(config, False, tasks) if n2 else None}
    first = stages[1] or stages[2]
    out.mkdir(parents=True, exist_ok=True)
    checkpointer = _checkpointer(out, config, first.model)
    log = MetricsLog(out)
    resuming = resume and checkpointer.latest_step() is not None
    if resuming:
        checkpointer.check_meta()
    runner = first.init(jax.random.key(config.seed))
    if resuming:
        runner = checkpointer.restore(runner)
        log.truncate("update", int(runner.update))
    elif log.rows:
        log.truncate("update", 0)
    derived = {"frames_per_update": config.frames_per_update, "stage_updates": [n1, n2]}
    derived["num_tasks"] = int(first.env_params.tasks.nodes.cls.shape[0])
    write_json(out / RUN_JSON, {"kind": "hybrid", "config": dataclasses.asdict(config), "derived": derived})
    began = time.perf_counter()
    sps = float("nan")
    last_saved = int(runner.update)
    bar = tqdm(total=n1 + n2, initial=last_saved, unit="upd", desc="hybrid", disable=not progress)
    with bar:
        while int(runner.update) < total:
            stage = 1 if int(runner.update) < n1 else 2
            end = min(n1 if stage == 1 else n1 + n2, total)
            tick = time.perf_counter()
            size = min(config.chunk_updates, n1 + n2)
            runner, metrics = stages[stage].run(runner, size, np.int32(end))
            metrics = jax.device_get(metrics)
            active = metrics.pop("active")
            metrics = {name: values[active] for name, values in metrics.items()}
            elapsed = time.perf_counter() - tick
            rows = metric_rows(metrics, time.perf_counter() - began, config.frames_per_update, elapsed)
            rows = [dict(row, stage=stage) for row in rows]
            log.append(rows)
            sps = rows[-1]["sps"]
            bar.update(len(rows))
            bar.set_postfix(stage=stage, ret=f"{_mean(rows, 'mean_return'):.2f}", sps=f"{sps:.0f}")
            done = int(runner.update)
            if done - last_saved >= config.checkpoint_every or done == total:
                checkpointer.save(done, runner)
                last_saved = done
    checkpointer.close()
    recent = log.rows[-max(1, len(log.rows) // 10) :]
    summary = {
        "title": f"Hybrid A2C ({config.preset}), seed {config.seed}",
        "kind": "hybrid",
        "updates": int(runner.update),
        "frames": int(runner.update) * config.frames_per_update,
        "stage_updates": [n1, n2],
        "success_rate": _mean(recent, "success_rate"),
        "mean_return": _mean(recent, "mean_return"),
        "steps_per_s": sps,
        "wall_s": time.perf_counter() - began,
        "device": jax.devices()[0].device_kind,
        "checkpoint": str(out / CHECKPOINTS / str(int(runner.update))),
    }
    log.finish(summary, x="frames", curves=("success_rate", "mean_return", "entropy"))
    return summary


def load(run: str | Path) -> tuple[HybridPolicy, Any, HybridConfig]:
    """Returns ``(policy, params, config)`` of a Hybrid run directory: the network, its parameters from the
    newest checkpoint and the run's ``HybridConfig``.

    Raises:
        ValueError: not a Hybrid run, an unreadable config, or no checkpoint yet.
    """
    path = Path(run) / RUN_JSON
    info = json.loads(path.read_text()) if path.exists() else {}
    if info.get("kind") != "hybrid":
        raise ValueError(f"{run} is not a Hybrid training run (no {RUN_JSON} of kind 'hybrid')")
    try:
        config = HybridConfig(**info["config"])
    except TypeError as error:
        raise ValueError(f"{run}: run.json holds a config this version does not read: {error}") from error
    policy = HybridPolicy(registry.network_config(NETWORK, config.preset, NUM_CHOICES))
    checkpointer = _checkpointer(Path(run), config, policy)
    try:
        step = checkpointer.check_meta()
    except FileNotFoundError as error:
        raise ValueError(f"{run} has no checkpoint yet") from error
    finally:
        checkpointer.close()
    params = jax.tree_util.tree_map(jnp.asarray, restore_raw(Path(run) / CHECKPOINTS, step)["params"])
    return policy, params, config


def helper_from_run(run: str | Path, greedy: bool = False) -> HybridHelper:
    """Returns the ``HybridHelper`` of a Hybrid run directory (``load``)."""
    policy, params, _ = load(run)
    return HybridHelper(policy, params, greedy)
