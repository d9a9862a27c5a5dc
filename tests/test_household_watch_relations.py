"""The goal inference that reads relations: the relational token features, frames chosen by events,
the observation after the last action, decoding by the goal grammar, and a learning signal on a tiny set.

Hand-made observations keep the token tests exact; the learning test is toy-sized (d=16, 4 synthetic
demonstrations of ``test_household_watch``) and takes seconds.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_household_watch import LENGTHS, STEPS, make_demos

from jaxsoc.envs.household import classes as C
from jaxsoc.envs.household import predicates as PR
from jaxsoc.envs.household import tasks as T
from jaxsoc.envs.household import world as W
from jaxsoc.envs.household.agents import demos as D
from jaxsoc.learners.household import watch as WA
from jaxsoc.learners.household import watch_run as WR
from jaxsoc.learners.networks import household as E

TABLE, SHELF, PLATE, CUPCAKE, APPLE = (
    C.CLASS[n] for n in ("kitchentable", "kitchencounter", "plate", "cupcake", "apple")
)


def hand_made_observation() -> dict:
    """One observation: a kitchen table (node 8), a plate ON it (40), a cupcake in the observer's right hand
    (41), an apple the other character holds (42) and a plate on the table out of view (43)."""
    n = W.NUM_NODES
    obs = {
        "class": np.zeros(n, np.int16),
        "states": np.zeros(n, np.uint8),
        "position": np.zeros((n, 2), np.float32),
        "visible": np.zeros(n, bool),
        "parent": np.full(n, -1, np.int16),
        "parent_relation": np.zeros(n, np.int8),
        "relation": np.zeros(n, np.int8),
        "agent_position": np.array([[0.0, 0.0], [1.0, 1.0]], np.float32),
        "agent_room": np.zeros(2, np.int8),
        "agent_visible": np.ones(2, bool),
    }
    for node, cls, parent, rel in [(8, TABLE, -1, C.IN_ROOM), (40, PLATE, 8, C.ON_TOP), (41, CUPCAKE, -1, C.HELD)]:
        obs["class"][node], obs["parent"][node], obs["parent_relation"][node] = cls, parent, rel
        obs["visible"][node] = True
    obs["relation"][41] = C.REL_HOLDS_RH
    obs["class"][42], obs["parent_relation"][42], obs["visible"][42] = APPLE, C.HELD, True
    obs["class"][43], obs["parent"][43] = PLATE, 8  # not visible: must read as nothing
    return {k: jnp.asarray(v) for k, v in obs.items()}


def test_node_tokens_carry_their_parents_class_and_characters_what_they_hold():
    obs = hand_made_observation()
    feats = E.relational_features(obs)
    parent, held = np.asarray(feats["parent_class"]), np.asarray(feats["held"])
    assert parent.shape == (E.NUM_TOKENS,) and held.shape == (E.NUM_TOKENS, E.NUM_TOKEN_CLASSES)
    assert parent[40] == TABLE  # the plate is on a kitchen table
    assert parent[8] == parent[41] == parent[42] == parent[43] == E.NO_PARENT_CLASS
    assert (parent[W.NUM_NODES :] == E.NO_PARENT_CLASS).all()
    observer, other = held[W.NUM_NODES], held[W.NUM_NODES + 1]
    assert observer[CUPCAKE] == 1 and observer.sum() == 1  # its right hand
    assert other[APPLE] == 1 and other.sum() == 1  # held, and not by the observer
    assert not held[: W.NUM_NODES].any()
    # leading axes are kept
    batched = E.relational_features(jax.tree_util.tree_map(lambda x: jnp.stack([x, x, x]), obs))
    assert batched["parent_class"].shape == (3, E.NUM_TOKENS)


def test_the_relational_encoder_tells_on_the_table_from_on_a_counter():
    obs = hand_made_observation()
    shelf = {**obs, "class": obs["class"].at[8].set(SHELF)}  # the same places; the plate's parent is a counter
    no_parent = {**obs, "parent": obs["parent"].at[40].set(-1)}  # same class, relation and coordinates
    for relational in (True, False):
        feats = {}
        for name, o in [("table", obs), ("shelf", shelf), ("none", no_parent)]:
            feats[name] = E.tokens(o) | (E.relational_features(o) if relational else {})
        enc = E.NodeEncoder(16, relational)
        params = enc.init(jax.random.key(0), feats["table"])
        plate = {name: np.asarray(enc.apply(params, f))[40] for name, f in feats.items()}
        # the plate's own token (before attention) reads its parent's class only when relational
        assert (not np.allclose(plate["table"], plate["shelf"], atol=1e-6)) == relational
        assert (not np.allclose(plate["table"], plate["none"], atol=1e-6)) == relational
    enc = E.StateEncoder(16, 2, relational=True)
    params = enc.init(jax.random.key(0), obs)
    assert not np.allclose(enc.apply(params, obs)[1], enc.apply(params, no_parent)[1], atol=1e-6)


def test_event_frames_keep_relation_changes_and_the_last_observation():
    steps, n = 12, W.NUM_NODES
    parent = np.full((2, steps, n), -1, np.int16)
    parent[0, 5:, 40] = 8  # demonstration 0: a put at step 5, another at 9
    parent[0, 9:, 41] = 8
    parent[1, 2:, 40] = 8  # demonstration 1 (4 steps): a put at step 2
    obs = {
        "parent": jnp.asarray(parent),
        "parent_relation": jnp.zeros((2, steps, n), jnp.int8),
        "states": jnp.zeros((2, steps, n), jnp.uint8),
        "relation": jnp.zeros((2, steps, n), jnp.int8),
        "visible": jnp.ones((2, steps, n), bool),
        "t": jnp.broadcast_to(jnp.arange(steps), (2, steps)),
    }
    events = np.asarray(WA.relation_events(obs))
    assert events[0].nonzero()[0].tolist() == [5, 9] and events[1].nonzero()[0].tolist() == [2]
    valid = jnp.asarray(D.valid_mask([11, 4], steps))
    kept, kept_valid = WA.event_frames(obs, valid, 4)
    t = np.asarray(kept["t"])
    assert {5, 9, 10} <= set(t[0].tolist()) and (np.diff(t[0]) > 0).all()  # events, the last; in order
    np.testing.assert_array_equal(t[1], [0, 1, 2, 3]) and np.testing.assert_array_equal(kept_valid[1], [1, 1, 1, 1])
    _, short_valid = WA.event_frames(obs, jnp.asarray(D.valid_mask([11, 2], steps)), 4)
    np.testing.assert_array_equal(short_valid[1], [True, True, False, False])
    # a change of a node out of view in either frame is no event
    hidden = {**obs, "visible": obs["visible"].at[0, 5, 40].set(False)}
    assert np.asarray(WA.relation_events(hidden))[0].nonzero()[0].tolist() == [9]


def test_the_batch_shows_the_observation_after_the_last_action():
    demos = make_demos()
    config = WA.WatchConfig(d=16)
    assert config.final_observation and config.relational and config.frames == "events"
    bank = WR.device_bank(demos)
    batch = WR.device_batch(config, bank, jnp.arange(4, dtype=jnp.int32), STEPS)
    assert batch["obs"]["class"].shape[1] == STEPS + 1
    np.testing.assert_array_equal(np.asarray(batch["valid"]).sum(1), LENGTHS + 1)
    before = D.observations(demos.tasks.states, jnp.asarray(demos.actions, jnp.int32))
    for key in ("position", "parent", "visible"):
        np.testing.assert_array_equal(batch["obs"][key][:, :STEPS], before[key])
    old = WR.device_batch(WA.WatchConfig(d=16, final_observation=False), bank, jnp.arange(4, dtype=jnp.int32), STEPS)
    assert old["obs"]["class"].shape[1] == STEPS and (np.asarray(old["valid"]).sum(1) == LENGTHS).all()


def _single_goals(activity: int) -> np.ndarray:
    """Every goal of one activity the grammar allows (int[M, 30]), by enumeration."""
    low, high, total = PR.count_ranges()
    counted = np.isin(PR.PRED_KIND, (PR.ON_KIND, PR.INSIDE_KIND))
    preds = np.flatnonzero(high[activity] > 0)
    goals = []
    for counts in itertools.product(*[range(low[activity, p], high[activity, p] + 1) for p in preds]):
        goal = np.zeros(PR.NUM_PREDICATES, int)
        goal[preds] = counts
        if total[activity, 0] <= (goal * counted).sum() <= total[activity, 1]:
            goals.append(goal)
    return np.array(goals)


def _allowed(goal: np.ndarray) -> bool:
    """Whether ``goal`` is one activity's goal or two activities' mixed goal (``tasks.sample_goal``)."""
    low, high, total = PR.count_ranges()
    counted = np.isin(PR.PRED_KIND, (PR.ON_KIND, PR.INSIDE_KIND))
    used = {a for a in range(PR.NUM_ACTIVITIES) if (goal * (high[a] > 0)).any()}
    if not used or len(used) > 2 or (goal * ~np.any(high > 0, 0)).any():
        return False
    sums = {a: int((goal * (high[a] > 0) * counted).sum()) for a in used}
    for a in used:
        part = goal * (high[a] > 0)
        if ((part < low[a]) | (part > high[a]))[high[a] > 0].any():
            return False
    if len(used) == 1:
        (a,) = used
        return total[a, 0] <= sums[a] <= total[a, 1]
    return min(sums.values()) >= 1 and T.MIXED_TOTAL[0] <= sum(sums.values()) <= T.MIXED_TOTAL[1]


def test_grammar_decoding_is_the_most_likely_allowed_goal():
    rng = np.random.default_rng(0)
    lp = np.asarray(jax.nn.log_softmax(jnp.asarray(rng.normal(size=(40, 30, 3)) * 2.0), -1), np.float64)
    singles = np.concatenate([_single_goals(a) for a in range(PR.NUM_ACTIVITIES)])
    brute = np.take_along_axis(lp[:, None], singles[None, :, :, None], -1)[..., 0].sum(-1)  # [40, M]
    decoded = WA.grammar_decode(lp, mixed=False)
    score = np.take_along_axis(lp, decoded[..., None].astype(int), -1)[..., 0].sum(-1)
    np.testing.assert_allclose(score, brute.max(1), rtol=1e-9)
    mixed = WA.grammar_decode(lp)
    assert all(_allowed(g) for g in mixed)
    mixed_score = np.take_along_axis(lp, mixed[..., None].astype(int), -1)[..., 0].sum(-1)
    assert (mixed_score >= score - 1e-9).all()


def test_grammar_decoding_recovers_sampled_goals_and_argmax_does_not_always():
    keys = jax.random.split(jax.random.key(3), 30)
    acts = [[a, -1] for a in range(PR.NUM_ACTIVITIES)] + [[0, 4], [1, 3]]
    goals = np.stack([np.asarray(T.sample_goal(k, jnp.array(acts[i % len(acts)]))) for i, k in enumerate(keys)])
    assert all(_allowed(g) for g in goals)
    # a confident model of the true goal, with the empty goal close behind everywhere
    logits = np.where(np.arange(3) == goals[..., None], 2.0, 0.0) + np.where(np.arange(3) == 0, 1.5, 0.0)
    np.testing.assert_array_equal(WA.decode(logits, "grammar"), goals)
    unsure = np.where(np.arange(3) == 0, 2.1, 0.0) + np.where(np.arange(3) == goals[..., None], 2.0, 0.0)
    assert (WA.decode(unsure, "argmax") == 0).all()  # the raw argmax predicts the empty goal
    # the grammar's most likely goal keeps the fewest predicates its totals ask for, all of them right
    grammar = WA.scores(WA.decode(unsure, "grammar"), goals)
    assert grammar["precision"] == 1.0 and grammar["recall"] > 0.3
    with pytest.raises(ValueError, match="decoding"):
        WA.decode(logits, "beam")


def test_runs_from_before_the_relational_options_load_without_them(tmp_path):
    import json

    demos = make_demos()
    root = tmp_path / "demos"
    D.save(demos, root / "train.npz")
    # the cheap actions input: what matters is that run.json without the options reads as LEGACY
    legacy = WA.WatchConfig(d=16, input="actions", batch=2, epochs=1, validation_fraction=0.25, **WA.LEGACY)
    WR.train(legacy, tmp_path / "run", root, progress=False)
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    for key in WA.LEGACY:  # as a run written before the options existed
        info["config"].pop(key)
    (tmp_path / "run" / "run.json").write_text(json.dumps(info))
    config, _ = WR.load(tmp_path / "run")
    assert config == legacy


def test_sum_pooling_keeps_how_many_nodes_of_a_kind():
    """``pooling="mean_sum"``: a frame that shows every node twice has the same mean as one that shows each once
    (the paper's pooling cannot tell them apart) and twice the sum."""
    a, b = np.array([1.0, 0.0, 2.0]), np.array([0.0, 3.0, -1.0])
    nodes = jnp.asarray([[a, b, a, b], [a, b, a, b]], jnp.float32)  # [2 frames, 4 slots, d=3]
    mask = jnp.asarray([[True, True, False, False], [True, True, True, True]])
    mean = E.masked_mean(nodes, mask, axis=1)
    np.testing.assert_allclose(WA.pool_frames(nodes, mean, mask, "mean"), [(a + b) / 2] * 2, rtol=1e-6)
    pooled = np.asarray(WA.pool_frames(nodes, mean, mask, "mean_sum"))
    assert pooled.shape == (2, 6)
    np.testing.assert_allclose(pooled[:, :3], [(a + b) / 2] * 2, rtol=1e-6)
    np.testing.assert_allclose(pooled[:, 3:], [(a + b) / WA.SUM_SCALE, 2 * (a + b) / WA.SUM_SCALE], rtol=1e-6)


def test_the_last_readout_reads_the_last_real_step_and_no_padding():
    h = jnp.arange(2 * 3 * 2, dtype=jnp.float32).reshape(2, 3, 2)  # [B=2, T=3, d=2]
    valid = jnp.asarray([[True, True, False], [True, False, False]])
    out = np.asarray(WA.read_out(h, valid, "mean_last"))
    np.testing.assert_allclose(out[0], np.concatenate([h[0, :2].mean(0), h[0, 1]]))
    np.testing.assert_allclose(out[1], np.concatenate([h[1, 0], h[1, 0]]))
    np.testing.assert_allclose(WA.read_out(h, valid, "mean"), out[:, :2])
    padded = h.at[:, 2].set(99.0)  # what lies past the real steps never counts
    np.testing.assert_allclose(WA.read_out(padded, valid, "mean_last"), out)


def test_the_count_preserving_model_runs_and_bad_options_are_refused():
    config = WA.WatchConfig(d=16, pooling="mean_sum", readout="mean_last", max_frames=4)
    batch = WA.example_batch(2, 6)
    batch["valid"] = jnp.arange(6)[None] < jnp.asarray([[6], [3]])
    params = WA.init_params(config, jax.random.key(0))
    logits = jax.jit(WA.GoalInference(config).apply)({"params": params}, batch)
    assert logits.shape == (2, PR.NUM_PREDICATES, WA.NUM_COUNTS) and np.isfinite(np.asarray(logits)).all()
    with pytest.raises(ValueError, match="pooling"):
        WA.WatchConfig(pooling="max")
    with pytest.raises(ValueError, match="readout"):
        WA.WatchConfig(readout="last")
    with pytest.raises(ValueError, match="code_parity"):
        WA.WatchConfig(code_parity=True, final_observation=False, pooling="mean_sum")


def test_change_marks_tell_what_the_demonstration_changed():
    """``change_marks``: the plate (node 40) starts ON the table, is picked up at step 1 and put on a counter
    at step 2; the table's light turns on at step 2; the cupcake (41) never moves; a second plate (43) is first
    seen at step 1, already on the table, and never moves: it is not marked (the apartment began that way)."""
    frames = []
    for step in range(3):
        obs = {k: np.asarray(v).copy() for k, v in hand_made_observation().items()}
        obs["visible"][43] = step >= 1
        obs["parent_relation"][43] = C.ON_TOP
        if step >= 1:
            obs["parent"][40], obs["parent_relation"][40] = -1, C.HELD
        if step == 2:
            obs["parent"][40], obs["parent_relation"][40] = 9, C.ON_TOP
            obs["states"][8] = C.ON
        frames.append(obs)
    seq = {k: jnp.asarray(np.stack([f[k] for f in frames]))[None] for k in frames[0]}  # [1, 3, ...]
    marks = np.asarray(WA.change_marks(seq, jnp.ones((1, 3), bool)))[0]
    assert marks.shape == (3, W.NUM_NODES, E.NUM_CHANGE_FEATURES)
    np.testing.assert_array_equal(marks[:, 40, 0], [0, 1, 1])  # picked up, then put elsewhere
    np.testing.assert_array_equal(marks[:, 8, 1], [0, 0, 1])  # switched on
    assert not marks[:, [41, 43, 42]].any() and not marks[:, 40, 1].any() and not marks[:, 8, 0].any()
    # a step past the demonstration's end neither counts as a first sighting nor gets marks
    cut = np.asarray(WA.change_marks(seq, jnp.asarray([[True, True, False]])))[0]
    np.testing.assert_array_equal(cut[:2], marks[:2])
    assert not cut[2].any()


def test_the_change_marks_reach_the_model_and_are_refused_where_meaningless():
    """Two demonstrations whose last frames are the same (node 40 on node 8): in the first, node 40 got there at
    the last step; in the second, it was there all along. The model with every new option (the remembered frame,
    change marks, the changed tokens' sum, counting) tells them apart."""
    config = WA.WatchConfig(d=16, input="memory", changes=True, pooling="mean_changed", counting=True)
    steps = 3
    batch = WA.example_batch(1, steps)
    obs = dict(batch["obs"])
    obs["visible"] = obs["visible"].at[:, :, 40].set(True)
    moved = {**obs, "parent": obs["parent"].at[:, 2, 40].set(8)}
    still = {**obs, "parent": obs["parent"].at[:, :, 40].set(8)}
    pair = jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a, b]), moved, still)
    batch = {**WA.example_batch(2, steps), "obs": pair, "valid": jnp.ones((2, steps), bool)}
    logits = np.asarray(
        jax.jit(WA.GoalInference(config).apply)({"params": WA.init_params(config, jax.random.key(0))}, batch)
    )
    assert logits.shape == (2, PR.NUM_PREDICATES, WA.NUM_COUNTS) and np.abs(logits[0] - logits[1]).max() > 1e-6
    with pytest.raises(ValueError, match="changes"):
        WA.WatchConfig(input="actions", changes=True)
    with pytest.raises(ValueError, match="changed"):
        E.StateEncoder(16, changes=True).init(jax.random.key(0), obs)


def test_the_changed_pooling_counts_what_the_demonstration_changed():
    a, b = np.array([1.0, 0.0, 2.0]), np.array([0.0, 3.0, -1.0])
    nodes = jnp.asarray([[a, b, a]], jnp.float32)  # [1 frame, 3 slots, d=3]
    mask = jnp.asarray([[True, True, False]])
    changed = jnp.asarray([[True, False, True]])  # the third slot is not real: never counted
    mean = E.masked_mean(nodes, mask, axis=1)
    pooled = np.asarray(WA.pool_frames(nodes, mean, mask, "mean_changed", changed))
    np.testing.assert_allclose(pooled[0], np.concatenate([(a + b) / 2, a / WA.CHANGED_SCALE]), rtol=1e-6)
    with pytest.raises(ValueError, match="change marks"):
        WA.pool_frames(nodes, mean, mask, "mean_changed")
    with pytest.raises(ValueError, match="changes=True"):
        WA.WatchConfig(pooling="mean_changed")


def test_the_cosine_schedule_decays_the_step_size_to_zero():
    constant, cosine = WA.WatchConfig(), WA.WatchConfig(lr_schedule="cosine")
    assert [constant.lr_factor(s, 10) for s in (0, 5, 10)] == [1.0, 1.0, 1.0]
    np.testing.assert_allclose([cosine.lr_factor(s, 10) for s in (0, 5, 10, 12)], [1.0, 0.5, 0.0, 0.0], atol=1e-12)
    assert all(a > b for a, b in itertools.pairwise(cosine.lr_factor(s, 10) for s in range(11)))
    with pytest.raises(ValueError, match="lr_schedule"):
        WA.WatchConfig(lr_schedule="linear")


def test_the_remembered_frame_holds_every_node_as_last_seen():
    """``input="memory"``: the plate (40) is seen at step 0 only, on the table; the cupcake (41) at every step,
    moving from the observer's hand to the table at step 2; step 3 is padding (the plate shown elsewhere there
    must not count); the apple (42) is never seen. The characters are those of the last real step."""
    frames = []
    for step in range(4):
        obs = {k: np.asarray(v).copy() for k, v in hand_made_observation().items()}
        obs["visible"][[40, 42]] = step in (0, 3), False
        obs["position"][41] = step
        obs["agent_position"][0] = (step, 0.0)
        if step >= 2:
            obs["parent"][41], obs["parent_relation"][41], obs["relation"][41] = 8, C.ON_TOP, C.REL_NONE
        if step == 3:
            obs["parent"][40] = 9
        frames.append(obs)
    seq = {k: jnp.asarray(np.stack([f[k] for f in frames]))[None] for k in frames[0]}
    memory = WA.remembered_observation(seq, jnp.asarray([[True, True, True, False]]))
    memory = {k: np.asarray(v)[0, 0] for k, v in memory.items()}
    assert memory["visible"][[8, 40, 41]].all() and not memory["visible"][[42, 43]].any()
    assert memory["parent"][40] == 8 and memory["parent"][41] == 8 and memory["relation"][41] == C.REL_NONE
    assert memory["position"][41][0] == 2 and memory["agent_position"][0][0] == 2


def test_counting_adds_up_the_changed_tokens_that_match_a_predicate():
    """``CountLogits``: a token direction that matches predicate 3 only; the most likely count of predicate 3 is
    the number of *counted* tokens along it (0, 1, 2), whatever else the frame holds; other predicates stay 0."""
    d = 4
    model = WA.CountLogits()
    params = model.init(jax.random.key(0), jnp.zeros((1, 5, d)), jnp.ones((1, 5), bool))["params"]
    kernel = np.full((d, PR.NUM_PREDICATES), 0.0, np.float32)
    kernel[0, 3] = 40.0
    params = {**params, "match": {"kernel": jnp.asarray(kernel), "bias": jnp.full(PR.NUM_PREDICATES, -20.0)}}
    on, off = np.eye(d, dtype=np.float32)[0], np.eye(d, dtype=np.float32)[1]
    tokens = jnp.asarray([[on, on, off, on, off]] * 3)  # [3, 5, d]
    counted = jnp.asarray(
        [[False, False, True, False, True], [True, False, True, False, False], [True, True, True, False, True]]
    )
    counts = np.asarray(jnp.argmax(model.apply({"params": params}, tokens, counted), -1))
    np.testing.assert_array_equal(counts[:, 3], [0, 1, 2])
    assert not np.delete(counts, 3, axis=1).any()
    with pytest.raises(ValueError, match="counting"):
        WA.WatchConfig(changes=True, counting=True)  # the graph input has no single frame to count
