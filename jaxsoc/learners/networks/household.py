"""Watch-And-Help's networks: the shared state encoder (``StateEncoder``), the HRL's low-level policy
(``LowLevelPolicy``, registered as ``"household-low"``) and the Hybrid's high-level policy (``HybridPolicy``,
registered as ``"household-hybrid"``). The goal-inference model that also reads ``StateEncoder`` is
``learners.household.watch``.

**The state encoder.** The models read a household observation (``world.observe``: ``[..., 88]`` node arrays plus
the two characters) as a set of tokens:

- one token per node (88), real when ``visible``;
- two character tokens: the observer (always real) and the other character (real when in the observer's room),
  with the extra class ids ``NUM_CLASSES`` and ``NUM_CLASSES + 1``.

Each token's features follow the original's ``ObjNameCoordStateEncode`` (``models-and-excalibur.md`` §4.2-4.3):

- ``class``: int32 ids (``C.NUM_CLASSES + 2`` of them);
- ``state``: float32[NUM_STATE_FEATURES]: the OPEN and ON bits, the relation to the observer (``REL_*``
  one-hot: close, holding in either hand, sitting on) and the relation to its parent (``RELATION_NAMES``
  one-hot: in a room, on, inside, held);
- ``coords``: float32[4]: the position relative to the observer (metres) and the class's footprint size.

``NodeEncoder`` embeds them (class: embedding, ReLU, Linear; state and coords: Linear, ReLU, Linear, each to
``d/2``; concatenated, ReLU, Linear to ``d``). ``StateEncoder`` adds one post-norm Transformer encoder layer
(``heads`` heads, feed-forward width ``d``, ReLU, ``dropout``; padded tokens masked as keys) and pools over the
real tokens (a masked mean, so padding never changes the result; ``code_parity=True`` averages over all slots
as the original code does).

``relational=True`` (the goal-inference model's option; the Hybrid and HRL policies keep the default) adds what
the plain tokens leave to be reconstructed from coordinates (``relational_features``):

- ``parent_class``: int32 ids: the class of what a node is on, inside or in (``obs["parent"]``; the id
  ``NO_PARENT_CLASS`` when it has none in view, is held, or for the characters), embedded like ``class``;
- ``held``: float32[NUM_TOKEN_CLASSES]: on each character token, how many objects of each class it holds (the
  observer's from its hand relations, the other character's from the held nodes the observer does not hold);
  zeros on node tokens.

``changes=True`` (a goal-inference option) adds ``changed``, float32[..., NUM_TOKENS, NUM_CHANGE_FEATURES], which
the observation dict must carry on its node axis (``watch.change_marks``): whether the demonstration has changed a
node's relation (its parent or its relation to it) and its open/on bits since the node was first seen; zeros on
the character tokens. It is read through a Linear like ``held``.

(A count-preserving pool, the token sum beside the mean, was tried and dropped: on the toy set of the tests it
slowed learning to a plateau.)

**The low-level policy** (Fig. 17) reads ``envs.household.subgoal_env.SubgoalEnv``'s observations: the
``StateEncoder``'s token embeddings, a subgoal encoding (learned embeddings of the object and target classes,
concatenated, Linear ``d``), attention vectors ``sigma_object, sigma_type = sigmoid(Linear(goal))``; object logits
``Linear(sigma_object * token)`` over the 88 node tokens (invisible ones masked) plus a learned "Null"; an LSTM over
``sigma_type * pooled state``, the subgoal encoding, the destination's token and ``time_left`` gives the value and
action-type logits, to which each target's gated token adds its own (the type given the target). The world action
``verb * 88 + target`` has ``log pi_object[target] + log pi_type[verb | target]``, with Null merged into target 0
(the world reads the target of a noop as nothing), renormalised over the ``valid`` actions of the 968 ids (the
others get probability 0). A ``belief`` network (presets ``*-belief``, ``tiny-marks``) marks the rooms visited and
may walk to the destination out of sight; ``marks`` adds ``subgoal_env.subgoal_marks`` to its node tokens.

**The high-level policy** (Fig. 18) reads ``envs.household.hybrid_env.HybridEnv``'s observations:
``StateEncoder`` over Bob's observation, a bag-of-predicates goal encoding gating the pooled state, an LSTM (one
step per option), actor over the 31 choices with the masked ones at ``MASKED_LOGIT`` (sampling, log-probabilities
and entropy are the masked distribution's), and critic.

Deviations from the paper: the subgoal's destination node marks its token with a learned vector (41% of the
training tasks have two kitchen tables); the low level's action type also depends on the target's token; class
embeddings are learned (not word2vec); the high level picks one of the 30 predicates (not two class heads), and its
LSTM also sees the goal encoding and the previous choice next to the gated state.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.household import classes as C
from jaxsoc.envs.household import predicates as PR
from jaxsoc.envs.household import world as W
from jaxsoc.envs.household.options import NUM_CHOICES
from jaxsoc.envs.household.subgoal_env import subgoal_marks
from jaxsoc.learners.networks import registry
from jaxsoc.learners.networks.layers import LSTMCell

LOW_NETWORK, HYBRID_NETWORK = "household-low", "household-hybrid"
#: the logit of a masked choice or an invisible node: probability exactly 0, and 0 * logit = 0 in the entropy
MASKED_LOGIT = -1e9
NUM_TOKENS = W.NUM_NODES + 2
NUM_TOKEN_CLASSES = C.NUM_CLASSES + 2
OBSERVER_CLASS, OTHER_CLASS = C.NUM_CLASSES, C.NUM_CLASSES + 1
NUM_OBSERVER_RELATIONS = 5  # C.REL_NONE .. C.REL_SITTING_ON
NUM_PARENT_RELATIONS = len(C.RELATION_NAMES)
NUM_STATE_FEATURES = 2 + NUM_OBSERVER_RELATIONS + NUM_PARENT_RELATIONS
NO_PARENT_CLASS = NUM_TOKEN_CLASSES  # relational tokens: no parent in view (or held, or a character)
NUM_CHANGE_FEATURES = 2  # relation changed, open/on bits changed (``changes=True``)
_SIZE = np.concatenate([C.SIZE, np.full((2, 2), 0.5, np.float32)])  # characters: a 0.5 m footprint


def tokens(obs: dict) -> dict[str, jax.Array]:
    """Returns the token features of an observation (``world.observe``'s dict, any leading axes ``...``):
    ``class`` int32[..., NUM_TOKENS], ``state`` float32[..., NUM_TOKENS, NUM_STATE_FEATURES], ``coords``
    float32[..., NUM_TOKENS, 4] and ``mask`` bool[..., NUM_TOKENS] (the 88 nodes, then observer and other)."""
    lead = obs["class"].shape[:-1]
    visible = obs["visible"].astype(bool)
    cls = jnp.where(visible, obs["class"].astype(jnp.int32), 0)
    char_cls = jnp.broadcast_to(jnp.array([OBSERVER_CLASS, OTHER_CLASS], jnp.int32), (*lead, 2))
    cls = jnp.concatenate([cls, char_cls], -1)
    bits = obs["states"].astype(jnp.int32)
    node_state = jnp.concatenate(
        [
            jnp.stack([(bits & C.OPEN) > 0, (bits & C.ON) > 0], -1).astype(jnp.float32),
            jax.nn.one_hot(obs["relation"].astype(jnp.int32), NUM_OBSERVER_RELATIONS),
            jax.nn.one_hot(obs["parent_relation"].astype(jnp.int32), NUM_PARENT_RELATIONS),
        ],
        -1,
    )
    char_state = jnp.zeros((*lead, 2, NUM_STATE_FEATURES), jnp.float32)
    state = (
        jnp.concatenate([node_state, char_state], -2)
        * jnp.concatenate([visible, jnp.ones((*lead, 2), bool)], -1)[..., None]
    )
    me = obs["agent_position"][..., :1, :]  # [..., 1, 2]
    pos = jnp.concatenate([obs["position"], obs["agent_position"]], -2) - me
    size = jnp.asarray(_SIZE)[cls]
    mask = jnp.concatenate([visible, obs["agent_visible"].astype(bool)], -1)
    coords = jnp.concatenate([pos, size], -1) * mask[..., None]
    return {"class": cls, "state": state, "coords": coords, "mask": mask}


def relational_features(obs: dict) -> dict[str, jax.Array]:
    """Returns the relational token features of an observation (module docstring; any leading axes ``...``):
    ``parent_class`` int32[..., NUM_TOKENS] (``NO_PARENT_CLASS`` where none) and ``held`` float32[...,
    NUM_TOKENS, NUM_TOKEN_CLASSES] (non-zero on the two character tokens only)."""
    lead = obs["class"].shape[:-1]
    visible = obs["visible"].astype(bool)
    cls = jnp.where(visible, obs["class"].astype(jnp.int32), 0)
    parent = obs["parent"].astype(jnp.int32)
    parent_cls = jnp.take_along_axis(cls, jnp.maximum(parent, 0), axis=-1)
    parent_cls = jnp.where(visible & (parent >= 0), parent_cls, NO_PARENT_CLASS)
    parent_cls = jnp.concatenate([parent_cls, jnp.full((*lead, 2), NO_PARENT_CLASS, jnp.int32)], -1)
    rel = obs["relation"].astype(jnp.int32)
    mine = visible & ((rel == C.REL_HOLDS_RH) | (rel == C.REL_HOLDS_LH))
    theirs = visible & (obs["parent_relation"].astype(jnp.int32) == C.HELD) & ~mine
    holds = jnp.stack([mine, theirs], -2).astype(jnp.float32)  # [..., 2, N]
    held = jnp.einsum("...cn,...nk->...ck", holds, jax.nn.one_hot(cls, NUM_TOKEN_CLASSES))
    held = jnp.concatenate([jnp.zeros((*lead, W.NUM_NODES, NUM_TOKEN_CLASSES), jnp.float32), held], -2)
    return {"parent_class": parent_cls, "held": held}


def _mlp2(width: int, name: str) -> nn.Sequential:
    return nn.Sequential([nn.Dense(width, name=f"{name}_0"), nn.relu, nn.Dense(width, name=f"{name}_1")])


class NodeEncoder(nn.Module):
    """Returns ``float32[..., NUM_TOKENS, d]`` token embeddings from ``tokens``' features (with ``relational``,
    also ``relational_features``': the parent's class embedded as the class is, the held classes through a
    Linear; with ``changes``, ``feats["changed"]`` through a Linear)."""

    d: int = 128
    relational: bool = False
    changes: bool = False

    @nn.compact
    def __call__(self, feats: dict[str, jax.Array]) -> jax.Array:
        half = self.d // 2
        cls = nn.Dense(half, name="class_1")(nn.relu(nn.Embed(NUM_TOKEN_CLASSES, half, name="class_0")(feats["class"])))
        state = _mlp2(half, "state")(feats["state"])
        coords = _mlp2(half, "coords")(feats["coords"])
        parts = [cls, state, coords]
        if self.relational:
            embed = nn.Embed(NUM_TOKEN_CLASSES + 1, half, name="parent_class_0")(feats["parent_class"])
            parts.append(nn.Dense(half, name="parent_class_1")(nn.relu(embed)))
            parts.append(nn.Dense(half, name="held")(feats["held"]))
        if self.changes:
            parts.append(nn.Dense(half, name="changed")(feats["changed"]))
        return nn.Dense(self.d, name="merge")(nn.relu(jnp.concatenate(parts, -1)))


class TransformerLayer(nn.Module):
    """One post-norm Transformer encoder layer (PyTorch's ``TransformerEncoderLayer``: self-attention, add &
    norm, feed-forward ``d -> ff -> d`` with ReLU, add & norm) over ``x`` float32[B, T, d] with key-padding
    ``mask`` bool[B, T]. Returns float32[B, T, d]."""

    d: int = 128
    heads: int = 2
    ff: int = 128
    dropout: float = 0.0

    @nn.compact
    def __call__(self, x: jax.Array, mask: jax.Array, train: bool = False) -> jax.Array:
        xavier = nn.initializers.xavier_uniform()
        attention_mask = mask[:, None, None, :]  # every query attends to the real keys only
        a = nn.MultiHeadDotProductAttention(num_heads=self.heads, kernel_init=xavier, name="attention")(
            x, x, mask=attention_mask
        )
        drop = nn.Dropout(self.dropout, deterministic=not train)
        x = nn.LayerNorm(name="norm_1")(x + drop(a))
        h = nn.Dense(self.ff, kernel_init=xavier, name="ff_0")(x)
        h = nn.Dense(self.d, kernel_init=xavier, name="ff_1")(drop(nn.relu(h)))
        return nn.LayerNorm(name="norm_2")(x + drop(h))


def masked_mean(x: jax.Array, mask: jax.Array, axis: int) -> jax.Array:
    """Returns the mean of ``x`` over ``axis`` counting only where ``mask`` (``x``'s shape without its last axis
    or equal to it) holds; 0 where nothing does."""
    m = mask.astype(x.dtype)
    if m.ndim < x.ndim:
        m = m[..., None]
    return (x * m).sum(axis) / jnp.maximum(m.sum(axis), 1.0)


class StateEncoder(nn.Module):
    """Encodes observations (``world.observe`` dicts with leading axes ``...``) to
    ``(nodes float32[..., NUM_TOKENS, d], pooled float32[..., d], mask bool[..., NUM_TOKENS])``: token
    embeddings after the Transformer, their pooled mean over real tokens, and the token mask (``relational``:
    the tokens also read ``relational_features``; ``changes``: they read ``obs["changed"]``, float32[...,
    W.NUM_NODES, NUM_CHANGE_FEATURES], the characters' tokens zeros)."""

    d: int = 128
    heads: int = 2
    dropout: float = 0.0
    code_parity: bool = False
    relational: bool = False
    changes: bool = False

    @nn.compact
    def __call__(self, obs: dict, train: bool = False) -> tuple[jax.Array, jax.Array, jax.Array]:
        feats = tokens(obs)
        if self.relational:
            feats.update(relational_features(obs))
        lead = feats["mask"].shape[:-1]
        if self.changes:
            if "changed" not in obs:
                raise ValueError('StateEncoder(changes=True) needs obs["changed"] (watch.change_marks)')
            changed = jnp.asarray(obs["changed"], jnp.float32)
            feats["changed"] = jnp.concatenate([changed, jnp.zeros((*lead, 2, NUM_CHANGE_FEATURES), jnp.float32)], -2)
        flat = jax.tree_util.tree_map(lambda a: a.reshape(-1, *a.shape[len(lead) :]), feats)
        x = NodeEncoder(self.d, self.relational, self.changes, name="nodes")(flat)
        x = TransformerLayer(self.d, self.heads, self.d, self.dropout, name="transformer")(x, flat["mask"], train)
        pool_mask = jnp.ones_like(flat["mask"]) if self.code_parity else flat["mask"]
        pooled = masked_mean(x, pool_mask, axis=1)

        return x.reshape(*lead, *x.shape[1:]), pooled.reshape(*lead, self.d), feats["mask"]


# -- the HRL's low-level policy -----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class LowLevelConfig:
    """Hyper-parameters of ``LowLevelPolicy``: ``d`` the embedding width (even, a multiple of ``heads``),
    ``heads`` the Transformer's heads, ``memory_dim`` the LSTM's size, ``num_actions`` the world's 968;
    ``belief``: the policy reads the rooms Bob has stood in (``obs["visited"]``, a learned vector added to those
    rooms' tokens) and may walk to the destination out of sight (its place is known; ``belief_action``'s
    setting). Without it (the default, and every run before it) only visible targets can be chosen. ``marks``
    (needs ``belief``): every node token also reads ``subgoal_marks`` (through a Linear)."""

    d: int = 128
    heads: int = 2
    memory_dim: int = 128
    num_actions: int = W.NUM_ACTIONS
    belief: bool = False
    marks: bool = False

    def __post_init__(self) -> None:
        for name in ("d", "heads", "memory_dim"):
            if getattr(self, name) < 1:
                raise ValueError(f"LowLevelConfig.{name} must be positive, got {getattr(self, name)}")
        if self.d % 2 or self.d % self.heads:
            raise ValueError(f"LowLevelConfig.d ({self.d}) must be even and a multiple of heads ({self.heads})")
        if self.marks and not self.belief:
            raise ValueError("LowLevelConfig.marks needs belief=True")
        if self.num_actions != W.NUM_ACTIONS:
            raise ValueError(
                f"the low-level policy acts in the world's {W.NUM_ACTIONS} actions, not {self.num_actions}"
            )


LOW_PRESETS = {
    "paper": LowLevelConfig(),
    "tiny": LowLevelConfig(d=16, memory_dim=16),
    "paper-belief": LowLevelConfig(belief=True),
    "small-belief": LowLevelConfig(d=32, memory_dim=32, belief=True),
    "tiny-belief": LowLevelConfig(d=16, memory_dim=16, belief=True),
    "tiny-marks": LowLevelConfig(d=16, memory_dim=16, belief=True, marks=True),
}


def check_low_observations(config: LowLevelConfig, space: Any) -> None:
    """Raises ``ValueError`` unless ``space`` has the subgoal keys and Bob's node observation."""
    needed = {"subgoal", "subgoal_target", "valid", "time_left", "class", "visible"}
    if config.belief:
        needed.add("visited")
    missing = sorted(needed - set(getattr(space, "spaces", {})))
    if missing:
        raise ValueError(f"the household low-level policy needs observations {missing}, which the env lacks")


class LowLevelPolicy(nn.Module):
    """The HRL's low-level policy (module docstring, Fig. 17); ``config`` a ``LowLevelConfig``. Memory: the
    LSTM's ``{"h", "c"}`` float32[B, memory_dim]; no per-episode context (the subgoal may change within an
    episode of the helper)."""

    config: LowLevelConfig

    def setup(self) -> None:
        c = self.config
        self.encoder = StateEncoder(c.d, c.heads)
        self.classes = nn.Embed(C.NUM_CLASSES, c.d)
        self.goal = nn.Dense(c.d)
        self.sigma_object = nn.Dense(c.d)
        self.sigma_type = nn.Dense(c.d)
        self.destination = self.param("destination", nn.initializers.normal(1.0), (c.d,))
        self.null = self.param("null", nn.initializers.normal(1.0), (c.d,))
        if c.belief:
            self.visited_room = self.param("visited_room", nn.initializers.normal(1.0), (c.d,))
        if c.marks:
            self.marks = nn.Dense(c.d, use_bias=False)
        self.object_head = nn.Dense(1)
        self.lstm = LSTMCell(c.memory_dim)
        self.type_head = nn.Dense(W.NUM_VERBS)
        self.node_type_head = nn.Dense(W.NUM_VERBS)
        self.query = nn.Dense(c.d)
        self.critic = nn.Dense(1)

    def initial_memory(self, batch: int) -> dict[str, jax.Array]:
        """Returns ``{"h", "c"}``: zeros float32[batch, memory_dim]."""
        zeros = jnp.zeros((batch, self.config.memory_dim), jnp.float32)
        return {"h": zeros, "c": zeros}

    def encode_context(self, obs: dict) -> tuple:
        """Returns ``()``: the subgoal is read at every step."""
        return ()

    def step(self, obs: dict, context: tuple, memory: dict, train: bool = False):
        """Returns ``(log_probs float32[B, 968], value float32[B], memory)`` for a batch of ``SubgoalEnv``
        observations; ``log_probs[b, verb * 88 + target]`` is a normalised joint log-probability, ``MASKED_LOGIT``
        (probability 0) where the target is an invisible node other than 0 (and, with ``belief``, other than the
        destination) or the action is not ``valid``."""
        nodes, pooled, _ = self.encoder(obs, train)
        n, batch = W.NUM_NODES, obs["subgoal"].shape[0]
        nodes = nodes[:, :n]
        pred = jnp.clip(obs["subgoal"].astype(jnp.int32), 0, PR.NUM_PREDICATES - 1)
        classes = jnp.stack([jnp.asarray(PR.PRED_OBJECT)[pred], jnp.asarray(PR.PRED_TARGET_CLASS)[pred]], -1)
        goal = self.goal(self.classes(classes.astype(jnp.int32)).reshape(batch, -1))  # [B, d]
        target = obs["subgoal_target"].astype(jnp.int32)
        is_destination = jnp.arange(n) == target[:, None]  # [B, N]
        nodes = nodes + is_destination[..., None] * self.destination
        selectable = obs["visible"].astype(bool)
        if self.config.belief:  # the rooms already searched are marked; the destination's place is known
            been = jnp.zeros((batch, n), bool).at[:, : W.NUM_ROOMS].set(obs["visited"].astype(bool))
            nodes = nodes + been[..., None] * self.visited_room
            selectable = selectable | is_destination
        if self.config.marks:
            nodes = nodes + self.marks(subgoal_marks(obs))
        destination = jnp.take_along_axis(nodes, jnp.clip(target, 0, n - 1)[:, None, None], 1)[:, 0]  # [B, d]
        sigma_object, sigma_type = nn.sigmoid(self.sigma_object(goal)), nn.sigmoid(self.sigma_type(goal))
        # the LSTM reads the gated state, the subgoal, its destination's token, what Bob holds and the time left
        relation = obs["relation"].astype(jnp.int32)
        holds = (relation == C.REL_HOLDS_RH) | (relation == C.REL_HOLDS_LH)  # [B, N]
        held = (nodes * holds[..., None]).sum(1)  # [B, d]: the held objects' tokens, summed
        time_left = obs["time_left"].astype(jnp.float32)[:, None]
        lstm_in = jnp.concatenate([sigma_type * pooled, goal, destination, held, time_left], -1)
        (h, c), _ = self.lstm((memory["h"], memory["c"]), lstm_in)
        # object logits: the gated token's own score plus its match with a query from the LSTM's state
        query = self.query(h)  # [B, d]
        node_logits = self.object_head(sigma_object[:, None] * nodes)[..., 0] + jnp.einsum("bnd,bd->bn", nodes, query)
        node_logits = jnp.where(selectable, node_logits, MASKED_LOGIT)
        null_logit = self.object_head(sigma_object * self.null)  # [B, 1]
        log_object = jax.nn.log_softmax(jnp.concatenate([node_logits, null_logit], -1))
        log_target = log_object[:, :n].at[:, 0].set(jnp.logaddexp(log_object[:, 0], log_object[:, n]))
        # the action type given the target: the LSTM's logits plus the gated target token's own
        per_node = self.node_type_head(sigma_object[:, None] * nodes)  # [B, N, 11]
        log_type = jax.nn.log_softmax(self.type_head(h)[:, None, :] + per_node, -1)  # [B, N, 11]
        joint = (log_type.transpose(0, 2, 1) + log_target[:, None, :]).reshape(batch, -1)
        log_probs = jax.nn.log_softmax(jnp.where(obs["valid"].astype(bool), joint, MASKED_LOGIT))
        return log_probs, self.critic(h)[:, 0], {"h": h, "c": c}

    def __call__(self, obs: dict, memory: dict, train: bool = False):
        """Returns ``step(obs, (), memory, train)``."""
        return self.step(obs, self.encode_context(obs), memory, train)


registry.register(
    LOW_NETWORK, registry.NetworkSpec(LowLevelPolicy, LowLevelConfig, LOW_PRESETS, check_low_observations)
)


# -- the Hybrid's high-level policy --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class HybridNetConfig:
    """Hyper-parameters of ``HybridPolicy``: ``d`` the width of every layer (the paper's 128), ``heads`` the
    Transformer's attention heads, ``num_actions`` the choices (31)."""

    d: int = 128
    heads: int = 2
    num_actions: int = NUM_CHOICES

    def __post_init__(self) -> None:
        for name in ("d", "heads", "num_actions"):
            if getattr(self, name) < 1:
                raise ValueError(f"HybridNetConfig.{name} must be positive, got {getattr(self, name)}")
        if self.d % 2 or self.d % self.heads:
            raise ValueError(f"HybridNetConfig.d ({self.d}) must be even and a multiple of heads ({self.heads})")


HYBRID_PRESETS = {"paper": HybridNetConfig(d=128), "tiny": HybridNetConfig(d=16)}
_OBS_KEYS = ("class", "states", "position", "visible", "relation", "parent_relation", "agent_position")
_OBS_KEYS += ("agent_visible", "goal", "last_choice", "choice_mask")


def check_hybrid_observations(config: HybridNetConfig, space: Any) -> None:
    keys = set(getattr(space, "spaces", {}))
    missing = [k for k in _OBS_KEYS if k not in keys]
    if missing:
        raise ValueError(f"the household-hybrid network needs observation keys {missing} (use HybridEnv)")


class HybridPolicy(nn.Module):
    """The high-level policy of Fig. 18 (``config`` a ``HybridNetConfig``), on observations of ``HybridEnv``
    (``observation``) with a leading batch axis ``B``:

    - state: ``StateEncoder(d)`` over Bob's observation, pooled (``float32[B, d]``);
    - goal (the per-episode context): a bag of predicates, ``sum_p goal[p] * embedding[p]``, then Linear ``d``
      and ReLU; the gate ``sigma_g = sigmoid(Linear(goal))`` multiplies the pooled state;
    - the gated state, the goal encoding and an embedding of the previous choice go through Linear ``d`` and
      ReLU into an LSTM (``d``); actor (``num_actions`` log-probabilities) and critic read its output.
    Memory: ``{"h", "c"}`` float32[B, d]."""

    config: HybridNetConfig

    def setup(self) -> None:
        cfg = self.config
        self.encoder = StateEncoder(cfg.d, cfg.heads, name="encoder")
        self.predicates = self.param("predicates", nn.initializers.normal(1.0), (PR.NUM_PREDICATES, cfg.d))
        self.goal_fc = nn.Dense(cfg.d, name="goal")
        self.gate = nn.Dense(cfg.d, name="gate")
        self.previous = nn.Embed(NUM_CHOICES + 1, cfg.d, name="previous")
        self.inputs = nn.Dense(cfg.d, name="inputs")
        self.lstm = LSTMCell(cfg.d, name="lstm")
        self.actor = nn.Dense(cfg.num_actions, name="actor")
        self.critic = nn.Dense(1, name="critic")

    def initial_memory(self, batch: int) -> dict[str, jax.Array]:
        """Returns ``{"h", "c"}``: zeros ``float32[batch, d]``."""
        zeros = jnp.zeros((batch, self.config.d), jnp.float32)
        return {"h": zeros, "c": zeros}

    def encode_context(self, obs: dict) -> dict[str, jax.Array]:
        """Returns ``{"goal", "gate"}`` float32[B, d]: the goal encoding and the attention ``sigma_g``."""
        bag = obs["goal"].astype(jnp.float32) @ self.predicates
        goal = nn.relu(self.goal_fc(bag))
        return {"goal": goal, "gate": jax.nn.sigmoid(self.gate(goal))}

    def step(self, obs: dict, context: dict, memory: dict, train: bool = False):
        """Returns ``(log_probs float32[B, num_actions], value float32[B], memory)``; the choices outside
        ``obs["choice_mask"]`` (bool[B, 31]) get the logit ``MASKED_LOGIT`` before the softmax, so they are never
        sampled and carry no probability (log-probabilities and the entropy are the masked distribution's)."""
        _, pooled, _ = self.encoder(obs, train)
        previous = self.previous(jnp.clip(obs["last_choice"].astype(jnp.int32) + 1, 0, NUM_CHOICES))
        x = jnp.concatenate([context["gate"] * pooled, context["goal"], previous], -1)
        (h, c), out = self.lstm((memory["h"], memory["c"]), nn.relu(self.inputs(x)))
        logits = jnp.where(obs["choice_mask"], self.actor(out), MASKED_LOGIT)
        return jax.nn.log_softmax(logits), self.critic(out)[:, 0], {"h": h, "c": c}

    def __call__(self, obs: dict, memory: dict, train: bool = False):
        """Returns ``step(obs, encode_context(obs), memory, train)``."""
        return self.step(obs, self.encode_context(obs), memory, train)


registry.register(
    HYBRID_NETWORK,
    registry.NetworkSpec(HybridPolicy, HybridNetConfig, HYBRID_PRESETS, check_hybrid_observations),
)
