"""The Watch stage's demonstrations: Alice alone on a task, recorded for goal inference.

A demonstration is fully determined by its task (the initial ``world.State``, which holds the goal) and
Alice's actions: with Bob idle the household is deterministic. The only random draw of a step is
``world.transition``'s ``actor``, which decides who acts when both characters name the same object, and a
noop names none (``world.interaction_object`` is -1 for it), so with Bob's noop that draw never matters. A
``Demos`` therefore stores per episode the task, Alice's actions ``int16[max_steps]`` (noop after the episode
ends), its ``length``, ``success`` and the predicate counts reached (``satisfied``); her observations are
rebuilt on the device by replaying the actions (``replay``, ``observations``, ``Demos.batch``).

- ``record(task_set, seed)`` runs Alice (``agents.make_agent("alice")``) alone on every task of a
  ``tasks.TaskSet`` in jitted batches and returns the ``Demos``.
- ``split_tasks(split, ...)`` gives the tasks of the Watch stage's sets (``SPLITS``): ``train`` (the 1,011
  training tasks, ``tasks.cached_split("train")``), ``extra`` (the paper's 5,303 further demonstrations: new tasks
  in the training apartments, activities in turn, no goal of ``test-1`` or ``validation``; ``extra_tasks``),
  ``validation`` (the validation tasks themselves: their apartment and goals are already unseen in training; the
  set model selection reads), ``test-1`` and ``test-2`` (each Help task's paired demonstration: its goal in
  another of the paper's training apartments, ``paired_tasks``; scored once, never during training).
  ``episodes=N`` keeps N tasks: the first N of ``extra``, else ``spread_index``'s N (round-robin
  over the set's activities, so every activity is represented).
- ``save(demos, path)`` / ``load(path, successful_only=False)``: one ``.npz`` per set (layout in ``save``).

The original trains goal inference on successful demonstrations only: failed episodes are kept and flagged
(``success``); ``load(..., successful_only=True)`` or ``Demos.successful_only()`` drops them.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.household import apartments as A
from jaxsoc.envs.household import env as E
from jaxsoc.envs.household import predicates as PR
from jaxsoc.envs.household import tasks as T
from jaxsoc.envs.household import world as W
from jaxsoc.envs.household.agents import agents as AG

SPLITS = ("train", "extra", "validation", "test-1", "test-2")
#: the paper's number of additional demonstrations in the training apartments
EXTRA_EPISODES = 5303
MAX_STEPS = 250
FORMAT = "jaxsoc.household.demos"
FORMAT_VERSION = 1
#: ``extra_tasks`` redraws a task whose goal is one of test-1's at most this many times
EXTRA_ATTEMPTS = 64
_EXTRA_CHUNK = 512
_EPISODE_FIELDS = {"actions": "int16", "length": "int32", "success": "bool", "satisfied": "int8"}


@dataclasses.dataclass(frozen=True)
class Demos:
    """Alice-alone demonstrations of ``N`` episodes (host arrays).

    - ``tasks``: the ``tasks.TaskSet`` played (its ``split``, task ``seed`` and ``activities``); each state's
      ``task_id`` is the task's index in the full set it came from; its ``goal_count`` int8[N, 30] and
      ``goal_target`` int16[N, 30] are Alice's goals.
    - ``actions`` int16[N, max_steps]: Alice's action ids (``world.encode_action``), noop from ``length`` on.
    - ``length`` int32[N]: steps until the goal held (``max_steps`` on failure); ``success`` bool[N].
    - ``satisfied`` int8[N, 30]: ``world.satisfied`` of the final state.
    - ``seed``: the recording's seed; ``num_simulations``: Alice's tree-search simulations per step.
    """

    tasks: T.TaskSet
    actions: np.ndarray
    length: np.ndarray
    success: np.ndarray
    satisfied: np.ndarray
    seed: int
    num_simulations: int

    def __len__(self) -> int:
        return int(self.length.shape[0])

    @property
    def split(self) -> str:
        """Returns the set's name (``SPLITS``)."""
        return self.tasks.split

    @property
    def max_steps(self) -> int:
        """Returns the episodes' step limit (the actions' time axis)."""
        return int(self.actions.shape[1])

    @property
    def valid(self) -> np.ndarray:
        """Returns ``bool[N, max_steps]``: step ``t`` is part of the episode (``t < length``)."""
        return valid_mask(self.length, self.max_steps)

    def select(self, index) -> Demos:
        """Returns the episodes ``index`` (an int array or a boolean mask) as a ``Demos``."""
        index = np.arange(len(self))[np.asarray(index)]
        return dataclasses.replace(
            self,
            tasks=_subset(self.tasks, index),
            actions=self.actions[index],
            length=self.length[index],
            success=self.success[index],
            satisfied=self.satisfied[index],
        )

    def successful_only(self) -> Demos:
        """Returns the successful episodes only (what the original trains goal inference on)."""
        return self.select(self.success)

    def batch(self, index, with_goal: bool = False) -> dict:
        """Returns episodes ``index`` (``B`` of them) ready for a watcher, as device arrays: ``obs`` (Alice's
        observations ``[B, max_steps, ...]``, ``observations``; the goal withheld unless ``with_goal``),
        ``actions`` int32[B, max_steps], ``valid`` bool[B, max_steps], ``length`` int32[B], ``success`` bool[B],
        ``goal_count`` int8[B, 30] and ``goal_target`` int16[B, 30] (the labels)."""
        index = np.atleast_1d(np.arange(len(self))[np.asarray(index)])
        tasks = T.take(self.tasks.states, index)
        actions = jnp.asarray(self.actions[index], jnp.int32)
        return {
            "obs": _observations_jit(tasks, actions, with_goal),
            "actions": actions,
            "valid": jnp.asarray(self.valid[index]),
            "length": jnp.asarray(self.length[index]),
            "success": jnp.asarray(self.success[index]),
            "goal_count": tasks.goal_count,
            "goal_target": tasks.goal_target,
        }


def valid_mask(length, max_steps: int) -> np.ndarray:
    """Returns ``bool[N, max_steps]``: ``t < length[n]``."""
    return np.arange(max_steps)[None, :] < np.asarray(length)[:, None]


# -- replay ----------------------------------------------------------------------------------------------

_KEY = 0  # the transition's key in a replay: irrelevant with Bob idle (see the module docstring)


def _step(state: W.State, action: jax.Array) -> W.State:
    """Returns ``state`` after Alice's ``action`` with Bob idle (one ``env.advance``)."""
    params = E.HouseholdParams(tasks=state)  # advance reads only the dynamics' fields, never the bank
    joint = jnp.stack([jnp.asarray(action, jnp.int32), jnp.int32(0)])
    state, *_ = E.advance(jax.random.key(_KEY), state, joint, params)
    return state


def replay(tasks: W.State, actions: jax.Array) -> W.State:
    """Returns the states of ``B`` episodes replayed from their tasks (``world.State`` [B]) and Alice's
    ``actions`` (int[B, T]) with Bob idle: a ``world.State`` with leading axes ``[B, T + 1]``, where ``[:, t]``
    is the state after ``t`` actions (``[:, 0]`` the task). The noops after an episode's end change only the
    ``step`` counter. Jittable."""

    def one(task, acts):
        def body(state, action):
            state = _step(state, action)
            return state, state

        _, states = jax.lax.scan(body, task, acts)
        return jax.tree_util.tree_map(lambda first, rest: jnp.concatenate([first[None], rest]), task, states)

    return jax.vmap(one)(tasks, jnp.asarray(actions, jnp.int32))


def observations(tasks: W.State, actions: jax.Array, with_goal: bool = False) -> dict[str, jax.Array]:
    """Returns Alice's own observations (``world.observe(state, 0, with_goal)``) while she acts: a dict of
    ``[B, T, ...]`` arrays whose ``[:, t]`` is what she saw before her action ``actions[:, t]`` (``tasks``: a
    ``world.State`` [B]; ``actions`` int[B, T]). Without ``with_goal`` the goal is withheld (``goal`` zeros,
    ``goal_target`` -1), as a watcher sees her. Jittable with ``with_goal`` static."""

    def one(task, acts):
        def body(state, action):
            return _step(state, action), W.observe(state, 0, with_goal)

        return jax.lax.scan(body, task, acts)[1]

    return jax.vmap(one)(tasks, jnp.asarray(actions, jnp.int32))


_observations_jit = jax.jit(observations, static_argnames="with_goal")


# -- recording -------------------------------------------------------------------------------------------


def rollout(alice, tasks: W.State, keys: jax.Array, max_steps: int = MAX_STEPS) -> dict:
    """Runs ``B`` episodes of ``alice`` (an agent of ``agents.make_agent``) alone, Bob idle (jittable; ``tasks``
    a ``world.State`` [B], ``keys`` [B]) and returns a dict: ``actions`` int16[B, max_steps] (noop once the goal
    holds), ``length`` int32[B] (``max_steps`` on failure), ``success`` bool[B], ``satisfied`` int8[B, 30] and
    ``final`` (the ``world.State`` [B] at the end; its ``step`` is ``length``)."""

    def one(task, key):
        params = E.HouseholdParams(tasks=task, max_steps=max_steps)
        k_init, k_run = jax.random.split(key)
        memory = alice.init(k_init, task)

        def body(carry, k):
            state, memory, done, length = carry
            k_act, k_step = jax.random.split(k)
            action, new_memory = alice.act(k_act, memory, state, None)
            action = jnp.where(done, 0, action)
            nxt, _, success, _, _ = E.advance(k_step, state, jnp.stack([action, jnp.int32(0)]), params)
            keep = lambda new, old: jax.tree_util.tree_map(lambda x, y: jnp.where(done, y, x), new, old)  # noqa: E731
            carry = (keep(nxt, state), keep(new_memory, memory), done | success, length + ~done)
            return carry, action.astype(jnp.int16)

        init = (task, memory, jnp.array(False), jnp.int32(0))
        (final, _, done, length), actions = jax.lax.scan(body, init, jax.random.split(k_run, max_steps))
        return {
            "actions": actions,
            "length": jnp.where(done, length, max_steps).astype(jnp.int32),
            "success": done,
            "satisfied": W.satisfied(final).astype(jnp.int8),
            "final": final,
        }

    return jax.vmap(one)(tasks, keys)


@functools.lru_cache(maxsize=8)
def _rollout_jit(num_simulations: int, max_steps: int):
    alice = AG.make_agent("alice", num_simulations)
    return jax.jit(lambda tasks, keys: rollout(alice, tasks, keys, max_steps))


def episode_keys(task_set: T.TaskSet, seed: int) -> jax.Array:
    """Returns one key per task: ``fold_in(key(seed), task_id)`` (the position in the set where ``task_id`` is
    -1), so an episode does not depend on which other tasks are recorded with it."""
    ids = np.asarray(task_set.states.task_id)
    ids = np.where(ids >= 0, ids, np.arange(len(ids)))
    return jax.vmap(lambda i: jax.random.fold_in(jax.random.key(seed), i))(jnp.asarray(ids, jnp.uint32))


def record(
    task_set: T.TaskSet,
    seed: int = 0,
    max_steps: int = MAX_STEPS,
    batch: int = 64,
    num_simulations: int = AG.P.NUM_SIMULATIONS,
    progress: Callable[[int, int], None] | None = None,
) -> Demos:
    """Returns Alice's demonstrations on every task of ``task_set``, Bob idle (``rollout``), run ``batch``
    episodes at a time (the last batch padded, so one compilation serves all). ``progress(done, total)`` is
    called after each batch. Episode ``i`` uses ``episode_keys(task_set, seed)[i]``. Raises ``ValueError`` for an
    empty set or a non-positive ``batch``, ``max_steps`` or ``num_simulations``."""
    if batch < 1 or max_steps < 1 or num_simulations < 1:
        raise ValueError("batch, max_steps and num_simulations must be positive")
    num = len(task_set)
    if num == 0:
        raise ValueError("the task set is empty")
    batch = min(batch, num)
    run = _rollout_jit(int(num_simulations), int(max_steps))
    keys = episode_keys(task_set, seed)
    parts = []
    for start in range(0, num, batch):
        rows = np.arange(start, min(start + batch, num))
        padded = np.concatenate([rows, np.zeros(batch - len(rows), int)])
        out = run(T.take(task_set.states, padded), keys[padded])
        out = jax.device_get({k: v for k, v in out.items() if k != "final"})
        parts.append({k: v[: len(rows)] for k, v in out.items()})
        if progress is not None:
            progress(int(rows[-1]) + 1, num)
    fields = {k: np.concatenate([p[k] for p in parts]).astype(dtype) for k, dtype in _EPISODE_FIELDS.items()}
    return Demos(tasks=task_set, seed=int(seed), num_simulations=int(num_simulations), **fields)


# -- the Watch stage's task sets -------------------------------------------------------------------------


def _subset(task_set: T.TaskSet, index) -> T.TaskSet:
    index = np.asarray(index, np.int64)
    return dataclasses.replace(
        task_set, states=T.take(task_set.states, index), activities=np.asarray(task_set.activities)[index]
    )


def spread_index(activities: np.ndarray, num: int) -> np.ndarray:
    """Returns ``num`` task indices (sorted) taken round-robin over the distinct activity rows of
    ``activities`` (int8[T, 2]), each activity's tasks in order: every activity (or activity pair) is
    represented as evenly as ``num`` allows. All tasks when ``num >= T``."""
    activities = np.asarray(activities)
    if num >= len(activities):
        return np.arange(len(activities))
    groups: dict[bytes, list[int]] = {}
    for i, row in enumerate(activities):
        groups.setdefault(row.tobytes(), []).append(i)
    order = sorted(
        (rank, i) for members in groups.values() for rank, i in enumerate(members)
    )  # rank-th task of every activity before any (rank+1)-th
    return np.sort(np.array([i for _, i in order[:num]], np.int64))


@jax.jit
def _extra_candidates(base: jax.Array, ids: jax.Array, attempt: jax.Array, pools: jax.Array, sizes: jax.Array):
    """Returns draw ``attempt`` of the extra tasks ``ids`` (int32[K]): a ``world.State`` [K]."""

    def one(t):
        key = jax.random.fold_in(jax.random.fold_in(base, t), attempt)
        k_apt, k_task = jax.random.split(key)
        activity = t % PR.NUM_ACTIVITIES
        apartment = pools[activity, jax.random.randint(k_apt, (), 0, sizes[activity])]
        return T.generate(k_task, apartment, jnp.stack([activity, jnp.int32(-1)]))

    return jax.vmap(one)(ids)


def extra_tasks(num: int = EXTRA_EPISODES, seed: int = 0) -> T.TaskSet:
    """Returns the ``extra`` set: ``num`` new tasks in the training apartments (``apartments.TRAIN_APARTMENTS``;
    dishwasher tasks only where there is one), task ``t`` of activity ``t % 5``, none with a goal of test-1 or of the
    validation set of the same ``seed`` (redrawn, at most ``EXTRA_ATTEMPTS`` times). Task ``t`` depends only on ``seed``
    and ``t``, so a smaller ``num`` gives a prefix of the full set. ``task_id`` is ``t``; split ``"extra"``.

    Raises:
        ValueError: ``num`` is not positive.
        RuntimeError: a task still had a held-out goal after ``EXTRA_ATTEMPTS`` draws.
    """
    if num < 1:
        raise ValueError(f"the number of extra tasks must be positive, got {num}")
    test_goals = {
        g.tobytes()
        for split in ("test-1", "validation")
        for g in np.asarray(T.cached_split(split, seed).states.goal_count, np.int8)
    }
    lists = [T.allowed_apartments((a,), A.TRAIN_APARTMENTS) for a in range(PR.NUM_ACTIVITIES)]
    sizes = np.array([len(p) for p in lists], np.int32)
    pools = np.array([p + [p[0]] * (sizes.max() - len(p)) for p in lists], np.int32)
    base = jax.random.fold_in(jax.random.key(seed), 3)  # make_split's sets use 0, 1, 2 and 5
    drawn, row = [], np.full(num, -1)  # the candidate chunks, and each task's row in their concatenation
    pending, offset = np.arange(num), 0
    chunk = min(_EXTRA_CHUNK, max(16, 1 << (num - 1).bit_length()))  # one compilation per call, small sets cheap
    for attempt in range(EXTRA_ATTEMPTS):
        for start in range(0, len(pending), chunk):
            ids = pending[start : start + chunk]
            padded = np.concatenate([ids, np.zeros(chunk - len(ids), ids.dtype)])
            states = jax.device_get(_extra_candidates(base, jnp.asarray(padded, jnp.int32), attempt, pools, sizes))
            goals = np.asarray(states.goal_count[: len(ids)], np.int8)
            ok = np.array([g.tobytes() not in test_goals for g in goals])
            row[ids[ok]] = offset + np.flatnonzero(ok)
            drawn.append(states)
            offset += chunk
        pending = np.flatnonzero(row < 0)
        if not pending.size:
            break
    if pending.size:
        raise RuntimeError(f"extra: {pending.size} tasks kept drawing held-out goals after {EXTRA_ATTEMPTS} attempts")
    states = jax.tree_util.tree_map(lambda *xs: np.concatenate(xs)[row], *drawn)
    states = states.replace(task_id=np.arange(num, dtype=np.int32))
    acts = np.stack([np.arange(num) % PR.NUM_ACTIVITIES, np.full(num, -1)], 1).astype(np.int8)
    return T.TaskSet(states=jax.tree_util.tree_map(jnp.asarray, states), activities=acts, split="extra", seed=seed)


@jax.jit
def _paired(keys: jax.Array, apartments: jax.Array, activities: jax.Array, goals: jax.Array) -> W.State:
    return jax.vmap(T.generate)(keys, apartments, activities, goals)


def paired_tasks(task_set: T.TaskSet, seed: int = 0) -> T.TaskSet:
    """Returns the Watch-stage demonstration tasks paired with Help tasks ``task_set``: task ``i`` has task ``i``'s goal
    counts in a different apartment populated afresh (the paper: "we sample a different apartment and randomize the
    initial state"), drawn uniformly from the paper's training apartments that can hold its activities
    (``apartments.SEEN_APARTMENTS``, validation's included, never the task's own: the test sets' demonstrations are what
    they were before jaxsoc held an apartment out for validation). ``task_id`` is kept, so a demonstration names the
    Help task it belongs to; each paired task depends only on ``seed``, its ``task_id`` and its task."""
    acts = np.asarray(task_set.activities, np.int32)
    own, ids = np.asarray(task_set.states.apartment), np.asarray(task_set.states.task_id)
    ids = np.where(ids >= 0, ids, np.arange(len(ids)))
    apartments = np.array(
        [
            np.random.default_rng([seed, 4, i]).choice(
                [a for a in T.allowed_apartments(row, A.SEEN_APARTMENTS) if a != apartment]
            )
            for i, row, apartment in zip(ids, acts, own)
        ],
        np.int32,
    )
    base = jax.random.fold_in(jax.random.key(seed), 4)  # make_split's sets use 0-2 and 5, extra_tasks 3
    keys = jax.vmap(lambda i: jax.random.fold_in(base, i))(jnp.asarray(ids, jnp.uint32))
    states = _paired(keys, jnp.asarray(apartments), jnp.asarray(acts), jnp.asarray(task_set.states.goal_count))
    states = states.replace(task_id=jnp.asarray(task_set.states.task_id))
    return dataclasses.replace(task_set, states=states)


def split_tasks(split: str, seed: int = 0, episodes: int | None = None) -> T.TaskSet:
    """Returns the tasks of Watch-stage set ``split`` (``SPLITS``) built from task ``seed``: ``train`` and
    ``validation`` the tasks themselves, ``extra`` ``extra_tasks``, ``test-1`` / ``test-2`` the demonstrations paired
    with the Help tasks (``paired_tasks``: same goal, another apartment). With ``episodes``, only that many: the first
    ones of ``extra`` (``extra_tasks(episodes)``), else ``spread_index``'s selection. Raises ``ValueError`` for an
    unknown split or a negative count."""
    if split not in SPLITS:
        raise ValueError(f"unknown demonstration split {split!r}; choose from {list(SPLITS)}")
    if episodes is not None and episodes < 1:
        raise ValueError(f"--episodes must be positive, got {episodes}")
    if split == "extra":
        return extra_tasks(EXTRA_EPISODES if episodes is None else episodes, seed)
    task_set = T.cached_split(split, seed)
    if episodes is not None and episodes < len(task_set):
        task_set = _subset(task_set, spread_index(task_set.activities, episodes))
    return task_set if split in ("train", "validation") else paired_tasks(task_set, seed)


# -- files -----------------------------------------------------------------------------------------------


def save(demos: Demos, path: str | Path) -> Path:
    """Writes ``demos`` to ``path`` and returns the path. The ``.npz`` holds the task arrays under the names of a
    task file (``nodes.cls``, ..., ``goal_count``, ``goal_target``, ``task_id``; leading axis ``N``) and
    ``activities`` int8[N, 2], the episodes' ``actions`` int16[N, max_steps], ``length`` int32[N], ``success``
    bool[N] and ``satisfied`` int8[N, 30], and ``meta`` (JSON: ``format`` ``"jaxsoc.household.demos"``,
    ``version``, ``split``, ``task_seed``, ``seed``, ``num_simulations``, ``max_steps``, ``num_episodes``,
    ``num_successful``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "split": demos.split,
        "task_seed": int(demos.tasks.seed),
        "seed": int(demos.seed),
        "num_simulations": int(demos.num_simulations),
        "max_steps": demos.max_steps,
        "num_episodes": len(demos),
        "num_successful": int(np.sum(demos.success)),
    }
    arrays = T.state_arrays(demos.tasks.states)
    arrays.update({k: np.asarray(getattr(demos, k), dtype) for k, dtype in _EPISODE_FIELDS.items()})
    arrays["activities"] = np.asarray(demos.tasks.activities, np.int8)
    with open(path, "wb") as f:
        np.savez_compressed(f, meta=np.array(json.dumps(meta)), **arrays)
    return path


def load(path: str | Path, successful_only: bool = False) -> Demos:
    """Returns the ``Demos`` stored at ``path`` by ``save`` (only the successful episodes with
    ``successful_only``).

    Raises:
        FileNotFoundError: no such file.
        ValueError: not a demonstration file (not an archive, unreadable, no ``meta`` or another ``format``),
            another format version, a missing array, an array of the wrong shape or dtype, values out of range,
            or episodes that contradict themselves (``success`` vs ``satisfied`` and the goal, a failure shorter
            than ``max_steps``, actions after the end that are not noops) — the message names it.
    """
    data, meta = T.read_archive(path, "demonstration", FORMAT, FORMAT_VERSION)
    try:
        num, max_steps = int(meta.get("num_episodes", -1)), int(meta.get("max_steps", -1))
    except (TypeError, ValueError) as error:
        raise ValueError(f"{path}: unreadable 'meta' ({error})") from error
    if meta.get("split") not in SPLITS or num < 0 or max_steps < 1:
        raise ValueError(f"{path}: 'meta' needs a split of {list(SPLITS)}, num_episodes >= 0 and max_steps >= 1")
    layout, _ = T.state_layout()
    expected = {name: ((num, *shape), dtype) for name, (shape, dtype) in layout.items()}
    expected.update(
        activities=((num, 2), "int8"),
        actions=((num, max_steps), "int16"),
        length=((num,), "int32"),
        success=((num,), "bool"),
        satisfied=((num, PR.NUM_PREDICATES), "int8"),
    )
    T.check_arrays(path, data, expected)
    T.check_ranges(path, data)  # the task file's range checks (class ids, parents, rooms, hands, goals)
    _check_episodes(path, data, max_steps)
    states = T.state_from_arrays(data)
    task_set = T.TaskSet(
        states=states, activities=data["activities"], split=str(meta["split"]), seed=int(meta.get("task_seed", -1))
    )
    demos = Demos(
        tasks=task_set,
        seed=int(meta.get("seed", -1)),
        num_simulations=int(meta.get("num_simulations", -1)),
        **{k: data[k] for k in _EPISODE_FIELDS},
    )
    return demos.successful_only() if successful_only else demos


def _check_episodes(path, data, max_steps: int) -> None:
    """Raises ``ValueError`` when the episode arrays are out of range or contradict each other."""
    actions, length, success = data["actions"], data["length"], data["success"]
    if actions.size and (actions.min() < 0 or actions.max() >= W.NUM_ACTIONS):
        raise ValueError(f"{path}: array 'actions' has values outside [0, {W.NUM_ACTIONS - 1}]")
    if length.size and (length.min() < 1 or length.max() > max_steps):
        raise ValueError(f"{path}: array 'length' has values outside [1, {max_steps}]")
    if (~success & (length != max_steps)).any():
        raise ValueError(f"{path}: a failed episode must last max_steps ({max_steps}) steps")
    reached = (data["satisfied"] >= data["goal_count"]).all(1)
    if (reached != success).any():
        raise ValueError(f"{path}: 'success' disagrees with 'satisfied' and the goal counts")
    if (actions[~valid_mask(length, max_steps)] != 0).any():
        raise ValueError(f"{path}: actions after an episode's end must be noops (0)")
