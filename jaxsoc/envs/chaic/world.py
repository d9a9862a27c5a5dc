"""CHAIC's jittable dynamics: what agents see, which actions are valid, and the asynchronous step.

**Asynchronous time** (the original's ``tdw_gym.step``): every action lasts a number of frames
(``Timing``); ``step_event`` starts the new action of every agent whose previous one has finished, then advances
the clock to the next moment any agent's action finishes and resolves the actions finishing then (agents in
order: constrained agent, helper, child). An agent whose action is still under way keeps it; its entry in
``actions`` is ignored. Effects happen when an action finishes, with the state at that moment.

**Actions** (``state.py``) and their rules (``catalogue``: the original's constants):

- move forward 0.5 m: fails against a wall (or, for the wheelchair, within ``OBSTACLE_BLOCK`` of an obstacle).
- pick up ``i``: refused at once (``Timing.fail`` frames) unless the object is free (not held, in no container,
  not delivered or broken), a hand is free (both for furniture) and it is within reach (3 m + half its size, no
  wall between); the agent walks to 0.7 m from it, then grasps. Out of the reach heights it succeeds with
  probability ``exp(-delta / alpha) / beta`` (``delta`` the height beyond the range; wheelchair ``exp(-2
  delta)``); furniture with ``exp(min(0, (strength - mass) / 50))``, or always when the other agent stands within
  1.5 m (lifting together); the child breaks a vase with probability 0.5 above her reach, 0.25 within.
- put in: the object in one hand into the container (or the bike's basket) in the other, 3 objects at most.
- put on: the held object (non-bike hands first; the bike gives its basket's contents) on the goal place, when
  within reach of it; out of the put-on heights it succeeds with ``exp(-delta)`` (the wheelchair never). A
  delivered object (a container with its contents) rests on the goal place, frozen. A failed put-on drops the
  object 2.5 m behind the agent, on the floor.
- remove ``i``: walk to an obstacle, pick it up and set it down in the nearest corner of the room.
- wait, message: nothing, for ``Timing.wait``/``Timing.message`` frames.

**The child** (shopping, agent 2) is part of the world: she follows the constrained agent and, once in every
``Timing.child`` frames (her decision), starts running away with probability ``child_run_prob`` (0.2,
``child_agent.py``) to a random spot far away; she comes back once the helper (or the constrained agent) is
within 2.5 m of her. Frames she spends more than 3.5 m from the constrained agent count in ``away_frames``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.envs.chaic import geometry as G
from jaxsoc.envs.chaic import state as S

VIEW_DIST = 8.0  # metres an agent sees objects at (the TDW detector's useful range; a parameter)
FOV = 90.0  # degrees (the original's camera)
OBSTACLE_BLOCK = 0.6  # a wheelchair cannot move closer than this to an obstacle's centre
WALL_MARGIN = 0.2  # a move may not end closer than this to a wall
CHILD_AWAY = 3.5  # child_agent.py: frames count as an emergency while she is farther than this
CHILD_RETURN = 2.5  # she returns when someone comes this close
CHILD_STEP = 1.0  # metres per child action (she runs)

_KIND = jnp.asarray(K.CLASS_KIND)
_PICKABLE = jnp.asarray(np.isin(K.CLASS_KIND, (K.ITEM, K.CONTAINER, K.VASE, K.FURNITURE)))
_TARGETABLE = jnp.asarray(np.isin(K.CLASS_KIND, (K.ITEM, K.VASE, K.FURNITURE)))  # a possible target's kinds
_HOLDS = jnp.asarray(np.isin(K.CLASS_KIND, (K.CONTAINER, K.BIKE)))


class Timing(struct.PyTreeNode):
    """Frames per action (``catalogue.DURATIONS``; ``child``: frames between the child's decisions) and the
    child's run-away probability per decision."""

    move: float = float(K.DURATIONS["move"])
    turn: float = float(K.DURATIONS["turn"])
    pick: float = float(K.DURATIONS["pick"])
    put_in: float = float(K.DURATIONS["put_in"])
    put_on: float = float(K.DURATIONS["put_on"])
    dock: float = float(K.DURATIONS["dock"])
    remove: float = float(K.DURATIONS["remove"])
    wait: float = float(K.DURATIONS["wait"])
    message: float = float(K.DURATIONS["message"])
    fail: float = float(K.DURATIONS["fail"])
    child: float = 100.0
    child_run_prob: float = 0.2
    view_dist: float = VIEW_DIST


# -- derived quantities -------------------------------------------------------------------------------------


def object_positions(state: S.State) -> jax.Array:
    """Returns ``float32[MAX_OBJECTS, 2]``: where each object is now (a held object at its holder, a contained one
    at its container's place)."""
    obj, agents = state.objects, state.agents
    pos = jnp.where((obj.holder >= 0)[:, None], agents.pos[jnp.maximum(obj.holder, 0)], obj.pos)
    in_c = obj.container >= 0
    return jnp.where(in_c[:, None], pos[jnp.maximum(obj.container, 0)], pos)


def object_carrier(state: S.State) -> jax.Array:
    """Returns ``int32[MAX_OBJECTS]``: the agent carrying each object, directly or in a held container (-1)."""
    obj = state.objects
    via = obj.holder[jnp.maximum(obj.container, 0)]
    return jnp.where(obj.container >= 0, via, obj.holder).astype(jnp.int32)


def contents(state: S.State) -> jax.Array:
    """Returns ``int32[MAX_OBJECTS]``: how many objects are in each object (a container's load)."""
    c = state.objects.container
    return jnp.zeros(S.MAX_OBJECTS, jnp.int32).at[jnp.where(c >= 0, c, S.MAX_OBJECTS)].add(1, mode="drop")


def in_view(state: S.State, agent, points: jax.Array, view_dist) -> jax.Array:
    """Returns ``bool[P]``: which ``points`` (``float32[P, 2]``) ``agent`` sees: within its 90-degree field of view,
    ``view_dist`` and line of sight, or at its feet (within 0.3 m)."""
    a = state.agents
    src = a.pos[agent]
    dist = jnp.linalg.norm(points - src, axis=-1)
    off = jnp.abs(G.angle_off(a.heading[agent], src, points))
    near = dist < 0.3  # at the agent's feet (or held): seen
    blocked = G.crosses_wall(state.scene, src, points)
    return near | ((off <= FOV / 2) & (dist <= view_dist) & ~blocked)


def visible_objects(state: S.State, agent, view_dist: float = VIEW_DIST) -> jax.Array:
    """Returns ``bool[MAX_OBJECTS]``: the objects ``agent`` sees: within its 90-degree field of view, ``view_dist``
    and line of sight (no wall between), or carried by it; contents are seen with their container."""
    carrier = object_carrier(state)
    seen = in_view(state, agent, object_positions(state), view_dist) | (carrier == agent)
    return (state.objects.cls > 0) & seen


def visible_agents(state: S.State, agent, view_dist: float = VIEW_DIST) -> jax.Array:
    """Returns ``bool[NUM_AGENTS]``: the other active agents ``agent`` sees (itself excluded)."""
    seen = in_view(state, agent, state.agents.pos, view_dist)
    return seen & state.agents.active & (jnp.arange(S.NUM_AGENTS) != agent)


def goal_visible(state: S.State, agent, view_dist: float = VIEW_DIST) -> jax.Array:
    """Returns ``bool``: whether ``agent`` sees the goal place."""
    return in_view(state, agent, state.scene.goal_pos[None], view_dist)[0]


def sightings(state: S.State, agent, view_dist: float = VIEW_DIST, extra: jax.Array | None = None) -> dict:
    """Returns what ``agent`` sees now, from one ``in_view`` over every point of interest (one copy of the line of
    sight test in the program instead of one per call): ``objects`` bool[MAX_OBJECTS] (``visible_objects``),
    ``agents`` bool[NUM_AGENTS] (``visible_agents``), ``goal`` bool (``goal_visible``), ``extra`` bool[P]
    (``in_view`` of the ``extra`` points, float32[P, 2]; empty without them), and the ``positions``
    float32[MAX_OBJECTS, 2] (``object_positions``) and ``carrier`` int32[MAX_OBJECTS] (``object_carrier``) it
    computed on the way."""
    a = state.agents
    pos = object_positions(state)
    carrier = object_carrier(state)
    points = [pos, a.pos, state.scene.goal_pos[None]]
    if extra is not None:
        points.append(extra)
    seen = in_view(state, agent, jnp.concatenate(points), view_dist)
    n, m = S.MAX_OBJECTS, S.MAX_OBJECTS + S.NUM_AGENTS
    return {
        "objects": (state.objects.cls > 0) & (seen[:n] | (carrier == agent)),
        "agents": seen[n:m] & a.active & (jnp.arange(S.NUM_AGENTS) != agent),
        "goal": seen[m],
        "extra": seen[m + 1 :],
        "positions": pos,
        "carrier": carrier,
    }


def reach_distance(
    state: S.State, agent, point: jax.Array, extent: jax.Array, blocked: jax.Array | None = None
) -> tuple[jax.Array, jax.Array]:
    """Returns ``(within bool, distance float32)``: whether ``agent`` can walk straight to ``point`` (something of
    horizontal ``extent``) to act on it: within 3 m + half the extent (``move_to.py``), no wall between.
    ``blocked``: whether a wall is between, when the caller tested it already (with others, in one test)."""
    src = state.agents.pos[agent]
    dist = jnp.linalg.norm(point - src)
    if blocked is None:
        blocked = G.crosses_wall(state.scene, src, point)
    ok = (dist <= K.REACH + extent / 2) & ~blocked
    return ok, dist


def transported(state: S.State) -> jax.Array:
    """Returns ``float32``: the targets on the goal place, each class counted up to its goal count (furniture: their
    mass)."""
    obj = state.objects
    counted_ = counted(state)
    weight = jnp.where(state.task == K.TASK["furniture"], obj.mass, 1.0)
    return (counted_ * weight).sum()


def counted(state: S.State) -> jax.Array:
    """Returns ``bool[MAX_OBJECTS]``: delivered objects that count towards the goal (per class, the first
    ``goal_count`` in slot order)."""
    obj = state.objects
    cls = obj.cls.astype(jnp.int32)
    hit = obj.delivered & (state.goal_count[cls] > 0) & (obj.cls > 0)
    same = (cls[:, None] == cls[None, :]) & hit[None, :]
    rank = jnp.sum(same & (jnp.arange(S.MAX_OBJECTS)[None, :] < jnp.arange(S.MAX_OBJECTS)[:, None]), -1)
    return hit & (rank < state.goal_count[cls])


def transport_rate(state: S.State) -> jax.Array:
    """Returns ``float32``: ``transported / total``."""
    return transported(state) / jnp.maximum(state.total, 1e-6)


def success(state: S.State) -> jax.Array:
    """Returns ``bool``: every target is on the goal place."""
    return transported(state) >= state.total - 1e-3


def ready(state: S.State) -> jax.Array:
    """Returns ``bool[NUM_AGENTS]``: active agents whose last action has finished (they act next)."""
    return state.agents.active & (state.agents.status != S.ONGOING)


# -- validity -----------------------------------------------------------------------------------------------


def _basic_valid(state: S.State, agent, goal_blocked: jax.Array | None = None) -> jax.Array:
    """Returns ``bool[PICK]``: the validity of the actions that name no object (see ``valid_actions``);
    ``goal_blocked``: whether a wall is between the agent and the goal place, when the caller tested it."""
    obj = state.objects
    hands = state.agents.hands[agent]
    held_cls = jnp.where(hands >= 0, obj.cls[jnp.maximum(hands, 0)], 0).astype(jnp.int32)
    held_kind = _KIND[held_cls]
    load = contents(state)[jnp.maximum(hands, 0)]
    holder_ok = _HOLDS[held_cls] & (load < K.CONTAINER_SLOTS) & (hands >= 0)
    item_ok = (held_kind == K.ITEM) | (held_kind == K.VASE)
    put_in = (holder_ok[0] & item_ok[1]) | (holder_ok[1] & item_ok[0])
    bike_load = jnp.where(held_kind == K.BIKE, load, 0).sum()
    something = ((hands >= 0) & (held_kind != K.BIKE)).any() | (bike_load > 0)
    goal_ok, _ = reach_distance(state, agent, state.scene.goal_pos, state.scene.goal_extent, goal_blocked)
    return jnp.ones(S.PICK, bool).at[S.PUT_IN].set(put_in).at[S.PUT_ON].set(something & goal_ok)


def _walls_to_goal_and(state: S.State, agent, points: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Returns ``(blocked bool[P], goal_blocked bool)``: whether a wall is between ``agent`` and each of ``points``
    (``float32[P, 2]``) and the goal place, in one wall test."""
    src = state.agents.pos[agent]
    blocked = G.crosses_wall(state.scene, src, jnp.concatenate([points, state.scene.goal_pos[None]]))
    return blocked[:-1], blocked[-1]


def _object_valid(
    state: S.State, agent, index: jax.Array, blocked: jax.Array | None = None
) -> tuple[jax.Array, jax.Array]:
    """Returns ``(pick, remove)`` ``bool[len(index)]``: whether picking up / removing the objects ``index`` is
    valid (see ``valid_actions``); ``blocked``: whether a wall is between the agent and each, when the caller
    tested it."""
    obj = state.objects
    free = state.agents.hands[agent] < 0
    pos = object_positions(state)[index]
    src = state.agents.pos[agent]
    d = pos - src
    dist = jnp.sqrt(d[..., 0] ** 2 + d[..., 1] ** 2)
    if blocked is None:
        blocked = G.crosses_wall(state.scene, src, pos)
    reachable = (dist <= K.REACH + obj.size[index] / 2) & ~blocked
    free_obj = (obj.cls > 0) & (obj.holder < 0) & (obj.container < 0) & ~obj.delivered & ~obj.broken
    free_obj = free_obj[index] & reachable
    cls = obj.cls[index].astype(jnp.int32)
    hand_ok = jnp.where(_KIND[cls] == K.FURNITURE, free.all(), free.any())
    return free_obj & _PICKABLE[cls] & hand_ok, free_obj & (_KIND[cls] == K.OBSTACLE) & free.any()


def valid_actions(state: S.State, agent) -> jax.Array:
    """Returns ``bool[NUM_ACTIONS]``: the actions of ``agent`` that would not be refused at once: moves, turns,
    wait and message always; put in with an item in one hand and a container (or the bike) with room in the
    other; put on with something to put and the goal place within reach; pick up a free, reachable object with a
    free hand (both for furniture); remove a reachable obstacle with a free hand."""
    blocked, goal_blocked = _walls_to_goal_and(state, agent, object_positions(state))
    pick, remove = _object_valid(state, agent, jnp.arange(S.MAX_OBJECTS), blocked)
    return jnp.concatenate([_basic_valid(state, agent, goal_blocked), pick, remove])


def action_valid(state: S.State, agent, action: jax.Array) -> jax.Array:
    """Returns ``bool``: ``valid_actions(state, agent)[action]`` (False outside the action space), checking only
    the object the action names."""
    kind, obj = S.decode_action(action)
    inside = (action >= 0) & (action < S.NUM_ACTIONS)
    index = jnp.maximum(obj, 0)[None]
    blocked, goal_blocked = _walls_to_goal_and(state, agent, object_positions(state)[index])
    pick, remove = _object_valid(state, agent, index, blocked)
    basic = _basic_valid(state, agent, goal_blocked)[jnp.clip(action, 0, S.PICK - 1)]
    return inside & jnp.where(kind == 7, pick[0], jnp.where(kind == 8, remove[0], basic))


# -- starting actions ---------------------------------------------------------------------------------------


def _approach(src, point, extent):
    """Returns ``(spot, walk)``: where a walk towards ``point`` stops (0.7 m short of its edge) and its length."""
    d = point - src
    dist = jnp.linalg.norm(d)
    walk = jnp.maximum(dist - extent / 2 - K.ARRIVE, 0.0)
    spot = src + d / jnp.maximum(dist, 1e-6) * walk
    return spot, walk


def _start_values(state: S.State, agent, action, timing: Timing) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Returns ``(stored int32, done int32, end float32[2])`` of ``agent`` starting ``action`` in ``state``: the
    ``Agents.action`` value (``-1 - action`` when refused at once), the frame it finishes at (an action refused at
    once still lasts ``timing.fail`` frames and then FAILS) and the place it ends at. Reads nothing that starting
    another agent's action changes, so both controlled agents' starts can be computed at once (``_start_both``)."""
    a = state.agents
    kind, obj_i = S.decode_action(action)
    o = jnp.maximum(obj_i, 0)
    valid = action_valid(state, agent, action)
    ability = a.ability[agent].astype(jnp.int32)
    slow = jnp.asarray(K.SLOWNESS)[ability]
    rider = jnp.asarray(K.RIDING)[ability]
    src = a.pos[agent]
    move_dir = G.heading_vector(a.heading[agent])
    pos = object_positions(state)
    target = jnp.where(kind == S.PUT_ON, state.scene.goal_pos, pos[o])
    extent = jnp.where(kind == S.PUT_ON, state.scene.goal_extent, state.objects.size[o])
    spot, walk = _approach(src, target, extent)
    walk_frames = walk / K.MOVE_STEP * timing.move * slow
    dock = jnp.where(rider, timing.dock, 0.0)
    frames = jnp.select(
        [
            kind == S.MOVE,
            (kind == S.TURN_LEFT) | (kind == S.TURN_RIGHT),
            kind == S.WAIT,
            kind == S.PUT_IN,
            kind == S.PUT_ON,
            kind == S.MESSAGE,
            kind == 7,
        ],
        [
            timing.move * slow,
            timing.turn * slow,
            timing.wait,
            timing.put_in + dock,
            walk_frames + timing.put_on,
            timing.message,
            walk_frames + timing.pick + dock,
        ],
        walk_frames + timing.remove,
    )
    frames = jnp.where(valid, frames, timing.fail)
    end = jnp.where(kind == S.MOVE, src + K.MOVE_STEP * move_dir, jnp.where(kind >= S.PUT_ON, spot, src))
    end = jnp.where(valid & ((kind == S.MOVE) | (kind >= 7) | (kind == S.PUT_ON)), end, src)
    done = state.frame + jnp.maximum(jnp.round(frames), 1).astype(jnp.int32)
    stored = jnp.where(valid, action, -1 - jnp.maximum(action, 0)).astype(jnp.int32)
    return stored, done, end


def _start(state: S.State, agent, action, timing: Timing) -> S.State:
    """Returns ``state`` with ``agent`` starting ``action``: its duration, the place it ends at, status ONGOING
    (an action refused at once still lasts ``timing.fail`` frames and then FAILS)."""
    stored, done, end = _start_values(state, agent, action, timing)
    a = state.agents
    agents = a.replace(
        action=a.action.at[agent].set(stored),
        start_frame=a.start_frame.at[agent].set(state.frame),
        done_frame=a.done_frame.at[agent].set(done),
        status=a.status.at[agent].set(S.ONGOING),
        target_pos=a.target_pos.at[agent].set(end),
    )
    return state.replace(agents=agents)


def _start_both(state: S.State, actions: jax.Array, starting: jax.Array, timing: Timing) -> S.State:
    """Returns ``state`` with the controlled agents ``starting`` (``bool[2]``) starting ``actions`` (``int32[2]``):
    ``_start`` for each, computed for both at once (``jax.vmap`` over the two: one copy of the work in the program);
    the same as starting them one after the other, as neither start reads what the other writes."""
    agents = jnp.arange(2, dtype=jnp.int32)
    actions = jnp.asarray(actions, jnp.int32)[:2]
    stored, done, end = jax.vmap(_start_values, in_axes=(None, 0, 0, None))(state, agents, actions, timing)
    a = state.agents

    def put(column: jax.Array, value: jax.Array) -> jax.Array:
        on = starting.reshape(starting.shape + (1,) * (column.ndim - 1))
        return column.at[:2].set(jnp.where(on, value.astype(column.dtype), column[:2]))

    agents = a.replace(
        action=put(a.action, stored),
        start_frame=put(a.start_frame, jnp.broadcast_to(state.frame, (2,))),
        done_frame=put(a.done_frame, done),
        status=put(a.status, jnp.full((2,), S.ONGOING, a.status.dtype)),
        target_pos=put(a.target_pos, end),
    )
    return state.replace(agents=agents)


def refused(action: jax.Array) -> jax.Array:
    """Returns ``bool[...]``: whether stored ``Agents.action`` values mark an action refused at once (stored as
    ``-1 - action``)."""
    return action < 0


def stored_action(action: jax.Array) -> jax.Array:
    """Returns ``int32[...]``: the action id an ``Agents.action`` value stands for (refused ones decoded)."""
    return jnp.where(action < 0, -1 - action, action)


# -- finishing actions --------------------------------------------------------------------------------------


def _range_delta(height, lo_hi):
    return jnp.maximum(jnp.maximum(lo_hi[0] - height, height - lo_hi[1]), 0.0)


def pick_probability(state: S.State, agent, obj) -> tuple[jax.Array, jax.Array]:
    """Returns ``(success, break)`` probabilities (``float32``) of ``agent`` picking up ``obj`` now: the reach
    heights rule (``exp(-delta) / 2``; wheelchair ``exp(-2 delta)``), the strength rule for furniture (1 when the
    other agent stands within 1.5 m), and the child's vase breaking."""
    ability = state.agents.ability[agent].astype(jnp.int32)
    o = state.objects
    cls = o.cls[obj].astype(jnp.int32)
    delta = _range_delta(o.height[obj], jnp.asarray(K.PICK_RANGE)[ability])
    wheel = jnp.asarray(K.WHEELCHAIR)[ability]
    p_normal = jnp.where(delta > 0, jnp.exp(-delta / K.PICK_ALPHA) / K.PICK_BETA, 1.0)
    p_wheel = jnp.exp(-delta / K.WHEELCHAIR_PICK_ALPHA) / K.WHEELCHAIR_PICK_BETA
    p = jnp.where(wheel, p_wheel, p_normal)
    strength = jnp.asarray(K.STRENGTH)[ability]
    p_lift = jnp.exp(jnp.minimum(0.0, (strength - o.mass[obj]) / K.FURNITURE_ALPHA))
    other = jnp.where(agent == S.MAIN, S.HELPER, S.MAIN)
    together = jnp.linalg.norm(state.agents.pos[other] - o.pos[obj]) <= K.JOINT_LIFT_DIST + o.size[obj] / 2
    together = together & state.agents.active[other]
    furniture = _KIND[cls] == K.FURNITURE
    p = jnp.where(furniture, jnp.where(together, 1.0, p_lift), p)
    child = ability == K.ABILITY["child"]
    p_break = jnp.where(child & (_KIND[cls] == K.VASE), jnp.where(delta > 0, K.VASE_BREAK_HIGH, K.VASE_BREAK_LOW), 0.0)
    return p, p_break


def put_probability(state: S.State, agent) -> jax.Array:
    """Returns ``float32``: the probability that ``agent``'s put-on on the goal place succeeds (``exp(-delta)``
    out of its put-on heights; 0 for the wheelchair)."""
    ability = state.agents.ability[agent].astype(jnp.int32)
    delta = _range_delta(state.scene.goal_height, jnp.asarray(K.PUT_RANGE)[ability])
    p = jnp.exp(-delta / K.PUT_ALPHA) / K.PUT_BETA
    return jnp.where(jnp.asarray(K.WHEELCHAIR)[ability] & (delta > 0), 0.0, p)


def _finish_move(state, agent):
    a = state.agents
    end = a.target_pos[agent]
    scene = state.scene
    wall = G.crosses_wall(scene, a.pos[agent], end) | (G.clearance(scene, end) < WALL_MARGIN)
    inside = G.room_of(scene, end) >= 0
    obj = state.objects
    floor_obstacle = (_KIND[obj.cls.astype(jnp.int32)] == K.OBSTACLE) & (obj.holder < 0)
    near = jnp.linalg.norm(obj.pos - end, axis=-1) < OBSTACLE_BLOCK
    wheel = jnp.asarray(K.WHEELCHAIR)[a.ability[agent].astype(jnp.int32)]
    blocked = wall | ~inside | (wheel & (floor_obstacle & near).any())
    pos = jnp.where(blocked, a.pos[agent], end)
    return state.replace(agents=a.replace(pos=a.pos.at[agent].set(pos))), ~blocked


def _face(a: S.Agents, agent, point):
    angle = G.bearing(a.pos[agent], point)
    heading = jnp.round(angle / K.TURN_STEP).astype(jnp.int32) % K.NUM_HEADINGS
    return jnp.where(jnp.linalg.norm(point - a.pos[agent]) > 1e-3, heading, a.heading[agent])


def _finish_pick(key, state, agent, obj):
    a, o = state.agents, state.objects
    a = a.replace(pos=a.pos.at[agent].set(a.target_pos[agent]))
    a = a.replace(heading=a.heading.at[agent].set(_face(a, agent, o.pos[obj])))
    state = state.replace(agents=a)
    hands = a.hands[agent]
    cls = o.cls[obj].astype(jnp.int32)
    furniture = _KIND[cls] == K.FURNITURE
    still = (o.holder[obj] < 0) & (o.container[obj] < 0) & ~o.delivered[obj] & ~o.broken[obj]
    hand_free = jnp.where(furniture, (hands < 0).all(), (hands < 0).any())
    p, p_break = pick_probability(state, agent, obj)
    k_break, k_pick = jax.random.split(key)
    broke = still & hand_free & (jax.random.uniform(k_break) < p_break)
    ok = still & hand_free & ~broke & (jax.random.uniform(k_pick) < p)
    slot = jnp.argmax(hands < 0)
    new_hands = jnp.where(furniture, jnp.full(2, obj, jnp.int16), hands.at[slot].set(obj.astype(jnp.int16)))
    a = a.replace(hands=a.hands.at[agent].set(jnp.where(ok, new_hands, hands)))
    o = o.replace(
        holder=o.holder.at[obj].set(jnp.where(ok, agent, o.holder[obj]).astype(jnp.int8)),
        broken=o.broken.at[obj].set(o.broken[obj] | broke),
    )
    return state.replace(agents=a, objects=o), ok


def _finish_put_in(state, agent):
    a, o = state.agents, state.objects
    hands = a.hands[agent]
    h = jnp.maximum(hands, 0)
    kinds = _KIND[o.cls[h].astype(jnp.int32)]
    load = contents(state)[h]
    holder_ok = jnp.isin(kinds, jnp.array([K.CONTAINER, K.BIKE])) & (load < K.CONTAINER_SLOTS) & (hands >= 0)
    item_ok = ((kinds == K.ITEM) | (kinds == K.VASE)) & (hands >= 0)
    first = holder_ok[0] & item_ok[1]  # container in hand 0, item in hand 1
    ok = first | (holder_ok[1] & item_ok[0])
    container = jnp.where(first, hands[0], hands[1])
    item = jnp.where(first, hands[1], hands[0])
    item_slot = jnp.where(first, 1, 0)
    o = o.replace(
        container=o.container.at[item].set(jnp.where(ok, container, o.container[item]).astype(jnp.int16)),
        holder=o.holder.at[item].set(jnp.where(ok, -1, o.holder[item]).astype(jnp.int8)),
    )
    a = a.replace(hands=a.hands.at[agent, item_slot].set(jnp.where(ok, -1, hands[item_slot]).astype(jnp.int16)))
    return state.replace(agents=a, objects=o), ok


def _finish_put_on(key, state, agent):
    a, o = state.agents, state.objects
    a = a.replace(pos=a.pos.at[agent].set(a.target_pos[agent]))
    a = a.replace(heading=a.heading.at[agent].set(_face(a, agent, state.scene.goal_pos)))
    state = state.replace(agents=a)
    hands = a.hands[agent]
    h = jnp.maximum(hands, 0)
    kinds = _KIND[o.cls[h].astype(jnp.int32)]
    load = contents(state)[h]
    plain = (hands >= 0) & (kinds != K.BIKE)
    bike = (hands >= 0) & (kinds == K.BIKE) & (load > 0)
    has = plain.any() | bike.any()
    slot = jnp.where(plain.any(), jnp.argmax(plain), jnp.argmax(bike))
    thing = h[slot]
    is_bike = kinds[slot] == K.BIKE
    behind = a.pos[agent] - K.DROP_BEHIND * G.heading_vector(a.heading[agent])
    walls = G.crosses_wall(state.scene, a.pos[agent], jnp.stack([state.scene.goal_pos, behind]))  # one wall test
    within, _ = reach_distance(state, agent, state.scene.goal_pos, state.scene.goal_extent, walls[0])
    ok = has & within & (jax.random.uniform(key) < put_probability(state, agent))
    idx = jnp.arange(S.MAX_OBJECTS)
    moved = ((idx == thing) & ~is_bike) | (o.container == thing)  # the object (container) and its contents
    furniture = _KIND[o.cls[thing].astype(jnp.int32)] == K.FURNITURE
    # delivery: frozen on the goal place; bookkeeping for IA / CR before the delivered flags change
    cls = o.cls.astype(jnp.int32)
    before = counted(state)
    delivered = o.delivered | (ok & moved)
    after = counted(state.replace(objects=o.replace(delivered=delivered)))
    targetable = _TARGETABLE[cls] & ok & moved
    placed = state.placed.at[agent].add(targetable.sum())
    useful = state.useful.at[agent].add((after & ~before & moved & ok).sum())
    offset = jnp.stack([jnp.cos(idx * 2.4), jnp.sin(idx * 2.4)], -1) * state.scene.goal_extent * 0.3
    goal_pos = state.scene.goal_pos + offset
    behind = jnp.where(walls[1], a.pos[agent], behind)
    fail_drop = has & ~ok
    top = jnp.asarray(K.CLASS_HEIGHT)[cls]
    drop_here = (idx == thing) & ~is_bike
    o = o.replace(
        delivered=delivered,
        delivered_by=jnp.where(ok & moved, agent, o.delivered_by).astype(jnp.int8),
        pos=jnp.where((ok & moved)[:, None], goal_pos, jnp.where((fail_drop & drop_here)[:, None], behind, o.pos)),
        height=jnp.where(ok & moved, state.scene.goal_height + top, jnp.where(fail_drop & drop_here, top, o.height)),
        holder=jnp.where(drop_here & has, -1, o.holder).astype(jnp.int8),
        container=jnp.where(ok & (o.container == thing) & is_bike, -1, o.container).astype(jnp.int16),
    )
    keep_bike = is_bike
    emptied = jnp.where(furniture, jnp.full(2, -1, jnp.int16), hands.at[slot].set(-1))
    a = a.replace(hands=a.hands.at[agent].set(jnp.where(has & ~keep_bike, emptied, hands)))
    state = state.replace(agents=a, objects=o, placed=placed, useful=useful)
    return state, ok


def _room_corner(scene: S.Scene, point: jax.Array) -> jax.Array:
    room = jnp.maximum(G.room_of(scene, point), 0)
    r = scene.rooms[room]
    corners = jnp.array(
        [[r[0] + 0.4, r[1] + 0.4], [r[2] - 0.4, r[1] + 0.4], [r[0] + 0.4, r[3] - 0.4], [r[2] - 0.4, r[3] - 0.4]]
    )
    dist_doors = jnp.linalg.norm(corners[:, None] - scene.doors[None], axis=-1)
    door_clear = jnp.where(scene.door_valid[None], dist_doors, jnp.inf).min(-1)
    cost = jnp.linalg.norm(corners - point, axis=-1) - 10.0 * (door_clear > 1.5)
    return corners[jnp.argmin(cost)]


def _finish_remove(state, agent, obj):
    a, o = state.agents, state.objects
    a = a.replace(pos=a.pos.at[agent].set(a.target_pos[agent]))
    state = state.replace(agents=a)
    still = (o.holder[obj] < 0) & (o.container[obj] < 0)
    ok = still & (a.hands[agent] < 0).any()
    aside = _room_corner(state.scene, a.pos[agent])
    o = o.replace(pos=o.pos.at[obj].set(jnp.where(ok, aside, o.pos[obj])))
    return state.replace(objects=o), ok


def _finish(key, state: S.State, agent) -> S.State:
    """Returns ``state`` with ``agent``'s action resolved at its ``done_frame``: effects applied, status set."""
    a = state.agents
    action = a.action[agent]
    kind, obj = S.decode_action(stored_action(action))
    obj = jnp.maximum(obj, 0)
    k_pick, k_put = jax.random.split(key)
    turned = jnp.where(kind == S.TURN_LEFT, 1, jnp.where(kind == S.TURN_RIGHT, -1, 0))
    s_turn = state.replace(
        agents=a.replace(heading=a.heading.at[agent].set((a.heading[agent] + turned) % K.NUM_HEADINGS))
    )
    branches = [
        lambda: _finish_move(state, agent),
        lambda: (s_turn, jnp.bool_(True)),
        lambda: (s_turn, jnp.bool_(True)),
        lambda: (state, jnp.bool_(True)),
        lambda: _finish_put_in(state, agent),
        lambda: _finish_put_on(k_put, state, agent),
        lambda: (state, jnp.bool_(True)),
        lambda: _finish_pick(k_pick, state, agent, obj),
        lambda: _finish_remove(state, agent, obj),
    ]
    # every branch computed, one selected: no control flow. Selected leaf by leaf, and only the leaves a branch
    # changed (``select_changed``): the program holds a select for each leaf a branch writes, not for every leaf of
    # the state nine times.
    index = jnp.where(refused(action), -1, jnp.clip(kind, 0, len(branches) - 1))
    new_state, ok = state, jnp.bool_(False)
    for k, branch in enumerate(branches):
        branch_state, branch_ok = branch()
        new_state = select_changed(index == k, branch_state, new_state, state)
        ok = jnp.where(index == k, branch_ok, ok)
    status = jnp.where(ok, S.SUCCEEDED, S.FAILED).astype(jnp.int8)
    ag = new_state.agents
    return new_state.replace(agents=ag.replace(status=ag.status.at[agent].set(status)))


def jnp_select(pred, on_true, on_false):
    """Returns the pytree ``on_true`` where ``pred`` else ``on_false`` (leafwise ``jnp.where``; a leaf that is the
    same array in both is returned as it is: no select in the program for what a computation left unchanged)."""
    return jax.tree_util.tree_map(lambda x, y: y if x is y else jnp.where(pred, x, y), on_true, on_false)


def select_changed(pred, on_true, on_false, base):
    """Returns the pytree ``on_true`` where ``pred`` else ``on_false``, leaf by leaf, for the leaves ``on_true``
    changed from ``base`` (the state it was computed from); elsewhere ``on_false``'s leaf. The same value as
    ``jnp_select`` whenever ``on_false`` equals ``base`` on those leaves where ``pred`` holds (a chain of exclusive
    branches all computed from ``base``: ``_finish``)."""
    return jax.tree_util.tree_map(lambda x, y, b: y if x is b else jnp.where(pred, x, y), on_true, on_false, base)


# -- the child ----------------------------------------------------------------------------------------------


def _child_start(key, state: S.State, timing: Timing) -> S.State:
    """Returns ``state`` with the child's next action started (when she is active and ready): back to following
    once an active agent is within ``CHILD_RETURN`` of her; else, at her first action in each new period of
    ``timing.child`` frames (her decision), running away with probability ``timing.child_run_prob`` to the
    farthest of 8 random spots from the constrained agent; she moves ``CHILD_STEP`` per action towards where she
    runs or to 1 m from the constrained agent (or waits ``timing.wait`` frames when she is there)."""
    a = state.agents
    k_run, k_spot = jax.random.split(key)
    child, main = a.pos[S.CHILD], a.pos[S.MAIN]
    near = jnp.linalg.norm(a.pos[:2] - child, axis=-1) <= CHILD_RETURN
    caught = (near & a.active[:2]).any()
    running = state.child_running & ~caught
    period = jnp.maximum(timing.child, 1.0)
    decides = jnp.floor(state.frame / period) > jnp.floor(a.start_frame[S.CHILD] / period)
    start_run = ~running & decides & (jax.random.uniform(k_run) < timing.child_run_prob)
    r = state.scene.rooms[0]
    spots = jax.random.uniform(k_spot, (8, 2), minval=r[:2] + 1.0, maxval=r[2:] - 1.0)
    spot = spots[jnp.argmax(jnp.linalg.norm(spots - main, axis=-1))]
    goal = jnp.where(start_run, spot, state.child_goal)
    running = running | start_run
    dest = jnp.where(running, goal, main)
    d = dest - child
    dist = jnp.linalg.norm(d)
    room = jnp.where(running, dist, jnp.maximum(dist - 1.0, 0.0))
    step = jnp.where(room >= 0.25, jnp.minimum(CHILD_STEP, room), 0.0)
    end = child + d / jnp.maximum(dist, 1e-6) * step
    frames = jnp.where(step > 0, timing.move * 2 * step / CHILD_STEP, timing.wait)
    heading = jnp.where(dist > 1e-3, _face(a, S.CHILD, dest), a.heading[S.CHILD])
    agents = a.replace(
        heading=a.heading.at[S.CHILD].set(heading),
        action=a.action.at[S.CHILD].set(S.WAIT),
        start_frame=a.start_frame.at[S.CHILD].set(state.frame),
        done_frame=a.done_frame.at[S.CHILD].set(state.frame + jnp.maximum(jnp.round(frames), 1).astype(jnp.int32)),
        status=a.status.at[S.CHILD].set(S.ONGOING),
        target_pos=a.target_pos.at[S.CHILD].set(end),
    )
    return state.replace(agents=agents, child_running=running, child_goal=goal)


def _child_finish(state: S.State) -> S.State:
    a = state.agents
    return state.replace(
        agents=a.replace(pos=a.pos.at[S.CHILD].set(a.target_pos[S.CHILD]), status=a.status.at[S.CHILD].set(S.SUCCEEDED))
    )


# -- the step -----------------------------------------------------------------------------------------------


def step_event(key: jax.Array, state: S.State, actions: jax.Array, timing: Timing) -> tuple[S.State, dict]:
    """Returns ``(state, info)`` after one event: the ready agents start ``actions`` (``int32[2]``: constrained
    agent, helper; an agent still busy ignores its entry), the child acts if ready, the clock moves to the next
    moment an action finishes (at most ``max_frames``) and the actions finishing then are resolved.

    ``info``: ``started`` bool[3] (who started an action), ``finished`` bool[3] (whose action finished),
    ``elapsed`` int32 (frames advanced), ``status`` int8[3]."""
    k_child, k_finish = jax.random.split(key)
    is_ready = ready(state)
    state = _start_both(state, actions, is_ready[:2], timing)
    state = jnp_select(is_ready[S.CHILD], _child_start(k_child, state, timing), state)
    a = state.agents
    busy = a.active & (a.status == S.ONGOING)
    nxt = jnp.where(busy, a.done_frame, jnp.iinfo(jnp.int32).max).min()
    now = jnp.minimum(jnp.where(busy.any(), nxt, state.frame + 1), state.max_frames)
    elapsed = now - state.frame
    child_far = jnp.linalg.norm(a.pos[S.CHILD] - a.pos[S.MAIN]) > CHILD_AWAY
    away = state.away_frames + jnp.where(a.active[S.CHILD] & child_far, elapsed, 0)
    state = state.replace(frame=now, away_frames=away)
    finishing = busy & (a.done_frame <= now)
    keys = jax.random.split(k_finish, 2)

    def finish(state: S.State, xs):  # the constrained agent's, then the helper's (a pick-up may race)
        agent, k, on = xs
        return jnp_select(on, _finish(k, state, agent), state), None

    agents = jnp.arange(2, dtype=jnp.int32)
    state, _ = jax.lax.scan(finish, state, (agents, keys, finishing[:2]))
    state = jnp_select(finishing[S.CHILD], _child_finish(state), state)
    info = {"started": is_ready, "finished": finishing, "elapsed": elapsed, "status": state.agents.status}
    return state, info
