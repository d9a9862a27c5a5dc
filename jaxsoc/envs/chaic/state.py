"""CHAIC's state as fixed-size arrays, and the action encoding.

A world has a static ``Scene`` (walls, rooms, doors, furniture surfaces, the goal place), up to ``MAX_OBJECTS``
objects and three agents: 0 the constrained agent, 1 the helper, 2 the rider's child (shopping only; inactive
elsewhere). Positions are metres on the floor plane ``(x, z)``; heights are metres above the floor; headings are
multiples of 15 degrees (``heading * 15`` degrees counter-clockwise from +x).

Actions of one agent (``NUM_ACTIONS`` ids, the original's nine in ``tdw_gym.step``):

==========================  =============================================================================
``MOVE`` 0                  move forward 0.5 m
``TURN_LEFT`` / ``_RIGHT``  turn 15 degrees
``WAIT`` 3                  wait (``DURATIONS["wait"]`` frames)
``PUT_IN`` 4                put the object in one hand into the container in the other
``PUT_ON`` 5                put the held object on the goal place (the first non-empty hand; a container is
                            put with its contents)
``MESSAGE`` 6               send a message: a no-op (the original's is unused)
``PICK + i``                walk to object ``i`` and pick it up with a free hand
``REMOVE + i``              walk to obstacle ``i``, pick it up and put it aside
==========================  =============================================================================
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

MAX_OBJECTS = 48
MAX_WALLS = 48
MAX_ROOMS = 8
MAX_DOORS = 12
MAX_FURNITURE = 32
NUM_AGENTS = 3
MAIN, HELPER, CHILD = 0, 1, 2
AGENTS = ("main", "helper")  # the agents a caller controls; the child is part of the world

MOVE, TURN_LEFT, TURN_RIGHT, WAIT, PUT_IN, PUT_ON, MESSAGE = range(7)
PICK = 7
REMOVE = PICK + MAX_OBJECTS
NUM_ACTIONS = REMOVE + MAX_OBJECTS
ACTION_NAMES = ("move", "turn_left", "turn_right", "wait", "put_in", "put_on", "message", "pick", "remove")
#: where an observed object is (``observation.observe``'s ``objects["where"]``)
WHERE_NAMES = ("free", "held_by_me", "held_by_other", "in_container", "on_goal")

ONGOING, FAILED, SUCCEEDED = 0, 1, 2  # an agent's action status (the original's ActionStatus)


class Scene(struct.PyTreeNode):
    """The static part of an episode.

    - ``walls`` float32[MAX_WALLS, 4]: segments ``(x0, z0, x1, z1)`` (door openings are gaps between segments);
      ``wall_valid`` bool[MAX_WALLS].
    - ``rooms`` float32[MAX_ROOMS, 4]: rectangles ``(xmin, zmin, xmax, zmax)``; ``room_valid`` bool[MAX_ROOMS].
    - ``doors`` float32[MAX_DOORS, 2]: door centres; ``door_rooms`` int8[MAX_DOORS, 2]: the rooms each joins;
      ``door_valid`` bool[MAX_DOORS].
    - ``furniture`` float32[MAX_FURNITURE, 5]: ``(x, z, size_x, size_z, top height)``; ``furniture_cls`` int8
      (an index of ``scenes.FURNITURE_CLASSES``, 0 for an empty slot).
    - ``goal_pos`` float32[2], ``goal_height`` float32 (top of the goal place), ``goal_extent`` float32 (its
      largest horizontal extent).
    - ``plan`` int8 (floor plan), ``layout`` int8 (furniture layout), ``outdoor`` bool.
    """

    walls: jax.Array
    wall_valid: jax.Array
    rooms: jax.Array
    room_valid: jax.Array
    doors: jax.Array
    door_rooms: jax.Array
    door_valid: jax.Array
    furniture: jax.Array
    furniture_cls: jax.Array
    goal_pos: jax.Array
    goal_height: jax.Array
    goal_extent: jax.Array
    plan: jax.Array
    layout: jax.Array
    outdoor: jax.Array


class Objects(struct.PyTreeNode):
    """Per object ``[MAX_OBJECTS]``: ``cls`` int8 (``catalogue.CLASS_NAMES``; 0 an empty slot), ``pos``
    float32[N, 2], ``height`` float32 (top of its bounding box), ``size`` float32 (horizontal extent), ``mass``
    float32, ``holder`` int8 (the agent holding it, -1), ``container`` int16 (the container it is in, -1),
    ``delivered`` bool (resting on the goal place: frozen), ``delivered_by`` int8 (the agent who put it there,
    -1), ``broken`` bool (a vase the child broke)."""

    cls: jax.Array
    pos: jax.Array
    height: jax.Array
    size: jax.Array
    mass: jax.Array
    holder: jax.Array
    container: jax.Array
    delivered: jax.Array
    delivered_by: jax.Array
    broken: jax.Array


class Agents(struct.PyTreeNode):
    """Per agent ``[NUM_AGENTS]``: ``pos`` float32[3, 2], ``heading`` int32 (multiples of 15 degrees),
    ``ability`` int8 (``catalogue.ABILITY_NAMES``), ``active`` bool, ``hands`` int16[3, 2] (objects held, -1),
    ``action`` int32 (the action under way or last finished), ``start_frame``/``done_frame`` int32 (when it
    started and finishes), ``status`` int8 (``ONGOING``/``FAILED``/``SUCCEEDED``), ``target_pos`` float32[3, 2]
    (where the action under way ends: a move's end point, the spot 0.7 m short of an object)."""

    pos: jax.Array
    heading: jax.Array
    ability: jax.Array
    active: jax.Array
    hands: jax.Array
    action: jax.Array
    start_frame: jax.Array
    done_frame: jax.Array
    status: jax.Array
    target_pos: jax.Array


class State(struct.PyTreeNode):
    """A CHAIC world. A task (``tasks.py``) is a ``State`` at frame 0.

    - ``scene``, ``objects``, ``agents``: see their classes.
    - ``goal_count`` int8[NUM_CLASSES]: how many objects of each class the constrained agent wants on the goal
      place (its goal; hidden from the helper); ``total`` float32: the number (furniture: the mass) of target
      objects, the transport rate's denominator.
    - ``task`` int8 (``catalogue.TASKS``), ``max_frames`` int32 (3,000; 1,500 for furniture), ``frame`` int32.
    - the child (shopping): ``child_running`` bool (running away), ``child_goal`` float32[2] (where she runs),
      ``away_frames`` int32 (frames she spent more than 3.5 m from the constrained agent).
    - ``placed`` int32[NUM_AGENTS]: objects of a possible target class (items, vases, furniture) each agent put
      on the goal place; ``useful`` int32[NUM_AGENTS]: those of them the goal still needed (for IA and CR).
    - ``episode`` int32: the task's index in its set (-1 outside one).
    """

    scene: Scene
    objects: Objects
    agents: Agents
    goal_count: jax.Array
    total: jax.Array
    task: jax.Array
    max_frames: jax.Array
    frame: jax.Array
    child_running: jax.Array
    child_goal: jax.Array
    away_frames: jax.Array
    placed: jax.Array
    useful: jax.Array
    episode: jax.Array


def pick_action(obj: int | jax.Array) -> jax.Array:
    """Returns the action id that picks up object ``obj``."""
    return jnp.asarray(PICK + obj, jnp.int32)


def remove_action(obj: int | jax.Array) -> jax.Array:
    """Returns the action id that removes obstacle ``obj``."""
    return jnp.asarray(REMOVE + obj, jnp.int32)


def decode_action(action: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Returns ``(kind, obj)``: ``kind`` indexes ``ACTION_NAMES`` (7 pick, 8 remove) and ``obj`` the object of a
    pick or remove (-1 otherwise). Works on any shape."""
    action = jnp.asarray(action, jnp.int32)
    kind = jnp.where(action < PICK, action, jnp.where(action < REMOVE, 7, 8))
    obj = jnp.where(action < PICK, -1, jnp.where(action < REMOVE, action - PICK, action - REMOVE))
    return kind, obj
