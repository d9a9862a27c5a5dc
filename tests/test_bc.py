"""Behaviour cloning (``jaxsoc.learners.bc``) and interactive imitation learning (``jaxsoc.learners.imitation``).

Compilation dominates on CPU (cold, on 2 cores: the ``ACModel`` initialisation and update ~13 s together, the
bot rollout ~10 s, the validation rollout a few seconds), so the file is in two parts:

* the CI part runs the update's logic (truncated BPTT, masking, BatchNorm over padding, several seeds under
  ``vmap``) on a tiny recurrent stand-in model with ``ACModel``'s interface, which compiles in about a second,
  plus one ``ACModel`` update on synthetic demonstrations, the configuration and data checks, and the command
  line end to end: ``jaxsoc demos`` writes 16 bot demonstrations, ``jaxsoc train bc`` and ``jaxsoc train
  il-interactive`` train on them with ``--preset tiny`` (epochs, validation, early stopping, interactive
  rounds, the run's outputs) and ``jaxsoc eval`` reads their checkpoints;
* the ``slow`` part trains on the same demonstrations through the Python API: overfitting, ``train_bc``
  (determinism, history, outputs, early stop), interactive imitation, ``vmap`` over seeds and a model
  without BatchNorm.

Every ``ACModel`` test, the command line's runs included, uses one model (the ``tiny`` preset: ``original``
arch, width 32, 32-unit memory and instruction GRU, BatchNorm) with one learner (``CONFIG``, built by the
command line's ``bc_config``) on batches of one shape (8 demonstrations x 12 steps = 3 chunks of 4 steps,
missions cut to 8 tokens), so the update, the initialisation, the validation rollout (16 episodes) and the bot
rollout (8 worlds) are each compiled once.
"""

from __future__ import annotations

import csv
import functools
import json

import flax.linen as nn
import flax.serialization
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tolerance import assert_trees_match

import jaxsoc
from jaxsoc.cli import main
from jaxsoc.cli.learn import bc_config
from jaxsoc.data.loader import concat_episodes
from jaxsoc.data.memory import MemoryDemos, bot_demos, load_demos
from jaxsoc.learners.bc import (
    RECIPES,
    BCConfig,
    BCLearner,
    BCState,
    epoch_indices,
    make_batch,
    make_learner,
    mission_width,
    train_bc,
)
from jaxsoc.learners.evaluate import play
from jaxsoc.learners.imitation import ImitationConfig, base_demos, interactive_imitation
from jaxsoc.learners.networks.babyai import PRESETS, ACModel
from jaxsoc.learners.policy import load_policy

ENV_ID = "BabyAI-GoToRedBallGrey-v0"
DATA_SEED, NUM_DEMOS, BOT_ENVS = 1, 16, 8
MISSION_SEED = 7  # its first levels have bot demonstrations of at most 9 steps (the padded length is 12)
BATCH, MAX_LEN, RECURRENCE, VAL_EPISODES = 8, 12, 4, 16
#: the command line's ``--set`` items of every run here; ``CONFIG`` is what ``jaxsoc train bc --preset tiny`` makes
#: of them (``bc_config``), so the tests and the command line share one learner and its compiled functions
TINY_SETTINGS = (
    f"batch_size={BATCH}",
    f"recurrence={RECURRENCE}",
    f"epoch_length={2 * BATCH}",
    f"max_len={MAX_LEN}",
    "lr=1e-3",
    f"val_episodes={VAL_EPISODES}",
    "max_epochs=2",
)
CONFIG = bc_config(ENV_ID, "tiny", list(TINY_SETTINGS))
UPDATES_PER_EPOCH = CONFIG.epoch_length // CONFIG.batch_size
GO_TO_THE_RED_BALL = [1, 2, 8, 10, 17]  # token ids of "go to the red ball"


def synthetic_demos(num: int, seed: int, env_id: str = ENV_ID) -> MemoryDemos:
    """Returns ``num`` made-up episodes (1 to 12 steps; valid object/colour/state codes; random actions)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, MAX_LEN + 1, num)
    steps = int(lengths.sum())
    image = np.stack([rng.integers(0, 11, steps), rng.integers(0, 6, steps), rng.integers(0, 3, steps)], -1)
    mission = np.zeros((num, 72), np.uint8)
    mission[:, :5] = GO_TO_THE_RED_BALL
    episodes = {
        "image": np.broadcast_to(image[:, None, None, :], (steps, 7, 7, 3)).astype(np.uint8)
        * rng.integers(0, 2, (steps, 7, 7, 1), dtype=np.uint8),
        "direction": rng.integers(0, 4, steps).astype(np.uint8),
        "action": rng.integers(0, 7, steps).astype(np.uint8),
        "mission": mission,
        "seed": np.arange(num, dtype=np.int64),
        "length": lengths.astype(np.int32),
        "success": np.ones(num, bool),
        "reward": np.ones(num, np.float32),
        "expert_failed": np.zeros(num, bool),
        "offsets": np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
    }
    return MemoryDemos(env_id, episodes)


def scramble_padding(batch: dict[str, np.ndarray], seed: int) -> dict[str, np.ndarray]:
    """Returns ``batch`` with random images and actions on its padding steps."""
    rng = np.random.default_rng(seed)
    real = batch["mask"]
    noise = rng.integers(0, 11, batch["image"].shape, dtype=np.uint8)
    return dict(
        batch,
        image=np.where(real[:, :, None, None, None], batch["image"], noise),
        action=np.where(real, batch["action"], rng.integers(0, 7, real.shape)).astype(np.uint8),
    )


def assert_trees_equal(a, b) -> None:
    jax.tree.map(np.testing.assert_array_equal, jax.device_get(a), jax.device_get(b))


def flat(tree) -> np.ndarray:
    """The leaves of ``tree`` as one vector, in the order of Adam's flat state (``optax.flatten``)."""
    return np.concatenate([np.ravel(x) for x in jax.tree.leaves(jax.device_get(tree))])


def assert_same_first_step(start: BCState, single: BCState, other: BCState, lr: float) -> None:
    """Checks that ``other`` took the step ``single`` took from ``start`` (the first update). Gradients: Adam's
    first moment after one step from zero is ``0.1 g``; they must agree within 1e-3 of the largest. Parameters:
    Adam's first step moves each by ``lr * g / (|g| + eps)``, about ``lr`` whatever ``g``, so a comparison within
    ``lr`` could not tell a wrong or missing step from a right one. Where ``|g| > 1e-3`` (most parameters) the
    step is insensitive to float noise: the two steps must agree within ``1e-3 lr``, each being over ``0.9 lr``.
    Below, float noise in gradients that are zero in exact arithmetic (biases ahead of BatchNorm), which differs
    between a vmapped and a separate run, is normalised to steps of up to ``lr`` of either sign: within ``2 lr``."""
    assert int(single.step) == int(other.step) == int(start.step) + 1 == 1
    grad, other_grad = flat(single.opt_state[0].mu) / 0.1, flat(other.opt_state[0].mu) / 0.1
    np.testing.assert_allclose(other_grad, grad, rtol=0, atol=1e-3 * np.abs(grad).max())
    step, other_step = flat(single.params) - flat(start.params), flat(other.params) - flat(start.params)
    stable = np.abs(grad) > 1e-3
    assert stable.mean() > 0.5 and np.abs(step[stable]).min() > 0.9 * lr
    np.testing.assert_allclose(other_step[stable], step[stable], rtol=0, atol=1e-3 * lr)
    np.testing.assert_allclose(other_step, step, rtol=0, atol=2 * lr)


# == configuration and data checks ==========================================================================
def test_presets_follow_the_reference_recipe():
    small, large = BCConfig.for_preset(ENV_ID, "small"), BCConfig.for_preset(ENV_ID, "large")
    assert (small.batch_size, small.recurrence, small.epoch_length) == (256, 20, 25_600)
    assert (large.batch_size, large.recurrence, large.epoch_length) == (128, 80, 51_200)
    assert large.model_config.memory_dim == 2048 and large.model_config.instr_arch == "attgru"
    for config in (small, large):
        assert (config.lr, config.adam_eps, config.entropy_coef) == (1e-4, 1e-5, 0.01)
        assert (config.lr_decay, config.lr_decay_epochs, config.patience) == (0.9, 100, 100)
        assert (config.val_episodes, config.success_threshold) == (512, 0.99)
    assert set(RECIPES) == {"small", "large"}
    # --preset tiny: the Small recipe with the tiny model
    assert (CONFIG.preset, CONFIG.model, CONFIG.model_config) == ("tiny", (), PRESETS["tiny"])
    assert (CONFIG.adam_eps, CONFIG.entropy_coef, CONFIG.lr_decay, CONFIG.lr_decay_epochs) == (1e-5, 0.01, 0.9, 100)
    wider = CONFIG.replace(model={"width": 64, "arch": "original"})
    assert wider.model == (("arch", "original"), ("width", 64))  # hashable pairs
    assert json.loads(json.dumps(wider.to_dict()))["model"]["width"] == 64


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"batch_size": 0}, "batch_size must be a positive integer"),
        ({"recurrence": -4}, "recurrence must be a positive integer"),
        ({"epoch_length": 4}, "epoch_length .* must be at least batch_size"),
        ({"lr": 0.0}, "lr must be positive"),
        ({"lr_decay": 1.5}, "lr_decay must be in"),
        ({"success_threshold": 0.0}, "success_threshold must be in"),
        ({"patience": -1}, "patience must be a non-negative integer"),
        ({"val_seed": 2**32}, "val_seed must be an integer"),
        ({"max_len": 10}, "max_len must be a positive multiple of recurrence=4"),
        (
            {"preset": "medium"},
            r"unknown preset 'medium' of network 'babyai'; choose one of \['large', 'small', 'tiny'\]",
        ),
        ({"network": "transformer"}, "unknown network 'transformer'"),
        ({"model": {"memory_size": 3}}, r"network 'babyai' has no config fields \['memory_size'\]"),
        ({"model": {"norm": "group"}}, "norm must be one of"),
        ({"batch": 3}, "unknown BCConfig fields"),
    ],
)
def test_bad_config_is_refused(changes, message):
    with pytest.raises(ValueError, match=message):
        CONFIG.replace(**changes)


def test_unknown_preset_and_field_in_for_preset():
    with pytest.raises(ValueError, match="unknown BC preset"):
        BCConfig.for_preset(ENV_ID, "tiny")
    with pytest.raises(ValueError, match="unknown BCConfig fields"):
        BCConfig.for_preset(ENV_ID, "small", learning_rate=1e-3)


def test_mismatched_demonstrations_are_refused():
    demos = synthetic_demos(NUM_DEMOS, seed=0)
    longest = int(demos.episodes["length"].max())
    with pytest.raises(ValueError, match="demonstrations are of BabyAI-GoToLocal-v0, the config trains on"):
        train_bc(CONFIG, synthetic_demos(4, 0, env_id="BabyAI-GoToLocal-v0"), progress=False)
    with pytest.raises(ValueError, match=f"has {longest} steps, more than max_len=4; raise max_len"):
        train_bc(CONFIG.replace(max_len=4), demos, progress=False)
    with pytest.raises(ValueError, match="token id 17, not below the model's vocab_size=10"):
        train_bc(CONFIG.replace(model=dict(CONFIG.model, vocab_size=10)), demos, progress=False)
    with pytest.raises(ValueError, match="asked for 17 demonstrations of 16"):
        train_bc(CONFIG, demos, num_demos=NUM_DEMOS + 1, progress=False)
    with pytest.raises(ValueError, match="unknown environment"):
        train_bc(CONFIG.replace(env_id="BabyAI-NoSuchLevel-v0"), demos, progress=False)


def test_imitation_config_is_checked():
    with pytest.raises(ValueError, match="growth must be a number above 1"):
        ImitationConfig(bc=CONFIG, growth=1.0)
    with pytest.raises(ValueError, match=f"mission_seed={CONFIG.val_seed} must differ"):
        ImitationConfig(bc=CONFIG, mission_seed=CONFIG.val_seed)
    with pytest.raises(ValueError, match="start_demos must be a positive integer"):
        ImitationConfig(bc=CONFIG, start_demos=0)
    with pytest.raises(ValueError, match="16 base demonstrations asked, 4 given"):
        interactive_imitation(ImitationConfig(bc=CONFIG, start_demos=16), synthetic_demos(4, 0), progress=False)


def test_epochs_see_every_demonstration_once_before_any_twice():
    seen = np.concatenate([epoch_indices(10, 4, epoch, seed=3) for epoch in range(5)])  # 2 passes over 10
    assert sorted(seen[:10]) == list(range(10)) and sorted(seen[10:]) == list(range(10))
    np.testing.assert_array_equal(epoch_indices(10, 4, 2, seed=3), seen[8:12])  # epochs are reproducible
    assert not np.array_equal(seen[:10], seen[10:])  # reshuffled between passes
    other = np.concatenate([epoch_indices(10, 4, epoch, seed=4) for epoch in range(5)])
    assert not np.array_equal(other, seen)  # by the seed


def test_mission_width_covers_the_widest_mission():
    missions = synthetic_demos(4, 0).episodes["mission"]
    assert mission_width(missions) == 8
    wide = np.zeros((2, 72), np.uint8)
    wide[1, :17] = 1
    assert mission_width(wide) == 24 and mission_width(np.ones((1, 72), np.uint8)) == 72


def test_memory_demos_join_and_refuse_other_envs():
    demos = synthetic_demos(6, seed=1)
    joined = demos.take([0, 1]).concat(demos.take([2]))
    np.testing.assert_array_equal(joined.episodes["seed"], [0, 1, 2])
    assert joined.num_steps == int(demos.episodes["length"][:3].sum())
    assert_trees_equal(joined.episodes, concat_episodes([demos.take([0, 1, 2]).episodes]))
    with pytest.raises(ValueError, match="cannot join"):
        demos.concat(MemoryDemos("BabyAI-GoToLocal-v0", demos.episodes))


# == the update on a tiny recurrent stand-in ================================================================
class TinyRecurrent(nn.Module):
    """The policy protocol on a one-layer tanh RNN, optionally with BatchNorm on its input projection:
    ``(obs, memory, train) -> (log_probs [B, 7], value [B], memory [B, memory_dim])``; the context is a
    parameter-free summary of the mission."""

    memory_dim: int = 3
    batch_norm: bool = False

    def initial_memory(self, batch: int) -> jax.Array:
        return jnp.zeros((batch, self.memory_dim), jnp.float32)

    def encode_context(self, obs):
        return jnp.sum(obs["mission"].astype(jnp.float32), axis=-1, keepdims=True) / 100.0

    def __call__(self, obs, memory, train: bool = False):
        return self.step(obs, self.encode_context(obs), memory, train)

    @nn.compact
    def step(self, obs, mission, memory, train: bool = False):
        image = obs["image"].reshape(obs["image"].shape[0], -1).astype(jnp.float32) / 10.0
        x = nn.Dense(self.memory_dim)(jnp.concatenate([image, mission], axis=-1))
        if self.batch_norm:
            x = nn.BatchNorm(use_running_average=not train, momentum=0.9)(x)
        memory = jnp.tanh(x + nn.Dense(self.memory_dim, use_bias=False)(memory))
        return jax.nn.log_softmax(nn.Dense(7)(memory)), jnp.zeros(memory.shape[0]), memory


TINY_B, TINY_T, TINY_R = 3, 6, 2


@functools.cache
def tiny_learner(batch_norm: bool = False) -> BCLearner:
    return BCLearner(
        TinyRecurrent(batch_norm=batch_norm),
        recurrence=TINY_R,
        entropy_coef=0.01,
        lr=3e-2,
        adam_eps=1e-5,
        lr_decay=0.9,
        decay_every=1000,
    )


def tiny_batch(seed: int, lengths) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    mask = np.arange(TINY_T)[None, :] < np.asarray(lengths)[:, None]
    return {
        "image": rng.integers(0, 11, (TINY_B, TINY_T, 7, 7, 3), dtype=np.uint8) * mask[:, :, None, None, None],
        "mission": rng.integers(1, 40, (TINY_B, 4), dtype=np.uint8),
        "action": (rng.integers(0, 7, (TINY_B, TINY_T)) * mask).astype(np.uint8),
        "mask": mask,
    }


LENGTHS = st.lists(st.integers(1, TINY_T), min_size=TINY_B, max_size=TINY_B)


@functools.cache
def step_jacobian():
    """Returns a jitted ``(params, batch) -> float32[B, T, T]``: how much the loss of step ``t`` (axis 1) moves
    with the observation of step ``s`` (axis 2) of the same episode, under the gradient (the tiny model reads
    float images, so they can be differentiated)."""
    learner = tiny_learner()

    def per_step(params, batch):
        def nll(image):
            return learner.unroll(params, {}, dict(batch, image=image))[0]["nll"]  # [B, T]

        jacobian = jax.jacrev(nll)(batch["image"])  # [B, T, B, T, 7, 7, 3]
        rows = jnp.arange(TINY_B)
        return jnp.abs(jacobian[rows, :, rows]).sum(axis=(-3, -2, -1))

    return jax.jit(per_step)


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**16), lengths=LENGTHS)
def test_gradient_stops_at_chunk_boundaries(seed, lengths):
    """Step ``t``'s loss sends gradient to the observations of the steps ``s <= t`` of its own chunk only,
    while its value depends on earlier chunks too (the memory's value flows on)."""
    learner = tiny_learner()
    batch = dict(tiny_batch(seed, lengths))
    batch["image"] = batch["image"].astype(np.float32)
    params = learner.init_jit(jax.random.key(seed)).params
    sensitivity = np.asarray(step_jacobian()(params, batch))
    chunk = np.arange(TINY_T) // TINY_R
    for b, n in enumerate(lengths):
        for t in range(n):
            for s in range(n):
                expected = s <= t and chunk[s] == chunk[t]
                assert (sensitivity[b, t, s] > 0) == expected, (b, t, s)
    late = [b for b, n in enumerate(lengths) if n > TINY_R]
    moved = dict(batch, image=batch["image"].copy())
    moved["image"][:, 0] += 1.0  # change the first observation: later chunks see it through the memory
    before = np.asarray(learner.unroll_jit(params, {}, batch)[0]["nll"])
    after = np.asarray(learner.unroll_jit(params, {}, moved)[0]["nll"])
    for b in late:
        assert np.abs(after[b, TINY_R : lengths[b]] - before[b, TINY_R : lengths[b]]).max() > 0


@functools.cache
def two_pass_gradients():
    """Returns a jitted ``(params, batch) -> (grads, reference_grads)``: the gradient of the tiny learner's
    loss, and the reference's: the memory at every step from a pass without gradient, then the gradients
    of each chunk of ``recurrence`` steps started from that memory, summed, over the real steps."""
    learner = tiny_learner()
    model = learner.model

    def both(params, batch):
        mask = batch["mask"].astype(jnp.float32)
        obs = lambda t: {"image": batch["image"][:, t], "mission": batch["mission"]}  # noqa: E731
        memories, memory = [], model.initial_memory(TINY_B)
        for t in range(TINY_T):  # the no-gradient pass
            memories.append(jax.lax.stop_gradient(memory))
            memory = model.apply({"params": params}, obs(t), memory)[2]

        def chunk_loss(p, start):
            total, memory = 0.0, memories[start]
            for t in range(start, start + TINY_R):
                log_probs, _, memory = model.apply({"params": p}, obs(t), memory)
                nll = -jnp.take_along_axis(log_probs, batch["action"][:, t, None].astype(jnp.int32), axis=1)[:, 0]
                entropy = -jnp.sum(jnp.exp(log_probs) * log_probs, axis=-1)
                total = total + jnp.sum((nll - 0.01 * entropy) * mask[:, t])
            return total / jnp.sum(mask)

        chunks = [jax.grad(chunk_loss)(params, start) for start in range(0, TINY_T, TINY_R)]
        reference = jax.tree.map(lambda *g: sum(g), *chunks)
        return jax.grad(lambda p: learner.loss(p, {}, batch)[0])(params), reference

    return jax.jit(both)


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**16), lengths=LENGTHS)
def test_chunked_gradient_equals_the_reference_two_pass_gradient(seed, lengths):
    """The reference (``babyai/imitation.py``) first computes the memory at every step without gradient, then
    backpropagates through each chunk of ``recurrence`` steps from that memory, one optimiser step per batch:
    the sum of those gradients is the gradient of one update."""
    params = tiny_learner().init_jit(jax.random.key(seed)).params
    grads, expected = two_pass_gradients()(params, tiny_batch(seed, lengths))
    jax.tree.map(functools.partial(np.testing.assert_allclose, rtol=1e-5, atol=1e-6), grads, expected)


@settings(max_examples=5, deadline=None)
@given(seed=st.integers(0, 2**16), lengths=LENGTHS)
def test_padding_never_reaches_the_loss_or_batchnorm(seed, lengths):
    """Padding steps are masked from the loss, and BatchNorm (batch statistics and running averages) only
    sees real observations: an update ignores what the padding holds."""
    learner = tiny_learner(batch_norm=True)
    assert learner.has_batch_stats
    batch = tiny_batch(seed, lengths)
    state = learner.init_jit(jax.random.key(0))
    assert_trees_equal(learner.update_jit(state, batch), learner.update_jit(state, scramble_padding(batch, seed)))


def test_tiny_learner_fits_and_is_deterministic():
    learner = tiny_learner(batch_norm=True)
    batch = tiny_batch(0, [6, 3, 5])
    runs = []
    for seed in (1, 1, 2):
        state, metrics = learner.init_jit(jax.random.key(seed)), []
        for _ in range(40):
            state, m = learner.update_jit(state, batch)
            metrics.append(jax.device_get(m))
        runs.append((state, metrics))
    assert_trees_equal(runs[0], runs[1])
    apart = jax.tree.map(lambda a, b: float(np.max(np.abs(a - b))), runs[0][0].params, runs[2][0].params)
    assert min(jax.tree.leaves(apart)) > 0  # another key: every parameter ends elsewhere
    state, metrics = runs[0]
    assert metrics[-1]["loss"] < 0.3 * metrics[0]["loss"] and metrics[-1]["accuracy"] >= 0.85
    assert all(np.isfinite(m["grad_norm"]) for m in metrics) and metrics[0]["frames"] == 14
    assert int(state.step) == 40 and state.batch_stats  # running averages kept


def test_vmapped_seeds_match_separate_runs():
    """``init`` and ``update`` vmap over seeds (independent BatchNorm statistics per seed)."""
    learner = tiny_learner(batch_norm=True)
    keys = jax.random.split(jax.random.key(5), 3)
    batches = [tiny_batch(i, [i + 1, TINY_T, 2]) for i in range(3)]
    singles = [learner.init_jit(key) for key in keys]
    stack = lambda *x: np.stack(x)  # noqa: E731
    states = jax.jit(jax.vmap(learner.init))(keys)
    assert_trees_match(states, jax.tree.map(stack, *singles), rtol=1e-6, atol=0.0)  # vmapped init: to an ulp or so
    states, metrics = jax.device_get(jax.jit(jax.vmap(learner.update))(states, jax.tree.map(stack, *batches)))
    close, lr = functools.partial(np.testing.assert_allclose, rtol=1e-5, atol=1e-6), float(learner.schedule(0))
    for i in range(3):
        single, single_metrics = jax.device_get(learner.update_jit(singles[i], batches[i]))
        mine = jax.tree.map(lambda x, i=i: x[i], (states, metrics))
        jax.tree.map(close, (single.batch_stats, single_metrics), (mine[0].batch_stats, mine[1]))
        assert_same_first_step(singles[i], single, mine[0], lr)


# == one ACModel update on synthetic demonstrations =========================================================
@pytest.fixture(scope="module")
def learner():
    return make_learner(CONFIG, UPDATES_PER_EPOCH)


def test_acmodel_update_with_batchnorm(learner):
    demos = synthetic_demos(BATCH, seed=2)
    batch = make_batch(demos.episodes, np.arange(BATCH), MAX_LEN, mission_width(demos.episodes["mission"]))
    assert batch["image"].shape == (BATCH, MAX_LEN, 7, 7, 3) and batch["mission"].shape == (BATCH, 8)
    first = learner.init_jit(jax.random.key(0))
    assert_trees_equal(first, learner.init_jit(jax.random.key(0)))
    assert not np.array_equal(flat(first.params), flat(learner.init_jit(jax.random.key(1)).params))  # keyed
    state, metrics = learner.update_jit(first, batch)
    assert_trees_equal((state, metrics), learner.update_jit(first, batch))
    assert_trees_equal((state, metrics), learner.update_jit(first, scramble_padding(batch, 0)))
    metrics = jax.device_get(metrics)
    assert metrics["frames"] == demos.num_steps and np.isfinite(metrics["grad_norm"]) and metrics["grad_norm"] > 0
    assert metrics["loss"] == pytest.approx(metrics["policy_loss"] - 0.01 * metrics["entropy"], rel=1e-5)
    assert float(metrics["lr"]) == pytest.approx(CONFIG.lr)
    moved = jax.tree.map(lambda a, b: float(np.max(np.abs(a - b))), first.batch_stats, state.batch_stats)
    assert min(jax.tree.leaves(moved)) > 0  # every BatchNorm's running averages moved (train mode)
    assert all(np.all(np.isfinite(x)) for x in jax.tree.leaves(state.params))


# == the command line end to end: jaxsoc demos -> jaxsoc train bc / il-interactive -> jaxsoc eval =============
@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """A bot dataset of 16 episodes (levels 0..15 of seed 1) written by ``jaxsoc demos``, whose compiled bot
    rollout ``bot_demos`` shares (8 worlds)."""
    out = tmp_path_factory.mktemp("demos")
    argv = ["demos", "--env", ENV_ID, "--episodes", str(NUM_DEMOS), "--num-envs", str(BOT_ENVS)]
    assert main([*argv, "--seed", str(DATA_SEED), "--out", str(out)]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["totals"]["episodes"] == NUM_DEMOS and manifest["seed"] == DATA_SEED
    return out


@pytest.fixture(scope="module")
def demos(dataset):
    return load_demos(dataset)


def sets(items) -> list[str]:
    return [arg for item in items for arg in ("--set", item)]


TRAIN_ARGS = ["--env", ENV_ID, "--preset", "tiny", "--quiet", *sets(TINY_SETTINGS)]


def run_cli(capsys, *argv: str) -> dict:
    """Runs ``jaxsoc *argv``, requires exit status 0 and returns the JSON object it printed."""
    capsys.readouterr()
    status = main(list(argv))
    out, err = capsys.readouterr()
    assert status == 0, err
    return json.loads(out[out.index("{") : out.rindex("}") + 1])


def check_run_outputs(capsys, run, records: list[dict], x: str, summary: dict, best_variables) -> dict:
    """Checks what ``jaxsoc train`` writes for an imitation run: ``metrics.csv`` (one row per record),
    ``metrics.json`` (those rows and the printed summary), ``curves.png``, and a checkpoint holding exactly
    ``best_variables`` (a ``best_variables.msgpack`` of ``train_bc``) that ``jaxsoc eval`` reads. Returns
    ``jaxsoc eval``'s summary on the validation levels."""
    with (run / "metrics.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [int(row[x]) for row in rows] == [r[x] for r in records]
    assert [float(row["val_success_rate"]) for row in rows] == [r["val_success_rate"] for r in records]
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["summary"] == summary and summary["records"] == len(records) == len(metrics["rows"])
    assert (run / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in (run / "checkpoints").iterdir() if p.is_dir()] == [str(len(records))]
    assert_trees_equal(load_policy(run)[3], flax.serialization.msgpack_restore(best_variables.read_bytes()))
    evaluation = run_cli(capsys, "eval", str(run), "--episodes", str(VAL_EPISODES), "--seed", str(CONFIG.val_seed))
    assert (evaluation["env_id"], evaluation["episodes"]) == (ENV_ID, VAL_EPISODES)
    return evaluation


def test_cli_trains_bc_end_to_end(dataset, tmp_path, capsys):
    """``jaxsoc train bc --preset tiny`` on the bot's dataset: epochs of 2 updates that lower the loss, a greedy
    validation after each, early stopping (patience 0), the run's outputs, and a checkpoint of the best epoch
    (not the last: the early stop comes after an epoch that did not improve) that ``jaxsoc eval`` reads: its
    greedy success on the validation levels is the best validation rate."""
    run = tmp_path / "bc"
    argv = ["train", "bc", "--demos", str(dataset), "--out", str(run), *TRAIN_ARGS]
    summary = run_cli(capsys, *argv, *sets(["max_epochs=8", "patience=0"]))
    written = json.loads((run / "bc_config.json").read_text())["config"]
    assert written == CONFIG.replace(max_epochs=8, patience=0).to_dict()
    history = [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]
    assert [(r["epoch"], r["updates"], r["demos_seen"]) for r in history] == [
        (k, 2 * k, 2 * k * BATCH) for k in range(1, len(history) + 1)
    ]
    assert history[-1]["loss"] < history[0]["loss"] and history[-1]["accuracy"] > history[0]["accuracy"]
    rates = [r["val_success_rate"] for r in history]
    assert all(0 <= r <= 1 and (r * VAL_EPISODES).is_integer() for r in rates)
    assert [r["best_val_success_rate"] for r in history] == list(np.maximum.accumulate(rates))
    # patience 0: every epoch but the last beat the ones before it, the last did not, and it came before max_epochs
    assert all(rates[k] > max(rates[:k]) for k in range(1, len(rates) - 1)), rates
    assert 1 < len(history) < 8 and rates[-1] <= max(rates[:-1]), rates
    evaluation = check_run_outputs(capsys, run, history, "epoch", summary, run / "best_variables.msgpack")
    assert evaluation["kind"] == "bc" and evaluation["greedy_success_rate"] == max(rates)


def test_cli_trains_il_interactive_end_to_end(dataset, tmp_path, capsys):
    """``jaxsoc train il-interactive --preset tiny``, the loop's settings by ``--set`` too: round 0 trains on the
    first 8 demonstrations, its agent fails new missions, the bot's demonstrations of 2 of them join the set,
    round 1 trains on 10; the run's outputs; ``jaxsoc eval`` reads the last round's best agent."""
    run = tmp_path / "il"
    loop = ["start_demos=8", "growth=1.25", "max_rounds=2", f"mission_seed={MISSION_SEED}", f"bot_envs={BOT_ENVS}"]
    argv = ["train", "il-interactive", "--demos", str(dataset), "--out", str(run), *TRAIN_ARGS]
    summary = run_cli(capsys, *argv, *sets([*loop, f"probe_episodes={VAL_EPISODES}", "max_epochs=3"]))
    config = json.loads((run / "imitation_config.json").read_text())
    assert (config["start_demos"], config["growth"], config["max_rounds"]) == (8, 1.25, 2)
    assert (config["mission_seed"], config["probe_episodes"], config["bot_envs"]) == (MISSION_SEED, VAL_EPISODES, 8)
    assert config["bc"] == CONFIG.replace(max_epochs=3).to_dict()
    first, second = [json.loads(line) for line in (run / "rounds.jsonl").read_text().splitlines()]
    assert (first["demos"], first["target_demos"], first["new_demos"], second["demos"]) == (8, 10, 2, 10)
    assert first["missions_failed"] == len(first["added_seeds"]) + first["bot_failures"] >= 2
    for r, (record, size) in enumerate([(first, 8), (second, 10)]):
        derived = json.loads((run / f"round-{r:02d}" / "bc_config.json").read_text())["derived"]
        history = [json.loads(line) for line in (run / f"round-{r:02d}" / "history.jsonl").read_text().splitlines()]
        assert (derived["num_demos"], derived["max_len"], len(history)) == (size, MAX_LEN, 3)
        assert record["val_success_rate"] == max(h["val_success_rate"] for h in history)
    best = run / "round-01" / "best_variables.msgpack"
    evaluation = check_run_outputs(capsys, run, [first, second], "round", summary, best)
    assert evaluation["kind"] == "il-interactive" and evaluation["greedy_success_rate"] == second["val_success_rate"]


def test_cli_routes_and_checks_imitation_settings(tmp_path, capsys):
    argv = ["--env", ENV_ID, "--preset", "tiny", "--out", str(tmp_path / "run"), "--demos", str(tmp_path)]
    assert main(["train", "il-interactive", *argv, "--set", "growth=1"]) == 2
    assert "growth must be a number above 1" in capsys.readouterr().err
    assert main(["train", "il-interactive", *argv, "--set", "start_demo=8"]) == 2
    assert "BCConfig has no field 'start_demo'" in capsys.readouterr().err
    assert main(["train", "bc", *argv, "--set", "start_demos=8"]) == 2  # a loop setting, not behaviour cloning's
    assert "BCConfig has no field 'start_demos'" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


# == slow: real bot demonstrations through the Python API =====================================================
@pytest.mark.slow
def test_in_memory_bot_demos_equal_the_dataset(demos):
    again = bot_demos(ENV_ID, DATA_SEED, np.arange(NUM_DEMOS), num_envs=BOT_ENVS)
    assert_trees_equal(again.episodes, demos.episodes)
    assert_trees_equal(bot_demos(ENV_ID, DATA_SEED, [5, 3], num_envs=BOT_ENVS).episodes, demos.take([5, 3]).episodes)
    # interactive imitation without a dataset: the bot plays the first levels of demo_seed
    config = ImitationConfig(bc=CONFIG, start_demos=5, demo_seed=DATA_SEED, mission_seed=MISSION_SEED, bot_envs=8)
    base, seed = base_demos(config, None)
    assert seed == DATA_SEED and base.env_id == ENV_ID
    assert_trees_equal(base.episodes, demos.take(np.arange(5)).episodes)


@pytest.mark.slow
def test_overfits_a_tiny_bot_dataset(learner, demos):
    batch = make_batch(demos.episodes, np.arange(BATCH), MAX_LEN, mission_width(demos.episodes["mission"]))
    state, metrics = learner.init_jit(jax.random.key(0)), []
    for _ in range(25):
        state, m = learner.update_jit(state, batch)
        metrics.append(jax.device_get(m))
    losses = [float(m["loss"]) for m in metrics]
    assert metrics[-1]["accuracy"] == 1.0, [float(m["accuracy"]) for m in metrics]
    assert losses[-1] < 0.2 * losses[0] and all(np.isfinite(m["grad_norm"]) for m in metrics)


@pytest.mark.slow
def test_train_bc_is_deterministic_and_records_history(dataset, tmp_path):
    variables, history = train_bc(CONFIG, dataset, out_dir=tmp_path / "run", progress=False)
    again, history_again = train_bc(CONFIG, dataset, progress=False)
    assert_trees_equal(variables, again)
    other, _ = train_bc(CONFIG.replace(seed=1), dataset, progress=False)  # another initialisation and order
    assert not all(jax.tree.leaves(jax.tree.map(np.array_equal, variables["params"], other["params"])))
    strip = lambda h: [{k: v for k, v in r.items() if k != "wall_s"} for r in h]  # noqa: E731
    assert strip(history) == strip(history_again)
    assert set(variables) == {"params", "batch_stats"}
    assert [r["epoch"] for r in history] == list(range(1, len(history) + 1)) and len(history) <= CONFIG.max_epochs
    record = history[0]
    assert record["updates"] == UPDATES_PER_EPOCH and record["demos_seen"] == UPDATES_PER_EPOCH * BATCH
    assert 0 < record["frames"] <= UPDATES_PER_EPOCH * BATCH * MAX_LEN
    for key in ("loss", "accuracy", "entropy", "lr", "val_success_rate", "val_mean_return", "wall_s"):
        assert np.isfinite(record[key]), key
    assert [r["best_val_success_rate"] for r in history] == list(
        np.maximum.accumulate([r["val_success_rate"] for r in history])
    )
    run = tmp_path / "run"
    assert [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()] == history
    derived = json.loads((run / "bc_config.json").read_text())["derived"]
    assert (derived["batch_size"], derived["max_len"], derived["mission_width"]) == (BATCH, MAX_LEN, 8)
    stored = flax.serialization.msgpack_restore((run / "best_variables.msgpack").read_bytes())
    assert_trees_equal(stored, variables)


@pytest.mark.slow
def test_callback_stops_and_num_demos_limits(dataset):
    calls = []

    def stop_at_once(record, variables):
        calls.append((record["epoch"], set(variables)))
        return True

    _, history = train_bc(CONFIG, dataset, num_demos=BATCH, progress=False, callback=stop_at_once)
    assert len(history) == 1 and calls == [(1, {"params", "batch_stats"})]


@pytest.mark.slow
def test_interactive_imitation_grows_with_failed_missions(dataset, demos):
    config = ImitationConfig(
        bc=CONFIG.replace(max_epochs=1),
        start_demos=BATCH,
        growth=1.25,
        max_rounds=2,
        mission_seed=MISSION_SEED,
        probe_episodes=VAL_EPISODES,
        bot_envs=BOT_ENVS,
    )
    agents = []
    result = interactive_imitation(config, dataset, progress=False, callback=lambda r, v: agents.append(v))
    first, second = result.rounds
    assert (first["demos"], first["target_demos"], first["new_demos"], second["demos"]) == (8, 10, 2, 10)
    assert "new_demos" not in second and result.solved_at is None  # max_rounds reached, no growth after
    assert result.demos.num_episodes == 10
    assert_trees_equal(result.demos.take(np.arange(BATCH)).episodes, demos.take(np.arange(BATCH)).episodes)

    # the added demonstrations are the bot's on the first missions the round-0 agent failed, in level order
    added = first["added_seeds"]
    assert added == sorted(added) and first["missions_probed"] == added[-1] + 1
    levels = np.arange(first["missions_probed"])
    keys = jax.vmap(jax.random.fold_in, in_axes=(None, 0))(jax.random.key(MISSION_SEED), levels)
    env, env_params = jaxsoc.make(ENV_ID)
    model = ACModel(CONFIG.model_config)
    # step_cap as evaluate passes it: validation's compiled episode loop
    success = np.asarray(
        play(env, env_params, model, agents[0], keys, jax.random.key(0), greedy=True, step_cap=100_000).success
    )
    assert not success[added].any()
    assert first["missions_failed"] == int((~success).sum()) == len(added) + first["bot_failures"]
    expected = bot_demos(ENV_ID, MISSION_SEED, added, num_envs=BOT_ENVS)
    assert_trees_equal(result.demos.take(np.arange(BATCH, 10)).episodes, expected.episodes)


@pytest.mark.slow
def test_imitation_refuses_missions_from_the_dataset_levels(dataset):
    config = ImitationConfig(bc=CONFIG, start_demos=BATCH, mission_seed=DATA_SEED)
    with pytest.raises(ValueError, match="levels of seed 1, the mission_seed"):
        interactive_imitation(config, dataset, progress=False)


@pytest.mark.slow
def test_acmodel_seeds_vmap(learner, demos):
    """Two seeds in one vmapped update match two separate updates: metrics and BatchNorm statistics closely, the
    gradients and the parameters' steps as ``assert_same_first_step`` requires."""
    batch = make_batch(demos.episodes, np.arange(BATCH), MAX_LEN, 8)
    keys = jax.random.split(jax.random.key(5), 2)
    starts = jax.vmap(learner.init)(keys)
    states, metrics = jax.jit(jax.vmap(learner.update, in_axes=(0, None)))(starts, batch)
    starts, states, metrics = jax.device_get((starts, states, metrics))
    close = functools.partial(np.testing.assert_allclose, rtol=1e-4, atol=1e-5)
    # grad_norm, the gradients' norm, is computed by the two programs in other float32 orders through BatchNorm and
    # 3 chunks of BPTT: assert_same_first_step holds the gradients to 1e-3 of the largest, and grad_norm is held to the
    # same 1e-3, relative. Its measured spread, vmapped against separate: 2e-7 to 9.9e-5 relative over 10 updates
    # (seeds 0-3 and 5, two each; 2-core host, JAX_DISABLE_MOST_OPTIMIZATIONS=1), 1.2e-4 in a slow-tier run, over the
    # 1e-4 it had; the other metrics differ by under 3e-7 and keep 1e-4.
    norm_close = functools.partial(np.testing.assert_allclose, rtol=1e-3)
    for i in range(2):
        mine = lambda tree, i=i: jax.tree.map(lambda x: x[i], tree)  # noqa: E731
        start = mine(starts)  # the separate update starts where the vmapped one did (vmapped init: within 1 ulp)
        jax.tree.map(functools.partial(np.testing.assert_allclose, rtol=1e-6), learner.init_jit(keys[i]), start)
        single, single_metrics = jax.device_get(learner.update_jit(start, batch))
        vmapped_metrics = mine(metrics)
        norm_close(single_metrics.pop("grad_norm"), vmapped_metrics.pop("grad_norm"))
        jax.tree.map(close, single_metrics, vmapped_metrics)
        jax.tree.map(close, single.batch_stats, mine(states.batch_stats))
        assert_same_first_step(start, single, mine(states), CONFIG.lr)
    apart = jax.tree.map(lambda x: float(np.max(np.abs(x[0] - x[1]))), states.params)
    assert max(jax.tree.leaves(apart)) > 0.1


@pytest.mark.slow
def test_models_without_batchnorm_train(dataset):
    config = CONFIG.replace(model=dict(CONFIG.model, norm="layer"), max_epochs=1)
    variables, history = train_bc(config, dataset, progress=False)
    assert set(variables) == {"params"} and len(history) == 1 and np.isfinite(history[0]["loss"])
