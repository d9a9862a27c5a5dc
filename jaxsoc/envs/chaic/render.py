"""Top-down pictures of CHAIC worlds in JAX, and episode GIFs.

``render(state, size)`` draws one ``state.State`` as a ``uint8[size, 2 * size, 3]`` RGB picture of the fixed
world window ``x`` in ``WORLD_X`` = [-16, 16] (left to right) by ``z`` in ``WORLD_Z`` = [-8, 8] (bottom to top:
``z`` points up the picture), ``size / 16`` pixels per metre. ``world_to_pixel`` maps world points to pixels.

Painter's order:

1. the ground (``GROUND_RGB``, or ``OUTDOOR_RGB`` in an outdoor scene) and every valid room's floor, tinted
   by its index (``ROOM_RGB``);
2. furniture footprints, filled by their top height: from ``LOW_RGB`` (floor level) to ``MID_RGB`` (at
   ``HIGH_TOP``), and ``HIGH_RGB`` (slate blue) above ``HIGH_TOP`` = 1.5 m, out of a short agent's reach;
   each with an edge of its colour times ``EDGE_SHADE``;
3. the goal place: a translucent gold disc of radius ``goal_extent / 2`` with a gold rim (``GOAL_RGB``);
4. walls: dark lines (``WALL_RGB``) about 2 px thick (``WALL_HALF`` metres either side, at least one pixel).
   Door openings are the gaps between wall segments, so they show as breaks in the lines;
5. with ``fov=True``, each active agent's 90-degree field of view: a translucent wedge of its colour, cut at
   the first wall along each direction (``raycast.wall_depth``; ``FOV_RANGE`` at most);
6. objects: discs (radius ``max(size / 2, OBJECT_MIN_RADIUS)``, at least 2 px, at most ``OBJECT_MAX_RADIUS``)
   coloured by kind (``KIND_RGB``: item, container, obstacle, vase, furniture, bike) with a dark edge; an
   object of a target class of the goal (``goal_count[cls] > 0``) carries a magenta ring (``TARGET_RGB``); a
   broken vase is dark (``BROKEN_RGB``) with four dark red shards (``SHARD_RGB``) sticking out diagonally. A
   held object is drawn beside its holder (hand 0 to its right, hand 1 to its left); a delivered one on the
   goal place (``raycast.onto_goal`` of its position, its disc inside the goal's where it fits); one in a
   container on its container, the container's contents spread around its centre and drawn over it;
7. agents: discs of ``AGENT_RADIUS`` (at least 3 px) with a nose (a triangle) pointing along the heading and a
   dark rim; main red, helper blue, child green (``AGENT_RGB``); inactive agents are not drawn.

Drawing is branch-free: per-pixel world coordinates, per-shape tests, and fixed-size ``lax.scan`` loops over
furniture, walls and objects that paint into the frame in order, so memory stays ``O(H * W)``. ``render`` is
pure (jit it with ``size`` and ``fov`` static; vmap it over states); ``episode_frames`` draws a stacked
trajectory, ``save_episode_gif`` writes it with optional captions.
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.core.render import caption, check_frames, save_gif
from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.envs.chaic import raycast as RC
from jaxsoc.envs.chaic.state import MAX_OBJECTS, MAX_ROOMS, NUM_AGENTS, State

WORLD_X = (-16.0, 16.0)  # metres, left to right
WORLD_Z = (-8.0, 8.0)  # metres, bottom to top
WALL_HALF = 0.06  # metres either side of a wall's line (at least one pixel)
FURNITURE_EDGE = 0.05  # metres (at least 0.75 px)
HIGH_TOP = 1.5  # metres: furniture tops above this are drawn in HIGH_RGB
GOAL_RIM = 0.08  # metres (at least 1.5 px)
GOAL_ALPHA = 0.35  # the goal disc's fill opacity
OBJECT_MIN_RADIUS = 0.12  # metres (at least 2 px)
OBJECT_MAX_RADIUS = 0.6  # metres: big things (the bike, a sofa) stay discs this wide
OBJECT_EDGE = 0.03  # metres (at least 0.6 px)
TARGET_RING = 0.08  # metres outside a target object's disc (at least 1.2 px)
AGENT_RADIUS = 0.3  # metres (at least 3 px)
NOSE = 1.9  # the nose's tip is this many radii ahead of the agent's centre
NOSE_WIDTH = 0.9  # the nose's half width at the centre, in radii
FOV_RANGE = 12.0  # metres: the farthest a field of view is drawn
FOV_RAYS = 91  # rays that find the walls bounding a field of view
FOV_DEG = 90.0
FOV_ALPHA = 0.18  # a field of view's opacity
CHUNK = 32  # states drawn at once by ``episode_frames`` (bounds the memory)

GROUND_RGB = (222, 222, 222)
OUTDOOR_RGB = (200, 220, 186)
#: ``MAX_ROOMS`` pale floor tints, one per room index
ROOM_RGB = (
    (250, 243, 224),
    (226, 238, 250),
    (232, 246, 226),
    (246, 230, 242),
    (244, 244, 214),
    (224, 244, 244),
    (240, 232, 222),
    (236, 236, 248),
)
WALL_RGB = (40, 40, 48)
LOW_RGB = (226, 202, 160)  # a furniture top at floor level
MID_RGB = (150, 104, 62)  # a furniture top at HIGH_TOP
HIGH_RGB = (78, 88, 138)  # a furniture top above HIGH_TOP
EDGE_SHADE = 0.6
GOAL_RGB = (222, 170, 20)
#: per object kind (``catalogue.KIND_NAMES``): empty, item, container, obstacle, vase, furniture, bike
KIND_RGB = (
    (0, 0, 0),
    (245, 130, 20),
    (150, 80, 200),
    (120, 120, 120),
    (0, 160, 160),
    (120, 60, 20),
    (30, 30, 30),
)
OBJECT_EDGE_RGB = (25, 25, 25)
TARGET_RGB = (255, 0, 200)
BROKEN_RGB = (70, 50, 50)
SHARD_RGB = (170, 0, 0)
SHARD = 1.8  # a broken vase's shards reach this many radii from its centre
#: main (constrained) agent, helper, child
AGENT_RGB = ((220, 38, 38), (37, 90, 230), (30, 160, 60))
AGENT_RIM_RGB = (20, 20, 20)
assert len(ROOM_RGB) == MAX_ROOMS and len(AGENT_RGB) == NUM_AGENTS and len(KIND_RGB) == len(K.KIND_NAMES)


# ---------------------------------------------------------------------------------------------------- frame


def check_size(size) -> int:
    """Returns ``size`` as an ``int``; raises ``ValueError`` unless it is a positive integer (not a bool)."""
    if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 1:
        raise ValueError(f"size must be a positive int (the frame height in pixels, e.g. 128 or 256), got {size!r}")
    return int(size)


def frame_shape(size: int = 256) -> tuple[int, int, int]:
    """Returns ``(height, width, 3)`` of ``render(state, size)``: ``(size, 2 * size, 3)``."""
    size = check_size(size)
    return size, 2 * size, 3


def metres_per_pixel(size: int = 256) -> float:
    """Returns the side of one pixel of ``render(state, size)`` in metres (``16 / size``)."""
    return (WORLD_Z[1] - WORLD_Z[0]) / check_size(size)


def world_to_pixel(points, size: int = 256) -> jax.Array:
    """Returns ``float32[..., 2]``: the (row, column) coordinates in ``render(state, size)`` of world points
    ``float[..., 2]`` (x, z metres); pixel ``(i, j)`` covers ``[i, i + 1) x [j, j + 1)`` (``floor`` gives the
    pixel a point falls in)."""
    px = metres_per_pixel(size)
    points = jnp.asarray(points, jnp.float32)
    return jnp.stack([(WORLD_Z[1] - points[..., 1]) / px, (points[..., 0] - WORLD_X[0]) / px], -1)


def _axes(size: int) -> tuple[jax.Array, jax.Array, float]:
    """Returns ``(x, z, px)``: the world x of every pixel column's centre ``float32[1, 2 * size]``, the world z
    of every pixel row's centre ``float32[size, 1]``, and one pixel in metres."""
    px = metres_per_pixel(size)
    x = WORLD_X[0] + (np.arange(2 * size, dtype=np.float32) + 0.5) * px
    z = WORLD_Z[1] - (np.arange(size, dtype=np.float32) + 0.5) * px
    return jnp.asarray(x[None, :]), jnp.asarray(z[:, None]), px


def _rgb(colour) -> jax.Array:
    return jnp.asarray(colour, jnp.float32)


def _paint(image: jax.Array, where: jax.Array, rgb) -> jax.Array:
    """Returns ``image`` (``float32[H, W, 3]``) with colour ``rgb`` (``[3]`` or ``[H, W, 3]``) where ``where``."""
    return jnp.where(where[..., None], rgb, image)


def _blend(image: jax.Array, where: jax.Array, rgb, alpha: float) -> jax.Array:
    """Returns ``image`` with ``rgb`` laid over it at opacity ``alpha`` where ``where``."""
    return jnp.where(where[..., None], (1 - alpha) * image + alpha * _rgb(rgb), image)


def _segment_dist2(x, z, seg) -> jax.Array:
    """Returns ``float32[H, W]``: the squared distance of every pixel centre to segment ``(x0, z0, x1, z1)``."""
    ax, az, bx, bz = seg[0], seg[1], seg[2], seg[3]
    dx, dz = bx - ax, bz - az
    t = jnp.clip(((x - ax) * dx + (z - az) * dz) / jnp.maximum(dx * dx + dz * dz, 1e-12), 0.0, 1.0)
    return (x - ax - t * dx) ** 2 + (z - az - t * dz) ** 2


# ---------------------------------------------------------------------------------------------------- layers


def _floor(state: State, x, z) -> jax.Array:
    """Returns ``float32[H, W, 3]``: the ground and the rooms' floors."""
    scene = state.scene
    ground = jnp.where(scene.outdoor, _rgb(OUTDOOR_RGB), _rgb(GROUND_RGB))
    image = jnp.broadcast_to(ground, (z.shape[0], x.shape[1], 3))
    for k in range(MAX_ROOMS):
        r = scene.rooms[k]
        inside = (x >= r[0]) & (x <= r[2]) & (z >= r[1]) & (z <= r[3]) & scene.room_valid[k]
        image = _paint(image, inside, _rgb(ROOM_RGB[k]))
    return image


def furniture_rgb(top: jax.Array) -> jax.Array:
    """Returns ``float32[..., 3]``: the fill colour of furniture with tops at ``top`` metres (``float32[...]``):
    ``LOW_RGB`` to ``MID_RGB`` up to ``HIGH_TOP``, ``HIGH_RGB`` above."""
    f = jnp.clip(top / HIGH_TOP, 0.0, 1.0)[..., None]
    shaded = (1 - f) * _rgb(LOW_RGB) + f * _rgb(MID_RGB)
    return jnp.where((top > HIGH_TOP)[..., None], _rgb(HIGH_RGB), shaded)


def _furniture(image, state: State, x, z, px) -> jax.Array:
    """Returns ``image`` with the furniture footprints painted in slot order."""
    scene = state.scene
    edge = max(FURNITURE_EDGE, 0.75 * px)

    def paint(image, item):
        f, valid = item
        hx, hz = f[2] / 2, f[3] / 2
        dx, dz = jnp.abs(x - f[0]), jnp.abs(z - f[1])
        inside = (dx <= hx) & (dz <= hz) & valid
        fill = furniture_rgb(f[4])
        inner = (dx <= hx - edge) & (dz <= hz - edge)
        colour = jnp.where(inner[..., None], fill, EDGE_SHADE * fill)
        return _paint(image, inside, colour), None

    image, _ = jax.lax.scan(paint, image, (scene.furniture, scene.furniture_cls > 0))
    return image


def _goal(image, state: State, x, z, px) -> jax.Array:
    """Returns ``image`` with the goal place: a translucent gold disc with a gold rim."""
    scene = state.scene
    radius = jnp.maximum(scene.goal_extent / 2, 2 * px)
    rim = max(GOAL_RIM, 1.5 * px)
    d = jnp.sqrt((x - scene.goal_pos[0]) ** 2 + (z - scene.goal_pos[1]) ** 2)
    image = _blend(image, d <= radius - rim, GOAL_RGB, GOAL_ALPHA)
    return _paint(image, (d > radius - rim) & (d <= radius), _rgb(GOAL_RGB))


def _walls(image, state: State, x, z, px) -> jax.Array:
    """Returns ``image`` with the valid walls drawn as dark lines."""
    scene = state.scene
    half = max(WALL_HALF, 1.0 * px)

    def nearest(best, item):
        seg, valid = item
        return jnp.where(valid, jnp.minimum(best, _segment_dist2(x, z, seg)), best), None

    init = jnp.full((z.shape[0], x.shape[1]), jnp.inf, jnp.float32)
    dist2, _ = jax.lax.scan(nearest, init, (scene.walls, scene.wall_valid))
    return _paint(image, dist2 <= half**2, _rgb(WALL_RGB))


def _fov(image, state: State, x, z, px) -> jax.Array:
    """Returns ``image`` with each active agent's field of view laid over it, cut at the walls."""
    agents = state.agents
    half = FOV_DEG / 2
    for a in range(NUM_AGENTS):
        pos, heading = agents.pos[a], agents.heading[a]
        depth = RC.wall_depth(state.scene, pos, RC.ray_directions(heading, FOV_RAYS, FOV_DEG), FOV_RANGE)
        rx, rz = x - pos[0], z - pos[1]
        dist = jnp.sqrt(rx**2 + rz**2)
        off = jnp.rad2deg(jnp.arctan2(rz, rx)) - heading.astype(jnp.float32) * K.TURN_STEP
        off = jnp.mod(off + 180.0, 360.0) - 180.0  # (-180, 180], positive to the left
        ray = (half - off) / FOV_DEG * (FOV_RAYS - 1)  # ray 0 is the leftmost
        lo = jnp.clip(jnp.floor(ray).astype(jnp.int32), 0, FOV_RAYS - 1)
        hi = jnp.clip(lo + 1, 0, FOV_RAYS - 1)
        reach = jnp.minimum(depth[lo], depth[hi])  # the nearer of the two rays around a pixel
        inside = (jnp.abs(off) <= half) & (dist <= reach) & agents.active[a]
        image = _blend(image, inside, AGENT_RGB[a], FOV_ALPHA)
    return image


def object_draw_radius(state: State, px: float) -> jax.Array:
    """Returns ``float32[MAX_OBJECTS]``: each object's drawn disc radius in metres (``px`` metres per pixel)."""
    lo = max(OBJECT_MIN_RADIUS, 2.0 * px)
    return jnp.clip(state.objects.size / 2, lo, max(OBJECT_MAX_RADIUS, lo))


def agent_draw_radius(px: float) -> float:
    """Returns an agent's drawn disc radius in metres (``px`` metres per pixel)."""
    return max(AGENT_RADIUS, 3.0 * px)


def object_draw_positions(state: State, px: float) -> jax.Array:
    """Returns ``float32[MAX_OBJECTS, 2]``: where each object is drawn (``px`` metres per pixel): a held one
    beside its holder (hand 0 to the right, hand 1 to the left; at its holder when no hand lists it), a
    delivered one on the goal place (its whole disc within the goal's when it fits), one in a container on its
    container's drawn place, the contents of a container spread around its centre (by their rank among its
    contents)."""
    objects, agents = state.objects, state.agents
    radius = object_draw_radius(state, px)
    holder = objects.holder.astype(jnp.int32)
    pos = jnp.where((holder >= 0)[:, None], agents.pos[jnp.clip(holder, 0, NUM_AGENTS - 1)], objects.pos)
    # beside the holder: the hand's side, perpendicular to the heading
    angle = jnp.deg2rad(agents.heading.astype(jnp.float32) * K.TURN_STEP)
    right = jnp.stack([jnp.sin(angle), -jnp.cos(angle)], -1)  # [3, 2]
    hands = agents.hands.astype(jnp.int32)  # [3, 2]
    held = jnp.clip(hands, 0, MAX_OBJECTS - 1)
    side = jnp.array([1.0, -1.0], jnp.float32)[None, :, None]  # right hand, left hand
    gap = (agent_draw_radius(px) + radius[held])[..., None]  # [3, 2, 1]
    beside = agents.pos[:, None, :] + side * right[:, None, :] * gap  # [3, 2, 2]
    slot = jnp.where(hands >= 0, hands, MAX_OBJECTS)
    pos = pos.at[slot.reshape(-1)].set(beside.reshape(-1, 2), mode="drop")
    pos = jnp.where(objects.delivered[:, None], RC.onto_goal(state.scene, pos, radius[:, None]), pos)
    # contents: on their container, spread around its centre
    container = objects.container.astype(jnp.int32)
    inside = container >= 0
    index = jnp.arange(MAX_OBJECTS)
    same = (container[:, None] == container[None, :]) & (index[None, :] < index[:, None]) & inside[None, :]
    rank = same.sum(-1).astype(jnp.float32)
    parent = jnp.clip(container, 0, MAX_OBJECTS - 1)
    turn = 2 * jnp.pi * rank / K.CONTAINER_SLOTS + jnp.pi / 2
    spread = 0.45 * radius[parent][:, None] * jnp.stack([jnp.cos(turn), jnp.sin(turn)], -1)
    return jnp.where(inside[:, None], pos[parent] + spread, pos)


def _objects(image, state: State, x, z, px) -> jax.Array:
    """Returns ``image`` with the objects drawn (contents after the others, so over their containers)."""
    objects = state.objects
    pos = object_draw_positions(state, px)
    radius = object_draw_radius(state, px)
    cls = objects.cls.astype(jnp.int32)
    kind = jnp.asarray(K.CLASS_KIND, jnp.int32)[cls]
    target = jnp.asarray(state.goal_count)[cls] > 0
    broken = objects.broken & (kind == K.VASE)
    fill = jnp.where(broken[:, None], _rgb(BROKEN_RGB), _rgb(KIND_RGB)[kind])
    order = jnp.argsort(jnp.where(objects.container >= 0, MAX_OBJECTS, 0) + jnp.arange(MAX_OBJECTS), stable=True)
    edge, ring, bar = max(OBJECT_EDGE, 0.6 * px), max(TARGET_RING, 1.2 * px), max(0.03, 0.6 * px)

    def paint(image, i):
        dx, dz = x - pos[i, 0], z - pos[i, 1]
        d2 = dx**2 + dz**2
        r = radius[i]
        valid = cls[i] > 0
        image = _paint(image, valid & target[i] & (d2 <= (r + ring) ** 2), _rgb(TARGET_RGB))
        colour = jnp.where((d2 <= (r - edge) ** 2)[..., None], fill[i], _rgb(OBJECT_EDGE_RGB))
        image = _paint(image, valid & (d2 <= r**2), colour)
        shards = broken[i] & (jnp.abs(jnp.abs(dx) - jnp.abs(dz)) <= bar) & (d2 > r**2) & (d2 <= (SHARD * r) ** 2)
        return _paint(image, valid & shards, _rgb(SHARD_RGB)), None

    image, _ = jax.lax.scan(paint, image, order)
    return image


def _agents(image, state: State, x, z, px) -> jax.Array:
    """Returns ``image`` with the active agents drawn: a disc with a nose along the heading and a dark rim."""
    agents = state.agents
    radius = agent_draw_radius(px)
    rim = 0.8 * px
    for a in range(NUM_AGENTS):
        pos = agents.pos[a]
        angle = jnp.deg2rad(agents.heading[a].astype(jnp.float32) * K.TURN_STEP)
        rx, rz = x - pos[0], z - pos[1]
        u = rx * jnp.cos(angle) + rz * jnp.sin(angle)  # along the heading
        v = -rx * jnp.sin(angle) + rz * jnp.cos(angle)  # to the left
        tip = NOSE * radius
        nose = (u >= 0) & (u <= tip) & (jnp.abs(v) <= NOSE_WIDTH * radius * (1 - u / tip))
        d2 = rx**2 + rz**2
        body = d2 <= radius**2
        outline = (d2 <= (radius + rim) ** 2) | (
            (u >= 0) & (u <= tip + rim) & (jnp.abs(v) <= NOSE_WIDTH * radius * (1 - u / tip) + rim)
        )
        active = agents.active[a]
        image = _paint(image, active & outline, _rgb(AGENT_RIM_RGB))
        image = _paint(image, active & (body | nose), _rgb(AGENT_RGB[a]))
    return image


# ---------------------------------------------------------------------------------------------------- render


def render(state: State, size: int = 256, fov: bool = True) -> jax.Array:
    """Draws one CHAIC world from above (pure and jittable with ``size`` and ``fov`` static; vmap it over
    states).

    Args:
        state: one world (no batch axes).
        size: the frame height in pixels; the frame is ``2 * size`` wide (``16 / size`` metres per pixel).
        fov: whether to lay each active agent's field of view over the floor.

    Returns:
        ``uint8[size, 2 * size, 3]`` RGB (module docstring: what is drawn and how).
    """
    size = check_size(size)
    x, z, px = _axes(size)
    image = _floor(state, x, z)
    image = _furniture(image, state, x, z, px)
    image = _goal(image, state, x, z, px)
    image = _walls(image, state, x, z, px)
    if fov:
        image = _fov(image, state, x, z, px)
    image = _objects(image, state, x, z, px)
    image = _agents(image, state, x, z, px)
    return jnp.round(jnp.clip(image, 0.0, 255.0)).astype(jnp.uint8)


@functools.partial(jax.jit, static_argnames=("size", "fov"))
def _frames(states: State, size: int, fov: bool) -> jax.Array:
    steps = states.frame.shape[0]
    return jax.lax.map(lambda s: render(s, size, fov), states, batch_size=min(CHUNK, steps))


def episode_frames(states: State, size: int = 256, fov: bool = True) -> jax.Array:
    """Draws a stacked trajectory (jitted once per ``size``/``fov`` and number of steps; ``CHUNK`` states at a
    time, so long episodes fit in memory).

    Args:
        states: a ``State`` with one leading time axis ``T`` (``frame`` ``int32[T]``).

    Returns:
        ``uint8[T, size, 2 * size, 3]``: ``render`` of each state.

    Raises:
        ValueError: for a bad ``size`` or states without exactly one leading axis.
    """
    size = check_size(size)
    if np.ndim(states.frame) != 1:
        raise ValueError(f"states must have one leading time axis (frame [T]), got frame shape {states.frame.shape}")
    return _frames(states, size, bool(fov))


def save_episode_gif(frames, path: str | Path, texts: Sequence[str] | None = None, fps: float = 8) -> Path:
    """Writes frames ``uint8[T, H, W, 3]`` (e.g. ``episode_frames``) as a looping GIF, with ``texts[t]`` in a
    white band under frame ``t`` when given (``core.render.caption``).

    Returns:
        The ``Path`` written.

    Raises:
        ValueError: for bad frames, a number of texts other than ``T``, or a bad ``fps``.
    """
    frames = check_frames(np.asarray(frames))
    if texts is not None:
        frames = caption(frames, list(texts))
    return save_gif(frames, path, fps)


def legend() -> dict[str, tuple[int, int, int]]:
    """Returns ``{name: (r, g, b)}``: the colours of the agents (``main``, ``helper``, ``child``), the object
    kinds (``item`` ... ``bike``), walls, the goal place, the target ring, a broken vase and furniture tops
    (``furniture_low``, ``furniture_mid``, ``furniture_high``)."""
    out = {name: tuple(rgb) for name, rgb in zip(("main", "helper", "child"), AGENT_RGB, strict=True)}
    out.update({name: tuple(rgb) for name, rgb in zip(K.KIND_NAMES[1:], KIND_RGB[1:], strict=True)})
    out.update(
        wall=WALL_RGB,
        goal=GOAL_RGB,
        target=TARGET_RGB,
        broken_vase=BROKEN_RGB,
        furniture_low=LOW_RGB,
        furniture_mid=MID_RGB,
        furniture_high=HIGH_RGB,
    )
    return out
