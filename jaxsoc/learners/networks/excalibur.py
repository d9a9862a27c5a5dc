"""The EXCALIBUR baseline's policy (supplementary §G, Eq. 6-8) with symbolic encoders in place of CLIP and T5.

The paper's belief is ``h_t = GRU(h_{t-1}, f_obs([MLP1(CLIP(o_t)); MLP2(ActEmb(a_{t-1})); MLP3(T5enc(q))]))`` with
3-layer MLPs ``f_obs`` and ``MLP1..3``, a policy ``softmax(f_action(h_t))`` (``f_action`` a 3-layer MLP), and a
frozen T5 answerer prompted from ``h_t``. Here the answerer is a classifier over ``catalogue.ANSWERS``, and every
part of one discrete action space (``state.NUM_ACTIONS = 7 + NUM_ANSWERS``) comes out of one softmax.

It reads an EXCALIBUR observation (``B`` worlds, ``N`` object slots, ``Q`` question rows, a ``V x V`` view; the
network works for any ``N``, ``Q`` and ``V``). The type, colour and material embeddings are shared by the view,
the objects and the questions, so a question's "red apple" and a seen red apple start from the same vectors. The
module imports only numpy constants of ``catalogue`` and ``state``, so importing the learners starts no jax backend.

- **the observation** (``MLP1``): the view's four channels (cell kind, 1 + type, 1 + colour, state) embedded and
  concatenated per cell, a 3x3 convolution, flattened; the object set: each visible slot a token (type, first and
  second colour, the sum of its material embeddings, the type of its parent slot; cells ahead / V, cells right /
  V, the sorted dimensions, log1p of the mass, the link one-hot, open, held) through two ReLU layers, pooled with a
  masked mean and max over the visible slots (so the code does not depend on the order of the slots); the held
  object's token; direction and phase one-hots and the phase step (``/ 2500`` and ``log1p``).
- **the object memory** (``object_memory``, the ``-memory`` presets; ``learners.excalibur.explorer``): each
  remembered slot of ``obs["memory"]`` a token as the visible objects' (its cell in the agent's frame now, lifted
  and held in place of open and held) through its own two ReLU layers, pooled with a masked mean and max, and the
  fraction of slots remembered, into ``MLP1``.
- **the previous action** (``MLP2``): an embedding of ``last_action`` (``A + 1`` entries: ``A`` is "none").
- **the questions** (``MLP3``): each row a token (the family, relation and per-object colour / material / type
  embeddings, concatenated so that the roles of objects 1-3 stay apart) through two ReLU layers, pooled with a
  masked mean and max over the rows with ``FAMILY > 0``: zeros in phase I, when there are none.
- ``f_obs`` over the three codes, then a GRU (``layers.GRUCell``): the belief ``h``.
- **the actor**: a 3-layer MLP from ``h`` scores the 7 move / interact / stop actions; the answer head, a 3-layer
  MLP over ``[h; the token of obs["question"]]`` (the question being answered), scores the ``NUM_ANSWERS``
  answers, which are the logits of actions ``7..``. With ``mask_actions`` the actions ``obs["action_mask"]`` marks
  invalid get ``-1e9`` before the softmax (probability exactly 0 in float32); a row with no valid action is left
  unmasked.
- **the critic**: a 2-layer MLP on ``[h; phase one-hot]``.
"""

from __future__ import annotations

import dataclasses
import math

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxsoc.envs.excalibur import catalogue as K
from jaxsoc.envs.excalibur import state as S
from jaxsoc.learners.networks import registry
from jaxsoc.learners.networks.layers import Conv, GRUCell, masked_pool

MASKED_LOGIT = -1e9
NUM_MOVES = S.ANSWER  # the actions before the answers: left, right, forward, pickup, drop, toggle, stop
OBJECT_COLUMNS = 13
SIZE_COLUMNS = 4
IMAGE_CHANNELS = 4
NUM_CELL_KINDS = 3  # unseen, floor, wall
NUM_CELL_STATES = 4  # plain, closed openable, open openable, holds visible items
NUM_LINKS = 3  # floor, on, in
MAX_PHASE_STEP = 2500.0
# object columns
VISIBLE, TYPE, COLOR1, COLOR2, MATERIAL1, MATERIAL2, MATERIAL3, AHEAD, RIGHT, PARENT, LINK, OPEN, HELD = range(13)
#: the observation keys the network reads
KEYS = (
    "image", "direction", "objects", "object_sizes", "held", "phase", "phase_step", "last_action", "questions",
    "question", "action_mask",
)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class ExcaliburConfig:
    """Hyper-parameters of ``ExcaliburPolicy``.

    Attributes:
        embed: width of every embedding (types, colours, materials, cell kinds and states, families, relations,
            actions); the view's convolution has ``2 * embed`` channels.
        hidden: width of the token layers and of every MLP (``MLP1..3``, ``f_obs``, the heads).
        memory_dim: GRU size (the belief ``h``).
        mask_actions: invalid actions (``obs["action_mask"]``) get probability 0.
        num_actions: actor outputs (``state.NUM_ACTIONS``).
        object_memory: also read the explicit object memory of ``learners.excalibur.explorer``
            (``obs["memory"]``, ``obs["memory_sizes"]``): each remembered slot a token as the visible objects (its
            own token layers), pooled into ``MLP1``'s input with the fraction of slots remembered.
    """

    embed: int = 16
    hidden: int = 128
    memory_dim: int = 128
    mask_actions: bool = True
    num_actions: int = S.NUM_ACTIONS
    object_memory: bool = False

    def __post_init__(self) -> None:
        for name in ("embed", "hidden", "memory_dim"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"ExcaliburConfig.{name} must be a positive int, got {value!r}")
        if self.num_actions != S.NUM_ACTIONS:
            raise ValueError(
                f"ExcaliburConfig.num_actions must be EXCALIBUR's {S.NUM_ACTIONS} (7 + {K.NUM_ANSWERS} answers), "
                f"got {self.num_actions}"
            )


PRESETS = {
    "small": ExcaliburConfig(),
    "tiny": ExcaliburConfig(embed=8, hidden=32, memory_dim=32),
    "small-memory": ExcaliburConfig(object_memory=True),
    "tiny-memory": ExcaliburConfig(embed=8, hidden=32, memory_dim=32, object_memory=True),
}
#: the observation keys of the object memory (``ExcaliburConfig.object_memory``)
MEMORY_KEYS = ("memory", "memory_sizes")


def _one_hot(x: jax.Array, n: int) -> jax.Array:
    return jax.nn.one_hot(jnp.clip(x.astype(jnp.int32), 0, n - 1), n)


def _ids(x: jax.Array, n: int) -> jax.Array:
    """Returns ``x`` as int32 ids clipped to ``0..n-1`` (an out-of-range id would read NaNs from ``nn.Embed``)."""
    return jnp.clip(x.astype(jnp.int32), 0, n - 1)


class MLP(nn.Module):
    """``len(features)`` Dense layers with ReLU between them (and after the last unless ``out_relu`` is False).

    Attributes:
        features: the widths of the layers, last one the output.
        out_relu: apply a ReLU to the output.
    """

    features: tuple[int, ...]
    out_relu: bool = True

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        """Returns ``float32[..., features[-1]]``."""
        for i, width in enumerate(self.features):
            x = nn.Dense(width, name=f"dense_{i}")(x)
            if i < len(self.features) - 1 or self.out_relu:
                x = nn.relu(x)
        return x


class ExcaliburPolicy(nn.Module):
    """The GRU belief, actor-answerer and critic of the module docstring; ``config`` an ``ExcaliburConfig``."""

    config: ExcaliburConfig

    def setup(self) -> None:
        c = self.config
        h = c.hidden
        self.types = nn.Embed(K.NUM_TYPES + 1, c.embed)
        self.colors = nn.Embed(K.NUM_COLORS + 1, c.embed)
        self.materials = nn.Embed(K.NUM_MATERIALS + 1, c.embed)
        self.cell_kinds = nn.Embed(NUM_CELL_KINDS, c.embed)
        self.cell_states = nn.Embed(NUM_CELL_STATES, c.embed)
        self.families = nn.Embed(S.NUM_FAMILIES + 1, c.embed)
        self.relations = nn.Embed(K.NUM_RELATIONS + 1, c.embed)
        self.actions = nn.Embed(c.num_actions + 1, c.embed)
        self.view = Conv(2 * c.embed, 3, 1)
        self.object_token = MLP((h, h))
        if c.object_memory:
            self.memory_token = MLP((h, h))
        self.question_token = MLP((h, h))
        self.mlp1 = MLP((h, h, h))
        self.mlp2 = MLP((h, h, h))
        self.mlp3 = MLP((h, h, h))
        self.f_obs = MLP((h, h, h))
        self.gru = GRUCell(c.memory_dim)
        self.f_action = MLP((h, h, NUM_MOVES), out_relu=False)
        self.f_answer = MLP((h, h, K.NUM_ANSWERS), out_relu=False)
        self.critic = MLP((h, 1), out_relu=False)

    def initial_memory(self, batch: int) -> dict[str, jax.Array]:
        """Returns ``{"h": float32[batch, memory_dim]}`` of zeros."""
        return {"h": jnp.zeros((batch, self.config.memory_dim), jnp.float32)}

    def encode_context(self, obs: dict) -> tuple:
        """Returns ``()``: the questions change within an episode (none in phase I), so they are read per step."""
        return ()

    def image_code(self, image: jax.Array) -> jax.Array:
        """Returns ``float32[B, V * V * 2 embed]``: the view's embedded channels through a 3x3 convolution."""
        x = jnp.concatenate(
            [
                self.cell_kinds(_ids(image[..., 0], NUM_CELL_KINDS)),
                self.types(_ids(image[..., 1], K.NUM_TYPES + 1)),
                self.colors(_ids(image[..., 2], K.NUM_COLORS + 1)),
                self.cell_states(_ids(image[..., 3], NUM_CELL_STATES)),
            ],
            -1,
        )
        x = nn.relu(self.view(x))
        return x.reshape(x.shape[0], -1)

    def object_tokens(self, objects: jax.Array, sizes: jax.Array, view: int, memory: bool = False) -> jax.Array:
        """Returns ``float32[B, N, hidden]``: each object slot embedded alone (``objects int[B, N, 13]``, ``sizes
        float32[B, N, 4]``, ``view`` the view size V) by the visible objects' token layers, or the memory's with
        ``memory``; a slot's parent enters through its type only, so the tokens are permuted with the slots."""
        types = _ids(objects[..., TYPE], K.NUM_TYPES + 1)
        parent = objects[..., PARENT].astype(jnp.int32)
        parent_slot = jnp.clip(parent - 1, 0, objects.shape[-2] - 1)
        parent_type = jnp.where(parent > 0, jnp.take_along_axis(types, parent_slot, -1), 0)
        materials = self.materials(_ids(objects[..., MATERIAL1 : MATERIAL3 + 1], K.NUM_MATERIALS + 1)).sum(-2)
        sizes = sizes.astype(jnp.float32)
        features = jnp.concatenate(
            [
                self.types(types),
                self.colors(_ids(objects[..., COLOR1], K.NUM_COLORS + 1)),
                self.colors(_ids(objects[..., COLOR2], K.NUM_COLORS + 1)),
                materials,
                self.types(parent_type),
                objects[..., AHEAD : RIGHT + 1].astype(jnp.float32) / view,
                sizes[..., :3],
                jnp.log1p(jnp.maximum(sizes[..., 3:], 0.0)),
                _one_hot(objects[..., LINK], NUM_LINKS),
                objects[..., OPEN : HELD + 1].astype(jnp.float32),
            ],
            -1,
        )
        return self.memory_token(features) if memory else self.object_token(features)

    def question_tokens(self, questions: jax.Array) -> jax.Array:
        """Returns ``float32[..., hidden]``: each question row (``int[..., 11]``, ``state``'s columns) embedded
        alone: the family, the relation and the colour / material / type of objects 1-3, concatenated."""
        q = questions
        parts = [
            self.families(_ids(q[..., S.FAMILY], S.NUM_FAMILIES + 1)),
            self.relations(_ids(q[..., S.REL], K.NUM_RELATIONS + 1)),
        ]
        for c, m, s in ((S.C1, S.M1, S.S1), (S.C2, S.M2, S.S2), (S.C3, S.M3, S.S3)):
            parts.append(self.colors(_ids(q[..., c], K.NUM_COLORS + 1)))
            parts.append(self.materials(_ids(q[..., m], K.NUM_MATERIALS + 1)))
            parts.append(self.types(_ids(q[..., s], K.NUM_TYPES + 1)))
        return self.question_token(jnp.concatenate(parts, -1))

    def observation_code(self, obs: dict) -> jax.Array:
        """Returns ``float32[B, hidden]``: ``MLP1`` of the view, the pooled objects, the held object's token and
        the direction, phase and phase step."""
        objects = obs["objects"]
        batch, slots = objects.shape[:2]
        tokens = self.object_tokens(objects, obs["object_sizes"], obs["image"].shape[-3])
        visible = objects[..., VISIBLE] > 0
        held = obs["held"].astype(jnp.int32).reshape(batch)
        held_slot = jnp.clip(held - 1, 0, slots - 1)
        held_token = jnp.take_along_axis(tokens, held_slot[:, None, None], 1)[:, 0]
        held_token = jnp.where((held > 0)[:, None], held_token, 0.0)
        step = jnp.maximum(obs["phase_step"].astype(jnp.float32).reshape(batch, 1), 0.0)
        parts = [
            self.image_code(obs["image"]),
            masked_pool(tokens, visible),
            held_token,
            _one_hot(obs["direction"].reshape(batch), 4),
            _one_hot(obs["phase"].reshape(batch), 4),
            jnp.minimum(step, MAX_PHASE_STEP) / MAX_PHASE_STEP,
            jnp.log1p(step) / math.log1p(MAX_PHASE_STEP),
        ]
        if self.config.object_memory:
            remembered = obs["memory"][..., VISIBLE] > 0
            memory = self.object_tokens(obs["memory"], obs["memory_sizes"], obs["image"].shape[-3], memory=True)
            parts += [masked_pool(memory, remembered), remembered.mean(-1, keepdims=True).astype(jnp.float32)]
        return self.mlp1(jnp.concatenate(parts, -1))

    def questions_code(self, questions: jax.Array) -> jax.Array:
        """Returns ``float32[B, hidden]``: ``MLP3`` of the question rows with ``FAMILY > 0`` (``int[B, Q, 11]``)
        pooled with a masked mean and max (zeros pooled when there are none)."""
        tokens = self.question_tokens(questions)
        return self.mlp3(masked_pool(tokens, questions[..., S.FAMILY] > 0))

    def step(self, obs: dict, context: tuple, memory: dict, train: bool = False):
        """Returns ``(log_probs float32[B, NUM_ACTIONS], value float32[B], memory {"h": float32[B, memory_dim]})``."""
        c = self.config
        batch = obs["objects"].shape[0]
        last = self.actions(_ids(obs["last_action"].reshape(batch), c.num_actions + 1))
        x = jnp.concatenate([self.observation_code(obs), self.mlp2(last), self.questions_code(obs["questions"])], -1)
        h, _ = self.gru(memory["h"], self.f_obs(x))
        question = self.question_tokens(obs["question"].reshape(batch, -1))
        logits = jnp.concatenate([self.f_action(h), self.f_answer(jnp.concatenate([h, question], -1))], -1)
        if c.mask_actions:
            valid = obs["action_mask"].astype(bool)
            valid = valid | ~valid.any(-1, keepdims=True)
            logits = jnp.where(valid, logits, MASKED_LOGIT)
        value = self.critic(jnp.concatenate([h, _one_hot(obs["phase"].reshape(batch), 4)], -1))[:, 0]
        return jax.nn.log_softmax(logits), value, {"h": h}

    def __call__(self, obs: dict, memory: dict, train: bool = False):
        """Returns ``step(obs, (), memory, train)``."""
        return self.step(obs, self.encode_context(obs), memory, train)


def _shape(space, key: str) -> tuple[int, ...]:
    return tuple(getattr(space.spaces[key], "shape", ()) or ())


def check(config: ExcaliburConfig, space) -> None:
    """Raises ``ValueError`` when the observation space is not an EXCALIBUR observation fitting ``config``: a
    missing key, object / size / question rows of the wrong width, object and size tables of different lengths,
    a view that is not ``[V, V, 4]``, or an action mask whose length is not ``config.num_actions``."""
    keys = set(getattr(space, "spaces", {}) or {})
    missing = sorted(set(KEYS) - keys)
    if config.object_memory and not missing and set(MEMORY_KEYS) - keys:
        raise ValueError(
            "the excalibur network with object_memory reads the explorer's memory (obs['memory'], "
            "obs['memory_sizes']: envs.excalibur.explorer_env.MemoryExplorerEnv); this env has none"
        )
    if missing:
        raise ValueError(
            f"the excalibur network needs an EXCALIBUR observation (keys {sorted(KEYS)}); missing {missing}"
        )
    objects, sizes = _shape(space, "objects"), _shape(space, "object_sizes")
    if len(objects) != 2 or objects[1] != OBJECT_COLUMNS:
        raise ValueError(f"the excalibur network needs obs['objects'] of shape (N, {OBJECT_COLUMNS}), got {objects}")
    if sizes != (objects[0], SIZE_COLUMNS):
        raise ValueError(
            f"the excalibur network needs obs['object_sizes'] of shape ({objects[0]}, {SIZE_COLUMNS}) "
            f"(one row per object slot), got {sizes}"
        )
    questions, question = _shape(space, "questions"), _shape(space, "question")
    if len(questions) != 2 or questions[1] != S.QUESTION_SLOTS or question != (S.QUESTION_SLOTS,):
        raise ValueError(
            f"the excalibur network needs obs['questions'] of shape (Q, {S.QUESTION_SLOTS}) and obs['question'] of "
            f"shape ({S.QUESTION_SLOTS},), got {questions} and {question}"
        )
    if config.object_memory and (_shape(space, "memory") != objects or _shape(space, "memory_sizes") != sizes):
        raise ValueError(
            f"the excalibur network needs obs['memory'] / obs['memory_sizes'] shaped as obs['objects'] / "
            f"obs['object_sizes'] ({objects}, {sizes}), got {_shape(space, 'memory')}, {_shape(space, 'memory_sizes')}"
        )
    image = _shape(space, "image")
    if len(image) != 3 or image[0] != image[1] or image[2] != IMAGE_CHANNELS:
        raise ValueError(f"the excalibur network needs obs['image'] of shape (V, V, {IMAGE_CHANNELS}), got {image}")
    mask = _shape(space, "action_mask")
    if mask != (config.num_actions,):
        raise ValueError(
            f"the excalibur network has num_actions={config.num_actions} but obs['action_mask'] has shape {mask}"
        )


registry.register("excalibur", registry.NetworkSpec(ExcaliburPolicy, ExcaliburConfig, PRESETS, check=check))


# -- the supervised answerer over an object memory --------------------------------------------------------------

#: ``int32[NUM_FAMILIES + 1]``: the answer kind of each question family (``catalogue.ANSWER_KINDS`` index: 0
#: yes/no, 1 count, 2 colour, 3 material, 4 type); row 0 (padding) reads yes/no
FAMILY_KIND = (0, 1, 0, 2, 3, 4, 0, 0, 0, 0, 0, 0)
_KIND_RANGES = (
    (K.YES, K.COUNT0),
    (K.COUNT0, K.COLOR0),
    (K.COLOR0, K.MATERIAL0),
    (K.MATERIAL0, K.TYPE0),
    (K.TYPE0, K.NUM_ANSWERS),
)


def answer_mask(family: jax.Array) -> jax.Array:
    """Returns ``bool[..., NUM_ANSWERS]``: the answers of the answer kind of question ``family`` (``int[...]``,
    0..NUM_FAMILIES; ``FAMILY_KIND``)."""
    kinds = jnp.asarray(FAMILY_KIND)[jnp.clip(family.astype(jnp.int32), 0, S.NUM_FAMILIES)]
    answer = jnp.arange(K.NUM_ANSWERS)
    lo = jnp.asarray([r[0] for r in _KIND_RANGES])[kinds][..., None]
    hi = jnp.asarray([r[1] for r in _KIND_RANGES])[kinds][..., None]
    return (answer >= lo) & (answer < hi)


@dataclasses.dataclass(frozen=True)
class AnswererConfig:
    """Hyper-parameters of ``ExcaliburAnswerer``.

    Attributes:
        embed: width of the question's word embeddings (family, relation, colour, material, type).
        hidden: width of the answer MLP (two hidden layers).
        match_hidden: width of the attention's scoring MLP (descriptor words against a slot).
    """

    embed: int = 16
    hidden: int = 128
    match_hidden: int = 16


ANSWERER_PRESETS = {"small": AnswererConfig(), "tiny": AnswererConfig(embed=8, hidden=32, match_hidden=8)}


def _has_bit(bits: jax.Array, value: jax.Array) -> jax.Array:
    """Returns ``bool``: bit ``value - 1`` of ``bits`` (``value`` 1-based; 0 reads False)."""
    return (value > 0) & ((jnp.right_shift(bits, jnp.maximum(value - 1, 0)) & 1) == 1)


class ExcaliburAnswerer(nn.Module):
    """Answers EXCALIBUR questions from an explicit object memory (``envs.excalibur.memory``), read by attention
    from the question.

    Inputs (``B`` houses, ``N`` memory slots, ``Q`` questions): ``memory`` a dict of ``known`` bool[B, N] (the slot
    holds a remembered object), ``type`` / ``color`` / ``material`` int32[B, N] (-1 pads), ``color_bits`` /
    ``material_bits`` int32[B, N] (every salient colour / material as a bit) and ``rel`` bool[B, R, N, N]
    (``rel[r, a, b]``: "a <r> b" among the remembered objects, from their remembered cells, parents, sizes and
    felt masses); ``questions`` int16[B, Q, QUESTION_SLOTS].

    Reading: for each of the question's three descriptors a learned scorer turns, per slot, whether the slot
    carries each of the descriptor's words (and which words the descriptor leaves out) into an attention logit
    (``sharpness * (words satisfied - 2.5)``, the sharpness learned from 8, plus a learned correction from 0);
    the sigmoid is the slot's membership of the descriptor's set (``a_k``), normalised it is the referent ``p_k``.
    The relation of the question hops once from a referent (``a_2 * rel[r] p_1``: the descriptor-2 objects <r>
    object 1; ``a_1 * rel[r] p_3`` for the chained families) and the readout collects soft counts (radial features
    at 0..MAX_COUNT), the colour / material / type distributions of the hop's set, whether two referents share a
    colour or material and whether anything else does. An MLP over these and the question's embedding scores the
    ``NUM_ANSWERS`` answers, with learned per-family gates adding the log-distributions to the colour, material and
    type answers; answers outside the family's kind (``answer_mask``) get ``MASKED_LOGIT``.

    Returns ``float32[B, Q, NUM_ANSWERS]`` logits. With an empty memory it answers from the question alone (the
    question-only prior)."""

    config: AnswererConfig = AnswererConfig()

    @nn.compact
    def __call__(self, memory: dict, questions: jax.Array) -> jax.Array:
        cfg = self.config
        q = questions.astype(jnp.int32)  # [B, Q, S]
        known = memory["known"].astype(jnp.float32)[:, None, :]  # [B, 1, N]
        typ = memory["type"].astype(jnp.int32)[:, None, :]
        cbits, mbits = memory["color_bits"][:, None, :], memory["material_bits"][:, None, :]
        rel = memory["rel"].astype(jnp.float32)  # [B, R, N, N]

        scorer = nn.Sequential(
            [nn.Dense(cfg.match_hidden, name="match_0"), nn.relu, nn.Dense(1, kernel_init=nn.initializers.zeros)],
            name="match",
        )
        sharpness = self.param("sharpness", lambda _: jnp.float32(8.0))

        shape = q.shape[:2] + known.shape[-1:]  # [B, Q, N]

        def attend(c, m, s, role):
            c, m, s = c[..., None], m[..., None], s[..., None]  # [B, Q, 1]
            bits = jnp.stack(
                [
                    _has_bit(cbits, c),
                    _has_bit(mbits, m),
                    (s > 0) & (typ == s - 1),
                    jnp.broadcast_to(c == 0, shape),
                    jnp.broadcast_to(m == 0, shape),
                    jnp.broadcast_to(s == 0, shape),
                ],
                -1,
            ).astype(jnp.float32)  # [B, Q, N, 6]
            role_code = jnp.broadcast_to(jax.nn.one_hot(role, 3), bits.shape[:-1] + (3,))
            # the words the slot satisfies (carried, or left out by the descriptor): 3 for a match
            satisfied = jnp.maximum(bits[..., 0:3], bits[..., 3:6]).sum(-1)
            logit = sharpness * (satisfied - 2.5) + scorer(jnp.concatenate([bits, role_code], -1))[..., 0]
            a = jax.nn.sigmoid(logit) * known
            return a, a / (a.sum(-1, keepdims=True) + 1e-6)

        a1, p1 = attend(q[..., S.C1], q[..., S.M1], q[..., S.S1], 0)
        a2, p2 = attend(q[..., S.C2], q[..., S.M2], q[..., S.S2], 1)
        a3, p3 = attend(q[..., S.C3], q[..., S.M3], q[..., S.S3], 2)

        r = jnp.clip(q[..., S.REL] - 1, 0, K.NUM_RELATIONS - 1)
        rel_q = jnp.take_along_axis(rel, r[:, :, None, None], axis=1)  # [B, Q, N, N]
        hop12 = a2 * jnp.einsum("bqij,bqj->bqi", rel_q, p1)
        hop13 = a1 * jnp.einsum("bqij,bqj->bqi", rel_q, p3)
        n12, n13 = hop12.sum(-1), hop13.sum(-1)
        s12, s13 = hop12 / (n12[..., None] + 1e-6), hop13 / (n13[..., None] + 1e-6)

        color = jax.nn.one_hot(memory["color"], K.NUM_COLORS)  # [B, N, C] (-1 -> zeros)
        material = jax.nn.one_hot(memory["material"], K.NUM_MATERIALS)
        types = jax.nn.one_hot(memory["type"], K.NUM_TYPES)

        def dist(weights, table):
            return jnp.einsum("bqn,bnk->bqk", weights, table)

        c1, c2, c13 = dist(p1, color), dist(p2, color), dist(s13, color)
        m1, m2, m13 = dist(p1, material), dist(p2, material), dist(s13, material)
        c12, m12, t12 = dist(s12, color), dist(s12, material), dist(s12, types)
        others = known * (1.0 - p1)
        else_color = 1.0 - jnp.exp(-jnp.einsum("bqn,bnk,bqk->bq", others, color, c1))
        else_material = 1.0 - jnp.exp(-jnp.einsum("bqn,bnk,bqk->bq", others, material, m1))
        counts = jnp.arange(K.MAX_COUNT + 1, dtype=jnp.float32)

        def radial(x):
            return jnp.exp(-2.0 * (x[..., None] - counts) ** 2)

        scalars = jnp.stack(
            [
                (c1 * c2).sum(-1),
                (m1 * m2).sum(-1),
                (c13 * c2).sum(-1),
                (m13 * m2).sum(-1),
                else_color,
                else_material,
                jnp.broadcast_to(known.sum(-1), n12.shape) / known.shape[-1],
            ],
            -1,
        )
        features = jnp.concatenate(
            [scalars, radial(n12), radial(a1.sum(-1))[..., :3], radial(a2.sum(-1))[..., :3],
             radial(a3.sum(-1))[..., :3], radial(n13)[..., :3], c12, m12, t12],
            -1,
        )  # fmt: skip

        def embed(x, n, name):
            return nn.Embed(n, cfg.embed, name=name)(_ids(x, n))

        words = [
            embed(q[..., S.FAMILY], S.NUM_FAMILIES + 1, "family"),
            embed(q[..., S.REL], K.NUM_RELATIONS + 1, "rel"),
        ]
        for k, (cc, mm, ss) in enumerate(((S.C1, S.M1, S.S1), (S.C2, S.M2, S.S2), (S.C3, S.M3, S.S3))):
            words += [
                embed(q[..., cc], K.NUM_COLORS + 1, f"color{k}"),
                embed(q[..., mm], K.NUM_MATERIALS + 1, f"material{k}"),
                embed(q[..., ss], K.NUM_TYPES + 1, f"type{k}"),
            ]
        x = jnp.concatenate(words + [features], -1)
        logits = MLP((cfg.hidden, cfg.hidden, K.NUM_ANSWERS), out_relu=False, name="head")(x)

        family = jnp.clip(q[..., S.FAMILY], 0, S.NUM_FAMILIES)
        gates = nn.Embed(S.NUM_FAMILIES + 1, 4, embedding_init=nn.initializers.ones, name="gates")(family)
        direct = jnp.concatenate(
            [
                jnp.zeros(family.shape + (K.COLOR0,)),
                gates[..., 0:1] * jnp.log(c12 + 1e-3),
                gates[..., 1:2] * jnp.log(m12 + 1e-3),
                gates[..., 2:3] * jnp.log(t12 + 1e-3),
            ],
            -1,
        )
        direct = direct.at[..., K.COUNT0 : K.COLOR0].add(gates[..., 3:4] * jnp.log(radial(n12) + 1e-3))
        return jnp.where(answer_mask(family), logits + direct, MASKED_LOGIT)
