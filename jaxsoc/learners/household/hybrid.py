"""Watch-And-Help's Hybrid helper (§5.2, appendix C.3 and C.5): a learned high-level policy chooses a goal
predicate as Bob's subgoal, the regression planner executes it until it is done, and A2C trains the policy with
Alice in the loop, after a behaviour-cloning warm start on the planning helper HP_TG.

- ``HybridEnv``: the single-agent view in which the agent is Bob's high level, a semi-MDP. Its action is one of
  ``NUM_CHOICES = 31``: predicate ``p < 30`` ("put an object of class ``PRED_OBJECT[p]`` on / in the target of
  class ``PRED_TARGET_CLASS[p]``"; holds_book fetches a book, sit_sofa sits on the sofa, as the planner treats
  them) or ``NOOP_CHOICE`` (30, wait). One step is one *option*: the choice is executed for up to
  ``OPTION_STEPS = 24`` primitive steps (a fixed-length ``lax.scan`` with a done mask; the steps after the
  option ended change nothing). Each primitive step Alice (``PlanningAlice``) acts; Bob updates his belief from
  his observation and samples a world from it (``belief.update``, ``belief.sample_world``); the choice becomes
  a one-entry ``planner.Subgoals`` (``predicate_subgoal``, on the instance Bob keeps while it stays a
  candidate) whose first regression-planner action (``planner.subgoal_action``) is Bob's action. The option
  ends (``option_ended``) after the step that satisfies a new instance of its predicate (by either
  character), after a step with nothing to do (wait, the predicate satisfied in Bob's sampled world, no
  candidate object or destination: so a wait lasts one primitive step), when the episode ends (the episode's
  primitive-step limit stays exact), or after 24 steps. Reward (App. C.3): +2 per goal predicate instance newly
  satisfied by either character (-2 per one undone), -0.1 per primitive step, summed over the option's ``tau``
  steps with ``gamma ** k``; ``info["option_discount"] = gamma ** tau`` is the bootstrap's discount, which
  ``ppo.Trainer`` reads into ``gae``. The observation carries ``choice_mask`` bool[31] (``choice_mask``: the
  goal's predicates not seen satisfied, and wait, always open) and the state HP_TG's choice for it
  (``expert_choice``: the predicate of the subgoal the planner's tree search takes first, in a world sampled
  from Bob's belief with Alice's true goal).
- ``HybridPolicy`` (registered as ``"household-hybrid"``): Fig. 18's network, ``StateEncoder`` over Bob's
  observation, a bag-of-predicates goal encoding gating the pooled state, an LSTM (one step per option), actor
  over the 31 choices with the masked ones at ``MASKED_LOGIT`` (sampling, log-probabilities and entropy are the
  masked distribution's), and critic.
- ``train``: ``bc_updates`` cross-entropy steps on HP_TG's choices (``warm_start``, RMSprop; 0 for pure RL),
  then A2C (RMSprop, lr 1e-4, gamma 0.95 per primitive step) in two stages, teleporting walks first, then 1 m
  walks, on the 1,011 training tasks, into a run directory (``run.json``, ``metrics.csv``, ``curves.png``,
  ``bc.csv`` / ``bc.json`` / ``bc.png``, orbax checkpoints; ``resume`` gives the uninterrupted run's result).
- ``HybridHelper``: the trained policy as Bob for ``evaluate.play`` and ``jaxsoc household eval``, keeping each
  choice until its option ends by the same rules; ``HighLevel`` is its high level alone (``high_init``,
  ``high_choose``), for the HRL helper to pair with a learned low level. ``load(run)`` and
  ``helper_from_run(run)`` read a run.

Deviations from the paper: the policy picks one of the 30 predicates (object and target class together) instead
of two independent class heads (the 30 predicates are the only pairs a goal can hold), masked to the goal's open
predicates (the paper's heads range over every class); the goal encoding learns an embedding per predicate
instead of word2vec class vectors; the LSTM also sees the goal encoding and the previous choice next to the
gated state (the paper's gate alone cannot tell which predicates a goal holds once the state is gated); the two
stages follow the released code (teleporting walks, then walking), Alice present in both, where the paper's text
trains stage 1 without Alice. The original code decides every 24 steps whatever happened; here an option also
ends early when its predicate gains an instance or there is nothing left to do, so the high level is not left
idle, and the discount follows the primitive steps (``gamma ** tau``), so a 24-step option is not valued as one
step. The option's end uses the true satisfied counts (under the goal Bob conditions on): the environment's
clock, read the same way by the helper. The warm start (HP_TG as a free expert) is this project's addition, to
start A2C from a policy whose choices already matter.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import time
from pathlib import Path
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
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
from jaxsoc.learners.expert_cloning import bc_loss, expert_rollout
from jaxsoc.learners.household.encoder import StateEncoder
from jaxsoc.learners.networks import registry
from jaxsoc.learners.networks.layers import LSTMCell
from jaxsoc.learners.rl_run import metric_rows
from jaxsoc.learners.run_log import MetricsLog, plot_curves, write_json

BOB = 1
NOOP_CHOICE = PR.NUM_PREDICATES
NUM_CHOICES = PR.NUM_PREDICATES + 1
STEP_PENALTY = 0.1
PREDICATE_REWARD = 2.0
#: the most primitive steps one option (one choice of the high level) lasts: the original code's decision period
OPTION_STEPS = 24
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
    the predicate already satisfied in ``world`` as many times as its goal asks, no candidate object, no
    destination).

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
    open_ = W.satisfied(world)[p] < world.goal_count[p].astype(jnp.int32)
    valid = (choice >= 0) & (choice < NOOP_CHOICE) & open_
    valid = valid & jnp.where(sit, dest >= 0, cand.any() & ((dest >= 0) | holds))
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
) -> tuple[jax.Array, B.Belief, jax.Array, jax.Array]:
    """Returns ``(action int32, belief, obj int32, valid bool)``: Bob's low-level action for ``choice`` in the
    true ``state`` (the regression planner's first action in a world sampled from his updated belief, with the
    goal ``goal_count`` int8[30] / ``goal_target`` int16[30]; a noop when there is nothing to do), his belief
    after this step's observation and sample, the subgoal's object (-1 for none; pass it as ``keep`` next step
    while the choice stays the same) and whether there was something to do (``predicate_subgoal``'s valid)."""
    k_sample, k_pick = jax.random.split(key)
    belief = B.update(belief, state, BOB)
    belief, world = B.sample_world(k_sample, belief, state, BOB)
    world = world.replace(goal_count=goal_count, goal_target=goal_target)
    seen = W.view(state, BOB).visible
    goals = predicate_subgoal(k_pick, world, choice, seen, keep)
    action = P.subgoal_action(world, BOB, goals, jnp.where(goals.valid[0], 0, -1), seen)
    return action, belief, goals.obj[0], goals.valid[0]


def option_ended(choice: jax.Array, valid: jax.Array, before: jax.Array, after: jax.Array, steps: jax.Array):
    """Returns ``bool``: whether the option ``choice`` ends after a primitive step: there was nothing to do
    (``valid`` False: the wait choice, the predicate satisfied in Bob's sampled world, no candidate object or no
    destination; a wait option therefore lasts one primitive step), an instance of the chosen predicate became
    satisfied (``after[p] > before[p]``, the satisfied counts ``int32[30]`` before / after the step, by either
    character) or the option has taken ``steps >= OPTION_STEPS`` primitive steps."""
    p = jnp.clip(choice, 0, PR.NUM_PREDICATES - 1)
    return ~valid | (after[p] > before[p]) | (steps >= OPTION_STEPS)


_PLACES = jnp.asarray((PR.PRED_KIND == PR.ON_KIND) | (PR.PRED_KIND == PR.INSIDE_KIND))


def choice_mask(obs: dict) -> jax.Array:
    """Returns ``bool[..., 31]``: the choices open to the high level from Bob's observation ``obs`` (arrays with
    any leading axes; its ``goal`` / ``goal_target`` filled in): the goal's predicates not seen satisfied (a
    placing predicate with fewer instances seen at its target, ``visible`` objects of its class whose ``parent``
    is the goal's target with the predicate's relation, than the goal asks for; holds_book and sit_sofa while
    they are in the goal, as Bob cannot see whether they hold), and wait (``NOOP_CHOICE``), always open."""
    goal = jnp.asarray(obs["goal"], jnp.int32)
    target = jnp.asarray(obs["goal_target"], jnp.int32)
    cls = jnp.asarray(obs["class"], jnp.int32)[..., None, :]
    parent = jnp.asarray(obs["parent"], jnp.int32)[..., None, :]
    relation = jnp.asarray(obs["parent_relation"], jnp.int32)[..., None, :]
    hit = (
        jnp.asarray(obs["visible"])[..., None, :]
        & (cls == jnp.asarray(PR.PRED_OBJECT, jnp.int32)[:, None])
        & (parent == target[..., :, None])
        & (target[..., :, None] >= 0)
        & (relation == jnp.asarray(_RELATION, jnp.int32)[:, None])
    )
    seen = hit.sum(-1)
    open_ = (goal > 0) & jnp.where(_PLACES, seen < goal, True)
    return jnp.concatenate([open_, jnp.ones(open_.shape[:-1] + (1,), bool)], -1)


def expert_choice(
    key: jax.Array, belief: B.Belief, state: W.State, mask: jax.Array, num_simulations: int = P.NUM_SIMULATIONS
) -> jax.Array:
    """Returns ``int32``: the choice HP_TG (the planning helper given ``state``'s goal, Alice's true one) would
    pursue next: the predicate of the subgoal its tree search (``planner.search`` over ``planner.subgoals`` in
    a world sampled from Bob's ``belief`` updated with this observation) takes first, ``NOOP_CHOICE`` when it
    has none or the predicate is outside ``mask`` (``bool[31]``, ``choice_mask``)."""
    k_sample, k_search = jax.random.split(key)
    belief = B.update(belief, state, BOB)
    _, world = B.sample_world(k_sample, belief, state, BOB)
    world = world.replace(goal_count=state.goal_count, goal_target=state.goal_target)
    seen = W.view(state, BOB).visible
    goals = P.subgoals(world, BOB, seen)
    index, _ = P.search(k_search, world, BOB, goals, num_simulations)
    pred = jnp.where(index >= 0, goals.pred[jnp.maximum(index, 0)], NOOP_CHOICE)
    pred = jnp.where((pred >= 0) & (pred < NOOP_CHOICE), pred, NOOP_CHOICE)
    return jnp.where(mask[pred], pred, NOOP_CHOICE).astype(jnp.int32)


# -- the environment -------------------------------------------------------------------------------------------


class HybridState(struct.PyTreeNode):
    """``world``: the household; ``alice``: Alice's memory; ``belief``: Bob's belief; ``choice`` int32: the
    option chosen at the previous step (-1 at the start); ``subgoal_obj`` int32: its object (-1 none);
    ``expert`` int32: HP_TG's choice for the current observation (``expert_choice``, the warm start's label)."""

    world: W.State
    alice: Any
    belief: B.Belief
    choice: jax.Array
    subgoal_obj: jax.Array
    expert: jax.Array


def observation(world: W.State, goal_count: jax.Array, goal_target: jax.Array, last_choice: jax.Array) -> dict:
    """Returns the policy's observation: Bob's observation (``world.observe``) with the goal ``goal_count`` /
    ``goal_target`` in its ``goal`` / ``goal_target`` fields, ``last_choice`` int32 (the previous choice, -1 at
    the start of an episode) and ``choice_mask`` bool[31] (``choice_mask``)."""
    obs = W.observe(world, BOB, False)
    obs = dict(
        obs,
        goal=jnp.asarray(goal_count, jnp.int8),
        goal_target=jnp.asarray(goal_target, jnp.int16),
        last_choice=jnp.asarray(last_choice, jnp.int32),
    )
    return dict(obs, choice_mask=choice_mask(obs))


def observation_space() -> spaces.Dict:
    """Returns the space of ``HybridEnv``'s observations."""
    base = E.observation_space().spaces
    return spaces.Dict(
        {
            **base,
            "last_choice": spaces.Box(-1, NUM_CHOICES - 1, (), jnp.int32),
            "choice_mask": spaces.Box(0, 1, (NUM_CHOICES,), jnp.bool_),
        }
    )


class HybridEnv(Environment):
    """Bob's high level with a built-in Alice, as a semi-MDP (module docstring): one step is one option of up to
    ``OPTION_STEPS`` primitive steps. params: ``env.HouseholdParams`` (``teleport``: stage 1). ``info``:
    ``advance``'s of the option's last primitive step plus ``alice_action``, ``bob_action`` (that step's),
    ``subgoal_obj``, ``option_steps`` (int32, the primitive steps ``tau`` it took) and ``option_discount``
    (float32 ``gamma ** tau``, the bootstrap's discount).

    Args:
        alice_simulations: Alice's tree-search simulations (``PlanningAlice``), also HP_TG's for
            ``expert_choice``.
        alice: another built-in Alice (an ``env.AlicePolicy``); overrides ``alice_simulations`` for Alice.
        gamma: the discount per primitive step within an option.
        expert: compute HP_TG's choice (``expert_choice``) into the state at every observation (the warm
            start's label; ``NOOP_CHOICE`` without, which spares a tree search per option). The random stream
            is the same either way, so the episodes are too.
    """

    stochastic_step = True

    def __init__(
        self,
        alice_simulations: int = P.NUM_SIMULATIONS,
        alice: E.AlicePolicy | None = None,
        gamma: float = 0.95,
        expert: bool = True,
    ) -> None:
        if alice_simulations < 1:
            raise ValueError(f"alice_simulations must be positive, got {alice_simulations}")
        if not 0 <= gamma <= 1:
            raise ValueError(f"gamma must be in [0, 1], got {gamma}")
        if alice is None:
            alice = AG.PlanningAlice(AG.PlanningAgent(char=0, num_simulations=alice_simulations))
        self.alice = alice
        self.expert_simulations = alice_simulations
        self.gamma = float(gamma)
        self.expert = bool(expert)
        super().__init__()

    def with_expert(self, expert: bool = True) -> HybridEnv:
        """Returns this environment (same Alice, simulations and gamma) with ``expert`` on or off."""
        return type(self)(self.expert_simulations, alice=self.alice, gamma=self.gamma, expert=expert)

    def default_params(self) -> E.HouseholdParams:
        return E.params_for("train")

    def _observe(self, state: HybridState) -> dict:
        world = state.world
        return observation(world, world.goal_count, world.goal_target, state.choice)

    def _expert(self, key: jax.Array, state: HybridState) -> jax.Array:
        if not self.expert:
            return jnp.int32(NOOP_CHOICE)
        mask = self._observe(state)["choice_mask"]
        return expert_choice(key, state.belief, state.world, mask, self.expert_simulations)

    def reset_env(self, key, params):
        k_task, k_alice, k_expert = jax.random.split(key, 3)
        world = E.draw_task(k_task, params)
        state = HybridState(
            world=world,
            alice=self.alice.init(k_alice, world, params),
            belief=B.init(world),
            choice=jnp.int32(-1),
            subgoal_obj=jnp.int32(-1),
            expert=jnp.int32(NOOP_CHOICE),
        )
        state = state.replace(expert=self._expert(k_expert, state))
        return self._observe(state), state

    def _primitive(self, key, state: HybridState, choice, keep, params):
        """Returns ``(state, reward, terminated, truncated, info, valid)`` after one primitive step of both
        characters, Bob executing ``choice`` (``execute``)."""
        k_alice, k_bob, k_step = jax.random.split(key, 3)
        world = state.world
        alice_obs = W.observe(world, 0, params.goal_for[0])
        alice_action, alice = self.alice.act(k_alice, state.alice, alice_obs, world, params)
        bob_action, belief, obj, valid = execute(
            k_bob, state.belief, world, world.goal_count, world.goal_target, choice, keep
        )
        before = W.progress(world)[0]
        world, _, terminated, truncated, info = E.advance(k_step, world, jnp.stack([alice_action, bob_action]), params)
        reward = PREDICATE_REWARD * (info["achieved"] - before) - STEP_PENALTY
        info = dict(info, alice_action=alice_action, bob_action=bob_action, subgoal_obj=obj)
        state = state.replace(world=world, alice=alice, belief=belief, choice=choice, subgoal_obj=obj)
        return state, reward.astype(jnp.float32), terminated, truncated, info, valid

    def _transition(self, key, state: HybridState, action, params):
        k_steps, k_expert = jax.random.split(key)
        choice = jnp.asarray(action, jnp.int32)
        keep0 = jnp.where(choice == state.choice, state.subgoal_obj, -1)
        gamma = jnp.float32(self.gamma)
        shapes = jax.eval_shape(lambda s: self._primitive(k_steps, s, choice, keep0, params)[4], state)
        info0 = jax.tree_util.tree_map(lambda x: jnp.zeros(x.shape, x.dtype), shapes)

        def body(carry, k):
            st, alive, tau, ret, disc, term, trunc, info = carry
            keep = jnp.where(tau == 0, keep0, st.subgoal_obj)
            sat = W.satisfied(st.world)
            new, reward, t, tr, step_info, valid = self._primitive(k, st, choice, keep, params)
            ended = option_ended(choice, valid, sat, step_info["satisfied"], tau + 1) | t | tr
            pick = lambda a, b: jax.tree_util.tree_map(lambda x, y: jnp.where(alive, x, y), a, b)  # noqa: E731
            carry = (
                pick(new, st),
                alive & ~ended,
                jnp.where(alive, tau + 1, tau),
                jnp.where(alive, ret + disc * reward, ret),
                jnp.where(alive, disc * gamma, disc),
                jnp.where(alive, t, term),
                jnp.where(alive, tr, trunc),
                pick(step_info, info),
            )
            return carry, None

        no = jnp.array(False)
        carry = (state, jnp.array(True), jnp.int32(0), jnp.float32(0.0), jnp.float32(1.0), no, no, info0)
        carry, _ = jax.lax.scan(body, carry, jax.random.split(k_steps, OPTION_STEPS))
        state, _, tau, ret, disc, terminated, truncated, info = carry
        state = state.replace(expert=self._expert(k_expert, state))
        info = dict(info, option_steps=tau, option_discount=disc, expert_choice=state.expert)
        return state, ret, terminated, truncated, info

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
_OBS_KEYS += ("agent_visible", "goal", "last_choice", "choice_mask")
MASKED_LOGIT = -1e9


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
        """Returns ``(log_probs float32[B, num_actions], value float32[B], memory)``; the choices outside
        ``obs["choice_mask"]`` (bool[B, 31]) get the logit ``MASKED_LOGIT`` before the softmax, so they are never
        sampled and carry no probability (log-probabilities and the entropy are the masked distribution's)."""
        _, pooled, _ = self.encoder(obs, train)
        previous = self.previous(jnp.clip(obs["last_choice"].astype(jnp.int32) + 1, 0, NUM_CHOICES))
        x = jnp.concatenate([context["gate"] * pooled, context["goal"], previous], -1)
        (h, c), out = self.lstm((memory["h"], memory["c"]), nn.relu(self.inputs(x)))
        logits = jnp.where(obs["choice_mask"], self.actor(out), MASKED_LOGIT)
        return jax.nn.log_softmax(logits), self.critic(out)[:, 0], {"h": h, "c": c}

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
    something to do), its object ``subgoal_obj`` (-1 none) and ``satisfied`` int32[30] the satisfied counts
    (under the goal it conditions on) at the previous step."""

    belief: B.Belief
    goal_count: jax.Array
    goal_target: jax.Array
    high: HighMemory
    subgoal_obj: jax.Array
    choice: jax.Array
    since: jax.Array
    valid: jax.Array
    satisfied: jax.Array


@dataclasses.dataclass(frozen=True)
class HybridHelper:
    """The Hybrid helper as Bob (an agent for ``evaluate.play``): ``policy`` and its ``params`` choose an option
    (``greedy``: the most likely choice, else sampled) which Bob keeps, the regression planner executing it in a
    world sampled from his belief each primitive step (``execute``), until it ends as ``HybridEnv``'s options do
    (``option_ended``: nothing to do, an instance of its predicate newly satisfied or the predicate satisfied,
    ``OPTION_STEPS`` steps); then the policy chooses again. It helps with the goal of the state its ``init``
    gets (``play`` passes the inferred goal there)."""

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
            choice=jnp.int32(-1),
            since=jnp.int32(0),
            valid=jnp.array(False),
            satisfied=jnp.zeros(PR.NUM_PREDICATES, jnp.int32),
        )

    def act(self, key: jax.Array, memory: HybridMemory, state: W.State, partner: Any = None):
        """Returns ``(action int32, memory)`` for this step in the true ``state``: the current option's action, or
        a new option's first one when the last ended (or none was chosen yet)."""
        k_high, k_low = jax.random.split(key)
        mine = state.replace(goal_count=memory.goal_count, goal_target=memory.goal_target)
        satisfied = W.satisfied(mine)
        ended = option_ended(memory.choice, memory.valid, memory.satisfied, satisfied, memory.since)
        ended = ended | (memory.choice < 0)
        obs = observation(state, memory.goal_count, memory.goal_target, memory.high.last_choice)
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
        )
        return action.astype(jnp.int32), memory


# -- training --------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class HybridConfig:
    """A Hybrid training run (``train``).

    Attributes:
        preset: the network's preset (``"paper"`` d=128, ``"tiny"`` d=16).
        num_envs: worlds stepped in parallel (the A2C batch).
        num_steps: frames per world per update (also the BPTT length).
        stage1_frames: frames with teleporting walks (stage 1); 0 skips the stage.
        stage2_frames: frames with 1 m walks (stage 2); 0 skips the stage. A frame is one option (one choice of
            the high level, up to ``OPTION_STEPS`` primitive steps).
        lr, gamma, entropy_coef, value_coef, max_grad_norm: A2C (RMSprop) settings; ``gamma`` discounts each
            primitive step (an option of ``tau`` steps is discounted by ``gamma ** tau``).
        bc_updates: gradient steps of the warm start before A2C (``warm_start``: behaviour cloning of HP_TG's
            choices, ``expert_choice``); 0 is pure A2C.
        bc_epochs: warm-start gradient steps on each batch of ``num_envs x num_steps`` expert frames collected.
        bc_lr: the warm start's RMSprop learning rate.
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
    bc_updates: int = 100
    bc_epochs: int = 4
    bc_lr: float = 1e-3
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
        if self.bc_updates < 0:
            raise ValueError(f"HybridConfig.bc_updates must be 0 (no warm start) or positive, got {self.bc_updates}")
        if self.bc_epochs < 1:
            raise ValueError(f"HybridConfig.bc_epochs must be positive, got {self.bc_epochs}")
        for name in ("lr", "max_grad_norm", "bc_lr"):
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
_RUN_FIELDS += ("bc_updates", "bc_epochs", "bc_lr")


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
        env = HybridEnv(config.alice_simulations, gamma=config.gamma, expert=False)
        if len(_TRAINERS) >= 4:
            _TRAINERS.pop(next(iter(_TRAINERS)))
        _TRAINERS[key] = (ppo.Trainer(config.a2c(), env=env, env_params=params), tasks)  # tasks: keeps its id
    return _TRAINERS[key][0]


BC_CSV, BC_JSON, BC_PNG = "bc.csv", "bc.json", "bc.png"


_BC_PROGRAMS: dict[tuple, Any] = {}


def _bc_program(tr: ppo.Trainer, config: HybridConfig):
    """Returns ``(program, env, tr)`` for ``tr``'s worlds (cached): ``env`` is ``tr``'s environment with the
    expert on, ``program`` the jitted warm-start step ``(params, opt_state, carry, key) -> (params, opt_state,
    carry, metrics)``: one expert batch collected (``expert_rollout``) and ``bc_epochs`` RMSprop steps on it;
    ``metrics`` are ``bc_loss``'s on the fresh batch before the steps (``first_*``) and after the last but one
    step (``last_*``)."""
    key = (id(tr), config.bc_epochs, config.bc_lr, config.num_steps, config.max_grad_norm)
    if key in _BC_PROGRAMS:
        return _BC_PROGRAMS[key]
    tx = _bc_optimizer(config)
    grad = jax.value_and_grad(functools.partial(bc_loss, tr.model), has_aux=True)
    env = tr.env.with_expert(True)

    @jax.jit
    def program(params, opt_state, carry, key):
        carry, (obs, mask, expert) = expert_rollout(env, tr.env_params, key, carry, config.num_steps)

        def epoch(state, _):
            params, opt_state = state
            (_, metrics), grads = grad(params, obs, mask, expert)
            updates, opt_state = tx.update(grads, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state), metrics

        (params, opt_state), metrics = jax.lax.scan(epoch, (params, opt_state), None, length=config.bc_epochs)
        summary = {f"first_{k}": v[0] for k, v in metrics.items()}
        summary.update({f"last_{k}": v[-1] for k, v in metrics.items()})
        return params, opt_state, carry, summary

    if len(_BC_PROGRAMS) >= 4:
        _BC_PROGRAMS.pop(next(iter(_BC_PROGRAMS)))
    _BC_PROGRAMS[key] = (program, env, tr)  # tr: keeps its id
    return _BC_PROGRAMS[key]


def _bc_optimizer(config: HybridConfig) -> optax.GradientTransformation:
    return optax.chain(
        optax.clip_by_global_norm(config.max_grad_norm), optax.rmsprop(config.bc_lr, decay=0.99, eps=1e-5)
    )


def warm_start(
    config: HybridConfig, tr: ppo.Trainer, params: Any, key: jax.Array, progress: bool = False
) -> tuple[Any, list[dict[str, Any]]]:
    """Returns ``(params, rows)``: the policy's ``params`` after ``config.bc_updates`` behaviour-cloning steps
    on HP_TG's choices (RMSprop, ``bc_lr``; a fresh batch of ``num_envs x num_steps`` expert frames from
    ``tr``'s worlds every ``bc_epochs`` steps, the worlds continuing from batch to batch), and one row per batch:
    ``update`` (steps so far), ``frames`` (expert frames so far), ``seconds``, and ``bc_loss``'s metrics on the
    fresh batch before its steps (``first_*``) and after its last step but one (``last_*``)."""
    program, env, _ = _bc_program(tr, config)
    opt_state = _bc_optimizer(config).init(params)
    k_reset, key = jax.random.split(key)
    reset = jax.jit(jax.vmap(env.reset_env, in_axes=(0, None)))
    obs, states = reset(jax.random.split(k_reset, config.num_envs), tr.env_params)
    carry = (obs, states, jnp.ones(config.num_envs, bool))
    batches = -(-config.bc_updates // config.bc_epochs)
    rows: list[dict[str, Any]] = []
    began = time.perf_counter()
    for b in tqdm(range(batches), unit="batch", desc="hybrid warm start", disable=not progress):
        params, opt_state, carry, metrics = program(params, opt_state, carry, jax.random.fold_in(key, b))
        metrics = {k: float(v) for k, v in jax.device_get(metrics).items()}
        frames = (b + 1) * config.frames_per_update
        rows.append(
            dict(update=(b + 1) * config.bc_epochs, frames=frames, seconds=time.perf_counter() - began, **metrics)
        )
    return params, rows


def _write_bc(out: Path, rows: list[dict[str, Any]], summary: dict[str, Any]) -> None:
    """Writes the warm start's ``bc.csv`` (one row per batch), ``bc.json`` (``summary``) and ``bc.png``."""
    fields = list(rows[0])
    lines = [",".join(fields)] + [",".join(str(r[k]) for k in fields) for r in rows]
    (out / BC_CSV).write_text("\n".join(lines) + "\n")
    write_json(out / BC_JSON, summary)
    curves = ("first_loss", "first_accuracy", "first_entropy")
    plot_curves(rows, out / BC_PNG, "frames", curves, "Hybrid warm start (behaviour cloning of HP_TG)")


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
    if config.bc_updates and not resuming:  # the warm start (a resumed run has it in its checkpoints)
        tick = time.perf_counter()
        warm, bc_rows = warm_start(
            config, first, runner.params, jax.random.fold_in(jax.random.key(config.seed), 1), progress
        )
        runner = runner.replace(params=warm)
        bc = {"seconds": time.perf_counter() - tick, "updates": bc_rows[-1]["update"], "frames": bc_rows[-1]["frames"]}
        _write_bc(out, bc_rows, dict(bc, first=bc_rows[0], last=bc_rows[-1]))
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
    if (out / BC_JSON).exists():
        summary["bc"] = json.loads((out / BC_JSON).read_text())
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
