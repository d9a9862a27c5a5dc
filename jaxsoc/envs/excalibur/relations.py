"""EXCALIBUR's pairwise relations (supplementary Table 6) as one boolean tensor (pure jnp, jit/vmap-able).

``relations(house)[r, a, b]`` is "object ``a`` <r> object ``b``" for the ``catalogue.RELATIONS`` order; it is
False on the diagonal and wherever ``a`` or ``b`` is not a valid slot. The definitions (jaxsoc's grid version of
Table 6):

- ``CONTAINED_BY``: ``a`` lies directly in ``b`` (``parent[a] == b`` and ``link[a] == IN``).
- ``ON_TOP_OF``: ``a`` lies directly on ``b`` (``parent[a] == b`` and ``link[a] == ON``); a tomato on a plate on
  a counter is on the plate only.
- ``ADJACENT_TO`` (symmetric): the floor-plane centres (a cell's centre times ``cell_metres``; objects sharing a
  cell are 0 m apart) are at most ``adjacent_metres`` apart and nothing is on the line connecting them: no wall
  cell and no cell holding furniture or a floor item strictly between the two objects' cells (the segment is
  sampled at a static number of points; a point exactly on a cell border counts for the cell with the larger
  index). Neither object may be inside a container (``link == IN`` anywhere up its chain), and neither may be an
  ancestor of the other (the brief asked for parent/child; jaxsoc also excludes a grandparent: a tomato on a plate
  on a counter is not next to the counter).
- ``HEAVIER`` / ``LIGHTER``: ``mass[a] - mass[b] >= 0.05`` kg / ``<= -0.05`` kg; closer pairs are neither (the
  dead band). The boundary belongs to the relation: a difference of exactly 0.05 kg (up to ``MASS_EPS`` of
  float32 rounding, so 0.25 vs 0.20 is heavier) counts. Both hold only between pick-up-able objects (furniture
  cannot be lifted in jaxsoc, so its mass is unknowable) and, given ``known_mass``, only when both masses are
  known.
- ``LARGER`` / ``SMALLER``: all three sorted dimensions strictly greater / strictly smaller.
- ``LONGER`` / ``SHORTER``: both types ``catalogue.IS_ELONGATED``; the longest dimension strictly greater /
  smaller.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from jaxsoc.envs.excalibur import catalogue as K
from jaxsoc.envs.excalibur import state as S

MASS_BAND = 0.05  # kg
MASS_EPS = 1e-5  # kg: float32 slack at the band's boundary (masses of items are below ~10 kg)
NEST_DEPTH = 3  # ancestors followed up the parent chain (items nest at most two deep)


def ancestors(parent: jax.Array) -> jax.Array:
    """Returns ``int32[NEST_DEPTH, N]``: the parent, grandparent, .. of every slot (-1 past the top)."""
    parent = parent.astype(jnp.int32)
    chain = [parent]
    for _ in range(NEST_DEPTH - 1):
        up = chain[-1]
        chain.append(jnp.where(up >= 0, parent[jnp.maximum(up, 0)], -1))
    return jnp.stack(chain)


def blocking_cells(house: S.House) -> jax.Array:
    """Returns ``bool[H, W]``: walls and the cells holding furniture or a floor item (valid, ``link == FLOOR``)."""
    on_floor = (house.valid & (house.link == S.FLOOR)).astype(jnp.int32)
    x, y = house.cell[:, 0].astype(jnp.int32), house.cell[:, 1].astype(jnp.int32)
    occupied = jnp.zeros(house.walls.shape, jnp.int32).at[y, x].max(on_floor) > 0
    return house.walls | occupied


def _line_clear(house: S.House, samples: int) -> jax.Array:
    """Returns ``bool[N, N]``: no blocking cell strictly between the two objects' cells on the segment joining the
    cell centres (``samples`` points at ``t = k / (samples + 1)``, ``k = 1..samples``)."""
    blocked = blocking_cells(house)
    h, w = blocked.shape
    centre = house.cell.astype(jnp.float32) + 0.5  # [N, 2] (x, y), in cells
    t = jnp.arange(1, samples + 1, dtype=jnp.float32) / (samples + 1)
    pa, pb = centre[:, None, None, :], centre[None, :, None, :]
    point = pa + t[None, None, :, None] * (pb - pa)  # [N, N, samples, 2]
    px = jnp.clip(jnp.floor(point[..., 0]).astype(jnp.int32), 0, w - 1)
    py = jnp.clip(jnp.floor(point[..., 1]).astype(jnp.int32), 0, h - 1)
    cell = house.cell.astype(jnp.int32)
    at_a = (px == cell[:, None, None, 0]) & (py == cell[:, None, None, 1])
    at_b = (px == cell[None, :, None, 0]) & (py == cell[None, :, None, 1])
    return ~jnp.any(blocked[py, px] & ~at_a & ~at_b, axis=-1)


def relations(
    house: S.House,
    cell_metres: float = 0.5,
    adjacent_metres: float = 0.5,
    known_mass: jax.Array | None = None,
) -> jax.Array:
    """Returns ``bool[NUM_RELATIONS, N, N]``: ``rel[r, a, b]`` is "``a`` <r> ``b``" (see the module docstring).

    ``cell_metres`` and ``adjacent_metres`` are static Python floats; ``known_mass`` (``bool[N]``, optional)
    restricts ``HEAVIER`` / ``LIGHTER`` to pairs whose masses are both known."""
    n = house.valid.shape[0]
    valid = house.valid
    pair = valid[:, None] & valid[None, :] & ~jnp.eye(n, dtype=bool)
    parent = house.parent.astype(jnp.int32)
    link = house.link
    idx = jnp.arange(n)
    direct = parent[:, None] == idx[None, :]
    contained_by = direct & (link == S.IN)[:, None]
    on_top_of = direct & (link == S.ON)[:, None]

    chain = ancestors(house.parent)  # [D, N]
    up_link = jnp.where(chain >= 0, link[jnp.maximum(chain, 0)], -1)
    inside = (link == S.IN) | jnp.any(up_link == S.IN, axis=0)
    ancestor = jnp.any(chain[:, :, None] == idx[None, None, :], axis=0)  # [a, b]: b is an ancestor of a
    related = ancestor | ancestor.T
    centre = house.cell.astype(jnp.float32) * cell_metres
    dist2 = jnp.sum((centre[:, None, :] - centre[None, :, :]) ** 2, axis=-1)
    near = dist2 <= adjacent_metres**2 + 1e-6
    samples = max(3, math.ceil(4 * adjacent_metres / cell_metres) + 1)
    adjacent = near & _line_clear(house, samples) & ~inside[:, None] & ~inside[None, :] & ~related

    pickup = jnp.asarray(K.IS_PICKUP)[house.type.astype(jnp.int32)]
    weighable = pickup if known_mass is None else pickup & known_mass
    weigh = weighable[:, None] & weighable[None, :]
    diff = house.mass[:, None] - house.mass[None, :]
    heavier = weigh & (diff >= MASS_BAND - MASS_EPS)
    lighter = weigh & (diff <= -(MASS_BAND - MASS_EPS))

    dims = -jnp.sort(-house.dims, axis=-1)  # longest first
    larger = jnp.all(dims[:, None, :] > dims[None, :, :], axis=-1)
    smaller = jnp.all(dims[:, None, :] < dims[None, :, :], axis=-1)
    elongated = jnp.asarray(K.IS_ELONGATED)[house.type.astype(jnp.int32)]
    both_long = elongated[:, None] & elongated[None, :]
    longer = both_long & (dims[:, None, 0] > dims[None, :, 0])
    shorter = both_long & (dims[:, None, 0] < dims[None, :, 0])

    rel = jnp.stack([contained_by, adjacent, on_top_of, heavier, lighter, larger, smaller, longer, shorter])
    return rel & pair[None]
