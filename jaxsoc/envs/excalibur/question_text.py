"""EXCALIBUR's questions and answers as English (host): ``question_text`` of an ``int16[QUESTION_SLOTS]`` row (the
families' templates of ``questions``' module docstring), ``answer_text`` of an answer id, and the words of a
descriptor and a type. ``questions`` re-exports them."""

from __future__ import annotations

import re

import numpy as np

from jaxsoc.envs.excalibur import catalogue as K
from jaxsoc.envs.excalibur import state as S

#: the row's ``(C, M, S)`` descriptor columns of objects 1, 2, 3
DESCRIPTOR_COLUMNS = ((S.C1, S.M1, S.S1), (S.C2, S.M2, S.S2), (S.C3, S.M3, S.S3))


def type_words(t: int) -> str:
    """Returns type ``t``'s name as lower-case words (``"DiningTable"`` -> ``"dining table"``)."""
    return " ".join(re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+", K.TYPES[t])).lower()


def _plural(noun: str) -> str:
    head, _, last = noun.rpartition(" ")
    if last.endswith("knife"):
        last = last[:-2] + "ves"
    elif last.endswith("s"):
        pass  # "boots"
    elif last.endswith(("x", "ch", "sh")) or re.search(r"[^aeiou]o$", last):
        last += "es"
    elif re.search(r"[^aeiou]y$", last):
        last = last[:-1] + "ies"
    else:
        last += "s"
    return f"{head} {last}" if head else last


def descriptor_text(c: int, m: int, s: int, plural: bool = False) -> str:
    """Returns ``"[colour] [material] type"`` for a 1-based descriptor (0 omits a word; a type of 0 reads
    "object"), the noun in the plural when ``plural``."""
    noun = type_words(s - 1) if s else "object"
    words = ([K.COLORS[c - 1]] if c else []) + ([K.MATERIALS[m - 1]] if m else []) + [_plural(noun) if plural else noun]
    return " ".join(words)


def question_text(row) -> str:
    """Returns the English question of an ``int16[QUESTION_SLOTS]`` row ("" for a padding row)."""
    q = [int(v) for v in np.asarray(row).reshape(-1)]
    family = q[S.FAMILY]
    if family == 0:
        return ""
    rel = K.RELATION_TEXT[q[S.REL] - 1] if q[S.REL] else "<no relation>"
    d1, d2, d3 = (descriptor_text(*(q[c] for c in cols)) for cols in DESCRIPTOR_COLUMNS)
    d2s = descriptor_text(q[S.C2], q[S.M2], q[S.S2], plural=True)
    templates = {
        1: f"How many {d2s} are {rel} the {d1}?",
        2: f"Are there any {d2s} {rel} the {d1}?",
        3: f"What color is the {d2} {rel} the {d1}?",
        4: f"What material is the {d2} {rel} the {d1}?",
        5: f"What is the {d2} {rel} the {d1}?",
        6: f"Is there anything else with the same color as the {d1}?",
        7: f"Is there anything else made of the same material as the {d1}?",
        8: f"Do the {d1} and the {d2} have the same color?",
        9: f"Do the {d1} and the {d2} have the same material?",
        10: f"Do the {d1} {rel} the {d3} and the {d2} have the same color?",
        11: f"Do the {d1} {rel} the {d3} and the {d2} have the same material?",
    }
    return templates[family]


def answer_text(a: int) -> str:
    """Returns the words of answer id ``a`` (``catalogue.ANSWERS``; types as words; "none" for -1)."""
    a = int(a)
    if a < 0:
        return "none"
    return type_words(a - K.TYPE0) if a >= K.TYPE0 else K.ANSWERS[a]
