"""A Bayesian inverse-planning observer of BIB episodes: goals, preferences and rationality per agent.

The observer explains each trial as the act of a noisy-rational planner (Baker, Saxe & Tenenbaum 2009) and
asks how probable each step of the test trial is, given everything seen before it.

- **Hypotheses**, per agent (an agent is its shape and colour): which of the episode's two objects it prefers
  (identities, not places), and whether it is *rational* (``beta_rational``: it takes efficient paths) or
  *irrational* (``beta_irrational``: it reaches its object, but its moves barely depend on the cost). Prior:
  preferences uniform, ``prior_rational`` on rationality. A new agent starts from the prior.
- **Planning**: an agent heads for its preferred object; when that object is missing or cannot be reached
  (walled in), for the other one. Its plan is over (cell, stage) states: without the key, holding it, after
  the unlock (key, lock and green barrier gone); stepping on the key picks it up, bringing it to the lock
  opens the barrier. The cost to go of each stage is a ``distance_field`` with the next stage's value as the
  source cost at the key or lock, so fetching the key is worth it exactly when the barrier blocks the way.
  Other objects are solid, as are the lock (until the key comes) and the barrier (until the unlock).
- **Likelihood**: a move ``a`` from cell ``c`` in stage ``s`` has probability ``softmax(-beta * q)`` with
  ``q = 1 + V_s(c')`` (``planner.log_policy``), mixed with a small uniform ``lapse``.
- **Surprise**: the posterior after the familiarisation trials of the test trial's agent (trials by other
  agents say nothing about it) is updated step by step through the test trial; the surprise of step ``k``
  is ``-log`` of its posterior predictive probability given the steps before it.

``inverse_planning_surprise(episode)`` returns per-step surprises for ``jaxsoc.learners.bib.voe``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsoc.envs.bib import layout as L
from jaxsoc.envs.bib import observers, planner
from jaxsoc.envs.bib import world as W

BETA_RATIONAL = 3.0
BETA_IRRATIONAL = 0.3
PRIOR_RATIONAL = 0.75
LAPSE = 1e-3


def stage_values(trial: dict, goal: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The planner's cost to go to object slot ``goal`` of one trial, per stage (0 without the key, 1 holding
    it, 2 unlocked). Returns ``(values int32[3, 10, 10], free bool[3, 10, 10])``."""
    goal_cell = trial["objects"][goal]
    other = trial["objects"][1 - goal]
    others = L.cell_mask(other) & trial["object_visible"][1 - goal] & ~L.cell_mask(goal_cell)
    solid = trial["walls"] | others
    key = L.cell_mask(trial["key"]) & trial["has_key"]
    lock = L.cell_mask(trial["lock"]) & trial["has_key"]
    goal_source = W.one_hot_cell(goal_cell)
    free = jnp.stack([~(solid | trial["barrier"] | lock), ~(solid | trial["barrier"]), ~solid])
    unlocked = W.distance_field(free[2], goal_source)
    holding = W.distance_field(free[1], jnp.minimum(goal_source, jnp.where(lock, unlocked, W.INF)))
    empty = W.distance_field(free[0], jnp.minimum(goal_source, jnp.where(key, holding, W.INF)))
    return jnp.stack([empty, holding, unlocked]), free


def _trial_step_log_probs(trial: dict, cells, moves, betas: jax.Array) -> jax.Array:
    """Log-probabilities of one trial's steps under each goal slot (after the inaccessibility fallback) and
    each beta, ``float32[2, R, M]``."""
    k = jnp.arange(moves.shape[0])
    stage = jnp.where((trial["unlock"] >= 0) & (k >= trial["unlock"]), 2, 0)
    stage = jnp.where((stage == 0) & (trial["pickup"] >= 0) & (k >= trial["pickup"]), 1, stage)
    start = cells[0]

    def per_goal(goal):
        values, free = stage_values(trial, goal)
        tables = jax.vmap(lambda beta: jax.vmap(planner.log_policy, in_axes=(0, 0, None))(values, free, beta))(betas)
        tables = jnp.logaddexp(jnp.log1p(-LAPSE) + tables, jnp.log(LAPSE / 8))  # [R, 3, 8, H, W]
        moved = jnp.minimum(moves, 7)
        log_p = tables[:, stage, moved, cells[:, 0], cells[:, 1]]  # [R, M]
        log_p = jnp.where(moves == W.STAY, jnp.log(LAPSE / 8), log_p)
        return log_p, W.at(values[0], start) < W.INF

    log_p, reach = jax.vmap(per_goal)(jnp.arange(2))
    reach = reach & trial["object_visible"]
    # An agent whose preferred object is missing or walled in goes for the other one.
    effective = jnp.where(reach, jnp.arange(2), 1 - jnp.arange(2))
    return log_p[effective]


def inverse_planning_surprise(
    episode: W.Episode,
    beta_rational: float = BETA_RATIONAL,
    beta_irrational: float = BETA_IRRATIONAL,
    prior_rational: float = PRIOR_RATIONAL,
) -> tuple[jax.Array, jax.Array]:
    """Per-step surprise of the inverse-planning observer on the test trial (any leading axes ``...``).

    Returns ``(surprise float32[..., M], mask bool[..., M])`` with ``M = episode.max_moves``; 0 where
    masked. Jittable.
    """
    lead = episode.moves.shape[:-1]
    flat = jax.tree_util.tree_map(lambda x: x.reshape((-1, *x.shape[len(lead) :])), episode)
    _, _, mask = observers.test_steps(episode)
    betas = jnp.asarray([beta_rational, beta_irrational], jnp.float32)
    log_prior = jnp.log(jnp.asarray([prior_rational, 1 - prior_rational], jnp.float32))
    surprise = jax.vmap(lambda e: _episode_surprise(e, betas, log_prior))(flat)
    surprise = surprise.reshape(mask.shape)
    return jnp.where(mask, surprise, 0.0), mask


FIELDS = ("walls", "barrier", "objects", "object_visible", "key", "lock", "has_key", "pickup", "unlock")


def _episode_surprise(episode: W.Episode, betas: jax.Array, log_prior_rational: jax.Array) -> jax.Array:
    """``float32[M]``: surprise of each test step of one episode (``[9, ...]`` arrays)."""
    trials = {f: jnp.asarray(getattr(episode, f)) for f in FIELDS}
    trials["objects"] = trials["objects"].astype(jnp.int32)
    trials["key"] = trials["key"].astype(jnp.int32)
    trials["lock"] = trials["lock"].astype(jnp.int32)
    path = jnp.asarray(episode.path).astype(jnp.int32)
    cells, after = path[:, :-1], path[:, 1:]
    moves = jax.vmap(jax.vmap(W.move_between))(cells, after)
    steps = jnp.arange(cells.shape[1])[None, :] < episode.moves[:, None]  # [9, M]
    log_p = jax.vmap(lambda t, c, m: _trial_step_log_probs(t, c, m, betas))(trials, cells, moves)  # [9, 2, R, M]

    # Objects by identity: hypothesis g is "prefers the object that was slot g in the first trial".
    identity = episode.object_shape.astype(jnp.int32) * 16 + episode.object_color.astype(jnp.int32)  # [9, 2]
    slot = jnp.argmax(identity[:, None, :] == identity[0][None, :, None], axis=-1)  # [9, 2]: slot of identity g
    log_p = jnp.take_along_axis(log_p, slot[:, :, None, None], axis=1)
    log_p = jnp.where(steps[:, None, None, :], log_p, 0.0)

    agent = episode.agent_shape.astype(jnp.int32) * 16 + episode.agent_color.astype(jnp.int32)
    same_agent = (agent == agent[W.TEST]) & (jnp.arange(W.NUM_TRIALS) < W.TEST)
    evidence = jnp.sum(jnp.where(same_agent[:, None, None], jnp.sum(log_p, axis=-1), 0.0), axis=0)  # [2, R]
    log_prior = jnp.log(0.5) + log_prior_rational[None, :]
    test = log_p[W.TEST]  # [2, R, M]
    before = jnp.cumsum(test, axis=-1) - test  # evidence of the test steps before step k
    log_w = (log_prior + evidence)[:, :, None] + before
    log_w = log_w - jax.scipy.special.logsumexp(log_w, axis=(0, 1), keepdims=True)
    return -jax.scipy.special.logsumexp(log_w + test, axis=(0, 1))
