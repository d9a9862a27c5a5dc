"""BIB's baseline networks (``jaxsoc.learners.networks.bib``): parameter counts derived from the layer lists,
shapes of every entry point, the BiLSTM's packed-sequence semantics against a step-by-step reference, masked
means, dropout, ATC's logits, and jit/vmap agreement."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsoc.learners.networks import bib
from jaxsoc.learners.networks.layers import LSTMCell

B, S, K, N, L = 2, 128, 5, 3, 6  # batch, state width, context pairs, trials, steps per trial
KEY = jax.random.PRNGKey(0)


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def normal(shape, seed: int = 0) -> jnp.ndarray:
    return jnp.asarray(rng(seed).normal(size=shape), jnp.float32)


# Parameter counts from the layer lists (PyTorch counting: an LSTM has an input and a hidden bias).
def dense(i: int, o: int) -> int:
    return i * o + o


def mlp(widths) -> int:
    return sum(dense(i, o) for i, o in zip(widths[:-1], widths[1:]))


def conv(k: int, i: int, o: int) -> int:
    return k * k * i * o + o


def lstm(d: int, h: int) -> int:
    return 4 * h * (d + h) + 2 * 4 * h


def bilstm(d: int, h: int, layers: int) -> int:
    return sum(2 * lstm(d if layer == 0 else 2 * h, h) for layer in range(layers))


def unet(c=(16, 32, 64), e: int = 64) -> int:
    c0, c1, c2 = c
    encoder = conv(3, 3, c0) + conv(3, c0, c0) + conv(3, c0, c1) + conv(3, c1, c1)
    bottleneck = conv(3, c1 + e, c2) + conv(3, c2, c2)
    up42 = conv(3, c2, c1) + conv(3, 2 * c1, c1) + conv(3, c1, c1)
    up84 = conv(3, c1, c0) + conv(3, 2 * c0, c0) + conv(3, c0, c0)
    return encoder + bottleneck + up42 + up84 + conv(1, c0, 3)  # the change added to the frame


POLICY = (256, 128, 256, 2)


# ---------------------------------------------------------------------------------------------------- fixtures
# Each fixture is (model, variables, args, apply): ``apply`` is ``model.apply`` jitted (eager calls would compile
# every scan again); ``test_jit_agrees`` compares it with the eager call.


def prepare(model, *args):
    variables = jax.jit(model.init)(KEY, *args)
    return model, variables, args, jax.jit(model.apply, static_argnames=("method", "train"))


@pytest.fixture(scope="module")
def encoder():
    frames = jnp.asarray(rng(1).integers(0, 256, (B, 84, 84, 3)), jnp.uint8)
    model = bib.ATCEncoder()
    return prepare(model, frames)


@pytest.fixture(scope="module")
def cells():
    frames = jnp.asarray(rng(12).uniform(size=(B, 84, 84, 3)), jnp.float32)
    return prepare(bib.CellEncoder(), frames)


@pytest.fixture(scope="module")
def contrast():
    model = bib.ATCContrast()
    args = (normal((4, 128), 1), normal((4, 128), 2))
    return prepare(model, *args)


@pytest.fixture(scope="module")
def lstm2():
    """A 2-layer BiLSTM (hidden 4) on ``[3, L, 3]`` with lengths 4, L and 0."""
    model = bib.BiLSTM(hidden=4, layers=2)
    args = (normal((3, L, 3), 3), jnp.array([4, L, 0], jnp.int32))
    return prepare(model, *args)


@pytest.fixture(scope="module")
def bcmlp():
    model = bib.BCMLP()
    mask = jnp.array([[True, False, True, True, False], [False] * K])
    args = (normal((B, K, S), 4), normal((B, K, 2), 5), mask, normal((B, S), 6))
    return prepare(model, *args)


@pytest.fixture(scope="module")
def bcrnn():
    model = bib.BCRNN()
    lengths = jnp.array([[3, 0, L], [0, 0, 0]], jnp.int32)
    args = (normal((B, N, L, S), 7), normal((B, N, L, 2), 8), lengths, normal((B, S), 9))
    return prepare(model, *args)


@pytest.fixture(scope="module")
def video():
    model = bib.VideoRNN()
    frame = jnp.asarray(rng(10).uniform(size=(B, 84, 84, 3)), jnp.float32)
    args = (normal((B, N, L, S), 11), jnp.array([[2, L, 0], [1, 0, 0]], jnp.int32), frame)
    return prepare(model, *args)


# ---------------------------------------------------------------------------------------------------- counts


def test_parameter_counts(encoder, contrast, bcmlp, bcrnn, video):
    size = 84
    for stride in (2, 2, 2, 1):
        size = (size - 3) // stride + 1
    expected_encoder = conv(3, 3, 32) + 3 * conv(3, 32, 32) + dense(size * size * 32, 128)
    expected_contrast = mlp([128, 256, 128]) + 128 * 128
    expected_bcmlp = mlp([S + 2, 64, 64, 32]) + mlp([32 + S, *POLICY])
    expected_bcrnn = bilstm(S + 2, 32, 2) + mlp([64 + S, *POLICY])
    assert (size, expected_encoder, expected_contrast) == (7, 229_472, 82_304)
    assert (expected_bcmlp, expected_bcrnn, bilstm(130, 32, 2)) == (122_274, 182_914, 67_072)

    assert bib.param_count(encoder[1]) == expected_encoder
    assert bib.param_count(contrast[1]) == expected_contrast
    assert bib.param_count(bcmlp[1]) == expected_bcmlp
    assert bib.param_count(bcrnn[1]) == expected_bcrnn
    assert bib.param_count({"params": video[1]["params"]["unet"]}) == unet()
    assert bib.param_count(video[1]) == bilstm(S, 32, 2) + unet()
    shapes = jax.eval_shape(bib.BiLSTM(32).init, KEY, jnp.zeros((1, 2, 130)), jnp.zeros((1,), jnp.int32))
    assert bib.param_count(shapes) == bilstm(130, 32, 2)


# ---------------------------------------------------------------------------------------------------- encoder


def test_encoder_shapes_and_uint8(encoder):
    _, variables, (frames,), apply = encoder
    floats = frames.astype(jnp.float32) / 255.0
    z = apply(variables, frames)
    assert z.shape == (B, 128) and z.dtype == jnp.float32
    np.testing.assert_allclose(z, apply(variables, floats), rtol=1e-5, atol=1e-5)  # two programs, 5 layers deep
    leading = apply(variables, floats.reshape(1, B, 84, 84, 3))
    assert leading.shape == (1, B, 128)
    np.testing.assert_allclose(leading[0], z, rtol=1e-5, atol=1e-5)


def test_cell_encoder_gives_each_cell_its_own_features(cells):
    """``100 * cell_channels`` features, row by row, then ``keypoints`` (row, col) pairs in [0, 1]; a change inside
    one cell (8.4 px) reaches only that cell's features and its neighbours' (the convolutions see 3 px beyond a
    pixel), and the parameters are the layer list's."""
    model, variables, (frames,), apply = cells
    z = apply(variables, frames)
    per_cell, keypoints = 100 * model.cell_channels, model.keypoints
    assert z.shape == (B, per_cell + 2 * keypoints) and z.dtype == jnp.float32
    assert keypoints > 0 and (z[:, per_cell:] >= 0).all() and (z[:, per_cell:] <= 1).all()
    c1, c2 = model.channels
    layers = conv(4, 3, c1) + conv(3, c1, c2) + dense(c2 + 3, 32) + dense(32, model.cell_channels) + dense(32, 8)
    assert bib.param_count(variables) == layers
    row, col = 4, 6  # pixels 34-41 and 51-58 lie inside cell (4, 6) at 8.4 px per cell
    changed = frames.at[:, 35:41, 52:58].set(1.0 - frames[:, 35:41, 52:58])
    moved = np.abs(np.asarray(apply(variables, changed) - z))[:, :per_cell].reshape(B, 10, 10, -1).max(axis=(0, 3))
    assert moved[row, col] > 1e-3
    near = np.zeros((10, 10), bool)
    near[row - 1 : row + 2, col - 1 : col + 2] = True
    assert (moved[~near] == 0).all(), np.argwhere(moved > 0)
    as_uint8 = apply(variables, (frames * 255).astype(jnp.uint8))
    np.testing.assert_allclose(as_uint8, z, atol=0.05)  # uint8 frames are read as /255 (rounding apart)


# ---------------------------------------------------------------------------------------------------- ATC


def test_contrast_logits(contrast):
    _, variables, (anchors_z, positives_z), apply = contrast
    logits = apply(variables, anchors_z, positives_z)
    assert logits.shape == (4, 4)
    np.testing.assert_array_equal(logits.max(axis=1), 0.0)

    p = variables["params"]
    mlp_out = jax.nn.relu(anchors_z @ p["mlp_hidden"]["kernel"] + p["mlp_hidden"]["bias"])
    anchors = apply(variables, anchors_z, method=bib.ATCContrast.anchor)
    explicit = anchors_z + mlp_out @ p["mlp_out"]["kernel"] + p["mlp_out"]["bias"]
    np.testing.assert_allclose(anchors, explicit, rtol=1e-5, atol=1e-5)
    explicit = anchors @ p["W"] @ positives_z.T
    explicit = explicit - explicit.max(axis=1, keepdims=True)
    # float32 over 128-wide rows; the logits before the shift reach ~16, so their rounding (6e-6 from float64,
    # summed in another order on another CPU) stays in the shifted values near 0: atol 1e-4
    np.testing.assert_allclose(
        apply(variables, anchors, positives_z, method=bib.ATCContrast.logits), explicit, rtol=1e-5, atol=1e-4
    )
    np.testing.assert_allclose(logits, explicit, rtol=1e-5, atol=1e-4)


# ---------------------------------------------------------------------------------------------------- BiLSTM


def reference_bilstm(params, x, hidden: int, layers: int):
    """PyTorch's bidirectional LSTM on one unpadded sequence ``x [len, D]``, one cell step at a time."""

    def run(cell_params, seq):
        carry, outs = (jnp.zeros((1, hidden)), jnp.zeros((1, hidden))), []
        for x_t in seq:
            carry, h = LSTMCell(hidden).apply({"params": cell_params}, carry, x_t[None])
            outs.append(h[0])
        return jnp.stack(outs)

    for layer in range(layers):
        forward = run(params[f"forward_{layer}"], x)
        backward = run(params[f"backward_{layer}"], x[::-1])[::-1]
        x = jnp.concatenate([forward, backward], axis=-1)
    return x


def test_bilstm_packed_semantics(lstm2):
    _, variables, (x, lengths), apply = lstm2
    out = apply(variables, x, lengths)
    assert out.shape == (3, L, 8)
    valid = np.arange(L)[None, :] < np.asarray(lengths)[:, None]
    np.testing.assert_array_equal(out[~valid], 0.0)

    # Other garbage beyond the lengths changes nothing.
    garbage = jnp.where(valid[..., None], x, normal(x.shape, 12) * 100)
    np.testing.assert_allclose(apply(variables, garbage, lengths), out, atol=1e-6)

    # The padded sequences agree with the unpadded ones and with a step-by-step reference.
    for b in (0, 1):
        n = int(lengths[b])
        alone = apply(variables, x[b : b + 1, :n], lengths[b : b + 1])[0]
        np.testing.assert_allclose(out[b, :n], alone, rtol=1e-5, atol=1e-6)  # another shape: another program
        np.testing.assert_allclose(
            out[b, :n], reference_bilstm(variables["params"], x[b, :n], 4, 2), rtol=1e-5, atol=1e-5
        )

    # The backward direction at step 0 sees the last valid step.
    changed = apply(variables, x.at[0, 3].add(1.0), lengths)
    assert np.abs(changed[0, 0, 4:] - out[0, 0, 4:]).max() > 1e-4


def test_bilstm_one_layer_directions():
    model = bib.BiLSTM(hidden=3, layers=1)
    x, lengths = normal((1, 5, 2), 13), jnp.array([4], jnp.int32)
    _, variables, _, apply = prepare(model, x, lengths)
    out, changed = apply(variables, x, lengths), apply(variables, x.at[0, 3].add(1.0), lengths)
    np.testing.assert_array_equal(changed[0, :3, :3], out[0, :3, :3])  # forward: steps before 3 unchanged
    assert np.abs(changed[0, 0, 3:] - out[0, 0, 3:]).max() > 1e-4  # backward: step 0 changed
    np.testing.assert_allclose(out[0, :4], reference_bilstm(variables["params"], x[0, :4], 3, 1), rtol=1e-5, atol=1e-5)


def test_last_valid():
    outputs = jnp.arange(3 * 4 * 2, dtype=jnp.float32).reshape(3, 4, 2)
    got = bib.last_valid(outputs, jnp.array([2, 0, 4]))
    np.testing.assert_array_equal(got, np.stack([outputs[0, 1], np.zeros(2), outputs[2, 3]]))


# ---------------------------------------------------------------------------------------------------- BC heads


def test_bcmlp_entry_points_and_mask(bcmlp):
    _, variables, (states, actions, mask, query), apply = bcmlp
    out = apply(variables, states, actions, mask, query)
    context = apply(variables, states, actions, mask, method=bib.BCMLP.context)
    assert out.shape == (B, 2) and context.shape == (B, 32)
    assert np.all(np.abs(out) < 1.0)
    np.testing.assert_array_equal(context[1], 0.0)  # no valid pair
    np.testing.assert_allclose(apply(variables, context, query, method=bib.BCMLP.act), out, rtol=1e-5, atol=1e-5)

    masked = ~mask[..., None]
    other = apply(
        variables,
        jnp.where(masked, normal(states.shape, 14), states),
        jnp.where(masked, normal(actions.shape, 15), actions),
        mask,
        method=bib.BCMLP.context,
    )
    np.testing.assert_allclose(other, context, atol=1e-6)
    keep = np.flatnonzero(mask[0])  # the mean over the valid pairs alone
    alone = apply(variables, states[:1, keep], actions[:1, keep], mask[:1, keep], method=bib.BCMLP.context)
    np.testing.assert_allclose(alone[0], context[0], rtol=1e-5, atol=1e-5)  # another shape: another program
    assert np.abs(context[0]).max() > 0


def test_bcmlp_dropout(bcmlp):
    _, variables, args, apply = bcmlp

    def run(train, seed=0):
        return apply(variables, *args, train=train, rngs={"dropout": jax.random.PRNGKey(seed)})

    np.testing.assert_array_equal(apply(variables, *args), apply(variables, *args))
    np.testing.assert_array_equal(run(False, 1), run(False, 2))
    assert np.abs(run(True, 1) - run(True, 2)).max() > 1e-4
    np.testing.assert_array_equal(run(True, 1), run(True, 1))


def test_bcrnn_entry_points_and_empty_trials(bcrnn):
    _, variables, (states, actions, lengths, query), apply = bcrnn
    out = apply(variables, states, actions, lengths, query)
    context = apply(variables, states, actions, lengths, method=bib.BCRNN.context)
    assert out.shape == (B, 2) and context.shape == (B, 64)
    assert np.all(np.abs(out) < 1.0)
    np.testing.assert_array_equal(context[1], 0.0)  # no trial
    np.testing.assert_allclose(apply(variables, context, query, method=bib.BCRNN.act), out, rtol=1e-5, atol=1e-5)

    empty = (lengths == 0)[..., None, None]
    other = apply(
        variables,
        jnp.where(empty, normal(states.shape, 16), states),
        jnp.where(empty, normal(actions.shape, 17), actions),
        lengths,
        method=bib.BCRNN.context,
    )
    np.testing.assert_allclose(other, context, atol=1e-6)
    keep = np.array([0, 2])  # the trials of example 0 with steps
    alone = apply(variables, states[:1, keep], actions[:1, keep], lengths[:1, keep], method=bib.BCRNN.context)
    np.testing.assert_allclose(alone[0], context[0], rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------------------------------- Video-RNN


def test_video_rnn_entry_points(video):
    _, variables, (features, lengths, frame), apply = video
    nxt = apply(variables, features, lengths, frame)
    embedding = apply(variables, features, lengths, method=bib.VideoRNN.character)
    assert nxt.shape == (B, 84, 84, 3) and embedding.shape == (B, 64)
    assert np.all((nxt >= 0.0) & (nxt <= 1.0))
    np.testing.assert_allclose(
        apply(variables, embedding, frame, method=bib.VideoRNN.predict), nxt, rtol=1e-5, atol=1e-5
    )

    character = bib.CharacterNet()
    alone = jax.jit(character.apply)({"params": variables["params"]["character_net"]}, features, lengths)
    np.testing.assert_allclose(alone, embedding, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="width 64"):
        bib.UNet().init(KEY, frame, jnp.zeros((B, 32)))


# ---------------------------------------------------------------------------------------------------- jit, vmap


@pytest.mark.parametrize("name", ["encoder", "cells", "contrast", "lstm2", "bcmlp", "bcrnn", "video"])
def test_jit_agrees(name, request):
    model, variables, args, apply = request.getfixturevalue(name)
    jitted = apply(variables, *args)
    # atol: a few float32 ulps of the largest output (ATC's logits reach ~17)
    atol = 1e-5 * max(1.0, float(np.abs(jitted).max()))
    np.testing.assert_allclose(jitted, model.apply(variables, *args), rtol=1e-5, atol=atol)


@pytest.mark.parametrize("name", ["lstm2", "bcmlp", "bcrnn"])
def test_vmap_agrees(name, request):
    model, variables, args, apply = request.getfixturevalue(name)

    def one(*example):
        return model.apply(variables, *(a[None] for a in example))[0]

    np.testing.assert_allclose(jax.jit(jax.vmap(one))(*args), apply(variables, *args), rtol=1e-5, atol=1e-5)
