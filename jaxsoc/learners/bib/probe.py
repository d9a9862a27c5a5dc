"""Linear probes of what a BC observer's states hold: the agent's cell and its action, read linearly.

A frame's state (the encoder's latent, or ``data.symbolic_states`` for a symbolic run) is useful to the BC heads
only if it holds the agent; ``probe`` fits a ridge regression from states to one-hot labels on the training
episodes' frames and reports the arg-max accuracy on the validation episodes' frames:

- ``agent_cell``: the agent's cell (100 classes; chance about 1/64 of the free cells);
- ``action``: the agent's next move (9 classes: the 8 moves or none; a single frame does not fix it, so this
  is a lower bound of what the heads can read).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.bib import world as W
from jaxsoc.learners.bib import data as D
from jaxsoc.learners.bib.bc import BCLearner, context_picks

LABELS = ("agent_cell", "action")
CLASSES = {"agent_cell": W.GRID * W.GRID, "action": 9}


def frame_labels(episodes: W.Episode, trial: jax.Array, step: jax.Array) -> dict[str, np.ndarray]:
    """Returns ``{"agent_cell": int[B, K], "action": int[B, K]}`` at steps ``(trial, step)`` (``int[B, K]``) of
    ``episodes`` ``[B, 9, ...]``; the action is ``(dx + 1) * 3 + (dy + 1)`` of ``data.step_actions``."""
    rows = jnp.arange(trial.shape[0])[:, None]
    action = D.step_actions(episodes)[rows, trial, step].astype(jnp.int32)
    return {
        "agent_cell": np.asarray(D.agent_cells(episodes, trial, step)),
        "action": np.asarray((action[..., 0] + 1) * 3 + action[..., 1] + 1),
    }


def sample_states(learner: BCLearner, params, episodes: W.Episode, per_episode: int, seed: int, chunk: int = 32):
    """Returns ``(states float32[N * per_episode, width], labels {name: int[N * per_episode]})``: ``per_episode``
    real steps drawn from all 9 trials of each episode (``episodes`` ``[N, 9, ...]``), through ``learner``'s
    state function with ``params`` (one seed's), ``chunk`` episodes at a time."""
    valid = D.step_valid(episodes)
    trial, step, mask = context_picks(jax.random.key(seed), valid, per_episode)
    states_at = jax.jit(lambda p, batch, t, s: learner._states_at(p, batch, t, s))
    n, out = D.num_episodes(episodes), []
    for start in range(0, n, chunk):
        rows = np.minimum(np.arange(start, start + chunk), n - 1)
        batch = {"episodes": D.take(episodes, rows)}
        out.append(np.asarray(states_at(params, batch, trial[rows], step[rows]))[: n - start])
    keep = np.asarray(mask).reshape(-1)
    labels = frame_labels(episodes, trial, step)
    states = np.concatenate(out).reshape(keep.size, -1)
    return states[keep], {name: value.reshape(-1)[keep] for name, value in labels.items()}


def ridge_accuracy(train_x, train_y, val_x, val_y, classes: int, ridge: float = 1.0) -> float:
    """Returns the validation accuracy of the arg-max of a ridge regression (with a bias, features
    standardised on the training set) from ``train_x [N, F]`` to one-hot ``train_y int[N]``."""
    mean, std = train_x.mean(0), train_x.std(0) + 1e-6
    lift = lambda x: np.concatenate([(x - mean) / std, np.ones((len(x), 1))], 1).astype(np.float64)  # noqa: E731
    a, b = lift(train_x), np.eye(classes)[train_y]
    weights = np.linalg.solve(a.T @ a + ridge * np.eye(a.shape[1]), a.T @ b)
    return float(np.mean(np.argmax(lift(val_x) @ weights, 1) == val_y))


def probe(learner: BCLearner, params, train: W.Episode, validation: W.Episode, per_episode: int = 4) -> dict:
    """Returns ``{label: accuracy}`` (``LABELS``) of linear probes fitted on ``train``'s frames and scored on
    ``validation``'s (``Episode`` s ``[N, 9, ...]`` in ``data.LEARNER_PARAMS``' timing; ``params`` one seed's)."""
    x, y = sample_states(learner, params, train, per_episode, seed=0)
    vx, vy = sample_states(learner, params, validation, per_episode, seed=1)
    return {name: ridge_accuracy(x, y[name], vx, vy[name], CLASSES[name]) for name in LABELS}
