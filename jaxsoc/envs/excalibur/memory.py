"""An explicit object memory for EXCALIBUR: one fixed slot per object slot of the house (the slot is the object's
identity for the episode, as in the observation), written from what the agent has seen and lifted.

A slot holds, once its object has been seen (``known``): the type, the salient colours and materials and the sorted
dimensions (what the observation shows), the cell, parent slot and link where it was first seen, and, once the
object has been lifted (``lifted``), its mass (felt only while held). ``write`` adds what the env's tracks recorded
as seen / lifted since the last write (``state.tracks``, the same record the scripted explorers answer from);
``from_knowledge`` builds the memory an agent that saw ``seen`` and lifted ``lifted`` would hold (placement as
generated), which is how the answerer is trained on fresh houses without playing them. ``read`` turns a memory into
the answerer's inputs: the slots' attributes and the relations among the remembered objects (``relations``, from
the remembered cells, parents, sizes and felt masses).

**The layout is the agent's too**: the memory also keeps ``viewed``, the cells the agent has had in view
(``state.tracks.viewed``), and ``read`` blocks adjacency with the walls of the viewed cells and with every cell not
yet viewed (a cell never seen may hide a wall: "nothing on the line" is known only once the line was seen), never
with the house's full walls. (At the benchmark's 0.5 m cells and 0.5 m adjacency no cell lies strictly between
two adjacent objects, so the walls change no relation there; they do at a larger ``adjacent_metres``.) The paper's
agent answers from its own learned memory, with no ground-truth relations, so there is no privilege to keep.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from jaxsoc.envs.excalibur import questions as Q
from jaxsoc.envs.excalibur import state as S


class ObjectMemory(struct.PyTreeNode):
    """``known`` bool[N], ``lifted`` bool[N]; ``type`` int16[N]; ``colors`` int8[N, 2]; ``materials`` int8[N, 3];
    ``dims`` float32[N, 3]; ``mass`` float32[N] (0 until lifted); ``cell`` int16[N, 2]; ``parent`` int8[N];
    ``link`` int8[N] (as ``state.House``; -1 / 0 in slots not known); ``viewed`` bool[H, W]: the cells seen."""

    known: jax.Array
    lifted: jax.Array
    type: jax.Array
    colors: jax.Array
    materials: jax.Array
    dims: jax.Array
    mass: jax.Array
    cell: jax.Array
    parent: jax.Array
    link: jax.Array
    viewed: jax.Array


def empty(house: S.House) -> ObjectMemory:
    """Returns the empty memory for ``house``'s ``N`` object slots (nothing known)."""
    n = house.valid.shape[0]
    return ObjectMemory(
        known=jnp.zeros(n, bool),
        lifted=jnp.zeros(n, bool),
        type=jnp.full(n, -1, house.type.dtype),
        colors=jnp.full(house.colors.shape, -1, house.colors.dtype),
        materials=jnp.full(house.materials.shape, -1, house.materials.dtype),
        dims=jnp.zeros(house.dims.shape, jnp.float32),
        mass=jnp.zeros(n, jnp.float32),
        cell=jnp.zeros(house.cell.shape, house.cell.dtype),
        parent=jnp.full(n, S.NO_PARENT, house.parent.dtype),
        link=jnp.zeros(n, house.link.dtype),
        viewed=jnp.zeros(house.walls.shape, bool),
    )


def _store(memory: ObjectMemory, house: S.House, new: jax.Array, lifted: jax.Array, cell, parent, link, viewed):
    def put(old, value):
        mask = new.reshape(new.shape + (1,) * (old.ndim - 1))
        return jnp.where(mask, value.astype(old.dtype), old)

    felt = lifted & ~memory.lifted
    return memory.replace(
        known=memory.known | new,
        lifted=memory.lifted | lifted,
        type=put(memory.type, house.type),
        colors=put(memory.colors, house.colors),
        materials=put(memory.materials, house.materials),
        dims=put(memory.dims, house.dims),
        mass=jnp.where(felt, house.mass, memory.mass),
        cell=put(memory.cell, cell),
        parent=put(memory.parent, parent),
        link=put(memory.link, link),
        viewed=memory.viewed | viewed,
    )


def write(memory: ObjectMemory, state: S.State) -> ObjectMemory:
    """Returns ``memory`` with the objects seen for the first time since the last write stored (placement as they
    are now in ``state``), the masses of the objects lifted since felt and the cells viewed since added
    (``state.tracks`` of both exploration phases). Objects already known keep what was stored first."""
    house = state.house
    seen = state.tracks.seen.any(0) & house.valid
    lifted = state.tracks.lifted.any(0) & house.valid
    new = seen & ~memory.known
    viewed = state.tracks.viewed.any(0)
    return _store(memory, house, new, lifted & (seen | memory.known), state.cell, state.parent, state.link, viewed)


def object_cells(house: S.House, objects: jax.Array) -> jax.Array:
    """Returns ``bool[H, W]``: the cells holding the ``objects`` (bool[N]) of ``house`` as generated."""
    height, width = house.walls.shape
    flat = house.cell[:, 1].astype(jnp.int32) * width + house.cell[:, 0].astype(jnp.int32)
    flat = jnp.where(objects, flat, height * width)
    return jnp.zeros(height * width + 1, bool).at[flat].set(True)[:-1].reshape(height, width)


def from_knowledge(house: S.House, seen: jax.Array, lifted: jax.Array, viewed: jax.Array | None = None) -> ObjectMemory:
    """Returns the memory of an agent that saw ``seen`` (bool[N]) and lifted ``lifted`` (bool[N]) of ``house``
    with every object where it was generated, having viewed the cells ``viewed`` (bool[H, W]; default: only the
    cells of the objects it saw)."""
    seen = seen & house.valid
    viewed = object_cells(house, seen) if viewed is None else viewed
    return _store(empty(house), house, seen, lifted & seen, house.cell, house.parent, house.link, viewed)


def read(
    memory: ObjectMemory, house: S.House, cell_metres: float = 0.5, adjacent_metres: float = 0.5
) -> dict[str, jax.Array]:
    """Returns the answerer's inputs (``networks.excalibur.ExcaliburAnswerer``'s ``memory``, one house): ``known``
    bool[N], ``type`` / ``color`` / ``material`` int32[N] (first colour / material; -1 unknown), ``color_bits`` /
    ``material_bits`` int32[N] and ``rel`` bool[NUM_RELATIONS, N, N] among the remembered objects (the static
    metres as ``relations``'). Of ``house`` only the shapes and the walls of the cells in ``memory.viewed`` are
    read; a cell not viewed blocks adjacency (module docstring)."""
    remembered = house.replace(
        walls=house.walls | ~memory.viewed,  # the walls seen; a cell not viewed may hide one
        valid=memory.known,
        type=jnp.maximum(memory.type, 0).astype(house.type.dtype),
        colors=memory.colors,
        materials=memory.materials,
        dims=memory.dims,
        mass=memory.mass,
        cell=memory.cell,
        parent=memory.parent,
        link=memory.link,
    )
    f = Q.facts(remembered, (memory.known, memory.lifted), cell_metres, adjacent_metres)
    return {
        "known": f.valid,
        "type": jnp.where(f.valid, f.type, -1),
        "color": jnp.where(f.valid, f.color, -1),
        "material": jnp.where(f.valid, f.material, -1),
        "color_bits": f.color_bits,
        "material_bits": f.material_bits,
        "rel": f.rel,
    }
