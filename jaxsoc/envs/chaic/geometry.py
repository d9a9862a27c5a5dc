"""Plane geometry on a ``state.Scene``: which room a point is in, whether a segment crosses a wall, line of
sight, headings. All functions are jittable and work on one world (vmap for batches)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.envs.chaic.state import Scene

_EPS = 1e-6


def heading_vector(heading: jax.Array) -> jax.Array:
    """Returns ``float32[..., 2]``: the unit vector of headings (multiples of 15 degrees, counter-clockwise)."""
    angle = jnp.deg2rad(jnp.asarray(heading, jnp.float32) * K.TURN_STEP)
    return jnp.stack([jnp.cos(angle), jnp.sin(angle)], -1)


def bearing(src: jax.Array, dst: jax.Array) -> jax.Array:
    """Returns ``float32[...]``: the angle (degrees, in [0, 360)) of ``dst - src``."""
    d = dst - src
    return jnp.mod(jnp.rad2deg(jnp.arctan2(d[..., 1], d[..., 0])), 360.0)


def angle_off(heading: jax.Array, src: jax.Array, dst: jax.Array) -> jax.Array:
    """Returns ``float32[...]``: the signed angle (degrees, in (-180, 180]) from heading to the bearing of
    ``dst`` seen from ``src``; positive means ``dst`` is to the left (counter-clockwise)."""
    diff = bearing(src, dst) - jnp.asarray(heading, jnp.float32) * K.TURN_STEP
    return jnp.mod(diff + 180.0, 360.0) - 180.0


def room_of(scene: Scene, point: jax.Array) -> jax.Array:
    """Returns ``int32[...]``: the room containing ``point`` (``float32[..., 2]``), -1 when none (on a wall
    line, in a doorway between two rooms it is the first room listed)."""
    p = point[..., None, :]
    r = scene.rooms
    inside = (p[..., 0] >= r[:, 0]) & (p[..., 0] <= r[:, 2]) & (p[..., 1] >= r[:, 1]) & (p[..., 1] <= r[:, 3])
    inside = inside & scene.room_valid
    return jnp.where(inside.any(-1), jnp.argmax(inside, -1), -1).astype(jnp.int32)


def _cross(a: jax.Array, b: jax.Array) -> jax.Array:
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]


def _dot(a: jax.Array, b: jax.Array) -> jax.Array:
    """``(a * b).sum(-1)`` for 2-vectors, written out: a reduction over a trailing axis of 2 is several times
    slower on XLA:CPU, and these products are most of a step's work."""
    return a[..., 0] * b[..., 0] + a[..., 1] * b[..., 1]


def segments_cross(p0: jax.Array, p1: jax.Array, q0: jax.Array, q1: jax.Array) -> jax.Array:
    """Returns ``bool[...]``: whether segments ``p0-p1`` and ``q0-q1`` (``float32[..., 2]``, broadcast) intersect,
    touching included. Written on the coordinates (each split off once: a small program)."""
    p0x, p0y, p1x, p1y = p0[..., 0], p0[..., 1], p1[..., 0], p1[..., 1]
    q0x, q0y, q1x, q1y = q0[..., 0], q0[..., 1], q1[..., 0], q1[..., 1]
    rx, ry, sx, sy = p1x - p0x, p1y - p0y, q1x - q0x, q1y - q0y
    denom = rx * sy - ry * sx
    qpx, qpy = q0x - p0x, q0y - p0y
    parallel = jnp.abs(denom) < _EPS
    safe = jnp.where(parallel, 1.0, denom)
    t = (qpx * sy - qpy * sx) / safe
    qp_r = qpx * ry - qpy * rx
    u = qp_r / safe
    proper = (jnp.abs(denom) >= _EPS) & (t >= -_EPS) & (t <= 1 + _EPS) & (u >= -_EPS) & (u <= 1 + _EPS)
    # collinear overlaps (a move along a wall line): project both onto r
    collinear = parallel & (jnp.abs(qp_r) < _EPS)
    rr = jnp.maximum(rx * rx + ry * ry, _EPS)
    t0 = (qpx * rx + qpy * ry) / rr
    t1 = ((q1x - p0x) * rx + (q1y - p0y) * ry) / rr
    overlap = (jnp.maximum(t0, t1) >= -_EPS) & (jnp.minimum(t0, t1) <= 1 + _EPS)
    return proper | (collinear & overlap)


def crosses_wall(scene: Scene, src: jax.Array, dst: jax.Array) -> jax.Array:
    """Returns ``bool[...]``: whether the straight segment ``src-dst`` (``float32[..., 2]``) crosses any wall
    (door openings are gaps, so a path through a doorway does not)."""
    w = scene.walls
    hit = segments_cross(src[..., None, :], dst[..., None, :], w[:, :2], w[:, 2:])
    return (hit & scene.wall_valid).any(-1)


def clearance(scene: Scene, point: jax.Array) -> jax.Array:
    """Returns ``float32[...]``: the distance from ``point`` to the nearest wall."""
    w = scene.walls
    a, b = w[:, :2], w[:, 2:]
    p = point[..., None, :]
    ab = b - a
    t = jnp.clip(_dot(p - a, ab) / jnp.maximum(_dot(ab, ab), _EPS), 0.0, 1.0)
    d = jnp.linalg.norm(p - (a + t[..., None] * ab), axis=-1)
    return jnp.where(scene.wall_valid, d, jnp.inf).min(-1)
