# ruff: noqa: E501  (the catalogue table reads best one type per line)
"""EXCALIBUR's object catalogue, vocabularies, room types and the answer vocabulary (numpy only).

The object types are modelled on the supplementary's Table 4 (AI2-THOR types): affordances (pick-up-able,
surface, container, openable container), the range of the longest dimension in metres, the mass in kg (a range
for furniture), the salient colours an instance draws 1-2 of and the salient materials it draws 1-3 of. The OCR of
that table is partly garbled: where a row is unreadable or its colours/materials are empty, the values here are
reconstructions (marked ``# r``); Fridge and Pot are AI2-THOR types whose rows are missing or merged in the OCR.
The two shorter sorted dimensions are fixed fractions (``ASPECT``) of the longest one (a reconstruction: the table
gives only volumes and the longest size).

Room types and which furniture and items they hold (a ProcTHOR stand-in) are jaxsoc's reconstruction.
"""

from __future__ import annotations

import numpy as np

COLORS = (
    "black", "blue", "bluegreen", "bronze", "brown", "gold", "gray", "green", "orange", "pink", "red", "redorange",
    "silver", "tan", "violet", "white", "yellow", "yellowgreen", "yelloworange",
)  # fmt: skip
MATERIALS = (
    "ceramic", "fabric", "food", "glass", "leather", "metal", "organic", "paper", "plastic", "rubber", "soap",
    "sponge", "stone", "wax", "wood",
)  # fmt: skip
NUM_COLORS, NUM_MATERIALS = len(COLORS), len(MATERIALS)

# affordance flags
PICKUP, SURFACE, CONTAINER, OPENABLE, ELONGATED, FLOOR = 1, 2, 4, 8, 16, 32
FURNITURE = 0  # not a flag: furniture is whatever cannot be picked up (it fills a cell and blocks walking)

# name, flags, (longest dimension min, max) m, (mass min, max) kg, (mid/long, short/long), colours, materials
_F, _S = FURNITURE, PICKUP
_TABLE = (
    # -- furniture (one per cell, blocks walking) ------------------------------------------------------------
    ("Bed", SURFACE, (1.65, 2.52), (30.0, 40.0), (0.7, 0.3), "white gray blue brown tan", "fabric metal wood"),  # r
    ("Sofa", SURFACE, (1.55, 2.86), (104.0, 104.0), (0.45, 0.4), "gray brown blue red tan black", "fabric leather wood"),  # r
    ("DiningTable", SURFACE, (0.79, 2.81), (20.0, 85.0), (0.6, 0.35), "brown tan white black gray", "glass metal plastic wood"),  # r
    ("CoffeeTable", SURFACE, (0.57, 1.77), (11.0, 13.0), (0.6, 0.4), "brown black white tan", "glass metal wood"),  # r
    ("SideTable", SURFACE, (0.39, 1.83), (11.0, 11.0), (0.8, 0.6), "brown white black tan", "glass metal plastic wood"),  # r
    ("Desk", SURFACE, (0.83, 2.53), (34.0, 45.0), (0.5, 0.4), "brown white black gray", "metal plastic stone wood"),  # r
    ("CounterTop", SURFACE, (0.94, 3.07), (1.0, 1.0), (0.6, 0.3), "white gray black tan", "stone wood plastic"),  # r
    ("TVStand", SURFACE, (0.90, 1.90), (11.0, 11.0), (0.4, 0.3), "brown black white", "glass metal plastic wood"),  # r
    ("ShelvingUnit", SURFACE, (0.69, 2.21), (20.0, 22.0), (0.5, 0.3), "brown white black", "metal paper wood"),  # r
    ("Chair", SURFACE, (0.67, 1.24), (10.0, 15.0), (0.6, 0.5), "brown black white gray red", "fabric metal plastic wood"),  # r
    ("Ottoman", SURFACE, (0.77, 0.86), (10.0, 10.0), (0.8, 0.5), "brown red violet white", "fabric wood"),
    ("Stool", SURFACE, (0.45, 0.76), (3.18, 3.18), (0.6, 0.6), "brown black white gray", "metal plastic wood"),  # r
    ("DogBed", SURFACE, (0.73, 1.18), (0.98, 0.98), (0.8, 0.3), "brown gray red blue", "fabric"),  # r
    ("Dresser", CONTAINER | OPENABLE, (0.70, 2.58), (57.0, 57.0), (0.5, 0.4), "brown white tan", "metal wood"),  # r
    ("Cabinet", CONTAINER | OPENABLE, (0.85, 0.98), (1.0, 1.0), (0.6, 0.5), "white brown gray", "wood metal"),  # r
    ("Fridge", CONTAINER | OPENABLE, (1.50, 2.00), (60.0, 60.0), (0.45, 0.4), "white silver black gray", "metal plastic"),  # r
    ("LaundryHamper", CONTAINER | OPENABLE, (0.60, 0.88), (1.55, 1.55), (0.7, 0.6), "white brown gray blue", "fabric"),  # r
    ("Toilet", CONTAINER | OPENABLE, (1.04, 1.16), (1.0, 1.0), (0.6, 0.4), "white", "ceramic"),  # r
    ("WashingMachine", CONTAINER | OPENABLE, (0.96, 1.14), (1.0, 1.0), (0.7, 0.6), "white gray", "metal plastic"),  # r
    ("Sink", CONTAINER, (0.46, 1.37), (1.0, 1.0), (0.7, 0.4), "white gray silver", "ceramic metal stone"),  # r
    ("FloorLamp", 0, (1.19, 2.09), (1.0, 3.93), (0.3, 0.3), "black white gold silver", "fabric metal wood"),  # r
    ("HousePlant", 0, (0.13, 1.10), (3.0, 3.0), (0.6, 0.5), "green", "ceramic organic"),  # r
    # -- items (picked up; on furniture, in containers, on the floor where FLOOR) --------------------------------
    ("AlarmClock", _S, (0.11, 0.27), (0.80, 0.80), (0.6, 0.4), "black white red blue", "glass metal plastic"),  # r
    ("Apple", _S, (0.08, 0.15), (0.20, 0.20), (0.9, 0.9), "green orange red redorange yellow yellowgreen", "food"),
    ("BaseballBat", _S | ELONGATED | FLOOR, (0.43, 0.96), (0.90, 0.90), (0.1, 0.1), "black brown gray orange silver tan", "metal plastic wood"),
    ("BasketBall", _S | FLOOR, (0.24, 0.24), (0.60, 0.60), (1.0, 1.0), "orange", "rubber"),  # r
    ("Book", _S, (0.19, 0.43), (0.50, 0.50), (0.7, 0.15), "blue red green black white brown", "paper"),  # r
    ("Boots", _S | FLOOR, (0.52, 0.52), (0.70, 0.70), (0.5, 0.3), "black brown", "leather plastic"),  # r
    ("Bottle", _S, (0.25, 0.25), (0.20, 0.20), (0.3, 0.3), "green blue white", "glass"),  # r
    ("Bowl", _S | CONTAINER, (0.15, 0.25), (0.47, 0.47), (1.0, 0.4), "gray orange tan violet white", "ceramic glass plastic"),
    ("Box", _S | CONTAINER | FLOOR, (0.26, 0.69), (0.14, 0.50), (0.8, 0.6), "brown tan white", "paper"),
    ("Bread", _S, (0.22, 0.39), (0.30, 0.50), (0.5, 0.4), "brown tan white", "food"),  # r
    ("ButterKnife", _S | ELONGATED, (0.24, 0.27), (0.08, 0.08), (0.1, 0.02), "silver", "metal"),  # r
    ("CD", _S, (0.10, 0.10), (0.01, 0.01), (1.0, 0.01), "silver", "plastic"),  # r
    ("CellPhone", _S, (0.11, 0.18), (0.16, 0.16), (0.5, 0.1), "black blue orange red white", "glass metal plastic"),
    ("Cup", _S | CONTAINER, (0.10, 0.22), (0.40, 0.40), (0.8, 0.8), "white blue red gray", "ceramic glass paper plastic"),  # r
    ("DeskLamp", _S, (0.31, 0.85), (2.06, 2.06), (0.5, 0.5), "black white gold", "fabric metal"),  # r
    ("DishSponge", _S, (0.14, 0.14), (0.03, 0.03), (0.6, 0.3), "yellow green blue", "sponge"),  # r
    ("Dumbbell", _S | FLOOR, (0.33, 0.33), (4.54, 4.54), (0.4, 0.4), "black gray", "metal"),  # r
    ("Egg", _S, (0.06, 0.12), (0.05, 0.05), (0.8, 0.8), "brown tan white", "food"),
    ("Fork", _S | ELONGATED, (0.21, 0.25), (0.04, 0.04), (0.12, 0.03), "silver", "metal"),  # r
    ("GarbageCan", _S | CONTAINER | FLOOR, (0.38, 0.68), (0.70, 0.70), (0.8, 0.8), "black blue gold gray green red silver white", "metal plastic"),
    ("HandTowel", _S, (0.40, 0.40), (0.08, 0.08), (0.6, 0.05), "white", "fabric"),
    ("Kettle", _S, (0.21, 0.21), (0.80, 0.80), (0.9, 0.8), "silver black red", "metal plastic"),  # r
    ("KeyChain", _S, (0.13, 0.14), (0.08, 0.08), (0.4, 0.1), "silver gold", "metal plastic"),  # r
    ("Knife", _S | ELONGATED, (0.32, 0.34), (0.18, 0.18), (0.1, 0.02), "silver black", "metal plastic"),  # r
    ("Laptop", _S, (0.27, 0.51), (2.30, 2.30), (0.7, 0.05), "black blue gold silver", "glass metal plastic"),
    ("Lettuce", _S, (0.20, 0.27), (0.47, 0.47), (0.9, 0.8), "green yellowgreen", "food"),
    ("Mug", _S | CONTAINER, (0.11, 0.14), (1.00, 1.00), (0.8, 0.8), "white red blue black", "ceramic"),  # r
    ("Newspaper", _S, (0.23, 0.38), (0.20, 0.20), (0.7, 0.05), "white gray", "paper"),  # r
    ("Pan", _S | CONTAINER, (0.27, 0.46), (0.67, 0.67), (0.6, 0.2), "blue bronze gray orange red silver", "metal"),
    ("Pen", _S | ELONGATED, (0.14, 0.20), (0.01, 0.01), (0.08, 0.08), "black blue red", "metal plastic"),  # r
    ("Pencil", _S | ELONGATED, (0.09, 0.20), (0.01, 0.01), (0.05, 0.05), "yellow red", "wood"),  # r
    ("PepperShaker", _S, (0.10, 0.20), (0.14, 0.24), (0.5, 0.5), "black white silver", "glass metal"),  # r
    ("Pillow", _S, (0.33, 0.70), (0.70, 0.70), (0.7, 0.3), "black blue brown gray green orange red redorange tan violet white yellow", "fabric"),
    ("Plate", _S | SURFACE, (0.19, 0.29), (0.62, 0.62), (1.0, 0.1), "black blue gold gray white", "ceramic"),
    ("Plunger", _S | ELONGATED | FLOOR, (0.54, 0.54), (1.00, 1.00), (0.25, 0.25), "black bluegreen brown red", "rubber wood"),
    ("Pot", _S | CONTAINER, (0.25, 0.54), (0.57, 0.57), (0.7, 0.5), "black bronze gray silver", "metal"),
    ("Potato", _S, (0.08, 0.15), (0.18, 0.18), (0.7, 0.6), "brown gray redorange tan yelloworange", "food"),
    ("RemoteControl", _S, (0.19, 0.22), (0.15, 0.15), (0.25, 0.1), "black gray", "metal plastic"),  # r
    ("SaltShaker", _S, (0.10, 0.20), (0.40, 0.60), (0.5, 0.5), "white silver", "glass metal"),  # r
    ("ScrubBrush", _S, (0.48, 0.48), (0.19, 0.19), (0.3, 0.2), "blue green white", "plastic"),  # r
    ("SoapBar", _S, (0.09, 0.09), (0.11, 0.11), (0.6, 0.3), "white green pink", "soap"),  # r
    ("SoapBottle", _S, (0.17, 0.31), (0.40, 0.40), (0.4, 0.3), "white blue pink green", "glass metal plastic"),  # r
    ("Spatula", _S | ELONGATED, (0.30, 0.30), (0.06, 0.06), (0.25, 0.05), "black silver", "metal plastic"),  # r
    ("Spoon", _S | ELONGATED, (0.21, 0.21), (0.04, 0.04), (0.15, 0.05), "silver", "metal"),  # r
    ("Statue", _S, (0.27, 0.59), (1.00, 1.00), (0.5, 0.4), "black bronze brown gold gray green orange silver white", "metal stone"),
    ("TeddyBear", _S | FLOOR, (0.47, 0.47), (0.90, 0.90), (0.7, 0.5), "black brown tan white", "fabric"),
    ("TennisRacket", _S | ELONGATED | FLOOR, (0.54, 0.65), (0.31, 0.31), (0.4, 0.05), "black blue bronze green orange red silver tan white", "metal plastic"),
    ("ToiletPaper", _S, (0.12, 0.12), (0.20, 0.20), (1.0, 0.9), "white", "paper"),  # r
    ("Tomato", _S, (0.10, 0.15), (0.12, 0.12), (0.9, 0.8), "red", "food"),
    ("Towel", _S, (0.59, 0.61), (0.57, 0.57), (0.6, 0.05), "gray tan white", "fabric"),
    ("Vase", _S, (0.15, 0.29), (1.00, 1.00), (0.6, 0.6), "blue gold gray green red white yellow", "ceramic glass metal"),
    ("Watch", _S, (0.08, 0.08), (0.07, 0.07), (0.8, 0.2), "brown redorange silver white", "glass metal plastic"),
    ("WateringCan", _S | FLOOR, (0.27, 0.27), (1.00, 1.00), (0.6, 0.4), "green red blue", "plastic"),  # r
    ("WineBottle", _S, (0.33, 0.33), (1.20, 1.20), (0.25, 0.25), "green black brown", "glass"),  # r
)  # fmt: skip

TYPES = tuple(row[0] for row in _TABLE)
NUM_TYPES = len(TYPES)
TYPE = {name: i for i, name in enumerate(TYPES)}
FLAGS = np.array([row[1] for row in _TABLE], np.int32)
SIZE_RANGE = np.array([row[2] for row in _TABLE], np.float32)  # [T, 2] longest dimension (m)
MASS_RANGE = np.array([row[3] for row in _TABLE], np.float32)  # [T, 2] base mass (kg)
ASPECT = np.array([row[4] for row in _TABLE], np.float32)  # [T, 2] middle and shortest dimension / longest
MAX_TYPE_COLORS = max(len(row[5].split()) for row in _TABLE)
MAX_TYPE_MATERIALS = max(len(row[6].split()) for row in _TABLE)


def _palette(words: list[str], vocabulary: tuple[str, ...], width: int) -> np.ndarray:
    out = -np.ones(width, np.int32)
    out[: len(words)] = [vocabulary.index(w) for w in words]
    return out


#: ``int32[T, MAX_TYPE_COLORS]`` the salient colours a type's instances draw from (-1 pads)
TYPE_COLORS = np.stack([_palette(row[5].split(), COLORS, MAX_TYPE_COLORS) for row in _TABLE])
#: ``int32[T, MAX_TYPE_MATERIALS]`` the salient materials a type's instances draw from (-1 pads)
TYPE_MATERIALS = np.stack([_palette(row[6].split(), MATERIALS, MAX_TYPE_MATERIALS) for row in _TABLE])

IS_PICKUP = (FLAGS & PICKUP) != 0
IS_SURFACE = (FLAGS & SURFACE) != 0
IS_CONTAINER = (FLAGS & CONTAINER) != 0
IS_OPENABLE = (FLAGS & OPENABLE) != 0
IS_ELONGATED = (FLAGS & ELONGATED) != 0
ON_FLOOR = (FLAGS & FLOOR) != 0
IS_FURNITURE = ~IS_PICKUP
#: small receptacles an item can sit on or in (a plate, a bowl): the second level of nesting
IS_SMALL_RECEPTACLE = IS_PICKUP & (IS_SURFACE | IS_CONTAINER) & ~ON_FLOOR

# -- rooms ----------------------------------------------------------------------------------------------------
ROOM_TYPES = ("kitchen", "living_room", "bedroom", "bathroom")
NUM_ROOM_TYPES = len(ROOM_TYPES)
_ROOM_FURNITURE = {
    "kitchen": "Fridge CounterTop DiningTable Cabinet Sink Chair Stool",
    "living_room": "Sofa CoffeeTable TVStand SideTable ShelvingUnit FloorLamp HousePlant Ottoman Chair DogBed Cabinet",
    "bedroom": "Bed Dresser SideTable Desk Chair LaundryHamper ShelvingUnit FloorLamp",
    "bathroom": "Toilet Sink Cabinet LaundryHamper WashingMachine",
}
_ROOM_ITEMS = {
    "kitchen": "Apple Bread Bowl Plate Cup Mug Kettle Pan Pot Knife ButterKnife Fork Spoon Spatula SaltShaker "
    "PepperShaker DishSponge Tomato Potato Lettuce Egg WineBottle Bottle SoapBottle Vase GarbageCan",
    "living_room": "Book Newspaper RemoteControl Laptop CellPhone KeyChain Statue Vase Pillow Box TeddyBear Watch CD "
    "Bowl Plate WateringCan Cup DeskLamp",
    "bedroom": "Book AlarmClock CellPhone Laptop Pillow TeddyBear Watch KeyChain Pen Pencil CD BaseballBat "
    "BasketBall TennisRacket Dumbbell Boots Box DeskLamp Mug",
    "bathroom": "Towel HandTowel ToiletPaper SoapBar SoapBottle ScrubBrush Plunger DishSponge GarbageCan Cup",
}


def _type_mask(names: str) -> np.ndarray:
    mask = np.zeros(NUM_TYPES, bool)
    mask[[TYPE[n] for n in names.split()]] = True
    return mask


#: ``bool[ROOM_TYPES, T]`` the furniture a room of each type can hold
ROOM_FURNITURE = np.stack([_type_mask(_ROOM_FURNITURE[r]) for r in ROOM_TYPES])
#: ``bool[ROOM_TYPES, T]`` the items that can appear in a room of each type
ROOM_ITEMS = np.stack([_type_mask(_ROOM_ITEMS[r]) for r in ROOM_TYPES])

# -- relations (Table 6, less the two properties) and answers -------------------------------------------------
RELATIONS = (
    "contained_by", "adjacent_to", "on_top_of", "heavier_than", "lighter_than", "larger_than", "smaller_than",
    "longer_than", "shorter_than",
)  # fmt: skip
RELATION_TEXT = (
    "inside", "next to", "on top of", "heavier than", "lighter than", "larger than", "smaller than", "longer than",
    "shorter than",
)  # fmt: skip
NUM_RELATIONS = len(RELATIONS)
CONTAINED_BY, ADJACENT_TO, ON_TOP_OF, HEAVIER, LIGHTER, LARGER, SMALLER, LONGER, SHORTER = range(NUM_RELATIONS)

MAX_COUNT = 9  # count answers are 0..MAX_COUNT ("9" stands for 9 or more)
#: the answer vocabulary: yes, no, the counts, the colours, the materials, the object types
ANSWERS = ("yes", "no", *(str(i) for i in range(MAX_COUNT + 1)), *COLORS, *MATERIALS, *(t.lower() for t in TYPES))
NUM_ANSWERS = len(ANSWERS)
YES, NO = 0, 1
COUNT0 = 2
COLOR0 = COUNT0 + MAX_COUNT + 1
MATERIAL0 = COLOR0 + NUM_COLORS
TYPE0 = MATERIAL0 + NUM_MATERIALS
ANSWER_KINDS = ("yes/no", "count", "color", "material", "type")


def answer_kind(answer: int) -> str:
    """Returns the kind (``ANSWER_KINDS``) of answer id ``answer``."""
    if not 0 <= answer < NUM_ANSWERS:
        raise ValueError(f"answer id {answer} is outside 0..{NUM_ANSWERS - 1}")
    for kind, start in zip(ANSWER_KINDS[::-1], (TYPE0, MATERIAL0, COLOR0, COUNT0, 0)):
        if answer >= start:
            return kind
    raise AssertionError
