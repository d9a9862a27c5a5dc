"""Observers of BIB's test trials: per-step surprise from a model of the agent, for VOE scoring.

An observer reads an ``Episode`` (its 8 familiarisation trials and the test trial) and returns the surprise of
each cell-level step of the test trial, ``-log p(observed move | cell)``, with a mask of the real steps;
``jaxsoc.learners.bib.voe`` turns these into episode scores and pairwise accuracies.

``test_steps`` extracts the test trial's steps and is shared by all observers. ``nearest_object_surprise`` is
a heuristic observer that needs no training: it expects the agent to walk, noisy-rationally, to whichever
visible object is nearer. It ignores the familiarisation trials, keys and the agents' identities, which is how
the paper's baselines behave (they "tend to predict that an agent will go to the closer object"), so it
should be near chance on the preference and multi-agent evaluations and high on the efficiency ones.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.bib import layout as L
from jaxsoc.envs.bib import planner
from jaxsoc.envs.bib import world as W

# The 8 moves then STAY, as (d_row, d_col): row ``i`` is the move of index ``i``.
_DELTAS = np.concatenate([W.MOVES, [[0, 0]]]).astype(np.int32)


def test_steps(episode: W.Episode) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The cell-level steps of an episode's test trial (any leading axes ``...`` before the trial axis).

    Step ``k`` goes from ``path[TEST, k]`` to ``path[TEST, k + 1]``; it is real for ``k < moves[TEST]``.

    Returns ``(cells, moves, mask)``:
        cells: ``int32[..., M, 2]``, the cell ``(row, col)`` each step starts from.
        moves: ``int32[..., M]``, the move made (index into ``world.MOVES``; ``world.STAY`` if the agent stays
            put, which is also the value after the last move).
        mask: ``bool[..., M]``, the real steps.
    where ``M = episode.max_moves``. Pure array code (no ``vmap`` needed); jittable.
    """
    path = jnp.asarray(episode.path)[..., W.TEST, :, :].astype(jnp.int32)  # [..., M + 1, 2]
    cells, after = path[..., :-1, :], path[..., 1:, :]
    delta = after - cells
    same = jnp.all(jnp.asarray(_DELTAS) == delta[..., None, :], axis=-1)  # [..., M, 9]
    moves = jnp.where(jnp.any(same, axis=-1), jnp.argmax(same, axis=-1), W.STAY).astype(jnp.int32)
    steps = jnp.arange(cells.shape[-2])
    mask = steps < jnp.asarray(episode.moves)[..., W.TEST, None]
    return cells, moves, mask


def log_policy_with_stay(dist: jax.Array, free: jax.Array, beta: float | jax.Array) -> jax.Array:
    """Returns ``float32[9, H, W]``: ``planner.log_policy`` extended with staying put (index ``world.STAY``).

    Staying costs one step without getting closer, ``q = 1 + dist[cell]``, and enters the same softmax
    ``softmax(-beta * q)`` as the moves; from a cell where the goal is unreachable (or no move is useful) the
    stay is one more uniform option. At the goal itself staying is the likeliest choice.
    """
    log_moves = planner.log_policy(dist, free, beta)  # [8, H, W], normalised
    q = planner.move_costs(dist, free)
    best_q = jnp.min(q, axis=0)
    best_log = jnp.max(log_moves, axis=0)  # the log-probability of a move of cost best_q
    useful = (best_q < W.INF) & (dist < W.INF)
    penalty = jnp.where(useful, beta * (1 + dist - best_q).astype(jnp.float32), 0.0)
    log_stay = best_log - penalty
    return jax.nn.log_softmax(jnp.concatenate([log_moves, log_stay[None]], axis=0), axis=0)


def nearest_object_surprise(episode: W.Episode, beta: float = 3.0, lapse: float = 1e-3) -> tuple[jax.Array, jax.Array]:
    """Per-step surprise of the nearest-object observer on the test trial (any leading axes ``...``).

    The observer picks, from the agent's start cell ``path[TEST, 0]``, the visible object nearer by path
    length (``distance_field`` on the test trial's free cells, neither wall nor barrier; ties go to object 0)
    and expects a noisy-rational walk to it: ``log_policy_with_stay(dist, free, beta)``, mixed with a uniform
    ``lapse`` over the 9 choices so that an impossible step (e.g. through a barrier the key has removed, which
    this observer does not model) costs at most ``-log(lapse / 9)`` instead of infinity. If no visible object
    is reachable, it takes the visible object nearer by Chebyshev distance (walls ignored) and uses the
    Chebyshev distance to it as the cost to go, so it still expects a straight approach. With no visible
    object the policy is uniform. The goal is fixed at the start; the familiarisation trials, keys, locks and
    the agent's identity are ignored.

    Returns ``(surprise, mask)``: ``float32[..., M]`` ``-log p(observed step)`` (0 where masked) and
    ``bool[..., M]`` the real steps (``test_steps``), ``M = episode.max_moves``. Jittable; ``vmap``-ed over
    the leading axes.
    """
    test = W.TEST
    args = (
        jnp.asarray(episode.walls)[..., test, :, :],
        jnp.asarray(episode.barrier)[..., test, :, :],
        jnp.asarray(episode.objects)[..., test, :, :].astype(jnp.int32),
        jnp.asarray(episode.object_visible)[..., test, :],
    )
    cells, moves, mask = test_steps(episode)
    lead = mask.shape[:-1]
    flat = [x.reshape((-1, *x.shape[len(lead) :])) for x in (*args, cells, moves)]
    log_p = jax.vmap(lambda *a: _step_log_probs(*a, beta=beta, lapse=lapse))(*flat)
    log_p = log_p.reshape(mask.shape)
    return jnp.where(mask, -log_p, 0.0).astype(jnp.float32), mask


def _step_log_probs(walls, barrier, objects, visible, cells, moves, *, beta, lapse) -> jax.Array:
    """``float32[M]``: log-probabilities of one test trial's steps under the nearest-object policy."""
    free = ~walls & ~barrier
    dist = _nearest_object_field(free, objects, visible, cells[0])
    log_p = log_policy_with_stay(dist, free, beta)  # [9, H, W]
    log_p = jnp.logaddexp(jnp.log1p(-lapse) + log_p, jnp.log(lapse / log_p.shape[0]))
    return log_p[moves, cells[:, 0], cells[:, 1]]


def _nearest_object_field(free: jax.Array, objects: jax.Array, visible: jax.Array, start: jax.Array) -> jax.Array:
    """``int32[H, W]``: the cost to go to the nearer visible object from ``start`` (see
    ``nearest_object_surprise``: path length, else Chebyshev distance; ``INF`` everywhere with no object)."""
    fields = jax.vmap(lambda cell: W.distance_field(free, W.one_hot_cell(cell)))(objects)  # [2, H, W]
    by_path = jnp.where(visible, fields[:, start[0], start[1]], W.INF)
    by_line = jnp.where(visible, planner.chebyshev(objects, start[None, :]), W.INF)
    reachable = jnp.any(by_path < W.INF)
    goal = jnp.where(reachable, jnp.argmin(by_path), jnp.argmin(by_line))
    straight = L.chebyshev_map(objects[goal])
    dist = jnp.where(reachable, fields[goal], straight)
    return jnp.where(jnp.any(visible), dist, W.INF).astype(jnp.int32)
