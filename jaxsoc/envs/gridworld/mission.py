"""MiniGrid mission strings as fixed-length token arrays that a jitted step can build and a policy can read.

minigrid 3.2.0's ``MiniGrid-*`` envs state their task in ``obs["mission"]``, a string. Here a mission is
``int32[MAX_TOKENS]``: ids of ``VOCAB`` words, 0-padded at the end. An env whose mission varies with the
level (``GridEnvironment.mission_observation``) builds its tokens on device with ``compose`` from constant
words and traced colour/type words, adds them to the observation as ``mission``, and ``decode`` gives back
minigrid's exact string (a comma stays attached to its word, ``"room,"``, so decoding is a plain join).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.gridworld import constants as C

MAX_TOKENS = 20  # LockedRoom's mission, the longest, has 17 words

_WORDS = """a and at avoid end fetch find from get go green hallway matching must near of open opening
pick put reach room room, rooms square the then to traverse unlock up use you maze object"""

#: word 0 is padding; then the colours and object types in ``constants`` order, then the other words
VOCAB: tuple[str, ...] = tuple(
    dict.fromkeys(["<pad>", *C.COLOR_NAMES, *C.OBJECT_NAMES[C.WALL : C.LAVA + 1], *sorted(_WORDS.split())])
)
WORD_ID: dict[str, int] = {word: i for i, word in enumerate(VOCAB)}
# numpy tables (importing jaxsoc must not start a JAX backend)
_COLOR_WORDS = np.array([WORD_ID[name] for name in C.COLOR_NAMES], np.int32)
_TYPE_WORDS = np.array([WORD_ID.get(name, 0) for name in C.OBJECT_NAMES], np.int32)


def encode(text: str) -> np.ndarray:
    """Returns ``int32[MAX_TOKENS]``: the word ids of ``text`` (host side). Raises ``ValueError`` for a word
    outside ``VOCAB`` or a text longer than ``MAX_TOKENS`` words."""
    words = text.split()
    unknown = [w for w in words if w not in WORD_ID]
    if unknown:
        raise ValueError(f"mission words {unknown} are not in the MiniGrid mission vocabulary")
    if len(words) > MAX_TOKENS:
        raise ValueError(f"a mission has at most {MAX_TOKENS} words, got {len(words)}: {text!r}")
    tokens = np.zeros(MAX_TOKENS, np.int32)
    tokens[: len(words)] = [WORD_ID[w] for w in words]
    return tokens


def decode(tokens) -> str:
    """Returns the mission string of ``int[MAX_TOKENS]`` tokens (padding dropped)."""
    return " ".join(VOCAB[int(t)] for t in np.asarray(tokens) if int(t) != 0)


def color_word(color: jax.Array) -> jax.Array:
    """Returns the word id (``int32[]``) of a colour code."""
    return jnp.asarray(_COLOR_WORDS)[jnp.asarray(color, jnp.int32)]


def type_word(kind: jax.Array) -> jax.Array:
    """Returns the word id (``int32[]``) of an object type code (key, ball, box, door, goal...)."""
    return jnp.asarray(_TYPE_WORDS)[jnp.asarray(kind, jnp.int32)]


def compose(*parts) -> jax.Array:
    """Returns ``int32[MAX_TOKENS]``: the concatenation of ``parts``, each a string of constant words or a
    word id (``int32[]``, e.g. ``color_word(c)``), 0-padded. Works under ``jit``: the length is static."""
    pieces = [
        jnp.asarray(encode(part)[: len(part.split())]) if isinstance(part, str) else jnp.reshape(part, (1,))
        for part in parts
    ]
    tokens = jnp.concatenate([p.astype(jnp.int32) for p in pieces])
    if tokens.shape[0] > MAX_TOKENS:
        raise ValueError(f"a mission has at most {MAX_TOKENS} words, got {tokens.shape[0]}")
    return jnp.pad(tokens, (0, MAX_TOKENS - tokens.shape[0]))
