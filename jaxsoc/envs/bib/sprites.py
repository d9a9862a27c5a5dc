"""BIB's sprites: every shape drawn in a cell, defined procedurally and sampled as anti-aliased coverage.

Each shape is an inside test on the cell ``[0, 1]^2`` (``x`` to the right, ``y`` down, as on screen) built
from discs, ellipses, polygons and thick segments, kept inside ``[0.08, 0.92]`` so that a small margin
separates neighbouring entities. ``sprite_table(size)`` samples every shape for frames of ``size x size``
pixels: texel ``(a, b)`` holds the fraction of a frame pixel's footprint (``10 / size`` cells wide) covered by
the shape when the pixel's centre lies at offset ``((a + 0.5) / Q, (b + 0.5) / Q)`` in the cell, estimated
from ``SUPERSAMPLE x SUPERSAMPLE`` samples. The renderer looks texels up by each pixel's offset from an
entity's cell, so sprites work at any frame size (8.4 px per cell at 84 px) and at any sub-cell position of a
moving agent. Nothing is read from disk; tables are computed on first use and cached per size.

Sprite indices (rows of the table): the 3 agent shapes (``AGENT_SPRITES``, in ``world.AGENT_SHAPES``
order), the 11 object shapes (``OBJECT_SPRITES``, in ``world.OBJECT_SHAPES`` order), ``HOME``, then the key's
triangle and the lock's triangle slot in the 4 ``world.ROTATIONS`` (``KEY[r]``, ``LOCK[r]``).
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Callable

import numpy as np

from jaxsoc.envs.bib.world import AGENT_SHAPES, GRID, OBJECT_SHAPES, ROTATIONS

SUPERSAMPLE = 8  # samples per texel side when estimating coverage
MIN_TEXELS = 40  # texels per cell side, at least

Mask = Callable[[np.ndarray, np.ndarray], np.ndarray]  # (x, y) cell coordinates -> bool, same shape

# ---------------------------------------------------------------------------------------------------- primitives


def disc(x, y, cx: float, cy: float, r: float) -> np.ndarray:
    return (x - cx) ** 2 + (y - cy) ** 2 <= r * r


def ellipse(x, y, cx: float, cy: float, rx: float, ry: float) -> np.ndarray:
    return ((x - cx) / rx) ** 2 + ((y - cy) / ry) ** 2 <= 1.0


def rect(x, y, x0: float, x1: float, y0: float, y1: float) -> np.ndarray:
    return (x >= x0) & (x <= x1) & (y >= y0) & (y <= y1)


def polygon(x, y, vertices) -> np.ndarray:
    """Even-odd inside test of the polygon ``vertices`` (a sequence of ``(x, y)``)."""
    inside = np.zeros(np.broadcast(x, y).shape, bool)
    for (x0, y0), (x1, y1) in zip(vertices, vertices[1:] + vertices[:1]):
        crosses = (y0 > y) != (y1 > y)
        with np.errstate(divide="ignore", invalid="ignore"):
            x_at = x0 + (y - y0) * (x1 - x0) / (y1 - y0)
        inside ^= crosses & (x < x_at)
    return inside


def regular_polygon(x, y, n: int, cx: float, cy: float, r: float, angle: float = -90.0) -> np.ndarray:
    """Regular ``n``-gon of circumradius ``r``, its first vertex at ``angle`` degrees (-90: straight up)."""
    turns = [math.radians(angle + 360.0 * k / n) for k in range(n)]
    return polygon(x, y, [(cx + r * math.cos(a), cy + r * math.sin(a)) for a in turns])


def thick_segment(x, y, x0: float, y0: float, x1: float, y1: float, r: float) -> np.ndarray:
    """Points within ``r`` of the segment ``(x0, y0)-(x1, y1)`` (a capsule)."""
    dx, dy = x1 - x0, y1 - y0
    t = np.clip(((x - x0) * dx + (y - y0) * dy) / (dx * dx + dy * dy), 0.0, 1.0)
    return (x - x0 - t * dx) ** 2 + (y - y0 - t * dy) ** 2 <= r * r


def diamond(x, y, cx: float, cy: float, half_w: float, half_h: float) -> np.ndarray:
    return np.abs(x - cx) / half_w + np.abs(y - cy) / half_h <= 1.0


def rotated(mask: Mask, degrees: float) -> Mask:
    """``mask`` turned ``degrees`` counter-clockwise on screen about the cell centre."""
    c, s = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))

    def turned(x, y):
        dx, dy = x - 0.5, y - 0.5  # screen y points down, so a counter-clockwise turn maps back as below
        return mask(0.5 + c * dx - s * dy, 0.5 + s * dx + c * dy)

    return turned


# ---------------------------------------------------------------------------------------------------- shapes


def pentagon(x, y):
    return regular_polygon(x, y, 5, 0.5, 0.54, 0.44)


def clove(x, y):
    """A four-leaf clover: four round lobes around a small centre."""
    lobes = [disc(x, y, 0.5 + dx, 0.5 + dy, 0.2) for dx, dy in ((0.21, 0), (-0.21, 0), (0, 0.21), (0, -0.21))]
    return functools.reduce(np.logical_or, lobes) | disc(x, y, 0.5, 0.5, 0.12)


def kite(x, y):
    return polygon(x, y, [(0.5, 0.08), (0.84, 0.36), (0.5, 0.92), (0.16, 0.36)])


def heart(x, y):
    lobes = disc(x, y, 0.31, 0.34, 0.2) | disc(x, y, 0.69, 0.34, 0.2)
    return lobes | polygon(x, y, [(0.13, 0.42), (0.87, 0.42), (0.5, 0.9)])


def clove_tree(x, y):
    """A tree: a crown of three round leaves on a trunk."""
    crown = disc(x, y, 0.5, 0.27, 0.18) | disc(x, y, 0.31, 0.45, 0.17) | disc(x, y, 0.69, 0.45, 0.17)
    crown |= disc(x, y, 0.5, 0.42, 0.12)
    return crown | rect(x, y, 0.43, 0.57, 0.5, 0.91)


def moon(x, y):
    return disc(x, y, 0.5, 0.5, 0.41) & ~disc(x, y, 0.67, 0.4, 0.33)


def wine(x, y):
    """A wine glass: a bowl cut flat at the rim, a stem and a foot."""
    bowl = disc(x, y, 0.5, 0.14, 0.34) & (y >= 0.14)
    return bowl | rect(x, y, 0.46, 0.54, 0.5, 0.84) | ellipse(x, y, 0.5, 0.86, 0.24, 0.06)


def double_dia(x, y):
    return diamond(x, y, 0.5, 0.29, 0.3, 0.21) | diamond(x, y, 0.5, 0.71, 0.3, 0.21)


def flag(x, y):
    pole = rect(x, y, 0.16, 0.25, 0.08, 0.92)
    return pole | polygon(x, y, [(0.25, 0.1), (0.88, 0.3), (0.25, 0.52)])


def capsule(x, y):
    return thick_segment(x, y, 0.29, 0.71, 0.71, 0.29, 0.18)


def vase(x, y):
    """A vase: a round body, a narrow neck and a flared lip."""
    body = disc(x, y, 0.5, 0.63, 0.28)
    return body | rect(x, y, 0.39, 0.61, 0.2, 0.45) | rect(x, y, 0.29, 0.71, 0.09, 0.2)


def curved_triangle(x, y):
    """A Reuleaux triangle pointing right (three discs through the corners of an equilateral triangle of
    side 0.8)."""
    corners = [(0.9, 0.5), (0.9 - 0.4 * math.sqrt(3), 0.1), (0.9 - 0.4 * math.sqrt(3), 0.9)]
    return functools.reduce(np.logical_and, [disc(x, y, cx, cy, 0.8) for cx, cy in corners])


def spoon(x, y):
    """A spoon lying diagonally: an oval bowl at the top left, a handle to the bottom right."""
    u, v = (x + y - 1.0) / math.sqrt(2), (x - y) / math.sqrt(2)  # along and across the diagonal
    bowl = ellipse(u, v, -0.3, 0.0, 0.23, 0.17)
    return bowl | thick_segment(x, y, 0.5, 0.5, 0.86, 0.86, 0.06)


def medal(x, y):
    """A medal: a solid disc hanging from a V-shaped ribbon whose two straps reach the top of the cell."""
    ribbon = polygon(
        x, y, [(0.15, 0.08), (0.34, 0.08), (0.5, 0.36), (0.66, 0.08), (0.85, 0.08), (0.57, 0.52), (0.43, 0.52)]
    )
    return ribbon | disc(x, y, 0.5, 0.68, 0.24)


def home_shape(x, y):
    """A house: a roof over a square body with a door cut out."""
    roof = polygon(x, y, [(0.5, 0.08), (0.08, 0.46), (0.92, 0.46)])
    body = rect(x, y, 0.18, 0.82, 0.44, 0.92) & ~rect(x, y, 0.41, 0.59, 0.64, 0.93)
    return roof | body


def triangle(x, y):
    """The key: a triangle pointing up (rotation 0)."""
    return polygon(x, y, [(0.5, 0.12), (0.88, 0.86), (0.12, 0.86)])


def triangle_slot(x, y):
    """The lock: a square with a triangular notch that opens at the bottom, pointing up (rotation 0)."""
    return rect(x, y, 0.1, 0.9, 0.1, 0.9) & ~polygon(x, y, [(0.26, 0.91), (0.74, 0.91), (0.5, 0.42)])


SHAPES: dict[str, Mask] = {
    "pentagon": pentagon,
    "clove": clove,
    "kite": kite,
    "heart": heart,
    "clove_tree": clove_tree,
    "moon": moon,
    "wine": wine,
    "double_dia": double_dia,
    "flag": flag,
    "capsule": capsule,
    "vase": vase,
    "curved_triangle": curved_triangle,
    "spoon": spoon,
    "medal": medal,
    "home_shape": home_shape,
    "triangle": triangle,
    "triangle_slot": triangle_slot,
}

# ---------------------------------------------------------------------------------------------------- table

SPRITE_NAMES: tuple[str, ...] = (
    *AGENT_SHAPES,
    *OBJECT_SHAPES,
    "home_shape",
    *(f"triangle_{r}" for r in ROTATIONS),
    *(f"triangle_slot_{r}" for r in ROTATIONS),
)
AGENT_SPRITES = np.arange(len(AGENT_SHAPES), dtype=np.int32)  # by world.AGENT_SHAPES index
OBJECT_SPRITES = len(AGENT_SHAPES) + np.arange(len(OBJECT_SHAPES), dtype=np.int32)  # by world.OBJECT_SHAPES index
HOME = len(AGENT_SHAPES) + len(OBJECT_SHAPES)
KEY = HOME + 1 + np.arange(len(ROTATIONS), dtype=np.int32)  # by world.ROTATIONS index
LOCK = KEY[-1] + 1 + np.arange(len(ROTATIONS), dtype=np.int32)
NUM_SPRITES = len(SPRITE_NAMES)


def sprite_mask(index: int) -> Mask:
    """Returns the inside test ``(x, y) -> bool`` of sprite ``index`` (a row of ``SPRITE_NAMES``)."""
    name = SPRITE_NAMES[index]
    for base in ("triangle_slot", "triangle"):
        if name.startswith(base + "_"):
            return rotated(SHAPES[base], float(name[len(base) + 1 :]))
    return SHAPES[name]


def check_size(size) -> int:
    """Returns ``size`` as an ``int``; raises ``ValueError`` unless it is a positive integer (not a bool)."""
    if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 1:
        raise ValueError(f"size must be a positive int (frame side in pixels, e.g. 84 or 200), got {size!r}")
    return int(size)


def texels_per_cell(size: int) -> int:
    """Returns ``Q``, the texels per cell side of ``sprite_table(size)``: at least ``MIN_TEXELS``, and where
    possible an odd multiple of the pixels per cell (``size / 10``), so that every pixel centre of a static
    entity falls on a texel centre (exact sampling, and no pixel centre on a texel boundary)."""
    size = check_size(size)
    for m in range(1, 2 * MIN_TEXELS + 2, 2):
        if (size * m) % GRID == 0 and size * m // GRID >= MIN_TEXELS:
            return size * m // GRID
    return max(MIN_TEXELS, 4 * math.ceil(size / GRID))  # odd sizes: pixel centres can meet cell edges anyway


def coverage(mask: Mask, texels: int, footprint: float, samples: int = SUPERSAMPLE) -> np.ndarray:
    """Returns ``float32[texels, texels]``: the fraction of a square of side ``footprint`` (cell units),
    centred on each texel centre ``((a + 0.5) / texels, (b + 0.5) / texels)`` (row ``a`` is ``y``), inside
    ``mask``, from ``samples x samples`` evenly spaced samples."""
    centres = (np.arange(texels) + 0.5) / texels
    offsets = ((np.arange(samples) + 0.5) / samples - 0.5) * footprint
    axis = (centres[:, None] + offsets[None, :]).reshape(-1)
    inside = mask(axis[None, :], axis[:, None]).astype(np.float32)
    return inside.reshape(texels, samples, texels, samples).mean(axis=(1, 3))


@functools.cache
def _table(size: int) -> np.ndarray:
    texels = texels_per_cell(size)
    table = np.stack([coverage(sprite_mask(i), texels, GRID / size) for i in range(NUM_SPRITES)])
    table.setflags(write=False)
    return table


def sprite_table(size: int) -> np.ndarray:
    """Returns the sprites for ``size x size`` frames, ``float32[NUM_SPRITES, Q, Q]`` with
    ``Q = texels_per_cell(size)``: entry ``[s, a, b]`` is the coverage in ``[0, 1]`` of a frame pixel whose
    centre lies at offset ``((a + 0.5) / Q, (b + 0.5) / Q)`` (row, col) from the top-left corner of the cell
    holding sprite ``s``, filtered over the pixel's footprint (anti-aliased). Cached, read-only.

    Raises:
        ValueError: unless ``size`` is a positive int.
    """
    return _table(check_size(size))
