"""CHAIC's scenes: 8 indoor floor plans with 3 furniture layouts each, the shopping street and the moving-house
yard, as host-side numpy arrays that fill a ``state.Scene``.

Indoor plans (the original's TDW floorplans ``1a``, ``1b``, ``4a``, ``4b`` for training and ``2a``, ``2b``,
``5a``, ``5c`` for the test sets; spec §2.3) are 6 to 8 axis-aligned rectangular rooms tiling a rectangular
footprint inside ``x in [-15, 15]``, ``z in [-7.5, 7.5]``. Rooms that share a wall are separated by it; a door is
a 1 m gap in a shared wall (``DOOR_WIDTH``), and the doors connect every room (a spanning tree plus one or two
loops). Each plan has 3 furniture layouts (``NUM_LAYOUTS``) laid out procedurally and deterministically from
the plan's room types (``ROOM_FURNITURE``): beds, cabinets, shelves and sofas stand 0.3 m from a wall, tables and
chairs anywhere in the room, never within 1.2 m of a door centre nor 0.6 m of each other, and the walkable floor
(0.25 m from walls and furniture) stays one connected piece that reaches every door and every piece. Every layout
has a bed (the usual goal place), 4 or 5 high places (cabinet and fridge tops above ``HIGH_PLACE`` = 1.5 m) and
at least 40 object slots on low surfaces besides one bed.

Outdoor scenes (paper appendix G) have one rectangular room with outer walls only:

- ``street`` (shopping): 32 m x 14 m, a road along x (``ROAD``), 6 shops (counters with top 0.9 m and 8 slots;
  ``SHOP_FURNITURE``), three on each side of the road, and the goal, a fire hydrant (top 0.4 m) in front of the
  bicycle agent's house (``HYDRANT``).
- ``yard`` (moving house): 24 m x 14 m, a house facade on the north wall, the place area in front of it
  (``PLACE_AREA``) where the furniture starts, and the goal, a truck (top 1.2 m, extent 2.5 m) ~10 m away
  (``TRUCK``).

``layout(plan, index)`` returns a cached ``Layout`` (the unpadded arrays, slots and candidate spots);
``scene(plan, index, goal)`` the padded ``state.Scene`` fields.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
from scipy import ndimage

from jaxsoc.envs.chaic import state as S
from jaxsoc.envs.chaic.floor_plans import ROOMS_AND_DOORS

# -- plans ----------------------------------------------------------------------------------------------------
TRAIN_PLANS = ("1a", "1b", "4a", "4b")
TEST_PLANS = ("2a", "2b", "5a", "5c")
INDOOR_PLANS = TRAIN_PLANS + TEST_PLANS
OUTDOOR_PLANS = ("street", "yard")
PLANS = INDOOR_PLANS + OUTDOOR_PLANS
PLAN = {name: i for i, name in enumerate(PLANS)}
NUM_LAYOUTS = 3  # furniture layouts of an indoor plan (an outdoor scene has one, layout 0)

DOOR_WIDTH = 1.0  # a door is a gap of this width in a shared wall
DOOR_CLEARANCE = 1.2  # no furniture within this of a door centre
WALL_GAP = 0.3  # furniture stands at least this far from walls
FURNITURE_GAP = 0.6  # and this far from other furniture
WALK_CLEARANCE = 0.25  # the walkable floor: this far from walls and furniture (connectivity check)
AGENT_CLEARANCE = 0.5  # agents start this far from walls and furniture
FLOOR_CLEARANCE = 0.4  # objects on the floor lie this far from walls
HIGH_PLACE = 1.5  # a surface above this is a "high place"
FLOOR_Y = 0.1  # objects on the floor rest at this height (the original's y = 0.1): top = 0.1 + own height
GRID = 0.125  # cell size of the walkability grid (the original's memory map cell)

# -- furniture classes ------------------------------------------------------------------------------------------
# name, object slots on its top, default (size_x, size_z), top height
_FURNITURE = (
    ("none", 0, (0.0, 0.0), 0.0),
    ("table", 3, (1.4, 0.8), 0.75),
    ("coffee_table", 3, (1.1, 0.6), 0.45),
    ("sofa", 2, (2.0, 0.9), 0.45),
    ("chair", 2, (0.5, 0.5), 0.45),
    ("bed", 2, (2.0, 1.5), 0.6),
    ("shelf", 2, (1.0, 0.4), 1.0),
    ("cabinet", 2, (1.0, 0.55), 1.8),  # top drawn in [1.6, 2.0]
    ("fridge", 2, (0.8, 0.7), 1.9),  # top drawn in [1.8, 2.0]
    ("counter", 8, (3.0, 0.8), 0.9),  # a shop's counter
    ("house", 0, (5.0, 2.0), 4.0),  # an outdoor house facade
    ("truck", 0, (2.5, 2.2), 1.2),  # the moving-house goal: its loading bed
    ("fire_hydrant", 0, (0.3, 0.3), 0.4),  # the shopping goal
)
FURNITURE_CLASSES = tuple(row[0] for row in _FURNITURE)
FURNITURE = {name: i for i, name in enumerate(FURNITURE_CLASSES)}
FURNITURE_SLOTS = np.array([row[1] for row in _FURNITURE], np.int32)
FURNITURE_SIZE = np.array([row[2] for row in _FURNITURE], np.float32)
FURNITURE_TOP = np.array([row[3] for row in _FURNITURE], np.float32)
HIGH_CLASSES = (FURNITURE["cabinet"], FURNITURE["fridge"])
_AGAINST_WALL = {"sofa", "bed", "shelf", "cabinet", "fridge"}

#: per room type: the pieces it always has, and those added to reach the slot and high-place targets
ROOM_FURNITURE = {
    "living": (("sofa", "coffee_table"), ("chair", "shelf", "table", "sofa", "cabinet")),
    "kitchen": (("fridge", "table", "chair"), ("chair", "shelf", "cabinet", "table")),
    "dining": (("table", "chair"), ("chair", "shelf", "table", "cabinet")),
    "bedroom": (("bed",), ("cabinet", "table", "chair", "shelf")),
    "office": (("table", "chair"), ("shelf", "cabinet", "chair", "table")),
    "bathroom": (("shelf",), ("cabinet", "shelf")),
    "hall": ((), ("shelf", "table", "chair")),
}


# -- outdoor scenes ---------------------------------------------------------------------------------------------
STREET = (-16.0, -7.0, 16.0, 7.0)
ROAD = (-16.0, -1.5, 16.0, 1.5)  # (xmin, zmin, xmax, zmax): the road along x
SHOP_CENTRES = ((-12.0, 3.2), (-5.0, 3.2), (2.0, 3.2), (-12.0, -3.2), (-5.0, -3.2), (2.0, -3.2))
BIKE_HOUSE = (11.0, 5.5, 5.0, 2.0)  # (x, z, size_x, size_z) of the bicycle agent's house
HYDRANT = (11.0, 3.3)  # the shopping goal, in front of the house
SHOP_FURNITURE = tuple(range(len(SHOP_CENTRES)))  # the counters are the street's furniture 0..5
YARD = (-12.0, -7.0, 12.0, 7.0)
YARD_HOUSE = (-6.0, 5.6, 10.0, 2.0)
PLACE_AREA = (-9.5, 0.0, -2.5, 3.6)  # (xmin, zmin, xmax, zmax): where the furniture starts
TRUCK = (4.5, 1.8)  # the moving-house goal, ~10 m from the place area's centre
AGENT_NEAR_AREA = 2.5  # yard: agents start within this of the place area


@dataclasses.dataclass(frozen=True, eq=False)
class Layout:
    """One scene's static arrays (unpadded numpy).

    - ``rooms`` float32[R, 4] ``(xmin, zmin, xmax, zmax)``; ``room_types`` the rooms' types.
    - ``walls`` float32[W, 4] segments ``(x0, z0, x1, z1)``; ``doors`` float32[D, 2] door centres;
      ``door_rooms`` int8[D, 2].
    - ``furniture`` float32[F, 5] ``(x, z, size_x, size_z, top)``; ``furniture_cls`` int8[F]
      (``FURNITURE_CLASSES``).
    - ``slots`` float32[M, 4] object spots on furniture ``(x, z, top height, furniture index)``.
    - ``agent_spots`` float32[A, 2]: walkable points (in the main walkable component) at least
      ``AGENT_CLEARANCE`` from walls and furniture and 1 m from door centres, where agents may start.
    - ``floor_spots`` float32[B, 3] ``(x, z, room)``: walkable floor points at least ``FLOOR_CLEARANCE`` from
      walls, 0.3 m from furniture and ``DOOR_CLEARANCE`` from door centres (indoor; empty outdoors).
    - ``goal`` int: the default goal furniture (the first bed; the hydrant; the truck).
    """

    plan: str
    index: int
    outdoor: bool
    rooms: np.ndarray
    room_types: tuple[str, ...]
    walls: np.ndarray
    doors: np.ndarray
    door_rooms: np.ndarray
    furniture: np.ndarray
    furniture_cls: np.ndarray
    slots: np.ndarray
    agent_spots: np.ndarray
    floor_spots: np.ndarray
    goal: int

    def high_places(self) -> np.ndarray:
        """Returns ``int64[H]``: the furniture indices of high places (cabinet/fridge tops > ``HIGH_PLACE``)."""
        high = np.isin(self.furniture_cls, HIGH_CLASSES) & (self.furniture[:, 4] > HIGH_PLACE)
        return np.flatnonzero(high)

    def of_class(self, name: str) -> np.ndarray:
        """Returns ``int64[K]``: the furniture indices of class ``name``."""
        return np.flatnonzero(self.furniture_cls == FURNITURE[name])


def check_plan(plan: str) -> None:
    """Raises ``ValueError`` for an unknown plan name."""
    if plan not in PLAN:
        raise ValueError(f"unknown CHAIC plan {plan!r}; choose from {list(PLANS)}")


# -- geometry helpers ---------------------------------------------------------------------------------------------


def _segment_distance(points: np.ndarray, walls: np.ndarray) -> np.ndarray:
    """Returns float32[N]: each point's distance to the nearest wall segment (inf without walls)."""
    points = np.asarray(points, np.float32)
    best = np.full(len(points), np.inf, np.float32)
    for x0, z0, x1, z1 in np.asarray(walls, np.float32):
        dx, dz = x1 - x0, z1 - z0
        px, pz = points[:, 0] - x0, points[:, 1] - z0
        t = np.clip((px * dx + pz * dz) / max(dx * dx + dz * dz, 1e-9), 0.0, 1.0)
        np.minimum(best, np.hypot(px - t * dx, pz - t * dz), out=best)
    return best


def rect_distance(points: np.ndarray, rects: np.ndarray) -> np.ndarray:
    """Returns float[N, F]: distances from points ``[N, 2]`` to rectangles ``[F, >=4]`` ``(x, z, size_x, size_z)``
    (0 inside)."""
    dx = np.maximum(np.abs(points[:, None, 0] - rects[None, :, 0]) - rects[None, :, 2] / 2, 0.0)
    dz = np.maximum(np.abs(points[:, None, 1] - rects[None, :, 1]) - rects[None, :, 3] / 2, 0.0)
    return np.hypot(dx, dz)


def _rect_gap(a: np.ndarray, b: np.ndarray) -> float:
    """Returns the distance between two rectangles ``(x, z, size_x, size_z)`` (0 when they overlap)."""
    dx = max(abs(a[0] - b[0]) - (a[2] + b[2]) / 2, 0.0)
    dz = max(abs(a[1] - b[1]) - (a[3] + b[3]) / 2, 0.0)
    return float(np.hypot(dx, dz))


def _shared_edge(a, b) -> tuple[int, float, float, float] | None:
    """Returns ``(axis, line, lo, hi)`` of the wall rooms ``a`` and ``b`` share (axis 0: the line x = line with
    z in [lo, hi]; axis 1: z = line with x in [lo, hi]), or None."""
    for axis in (0, 1):
        lo_i, hi_i = (1, 3) if axis == 0 else (0, 2)
        for line in {a[axis + 2], a[axis]} & {b[axis], b[axis + 2]}:
            if (line == a[axis + 2] and line == b[axis]) or (line == a[axis] and line == b[axis + 2]):
                lo, hi = max(a[lo_i], b[lo_i]), min(a[hi_i], b[hi_i])
                if hi - lo > 1e-6:
                    return axis, float(line), float(lo), float(hi)
    return None


def _walls_and_doors(rooms: np.ndarray, doors: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Returns ``(walls float32[W, 4], door centres float32[D, 2], door_rooms int8[D, 2])`` for rooms tiling a
    rectangle: the footprint's 4 outer walls and every shared wall, split around 1 m door gaps."""
    x0, z0 = rooms[:, 0].min(), rooms[:, 1].min()
    x1, z1 = rooms[:, 2].max(), rooms[:, 3].max()
    walls = [(x0, z0, x1, z0), (x1, z0, x1, z1), (x1, z1, x0, z1), (x0, z1, x0, z0)]
    gaps: dict[tuple[int, int], list[float]] = {}
    centres, pairs = [], []
    for a, b, t in doors:
        edge = _shared_edge(rooms[a], rooms[b])
        if edge is None:
            raise AssertionError(f"rooms {a} and {b} share no wall")
        axis, line, lo, hi = edge
        margin = DOOR_WIDTH / 2 + 0.3
        if hi - lo < 2 * margin:
            raise AssertionError(f"the wall between rooms {a} and {b} is too short for a door")
        c = lo + margin + t * (hi - lo - 2 * margin)
        gaps.setdefault((min(a, b), max(a, b)), []).append(c)
        centres.append((line, c) if axis == 0 else (c, line))
        pairs.append((a, b))
    for i in range(len(rooms)):
        for j in range(i + 1, len(rooms)):
            edge = _shared_edge(rooms[i], rooms[j])
            if edge is None:
                continue
            axis, line, lo, hi = edge
            cuts = [lo]
            for c in sorted(gaps.get((i, j), [])):
                cuts += [c - DOOR_WIDTH / 2, c + DOOR_WIDTH / 2]
            cuts.append(hi)
            for s, e in zip(cuts[::2], cuts[1::2]):
                if e - s > 1e-6:
                    walls.append((line, s, line, e) if axis == 0 else (s, line, e, line))
    return (
        np.array(walls, np.float32),
        np.array(centres, np.float32).reshape(-1, 2),
        np.array(pairs, np.int8).reshape(-1, 2),
    )


def _slots_of(furniture: np.ndarray, furniture_cls: np.ndarray) -> np.ndarray:
    """Returns float32[M, 4] ``(x, z, top, furniture index)``: each piece's slots spread over its top (one row
    along the long side; two rows for more than 4 slots)."""
    out = []
    for f, (x, z, sx, sz, top) in enumerate(furniture):
        n = int(FURNITURE_SLOTS[furniture_cls[f]])
        if n == 0:
            continue
        rows = 2 if n > 4 else 1
        per_row = -(-n // rows)
        long_x = sx >= sz
        length, depth = (sx, sz) if long_x else (sz, sx)
        for k in range(n):
            r, c = divmod(k, per_row)
            u = (c + 0.5) / per_row - 0.5
            v = 0.0 if rows == 1 else (r + 0.5) / rows - 0.5
            du, dv = u * length * 0.8, v * depth * 0.6
            out.append((x + du, z + dv, top, f) if long_x else (x + dv, z + du, top, f))
    return np.array(out, np.float32).reshape(-1, 4)


def _grid(rooms: np.ndarray) -> tuple[np.ndarray, tuple[int, int]]:
    """Returns float32[N, 2]: the centres of the ``GRID`` cells covering the rooms' bounding box (row-major,
    x fastest)."""
    x0, z0 = rooms[:, 0].min(), rooms[:, 1].min()
    x1, z1 = rooms[:, 2].max(), rooms[:, 3].max()
    xs = np.arange(x0 + GRID / 2, x1, GRID)
    zs = np.arange(z0 + GRID / 2, z1, GRID)
    gx, gz = np.meshgrid(xs, zs)
    return np.stack([gx.ravel(), gz.ravel()], -1).astype(np.float32), (len(zs), len(xs))


def _room_index(points: np.ndarray, rooms: np.ndarray) -> np.ndarray:
    """Returns int64[N]: the room containing each point (-1 for none)."""
    inside = (
        (points[:, None, 0] >= rooms[None, :, 0])
        & (points[:, None, 0] <= rooms[None, :, 2])
        & (points[:, None, 1] >= rooms[None, :, 1])
        & (points[:, None, 1] <= rooms[None, :, 3])
    )
    return np.where(inside.any(1), inside.argmax(1), -1)


def _spots(rooms, walls, doors, furniture, extra_ok=None) -> tuple[np.ndarray, np.ndarray, bool]:
    """Returns ``(agent spots float32[A, 2], floor spots float32[B, 3], connected)``: candidate start points on
    the walkability grid's main component, and whether that component reaches every door and every piece of
    furniture and covers every room."""
    points, shape = _grid(rooms)
    wall_d = _segment_distance(points, walls)
    furn_d = rect_distance(points, furniture).min(1) if len(furniture) else np.full(len(points), np.inf)
    door_d = np.linalg.norm(points[:, None] - doors[None], axis=-1).min(1) if len(doors) else np.inf
    walkable = (wall_d >= WALK_CLEARANCE) & (furn_d >= WALK_CLEARANCE)
    labels, count = ndimage.label(walkable.reshape(shape))
    labels = labels.ravel()
    if count == 0:
        return np.zeros((0, 2), np.float32), np.zeros((0, 3), np.float32), False
    main = np.bincount(labels[labels > 0]).argmax()
    in_main = labels == main
    connected = True
    for d in doors:
        near = np.linalg.norm(points - d, axis=-1) < 0.2
        connected &= bool(in_main[near].any())
    room = _room_index(points, rooms)
    for r in range(len(rooms)):
        connected &= bool((in_main & (room == r)).sum() > 16)
    if len(furniture):
        reach = rect_distance(points[in_main], furniture).min(0) if in_main.any() else np.full(len(furniture), 9.0)
        connected &= bool((reach < 0.6).all())
    margin = 0.1  # spots are jittered by up to GRID / 2 on each axis
    agent = in_main & (wall_d >= AGENT_CLEARANCE + margin) & (furn_d >= AGENT_CLEARANCE + margin) & (door_d >= 1.0)
    if extra_ok is not None:
        agent &= extra_ok(points)
    floor = in_main & (wall_d >= FLOOR_CLEARANCE + margin) & (furn_d >= 0.3 + margin) & (door_d >= DOOR_CLEARANCE)
    floor_spots = np.concatenate([points[floor], room[floor, None].astype(np.float32)], 1)
    return points[agent], floor_spots.astype(np.float32), connected


# -- indoor layouts -----------------------------------------------------------------------------------------------


def _piece(rng: np.random.Generator, name: str) -> tuple[float, float, float]:
    """Returns ``(long side, short side, top)`` of a new piece of class ``name`` (small random variations)."""
    sx, sz = FURNITURE_SIZE[FURNITURE[name]]
    top = float(FURNITURE_TOP[FURNITURE[name]])
    if name == "cabinet":
        top = round(float(rng.uniform(1.6, 2.0)) / 0.05) * 0.05
    elif name == "fridge":
        top = round(float(rng.uniform(1.8, 2.0)) / 0.05) * 0.05
    elif name in ("table", "coffee_table", "bed", "sofa", "shelf"):
        scale = float(rng.uniform(0.9, 1.1))
        sx, sz = sx * scale, sz * (1.0 if name == "shelf" else scale)
    return round(float(sx), 2), round(float(sz), 2), top


def _place(rng, name, room, doors, placed, tries: int = 40) -> tuple[float, float, float, float, float] | None:
    """Returns a piece ``(x, z, size_x, size_z, top)`` of class ``name`` placed in ``room`` (against a wall for
    ``_AGAINST_WALL`` classes) clear of walls, doors and ``placed`` pieces, or None when none fits."""
    long, short, top = _piece(rng, name)
    xmin, zmin, xmax, zmax = room
    for _ in range(tries):
        if name in _AGAINST_WALL:
            side = int(rng.integers(4))
            along_x = side in (0, 1)  # south / north walls: the long side along x
            sx, sz = (long, short) if along_x else (short, long)
            if side == 0:
                z = zmin + WALL_GAP + sz / 2
            elif side == 1:
                z = zmax - WALL_GAP - sz / 2
            elif side == 2:
                x = xmin + WALL_GAP + sx / 2
            else:
                x = xmax - WALL_GAP - sx / 2
            if along_x:
                lo, hi = xmin + WALL_GAP + sx / 2, xmax - WALL_GAP - sx / 2
                if hi < lo:
                    continue
                x = float(rng.uniform(lo, hi))
            else:
                lo, hi = zmin + WALL_GAP + sz / 2, zmax - WALL_GAP - sz / 2
                if hi < lo:
                    continue
                z = float(rng.uniform(lo, hi))
        else:
            sx, sz = (long, short) if rng.random() < 0.5 else (short, long)
            lox, hix = xmin + WALL_GAP + sx / 2, xmax - WALL_GAP - sx / 2
            loz, hiz = zmin + WALL_GAP + sz / 2, zmax - WALL_GAP - sz / 2
            if hix < lox or hiz < loz:
                continue
            x, z = float(rng.uniform(lox, hix)), float(rng.uniform(loz, hiz))
        rect = np.array([x, z, sx, sz], np.float64)
        if len(doors) and rect_distance(doors, rect[None]).min() < DOOR_CLEARANCE:
            continue
        if any(_rect_gap(rect, p) < FURNITURE_GAP for p in placed):
            continue
        return (rect[0], rect[1], sx, sz, top)
    return None


def _low_slots(furniture: np.ndarray, cls: np.ndarray) -> int:
    """Returns the slots on low surfaces, leaving out one bed's (the goal place)."""
    low = furniture[:, 4] <= HIGH_PLACE
    slots = int(FURNITURE_SLOTS[cls][low].sum())
    return slots - (int(FURNITURE_SLOTS[FURNITURE["bed"]]) if (cls == FURNITURE["bed"]).any() else 0)


def _indoor_layout(plan: str, index: int) -> Layout:
    spec_rooms, spec_doors = ROOMS_AND_DOORS[plan]
    rooms = np.array([r[:4] for r in spec_rooms], np.float32)
    types = tuple(r[4] for r in spec_rooms)
    walls, doors, door_rooms = _walls_and_doors(rooms, spec_doors)
    for attempt in range(200):
        rng = np.random.default_rng((PLAN[plan], index, attempt))
        n_high = int(rng.integers(4, 6))
        low_target = 40 + int(rng.integers(0, 6))
        pieces: list[tuple] = []
        classes: list[int] = []

        def add(name: str, r: int, pieces=pieces, classes=classes, rng=rng) -> bool:
            if len(pieces) >= S.MAX_FURNITURE:
                return False
            p = _place(rng, name, rooms[r], doors, [q[:4] for q in pieces])
            if p is None:
                return False
            pieces.append(p)
            classes.append(FURNITURE[name])
            return True

        ok = all(add(name, r) for r, t in enumerate(types) for name in ROOM_FURNITURE[t][0])
        if not ok:
            continue
        for _ in range(300):
            cls = np.array(classes, np.int8)
            furn = np.array(pieces, np.float32)
            high = int(np.isin(cls, HIGH_CLASSES).sum())
            if high >= n_high and _low_slots(furn, cls) >= low_target:
                break
            r = int(rng.integers(len(rooms)))
            options = ROOM_FURNITURE[types[r]][1]
            if high < n_high:
                wanted = [o for o in options if FURNITURE[o] in HIGH_CLASSES]
            else:
                wanted = [o for o in options if FURNITURE[o] not in HIGH_CLASSES]
            if wanted:
                add(wanted[int(rng.integers(len(wanted)))], r)
        cls = np.array(classes, np.int8)
        furn = np.array(pieces, np.float32)
        if int(np.isin(cls, HIGH_CLASSES).sum()) < 4 or _low_slots(furn, cls) < 40 or len(pieces) > S.MAX_FURNITURE:
            continue
        agent_spots, floor_spots, connected = _spots(rooms, walls, doors, furn)
        if not connected or len(agent_spots) < 50:
            continue
        goal = int(np.flatnonzero(cls == FURNITURE["bed"])[0])
        return Layout(
            plan=plan,
            index=index,
            outdoor=False,
            rooms=rooms,
            room_types=types,
            walls=walls,
            doors=doors,
            door_rooms=door_rooms,
            furniture=furn,
            furniture_cls=cls,
            slots=_slots_of(furn, cls),
            agent_spots=agent_spots,
            floor_spots=floor_spots,
            goal=goal,
        )
    raise RuntimeError(f"no furniture layout {index} fits plan {plan}")


# -- outdoor scenes -----------------------------------------------------------------------------------------------


def _outer_walls(box) -> np.ndarray:
    x0, z0, x1, z1 = box
    return np.array([(x0, z0, x1, z0), (x1, z0, x1, z1), (x1, z1, x0, z1), (x0, z1, x0, z0)], np.float32)


def _outdoor_layout(plan: str) -> Layout:
    if plan == "street":
        box = STREET
        size, top = FURNITURE_SIZE[FURNITURE["counter"]], FURNITURE_TOP[FURNITURE["counter"]]
        pieces = [(x, z, size[0], size[1], top) for x, z in SHOP_CENTRES]
        classes = [FURNITURE["counter"]] * len(SHOP_CENTRES)
        pieces.append((*BIKE_HOUSE, FURNITURE_TOP[FURNITURE["house"]]))
        classes.append(FURNITURE["house"])
        hydrant = FURNITURE["fire_hydrant"]
        pieces.append((*HYDRANT, *FURNITURE_SIZE[hydrant], FURNITURE_TOP[hydrant]))
        classes.append(hydrant)
        extra_ok = None
    else:
        box = YARD
        pieces = [(*YARD_HOUSE, FURNITURE_TOP[FURNITURE["house"]])]
        classes = [FURNITURE["house"]]
        truck = FURNITURE["truck"]
        pieces.append((*TRUCK, *FURNITURE_SIZE[truck], FURNITURE_TOP[truck]))
        classes.append(truck)
        ax0, az0, ax1, az1 = PLACE_AREA
        area = np.array([[(ax0 + ax1) / 2, (az0 + az1) / 2, ax1 - ax0, az1 - az0]], np.float32)

        def extra_ok(points: np.ndarray) -> np.ndarray:
            d = rect_distance(points, area)[:, 0]
            return (d >= 0.3) & (d <= AGENT_NEAR_AREA)

    rooms = np.array([box], np.float32)
    walls = _outer_walls(box)
    furn = np.array(pieces, np.float32)
    cls = np.array(classes, np.int8)
    doors = np.zeros((0, 2), np.float32)
    agent_spots, _, connected = _spots(rooms, walls, doors, furn, extra_ok)
    assert connected and len(agent_spots) > 50, plan
    return Layout(
        plan=plan,
        index=0,
        outdoor=True,
        rooms=rooms,
        room_types=(plan,),
        walls=walls,
        doors=doors,
        door_rooms=np.zeros((0, 2), np.int8),
        furniture=furn,
        furniture_cls=cls,
        slots=_slots_of(furn, cls),
        agent_spots=agent_spots,
        floor_spots=np.zeros((0, 3), np.float32),
        goal=len(pieces) - 1,
    )


# -- public accessors ---------------------------------------------------------------------------------------------


def num_layouts(plan: str) -> int:
    """Returns the number of furniture layouts of ``plan`` (3 indoor, 1 outdoor)."""
    check_plan(plan)
    return 1 if plan in OUTDOOR_PLANS else NUM_LAYOUTS


@functools.lru_cache(maxsize=64)
def layout(plan: str, index: int = 0) -> Layout:
    """Returns the ``Layout`` of furniture layout ``index`` of ``plan`` (built once per process,
    deterministic)."""
    check_plan(plan)
    if not 0 <= index < num_layouts(plan):
        raise ValueError(f"plan {plan!r} has layouts 0..{num_layouts(plan) - 1}, not {index}")
    return _outdoor_layout(plan) if plan in OUTDOOR_PLANS else _indoor_layout(plan, index)


def goal_fields(lay: Layout, furniture: int) -> tuple[np.ndarray, np.float32, np.float32]:
    """Returns ``(goal_pos float32[2], goal_height float32, goal_extent float32)`` of furniture piece
    ``furniture`` as the goal place: its centre, top and largest horizontal extent."""
    x, z, sx, sz, top = lay.furniture[furniture]
    return np.array([x, z], np.float32), np.float32(top), np.float32(max(sx, sz))


def _pad(a: np.ndarray, n: int, fill=0) -> np.ndarray:
    assert len(a) <= n, (len(a), n)
    out = np.full((n, *a.shape[1:]), fill, a.dtype)
    out[: len(a)] = a
    return out


def scene(plan: str, index: int = 0, goal: int | None = None) -> dict[str, np.ndarray]:
    """Returns the padded ``state.Scene`` fields of layout ``index`` of ``plan`` with furniture piece ``goal``
    (default ``Layout.goal``) as the goal place: ``walls`` float32[MAX_WALLS, 4], ``wall_valid``
    bool[MAX_WALLS], ``rooms`` float32[MAX_ROOMS, 4], ``room_valid``, ``doors`` float32[MAX_DOORS, 2],
    ``door_rooms`` int8[MAX_DOORS, 2] (-1 pads), ``door_valid``, ``furniture`` float32[MAX_FURNITURE, 5],
    ``furniture_cls`` int8[MAX_FURNITURE], ``goal_pos`` float32[2], ``goal_height``/``goal_extent`` float32,
    ``plan``/``layout`` int8, ``outdoor`` bool."""
    lay = layout(plan, index)
    goal_pos, goal_height, goal_extent = goal_fields(lay, lay.goal if goal is None else goal)
    valid = lambda a, n: np.arange(n) < len(a)  # noqa: E731
    return {
        "walls": _pad(lay.walls, S.MAX_WALLS),
        "wall_valid": valid(lay.walls, S.MAX_WALLS),
        "rooms": _pad(lay.rooms, S.MAX_ROOMS),
        "room_valid": valid(lay.rooms, S.MAX_ROOMS),
        "doors": _pad(lay.doors, S.MAX_DOORS),
        "door_rooms": _pad(lay.door_rooms, S.MAX_DOORS, -1),
        "door_valid": valid(lay.doors, S.MAX_DOORS),
        "furniture": _pad(lay.furniture, S.MAX_FURNITURE),
        "furniture_cls": _pad(lay.furniture_cls, S.MAX_FURNITURE),
        "goal_pos": goal_pos,
        "goal_height": goal_height,
        "goal_extent": goal_extent,
        "plan": np.int8(PLAN[plan]),
        "layout": np.int8(index),
        "outdoor": np.bool_(lay.outdoor),
    }


def scene_state(plan: str, index: int = 0, goal: int | None = None) -> S.Scene:
    """Returns ``scene(plan, index, goal)`` as a ``state.Scene`` (numpy leaves)."""
    return S.Scene(**scene(plan, index, goal))


def slots(plan: str, index: int = 0) -> list[tuple[float, float, float, int]]:
    """Returns the object spots on the furniture of layout ``index`` of ``plan``: a list of
    ``(x, z, top height, furniture index)`` (3 per table, 2 per sofa/chair/bed/shelf/high place, 8 per shop
    counter)."""
    return [(float(x), float(z), float(t), int(f)) for x, z, t, f in layout(plan, index).slots]


def floor_spots(plan: str, index: int = 0, room: int | None = None) -> np.ndarray:
    """Returns float32[B, 2]: candidate floor spots for objects (inside rooms, at least ``FLOOR_CLEARANCE`` from
    walls, 0.3 m from furniture, ``DOOR_CLEARANCE`` from door centres, reachable), of room ``room`` or all."""
    spots = layout(plan, index).floor_spots
    if room is not None:
        spots = spots[spots[:, 2] == room]
    return spots[:, :2].copy()
