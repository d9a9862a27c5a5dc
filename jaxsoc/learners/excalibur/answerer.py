"""EXCALIBUR's supervised answerer: ``networks.excalibur.ExcaliburAnswerer`` over an ``memory.ObjectMemory``,
trained with cross-entropy on the houses' true answers (``House.answers``), its answers masked to each question
family's answer kind.

**Training data** (``train``): every batch is ``houses`` freshly generated houses (``houses.generate_batch`` on the
device with a key of the batch's own; never a fixed bank) whose questions are drawn as the benchmark's banks draw
them: Algorithm 2 (``questions.filter_questions``' ranking, with ``bank.N_PER_HOUSE`` and ``bank.M_PER_FAMILY``) on
a population of fresh houses, refreshed every ``refresh`` batches, and ``questions.assign`` giving each house up to
``max_questions`` of the kept questions valid in it. The answerer sees each house through the memory of an agent
that saw part of it (``sample_knowledge``): nothing (a share ``p_empty``), everything with every pick-up-able object
lifted (``p_full``), or a random fraction of the objects with a random fraction of those lifted, so that it learns
to answer from what was seen and to fall back on the question's prior when the referents were not.

**Using it**: ``AnswererAgent`` wraps a scripted explorer (``envs.excalibur.agents``' protocol): the explorer acts in
phases I and III, every step writes the memory (``memory.write``) and in phases II and IV the answerer answers from
it. ``save`` / ``load`` keep a trained answerer in a directory (``answerer.msgpack`` and ``answerer.json``: the
network's name, preset, the command that trained it, the training history); ``load("model:excalibur-answerer")``
reads the pretrained one (``jaxsoc.models``).
"""

from __future__ import annotations

import functools
import json
import time
from pathlib import Path
from typing import Any

import flax.serialization
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct

from jaxsoc import models
from jaxsoc.envs.excalibur import bank as B
from jaxsoc.envs.excalibur import catalogue as K
from jaxsoc.envs.excalibur import houses as H
from jaxsoc.envs.excalibur import memory as MEM
from jaxsoc.envs.excalibur import questions as Q
from jaxsoc.envs.excalibur import state as S
from jaxsoc.learners.networks import excalibur as NET

NETWORK = "excalibur-answerer"
#: the family and kind of an answerer model (``jaxsoc.models``; declared in ``learners.excalibur.family``)
MODEL_FAMILY, MODEL_KIND = "excalibur", "answerer"
FORMAT = 1
#: the training houses' key stream (the banks use ``jax.random.key(bank.SPLIT_SEEDS[split] + seed)``)
TRAIN_STREAM = 7_000_001


def sample_knowledge(key: jax.Array, house: S.House, p_empty: float = 0.1, p_full: float = 0.25):
    """Returns ``(seen bool[N], lifted bool[N])`` for one house: nothing with probability ``p_empty``, every valid
    object seen and every pick-up-able one lifted with ``p_full``, else each object seen with a probability
    ``f ~ U[0, 1]`` and each seen pick-up-able one lifted with ``g ~ U[0, 1]``."""
    k_mode, k_f, k_g, k_seen, k_lift = jax.random.split(key, 5)
    u = jax.random.uniform(k_mode)
    n = house.valid.shape[0]
    f, g = jax.random.uniform(k_f), jax.random.uniform(k_g)
    seen = jax.random.uniform(k_seen, (n,)) < f
    lifted = jax.random.uniform(k_lift, (n,)) < g
    seen = jnp.where(u < p_empty, False, jnp.where(u < p_empty + p_full, True, seen)) & house.valid
    pickup = jnp.asarray(K.IS_PICKUP)[house.type.astype(jnp.int32)]
    lifted = jnp.where(u < p_empty + p_full, True, lifted) & seen & pickup
    return seen, lifted


def read_knowledge(house: S.House, seen: jax.Array, lifted: jax.Array, viewed: jax.Array | None = None):
    """Returns ``memory.read`` of ``memory.from_knowledge(house, seen, lifted, viewed)`` (one house; ``viewed``
    bool[H, W], default the cells of the objects seen)."""
    return MEM.read(MEM.from_knowledge(house, seen, lifted, viewed), house)


def loss_fn(model, variables, inputs: dict, questions: jax.Array, answers: jax.Array):
    """Returns ``(mean cross-entropy over the real question rows, accuracy)`` of ``model`` on a batch: ``inputs``
    the answerer's memory inputs with a leading ``B``, ``questions`` int16[B, Q, SLOTS], ``answers`` int[B, Q]
    (-1 for padding rows)."""
    logits = model.apply(variables, inputs, questions)
    rows = answers >= 0
    target = jnp.maximum(answers, 0).astype(jnp.int32)
    log_p = jax.nn.log_softmax(logits, -1)
    nll = -jnp.take_along_axis(log_p, target[..., None], -1)[..., 0]
    count = jnp.maximum(rows.sum(), 1)
    right = (jnp.argmax(logits, -1) == target) & rows
    return jnp.where(rows, nll, 0.0).sum() / count, right.sum() / count


class TrainConfig(struct.PyTreeNode):
    """``houses`` per batch, ``batches``, ``lr`` (Adam), ``refresh`` (batches between two runs of Algorithm 2),
    ``preset`` (``networks.excalibur.ANSWERER_PRESETS``), ``seed``, the knowledge mixture (``sample_knowledge``),
    ``house_config`` (``houses.HouseConfig``) and ``eval_every`` (batches between two evaluations on the
    validation bank)."""

    houses: int = struct.field(pytree_node=False, default=64)
    batches: int = struct.field(pytree_node=False, default=400)
    lr: float = struct.field(pytree_node=False, default=2e-3)
    refresh: int = struct.field(pytree_node=False, default=4)
    preset: str = struct.field(pytree_node=False, default="small")
    seed: int = struct.field(pytree_node=False, default=0)
    p_empty: float = struct.field(pytree_node=False, default=0.1)
    p_full: float = struct.field(pytree_node=False, default=0.25)
    house_config: H.HouseConfig = struct.field(pytree_node=False, default=B.DEFAULT_CONFIG)
    eval_every: int = struct.field(pytree_node=False, default=50)


def check_config(config: TrainConfig) -> None:
    """Raises ``ValueError`` for a non-positive size or an unknown preset."""
    for name in ("houses", "batches", "refresh", "eval_every"):
        if int(getattr(config, name)) < 1:
            raise ValueError(f"{name} must be >= 1, got {getattr(config, name)}")
    if not config.lr > 0:
        raise ValueError(f"lr must be > 0, got {config.lr}")
    if config.preset not in NET.ANSWERER_PRESETS:
        raise ValueError(f"unknown answerer preset {config.preset!r}; choose from {sorted(NET.ANSWERER_PRESETS)}")


def make_model(preset: str) -> NET.ExcaliburAnswerer:
    """Returns the answerer network of ``preset``."""
    return NET.ExcaliburAnswerer(NET.ANSWERER_PRESETS[preset])


def init_variables(model, house_config: H.HouseConfig, key: jax.Array):
    """Returns the network's initial variables (initialised on an empty memory of ``house_config``'s shapes; the
    weights do not depend on them)."""
    n, q = house_config.max_objects, house_config.max_questions
    inputs = {
        "known": jnp.zeros((1, n), bool),
        **{name: jnp.full((1, n), -1, jnp.int32) for name in ("type", "color", "material")},
        **{name: jnp.zeros((1, n), jnp.int32) for name in ("color_bits", "material_bits")},
        "rel": jnp.zeros((1, K.NUM_RELATIONS, n, n), bool),
    }
    return jax.jit(model.init)(key, inputs, jnp.zeros((1, q, S.QUESTION_SLOTS), jnp.int16))


def draw_questions(houses: S.House, rng: np.random.Generator, kept, max_questions: int):
    """Returns ``(houses with questions assigned, kept)``: ``kept = (rows, entropy)`` of Algorithm 2 run on these
    houses when ``kept`` is None, then ``questions.assign``."""
    if kept is None:
        kept = Q.filter_questions(houses, rng, B.N_PER_HOUSE, B.M_PER_FAMILY, min_valid=2)
    rows, answers, num = Q.assign(houses, kept[0], kept[1], max_questions)
    houses = houses.replace(questions=jnp.asarray(rows), answers=jnp.asarray(answers), num_questions=jnp.asarray(num))
    return houses, kept


@functools.partial(jax.jit, static_argnames=("model", "optimizer", "p_empty", "p_full"))
def _train_step(model, optimizer, variables, opt_state, houses, key, p_empty, p_full):
    keys = jax.random.split(key, houses.valid.shape[0])
    seen, lifted = jax.vmap(sample_knowledge, in_axes=(0, 0, None, None))(keys, houses, p_empty, p_full)
    inputs = jax.vmap(read_knowledge)(houses, seen, lifted)

    def objective(v):
        return loss_fn(model, v, inputs, houses.questions, houses.answers)

    (loss, acc), grads = jax.value_and_grad(objective, has_aux=True)(variables)
    updates, opt_state = optimizer.update(grads, opt_state, variables)
    return optax.apply_updates(variables, updates), opt_state, loss, acc


@functools.partial(jax.jit, static_argnames=("model",))
def _bank_accuracy(model, variables, houses: S.House):
    pickup = jnp.asarray(K.IS_PICKUP)[houses.type.astype(jnp.int32)]
    out = []
    for seen in (houses.valid, jnp.zeros_like(houses.valid)):
        viewed = jnp.broadcast_to(seen.any(-1)[:, None, None], houses.walls.shape)  # full: every cell seen
        inputs = jax.vmap(read_knowledge)(houses, seen, seen & pickup, viewed)
        out.append(loss_fn(model, variables, inputs, houses.questions, houses.answers)[1])
    return out


def bank_accuracy(model, variables, houses: S.House) -> dict[str, float]:
    """Returns the answerer's accuracy on ``houses`` (a bank) from the memory of everything (``full``: every object
    seen, every pick-up-able one lifted) and from an empty memory (``empty``: the question-only prior)."""
    full, empty = _bank_accuracy(model, variables, houses)
    return {"full": float(full), "empty": float(empty)}


def train(config: TrainConfig, val_houses: S.House | None = None, log=print) -> tuple[Any, dict]:
    """Trains an answerer (module docstring) for ``config.batches`` batches (the last weights are kept: nothing is
    chosen) and returns ``(variables, info)``: ``info`` holds ``history`` (per ``eval_every`` batches: batch, houses
    seen, train loss and accuracy, the accuracies of ``bank_accuracy`` on ``val_houses``, the validation bank, when
    given), ``seconds`` and ``houses_seen``. The test bank is scored once, after training (``jaxsoc excalibur eval``,
    the model's evaluation), never here."""
    check_config(config)
    model = make_model(config.preset)
    key = jax.random.key(config.seed)
    variables = init_variables(model, config.house_config, key)
    optimizer = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(config.lr))
    opt_state = optimizer.init(variables)
    rng = np.random.default_rng(TRAIN_STREAM + config.seed)
    stream = jax.random.key(TRAIN_STREAM + config.seed)
    history, kept, start = [], None, time.perf_counter()
    losses, accs = [], []
    for batch in range(config.batches):
        k_houses, k_step = jax.random.split(jax.random.fold_in(stream, batch))
        houses = H.generate_batch(k_houses, config.house_config, config.houses)
        if batch % config.refresh == 0:
            kept = None
        houses, kept = draw_questions(houses, rng, kept, config.house_config.max_questions)
        variables, opt_state, loss, acc = _train_step(
            model, optimizer, variables, opt_state, houses, k_step, config.p_empty, config.p_full
        )
        losses.append(float(loss))
        accs.append(float(acc))
        if (batch + 1) % config.eval_every == 0 or batch + 1 == config.batches:
            row = {
                "batch": batch + 1,
                "houses": (batch + 1) * config.houses,
                "seconds": round(time.perf_counter() - start, 1),
                "loss": float(np.mean(losses)),
                "train_accuracy": float(np.mean(accs)),
            }
            if val_houses is not None:
                row.update({f"val_{k}": v for k, v in bank_accuracy(model, variables, val_houses).items()})
            history.append(row)
            losses, accs = [], []
            log(json.dumps(row))
    info = {
        "history": history,
        "seconds": time.perf_counter() - start,
        "houses_seen": config.batches * config.houses,
    }
    return variables, info


# -- checkpoints ----------------------------------------------------------------------------------------------


def save(directory: str | Path, variables, preset: str, meta: dict | None = None) -> Path:
    """Writes ``answerer.msgpack`` (the variables) and ``answerer.json`` (``network``, ``format``, ``preset`` and
    ``meta``) into ``directory`` (created) and returns it."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    blob = {"network": NETWORK, "format": FORMAT, "preset": preset, **(meta or {})}
    (directory / "answerer.msgpack").write_bytes(flax.serialization.to_bytes(variables))
    (directory / "answerer.json").write_text(json.dumps(blob, indent=1, default=str))
    return directory


def check_checkpoint(directory: str | Path) -> dict:
    """Returns the ``answerer.json`` of an answerer checkpoint directory (or of ``model:NAME``: the one its card
    copied). Raises ``FileNotFoundError`` for a missing directory or file and ``ValueError`` for a checkpoint of
    another network (a PPO run, another file) or a model of another kind."""
    if models.ref_name(directory) is not None:
        card, _ = models.open_ref(directory, MODEL_KIND, MODEL_FAMILY, arrays=False)
        return _check_meta(card.spec["files"]["answerer.json"], directory)
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"no such answerer directory: {directory}")
    meta_path = directory / "answerer.json"
    if not meta_path.exists():
        hint = " (it is a PPO run: pass it as --agent ppo=RUN)" if (directory / "checkpoints").is_dir() else ""
        raise ValueError(f"{directory} is not an answerer checkpoint: no answerer.json{hint}")
    try:
        meta = json.loads(meta_path.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{meta_path} is not readable JSON: {error}") from error
    _check_meta(meta, directory)
    if not (directory / "answerer.msgpack").exists():
        raise FileNotFoundError(f"{directory} has no answerer.msgpack")
    return meta


def _check_meta(meta: Any, where: str | Path) -> dict:
    """Returns ``meta`` (an ``answerer.json``) after checking its network and preset (``ValueError`` naming
    ``where``)."""
    if not isinstance(meta, dict) or meta.get("network") != NETWORK:
        network = meta.get("network") if isinstance(meta, dict) else None
        raise ValueError(f"{where} holds a checkpoint of network {network!r}, not {NETWORK!r}")
    if meta.get("preset") not in NET.ANSWERER_PRESETS:
        raise ValueError(f"{where}: unknown answerer preset {meta.get('preset')!r}")
    return meta


def template(meta: dict, house_config: H.HouseConfig = B.DEFAULT_CONFIG):
    """Returns ``(model, variables)``: the answerer network of ``meta``'s preset and its initial variables (the
    shapes a checkpoint or a model must fill)."""
    model = make_model(meta["preset"])
    return model, init_variables(model, house_config, jax.random.key(0))


def load(directory: str | Path, house_config: H.HouseConfig = B.DEFAULT_CONFIG):
    """Returns ``(model, variables, meta)`` of the answerer checkpoint in ``directory`` or of ``model:NAME``
    (``check_checkpoint``'s errors; ``ValueError`` when the weights do not fit the network of its preset)."""
    if models.ref_name(directory) is not None:
        return models.load(directory, MODEL_KIND, MODEL_FAMILY, house_config=house_config)
    meta = check_checkpoint(directory)
    model, template_ = template(meta, house_config)
    raw = (Path(directory) / "answerer.msgpack").read_bytes()
    try:
        variables = flax.serialization.from_bytes(template_, raw)
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{directory}: the weights do not fit the {meta['preset']} answerer: {error}") from error
    shapes_ok = jax.tree_util.tree_all(
        jax.tree_util.tree_map(lambda a, b: np.shape(a) == np.shape(b), template_, variables)
    )
    if not shapes_ok:
        raise ValueError(f"{directory}: the weights do not fit the {meta['preset']} answerer (shapes differ)")
    return model, variables, meta


# -- the answerer as an agent ----------------------------------------------------------------------------------


class AnswererAgent(struct.PyTreeNode):
    """A scripted ``explorer`` that answers with the answerer: ``model`` (static) and ``variables``. Its memory is
    ``{"explorer": the explorer's memory, "objects": memory.ObjectMemory}``; each step writes the object memory
    (``memory.write``); in phases I and III the explorer acts, in II and IV the answerer answers the question being
    asked (its argmax) from the memory."""

    explorer: Any = struct.field(pytree_node=False)
    model: Any = struct.field(pytree_node=False)
    variables: Any

    def init(self, key: jax.Array, state: S.State) -> dict:
        """Returns ``{"explorer": explorer.init(key, state), "objects": memory.empty(house)}``."""
        return {"explorer": self.explorer.init(key, state), "objects": MEM.empty(state.house)}

    def answer(self, objects: MEM.ObjectMemory, state: S.State) -> jax.Array:
        """Returns ``int32``: ``state.ANSWER + a`` for the answerer's answer ``a`` to the question being asked."""
        house = state.house
        k = jnp.clip(state.phase_step, 0, house.questions.shape[0] - 1)
        inputs = jax.tree_util.tree_map(lambda x: x[None], MEM.read(objects, house))
        logits = self.model.apply(self.variables, inputs, house.questions[k][None, None])
        return (S.ANSWER + jnp.argmax(logits[0, 0])).astype(jnp.int32)

    def act(self, key: jax.Array, memory: dict, state: S.State) -> tuple[jax.Array, dict]:
        """Returns ``(action int32, memory)`` (class docstring)."""
        return self._act(key, memory, state, True)

    def explore_act(self, key: jax.Array, memory: dict, state: S.State) -> tuple[jax.Array, dict]:
        """Returns ``act`` without answering (valid in phases I and III; ``play.rollout`` uses it when no episode of
        the batch is answering)."""
        return self._act(key, memory, state, False)

    def _act(self, key, memory, state, answers: bool):
        objects = MEM.write(memory["objects"], state)
        explore = getattr(self.explorer, "explore_act", self.explorer.act)
        action, explorer = explore(key, memory["explorer"], state)
        answering = (state.phase == S.ANSWER_FIRST) | (state.phase == S.ANSWER_AGAIN)
        if answers:
            action = jnp.where(answering, self.answer(objects, state), action)
        return action.astype(jnp.int32), {"explorer": explorer, "objects": objects}
