"""BIB's learned observers score what they observe (issue 59): each stored observer (``bib-bc-mlp-symbolic``,
``bib-bc-mlp-pixels``, ``bib-bc-rnn-pixels``, ``bib-video-rnn``; seed 0), applied as ``run.evaluate`` applies it
(``learner.surprise`` on the episodes of one half of the evaluation pairs), gives the same surprise at every test
step when the generator's hidden fields are scrambled: the episode's goal label, the key-pickup and unlock indices,
the per-frame move labels, the key's start cell and ``has_key``, the objects absent from a trial (cell, shape,
colour), and the lock, barrier and key of frames and trials where they are not drawn. What the frames show (and the
symbolic states give as positions) — walls, home, visible objects, the agent's path, the key, lock and barrier
while visible, the trial lengths — is left as it is, and changing it (the familiarisation trials of another
episode) changes the surprise (so the test can fail). An episode's surprise does not depend on the others in its
batch either (the expected and the unexpected halves of the pairs are scored in separate batches)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tiers import ci_subset

from jaxsoc import models
from jaxsoc.envs.bib import world as W
from jaxsoc.learners.bib import data as D
from jaxsoc.learners.bib.video import VideoLearner

OBSERVERS = ("bib-bc-mlp-symbolic", "bib-bc-mlp-pixels", "bib-bc-rnn-pixels", "bib-video-rnn")
#: an evaluation type with keys, locks, barriers and a goal; 3 pairs give 6 episodes, scored as one batch
TYPE, PAIRS, STEPS = "instrumental_blocking_barrier", 3, 16


@pytest.fixture(scope="module")
def episodes():
    """``Episode [6, 9]``: both halves of 3 generated evaluation pairs, in the learners' timing."""
    pairs = D.evaluation_pairs(1, PAIRS, (TYPE,))[TYPE]
    return jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), pairs)


def scramble_hidden(episodes: W.Episode, rng: np.random.Generator) -> W.Episode:
    """Returns ``episodes`` with every field no frame shows redrawn at random (module docstring)."""
    e = jax.tree.map(np.array, episodes)
    lead, frames = e.moves.shape, e.agent_xy.shape[-2]
    cells = lambda *shape: rng.integers(0, W.GRID, (*shape, 2)).astype(np.int8)  # noqa: E731
    e = e.replace(
        goal=rng.integers(-1, 2, lead).astype(e.goal.dtype),
        pickup=rng.integers(-1, e.max_moves + 1, lead).astype(e.pickup.dtype),
        unlock=rng.integers(-1, e.max_moves + 1, lead).astype(e.unlock.dtype),
        action=rng.integers(0, len(W.MOVES) + 1, e.action.shape).astype(e.action.dtype),
        key=cells(*lead),
        has_key=rng.random(lead) < 0.5,
    )
    absent = ~e.object_visible  # [B, 9, 2]
    e.objects[absent] = cells(int(absent.sum()))
    e.object_shape[absent] = rng.integers(0, len(W.OBJECT_SHAPES), int(absent.sum()))
    e.object_color[absent] = rng.integers(0, len(W.PALETTE), int(absent.sum()))
    no_lock, no_barrier = ~e.lock_visible.any(-1), ~e.barrier_visible.any(-1)  # trials that never draw them
    e.lock[no_lock] = cells(int(no_lock.sum()))
    e.rotation[no_lock] = rng.integers(0, len(W.ROTATIONS), int(no_lock.sum()))
    e.barrier[no_barrier] = rng.random((int(no_barrier.sum()), W.GRID, W.GRID)) < 0.3
    hidden_key = ~e.key_visible  # frames without the key
    e.key_xy[hidden_key] = rng.uniform(0, W.GRID - 1, (int(hidden_key.sum()), 2)).astype(np.float32)
    assert frames == e.num_frames
    return jax.tree.map(jnp.asarray, e)


@pytest.fixture(scope="module", params=ci_subset(OBSERVERS, {"bib-bc-mlp-symbolic", "bib-bc-mlp-pixels"}))
def observer(request):
    """``(name, surprise)``: the stored observer's seed-0 ``surprise(episodes) -> (float32[B, STEPS], bool[B,
    STEPS])``, jitted once, as ``run.evaluate`` computes it (a Video-RNN over the whole frame)."""
    learner, states, info = models.load(request.param, kind="observer")
    params = jax.tree.map(lambda x: x[0], learner.final_params(states))
    if isinstance(learner, VideoLearner):
        return request.param, jax.jit(lambda e: learner.surprise(params, e, STEPS, "frame"))
    return request.param, jax.jit(lambda e: learner.surprise(params, e, STEPS))


def test_scrambled_hidden_fields_leave_every_surprise_unchanged(observer, episodes):
    name, surprise = observer
    rng = np.random.default_rng(59)
    scrambled = scramble_hidden(episodes, rng)
    assert not np.array_equal(np.asarray(scrambled.goal), np.asarray(episodes.goal))
    assert np.asarray(episodes.has_key).any() and np.asarray(episodes.barrier_visible).any()  # a type with keys
    value, mask = surprise(episodes)
    assert bool(jnp.any(mask)) and bool(jnp.all(jnp.isfinite(value)))
    for _ in range(2):
        other, other_mask = surprise(scramble_hidden(episodes, rng))
        assert np.array_equal(np.asarray(other_mask), np.asarray(mask)), name
        assert np.array_equal(np.asarray(other), np.asarray(value)), f"{name} reads a field no frame shows"


def test_observed_context_changes_the_surprise_and_episodes_are_scored_alone(observer, episodes):
    """The control: the familiarisation trials of the second and third pairs swapped (the two episodes of a pair
    share theirs) change the surprise of each of their four episodes; the first pair, left as it is, scores as
    before (nothing crosses the batch)."""
    name, surprise = observer
    value = np.asarray(surprise(episodes)[0])
    rows = np.array([0, 1, 4, 5, 2, 3])
    swapped = jax.tree.map(
        lambda x: jnp.asarray(x).at[:, : D.FAMILIARISATION].set(jnp.asarray(x)[rows, : D.FAMILIARISATION]), episodes
    )
    other = np.asarray(surprise(swapped)[0])
    assert np.array_equal(other[:2], value[:2]), f"{name}: an episode's surprise depends on the rest of its batch"
    assert all(not np.array_equal(other[b], value[b]) for b in range(2, 6)), name
