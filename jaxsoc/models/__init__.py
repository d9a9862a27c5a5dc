"""Pretrained models by name: ``jaxsoc.models.list()``, ``load(name)``, ``info(name)``, ``evaluate(name)``.

Each model is a card and its parameters in ``jaxsoc/models/store/`` (``store_format``: parameters only, lzma-
compressed msgpack, a sha256 on the card), shipped in the wheel. A model has a family and a kind: the family's
learner declaration (``learners/<family>/family.py``, ``core.family.ModelKind``) says how a kind is snapshot from a
training run (``snapshot``), rebuilt (``load``: the object the family's evaluation takes, the same one its run
loader returns for a run directory) and scored (``evaluate``). Wherever a command or loader takes a run directory
it also takes ``model:NAME`` (``ref_name``); ``model:PATH`` names a card file outside the store.

``load`` refuses, naming the file and what differs: an unknown name (with the closest names), a card of another
format or with missing fields, a parameters file of another size or sha256, one that does not decode, and arrays
that do not fit the network the card's spec builds (``fit``).
"""

from __future__ import annotations

import builtins
import dataclasses
import difflib
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.models.store_format import CARD_SUFFIX, Card, ModelFileError, read_card, read_params, write

#: the package's model store (shipped in the wheel)
STORE = Path(__file__).parent / "store"
#: a run argument that names a model instead of a run directory
PREFIX = "model:"
#: the state subtrees a snapshot keeps by default (the rest of a training state is optimizer and PRNG state)
PARAMETER_KEYS = ("params", "batch_stats")

__all__ = [
    "Card", "ModelFileError", "PREFIX", "STORE", "UnknownModel", "evaluate", "export", "fit", "info", "kind_of",
    "list", "load", "open_ref", "ref_name", "ref_of", "figure", "rate", "snapshot_run", "table",
]  # fmt: skip


# -- the store ---------------------------------------------------------------------------------------------------


def _card_paths(store: Path | None = None) -> builtins.list[Path]:
    return sorted((store or STORE).glob("*" + CARD_SUFFIX))


def names(store: Path | None = None) -> builtins.list[str]:
    """Returns the names of the models in ``store`` (default the package's, ``STORE``), sorted."""
    return [path.name[: -len(CARD_SUFFIX)] for path in _card_paths(store)]


def list(family: str | None = None) -> builtins.list[Card]:  # noqa: A001 - the registry's verb
    """Returns the cards of the package's models (of ``family`` only, when given), sorted by name."""
    cards = [read_card(path) for path in _card_paths()]
    return [card for card in cards if family is None or card.family == family]


class UnknownModel(KeyError, ValueError):
    """A model name the store does not hold (a ``KeyError`` for lookups, a ``ValueError`` for commands, which print
    bad input as a message); the message lists the closest names."""

    def __str__(self) -> str:
        return str(self.args[0])


def _card_path(name: str) -> Path:
    """Returns the card file of ``name``: a model in the store, or a path to a ``.json`` card.

    Raises:
        UnknownModel: an unknown name (the message lists the closest names).
    """
    if name.endswith(CARD_SUFFIX) or "/" in name:
        return Path(name)
    known = names()
    if name not in known:
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.4) or known
        raise UnknownModel(f"unknown model {name!r}; closest: {', '.join(close)} (jaxsoc models list)")
    return STORE / (name + CARD_SUFFIX)


def info(name: str) -> Card:
    """Returns the card of model ``name`` (a store name, ``model:NAME`` or a card path). Raises ``KeyError``
    (unknown name) or ``ModelFileError`` (an unreadable card)."""
    return read_card(_card_path(ref_name(name) or name))


def ref_of(card: Card) -> str:
    """Returns ``model:NAME`` of a card in the package's store, else ``model:PATH`` of its card file."""
    in_store = card.path is not None and card.path.resolve() == (STORE / (card.name + CARD_SUFFIX)).resolve()
    return PREFIX + (card.name if in_store else str(card.path))


def ref_name(run: str | Path) -> str | None:
    """Returns ``NAME`` of a ``model:NAME`` run argument, or None for a run directory."""
    text = str(run)
    return text[len(PREFIX) :] if text.startswith(PREFIX) else None


# -- the families' kinds -----------------------------------------------------------------------------------------


def kind_of(family: str, kind: str):
    """Returns the ``ModelKind`` ``kind`` of learner family ``family``. Raises ``ValueError`` naming the kinds there
    are."""
    from jaxsoc.learners.families import families

    declared = {(f.name, k.name): k for f in families() for k in f.models}
    if (family, kind) not in declared:
        raise ValueError(f"no model kind {family}/{kind}; declared: {sorted('/'.join(fk) for fk in declared)}")
    return declared[(family, kind)]


def open_ref(
    run: str | Path, kind: str | tuple[str, ...] | None = None, family: str | None = None, arrays: bool = True
) -> tuple[Card, Any]:
    """Returns ``(card, parameters)`` of ``model:NAME`` (or of a bare name or card path), after every file check
    (parameters None without ``arrays``: the card alone).

    Raises:
        UnknownModel: an unknown name.
        ModelFileError: a bad card or parameters file.
        ValueError: a model of another ``family`` or of none of the ``kind`` (one or several): a loader handed the
            wrong model.
    """
    card = info(str(run))
    kinds = (kind,) if isinstance(kind, str) else kind
    if (kinds is not None and card.kind not in kinds) or (family is not None and card.family != family):
        wanted = " or ".join(f"{family}/{k}" if family else repr(k) for k in (kinds or (card.kind,)))
        raise ValueError(f"model {card.name!r} is a {card.family}/{card.kind} model; {run} must name a {wanted} model")
    return card, read_params(card) if arrays else None


def load(name: str, kind: str | tuple[str, ...] | None = None, family: str | None = None, **options: Any) -> Any:
    """Returns model ``name`` as its family's evaluation takes it (the kind's ``load``: a policy, an answerer, an
    observer, a partner model; what the family's run loader returns for a run directory).

    Args:
        name: a model name (``jaxsoc models list``), ``model:NAME``, or a path to a card file.
        kind: the kind (or kinds) the caller expects (None: any).
        family: the family the caller expects (None: any).
        options: handed to the kind's ``load`` (e.g. the answerer's ``house_config``).

    Raises:
        UnknownModel: an unknown name (the closest are listed; a ``KeyError`` and a ``ValueError``).
        ModelFileError: a missing, corrupt, truncated or foreign file (named, with what differs).
        ValueError: a model of another family or kind, or arrays that do not fit the network its card describes.
    """
    card, tree = open_ref(name, kind, family)
    return kind_of(card.family, card.kind).load_function()(card, tree, **options)


def evaluate(name: str, **overrides: Any) -> dict[str, dict[str, float]]:
    """Returns ``{metric: {"value", "se", "episodes"}}``: the model's recorded evaluation run again (the kind's
    ``evaluate`` with the card's ``evaluation.args`` updated by ``overrides``, e.g. ``seed=`` for held-out
    episodes; None values are ignored). Raises ``ValueError`` for an override the kind's evaluation does not take,
    naming those it takes."""
    import inspect

    card = info(name)
    given = {k: v for k, v in overrides.items() if v is not None}
    function = kind_of(card.family, card.kind).evaluate_function()
    accepted = [p for p in inspect.signature(function).parameters if p != "ref"]
    unknown = sorted(set(given) - set(accepted))
    if unknown:
        raise ValueError(f"{card.family}/{card.kind} models' evaluation takes no {unknown}; it takes {accepted}")
    figures = function(ref_of(card), **{**card.evaluation.get("args", {}), **given})
    return {metric: _figure(value) for metric, value in figures.items()}


def figure(value: float, se: float = 0.0, episodes: int | None = None) -> dict[str, float]:
    """Returns a recorded figure, ``{"value", "se", "episodes"}`` (``episodes`` left out when None), as every kind's
    ``evaluate`` reports one."""
    out = {"value": float(value), "se": float(se)}
    return out if episodes is None else {**out, "episodes": int(episodes)}


def rate(p: float, n: int, episodes: int | None = None) -> dict[str, float]:
    """Returns the ``figure`` of a success rate ``p`` over ``n`` trials, with its binomial standard error
    ``sqrt(p (1 - p) / (n - 1))``; ``episodes`` (default ``n``) when the trials are not the episodes."""
    return figure(p, math.sqrt(float(p) * (1 - float(p)) / max(n - 1, 1)), n if episodes is None else episodes)


def _figure(value: Any) -> dict[str, float]:
    if isinstance(value, dict):
        return {k: float(v) for k, v in value.items()}
    return {"value": float(value)}


def agrees(recorded: dict[str, Any], measured: dict[str, float], least: float = 1e-6) -> bool:
    """Returns whether ``measured["value"]`` is within the recorded figure's standard error (at least ``least``) of
    ``recorded["value"]``."""
    tolerance = max(float(recorded.get("se") or 0.0), least)
    return math.isclose(measured["value"], float(recorded["value"]), rel_tol=0.0, abs_tol=tolerance)


# -- snapshots of training runs ----------------------------------------------------------------------------------


def _prune(node: Any, keep: Iterable[str]) -> Any:
    """Returns the subtrees of ``node`` (nested dicts) under keys in ``keep``, at any depth, or None for none."""
    keep = tuple(keep)
    if not isinstance(node, dict):
        return None
    out = {}
    for key, value in node.items():
        if key in keep:
            out[key] = value
        else:
            sub = _prune(value, keep)
            if sub:
                out[key] = sub
    return out or None


def snapshot_run(
    run: str | Path, files: Iterable[str] = ("run.json",), keep: Iterable[str] = PARAMETER_KEYS
) -> tuple[dict[str, Any], Any]:
    """Returns ``(spec, parameters)`` of a training run directory: ``spec`` = ``{"files": {name: JSON of each of
    files that exists}, "meta": the newest checkpoint's meta, "step": its step}``, ``parameters`` the subtrees of
    its state under the keys ``keep`` (nested dicts; optimizer and PRNG state left out).

    Raises:
        ValueError: no checkpoint, or a state with none of ``keep``.
    """
    import json

    from jaxsoc.learners.checkpoint import latest_step, read_meta, restore_raw

    run = Path(run)
    directory = run / "checkpoints"
    step = latest_step(directory)
    if step is None:
        raise ValueError(f"{run} has no checkpoint (no steps in {directory})")
    spec = {
        "files": {name: json.loads((run / name).read_text()) for name in files if (run / name).is_file()},
        "meta": read_meta(directory, step),
        "step": step,
    }
    tree = _prune(restore_raw(directory, step), keep)
    if tree is None:
        raise ValueError(f"{directory}/{step}: the state has none of {list(keep)}")
    return spec, tree


def fit(template: Any, tree: Any, card: Card, keep: Iterable[str] = PARAMETER_KEYS) -> Any:
    """Returns ``template`` (a state pytree whose shapes the card's spec gives, e.g. a fresh ``init`` or its
    ``jax.eval_shape``) with every leaf under a key in ``keep`` taken from ``tree`` (a model's parameters), checked
    leaf by leaf; other leaves keep the template's value (zeros for a shape).

    Raises:
        ValueError: missing arrays, arrays of other shapes or dtypes, or stored arrays the network has no place for
            (the first few named, with the file).
    """
    keep = tuple(keep)
    flat, treedef = jax.tree_util.tree_flatten_with_path(template)

    def keys(path) -> tuple[str, ...]:
        return tuple(str(getattr(e, "key", getattr(e, "name", getattr(e, "idx", e)))) for e in path)

    stored = {keys(path): leaf for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]}
    leaves, problems, used = [], [], set()
    for path, leaf in flat:
        where = keys(path)
        if not any(k in keep for k in where):
            leaves.append(jnp.zeros(leaf.shape, leaf.dtype) if isinstance(leaf, jax.ShapeDtypeStruct) else leaf)
            continue
        name = "/".join(where)
        value = stored.get(where)
        used.add(where)
        if value is None:
            problems.append(f"{name} missing")
        elif np.shape(value) != tuple(leaf.shape) or np.dtype(value.dtype) != np.dtype(leaf.dtype):
            problems.append(
                f"{name}: stored {np.dtype(value.dtype).name}{list(np.shape(value))}, "
                f"the network {np.dtype(leaf.dtype).name}{list(leaf.shape)}"
            )
        leaves.append(None if value is None else jnp.asarray(np.asarray(value)))
    problems += [f"{'/'.join(where)} stored but not in the network" for where in sorted(set(stored) - used)]
    if problems:
        shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
        raise ValueError(f"{card.params_path} does not fit the network its card describes: {shown}")
    return jax.tree_util.tree_unflatten(treedef, leaves)


def export(
    run: str | Path,
    name: str,
    family: str,
    kind: str,
    *,
    description: str,
    env_ids: Iterable[str] = (),
    training: dict[str, Any] | None = None,
    evaluation: dict[str, Any] | None = None,
    license: str = "Apache-2.0 (jaxsoc's license; trained by jaxsoc)",  # noqa: A002 - the card's field
    dtype: str = "float32",
    store: str | Path | None = None,
    score: bool = False,
) -> Card:
    """Writes model ``name`` from training run ``run`` (the kind's ``snapshot``) into ``store`` and returns its
    card; with ``score``, runs the kind's evaluation (``evaluation["args"]``) and records its figures.

    Raises:
        ValueError: an unknown kind, a run the kind cannot snapshot, or a model whose arrays do not load back.
    """
    if not name or "/" in name or name.endswith(CARD_SUFFIX) or name != name.strip():
        raise ValueError(f"bad model name {name!r} (letters, digits, '-', '.', no '/')")
    model_kind = kind_of(family, kind)
    spec, tree = model_kind.snapshot_function()(run)
    evaluation = {"command": "", "args": {}, "figures": {}, **(evaluation or {})}
    card = Card(
        name=name, family=family, kind=kind, env_ids=tuple(env_ids), description=description, spec=spec,
        training={"command": "", "commit": "", **(training or {})}, evaluation=evaluation, license=license,
        dtype=dtype, bytes=0, sha256="",
    )  # fmt: skip
    store = Path(store or STORE)
    card = write(store, card, tree)
    model_kind.load_function()(card, read_params(card))  # the arrays fit the network the spec builds
    if score:
        figures = evaluate(PREFIX + str(card.path))
        card = dataclasses.replace(card, evaluation={**card.evaluation, "figures": figures})
        card = write(store, card, tree)
    return card


def _short(description: str) -> str:
    """The head of a card's description: up to its first ``; ``, ``: ``, `` (`` or sentence end."""
    cut = min((i for i in (description.find(m) for m in ("; ", ": ", " (", ". ")) if i > 0), default=len(description))
    return description[:cut].rstrip(".")


def table(cards: Iterable[Card] | None = None) -> str:
    """Returns a markdown table of ``cards`` (default every stored model): name, family/kind, what it is (the head of
    its description), its env ids, its headline figure (value ± SE, episodes) and its parameters' size in KB (the
    README's "Pretrained models")."""
    rows = [
        "| name | family / kind | what it is | env | figure (`jaxsoc models eval NAME`) | KB |",
        "|---|---|---|---|---|---:|",
    ]
    for card in list() if cards is None else cards:
        headline = card.headline()
        figure = "-"
        if headline is not None:
            metric, value = headline
            se = f" ± {value['se']:.3f}" if value.get("se") else ""
            episodes = f" ({int(value['episodes'])} episodes)" if value.get("episodes") else ""
            figure = f"{metric} {value['value']:.3f}{se}{episodes}"
        envs = ", ".join(f"`{env_id}`" for env_id in card.env_ids) or "-"
        rows.append(
            f"| `{card.name}` | {card.family} / {card.kind} | {_short(card.description)} | {envs} | {figure} | "
            f"{card.bytes / 1024:.0f} |"
        )
    return "\n".join(rows)


def total_bytes(store: Path | None = None) -> int:
    """Returns the bytes of every file in ``store`` (default ``STORE``: cards and parameters)."""
    return sum(path.stat().st_size for path in (store or STORE).iterdir() if path.is_file())


def as_float32(tree: Any) -> Any:
    """Returns ``tree`` with its floating leaves as float32 numpy arrays (for comparing a stored tree)."""
    return jax.tree_util.tree_map(
        lambda x: np.asarray(x, np.float32) if np.issubdtype(np.asarray(x).dtype, np.floating) else np.asarray(x), tree
    )
