"""Hand-built household states for the tests: characters moved, objects placed or held, states and goals set."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.household import classes as C
from jaxsoc.envs.household import predicates as PR
from jaxsoc.envs.household import world as W


def first(state, name: str, room: int | None = None) -> int:
    """Returns the first node of class ``name`` (in ``room`` when given)."""
    cls, rooms = np.asarray(state.nodes.cls), np.asarray(state.nodes.room)
    hits = np.flatnonzero((cls == C.CLASS[name]) & ((rooms == room) if room is not None else True))
    assert hits.size, name
    return int(hits[0])


def objects_of(state, name: str) -> list[int]:
    """Returns every node of class ``name``."""
    return [int(i) for i in np.flatnonzero(np.asarray(state.nodes.cls) == C.CLASS[name])]


def stand_at(state, char: int, node: int):
    """Returns ``state`` with ``char`` standing at ``node``'s anchor (in its room)."""
    room, pos = W.node_rooms(state)[node], W.anchors(state)[node]
    chars = state.chars
    return state.replace(chars=chars.replace(room=chars.room.at[char].set(room), pos=chars.pos.at[char].set(pos)))


def place(state, obj: int, furniture: int, relation: int):
    """Returns ``state`` with object ``obj`` ON / INSIDE ``furniture`` (dropped from any hand)."""
    nodes = state.nodes
    hands = jnp.where(state.chars.hands == obj, -1, state.chars.hands).astype(jnp.int16)
    nodes = nodes.replace(
        parent=nodes.parent.at[obj].set(furniture),
        relation=nodes.relation.at[obj].set(relation),
        room=nodes.room.at[obj].set(nodes.room[furniture]),
        pos=nodes.pos.at[obj].set(nodes.pos[furniture]),
    )
    return state.replace(nodes=nodes, chars=state.chars.replace(hands=hands))


def set_bits(state, node: int, bits: int):
    """Returns ``state`` with ``node``'s state bits (``classes.OPEN``/``ON``) set to ``bits``."""
    return state.replace(nodes=state.nodes.replace(states=state.nodes.states.at[node].set(bits)))


def hold(state, char: int, hand: int, obj: int):
    """Returns ``state`` with ``obj`` in ``char``'s hand ``hand`` (0 right, 1 left)."""
    nodes = state.nodes.replace(
        parent=state.nodes.parent.at[obj].set(-1),
        relation=state.nodes.relation.at[obj].set(C.HELD),
        room=state.nodes.room.at[obj].set(state.chars.room[char]),
    )
    return state.replace(nodes=nodes, chars=state.chars.replace(hands=state.chars.hands.at[char, hand].set(obj)))


def with_goal(state, **goal: tuple[int, int]):
    """Returns ``state`` with the goal ``{predicate name: (count, target node)}`` and nothing else."""
    count = np.zeros(PR.NUM_PREDICATES, np.int8)
    target = np.full(PR.NUM_PREDICATES, -1, np.int16)
    for name, (c, t) in goal.items():
        count[PR.PREDICATE[name]], target[PR.PREDICATE[name]] = c, t
    return state.replace(goal_count=jnp.asarray(count), goal_target=jnp.asarray(target))


def roll_hidden_objects(world) -> tuple[np.ndarray, dict]:
    """Returns the objects Bob cannot see (node indices) and the node fields that roll their places among
    themselves (each takes another hidden one's parent, relation, room and position, so all stay hidden), for
    ``world.nodes.replace(**fields)``."""
    nodes = jax.device_get(world.nodes)
    hidden = np.flatnonzero(~np.asarray(W.view(world, 1).visible) & (nodes.cls > 0) & (W.NODE_KIND == 3))
    moved = np.roll(hidden, 1)
    fields = {}
    for name in ("parent", "relation", "room", "pos"):
        values = np.array(getattr(nodes, name))
        values[hidden] = values[moved]
        fields[name] = jnp.asarray(values)
    return hidden, fields
