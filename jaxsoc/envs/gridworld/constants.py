"""MiniGrid 3.2.0 tables and the layout of jaxsoc's grid arrays.

A grid is ``uint8[H, W, NUM_CHANNELS]`` indexed ``[y, x]`` (row-major, y grows downwards). The first
three channels are minigrid's ``WorldObj.encode()`` triple, so ``grid[..., :3]`` of a visible cell is
exactly what minigrid writes into an observation. The remaining channels carry what ``encode()`` drops:
``CONTENTS`` packs the object inside a box (``pack_contents``; 0 for none) and ``OBJ_ID`` is a per-episode
object identity (0 for walls, empty cells and anonymous objects) that the BabyAI verifier needs.
"""

from __future__ import annotations

import numpy as np

# OBJECT_TO_IDX
UNSEEN, EMPTY, WALL, FLOOR, DOOR, KEY, BALL, BOX, GOAL, LAVA, AGENT = range(11)
OBJECT_NAMES = ("unseen", "empty", "wall", "floor", "door", "key", "ball", "box", "goal", "lava", "agent")
OBJECT_TO_IDX = {name: i for i, name in enumerate(OBJECT_NAMES)}

# COLOR_TO_IDX (minigrid's encoding order, not its alphabetical COLOR_NAMES order)
RED, GREEN, BLUE, PURPLE, YELLOW, GREY = range(6)
COLOR_NAMES = ("red", "green", "blue", "purple", "yellow", "grey")
COLOR_TO_IDX = {name: i for i, name in enumerate(COLOR_NAMES)}
NUM_COLORS = len(COLOR_NAMES)
COLOR_RGB = np.array(
    [[255, 0, 0], [0, 255, 0], [0, 0, 255], [112, 39, 195], [255, 255, 0], [100, 100, 100]], dtype=np.uint8
)

# STATE_TO_IDX (only doors use a non-zero state)
OPEN, CLOSED, LOCKED = range(3)
STATE_NAMES = ("open", "closed", "locked")

# Actions (minigrid.core.actions.Actions)
LEFT, RIGHT, FORWARD, PICKUP, DROP, TOGGLE, DONE = range(7)
ACTION_NAMES = ("left", "right", "forward", "pickup", "drop", "toggle", "done")
NUM_ACTIONS = len(ACTION_NAMES)

# Directions: 0 = +x (east), 1 = +y (south), 2 = -x (west), 3 = -y (north); vectors are (dx, dy).
DIR_TO_VEC = np.array([[1, 0], [0, 1], [-1, 0], [0, -1]], dtype=np.int32)

# Grid channels
TYPE, COLOR, STATE, CONTENTS, OBJ_ID = range(5)
NUM_CHANNELS = 5


def cell(obj_type: int, color: int = 0, state: int = 0, contents: int = 0, obj_id: int = 0) -> np.ndarray:
    """Returns one grid cell, ``uint8[NUM_CHANNELS]``."""
    return np.array([obj_type, color, state, contents, obj_id], dtype=np.uint8)


EMPTY_CELL = cell(EMPTY)
WALL_CELL = cell(WALL, GREY)


def pack_contents(obj_type: int, color: int) -> int:
    """Packs the (type, colour) of a box's content into the ``CONTENTS`` channel value (0 = empty box)."""
    return (obj_type << 3) | color
