"""The CHAIC behaviour model's data: what the helper's observations show of the constrained agent (``features``) and
recorded episodes of it beside a rule-based helper (``record``), with their labels.

- ``features(obs)``: what one helper observation (``observation.observe(state, HELPER)``) shows of the constrained
  agent and its surroundings, as ``float32[NUM_FEATURES]`` (``FEATURES`` lists the blocks): whether the partner is
  visible, its action kind, the class its pick / put is about, its status, the classes in its hands, the height of
  the visible object of that class nearest to it (and that height again when the action failed or succeeded), its
  distance, the child, the goal place and its height, the episode's time, and the classes of the visible objects
  by where they are (free, held by the helper, held by another agent, in a container, on the goal place). Only
  the observation is read.
- ``record(...)``: runs the rule-based constrained agent with the RHP (or the paper's random) helper on a split's
  episodes, vmapped and jitted, and keeps the features of every helper step with the labels (the goal's classes,
  the constraint's index in ``networks.chaic.CONSTRAINTS``).
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.chaic import agents as A
from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.envs.chaic import observation as O
from jaxsoc.envs.chaic import play as P
from jaxsoc.envs.chaic import state as S
from jaxsoc.envs.chaic import tasks as T
from jaxsoc.envs.chaic import world as W
from jaxsoc.learners.networks.chaic import CONSTRAINTS

HELPERS = ("rhp", "random")  # the rule-based helpers beside which episodes are recorded
RECORD_CHUNK = 64  # runs recorded per jitted call
#: each task's constraint: its index in ``CONSTRAINTS`` (the label of the model's constraint head)
TASK_CONSTRAINT = np.array([CONSTRAINTS.index(K.TASK_ABILITY[t]) for t in K.TASKS], np.int32)
_C = K.NUM_CLASSES
#: the feature blocks, in order: (name, width)
FEATURES = (
    ("partner_visible", 1),
    ("partner_action", len(S.ACTION_NAMES) + 1),
    ("partner_target", _C),
    ("partner_status", 3),
    ("partner_hands", _C),
    ("target_height", 1),
    ("target_found", 1),
    ("failed_height", 1),
    ("succeeded_height", 1),
    ("partner_distance", 1),
    ("child_visible", 1),
    ("goal_visible", 1),
    ("goal_height", 1),
    ("time", 1),
    *((f"where_{name}", _C) for name in O.WHERE_NAMES),
)
NUM_FEATURES = sum(width for _, width in FEATURES)


def _multi_hot(cls: jax.Array, on: jax.Array | bool = True) -> jax.Array:
    """Returns ``float32[NUM_CLASSES]``: 1 at the classes ``cls`` (any shape) where ``on``, class 0 (none) left 0."""
    on = jnp.broadcast_to(jnp.asarray(on, jnp.float32), cls.shape)
    return jnp.zeros(_C, jnp.float32).at[cls.astype(jnp.int32).ravel()].max(on.ravel()).at[0].set(0.0)


def _features(obs: dict) -> jax.Array:
    objects = obs["objects"]
    vis = objects["visible"]
    cls = objects["cls"].astype(jnp.int32)
    seen = obs["partner_visible"].astype(jnp.float32)
    action = obs["partner_action"].astype(jnp.int32)
    target = obs["partner_target"].astype(jnp.int32)
    status = obs["partner_status"].astype(jnp.int32)
    # the visible object of the class the partner's action is about that is nearest to the partner
    dist = jnp.linalg.norm(objects["rel_pos"] - obs["partner_pose"][:2], axis=-1)
    candidate = vis & (cls == target) & (target > 0) & obs["partner_visible"]
    found = candidate.any()
    height = jnp.where(found, objects["height"][jnp.argmin(jnp.where(candidate, dist, jnp.inf))], 0.0)
    where = objects["where"].astype(jnp.int32)
    by_where = [_multi_hot(cls, vis & (where == i)) for i in range(len(O.WHERE_NAMES))]
    parts = [
        seen[None],
        jax.nn.one_hot(action, len(S.ACTION_NAMES) + 1),
        jax.nn.one_hot(target, _C),
        jax.nn.one_hot(status, 3) * seen,
        _multi_hot(obs["partner_hands"]),
        height[None],
        found.astype(jnp.float32)[None],
        jnp.where(status == S.FAILED, height, 0.0)[None] * seen,
        jnp.where(status == S.SUCCEEDED, height, 0.0)[None] * seen,
        (jnp.linalg.norm(obs["partner_pose"][:2]) / W.VIEW_DIST)[None] * seen,
        obs["child_visible"].astype(jnp.float32)[None],
        obs["goal_visible"].astype(jnp.float32)[None],
        obs["goal_height"].astype(jnp.float32)[None],
        obs["time"].astype(jnp.float32)[None],
        *by_where,
    ]
    return jnp.concatenate(parts).astype(jnp.float32)


def features(obs: dict) -> jax.Array:
    """Returns ``float32[..., NUM_FEATURES]``: the BM features (``FEATURES``, module docstring) of helper
    observations (``observation.observe`` dicts, any leading batch axes). Reads nothing but ``obs``."""
    batch_axes = jnp.ndim(obs["partner_visible"])
    fn = _features
    for _ in range(batch_axes):
        fn = jax.vmap(fn)
    return fn(obs)


@functools.partial(jax.jit, static_argnames=("max_events", "max_steps"))
def _rollout(states: S.State, keys: jax.Array, timing: W.Timing, random: jax.Array, max_events: int, max_steps: int):
    """Runs ``B`` episodes of the constrained agent and the RHP helper (the random helper where ``random``: the
    role is data in the rule agents' memory, so both share this compilation; the keys are split as in
    ``play.play``, so the episodes are the same) and returns ``(features float32[B, max_steps, NUM_FEATURES],
    steps int32[B] (helper steps, possibly more than max_steps), final State)``."""

    def init(state, key):
        k_main, k_helper, k_run = jax.random.split(key, 3)
        helper = A.RuleAgent("rhp").init(k_helper, state, S.HELPER).replace(random=jnp.asarray(random, bool))
        mems = jax.tree_util.tree_map(lambda a, b: jnp.stack([a, b]), A.RuleAgent("main").init(k_main, state), helper)
        return state, mems, k_run, jnp.zeros((max_steps, NUM_FEATURES), jnp.float32), jnp.int32(0)

    def event(state, mems, key, buffer, count):
        key, k_m, k_h, k_s = jax.random.split(key, 4)
        done = P.finished(state)
        ready = W.ready(state) & ~done
        x = features(O.observe(state, S.HELPER, False, timing.view_dist))
        buffer = buffer.at[jnp.where(ready[S.HELPER], count, max_steps)].set(x, mode="drop")
        count = count + ready[S.HELPER].astype(jnp.int32)
        acts, news = jax.vmap(A.rule_act, in_axes=(0, 0, None, None))(jnp.stack([k_m, k_h]), mems, state, timing)
        pick = lambda new, old: jnp.where(ready[:2].reshape((2,) + (1,) * (new.ndim - 1)), new, old)  # noqa: E731
        mems = jax.tree_util.tree_map(pick, news, mems)
        stepped, _ = W.step_event(k_s, state, acts.astype(jnp.int32), timing)
        return W.jnp_select(done, state, stepped), mems, key, buffer, count

    def body(carry, _):
        step = lambda c: jax.vmap(event)(*c)  # noqa: E731
        return jax.lax.cond(jax.vmap(P.finished)(carry[0]).all(), lambda c: c, step, carry), None

    carry, _ = jax.lax.scan(body, jax.vmap(init)(states, keys), None, length=max_events)
    final, _, _, buffer, count = carry
    return buffer, count, final


def record(
    tasks: list[str] | tuple[str, ...],
    split: str = "train",
    episodes: int | None = None,
    seeds: int = 1,
    helper: str = "rhp",
    max_events: int = P.DEFAULT_MAX_EVENTS,
    max_steps: int | None = None,
    seed: int = 0,
    chunk: int | None = None,
    timing: W.Timing | None = None,
) -> dict:
    """Records the constrained agent (``agents.RuleAgent("main")``) beside the rule-based ``helper`` (``HELPERS``)
    on the first ``episodes`` episodes (default all) of ``split`` of each task, ``seeds`` runs each (keys from
    ``seed`` and the task), ``chunk`` runs per jitted call (default ``min(RECORD_CHUNK, runs)``; the last call
    padded to it: one compilation per chunk size), and returns, with ``N = len(tasks) * episodes * seeds`` runs
    (task-major, then episode, then seed) and ``L = max_steps`` (default ``max_events``):

    - ``features`` float32[N, L, NUM_FEATURES]: the helper's observation at each of its steps (each event at which
      it was ready), in order, zero after the last; ``mask`` bool[N, L]: the real steps;
    - ``targets`` bool[N, NUM_CLASSES] (``goal_count > 0``), ``constraint`` int32[N] (index in ``CONSTRAINTS``),
      ``task`` int32[N] (index in ``catalogue.TASKS``), ``episode`` int32[N] (in the split);
    - ``steps`` int32[N] (helper steps, more than ``L`` where the sequence was cut), ``complete`` bool[N] (the
      episode ended within ``max_events``), ``transport_rate`` float32[N].

    Everything stays on the device. Raises ``ValueError`` for an unknown task, split or helper or a non-positive
    count."""
    for task in tasks:
        T.check_task(task)
    T.check_split(split)
    if helper not in HELPERS:
        raise ValueError(f"unknown recording helper {helper!r}; choose from {list(HELPERS)}")
    max_steps = max_events if max_steps is None else max_steps
    for name, value in (("episodes", episodes), ("seeds", seeds), ("max_events", max_events), ("chunk", chunk)):
        if value is not None and (not isinstance(value, int) or value < 1):
            raise ValueError(f"record: {name} must be a positive integer, got {value!r}")
    if not tasks or not isinstance(max_steps, int) or max_steps < 1:
        raise ValueError(f"record needs at least one task and a positive max_steps, got {tasks!r}, {max_steps!r}")
    timing = W.Timing() if timing is None else timing
    runs, keys = [], []
    for task in tasks:
        states = T.cached_split(task, split).states
        count = int(states.total.shape[0]) if episodes is None else min(episodes, int(states.total.shape[0]))
        runs.append(jax.tree_util.tree_map(lambda x, n=count: jnp.repeat(x[:n], seeds, axis=0), states))
        keys.append(jax.random.split(jax.random.fold_in(jax.random.key(seed), K.TASK_SEED[task]), count * seeds))
    states = jax.tree_util.tree_map(lambda *xs: jnp.concatenate(xs), *runs)
    keys = jnp.concatenate(keys)
    n = int(keys.shape[0])
    chunk = min(RECORD_CHUNK, n) if chunk is None else chunk
    parts = []
    for start in range(0, n, chunk):
        rows = jnp.minimum(jnp.arange(start, start + chunk), n - 1)
        batch = jax.tree_util.tree_map(lambda x, r=rows: x[r], states)
        feats, steps, final = _rollout(batch, keys[rows], timing, helper == "random", max_events, max_steps)
        parts.append((feats, steps, jax.vmap(P.finished)(final), jax.vmap(W.transport_rate)(final)))
    feats, steps, complete, rate = (jnp.concatenate(xs)[:n] for xs in zip(*parts))
    task = states.task.astype(jnp.int32)
    return {
        "features": feats,
        "mask": jnp.arange(max_steps)[None, :] < steps[:, None],
        "targets": states.goal_count > 0,
        "constraint": jnp.asarray(TASK_CONSTRAINT)[task],
        "task": task,
        "episode": states.episode.astype(jnp.int32),
        "steps": steps,
        "complete": complete,
        "transport_rate": rate,
    }


def select(data: dict, rows: Any) -> dict:
    """Returns the runs ``rows`` (int[M] or bool[N]) of ``record``'s data."""
    rows = jnp.asarray(rows)
    return {name: value[rows] for name, value in data.items()}
