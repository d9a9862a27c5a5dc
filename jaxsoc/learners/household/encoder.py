"""The household learners' state encoder: a Transformer over the visible nodes of one observation, pooled.

The Watch-And-Help models (the goal-inference model, the Hybrid's and the HRL's policies) read a household
observation (``world.observe``: ``[..., 88]`` node arrays plus the two characters) as a set of tokens:

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
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.household import classes as C
from jaxsoc.envs.household import world as W

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
