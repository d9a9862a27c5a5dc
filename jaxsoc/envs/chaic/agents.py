"""CHAIC's rule-based agents: the constrained agent, the RHP and Oracle helpers, the random helper, no helper.

``RuleAgent`` is the original's rule-based planner (``tdw-gym/plan_agent.py default_plan``; paper section 5.1.1
and appendix B.2) as pure jittable functions (what it remembers and how it perceives: ``agent_memory``). Each call
(only when the agent is ready, ``world.ready(state)[agent]``) it

1. **perceives**: remembers the objects it sees (``world.visible_objects``) and where (``last_pos``), forgets an
   object whose remembered spot it sees empty (checked for its current plan's object and the nearest known
   obstacles, to keep the work fixed and small), notes the goal place once seen, where the other agents were last
   seen (the child is "lost" when her remembered spot is seen empty), and marks an object whose pick-up (or
   removal) just FAILED to be ignored for ``FAIL_IGNORE`` frames. Whether an object is still free (held by no one,
   in no container, not delivered or broken) is remembered as of when the agent last saw it or handled it itself
   (``AgentMemory.free``): an object another agent took out of its view stays a candidate until the agent sees it
   (or its empty spot), or its pick-up fails (the pick-up is tried on its belief, step 3). Only the Oracle
   (omniscient) reads it from the true state; the constrained agent also knows the task's progress (what is on
   the goal place), as in the original;
2. **chooses a plan** by the priority list below (a plan is a subgoal: explore a viewpoint, fetch a container,
   fetch a target, go to the goal place, remove an obstacle, follow the child, look for her), keeping its current
   plan while it is still valid and of the wanted kind (so it commits to one object / viewpoint), and giving a
   plan up after ``MAX_MOVE_FRAMES`` (``MAX_EXPLORE_FRAMES`` for exploring, ``MAX_FOLLOW_FRAMES`` for following);
3. **acts**: a pick-up / removal as soon as it believes the world accepts it (``believed_object``: the object free
   as it last knew it and within 3 m + half its size of where it last saw it, no wall between; a pick-up of an
   object taken out of its view fails at once), a put-on / put-in when the world accepts it (``valid_hands``: its
   own hands, the goal place within 3 m + half its extent), else a step of the walk towards it (``navigation``:
   the door route, then a turn or a move that will not fail); and "at any time, if the agent can put an object in
   a container, it will do so" (``PUT_IN`` overrides everything).

The priority list (as the original's ``default_plan`` orders it):

0. shopping (the child active): follow the child when she is more than 3.5 m away (from the constrained agent; or
   was more than 5.5 m away in the last 50 frames); turn around to look for her when she was not seen for 200
   frames;
1. both hands full: put in when one is a container (or the bike) with a free slot and the other an item, else go
   to the goal place and put on (a GOAL plan lasts until nothing is left to put);
2. after ``T - 750`` frames and carrying targets: go to the goal place;
3. after ``T - 1125`` frames, carrying targets and the goal place not yet seen: explore for it;
4. (helpers) remove a known obstacle that blocks a door when a hand is free;
5. no container in hand, containers known and before ``T - 1500``: fetch the nearest container (the rider's bike
   is its container);
6. else fetch the nearest known target (by walking distance, not failed in the last 500 frames);
7. else explore: walk to the nearest unexplored viewpoint (each room's centre; a 2 x 2 grid in rooms longer than
   ``VIEW_SPLIT``) and turn around (``SCAN_TURNS`` turns of 15 degrees: 270 degrees, a full view with the 90
   degree field of view), which marks it explored; when every viewpoint is explored they are all reset. (One
   addition: when nothing is left to find or fetch but targets are carried, the agent delivers them instead of
   exploring again until ``T - 750``.)

Roles (``RuleAgent.role``):

- ``"main"``: the constrained agent (agent 0). Its targets are the classes with ``state.goal_count > 0`` still
  needed (the goal count minus those delivered and those it carries). It knows the task's progress (which
  objects are on the goal place).
- ``"rhp"``: the Rule-Based Hierarchical Plan helper. The same rules without the goal: its possible targets are
  every object of a possible-target kind (items and vases; the furniture in the furniture task). As in the
  original's code it fetches the **nearest** possible target; the paper's appendix B.2 says it chooses "randomly"
  (a mismatch between the paper and the code). It also removes obstacles that block a door (rule 4) and, in the
  shopping task, follows the child when she is more than 3.5 m from the constrained agent (catching her, within
  2.5 m, sends her back). In the furniture task it simply fetches furniture itself (strength 600), as the
  original does; a lift succeeds anyway when the other agent stands by.
- ``"oracle"``: the RHP with the true goal (counting what every agent carries) and full perception: its memory
  knows every object's true position, the goal place and the other agents at all times.

- ``"random"`` (``RandomHelper``): each time its plan finishes it draws a plan uniformly among the valid ones
  (explore; go to the goal place if it holds something; put in if possible; pick up a known object; remove a
  known obstacle), then its object uniformly; it puts in only when it draws that plan.

The role is data in the memory (``AgentMemory.helper``, ``omniscient``, ``random``, ``goal_count``): every role
acts through the same function, ``rule_act``, so ``play`` runs a constrained agent and a rule-based helper through
one compiled act, and one batch may mix helper roles. ``NoHelper`` never acts: ``play`` makes the helper inactive
(``NoHelper(inactive=False)`` keeps it in the world, always waiting). ``PolicyHelper`` runs a learned
``HelperPolicy`` (``helper_init`` / ``helper_act`` on ``observation.observe``) as an agent; ``make_agent(kind)``
builds the agents by name (``KINDS``).

Every agent has ``init(key, state, agent) -> memory`` and ``act(key, memory, state, timing) -> (action int32,
memory)``; everything is jittable and vmappable with a fixed amount of work (no control flow on traced values).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.envs.chaic import navigation as N
from jaxsoc.envs.chaic import observation as O
from jaxsoc.envs.chaic import state as S
from jaxsoc.envs.chaic import world as W
from jaxsoc.envs.chaic.agent_memory import (  # noqa: F401 re-exported as agents.<name>
    _KIND,
    _OBSTACLE_AVOID,
    ARRIVE_VIEW,
    BUMP_FRAMES,
    BUMP_RADIUS,
    CHECK_OBSTACLES,
    CHILD_FAR,
    CHILD_FAR_RECENT,
    CHILD_LOST_FRAMES,
    CHILD_NEAR,
    CHILD_RECENT_FRAMES,
    CONTAINER_LIMIT,
    DEFAULT_TIMING,
    DOOR_BLOCK,
    EXPLORE,
    FAIL_IGNORE,
    FETCH_CONTAINER,
    FETCH_TARGET,
    FOLLOW,
    GOAL,
    GOAL_UNSEEN_LIMIT,
    KINDS,
    LOOK,
    LOOK_TURNS,
    MAX_EXPLORE_FRAMES,
    MAX_FOLLOW_FRAMES,
    MAX_MOVE_FRAMES,
    MOVE_TO_GOAL_PLACE_LIMIT,
    NO_PLAN,
    NUM_BUMPS,
    NUM_VIEWS,
    PLAN_NAMES,
    REMOVE,
    ROLES,
    SCAN_TURNS,
    VIEW_SPLIT,
    VIEWS_PER_ROOM,
    AgentMemory,
    _class_counts,
    _nearest,
    _uniform,
    new_memory,
    perceive,
    possible_target_classes,
    viewpoints,
)


def valid_hands(state: S.State, agent) -> dict:
    """Returns the entries of ``world.valid_actions(state, agent)`` that name no object: ``put_in`` and ``put_on``,
    each ``bool`` (``valid_subset`` without the object's)."""
    o = state.objects
    cls = o.cls.astype(jnp.int32)
    hands = state.agents.hands[agent].astype(jnp.int32)
    h = jnp.maximum(hands, 0)
    held_kind = _KIND[jnp.where(hands >= 0, cls[h], 0)]
    load = W.contents(state)[h]
    holder_ok = ((held_kind == K.CONTAINER) | (held_kind == K.BIKE)) & (load < K.CONTAINER_SLOTS) & (hands >= 0)
    item_ok = (held_kind == K.ITEM) | (held_kind == K.VASE)
    put_in = (holder_ok[0] & item_ok[1]) | (holder_ok[1] & item_ok[0])
    bike_load = jnp.where(held_kind == K.BIKE, load, 0).sum()
    something = ((hands >= 0) & (held_kind != K.BIKE)).any() | (bike_load > 0)
    goal_ok, _ = W.reach_distance(state, agent, state.scene.goal_pos, state.scene.goal_extent)
    return {"put_in": put_in, "put_on": something & goal_ok}


def valid_object(state: S.State, agent, obj) -> dict:
    """Returns the entries of ``world.valid_actions(state, agent)`` about one object ``obj``: ``pick`` (``PICK +
    obj``) and ``remove`` (``REMOVE + obj``), each ``bool``."""
    o = state.objects
    cls = o.cls.astype(jnp.int32)
    free = state.agents.hands[agent] < 0
    obj = jnp.maximum(obj, 0)
    within, _ = W.reach_distance(state, agent, W.object_positions(state)[obj], o.size[obj])
    free_obj = (cls[obj] > 0) & (o.holder[obj] < 0) & (o.container[obj] < 0) & ~o.delivered[obj] & ~o.broken[obj]
    kind = _KIND[cls[obj]]
    hand_ok = jnp.where(kind == K.FURNITURE, free.all(), free.any())
    pickable = (kind == K.ITEM) | (kind == K.CONTAINER) | (kind == K.VASE) | (kind == K.FURNITURE)
    return {
        "pick": free_obj & within & pickable & hand_ok,
        "remove": free_obj & within & (kind == K.OBSTACLE) & free.any(),
    }


def believed_object(mem: AgentMemory, state: S.State, obj) -> dict:
    """Returns ``valid_object``'s entries (``pick``, ``remove``, each ``bool``) as the agent of ``mem`` believes them:
    the object free as it last knew it (``AgentMemory.free``) and within reach of where it last saw it
    (``last_pos``), with its own hands. The world may still refuse (the object was taken out of view): the action
    then fails at once and ``perceive`` marks the object failed. The Oracle's memory is the true state, so its
    belief is ``valid_object``."""
    o = state.objects
    agent = mem.agent
    cls = o.cls.astype(jnp.int32)
    free_hand = state.agents.hands[agent] < 0
    obj = jnp.maximum(obj, 0)
    within, _ = W.reach_distance(state, agent, mem.last_pos[obj], o.size[obj])
    free_obj = mem.seen[obj] & mem.free[obj] & (cls[obj] > 0)
    kind = _KIND[cls[obj]]
    hand_ok = jnp.where(kind == K.FURNITURE, free_hand.all(), free_hand.any())
    pickable = (kind == K.ITEM) | (kind == K.CONTAINER) | (kind == K.VASE) | (kind == K.FURNITURE)
    return {
        "pick": free_obj & within & pickable & hand_ok,
        "remove": free_obj & within & (kind == K.OBSTACLE) & free_hand.any(),
    }


def valid_subset(state: S.State, agent, obj) -> dict:
    """Returns the entries of ``world.valid_actions(state, agent)`` the agents need, computed for one object only
    (the full table tests every object against every wall): ``put_in``, ``put_on``, ``pick`` (``PICK + obj``) and
    ``remove`` (``REMOVE + obj``), each ``bool``. Mirrors ``world.valid_actions``."""
    return {**valid_hands(state, agent), **valid_object(state, agent, obj)}


def _situation(mem: AgentMemory, state: S.State) -> dict:
    """Returns a dict of what the decision needs, for the agent of ``mem`` (already updated by ``perceive``):
    hands, candidates (objects, viewpoints), walking distances, the door distances and the points to avoid."""
    agent = mem.agent
    a, o, scene = state.agents, state.objects, state.scene
    frame = state.frame
    src = a.pos[agent]
    cls = o.cls.astype(jnp.int32)
    kind = _KIND[cls]
    ability = a.ability[agent].astype(jnp.int32)
    wheelchair = jnp.asarray(K.WHEELCHAIR)[ability]
    carrier = W.object_carrier(state)
    mine = (carrier == agent) & (cls > 0)
    hands = a.hands[agent].astype(jnp.int32)
    held = hands >= 0
    held_kind = jnp.where(held, kind[jnp.maximum(hands, 0)], K.EMPTY)
    load = W.contents(state)
    bike_load = jnp.where(held_kind == K.BIKE, load[jnp.maximum(hands, 0)], 0).sum()
    has_put = (held & (held_kind != K.BIKE)).any() | (bike_load > 0)
    container_in_hand = ((held_kind == K.CONTAINER) | (held_kind == K.BIKE)).any()
    hand_free = (~held).any()
    both_free = (~held).all()
    # free as the agent last knew it (``perceive``; the Oracle's memory is the true state's)
    known = mem.seen & mem.free & (mem.failed_until <= frame)
    # the goal: what is still needed per class
    goal_class = mem.goal_count.astype(jnp.int32) > 0
    delivered = _class_counts(cls, o.delivered & (cls > 0))
    carried = _class_counts(cls, jnp.where(mem.omniscient, carrier >= 0, mine) & (cls > 0))
    need = jnp.where(mem.knows_goal, mem.goal_count.astype(jnp.int32) - delivered - carried, goal_class * 1000)
    carry_targets = (mine & goal_class[cls]).any()
    # obstacles: known ones block doors for the wheelchair; helpers remove those
    obstacles = mem.seen & (kind == K.OBSTACLE) & mem.free
    near_door = jnp.linalg.norm(mem.last_pos[:, None] - scene.doors[None], axis=-1) < DOOR_BLOCK
    near_door = near_door & scene.door_valid[None] & obstacles[:, None]
    blocked = wheelchair & near_door.any(0)
    dist_matrix = N.door_distances(scene, blocked)
    views, views_ok = viewpoints(scene)
    child_pos = mem.agent_pos[S.CHILD]
    dsts = jnp.concatenate([mem.last_pos, views, scene.goal_pos[None], child_pos[None]])
    lengths = N.path_lengths(scene, src, dsts, dist_matrix)
    obj_len = lengths[: S.MAX_OBJECTS]
    view_len = lengths[S.MAX_OBJECTS : S.MAX_OBJECTS + NUM_VIEWS]
    goal_len, child_len = lengths[-2], lengths[-1]
    reach_obj = jnp.isfinite(obj_len)
    furniture = kind == K.FURNITURE
    hand_ok = jnp.where(furniture, both_free, hand_free)
    target_cand = known & (need[cls] > 0) & goal_class[cls] & hand_ok & reach_obj
    container_cand = known & (kind == K.CONTAINER) & hand_free & reach_obj
    remove_cand = known & near_door.any(1) & hand_free & reach_obj
    pick_cand = known & jnp.asarray(np.isin(K.CLASS_KIND, (K.ITEM, K.CONTAINER, K.VASE, K.FURNITURE)))[cls]
    pick_cand = pick_cand & hand_ok & reach_obj
    obstacle_cand = known & (kind == K.OBSTACLE) & hand_free & reach_obj
    view_cand = views_ok & ~mem.explored & jnp.isfinite(view_len)
    # points to avoid: the wheelchair's known obstacles, spots where a move failed
    avoid = jnp.concatenate([mem.last_pos, mem.bumps])
    radius = jnp.concatenate(
        [
            jnp.where(wheelchair & obstacles, _OBSTACLE_AVOID, 0.0),
            jnp.where(mem.bump_until > frame, BUMP_RADIUS, 0.0),
        ]
    )
    hands_valid = valid_hands(state, agent)
    return dict(
        src=src,
        heading=a.heading[agent],
        frame=frame,
        horizon=state.max_frames,
        put_in=hands_valid["put_in"],
        put_on=hands_valid["put_on"],
        hands=hands,
        held=held,
        has_put=has_put,
        container_in_hand=container_in_hand,
        hand_free=hand_free,
        both_full=held.all(),
        carry_targets=carry_targets,
        target_cand=target_cand,
        container_cand=container_cand,
        remove_cand=remove_cand,
        pick_cand=pick_cand,
        obstacle_cand=obstacle_cand,
        obj_len=obj_len,
        views=views,
        views_ok=views_ok,
        view_cand=view_cand,
        view_len=view_len,
        goal_ok=mem.goal_seen & jnp.isfinite(goal_len),
        goal_len=goal_len,
        child_pos=child_pos,
        child_len=child_len,
        dist_matrix=dist_matrix,
        avoid=avoid,
        radius=radius,
    )


def _plan_valid(mem: AgentMemory, sit: dict) -> jax.Array:
    """Returns ``bool``: whether the current plan may go on (its object still a candidate, not timed out, ...)."""
    obj = jnp.maximum(mem.plan_obj, 0)
    elapsed = sit["frame"] - mem.plan_start
    limit = jnp.select(
        [mem.plan == EXPLORE, mem.plan == FOLLOW, mem.plan == LOOK],
        [MAX_EXPLORE_FRAMES, MAX_FOLLOW_FRAMES, MAX_FOLLOW_FRAMES],
        MAX_MOVE_FRAMES,
    )
    view = jnp.maximum(mem.plan_view, 0)
    ok = jnp.select(
        [
            mem.plan == EXPLORE,
            mem.plan == FETCH_CONTAINER,
            mem.plan == FETCH_TARGET,
            mem.plan == GOAL,
            mem.plan == REMOVE,
            mem.plan == FOLLOW,
            mem.plan == LOOK,
        ],
        [
            ~mem.explored[view] & (mem.scan_left != 0) & jnp.isfinite(sit["view_len"][view]),
            sit["container_cand"][obj] & ~sit["container_in_hand"],
            sit["target_cand"][obj],
            sit["has_put"] & sit["goal_ok"],
            sit["remove_cand"][obj],
            jnp.bool_(True),
            mem.scan_left != 0,
        ],
        False,
    )
    scanning = (mem.plan == EXPLORE) & (mem.scan_left > 0)  # a look around, once started, is finished
    return ok & ((elapsed <= limit) | scanning)


def _finish_plan(mem: AgentMemory, sit: dict, keep: jax.Array) -> AgentMemory:
    """Returns ``mem`` after the current plan ends (``keep`` False): an explored viewpoint is marked (also one
    given up without getting 1 m closer in ``MAX_EXPLORE_FRAMES``), a fetch or removal that timed out marks its
    object failed, a look for the child that went full circle stops looking for ``CHILD_LOST_FRAMES``."""
    frame = sit["frame"]
    ending = ~keep & (mem.plan != NO_PLAN)
    view = jnp.maximum(mem.plan_view, 0)
    obj = jnp.maximum(mem.plan_obj, 0)
    scanned = (mem.plan == EXPLORE) & (mem.scan_left == 0)
    timed_out = frame - mem.plan_start > jnp.where(mem.plan == EXPLORE, MAX_EXPLORE_FRAMES, MAX_MOVE_FRAMES)
    stuck = (mem.plan == EXPLORE) & timed_out & (sit["view_len"][view] > mem.plan_dist - 1.0)
    explored = mem.explored.at[view].set(mem.explored[view] | (ending & (scanned | stuck)))
    walked = (mem.plan == FETCH_CONTAINER) | (mem.plan == FETCH_TARGET) | (mem.plan == REMOVE)
    fail = ending & walked & timed_out
    failed_until = mem.failed_until.at[obj].set(jnp.where(fail, frame + FAIL_IGNORE, mem.failed_until[obj]))
    # looking for the child a full circle in vain: give up for CHILD_LOST_FRAMES
    gave_up = ending & (mem.plan == LOOK)
    agent_seen = mem.agent_seen.at[S.CHILD].set(jnp.where(gave_up, frame, mem.agent_seen[S.CHILD]))
    return mem.replace(explored=explored, failed_until=failed_until, agent_seen=agent_seen)


def _refresh(sit: dict, mem: AgentMemory) -> dict:
    """Returns ``sit`` with the candidates that ``_finish_plan`` just ruled out (a viewpoint explored, an object
    failed) removed."""
    ok = mem.failed_until <= sit["frame"]
    sit = dict(sit)
    for name in ("target_cand", "container_cand", "remove_cand", "pick_cand", "obstacle_cand"):
        sit[name] = sit[name] & ok
    sit["view_cand"] = sit["views_ok"] & ~mem.explored & jnp.isfinite(sit["view_len"])
    return sit


def explore_candidates(mem: AgentMemory, sit: dict) -> tuple[jax.Array, jax.Array]:
    """Returns ``(candidates bool[V], explored bool[V])``: the viewpoints exploring may walk to (unexplored and
    reachable), every viewpoint reset to unexplored first when none is left, and the explored flags after that."""
    none_left = ~sit["view_cand"].any()
    explored = jnp.where(none_left, jnp.zeros_like(mem.explored), mem.explored)
    return sit["views_ok"] & ~explored & jnp.isfinite(sit["view_len"]), explored


def _explore_choice(mem: AgentMemory, sit: dict) -> tuple[jax.Array, jax.Array]:
    """Returns ``(view int32, explored bool[V])``: the nearest of ``explore_candidates``, and the explored flags."""
    cand, explored = explore_candidates(mem, sit)
    return _nearest(cand, sit["view_len"]), explored


def _commit(mem: AgentMemory, sit: dict, want, want_obj, want_view, keep) -> AgentMemory:
    """Returns ``mem`` with the plan kept (``keep``) or replaced by the wanted one (start frame, distance)."""
    new_len = jnp.select(
        [want == EXPLORE, want == GOAL, want == FOLLOW],
        [sit["view_len"][jnp.maximum(want_view, 0)], sit["goal_len"], sit["child_len"]],
        sit["obj_len"][jnp.maximum(want_obj, 0)],
    )
    return mem.replace(
        plan=jnp.where(keep, mem.plan, want).astype(jnp.int32),
        plan_obj=jnp.where(keep, mem.plan_obj, want_obj).astype(jnp.int32),
        plan_view=jnp.where(keep, mem.plan_view, want_view).astype(jnp.int32),
        plan_start=jnp.where(keep, mem.plan_start, sit["frame"]).astype(jnp.int32),
        plan_dist=jnp.where(keep, mem.plan_dist, new_len).astype(jnp.float32),
        scan_left=jnp.where(keep, mem.scan_left, -1).astype(jnp.int32),
    )


#: the entries of ``_situation`` that ``_execute`` reads
EXECUTE_KEYS = ("src", "heading", "views", "child_pos", "dist_matrix", "avoid", "radius", "put_in", "put_on")


def _execute(mem: AgentMemory, state: S.State, sit: dict, put_in_first=True) -> tuple[jax.Array, AgentMemory]:
    """Returns ``(action int32, memory)``: the current plan's next action (the interaction when the world accepts
    it, else a step of the walk to it; turning around at a viewpoint or looking for the child), and, with
    ``put_in_first``, ``PUT_IN`` whenever it is possible. Reads only the ``EXECUTE_KEYS`` of ``sit``."""
    src = sit["src"]
    obj = jnp.maximum(mem.plan_obj, 0)
    valid = {"put_in": sit["put_in"], "put_on": sit["put_on"], **believed_object(mem, state, obj)}
    view = jnp.maximum(mem.plan_view, 0)
    plan = mem.plan
    dst = jnp.select(
        [plan == EXPLORE, plan == GOAL, plan == FOLLOW],
        [sit["views"][view], state.scene.goal_pos, sit["child_pos"]],
        mem.last_pos[obj],
    )
    waypoint, _, _ = N.next_waypoint(state.scene, src, dst, sit["dist_matrix"])
    walk = N.steer_clear(state.scene, sit["heading"], src, waypoint, sit["avoid"], sit["radius"])
    at_view = (jnp.linalg.norm(src - sit["views"][view]) < ARRIVE_VIEW) | (mem.scan_left > 0)
    pick, remove = valid["pick"], valid["remove"]
    action = jnp.select(
        [
            plan == EXPLORE,
            (plan == FETCH_CONTAINER) | (plan == FETCH_TARGET),
            plan == GOAL,
            plan == REMOVE,
            plan == FOLLOW,
            plan == LOOK,
        ],
        [
            jnp.where(at_view, S.TURN_LEFT, walk),
            jnp.where(pick, S.PICK + obj, walk),
            jnp.where(valid["put_on"], S.PUT_ON, walk),
            jnp.where(remove, S.REMOVE + obj, walk),
            jnp.where(jnp.linalg.norm(src - sit["child_pos"]) <= CHILD_NEAR, S.WAIT, walk),
            S.TURN_LEFT,
        ],
        S.WAIT,
    )
    turning = ((plan == EXPLORE) & at_view) | (plan == LOOK)
    start = jnp.where(plan == LOOK, LOOK_TURNS, SCAN_TURNS)
    scan_left = jnp.where(turning, jnp.where(mem.scan_left > 0, mem.scan_left, start) - 1, mem.scan_left)
    put_in = valid["put_in"] & put_in_first
    action = jnp.where(put_in, S.PUT_IN, action)
    scan_left = jnp.where(put_in, mem.scan_left, scan_left)
    return action.astype(jnp.int32), mem.replace(scan_left=scan_left.astype(jnp.int32))


# -- the rule-based agents --------------------------------------------------------------------------------------


def _rules_want(mem: AgentMemory, state: S.State, sit: dict):
    """Returns ``(plan, obj, view, explored)``: the plan the priority list asks for now (module docstring) and the
    explored flags after a reset (when the plan is to explore and every viewpoint was explored)."""
    frame, horizon = sit["frame"], sit["horizon"]
    src = sit["src"]
    # 0. the child (shopping)
    shopping = (state.task == K.TASK["shopping"]) & state.agents.active[S.CHILD]
    ref = jnp.where(mem.helper, mem.agent_pos[S.MAIN], src)
    child_dist = jnp.linalg.norm(sit["child_pos"] - ref)
    far = (child_dist > CHILD_FAR) | (frame - mem.child_far_frame < CHILD_RECENT_FRAMES)
    mine = jnp.linalg.norm(sit["child_pos"] - src)
    follow = shopping & far & (mine > CHILD_NEAR) & jnp.isfinite(sit["child_len"]) & ~mem.child_lost
    look = shopping & (frame - mem.agent_seen[S.CHILD] > CHILD_LOST_FRAMES)
    # 1-3. the goal place (and, when nothing is left to find or fetch, what is carried)
    full = sit["both_full"] & ~sit["put_in"] & sit["has_put"]
    late = (frame > horizon - MOVE_TO_GOAL_PLACE_LIMIT) & sit["carry_targets"]
    search = (frame > horizon - GOAL_UNSEEN_LIMIT) & sit["carry_targets"] & ~mem.goal_seen
    nothing_left = sit["carry_targets"] & ~sit["target_cand"].any() & ~sit["view_cand"].any()
    go_goal = full | late | search | nothing_left
    # 4. obstacles (helpers)
    remove = mem.helper & sit["remove_cand"].any()
    # 5-6. containers, targets
    container = sit["container_cand"].any() & ~sit["container_in_hand"] & (frame < horizon - CONTAINER_LIMIT)
    target = sit["target_cand"].any()
    view, explored = _explore_choice(mem, sit)
    goal_or_search = jnp.where(sit["goal_ok"], GOAL, EXPLORE)
    want = jnp.select(
        [follow, look, go_goal, remove, container, target],
        [FOLLOW, LOOK, goal_or_search, REMOVE, FETCH_CONTAINER, FETCH_TARGET],
        EXPLORE,
    ).astype(jnp.int32)
    obj = jnp.select(
        [want == REMOVE, want == FETCH_CONTAINER, want == FETCH_TARGET],
        [
            _nearest(sit["remove_cand"], sit["obj_len"]),
            _nearest(sit["container_cand"], sit["obj_len"]),
            _nearest(sit["target_cand"], sit["obj_len"]),
        ],
        -1,
    )
    return want, obj, jnp.where(want == EXPLORE, view, -1).astype(jnp.int32), explored


def _random_want(key: jax.Array, mem: AgentMemory, sit: dict):
    """Returns ``(plan, obj, view, explored, put_in)``: a plan drawn uniformly among the valid ones (explore; go to
    the goal place when holding something and the goal place is known; put in when possible; pick up a known
    object; remove a known obstacle), then its object or viewpoint uniformly; ``put_in`` when the draw is the
    one-action put-in."""
    k_plan, k_obj, k_view = jax.random.split(key, 3)
    explored = jnp.where(sit["view_cand"].any(), mem.explored, jnp.zeros_like(mem.explored))
    view_cand = sit["views_ok"] & jnp.isfinite(sit["view_len"]) & ~explored
    options = jnp.stack(
        [
            jnp.bool_(True),  # explore
            sit["has_put"] & sit["goal_ok"],  # go to the goal place
            sit["put_in"],  # put in
            sit["pick_cand"].any(),  # pick up
            sit["obstacle_cand"].any(),  # remove
        ]
    )
    choice = _uniform(k_plan, options)
    want = jnp.asarray([EXPLORE, GOAL, NO_PLAN, FETCH_TARGET, REMOVE], jnp.int32)[choice]
    obj = jnp.select(
        [choice == 3, choice == 4],
        [_uniform(k_obj, sit["pick_cand"]), _uniform(k_obj, sit["obstacle_cand"])],
        -1,
    )
    view = jnp.where(choice == 0, _uniform(k_view, view_cand), -1)
    return want, obj, view, explored, choice == 2


def rule_plan(key: jax.Array, mem: AgentMemory, state: S.State, sit: dict) -> tuple[AgentMemory, jax.Array]:
    """Returns ``(memory, drawn_put_in bool)``: the planning part of ``rule_act`` for a perceived memory ``mem`` and
    its ``_situation`` ``sit``: end the current plan when it is done, failed, timed out or (rules) no longer the
    kind the priority list wants, and choose the next one (by the rules, or at random for the random helper);
    ``drawn_put_in`` when the random helper drew the one-action put-in (its action is then ``PUT_IN``). What is
    left to do is ``_execute`` with ``sit``."""
    rnd = mem.random
    sit = dict(sit)
    # the random helper's fetches pick up any known object, its removals take any known obstacle
    sit["target_cand"] = jnp.where(rnd, sit["pick_cand"], sit["target_cand"])
    sit["remove_cand"] = jnp.where(rnd, sit["obstacle_cand"], sit["remove_cand"])
    valid = _plan_valid(mem, sit) & (~rnd | (mem.plan != NO_PLAN))
    mem = _finish_plan(mem, sit, valid)
    sit = _refresh(sit, mem)
    want, obj, view, explored = _rules_want(mem, state, sit)
    urgent = (want == FOLLOW) | (want == LOOK)
    sticky = (mem.plan == GOAL) | (mem.plan == REMOVE)
    keep = valid & ((mem.plan == want) | (sticky & ~urgent))
    r_want, r_obj, r_view, r_explored, r_put_in = _random_want(key, mem, sit)
    want, obj, view = jnp.where(rnd, r_want, want), jnp.where(rnd, r_obj, obj), jnp.where(rnd, r_view, view)
    explored = jnp.where(rnd, r_explored, explored)
    keep = jnp.where(rnd, valid, keep)
    mem = mem.replace(explored=jnp.where(keep | (want != EXPLORE), mem.explored, explored))
    mem = _commit(mem, sit, want, obj, view, keep)
    return mem, rnd & ~keep & r_put_in


def rule_act(key: jax.Array, memory: AgentMemory, state: S.State, timing: W.Timing) -> tuple[jax.Array, AgentMemory]:
    """Returns ``(action int32, memory)``: one decision of a rule-based agent of any role (the role is in
    ``memory``): perceive, end the current plan when it is done, failed, timed out or (rules) no longer the kind
    the priority list wants, choose the next one (by the rules, or at random for the random helper), act
    (``perceive``, ``_situation``, ``rule_plan``, ``_execute``)."""
    mem = perceive(memory, state, timing)
    sit = _situation(mem, state)
    mem, drawn_put_in = rule_plan(key, mem, state, sit)
    action, mem = _execute(mem, state, sit, put_in_first=~mem.random)
    action = jnp.where(drawn_put_in, S.PUT_IN, action)  # the random helper's drawn put-in
    return action.astype(jnp.int32), mem


@dataclasses.dataclass(frozen=True)
class RuleAgent:
    """The rule-based planner (see the module docstring) in one of ``ROLES``: ``"main"`` the constrained agent,
    ``"rhp"`` the RHP helper (no goal; the nearest possible target, where the paper's appendix B.2 says
    "randomly"), ``"oracle"`` the RHP with the true goal and full perception, ``"random"`` the random helper
    (``RandomHelper``). The role only sets the memory ``init`` returns: ``act`` is the same function
    (``rule_act``) for every role, so ``play`` runs two rule agents through one compiled act (vmapped)."""

    role: str = "main"

    def __post_init__(self):
        if self.role not in ROLES:
            raise ValueError(f"unknown CHAIC rule agent role {self.role!r}; choose from {list(ROLES)}")

    def init(self, key: jax.Array, state: S.State, agent: int | jax.Array | None = None) -> AgentMemory:
        """Returns the memory of ``agent`` (default: 0 for ``"main"``, 1 for the helpers) at the start of the
        episode ``state``."""
        helper = self.role != "main"
        if agent is None:
            agent = S.HELPER if helper else S.MAIN
        if self.role in ("rhp", "random"):
            goal, knows = possible_target_classes(state.task).astype(jnp.int8), False
        else:
            goal, knows = state.goal_count, True
        return new_memory(
            state, agent, goal, knows, helper=helper, omniscient=self.role == "oracle", random=self.role == "random"
        )

    def act(self, key: jax.Array, memory: AgentMemory, state: S.State, timing: W.Timing = DEFAULT_TIMING):
        """Returns ``(action int32, memory)``: the agent's next action in ``state`` (call it only when the agent is
        ready, ``world.ready(state)[agent]``; ``rule_act``)."""
        return rule_act(key, memory, state, timing)


@dataclasses.dataclass(frozen=True)
class RandomHelper(RuleAgent):
    """The paper's Random helper: each time its plan finishes it draws one uniformly among the valid plans
    (explore; go to the goal place when holding something and the goal place is known; put in when possible; pick
    up a known object, any pickable class; remove a known obstacle), then the plan's object (or viewpoint)
    uniformly. Its memory, perception and walking are the rule agents' (a ``RuleAgent`` of role ``"random"``)."""

    role: str = "random"


@dataclasses.dataclass(frozen=True)
class NoHelper:
    """No helper (the paper's w/o). With ``inactive`` (the default) ``play`` takes the helper out of the world
    (``agents.active[1] = False``: it neither acts nor lifts furniture with the constrained agent); otherwise it
    stays where it starts and always waits."""

    inactive: bool = True

    def init(self, key: jax.Array, state: S.State, agent: int | jax.Array = S.HELPER) -> jax.Array:
        """Returns a placeholder memory (``int32`` 0)."""
        return jnp.zeros((), jnp.int32)

    def act(self, key: jax.Array, memory: jax.Array, state: S.State, timing: W.Timing = DEFAULT_TIMING):
        """Returns ``(WAIT, memory)``."""
        return jnp.int32(S.WAIT), memory


# -- learned helpers ------------------------------------------------------------------------------------------


class HelperPolicy(Protocol):
    """The learned helpers' interface: ``helper_init(key, state) -> helper_state`` and ``helper_act(params,
    helper_state, state, obs) -> (action, helper_state)`` with ``params`` the helper's parameters,
    ``helper_state`` its recurrent state (any pytree), ``state`` the true ``state.State`` (which a learned helper
    should not read beyond what ``obs`` shows) and ``obs`` the helper's observation (``observation.observe``)."""

    def helper_init(self, key: jax.Array, state: S.State) -> Any: ...

    def helper_act(self, params: Any, helper_state: Any, state: S.State, obs: dict) -> tuple[jax.Array, Any]: ...


@dataclasses.dataclass(frozen=True)
class PolicyHelper:
    """A ``HelperPolicy`` (a learned helper) with its parameters, as an agent ``play`` can run as the helper: it
    sees the helper's observation (``observation.observe``: the goal only with ``sees_goal``, ``rays`` depth /
    semantic rays) and keeps its recurrent state as its memory."""

    policy: Any
    params: Any
    sees_goal: bool = False
    rays: int = 0

    def init(self, key: jax.Array, state: S.State, agent: int | jax.Array = S.HELPER) -> Any:
        """Returns the policy's initial recurrent state."""
        return self.policy.helper_init(key, state)

    def act(self, key: jax.Array, memory: Any, state: S.State, timing: W.Timing = DEFAULT_TIMING):
        """Returns ``(action int32, memory)`` from the policy on the helper's observation."""
        obs = O.observe(state, S.HELPER, self.sees_goal, timing.view_dist, self.rays)
        action, memory = self.policy.helper_act(self.params, memory, state, obs)
        return jnp.asarray(action, jnp.int32), memory


def make_agent(kind: str):
    """Returns the agent ``kind`` (``KINDS``): ``"main"`` the constrained agent, ``"none"`` no helper, ``"random"``,
    ``"rhp"``, ``"oracle"`` the helpers. Raises ``ValueError`` for an unknown kind."""
    if kind not in KINDS:
        raise ValueError(f"unknown CHAIC agent {kind!r}; choose from {list(KINDS)}")
    return {
        "main": RuleAgent("main"),
        "none": NoHelper(),
        "random": RandomHelper(),
        "rhp": RuleAgent("rhp"),
        "oracle": RuleAgent("oracle"),
    }[kind]
