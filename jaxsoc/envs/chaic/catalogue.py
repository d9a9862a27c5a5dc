"""CHAIC's object catalogue, agents' abilities, success-probability constants, action durations and tasks.

Everything here is a constant of the benchmark, read from the original code (``UMass-Foundation-Model/CHAIC``
``ac18fcf``):

- **Objects**: the indoor target groups (fruit, bread, work, school; ``dataset/test_dataset/list.json``), their
  containers, the wheelchair task's obstacles, the fragile vase, the shopping task's 12 goods and 3 baskets
  (paper appendix G.1), the bike, and the 12 pieces of furniture with the masses of
  ``outdoor_furniture/mass_map.json``. Sizes (horizontal extent) and heights are those of the TDW models'
  bounding boxes, rounded; small objects weigh 1 (only furniture is ever too heavy).
- **Abilities** (``transport_challenge_multi_agent/agent_ability_info.py``): reach heights for picking up and
  putting on, strength, and the wheelchair/riding flags.
- **Success probabilities** ``exp(-delta / alpha) / beta`` for out-of-range actions (``pick_up.py``,
  ``wheelchair_pick_up.py``, ``put_on.py``, ``pick_up_furniture.py``) and the child's vase breaking.
- **Durations** in frames: TDW's are emergent from the Replicant animations, so these are calibrated (see
  ``DURATIONS``).
"""

from __future__ import annotations

import numpy as np

# -- object kinds -----------------------------------------------------------------------------------------
EMPTY, ITEM, CONTAINER, OBSTACLE, VASE, FURNITURE, BIKE = range(7)
KIND_NAMES = ("empty", "item", "container", "obstacle", "vase", "furniture", "bike")

# name, kind, horizontal size (m), own height (m), mass
_CATALOGUE = (
    ("empty", EMPTY, 0.0, 0.0, 0.0),
    # indoor food: fruit and bread
    ("apple", ITEM, 0.08, 0.08, 1.0),
    ("banana", ITEM, 0.18, 0.05, 1.0),
    ("orange", ITEM, 0.08, 0.08, 1.0),
    ("bread", ITEM, 0.25, 0.10, 1.0),
    ("burger", ITEM, 0.12, 0.09, 1.0),
    ("loafbread", ITEM, 0.28, 0.12, 1.0),
    # indoor stuff: work and school
    ("calculator", ITEM, 0.16, 0.03, 1.0),
    ("mouse", ITEM, 0.11, 0.04, 1.0),
    ("pen", ITEM, 0.14, 0.02, 1.0),
    ("lighter", ITEM, 0.06, 0.08, 1.0),
    ("key", ITEM, 0.07, 0.02, 1.0),
    ("purse", ITEM, 0.18, 0.10, 1.0),
    ("iphone", ITEM, 0.12, 0.01, 1.0),
    ("ipod", ITEM, 0.10, 0.01, 1.0),
    ("pencil", ITEM, 0.18, 0.01, 1.0),
    # containers (food: bowl, plate, tea tray; stuff: baskets; shopping: baskets)
    ("bowl", CONTAINER, 0.20, 0.08, 1.0),
    ("plate", CONTAINER, 0.25, 0.03, 1.0),
    ("teatray", CONTAINER, 0.45, 0.05, 1.0),
    ("basket", CONTAINER, 0.40, 0.25, 1.0),
    ("wicker_basket", CONTAINER, 0.40, 0.25, 1.0),
    ("wood_basket", CONTAINER, 0.45, 0.30, 1.0),
    # the wheelchair task's obstacles, the fragile vase
    ("fire_extinguisher", OBSTACLE, 0.35, 0.60, 1.0),
    ("trashbin", OBSTACLE, 0.45, 0.70, 1.0),
    ("vase", VASE, 0.20, 0.35, 1.0),
    # shopping goods
    ("grape", ITEM, 0.15, 0.10, 1.0),
    ("croissant", ITEM, 0.15, 0.06, 1.0),
    ("donut", ITEM, 0.10, 0.04, 1.0),
    ("cola", ITEM, 0.07, 0.12, 1.0),
    ("pepsi", ITEM, 0.07, 0.12, 1.0),
    ("sprite", ITEM, 0.07, 0.12, 1.0),
    ("fanta", ITEM, 0.07, 0.12, 1.0),
    ("plastic_basket", CONTAINER, 0.45, 0.30, 1.0),
    # the rider's bike (its basket holds 3)
    ("bike", BIKE, 1.70, 1.00, 15.0),
    # furniture (outdoor_furniture/mass_map.json)
    ("wood_shelving", FURNITURE, 0.9, 1.8, 50.0),
    ("microwave", FURNITURE, 0.5, 0.3, 400.0),
    ("sofa", FURNITURE, 2.0, 0.9, 700.0),
    ("piano", FURNITURE, 1.5, 1.2, 700.0),
    ("backpack", FURNITURE, 0.4, 0.5, 50.0),
    ("drawer", FURNITURE, 0.8, 1.0, 500.0),
    ("table", FURNITURE, 1.4, 0.75, 300.0),
    ("dishwasher", FURNITURE, 0.6, 0.85, 400.0),
    ("chair", FURNITURE, 0.5, 0.9, 120.0),
    ("printer", FURNITURE, 0.5, 0.3, 120.0),
    ("kettle", FURNITURE, 0.25, 0.25, 50.0),
    ("television", FURNITURE, 1.1, 0.7, 300.0),
)
CLASS_NAMES = tuple(row[0] for row in _CATALOGUE)
CLASS = {name: i for i, name in enumerate(CLASS_NAMES)}
NUM_CLASSES = len(CLASS_NAMES)
CLASS_KIND = np.array([row[1] for row in _CATALOGUE], np.int8)
CLASS_SIZE = np.array([row[2] for row in _CATALOGUE], np.float32)
CLASS_HEIGHT = np.array([row[3] for row in _CATALOGUE], np.float32)
CLASS_MASS = np.array([row[4] for row in _CATALOGUE], np.float32)

# target groups: indoor (scene_generate_indoor.py: a "balanced list" of len(names) + 4 instances per group)
INDOOR_GROUPS = {
    "fruit": ("apple", "banana", "orange"),
    "bread": ("bread", "burger", "loafbread"),
    "work": ("calculator", "mouse", "pen", "lighter", "key"),
    "school": ("purse", "iphone", "ipod", "pencil"),
}
FOOD_CONTAINERS = ("bowl", "plate", "teatray")
STUFF_CONTAINERS = ("basket", "wicker_basket", "basket")
OBSTACLES = ("fire_extinguisher", "trashbin")
SHOPPING_GROUPS = {
    "fruit": ("apple", "orange", "grape", "banana"),
    "baked": ("loafbread", "croissant", "burger", "donut"),
    "drink": ("cola", "pepsi", "sprite", "fanta"),
}
SHOPPING_CONTAINERS = ("wood_basket", "plastic_basket", "wicker_basket")
FURNITURE_NAMES = tuple(name for name, kind, *_ in _CATALOGUE if kind == FURNITURE)
CONTAINER_SLOTS = 3  # a container holds up to 3 objects (paper §3.3; the original pads ``contained`` to 3)

# -- abilities ----------------------------------------------------------------------------------------------
# name: pick-up heights [lo, hi], put-on heights [lo, hi] (m), strength, wheelchair, riding, moves per 0.5 m
# relative to walking (the original has no speed constant: the limping and bike-walking animations are slower)
_ABILITIES = (
    ("helper", (0.0, 3.0), (0.0, 3.0), 600.0, False, False, 1.0),
    ("normal", (0.0, 3.0), (0.0, 3.0), 600.0, False, False, 1.0),
    ("child", (0.0, 1.5), (0.0, 1.5), 100.0, False, False, 1.0),
    ("wheelchair", (0.25, 1.5), (0.25, 1.5), 500.0, True, False, 1.1),
    ("rider", (0.0, 3.0), (0.0, 3.0), 600.0, False, True, 1.0),
    ("frail", (0.0, 3.0), (0.0, 3.0), 100.0, False, False, 1.0),
    ("kid", (0.0, 1.2), (0.0, 1.2), 100.0, False, False, 1.0),  # the rider's child in the shopping task
)
ABILITY_NAMES = tuple(row[0] for row in _ABILITIES)
ABILITY = {name: i for i, name in enumerate(ABILITY_NAMES)}
PICK_RANGE = np.array([row[1] for row in _ABILITIES], np.float32)  # [abilities, 2]
PUT_RANGE = np.array([row[2] for row in _ABILITIES], np.float32)
STRENGTH = np.array([row[3] for row in _ABILITIES], np.float32)
WHEELCHAIR = np.array([row[4] for row in _ABILITIES], bool)
RIDING = np.array([row[5] for row in _ABILITIES], bool)
SLOWNESS = np.array([row[6] for row in _ABILITIES], np.float32)

# -- success probabilities: exp(-delta / alpha) / beta ------------------------------------------------------
PICK_ALPHA, PICK_BETA = 1.0, 2.0  # pick_up.py: exp(-delta) / 2
WHEELCHAIR_PICK_ALPHA, WHEELCHAIR_PICK_BETA = 0.5, 1.0  # wheelchair_pick_up.py: exp(-2 delta)
PUT_ALPHA, PUT_BETA = 1.0, 1.0  # put_on.py: exp(-delta); wheelchair_put_on.py: out of range always fails
FURNITURE_ALPHA = 50.0  # pick_up_furniture.py: exp(min(0, (strength - mass) / 50))
VASE_BREAK_HIGH, VASE_BREAK_LOW = 0.5, 0.25  # the child breaks a vase above / within her reach
REACH = 3.0  # move_to.py: an object farther than 3 m + half its size cannot be reached
ARRIVE = 0.7  # move_to.py: the walk to an object stops 0.7 m short of it
JOINT_LIFT_DIST = 1.5  # the other agent within this of a piece of furniture lifts with (always succeeds)
DROP_BEHIND = 2.5  # put_on.py: a failed put-on drops the object ~2.5 m behind the agent

# -- movement and durations (frames) ------------------------------------------------------------------------
MOVE_STEP = 0.5  # move forward, metres
TURN_STEP = 15  # degrees; headings are multiples of it
NUM_HEADINGS = 360 // TURN_STEP

#: Frames per action. TDW's are emergent from the Replicant's animations (target frame rate 250) and not in
#: the code. The interaction durations come from the paper's prompt example (figure 5: pick-ups start at frames
#: 62 and 134, a put-in at 198, the next pick-up at 290: a pick-up with its last short walk takes ~65-70 frames,
#: a put-in ~60-90). The walking durations are calibrated so that the rule-based agent alone reaches the
#: paper's w/o transport rate on the normal task (benchmarks/RESULTS.md, CHAIC section).
DURATIONS = {
    "move": 12,  # 0.5 m forward (scaled by the ability's SLOWNESS)
    "turn": 4,  # 15 degrees
    "pick": 45,  # the grasp, after the walk to the object (the walk costs "move" per 0.5 m)
    "put_in": 60,
    "put_on": 45,  # after the walk to the surface
    "dock": 30,  # the rider docks the bike before picking up or putting in
    "remove": 90,  # pick the obstacle up and put it aside, after the walk to it
    "wait": 10,
    "message": 10,
    "fail": 5,  # an action refused at once (nothing to pick, out of reach, hands full)
}

# -- tasks --------------------------------------------------------------------------------------------------
TASKS = (
    "normal",
    "high_target",
    "high_container",
    "high_goalplace",
    "low_target",
    "obstacle",
    "shopping",
    "furniture",
)
TASK = {name: i for i, name in enumerate(TASKS)}
#: each task's seed: what its training banks and recorded episodes fold into their random streams. Written out (not
#: a position in ``TASKS``) so that adding or reordering a task leaves every other task's episodes as they are; a
#: new task takes a new number
TASK_SEED = {
    "normal": 0,
    "high_target": 1,
    "high_container": 2,
    "high_goalplace": 3,
    "low_target": 4,
    "obstacle": 5,
    "shopping": 6,
    "furniture": 7,
}
if set(TASK_SEED) != set(TASKS) or len(set(TASK_SEED.values())) != len(TASK_SEED):
    raise ValueError(f"TASK_SEED must give every task of TASKS its own seed: {TASK_SEED}, {TASKS}")
#: the registered ids: ``CHAIC-<name>-v0`` (two agents) and ``CHAIC-<name>-Helper-v0`` (the helper's view)
TASK_IDS = {name: "".join(part.capitalize() for part in name.split("_")) for name in TASKS}
TASK_ABILITY = {
    "normal": "normal",
    "high_target": "child",
    "high_container": "child",
    "high_goalplace": "child",
    "low_target": "wheelchair",
    "obstacle": "wheelchair",
    "shopping": "rider",
    "furniture": "frail",
}
#: episode frame limits (scripts/*, challenge.py)
TASK_FRAMES = {name: (1500 if name == "furniture" else 3000) for name in TASKS}
#: the paper's transport rates (table 2; w/o, Random, RHP, Oracle)
PAPER_TR = {
    "normal": (0.53, 0.52, 0.64, 0.77),
    "high_target": (0.30, 0.27, 0.35, 0.49),
    "high_container": (0.37, 0.36, 0.45, 0.69),
    "high_goalplace": (0.28, 0.33, 0.35, 0.61),
    "low_target": (0.51, 0.50, 0.66, 0.82),
    "obstacle": (0.07, 0.21, 0.44, 0.60),
    "shopping": (0.37, 0.39, 0.49, 0.61),
    "furniture": (0.17, 0.48, 0.65, 0.76),
}
#: the paper's other helpers' transport rates: the LLM (GPT-4) + BM helper (table 2), and the learned helpers of
#: appendix E.3 (table 5: PPO "RL" and SmartHelp, each trained 10^4 steps per task; only the indoor half of
#: table 5 survives in the text jaxsoc has, so the other tasks are missing)
PAPER_HELPER_TR = {
    "llm_bm": dict(zip(TASKS, (0.65, 0.38, 0.49, 0.36, 0.70, 0.42, 0.58, 0.69))),
    "rl": {"normal": 0.45, "high_target": 0.26, "high_container": 0.28, "high_goalplace": 0.25},
    "smarthelp": {"normal": 0.46, "high_target": 0.24, "high_container": 0.26, "high_goalplace": 0.31},
}
