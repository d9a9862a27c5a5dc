"""Banks of EXCALIBUR houses with their questions: generated on the device (``houses.generate_batch``), questions
filtered across the bank's houses by the supplementary's Algorithm 2 (``questions.attach``), houses left without a
question dropped.

Splits draw their houses from disjoint key streams (``SPLIT_SEEDS``), and each split filters its questions on its
own houses, so a test house and its questions are never seen in training. ``val`` is a held-out bank of its own
(houses from the same generator as the test bank's, as the test shift is none but fresh houses): training curves and
every model choice read it, never ``test`` (``check_curve_split``). ``cached_bank`` builds a bank once per
process and keeps it on disk (``$JAXSOC_CACHE/excalibur``, default ``~/.cache/jaxsoc``; see ``jaxsoc.cache``): a
bank is a function of its arguments and of the generating code (counter-based JAX keys and a seeded numpy
generator), the same on every machine, so the file name hashes ``BANK_VERSION``, every argument, the jax and
numpy versions and the source of this module and of every jaxsoc module it imports (``cache.source_digest``); a
change of any of them builds a new file, and an unreadable one is rebuilt with a warning.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import os
import pathlib
import tempfile

import jax
import numpy as np

from jaxsoc import cache
from jaxsoc.envs.excalibur import houses as H
from jaxsoc.envs.excalibur import questions as Q
from jaxsoc.envs.excalibur import state as S

DEFAULT_CONFIG = H.HouseConfig()
SPLIT_SEEDS = {"train": 0, "val": 2_000_003, "test": 1_000_003}
BANK_SIZES = {"train": 512, "val": 128, "test": 128}
#: the splits training curves and model choices may read (``check_curve_split``): the test bank is scored once, at
#: the end, by ``jaxsoc excalibur eval`` or a model's evaluation
CURVE_SPLITS = ("train", "val")
#: Algorithm 2's N (questions generated per house and family) and M (questions kept per family): the main paper's
#: values could not be found
N_PER_HOUSE = 8
M_PER_FAMILY = 24
#: a kept question must be valid in at least this many of the bank's houses: a question valid in two houses with two
#: answers already has 1 bit of entropy, so rare questions would crowd out the informative ones
MIN_VALID = 8


def check_curve_split(split: str) -> str:
    """Returns ``split`` when training curves may read it; raises ``ValueError`` for ``test`` (scored once, at the
    end) or an unknown split, naming ``CURVE_SPLITS``."""
    if split not in CURVE_SPLITS:
        raise ValueError(
            f"training curves read {' or '.join(CURVE_SPLITS)} only, not {split!r}: the test bank is scored once, "
            "after training (jaxsoc excalibur eval, jaxsoc models eval)"
        )
    return split


def make_bank(
    split: str = "train",
    seed: int = 0,
    config: H.HouseConfig = DEFAULT_CONFIG,
    num_houses: int | None = None,
    n_per_house: int = N_PER_HOUSE,
    m_per_family: int = M_PER_FAMILY,
) -> tuple[S.House, dict]:
    """Returns ``(bank, report)``: a ``House`` with a leading axis of the houses that got at least one question
    (``num_houses`` generated, ``BANK_SIZES[split]`` by default) and ``questions.attach``'s report plus
    ``generated`` and ``kept_houses``. Raises ``ValueError`` for an unknown split or no house with a question."""
    if split not in SPLIT_SEEDS:
        raise ValueError(f"unknown EXCALIBUR split {split!r}; choose from {list(SPLIT_SEEDS)}")
    num = BANK_SIZES[split] if num_houses is None else int(num_houses)
    if num < 1:
        raise ValueError(f"num_houses must be >= 1, got {num}")
    stream = SPLIT_SEEDS[split] + seed
    houses = H.generate_batch(jax.random.key(stream), config, num)
    rng = np.random.default_rng(stream)
    houses, report = Q.attach(houses, rng, n_per_house, m_per_family, config.max_questions, min_valid=MIN_VALID)
    keep = np.flatnonzero(np.asarray(houses.num_questions) > 0)
    if keep.size == 0:
        raise ValueError(f"no house of the {split} bank got a question")
    bank = jax.tree_util.tree_map(lambda x: x[keep], houses)
    return bank, dict(report, generated=num, kept_houses=int(keep.size))


#: bump when the file layout changes (the generating code is hashed into the file name: ``source_hash``)
BANK_VERSION = 2


def cache_dir() -> pathlib.Path:
    """Returns the directory of the on-disk bank cache (``$JAXSOC_CACHE/excalibur``, default
    ``~/.cache/jaxsoc/excalibur``)."""
    return cache.cache_root() / "excalibur"


def source_hash() -> str:
    """Returns the hex digest of the code that generates a bank: this module and every jaxsoc module it imports
    (``houses``, ``questions``, ``state``, ...), without comments and docstrings."""
    return cache.source_digest(__name__)


def cache_path(split: str = "train", seed: int = 0, config: H.HouseConfig = DEFAULT_CONFIG) -> pathlib.Path:
    """Returns the cache file of ``make_bank(split, seed, config)``'s bank: its name hashes ``BANK_VERSION``, the
    arguments, the module constants the bank depends on, the jax and numpy versions and ``source_hash()``."""
    settings = (BANK_VERSION, split, seed, config, N_PER_HOUSE, M_PER_FAMILY, MIN_VALID)
    settings += (jax.__version__, np.__version__, source_hash())
    tag = hashlib.sha1(repr(settings).encode()).hexdigest()
    return cache_dir() / f"bank-v{BANK_VERSION}-{split}-{seed}-{tag[:16]}.npz"


def _save(path: pathlib.Path, bank: S.House) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = {f.name: np.asarray(getattr(bank, f.name)) for f in dataclasses.fields(bank)}
    with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".npz", delete=False) as tmp:
        np.savez(tmp, **arrays)
    os.replace(tmp.name, path)  # atomic: parallel test workers may build the same bank


def _load(path: pathlib.Path) -> S.House | None:
    """Returns the bank stored at ``path``; None (with a warning when the file exists) when the file is absent,
    truncated, corrupt or of another layout (a missing field, fields with different numbers of houses)."""
    if not path.exists():
        return None
    try:
        with np.load(path) as data:
            arrays = {f.name: np.asarray(data[f.name]) for f in dataclasses.fields(S.House)}
        if len({a.shape[0] if a.ndim else -1 for a in arrays.values()}) != 1:
            raise ValueError("fields with different numbers of houses")
    except cache.UNREADABLE as error:
        cache.warn_unreadable(path, error)
        return None
    return S.House(**{name: jax.numpy.asarray(a) for name, a in arrays.items()})


@functools.lru_cache(maxsize=16)
def cached_bank(split: str = "train", seed: int = 0, config: H.HouseConfig = DEFAULT_CONFIG) -> S.House:
    """Returns ``make_bank(split, seed, config)``'s bank: from memory, else from the disk cache, else built (and
    saved)."""
    path = cache_path(split, seed, config)
    bank = _load(path)
    if bank is None:
        bank = make_bank(split, seed, config)[0]
        with contextlib.suppress(OSError):  # a read-only home: keep the bank in memory only
            _save(path, bank)
    return bank
