"""The 30 goal predicates of Watch-And-Help's five activities and how goals over them are sampled.

A goal is ``count int8[30]`` (how many instances of each predicate must hold) plus ``target int16[30]`` (the node
the predicate refers to: the chosen kitchen table, the fridge, the dishwasher, the living room's coffee table
or sofa; -1 for ``holds_book``). Goal counts follow the original's goal setter (``init_goal_base.py``): each
class of the activity's pool gets a count drawn uniformly in ``[min, max]``, redrawn until the total lies in
``[2, 6]`` (``[2, 4]`` for read_book, whose book count is exactly 1 and which adds ``holds_book`` and
``sit_sofa``).
"""

from __future__ import annotations

import numpy as np

from jaxsoc.envs.household import classes as C

#: predicate kinds
ON_KIND, INSIDE_KIND, HOLDS_KIND, SIT_KIND = 0, 1, 2, 3

_TABLE_OBJECTS = ("plate", "waterglass", "wineglass", "cutleryfork")
_GROCERIES = ("cupcake", "pancake", "poundcake", "pudding", "apple", "juice", "wine")
_SNACKS = ("cupcake", "pudding", "apple", "juice", "wine")

#: (name, kind, object class, target class), in the order of Watch-And-Help's predicate list
PREDICATES: tuple[tuple[str, int, str, str], ...] = (
    *((f"on_{o}_kitchentable", ON_KIND, o, "kitchentable") for o in _TABLE_OBJECTS),
    *((f"inside_{o}_fridge", INSIDE_KIND, o, "fridge") for o in _GROCERIES),
    *((f"on_{o}_kitchentable", ON_KIND, o, "kitchentable") for o in ("coffeepot", *_GROCERIES)),
    *((f"inside_{o}_dishwasher", INSIDE_KIND, o, "dishwasher") for o in _TABLE_OBJECTS),
    ("holds_book", HOLDS_KIND, "book", "none"),
    ("sit_sofa", SIT_KIND, "sofa", "sofa"),
    *((f"on_{o}_coffeetable", ON_KIND, o, "coffeetable") for o in _SNACKS),
)
# setup_table and prepare_food share on_X_kitchentable for nothing (their pools are disjoint), so the
# 30 names are distinct; prepare_food's list holds the groceries on the table.
PREDICATE_NAMES: tuple[str, ...] = tuple(p[0] for p in PREDICATES)
NUM_PREDICATES = len(PREDICATES)
PREDICATE = {name: i for i, name in enumerate(PREDICATE_NAMES)}
PRED_KIND = np.array([p[1] for p in PREDICATES], np.int8)
PRED_OBJECT = np.array([C.CLASS[p[2]] for p in PREDICATES], np.int16)
PRED_TARGET_CLASS = np.array([C.CLASS[p[3]] for p in PREDICATES], np.int16)

#: activity -> (predicate names, count range per predicate (min, max), total range)
_POOL = {"cupcake": 2, "pancake": 1, "poundcake": 1, "pudding": 2, "apple": 2, "juice": 1, "wine": 1}
ACTIVITIES: dict[str, tuple[tuple[tuple[str, int, int], ...], tuple[int, int]]] = {
    "setup_table": (tuple((f"on_{o}_kitchentable", 0, 2) for o in _TABLE_OBJECTS), (2, 6)),
    "put_fridge": (tuple((f"inside_{o}_fridge", 0, _POOL[o]) for o in _GROCERIES), (2, 6)),
    "prepare_food": (
        tuple((f"on_{o}_kitchentable", 0, 1 if o == "coffeepot" else _POOL[o]) for o in ("coffeepot", *_GROCERIES)),
        (2, 6),
    ),
    "put_dishwasher": (tuple((f"inside_{o}_dishwasher", 0, 2) for o in _TABLE_OBJECTS), (2, 6)),
    "read_book": (
        (("holds_book", 1, 1), ("sit_sofa", 1, 1), *((f"on_{o}_coffeetable", 0, _POOL[o]) for o in _SNACKS)),
        (2, 4),
    ),
}
ACTIVITY_NAMES: tuple[str, ...] = tuple(ACTIVITIES)
NUM_ACTIVITIES = len(ACTIVITIES)


def count_ranges() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Returns ``(low, high, total)``: ``int8[5, 30]`` each predicate's count range per activity (0, 0 outside
    the activity's pool) and ``int8[5, 2]`` the range of the total. The read_book total counts the snacks
    only (its book is fixed at 1 and ``holds_book``/``sit_sofa`` are added on top, as in the original)."""
    low = np.zeros((NUM_ACTIVITIES, NUM_PREDICATES), np.int8)
    high = np.zeros((NUM_ACTIVITIES, NUM_PREDICATES), np.int8)
    total = np.zeros((NUM_ACTIVITIES, 2), np.int8)
    for a, (preds, rng) in enumerate(ACTIVITIES.values()):
        for name, lo, hi in preds:
            low[a, PREDICATE[name]], high[a, PREDICATE[name]] = lo, hi
        total[a] = rng
    return low, high, total


def activity_masks() -> np.ndarray:
    """Returns ``bool[5, 30]``: the predicates each activity's goals use."""
    _, high, _ = count_ranges()
    return high > 0


def goal_text(count, target=None) -> str:
    """Returns a goal as the original writes it, e.g. ``"on_plate_kitchentable(31): 2, holds_book: 1"``."""
    parts = []
    for p, c in enumerate(np.asarray(count)):
        if c > 0:
            where = f"({int(np.asarray(target)[p])})" if target is not None and PRED_KIND[p] in (0, 1, 3) else ""
            parts.append(f"{PREDICATE_NAMES[p]}{where}: {int(c)}")
    return ", ".join(parts)
