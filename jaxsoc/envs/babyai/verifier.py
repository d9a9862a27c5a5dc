"""The Baby Language verifier of minigrid 3.2.0 (``envs/babyai/core/verifier.py``) as a branch-free function.

minigrid tracks objects by identity. Each description keeps ``obj_set``, the objects it matched at reset
(with the agent's reset pose for location words), and ``obj_poss``, their positions, refreshed only when the
agent performs a ``drop`` action (even a failed one), so after picking up a ``go to`` target, facing the
cell where it lay still counts. jaxsoc holds this as

* ``obj_set[leaf, desc, id]``: the ids (grid channel ``OBJ_ID``) each description matched at reset;
* ``id_snapshot[y, x]``: the ``OBJ_ID`` plane at reset, replaced by the current one on every ``drop``
  (``obj_poss`` of every description is then ``{cell : obj_set[id_snapshot[cell]]}``);
* ``pre_carrying[leaf]``: the id carried when the leaf was last evaluated (``preCarrying``; 0 = nothing,
  also the value of a leaf not yet evaluated).

Leaves: ``go to`` succeeds after any action that leaves the agent facing a snapshot cell of its set;
``open`` after a ``toggle`` that leaves a door of its set open in front; ``pick up`` after a ``pickup``
when nothing was carried at the leaf's previous evaluation and the carried object is in its set; ``put
next`` after a ``drop`` of the object carried at the previous evaluation, when it is in the move set and
the drop cell is a 4-neighbour of a snapshot cell of the fixed set. An ``and`` part evaluates its
unfinished clauses every step; a sequence evaluates its second part (B for "then", A for "after you") from
the step on which the first part finishes, that same step included.

Strict leaves (``Instruction.strict``, minigrid's ``strict=True``, used only by the ``*Debug`` levels) can
*fail*: a strict ``open`` leaf when a ``toggle`` leaves a door in front that is not an open door of its set
(another door, a locked one, or its own door closed again), a strict ``pick up`` leaf when a ``pickup`` action
ends with something carried that does not complete it (also a ``pickup`` while already carrying), a strict
``put next`` leaf on any ``pickup`` action that ends with something carried. As in minigrid, a failure only
counts for a leaf that is a whole part (an ``and`` part ignores its clauses' failures) and only when that
part is evaluated: then the instruction fails. So a sequence of two strict ``open`` leaves fails on the very
step its first door opens, when the second part is evaluated with the same ``toggle`` (minigrid's
``OpenDoorsOrder*Debug``). minigrid's strict sequences (``BeforeInstr(..., strict=True)``) and done-actions
are not modelled: no level uses them.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.babyai import instr as I
from jaxsoc.envs.babyai import roomgrid as RG
from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld.state import GridState

_DIR_TO_VEC = C.DIR_TO_VEC  # numpy: importing jaxsoc must not start a JAX backend
_LEAF_PART = np.array([0, 0, 1, 1])


def used_descriptions(instr: I.Instruction) -> jax.Array:
    """Returns ``bool[4, 2]``: which descriptions the instruction uses (the first of every present leaf,
    the second of a ``put next`` leaf)."""
    present = instr.action != I.ACT_NONE
    return jnp.stack([present, instr.action == I.ACT_PUTNEXT], axis=-1)


def match_sets(world: GridState, instr: I.Instruction, params: I.BabyAIParams) -> tuple[jax.Array, jax.Array]:
    """minigrid's ``find_matching_objs`` at the current pose for every description.

    Returns ``(obj_set, count)``: ``bool[4, 2, MAX_OBJECTS]`` the matching object ids and ``int32[4, 2]``
    how many objects matched (0 for unused descriptions). A description without a type ("the grey object")
    also matches minigrid's grey walls: they count (the text then says "a") but are not in ``obj_set``
    (a wall can be neither picked up, opened nor moved). An object the agent carries at reset (the
    ``PutNextS*N*Carrying`` levels) matches a description without a location: minigrid resets the verifier
    while it still lies on the grid, then hands it to the agent.
    """
    lay = RG.layout(params.room_size, params.num_rows, params.num_cols)
    ids = world.grid[..., C.OBJ_ID].astype(jnp.int32)
    kind, color = world.grid[..., C.TYPE].astype(jnp.int32), world.grid[..., C.COLOR].astype(jnp.int32)
    locations = RG.location_masks(lay, world.agent_pos, world.agent_dir)

    held_type, held_color = world.carrying[C.TYPE].astype(jnp.int32), world.carrying[C.COLOR].astype(jnp.int32)
    held_id = world.carrying[C.OBJ_ID].astype(jnp.int32)

    def one(desc_type, desc_color, desc_loc, used):
        mask = RG.match_mask(lay, world.grid, world.agent_pos, world.agent_dir, desc_type, desc_color, desc_loc)
        mask = mask & used
        held = (held_type != C.EMPTY) & used & (desc_loc == I.LOC_NONE)
        held = held & ((desc_type == I.ANY_TYPE) | (desc_type == held_type))
        held = held & ((desc_color == I.ANY_COLOR) | (desc_color == held_color))
        obj_set = jnp.zeros(I.MAX_OBJECTS, bool).at[ids].max(mask, mode="drop").at[held_id].max(held, mode="drop")
        obj_set = obj_set.at[0].set(False)
        walls = (kind == C.WALL) & (desc_type == I.ANY_TYPE) & ((desc_color == I.ANY_COLOR) | (color == desc_color))
        walls = walls & locations[desc_loc] & used
        return obj_set, jnp.sum(mask, dtype=jnp.int32) + jnp.sum(walls, dtype=jnp.int32) + held.astype(jnp.int32)

    per_desc = jax.vmap(jax.vmap(one))
    return per_desc(instr.desc_type, instr.desc_color, instr.desc_loc, used_descriptions(instr))


def init_verifier(world: GridState, instr: I.Instruction, params: I.BabyAIParams) -> I.VerifierState:
    """Returns the ``VerifierState`` of a new episode (minigrid's ``reset_verifier``)."""
    obj_set, count = match_sets(world, instr, params)
    return I.VerifierState(
        obj_set=obj_set,
        plural=count > 1,
        id_snapshot=world.grid[..., C.OBJ_ID],
        pre_carrying=jnp.zeros(I.MAX_LEAVES, jnp.uint8),
        leaf_done=jnp.zeros(I.MAX_LEAVES, bool),
        part_done=jnp.zeros(2, bool),
    )


def leaf_success(
    verifier: I.VerifierState, instr: I.Instruction, world: GridState, action: jax.Array, dropped: jax.Array
) -> jax.Array:
    """Returns ``bool[4]``: whether each leaf would report success if evaluated now.

    ``world`` is the state after the action, ``verifier.id_snapshot`` already refreshed for a ``drop`` and
    ``dropped`` whether the action put the carried object down.
    """
    height, width = world.grid.shape[:2]
    front = world.agent_pos + jnp.asarray(_DIR_TO_VEC)[world.agent_dir]
    fx, fy = jnp.clip(front[0], 0, width - 1), jnp.clip(front[1], 0, height - 1)
    front_cell = world.grid[fy, fx]
    carried = world.carrying[C.OBJ_ID].astype(jnp.int32)
    pre = verifier.pre_carrying.astype(jnp.int32)
    snapshot = verifier.id_snapshot.astype(jnp.int32)
    first, second = verifier.obj_set[:, 0], verifier.obj_set[:, 1]  # [4, MAX_OBJECTS]

    go_to = first[:, snapshot[fy, fx]]
    door_open = (front_cell[C.TYPE] == C.DOOR) & (front_cell[C.STATE] == C.OPEN)
    opened = (action == C.TOGGLE) & door_open & first[:, front_cell[C.OBJ_ID]]
    picked = (action == C.PICKUP) & (pre == 0) & (carried != 0) & first[:, carried]
    # the object carried at the leaf's previous evaluation was just dropped in front of the agent
    around = jnp.stack([front + _DIR_TO_VEC[d] for d in range(4)])
    ax, ay = jnp.clip(around[:, 0], 0, width - 1), jnp.clip(around[:, 1], 0, height - 1)
    beside_fixed = jnp.any(second[:, snapshot[ay, ax]], axis=-1)
    put = (action == C.DROP) & dropped & (pre != 0) & first[jnp.arange(I.MAX_LEAVES), pre] & beside_fixed

    kind = instr.action
    return (
        ((kind == I.ACT_GOTO) & go_to)
        | ((kind == I.ACT_OPEN) & opened)
        | ((kind == I.ACT_PICKUP) & picked)
        | ((kind == I.ACT_PUTNEXT) & put)
    )


def leaf_failure(instr: I.Instruction, world: GridState, action: jax.Array, success: jax.Array) -> jax.Array:
    """Returns ``bool[4]``: whether each leaf would report ``"failure"`` if evaluated now (only strict
    leaves can; all False when ``instr.strict`` is None).

    ``world`` is the state after the action and ``success`` the leaves' ``leaf_success``.
    """
    if instr.strict is None:
        return jnp.zeros(I.MAX_LEAVES, bool)
    height, width = world.grid.shape[:2]
    front = world.agent_pos + jnp.asarray(_DIR_TO_VEC)[world.agent_dir]
    fx, fy = jnp.clip(front[0], 0, width - 1), jnp.clip(front[1], 0, height - 1)
    toggled_door = (action == C.TOGGLE) & (world.grid[fy, fx, C.TYPE] == C.DOOR)
    picked_something = (action == C.PICKUP) & (world.carrying[C.TYPE] != C.EMPTY)
    kind = instr.action
    failed = (
        ((kind == I.ACT_OPEN) & toggled_door & ~success)
        | ((kind == I.ACT_PICKUP) & picked_something & ~success)
        | ((kind == I.ACT_PUTNEXT) & picked_something)
    )
    return failed & instr.strict


def verify(
    verifier: I.VerifierState, instr: I.Instruction, world: GridState, action: jax.Array, dropped: jax.Array
) -> tuple[I.VerifierState, jax.Array]:
    """One step of minigrid's ``update_objs_poss`` (on ``drop``) and ``instrs.verify(action)``.

    ``world`` is the state after the action. Returns ``(verifier, success)``; ``success`` is ``bool[]``.
    A failed strict instruction (see ``verify_status``) is not reported here.
    """
    verifier, success, _ = verify_status(verifier, instr, world, action, dropped)
    return verifier, success


def verify_status(
    verifier: I.VerifierState, instr: I.Instruction, world: GridState, action: jax.Array, dropped: jax.Array
) -> tuple[I.VerifierState, jax.Array, jax.Array]:
    """``verify`` with minigrid's three outcomes: returns ``(verifier, success, failure)``, ``bool[]`` each
    (never both True; ``failure`` only with strict leaves, see the module docstring)."""
    action = jnp.asarray(action, jnp.int32)
    snapshot = jnp.where(action == C.DROP, world.grid[..., C.OBJ_ID], verifier.id_snapshot)
    verifier = verifier.replace(id_snapshot=snapshot)
    success = leaf_success(verifier, instr, world, action, dropped)

    present = instr.action != I.ACT_NONE
    part = jnp.asarray(_LEAF_PART)
    is_seq = instr.seq != I.SEQ_NONE
    first_part = jnp.where(instr.seq == I.SEQ_AFTER, 1, 0)
    in_first = part == first_part
    in_second = (part != first_part) & is_seq

    def part_finished(done, in_part):
        return jnp.all(done | ~present | ~in_part)

    eval_first = present & in_first & ~verifier.leaf_done
    done = verifier.leaf_done | (eval_first & success)
    first_done = part_finished(done, in_first)
    eval_second = present & in_second & ~done & first_done
    done = done | (eval_second & success)
    finished = first_done & (~is_seq | part_finished(done, in_second))

    evaluated = eval_first | eval_second
    # a failing leaf fails the instruction when it is a whole part (an "and" part swallows the failure)
    alone = jnp.sum(present[None, :] & (part[None, :] == jnp.arange(2)[:, None]), axis=1)[part] == 1
    failure = jnp.any(evaluated & alone & leaf_failure(instr, world, action, success))
    carried = world.carrying[C.OBJ_ID]
    verifier = verifier.replace(
        pre_carrying=jnp.where(evaluated, carried, verifier.pre_carrying),
        leaf_done=done,
        part_done=jnp.stack([part_finished(done, part == 0), part_finished(done, part == 1)]),
    )
    return verifier, finished, failure
