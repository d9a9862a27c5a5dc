"""BIB's VOE scoring (``jaxsoc.learners.bib.voe``) and the nearest-object observer (``jaxsoc.envs.bib.observers``)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsoc.envs.bib import observers
from jaxsoc.envs.bib import world as W
from jaxsoc.learners.bib import voe

MAX_MOVES = 8


# ---------------------------------------------------------------------------------------------------- episodes


def episode(path, objects=((1, 4), (8, 8)), visible=(True, True), walls=()):
    """An episode whose test trial has the agent walk ``path`` (cells) among ``objects``; extra ``walls``."""
    ep = W.blank_trials(MAX_MOVES)
    cells = np.asarray(path + [path[-1]] * (MAX_MOVES + 1 - len(path)), np.int8)
    grid = np.array(ep.walls[W.TEST])
    for cell in walls:
        grid[cell] = True
    return ep.replace(
        walls=ep.walls.at[W.TEST].set(grid),
        objects=ep.objects.at[W.TEST].set(jnp.asarray(objects, jnp.int8)),
        object_visible=ep.object_visible.at[W.TEST].set(jnp.asarray(visible)),
        path=ep.path.at[W.TEST].set(cells),
        moves=ep.moves.at[W.TEST].set(len(path) - 1),
    )


def stack(*episodes):
    return jax.tree_util.tree_map(lambda *x: jnp.stack(x), *episodes)


TO_NEAR = [(1, 1), (1, 2), (1, 3), (1, 4)]  # shortest path to the nearer object (1, 4)
TO_FAR = [(1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6), (7, 7), (8, 8)]  # to the farther object (8, 8)
STRAIGHT = [(1, 1), (1, 2), (1, 3), (1, 4), (1, 5), (1, 6)]  # shortest path to (1, 6)
DETOUR = [(1, 1), (2, 2), (3, 3), (4, 4), (3, 5), (2, 6), (1, 6)]  # one move longer
ONE_OBJECT = {"objects": ((1, 6), (0, 0)), "visible": (True, False)}


def max_surprise(ep):
    surprise, mask = observers.nearest_object_surprise(ep)
    return float(voe.episode_scores(surprise, mask))


# ---------------------------------------------------------------------------------------------------- scoring


def test_episode_scores_max_and_mean_respect_the_mask():
    surprise = np.array([[1.0, 5.0, 2.0, 9.0], [3.0, 1.0, 0.0, 0.0], [7.0, 7.0, 7.0, 7.0]])
    mask = np.array([[True, True, True, False], [True, True, False, False], [False] * 4])
    np.testing.assert_array_equal(voe.episode_scores(surprise, mask), [5.0, 3.0, 0.0])  # a max picks a value
    np.testing.assert_allclose(voe.episode_scores(surprise, mask, "mean"), [8 / 3, 2.0, 0.0], rtol=1e-12)  # float64
    jitted = jax.jit(voe.episode_scores, static_argnums=2)(jnp.asarray(surprise), jnp.asarray(mask), "max")
    assert isinstance(jitted, jax.Array)
    np.testing.assert_array_equal(jitted, [5.0, 3.0, 0.0])


def test_episode_scores_errors():
    with pytest.raises(ValueError, match="reduce"):
        voe.episode_scores(np.zeros((2, 3)), np.ones((2, 3), bool), "median")
    with pytest.raises(ValueError, match="same shape"):
        voe.episode_scores(np.zeros((2, 3)), np.ones((2, 4), bool))


def test_pair_correct_counts_ties_as_half_and_gives_a_known_accuracy():
    expected = np.array([1.0, 2.0, 3.0, 4.0])
    unexpected = np.array([2.0, 2.0, 1.0, 5.0])
    np.testing.assert_array_equal(voe.pair_correct(expected, unexpected), [1.0, 0.5, 0.0, 1.0])
    assert voe.pair_accuracy(expected, unexpected) == pytest.approx(0.625)
    with pytest.raises(ValueError, match="same shape"):
        voe.pair_correct(np.zeros(2), np.zeros(3))


def test_evaluate_with_a_toy_surprise_and_unknown_types():
    """Surprise = the test trial's number of moves at every step: the shorter test trial wins each pair."""

    def surprise_fn(eps):
        surprise = jnp.broadcast_to(eps.moves[:, W.TEST, None].astype(jnp.float32), (eps.moves.shape[0], 4))
        return surprise, jnp.ones_like(surprise, bool)

    near, far = episode(TO_NEAR), episode(TO_FAR)
    pairs = stack(stack(near, far), stack(far, near), stack(near, near))  # correct, wrong, tie
    acc, scores = voe.evaluate(surprise_fn, {"preference": pairs}, batch=2, return_scores=True)
    assert acc == {"preference": pytest.approx(0.5)}
    np.testing.assert_array_equal(scores["preference"], [[3, 7], [7, 3], [3, 3]])  # whole moves, as float32
    with pytest.raises(ValueError, match="valid"):
        voe.evaluate(surprise_fn, {"preferences": pairs})
    with pytest.raises(ValueError, match="reduce"):
        voe.evaluate(surprise_fn, {"preference": pairs}, reduce="sum")
    with pytest.raises(ValueError, match="leading axes"):
        voe.evaluate(surprise_fn, {"preference": near})


# ---------------------------------------------------------------------------------------------------- reporting


def test_paper_averages_are_means_of_their_parts():
    """The instrumental averages (and Video-RNN's efficient one) are the means of the reported parts; the
    efficient averages of BC-MLP and BC-RNN are not, beyond rounding (see the ``voe`` module docstring)."""
    for model, table in voe.PAPER_TABLE1.items():
        computed = voe.averages(table)
        assert computed[voe.INSTRUMENTAL_AVERAGE] == pytest.approx(table[voe.INSTRUMENTAL_AVERAGE], abs=0.05)
        gap = abs(computed[voe.EFFICIENT_AVERAGE] - table[voe.EFFICIENT_AVERAGE])
        assert (gap <= 0.05) == (model == "Video-RNN")


def test_format_table_shows_paper_numbers_and_the_given_model():
    acc = {name: 0.5 for name in voe.EVAL_TYPES} | {"efficiency_path": 0.875}
    table = voe.format_table({"nearest-object": acc})
    lines = table.strip().splitlines()
    assert len(lines) == 2 + len(voe.ROWS)
    assert "nearest-object" in lines[0] and "Video-RNN (paper)" in lines[0]
    assert lines[2].startswith("| Preference | 50.0 | 26.3 | 48.3 | 47.6 |")
    path_row = next(line for line in lines if "path control" in line)
    assert "| 87.5 | 94.0 | 92.8 | 99.2 |" in path_row
    average = next(line for line in lines if "Efficient action average" in line)
    assert "| 62.5 | 88.8 | 82.5 | 83.1 |" in average
    assert "| 67.0 | 77.9 | 79.9 |" in table
    partial = voe.format_table({"m": {"preference": 1.0}})
    assert "| Multi-agent | – |" in partial
    with pytest.raises(ValueError, match="valid"):
        voe.format_table({"m": {"efficiency": 0.5}})
    with pytest.raises(ValueError, match="fractions"):
        voe.format_table({"m": {"preference": 87.5}})


def test_bar_plot_writes_a_png(tmp_path):
    out = voe.bar_plot({"nearest-object": {name: 0.6 for name in voe.EVAL_TYPES}}, tmp_path / "plots" / "voe.png")
    assert out.stat().st_size > 1000
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ---------------------------------------------------------------------------------------------------- observer


def test_test_steps_reads_cells_moves_and_mask():
    cells, moves, mask = observers.test_steps(episode(TO_NEAR))
    assert cells.shape == (MAX_MOVES, 2) and moves.shape == mask.shape == (MAX_MOVES,)
    np.testing.assert_array_equal(cells[:3], TO_NEAR[:3])
    np.testing.assert_array_equal(moves[:4], [2, 2, 2, W.STAY])  # east, east, east, then standing
    np.testing.assert_array_equal(mask, np.arange(MAX_MOVES) < 3)


def test_walking_to_the_nearer_object_is_less_surprising():
    assert max_surprise(episode(TO_NEAR)) < max_surprise(episode(TO_FAR))


def test_a_detour_is_more_surprising_than_a_shortest_path():
    assert max_surprise(episode(STRAIGHT, **ONE_OBJECT)) < max_surprise(episode(DETOUR, **ONE_OBJECT))


def test_an_enclosed_object_is_not_expected_and_chebyshev_is_the_fallback():
    # Walls around (1, 6): the farther (8, 8) becomes the goal; with (8, 8) enclosed too, Chebyshev picks (1, 6).
    objects = ((1, 6), (8, 8))
    around_near = [(1, 5), (1, 7), (2, 5), (2, 6), (2, 7)]
    around_far = [(7, 7), (7, 8), (8, 7)]
    to_far, to_near, down = TO_FAR[:-1], [(1, 1), (1, 2)], [(1, 1), (2, 1)]

    def surprise(path, walls):
        return max_surprise(episode(path, objects, walls=walls))

    assert surprise(to_far, around_near) < surprise(to_near, around_near)
    both = around_near + around_far
    assert surprise(to_near, both) < surprise(down, both)
    # An impossible step (into a wall) costs -log(lapse / 9), not infinity.
    assert surprise([(1, 1), (1, 0)], ()) == pytest.approx(-np.log(1e-3 / 9), rel=1e-4)


def test_observer_jit_and_batch_match_per_episode():
    eps = [episode(TO_NEAR), episode(TO_FAR), episode(STRAIGHT, **ONE_OBJECT), episode(DETOUR, **ONE_OBJECT)]
    one = [observers.nearest_object_surprise(ep) for ep in eps]
    surprise, mask = jax.jit(observers.nearest_object_surprise)(eps[0])
    np.testing.assert_allclose(surprise, one[0][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(mask, one[0][1])
    pairs = stack(stack(*eps[:2]), stack(*eps[2:]))  # [2, 2, 9, ...]
    surprise, mask = jax.jit(observers.nearest_object_surprise)(pairs)
    assert surprise.shape == mask.shape == (2, 2, MAX_MOVES) and surprise.dtype == jnp.float32
    np.testing.assert_allclose(surprise.reshape(4, -1), np.stack([s for s, _ in one]), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(mask.reshape(4, -1), np.stack([m for _, m in one]))
    assert np.all(np.isfinite(surprise)) and np.all(surprise[~mask] == 0)


def test_evaluate_the_observer_on_efficiency_pairs():
    straight, detour = episode(STRAIGHT, **ONE_OBJECT), episode(DETOUR, **ONE_OBJECT)
    near, far = episode(TO_NEAR), episode(TO_FAR)
    pairs = {"efficiency_path": stack(stack(straight, detour)), "preference": stack(stack(far, near))}
    acc = voe.evaluate(observers.nearest_object_surprise, pairs, batch=1)
    assert acc == {"efficiency_path": 1.0, "preference": 0.0}
