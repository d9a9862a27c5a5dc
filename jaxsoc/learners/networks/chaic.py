"""CHAIC's networks: the helper's policy (``ChaicPolicy``, registered as ``"chaic"``) and the behaviour model of the
constrained agent (``BehaviourModel``, the BM helper's, ``learners.chaic.bm``).

**The helper's policy**: a set encoder over the visible objects, the agent's own state, a GRU, and an actor whose
object actions point at the objects.

It reads a CHAIC observation (``jaxsoc.envs.chaic.observation.observe``; ``B`` worlds, ``N = MAX_OBJECTS``). The
module imports only the constants of ``catalogue``, ``state`` and ``raycast``, which create no jax arrays, so
importing the learners starts no jax backend (``jax.distributed.initialize`` needs that):

- **objects** (the set): each slot ``i`` becomes a token from its class (an embedding), where it is (free, held,
  in a container, on the goal place: one-hot), its position in the agent's frame and distance (metres / 8) and
  its height. Two ReLU layers embed each token alone; the slots that are not ``visible`` are left out of the
  pooling (a masked mean and a masked max), so the pooled code does not depend on the order of the objects.
- **the agent** (a vector): heading, position / 10, the classes in its hands and in the containers it holds (class
  embeddings), its last action's status, the time, what it sees of its partner (pose, action kind, the class its
  action is about, status, hands), of the child, of the goal place, and the goal counts (zeros for a helper that is
  not told the goal).
- optionally (``rays > 0``) the ray-cast image: depth and semantic class per ray, through two 1-D convolutions.
- optionally (``partner_classes``; the options view, ``envs.chaic.options``) a partner model's evidence,
  ``obs["partner_classes"]`` float32[NUM_CLASSES] (the classes the constrained agent was seen to handle): the vector
  joins the agent vector and each object token gets its class's entry, so the pointers can prefer those objects.
  With a learned partner model in the view (``ChaicOptionsEnv(partner=...)``) the entries are its goal probabilities
  and its constraint probabilities ``obs["partner_constraint"]`` join the agent vector too.

The pooled objects, the agent vector (and the image code) go through a ReLU layer and a GRU. The value is a linear
head on the GRU state. The actor scores the 7 actions without an object (move, turns, wait, put in, put on,
message) with a linear head, and ``pick i`` / ``remove i`` as the scaled dot product of object ``i``'s token with a
query from the GRU state (a pointer per action kind): permuting the object slots permutes those logits the same
way and changes nothing else. With the options view's room options (``NUM_ROOM_ACTIONS``) a third pointer scores
each room from its token (``obs["rooms"]``: centre, size, share unexplored, whether the agent is in it). With
``mask_actions`` the logits of the actions ``obs["action_mask"]`` marks invalid
are set to ``-1e9`` before the softmax, so an invalid action is never sampled (its log-probability is about
``-1e9``, its probability exactly 0 in float32, and the entropy stays finite); a row with no valid action is left
unmasked.

**The behaviour model**: a GRU over the helper's steps beside a running maximum of the BM features
(``learners.chaic.bm_data.features``: what was ever observed), and two heads: ``targets`` (multi-label logits over
the classes: class ``c`` is in the goal) and ``constraint`` (logits over ``CONSTRAINTS``, the constrained agents'
abilities).
"""

from __future__ import annotations

import dataclasses

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.envs.chaic import state as S
from jaxsoc.envs.chaic.raycast import NUM_SEMANTIC
from jaxsoc.learners.networks import registry
from jaxsoc.learners.networks.layers import GRUCell, masked_pool

MASKED_LOGIT = -1e9
NUM_GLOBAL_ACTIONS = S.PICK  # the actions before ``PICK``: move, turn left/right, wait, put in, put on, message
NUM_KINDS = len(S.ACTION_NAMES) + 1  # the partner's action kind, +1 (0: unseen)
NUM_STATUS = 3  # ONGOING, FAILED, SUCCEEDED
NUM_ROOM_ACTIONS = S.NUM_ACTIONS + S.MAX_ROOMS  # the options view with room options (``envs.chaic.options.ROOM``)
#: the constrained agents' abilities, the behaviour model's constraint classes (``catalogue.TASK_ABILITY``'s values)
CONSTRAINTS = tuple(dict.fromkeys(K.TASK_ABILITY.values()))
TARGET_BIAS = -2.0  # the targets head's initial bias: a goal holds few of the classes (sigmoid(-2) = 0.12)


@dataclasses.dataclass(frozen=True)
class ChaicConfig:
    """Hyper-parameters of ``ChaicPolicy``.

    Attributes:
        embed: class-embedding width.
        hidden: width of the token layers, the trunk and the pointer queries.
        memory_dim: GRU size.
        rays: 0 (no image), else the number of depth / semantic rays the observation must carry.
        mask_actions: invalid actions (``obs["action_mask"]``) get probability 0.
        num_actions: actor outputs: ``state.NUM_ACTIONS``, or ``NUM_ROOM_ACTIONS`` with the options view's room
            options (``ChaicOptionsEnv(rooms=True)``), scored by a pointer over ``obs["rooms"]``.
        partner_classes: read ``obs["partner_classes"]`` (module docstring).
    """

    embed: int = 16
    hidden: int = 128
    memory_dim: int = 128
    rays: int = 0
    mask_actions: bool = True
    num_actions: int = S.NUM_ACTIONS
    partner_classes: bool = False

    def __post_init__(self) -> None:
        for name in ("embed", "hidden", "memory_dim"):
            if getattr(self, name) < 1:
                raise ValueError(f"ChaicConfig.{name} must be positive, got {getattr(self, name)}")
        if self.rays < 0:
            raise ValueError(f"ChaicConfig.rays must be >= 0, got {self.rays}")
        if self.num_actions not in (S.NUM_ACTIONS, NUM_ROOM_ACTIONS):
            raise ValueError(
                f"ChaicConfig.num_actions must be CHAIC's {S.NUM_ACTIONS} (or {NUM_ROOM_ACTIONS} with the options "
                f"view's room options), got {self.num_actions}"
            )

    @property
    def rooms(self) -> bool:
        """Whether the actor scores the room options (``num_actions == NUM_ROOM_ACTIONS``)."""
        return self.num_actions == NUM_ROOM_ACTIONS


PRESETS = {"small": ChaicConfig(), "tiny": ChaicConfig(embed=8, hidden=32, memory_dim=32)}
PRESETS.update({f"{name}-partner": dataclasses.replace(c, partner_classes=True) for name, c in list(PRESETS.items())})


def _one_hot(x: jax.Array, n: int) -> jax.Array:
    return jax.nn.one_hot(x.astype(jnp.int32), n)


class ChaicPolicy(nn.Module):
    """Set encoder, GRU, pointer actor and critic (module docstring); ``config`` a ``ChaicConfig``."""

    config: ChaicConfig

    def setup(self) -> None:
        c = self.config
        self.classes = nn.Embed(K.NUM_CLASSES, c.embed)
        self.token_1, self.token_2 = nn.Dense(c.hidden), nn.Dense(c.hidden)
        self.trunk = nn.Dense(c.hidden)
        if c.rays:
            self.semantic = nn.Embed(NUM_SEMANTIC, c.embed)
            self.ray_1 = nn.Conv(16, (5,), strides=(2,))
            self.ray_2 = nn.Conv(16, (5,), strides=(2,))
        self.gru = GRUCell(c.memory_dim)
        self.critic = nn.Dense(1)
        self.actor = nn.Dense(NUM_GLOBAL_ACTIONS)
        self.keys = nn.Dense(2 * c.hidden)  # pick and remove keys of each object token
        self.queries = nn.Dense(2 * c.hidden)
        if c.rooms:
            self.room_1, self.room_keys, self.room_query = nn.Dense(c.hidden), nn.Dense(c.hidden), nn.Dense(c.hidden)

    def initial_memory(self, batch: int) -> dict[str, jax.Array]:
        """Returns ``{"h": float32[batch, memory_dim]}`` of zeros."""
        return {"h": jnp.zeros((batch, self.config.memory_dim), jnp.float32)}

    def encode_context(self, obs: dict) -> tuple:
        """Returns ``()``: nothing is constant within an episode."""
        return ()

    def tokens(self, objects: dict, evidence: jax.Array | None = None) -> jax.Array:
        """Returns ``float32[B, N, hidden]``: each object slot embedded alone (with ``evidence`` float32[B, C], its
        class's entry)."""
        rel = objects["rel_pos"].astype(jnp.float32) / 8.0
        cls = objects["cls"].astype(jnp.int32)
        extra = [] if evidence is None else [jnp.take_along_axis(evidence, cls, -1)[..., None]]
        features = jnp.concatenate(
            [
                *extra,
                self.classes(cls),
                _one_hot(objects["where"], len(S.WHERE_NAMES)),
                rel,
                jnp.linalg.norm(rel, axis=-1, keepdims=True),
                objects["height"].astype(jnp.float32)[..., None],
            ],
            -1,
        )
        return nn.relu(self.token_2(nn.relu(self.token_1(features))))

    def agent_vector(self, obs: dict) -> jax.Array:
        """Returns ``float32[B, F]``: the agent's own state and what it sees of the others (module docstring)."""
        batch = obs["pose"].shape[0]

        def classes(x):  # int classes [B, ...] -> their embeddings, flattened
            return self.classes(x.astype(jnp.int32)).reshape(batch, -1)

        def scalar(name):
            return obs[name].astype(jnp.float32).reshape(batch, 1)

        pose = obs["pose"].astype(jnp.float32)
        partner = obs["partner_pose"].astype(jnp.float32)
        parts = [
            pose[:, 2:],
            pose[:, :2] / 10.0,
            classes(obs["hands"]),
            self.classes(obs["hand_contents"].astype(jnp.int32)).sum(-2).reshape(batch, -1),
            _one_hot(obs["status"], NUM_STATUS),
            scalar("time"),
            scalar("partner_visible"),
            partner[:, :2] / 8.0,
            partner[:, 2:],
            _one_hot(obs["partner_action"], NUM_KINDS),
            classes(obs["partner_target"]),
            _one_hot(obs["partner_status"], NUM_STATUS),
            classes(obs["partner_hands"]),
            scalar("child_visible"),
            obs["child_rel"].astype(jnp.float32) / 8.0,
            scalar("goal_visible"),
            obs["goal_rel"].astype(jnp.float32) / 8.0,
            scalar("goal_height"),
            obs["goal"].astype(jnp.float32) / 4.0,
        ]
        if self.config.partner_classes:
            parts.append(obs["partner_classes"].astype(jnp.float32))
            if "partner_constraint" in obs:  # a learned partner model's constraint probabilities
                parts.append(obs["partner_constraint"].astype(jnp.float32))
        return jnp.concatenate(parts, -1)

    def room_logits(self, rooms: dict, h: jax.Array) -> jax.Array:
        """Returns ``float32[B, MAX_ROOMS]``: each room's score, the scaled dot product of its token (valid, centre
        in the agent's frame and distance, size, share unexplored, whether the agent is in it) with a query from
        the GRU state ``h``."""
        rel = rooms["rel_pos"].astype(jnp.float32) / 8.0
        features = jnp.concatenate(
            [
                rooms["valid"].astype(jnp.float32)[..., None],
                rel,
                jnp.linalg.norm(rel, axis=-1, keepdims=True),
                rooms["size"].astype(jnp.float32) / 8.0,
                rooms["unexplored"].astype(jnp.float32)[..., None],
                rooms["here"].astype(jnp.float32)[..., None],
            ],
            -1,
        )
        keys = self.room_keys(nn.relu(self.room_1(features)))  # [B, R, hidden]
        return jnp.einsum("brd,bd->br", keys, self.room_query(h)) / jnp.sqrt(self.config.hidden)

    def image(self, obs: dict) -> jax.Array:
        """Returns ``float32[B, F]``: the ray-cast depth and semantic codes (``raycast.SEMANTIC_NAMES``: walls,
        agents, furniture and object classes, their own embedding) through two 1-D convolutions."""
        depth = jnp.clip(obs["depth"].astype(jnp.float32), 0.0, 64.0)
        semantic = jnp.clip(obs["semantic"].astype(jnp.int32), 0, NUM_SEMANTIC - 1)
        x = jnp.concatenate([depth[..., None] / 8.0, self.semantic(semantic)], -1)
        x = nn.relu(self.ray_2(nn.relu(self.ray_1(x))))
        return x.reshape(x.shape[0], -1)

    def step(self, obs: dict, context: tuple, memory: dict, train: bool = False):
        """Returns ``(log_probs float32[B, NUM_ACTIONS], value float32[B], memory)``."""
        c = self.config
        evidence = obs["partner_classes"].astype(jnp.float32) if c.partner_classes else None
        tokens = self.tokens(obs["objects"], evidence)
        visible = obs["objects"]["visible"].astype(bool)
        parts = [masked_pool(tokens, visible), self.agent_vector(obs)]
        if c.rays:
            parts.append(self.image(obs))
        x = nn.relu(self.trunk(jnp.concatenate(parts, -1)))
        h, _ = self.gru(memory["h"], x)
        keys = self.keys(tokens).reshape(*tokens.shape[:-1], 2, c.hidden)  # [B, N, 2, hidden]
        queries = self.queries(h).reshape(h.shape[0], 2, c.hidden)  # [B, 2, hidden]
        pointers = jnp.einsum("bnkd,bkd->bkn", keys, queries) / jnp.sqrt(c.hidden)  # [B, 2, N]: pick, remove
        logits = [self.actor(h), pointers.reshape(h.shape[0], -1)]
        if c.rooms:
            logits.append(self.room_logits(obs["rooms"], h))
        logits = jnp.concatenate(logits, -1)
        if c.mask_actions:
            valid = obs["action_mask"].astype(bool)
            valid = valid | ~valid.any(-1, keepdims=True)
            logits = jnp.where(valid, logits, MASKED_LOGIT)
        return jax.nn.log_softmax(logits), self.critic(h)[:, 0], {"h": h}

    def __call__(self, obs: dict, memory: dict, train: bool = False):
        """Returns ``step(obs, (), memory, train)``."""
        return self.step(obs, self.encode_context(obs), memory, train)


def check(config: ChaicConfig, space) -> None:
    """Raises ``ValueError`` when the observation space is not a CHAIC observation fitting ``config``."""
    keys = set(getattr(space, "spaces", {}) or {})
    needed = {"objects", "pose", "partner_pose", "action_mask"}
    if not needed <= keys:
        raise ValueError(f"the chaic network needs a CHAIC observation (keys {sorted(needed)}), got {sorted(keys)}")
    if config.rooms and "rooms" not in keys:
        raise ValueError(
            f"the chaic network with {NUM_ROOM_ACTIONS} actions (room options) needs obs['rooms'] (the options view "
            "with rooms=True)"
        )
    if config.partner_classes and "partner_classes" not in keys:
        raise ValueError(
            "the chaic network with partner_classes needs obs['partner_classes'] (the options view, "
            "CHAIC-<Task>-Options-v0)"
        )
    if config.rays:
        depth = space.spaces.get("depth")
        if depth is None or tuple(depth.shape) != (config.rays,):
            have = None if depth is None else tuple(depth.shape)
            raise ValueError(
                f"the chaic network with rays={config.rays} needs obs['depth'] of shape ({config.rays},), got {have}: "
                f"make the env with rays={config.rays} (jaxsoc.make(env_id, rays={config.rays}))"
            )


registry.register("chaic", registry.NetworkSpec(ChaicPolicy, ChaicConfig, PRESETS, check=check))


class BehaviourModel(nn.Module):
    """A GRU beside a running maximum of the features. One step (``__call__((h, m), x)``): the memory ``m`` float32[...,
    NUM_FEATURES] becomes ``max(m, x)`` (what was ever observed: every class ever seen in the partner's hands, on
    the goal place, ...), Dense(``embed``) + ReLU of ``[x, m]`` feeds the GRU (``h`` float32[..., hidden]) and two
    linear heads read ``[h, m]``; it returns ``((h', m'), targets float32[..., NUM_CLASSES], constraint
    float32[..., len(CONSTRAINTS)])`` (logits). Without ``pool`` ``m`` is left out of the input and the heads (the
    GRU alone). ``encode``, ``recur`` and ``heads`` are its parts (``learners.chaic.bm_model.logits`` runs a whole
    sequence with them); ``NUM_FEATURES`` is ``learners.chaic.bm_data.NUM_FEATURES``."""

    embed: int
    hidden: int
    pool: bool = True

    def setup(self) -> None:
        self.input = nn.Dense(self.embed)
        self.gru = GRUCell(self.hidden)
        self.targets = nn.Dense(K.NUM_CLASSES, bias_init=nn.initializers.constant(TARGET_BIAS))
        self.constraint = nn.Dense(len(CONSTRAINTS))

    def _with(self, y: jax.Array, m: jax.Array) -> jax.Array:
        return jnp.concatenate([y, m], -1) if self.pool else y

    def encode(self, x: jax.Array, m: jax.Array) -> jax.Array:
        return nn.relu(self.input(self._with(x, m)))

    def recur(self, h: jax.Array, z: jax.Array) -> jax.Array:
        return self.gru(h, z)[0]

    def heads(self, h: jax.Array, m: jax.Array) -> tuple[jax.Array, jax.Array]:
        y = self._with(h, m)
        return self.targets(y), self.constraint(y)

    def __call__(self, carry: tuple[jax.Array, jax.Array], x: jax.Array):
        h, m = carry
        m = jnp.maximum(m, x)
        h = self.recur(h, self.encode(x, m))
        return ((h, m), *self.heads(h, m))
