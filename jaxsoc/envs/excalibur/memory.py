"""An explicit object memory for EXCALIBUR: one fixed slot per object slot of the house (the slot is the object's
identity for the episode, as in the observation), written from what the agent has seen and lifted.

A slot holds, once its object has been seen (``known``): the type, the salient colours and materials and the sorted
dimensions (what the observation shows), the cell, parent slot and link where it was first seen, and, once the
object has been lifted (``lifted``), its mass (felt only while held). ``write`` adds what the env's tracks recorded
as seen / lifted since the last write (``state.tracks``, the same record the scripted explorers answer from);
``from_knowledge`` builds the memory an agent that saw ``seen`` and lifted ``lifted`` would hold (placement as
generated), which is how the answerer is trained on fresh houses without playing them. ``read`` turns a memory into
the answerer's inputs: the slots' attributes and the relations among the remembered objects (``relations``, from
the remembered cells, parents, sizes and felt masses; the walls of the layout block adjacency as in the house).
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
    ``link`` int8[N] (as ``state.House``; -1 / 0 in slots not known)."""

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
    )


def _store(memory: ObjectMemory, house: S.House, new: jax.Array, lifted: jax.Array, cell, parent, link):
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
    )


def write(memory: ObjectMemory, state: S.State) -> ObjectMemory:
    """Returns ``memory`` with the objects seen for the first time since the last write stored (placement as they
    are now in ``state``) and the masses of the objects lifted since felt (``state.tracks`` of both exploration
    phases). Objects already known keep what was stored first."""
    house = state.house
    seen = state.tracks.seen.any(0) & house.valid
    lifted = state.tracks.lifted.any(0) & house.valid
    new = seen & ~memory.known
    return _store(memory, house, new, lifted & (seen | memory.known), state.cell, state.parent, state.link)


def from_knowledge(house: S.House, seen: jax.Array, lifted: jax.Array) -> ObjectMemory:
    """Returns the memory of an agent that saw ``seen`` (bool[N]) and lifted ``lifted`` (bool[N]) of ``house``
    with every object where it was generated."""
    seen = seen & house.valid
    return _store(empty(house), house, seen, lifted & seen, house.cell, house.parent, house.link)


def read(memory: ObjectMemory, house: S.House) -> dict[str, jax.Array]:
    """Returns the answerer's inputs (``networks.excalibur.ExcaliburAnswerer``'s ``memory``, one house): ``known``
    bool[N], ``type`` / ``color`` / ``material`` int32[N] (first colour / material; -1 unknown), ``color_bits`` /
    ``material_bits`` int32[N] and ``rel`` bool[NUM_RELATIONS, N, N] among the remembered objects. ``house``
    gives only the layout (walls)."""
    remembered = house.replace(
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
    f = Q.facts(remembered, (memory.known, memory.lifted))
    return {
        "known": f.valid,
        "type": jnp.where(f.valid, f.type, -1),
        "color": jnp.where(f.valid, f.color, -1),
        "material": jnp.where(f.valid, f.material, -1),
        "color_bits": f.color_bits,
        "material_bits": f.material_bits,
        "rel": f.rel,
    }
