"""Hand-made EXCALIBUR houses for the tests: a walled grid and a list of objects described by dicts.

``house_from_objects([dict(type="Fridge", cell=(2, 2)), dict(type="Apple", parent=0, link="in")])`` builds a
``state.House`` whose first object is a fridge at ``(x, y) = (2, 2)`` holding an apple. Every key but ``type`` is
optional: ``colors`` / ``materials`` (names, most salient first; default the type's first palette entry),
``dims`` (metres, sorted longest first; default the type's smallest size times ``catalogue.ASPECT``), ``mass``
(kg; default the type's smallest mass), ``cell`` (``(x, y)``; default the parent's cell), ``parent`` (an index
into ``objects``; default none) and ``link`` (``"floor"``, ``"on"`` or ``"in"``; default ``"on"`` with a parent,
``"floor"`` without).
"""

from __future__ import annotations

import contextlib
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsoc.envs.excalibur import catalogue as K
from jaxsoc.envs.excalibur import houses as H
from jaxsoc.envs.excalibur import state as S

#: small generated houses (two rooms, few items): the tests' configuration for generated houses and banks
SMALL_HOUSES = H.HouseConfig(
    num_rows=1,
    num_cols=2,
    room_size=7,
    max_objects=24,
    max_questions=8,
    furniture_per_room=(2, 3),
    items_per_receptacle=(0, 2),
    floor_items_per_room=(0, 1),
)
LINKS = {"floor": S.FLOOR, "on": S.ON, "in": S.IN}
ROOM_SLOTS = 4


def outer_walls(height: int, width: int) -> np.ndarray:
    """Returns ``bool[height, width]``: the outer ring of cells."""
    walls = np.zeros((height, width), bool)
    walls[[0, -1], :] = True
    walls[:, [0, -1]] = True
    return walls


def house_from_objects(
    objects: list[dict],
    height: int = 7,
    width: int = 7,
    walls: np.ndarray | None = None,
    max_objects: int = 16,
    max_questions: int = 8,
    spawn: tuple[int, int] = (1, 1),
    room: np.ndarray | None = None,
) -> S.House:
    """Returns a ``state.House`` (jnp arrays, dtypes as ``state.House`` documents) holding ``objects`` (see the
    module docstring) in slots ``0..len(objects)-1``, ``walls`` (default the outer ring), ``room`` (default 0
    inside, -1 on walls; one kitchen), the agent at ``spawn`` facing east, and no questions (rows 0, answers
    -1)."""
    n = max_objects
    assert len(objects) <= n, f"{len(objects)} objects do not fit in {n} slots"
    walls = outer_walls(height, width) if walls is None else np.asarray(walls, bool)
    if room is None:
        room = np.where(walls, -1, 0)
    room_type = np.full(ROOM_SLOTS, -1, np.int8)
    room_type[: int(np.max(room)) + 1] = 0
    valid = np.zeros(n, bool)
    types = np.zeros(n, np.int16)
    colors = np.full((n, 2), -1, np.int8)
    materials = np.full((n, 3), -1, np.int8)
    dims = np.zeros((n, 3), np.float32)
    mass = np.zeros(n, np.float32)
    cell = np.zeros((n, 2), np.int16)
    parent = np.full(n, S.NO_PARENT, np.int16)
    link = np.zeros(n, np.int8)
    for i, obj in enumerate(objects):
        t = K.TYPE[obj["type"]]
        valid[i] = True
        types[i] = t
        names = obj.get("colors", (K.COLORS[K.TYPE_COLORS[t, 0]],))
        colors[i, : len(names)] = [K.COLORS.index(c) for c in names]
        names = obj.get("materials", (K.MATERIALS[K.TYPE_MATERIALS[t, 0]],))
        materials[i, : len(names)] = [K.MATERIALS.index(m) for m in names]
        longest = K.SIZE_RANGE[t, 0]
        dims[i] = obj.get("dims", (longest, longest * K.ASPECT[t, 0], longest * K.ASPECT[t, 1]))
        mass[i] = obj.get("mass", K.MASS_RANGE[t, 0])
        p = obj.get("parent")
        if p is not None:
            assert p < i, "a parent must come before its child"
            parent[i] = p
        link[i] = LINKS[obj.get("link", "floor" if p is None else "on")]
        cell[i] = obj["cell"] if "cell" in obj else cell[p]
    return S.House(
        walls=jnp.asarray(walls),
        room=jnp.asarray(room, jnp.int8),
        room_type=jnp.asarray(room_type),
        valid=jnp.asarray(valid),
        type=jnp.asarray(types),
        colors=jnp.asarray(colors),
        materials=jnp.asarray(materials),
        dims=jnp.asarray(dims),
        mass=jnp.asarray(mass),
        cell=jnp.asarray(cell),
        parent=jnp.asarray(parent),
        link=jnp.asarray(link),
        order=jnp.arange(n, dtype=jnp.int32),
        spawn_pos=jnp.asarray(spawn, jnp.int32),
        spawn_dir=jnp.asarray(0, jnp.int32),
        questions=jnp.zeros((max_questions, S.QUESTION_SLOTS), jnp.int16),
        answers=jnp.full((max_questions,), -1, jnp.int16),
        num_questions=jnp.asarray(0, jnp.int32),
    )


def stack_houses(houses: list[S.House]) -> S.House:
    """Returns the houses (same shapes) stacked along a new leading axis: a population ``House``."""
    return jax.tree.map(lambda *leaves: jnp.stack(leaves), *houses)


def random_objects(rng: np.random.Generator, num: int, height: int = 7, width: int = 7) -> list[dict]:
    """Returns up to ``num`` object dicts for ``house_from_objects``: furniture and floor items in distinct
    interior cells, the other items on a surface or in a container (one level), random colours, materials, sizes
    and masses from the catalogue. A stand-in population for tests that need variety, not a house generator."""
    cells = [(x, y) for y in range(1, height - 1) for x in range(1, width - 1)]
    order = rng.permutation(len(cells))
    furniture = np.flatnonzero(K.IS_FURNITURE & (K.IS_SURFACE | K.IS_CONTAINER))
    floor_items = np.flatnonzero(K.ON_FLOOR)
    items = np.flatnonzero(K.IS_PICKUP & ~K.ON_FLOOR)
    objects: list[dict] = []
    holders: list[int] = []

    def attributes(t: int) -> dict:
        colors = K.TYPE_COLORS[t][K.TYPE_COLORS[t] >= 0]
        materials = K.TYPE_MATERIALS[t][K.TYPE_MATERIALS[t] >= 0]
        cs = rng.choice(colors, min(len(colors), int(rng.integers(1, 3))), replace=False)
        ms = rng.choice(materials, min(len(materials), int(rng.integers(1, 4))), replace=False)
        longest = rng.uniform(*K.SIZE_RANGE[t]) * rng.uniform(0.8, 1.0)
        return dict(
            type=K.TYPES[t],
            colors=tuple(K.COLORS[c] for c in cs),
            materials=tuple(K.MATERIALS[m] for m in ms),
            dims=(longest, longest * K.ASPECT[t, 0], longest * K.ASPECT[t, 1]),
            mass=float(rng.uniform(*K.MASS_RANGE[t]) * rng.uniform(0.5, 1.5)),
        )

    for k in order[: max(1, num // 3)]:
        t = int(rng.choice(furniture if rng.random() < 0.8 else floor_items))
        objects.append(dict(attributes(t), cell=cells[k]))
        if K.IS_SURFACE[t] or K.IS_CONTAINER[t]:
            holders.append(len(objects) - 1)
    while len(objects) < num and holders:
        p = int(rng.choice(holders))
        t = K.TYPE[objects[p]["type"]]
        link = "in" if K.IS_CONTAINER[t] and (not K.IS_SURFACE[t] or rng.random() < 0.5) else "on"
        objects.append(dict(attributes(int(rng.choice(items))), parent=p, link=link))
    return objects


@functools.cache
def small_bank(num_houses: int = 24) -> S.House:
    """Returns a bank of ``num_houses`` test-split houses of the default ``HouseConfig`` (the shapes of every
    ``EXCALIBUR-*`` id's bank), built in seconds: ``jaxsoc.make``'s 512-house train bank takes minutes, most of it
    Algorithm 2 answering every candidate question in every house."""
    from jaxsoc.envs.excalibur import bank

    return bank.make_bank("test", num_houses=num_houses)[0]


@contextlib.contextmanager
def with_small_banks():
    """Within the block, ``bank.cached_bank`` (what ``jaxsoc.make`` of an ``EXCALIBUR-*`` id reads) returns
    ``small_bank()`` for every split and seed."""
    from jaxsoc.envs.excalibur import bank

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bank, "cached_bank", lambda split="train", seed=0, config=None: small_bank())
        yield
