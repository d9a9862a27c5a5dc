"""What an agent observes: egocentric and partial (the original's observation, with object detection made
exact, as the constrained agent's ground-truth segmentation).

``observe(state, agent)`` returns a dict of arrays:

- ``objects``: per object slot ``[MAX_OBJECTS]`` (zeros where not visible): ``visible`` bool, ``cls`` int8,
  ``rel_pos`` float32[N, 2] (metres in the agent's frame: forward, left), ``height`` float32 (top of the
  object), ``where`` int8 (``WHERE_NAMES``: free, held by me, held by another, in a container, on the goal).
- ``self``: ``pose`` float32[4] (x, z, cos, sin of the heading), ``hands`` int8[2] (classes held, 0 none),
  ``hand_contents`` int8[2, 3] (classes in a held container), ``status`` int8 (of its last action),
  ``time`` float32 (frame / max_frames).
- the partner (the other controllable agent) when visible, else zeros: ``partner_visible`` bool,
  ``partner_pose`` float32[4] (forward, left, cos, sin of its heading relative to mine), ``partner_action``
  int8 (the kind of its current action, ``state.ACTION_NAMES``, +1; 0 unseen), ``partner_target`` int8 (the
  class its pick or put is about), ``partner_status`` int8, ``partner_hands`` int8[2].
- the child (shopping): ``child_visible`` bool, ``child_rel`` float32[2].
- ``goal_visible`` bool, ``goal_rel`` float32[2], ``goal_height`` float32.
- ``goal`` int8[NUM_CLASSES]: the goal counts, only for an agent told its goal (``sees_goal``), else zeros.
- ``action_mask`` bool[NUM_ACTIONS]: ``world.valid_actions``.
- optionally (``rays > 0``) ``depth`` float32[rays] and ``semantic`` int8[rays] (``raycast.cast``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsoc.core import spaces
from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.envs.chaic import geometry as G
from jaxsoc.envs.chaic import state as S
from jaxsoc.envs.chaic import world as W

WHERE_NAMES = S.WHERE_NAMES


def _relative(state: S.State, agent, points: jax.Array) -> jax.Array:
    """Returns ``float32[..., 2]``: ``points`` in ``agent``'s frame (forward, left)."""
    fwd = G.heading_vector(state.agents.heading[agent])
    left = jnp.stack([-fwd[1], fwd[0]])
    d = points - state.agents.pos[agent]
    return jnp.stack([d @ fwd, d @ left], -1)


def observe(
    state: S.State,
    agent: int,
    sees_goal: bool = False,
    view_dist: float = W.VIEW_DIST,
    rays: int = 0,
    mask: bool = True,
) -> dict:
    """Returns ``agent``'s observation (see the module docstring). ``agent`` is static (0 or 1). Without ``mask``
    the dict has no ``action_mask`` (for a caller that puts its own there: the options view)."""
    obj, a = state.objects, state.agents
    sight = W.sightings(state, agent, view_dist)  # one line-of-sight test for objects, agents and the goal place
    vis, pos, carrier = sight["objects"], sight["positions"], sight["carrier"]
    where = jnp.select(
        [obj.delivered, obj.container >= 0, carrier == agent, carrier >= 0],
        [4, 3, 1, 2],
        0,
    ).astype(jnp.int8)
    objects = {
        "visible": vis,
        "cls": jnp.where(vis, obj.cls, 0).astype(jnp.int8),
        "rel_pos": jnp.where(vis[:, None], _relative(state, agent, pos), 0.0),
        "height": jnp.where(vis, obj.height, 0.0),
        "where": jnp.where(vis, where, 0).astype(jnp.int8),
    }

    def held_classes(who):
        hands = a.hands[who]
        cls = jnp.where(hands >= 0, obj.cls[jnp.maximum(hands, 0)], 0).astype(jnp.int8)
        inside = (obj.container[None, :] == hands[:, None]) & (hands[:, None] >= 0)  # [2, N]
        order = jnp.cumsum(inside, -1) - 1
        slots = jnp.zeros((2, K.CONTAINER_SLOTS), jnp.int8)
        rows = jnp.broadcast_to(jnp.arange(2)[:, None], inside.shape)
        col = jnp.where(inside & (order < K.CONTAINER_SLOTS), order, K.CONTAINER_SLOTS)
        slots = slots.at[rows, col].set(jnp.broadcast_to(obj.cls[None, :], inside.shape), mode="drop")
        return cls, slots

    hands, hand_contents = held_classes(agent)
    direction = G.heading_vector(a.heading[agent])
    partner = S.HELPER if agent == S.MAIN else S.MAIN
    seen = sight["agents"]
    p_vis = seen[partner]
    rel_heading = (a.heading[partner] - a.heading[agent]) % K.NUM_HEADINGS
    p_dir = G.heading_vector(rel_heading)
    p_pose = jnp.concatenate([_relative(state, agent, a.pos[partner]), p_dir])
    p_action = W.stored_action(a.action[partner])
    kind, target = S.decode_action(p_action)
    target_cls = jnp.where(target >= 0, obj.cls[jnp.maximum(target, 0)], 0)
    p_hands, _ = held_classes(partner)
    goal_vis = sight["goal"]
    out = {
        "objects": objects,
        "pose": jnp.concatenate([a.pos[agent], direction]),
        "hands": hands,
        "hand_contents": hand_contents,
        "status": a.status[agent].astype(jnp.int8),
        "time": (state.frame / jnp.maximum(state.max_frames, 1)).astype(jnp.float32),
        "partner_visible": p_vis,
        "partner_pose": jnp.where(p_vis, p_pose, 0.0),
        "partner_action": jnp.where(p_vis, kind + 1, 0).astype(jnp.int8),
        "partner_target": jnp.where(p_vis, target_cls, 0).astype(jnp.int8),
        "partner_status": jnp.where(p_vis, a.status[partner], 0).astype(jnp.int8),
        "partner_hands": jnp.where(p_vis, p_hands, 0).astype(jnp.int8),
        "child_visible": seen[S.CHILD],
        "child_rel": jnp.where(seen[S.CHILD], _relative(state, agent, a.pos[S.CHILD]), 0.0),
        "goal_visible": goal_vis,
        "goal_rel": jnp.where(goal_vis, _relative(state, agent, state.scene.goal_pos), 0.0),
        "goal_height": jnp.where(goal_vis, state.scene.goal_height, 0.0),
        "goal": (state.goal_count if sees_goal else jnp.zeros_like(state.goal_count)).astype(jnp.int8),
    }
    if mask:
        out["action_mask"] = W.valid_actions(state, agent)
    if rays:
        from jaxsoc.envs.chaic import raycast

        depth, semantic = raycast.cast(state, agent, num_rays=rays, max_dist=view_dist)
        out["depth"], out["semantic"] = depth, semantic
    return out


def observation_space(rays: int = 0) -> spaces.Dict:
    """Returns the space of ``observe``'s dict."""
    n, big = S.MAX_OBJECTS, 64.0
    objects = spaces.Dict(
        {
            "visible": spaces.Box(0, 1, (n,), jnp.bool_),
            "cls": spaces.Box(0, K.NUM_CLASSES - 1, (n,), jnp.int8),
            "rel_pos": spaces.Box(-big, big, (n, 2), jnp.float32),
            "height": spaces.Box(0.0, 5.0, (n,), jnp.float32),
            "where": spaces.Box(0, len(WHERE_NAMES) - 1, (n,), jnp.int8),
        }
    )
    entries = {
        "objects": objects,
        "pose": spaces.Box(-big, big, (4,), jnp.float32),
        "hands": spaces.Box(0, K.NUM_CLASSES - 1, (2,), jnp.int8),
        "hand_contents": spaces.Box(0, K.NUM_CLASSES - 1, (2, K.CONTAINER_SLOTS), jnp.int8),
        "status": spaces.Box(0, 2, (), jnp.int8),
        "time": spaces.Box(0.0, 1.0, (), jnp.float32),
        "partner_visible": spaces.Box(0, 1, (), jnp.bool_),
        "partner_pose": spaces.Box(-big, big, (4,), jnp.float32),
        "partner_action": spaces.Box(0, len(S.ACTION_NAMES), (), jnp.int8),
        "partner_target": spaces.Box(0, K.NUM_CLASSES - 1, (), jnp.int8),
        "partner_status": spaces.Box(0, 2, (), jnp.int8),
        "partner_hands": spaces.Box(0, K.NUM_CLASSES - 1, (2,), jnp.int8),
        "child_visible": spaces.Box(0, 1, (), jnp.bool_),
        "child_rel": spaces.Box(-big, big, (2,), jnp.float32),
        "goal_visible": spaces.Box(0, 1, (), jnp.bool_),
        "goal_rel": spaces.Box(-big, big, (2,), jnp.float32),
        "goal_height": spaces.Box(0.0, 5.0, (), jnp.float32),
        "goal": spaces.Box(0, 127, (K.NUM_CLASSES,), jnp.int8),
        "action_mask": spaces.Box(0, 1, (S.NUM_ACTIONS,), jnp.bool_),
    }
    if rays:
        entries["depth"] = spaces.Box(0.0, big, (rays,), jnp.float32)
        entries["semantic"] = spaces.Box(0, 127, (rays,), jnp.int8)
    return spaces.Dict(entries)
