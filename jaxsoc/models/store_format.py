"""The on-disk form of a pretrained model: a card (``<name>.json``) and its parameters (``<name>.msgpack.xz``).

The card is JSON: ``name``, ``family``, ``kind`` (one of the family's ``ModelKind`` names), ``env_ids``,
``description``, ``spec`` (what the kind's loader needs to rebuild the network: the run's config files and the
checkpoint's meta, copied verbatim), ``training`` (``command``, ``commit``), ``evaluation`` (``command``: the
``jaxsoc`` line that scores it; ``args``: what ``jaxsoc models eval`` hands the kind's evaluator; ``figures``:
``{metric: {"value", "se", "seeds", "episodes"}}``), ``license``, ``dtype`` (how floats are stored), ``bytes``
and ``sha256`` of the parameters file, and ``format`` (``FORMAT``).

The parameters file is ``lzma(msgpack(tree))`` of nested dicts of arrays (``flax.serialization``): only the
parameter subtrees of a run's state (no optimizer or PRNG state). Floats stored in a smaller dtype are cast back
to float32 on load. ``read`` checks, in order, the card, the size, the sha256, the decompression and the
decoding, and names the file and what differs; the kind's loader then checks the arrays against the network its
spec builds (``fit``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import lzma
from pathlib import Path
from typing import Any

import flax.serialization
import numpy as np

#: the card's ``format``; a card of another format is refused
FORMAT = "jaxsoc-model-1"
CARD_SUFFIX, PARAMS_SUFFIX = ".json", ".msgpack.xz"
#: the card's fields, all required
FIELDS = (
    "format", "name", "family", "kind", "env_ids", "description", "spec", "training", "evaluation", "license",
    "dtype", "bytes", "sha256",
)  # fmt: skip
#: dtypes floats may be stored in (loaded as float32)
STORED_DTYPES = ("float32", "float16", "bfloat16")


class ModelFileError(ValueError):
    """A model file that cannot be used: missing, corrupt, truncated, of another hash or format (the message names
    the file and what differs)."""


@dataclasses.dataclass(frozen=True)
class Card:
    """A model's card (module docstring); ``path`` is the card file it was read from."""

    name: str
    family: str
    kind: str
    env_ids: tuple[str, ...]
    description: str
    spec: dict[str, Any]
    training: dict[str, Any]
    evaluation: dict[str, Any]
    license: str
    dtype: str
    bytes: int
    sha256: str
    path: Path | None = None

    @property
    def params_path(self) -> Path:
        """The parameters file beside the card."""
        assert self.path is not None
        return self.path.with_name(self.name + PARAMS_SUFFIX)

    def to_json(self) -> dict[str, Any]:
        """Returns the card as the JSON it is stored as."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "path"}
        return {"format": FORMAT, **out, "env_ids": list(self.env_ids)}

    def headline(self) -> tuple[str, dict[str, Any]] | None:
        """Returns ``(metric, figure)`` of the card's first recorded figure, or None."""
        figures = self.evaluation.get("figures") or {}
        return next(iter(figures.items()), None)


def _tree_to_storable(tree: Any, dtype: str) -> Any:
    """Returns nested dicts of numpy arrays (``flax.serialization.to_state_dict``), floats cast to ``dtype``."""
    state = flax.serialization.to_state_dict(tree)

    def convert(node: Any) -> Any:
        if isinstance(node, dict):
            return {str(k): convert(v) for k, v in node.items()}
        array = np.asarray(node)
        if np.issubdtype(array.dtype, np.floating) and dtype != "float32":
            # bfloat16 is not a numpy type msgpack knows: store its bits as uint16 (the card's dtype says so)
            if dtype == "bfloat16":
                import jax.numpy as jnp

                return np.asarray(jnp.asarray(array, jnp.bfloat16)).view(np.uint16)
            return array.astype(dtype)
        return array

    return convert(state)


def _tree_from_stored(tree: Any, dtype: str) -> Any:
    def convert(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: convert(v) for k, v in node.items()}
        array = np.asarray(node)
        if dtype == "bfloat16" and array.dtype == np.uint16:
            import jax.numpy as jnp

            return np.asarray(array.view(jnp.bfloat16).astype(np.float32))
        if dtype == "float16" and array.dtype == np.float16:
            return array.astype(np.float32)
        return array

    return convert(tree)


def encode(tree: Any, dtype: str = "float32") -> bytes:
    """Returns the parameters file's bytes for ``tree`` (a pytree of arrays; floats stored as ``dtype``)."""
    if dtype not in STORED_DTYPES:
        raise ValueError(f"unknown stored dtype {dtype!r}; choose from {list(STORED_DTYPES)}")
    packed = flax.serialization.msgpack_serialize(_tree_to_storable(tree, dtype))
    return lzma.compress(packed, preset=9 | lzma.PRESET_EXTREME)


def write(directory: str | Path, card: Card, tree: Any) -> Card:
    """Writes ``<name>.json`` and ``<name>.msgpack.xz`` into ``directory`` (created) and returns the card as
    written (its ``bytes``, ``sha256`` and ``path`` filled in)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    blob = encode(tree, card.dtype)
    card = dataclasses.replace(
        card, bytes=len(blob), sha256=hashlib.sha256(blob).hexdigest(), path=directory / (card.name + CARD_SUFFIX)
    )
    card.params_path.write_bytes(blob)
    card.path.write_text(json.dumps(card.to_json(), indent=1, default=str) + "\n")
    return card


def read_card(path: str | Path) -> Card:
    """Returns the card stored at ``path``.

    Raises:
        ModelFileError: unreadable JSON, another format, or missing or extra fields (named).
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ModelFileError(f"{path}: no such model card") from None
    except ValueError as error:
        raise ModelFileError(f"{path} is not a readable model card: {error}") from None
    if not isinstance(data, dict):
        raise ModelFileError(f"{path} is not a model card (a JSON {type(data).__name__}, not an object)")
    if data.get("format") != FORMAT:
        raise ModelFileError(f"{path}: card format {data.get('format')!r}, this jaxsoc reads {FORMAT!r}")
    missing = [name for name in FIELDS if name not in data]
    extra = sorted(set(data) - set(FIELDS))
    if missing or extra:
        raise ModelFileError(f"{path}: card fields missing {missing}, unknown {extra}")
    if data["dtype"] not in STORED_DTYPES:
        raise ModelFileError(f"{path}: stored dtype {data['dtype']!r} is not one of {list(STORED_DTYPES)}")
    fields = {k: v for k, v in data.items() if k != "format"}
    return Card(**{**fields, "env_ids": tuple(fields["env_ids"]), "path": path})


def read_params(card: Card) -> Any:
    """Returns the parameters of ``card`` as nested dicts of numpy arrays (floats as float32).

    Raises:
        ModelFileError: the file is missing, of another size (truncated), of another sha256 (corrupt or
            replaced), or does not decompress or decode (the message names the file and what differs).
    """
    path = card.params_path
    try:
        blob = path.read_bytes()
    except FileNotFoundError:
        raise ModelFileError(f"{path}: no such parameters file (the card {card.path} names it)") from None
    if len(blob) != card.bytes:
        raise ModelFileError(f"{path}: {len(blob)} bytes, the card says {card.bytes} (truncated or replaced)")
    digest = hashlib.sha256(blob).hexdigest()
    if digest != card.sha256:
        raise ModelFileError(f"{path}: sha256 {digest}, the card says {card.sha256} (corrupt or replaced)")
    try:
        packed = lzma.decompress(blob)
        tree = flax.serialization.msgpack_restore(packed)
    except Exception as error:  # lzma.LZMAError, msgpack's errors: the bytes are not a parameters file
        raise ModelFileError(f"{path} does not decode as an lzma-compressed msgpack tree: {error}") from None
    if not isinstance(tree, dict):
        raise ModelFileError(f"{path} holds a {type(tree).__name__}, not a tree of arrays")
    return _tree_from_stored(tree, card.dtype)
