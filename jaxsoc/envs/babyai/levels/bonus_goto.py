"""minigrid 3.2.0's bonus "go to" and navigation levels (``envs/babyai/goto.py`` and ``other.py``).

The variants of the paper levels (GoToRedBallNoDists, GoToObjS*, GoToLocalS*N*, GoToOpen, GoToObjMaze*,
GoToSeqS5R2) reuse their attempts with another room layout or object count; GoToRedBlueBall, GoToDoor,
GoToObjDoor, ActionObjDoor, FindObjS*, KeyCorridor* and OneRoomS* have their own attempts here. Every attempt
returns ``(RoomGridState, Instruction, accepted)`` (see ``common``); object ids are ``num_walls + 1, ...`` in
placement order.

``key_corridor`` builds the KeyCorridor world that BabyAI-KeyCorridor* and MiniGrid-KeyCorridor* share
(``gridworld.key_corridor``); its smallest rooms have side 3 (one interior cell).
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.babyai import instr as I
from jaxsoc.envs.babyai import roomgrid as RG
from jaxsoc.envs.babyai.levels import goto, levelgen
from jaxsoc.envs.babyai.levels.common import LevelGenerator, leaf_instruction, level_params
from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld import placement as P


def _door_ring(lay: RG.Layout, state: RG.RoomGridState, bits: RG.Bits, room: int, locked: bool | None):
    """Four ``add_door(room)`` calls on a room with four neighbours: a door on each of its sides, each of a
    uniform colour and, when ``locked`` is None, locked with probability 1/2 (``_rand_bool``). minigrid puts
    the doors on the sides in a random order with i.i.d. colours, which is the same as i.i.d. per side.
    Returns ``(state, door_colors int32[4])`` in side order (right, down, left, up). Takes 8 words."""
    walls = jnp.asarray(lay.room_wall[room])
    colors = P.below(bits.take(4), C.NUM_COLORS)
    lock = P.below(bits.take(4), 2) == 0 if locked is None else jnp.full(4, locked)
    state = state.replace(
        door_on=state.door_on.at[walls].set(True),
        door_color=state.door_color.at[walls].set(colors),
        door_locked=state.door_locked.at[walls].set(lock),
    )
    return RG.write_doors(lay, state), colors


def _center(lay: RG.Layout) -> int:
    return (lay.num_rows // 2) * lay.num_cols + lay.num_cols // 2


def _only(lay: RG.Layout, room: int) -> jnp.ndarray:
    return jnp.arange(lay.num_rooms) == room


def go_to_red_blue_ball(bits, lay):
    """GoToRedBlueBall: 7 random objects, none of them a red or blue ball (else rejected), then one red or blue
    ball, all reachable; "go to the {red|blue} ball"."""
    state = RG.place_agent(lay, RG.init(lay, bits), bits)
    first = lay.num_walls + 1
    state, types, colors, _ = RG.add_distractors(lay, state, bits, 7, first, room=0)
    clash = jnp.any((types == C.BALL) & ((colors == C.RED) | (colors == C.BLUE)))
    color = jnp.where(P.below(bits.one(), 2) == 0, C.RED, C.BLUE)
    state, _ = RG.add_object(lay, state, bits.one(), 0, C.BALL, color, first + 7)
    instruction = leaf_instruction(I.ACT_GOTO, [C.BALL], [color])
    return state, instruction, ~clash & RG.objects_reachable(state)


def go_to_door(bits, lay):
    """GoToDoor (3x3 rooms of side 7): four doors around the middle room (each locked with probability 1/2),
    the agent in that room; "go to the {color} door" for one of them."""
    room = _center(lay)
    state, colors = _door_ring(lay, RG.init(lay, bits), bits, room, locked=None)
    state = RG.place_agent(lay, state, bits, _only(lay, room))
    color = colors[P.below(bits.one(), 4)]
    return state, leaf_instruction(I.ACT_GOTO, [C.DOOR], [color]), jnp.bool_(True)


def go_to_obj_door(bits, lay):
    """GoToObjDoor (3x3 rooms of side 8): the agent and 8 random objects in the middle room, four doors around
    it (each locked with probability 1/2), everything reachable; go to one of the 12 objects and doors."""
    room = _center(lay)
    state = RG.place_agent(lay, RG.init(lay, bits), bits, _only(lay, room))
    state, types, colors, _ = RG.add_distractors(lay, state, bits, 8, lay.num_walls + 1, room=room)
    state, door_colors = _door_ring(lay, state, bits, room, locked=None)
    kind, color = goto.pick(
        bits.one(), jnp.concatenate([types, jnp.full(4, C.DOOR)]), jnp.concatenate([colors, door_colors])
    )
    return state, leaf_instruction(I.ACT_GOTO, [kind], [color]), RG.objects_reachable(state)


def action_obj_door(bits, lay):
    """ActionObjDoor (3x3 rooms of side 7): 5 distinct random objects in the middle room, four unlocked doors
    around it, then the agent; one of the 9 chosen uniformly: a door is gone to or opened, an object gone to
    or picked up (1/2 each)."""
    room = _center(lay)
    state = RG.init(lay, bits)
    state, types, colors, _ = RG.add_distractors(lay, state, bits, 5, lay.num_walls + 1, room=room, all_unique=True)
    state, door_colors = _door_ring(lay, state, bits, room, locked=False)
    state = RG.place_agent(lay, state, bits, _only(lay, room))
    kind, color = goto.pick(
        bits.one(), jnp.concatenate([types, jnp.full(4, C.DOOR)]), jnp.concatenate([colors, door_colors])
    )
    go = P.below(bits.one(), 2) == 0
    action = jnp.where(go, I.ACT_GOTO, jnp.where(kind == C.DOOR, I.ACT_OPEN, I.ACT_PICKUP))
    return state, leaf_instruction(action, [kind], [color]), jnp.bool_(True)


def find_obj(bits, lay):
    """FindObjS* (3x3 rooms): one random object in a random room, the agent in the middle room, ``connect_all``;
    "pick up the {type}"."""
    state = RG.init(lay, bits)
    room = P.below(bits.one(), lay.num_rooms)
    types, colors = RG.random_kinds(bits, 1, all_unique=False)
    state, _ = RG.add_object(lay, state, bits.one(), room, types[0], colors[0], lay.num_walls + 1)
    state = RG.place_agent(lay, state, bits, _only(lay, _center(lay)))
    state = RG.connect_all(lay, state, bits)
    return state, leaf_instruction(I.ACT_PICKUP, [types[0]], [I.ANY_COLOR]), jnp.bool_(True)


def one_room(bits, lay):
    """OneRoomS*: a ball of a random colour, then the agent, in one room; "pick up the ball"."""
    state = RG.init(lay, bits)
    color = P.below(bits.one(), C.NUM_COLORS)
    state, _ = RG.add_object(lay, state, bits.one(), 0, C.BALL, color, lay.num_walls + 1)
    state = RG.place_agent(lay, state, bits)
    return state, leaf_instruction(I.ACT_PICKUP, [C.BALL], [I.ANY_COLOR]), jnp.bool_(True)


def hallway_walls(lay: RG.Layout) -> np.ndarray:
    """Returns ``bool[E]``: the inner walls KeyCorridor removes, between vertically adjacent rooms of the middle
    column (``remove_wall(1, j, 3)`` for ``j >= 1``)."""
    removed = np.zeros(lay.num_walls, bool)
    for j in range(1, lay.num_rows):
        removed[lay.room_wall[j * lay.num_cols + 1, 3]] = True
    return removed


def hallway_cells(lay: RG.Layout) -> np.ndarray:
    """Returns ``bool[H, W]``: the wall cells ``hallway_walls`` clears (each wall without its two ends)."""
    cells = np.zeros((lay.height, lay.width), bool)
    step = lay.room_size - 1
    for j in range(1, lay.num_rows):
        cells[j * step, step + 1 : 2 * step] = True
    return cells


def key_corridor(bits: RG.Bits, lay: RG.Layout) -> tuple[RG.RoomGridState, jnp.ndarray]:
    """KeyCorridor's world (3 columns of ``num_rows`` rooms): the middle column one hallway; a locked door of a
    random colour on the left wall of a random right-column room, which holds a ball of a random colour; the
    door's key in a random left-column room; the agent in the middle room of the hallway (its cells on the
    removed walls included); ``connect_all`` (the hallway counts as connected, no door into the locked room).
    Returns ``(state, ball_color int32[])``; the ball has id ``num_walls + 1``, the key ``num_walls + 2``."""
    if lay.num_cols != 3:
        raise ValueError("KeyCorridor has three columns of rooms")
    removed, cleared = jnp.asarray(hallway_walls(lay)), jnp.asarray(hallway_cells(lay))
    state = RG.init(lay, bits)
    empty = jnp.asarray(C.EMPTY_CELL, jnp.uint8)
    state = state.replace(grid=jnp.where(cleared[..., None], empty, state.grid))
    row = P.below(bits.one(), lay.num_rows)
    locked_room = row * lay.num_cols + 2
    door_color = P.below(bits.one(), C.NUM_COLORS)
    wall = jnp.asarray(lay.room_wall[:, 2])[locked_room]
    state = RG.add_door(lay, state, wall, door_color, True, room=locked_room)
    ball_color = P.below(bits.one(), C.NUM_COLORS)
    state, _ = RG.add_object(lay, state, bits.one(), locked_room, C.BALL, ball_color, lay.num_walls + 1)
    key_room = P.below(bits.one(), lay.num_rows) * lay.num_cols
    state, _ = RG.add_object(lay, state, bits.one(), key_room, C.KEY, door_color, lay.num_walls + 2)
    start = (lay.num_rows // 2) * lay.num_cols + 1
    pos, direction = P.place_agent(bits.one(), state.grid, lay.room_rect(start), facing_free=True)
    state = state.replace(agent_pos=pos.astype(jnp.int32), agent_dir=direction.astype(jnp.int32))
    # connect_all sees the removed walls as open connections: mark them, connect, then clear them again
    state = RG.connect_all(lay, state.replace(door_on=state.door_on | removed), bits)
    state = state.replace(door_on=state.door_on & ~removed, grid=jnp.where(cleared[..., None], empty, state.grid))
    return state, ball_color


def key_corridor_attempt(bits, lay):
    """BabyAI-KeyCorridor*: the ``key_corridor`` world; "pick up the ball"."""
    state, _ = key_corridor(bits, lay)
    return state, leaf_instruction(I.ACT_PICKUP, [C.BALL], [I.ANY_COLOR]), jnp.bool_(True)


# Rejection rates of the levels that can reject, measured as ``common.MAX_TRIES``' were: 20,000 single
# attempts per level (``_try`` on ``split(key(2025), 20000)``); p = rejected / attempts, p_up = p plus 6
# standard errors rounded up to 0.01, K = the smallest with p_up**K < 1e-12. GoToLocalS{5,6,8}N2 never
# rejected (two objects in a room cannot wall anything in) and, like the levels without a check
# (GoToRedBallNoDists, GoToObjS*, GoToDoor, ActionObjDoor, FindObjS*, KeyCorridor*, OneRoomS*), use K = 1.
#
#   level             attempts  rejected  p       p_up   K
#   GoToRedBlueBall     20,000   12,668  0.6334  0.66   67
#   GoToObjDoor         20,000   14,869  0.7435  0.77  106
#   GoToLocalS6N3       20,000      222  0.0111  0.02    8
#   GoToLocalS6N4       20,000    1,606  0.0803  0.10   12
#   GoToLocalS7N4       20,000      286  0.0143  0.02    8
#   GoToLocalS7N5       20,000      989  0.0495  0.06   10
#   GoToLocalS8N3       20,000       12  0.0006  0.01    6
#   GoToLocalS8N4       20,000       79  0.0040  0.01    6
#   GoToLocalS8N5       20,000      268  0.0134  0.02    8
#   GoToLocalS8N6       20,000      646  0.0323  0.04    9
#   GoToLocalS8N7       20,000    1,472  0.0736  0.09   12
#   GoToObjMazeS4R2     20,000    4,991  0.2495  0.27   22
#   GoToObjMazeS4       20,000    4,394  0.2197  0.24   20
#   GoToObjMazeS5       20,000    1,978  0.0989  0.12   14
#   GoToObjMazeS6       20,000    1,163  0.0582  0.07   11
#   GoToObjMazeS7       20,000      722  0.0361  0.05   10
#   GoToObjMazeOpen     20,000      499  0.0249  0.04    9
#   GoToOpen            20,000    9,652  0.4826  0.51   42
#   GoToSeqS5R2         20,000   11,158  0.5579  0.58   51
_TRIES = {
    "GoToRedBlueBall": 67,
    "GoToObjDoor": 106,
    "GoToLocalS6N3": 8,
    "GoToLocalS6N4": 12,
    "GoToLocalS7N4": 8,
    "GoToLocalS7N5": 10,
    "GoToLocalS8N3": 6,
    "GoToLocalS8N4": 6,
    "GoToLocalS8N5": 8,
    "GoToLocalS8N6": 9,
    "GoToLocalS8N7": 12,
    "GoToObjMazeS4R2": 22,
    "GoToObjMazeS4": 20,
    "GoToObjMazeS5": 14,
    "GoToObjMazeS6": 11,
    "GoToObjMazeS7": 10,
    "GoToObjMazeOpen": 9,
    "GoToOpen": 42,
    "GoToSeqS5R2": 51,
}


def _generator(name: str, attempt) -> LevelGenerator:
    return LevelGenerator(name, attempt, max_tries=_TRIES.get(name, 1))


_GOTO_SEQ = dataclasses.replace(levelgen.CONFIGS["GoToSeq"], num_dists=4)
_LOCAL = ((5, 2), (6, 2), (6, 3), (6, 4), (7, 4), (7, 5), (8, 2), (8, 3), (8, 4), (8, 5), (8, 6), (8, 7))
_OBJ_MAZE = {"S4R2": (4, 2, 2), "S4": (4, 3, 3), "S5": (5, 3, 3), "S6": (6, 3, 3), "S7": (7, 3, 3)}
_KEY_CORRIDOR = {
    "": (6, 3),
    "S3R1": (3, 1),
    "S3R2": (3, 2),
    "S3R3": (3, 3),
    "S4R3": (4, 3),
    "S5R3": (5, 3),
    "S6R3": (6, 3),
}

# id -> (generator, params); built by _levels below
LEVELS: dict[str, tuple[LevelGenerator, I.BabyAIParams]] = {}
FIXED_MAX_STEPS: dict[str, int] = {}


def _levels() -> None:
    def add(level_id, name, attempt, room_size, rows, cols, fixed=None):
        LEVELS[level_id] = (_generator(name, attempt), level_params(room_size, rows, cols))
        if fixed is not None:
            FIXED_MAX_STEPS[level_id] = fixed

    red_ball = lambda bits, lay: goto.red_ball_room(bits, lay, grey=False, num_dists=0)  # noqa: E731
    add("BabyAI-GoToRedBallNoDists-v0", "GoToRedBallNoDists", red_ball, 8, 1, 1)
    add("BabyAI-GoToObjS4-v0", "GoToObjS4", goto.go_to_obj, 4, 1, 1)
    add("BabyAI-GoToObjS6-v1", "GoToObjS6", goto.go_to_obj, 6, 1, 1)
    for size, dists in _LOCAL:
        name = f"GoToLocalS{size}N{dists}"
        add(f"BabyAI-{name}-v0", name, goto.local_attempt(dists), size, 1, 1)
    add("BabyAI-GoToOpen-v0", "GoToOpen", goto.maze_attempt(18, doors_open=True), 8, 3, 3)
    add("BabyAI-GoToObjMazeOpen-v0", "GoToObjMazeOpen", goto.maze_attempt(1, doors_open=True), 8, 3, 3)
    for suffix, (size, rows, cols) in _OBJ_MAZE.items():
        add(f"BabyAI-GoToObjMaze{suffix}-v0", f"GoToObjMaze{suffix}", goto.maze_attempt(1), size, rows, cols)
    add("BabyAI-GoToSeqS5R2-v0", "GoToSeqS5R2", levelgen.make_attempt(_GOTO_SEQ), 5, 2, 2)
    add("BabyAI-GoToRedBlueBall-v0", "GoToRedBlueBall", go_to_red_blue_ball, 8, 1, 1)
    add("BabyAI-GoToDoor-v0", "GoToDoor", go_to_door, 7, 3, 3)
    add("BabyAI-GoToObjDoor-v0", "GoToObjDoor", go_to_obj_door, 8, 3, 3)
    add("BabyAI-ActionObjDoor-v0", "ActionObjDoor", action_obj_door, 7, 3, 3)
    for size in (5, 6, 7):
        add(f"BabyAI-FindObjS{size}-v0", f"FindObjS{size}", find_obj, size, 3, 3, fixed=20 * size**2)
    for suffix, (size, rows) in _KEY_CORRIDOR.items():
        name = f"KeyCorridor{suffix}"
        add(f"BabyAI-{name}-v0", name, key_corridor_attempt, size, rows, 3, fixed=30 * size**2)
    for size in (8, 12, 16, 20):
        add(f"BabyAI-OneRoomS{size}-v0", f"OneRoomS{size}", one_room, size, 1, 1)


_levels()
