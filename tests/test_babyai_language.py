"""Baby Language text and tokens: minigrid's surface strings, the on-device encoder, tokenizer and decoder."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from babyai_reference import make_level
from hypothesis import given, settings
from hypothesis import strategies as st
from minigrid.envs.babyai.core.verifier import (
    AfterInstr,
    AndInstr,
    BeforeInstr,
    GoToInstr,
    ObjDesc,
    OpenInstr,
    PickupInstr,
    PutNextInstr,
)

from jaxsoc.envs.babyai import instr as I
from jaxsoc.envs.babyai import language
from jaxsoc.envs.babyai.compat import instruction_from_minigrid
from jaxsoc.envs.gridworld import constants as C

encode = jax.jit(language.encode_mission)

TYPES = (I.ANY_TYPE, C.KEY, C.BALL, C.BOX, C.DOOR)
desc = st.tuples(st.sampled_from(TYPES), st.integers(0, I.ANY_COLOR), st.integers(0, 4))
leaf = st.tuples(st.integers(I.ACT_GOTO, I.ACT_PUTNEXT), st.tuples(desc, desc))


@st.composite
def instructions(draw):
    leaves = [draw(leaf), draw(st.none() | leaf), None, None]
    seq = draw(st.integers(0, 2))
    if seq != I.SEQ_NONE:
        leaves[2:] = [draw(leaf), draw(st.none() | leaf)]
    plural = np.asarray(draw(st.lists(st.booleans(), min_size=8, max_size=8))).reshape(4, 2)
    return I.make_instruction(leaves, seq), plural


@settings(max_examples=60, deadline=None)
@given(instructions())
def test_encoded_mission_decodes_to_the_text(case):
    instruction, plural = case
    text = language.to_text(instruction, plural)
    ids = np.asarray(encode(instruction, plural))
    assert language.decode(ids) == text
    np.testing.assert_array_equal(language.tokenize(text), ids)


def test_longest_mission_fits_exactly():
    worst = (I.ACT_PUTNEXT, [(I.ANY_TYPE, C.PURPLE, I.LOC_FRONT)] * 2)
    instruction = I.make_instruction([worst] * 4, I.SEQ_AFTER)
    ids = np.asarray(encode(instruction, np.ones((4, 2), bool)))
    assert np.count_nonzero(ids) == I.MAX_MISSION_TOKENS
    assert language.decode(ids).startswith("put a purple object in front of you next to a purple object")


def test_tokenize_rejects_unknown_words_and_overlong_missions():
    with pytest.raises(ValueError, match="vocabulary.*'lamp'"):
        language.tokenize("go to the red lamp")
    with pytest.raises(ValueError, match="MAX_MISSION_TOKENS"):
        language.tokenize("go to the red ball and " * 13)
    with pytest.raises(ValueError, match="one instruction"):
        language.to_text(I.make_instruction([(I.ACT_GOTO, [(C.KEY, 0, 0)])]).replace(action=np.zeros((2, 4))), None)


def _random_tree(u, rng):
    """A random instruction tree over the objects of a reset minigrid level (every description matches)."""
    objs = [
        u.grid.get(x, y)
        for x in range(u.grid.width)
        for y in range(u.grid.height)
        if u.grid.get(x, y) is not None and u.grid.get(x, y).type != "wall"
    ]

    def description(obj):
        # the levels always name a type (minigrid's "object" would also match walls); locations are
        # drawn by the level generators themselves
        return ObjDesc(obj.type, obj.color if rng.random() < 0.6 else None)

    def clause():
        obj = objs[rng.integers(len(objs))]
        kind = rng.integers(4)
        if obj.type == "door" and kind == 1:
            return OpenInstr(description(obj))
        if kind == 2 and obj.type != "door":
            return PickupInstr(description(obj))
        if kind == 3 and obj.type != "door":
            return PutNextInstr(description(obj), description(objs[rng.integers(len(objs))]))
        return GoToInstr(description(obj))

    def part():
        return AndInstr(clause(), clause()) if rng.random() < 0.4 else clause()

    shape = rng.integers(3)
    return part() if shape == 0 else (BeforeInstr if shape == 1 else AfterInstr)(part(), part())


@pytest.mark.parametrize("name", ["GoToLocal", "SynthLoc", "BossLevel"])
def test_to_text_matches_minigrid_surface(name):
    rng = np.random.default_rng(0)
    for seed in range(4):
        ref = make_level(name, seed)
        u = ref.unwrapped
        for tree in [u.instrs] + [_random_tree(u, rng) for _ in range(10)]:
            u.instrs = tree
            tree.reset_verifier(u)
            instruction, verifier = instruction_from_minigrid(ref)
            assert language.to_text(instruction, verifier.plural) == tree.surface(u)
