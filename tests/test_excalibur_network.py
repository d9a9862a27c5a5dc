"""The EXCALIBUR network (``networks.excalibur``) on synthetic observations built from the observation spec: shapes,
normalisation and action masking per phase, invariance to the order of object slots and question rows, the answer
head reading the current question, the GRU memory, jit, the registry round trip and ``check``'s errors."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsoc.core import spaces
from jaxsoc.envs.excalibur import catalogue as K
from jaxsoc.envs.excalibur import state as S
from jaxsoc.learners.networks import registry
from jaxsoc.learners.networks.excalibur import NUM_MOVES, ExcaliburConfig, ExcaliburPolicy

B, N, Q, V = 3, 8, 4, 7
A = S.NUM_ACTIONS


def make_obs(seed: int = 0, phases=(0, 1, 3)) -> dict[str, np.ndarray]:
    """Returns a batch of ``B`` synthetic EXCALIBUR observations (numpy), one phase per world."""
    rng = np.random.default_rng(seed)
    image = np.stack(
        [
            rng.integers(0, 3, (B, V, V)),
            rng.integers(0, K.NUM_TYPES + 1, (B, V, V)),
            rng.integers(0, K.NUM_COLORS + 1, (B, V, V)),
            rng.integers(0, 4, (B, V, V)),
        ],
        -1,
    ).astype(np.uint8)
    objects = np.zeros((B, N, 13), np.int16)
    sizes = np.zeros((B, N, 4), np.float32)
    held = np.zeros(B, np.int32)
    for b in range(B):
        visible = rng.permutation(N)[: N - 2 - b]  # 6, 5, 4 visible slots
        for i in visible:
            objects[b, i, :7] = (
                1,
                1 + rng.integers(K.NUM_TYPES),
                1 + rng.integers(K.NUM_COLORS),
                rng.integers(K.NUM_COLORS + 1),
                1 + rng.integers(K.NUM_MATERIALS),
                rng.integers(K.NUM_MATERIALS + 1),
                0,
            )
            objects[b, i, 7:9] = rng.integers(-V, V + 1, 2)
            objects[b, i, 11] = rng.integers(2)
            sizes[b, i, :3] = np.sort(rng.uniform(0.01, 3.0, 3))[::-1]
        parent, child = visible[0], visible[1]  # one item on / in another visible slot
        objects[b, child, 9], objects[b, child, 10] = 1 + parent, 1 + rng.integers(2)
        if b < 2:  # worlds 0 and 1 hold an object
            objects[b, visible[2], 12] = 1
            sizes[b, visible[2], 3] = rng.uniform(0.0, 110.0)
            held[b] = 1 + visible[2]
    phase = np.asarray(phases, np.int32)
    questions = np.zeros((B, Q, 11), np.int16)
    question = np.zeros((B, 11), np.int16)
    for b in range(B):
        if phase[b] == 0:
            continue
        rows = Q - b % 2  # the last row is padding in world 1
        questions[b, :rows] = random_questions(rng, rows)
        question[b] = questions[b, rng.integers(rows)]
    action_mask = np.zeros((B, A), bool)
    for b in range(B):
        if phase[b] in (0, 2):
            action_mask[b, :NUM_MOVES] = True
        else:
            action_mask[b, NUM_MOVES:] = True
    return {
        "image": image,
        "direction": rng.integers(0, 4, B).astype(np.int32),
        "objects": objects,
        "object_sizes": sizes,
        "held": held,
        "phase": phase,
        "phase_step": rng.integers(0, 2500, B).astype(np.int32),
        "last_action": rng.integers(0, A + 1, B).astype(np.int32),
        "questions": questions,
        "question": question,
        "action_mask": action_mask,
    }


def random_questions(rng, rows: int) -> np.ndarray:
    """Returns ``int16[rows, 11]`` non-padding question rows."""
    out = np.zeros((rows, 11), np.int16)
    out[:, S.FAMILY] = rng.integers(1, S.NUM_FAMILIES + 1, rows)
    out[:, S.REL] = rng.integers(0, K.NUM_RELATIONS + 1, rows)
    for c, m, s in ((S.C1, S.M1, S.S1), (S.C2, S.M2, S.S2), (S.C3, S.M3, S.S3)):
        out[:, c] = rng.integers(0, K.NUM_COLORS + 1, rows)
        out[:, m] = rng.integers(0, K.NUM_MATERIALS + 1, rows)
        out[:, s] = rng.integers(0, K.NUM_TYPES + 1, rows)
    return out


def observation_space(n: int = N, q: int = Q, actions: int = A) -> spaces.Dict:
    """Returns an EXCALIBUR-shaped observation space."""
    box = lambda shape, high, dtype=jnp.int32: spaces.Box(0, high, shape, dtype)  # noqa: E731
    return spaces.Dict(
        {
            "image": box((V, V, 4), K.NUM_TYPES, jnp.uint8),
            "direction": spaces.Discrete(4),
            "objects": box((n, 13), 2 * V, jnp.int16),
            "object_sizes": box((n, 4), 110.0, jnp.float32),
            "held": spaces.Discrete(n + 1),
            "phase": spaces.Discrete(4),
            "phase_step": box((), 2500),
            "last_action": spaces.Discrete(actions + 1),
            "questions": box((q, 11), K.NUM_TYPES, jnp.int16),
            "question": box((11,), K.NUM_TYPES, jnp.int16),
            "action_mask": box((actions,), 1, jnp.bool_),
        }
    )


@pytest.fixture(scope="module")
def model():
    return registry.build("excalibur", registry.network_config("excalibur", "tiny", A), observation_space())


@pytest.fixture(scope="module")
def variables(model):
    return jax.jit(model.init)(jax.random.key(0), make_obs(), model.initial_memory(B))


@pytest.fixture(scope="module")
def apply(model, variables):
    """Returns ``(obs, memory=None) -> (log_probs, value, memory)`` as numpy, jitted."""
    fn = jax.jit(model.apply)

    def run(obs, memory=None):
        memory = model.initial_memory(B) if memory is None else memory
        return jax.tree_util.tree_map(np.asarray, fn(variables, obs, memory))

    return run


def test_shapes_normalisation_and_masking_per_phase(apply):
    for phases in ((0, 1, 3), (2, 3, 1)):
        obs = make_obs(1, phases)
        log_probs, value, memory = apply(obs)
        assert log_probs.shape == (B, A) and value.shape == (B,) and memory["h"].shape == (B, 32)
        assert np.isfinite(value).all() and np.isfinite(memory["h"]).all()
        probs = np.exp(log_probs)
        np.testing.assert_allclose(probs.sum(-1), 1.0, rtol=1e-5)
        assert (probs[~obs["action_mask"]] == 0.0).all()  # exactly 0: an invalid action is never sampled
        assert np.isfinite(log_probs[obs["action_mask"]]).all()
        for b, phase in enumerate(phases):  # moves only in phases I and III, answers only in II and IV
            assert (probs[b, NUM_MOVES:].sum() == 0.0) == (phase in (0, 2))
    obs = make_obs(1)
    obs["action_mask"][1] = False  # a row with no valid action is left unmasked
    log_probs, _, _ = apply(obs)
    assert np.isfinite(log_probs[1]).all() and (np.exp(log_probs[1]) > 0).all()
    np.testing.assert_allclose(np.exp(log_probs[1]).sum(), 1.0, rtol=1e-5)


def test_unmasked_config_keeps_every_action(model, variables):
    unmasked = ExcaliburPolicy(dataclasses.replace(model.config, mask_actions=False))
    log_probs, _, _ = jax.jit(unmasked.apply)(variables, make_obs(), unmasked.initial_memory(B))
    assert (np.exp(np.asarray(log_probs)) > 0).all()


def test_permuting_object_slots_changes_nothing(apply):
    obs = make_obs(2)
    rng = np.random.default_rng(7)
    perm = rng.permutation(N)  # new slot j holds old slot perm[j]
    new_of_old = np.argsort(perm)
    permuted = dict(obs, objects=obs["objects"][:, perm].copy(), object_sizes=obs["object_sizes"][:, perm])
    parent = permuted["objects"][..., 9].astype(np.int64)
    permuted["objects"][..., 9] = np.where(parent > 0, 1 + new_of_old[np.maximum(parent - 1, 0)], 0)
    permuted["held"] = np.where(obs["held"] > 0, 1 + new_of_old[np.maximum(obs["held"] - 1, 0)], 0).astype(np.int32)
    assert (permuted["objects"] != obs["objects"]).any()
    (lp, value, memory), (lp2, value2, memory2) = apply(obs), apply(permuted)
    np.testing.assert_allclose(value2, value, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(memory2["h"], memory["h"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(lp2, lp, rtol=1e-5, atol=1e-4)  # the answers too: they read h, not the slots
    # the parent's and the held object's slots matter: pointing them elsewhere changes the belief
    moved = dict(obs, held=np.where(obs["held"] > 0, 1 + obs["held"] % N, 0).astype(np.int32))
    assert not np.allclose(apply(moved)[2]["h"][:2], memory["h"][:2])


def test_question_rows_are_a_set_and_padding_rows_are_ignored(apply):
    obs = make_obs(3, (1, 3, 1))
    lp, value, memory = apply(obs)
    permuted = dict(obs, questions=obs["questions"][:, ::-1].copy())
    lp2, value2, memory2 = apply(permuted)
    np.testing.assert_allclose(value2, value, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(lp2, lp, rtol=1e-5, atol=1e-4)
    # a padding row (FAMILY 0) is left out whatever else it holds
    padded = dict(obs, questions=obs["questions"].copy())
    padded["questions"][1, -1, 1:] = random_questions(np.random.default_rng(0), 1)[0, 1:]
    assert padded["questions"][1, -1, S.FAMILY] == 0
    np.testing.assert_allclose(apply(padded)[0], lp, rtol=1e-5, atol=1e-4)
    # but the questions are read: dropping one changes the belief
    fewer = dict(obs, questions=obs["questions"].copy())
    fewer["questions"][:, 0] = 0
    assert not np.allclose(apply(fewer)[2]["h"], memory["h"])


def test_the_answer_logits_read_the_current_question(apply):
    obs = make_obs(4, (1, 1, 3))
    lp, value, memory = apply(obs)
    other = dict(obs, question=obs["question"].copy())
    other["question"][:, S.FAMILY] = 1 + obs["question"][:, S.FAMILY] % S.NUM_FAMILIES
    other["question"][:, S.S1] = 1 + obs["question"][:, S.S1] % K.NUM_TYPES
    lp2, value2, memory2 = apply(other)
    assert np.abs(lp2[:, NUM_MOVES:] - lp[:, NUM_MOVES:]).max(-1).min() > 1e-6  # every world's answers change
    np.testing.assert_array_equal(value2, value)  # the belief and the critic do not read the current question
    np.testing.assert_array_equal(memory2["h"], memory["h"])
    # unmasked, the moves' logits (log-probabilities up to the normaliser) do not read the current question either
    unmasked = np.ones((B, A), bool)
    lp3, lp4 = apply(dict(obs, action_mask=unmasked))[0], apply(dict(other, action_mask=unmasked))[0]
    moves, moves2 = lp3[:, :NUM_MOVES], lp4[:, :NUM_MOVES]
    np.testing.assert_allclose(moves2 - moves2[:, :1], moves - moves[:, :1], rtol=1e-5, atol=1e-5)


def test_phase_one_questions_are_zeros(apply):
    # phase I carries no questions; the network sees the same as with all-padding rows, whatever their width Q
    obs = make_obs(5, (0, 0, 0))
    wider = dict(obs, questions=np.zeros((B, 2 * Q, 11), np.int16))
    np.testing.assert_allclose(apply(wider)[0], apply(obs)[0], rtol=1e-5, atol=1e-4)  # another shape: as padded rows


def test_the_memory_carries_the_first_observation_into_the_second_step(apply):
    first, second = make_obs(6), make_obs(7)
    other_first = dict(first, image=make_obs(8)["image"], objects=make_obs(8)["objects"])
    _, _, memory = apply(first)
    _, _, other_memory = apply(other_first)
    lp, value, _ = apply(second, memory)
    lp2, value2, _ = apply(second, other_memory)
    assert np.abs(value2 - value).min() > 1e-7
    assert np.abs(lp2 - lp)[second["action_mask"]].max() > 1e-6
    np.testing.assert_array_equal(apply(second, memory)[1], value)  # deterministic


def test_jit_matches_eager(model, variables, apply):
    obs, memory = make_obs(9), {"h": jnp.asarray(np.random.default_rng(0).normal(size=(B, 32)), jnp.float32)}
    eager = model.apply(variables, obs, memory)
    jitted = apply(obs, memory)
    for a, b in zip(jax.tree_util.tree_leaves(eager), jax.tree_util.tree_leaves(jitted)):
        np.testing.assert_allclose(np.asarray(a), b, rtol=1e-5, atol=1e-5)
    # step with the (empty) context is __call__
    log_probs, _, _ = model.apply(variables, obs, model.apply(variables, obs, method="encode_context"), memory,
                                  method="step")  # fmt: skip
    np.testing.assert_allclose(np.asarray(log_probs), jitted[0], rtol=1e-5, atol=1e-5)


def test_any_number_of_slots_and_questions(model, variables):
    obs = make_obs(10)
    more = dict(
        obs,
        objects=np.concatenate([obs["objects"], np.zeros((B, 5, 13), np.int16)], 1),
        object_sizes=np.concatenate([obs["object_sizes"], np.zeros((B, 5, 4), np.float32)], 1),
        questions=np.concatenate([obs["questions"], np.zeros((B, 3, 11), np.int16)], 1),
    )
    base = model.apply(variables, obs, model.initial_memory(B))
    padded = model.apply(variables, more, model.initial_memory(B))
    np.testing.assert_allclose(np.asarray(padded[0]), np.asarray(base[0]), rtol=1e-5, atol=1e-4)


def test_registry_round_trip_and_presets(model, variables):
    described = registry.describe(model)
    assert described == {"network": "excalibur", "model_config": dataclasses.asdict(model.config)}
    rebuilt = registry.from_description(described)
    assert isinstance(rebuilt, ExcaliburPolicy) and rebuilt.config == model.config
    obs = make_obs(11)
    a = model.apply(variables, obs, model.initial_memory(B))[0]
    b = rebuilt.apply(variables, obs, rebuilt.initial_memory(B))[0]
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert registry.network_config("excalibur", "small", A) == ExcaliburConfig(embed=16, hidden=128, memory_dim=128)


def test_bad_configs_and_spaces_are_refused():
    config = registry.network_config("excalibur", "tiny", A)
    with pytest.raises(ValueError, match="num_actions"):
        registry.network_config("excalibur", "tiny", 7)
    with pytest.raises(ValueError, match="hidden must be a positive int"):
        ExcaliburConfig(hidden=0)
    babyai = spaces.Dict({"image": spaces.Box(0, 10, (7, 7, 3), jnp.uint8), "direction": spaces.Discrete(4)})
    with pytest.raises(ValueError, match=r"needs an EXCALIBUR observation.*missing \['action_mask'"):
        registry.build("excalibur", config, babyai)
    with pytest.raises(ValueError, match=r"num_actions=.* but obs\['action_mask'\] has shape \(10,\)"):
        registry.build("excalibur", config, observation_space(actions=10))
    bad = observation_space()
    with pytest.raises(ValueError, match=r"obs\['object_sizes'\] of shape \(8, 4\)"):
        registry.build(
            "excalibur",
            config,
            dataclasses.replace(bad, spaces=dict(bad.spaces, object_sizes=spaces.Box(0, 1, (9, 4)))),
        )
    with pytest.raises(ValueError, match=r"obs\['objects'\] of shape \(N, 13\)"):
        registry.build(
            "excalibur", config, dataclasses.replace(bad, spaces=dict(bad.spaces, objects=spaces.Box(0, 1, (8, 12))))
        )
    with pytest.raises(ValueError, match=r"obs\['questions'\] of shape \(Q, 11\)"):
        registry.build(
            "excalibur", config, dataclasses.replace(bad, spaces=dict(bad.spaces, questions=spaces.Box(0, 1, (4, 10))))
        )
    with pytest.raises(ValueError, match=r"obs\['image'\] of shape \(V, V, 4\)"):
        registry.build(
            "excalibur", config, dataclasses.replace(bad, spaces=dict(bad.spaces, image=spaces.Box(0, 1, (7, 7, 3))))
        )
    assert isinstance(registry.build("excalibur", config, observation_space(n=48, q=16)), ExcaliburPolicy)


def test_gradients_are_finite_with_empty_sets(model, variables):
    # no visible object and no question: the masked max's -inf must not leak into the gradients
    obs = make_obs(12, (0, 1, 2))
    obs["objects"][0], obs["object_sizes"][0], obs["held"][0] = 0, 0.0, 0

    def loss(params):
        log_probs, value, _ = model.apply({"params": params}, obs, model.initial_memory(B))
        return jnp.where(obs["action_mask"], log_probs, 0.0).sum() + value.sum()

    grads = jax.jit(jax.grad(loss))(variables["params"])
    leaves = jax.tree_util.tree_leaves(grads)
    assert all(np.isfinite(np.asarray(g)).all() for g in leaves)
    assert sum(float(np.abs(np.asarray(g)).sum()) for g in leaves) > 0
