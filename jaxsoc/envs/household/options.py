"""The Hybrid helper's options (Watch-And-Help §5.2, appendix C.3 and C.5): a goal predicate chosen as Bob's
subgoal and executed by the regression planner, shared by ``hybrid_env.HybridEnv`` and the learned helpers
(``learners.household.hybrid``, ``learners.household.hrl``).

A choice is one of ``NUM_CHOICES = 31``: predicate ``p < 30`` ("put an object of class ``PRED_OBJECT[p]`` on / in
the target of class ``PRED_TARGET_CLASS[p]``"; holds_book fetches a book, sit_sofa sits on the sofa, as the planner
treats them) or ``NOOP_CHOICE`` (30, wait). Each primitive step Bob updates his belief from his observation and
samples a world from it (``belief.update``, ``belief.sample_world``); the choice becomes a one-entry
``planner.Subgoals`` (``predicate_subgoal``, on the instance Bob keeps while it stays a candidate) whose first
regression-planner action (``planner.subgoal_action``) is Bob's action (``execute``). An option ends
(``option_ended``) after the step that gains an instance of its predicate, after a step with nothing to do (so a wait
lasts one primitive step), or after ``OPTION_STEPS`` steps. By default (``OPTION_ENDS``) an instance counts once Bob
has seen it (``Sightings``, ``observed_satisfied``: his own put, or what he sees at the destination); the privileged
``"true"`` rule reads the true satisfied counts, Alice's placements out of his view included. ``observation`` is the
high level's observation, with ``choice_mask`` (the goal's predicates not seen satisfied, and wait);
``expert_choice`` is HP_TG's choice (the planner's tree search in a world sampled from Bob's belief with Alice's
true goal), the teacher of the Hybrid's warm start.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsoc.core import spaces
from jaxsoc.envs.household import classes as C
from jaxsoc.envs.household import env as E
from jaxsoc.envs.household import predicates as PR
from jaxsoc.envs.household import world as W
from jaxsoc.envs.household.agents import agents as AG
from jaxsoc.envs.household.agents import belief as B
from jaxsoc.envs.household.agents import planner as P

BOB = 1
NOOP_CHOICE = PR.NUM_PREDICATES
NUM_CHOICES = PR.NUM_PREDICATES + 1
#: the most primitive steps one option (one choice of the high level) lasts: the original code's decision period
OPTION_STEPS = 24
_RELATION = np.where(PR.PRED_KIND == PR.INSIDE_KIND, C.INSIDE, C.ON_TOP).astype(np.int8)


def destinations(world: W.State) -> jax.Array:
    """Returns ``int32[30]``: where each predicate puts its object in ``world`` (Bob's world with the goal he
    conditions on): the goal's target node when the goal names one, else ``agents.goal_targets``' choice (the
    first furniture of the target class; for the kitchen-table predicates the kitchen table Bob's goal names, if
    any), -1 when the apartment has none (and for holds_book)."""
    on_table = jnp.asarray(np.equal(PR.PRED_TARGET_CLASS, C.CLASS["kitchentable"]))
    table = jnp.where(on_table, world.goal_target, -1).max()  # the table of the goal Bob conditions on, if any
    _, default = AG.goal_targets(world, jnp.ones(PR.NUM_PREDICATES, jnp.int32), table)
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
    destination; a wait option therefore lasts one primitive step), an instance of the chosen predicate was
    gained (``after[p] > before[p]``, the counts ``int32[30]`` before / after the step: ``observed_satisfied``'s
    under the ``"observed"`` rule, ``world.satisfied``'s under the privileged ``"true"`` one; ``OPTION_ENDS``) or
    the option has taken ``steps >= OPTION_STEPS`` primitive steps."""
    p = jnp.clip(choice, 0, PR.NUM_PREDICATES - 1)
    return ~valid | (after[p] > before[p]) | (steps >= OPTION_STEPS)


#: what an option's end reads (``option_ended``'s counts): ``"observed"`` (the default), the goal's instances Bob
#: has seen (``observed_satisfied`` of his ``Sightings``: his own puts, which he sees as he makes them, and what he
#: has seen at the destinations); ``"true"``, privileged, the true satisfied counts under his goal
#: (``world.satisfied``), which also count Alice's placements out of his view, inside closed containers included
#: (the rule the committed Hybrid and HRL runs were trained and first evaluated with)
OPTION_ENDS = ("observed", "true")
#: ``Sightings.relation`` of an object seen in Bob's own hand
OWN_HAND = -1


def check_option_end(option_end: str) -> str:
    """Returns ``option_end`` when it is one of ``OPTION_ENDS``; raises ``ValueError`` naming them otherwise."""
    if option_end not in OPTION_ENDS:
        raise ValueError(f"unknown option end {option_end!r}; choose from {list(OPTION_ENDS)}")
    return option_end


class Sightings(struct.PyTreeNode):
    """Where Bob last saw each node (``[NUM_NODES]``, from his observations only): ``cls`` int16 (0: never seen),
    ``parent`` int16 (its parent as last seen, -1 when none was shown) and ``relation`` int8 (``classes``
    relations; ``OWN_HAND`` for an object in his own hand). A node out of view keeps its last sighting."""

    cls: jax.Array
    parent: jax.Array
    relation: jax.Array


def no_sightings() -> Sightings:
    """Returns ``Sightings`` of nothing seen yet."""
    return Sightings(
        cls=jnp.zeros(W.NUM_NODES, jnp.int16),
        parent=jnp.full(W.NUM_NODES, -1, jnp.int16),
        relation=jnp.zeros(W.NUM_NODES, jnp.int8),
    )


def sight(sightings: Sightings, obs: dict) -> Sightings:
    """Returns ``sightings`` after Bob's observation ``obs`` (``world.observe(state, 1, ...)``): each visible node
    takes its class, shown parent and relation (``OWN_HAND`` when he holds it); the others keep theirs."""
    vis = jnp.asarray(obs["visible"], bool)
    own = (obs["relation"] == C.REL_HOLDS_RH) | (obs["relation"] == C.REL_HOLDS_LH)
    relation = jnp.where(own, OWN_HAND, obs["parent_relation"]).astype(jnp.int8)
    return Sightings(
        cls=jnp.where(vis, obs["class"], sightings.cls).astype(jnp.int16),
        parent=jnp.where(vis, obs["parent"], sightings.parent).astype(jnp.int16),
        relation=jnp.where(vis, relation, sightings.relation).astype(jnp.int8),
    )


def observed_satisfied(sightings: Sightings, goal_target: jax.Array) -> jax.Array:
    """Returns ``int32[30]``: the instances of each predicate Bob has seen hold (``world.satisfied`` on his
    ``Sightings`` instead of the true state), under the goal targets ``goal_target`` int16[30] he conditions on:
    objects of the class last seen ON / INSIDE the target; books last seen in Alice's hands for holds_book; 0 for
    sit_sofa (his observation does not show who sits where)."""
    target = jnp.asarray(goal_target, jnp.int32)
    hit = (
        (sightings.cls[None, :] == jnp.asarray(PR.PRED_OBJECT)[:, None])
        & (sightings.parent[None, :] == target[:, None])
        & (target[:, None] >= 0)
        & (sightings.relation[None, :] == jnp.asarray(_RELATION)[:, None])
    )
    books = ((sightings.cls == C.CLASS["book"]) & (sightings.relation == C.HELD)).sum()
    kind = jnp.asarray(PR.PRED_KIND)
    count = jnp.where(kind == PR.HOLDS_KIND, books, jnp.where(kind == PR.SIT_KIND, 0, hit.sum(1)))
    return count.astype(jnp.int32)


_PLACES = (PR.PRED_KIND == PR.ON_KIND) | (PR.PRED_KIND == PR.INSIDE_KIND)  # numpy: no jax array at import


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
    open_ = (goal > 0) & jnp.where(jnp.asarray(_PLACES), seen < goal, True)
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
