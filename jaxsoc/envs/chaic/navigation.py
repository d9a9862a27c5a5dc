"""Shortest paths and steering on a CHAIC scene, computed on the device (the original's A* on an occupancy map).

Rooms are convex rectangles joined by doors whose centres lie in the wall line, so the geodesic between two
points goes straight through door centres: ``door_distances`` runs Floyd-Warshall over the doors (an edge joins
two doors of the same room, with their Euclidean distance), ``path_length`` / ``next_waypoint`` add the legs from
the start to a door of its room and from a door of the destination's room to the destination, and ``steer`` /
``steer_clear`` turn that into a turn or a forward move.

Robustness (a move of 0.5 m fails when it would end closer than ``world.WALL_MARGIN`` to a wall, and headings are
multiples of 15 degrees):

- a door is approached along its normal: the waypoint is the point ``APPROACH`` in front of it until the straight
  segment to the point ``APPROACH`` past it keeps ``CLEAR`` from every wall, then that point past the door, so the
  agent walks through the middle of the doorway and ends up inside the next room;
- ``steer_clear`` only moves along headings whose 0.5 m move is possible (no wall crossed, the end point at least
  ``WALL_MARGIN + 0.05`` from walls and inside a room, away from the points to avoid: the wheelchair's known
  obstacles, a spot where a move just failed); among those it takes the heading closest to the waypoint's bearing,
  turning towards it on the shorter side. An agent in a doorway therefore never tries a move that fails against a
  jamb, and a failed move (an obstacle it had not seen) makes it step around the spot.

Everything is jittable, works on one world (vmap for batches) and does a fixed amount of work.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.envs.chaic import geometry as G
from jaxsoc.envs.chaic import state as S
from jaxsoc.envs.chaic import world as W

APPROACH = 0.7  # metres in front of / past a door centre, along its normal, where the walk through it starts / ends
CLEAR = 0.25  # a straight leg is walked directly only when it keeps this far from every wall
IN_DOORWAY = 0.45  # an agent this close to a door centre (or to its approach point) walks straight through
MOVE_MARGIN = W.WALL_MARGIN + 0.05  # a planned move ends at least this far from walls
STEER_TOLERANCE = K.TURN_STEP / 2  # degrees: turn when the waypoint's bearing is off by more than this
BLOCKED_DOOR_PASS = 0.75  # a straight line this close to a blocked door's centre goes through it
_INF = jnp.inf
_NORMALS = jnp.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]], jnp.float32)


def _point_segment_distance(p: jax.Array, a: jax.Array, b: jax.Array) -> jax.Array:
    """Returns ``float32[...]``: the distance from points ``p`` to segments ``a-b`` (all ``[..., 2]``, broadcast)."""
    ab = b - a
    t = jnp.clip(((p - a) * ab).sum(-1) / jnp.maximum((ab * ab).sum(-1), 1e-9), 0.0, 1.0)
    return jnp.linalg.norm(p - (a + t[..., None] * ab), axis=-1)


def segment_clearance(scene: S.Scene, p: jax.Array, q: jax.Array) -> jax.Array:
    """Returns ``float32[...]``: the smallest distance between the segment ``p-q`` (``float32[..., 2]`` each,
    broadcast) and any wall (0 when it crosses one)."""
    a, b = scene.walls[:, :2], scene.walls[:, 2:]
    p, q = p[..., None, :], q[..., None, :]
    d = jnp.minimum(
        jnp.minimum(_point_segment_distance(p, a, b), _point_segment_distance(q, a, b)),
        jnp.minimum(_point_segment_distance(a, p, q), _point_segment_distance(b, p, q)),
    )
    hit = G.segments_cross(p, q, a, b)
    d = jnp.where(hit, 0.0, d)
    return jnp.where(scene.wall_valid, d, _INF).min(-1)


def door_distances(scene: S.Scene, blocked: jax.Array | None = None) -> jax.Array:
    """Returns ``float32[MAX_DOORS, MAX_DOORS]``: the shortest walking distance between door centres through the
    doors graph (two doors are joined when they open on a common room; an edge is their Euclidean distance).
    Invalid doors and ``blocked`` ones (``bool[MAX_DOORS]``, e.g. an obstacle the wheelchair cannot pass) have no
    edges and an infinite diagonal; unreachable pairs are ``inf``. Floyd-Warshall with a fixed number of loops."""
    if blocked is None:
        blocked = jnp.zeros(S.MAX_DOORS, bool)
    dr = scene.door_rooms.astype(jnp.int32)
    ok = scene.door_valid & ~blocked
    share = jnp.zeros((S.MAX_DOORS, S.MAX_DOORS), bool)
    for a in range(2):
        for b in range(2):
            share = share | ((dr[:, None, a] == dr[None, :, b]) & (dr[:, None, a] >= 0))
    pts = scene.doors
    euclid = jnp.linalg.norm(pts[:, None] - pts[None], axis=-1)
    edge = share & ok[:, None] & ok[None, :]
    dist = jnp.where(edge, euclid, _INF)
    eye = jnp.eye(S.MAX_DOORS, dtype=bool)
    dist = jnp.where(eye, jnp.where(ok, 0.0, _INF), dist)

    def relax(k, d):
        return jnp.minimum(d, d[:, k, None] + d[None, k, :])

    return jax.lax.fori_loop(0, S.MAX_DOORS, relax, dist)


def _door_geometry(scene: S.Scene, door: jax.Array, room: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Returns ``(normal float32[2], depth_here float32, depth_there float32)`` of ``door`` seen from ``room``: the
    unit normal pointing into ``room`` and both rooms' depths along it (to keep the approach points inside)."""
    c = scene.doors[door]
    dr = scene.door_rooms[door].astype(jnp.int32)
    other = jnp.maximum(jnp.where(dr[0] == room, dr[1], dr[0]), 0)
    r = scene.rooms[jnp.maximum(room, 0)]
    edge = jnp.abs(jnp.stack([c[0] - r[0], r[2] - c[0], c[1] - r[1], r[3] - c[1]]))
    k = jnp.argmin(edge)
    normal = _NORMALS[k]
    o = scene.rooms[other]
    depth_here = jnp.where(k < 2, r[2] - r[0], r[3] - r[1])
    depth_there = jnp.where(k < 2, o[2] - o[0], o[3] - o[1])
    return normal, depth_here, depth_there


def _route_plan(scene: S.Scene, src: jax.Array, dst: jax.Array, dist_matrix: jax.Array) -> dict:
    """Returns the route from ``src`` to ``dst`` but for the wall clearance of the straight line: ``same`` bool
    (both in one room, or either in none: walked straight), ``blocked`` bool (the straight line passes a blocked
    door), ``straight`` and ``via`` float32 (the straight and the door route's lengths), ``first`` int32 (the
    route's first door) and ``src_room`` int32."""
    r_s = G.room_of(scene, src)
    r_d = G.room_of(scene, dst)
    straight = jnp.linalg.norm(dst - src)
    dr = scene.door_rooms.astype(jnp.int32)
    usable = scene.door_valid & jnp.isfinite(jnp.diagonal(dist_matrix))
    # a straight line through a doorway is fine, unless that door is blocked
    blocked = scene.door_valid & ~usable & (_point_segment_distance(scene.doors, src, dst) < BLOCKED_DOOR_PASS)
    adj_s = usable & ((dr[:, 0] == r_s) | (dr[:, 1] == r_s))
    adj_d = usable & ((dr[:, 0] == r_d) | (dr[:, 1] == r_d))
    to_door = jnp.linalg.norm(scene.doors - src, axis=-1)
    from_door = jnp.linalg.norm(scene.doors - dst, axis=-1)
    total = to_door[:, None] + dist_matrix + from_door[None, :]
    total = jnp.where(adj_s[:, None] & adj_d[None, :], total, _INF)
    flat = jnp.argmin(total)
    return {
        "same": (r_s == r_d) | (r_s < 0) | (r_d < 0),
        "blocked": blocked.any(),
        "straight": straight,
        "via": total.reshape(-1)[flat],
        "first": (flat // S.MAX_DOORS).astype(jnp.int32),
        "src_room": r_s,
    }


def _route_end(plan: dict, clearance: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Returns ``(direct bool, length float32)`` of a ``_route_plan`` given the straight line's wall
    ``clearance``."""
    direct = plan["same"] | ((clearance >= CLEAR) & ~plan["blocked"])
    return direct, jnp.where(direct, plan["straight"], plan["via"])


def _route(scene: S.Scene, src: jax.Array, dst: jax.Array, dist_matrix: jax.Array):
    """Returns ``(direct bool, length float32, first_door int32, src_room int32)``: whether ``dst`` is walked to in
    a straight line, the path length, and the first door of the shortest route otherwise."""
    plan = _route_plan(scene, src, dst, dist_matrix)
    direct, length = _route_end(plan, segment_clearance(scene, src, dst))
    return direct, length, plan["first"], plan["src_room"]


def path_length(scene: S.Scene, src: jax.Array, dst: jax.Array, dist_matrix: jax.Array) -> jax.Array:
    """Returns ``float32``: the walking distance from ``src`` to ``dst`` (``float32[2]``), ``inf`` when no door
    route joins their rooms (the length of ``next_waypoint``'s route). ``dist_matrix`` is ``door_distances``."""
    return _route(scene, src, dst, dist_matrix)[1]


def path_lengths(scene: S.Scene, src: jax.Array, dsts: jax.Array, dist_matrix: jax.Array) -> jax.Array:
    """Returns ``float32[M]``: walking distances from ``src`` to each of ``dsts`` (``float32[M, 2]``) for ranking
    many destinations cheaply: straight within a room (or when either point is in no room), else through the door
    centres (``inf`` when no route is open). No wall test: a straight line through a doorway is measured through
    the door's centre, a little longer than ``path_length``."""
    dr = scene.door_rooms.astype(jnp.int32)
    r_s = G.room_of(scene, src)
    r_d = G.room_of(scene, dsts)
    usable = scene.door_valid & jnp.isfinite(jnp.diagonal(dist_matrix))
    adj_s = usable & ((dr[:, 0] == r_s) | (dr[:, 1] == r_s))
    to_door = jnp.where(adj_s, jnp.linalg.norm(scene.doors - src, axis=-1), _INF)
    through = (to_door[:, None] + dist_matrix).min(0)  # [doors]: from src to each door
    adj_d = usable[None] & ((dr[None, :, 0] == r_d[:, None]) | (dr[None, :, 1] == r_d[:, None]))
    from_door = jnp.linalg.norm(scene.doors[None] - dsts[:, None], axis=-1)
    via = jnp.where(adj_d, through[None] + from_door, _INF).min(-1)
    direct = (r_d == r_s) | (r_s < 0) | (r_d < 0)
    return jnp.where(direct, jnp.linalg.norm(dsts - src, axis=-1), via)


def next_waypoint(
    scene: S.Scene, src: jax.Array, dst: jax.Array, dist_matrix: jax.Array
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Returns ``(waypoint float32[2], path_length float32, reachable bool)`` for a walk from ``src`` to ``dst``.

    ``dst`` itself when both are in the same room or the straight segment keeps ``CLEAR`` from the walls (and
    passes through no blocked door);
    otherwise the first door of the shortest route (``dist_matrix`` from ``door_distances``): the point
    ``APPROACH`` in front of it along its normal, or, once the straight segment to the point ``APPROACH`` past it
    is clear (or the agent stands in the doorway or at the approach point), that point past the door.
    ``reachable`` is False (and the waypoint ``dst``) when no route exists (e.g. every door to ``dst``'s room
    is blocked)."""
    plan = _route_plan(scene, src, dst, dist_matrix)
    door = plan["first"]
    normal, depth_here, depth_there = _door_geometry(scene, door, plan["src_room"])
    c = scene.doors[door]
    before = c + normal * jnp.minimum(APPROACH, depth_here / 2)
    after = c - normal * jnp.minimum(APPROACH, depth_there / 2)
    clearance = segment_clearance(scene, src, jnp.stack([dst, after]))  # both straight lines in one test
    direct, length = _route_end(plan, clearance[0])
    through = (
        (clearance[1] >= CLEAR) | (jnp.linalg.norm(src - c) < IN_DOORWAY) | (jnp.linalg.norm(src - before) < IN_DOORWAY)
    )
    reachable = jnp.isfinite(length)
    waypoint = jnp.where(direct | ~reachable, dst, jnp.where(through, after, before))
    return waypoint, length, reachable


def _turn_towards(heading: jax.Array, target_heading: jax.Array) -> jax.Array:
    """Returns the action (``MOVE``, ``TURN_LEFT``, ``TURN_RIGHT``) that brings ``heading`` to ``target_heading``
    on the shorter side, ``MOVE`` when they are equal."""
    diff = jnp.mod(target_heading - heading, K.NUM_HEADINGS)
    return jnp.where(diff == 0, S.MOVE, jnp.where(diff <= K.NUM_HEADINGS // 2, S.TURN_LEFT, S.TURN_RIGHT)).astype(
        jnp.int32
    )


def steer(heading: jax.Array, src: jax.Array, waypoint: jax.Array) -> jax.Array:
    """Returns ``int32``: ``TURN_LEFT`` / ``TURN_RIGHT`` (the shorter side) when the bearing of ``waypoint`` from
    ``src`` is off ``heading`` by more than 7.5 degrees, else ``MOVE``. Ignores walls (see ``steer_clear``)."""
    off = G.angle_off(heading, src, waypoint)
    return jnp.where(
        off > STEER_TOLERANCE, S.TURN_LEFT, jnp.where(off < -STEER_TOLERANCE, S.TURN_RIGHT, S.MOVE)
    ).astype(jnp.int32)


NEAR_WALLS = 10  # walls a move is checked against: the nearest ones (a 0.5 m move only meets walls within 0.75 m)


def near_walls(scene: S.Scene, point: jax.Array, k: int = NEAR_WALLS) -> S.Scene:
    """Returns ``scene`` with only its ``k`` walls nearest to ``point`` (for cheap local tests: moves from it)."""
    a, b = scene.walls[:, :2], scene.walls[:, 2:]
    d = jnp.where(scene.wall_valid, _point_segment_distance(point, a, b), _INF)
    _, idx = jax.lax.top_k(-d, k)
    return scene.replace(walls=scene.walls[idx], wall_valid=scene.wall_valid[idx])


def move_ok(scene: S.Scene, src: jax.Array, avoid: jax.Array, avoid_radius: jax.Array) -> jax.Array:
    """Returns ``bool[NUM_HEADINGS]``: the headings along which a 0.5 m move from ``src`` would succeed with a
    margin: no wall crossed, the end inside a room and ``MOVE_MARGIN`` from walls, and farther than
    ``avoid_radius`` (``float32[P]``, 0 for unused slots) from each point of ``avoid`` (``float32[P, 2]``). Checked
    against the ``NEAR_WALLS`` walls nearest to ``src``."""
    ends = src + K.MOVE_STEP * G.heading_vector(jnp.arange(K.NUM_HEADINGS))
    scene = near_walls(scene, src)
    wall = G.crosses_wall(scene, src, ends)
    clear = G.clearance(scene, ends) >= MOVE_MARGIN
    inside = G.room_of(scene, ends) >= 0
    near = jnp.linalg.norm(ends[:, None] - avoid[None], axis=-1) < avoid_radius[None]
    return ~wall & clear & inside & ~near.any(-1)


def steer_clear(
    scene: S.Scene,
    heading: jax.Array,
    src: jax.Array,
    waypoint: jax.Array,
    avoid: jax.Array | None = None,
    avoid_radius: jax.Array | None = None,
) -> jax.Array:
    """Returns ``int32``: ``steer`` restricted to possible moves (``move_ok``): among the headings whose move would
    succeed, the one closest to the bearing of ``waypoint``; ``MOVE`` when the agent faces it, else the turn
    towards it on the shorter side. When no move is possible it turns left (looking for a way out)."""
    if avoid is None:
        avoid = jnp.zeros((1, 2), jnp.float32)
        avoid_radius = jnp.zeros(1, jnp.float32)
    ok = move_ok(scene, src, avoid, avoid_radius)
    want = G.bearing(src, waypoint)
    angles = jnp.arange(K.NUM_HEADINGS, dtype=jnp.float32) * K.TURN_STEP
    off = jnp.abs(jnp.mod(angles - want + 180.0, 360.0) - 180.0)
    # the current heading wins ties, then the heading closer to the current one (fewer turns)
    step = jnp.mod(jnp.arange(K.NUM_HEADINGS) - heading, K.NUM_HEADINGS)
    turns = jnp.minimum(step, K.NUM_HEADINGS - step)
    cost = jnp.where(ok, off + 1e-3 * turns, _INF)
    best = jnp.argmin(cost)
    action = _turn_towards(heading, best)
    return jnp.where(ok.any(), action, S.TURN_LEFT).astype(jnp.int32)
