"""VirtualHome-like apartments: 4 rooms joined by doors, furniture along the walls, as padded numpy arrays.

``generate_apartment(seed, shape, ...)`` lays out one apartment: the four rooms (bathroom, bedroom, kitchen,
living room) on cells of a small grid (``SHAPES``), rectangles of random widths and depths, a door on a
random spanning tree of the rooms' shared walls (plus, in a square plan, sometimes a fourth door making a
loop), and each room's furniture placed greedily along its walls (tables and coffee tables in the middle),
never overlapping each other or a doorway. ``APARTMENTS`` are the seven fixed layouts of the benchmark
(the paper's count): 0, 1, 2, 4 and 5 are the paper's training apartments (``SEEN_APARTMENTS``), 3 and 6 held out
for the test sets (the original's split). jaxsoc holds apartment 5 out of training as well, for the validation set
(``VALIDATION_APARTMENTS``, shaped like the test shift), so training tasks use 0, 1, 2 and 4 (``TRAIN_APARTMENTS``).
Like the original's apartments 1 and 6 they have no dishwasher there; in apartment 2 nothing starts on the
kitchen table (the original's placement rule). Tasks populate the furniture afresh (``tasks.py``).
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np

from jaxsoc.envs.household import classes as C

NUM_ROOMS = 4
MAX_DOORS = 4
MAX_FURNITURE = 32
#: the paper's five training apartments: where the test sets' paired Watch demonstrations are drawn
SEEN_APARTMENTS = (0, 1, 2, 4, 5)
#: held out of training for the validation set (it has a dishwasher, so every activity fits)
VALIDATION_APARTMENTS = (5,)
#: where training tasks (``train``, the Watch stage's ``extra``) are drawn: the seen ones but validation's
TRAIN_APARTMENTS = (0, 1, 2, 4)
#: held out for the test sets
TEST_APARTMENTS = (3, 6)

#: room cells (column, row) in the order bathroom, bedroom, kitchen, living room (before shuffling)
SHAPES = {
    "square": ((0, 0), (1, 0), (0, 1), (1, 1)),
    "row": ((0, 0), (1, 0), (2, 0), (3, 0)),
    "ell": ((0, 0), (1, 0), (2, 0), (0, 1)),
    "tee": ((0, 0), (1, 0), (2, 0), (1, 1)),
}

#: per room type: (class, count, where): "wall" items stand against a wall, "centre" items in the middle
ROOM_FURNITURE = {
    "kitchen": (
        ("fridge", 1, "wall"),
        ("stove", 1, "wall"),
        ("microwave", 1, "wall"),
        ("dishwasher", 1, "wall"),
        ("kitchencabinet", 3, "wall"),
        ("kitchencounter", 1, "wall"),
        ("kitchentable", 1, "centre"),
        ("chair", 2, "centre"),
    ),
    "livingroom": (
        ("sofa", 1, "wall"),
        ("tv", 1, "wall"),
        ("cabinet", 1, "wall"),
        ("bench", 1, "wall"),
        ("lamp", 1, "wall"),
        ("coffeetable", 1, "centre"),
    ),
    "bedroom": (
        ("bed", 1, "wall"),
        ("nightstand", 2, "wall"),
        ("cabinet", 1, "wall"),
        ("desk", 1, "wall"),
        ("chair", 1, "wall"),
    ),
    "bathroom": (("bathroomcabinet", 1, "wall"), ("toilet", 1, "wall"), ("cabinet", 1, "wall")),
}

#: the classes every apartment must hold (the tasks' targets and the containers objects start in)
REQUIRED = ("fridge", "kitchentable", "coffeetable", "sofa", "kitchencabinet", "cabinet")


@dataclasses.dataclass(frozen=True)
class Apartment:
    """One apartment's static layout (numpy; rooms are indexed bathroom, bedroom, kitchen, living room).

    - ``room_rect``: ``float32[4, 4]`` each room's ``(x0, z0, x1, z1)`` in metres.
    - ``door_pos``: ``float32[MAX_DOORS, 2]``; ``door_rooms``: ``int8[MAX_DOORS, 2]`` the two rooms a door
      joins (-1 for an absent door).
    - ``next_door``: ``int8[4, 4]`` the door to walk through first on a route with fewest doors from room ``i`` to
      room ``j`` (-1 on the diagonal).
    - ``furniture_class``/``furniture_room``: ``int16/int8[MAX_FURNITURE]`` (class 0 for an empty slot),
      ``furniture_pos``/``furniture_size``: ``float32[MAX_FURNITURE, 2]`` centre and footprint (x, z).
    - ``table_placement``: whether objects may start on the kitchen table.
    """

    index: int
    shape: str
    room_rect: np.ndarray
    door_pos: np.ndarray
    door_rooms: np.ndarray
    next_door: np.ndarray
    furniture_class: np.ndarray
    furniture_room: np.ndarray
    furniture_pos: np.ndarray
    furniture_size: np.ndarray
    table_placement: bool

    @property
    def extent(self) -> np.ndarray:
        """Returns ``float32[2]``: the apartment's width and depth (its rooms start at the origin)."""
        return self.room_rect[:, 2:].max(0)

    def count(self, name: str) -> int:
        """Returns how many pieces of furniture of class ``name`` the apartment holds."""
        return int((self.furniture_class == C.CLASS[name]).sum())


def _rooms(rng: np.random.Generator, shape: str) -> np.ndarray:
    cells = np.array(SHAPES[shape])
    cells = cells[rng.permutation(NUM_ROOMS)]
    widths = rng.uniform(3.6, 6.2, cells[:, 0].max() + 1)
    depths = rng.uniform(3.6, 6.2, cells[:, 1].max() + 1)
    xs, zs = np.concatenate([[0], np.cumsum(widths)]), np.concatenate([[0], np.cumsum(depths)])
    return np.stack([xs[cells[:, 0]], zs[cells[:, 1]], xs[cells[:, 0] + 1], zs[cells[:, 1] + 1]], 1)


def _shared_wall(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Returns the endpoints of the wall segment two room rectangles share, or None."""
    for axis in (0, 1):
        other = 1 - axis
        for ea, eb in ((a[axis + 2], b[axis]), (a[axis], b[axis + 2])):
            if abs(ea - eb) < 1e-6:
                lo, hi = max(a[other], b[other]), min(a[other + 2], b[other + 2])
                if hi - lo > 1.2:
                    p, q = np.zeros(2), np.zeros(2)
                    p[axis] = q[axis] = ea
                    p[other], q[other] = lo, hi
                    return p, q
    return None


def _root(parent: list[int], i: int) -> int:
    while parent[i] != i:
        i = parent[i]
    return i


def _doors(rng: np.random.Generator, rects: np.ndarray, loop: bool):
    walls = {
        (i, j): w for i, j in itertools.combinations(range(NUM_ROOMS), 2) if (w := _shared_wall(rects[i], rects[j]))
    }
    pairs = list(walls)
    while True:  # a random spanning tree of the adjacency graph (Kruskal on shuffled edges)
        order = rng.permutation(len(pairs))
        parent = list(range(NUM_ROOMS))

        tree = []
        for k in order:
            i, j = pairs[k]
            if _root(parent, i) != _root(parent, j):
                parent[_root(parent, i)] = _root(parent, j)
                tree.append(pairs[k])
        if len(tree) == NUM_ROOMS - 1:
            break
    extra = [p for p in pairs if p not in tree]
    chosen = tree + (extra[:1] if loop and extra else [])
    door_pos = np.zeros((MAX_DOORS, 2), np.float32)
    door_rooms = np.full((MAX_DOORS, 2), -1, np.int8)
    for d, (i, j) in enumerate(chosen):
        p, q = walls[(i, j)]
        t = rng.uniform(0.3, 0.7)
        door_pos[d] = p + t * (q - p)
        door_rooms[d] = (i, j)
    return door_pos, door_rooms


def _next_door(door_rooms: np.ndarray) -> np.ndarray:
    """Returns ``int8[4, 4]``: the first door on a route with the fewest doors between two rooms (in a square plan
    with a loop, the two ways round both have two doors and the first found is taken, whatever their lengths)."""
    nxt = np.full((NUM_ROOMS, NUM_ROOMS), -1, np.int8)
    for src in range(NUM_ROOMS):
        first = {src: -1}
        frontier = [src]
        while frontier:
            new = []
            for r in frontier:
                for d, (a, b) in enumerate(door_rooms):
                    if a < 0 or r not in (a, b):
                        continue
                    other = int(b if r == a else a)
                    if other not in first:
                        first[other] = d if r == src else first[r]
                        new.append(other)
            frontier = new
        for dst, d in first.items():
            nxt[src, dst] = d
    return nxt


def _overlaps(rect: np.ndarray, placed: list[np.ndarray], margin: float = 0.05) -> bool:
    return any(
        rect[0] < q[2] + margin and q[0] < rect[2] + margin and rect[1] < q[3] + margin and q[1] < rect[3] + margin
        for q in placed
    )


def _furnish(rng: np.random.Generator, room: int, rect: np.ndarray, doors: np.ndarray, items, placed):
    """Returns ``[(class, centre, size)]`` for one room's items; ``placed`` (rectangles) grows."""
    out = []
    x0, z0, x1, z1 = rect
    centre = np.array([(x0 + x1) / 2, (z0 + z1) / 2])
    for name, count, where in items:
        for _ in range(count):
            w, d = C.SIZE[C.CLASS[name]]
            for _attempt in range(400):
                if where == "centre":
                    jitter = rng.uniform(-0.25, 0.25, 2) * np.array([x1 - x0, z1 - z0])
                    size = np.array([w, d])
                    c = centre + (jitter * 0.6 if name != "chair" else jitter * 1.4)
                else:
                    side = rng.integers(4)  # 0: z0 wall, 1: z1 wall, 2: x0 wall, 3: x1 wall
                    size = np.array([w, d]) if side < 2 else np.array([d, w])
                    if side < 2:
                        c = np.array([rng.uniform(x0 + size[0] / 2, x1 - size[0] / 2), 0.0])
                        c[1] = z0 + size[1] / 2 + 0.05 if side == 0 else z1 - size[1] / 2 - 0.05
                    else:
                        c = np.array([0.0, rng.uniform(z0 + size[1] / 2, z1 - size[1] / 2)])
                        c[0] = x0 + size[0] / 2 + 0.05 if side == 2 else x1 - size[0] / 2 - 0.05
                box = np.concatenate([c - size / 2, c + size / 2])
                inside = box[0] >= x0 and box[1] >= z0 and box[2] <= x1 and box[3] <= z1
                clear = all(np.abs(c - p).max() > 0.6 + size.max() / 2 for p in doors)
                if inside and clear and not _overlaps(box, placed):
                    placed.append(box)
                    out.append((C.CLASS[name], c, size, room))
                    break
    return out


def generate_apartment(
    seed: int, shape: str, *, dishwasher: bool = True, table_placement: bool = True, dining_table: bool = False
) -> Apartment:
    """Returns one apartment laid out from ``seed`` (numpy; deterministic). ``dining_table`` adds a second
    kitchen table in the living room; ``dishwasher=False`` leaves the kitchen without one.

    Raises:
        ValueError: an unknown ``shape``, or a layout that could not hold a required piece of furniture.
    """
    if shape not in SHAPES:
        raise ValueError(f"unknown apartment shape {shape!r}; choose from {sorted(SHAPES)}")
    rng = np.random.default_rng(seed)
    rects = _rooms(rng, shape).astype(np.float32)
    door_pos, door_rooms = _doors(rng, rects, loop=shape == "square" and rng.random() < 0.5)
    present = door_rooms[:, 0] >= 0
    furniture = []
    for room, name in enumerate(C.ROOM_CLASSES):
        items = [it for it in ROOM_FURNITURE[name] if dishwasher or it[0] != "dishwasher"]
        if name == "livingroom" and dining_table:
            items.append(("kitchentable", 1, "wall"))
        placed: list[np.ndarray] = []
        furniture += _furnish(rng, room, rects[room], door_pos[present], items, placed)
    if len(furniture) > MAX_FURNITURE:
        raise ValueError(f"apartment {seed}: {len(furniture)} pieces of furniture > MAX_FURNITURE")
    cls = np.zeros(MAX_FURNITURE, np.int16)
    room = np.zeros(MAX_FURNITURE, np.int8)
    pos = np.zeros((MAX_FURNITURE, 2), np.float32)
    size = np.zeros((MAX_FURNITURE, 2), np.float32)
    for k, (c, p, s, r) in enumerate(furniture):
        cls[k], pos[k], size[k], room[k] = c, p, s, r
    apartment = Apartment(
        index=-1,
        shape=shape,
        room_rect=rects,
        door_pos=door_pos,
        door_rooms=door_rooms,
        next_door=_next_door(door_rooms),
        furniture_class=cls,
        furniture_room=room,
        furniture_pos=pos,
        furniture_size=size,
        table_placement=table_placement,
    )
    missing = [name for name in REQUIRED if apartment.count(name) == 0]
    if dishwasher and apartment.count("dishwasher") == 0:
        missing.append("dishwasher")
    if missing:
        raise ValueError(f"apartment {seed} ({shape}) could not place {missing}")
    return apartment


# the seven layouts: (seed, shape, keyword arguments)
_LAYOUTS = (
    (11, "square", {}),
    (23, "row", {"dishwasher": False}),
    (37, "ell", {"table_placement": False, "dining_table": True}),
    (41, "tee", {}),
    (53, "square", {"dining_table": True}),
    (67, "ell", {}),
    (79, "row", {"dishwasher": False}),
)


def _build() -> tuple[Apartment, ...]:
    return tuple(
        dataclasses.replace(generate_apartment(seed, shape, **kw), index=i)
        for i, (seed, shape, kw) in enumerate(_LAYOUTS)
    )


APARTMENTS: tuple[Apartment, ...] = _build()


def stacked() -> dict[str, np.ndarray]:
    """Returns every apartment's arrays stacked on a leading axis of 7 (for gathering inside ``jit``)."""
    fields = [
        "room_rect",
        "door_pos",
        "door_rooms",
        "next_door",
        "furniture_class",
        "furniture_room",
        "furniture_pos",
        "furniture_size",
    ]
    out = {f: np.stack([getattr(a, f) for a in APARTMENTS]) for f in fields}
    out["table_placement"] = np.array([a.table_placement for a in APARTMENTS])
    return out
