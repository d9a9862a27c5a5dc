"""Depth and semantic ray casting over an agent's field of view: a 1D stand-in for CHAIC's RGB-D camera.

``cast(state, agent)`` shoots ``num_rays`` rays over the agent's 90-degree field of view, from ``+fov/2``
(left, counter-clockwise of the heading) to ``-fov/2`` (right) both included, evenly spaced (with an odd
``num_rays`` the middle ray points straight along the heading). Each ray returns the distance to the first
thing it meets and what that thing is:

- **walls**: the valid segments of ``scene.walls`` (door openings are gaps between segments, so rays pass
  through doorways). A ray running exactly along a wall's line does not hit that wall;
- **furniture**: the footprints ``(x, z, size_x, size_z)`` of ``scene.furniture`` where ``furniture_cls > 0``,
  as axis-aligned boxes;
- **objects**: discs of radius ``max(size / 2, OBJECT_MIN_RADIUS)`` at where each object physically is
  (``object_positions``: held objects at their holder, contained ones at their container, delivered ones on
  the goal place), for ``cls > 0`` and not held by the casting agent;
- **agents**: the other active agents, discs of radius ``AGENT_RADIUS``.

A shape that contains the ray's origin (the agent standing inside a footprint or a disc) is not hit: rays only
meet surfaces they enter. Nothing within ``max_dist`` gives ``depth = max_dist`` and ``SEM_NOTHING``.

**Objects on furniture.** Objects are small and lie on furniture tops that the original's camera (at head
height, looking down) sees from above. So an object is seen *over* the first furniture box a ray meets when it
stands on that box (its centre within the footprint grown by ``ON_MARGIN``), even if its disc lies behind the
box's front face; it is also seen when its disc is hit no farther than ``SAME_DIST`` behind the box. Objects
on the floor behind a piece of furniture stay hidden by it. Walls and agents in front of an object always hide
it.

Semantic codes (``int8``, ``SEMANTIC_NAMES[code]`` names each):

=========================  ===========================================================================
``SEM_NOTHING`` 0          nothing within ``max_dist``
``SEM_WALL`` 1             a wall
``SEM_AGENT0 + a``         agent ``a``: 2 main (constrained), 3 helper, 4 child
``SEM_OBJECT0 + cls``      an object of class ``cls`` (``catalogue.CLASS_NAMES``): 9 to 54
``SEM_FURNITURE0 + k``     a piece of furniture of class ``k = furniture_cls`` (``scenes.FURNITURE_CLASSES``),
                           65 and up (clipped to 127)
=========================  ===========================================================================

Everything is jittable and works on one world; ``num_rays`` is static, ``agent``, ``fov_deg`` and ``max_dist``
may be traced. vmap over worlds (or ``cast_all`` over the agents).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.envs.chaic.state import MAX_OBJECTS, NUM_AGENTS, Scene, State

SEM_NOTHING = 0
SEM_WALL = 1
SEM_AGENT0 = 2  # + agent index
SEM_OBJECT0 = 8  # + object class
SEM_FURNITURE0 = 64  # + furniture class
NUM_SEMANTIC = 128  # codes are int8 in [0, NUM_SEMANTIC)
assert SEM_AGENT0 + NUM_AGENTS <= SEM_OBJECT0 and SEM_OBJECT0 + K.NUM_CLASSES <= SEM_FURNITURE0

_AGENT_NAMES = ("main", "helper", "child")
#: ``NUM_SEMANTIC`` names, one per code: ``"nothing"``, ``"wall"``, ``"agent:<main|helper|child>"``,
#: ``"object:<class name>"``, ``"furniture:<k>"``, ``""`` for unused codes
SEMANTIC_NAMES = tuple(
    "nothing"
    if code == SEM_NOTHING
    else "wall"
    if code == SEM_WALL
    else f"agent:{_AGENT_NAMES[code - SEM_AGENT0]}"
    if SEM_AGENT0 <= code < SEM_AGENT0 + NUM_AGENTS
    else f"object:{K.CLASS_NAMES[code - SEM_OBJECT0]}"
    if SEM_OBJECT0 < code < SEM_OBJECT0 + K.NUM_CLASSES
    else f"furniture:{code - SEM_FURNITURE0}"
    if code > SEM_FURNITURE0
    else ""
    for code in range(NUM_SEMANTIC)
)

AGENT_RADIUS = 0.3  # metres: an agent's disc
OBJECT_MIN_RADIUS = 0.1  # metres: the smallest object disc
ON_MARGIN = 0.05  # metres: an object whose centre is this close to a footprint stands on it
SAME_DIST = 0.05  # metres: an object hit this close behind a furniture box is seen over it
_EPS = 1e-6


# ---------------------------------------------------------------------------------------------------- where


def onto_goal(scene: Scene, points: jax.Array, inset: float | jax.Array = 0.0) -> jax.Array:
    """Returns ``float32[..., 2]``: ``points`` moved onto the goal place (the disc of radius ``goal_extent / 2``
    around ``goal_pos``, less ``inset`` (broadcast against ``points[..., :1]``), at least 0) along the line to
    its centre; points already on it are unchanged."""
    d = points - scene.goal_pos
    n = jnp.linalg.norm(d, axis=-1, keepdims=True)
    radius = jnp.maximum(scene.goal_extent / 2 - inset, 0.0)
    return scene.goal_pos + d * jnp.where(n > radius, radius / jnp.maximum(n, _EPS), 1.0)


def object_positions(state: State) -> jax.Array:
    """Returns ``float32[MAX_OBJECTS, 2]``: where each object physically is: at its holder when held, on the goal
    place when delivered (``onto_goal`` of its position), at its container's (so resolved) place when in one."""
    objects = state.objects
    holder = objects.holder.astype(jnp.int32)
    pos = jnp.where((holder >= 0)[:, None], state.agents.pos[jnp.clip(holder, 0, NUM_AGENTS - 1)], objects.pos)
    pos = jnp.where(objects.delivered[:, None], onto_goal(state.scene, pos), pos)
    container = objects.container.astype(jnp.int32)
    return jnp.where((container >= 0)[:, None], pos[jnp.clip(container, 0, MAX_OBJECTS - 1)], pos)


def object_radius(state: State) -> jax.Array:
    """Returns ``float32[MAX_OBJECTS]``: each object's disc radius for ray casting, ``max(size / 2, 0.1)``."""
    return jnp.maximum(state.objects.size / 2, OBJECT_MIN_RADIUS)


# ---------------------------------------------------------------------------------------------------- rays


def ray_angles(num_rays: int, fov_deg: float | jax.Array = 90.0) -> jax.Array:
    """Returns ``float32[num_rays]``: each ray's angle relative to the heading in degrees, from ``+fov/2`` (left)
    to ``-fov/2`` (right), evenly spaced, both ends included (``[0.0]`` for one ray)."""
    if num_rays < 1:
        raise ValueError(f"num_rays must be >= 1, got {num_rays}")
    if num_rays == 1:
        return jnp.zeros(1, jnp.float32)
    frac = jnp.arange(num_rays, dtype=jnp.float32) / (num_rays - 1)
    return jnp.asarray(fov_deg, jnp.float32) * (0.5 - frac)


def ray_directions(heading: jax.Array, num_rays: int, fov_deg: float | jax.Array = 90.0) -> jax.Array:
    """Returns ``float32[num_rays, 2]``: the unit directions of the rays of an agent with ``heading`` (multiples
    of 15 degrees), left to right."""
    angle = jnp.deg2rad(jnp.asarray(heading, jnp.float32) * K.TURN_STEP + ray_angles(num_rays, fov_deg))
    return jnp.stack([jnp.cos(angle), jnp.sin(angle)], -1)


def _cross(a: jax.Array, b: jax.Array) -> jax.Array:
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]


def segment_hits(origin: jax.Array, dirs: jax.Array, segments: jax.Array, valid: jax.Array) -> jax.Array:
    """Returns ``float32[R, S]``: the distance along each ray (``origin`` ``float32[2]``, unit ``dirs``
    ``float32[R, 2]``) to each segment (``float32[S, 4]`` ``(x0, z0, x1, z1)``, where ``valid`` ``bool[S]``),
    ``inf`` where it misses (parallel segments miss)."""
    a, s = segments[:, :2], segments[:, 2:] - segments[:, :2]  # [S, 2]
    ao = a - origin
    denom = _cross(dirs[:, None, :], s[None])  # [R, S]
    safe = jnp.where(jnp.abs(denom) < _EPS, 1.0, denom)
    t = _cross(ao, s)[None] / safe
    u = _cross(ao[None], dirs[:, None, :]) / safe
    hit = valid[None] & (jnp.abs(denom) >= _EPS) & (t >= 0) & (u >= -_EPS) & (u <= 1 + _EPS)
    return jnp.where(hit, t, jnp.inf)


def box_hits(origin: jax.Array, dirs: jax.Array, lo: jax.Array, hi: jax.Array, valid: jax.Array) -> jax.Array:
    """Returns ``float32[R, B]``: the distance along each ray to each axis-aligned box ``[lo, hi]``
    (``float32[B, 2]``, where ``valid`` ``bool[B]``), ``inf`` where it misses or starts inside the box."""
    d = jnp.where(jnp.abs(dirs) < 1e-9, jnp.where(dirs < 0, -1e-9, 1e-9), dirs)
    inv = (1.0 / d)[:, None, :]  # [R, 1, 2]
    t1, t2 = (lo - origin)[None] * inv, (hi - origin)[None] * inv  # [R, B, 2]
    near = jnp.minimum(t1, t2).max(-1)
    far = jnp.maximum(t1, t2).min(-1)
    hit = valid[None] & (near <= far) & (near >= 0)
    return jnp.where(hit, near, jnp.inf)


def disc_hits(origin: jax.Array, dirs: jax.Array, centre: jax.Array, radius: jax.Array, valid: jax.Array):
    """Returns ``float32[R, D]``: the distance along each ray to each disc (``centre`` ``float32[D, 2]``,
    ``radius`` ``float32[D]``, where ``valid`` ``bool[D]``), ``inf`` where it misses or starts inside it."""
    oc = centre - origin  # [D, 2]
    b = dirs @ oc.T  # [R, D]
    c = (oc * oc).sum(-1) - radius**2  # [D]
    disc = b**2 - c[None]
    t = b - jnp.sqrt(jnp.maximum(disc, 0.0))
    hit = valid[None] & (disc >= 0) & (c[None] > 0) & (t >= 0)
    return jnp.where(hit, t, jnp.inf)


def wall_depth(scene: Scene, origin: jax.Array, dirs: jax.Array, max_dist: float | jax.Array = 12.0) -> jax.Array:
    """Returns ``float32[R]``: the distance along each ray (``dirs`` ``float32[R, 2]``) from ``origin`` to the
    first wall, at most ``max_dist`` (walls only: what bounds a field of view drawn on the floor plan)."""
    t = segment_hits(origin, dirs, scene.walls, scene.wall_valid).min(-1)
    return jnp.minimum(t, max_dist)


# ---------------------------------------------------------------------------------------------------- cast


def cast(
    state: State,
    agent: int | jax.Array,
    num_rays: int = 64,
    fov_deg: float | jax.Array = 90.0,
    max_dist: float | jax.Array = 12.0,
) -> tuple[jax.Array, jax.Array]:
    """Casts ``num_rays`` rays from ``agent``'s position over its field of view, left to right.

    Args:
        state: one world.
        agent: the casting agent's index (0 main, 1 helper, 2 child); may be traced.
        num_rays: rays (static), spread from ``+fov_deg / 2`` to ``-fov_deg / 2`` relative to the heading
            (``ray_angles``).
        fov_deg: the field of view in degrees.
        max_dist: the farthest a ray sees, metres.

    Returns:
        ``(depth, semantic)``: ``float32[num_rays]`` the distance to the first hit (``max_dist`` for none) and
        ``int8[num_rays]`` what it is (module docstring: ``SEM_*`` codes, ``SEMANTIC_NAMES``).
    """
    scene, objects, agents = state.scene, state.objects, state.agents
    agent = jnp.asarray(agent, jnp.int32)
    origin = agents.pos[agent]
    dirs = ray_directions(agents.heading[agent], num_rays, fov_deg)

    t_wall = segment_hits(origin, dirs, scene.walls, scene.wall_valid).min(-1)  # [R]

    others = agents.active & (jnp.arange(NUM_AGENTS) != agent)
    t_agents = disc_hits(origin, dirs, agents.pos, jnp.full(NUM_AGENTS, AGENT_RADIUS), others)  # [R, 3]
    t_agent, which_agent = t_agents.min(-1), jnp.argmin(t_agents, -1)

    furniture = scene.furniture
    centre, half = furniture[:, :2], furniture[:, 2:4] / 2
    t_boxes = box_hits(origin, dirs, centre - half, centre + half, scene.furniture_cls > 0)  # [R, F]
    t_furn, which_furn = t_boxes.min(-1), jnp.argmin(t_boxes, -1)

    pos = object_positions(state)
    seen = (objects.cls > 0) & (objects.holder.astype(jnp.int32) != agent)
    t_objs = disc_hits(origin, dirs, pos, object_radius(state), seen)  # [R, N]
    on = (jnp.abs(pos[:, None] - centre[None]) <= half[None] + ON_MARGIN).all(-1)  # [N, F]
    over = (t_objs <= t_furn[:, None] + SAME_DIST) | on.T[which_furn]  # seen over the first box met
    t_objs = jnp.where(over, t_objs, jnp.inf)
    t_obj, which_obj = t_objs.min(-1), jnp.argmin(t_objs, -1)

    t_block = jnp.minimum(t_wall, t_agent)
    is_obj = t_obj < t_block
    is_furn = ~is_obj & (t_furn < t_block)
    is_agent = ~is_obj & ~is_furn & (t_agent < t_wall)
    depth = jnp.where(is_obj, t_obj, jnp.where(is_furn, t_furn, t_block))
    sem_furn = jnp.minimum(SEM_FURNITURE0 + scene.furniture_cls[which_furn].astype(jnp.int32), NUM_SEMANTIC - 1)
    semantic = jnp.where(
        is_obj,
        SEM_OBJECT0 + objects.cls[which_obj].astype(jnp.int32),
        jnp.where(is_furn, sem_furn, jnp.where(is_agent, SEM_AGENT0 + which_agent, SEM_WALL)),
    )
    far = ~(depth <= max_dist)  # inf included
    depth = jnp.where(far, max_dist, depth).astype(jnp.float32)
    semantic = jnp.where(far, SEM_NOTHING, semantic).astype(jnp.int8)
    return depth, semantic


def cast_all(
    state: State, num_rays: int = 64, fov_deg: float | jax.Array = 90.0, max_dist: float | jax.Array = 12.0
) -> tuple[jax.Array, jax.Array]:
    """Returns ``(depth, semantic)``: ``float32[NUM_AGENTS, num_rays]`` and ``int8[NUM_AGENTS, num_rays]``,
    ``cast`` for every agent (inactive ones included: mask them with ``agents.active``)."""
    return jax.vmap(lambda a: cast(state, a, num_rays, fov_deg, max_dist))(jnp.arange(NUM_AGENTS))


def image(
    state: State,
    agent: int | jax.Array,
    num_rays: int = 64,
    fov_deg: float | jax.Array = 90.0,
    max_dist: float | jax.Array = 12.0,
) -> dict[str, jax.Array]:
    """Returns an observation entry: ``{"depth": float32[num_rays], "semantic": int8[num_rays]}``, ``cast``'s
    result (depth in metres, ``max_dist`` for nothing; ``SEM_*`` codes), left to right."""
    depth, semantic = cast(state, agent, num_rays, fov_deg, max_dist)
    return {"depth": depth, "semantic": semantic}
