"""EXCALIBUR's arrays: the house as generated (``House``), one episode (``State``), questions and actions.

**The grid.** A house is a ``height x width`` grid indexed ``[y, x]`` (positions are ``(x, y)`` as in the
project's grid engine): ``walls`` bool (doorways are gaps), ``room`` int8 (the room of each cell, -1 on walls).
A cell is ``params.cell_metres`` wide (0.5 m by default); metric relations scale by it.

**Objects** live in a table of ``N = max_objects`` slots (``valid`` marks the used ones). Furniture
(``catalogue.IS_FURNITURE``) fills its cell and blocks walking; an item is on the floor (alone in its cell, which
it blocks), on a surface (``link == ON``) or in a container (``link == IN``) of ``parent``, a slot; items nest at
most two deep (a tomato in a bowl on a counter). Everything in a cell shares that cell's ``cell``. Attributes:
``type`` (``catalogue.TYPES``), ``colors`` (1-2 salient colours, most salient first, -1 pads), ``materials`` (1-3),
``dims`` (the three dimensions sorted longest first, metres, after the size factor U[0.8, 1]), ``mass`` (kg, after
the mass factor U[0.5, 1.5]).

**What is hidden.** An object is seen when its cell is in the agent's view and nothing closed encloses it (an
item in a closed ``OPENABLE`` container is invisible until it is opened); its mass is known only once lifted.

**Questions** are ``int16[Q, QUESTION_SLOTS]`` rows: ``FAMILY`` (1..11 for Table 5's families, 0 for a padding
row), ``REL`` (1 + a ``catalogue.RELATIONS`` index, 0 when the family has none) and three descriptors
``(C, M, S)`` for objects 1, 2, 3: 1 + a colour / material / type index, 0 for "any" (the word is omitted; a
type of 0 reads "object"). Answers are ``catalogue.ANSWERS`` ids.

**Actions** (``NUM_ACTIONS``): ``LEFT``, ``RIGHT``, ``FORWARD`` (as MiniGrid), ``PICKUP`` (the front cell's
first reachable item with nothing on or in it, in the cell's order: the item goes to the back of the order when
dropped, so pick/drop cycles through a cell; lifting reveals its mass), ``DROP`` (onto the front cell: on a
surface, into an open container, or onto an empty floor cell), ``TOGGLE`` (open or close the front cell's
openable furniture), ``STOP`` (ends phase I or III), then ``ANSWER + a`` for each answer id ``a``.

**Phases**: ``EXPLORE`` (I), ``ANSWER_FIRST`` (II), ``REENTER`` (III), ``ANSWER_AGAIN`` (IV), then the episode
ends (see ``env``).
"""

from __future__ import annotations

import jax
from flax import struct

from jaxsoc.envs.excalibur import catalogue as K

LEFT, RIGHT, FORWARD, PICKUP, DROP, TOGGLE, STOP = range(7)
ANSWER = 7
NUM_ACTIONS = ANSWER + K.NUM_ANSWERS
ACTION_NAMES = ("left", "right", "forward", "pickup", "drop", "toggle", "stop")

EXPLORE, ANSWER_FIRST, REENTER, ANSWER_AGAIN = range(4)
PHASE_NAMES = ("I explore", "II answer", "III re-enter", "IV answer again")

FLOOR, ON, IN = 0, 1, 2  # an object's link to its parent
NO_PARENT = -1

# question columns
FAMILY, REL, C1, M1, S1, C2, M2, S2, C3, M3, S3 = range(11)
QUESTION_SLOTS = 11
NUM_FAMILIES = 11


class House(struct.PyTreeNode):
    """A house as generated (the state the questions' answers refer to).

    - ``walls`` bool[H, W]; ``room`` int8[H, W] (-1 on walls); ``room_type`` int8[R] (``catalogue.ROOM_TYPES``,
      -1 for a room slot the house does not use).
    - ``valid`` bool[N]; ``type`` int16[N]; ``colors`` int8[N, 2]; ``materials`` int8[N, 3]; ``dims`` float32[N, 3];
      ``mass`` float32[N]; ``cell`` int16[N, 2] ``(x, y)``; ``parent`` int16[N]; ``link`` int8[N]; ``order``
      int32[N] (the pick order within a cell, smaller first).
    - ``spawn_pos`` int32[2] ``(x, y)``, ``spawn_dir`` int32.
    - ``questions`` int16[Q, QUESTION_SLOTS]; ``answers`` int16[Q]; ``num_questions`` int32 (rows in use, first).
    """

    walls: jax.Array
    room: jax.Array
    room_type: jax.Array
    valid: jax.Array
    type: jax.Array
    colors: jax.Array
    materials: jax.Array
    dims: jax.Array
    mass: jax.Array
    cell: jax.Array
    parent: jax.Array
    link: jax.Array
    order: jax.Array
    spawn_pos: jax.Array
    spawn_dir: jax.Array
    questions: jax.Array
    answers: jax.Array
    num_questions: jax.Array


class Tracks(struct.PyTreeNode):
    """What an exploration phase did, for the metrics (one per exploration phase, I and III).

    - ``visited`` bool[H, W] cells stood on; ``viewed`` bool[H, W] cells seen (in view: what the agent knows of the
      layout, walls and doorways); ``seen`` bool[N] objects seen; ``lifted`` bool[N] objects picked up;
      ``touched`` bool[N] objects interacted with (picked up, dropped onto/into, opened or closed).
    - ``steps`` int32 steps taken; ``first_touch`` int32 the step of the first interaction (-1 until then).
    """

    visited: jax.Array
    viewed: jax.Array
    seen: jax.Array
    lifted: jax.Array
    touched: jax.Array
    steps: jax.Array
    first_touch: jax.Array


class State(struct.PyTreeNode):
    """One episode.

    - ``house``: the ``House`` (constant through the episode; phase III starts from it again).
    - ``agent_pos`` int32[2], ``agent_dir`` int32, ``held`` int32 (a slot, -1 for none).
    - ``cell``, ``parent``, ``link``, ``order``: the objects' current placement (as in ``House``); ``is_open``
      bool[N]; ``next_order`` int32 (the order the next dropped item gets).
    - ``phase`` int32 (``EXPLORE`` ..); ``phase_step`` int32 (steps in the current phase; in the answer phases the
      index of the question being answered); ``step`` int32 (steps in the episode).
    - ``tracks``: a ``Tracks`` with a leading axis of 2 (phase I, phase III).
    - ``given`` int16[2, Q]: the answers given in phases II and IV (-1 for none yet or not an answer action).
    - ``knowledge`` float32[2]: the knowledge accuracy of the tracks of phases I and III as last computed (``env``
      keeps it when the QA reward is on, so that a step computes it once; 0 otherwise).
    """

    house: House
    agent_pos: jax.Array
    agent_dir: jax.Array
    held: jax.Array
    cell: jax.Array
    parent: jax.Array
    link: jax.Array
    order: jax.Array
    is_open: jax.Array
    next_order: jax.Array
    phase: jax.Array
    phase_step: jax.Array
    step: jax.Array
    tracks: Tracks
    given: jax.Array
    knowledge: jax.Array
