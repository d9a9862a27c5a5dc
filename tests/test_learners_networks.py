"""The BabyAI actor-critic: parameter counts of the reference (PyTorch) architecture, shapes, recurrent cells
against Flax's own cells, attention over padded missions, normalisation modes, and bad configs."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsoc.learners.networks import ACModel, ModelConfig, preset
from jaxsoc.learners.networks.layers import GRUCell, LSTMCell, torch_linear_init

B = 3


def reference_parameter_count(cfg: ModelConfig) -> int:
    """The parameter count of BabyAI's PyTorch ``ACModel`` (``babyai/model.py``), written from its layer list:
    ``nn.Linear(i, o)`` has ``i*o + o``, ``nn.Conv2d(i, o, k)`` ``i*o*k*k + o``, ``nn.BatchNorm2d(c)`` ``2c``,
    ``nn.GRU(i, h)`` ``3h(i + h) + 6h`` per direction, ``nn.LSTMCell(i, h)`` ``4h(i + h) + 8h``."""
    w, d, m = cfg.width, cfg.instr_dim, cfg.memory_dim
    linear = lambda i, o: i * o + o  # noqa: E731
    conv = lambda i, o, k: i * o * k * k + o  # noqa: E731
    gru = lambda i, h: 3 * h * (i + h) + 6 * h  # noqa: E731
    bn = 0 if cfg.norm == "none" else 2 * w  # BatchNorm2d, or the per-channel affine of the layer norm
    words = cfg.vocab_size * d
    # attgru: a bidirectional GRU and memory2key
    instr = gru(d, d) if cfg.instr_arch == "gru" else 2 * gru(d, d // 2) + linear(2 * m, d)
    if cfg.arch == "bow_endpool_res":
        image = 3 * 147 * w + conv(w, w, 3) + conv(w, w, 3) + 2 * bn
    else:
        image = conv(3, w, 2) + conv(w, w, 3) + 2 * bn
    film = 2 * (conv(w, w, 3) + conv(w, w, 3) + 2 * bn + 2 * linear(d, w))
    lstm = 4 * m * (w + m) + 8 * m
    heads = linear(m, 64) + linear(64, cfg.num_actions) + linear(m, 64) + linear(64, 1)
    return words + instr + image + film + lstm + heads


def fake_obs(batch=B, lengths=(5, 9, 2), tokens=72, seed=0):
    rng = np.random.default_rng(seed)
    image = np.stack(
        [rng.integers(0, 11, (batch, 7, 7)), rng.integers(0, 6, (batch, 7, 7)), rng.integers(0, 3, (batch, 7, 7))], -1
    )
    mission = np.zeros((batch, tokens), np.int32)
    for b, n in enumerate(lengths[:batch]):
        mission[b, :n] = rng.integers(1, 34, n)
    return {"image": jnp.asarray(image, jnp.uint8), "mission": jnp.asarray(mission)}


def count(tree) -> int:
    return sum(x.size for x in jax.tree_util.tree_leaves(tree))


@pytest.mark.parametrize(
    "cfg",
    [
        preset("small"),
        preset("small", arch="original"),
        preset("large"),
        preset("tiny", norm="layer"),
        preset("tiny", instr_arch="attgru", norm="none"),
    ],
    ids=["small", "small-original", "large", "tiny-layer", "tiny-attgru"],
)
def test_parameter_count_and_shapes_match_the_reference_architecture(cfg):
    model = ACModel(cfg)
    obs = fake_obs()
    variables = jax.eval_shape(lambda: model.init(jax.random.key(0), obs, model.initial_memory(B)))
    assert count(variables["params"]) == reference_parameter_count(cfg)
    (log_probs, value, memory), _ = jax.eval_shape(
        lambda: model.apply(
            model.init(jax.random.key(0), obs, model.initial_memory(B)),
            obs,
            model.initial_memory(B),
            train=True,
            mutable=["batch_stats"],
        )
    )
    assert log_probs.shape == (B, 7) and value.shape == (B,) and memory.shape == (B, 2 * cfg.memory_dim)
    assert ("batch_stats" in variables) == (cfg.norm == "batch")


def test_small_preset_counts_are_the_published_ones():
    # 1,270,536 parameters for BabyAI 1.1's default (bow_endpool_res, GRU 128, LSTM 128)
    assert reference_parameter_count(preset("small")) == 1_270_536


@pytest.fixture(scope="module")
def tiny():
    model = ACModel(preset("tiny"))
    obs = fake_obs()
    variables = jax.jit(model.init)(jax.random.key(1), obs, model.initial_memory(B))
    return model, variables, obs


def test_outputs_are_distributions_and_gradients_finite(tiny):
    model, variables, obs = tiny
    memory = jax.random.normal(jax.random.key(2), (B, 64))

    def loss(params):
        (log_probs, value, new_memory), _ = model.apply(
            {**variables, "params": params}, obs, memory, train=True, mutable=["batch_stats"]
        )
        return -log_probs[:, 2].sum() + value.sum() + new_memory.sum()

    (log_probs, value, _), _ = jax.jit(model.apply, static_argnames=("train", "mutable"))(
        variables, obs, memory, train=True, mutable=("batch_stats",)
    )
    np.testing.assert_allclose(np.exp(log_probs).sum(-1), 1.0, rtol=1e-5)
    grads = jax.jit(jax.grad(loss))(variables["params"])
    leaves = jax.tree_util.tree_leaves(grads)
    assert all(bool(jnp.isfinite(g).all()) for g in leaves)
    assert sum(float(jnp.abs(g).sum()) > 0 for g in leaves) > 0.9 * len(leaves)


def test_batch_norm_train_mode_updates_running_statistics_and_eval_mode_uses_them(tiny):
    model, variables, obs = tiny
    memory = model.initial_memory(B)
    _, updates = model.apply(variables, obs, memory, train=True, mutable=["batch_stats"])
    before = jax.tree_util.tree_leaves(variables["batch_stats"])
    after = jax.tree_util.tree_leaves(updates["batch_stats"])
    assert any(not np.allclose(a, b) for a, b in zip(before, after))
    # eval mode: one world's output does not depend on the others
    alone = model.apply(variables, jax.tree_util.tree_map(lambda x: x[:1], obs), memory[:1])[0]
    together = model.apply(variables, obs, memory)[0]
    np.testing.assert_allclose(alone[0], together[0], rtol=1e-5, atol=1e-5)


def test_layer_norm_makes_each_world_independent_in_train_mode():
    model = ACModel(preset("tiny", norm="layer"))
    obs = fake_obs()
    variables = model.init(jax.random.key(3), obs, model.initial_memory(B))
    together = model.apply(variables, obs, model.initial_memory(B), train=True)[0]
    alone = model.apply(variables, jax.tree_util.tree_map(lambda x: x[1:2], obs), model.initial_memory(1), train=True)
    np.testing.assert_allclose(alone[0][0], together[1], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("instr_arch", ["gru", "attgru"])
def test_mission_padding_does_not_change_the_output(instr_arch):
    model = ACModel(preset("tiny", instr_arch=instr_arch, norm="none"))
    short = fake_obs(tokens=12)
    long = dict(short, mission=jnp.pad(short["mission"], ((0, 0), (0, 60))))
    variables = model.init(jax.random.key(4), short, model.initial_memory(B))
    memory = jax.random.normal(jax.random.key(5), (B, 64))
    a = model.apply(variables, short, memory)
    b = model.apply(variables, long, memory)
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-5)


def test_the_attended_instruction_depends_on_the_memory_and_the_gru_one_does_not():
    obs = fake_obs()
    m1, m2 = jax.random.normal(jax.random.key(7), (2, B, 64))
    for instr_arch, depends in (("attgru", True), ("gru", False)):
        model = ACModel(preset("tiny", instr_arch=instr_arch, norm="none"))
        variables = model.init(jax.random.key(6), obs, model.initial_memory(B))

        def instruction(memory, model=model, variables=variables):
            _, state = model.apply(variables, obs, memory, mutable=["intermediates"])
            return state["intermediates"]["instruction"][0]

        assert instruction(m1).shape == (B, 32)
        assert np.allclose(instruction(m1), instruction(m2)) != depends


def test_gru_cell_equals_flax_gru_cell_with_the_extra_biases_zero():
    x = jax.random.normal(jax.random.key(0), (4, 5))
    h = jax.random.normal(jax.random.key(1), (4, 6))
    ours = GRUCell(6)
    p = ours.init(jax.random.key(2), h, x)["params"]["gates"]
    wi, bi = p["input"]["kernel"], p["input"]["bias"]
    wh, bh = p["hidden"]["kernel"], p["hidden"]["bias"]
    bh = bh.at[:12].set(0.0)  # PyTorch's b_hr, b_hz are redundant with b_ir, b_iz; Flax has none
    split = lambda a: jnp.split(a, 3, axis=-1)  # noqa: E731
    (wir, wiz, win), (bir, biz, bin_), (whr, whz, whn) = split(wi), split(bi), split(wh)
    flax_params = {
        "ir": {"kernel": wir, "bias": bir},
        "iz": {"kernel": wiz, "bias": biz},
        "in": {"kernel": win, "bias": bin_},
        "hr": {"kernel": whr},
        "hz": {"kernel": whz},
        "hn": {"kernel": whn, "bias": split(bh)[2]},
    }
    ours_out = ours.apply(
        {"params": {"gates": {"input": {"kernel": wi, "bias": bi}, "hidden": {"kernel": wh, "bias": bh}}}}, h, x
    )
    theirs = nn.GRUCell(6).apply({"params": flax_params}, h, x)
    np.testing.assert_allclose(ours_out[0], theirs[0], rtol=1e-5, atol=1e-6)


def test_lstm_cell_equals_flax_lstm_cell_with_the_input_biases_zero():
    x = jax.random.normal(jax.random.key(0), (4, 5))
    h, c = jax.random.normal(jax.random.key(1), (2, 4, 6))
    ours = LSTMCell(6)
    p = ours.init(jax.random.key(2), (h, c), x)["params"]["gates"]
    wi, wh, bh = p["input"]["kernel"], p["hidden"]["kernel"], p["hidden"]["bias"]
    names = "ifgo"
    flax_params = {}
    for k, (a, b, bias) in enumerate(zip(jnp.split(wi, 4, -1), jnp.split(wh, 4, -1), jnp.split(bh, 4, -1))):
        flax_params[f"i{names[k]}"] = {"kernel": a}
        flax_params[f"h{names[k]}"] = {"kernel": b, "bias": bias}
    zero_bi = jnp.zeros_like(p["input"]["bias"])
    params = {"gates": {"input": {"kernel": wi, "bias": zero_bi}, "hidden": {"kernel": wh, "bias": bh}}}
    (h1, c1), _ = ours.apply({"params": params}, (h, c), x)
    (c2, h2), _ = nn.LSTMCell(6).apply({"params": flax_params}, (c, h), x)
    np.testing.assert_allclose(h1, h2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c1, c2, rtol=1e-5, atol=1e-6)


def test_linear_init_has_unit_norm_output_rows():
    w = torch_linear_init(jax.random.key(0), (37, 11))
    np.testing.assert_allclose(jnp.linalg.norm(w, axis=0), 1.0, rtol=1e-5)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"arch": "resnet"}, "arch"),
        ({"norm": "group"}, "norm"),
        ({"instr_arch": "attgru", "instr_dim": 7}, "even"),
        ({"memory_dim": 0}, "memory_dim"),
    ],
)
def test_bad_configs_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ModelConfig(**kwargs)


def test_unknown_preset_and_fields_are_refused():
    with pytest.raises(ValueError, match="preset"):
        preset("huge")
    with pytest.raises(ValueError, match="unknown ModelConfig fields"):
        preset("small", hidden=3)
