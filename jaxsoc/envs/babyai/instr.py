"""Baby Language instructions as fixed-shape arrays, and the BabyAI state and params pytrees.

An instruction is at most two *parts* joined by ``then`` (Before) or ``after you`` (After); a part is one
clause or two clauses joined by ``and``. Leaf ``l = 2 * part + clause`` (``0, 1`` in part A, ``2, 3`` in
part B), so every instruction of the 19 levels (up to a sequence of two ``and``s) fits four leaves. A leaf
is an action kind with one object description (two for ``put next``: the object to move, then the fixed
object).

Object descriptions use minigrid's vocabulary: ``desc_type`` is ``ANY_TYPE`` ("object") or the grid type
code of a key, ball, box or door; ``desc_color`` is ``ANY_COLOR`` or a colour code; ``desc_loc`` is one of
``LOC_NONE, LOC_LEFT, LOC_RIGHT, LOC_FRONT, LOC_BEHIND`` (relative to the agent's pose at reset, only
objects in the agent's starting room match a location).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from jaxsoc.envs.gridworld.state import GridParams, GridState

MAX_LEAVES = 4
MAX_OBJECTS = 64  # object ids 1..63 (0 = no object)
# Longest mission in words: four "put <desc> next to <desc>" leaves (17 words each, a description is at most
# "a purple object in front of you") joined by "and", "and" and "after you".
MAX_MISSION_TOKENS = 72

# leaf action kinds
ACT_NONE, ACT_GOTO, ACT_OPEN, ACT_PICKUP, ACT_PUTNEXT = range(5)
ACTION_WORDS = (None, "go to", "open", "pick up", "put")
# sequence kinds
SEQ_NONE, SEQ_BEFORE, SEQ_AFTER = range(3)
# descriptions
ANY_TYPE = 0
ANY_COLOR = 6
LOC_NONE, LOC_LEFT, LOC_RIGHT, LOC_FRONT, LOC_BEHIND = range(5)
LOC_NAMES = (None, "left", "right", "front", "behind")


@struct.dataclass
class Instruction:
    """One instruction (see the module docstring). All fields are ``int32``.

    Attributes:
        action: ``[4]`` leaf action kinds, ``ACT_NONE`` for absent leaves.
        desc_type, desc_color, desc_loc: ``[4, 2]`` the leaf's descriptions (index 1 only for put next).
        seq: ``[]`` ``SEQ_NONE`` (part A only), ``SEQ_BEFORE`` ("A, then B") or ``SEQ_AFTER``
            ("A after you B": B must be done first).
        strict: ``bool[4]`` minigrid's ``strict`` flag of each leaf (``OpenInstr``, ``PickupInstr``,
            ``PutNextInstr``; the ``*Debug`` levels): a wrong ``open`` or ``pick up`` makes the leaf fail, and a
            failing leaf that is a whole part ends the episode with reward 0 (see ``verifier``). ``None``, the
            default of every other level, means no strict leaf (no array, so their pytrees are unchanged).
    """

    action: jax.Array
    desc_type: jax.Array
    desc_color: jax.Array
    desc_loc: jax.Array
    seq: jax.Array
    strict: jax.Array | None = None


@struct.dataclass
class VerifierState:
    """The verifier's memory (minigrid's ``ObjDesc.obj_set/obj_poss``, ``preCarrying`` and ``a_done``...).

    Attributes:
        obj_set: ``bool[4, 2, MAX_OBJECTS]`` the object ids each description matched at reset.
        plural: ``bool[4, 2]`` more than one object matched (the text then says "a", else "the").
        id_snapshot: ``uint8[H, W]`` the object-id plane at reset, refreshed after every ``drop`` action
            (minigrid's ``obj_poss``, which go stale when objects are picked up and not dropped).
        pre_carrying: ``uint8[4]`` the id carried when each leaf was last evaluated (0 = nothing).
        leaf_done: ``bool[4]`` clause finished; ``part_done``: ``bool[2]`` part finished.
    """

    obj_set: jax.Array
    plural: jax.Array
    id_snapshot: jax.Array
    pre_carrying: jax.Array
    leaf_done: jax.Array
    part_done: jax.Array


@struct.dataclass
class BabyAIParams(GridParams):
    """``GridParams`` plus the static room layout of a ``RoomGrid`` level."""

    room_size: int = struct.field(pytree_node=False, default=8)
    num_rows: int = struct.field(pytree_node=False, default=1)
    num_cols: int = struct.field(pytree_node=False, default=1)


@struct.dataclass
class BabyAIState:
    """A BabyAI episode: the grid world, its instruction and the verifier.

    Attributes:
        world: ``GridState`` (object identities live in the grid's ``OBJ_ID`` channel and ``carrying``).
        instr: ``Instruction``.
        verifier: ``VerifierState``.
        max_steps: ``int32[]`` this episode's step limit (``num_navs * room_size**2 * rows * cols``).
        mission: ``uint8[MAX_MISSION_TOKENS]`` the mission's word ids (``language.VOCAB``), 0-padded.
    """

    world: GridState
    instr: Instruction
    verifier: VerifierState
    max_steps: jax.Array
    mission: jax.Array


def make_instruction(leaves, seq: int = SEQ_NONE, strict=None) -> Instruction:
    """Builds an ``Instruction`` on the host from up to four leaves ``(action, [(type, color, loc), ...])``
    (``None`` for an absent leaf), in leaf order ``A.0, A.1, B.0, B.1``; ``strict``: the leaves' strict flags
    (a sequence of four booleans) or ``None`` for none."""
    action = [ACT_NONE] * MAX_LEAVES
    types = [[ANY_TYPE, ANY_TYPE] for _ in range(MAX_LEAVES)]
    colors = [[ANY_COLOR, ANY_COLOR] for _ in range(MAX_LEAVES)]
    locs = [[LOC_NONE, LOC_NONE] for _ in range(MAX_LEAVES)]
    for leaf, spec in enumerate(leaves):
        if spec is None:
            continue
        action[leaf], descs = spec
        for d, (t, c, loc) in enumerate(descs):
            types[leaf][d], colors[leaf][d], locs[leaf][d] = t, c, loc
    as_array = lambda x: jnp.asarray(x, jnp.int32)  # noqa: E731
    flags = None if strict is None else jnp.asarray(strict, bool).reshape(MAX_LEAVES)
    return Instruction(as_array(action), as_array(types), as_array(colors), as_array(locs), as_array(seq), flags)
