"""Watch-And-Help's HRL helper (the paper's §5.2 and appendix C.3-C.4): a learned low-level policy that
achieves one subgoal predicate, trained alone with A2C, under the Hybrid's learned high-level policy.

- ``SubgoalEnv``: Bob alone (Alice idles) with one ON / INSIDE predicate of the task's goal, drawn at random
  each episode, as his objective (the multi-task setting of Shu et al. 2017). Rewards: +10 when he grabs an
  object of that class not yet in place (phase ``"grab"``, which then terminates) or when the predicate gains
  an instance over the episode's start (phase ``"put"``, which then terminates), plus a closeness term:
  ``reward="shaped"`` (default) potential-based shaping ``gamma * phi(s') - phi(s)`` with ``phi`` minus 0.1
  per metre still to walk (``potential``: to the nearest loose object in phase "grab"; in phase "put" on from
  it to the destination, or from Bob to the destination while he holds it), so holding an object earns
  nothing by itself; ``reward="paper"`` (C.4) +0.05 on every step Bob ends close to an object of the class
  (held ones included) or to its destination. ``truncated`` at ``max_steps``. The observation adds the
  subgoal, its destination, ``valid`` (``world.valid_actions``, with ``mask_invalid``) and ``time_left``.
- ``LowLevelPolicy`` (Fig. 17, registered as ``"household-low"``): the shared ``StateEncoder``'s token
  embeddings, a subgoal encoding (learned embeddings of the object and target classes, concatenated, Linear
  ``d``), attention vectors ``sigma_object, sigma_type = sigmoid(Linear(goal))``; object logits
  ``Linear(sigma_object * token)`` over the 88 node tokens (invisible ones masked) plus a learned "Null"; an
  LSTM over ``sigma_type * pooled state``, the subgoal encoding, the destination's token and ``time_left``
  gives the value and action-type logits, to which each target's gated token adds its own (the type given
  the target). The world action ``verb * 88 + target`` has ``log pi_object[target] + log pi_type[verb |
  target]``, with Null merged into target 0 (the world reads the target of a noop as nothing), renormalised
  over the ``valid`` actions of the 968 ids (the others get probability 0).
- ``expert_action``: the regression planner (``planner.subgoal_action``) for a subgoal episode, a free
  teacher that knows where unseen objects lie; ``belief_action``: a teacher limited to what Bob knows (what he
  sees, the rooms he has stood in, where objects are commonly kept), which a policy can imitate on its own
  states; ``imitate``: the DAgger warm start on either (``HRLConfig.imitation_frames``, ``teacher``). A
  ``belief`` network (presets ``*-belief``, ``tiny-marks``) marks the rooms visited and may walk to the
  destination out of sight, as that teacher does; ``marks`` adds ``subgoal_marks`` to its node tokens.
- ``train(config, out)``: the warm start, then A2C (``ppo.a2c_config``: RMSprop, lr 1e-3) in the paper's two
  phases, "grab" then "put" from the grab phase's parameters, on the 1,011 training tasks; run directory
  with ``run.json``, ``metrics.csv`` (``phase`` column), ``curves.png``, ``imitation.csv`` / ``.json`` /
  ``.png``, orbax checkpoints; ``resume`` ends where an uninterrupted run does. ``load(run)`` gives the
  trained policy.
- ``HRLHelper``: Bob for ``evaluate.play``: the high level (the Hybrid's, ``high_init`` / ``high_choose``) picks
  a predicate of the goal Bob was given (at every step, or with ``commit`` as an option kept until it gains an
  instance or times out), the low level picks his world action for it.
- ``subgoal_success``: the share of episodes in which the low level alone grabs an object of its predicate's
  class, and the share in which it achieves the predicate (the paper's diagnosis: it grabs but does not put).

Deviations from the paper: the subgoal's destination node is part of the observation (``subgoal_target``) and
marks its token with a learned vector, since 41% of the training tasks have two kitchen tables and class
names alone cannot tell which one the goal means; the action type also depends on the target's token and
the action set is masked to valid actions (the paper's variant: ``mask_invalid=False``); class embeddings are
learned (not word2vec); the "put" phase goes on training the one policy from the grab phase's parameters (the
paper trains a second policy that calls the grab policy whenever it samples "grab"); the auxiliary closeness
classifier is left out (the ``ppo.Trainer`` has no auxiliary loss). The paper's recipe is
``reward="paper"``, ``mask_invalid=False``, ``imitation_frames=0``.
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
from jaxsoc.core.autoreset import select_rows
from jaxsoc.core.env import Environment
from jaxsoc.envs.household import classes as C
from jaxsoc.envs.household import env as E
from jaxsoc.envs.household import predicates as PR
from jaxsoc.envs.household import tasks as T
from jaxsoc.envs.household import world as W
from jaxsoc.envs.household.agents import planner as P
from jaxsoc.learners import ppo
from jaxsoc.learners.checkpoint import Checkpointer, latest_step, restore_raw
from jaxsoc.learners.household.encoder import StateEncoder
from jaxsoc.learners.networks import registry
from jaxsoc.learners.networks.layers import LSTMCell
from jaxsoc.learners.run_log import MetricsLog, plot_curves, write_json

PHASES = ("grab", "put")
REWARDS = ("shaped", "paper")
CLOSE_BONUS, EVENT_REWARD = 0.05, 10.0
SHAPING = 0.1  # reward per metre of walking distance gained towards the phase's goal (``potential``)
NONE = PR.NUM_PREDICATES  # the high level's "no subgoal"
#: the predicates a low-level episode can draw (ON / INSIDE)
SUBGOAL_KINDS = np.isin(PR.PRED_KIND, (PR.ON_KIND, PR.INSIDE_KIND))
_RELATION = np.where(PR.PRED_KIND == PR.INSIDE_KIND, C.INSIDE, C.ON_TOP).astype(np.int8)
_MASKED = -1e9  # the logit of an invisible node: probability exactly 0, and 0 * logit = 0 in the entropy
RUN_JSON, CHECKPOINTS, KIND = "run.json", "checkpoints", "hrl-low"

# -- the single-agent subgoal environment ----------------------------------------------------------------


class SubgoalParams(struct.PyTreeNode):
    """``household``: the task bank (``env.HouseholdParams``; its ``tasks`` and ``step_length`` are used, its
    own ``max_steps``, ``teleport``, ``reward`` and ``goal_for`` are not); ``max_steps`` (250); ``gamma`` the
    discount of the shaping term (``reward="shaped"``); static: ``phase`` (``PHASES``: the phase of the worlds
    ``reset_env`` makes), ``teleport`` (walks arrive at once), ``reward`` (``REWARDS``: ``"shaped"``, the
    potential-based closeness term, or ``"paper"``, the paper's +0.05 closeness bonus) and ``mask_invalid``
    (the observation's ``valid`` holds ``world.valid_actions``; else every action is marked valid)."""

    household: E.HouseholdParams
    max_steps: int = 250
    gamma: float = 0.99
    phase: str = struct.field(pytree_node=False, default="grab")
    teleport: bool = struct.field(pytree_node=False, default=False)
    reward: str = struct.field(pytree_node=False, default="shaped")
    mask_invalid: bool = struct.field(pytree_node=False, default=True)

    @property
    def step_length(self):
        """Returns the metres of a walk step (``world.transition`` reads it with ``teleport``)."""
        return self.household.step_length


def check_subgoal_params(params: SubgoalParams) -> None:
    """Raises ``ValueError`` for an unknown phase, a non-positive ``max_steps``, a bank of the wrong layout, or
    a task whose goal has no ON / INSIDE predicate with a target."""
    if params.phase not in PHASES:
        raise ValueError(f"unknown subgoal phase {params.phase!r}; choose from {list(PHASES)}")
    if params.reward not in REWARDS:
        raise ValueError(f"unknown subgoal reward {params.reward!r}; choose from {list(REWARDS)}")
    if int(params.max_steps) < 1:
        raise ValueError(f"max_steps must be positive, got {params.max_steps}")
    E.check_params(params.household)
    tasks = params.household.tasks
    usable = (np.asarray(tasks.goal_count) > 0) & SUBGOAL_KINDS & (np.asarray(tasks.goal_target) >= 0)
    if not usable.any(1).all():
        bad = int(np.flatnonzero(~usable.any(1))[0])
        raise ValueError(f"task {bad} of the bank has no ON / INSIDE goal predicate for a subgoal episode")


def subgoal_params(
    split: str = "train", seed: int = 0, phase: str = "grab", max_steps: int = 250, teleport: bool = False, **kw
) -> SubgoalParams:
    """Returns checked ``SubgoalParams`` on task set ``split`` of ``seed`` (``tasks.SPLITS``); ``kw``: the other
    fields (``reward``, ``mask_invalid``, ``gamma``)."""
    params = SubgoalParams(E.params_for(split, seed), max_steps=max_steps, phase=phase, teleport=teleport, **kw)
    check_subgoal_params(params)
    return params


def _pursue(world: W.State, pred: jax.Array, obj: jax.Array, exists: jax.Array, seen: jax.Array) -> jax.Array:
    """Returns ``int32``: ``planner.subgoal_action`` for Bob placing object ``obj`` as predicate ``pred`` asks
    (noop unless ``exists``), with ``seen`` bool[N] the nodes he sees."""
    one = lambda x: jnp.asarray(x, jnp.int32)[None]  # noqa: E731
    goals = P.Subgoals(pred=one(pred), obj=one(obj), dest=one(world.goal_target[pred]), valid=exists[None])
    return P.subgoal_action(world, 1, goals, jnp.where(exists, 0, -1), seen)


def expert_action(state: SubgoalState) -> jax.Array:
    """Returns ``int32``: the regression planner's action (``planner.subgoal_action``) for Bob's subgoal in
    ``state``: deliver the object of the class he holds (not yet in place), else fetch one: a visible one if
    any, the nearest by walking distance; noop when none is left. A walk to a node Bob does not see (furniture
    of another room) becomes a walk to that node's room, so every action names a node in Bob's observation. The
    planner reads the true world (where an unseen object lies), so it is a privileged teacher."""
    world, pred = state.world, state.pred
    holder = W.holders(world)
    loose = _loose(world, pred)
    mine = loose & (holder == 1)
    free = loose & (holder < 0)
    seen = W.view(world, 1, holder).visible
    anchor, rooms = W.anchors(world, holder), W.node_rooms(world, holder)
    me_room, me_pos = world.chars.room[1], world.chars.pos[1]
    dist = jax.vmap(walk_distance, (None, None, None, 0, 0))(world, me_room, me_pos, rooms, anchor)
    pick = jnp.where(free & seen, dist, jnp.where(free, dist + 1e3, jnp.inf))
    obj = jnp.where(mine.any(), jnp.argmax(mine), jnp.argmin(pick))
    action = _pursue(world, pred, obj, mine.any() | free.any(), seen)
    verb, target = W.decode_action(action)
    elsewhere = (verb == W.V["walk"]) & ~seen[target]  # unseen furniture of another room: go to that room first
    return jnp.where(elsewhere, W.encode_action("walk", rooms[target]), action).astype(jnp.int32)


_MAY_HOLD = C.placement_tables()[0]  # [object class, container class]: objects of the class may start inside


def belief_action(state: SubgoalState) -> jax.Array:
    """Returns ``int32``: a teacher for the subgoal that knows only what Bob knows (his observation, the rooms he
    has stood in, ``state.visited``, and the common knowledge of where objects are kept, ``classes.PLACEMENT``):

    1. holding an object of the class not yet in place: deliver it (``planner.subgoal_action``: walk to the
       destination, whose place is known even out of sight; open it if it is a closed container; put);
    2. else an object of the class in view: the nearest (straight line) is fetched (walk to it, grab);
    3. else a closed container in view where such objects are kept: the nearest is walked to and opened;
    4. else the nearest room (straight line to its centre) Bob has not stood in yet: walk there;
    5. else noop.

    Every choice reads the observation (positions relative to Bob, the ``visited`` rooms, the destination) so a
    policy can imitate it without guessing where unseen objects lie (``expert_action`` knows)."""
    world, pred = state.world, state.pred
    nodes = world.nodes
    holder = W.holders(world)
    loose = _loose(world, pred)
    v = W.view(world, 1, holder)
    mine = loose & (holder == 1)
    free = loose & (holder < 0) & v.visible
    dist = jnp.linalg.norm(W.anchors(world, holder) - world.chars.pos[1], axis=-1)
    obj = jnp.where(mine.any(), jnp.argmax(mine), jnp.argmin(jnp.where(free, dist, jnp.inf)))
    have = mine.any() | free.any()
    pursue = _pursue(world, pred, obj, have, v.visible)
    closed = ((nodes.properties & C.CAN_OPEN) > 0) & ((nodes.states & C.OPEN) == 0)
    kept = jnp.asarray(_MAY_HOLD)[jnp.asarray(PR.PRED_OBJECT)[pred], nodes.cls]
    boxes = kept & closed & v.visible & (jnp.asarray(W.NODE_KIND) == 2) & (nodes.cls > 0)
    box = jnp.argmin(jnp.where(boxes, dist, jnp.inf))
    open_box = jnp.where(v.close[box], W.encode_action("open", box), W.encode_action("walk", box))
    unseen = ~state.visited & (nodes.cls[: W.NUM_ROOMS] > 0)
    room = jnp.argmin(jnp.where(unseen, dist[: W.NUM_ROOMS], jnp.inf))
    search = jnp.where(boxes.any(), open_box, jnp.where(unseen.any(), W.encode_action("walk", room), 0))
    return jnp.where(have, pursue, search).astype(jnp.int32)


#: the warm start's teachers (``HRLConfig.teacher``): the privileged planner, or one limited to Bob's knowledge
TEACHERS = {"planner": expert_action, "belief": belief_action}


class SubgoalState(struct.PyTreeNode):
    """``world``: the household; ``pred`` int32: the subgoal predicate; ``start`` int32: its instances at the
    episode's start (the "put" phase ends when there are more); ``phase`` int32: the index of the world's phase
    in ``PHASES``, which its auto-resets keep (so a trainer moves its worlds to the curriculum's next phase by
    setting it, without a new compiled program: ``with_phase``); ``visited`` bool[4]: the rooms Bob has stood in
    during the episode (his record of where he has looked; ``belief_action`` and the observation read it)."""

    world: W.State
    pred: jax.Array
    start: jax.Array
    phase: jax.Array
    visited: jax.Array


def visit(visited: jax.Array, world: W.State) -> jax.Array:
    """Returns ``visited`` (bool[4], the rooms Bob has stood in) with Bob's room in ``world`` added."""
    return visited | (jnp.arange(W.NUM_ROOMS) == world.chars.room[1])


def with_phase(state: SubgoalState, phase: str) -> SubgoalState:
    """Returns ``state`` (any leading axes) with every world in ``phase`` from now on."""
    return state.replace(phase=jnp.full_like(state.phase, PHASES.index(phase)))


def placed_count(world: W.State, pred: jax.Array) -> jax.Array:
    """Returns ``int32``: the objects of ``pred``'s class ON / INSIDE its goal target (``world.satisfied`` for
    one ON / INSIDE predicate)."""
    return _in_place(world, pred).sum().astype(jnp.int32)


def _in_place(world: W.State, pred: jax.Array) -> jax.Array:
    """Returns ``bool[N]``: the objects of ``pred``'s class already ON / INSIDE its target."""
    nodes = world.nodes
    cls = jnp.asarray(PR.PRED_OBJECT)[pred]
    return (
        (nodes.cls == cls)
        & (nodes.parent == world.goal_target[pred])
        & (nodes.relation == jnp.asarray(_RELATION)[pred])
    )


def subgoal_observation(
    obs: dict,
    pred: jax.Array,
    goal_target: jax.Array,
    valid: jax.Array,
    time_left: jax.Array,
    visited: jax.Array,
) -> dict[str, jax.Array]:
    """Returns Bob's observation ``obs`` (``world.observe``) for subgoal ``pred``: with ``subgoal`` int32 (the
    predicate), ``subgoal_target`` int16 (its destination node, ``goal_target[pred]``), ``valid`` bool[968]
    (the world actions Bob may take: ``world.valid_actions`` flattened, or all True), ``time_left``
    float32 (the share of the episode's steps left, in [0, 1]) and ``visited`` bool[4] (the rooms Bob has stood
    in while pursuing the subgoal)."""
    pred = jnp.asarray(pred, jnp.int32)
    target = goal_target[jnp.clip(pred, 0, PR.NUM_PREDICATES - 1)].astype(jnp.int16)
    extra = {"valid": valid.reshape(W.NUM_ACTIONS), "time_left": jnp.asarray(time_left, jnp.float32)}
    return {**obs, "subgoal": pred, "subgoal_target": target, **extra, "visited": jnp.asarray(visited, bool)}


def valid_mask(world: W.State, mask_invalid: bool) -> jax.Array:
    """Returns ``bool[968]``: Bob's valid world actions (``world.valid_actions``), or all True without
    ``mask_invalid``."""
    if not mask_invalid:
        return jnp.ones(W.NUM_ACTIONS, bool)
    return W.valid_actions(world, 1).reshape(W.NUM_ACTIONS)


def _observe(state: SubgoalState, params: SubgoalParams) -> dict[str, jax.Array]:
    world = state.world
    left = jnp.clip(1.0 - world.step / params.max_steps, 0.0, 1.0)
    valid = valid_mask(world, params.mask_invalid)
    obs = W.observe(world, 1, False)
    return subgoal_observation(obs, state.pred, world.goal_target, valid, left, state.visited)


# -- walking distances and the shaping potential ----------------------------------------------------------


def walk_distance(world: W.State, room: jax.Array, pos: jax.Array, to_room: jax.Array, to_pos: jax.Array):
    """Returns ``float32``: the metres a walk from ``pos`` in ``room`` to ``to_pos`` in ``to_room`` covers
    (``world._walk``'s route: through the doors of the route with fewest doors, straight within a room)."""
    door_pos = world.nodes.pos[W.DOOR0 : W.FURNITURE0]
    total = jnp.float32(0.0)
    for _ in range(W.NUM_ROOMS):
        arrived = room == to_room
        door = jnp.maximum(world.next_door[room, to_room], 0)
        way = jnp.where(arrived, to_pos, door_pos[door])
        total = total + jnp.linalg.norm(way - pos)
        a, b = world.door_rooms[door, 0], world.door_rooms[door, 1]
        room = jnp.where(arrived, room, jnp.where(a == room, b, a))
        pos = way
    return total


def _loose(world: W.State, pred: jax.Array) -> jax.Array:
    """Returns ``bool[N]``: the objects of ``pred``'s class not yet in place (Alice holds nothing here)."""
    return (world.nodes.cls == jnp.asarray(PR.PRED_OBJECT)[pred]) & ~_in_place(world, pred)


def potential(world: W.State, pred: jax.Array, phase: jax.Array) -> jax.Array:
    """Returns ``float32``: the shaping potential ``-SHAPING * metres still to walk`` for subgoal ``pred``.

    Phase "grab" (``phase`` 0): the walk to the nearest object of the class not yet in place and not held.
    Phase "put": when Bob holds such an object, the walk to the destination; otherwise the shortest walk to an
    object and on from it to the destination. A held object never adds anything by being held: holding one
    where it lay leaves the potential unchanged (only carrying it towards the destination raises it). 0 when
    no object is left."""
    holder = W.holders(world)
    anchor, rooms = W.anchors(world, holder), W.node_rooms(world, holder)
    me_room, me_pos = world.chars.room[1], world.chars.pos[1]
    dest = world.goal_target[pred]
    dest_room, dest_pos = rooms[dest], anchor[dest]
    loose = _loose(world, pred)
    free = loose & (holder < 0)
    held = (loose & (holder == 1)).any()
    to_obj = jax.vmap(walk_distance, (None, None, None, 0, 0))(world, me_room, me_pos, rooms, anchor)
    on_to_dest = jax.vmap(walk_distance, (None, 0, 0, None, None))(world, rooms, anchor, dest_room, dest_pos)
    fetch = jnp.where(phase == PHASES.index("grab"), to_obj, to_obj + on_to_dest)
    best = jnp.where(free, fetch, jnp.inf).min()
    carry = walk_distance(world, me_room, me_pos, dest_room, dest_pos)
    metres = jnp.where(held & (phase != PHASES.index("grab")), carry, best)
    return jnp.where(jnp.isfinite(metres), -SHAPING * metres, 0.0).astype(jnp.float32)


def observation_space() -> spaces.Dict:
    """Returns the space of ``SubgoalEnv``'s observation: Bob's (``env.observation_space``) and the subgoal."""
    extra = {
        "subgoal": spaces.Box(0, PR.NUM_PREDICATES - 1, (), jnp.int32),
        "subgoal_target": spaces.Box(-1, W.NUM_NODES - 1, (), jnp.int16),
        "valid": spaces.Box(0, 1, (W.NUM_ACTIONS,), jnp.bool_),
        "time_left": spaces.Box(0.0, 1.0, (), jnp.float32),
        "visited": spaces.Box(0, 1, (W.NUM_ROOMS,), jnp.bool_),
    }
    return spaces.Dict({**E.observation_space().spaces, **extra})


class SubgoalEnv(Environment):
    """Bob alone with one subgoal predicate (module docstring); Alice stays put (noop). A world's phase is its
    state's (``SubgoalState.phase``): ``params.phase`` at ``reset``, kept by the auto-resets of ``step``.
    Actions: world actions (``Discrete(11 * 88)``); observations: ``subgoal_observation``. ``info``: ``success``
    (the phase's event:
    the episode terminated), ``grabbed`` (an object of the predicate's class, not yet in place, grabbed this
    step), ``placed`` (the predicate has more instances than at the start), ``action_valid`` bool[2],
    ``episode_steps``."""

    stochastic_step = True

    def default_params(self) -> SubgoalParams:
        return subgoal_params()

    def start(
        self, world: W.State, pred: jax.Array, phase: str = "grab", params: SubgoalParams | None = None
    ) -> tuple[dict, SubgoalState]:
        """Returns ``(obs, state)`` of an episode of ``phase`` from ``world`` with subgoal ``pred`` (``params``:
        the observation's settings, ``SubgoalParams``' defaults when None)."""
        pred = jnp.asarray(pred, jnp.int32)
        count = placed_count(world, pred)
        visited = visit(jnp.zeros(W.NUM_ROOMS, bool), world)
        phase = jnp.int32(PHASES.index(phase))
        state = SubgoalState(world=world, pred=pred, start=count, phase=phase, visited=visited)
        return _observe(state, SubgoalParams(None) if params is None else params), state

    def reset_env(self, key, params):
        k_task, k_pred = jax.random.split(key)
        world = E.draw_task(k_task, params.household)
        usable = (world.goal_count > 0) & jnp.asarray(SUBGOAL_KINDS) & (world.goal_target >= 0)
        pred = jax.random.categorical(k_pred, jnp.where(usable, 0.0, -jnp.inf))
        return self.start(world, pred, params.phase, params)

    def _transition(self, key, state: SubgoalState, action, params: SubgoalParams):
        world, pred = state.world, state.pred
        loose = _loose(world, pred)
        before = potential(world, pred, state.phase) if params.reward == "shaped" else jnp.float32(0.0)
        action = jnp.asarray(action, jnp.int32)
        world, info = W.transition(key, world, jnp.stack([jnp.int32(0), action]), params)
        world = world.replace(step=world.step + 1)
        verb, node = W.decode_action(action)
        grabbed = info["action_valid"][1] & (verb == W.V["grab"]) & loose[node]
        placed = placed_count(world, pred) > state.start
        terminated = jnp.where(state.phase == PHASES.index("grab"), grabbed, placed)
        truncated = ~terminated & (world.step >= params.max_steps)
        if params.reward == "shaped":  # gamma * phi(s') - phi(s), phi(terminal) = 0
            after = jnp.where(terminated, 0.0, potential(world, pred, state.phase))
            closeness = params.gamma * after - before
        else:  # the paper's: close to an object of the class (held ones included) or to the destination
            close = W.view(world, 1).close
            near = (close & (world.nodes.cls == jnp.asarray(PR.PRED_OBJECT)[pred])).any()
            closeness = CLOSE_BONUS * (near | close[world.goal_target[pred]])
        reward = (closeness + EVENT_REWARD * terminated).astype(jnp.float32)
        info = dict(info, success=terminated, grabbed=grabbed, placed=placed, episode_steps=world.step)
        return state.replace(world=world, visited=visit(state.visited, world)), reward, terminated, truncated, info

    def step_env(self, key, state, action, params):
        state, reward, terminated, truncated, info = self._transition(key, state, action, params)
        return _observe(state, params), state, reward, terminated, truncated, info

    def _auto_reset_step(self, key, state, action, params):
        """As ``env.HelperEnv._auto_reset_step``: the state is selected first and observed once."""
        key, key_reset = jax.random.split(key)
        stepped, reward, terminated, truncated, info = self._transition(key, state, action, params)
        _, fresh = self.reset_env(key_reset, params)
        fresh = fresh.replace(phase=stepped.phase)
        state = jax.tree_util.tree_map(lambda a, b: jnp.where(terminated | truncated, a, b), fresh, stepped)
        info = dict(info, final_observation=_observe(stepped, params), final_state=stepped)
        return _observe(state, params), state, reward, terminated, truncated, info

    def action_space(self, params=None) -> spaces.Discrete:
        return spaces.Discrete(W.NUM_ACTIONS)

    def observation_space(self, params=None) -> spaces.Dict:
        return observation_space()

    def render(self, state, params=None):
        from jaxsoc.envs.household.render import render

        return render(state.world)


# -- the low-level policy --------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class LowLevelConfig:
    """Hyper-parameters of ``LowLevelPolicy``: ``d`` the embedding width (even, a multiple of ``heads``),
    ``heads`` the Transformer's heads, ``memory_dim`` the LSTM's size, ``num_actions`` the world's 968;
    ``belief``: the policy reads the rooms Bob has stood in (``obs["visited"]``, a learned vector added to those
    rooms' tokens) and may walk to the destination out of sight (its place is known; ``belief_action``'s
    setting). Without it (the default, and every run before it) only visible targets can be chosen. ``marks``
    (needs ``belief``): every node token also reads ``subgoal_marks`` (through a Linear)."""

    d: int = 128
    heads: int = 2
    memory_dim: int = 128
    num_actions: int = W.NUM_ACTIONS
    belief: bool = False
    marks: bool = False

    def __post_init__(self) -> None:
        for name in ("d", "heads", "memory_dim"):
            if getattr(self, name) < 1:
                raise ValueError(f"LowLevelConfig.{name} must be positive, got {getattr(self, name)}")
        if self.d % 2 or self.d % self.heads:
            raise ValueError(f"LowLevelConfig.d ({self.d}) must be even and a multiple of heads ({self.heads})")
        if self.marks and not self.belief:
            raise ValueError("LowLevelConfig.marks needs belief=True")
        if self.num_actions != W.NUM_ACTIONS:
            raise ValueError(
                f"the low-level policy acts in the world's {W.NUM_ACTIONS} actions, not {self.num_actions}"
            )


PRESETS = {
    "paper": LowLevelConfig(),
    "tiny": LowLevelConfig(d=16, memory_dim=16),
    "paper-belief": LowLevelConfig(belief=True),
    "small-belief": LowLevelConfig(d=32, memory_dim=32, belief=True),
    "tiny-belief": LowLevelConfig(d=16, memory_dim=16, belief=True),
    "tiny-marks": LowLevelConfig(d=16, memory_dim=16, belief=True, marks=True),
}


NUM_MARKS = 3


def subgoal_marks(obs: dict) -> jax.Array:
    """Returns ``float32[B, 88, NUM_MARKS]``: for each visible node of a batch of ``SubgoalEnv`` observations,
    whether it is an object of the subgoal's class, whether that object is already in place (its parent the
    destination, with the predicate's relation), and whether it is a piece of furniture where objects of the
    class are kept inside (``classes.PLACEMENT``, common knowledge): the class comparisons a narrow network
    makes poorly from embeddings."""
    pred = jnp.clip(obs["subgoal"].astype(jnp.int32), 0, PR.NUM_PREDICATES - 1)[:, None]
    cls, visible = obs["class"].astype(jnp.int32), obs["visible"].astype(bool)
    wanted = jnp.asarray(PR.PRED_OBJECT)[pred]
    is_object = visible & (cls == wanted)
    relation = obs["parent_relation"].astype(jnp.int32) == jnp.asarray(_RELATION)[pred]
    in_place = is_object & (obs["parent"] == obs["subgoal_target"][:, None]) & relation
    keeps = visible & jnp.asarray(_MAY_HOLD)[wanted, cls] & (jnp.asarray(W.NODE_KIND) == 2)
    return jnp.stack([is_object, in_place, keeps], -1).astype(jnp.float32)


def check_observations(config: LowLevelConfig, space: Any) -> None:
    """Raises ``ValueError`` unless ``space`` has the subgoal keys and Bob's node observation."""
    needed = {"subgoal", "subgoal_target", "valid", "time_left", "class", "visible"}
    if config.belief:
        needed.add("visited")
    missing = sorted(needed - set(getattr(space, "spaces", {})))
    if missing:
        raise ValueError(f"the household low-level policy needs observations {missing}, which the env lacks")


class LowLevelPolicy(nn.Module):
    """The HRL's low-level policy (module docstring, Fig. 17); ``config`` a ``LowLevelConfig``. Memory: the
    LSTM's ``{"h", "c"}`` float32[B, memory_dim]; no per-episode context (the subgoal may change within an
    episode of the helper)."""

    config: LowLevelConfig

    def setup(self) -> None:
        c = self.config
        self.encoder = StateEncoder(c.d, c.heads)
        self.classes = nn.Embed(C.NUM_CLASSES, c.d)
        self.goal = nn.Dense(c.d)
        self.sigma_object = nn.Dense(c.d)
        self.sigma_type = nn.Dense(c.d)
        self.destination = self.param("destination", nn.initializers.normal(1.0), (c.d,))
        self.null = self.param("null", nn.initializers.normal(1.0), (c.d,))
        if c.belief:
            self.visited_room = self.param("visited_room", nn.initializers.normal(1.0), (c.d,))
        if c.marks:
            self.marks = nn.Dense(c.d, use_bias=False)
        self.object_head = nn.Dense(1)
        self.lstm = LSTMCell(c.memory_dim)
        self.type_head = nn.Dense(W.NUM_VERBS)
        self.node_type_head = nn.Dense(W.NUM_VERBS)
        self.query = nn.Dense(c.d)
        self.critic = nn.Dense(1)

    def initial_memory(self, batch: int) -> dict[str, jax.Array]:
        """Returns ``{"h", "c"}``: zeros float32[batch, memory_dim]."""
        zeros = jnp.zeros((batch, self.config.memory_dim), jnp.float32)
        return {"h": zeros, "c": zeros}

    def encode_context(self, obs: dict) -> tuple:
        """Returns ``()``: the subgoal is read at every step."""
        return ()

    def step(self, obs: dict, context: tuple, memory: dict, train: bool = False):
        """Returns ``(log_probs float32[B, 968], value float32[B], memory)`` for a batch of ``SubgoalEnv``
        observations; ``log_probs[b, verb * 88 + target]`` is a normalised joint log-probability, ``_MASKED``
        (probability 0) where the target is an invisible node other than 0 (and, with ``belief``, other than the
        destination) or the action is not ``valid``."""
        nodes, pooled, _ = self.encoder(obs, train)
        n, batch = W.NUM_NODES, obs["subgoal"].shape[0]
        nodes = nodes[:, :n]
        pred = jnp.clip(obs["subgoal"].astype(jnp.int32), 0, PR.NUM_PREDICATES - 1)
        classes = jnp.stack([jnp.asarray(PR.PRED_OBJECT)[pred], jnp.asarray(PR.PRED_TARGET_CLASS)[pred]], -1)
        goal = self.goal(self.classes(classes.astype(jnp.int32)).reshape(batch, -1))  # [B, d]
        target = obs["subgoal_target"].astype(jnp.int32)
        is_destination = jnp.arange(n) == target[:, None]  # [B, N]
        nodes = nodes + is_destination[..., None] * self.destination
        selectable = obs["visible"].astype(bool)
        if self.config.belief:  # the rooms already searched are marked; the destination's place is known
            been = jnp.zeros((batch, n), bool).at[:, : W.NUM_ROOMS].set(obs["visited"].astype(bool))
            nodes = nodes + been[..., None] * self.visited_room
            selectable = selectable | is_destination
        if self.config.marks:
            nodes = nodes + self.marks(subgoal_marks(obs))
        destination = jnp.take_along_axis(nodes, jnp.clip(target, 0, n - 1)[:, None, None], 1)[:, 0]  # [B, d]
        sigma_object, sigma_type = nn.sigmoid(self.sigma_object(goal)), nn.sigmoid(self.sigma_type(goal))
        # the LSTM reads the gated state, the subgoal, its destination's token, what Bob holds and the time left
        relation = obs["relation"].astype(jnp.int32)
        holds = (relation == C.REL_HOLDS_RH) | (relation == C.REL_HOLDS_LH)  # [B, N]
        held = (nodes * holds[..., None]).sum(1)  # [B, d]: the held objects' tokens, summed
        time_left = obs["time_left"].astype(jnp.float32)[:, None]
        lstm_in = jnp.concatenate([sigma_type * pooled, goal, destination, held, time_left], -1)
        (h, c), _ = self.lstm((memory["h"], memory["c"]), lstm_in)
        # object logits: the gated token's own score plus its match with a query from the LSTM's state
        query = self.query(h)  # [B, d]
        node_logits = self.object_head(sigma_object[:, None] * nodes)[..., 0] + jnp.einsum("bnd,bd->bn", nodes, query)
        node_logits = jnp.where(selectable, node_logits, _MASKED)
        null_logit = self.object_head(sigma_object * self.null)  # [B, 1]
        log_object = jax.nn.log_softmax(jnp.concatenate([node_logits, null_logit], -1))
        log_target = log_object[:, :n].at[:, 0].set(jnp.logaddexp(log_object[:, 0], log_object[:, n]))
        # the action type given the target: the LSTM's logits plus the gated target token's own
        per_node = self.node_type_head(sigma_object[:, None] * nodes)  # [B, N, 11]
        log_type = jax.nn.log_softmax(self.type_head(h)[:, None, :] + per_node, -1)  # [B, N, 11]
        joint = (log_type.transpose(0, 2, 1) + log_target[:, None, :]).reshape(batch, -1)
        log_probs = jax.nn.log_softmax(jnp.where(obs["valid"].astype(bool), joint, _MASKED))
        return log_probs, self.critic(h)[:, 0], {"h": h, "c": c}

    def __call__(self, obs: dict, memory: dict, train: bool = False):
        """Returns ``step(obs, (), memory, train)``."""
        return self.step(obs, self.encode_context(obs), memory, train)


registry.register("household-low", registry.NetworkSpec(LowLevelPolicy, LowLevelConfig, PRESETS, check_observations))


# -- training --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class HRLConfig:
    """A low-level training run: A2C (``ppo.a2c_config``: RMSprop, lr 1e-3, one gradient step per update of
    ``num_envs x num_steps`` frames, BPTT over the update) in two phases, ``grab_frames`` of "grab" then
    ``put_frames`` of "put" from the grab phase's parameters.

    Attributes:
        preset: the network's preset (``PRESETS``: "paper" d=128, "tiny" d=16).
        seed: model initialisation, worlds, actions.
        split, task_seed: the task set (the 1,011 "train" tasks by default).
        tasks: a task file (``tasks.save``, ``jaxsoc household tasks``) to train on instead of ``split``.
        num_envs: worlds stepped in parallel (the paper's batch of 32).
        num_steps: frames per world per update.
        grab_frames, put_frames: frames of each phase (about the paper's 100,000 and 26,000 episodes, at ~50
            and ~100 steps an episode).
        max_steps: episode length limit while training: 100, shorter than an evaluation episode's 250 (a
            subgoal takes tens of steps; longer episodes mostly add close-bonus steps).
        teleport: walks arrive at once (the evaluation's default, ``HouseholdParams``, walks 1 m a step).
        lr, entropy_coef, gamma: A2C settings.
        reward: ``"shaped"`` (potential-based shaping on walking distance, ``potential``: a held object earns
            nothing by being held) or ``"paper"`` (+0.05 on every step close to an object of the class, held
            ones included, or to the destination).
        mask_invalid: the policy may only take ``world.valid_actions`` (else only invisible targets are
            masked, as in the paper).
        imitation_frames: frames of the warm start before A2C (0: none, the paper's recipe): behaviour cloning
            of the regression planner (``expert_action``) on full subgoal episodes, DAgger-style (the frames'
            actions come from the expert with probability ``beta``, falling linearly from 1 to 0 over the
            first three quarters, else from the learner; every frame is labelled with the expert's action).
        teacher: the warm start's labels (``TEACHERS``): ``"planner"`` (``expert_action``, which knows where
            unseen objects lie) or ``"belief"`` (``belief_action``, limited to what Bob knows; needs a preset
            whose network has ``belief``, e.g. ``"tiny-belief"``).
        imitation_lr, imitation_epochs: Adam's learning rate and its steps on each batch of the warm start.
        chunk_updates: updates per compiled call (progress, metrics and checkpoints between chunks).
        checkpoint_every: updates between checkpoints (rounded up to chunks; always at a phase's end).
        eval_episodes: episodes of ``subgoal_success`` at the end, in the training bank and in ``heldout``'s
            (0 skips it), each of at most ``eval_steps`` steps.
        heldout: the task split of the held-out apartments for the final evaluation ("": none).
    """

    preset: str = "paper"
    seed: int = 0
    split: str = "train"
    task_seed: int = 0
    tasks: str | None = None
    num_envs: int = 32
    num_steps: int = 20
    grab_frames: int = 5_000_000
    put_frames: int = 2_600_000
    max_steps: int = 100
    teleport: bool = False
    lr: float = 1e-3
    entropy_coef: float = 0.01
    gamma: float = 0.99
    reward: str = "shaped"
    mask_invalid: bool = True
    imitation_frames: int = 0
    teacher: str = "planner"
    imitation_lr: float = 3e-3
    imitation_epochs: int = 4
    chunk_updates: int = 10
    checkpoint_every: int = 100
    eval_episodes: int = 256
    eval_steps: int = 50
    heldout: str = "test-1"

    def __post_init__(self) -> None:
        if self.preset not in PRESETS:
            raise ValueError(f"unknown preset {self.preset!r}; choose from {sorted(PRESETS)}")
        for split in (self.split, self.heldout or self.split):
            if split not in T.SPLITS:
                raise ValueError(f"unknown task split {split!r}; choose from {sorted(T.SPLITS)}")
        if self.reward not in REWARDS:
            raise ValueError(f"unknown reward {self.reward!r}; choose from {list(REWARDS)}")
        if self.teacher not in TEACHERS:
            raise ValueError(f"unknown teacher {self.teacher!r}; choose from {sorted(TEACHERS)}")
        if self.teacher == "belief" and not PRESETS[self.preset].belief:
            belief = sorted(name for name, c in PRESETS.items() if c.belief)
            raise ValueError(
                f"teacher 'belief' walks to the destination out of sight, which preset {self.preset!r}'s network "
                f"cannot choose; use one of {belief}"
            )
        if self.imitation_frames < 0 or not self.imitation_lr > 0:
            raise ValueError("HRLConfig needs imitation_frames >= 0 and imitation_lr > 0")
        names = (
            "num_envs",
            "num_steps",
            "max_steps",
            "chunk_updates",
            "checkpoint_every",
            "eval_steps",
            "imitation_epochs",
        )
        for name in names:
            if getattr(self, name) < 1:
                raise ValueError(f"HRLConfig.{name} must be positive, got {getattr(self, name)}")
        for name in ("grab_frames", "put_frames"):
            if getattr(self, name) < self.frames_per_update:
                raise ValueError(
                    f"HRLConfig.{name} ({getattr(self, name)}) is less than one update "
                    f"({self.num_envs} x {self.num_steps} = {self.frames_per_update} frames)"
                )
        if not self.lr > 0 or self.entropy_coef < 0 or not 0 <= self.gamma <= 1 or self.eval_episodes < 0:
            raise ValueError("HRLConfig needs lr > 0, entropy_coef >= 0, gamma in [0, 1] and eval_episodes >= 0")

    @property
    def frames_per_update(self) -> int:
        """Returns ``num_envs * num_steps``."""
        return self.num_envs * self.num_steps

    def updates(self, phase: str) -> int:
        """Returns the updates of ``phase``."""
        return (self.grab_frames if phase == "grab" else self.put_frames) // self.frames_per_update

    def a2c(self) -> ppo.PPOConfig:
        """Returns the ``PPOConfig`` of one update (``total_frames``: one update; the phases count their own)."""
        frames = self.frames_per_update
        return ppo.a2c_config(
            env_id="WatchAndHelp-Subgoal",
            network="household-low",
            preset=self.preset,
            num_envs=self.num_envs,
            num_steps=self.num_steps,
            recurrence=self.num_steps,
            minibatch_frames=frames,
            total_frames=frames,
            lr=self.lr,
            entropy_coef=self.entropy_coef,
            gamma=self.gamma,
            pool_resets=False,  # a household reset is one gather: no pools needed
        )

    def params(self, phase: str, split: str | None = None) -> SubgoalParams:
        """Returns the checked environment of ``phase`` on the run's tasks (or on task set ``split``)."""
        if split is not None:
            bank = T.cached_split(split, self.task_seed).states
        else:
            bank = T.load(self.tasks).states if self.tasks else T.cached_split(self.split, self.task_seed).states
        params = SubgoalParams(
            E.HouseholdParams(tasks=bank),
            self.max_steps,
            self.gamma,
            phase,
            self.teleport,
            self.reward,
            self.mask_invalid,
        )
        check_subgoal_params(params)
        return params


#: config fields that do not change what the updates compute (free to differ on resume)
_SCHEDULE_FIELDS = ("chunk_updates", "checkpoint_every", "eval_episodes", "eval_steps", "heldout")
IMITATION_CSV, IMITATION_PNG, IMITATION_STEPS = "imitation.csv", "imitation.png", 20


@functools.partial(jax.jit, static_argnames=("policy", "tx", "num_steps", "epochs", "teacher"))
def _imitation_update(
    policy, tx, params, opt_state, carry, beta, env_params, num_steps: int, epochs: int, teacher: str = "planner"
):
    """One DAgger update: ``num_steps`` frames in every world (actions: the teacher's with probability ``beta``,
    else sampled from the policy), labelled by ``TEACHERS[teacher]``, then ``epochs`` Adam steps on the
    cross-entropy of the labels (BPTT over the frames). ``carry``: ``(obs, states, memory, done, key)`` of the
    worlds. Returns ``(params, opt_state, carry, metrics)``: ``loss`` (mean cross-entropy before the first
    step), ``accuracy`` (the policy's mode equal to the label, before it), ``episodes`` ended and their
    ``successes``."""
    env = SubgoalEnv()
    step = jax.vmap(env.step, in_axes=(0, 0, 0, None))
    obs, states, memory, done, key = carry
    start_memory = registry.reset_memory(memory, 1.0 - done.astype(jnp.float32))

    def act(c, k):
        obs, states, memory, done = c
        k_act, k_mix, k_step = jax.random.split(k, 3)
        mask = 1.0 - done.astype(jnp.float32)
        memory = registry.reset_memory(memory, mask)
        log_probs, _, memory = policy.apply({"params": params}, obs, (), memory, method="step")
        label = jax.vmap(TEACHERS[teacher])(states)
        own = jax.random.categorical(k_act, log_probs).astype(jnp.int32)
        action = jnp.where(jax.random.uniform(k_mix, label.shape) < beta, label, own)
        new_obs, states, _, terminated, truncated, info = step(
            jax.random.split(k_step, label.shape[0]), states, action, env_params
        )
        ended = terminated | truncated
        return (new_obs, states, memory, ended), (obs, mask, label, ended, info["success"])

    key, k_run = jax.random.split(key)
    (obs, states, memory, done), (seq_obs, masks, labels, ended, success) = jax.lax.scan(
        act, (obs, states, memory, done), jax.random.split(k_run, num_steps)
    )
    # a label counts when the policy can take it (a valid action on a visible target, or the destination)
    node = labels % W.NUM_NODES
    seen = jnp.take_along_axis(seq_obs["visible"], node[..., None], -1)[..., 0] | (node == 0)
    seen = seen | ((node == seq_obs["subgoal_target"]) & policy.config.belief)
    usable = (jnp.take_along_axis(seq_obs["valid"], labels[..., None], -1)[..., 0] & seen).astype(jnp.float32)

    def loss_fn(p):
        def body(m, x):
            o, mask, label = x
            log_probs, _, m = policy.apply({"params": p}, o, (), registry.reset_memory(m, mask), method="step")
            picked = jnp.take_along_axis(log_probs, label[:, None], -1)[:, 0]
            return m, (picked, jnp.argmax(log_probs, -1) == label)

        _, (picked, right) = jax.lax.scan(body, start_memory, (seq_obs, masks, labels))
        weight = usable / jnp.maximum(usable.sum(), 1.0)
        return -(picked * weight).sum(), (right * weight).sum()

    def epoch(carry, _):
        params, opt_state = carry
        (loss, accuracy), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), (loss, accuracy)

    (params, opt_state), (loss, accuracy) = jax.lax.scan(epoch, (params, opt_state), None, length=epochs)
    metrics = {"loss": loss[0], "accuracy": accuracy[0], "episodes": ended.sum(), "successes": (ended & success).sum()}
    return params, opt_state, (obs, states, memory, done, key), metrics


def imitation_optimizer(config: HRLConfig) -> optax.GradientTransformation:
    """Returns the warm start's optimizer: Adam at ``config.imitation_lr`` after clipping the global norm to 1."""
    return optax.chain(optax.clip_by_global_norm(1.0), optax.adam(config.imitation_lr))


def imitate(
    config: HRLConfig, params: Any, key: jax.Array, model: nn.Module, progress: bool = False
) -> tuple[Any, list[dict]]:
    """Returns ``(params, rows)``: ``params`` after ``config.imitation_frames`` frames of DAgger (on
    ``config.teacher``'s labels) on the "put"
    phase's worlds (``_imitation_update``; ``num_envs`` worlds, ``IMITATION_STEPS`` frames per update, ``beta``
    falling linearly from 1 to 0 over the first three quarters of the updates), and
    one row per update (``update``, ``frames``, ``beta``, ``loss``, ``accuracy``, ``episodes``,
    ``success_rate`` of the episodes that ended)."""
    env_params = config.params("put")
    frames = config.num_envs * IMITATION_STEPS
    updates = max(1, config.imitation_frames // frames)
    tx = imitation_optimizer(config)
    opt_state = tx.init(params)
    k_reset, key = jax.random.split(key)
    obs, states = jax.vmap(SubgoalEnv().reset, in_axes=(0, None))(
        jax.random.split(k_reset, config.num_envs), env_params
    )
    carry = (obs, states, model.initial_memory(config.num_envs), jnp.zeros(config.num_envs, bool), key)
    rows = []
    for u in tqdm(range(updates), unit="upd", desc="hrl imitation", disable=not progress):
        beta = max(0.0, 1.0 - u / max(1.0, updates * 0.75))
        params, opt_state, carry, m = _imitation_update(
            model,
            tx,
            params,
            opt_state,
            carry,
            jnp.float32(beta),
            env_params,
            IMITATION_STEPS,
            config.imitation_epochs,
            config.teacher,
        )
        m = {k: np.asarray(v).item() for k, v in jax.device_get(m).items()}
        rate = m["successes"] / m["episodes"] if m["episodes"] else float("nan")
        rows.append({"update": u + 1, "frames": (u + 1) * frames, "beta": beta, **m, "success_rate": rate})
    return params, rows


@functools.lru_cache(maxsize=8)
def _cached_trainer(config: HRLConfig) -> ppo.Trainer:
    return ppo.Trainer(config.a2c(), env=SubgoalEnv(), env_params=config.params("grab"))


def trainer(config: HRLConfig) -> ppo.Trainer:
    """Returns the run's ``ppo.Trainer`` (both phases: a world's phase is in its state, ``with_phase``), shared
    by the configs that differ only in what does not change an update (seed, frames, schedule), so a resumed
    run reuses the compiled updates."""
    one = config.frames_per_update
    fixed = dict(seed=0, grab_frames=one, put_frames=one, chunk_updates=1, checkpoint_every=1, eval_episodes=0)
    return _cached_trainer(dataclasses.replace(config, **fixed))


def _meta(config: HRLConfig, model: nn.Module) -> dict[str, Any]:
    fields = {k: v for k, v in dataclasses.asdict(config).items() if k not in _SCHEDULE_FIELDS}
    return {"kind": KIND, "config": fields, **registry.describe(model)}


def _phase_summary(rows: list[dict], phase: str) -> dict[str, Any]:
    """Returns a phase's updates, frames and its last tenth's per-episode means (weighted by episodes)."""
    rows = [r for r in rows if r["phase"] == phase]
    out: dict[str, Any] = {"updates": len(rows)}
    tail = [r for r in rows[-max(1, len(rows) // 10) :] if r["episodes"]]
    for name in ("success_rate", "mean_return", "mean_length"):
        weights = sum(r["episodes"] for r in tail)
        out[name] = sum(r[name] * r["episodes"] for r in tail) / weights if weights else None
    return out


def train(
    config: HRLConfig, out: str | Path, resume: bool = False, progress: bool = True, stop_after: int | None = None
) -> dict[str, Any]:
    """Trains the low-level policy (``HRLConfig``) into run directory ``out``; returns the summary.

    ``out`` gets ``run.json`` (kind, config, model, updates per phase), ``metrics.csv`` (one row per update:
    ``phase``, ``update`` and ``frames`` counted over both phases, ``success_rate`` (share of the update's
    ended episodes that achieved the phase's event), ``mean_return``, ``mean_length``, the losses, ``sps``),
    ``metrics.json`` and ``curves.png``, and ``checkpoints/`` (step = updates over both phases). The "put"
    phase starts from the grab phase's final parameters with a fresh optimizer and fresh worlds; both phases
    run the same compiled update (``trainer``: a world's phase is part of its state).
    ``resume`` continues from the newest checkpoint and ends where an uninterrupted run ends. ``stop_after``
    stops after that many updates in all (an interruption, for tests).

    Summary: ``phases`` (per phase: updates, and the last tenth's success rate, return, length),
    ``steps_per_s`` (env steps per second of training, the first compiled chunk of each phase left out when
    there are others), ``frames``, ``updates``, ``complete``, ``wall_s``, ``device``, ``checkpoint`` and, with
    ``eval_episodes``, ``subgoal`` (``subgoal_success`` on the "put" phase's environment).

    Raises:
        ValueError: a directory holding a run without ``resume``, or a checkpoint of another config.
    """
    began = time.perf_counter()
    out = Path(out)
    if (out / RUN_JSON).exists() and not resume:
        raise ValueError(f"{out} already holds a run; pass resume to continue it or choose another directory")
    tr = trainer(config)
    updates = {phase: config.updates(phase) for phase in PHASES}
    total = sum(updates.values())
    stop = total if stop_after is None else min(total, stop_after)
    checkpointer = Checkpointer(out / CHECKPOINTS, _meta(config, tr.model))
    done = checkpointer.latest_step() if resume else None
    if done is not None:
        checkpointer.check_meta()
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / RUN_JSON, {**_meta(config, tr.model), "config": dataclasses.asdict(config), "updates": updates})
    log = MetricsLog(out)
    log.truncate("update", done or 0)
    key = jax.random.key(config.seed)
    timed = {"frames": 0, "seconds": 0.0, "all_frames": 0, "all_seconds": 1e-9, "began": began}
    bar = tqdm(total=total, initial=done or 0, unit="upd", desc="hrl low level", disable=not progress)
    warm = None
    if config.imitation_frames and done is None:  # the warm start (a resumed run has it in its checkpoints)
        tick = time.perf_counter()
        warm, rows = imitate(config, tr.init(jax.random.fold_in(key, 0)).params, jax.random.fold_in(key, 7), tr.model)
        imitation = {"seconds": time.perf_counter() - tick, "frames": rows[-1]["frames"], "last": rows[-1]}
        if config.eval_episodes:
            imitation["subgoal"] = _evaluate(tr.model, {"params": warm}, config)
        _write_imitation(out, rows, imitation)
    with bar:
        runner, offset = None, 0
        for p, phase in enumerate(PHASES):
            if (done or 0) <= offset + updates[phase] and stop > offset:  # not finished before, reached now
                fresh = tr.init(jax.random.fold_in(key, p))
                fresh = fresh.replace(env_states=with_phase(fresh.env_states, phase))
                if done is not None and done > offset:
                    runner = checkpointer.restore(fresh, done)  # resumed inside this phase (or at its end)
                elif runner is not None:
                    runner = fresh.replace(params=runner.params)  # from the previous phase's parameters
                elif warm is not None:
                    runner = fresh.replace(params=warm)  # from the warm start
                else:
                    runner = fresh
                runner = _run_phase(tr, runner, phase, offset, updates, stop, config, checkpointer, log, bar, timed)
                done = offset + int(runner.update)
            offset += updates[phase]
    checkpointer.close()
    frames = int(done or 0) * config.frames_per_update
    steady = timed["frames"] > 0
    summary: dict[str, Any] = {
        "title": f"HRL low level ({config.preset}), seed {config.seed}",
        "kind": KIND,
        "phases": {phase: _phase_summary(log.rows, phase) for phase in PHASES},
        "updates": int(done or 0),
        "frames": frames,
        "complete": (done or 0) >= total,
        "steps_per_s": timed["frames"] / timed["seconds"] if steady else timed["all_frames"] / timed["all_seconds"],
        "wall_s": time.perf_counter() - began,
        "device": jax.devices()[0].device_kind,
        "checkpoint": str(out / CHECKPOINTS / str(int(done or 0))),
    }
    if (out / IMITATION_CSV).exists():
        summary["imitation"] = json.loads((out / "imitation.json").read_text())
    if summary["complete"] and config.eval_episodes and runner is not None:
        summary.update(_evaluate(tr.model, {"params": runner.params}, config))
    log.finish(summary, x="frames", curves=("success_rate", "mean_return", "mean_length"))
    return summary


def _evaluate(model: nn.Module, variables: Any, config: HRLConfig) -> dict[str, Any]:
    """Returns ``{"subgoal": ..., "subgoal_heldout": ...}``: ``subgoal_success`` over ``eval_episodes``
    episodes of at most ``eval_steps`` steps in the run's tasks and in ``heldout``'s (held-out apartments; left
    out when ``heldout`` is "")."""
    out = {}
    for name, split in (("subgoal", None), ("subgoal_heldout", config.heldout))[: 2 if config.heldout else 1]:
        params = config.params("put", split).replace(max_steps=config.eval_steps)
        out[name] = subgoal_success(model, variables, params, config.eval_episodes, seed=config.seed + 1)
    return out


def _write_imitation(out: Path, rows: list[dict], imitation: dict[str, Any]) -> None:
    """Writes the warm start's ``imitation.csv`` (one row per update), ``imitation.json`` and
    ``imitation.png`` (loss, accuracy and success rate against frames)."""
    fields = list(rows[0])
    lines = [",".join(fields)] + [",".join(str(r[k]) for k in fields) for r in rows]
    (out / IMITATION_CSV).write_text("\n".join(lines) + "\n")
    write_json(out / "imitation.json", imitation)
    plot_curves(rows, out / IMITATION_PNG, "frames", ("loss", "accuracy", "success_rate"), "HRL warm start (DAgger)")


def _run_phase(tr, runner, phase, offset, updates, stop, config, checkpointer, log, bar, timed):
    """Runs ``phase``'s remaining updates (up to ``updates[phase]``, or the run's ``stop``) in chunks of one
    compiled length for both phases; returns the runner. Rows, checkpoints and timings go to ``log``,
    ``checkpointer`` and ``timed``."""
    size = min(config.chunk_updates, *updates.values())
    last_saved = int(runner.update)
    first_chunk = True
    end = min(updates[phase], stop - offset)
    while int(runner.update) < end:
        tick = time.perf_counter()
        runner, metrics = tr.run(runner, size, np.int32(end))
        metrics = jax.device_get(metrics)
        active = metrics.pop("active")
        metrics = {name: values[active] for name, values in metrics.items()}
        elapsed = time.perf_counter() - tick
        frames = len(metrics["update"]) * config.frames_per_update
        timed["all_frames"] += frames
        timed["all_seconds"] += elapsed
        if not first_chunk:
            timed["frames"] += frames
            timed["seconds"] += elapsed
        first_chunk = False
        rows = []
        for i in range(len(metrics["update"])):
            row = {name: np.asarray(values[i]).item() for name, values in metrics.items()}
            step = offset + int(row["update"])
            row.update(phase=phase, update=step, frames=step * config.frames_per_update)
            row.update(sps=frames / max(elapsed, 1e-9), wall_s=time.perf_counter() - timed["began"])
            rows.append(row)
        log.append(rows)
        bar.update(len(rows))
        done = int(runner.update)
        if done - last_saved >= config.checkpoint_every or done == end:
            checkpointer.save(offset + done, jax.device_get(runner))
            last_saved = done
    return runner


def load(run: str | Path) -> tuple[LowLevelPolicy, dict[str, Any], HRLConfig]:
    """Returns ``(policy, variables, config)`` of a low-level run: the network, ``{"params": ...}`` of its
    newest checkpoint (for ``policy.apply``) and the run's ``HRLConfig``.

    Raises:
        ValueError: not a low-level run directory, or no checkpoint yet.
    """
    path = Path(run) / RUN_JSON
    info = json.loads(path.read_text()) if path.exists() else {}
    if info.get("kind") != KIND:
        raise ValueError(f"{run} is not an HRL low-level run (no {RUN_JSON} of kind {KIND!r})")
    config = HRLConfig(**info["config"])
    policy = registry.from_description(info)
    step = latest_step(Path(run) / CHECKPOINTS)
    if step is None:
        raise ValueError(f"{run} has no checkpoint yet")
    state = restore_raw(Path(run) / CHECKPOINTS, step)
    return policy, {"params": jax.tree_util.tree_map(jnp.asarray, state["params"])}, config


# -- the helper ------------------------------------------------------------------------------------------


class HRLMemory(struct.PyTreeNode):
    """The helper's memory: ``high`` the high level's, ``low`` the low level's LSTM (``[1, memory_dim]``),
    ``subgoal`` int32 the current predicate (-1 before the first step, ``NONE`` when idle), ``since`` int32 the
    steps spent on it, ``visited`` bool[4] the rooms Bob has stood in since it began, ``start`` int32 its instances
    (under Bob's goal) when it began, and the goal Bob was given (``goal_count`` int8[30], ``goal_target``
    int16[30])."""

    high: Any
    low: Any
    subgoal: jax.Array
    since: jax.Array
    visited: jax.Array
    start: jax.Array
    goal_count: jax.Array
    goal_target: jax.Array


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

    ``commit``: the subgoal is kept, as an option, until it gains an instance under Bob's goal (the true count, as
    the Hybrid's options read it) or ``subgoal_steps`` steps pass (a wait lasts one step); only then does the high
    level choose again (its memory steps once per choice). Without it the high level chooses at every step (the
    runs before the belief low level were evaluated so)."""

    high: Any
    high_params: Any
    low: LowLevelPolicy
    low_params: Any
    greedy: bool = False
    subgoal_steps: int = 100
    mask_invalid: bool = True
    commit: bool = False

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
        )

    def act(self, key: jax.Array, memory: HRLMemory, state: W.State, partner: Any = None):
        """Returns ``(action int32, memory)`` for this step in the true ``state`` (read through Bob's eyes)."""
        k_high, k_low = jax.random.split(key)
        obs = {**W.observe(state, 1, False), "goal": memory.goal_count, "goal_target": memory.goal_target}
        choice, high = self.high.high_choose(self.high_params, k_high, memory.high, obs)
        choice = jnp.asarray(choice, jnp.int32)
        bobs = state.replace(goal_target=memory.goal_target.astype(state.goal_target.dtype))
        placed = lambda p: placed_count(bobs, jnp.clip(p, 0, PR.NUM_PREDICATES - 1))  # noqa: E731
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
        memory = memory.replace(high=high, low=low, subgoal=pred, since=since, visited=visited, start=start)
        return action.astype(jnp.int32), memory


def helper_from_run(
    run: str | Path, hybrid_run: str | Path, greedy: bool = False, commit: bool | None = None
) -> HRLHelper:
    """Returns the HRL helper of a low-level run ``run`` under the high level of a Hybrid run ``hybrid_run``
    (``hybrid.load``, ``hybrid.HighLevel``); ``greedy`` takes both levels' most likely choices; ``commit``
    (``HRLHelper.commit``; None: when the low level is a ``belief`` network, whose training episodes pursue one
    subgoal to its end, as the committing Hybrid's options do)."""
    from jaxsoc.learners.household import hybrid

    policy, high_params, _ = hybrid.load(hybrid_run)
    low, low_params, config = load(run)
    high = hybrid.HighLevel(policy, greedy)
    return HRLHelper(
        high=high,
        high_params=high_params,
        low=low,
        low_params=low_params,
        greedy=greedy,
        subgoal_steps=config.max_steps,
        mask_invalid=config.mask_invalid,
        commit=low.config.belief if commit is None else commit,
    )


# -- the diagnosis ---------------------------------------------------------------------------------------


@functools.partial(jax.jit, static_argnames=("policy", "num_episodes", "steps", "greedy"))
def _subgoal_episodes(policy, variables, params, key, num_episodes: int, steps: int, greedy: bool):
    """Returns ``(grabbed, achieved, length)``, ``[num_episodes]`` each: ``subgoal_success``'s episodes."""
    env = SubgoalEnv()
    step = jax.vmap(env.step_env, in_axes=(0, 0, 0, None))
    k_reset, k_run = jax.random.split(key)
    obs, states = jax.vmap(env.reset_env, in_axes=(0, None))(jax.random.split(k_reset, num_episodes), params)
    zeros = jnp.zeros(num_episodes, bool)

    def body(carry, k):
        obs, states, memory, ended, grabbed, achieved, length = carry
        k_act, k_step = jax.random.split(k)
        log_probs, _, memory = policy.apply(variables, obs, (), memory, method="step")
        action = jnp.argmax(log_probs, -1) if greedy else jax.random.categorical(k_act, log_probs)
        new_obs, new_states, _, terminated, truncated, info = step(
            jax.random.split(k_step, num_episodes), states, action.astype(jnp.int32), params
        )
        live = ~ended  # an ended episode stays as it ended
        obs, states = select_rows(live, (new_obs, new_states), (obs, states))
        carry = (
            obs,
            states,
            memory,
            ended | terminated | truncated,
            grabbed | (live & info["grabbed"]),
            achieved | (live & info["placed"]),
            length + live,
        )
        return carry, None

    init = (obs, states, policy.initial_memory(num_episodes), zeros, zeros, zeros, jnp.zeros(num_episodes, jnp.int32))
    (_, _, _, _, grabbed, achieved, length), _ = jax.lax.scan(body, init, jax.random.split(k_run, steps))
    return grabbed, achieved, length


def subgoal_success(
    policy: LowLevelPolicy,
    variables: Any,
    params: SubgoalParams,
    num_episodes: int = 256,
    seed: int = 0,
    greedy: bool = False,
) -> dict[str, float]:
    """Returns the low level's record alone on ``num_episodes`` subgoal episodes of ``params``' bank (its
    "put" phase: an episode ends when the predicate gains an instance, or after ``params.max_steps`` steps):
    ``grabbed`` the share in which Bob grabbed an object of the predicate's class not yet in place, ``achieved``
    the share in which the predicate gained an instance, ``length`` the mean episode length, ``episodes``.

    Raises:
        ValueError: ``num_episodes < 1``.
    """
    if num_episodes < 1:
        raise ValueError(f"num_episodes must be positive, got {num_episodes}")
    steps = int(params.max_steps)
    grabbed, achieved, length = jax.device_get(
        _subgoal_episodes(
            policy, variables, params.replace(phase="put"), jax.random.key(seed), num_episodes, steps, greedy
        )
    )
    return {
        "episodes": num_episodes,
        "grabbed": float(np.mean(grabbed)),
        "achieved": float(np.mean(achieved)),
        "length": float(np.mean(length)),
    }
