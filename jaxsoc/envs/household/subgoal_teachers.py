"""The teachers of a subgoal episode (``subgoal_env.SubgoalEnv``): the action Bob should take for his subgoal, read
from the world. ``expert_action`` is the regression planner, which knows where unseen objects lie (a privileged
teacher); ``belief_action`` knows only what Bob knows (what he sees, the rooms he has stood in, where objects are
commonly kept), so a policy can imitate it from its own observations. ``TEACHERS`` names them for the HRL's warm
start (``learners.household.hrl_imitation``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsoc.envs.household import classes as C
from jaxsoc.envs.household import predicates as PR
from jaxsoc.envs.household import world as W
from jaxsoc.envs.household.agents import planner as P
from jaxsoc.envs.household.subgoal_env import MAY_HOLD, SubgoalState, loose_objects, walk_distance


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
    loose = loose_objects(world, pred)
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
    loose = loose_objects(world, pred)
    v = W.view(world, 1, holder)
    mine = loose & (holder == 1)
    free = loose & (holder < 0) & v.visible
    dist = jnp.linalg.norm(W.anchors(world, holder) - world.chars.pos[1], axis=-1)
    obj = jnp.where(mine.any(), jnp.argmax(mine), jnp.argmin(jnp.where(free, dist, jnp.inf)))
    have = mine.any() | free.any()
    pursue = _pursue(world, pred, obj, have, v.visible)
    closed = ((nodes.properties & C.CAN_OPEN) > 0) & ((nodes.states & C.OPEN) == 0)
    kept = jnp.asarray(MAY_HOLD)[jnp.asarray(PR.PRED_OBJECT)[pred], nodes.cls]
    boxes = kept & closed & v.visible & (jnp.asarray(W.NODE_KIND) == 2) & (nodes.cls > 0)
    box = jnp.argmin(jnp.where(boxes, dist, jnp.inf))
    open_box = jnp.where(v.close[box], W.encode_action("open", box), W.encode_action("walk", box))
    unseen = ~state.visited & (nodes.cls[: W.NUM_ROOMS] > 0)
    room = jnp.argmin(jnp.where(unseen, dist[: W.NUM_ROOMS], jnp.inf))
    search = jnp.where(boxes.any(), open_box, jnp.where(unseen.any(), W.encode_action("walk", room), 0))
    return jnp.where(have, pursue, search).astype(jnp.int32)


#: the warm start's teachers (``HRLConfig.teacher``): the privileged planner, or one limited to Bob's knowledge
TEACHERS = {"planner": expert_action, "belief": belief_action}
