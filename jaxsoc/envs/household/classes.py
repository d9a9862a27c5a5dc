"""The household's vocabulary: object classes, categories, property and state bits, relations, sizes.

Names follow VirtualHome (``kitchentable`` is the paper's "dinner table", ``cutleryfork`` its "fork").
Class 0 is the empty slot of the padded node arrays. Every per-class fact is a numpy table indexed by class
id (``CATEGORY``, ``PROPERTIES``, ``SIZE``, ``SIT_CAPACITY``, ``ENV_MAX``), so a node's facts are one gather.
"""

from __future__ import annotations

import numpy as np

#: VirtualHome's 23 property names; a node's ``properties`` is a bit mask over this list
PROPERTY_NAMES = [
    "SURFACES",
    "GRABBABLE",
    "SITTABLE",
    "LIEABLE",
    "HANGABLE",
    "DRINKABLE",
    "EATABLE",
    "RECIPIENT",
    "CUTTABLE",
    "POURABLE",
    "CAN_OPEN",
    "HAS_SWITCH",
    "READABLE",
    "LOOKABLE",
    "CONTAINERS",
    "CLOTHES",
    "PERSON",
    "BODY_PART",
    "COVER_OBJECT",
    "HAS_PLUG",
    "HAS_PAPER",
    "MOVABLE",
    "CREAM",
]
P = {name: 1 << i for i, name in enumerate(PROPERTY_NAMES)}
SURFACES, GRABBABLE, SITTABLE, CAN_OPEN, HAS_SWITCH, CONTAINERS = (
    P["SURFACES"],
    P["GRABBABLE"],
    P["SITTABLE"],
    P["CAN_OPEN"],
    P["HAS_SWITCH"],
    P["CONTAINERS"],
)

#: state bits of a node (VirtualHome's binary pairs; the bit clear is the default: CLOSED, OFF)
OPEN, ON = 1, 2
STATE_NAMES = {OPEN: "OPEN", ON: "ON"}

#: a node's relation to its parent
NO_PARENT, IN_ROOM, ON_TOP, INSIDE, HELD = 0, 1, 2, 3, 4
RELATION_NAMES = ("none", "in_room", "on", "inside", "held")

#: a node's relation to an observing character (the derived CLOSE / HOLDS / SITTING edges)
REL_NONE, REL_CLOSE, REL_HOLDS_RH, REL_HOLDS_LH, REL_SITTING_ON = 0, 1, 2, 3, 4

CATEGORIES = ("none", "Rooms", "Doors", "Furniture", "Appliances", "Electronics", "Props", "placable_objects")
CAT = {name: i for i, name in enumerate(CATEGORIES)}

_G = GRABBABLE | P["MOVABLE"]
_FOOD = _G | P["EATABLE"]
_DRINK = _G | P["DRINKABLE"] | P["POURABLE"]
_DISH = _G | P["RECIPIENT"]
_BOX = CONTAINERS | CAN_OPEN

# name, category, properties, footprint (x, z) in metres, sitting capacity, env_max_num (grabbables)
_TABLE: tuple[tuple[str, str, int, tuple[float, float], int, int], ...] = (
    ("none", "none", 0, (0.0, 0.0), 0, 0),
    # rooms and doors
    ("bathroom", "Rooms", 0, (0.0, 0.0), 0, 0),
    ("bedroom", "Rooms", 0, (0.0, 0.0), 0, 0),
    ("kitchen", "Rooms", 0, (0.0, 0.0), 0, 0),
    ("livingroom", "Rooms", 0, (0.0, 0.0), 0, 0),
    ("doorjamb", "Doors", 0, (0.9, 0.2), 0, 0),
    # furniture and appliances
    ("kitchentable", "Furniture", SURFACES | P["MOVABLE"], (1.8, 1.0), 0, 0),
    ("coffeetable", "Furniture", SURFACES | P["MOVABLE"], (1.1, 0.6), 0, 0),
    ("sofa", "Furniture", SITTABLE | SURFACES | P["LIEABLE"], (2.0, 0.9), 4, 0),
    ("bench", "Furniture", SITTABLE | SURFACES, (1.4, 0.5), 2, 0),
    ("chair", "Furniture", SITTABLE | SURFACES | P["MOVABLE"], (0.5, 0.5), 1, 0),
    ("bed", "Furniture", SITTABLE | SURFACES | P["LIEABLE"], (1.6, 2.0), 4, 0),
    ("desk", "Furniture", SURFACES | P["MOVABLE"], (1.2, 0.6), 0, 0),
    ("nightstand", "Furniture", SURFACES, (0.5, 0.45), 0, 0),
    ("kitchencounter", "Furniture", SURFACES, (1.6, 0.65), 0, 0),
    ("cabinet", "Furniture", SURFACES | _BOX, (1.0, 0.5), 0, 0),
    ("kitchencabinet", "Furniture", _BOX, (0.8, 0.5), 0, 0),
    ("bathroomcabinet", "Furniture", _BOX, (0.7, 0.35), 0, 0),
    ("toilet", "Furniture", SITTABLE, (0.45, 0.7), 1, 0),
    ("fridge", "Appliances", _BOX | HAS_SWITCH | P["HAS_PLUG"], (0.9, 0.75), 0, 0),
    ("dishwasher", "Appliances", _BOX | HAS_SWITCH | P["HAS_PLUG"], (0.65, 0.65), 0, 0),
    ("microwave", "Appliances", _BOX | HAS_SWITCH | P["HAS_PLUG"], (0.55, 0.4), 0, 0),
    ("stove", "Appliances", _BOX | HAS_SWITCH, (0.8, 0.65), 0, 0),
    ("tv", "Electronics", HAS_SWITCH | P["LOOKABLE"] | P["HAS_PLUG"], (1.3, 0.3), 0, 0),
    ("lamp", "Electronics", HAS_SWITCH, (0.4, 0.4), 0, 0),
    # grabbable objects of the tasks (env_max_num from the goal setter's pool)
    ("plate", "Props", _DISH, (0.26, 0.26), 0, 2),
    ("waterglass", "Props", _DISH, (0.09, 0.09), 0, 2),
    ("wineglass", "Props", _DISH, (0.09, 0.09), 0, 2),
    ("cutleryfork", "Props", _G, (0.2, 0.03), 0, 2),
    ("cupcake", "placable_objects", _FOOD, (0.08, 0.08), 0, 2),
    ("pancake", "placable_objects", _FOOD, (0.2, 0.2), 0, 1),
    ("poundcake", "placable_objects", _FOOD, (0.25, 0.12), 0, 1),
    ("pudding", "placable_objects", _FOOD, (0.1, 0.1), 0, 2),
    ("apple", "placable_objects", _FOOD | P["CUTTABLE"], (0.09, 0.09), 0, 2),
    ("juice", "placable_objects", _DRINK, (0.1, 0.1), 0, 1),
    ("wine", "placable_objects", _DRINK, (0.09, 0.09), 0, 1),
    ("coffeepot", "Props", _DISH | P["POURABLE"], (0.2, 0.15), 0, 1),
    ("book", "Props", _G | P["READABLE"] | P["HAS_PAPER"], (0.22, 0.16), 0, 3),
    ("remotecontrol", "Electronics", _G, (0.18, 0.06), 0, 1),
    ("whippedcream", "placable_objects", _FOOD | P["CREAM"], (0.08, 0.08), 0, 1),
)

CLASS_NAMES: tuple[str, ...] = tuple(row[0] for row in _TABLE)
CLASS = {name: i for i, name in enumerate(CLASS_NAMES)}
NUM_CLASSES = len(CLASS_NAMES)
CATEGORY = np.array([CAT[row[1]] for row in _TABLE], np.int8)
PROPERTIES = np.array([row[2] for row in _TABLE], np.int32)
SIZE = np.array([row[3] for row in _TABLE], np.float32)
SIT_CAPACITY = np.array([row[4] for row in _TABLE], np.int8)
ENV_MAX = np.array([row[5] for row in _TABLE], np.int8)

ROOM_CLASSES = ("bathroom", "bedroom", "kitchen", "livingroom")
GRABBABLE_CLASSES = tuple(name for name, *_ in _TABLE if PROPERTIES[CLASS[name]] & GRABBABLE)
FURNITURE_CLASSES = tuple(
    name for name in CLASS_NAMES if CATEGORY[CLASS[name]] in (CAT["Furniture"], CAT["Appliances"])
)

#: where objects start (``gen_data/vh_init.py``): INSIDE these containers or ON these surfaces, never on the floor
PLACEMENT = {
    "default": (
        ("fridge", "kitchencabinet", "cabinet", "microwave", "dishwasher", "stove"),
        ("cabinet", "coffeetable", "bench", "kitchentable"),
    ),
    "book": (("kitchencabinet", "cabinet"), ("cabinet", "bench", "nightstand", "kitchentable")),
}
PLACEMENT["remotecontrol"] = PLACEMENT["book"]


def placement_tables() -> tuple[np.ndarray, np.ndarray]:
    """Returns ``(inside, on)``: ``bool[NUM_CLASSES, NUM_CLASSES]``, whether an object of class ``i`` may start
    INSIDE / ON a node of class ``j``."""
    inside = np.zeros((NUM_CLASSES, NUM_CLASSES), bool)
    on = np.zeros((NUM_CLASSES, NUM_CLASSES), bool)
    for name in GRABBABLE_CLASSES:
        containers, surfaces = PLACEMENT.get(name, PLACEMENT["default"])
        inside[CLASS[name], [CLASS[c] for c in containers]] = True
        on[CLASS[name], [CLASS[s] for s in surfaces]] = True
    return inside, on


def property_names(mask: int) -> list[str]:
    """Returns the property names set in ``mask``."""
    return [name for i, name in enumerate(PROPERTY_NAMES) if int(mask) >> i & 1]
