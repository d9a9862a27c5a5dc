"""Import a live minigrid 3.2.0 BabyAI environment (a ``RoomGridLevel``) into a jaxsoc ``BabyAIState``.

For differential tests and for driving jaxsoc from minigrid's levels. Like ``gridworld.compat`` this
module never imports minigrid: it reads the env's attributes (grid, agent, ``instrs`` tree) by duck typing.
Object identities become the grid's ``OBJ_ID`` channel (``gridworld.compat.object_ids``), and every
description's ``obj_set`` becomes the set of those ids, so the verifier tracks the same objects. The leaves'
``strict`` flags (minigrid's ``*Debug`` levels) become ``Instruction.strict`` (``None`` when no leaf is strict).
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.babyai import instr as I
from jaxsoc.envs.babyai import language
from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld.compat import grid_state_from_minigrid, object_ids

_ACTIONS = {
    "GoToInstr": I.ACT_GOTO,
    "OpenInstr": I.ACT_OPEN,
    "PickupInstr": I.ACT_PICKUP,
    "PutNextInstr": I.ACT_PUTNEXT,
}
_SEQS = {"BeforeInstr": I.SEQ_BEFORE, "AfterInstr": I.SEQ_AFTER}


def _kind(node: Any) -> str:
    return type(node).__name__


def _parts(instrs: Any) -> tuple[int, list[tuple[Any, Any]]]:
    """Returns ``(seq, parts)``: each part is ``(node, done_flag_owner)`` listing its leaves' nodes and
    ``done`` values as ``[(leaf, done), ...]``."""
    kind = _kind(instrs)
    if kind in _SEQS:
        parts = [(instrs.instr_a, instrs.a_done), (instrs.instr_b, instrs.b_done)]
        return _SEQS[kind], parts
    return I.SEQ_NONE, [(instrs, False)]


def _leaves(part: Any, part_done: Any) -> list[tuple[Any, bool]]:
    """Returns ``[(leaf, done), ...]`` of one part (an ``AndInstr`` or a single action)."""
    if _kind(part) == "AndInstr":
        return [(part.instr_a, part.a_done == "success"), (part.instr_b, part.b_done == "success")]
    if _kind(part) not in _ACTIONS:
        raise ValueError(f"unsupported instruction node {_kind(part)}: Baby Language parts are actions or 'and'")
    return [(part, part_done == "success")]


def _descriptions(leaf: Any) -> list[Any]:
    return [leaf.desc_move, leaf.desc_fixed] if _kind(leaf) == "PutNextInstr" else [leaf.desc]


def instruction_from_minigrid(env: Any) -> tuple[I.Instruction, I.VerifierState]:
    """Returns the ``Instruction`` and ``VerifierState`` of a minigrid env's ``instrs`` tree: descriptions,
    matched object ids (``obj_set``), plural flags, each leaf's ``preCarrying`` and finished clauses.

    The position snapshot is the current object-id plane. That is minigrid's ``obj_poss`` at reset and after
    every ``drop``; an env imported after an object of some description moved since the last ``drop`` raises
    ``ValueError`` (its stale ``obj_poss`` cannot be expressed as a snapshot of this grid).
    """
    u = env.unwrapped
    ids = object_ids(env)
    if len(ids) >= I.MAX_OBJECTS:
        raise ValueError(f"{len(ids)} objects exceed the verifier's MAX_OBJECTS={I.MAX_OBJECTS - 1}")
    seq, parts = _parts(u.instrs)
    if getattr(u.instrs, "strict", False) and seq != I.SEQ_NONE:
        raise ValueError("strict sequences (BeforeInstr/AfterInstr(..., strict=True)) are not supported")
    action = np.zeros(I.MAX_LEAVES, np.int32)
    strict = np.zeros(I.MAX_LEAVES, bool)
    count = np.zeros((I.MAX_LEAVES, 2), np.int32)
    types = np.full((I.MAX_LEAVES, 2), I.ANY_TYPE, np.int32)
    colors = np.full((I.MAX_LEAVES, 2), I.ANY_COLOR, np.int32)
    locs = np.full((I.MAX_LEAVES, 2), I.LOC_NONE, np.int32)
    obj_set = np.zeros((I.MAX_LEAVES, 2, I.MAX_OBJECTS), bool)
    pre_carrying = np.zeros(I.MAX_LEAVES, np.uint8)
    leaf_done = np.zeros(I.MAX_LEAVES, bool)
    for p, (part, part_done) in enumerate(parts):
        for c, (leaf, done) in enumerate(_leaves(part, part_done)):
            k = 2 * p + c
            action[k], leaf_done[k] = _ACTIONS[_kind(leaf)], done
            strict[k] = bool(getattr(leaf, "strict", False))
            carried = getattr(leaf, "preCarrying", None)
            pre_carrying[k] = ids[id(carried)] if carried is not None else 0
            for d, desc in enumerate(_descriptions(leaf)):
                types[k, d] = I.ANY_TYPE if desc.type is None else C.OBJECT_TO_IDX[desc.type]
                colors[k, d] = I.ANY_COLOR if desc.color is None else C.COLOR_TO_IDX[desc.color]
                locs[k, d] = I.LOC_NONE if desc.loc is None else I.LOC_NAMES.index(desc.loc)
                walls = [obj for obj in desc.obj_set if obj.type == "wall"]
                if walls and (action[k] == I.ACT_GOTO or d == 1):
                    # facing a wall would complete it in minigrid; jaxsoc only counts walls (for the article)
                    raise ValueError(f"description {desc.surface(u)!r} matches walls as a go-to or put-next target")
                obj_set[k, d, [ids[id(obj)] for obj in desc.obj_set if obj.type != "wall"]] = True
                count[k, d] = len(desc.obj_set)
                _check_positions(u, desc)
    instruction = I.Instruction(
        *(jnp.asarray(x) for x in (action, types, colors, locs)),
        seq=jnp.int32(seq),
        strict=jnp.asarray(strict) if strict.any() else None,
    )
    part_of = np.array([0, 0, 1, 1])
    present = action != I.ACT_NONE
    part_done = [bool(np.all(leaf_done | ~present | (part_of != p))) for p in range(2)]
    grid_ids = grid_state_from_minigrid(env).grid[..., C.OBJ_ID]
    verifier = I.VerifierState(
        obj_set=jnp.asarray(obj_set),
        plural=jnp.asarray(count > 1),
        id_snapshot=grid_ids,
        pre_carrying=jnp.asarray(pre_carrying),
        leaf_done=jnp.asarray(leaf_done),
        part_done=jnp.asarray(part_done),
    )
    return instruction, verifier


def _check_positions(u: Any, desc: Any) -> None:
    tracked = {id(obj) for obj in desc.obj_set}
    current = {
        (x, y)
        for x in range(u.grid.width)
        for y in range(u.grid.height)
        if id(u.grid.get(x, y)) in tracked and u.grid.get(x, y) is not None
    }
    recorded = {(int(x), int(y)) for x, y in desc.obj_poss}
    # the PutNextS*N*Carrying levels reset the verifier before handing the agent its object: minigrid keeps that
    # object's old cell, which it never reads (the next drop recomputes the positions)
    handed_over = u.carrying is not None and id(u.carrying) in tracked and len(recorded - current) == 1
    if current != recorded and not (handed_over and current < recorded):
        raise ValueError(
            "minigrid's obj_poss is stale (an object moved since the last drop); import the env at reset "
            "or right after a drop"
        )


def from_minigrid(env: Any) -> tuple[I.BabyAIState, I.BabyAIParams]:
    """Returns ``(state, params)`` of a reset (or mid-episode, see ``instruction_from_minigrid``) minigrid
    BabyAI env: grid with object ids, agent, carried object, step count, the instruction tree with the
    objects each description matched, the episode's ``max_steps`` and the room layout."""
    u = env.unwrapped
    world = grid_state_from_minigrid(env)
    instruction, verifier = instruction_from_minigrid(env)
    params = I.BabyAIParams(
        max_steps=int(u.max_steps),
        height=int(u.grid.height),
        width=int(u.grid.width),
        view_size=int(u.agent_view_size),
        see_through_walls=bool(u.see_through_walls),
        room_size=int(u.room_size),
        num_rows=int(u.num_rows),
        num_cols=int(u.num_cols),
    )
    state = I.BabyAIState(
        world=world,
        instr=instruction,
        verifier=verifier,
        max_steps=jnp.int32(u.max_steps),
        mission=language.encode_mission(instruction, verifier.plural),
    )
    return state, params
