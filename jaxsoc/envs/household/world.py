"""The household's state as fixed-size arrays and its jittable dynamics (VirtualHome-Social, symbolically).

Nodes have fixed slots: rooms ``[0, 4)`` (bathroom, bedroom, kitchen, living room), doors ``[4, 8)``,
furniture ``[8, 40)`` and grabbable objects ``[40, 88)``; class 0 marks an empty slot. Each node has one parent
and a relation to it (furniture and doors are IN_ROOM, objects ON a surface, INSIDE a container or HELD), a room
and a 2D position. The original's CLOSE and FACING edges are derived: a character is close to a node when it
stands within ``CLOSE_DIST`` of the node's *anchor* (a piece of furniture's centre; for an object on or in
furniture, that furniture's centre; for a held object, its holder) in the same room.

Two characters (0 = Alice, 1 = Bob) act in the same step. An action is ``verb * NUM_NODES + target``
(``VERBS``); ``putback_rh`` puts the object in the right hand ON ``target``, ``putin_lh`` the left hand's INSIDE
it. Preconditions are those of VirtualHome's ``execution.py`` (see ``valid_actions``); an action whose
preconditions fail does nothing and is reported. Both actions' preconditions are checked on the state before
the step; when neither is a walk and both name the same object, one character, drawn at random, acts (the
original's ``convert_action``). A walk moves at most ``step_length`` metres (1 m, Unity's ``walktowards``)
towards the target's anchor, through the doors of the route with fewest doors; with ``teleport`` it arrives at
once (the symbolic simulator's ``walk``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsoc.envs.household import apartments as A
from jaxsoc.envs.household import classes as C
from jaxsoc.envs.household import predicates as PR

NUM_ROOMS = A.NUM_ROOMS
DOOR0 = NUM_ROOMS
FURNITURE0 = DOOR0 + A.MAX_DOORS
OBJECT0 = FURNITURE0 + A.MAX_FURNITURE
MAX_OBJECTS = 48
NUM_NODES = OBJECT0 + MAX_OBJECTS
NUM_CHARACTERS = 2
AGENTS = ("alice", "bob")
CLOSE_DIST = 1.5  # metres: VirtualHome's CLOSE edges join things nearer than this

VERBS = (
    "noop",
    "walk",
    "grab",
    "open",
    "close",
    "putback_rh",
    "putback_lh",
    "putin_rh",
    "putin_lh",
    "switchon",
    "sit",
)
V = {name: i for i, name in enumerate(VERBS)}
NUM_VERBS = len(VERBS)
NUM_ACTIONS = NUM_VERBS * NUM_NODES

_KIND = np.zeros(NUM_NODES, np.int8)  # 0 room, 1 door, 2 furniture, 3 object
_KIND[DOOR0:FURNITURE0], _KIND[FURNITURE0:OBJECT0], _KIND[OBJECT0:] = 1, 2, 3
NODE_KIND = _KIND


class Nodes(struct.PyTreeNode):
    """Per node ``[NUM_NODES]`` (leading batch axes allowed): ``cls`` int16, ``category`` int8, ``properties``
    int32 (``classes.PROPERTY_NAMES`` bits), ``states`` uint8 (``classes.OPEN``/``ON`` bits), ``parent`` int16
    (-1: none or held), ``relation`` int8 (``classes.IN_ROOM``/``ON_TOP``/``INSIDE``/``HELD``), ``room`` int8
    (stale while held: see ``node_rooms``), ``pos`` float32[..., 2] and ``size`` float32[..., 2] in metres."""

    cls: jax.Array
    category: jax.Array
    properties: jax.Array
    states: jax.Array
    parent: jax.Array
    relation: jax.Array
    room: jax.Array
    pos: jax.Array
    size: jax.Array


class Characters(struct.PyTreeNode):
    """Per character ``[2]``: ``room`` int8, ``pos`` float32[2, 2], ``hands`` int16[2, 2] (right, left; -1
    empty), ``sitting_on`` int16 (-1 standing)."""

    room: jax.Array
    pos: jax.Array
    hands: jax.Array
    sitting_on: jax.Array


class State(struct.PyTreeNode):
    """A household at one step. A task (``tasks.py``) is a ``State`` at step 0.

    - ``nodes``/``chars``: the world; ``door_rooms`` int8[4, 2] and ``next_door`` int8[4, 4]: the apartment's
      doors (see ``apartments.Apartment``).
    - ``goal_count`` int8[30] and ``goal_target`` int16[30]: Alice's goal (``predicates``).
    - ``apartment`` int8, ``task_id`` int32 (-1 for a task made outside a set), ``step`` int32.
    """

    nodes: Nodes
    chars: Characters
    door_rooms: jax.Array
    next_door: jax.Array
    goal_count: jax.Array
    goal_target: jax.Array
    apartment: jax.Array
    task_id: jax.Array
    step: jax.Array


# -- derived relations -----------------------------------------------------------------------------------


def holders(state: State) -> jax.Array:
    """Returns ``int8[NUM_NODES]``: the character holding each node, -1 for none."""
    hands = state.chars.hands.reshape(-1)
    who = jnp.repeat(jnp.arange(NUM_CHARACTERS, dtype=jnp.int8), 2)
    return jnp.full(NUM_NODES, -1, jnp.int8).at[jnp.where(hands >= 0, hands, NUM_NODES)].set(who, mode="drop")


def node_rooms(state: State, holder: jax.Array | None = None) -> jax.Array:
    """Returns ``int8[NUM_NODES]``: each node's room (a held object is in its holder's room)."""
    holder = holders(state) if holder is None else holder
    return jnp.where(holder >= 0, state.chars.room[jnp.maximum(holder, 0)], state.nodes.room)


def anchors(state: State, holder: jax.Array | None = None) -> jax.Array:
    """Returns ``float32[NUM_NODES, 2]``: where a character stands to be close to each node: its own position
    for rooms, doors and furniture, its parent's for objects on or in furniture, its holder's when held."""
    holder = holders(state) if holder is None else holder
    nodes = state.nodes
    placed = (nodes.relation == C.ON_TOP) | (nodes.relation == C.INSIDE)
    pos = jnp.where(placed[:, None], nodes.pos[jnp.maximum(nodes.parent, 0)], nodes.pos)
    return jnp.where((holder >= 0)[:, None], state.chars.pos[jnp.maximum(holder, 0)], pos)


class View(struct.PyTreeNode):
    """What one character can do and see now (all ``[NUM_NODES]``): ``visible``, ``close``, ``holder`` and
    ``room`` (``node_rooms``)."""

    visible: jax.Array
    close: jax.Array
    holder: jax.Array
    room: jax.Array


def view(state: State, char: int | jax.Array, holder: jax.Array | None = None) -> View:
    """Returns character ``char``'s ``View``. Visible (the original's ``get_visible_nodes``): every room and
    door, what it holds, and the nodes in its room whose relation is not INSIDE a closed container."""
    nodes = state.nodes
    holder = holders(state) if holder is None else holder
    room = node_rooms(state, holder)
    parent_open = (nodes.states[jnp.maximum(nodes.parent, 0)] & C.OPEN) > 0
    here = room == state.chars.room[char]
    shown = (nodes.relation != C.INSIDE) | parent_open
    kind = jnp.asarray(NODE_KIND)
    visible = (nodes.cls > 0) & ((kind <= 1) | (here & shown) | (holder == char))
    dist = jnp.linalg.norm(anchors(state, holder) - state.chars.pos[char], axis=-1)
    close = (nodes.cls > 0) & (kind >= 2) & ((here & (dist <= CLOSE_DIST)) | (holder == char))
    return View(visible=visible, close=close, holder=holder, room=room)


def occupancy(state: State) -> jax.Array:
    """Returns ``int8[NUM_NODES]``: how many characters sit on each node."""
    sit = state.chars.sitting_on
    return jnp.zeros(NUM_NODES, jnp.int8).at[jnp.where(sit >= 0, sit, NUM_NODES)].add(1, mode="drop")


# -- actions ---------------------------------------------------------------------------------------------


def encode_action(verb: str | int, target: int | jax.Array) -> jax.Array:
    """Returns the action id ``verb * NUM_NODES + target`` (``verb`` a name of ``VERBS`` or its index)."""
    verb = V[verb] if isinstance(verb, str) else verb
    return jnp.asarray(verb * NUM_NODES + target, jnp.int32)


def decode_action(action: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Returns ``(verb, target)`` of action ids (any shape)."""
    action = jnp.asarray(action, jnp.int32)
    return action // NUM_NODES, action % NUM_NODES


def valid_actions(state: State, char: int | jax.Array, v: View | None = None) -> jax.Array:
    """Returns ``bool[NUM_VERBS, NUM_NODES]``: which actions' preconditions hold for ``char`` now.

    - noop: always. walk: a room or a piece of furniture (their places are known), or a visible object.
    - grab: GRABBABLE, visible, close, held by nobody, a free hand.
    - open: CAN_OPEN, visible, close, CLOSED, not switched ON, a free hand. close: CAN_OPEN, visible, close, OPEN.
    - putback_rh/lh: that hand holds an object; the target has SURFACES, is visible and close.
    - putin_rh/lh: that hand holds an object; the target has CONTAINERS, is visible, close and (when it
      CAN_OPEN) OPEN.
    - switchon: HAS_SWITCH, visible, close, OFF. sit: SITTABLE, visible, close, the character stands, and the
      target's sitting capacity (``classes.SIT_CAPACITY``) is not reached.
    A held object cannot be put onto or into itself.
    """
    v = view(state, char) if v is None else v
    nodes = state.nodes
    props, states = nodes.properties, nodes.states
    kind = jnp.asarray(NODE_KIND)
    has = lambda bit: (props & bit) > 0  # noqa: E731
    is_open = (states & C.OPEN) > 0
    switched = (states & C.ON) > 0
    hands = state.chars.hands[char]
    free = (hands < 0).any()
    standing = state.chars.sitting_on[char] < 0
    reach = v.visible & v.close
    real = nodes.cls > 0
    idx = jnp.arange(NUM_NODES)
    walk = real & ((kind == 0) | (kind == 2) | ((kind == 3) & v.visible))
    grab = has(C.GRABBABLE) & reach & (v.holder < 0) & free
    open_ = has(C.CAN_OPEN) & reach & ~is_open & ~switched & free
    close = has(C.CAN_OPEN) & reach & is_open
    holding = hands >= 0
    surface = has(C.SURFACES) & reach
    container = has(C.CONTAINERS) & reach & (~has(C.CAN_OPEN) | is_open)
    put_on = [surface & holding[h] & (idx != hands[h]) for h in (0, 1)]
    put_in = [container & holding[h] & (idx != hands[h]) for h in (0, 1)]
    switch = has(C.HAS_SWITCH) & reach & ~switched
    capacity = jnp.asarray(C.SIT_CAPACITY)[nodes.cls]
    sit = has(C.SITTABLE) & reach & standing & (occupancy(state) < capacity)
    noop = jnp.ones(NUM_NODES, bool)
    return jnp.stack([noop, walk, grab, open_, close, put_on[0], put_on[1], put_in[0], put_in[1], switch, sit])


def interaction_object(state: State, char, verb: jax.Array, target: jax.Array) -> jax.Array:
    """Returns the node an action is first about (the original's conflict test): the held object for the put
    verbs, the target otherwise; -1 for noop and walk."""
    hand = jnp.where((verb == V["putback_lh"]) | (verb == V["putin_lh"]), 1, 0)
    put = (verb >= V["putback_rh"]) & (verb <= V["putin_lh"])
    obj = jnp.where(put, state.chars.hands[char, hand], target)
    return jnp.where(verb <= V["walk"], -1, obj)


def _walk(state: State, char, target, params) -> tuple[jax.Array, jax.Array]:
    """Returns ``(room, pos)`` of ``char`` after walking towards ``target``: at most ``step_length`` metres
    along the route's doors (at most 3 on a 4-room route), or straight there with ``teleport``."""
    goal_room, goal_pos = place_of(state, target)
    if params.teleport:
        return goal_room.astype(jnp.int8), goal_pos
    room, pos = state.chars.room[char], state.chars.pos[char]
    budget = jnp.asarray(params.step_length, jnp.float32)
    door_pos = state.nodes.pos[DOOR0:FURNITURE0]
    for _ in range(NUM_ROOMS):
        arrived = room == goal_room
        door = jnp.maximum(state.next_door[room, goal_room], 0)
        way = jnp.where(arrived, goal_pos, door_pos[door])
        delta = way - pos
        dist = jnp.linalg.norm(delta)
        move = jnp.minimum(budget, dist)
        pos = pos + delta * (move / jnp.maximum(dist, 1e-6))
        crossed = ~arrived & (dist <= budget)
        a, b = state.door_rooms[door, 0], state.door_rooms[door, 1]
        room = jnp.where(crossed, jnp.where(a == room, b, a), room)
        budget = budget - move
    return room.astype(jnp.int8), pos


def place_of(state: State, node: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Returns ``(room int8, anchor float32[2])`` of one node (``node_rooms`` and ``anchors`` for a single node,
    without computing them for all)."""
    nodes, chars = state.nodes, state.chars
    in_hand = chars.hands.reshape(-1) == node
    held = in_hand.any()
    holder = jnp.argmax(in_hand) // 2
    parent = jnp.maximum(nodes.parent[node], 0)
    placed = (nodes.relation[node] == C.ON_TOP) | (nodes.relation[node] == C.INSIDE)
    pos = jnp.where(held, chars.pos[holder], jnp.where(placed, nodes.pos[parent], nodes.pos[node]))
    return jnp.where(held, chars.room[holder], nodes.room[node]).astype(jnp.int8), pos


def _offset(obj: jax.Array, size: jax.Array) -> jax.Array:
    """Returns a deterministic spot (``float32[2]``) within the middle of a footprint for object ``obj``."""
    u = jnp.stack([jnp.sin(obj * 12.9898) * 43758.5453, jnp.sin(obj * 78.233) * 12345.6789])
    return (u - jnp.floor(u) - 0.5) * size * 0.6


def _apply(state: State, char, verb, target, ok, params) -> State:
    """Returns ``state`` after ``char``'s action when ``ok`` (its preconditions held), else ``state``."""
    nodes, chars = state.nodes, state.chars
    is_ = lambda name: ok & (verb == V[name])  # noqa: E731
    # walk (a seated character stands up first)
    walk = is_("walk")
    room, pos = _walk(state, char, target, params)
    chars = chars.replace(
        room=chars.room.at[char].set(jnp.where(walk, room, chars.room[char])),
        pos=chars.pos.at[char].set(jnp.where(walk, pos, chars.pos[char])),
        sitting_on=chars.sitting_on.at[char].set(
            jnp.where(walk, -1, jnp.where(is_("sit"), target, chars.sitting_on[char])).astype(jnp.int16)
        ),
    )
    # grab: right hand first
    grab = is_("grab")
    hand = jnp.where(chars.hands[char, 0] < 0, 0, 1)
    hands = chars.hands.at[char, hand].set(jnp.where(grab, target, chars.hands[char, hand]).astype(jnp.int16))
    # put: the hand's object goes ON / INSIDE the target
    put_hand = jnp.where((verb == V["putback_lh"]) | (verb == V["putin_lh"]), 1, 0)
    put = ok & (verb >= V["putback_rh"]) & (verb <= V["putin_lh"])
    obj = jnp.where(put, chars.hands[char, put_hand], 0)
    hands = hands.at[char, put_hand].set(jnp.where(put, -1, hands[char, put_hand]).astype(jnp.int16))
    chars = chars.replace(hands=hands)
    into = (verb == V["putin_rh"]) | (verb == V["putin_lh"])
    moved = jnp.where(grab, target, jnp.where(put, obj, NUM_NODES))  # NUM_NODES: nothing moves (dropped)
    relation = jnp.where(grab, C.HELD, jnp.where(into, C.INSIDE, C.ON_TOP)).astype(jnp.int8)
    parent = jnp.where(grab, -1, target).astype(jnp.int16)
    new_room = jnp.where(grab, chars.room[char], nodes.room[target]).astype(jnp.int8)
    new_pos = jnp.where(grab, chars.pos[char], nodes.pos[target] + _offset(obj, nodes.size[target]))
    # open / close / switchon toggle a state bit of the target
    bits = jnp.where(is_("open"), nodes.states[target] | C.OPEN, nodes.states[target])
    bits = jnp.where(is_("close"), bits & ~jnp.uint8(C.OPEN), bits)
    bits = jnp.where(is_("switchon"), bits | C.ON, bits).astype(jnp.uint8)
    nodes = nodes.replace(
        relation=nodes.relation.at[moved].set(relation, mode="drop"),
        parent=nodes.parent.at[moved].set(parent, mode="drop"),
        room=nodes.room.at[moved].set(new_room, mode="drop"),
        pos=nodes.pos.at[moved].set(new_pos, mode="drop"),
        states=nodes.states.at[target].set(bits),
    )
    return state.replace(nodes=nodes, chars=chars)


def transition(key: jax.Array, state: State, actions: jax.Array, params) -> tuple[State, dict]:
    """Returns ``(state, info)`` after both characters' ``actions`` (``int32[2]``, Alice's first).

    ``info``: ``action_valid`` bool[2] (the action's preconditions held and it was carried out),
    ``conflict`` bool (both named the same object and one was drawn to act), ``actor`` int32 (who acted in a
    conflict, else -1). The step counter is not advanced here."""
    verb, target = decode_action(jnp.clip(actions, 0, NUM_ACTIONS - 1))
    holder = holders(state)
    ok = jnp.stack([valid_actions(state, c, view(state, c, holder))[verb[c], target[c]] for c in range(NUM_CHARACTERS)])
    first = jnp.stack([interaction_object(state, c, verb[c], target[c]) for c in range(NUM_CHARACTERS)])
    conflict = ok.all() & (first[0] >= 0) & (first[0] == first[1])
    actor = jax.random.randint(key, (), 0, NUM_CHARACTERS)
    ok = ok & ~(conflict & (jnp.arange(NUM_CHARACTERS) != actor))
    for c in range(NUM_CHARACTERS):
        state = _apply(state, c, verb[c], target[c], ok[c], params)
    return state, {"action_valid": ok, "conflict": conflict, "actor": jnp.where(conflict, actor, -1)}


# -- goals -----------------------------------------------------------------------------------------------


def satisfied(state: State) -> jax.Array:
    """Returns ``int32[30]``: how many instances of each predicate hold (``predicates.PREDICATES``): objects of
    the class ON / INSIDE the goal's target node, books Alice holds, whether Alice sits on the target sofa."""
    nodes = state.nodes
    kind = jnp.asarray(PR.PRED_KIND)
    relation = jnp.where(kind == PR.INSIDE_KIND, C.INSIDE, C.ON_TOP)
    placed = (
        (nodes.cls[None, :] == jnp.asarray(PR.PRED_OBJECT)[:, None])
        & (nodes.parent[None, :] == state.goal_target[:, None])
        & (nodes.relation[None, :] == relation[:, None])
    ).sum(1)
    alice_hands = state.chars.hands[0]
    books = ((nodes.cls[jnp.maximum(alice_hands, 0)] == C.CLASS["book"]) & (alice_hands >= 0)).sum()
    sits = (state.chars.sitting_on[0] == state.goal_target) & (state.chars.sitting_on[0] >= 0)
    return jnp.where(kind == PR.HOLDS_KIND, books, jnp.where(kind == PR.SIT_KIND, sits, placed)).astype(jnp.int32)


def progress(state: State, sat: jax.Array | None = None) -> tuple[jax.Array, jax.Array]:
    """Returns ``(achieved, done)``: ``int32`` the satisfied predicate instances counted up to each goal count,
    and ``bool`` whether every predicate of the goal holds."""
    sat = satisfied(state) if sat is None else sat
    count = state.goal_count.astype(jnp.int32)
    return jnp.minimum(sat, count).sum(), (sat >= count).all()


# -- observation -----------------------------------------------------------------------------------------


def observe(state: State, char: int, with_goal: bool) -> dict[str, jax.Array]:
    """Returns character ``char``'s partial observation (padded to ``NUM_NODES``, zeros where not visible):

    - ``class`` int16, ``states`` uint8, ``position`` float32[N, 2], ``visible`` bool;
    - ``parent`` int16 (-1 unless both ends are visible) and ``parent_relation`` int8 (``classes`` relations);
    - ``relation`` int8: the node's relation to the observer (``classes.REL_*``: close, held in the right or
      left hand, sat on);
    - ``agent_position`` float32[2, 2], ``agent_room`` int8[2], ``agent_visible`` bool[2]: the observer first,
      then the other character (zeros when not in the observer's room);
    - ``goal`` int8[30] and ``goal_target`` int16[30]: Alice's goal when ``with_goal``, else zeros and -1.
    """
    v = view(state, char)
    nodes, chars = state.nodes, state.chars
    vis = v.visible
    parent_seen = (nodes.parent >= 0) & vis[jnp.maximum(nodes.parent, 0)]
    hands = chars.hands[char]
    idx = jnp.arange(NUM_NODES)
    rel = jnp.where(v.close, C.REL_CLOSE, C.REL_NONE)
    rel = jnp.where(idx == chars.sitting_on[char], C.REL_SITTING_ON, rel)
    rel = jnp.where((idx == hands[0]) & (hands[0] >= 0), C.REL_HOLDS_RH, rel)
    rel = jnp.where((idx == hands[1]) & (hands[1] >= 0), C.REL_HOLDS_LH, rel)
    order = jnp.array([char, 1 - char])
    seen = jnp.stack([jnp.array(True), chars.room[1 - char] == chars.room[char]])
    return {
        "class": jnp.where(vis, nodes.cls, 0).astype(jnp.int16),
        "states": jnp.where(vis, nodes.states, 0).astype(jnp.uint8),
        "position": jnp.where(vis[:, None], _shown_pos(state, v.holder), 0.0),
        "visible": vis,
        "parent": jnp.where(vis & parent_seen, nodes.parent, -1).astype(jnp.int16),
        "parent_relation": jnp.where(vis, jnp.where(v.holder >= 0, C.HELD, nodes.relation), 0).astype(jnp.int8),
        "relation": jnp.where(vis, rel, C.REL_NONE).astype(jnp.int8),
        "agent_position": jnp.where(seen[:, None], chars.pos[order], 0.0),
        "agent_room": jnp.where(seen, chars.room[order], 0).astype(jnp.int8),
        "agent_visible": seen,
        "goal": (state.goal_count if with_goal else jnp.zeros_like(state.goal_count)).astype(jnp.int8),
        "goal_target": (state.goal_target if with_goal else jnp.full_like(state.goal_target, -1)).astype(jnp.int16),
    }


def _shown_pos(state: State, holder: jax.Array) -> jax.Array:
    """Returns ``float32[N, 2]``: node positions, a held object at its holder."""
    return jnp.where((holder >= 0)[:, None], state.chars.pos[jnp.maximum(holder, 0)], state.nodes.pos)


def positions(state: State) -> jax.Array:
    """Returns ``float32[NUM_NODES, 2]``: where each node is now (a held object at its holder)."""
    return _shown_pos(state, holders(state))
