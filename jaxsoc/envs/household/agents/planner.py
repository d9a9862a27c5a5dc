"""The human-like agent's hierarchical planner: Monte Carlo tree search over subgoals, then a regression planner.

Watch-And-Help's Alice (``agents/MCTS_agent.py``, ``MCTS/MCTS.py``) searches over *subgoals*, one goal
predicate instance each (put this plate on the table, put that apple in the fridge, grab a book, sit on the
sofa), and turns the chosen one into low-level actions with hand-written heuristics. This module does both on
the device, for one world (vmap for many):

- ``subgoals`` lists them in a fixed-capacity array (``MAX_SUBGOALS``) from a world (the agent's sampled
  world) and a goal, with the original's rules: every instance of the class not yet counted, for every
  unsatisfied ON / INSIDE predicate; only the held instance when the agent holds one; objects the agent sees
  first; ``holds_book`` only when nothing else is left, ``sit_sofa`` last; optionally without one object (the
  helper leaves Alice's current subgoal to her unless nothing else remains).
- ``search`` is a UCT search with the original's constants (100 simulations, rollouts of up to 5 subgoals,
  ``c_init`` 0.1, ``c_base`` 1e6, uniform priors, unvisited children first, random tie breaks, discount 1) in a
  fixed-capacity tree (one node per simulation). A subgoal's value is the predicate instance it satisfies (1)
  minus the regression planner's costs: walking to another room 0.5, opening a closed container 0.05, walking
  to an object 1, grabbing 0.05, putting 0.05, closing the container behind (0.05) unless it is the last
  INSIDE predicate. The search then returns the most visited first subgoal; the agent executes the first
  action of its plan and replans every step.
- ``subgoal_action`` is the regression planner for one step: walk to the container holding the object, open
  it, walk to the object, grab, walk to the destination, open it, put; for ``holds_book`` grab the book; for
  ``sit_sofa`` walk to the sofa and sit.

The tree search is hand-written rather than ``mctx``: mctx implements MuZero/Gumbel search (PUCT with a prior
from a network, value bootstraps, Gumbel root sampling), while this planner is UCT with the original's
logarithmic exploration term, random rollouts of whole subgoals and an action set (the subgoal list) that
changes with the node; reproducing it inside mctx would mean working against its selection rule.
The tree's node state is small (the agent's room, which objects were used, the predicate counts still to
reach), so a search of 100 simulations runs as fixed-size loops of vector operations.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsoc.envs.household import classes as C
from jaxsoc.envs.household import predicates as PR
from jaxsoc.envs.household import world as W

MAX_SUBGOALS = 40
MAX_DEPTH = 12  # the longest subgoal sequence a goal needs (at most 8 placements, a book, a sofa) plus slack
NUM_SIMULATIONS = 100
MAX_ROLLOUT = 5
C_INIT = 0.1
C_BASE = 1e6

# the regression planner's costs (``MCTS_agent.py``'s heuristics)
COST_ROOM = 0.5
COST_WALK = 1.0
COST_OPEN = 0.05
COST_GRAB = 0.05
COST_PUT = 0.05
COST_CLOSE = 0.05
COST_SIT = 0.05

_PLACE = np.isin(PR.PRED_KIND, (PR.ON_KIND, PR.INSIDE_KIND))
_INSIDE = PR.PRED_KIND == PR.INSIDE_KIND
HOLDS = PR.PREDICATE["holds_book"]
SIT = PR.PREDICATE["sit_sofa"]


class Subgoals(struct.PyTreeNode):
    """A fixed-capacity subgoal list (``[MAX_SUBGOALS]`` each): ``pred`` int32 (the predicate), ``obj`` int32 (the
    object node; -1 for sitting), ``dest`` int32 (the target node), ``valid`` bool."""

    pred: jax.Array
    obj: jax.Array
    dest: jax.Array
    valid: jax.Array


def satisfying(world: W.State) -> jax.Array:
    """Returns ``bool[NUM_NODES]``: the objects that currently count towards some predicate of the goal."""
    nodes = world.nodes
    relation = jnp.where(jnp.asarray(_INSIDE), C.INSIDE, C.ON_TOP)
    hit = (
        (nodes.cls[None, :] == jnp.asarray(PR.PRED_OBJECT)[:, None])
        & (nodes.parent[None, :] == world.goal_target[:, None])
        & (nodes.relation[None, :] == relation[:, None])
        & (jnp.asarray(_PLACE) & (world.goal_count > 0))[:, None]
    )
    return hit.any(0)


def candidates(world: W.State, char: int) -> jax.Array:
    """Returns ``bool[30, NUM_NODES]``: for every unsatisfied ON / INSIDE predicate of the goal, the objects of
    its class that could still satisfy it (not counting towards the goal already, not held by the other)."""
    nodes = world.nodes
    holder = W.holders(world)
    is_obj = jnp.asarray(W.NODE_KIND == 3) & (nodes.cls > 0)
    free = is_obj & ~satisfying(world) & ((holder < 0) | (holder == char))
    open_pred = jnp.asarray(_PLACE) & (W.satisfied(world) < world.goal_count.astype(jnp.int32))
    return open_pred[:, None] & (nodes.cls[None, :] == jnp.asarray(PR.PRED_OBJECT)[:, None]) & free[None, :]


def subgoals(world: W.State, char: int, seen: jax.Array, exclude: jax.Array | int = -1) -> Subgoals:
    """Returns character ``char``'s subgoals in ``world`` (its sampled world) towards ``world``'s goal.

    ``seen``: ``bool[NUM_NODES]`` the objects the character observes now (their subgoals go first).
    ``exclude``: an object node left out unless nothing else remains (the helper's rule), or -1."""
    nodes = world.nodes
    sat = W.satisfied(world)
    count = world.goal_count.astype(jnp.int32)
    holder = W.holders(world)
    is_obj = jnp.asarray(W.NODE_KIND == 3) & (nodes.cls > 0)
    cand = candidates(world, char)
    mine = holder == char
    held = cand & mine[None, :]
    cand = jnp.where(held.any(), held, cand)  # holding a matching instance: that subgoal alone
    visible = cand & seen[None, :]
    cand = jnp.where(visible.any(), visible, cand)  # subgoals on observed objects first
    kept = cand & (jnp.arange(W.NUM_NODES) != exclude)[None, :]
    cand = jnp.where(kept.any(), kept, cand)
    # nothing to place: grab a book (Alice only), then sit
    nothing = ~cand.any()
    alice = char == 0
    books = (nodes.cls == C.CLASS["book"]) & is_obj & ((holder < 0) | mine)
    books = jnp.where((books & seen).any(), books & seen, books)
    want_book = nothing & alice & (sat[HOLDS] < count[HOLDS])
    cand = cand.at[HOLDS].set(want_book & books)
    want_sit = nothing & alice & ~want_book & (sat[SIT] < count[SIT]) & (world.goal_target[SIT] >= 0)
    flat = cand.reshape(-1)
    (index,) = jnp.nonzero(flat, size=MAX_SUBGOALS, fill_value=-1)
    pred = jnp.where(index >= 0, index // W.NUM_NODES, -1)
    obj = jnp.where(index >= 0, index % W.NUM_NODES, -1)
    valid = index >= 0
    # the sitting subgoal takes the first slot when it is the only one
    pred = pred.at[0].set(jnp.where(want_sit, SIT, pred[0]))
    obj = obj.at[0].set(jnp.where(want_sit, -1, obj[0]))
    valid = valid.at[0].set(valid[0] | want_sit)
    dest = jnp.where(pred >= 0, world.goal_target[jnp.maximum(pred, 0)], -1)
    return Subgoals(pred=pred.astype(jnp.int32), obj=obj.astype(jnp.int32), dest=dest.astype(jnp.int32), valid=valid)


# -- the tree search ---------------------------------------------------------------------------------------


class _Model(struct.PyTreeNode):
    """What the search needs of the world, per subgoal (``[MAX_SUBGOALS]``): the room of the object and of the
    destination, the opening costs at both ends, whether the object is already held, and whether putting it
    is an INSIDE predicate."""

    obj_room: jax.Array
    dest_room: jax.Array
    open_src: jax.Array
    open_dest: jax.Array
    held: jax.Array
    inside: jax.Array


class _Node(struct.PyTreeNode):
    room: jax.Array  # int32: where the agent is
    used: jax.Array  # bool[MAX_SUBGOALS]: subgoals whose object has been used
    left: jax.Array  # int32[30]: predicate instances still to satisfy


def _model(world: W.State, char: int, goals: Subgoals) -> _Model:
    nodes = world.nodes
    room = W.node_rooms(world)
    obj = jnp.maximum(goals.obj, 0)
    dest = jnp.maximum(goals.dest, 0)
    closed = lambda n: ((nodes.properties[n] & C.CAN_OPEN) > 0) & ((nodes.states[n] & C.OPEN) == 0)  # noqa: E731
    parent = jnp.maximum(nodes.parent[obj], 0)
    in_closed = (nodes.relation[obj] == C.INSIDE) & closed(parent)
    sit = goals.pred == SIT
    return _Model(
        obj_room=jnp.where(sit, room[dest], room[obj]).astype(jnp.int32),
        dest_room=room[dest].astype(jnp.int32),
        open_src=jnp.where(in_closed & ~sit, COST_OPEN, 0.0),
        open_dest=jnp.where(closed(dest) & (goals.pred != HOLDS) & ~sit, COST_OPEN, 0.0),
        held=(world.chars.hands[char][None, :] == goals.obj[:, None]).any(1) & (goals.obj >= 0),
        inside=jnp.asarray(_INSIDE)[jnp.maximum(goals.pred, 0)],
    )


def _available(node: _Node, goals: Subgoals) -> jax.Array:
    return goals.valid & ~node.used & (node.left[jnp.maximum(goals.pred, 0)] > 0)


def _gain(node: _Node, goals: Subgoals, model: _Model) -> jax.Array:
    """Returns ``float32[MAX_SUBGOALS]``: each subgoal's reward from ``node``: 1 minus its plan's cost."""
    fetch = jnp.where(
        model.held, 0.0, COST_ROOM * (node.room != model.obj_room) + model.open_src + COST_WALK + COST_GRAB
    )
    fetch_room = jnp.where(model.held, node.room, model.obj_room)
    last_inside = model.inside & ((node.left * jnp.asarray(_INSIDE)).sum() <= 1)
    deliver = (
        COST_ROOM * (fetch_room != model.dest_room)
        + COST_WALK
        + model.open_dest
        + COST_PUT
        + jnp.where(model.inside & ~last_inside, COST_CLOSE, 0.0)
    )
    sit = COST_ROOM * (node.room != model.dest_room) + COST_WALK + COST_SIT
    pred = jnp.maximum(goals.pred, 0)
    cost = jnp.where(pred == SIT, sit, jnp.where(pred == HOLDS, fetch, fetch + deliver))
    return 1.0 - cost


def _after(node: _Node, goals: Subgoals, model: _Model, a: jax.Array) -> _Node:
    """Returns the node reached by executing subgoal ``a``."""
    same_obj = (goals.obj == goals.obj[a]) & (goals.obj >= 0)
    pred = jnp.maximum(goals.pred[a], 0)
    room = jnp.where(pred == HOLDS, model.obj_room[a], model.dest_room[a])
    return _Node(
        room=room, used=node.used | same_obj | (jnp.arange(MAX_SUBGOALS) == a), left=node.left.at[pred].add(-1)
    )


def _rollout(key: jax.Array, node: _Node, goals: Subgoals, model: _Model) -> jax.Array:
    """Returns the summed reward of up to ``MAX_ROLLOUT`` random subgoals from ``node``."""

    def body(carry, k):
        node, total = carry
        avail = _available(node, goals)
        a = jnp.argmax(jnp.where(avail, jax.random.uniform(k, (MAX_SUBGOALS,)), -1.0))
        go = avail.any()
        total = total + jnp.where(go, _gain(node, goals, model)[a], 0.0)
        node = jax.tree_util.tree_map(lambda new, old: jnp.where(go, new, old), _after(node, goals, model, a), node)
        return (node, total), None

    (_, total), _ = jax.lax.scan(body, (node, jnp.float32(0.0)), jax.random.split(key, MAX_ROLLOUT))
    return total


class Tree(struct.PyTreeNode):
    """The search tree (``T = NUM_SIMULATIONS + 1`` nodes): per node and subgoal visit counts ``visits``
    int32[T, S], summed returns ``value`` float32[T, S] and ``child`` int32[T, S] (-1: not expanded); the nodes'
    states; ``size``, the nodes in use."""

    visits: jax.Array
    value: jax.Array
    child: jax.Array
    nodes: _Node
    size: jax.Array


def search(key: jax.Array, world: W.State, char: int, goals: Subgoals, num_simulations: int = NUM_SIMULATIONS):
    """Returns ``(choice, tree)``: the index into ``goals`` of the most visited first subgoal (``int32``; -1 when
    there is none) and the search tree, after ``num_simulations`` UCT simulations from ``world`` (see the module
    docstring)."""
    model = _model(world, char, goals)
    sat = W.satisfied(world)
    left = jnp.maximum(world.goal_count.astype(jnp.int32) - sat, 0)
    root = _Node(room=world.chars.room[char].astype(jnp.int32), used=jnp.zeros(MAX_SUBGOALS, bool), left=left)
    size = num_simulations + 1
    nodes = jax.tree_util.tree_map(lambda x: jnp.zeros((size, *x.shape), x.dtype).at[0].set(x), root)
    tree = Tree(
        visits=jnp.zeros((size, MAX_SUBGOALS), jnp.int32),
        value=jnp.zeros((size, MAX_SUBGOALS), jnp.float32),
        child=jnp.full((size, MAX_SUBGOALS), -1, jnp.int32),
        nodes=nodes,
        size=jnp.int32(1),
    )

    def simulate(tree: Tree, k: jax.Array) -> tuple[Tree, None]:
        k_sel, k_roll = jax.random.split(k)

        def descend(carry, kd):
            node_i, active, path = carry
            node = jax.tree_util.tree_map(lambda x: x[node_i], tree.nodes)
            avail = _available(node, goals)
            n = tree.visits[node_i]
            parent_n = n.sum()
            prior = 1.0 / jnp.maximum(avail.sum(), 1)
            q = tree.value[node_i] / jnp.maximum(n, 1)
            explore = (jnp.log((1 + parent_n + C_BASE) / C_BASE) + C_INIT) * prior * jnp.sqrt(parent_n) / (1 + n)
            score = jnp.where(n == 0, 1e6, q + explore) + 1e-6 * jax.random.uniform(kd, (MAX_SUBGOALS,))
            a = jnp.argmax(jnp.where(avail, score, -jnp.inf))
            step = active & avail.any()
            reward = _gain(node, goals, model)[a]
            nxt = tree.child[node_i, a]
            expand = step & (nxt < 0)
            path = (
                path[0].at[path[3]].set(jnp.where(step, node_i, -1)),
                path[1].at[path[3]].set(a),
                path[2].at[path[3]].set(jnp.where(step, reward, 0.0)),
                path[3] + step,
            )
            parent_i = node_i
            node_i = jnp.where(step & ~expand, nxt, node_i)
            active = step & ~expand
            return (node_i, active, path), (expand, parent_i, a)

        path0 = (
            jnp.full(MAX_DEPTH, -1, jnp.int32),
            jnp.zeros(MAX_DEPTH, jnp.int32),
            jnp.zeros(MAX_DEPTH, jnp.float32),
            jnp.int32(0),
        )
        (node_i, _, path), (expands, parents, actions) = jax.lax.scan(
            descend, (jnp.int32(0), jnp.array(True), path0), jax.random.split(k_sel, MAX_DEPTH)
        )
        # expand: the new node is the state after the last step's subgoal
        expanded = expands.any()
        last = jnp.argmax(expands)
        parent_i, a = parents[last], actions[last]
        parent = jax.tree_util.tree_map(lambda x: x[parent_i], tree.nodes)
        new = _after(parent, goals, model, a)
        new_i = tree.size
        nodes = jax.tree_util.tree_map(
            lambda all_, x: all_.at[new_i].set(jnp.where(expanded, x, all_[new_i])), tree.nodes, new
        )
        child = tree.child.at[parent_i, a].set(jnp.where(expanded, new_i, tree.child[parent_i, a]))
        leaf_state = jax.tree_util.tree_map(
            lambda x, y: jnp.where(expanded, x, y), new, jax.tree_util.tree_map(lambda x: x[node_i], tree.nodes)
        )
        leaf_value = _rollout(k_roll, leaf_state, goals, model)
        # back up: each edge on the path gets the rewards from it down plus the leaf's value
        edge_node, edge_a, edge_r, depth = path
        returns = jnp.cumsum(edge_r[::-1])[::-1] + leaf_value
        on_path = jnp.arange(MAX_DEPTH) < depth
        rows = jnp.where(on_path, edge_node, tree.visits.shape[0])  # out of range: dropped
        visits = tree.visits.at[rows, edge_a].add(1, mode="drop")
        value = tree.value.at[rows, edge_a].add(jnp.where(on_path, returns, 0.0), mode="drop")
        tree = Tree(visits=visits, value=value, child=child, nodes=nodes, size=tree.size + expanded)
        return tree, None

    tree, _ = jax.lax.scan(simulate, tree, jax.random.split(key, num_simulations))
    root_visits = jnp.where(goals.valid, tree.visits[0], -1)
    tie = jax.random.uniform(jax.random.fold_in(key, 1), (MAX_SUBGOALS,)) * 0.5
    choice = jnp.argmax(root_visits + tie)
    return jnp.where(goals.valid.any(), choice, -1).astype(jnp.int32), tree


# -- the regression planner ------------------------------------------------------------------------------


def needed_containers(world: W.State, char: int) -> jax.Array:
    """Returns ``bool[NUM_NODES]``: the containers the goal still needs open: one holding an object some
    unsatisfied predicate could use (``candidates``, before any restriction to a held or seen object), or the
    destination of an unsatisfied INSIDE predicate."""
    nodes = world.nodes
    usable = candidates(world, char).any(0) & (nodes.relation == C.INSIDE)
    mark = jnp.zeros(W.NUM_NODES + 1, bool)
    mark = mark.at[jnp.where(usable, nodes.parent, W.NUM_NODES)].set(True)
    open_inside = jnp.asarray(_INSIDE) & (W.satisfied(world) < world.goal_count.astype(jnp.int32))
    mark = mark.at[jnp.where(open_inside, world.goal_target, W.NUM_NODES)].set(True)
    return mark[: W.NUM_NODES]


def subgoal_action(world: W.State, char: int, goals: Subgoals, choice: jax.Array, seen: jax.Array) -> jax.Array:
    """Returns the first action (``int32``) of the regression planner's plan for subgoal ``choice`` of ``goals``
    in ``world`` (the agent's sampled world), or noop when ``choice`` is -1.

    Placing object ``o`` on / in ``d``: when ``o`` is held, walk to ``d``, open it if it is a closed container,
    put ``o`` with the hand that holds it; otherwise walk to the container ``o`` is in and open it when closed,
    walk to ``o`` (to the furniture it is on while it is out of sight) and grab it. ``holds_book``: fetch the
    book the same way. ``sit_sofa``: walk to the sofa and sit. Opening and grabbing need a free hand: with
    both full, a held object the subgoal does not need is put back where the agent stands (on the nearest
    surface it is close to), else the agent waits."""
    nodes = world.nodes
    v = W.view(world, char)
    c = jnp.maximum(choice, 0)
    pred, obj, dest = goals.pred[c], jnp.maximum(goals.obj[c], 0), jnp.maximum(goals.dest[c], 0)
    hands = world.chars.hands[char]
    free = (hands < 0).any()
    hand = jnp.argmax(hands == obj)
    held = (hands == obj).any() & (goals.obj[c] >= 0)
    closed = lambda n: ((nodes.properties[n] & C.CAN_OPEN) > 0) & ((nodes.states[n] & C.OPEN) == 0)  # noqa: E731
    walk = lambda n: W.encode_action("walk", n)  # noqa: E731
    # deliver a held object
    inside = jnp.asarray(_INSIDE)[jnp.maximum(pred, 0)]
    put = W.encode_action(jnp.where(inside, W.V["putin_rh"], W.V["putback_rh"]) + hand, dest)
    surfaces = v.close & v.visible & ((nodes.properties & C.SURFACES) > 0)
    spare_hand = jnp.argmax(hands != obj)
    drop = jnp.where(surfaces.any(), W.encode_action(W.V["putback_rh"] + spare_hand, jnp.argmax(surfaces)), 0)
    must_open = closed(dest) & inside
    deliver = jnp.where(
        ~v.close[dest], walk(dest), jnp.where(must_open, jnp.where(free, W.encode_action("open", dest), drop), put)
    )
    # fetch an object
    parent = jnp.maximum(nodes.parent[obj], 0)
    in_closed = (nodes.relation[obj] == C.INSIDE) & closed(parent)
    reach = jnp.where(seen[obj], obj, parent)
    fetch = jnp.where(
        in_closed,
        jnp.where(v.close[parent], W.encode_action("open", parent), walk(parent)),
        jnp.where(v.close[obj] & seen[obj], W.encode_action("grab", obj), walk(reach)),
    )
    # a needed free hand: put an unneeded held object down on a surface within reach
    needs_hand = ~held & (in_closed & v.close[parent] | (v.close[obj] & seen[obj]))
    fetch = jnp.where(needs_hand & ~free, drop, fetch)
    sit = jnp.where(v.close[dest], W.encode_action("sit", dest), walk(dest))
    action = jnp.where(pred == SIT, sit, jnp.where(held & (pred != HOLDS), deliver, fetch))
    action = jnp.where(held & (pred == HOLDS), 0, action)
    return jnp.where(choice >= 0, action, 0).astype(jnp.int32)
