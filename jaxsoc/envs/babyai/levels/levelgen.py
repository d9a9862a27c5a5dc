"""minigrid 3.2.0's ``LevelGen`` (``envs/babyai/core/levelgen.py``) and its paper levels: PickupLoc, GoToSeq,
Synth, SynthLoc, SynthSeq and BossLevel.

A LevelGen attempt: with probability ``locked_room_prob`` a locked room (LevelGen's ``add_locked_room``) and
its key; ``connect_all``; ``num_dists`` distractors in random rooms (the locked room included); the agent
outside the locked room; without ``unblocking``, every object reachable; then a random instruction
(``rand_instr``) checked by ``validate_instrs``.

``rand_obj`` draws a colour (6 colours or none, uniformly), a type from the allowed ones (uniformly; LevelGen
never describes an object as plain "object") and, with ``locations``, a location with probability 1/2, and
redraws until the description matches an object (with ``implicit_unlock=False`` and a locked room: an
object outside the locked room), at most 101 draws before the level restarts. Its accepted description is
uniform over the matching ones under those weights, so it is drawn here in one step from a table of match
counts, and the level restarts with the probability ``(1 - p)**101`` that all 101 draws miss, ``p`` being
the chance that one draw matches.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.babyai import instr as I
from jaxsoc.envs.babyai import roomgrid as RG
from jaxsoc.envs.babyai.levels.common import LevelGenerator
from jaxsoc.envs.gridworld import constants as C
from jaxsoc.envs.gridworld import placement as P

KIND_ACTION, KIND_AND, KIND_SEQ = range(3)
ALL_ACTIONS = (I.ACT_GOTO, I.ACT_PICKUP, I.ACT_OPEN, I.ACT_PUTNEXT)
RAND_OBJ_TRIES = 101  # rand_obj(max_tries=100) raises once num_tries > 100, after 101 draws
# Expanded location axis: LOC_NONE four times (probability 1/2), then the four locations (1/8 each).
LOC_SLOTS = np.array([I.LOC_NONE] * 4 + [I.LOC_LEFT, I.LOC_RIGHT, I.LOC_FRONT, I.LOC_BEHIND], np.int32)
# Allowed description types (index into roomgrid.DESC_TYPES = door, key, ball, box).
ANY_OBJECT = np.array([True, True, True, True])
NOT_DOOR = np.array([False, True, True, True])
DOOR_ONLY = np.array([True, False, False, False])


@dataclasses.dataclass(frozen=True)
class LevelGenConfig:
    """LevelGen's options (minigrid's constructor arguments; action and instruction kinds as codes)."""

    num_dists: int = 18
    locked_room_prob: float = 0.5
    locations: bool = True
    unblocking: bool = True
    implicit_unlock: bool = True
    action_kinds: tuple[int, ...] = ALL_ACTIONS
    instr_kinds: tuple[int, ...] = (KIND_ACTION, KIND_AND, KIND_SEQ)


def _structure(bits: RG.Bits, config: LevelGenConfig):
    """``rand_instr``'s shape: returns ``(leaf_active bool[4], action int32[4], seq int32[])``. ``and`` fills
    leaves 0 and 1; ``seq`` joins part A (leaf 0, or leaves 0-1 for an ``and``) and part B (2, or 2-3)."""
    w = bits.take(8)
    kind = jnp.asarray(config.instr_kinds)[P.below(w[0], len(config.instr_kinds))]
    is_seq = kind == KIND_SEQ
    a_and = (kind == KIND_AND) | (is_seq & (P.below(w[1], 2) == 1))
    b_and = is_seq & (P.below(w[2], 2) == 1)
    seq = jnp.where(is_seq, jnp.where(P.below(w[3], 2) == 0, I.SEQ_BEFORE, I.SEQ_AFTER), I.SEQ_NONE)
    active = jnp.stack([jnp.bool_(True), a_and, is_seq, b_and])
    kinds = jnp.asarray(config.action_kinds)[P.below(w[4:8], len(config.action_kinds))]
    return active, jnp.where(active, kinds, I.ACT_NONE).astype(jnp.int32), seq.astype(jnp.int32)


def _rand_obj(words: jax.Array, valid: jax.Array, allowed: jax.Array):
    """One ``rand_obj``: ``valid`` ``bool[7, 4, L]`` (descriptions that match, on the expanded location
    axis), ``allowed`` ``bool[4]``. Returns ``(type, color, loc, fails)`` with ``fails`` True when all 101
    draws of minigrid would miss. Takes 2 words."""
    mask = valid & allowed[None, :, None]
    total = valid.shape[0] * jnp.sum(allowed) * valid.shape[2]
    p = jnp.sum(mask) / total
    miss_all = jnp.exp(RAND_OBJ_TRIES * jnp.log1p(-jnp.minimum(p, 0.999999)))
    u = (words[1] >> 8).astype(jnp.float32) * (1.0 / (1 << 24))
    index = P.choose_index(words[0], mask)
    num_loc = valid.shape[2]
    color, t, slot = index // (4 * num_loc), (index // num_loc) % 4, index % num_loc
    loc = jnp.asarray(LOC_SLOTS)[slot] if num_loc > 1 else jnp.int32(I.LOC_NONE)
    fails = ~jnp.any(mask) | (u < miss_all)
    return jnp.asarray(RG.DESC_TYPES)[t], color.astype(jnp.int32), loc, fails


def rand_instr(bits: RG.Bits, lay: RG.Layout, state: RG.RoomGridState, config: LevelGenConfig):
    """``rand_instr`` + ``validate_instrs`` for the generated level. Returns ``(Instruction, accepted)``.
    Takes 24 words."""
    active, action, seq = _structure(bits, config)
    pose = (state.grid, state.agent_pos, state.agent_dir)
    counts = RG.match_counts(lay, *pose)
    valid = counts > 0
    has_locked = state.locked_room >= 0
    if not config.implicit_unlock:
        outside = RG.match_counts(lay, *pose, region=~lay.room_rect(jnp.maximum(state.locked_room, 0)))
        valid = valid & (~has_locked | (outside > 0))
    valid = valid[..., LOC_SLOTS] if config.locations else valid[..., :1]
    words = bits.take(4 * 2 * 2).reshape(8, 2)
    slot_leaf = np.repeat(np.arange(I.MAX_LEAVES), 2)
    slot_action = action[slot_leaf]
    fixed_slot = jnp.asarray(np.tile([False, True], I.MAX_LEAVES))
    allowed = jnp.where(
        fixed_slot[:, None] | (slot_action == I.ACT_GOTO)[:, None],
        jnp.asarray(ANY_OBJECT),
        jnp.where((slot_action == I.ACT_OPEN)[:, None], jnp.asarray(DOOR_ONLY), jnp.asarray(NOT_DOOR)),
    )
    t, c, loc, fail = jax.vmap(_rand_obj, in_axes=(0, None, 0))(words, valid, allowed)
    used = active[slot_leaf] & (~fixed_slot | (slot_action == I.ACT_PUTNEXT))
    shape = (I.MAX_LEAVES, 2)
    desc_type = jnp.where(used, t, I.ANY_TYPE).reshape(shape).astype(jnp.int32)
    desc_color = jnp.where(used, c, I.ANY_COLOR).reshape(shape).astype(jnp.int32)
    desc_loc = jnp.where(used, loc, I.LOC_NONE).reshape(shape).astype(jnp.int32)
    instruction = I.Instruction(action, desc_type, desc_color, desc_loc, seq)
    accepted = ~jnp.any(used & fail)

    # validate_instrs: a put-next whose object sets meet or already touch is rejected
    def touching(types, colors, locs):
        move = RG.match_mask(lay, *pose, types[0], colors[0], locs[0])
        fixed = RG.match_mask(lay, *pose, types[1], colors[1], locs[1])
        return jnp.any(move & RG.dilate(fixed))

    touch = jax.vmap(touching)(desc_type, desc_color, desc_loc)
    accepted &= ~jnp.any((action == I.ACT_PUTNEXT) & touch)
    if config.unblocking:
        # ... and so is any mention of a key of a locked door's colour
        locked_colors = jnp.zeros(C.NUM_COLORS + 1, bool).at[state.door_color].max(state.door_on & state.door_locked)
        locked_colors = locked_colors.at[I.ANY_COLOR].set(False)
        accepted &= ~jnp.any((desc_type == C.KEY) & locked_colors[desc_color])
    return instruction, accepted


def make_attempt(config: LevelGenConfig):
    """Returns the LevelGen attempt ``attempt(bits, lay) -> (RoomGridState, Instruction, accepted)``."""

    def attempt(bits: RG.Bits, lay: RG.Layout):
        state = RG.init(lay, bits)
        first_id = lay.num_walls + 1
        if config.locked_room_prob > 0:
            threshold = jnp.uint32(min(int(config.locked_room_prob * 2**32), 2**32 - 1))
            lock = bits.one() < threshold
            locked, _ = RG.add_locked_room(lay, state, bits, first_id, room_first=False)
            state = jax.tree.map(lambda a, b: jnp.where(lock, a, b), locked, state)
        state = RG.connect_all(lay, state, bits)
        state, _, _, _ = RG.add_distractors(lay, state, bits, config.num_dists, first_id + 1)
        state = RG.place_agent(lay, state, bits, jnp.arange(lay.num_rooms) != state.locked_room)
        accepted = jnp.bool_(True) if config.unblocking else RG.objects_reachable(state)
        instruction, valid = rand_instr(bits, lay, state, config)
        return state, instruction, accepted & valid

    return attempt


CONFIGS = {
    "PickupLoc": LevelGenConfig(
        num_dists=8,
        locked_room_prob=0.0,
        locations=True,
        unblocking=False,
        action_kinds=(I.ACT_PICKUP,),
        instr_kinds=(KIND_ACTION,),
    ),
    "GoToSeq": LevelGenConfig(locked_room_prob=0.0, locations=False, unblocking=False, action_kinds=(I.ACT_GOTO,)),
    "Synth": LevelGenConfig(locations=False, implicit_unlock=False, instr_kinds=(KIND_ACTION,)),
    "SynthLoc": LevelGenConfig(locations=True, implicit_unlock=False, instr_kinds=(KIND_ACTION,)),
    "SynthSeq": LevelGenConfig(locations=True, implicit_unlock=False),
    "BossLevel": LevelGenConfig(),
}

GENERATORS = {name: LevelGenerator(name, make_attempt(config)) for name, config in CONFIGS.items()}
