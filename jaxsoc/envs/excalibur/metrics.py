"""EXCALIBUR's metrics: accuracies, the behaviour analysis of the supplementary's Table 7, and the exploration-aware
score with its constant fitted as the supplementary's Eq. 5 describes.

**Behaviour** (per exploration phase, I and III; ``behaviour``): TTI, the steps until the first touch of an object
(an episode that touches nothing counts its phase's steps: censored); Area, the fraction of the reachable floor
cells the agent stood on; % Objects Seen; % Objects Interacted (picked up, dropped onto or into, opened or
closed). All in percent but TTI, as Table 7.

**The exploration score** (the main paper's Eq. 1 could not be found; its form here is jaxsoc's reconstruction):
``ExQA_k = accuracy - steps / k``: accuracy minus a price per exploration step, ``k`` steps costing one unit of
accuracy (``k = inf``: plain accuracy). The supplementary's Eq. 5 fits ``k`` on the human players' scores: assume
ExQA ~ N(mu, sigma) and pick the ``k`` of maximum likelihood, ``argmax_k max_{mu, sigma} E[-(ExQA - mu)^2 /
(2 sigma^2) - log sigma]``. The inner maximum is at the scores' mean and standard deviation and equals
``-1/2 - log std(ExQA_k)``, so ``k*`` is the ``k`` whose scores have the least spread. For this form that is
``var(steps) / cov(accuracy, steps)`` when players who explore longer answer better (a positive covariance),
and ``inf`` (plain accuracy) otherwise. jaxsoc fits it on the oracle explorer's episodes, its stand-in for the
human players (``fit_k``; ``eq5_objective`` evaluates the likelihood for a grid search).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.excalibur import state as S
from jaxsoc.envs.excalibur import world as W

PHASES = ("explore", "reenter")
#: the supplementary's Table 7 (agents and humans), per phase: TTI, Area %, % Objects Seen, % Objects Interacted
PAPER_TABLE7 = {
    "QA reward": {"explore": (303.5, 11.2, 23.4, 10.4), "reenter": (202.3, 21.2, 15.1, 24.9)},
    "Novelty reward": {"explore": (571.2, 31.4, 33.5, 5.6), "reenter": (172.1, 23.2, 23.0, 3.2)},
    "Novelty+QA": {"explore": (436.1, 32.8, 37.9, 9.9), "reenter": (153.2, 23.6, 20.5, 25.8)},
    "Human w/o replay": {"explore": (53.7, 59.3, 96.7, 83.8), "reenter": (65.7, 28.5, 83.1, 54.0)},
    "Human w/ replay": {"explore": (68.5, 70.7, 98.5, 81.2), "reenter": (154.3, 26.6, 75.4, 39.4)},
}
BEHAVIOUR = ("tti", "area", "seen", "interacted")


def behaviour(state: S.State, reachable: jax.Array) -> dict[str, jax.Array]:
    """Returns the metrics of one (finished) episode's ``state`` as float32 scalars: ``accuracy_first`` and
    ``accuracy_again`` (phases II and IV, in [0, 1]) and, for ``p`` in ``PHASES``, ``{p}_tti``, ``{p}_area``,
    ``{p}_seen``, ``{p}_interacted`` (percent) and ``{p}_steps``. ``reachable`` is ``bool[H, W]``, the floor cells
    the agent can reach (``houses.reachable``). Jittable; vmap it over episodes."""
    house, tracks = state.house, state.tracks
    valid = house.valid
    num = jnp.maximum(valid.sum(), 1).astype(jnp.float32)
    cells = jnp.maximum(reachable.sum(), 1).astype(jnp.float32)
    out = {"accuracy_first": W.accuracy(state, 0), "accuracy_again": W.accuracy(state, 1)}
    for p, name in enumerate(PHASES):
        steps = tracks.steps[p].astype(jnp.float32)
        first = tracks.first_touch[p]
        out[f"{name}_tti"] = jnp.where(first >= 0, first.astype(jnp.float32), steps)
        out[f"{name}_area"] = 100.0 * (tracks.visited[p] & reachable).sum() / cells
        out[f"{name}_seen"] = 100.0 * (tracks.seen[p] & valid).sum() / num
        out[f"{name}_interacted"] = 100.0 * (tracks.touched[p] & valid).sum() / num
        out[f"{name}_steps"] = steps
    return {k: jnp.asarray(v, jnp.float32) for k, v in out.items()}


def exqa(accuracy, steps, k: float):
    """Returns ``accuracy - steps / k`` (module docstring), elementwise; ``k = inf`` gives ``accuracy``."""
    accuracy, steps = np.asarray(accuracy, np.float64), np.asarray(steps, np.float64)
    return accuracy if np.isinf(k) else accuracy - steps / k


def eq5_objective(k: float, accuracy, steps) -> float:
    """Returns the supplementary's Eq. 5 objective for ``k``: the mean log-likelihood (up to a constant) of the
    scores ``exqa(accuracy, steps, k)`` under the normal of their own mean and standard deviation,
    ``-1/2 - log std``; ``-inf`` when the scores do not vary (degenerate)."""
    scores = exqa(accuracy, steps, k)
    sigma = float(np.std(scores))
    return -0.5 - float(np.log(sigma)) if sigma > 0 else float("-inf")


def fit_k(accuracy, steps) -> float:
    """Returns ``k*`` maximising ``eq5_objective`` over ``k > 0``: ``var(steps) / cov(accuracy, steps)`` when the
    covariance is positive, else ``inf`` (module docstring). Raises ``ValueError`` for fewer than two episodes or
    mismatched lengths."""
    accuracy, steps = np.asarray(accuracy, np.float64), np.asarray(steps, np.float64)
    if accuracy.shape != steps.shape or accuracy.ndim != 1 or accuracy.size < 2:
        raise ValueError(f"fit_k needs two equal 1-D arrays of >= 2 episodes, got {accuracy.shape}, {steps.shape}")
    cov = float(np.mean((accuracy - accuracy.mean()) * (steps - steps.mean())))
    var = float(np.var(steps))
    return var / cov if cov > 0 and var > 0 else float("inf")


def summarise(rows: dict[str, np.ndarray]) -> dict[str, float]:
    """Returns the mean of each metric over episodes (``rows``: name -> ``[E]`` arrays, as ``behaviour`` vmapped)."""
    return {name: float(np.mean(np.asarray(values))) for name, values in rows.items()}
