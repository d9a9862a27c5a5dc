"""Shortest-path planning on BIB's grid: the efficient actor's moves and the observers' move likelihoods.

A goal is a ``distance_field`` (fewest moves to it from every cell, ``world.INF`` if unreachable). The actor
steps downhill; a noisy-rational observer scores the 8 moves from a cell by the cost they leave,
``q[d] = 1 + dist[neighbour]``, with a softmax of temperature ``1 / beta``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsoc.envs.bib import world as W


def move_costs(dist: jax.Array, free: jax.Array) -> jax.Array:
    """Returns ``int32[8, H, W]``: the cost to go after each move from each cell (``INF`` for a move that is
    not allowed or leads nowhere). ``dist`` is ``int32[H, W]``, ``free`` ``bool[H, W]``."""
    allowed = W.move_allowed(free)
    out = []
    for d, (d_row, d_col) in enumerate(W.MOVES):
        out.append(jnp.where(allowed[d], W.shift(dist, int(d_row), int(d_col), W.INF) + 1, W.INF))
    return jnp.minimum(jnp.stack(out), W.INF)


def log_policy(dist: jax.Array, free: jax.Array, beta: float | jax.Array) -> jax.Array:
    """Returns ``float32[8, H, W]``: log-probabilities of the 8 moves of a noisy-rational agent heading for
    the goal of ``dist``, ``softmax(-beta * q)`` over the allowed moves that keep the goal reachable (a cell
    from which none does gets a uniform choice among its allowed moves, or all 8 if none is allowed)."""
    q = move_costs(dist, free).astype(jnp.float32)
    useful = q < W.INF
    allowed = W.move_allowed(free)
    support = jnp.where(jnp.any(useful, axis=0), useful, jnp.where(jnp.any(allowed, axis=0), allowed, True))
    logits = jnp.where(support, -beta * jnp.where(useful, q, 0.0), -jnp.inf)
    return jax.nn.log_softmax(logits, axis=0)


def next_cell(costs: jax.Array, dist: jax.Array, cell: jax.Array, target: jax.Array) -> jax.Array:
    """Returns the efficient agent's next cell ``int32[2]`` from ``cell``: a neighbour one move closer to the
    goal (``costs`` ``int32[8, H, W]`` from ``move_costs`` and ``dist`` ``int32[H, W]`` of that goal), ties
    broken towards the straight line to ``target`` (then clockwise from north); the same cell when it is at
    the goal or the goal is unreachable."""
    q = costs[:, cell[0], cell[1]]
    here = W.at(dist, cell)
    after = cell[None, :] + jnp.asarray(W.MOVES)
    straight = jnp.sum((after - target[None, :]).astype(jnp.float32) ** 2, axis=-1)
    score = jnp.where(q == here, straight, jnp.inf)
    move = jnp.argmin(score)
    stay = (here == 0) | (here >= W.INF) | ~jnp.isfinite(score[move])
    return jnp.where(stay, cell, after[move]).astype(jnp.int32)


def follow(
    fields: jax.Array, targets: jax.Array, free: jax.Array, start: jax.Array, max_moves: int
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Walks efficiently through waypoints: to ``targets[0]`` along ``fields[0]``, then to ``targets[1]``
    along ``fields[1]``, and so on (``fields`` ``int32[K, H, W]`` are the waypoints' distance fields, each on
    its own ``free[k]`` grid, ``bool[K, H, W]``; ``targets`` ``int32[K, 2]``).

    Returns ``(path, moves, arrivals)``: ``int8[max_moves + 1, 2]`` cells (the last one repeated after the
    final waypoint), ``int32`` moves made, and ``int32[K]`` the path index at which each waypoint was reached
    (``-1`` if not within ``max_moves``).
    """
    num = targets.shape[0]
    costs = jax.vmap(move_costs)(fields, free)

    def body(carry, t):
        cell, stage, arrivals = carry
        reached = jnp.all(cell == targets[stage])
        arrivals = jnp.where(reached & (arrivals[stage] < 0), arrivals.at[stage].set(t), arrivals)
        done = reached & (stage == num - 1)
        stage = jnp.where(reached & (stage < num - 1), stage + 1, stage)
        nxt = next_cell(costs[stage], fields[stage], cell, targets[stage])
        return (jnp.where(done, cell, nxt), stage, arrivals), cell

    init = (start.astype(jnp.int32), jnp.int32(0), jnp.full((num,), -1, jnp.int32))
    (_, _, arrivals), cells = jax.lax.scan(body, init, jnp.arange(max_moves + 1))
    path = cells.astype(jnp.int8)
    moves = jnp.sum(jnp.any(path[1:] != path[:-1], axis=-1)).astype(jnp.int32)
    return path, moves, arrivals


def chebyshev(a: jax.Array, b: jax.Array) -> jax.Array:
    """Returns the ``int32`` number of moves between two cells on an empty grid (8-connected)."""
    return jnp.max(jnp.abs(a.astype(jnp.int32) - b.astype(jnp.int32)), axis=-1)
