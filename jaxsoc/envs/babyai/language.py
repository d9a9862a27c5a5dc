"""Baby Language text: minigrid's mission strings, the fixed vocabulary, and the ``mission`` token ids.

``to_text`` (host) writes an ``Instruction`` exactly as minigrid 3.2.0's ``Instr.surface`` does:
descriptions ``"<the|a> [colour] <type|object>[ in front of you| behind you| on your left| on your right]"``
(``a`` when the description matched more than one object at reset), leaves ``"go to X"``, ``"open X"``,
``"pick up X"``, ``"put X next to Y"``, parts ``"A and B"``, sequences ``"A, then B"`` and ``"A after you
B"``.

``encode_mission`` (jittable) writes the same words as ``uint8[MAX_MISSION_TOKENS]`` ids of ``VOCAB``
(0-padded); the comma of ``", then"`` is its own token, so ``decode`` gives the mission string back
character for character. ``tokenize`` is the host tokenizer of any mission string over ``VOCAB``.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.babyai import instr as I
from jaxsoc.envs.gridworld import constants as C

PAD = "<pad>"
VOCAB = (
    PAD,
    "go",
    "to",
    "open",
    "pick",
    "up",
    "put",
    "next",
    "the",
    "a",
    *C.COLOR_NAMES,
    "key",
    "ball",
    "box",
    "door",
    "object",
    "in",
    "front",
    "of",
    "you",
    "behind",
    "on",
    "your",
    "left",
    "right",
    "and",
    ",",
    "then",
    "after",
)
WORD_TO_ID = {word: i for i, word in enumerate(VOCAB)}

_TYPE_WORDS = {I.ANY_TYPE: "object", C.KEY: "key", C.BALL: "ball", C.BOX: "box", C.DOOR: "door"}
_LOC_PHRASES = {
    I.LOC_NONE: "",
    I.LOC_LEFT: " on your left",
    I.LOC_RIGHT: " on your right",
    I.LOC_FRONT: " in front of you",
    I.LOC_BEHIND: " behind you",
}


# ----------------------------------------------------------------------------------------------- host text
def describe(desc_type: int, desc_color: int, desc_loc: int, plural: bool) -> str:
    """Returns minigrid's ``ObjDesc.surface`` of one description."""
    words = _TYPE_WORDS[int(desc_type)]
    if int(desc_color) != I.ANY_COLOR:
        words = C.COLOR_NAMES[int(desc_color)] + " " + words
    return ("a " if plural else "the ") + words + _LOC_PHRASES[int(desc_loc)]


def to_text(instr: I.Instruction, plural) -> str:
    """Returns the mission string of one (unbatched) instruction; ``plural`` is ``bool[4, 2]``
    (``VerifierState.plural``)."""
    action, types, colors, locs, seq = (np.asarray(x) for x in (instr.action, *_descs(instr), instr.seq))
    plural = np.asarray(plural)
    if action.shape != (I.MAX_LEAVES,):
        raise ValueError(f"to_text takes one instruction (action shape (4,)), got action shape {action.shape}")

    def leaf(k: int) -> str:
        desc = [describe(types[k, d], colors[k, d], locs[k, d], plural[k, d]) for d in range(2)]
        kind = int(action[k])
        if kind == I.ACT_PUTNEXT:
            return f"put {desc[0]} next to {desc[1]}"
        return f"{I.ACTION_WORDS[kind]} {desc[0]}"

    def part(p: int) -> str:
        return " and ".join(leaf(k) for k in (2 * p, 2 * p + 1) if action[k] != I.ACT_NONE)

    if action[0] == I.ACT_NONE:
        raise ValueError("an instruction has at least one leaf (action[0] is ACT_NONE)")
    seq = int(seq)
    if seq == I.SEQ_NONE:
        return part(0)
    return part(0) + (", then " if seq == I.SEQ_BEFORE else " after you ") + part(1)


def _descs(instr: I.Instruction):
    return instr.desc_type, instr.desc_color, instr.desc_loc


def tokenize(text: str) -> np.ndarray:
    """Returns the ids (``int32[MAX_MISSION_TOKENS]``, 0-padded) of a mission string; raises
    ``ValueError`` on a word outside ``VOCAB`` or a mission longer than ``MAX_MISSION_TOKENS``."""
    words = re.findall(r"[a-z]+|,", text.lower())
    unknown = sorted({w for w in words if w not in WORD_TO_ID})
    if unknown:
        raise ValueError(f"words outside the Baby Language vocabulary: {unknown}")
    if len(words) > I.MAX_MISSION_TOKENS:
        raise ValueError(f"mission has {len(words)} tokens, more than MAX_MISSION_TOKENS={I.MAX_MISSION_TOKENS}")
    ids = np.zeros(I.MAX_MISSION_TOKENS, np.int32)
    ids[: len(words)] = [WORD_TO_ID[w] for w in words]
    return ids


def decode(ids) -> str:
    """Returns the mission string of one row of token ids (padding ignored): the reverse of ``tokenize``
    and ``encode_mission``."""
    words = [VOCAB[int(i)] for i in np.asarray(ids).reshape(-1) if int(i) != 0]
    return " ".join(words).replace(" ,", ",")


# ---------------------------------------------------------------------------------------- on-device tokens
def _ids(*words: str) -> list[int]:
    return [WORD_TO_ID[w] for w in words]


# Fixed slot layouts; a slot holds a word id or 0 (dropped by the compaction in ``encode_mission``).
_DESC_SLOTS = 7  # article, colour, type, up to four location words
_LOC_TABLE = np.zeros((5, 4), np.int32)
for _loc, _phrase in _LOC_PHRASES.items():
    _words = _ids(*_phrase.split())
    _LOC_TABLE[_loc, : len(_words)] = _words
_TYPE_TABLE = np.zeros(C.AGENT + 1, np.int32)
for _type, _word in _TYPE_WORDS.items():
    _TYPE_TABLE[_type] = WORD_TO_ID[_word]
_COLOR_TABLE = np.array(_ids(*C.COLOR_NAMES) + [0], np.int32)  # ANY_COLOR -> no word
_VERB_TABLE = np.array([[0, 0], _ids("go", "to"), _ids("open") + [0], _ids("pick", "up"), _ids("put") + [0]], np.int32)
_SEQ_TABLE = np.array([[0, 0], _ids(",", "then"), _ids("after", "you")], np.int32)
_AND, _NEXT_TO = WORD_TO_ID["and"], _ids("next", "to")


def _desc_slots(desc_type, desc_color, desc_loc, plural, used) -> jax.Array:
    article = jnp.where(plural, WORD_TO_ID["a"], WORD_TO_ID["the"])
    words = jnp.concatenate(
        [
            jnp.stack([article, jnp.asarray(_COLOR_TABLE)[desc_color], jnp.asarray(_TYPE_TABLE)[desc_type]]),
            jnp.asarray(_LOC_TABLE)[desc_loc],
        ]
    )
    return jnp.where(used, words, 0)


def _leaf_slots(action, desc_type, desc_color, desc_loc, plural) -> jax.Array:
    """Returns ``int32[18]``: verb (2), first description (7), ``next to`` (2), second description (7)."""
    putnext = action == I.ACT_PUTNEXT
    first = _desc_slots(desc_type[0], desc_color[0], desc_loc[0], plural[0], action != I.ACT_NONE)
    second = _desc_slots(desc_type[1], desc_color[1], desc_loc[1], plural[1], putnext)
    next_to = jnp.where(putnext, jnp.asarray(_NEXT_TO), 0)
    return jnp.concatenate([jnp.asarray(_VERB_TABLE)[action], first, next_to, second])


def encode_mission(instr: I.Instruction, plural: jax.Array) -> jax.Array:
    """Returns the mission's word ids, ``uint8[MAX_MISSION_TOKENS]`` (0-padded), of one instruction with
    ``plural`` ``bool[4, 2]``. Jittable and branch-free; ``decode`` of the result equals ``to_text``."""
    leaves = jax.vmap(_leaf_slots)(instr.action, instr.desc_type, instr.desc_color, instr.desc_loc, plural)
    joiner = lambda k: jnp.where(instr.action[k] != I.ACT_NONE, _AND, 0)[None]  # noqa: E731
    seq_words = jnp.asarray(_SEQ_TABLE)[instr.seq]
    slots = jnp.concatenate([leaves[0], joiner(1), leaves[1], seq_words, leaves[2], joiner(3), leaves[3]])
    keep = slots != 0
    position = jnp.where(keep, jnp.cumsum(keep) - 1, I.MAX_MISSION_TOKENS)
    out = jnp.zeros(I.MAX_MISSION_TOKENS, jnp.uint8)
    return out.at[position].set(slots.astype(jnp.uint8), mode="drop")
