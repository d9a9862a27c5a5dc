"""minigrid 3.2.0's ObstructedMaze (``minigrid/envs/obstructedmaze.py`` and ``obstructedmaze_v1.py``).

A ``RoomGrid`` of rooms of side 6 (one row of two rooms, or 3x3) with locked doors; each locked door's key
lies in the room on the agent's side, possibly hidden in a grey box, and a green ball may block the door
from that side. The agent must pick up the blue ball, in the far room (``1Dl*``) or in a random corner room
(``2Dl*``, ``1Q``, ``2Q``, ``Full``). The mission is always "pick up the blue ball".

The generation follows minigrid's order, which matters in ``v0``: there a side room's second blocking ball
is written over whatever lies in front of its door, possibly the first door's key (or its box); ``v1``
places both balls of a side room before its keys. A level is a static *plan*, a list of operations built
when the env is constructed (which doors, which balls, which keys, in minigrid's order); only positions
and the colour permutation are random. The room grid is ``babyai.roomgrid``'s (``init`` draws the door
cells, ``write_doors``, ``place_agent``: a start pose not facing an object); keys and the target ball go
on uniform empty cells of their room at Manhattan distance >= 2 from RoomGrid's default agent position
(``place_in_room``, minigrid's ``reject_next_to``). The task: a pickup that leaves the blue ball in hand.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.babyai import roomgrid as RG
from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld import placement as P
from jaxsoc.envs.gridworld.dynamics import Transition
from jaxsoc.envs.gridworld.env import GridEnvironment
from jaxsoc.envs.gridworld.placement import Bits
from jaxsoc.envs.gridworld.state import GridState, make_state

ROOM_SIZE = 6
# minigrid's COLOR_NAMES is sorted: [0] blue (the ball to find), [1] green (blocking balls), [2] grey (boxes)
TARGET_COLOR, BLOCKER_COLOR, BOX_COLOR = C.BLUE, C.GREEN, C.GREY
# ObstructedMaze_Full: the side rooms and corner rooms as (column, row), in minigrid's order
SIDE_ROOMS = ((2, 1), (1, 2), (0, 1), (1, 0))
CORNER_ROOMS = ((2, 0), (2, 2), (0, 2), (0, 0))


def random_permutation(words: jax.Array) -> jax.Array:
    """Returns ``int32[n]``, a uniformly random permutation of ``0 .. n - 1`` from ``n`` random words
    ``uint32[n]`` (entry ``t`` is the rank of word ``t``, ties broken by position): minigrid's
    ``_rand_subset(items, len(items))`` and its draw-and-remove loops over all items."""
    n = words.shape[0]
    idx = jnp.arange(n)
    earlier = (words[None, :] < words[:, None]) | ((words[None, :] == words[:, None]) & (idx[None, :] < idx[:, None]))
    return jnp.sum(earlier, axis=1).astype(jnp.int32)


def object_cell(kind: int, color, contents=0, obj_id: int = 0) -> jax.Array:
    """Returns the ``uint8[NUM_CHANNELS]`` cell of a key, ball or box (``contents`` packed, see
    ``constants.pack_contents``); ``color`` and ``contents`` may be traced."""
    parts = [kind, color, 0, contents, obj_id]
    return jnp.stack([jnp.asarray(v, jnp.int32) for v in parts]).astype(jnp.uint8)


def place_in_room(lay: RG.Layout, level: RG.RoomGridState, word, room, cell) -> RG.RoomGridState:
    """RoomGrid's ``place_in_room``: returns ``level`` with ``cell`` (``uint8[NUM_CHANNELS]``) on a uniform
    empty interior cell of ``room`` (may be traced) at Manhattan distance >= 2 from ``level.agent_pos``
    (``reject_next_to``), drawn with the ``uint32`` word ``word``. Like ``roomgrid.add_object`` for any cell,
    with a one-dimensional draw over the room's cells (cheaper to compile). The rooms here never run out of
    cells (minigrid's ``RecursionError``)."""
    cells = jnp.asarray(lay.interior)[room].reshape(-1)
    flat = level.grid.reshape(-1, C.NUM_CHANNELS)
    xs, ys = cells % lay.width, cells // lay.width
    near = jnp.abs(xs - level.agent_pos[0]) + jnp.abs(ys - level.agent_pos[1]) < 2
    free = (flat[cells, C.TYPE] == C.EMPTY) & ~near
    flat = flat.at[cells[RG.choose(word, free)]].set(cell)
    return level.replace(grid=flat.reshape(level.grid.shape))


class ObstructedMaze(GridEnvironment):
    """The shared engine of the ObstructedMaze levels: a subclass sets ``num_rows``/``num_cols`` and builds
    ``plan`` (operations in minigrid's order), ``corners`` (the rooms the blue ball may be in) and
    ``agent_room``; rooms are row-major indices ``row * num_cols + column``.

    Plan operations: ``("door", room, side, color_slot, locked)`` a door on the room's wall ``side`` (0 right,
    1 down, 2 left, 3 up) of colour ``door_colors[color_slot]``, ``door_colors`` being a random permutation
    of the six colours; ``("ball", room, side)`` a green ball on the room's cell in front of that door
    (overwriting what is there); ``("key", room, color_slot)`` a key of that colour, in a grey box when
    ``key_in_box``, on a random empty cell of the room.
    """

    mission = "pick up the blue ball"
    num_rows = 1
    num_cols = 2

    def __init__(self, num_rooms_visited: int, key_in_box: bool, **params):
        self.key_in_box = key_in_box
        self.layout = RG.layout(ROOM_SIZE, self.num_rows, self.num_cols)
        self.plan: list[tuple] = []
        self.corners: tuple[int, ...] = ()
        self.agent_room = 0
        self._words = None
        params = {"max_steps": 4 * num_rooms_visited * ROOM_SIZE**2, **params}
        super().__init__(height=self.layout.height, width=self.layout.width, **params)

    def room(self, column: int, row: int) -> int:
        """Returns the row-major index of room ``(column, row)`` (minigrid's ``get_room(i, j)``)."""
        return row * self.num_cols + column

    def add_door(self, room: int, side: int, color_slot: int, locked: bool, blocked: bool = False) -> None:
        """Appends minigrid's ``add_door`` of ObstructedMaze, without its key, to the plan."""
        self.plan.append(("door", room, side, color_slot, locked))
        if blocked:
            self.plan.append(("ball", room, side))

    def _ops(self, kind: str) -> list[tuple]:
        return [op for op in self.plan if op[0] == kind]

    def _build(self, bits: Bits) -> GridState:
        lay = self.layout
        level = RG.init(lay, bits)
        door_colors = random_permutation(bits.take(C.NUM_COLORS))
        doors = [(int(lay.room_wall[room, side]), slot, locked) for op, room, side, slot, locked in self._ops("door")]
        walls, slots, locked = (np.array(column) for column in zip(*doors))
        level = level.replace(
            door_on=level.door_on.at[walls].set(True),
            door_color=level.door_color.at[walls].set(door_colors[slots]),
            door_locked=level.door_locked.at[walls].set(jnp.asarray(locked)),
        )
        next_id = lay.num_walls + 1
        for op, room, *args in self.plan:  # doors (set above) take no randomness and lie on walls
            if op == "ball":  # written over whatever lies in front of the door (minigrid's grid.set)
                (side,) = args
                front = level.door_pos[int(lay.room_wall[room, side])] - jnp.asarray(C.DIR_TO_VEC[side])
                level = level.replace(grid=P.put(level.grid, front, object_cell(C.BALL, BLOCKER_COLOR, 0, next_id)))
                next_id += 1
            elif op == "key":  # maybe in a box
                (slot,) = args
                color = door_colors[slot]
                if self.key_in_box:
                    cell = object_cell(C.BOX, BOX_COLOR, C.pack_contents(C.KEY, color), next_id)
                else:
                    cell = object_cell(C.KEY, color, 0, next_id)
                level = place_in_room(lay, level, bits.one(), room, cell)
                next_id += 1
        corner = jnp.asarray(self.corners, jnp.int32)[P.below(bits.one(), len(self.corners))]
        level = place_in_room(lay, level, bits.one(), corner, object_cell(C.BALL, TARGET_COLOR, 0, next_id))
        level = RG.write_doors(lay, level)
        level = RG.place_agent(lay, level, bits, jnp.arange(lay.num_rooms) == self.agent_room)
        return make_state(level.grid, level.agent_pos, level.agent_dir, target_obj=(C.BALL, TARGET_COLOR))

    @property
    def num_words(self) -> int:
        """How many random ``uint32`` words one level takes."""
        if self._words is None:
            self._words = P.count_words(self._build)
        return self._words

    def generate(self, key, params):
        return self._build(Bits(jax.random.bits(key, (self.num_words,), jnp.uint32)))

    def task_outcome(self, state: GridState, action, moved: Transition, params):
        """Success when a pickup action leaves the agent holding the blue ball (minigrid compares with the
        ``obj`` it placed, the only blue ball of the level)."""
        holding_target = jnp.all(state.carrying[: C.COLOR + 1] == state.target_obj)
        return (action == C.PICKUP) & holding_target, jnp.bool_(False)


class ObstructedMaze1Dlhb(ObstructedMaze):
    """``MiniGrid-ObstructedMaze-1Dl/1Dlh/1Dlhb-v0``: two rooms side by side; the door between them is locked,
    its key in the agent's (left) room, in a box with ``key_in_box`` and behind a blocking ball with
    ``blocked``; the blue ball is in the right room. ``max_steps`` 288."""

    def __init__(self, key_in_box: bool = True, blocked: bool = True, **params):
        super().__init__(num_rooms_visited=2, key_in_box=key_in_box, **params)
        self.add_door(0, 0, 0, locked=True, blocked=blocked)
        self.plan.append(("key", 0, 0))
        self.corners = (1,)
        self.agent_room = 0


class ObstructedMazeFull(ObstructedMaze):
    """``MiniGrid-ObstructedMaze-{2Dl,2Dlh,2Dlhb,1Q,2Q,Full}-v0`` (``v1=False``) and
    ``{2Dlhb,1Q,2Q,Full}-v1``: a 3x3 maze; for each of the first ``num_quarters`` side rooms an unlocked
    door from the middle room and locked doors (with keys in the side room) to its two corner rooms; the blue
    ball in one of those ``num_quarters`` corner rooms, uniformly; the agent in ``agent_room`` (column, row).
    ``max_steps = 144 * num_rooms_visited``. ``v1`` adds both doors (and balls) of a side room before its
    keys, so no ball covers a key."""

    num_rows = 3
    num_cols = 3

    def __init__(
        self,
        agent_room: tuple[int, int] = (1, 1),
        key_in_box: bool = True,
        blocked: bool = True,
        num_quarters: int = 4,
        num_rooms_visited: int = 25,
        v1: bool = False,
        **params,
    ):
        super().__init__(num_rooms_visited=num_rooms_visited, key_in_box=key_in_box, **params)
        middle = self.room(1, 1)
        for i, (column, row) in enumerate(SIDE_ROOMS[:num_quarters]):
            side_room = self.room(column, row)
            self.add_door(middle, i, i, locked=False)
            keys = []
            for k in (-1, 1):
                self.add_door(side_room, (i + k) % 4, (i + k) % C.NUM_COLORS, locked=True, blocked=blocked)
                keys.append(("key", side_room, (i + k) % C.NUM_COLORS))
                if not v1:
                    self.plan.append(keys.pop())
            self.plan.extend(keys)
        self.corners = tuple(self.room(*corner) for corner in CORNER_ROOMS[:num_quarters])
        self.agent_room = self.room(*agent_room)


def _full(agent_room, key_in_box, blocked, num_quarters, num_rooms_visited, v1=False) -> tuple[type, dict]:
    kwargs = {
        "agent_room": agent_room,
        "key_in_box": key_in_box,
        "blocked": blocked,
        "num_quarters": num_quarters,
        "num_rooms_visited": num_rooms_visited,
        "v1": v1,
    }
    return ObstructedMazeFull, kwargs


_PREFIX = "MiniGrid-ObstructedMaze-"
ENVS: dict[str, tuple[type, dict]] = {
    f"{_PREFIX}1Dl-v0": (ObstructedMaze1Dlhb, {"key_in_box": False, "blocked": False}),
    f"{_PREFIX}1Dlh-v0": (ObstructedMaze1Dlhb, {"key_in_box": True, "blocked": False}),
    f"{_PREFIX}1Dlhb-v0": (ObstructedMaze1Dlhb, {}),
    f"{_PREFIX}2Dl-v0": _full((2, 1), False, False, 1, 4),
    f"{_PREFIX}2Dlh-v0": _full((2, 1), True, False, 1, 4),
    f"{_PREFIX}2Dlhb-v0": _full((2, 1), True, True, 1, 4),
    f"{_PREFIX}1Q-v0": _full((1, 1), True, True, 1, 5),
    f"{_PREFIX}2Q-v0": _full((2, 1), True, True, 2, 11),
    f"{_PREFIX}Full-v0": _full((1, 1), True, True, 4, 25),
    f"{_PREFIX}2Dlhb-v1": _full((2, 1), True, True, 1, 4, v1=True),
    f"{_PREFIX}1Q-v1": _full((1, 1), True, True, 1, 5, v1=True),
    f"{_PREFIX}2Q-v1": _full((2, 1), True, True, 2, 11, v1=True),
    f"{_PREFIX}Full-v1": _full((1, 1), True, True, 4, 25, v1=True),
}
"""The 13 ObstructedMaze ids of minigrid 3.2.0 with their registered kwargs."""

__all__ = ["ENVS", "ObstructedMaze", "ObstructedMaze1Dlhb", "ObstructedMazeFull", "random_permutation"]
