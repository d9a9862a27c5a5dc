"""The HRL low level's training view of the household (Watch-And-Help §5.2, appendix C.4): ``SubgoalEnv``, Bob
alone (Alice idles) with one ON / INSIDE predicate of the task's goal, drawn at random each episode, as his
objective (the multi-task setting of Shu et al. 2017).

Rewards: +10 when he grabs an object of that class not yet in place (phase ``"grab"``, which then terminates) or
when the predicate gains an instance over the episode's start (phase ``"put"``, which then terminates), plus a
closeness term: ``reward="shaped"`` (default) potential-based shaping ``gamma * phi(s') - phi(s)`` with ``phi`` minus
0.1 per metre still to walk (``potential``: to the nearest loose object in phase "grab"; in phase "put" on from it to
the destination, or from Bob to the destination while he holds it), so holding an object earns nothing by itself;
``reward="paper"`` (C.4) +0.05 on every step Bob ends close to an object of the class (held ones included) or to its
destination. ``truncated`` at ``max_steps``. The observation (``subgoal_observation``) adds the subgoal, its
destination, ``valid`` (``world.valid_actions``, with ``mask_invalid``), ``time_left`` and ``visited``;
``subgoal_marks`` derives per-node class comparisons from it for the low-level network.

The teachers of a subgoal episode are in ``subgoal_teachers``; the low-level network in
``learners.networks.household``; its training in ``learners.household.hrl_train``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsoc.core import spaces
from jaxsoc.core.env import Environment
from jaxsoc.envs.household import classes as C
from jaxsoc.envs.household import env as E
from jaxsoc.envs.household import predicates as PR
from jaxsoc.envs.household import world as W

PHASES = ("grab", "put")
REWARDS = ("shaped", "paper")
CLOSE_BONUS, EVENT_REWARD = 0.05, 10.0
SHAPING = 0.1  # reward per metre of walking distance gained towards the phase's goal (``potential``)
#: the predicates a low-level episode can draw (ON / INSIDE)
SUBGOAL_KINDS = np.isin(PR.PRED_KIND, (PR.ON_KIND, PR.INSIDE_KIND))
_RELATION = np.where(PR.PRED_KIND == PR.INSIDE_KIND, C.INSIDE, C.ON_TOP).astype(np.int8)
#: [object class, container class]: objects of the class may start inside (``classes.PLACEMENT``)
MAY_HOLD = C.placement_tables()[0]


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


def loose_objects(world: W.State, pred: jax.Array) -> jax.Array:
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
    loose = loose_objects(world, pred)
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
        loose = loose_objects(world, pred)
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
    keeps = visible & jnp.asarray(MAY_HOLD)[wanted, cls] & (jnp.asarray(W.NODE_KIND) == 2)
    return jnp.stack([is_object, in_place, keeps], -1).astype(jnp.float32)
