"""EXCALIBUR's questions: answering (jnp, jit/vmap-able), generation and entropy filtering (numpy host), and their
text (``question_text``, re-exported here).

**Rows.** A question is an ``int16[QUESTION_SLOTS]`` row (``state``): ``FAMILY`` 1..11 (Table 5 of the
supplementary), ``REL`` (1 + a ``catalogue.RELATIONS`` index, 0 when the family has none) and descriptors
``(C, M, S)`` for objects 1, 2, 3 (1 + a colour / material / type index; 0 omits the word, a type of 0 reads
"object"). ``FAMILY_SLOTS`` says which slots a family uses; a row with a non-zero unused slot is invalid.

**Semantics (jaxsoc's reconstruction).** A descriptor ``(C, M, S)`` matches a valid object when ``C`` is 0 or
one of its salient colours, ``M`` is 0 or one of its materials and ``S`` is 0 or its type. "The X" must match
exactly one object, else the question is invalid in that house. "Same colour" / "same material" compare the
most salient colour / material (the first one). The families (``R`` a relation, ``rel[R, x, y]`` is "x <R> y",
see ``relations``):

1. How many [C2][M2][S2] are <R> the [C1][M1][S1]? -> ``COUNT0 + min(count, MAX_COUNT)``
2. Are there any [C2][M2][S2] <R> the [C1][M1][S1]? -> yes/no
3. What color is the [M2][S2] <R> the [C1][M1][S1]? -> the colour (the set "X <R> the Y" has one member)
4. What material is the [C2][S2] <R> the [C1][M1][S1]? -> the material (likewise)
5. What is the [C2][M2] object <R> the [C1][M1][S1]? -> the type (likewise)
6. Is there anything else with the same color as the [C1][M1][S1]? -> yes/no (any other valid object)
7. Is there anything else made of the same material as the [C1][M1][S1]? -> yes/no
8. Do the [M1][S1] and the [M2][S2] have the same color? -> yes/no (two distinct referents)
9. Do the [C1][S1] and the [C2][S2] have the same material? -> yes/no
10. Do the [M1][S1] <R> the [C3][M3][S3] and the [M2][S2] have the same color? -> yes/no (the first referent is
    the one object matching [M1][S1] that is <R> the object 3; it must differ from object 2)
11. Do the [C1][S1] <R> the [C3][M3][S3] and the [C2][S2] have the same material? -> yes/no

**Partial knowledge.** ``facts(house, known=(seen, lifted))`` treats unseen objects as absent (they match
nothing, count for nothing and block no line of adjacency) and lets ``HEAVIER`` / ``LIGHTER`` hold only between
lifted objects: the answers a bot can give from what it saw.

**Generation and filtering.** ``candidates`` draws questions from one house's own objects so that every "the X"
resolves uniquely there; ``filter_questions`` runs Algorithm 2 over a population of houses (with one change the
brief asked for: every unique candidate is answered in *every* house, not only in the houses that generated it,
so that the answer histograms have support); ``assign`` gives each house the kept questions valid in it and
``attach`` does both and writes them into the houses.
"""

from __future__ import annotations

import functools
import time

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxsoc.envs.excalibur import catalogue as K
from jaxsoc.envs.excalibur import relations as RL
from jaxsoc.envs.excalibur import state as S
from jaxsoc.envs.excalibur.question_text import DESCRIPTOR_COLUMNS as _DESCRIPTOR_COLUMNS
from jaxsoc.envs.excalibur.question_text import answer_text as answer_text
from jaxsoc.envs.excalibur.question_text import descriptor_text as descriptor_text
from jaxsoc.envs.excalibur.question_text import question_text as question_text
from jaxsoc.envs.excalibur.question_text import type_words as type_words

FAMILIES = tuple(range(1, S.NUM_FAMILIES + 1))
RELATION_FAMILIES = (1, 2, 3, 4, 5, 10, 11)
#: the descriptor words (``"CMS"`` subsets) each family uses for objects 1, 2, 3
FAMILY_WORDS = {
    1: ("CMS", "CMS", ""),
    2: ("CMS", "CMS", ""),
    3: ("CMS", "MS", ""),
    4: ("CMS", "CS", ""),
    5: ("CMS", "CM", ""),
    6: ("CMS", "", ""),
    7: ("CMS", "", ""),
    8: ("MS", "MS", ""),
    9: ("CS", "CS", ""),
    10: ("MS", "MS", "CMS"),
    11: ("CS", "CS", "CMS"),
}


def _family_slots() -> np.ndarray:
    slots = np.zeros((S.NUM_FAMILIES + 1, S.QUESTION_SLOTS), bool)
    for family, words in FAMILY_WORDS.items():
        slots[family, S.FAMILY] = True
        slots[family, S.REL] = family in RELATION_FAMILIES
        for columns, used in zip(_DESCRIPTOR_COLUMNS, words):
            for column, word in zip(columns, "CMS"):
                slots[family, column] = word in used
    return slots


#: ``bool[NUM_FAMILIES + 1, QUESTION_SLOTS]`` the slots a family may set (row 0: padding, none)
FAMILY_SLOTS = _family_slots()
#: ``int32[QUESTION_SLOTS]`` the largest value of each slot
SLOT_MAX = np.array([S.NUM_FAMILIES, K.NUM_RELATIONS] + [K.NUM_COLORS, K.NUM_MATERIALS, K.NUM_TYPES] * 3, np.int32)


# ---------------------------------------------------------------------------------------------------------------
# answering (jnp)
# ---------------------------------------------------------------------------------------------------------------


class Facts(struct.PyTreeNode):
    """What answering needs of a house, precomputed once (add a leading axis for a population).

    - ``valid`` bool[N] (the objects that exist, or that were seen); ``type`` int32[N].
    - ``color_bits`` / ``material_bits`` int32[N]: bit ``c`` set for each salient colour / material ``c``.
    - ``color`` / ``material`` int32[N]: the most salient colour / material (-1 for none).
    - ``rel`` bool[NUM_RELATIONS, N, N]: ``relations.relations``.
    """

    valid: jax.Array
    type: jax.Array
    color_bits: jax.Array
    material_bits: jax.Array
    color: jax.Array
    material: jax.Array
    rel: jax.Array


def _bits(values: jax.Array) -> jax.Array:
    values = values.astype(jnp.int32)
    return jnp.sum(jnp.where(values >= 0, jnp.left_shift(1, jnp.maximum(values, 0)), 0), axis=-1)


def facts(
    house: S.House,
    known: tuple[jax.Array, jax.Array] | None = None,
    cell_metres: float = 0.5,
    adjacent_metres: float = 0.5,
) -> Facts:
    """Returns the ``Facts`` of ``house``; with ``known = (seen bool[N], lifted bool[N])`` unseen objects are
    absent and mass relations need both masses lifted. The metres are static Python floats."""
    if known is None:
        valid, lifted = house.valid, None
    else:
        seen, lifted = known
        valid = house.valid & seen
    house = house.replace(valid=valid)
    return Facts(
        valid=valid,
        type=house.type.astype(jnp.int32),
        color_bits=_bits(house.colors),
        material_bits=_bits(house.materials),
        color=house.colors[:, 0].astype(jnp.int32),
        material=house.materials[:, 0].astype(jnp.int32),
        rel=RL.relations(house, cell_metres, adjacent_metres, known_mass=lifted),
    )


def _match(f: Facts, c: jax.Array, m: jax.Array, s: jax.Array) -> jax.Array:
    """Returns ``bool[N]``: the objects the descriptor ``(c, m, s)`` (1-based, 0 = any) matches."""
    has_c = (jnp.right_shift(f.color_bits, jnp.maximum(c - 1, 0)) & 1) == 1
    has_m = (jnp.right_shift(f.material_bits, jnp.maximum(m - 1, 0)) & 1) == 1
    return f.valid & ((c == 0) | has_c) & ((m == 0) | has_m) & ((s == 0) | (f.type == s - 1))


def answer_facts(f: Facts, question: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Returns ``(answer int32, valid bool)`` for one ``int16[QUESTION_SLOTS]`` row on precomputed ``Facts``
    (``answer`` is -1 where invalid). O(N); vmap over questions and/or houses."""
    q = question.astype(jnp.int32)
    family = jnp.clip(q[S.FAMILY], 0, S.NUM_FAMILIES)
    n = f.valid.shape[0]
    idx = jnp.arange(n)
    well_formed = (q[S.FAMILY] >= 1) & (q[S.FAMILY] <= S.NUM_FAMILIES)
    well_formed &= jnp.all((q >= 0) & (q <= jnp.asarray(SLOT_MAX)))
    well_formed &= jnp.all(jnp.asarray(FAMILY_SLOTS)[family] | (q == 0))
    has_rel = q[S.REL] >= 1
    r = jnp.clip(q[S.REL] - 1, 0, K.NUM_RELATIONS - 1)

    m1 = _match(f, q[S.C1], q[S.M1], q[S.S1])
    m2 = _match(f, q[S.C2], q[S.M2], q[S.S2])
    m3 = _match(f, q[S.C3], q[S.M3], q[S.S3])
    one1, one2, one3 = jnp.sum(m1) == 1, jnp.sum(m2) == 1, jnp.sum(m3) == 1
    y1, y2, y3 = jnp.argmax(m1), jnp.argmax(m2), jnp.argmax(m3)

    # families 1-5: the objects matching descriptor 2 that are <R> the object 1
    related = m2 & f.rel[r, :, y1]
    count = jnp.sum(related)
    x = jnp.argmax(related)
    # families 10-11: the object matching descriptor 1 that is <R> the object 3
    related13 = m1 & f.rel[r, :, y3]
    one13 = jnp.sum(related13) == 1
    x13 = jnp.argmax(related13)

    others = f.valid & (idx != y1)
    same_color_else = jnp.any(others & (f.color == f.color[y1]) & (f.color[y1] >= 0))
    same_material_else = jnp.any(others & (f.material == f.material[y1]) & (f.material[y1] >= 0))

    def yes(b):
        return jnp.where(b, K.YES, K.NO)

    answers = jnp.stack(
        [
            jnp.int32(-1),
            K.COUNT0 + jnp.minimum(count, K.MAX_COUNT),
            yes(count > 0),
            K.COLOR0 + f.color[x],
            K.MATERIAL0 + f.material[x],
            K.TYPE0 + f.type[x],
            yes(same_color_else),
            yes(same_material_else),
            yes(f.color[y1] == f.color[y2]),
            yes(f.material[y1] == f.material[y2]),
            yes(f.color[x13] == f.color[y2]),
            yes(f.material[x13] == f.material[y2]),
        ]
    ).astype(jnp.int32)
    relation_ok = one1 & has_rel
    pair_ok = one1 & one2 & (y1 != y2)
    chain_ok = one3 & has_rel & one13 & one2 & (x13 != y2)
    valids = jnp.stack(
        [
            jnp.bool_(False),
            relation_ok,
            relation_ok,
            relation_ok & (count == 1),
            relation_ok & (count == 1),
            relation_ok & (count == 1),
            one1,
            one1,
            pair_ok,
            pair_ok,
            chain_ok,
            chain_ok,
        ]
    )
    valid = well_formed & valids[family]
    return jnp.where(valid, answers[family], -1), valid


def answer(
    house_or_facts: S.House | Facts,
    question: jax.Array,
    known: tuple[jax.Array, jax.Array] | None = None,
) -> tuple[jax.Array, jax.Array]:
    """Returns ``(answer int32, valid bool)`` for one question row on a ``House`` (optionally from partial
    knowledge ``known = (seen, lifted)``) or on its ``Facts``; ``answer`` is -1 where invalid. vmap over
    questions (the facts are then computed once) and/or houses."""
    f = house_or_facts if isinstance(house_or_facts, Facts) else facts(house_or_facts, known)
    return answer_facts(f, question)


def answer_all(
    house_or_facts: S.House | Facts,
    questions: jax.Array,
    known: tuple[jax.Array, jax.Array] | None = None,
) -> tuple[jax.Array, jax.Array]:
    """Returns ``(answers int32[Q], valid bool[Q])`` for ``int16[Q, QUESTION_SLOTS]`` rows on one house."""
    f = house_or_facts if isinstance(house_or_facts, Facts) else facts(house_or_facts, known)
    return jax.vmap(answer_facts, in_axes=(None, 0))(f, questions)


def accuracy(house: S.House, known: tuple[jax.Array, jax.Array], default: jax.Array | None = None) -> jax.Array:
    """Returns ``float32``: the fraction of ``house``'s questions (its first ``num_questions`` rows) answered right
    from ``known = (seen bool[N], lifted bool[N])``; a question the knowledge gives no valid answer to counts as
    wrong, or, with ``default`` (``int[NUM_FAMILIES + 1]``, an answer per family), is answered with its family's."""
    answers, valid = answer_all(house, house.questions, known)
    if default is not None:
        family = jnp.clip(house.questions[:, S.FAMILY].astype(jnp.int32), 0, S.NUM_FAMILIES)
        answers = jnp.where(valid, answers, jnp.asarray(default)[family])
        valid = jnp.ones_like(valid)
    rows = jnp.arange(house.questions.shape[0]) < house.num_questions
    right = valid & (answers == house.answers) & rows
    return (right.sum() / jnp.maximum(house.num_questions, 1)).astype(jnp.float32)


@functools.cache
def _batched(cell_metres: float, adjacent_metres: float):
    """Returns jitted ``(facts of a population, answers [H, Q] and valid [H, Q], relations of one house)``."""
    facts_h = jax.jit(jax.vmap(functools.partial(facts, cell_metres=cell_metres, adjacent_metres=adjacent_metres)))
    answers_hq = jax.jit(jax.vmap(jax.vmap(answer_facts, in_axes=(None, 0)), in_axes=(0, None)))
    relations_1 = jax.jit(functools.partial(RL.relations, cell_metres=cell_metres, adjacent_metres=adjacent_metres))
    return facts_h, answers_hq, relations_1


def evaluate(
    population_facts: Facts,
    questions: np.ndarray,
    chunk: int | None = None,
    cell_metres: float = 0.5,
    adjacent_metres: float = 0.5,
) -> tuple[np.ndarray, np.ndarray]:
    """Returns ``(answers int32[H, U], valid bool[H, U])`` of ``int16[U, QUESTION_SLOTS]`` rows in every house of
    ``population_facts`` (``Facts`` with a leading axis H), in chunks of ``chunk`` questions (default: about 64k
    house-question pairs per call, 64..4096 questions; the last chunk is zero-padded so that one compilation
    serves all)."""
    _, answers_hq, _ = _batched(cell_metres, adjacent_metres)
    h = population_facts.valid.shape[0]
    questions = np.asarray(questions, np.int16).reshape(-1, S.QUESTION_SLOTS)
    u = questions.shape[0]
    if chunk is None:  # one shape per population size, so that filtering and assigning share a compilation
        chunk = max(64, min(4096, 1 << int(np.log2(max(1, 65536 // h)))))
    answers, valid = np.full((h, u), -1, np.int32), np.zeros((h, u), bool)
    for start in range(0, u, chunk):
        block = np.zeros((chunk, S.QUESTION_SLOTS), np.int16)
        part = questions[start : start + chunk]
        block[: len(part)] = part
        a, v = jax.device_get(answers_hq(population_facts, jnp.asarray(block)))
        answers[:, start : start + len(part)] = a[:, : len(part)]
        valid[:, start : start + len(part)] = v[:, : len(part)]
    return answers, valid


# ---------------------------------------------------------------------------------------------------------------
# generation (host numpy)
# ---------------------------------------------------------------------------------------------------------------


#: per relation, ``bool[T]``: the reference types a relation that holds for no object can still be asked about
_SENSIBLE = [np.ones(K.NUM_TYPES, bool) for _ in K.RELATIONS]
_SENSIBLE[K.CONTAINED_BY] = K.IS_CONTAINER
_SENSIBLE[K.ON_TOP_OF] = K.IS_SURFACE
_SENSIBLE[K.LONGER] = _SENSIBLE[K.SHORTER] = K.IS_ELONGATED


class _View:
    """A numpy view of one house for generation: per-object attribute lists and the relation tensor."""

    def __init__(self, house: S.House, rel: np.ndarray):
        self.valid = np.asarray(house.valid, bool)
        self.type = np.asarray(house.type, np.int32)
        colors, materials = np.asarray(house.colors, np.int32), np.asarray(house.materials, np.int32)
        self.colors = [tuple(int(c) for c in row if c >= 0) for row in colors]
        self.materials = [tuple(int(m) for m in row if m >= 0) for row in materials]
        self.has_color = np.zeros((len(self.valid), K.NUM_COLORS + 1), bool)
        self.has_material = np.zeros((len(self.valid), K.NUM_MATERIALS + 1), bool)
        for i, (cs, ms) in enumerate(zip(self.colors, self.materials)):
            self.has_color[i, [c + 1 for c in cs]] = True
            self.has_material[i, [m + 1 for m in ms]] = True
        self.has_color[:, 0] = self.has_material[:, 0] = True  # 0: any
        self.pickup = K.IS_PICKUP[self.type] & self.valid
        self.rel = np.asarray(rel, bool)
        self.objects = np.flatnonzero(self.valid)

    def match(self, c: int, m: int, s: int) -> np.ndarray:
        """Returns ``bool[N]``: the valid objects the 1-based descriptor matches."""
        out = self.valid & self.has_color[:, c] & self.has_material[:, m]
        return out & (self.type == s - 1) if s else out

    def words(self, i: int, rng: np.random.Generator, used: str) -> tuple[int, int, int]:
        """Returns a random 1-based descriptor of object ``i`` with the words ``used`` (a ``"CMS"`` subset)."""
        c = 1 + int(rng.choice(self.colors[i])) if "C" in used and self.colors[i] else 0
        m = 1 + int(rng.choice(self.materials[i])) if "M" in used and self.materials[i] else 0
        s = 1 + int(self.type[i]) if "S" in used else 0
        return c, m, s

    def unique(self, i: int, rng: np.random.Generator, allowed: str, pool: np.ndarray | None = None):
        """Returns a random descriptor of object ``i`` with words among ``allowed`` that matches ``i`` alone
        among ``pool`` (default all valid objects), or None."""
        pool = self.valid if pool is None else pool
        subsets = ["".join(w for k, w in enumerate(allowed) if mask >> k & 1) for mask in range(1 << len(allowed))]
        for k in rng.permutation(len(subsets)):
            for _ in range(2):  # two draws of the colour / material values
                d = self.words(i, rng, subsets[k])
                hits = self.match(*d) & pool
                if hits[i] and hits.sum() == 1:
                    return d
        return None

    def relations_of(self, y: int, holding: bool = True) -> list[int]:
        """Returns the relations usable with ``y`` as the reference object: those some object holds with ``y``
        when ``holding``, else those that make sense for ``y``'s type (``_SENSIBLE``); mass relations only when
        ``y`` can be picked up."""
        out = []
        for r in range(K.NUM_RELATIONS):
            if r in (K.HEAVIER, K.LIGHTER) and not self.pickup[y]:
                continue
            if holding and not self.rel[r, :, y].any():
                continue
            if not holding and not _SENSIBLE[r][self.type[y]]:
                continue
            out.append(r)
        return out


def _set_descriptor(row: np.ndarray, which: int, d: tuple[int, int, int]) -> None:
    row[list(_DESCRIPTOR_COLUMNS[which])] = d


def _draw(v: _View, rng: np.random.Generator, family: int) -> np.ndarray | None:
    """Returns one question row of ``family`` whose referring expressions resolve in ``v``, or None."""
    if len(v.objects) < 2:
        return None
    words1, words2, words3 = FAMILY_WORDS[family]
    row = np.zeros(S.QUESTION_SLOTS, np.int16)
    row[S.FAMILY] = family
    if family in (1, 2, 3, 4, 5):
        y = int(rng.choice(v.objects))
        d1 = v.unique(y, rng, words1)
        if d1 is None:
            return None
        holding = v.relations_of(y)
        if family in (1, 2) and (not holding or rng.random() < 0.25):
            holding = v.relations_of(y, holding=False)  # some questions whose answer is 0 / no
        if not holding:
            return None
        r = int(rng.choice(holding))
        related = v.rel[r, :, y]
        if family in (1, 2):
            x = int(rng.choice(np.flatnonzero(related))) if related.any() and rng.random() < 0.8 else None
            x = int(rng.choice(v.objects[v.objects != y])) if x is None else x
            used = "".join(w for w in words2 if rng.random() < 0.5)
            d2 = v.words(x, rng, used)
        else:
            x = int(rng.choice(np.flatnonzero(related)))
            d2 = v.unique(x, rng, words2, pool=related)
            if d2 is None:
                return None
        row[S.REL] = r + 1
        _set_descriptor(row, 0, d1)
        _set_descriptor(row, 1, d2)
    elif family in (6, 7):
        d1 = v.unique(int(rng.choice(v.objects)), rng, words1)
        if d1 is None:
            return None
        _set_descriptor(row, 0, d1)
    elif family in (8, 9):
        a, b = (int(i) for i in rng.choice(v.objects, 2, replace=False))
        d1, d2 = v.unique(a, rng, words1), v.unique(b, rng, words2)
        if d1 is None or d2 is None:
            return None
        _set_descriptor(row, 0, d1)
        _set_descriptor(row, 1, d2)
    else:  # 10, 11
        y = int(rng.choice(v.objects))
        d3 = v.unique(y, rng, words3)
        holding = v.relations_of(y)
        if d3 is None or not holding:
            return None
        r = int(rng.choice(holding))
        related = v.rel[r, :, y]
        a = int(rng.choice(np.flatnonzero(related)))
        others = v.objects[v.objects != a]
        b = int(rng.choice(others))
        d1, d2 = v.unique(a, rng, words1, pool=related), v.unique(b, rng, words2)
        if d1 is None or d2 is None:
            return None
        row[S.REL] = r + 1
        _set_descriptor(row, 0, d1)
        _set_descriptor(row, 1, d2)
        _set_descriptor(row, 2, d3)
    return row


def candidates(
    house_np: S.House,
    rng: np.random.Generator | int,
    family: int,
    n: int,
    rel: np.ndarray | None = None,
    cell_metres: float = 0.5,
    adjacent_metres: float = 0.5,
) -> np.ndarray:
    """Returns ``int16[n', QUESTION_SLOTS]`` (``n' <= n``): distinct questions of ``family`` drawn from one
    house's own objects (numpy or jnp leaves, no leading axis) so that every "the X" resolves uniquely there.

    Objects are drawn at random, then a random subset of their allowed words that keeps the reference unique
    (the type may be omitted: "object"). Relations are drawn among those holding for the reference object (for
    families 1-2 a quarter of the time among all, so that 0 / no answers occur); mass relations only with a
    pick-up-able reference. ``rel`` (``bool[R, N, N]``) skips recomputing the relations."""
    rng = np.random.default_rng(rng)
    if rel is None:
        rel = _batched(cell_metres, adjacent_metres)[2](house_np)
    return _candidates(_View(jax.device_get(house_np), jax.device_get(rel)), rng, family, n)


def _candidates(v: _View, rng: np.random.Generator, family: int, n: int) -> np.ndarray:
    out: dict[tuple, np.ndarray] = {}
    for _ in range(8 * n + 16):
        if len(out) >= n:
            break
        row = _draw(v, rng, family)
        if row is not None:
            out.setdefault(tuple(row.tolist()), row)
    if not out:
        return np.zeros((0, S.QUESTION_SLOTS), np.int16)
    return np.stack(list(out.values())).astype(np.int16)


def _entropy(counts: np.ndarray) -> np.ndarray:
    """Returns the Shannon entropy (bits) of each row of a ``[U, A]`` histogram (0 for an empty row)."""
    total = counts.sum(axis=1, keepdims=True)
    p = counts / np.maximum(total, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.sum(np.where(p > 0, p * np.log2(np.where(p > 0, p, 1)), 0.0), axis=1)


def _population_facts(houses: S.House, cell_metres: float, adjacent_metres: float) -> Facts:
    return _batched(cell_metres, adjacent_metres)[0](houses)


def filter_questions(
    houses: S.House,
    rng: np.random.Generator | int,
    n_per_house: int = 8,
    m_per_family: int = 16,
    cell_metres: float = 0.5,
    adjacent_metres: float = 0.5,
    families: tuple[int, ...] = FAMILIES,
    min_valid: int = 1,
) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 2 over a population of houses (a ``House`` with a leading axis H).

    Per family: the first ``n_per_house`` candidates of each house, deduplicated, answered in every house; the
    histogram of each question's answers over the houses where it is valid; questions ranked by the Shannon
    entropy (bits) of that histogram (ties: valid in more houses first, then first drawn) and the top
    ``m_per_family`` kept. Questions valid in fewer than ``min_valid`` houses are dropped (a question valid in
    two houses with two different answers has the full entropy of a yes/no question). Returns ``(kept
    int16[K, QUESTION_SLOTS], entropy float32[K])``, grouped by family in ``families`` order, best first within a
    family."""
    kept, entropy, _ = _filter(
        houses, rng, n_per_house, m_per_family, cell_metres, adjacent_metres, families, min_valid
    )
    return kept, entropy


def _filter(houses, rng, n_per_house, m_per_family, cell_metres, adjacent_metres, families, min_valid=1):
    rng = np.random.default_rng(rng)
    pop = _population_facts(houses, cell_metres, adjacent_metres)
    host = jax.device_get(houses)
    rel = np.asarray(jax.device_get(pop.rel))
    h = rel.shape[0]
    views = [_View(jax.tree.map(lambda leaf, i=i: leaf[i], host), rel[i]) for i in range(h)]
    unique: dict[tuple, None] = {}
    for family in families:
        for view in views:
            for row in _candidates(view, rng, family, n_per_house):
                unique.setdefault(tuple(row.tolist()), None)
    questions = np.array(list(unique), np.int16).reshape(-1, S.QUESTION_SLOTS)
    answers, valid = evaluate(pop, questions, cell_metres=cell_metres, adjacent_metres=adjacent_metres)
    kept, kept_entropy, kept_valid = rank_questions(questions, answers, valid, m_per_family, families, min_valid)
    info = dict(candidates=questions.shape[0], houses_valid=kept_valid)
    return kept, kept_entropy, info


def rank_questions(
    questions: np.ndarray,
    answers: np.ndarray,
    valid: np.ndarray,
    m_per_family: int,
    families: tuple[int, ...] = FAMILIES,
    min_valid: int = 1,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ranks ``int16[U, QUESTION_SLOTS]`` questions by the entropy of their answers (``int32[H, U]``) over the
    houses where they are valid (``bool[H, U]``) and keeps the top ``m_per_family`` of each family (ties: valid in
    more houses first, then the given order; questions valid in fewer than ``min_valid`` houses are dropped).
    Returns ``(kept int16[K, QUESTION_SLOTS], entropy float32[K] in bits, houses_valid int32[K])``, grouped by
    family."""
    questions = np.asarray(questions, np.int16).reshape(-1, S.QUESTION_SLOTS)
    u = questions.shape[0]
    flat = (np.arange(u)[None, :] * K.NUM_ANSWERS + np.clip(answers, 0, K.NUM_ANSWERS - 1))[valid]
    counts = np.bincount(flat, minlength=u * K.NUM_ANSWERS).reshape(u, K.NUM_ANSWERS)
    ent = _entropy(counts)
    num_valid = valid.sum(axis=0)
    order = []
    for family in families:
        ids = np.flatnonzero((questions[:, S.FAMILY] == family) & (num_valid >= max(1, min_valid)))
        order.append(ids[np.lexsort((ids, -num_valid[ids], -ent[ids]))][:m_per_family])
    order = np.concatenate(order).astype(np.int64)
    return questions[order], ent[order].astype(np.float32), num_valid[order].astype(np.int32)


def assign(
    houses: S.House,
    kept: np.ndarray,
    entropy: np.ndarray,
    max_questions: int,
    cell_metres: float = 0.5,
    adjacent_metres: float = 0.5,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gives each house of the population the kept questions valid in it, at most ``max_questions`` (Q).

    The order interleaves families: round ``k`` takes each family's ``k``-th best question valid in the house
    (entropy descending, the kept order breaking ties), the round's questions sorted by entropy. Returns
    ``(questions int16[H, Q, QUESTION_SLOTS], answers int16[H, Q], num int32[H])``: padding rows 0, padding
    answers -1."""
    pop = _population_facts(houses, cell_metres, adjacent_metres)
    h = pop.valid.shape[0]
    kept = np.asarray(kept, np.int16).reshape(-1, S.QUESTION_SLOTS)
    entropy = np.asarray(entropy, np.float32)
    answers, valid = evaluate(pop, kept, cell_metres=cell_metres, adjacent_metres=adjacent_metres)
    out_q = np.zeros((h, max_questions, S.QUESTION_SLOTS), np.int16)
    out_a = np.full((h, max_questions), -1, np.int16)
    num = np.zeros(h, np.int32)
    families = kept[:, S.FAMILY]
    by_entropy = np.argsort(-entropy, kind="stable")
    for i in range(h):
        lists = [by_entropy[(families[by_entropy] == f) & valid[i, by_entropy]] for f in np.unique(families)]
        chosen: list[int] = []
        for k in range(max(map(len, lists), default=0)):
            layer = [int(ids[k]) for ids in lists if k < len(ids)]
            chosen += sorted(layer, key=lambda j: -entropy[j])
            if len(chosen) >= max_questions:
                break
        chosen = chosen[:max_questions]
        num[i] = len(chosen)
        out_q[i, : len(chosen)] = kept[chosen]
        out_a[i, : len(chosen)] = answers[i, chosen]
    return out_q, out_a, num


def attach(
    houses: S.House,
    rng: np.random.Generator | int,
    n_per_house: int = 8,
    m_per_family: int = 16,
    max_questions: int | None = None,
    cell_metres: float = 0.5,
    adjacent_metres: float = 0.5,
    min_valid: int = 1,
) -> tuple[S.House, dict]:
    """Runs ``filter_questions`` and ``assign`` on a population and writes the result into it.

    Returns ``(houses, report)``: the houses with ``questions`` int16[H, Q, SLOTS], ``answers`` int16[H, Q] and
    ``num_questions`` int32[H] replaced (Q = ``max_questions``, default the houses' own Q), and a report dict:
    ``candidates`` (unique questions answered), ``kept``, ``per_family`` (kept per family), ``mean_entropy`` (per
    family), ``questions_per_house`` (mean), ``min_questions``, ``answer_kinds`` (assigned answers per kind),
    ``seconds``."""
    start = time.perf_counter()
    q = int(houses.questions.shape[-2]) if max_questions is None else max_questions
    kept, entropy, info = _filter(
        houses, rng, n_per_house, m_per_family, cell_metres, adjacent_metres, FAMILIES, min_valid
    )
    questions, answers, num = assign(houses, kept, entropy, q, cell_metres, adjacent_metres)
    houses = houses.replace(
        questions=jnp.asarray(questions), answers=jnp.asarray(answers), num_questions=jnp.asarray(num)
    )
    fam = kept[:, S.FAMILY]
    kinds: dict[str, int] = {}
    for a in answers[answers >= 0]:
        kind = K.answer_kind(int(a))
        kinds[kind] = kinds.get(kind, 0) + 1
    report = dict(
        candidates=int(info["candidates"]),
        kept=int(len(kept)),
        per_family={f: int(np.sum(fam == f)) for f in FAMILIES},
        mean_entropy={f: float(entropy[fam == f].mean()) if np.any(fam == f) else 0.0 for f in FAMILIES},
        questions_per_house=float(num.mean()),
        min_questions=int(num.min()),
        answer_kinds=kinds,
        seconds=time.perf_counter() - start,
    )
    return houses, report
