"""The ``go to`` levels: GoToObj, GoToRedBallGrey, GoToRedBall, GoToLocal, GoToObjMaze, GoTo, GoToImpUnlock
(minigrid 3.2.0 ``envs/babyai/goto.py``; GoToSeq is a LevelGen level, see ``levelgen``).

Every attempt returns ``(RoomGridState, Instruction, accepted)`` (see ``common``); the object ids are
``num_walls + 1, ...`` in placement order.
"""

from __future__ import annotations

import jax.numpy as jnp

from jaxsoc.envs.babyai import instr as I
from jaxsoc.envs.babyai import roomgrid as RG
from jaxsoc.envs.babyai.levels.common import LevelGenerator, leaf_instruction
from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld import placement as P


def pick(word, types, colors):
    """Returns ``(type, color)`` of a uniformly chosen object of the lists (minigrid's ``_rand_elem(objs)``)."""
    i = P.below(word, types.shape[0])
    return types[i], colors[i]


def maze_with_distractors(bits: RG.Bits, lay: RG.Layout, num_dists: int):
    """``GoTo.gen_mission`` up to the instruction: the agent in a random room, ``connect_all``, then
    ``num_dists`` distractors in random rooms (away from the agent). Returns ``(state, types, colors)``."""
    state = RG.init(lay, bits)
    state = RG.place_agent(lay, state, bits)
    state = RG.connect_all(lay, state, bits)
    state, types, colors, _ = RG.add_distractors(lay, state, bits, num_dists, lay.num_walls + 1)
    return state, types, colors


def go_to_obj(bits, lay):
    """GoToObj: one object (any kind) in an empty room; "go to the {color} {type}"."""
    state = RG.place_agent(lay, RG.init(lay, bits), bits)
    state, types, colors, _ = RG.add_distractors(lay, state, bits, 1, lay.num_walls + 1, room=0, all_unique=True)
    return state, leaf_instruction(I.ACT_GOTO, [types[0]], [colors[0]]), jnp.bool_(True)


def red_ball_room(bits, lay, grey: bool, num_dists: int = 7):
    """A red ball, then ``num_dists`` random distractors (grey with ``grey``), all reachable."""
    state = RG.place_agent(lay, RG.init(lay, bits), bits)
    first = lay.num_walls + 1
    state, _ = RG.add_object(lay, state, bits.one(), 0, C.BALL, C.RED, first)
    if num_dists:
        types, colors = RG.random_kinds(bits, num_dists, all_unique=False)
        if grey:  # GoToRedBallGrey recolours its distractors after placing them
            colors = jnp.full(num_dists, C.GREY, jnp.int32)
        rooms, ids = jnp.zeros(num_dists, jnp.int32), jnp.arange(first + 1, first + 1 + num_dists)
        state, _ = RG.add_objects(lay, state, bits, rooms, types, colors, ids)
    instruction = leaf_instruction(I.ACT_GOTO, [C.BALL], [C.RED])
    return state, instruction, RG.objects_reachable(state)


def go_to_red_ball_grey(bits, lay):
    """GoToRedBallGrey: a red ball and 7 grey keys/balls/boxes, all reachable; "go to the red ball"."""
    return red_ball_room(bits, lay, grey=True)


def go_to_red_ball(bits, lay):
    """GoToRedBall: a red ball and 7 random distractors (more red balls possible), all reachable."""
    return red_ball_room(bits, lay, grey=False)


def local_attempt(num_dists: int):
    """Returns the GoToLocal attempt with ``num_dists`` random objects in the one room."""

    def attempt(bits, lay):
        state = RG.place_agent(lay, RG.init(lay, bits), bits)
        state, types, colors, _ = RG.add_distractors(lay, state, bits, num_dists, lay.num_walls + 1, room=0)
        kind, color = pick(bits.one(), types, colors)
        return state, leaf_instruction(I.ACT_GOTO, [kind], [color]), RG.objects_reachable(state)

    return attempt


go_to_local = local_attempt(8)
go_to_local.__doc__ = "GoToLocal: 8 random objects in one room, all reachable; go to one of them (by type and colour)."


def open_all_doors(state: RG.RoomGridState) -> RG.RoomGridState:
    """minigrid's ``open_all_doors``: every door of the grid open (locked ones too)."""
    grid = state.grid
    doors = grid[..., C.TYPE] == C.DOOR
    return state.replace(grid=grid.at[..., C.STATE].set(jnp.where(doors, C.OPEN, grid[..., C.STATE])))


def maze_attempt(num_dists: int, doors_open: bool = False):
    """Returns the GoTo attempt (``maze_with_distractors``, all objects reachable, go to one of them) with
    ``num_dists`` objects; ``doors_open`` opens every door at the end, as GoTo's ``doors_open`` option."""

    def attempt(bits, lay):
        state, types, colors = maze_with_distractors(bits, lay, num_dists)
        kind, color = pick(bits.one(), types, colors)
        accepted = RG.objects_reachable(state)
        if doors_open:  # GoTo opens the doors after its checks
            state = open_all_doors(state)
        return state, leaf_instruction(I.ACT_GOTO, [kind], [color]), accepted

    return attempt


go_to_obj_maze = maze_attempt(1)
go_to_obj_maze.__doc__ = "GoToObjMaze: 3x3 rooms joined by closed doors, one object; go to it."
go_to = maze_attempt(18)
go_to.__doc__ = "GoTo: 3x3 rooms joined by closed doors, 18 objects, all reachable; go to one of them."


def go_to_imp_unlock(bits, lay):
    """GoToImpUnlock (original babyai semantics): a locked room whose key lies in another room, closed
    doors elsewhere, two distractors in every other room, the agent outside the locked room, then the
    target alone in the locked room; "go to a/the {color} {type}".

    minigrid 3.2.0 differs (its ``is`` comparisons of room indices fail): there the key can be locked in
    (probability 1/9) and the locked room also gets two distractors.
    """
    state = RG.init(lay, bits)
    state, _ = RG.add_locked_room(lay, state, bits, lay.num_walls + 1, room_first=True)
    state = RG.connect_all(lay, state, bits)
    per_room = 2
    rooms = jnp.repeat(jnp.arange(lay.num_rooms), per_room)
    types, colors = RG.random_kinds(bits, rooms.shape[0], all_unique=False)
    ids = jnp.arange(lay.num_walls + 2, lay.num_walls + 2 + rooms.shape[0])
    state, _ = RG.add_objects(lay, state, bits, rooms, types, colors, ids, active=rooms != state.locked_room)
    state = RG.place_agent(lay, state, bits, jnp.arange(lay.num_rooms) != state.locked_room)
    reachable = RG.objects_reachable(state)
    types, colors = RG.random_kinds(bits, 1, all_unique=False)
    state, _ = RG.add_object(lay, state, bits.one(), state.locked_room, types[0], colors[0], ids[-1] + 1)
    return state, leaf_instruction(I.ACT_GOTO, [types[0]], [colors[0]]), reachable


GENERATORS = {
    "GoToObj": LevelGenerator("GoToObj", go_to_obj),
    "GoToRedBallGrey": LevelGenerator("GoToRedBallGrey", go_to_red_ball_grey),
    "GoToRedBall": LevelGenerator("GoToRedBall", go_to_red_ball),
    "GoToLocal": LevelGenerator("GoToLocal", go_to_local),
    "GoToObjMaze": LevelGenerator("GoToObjMaze", go_to_obj_maze),
    "GoTo": LevelGenerator("GoTo", go_to),
    "GoToImpUnlock": LevelGenerator("GoToImpUnlock", go_to_imp_unlock),
}
