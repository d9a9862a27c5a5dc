"""How fast the current JAX backend simulates CHAIC: N parallel worlds of a task's train bank stepped T times.

**Programs.** A ``Workload`` is one jitted program: ``num_envs`` worlds reset from the task bank of ``task`` and
``split`` (``env.params_for``), then stepped ``steps`` times inside one ``lax.scan``, auto-reset included (the
reset branch is computed for every world on every step, ended or not, so its cost is always counted). The
actions are drawn inside the scan, one key per step:

- ``"uniform"``: ``ChaicEnv`` (one step is one world event, ``world.step_event``); both agents draw uniformly
  from the whole ``Discrete(NUM_ACTIONS)`` (103 ids). Most pick/remove ids are refused at once (they still start
  an action of ``Timing.fail`` frames), and an agent still busy ignores its draw.
- ``"valid"``: ``ChaicEnv``; each agent draws uniformly among ``world.valid_actions`` (one more validity mask
  per agent and a categorical draw).
- ``"helper"``: ``ChaicHelperEnv``, the helper's view: the helper draws uniformly from the whole space, the
  rule-based constrained agent (``agents.make_agent("main")``) decides inside ``step`` at every event it is
  ready, for up to ``events_per_step`` (8) events per step until the helper's action has finished.
- ``"agents"``: no gym wrapper: a scan over world events in which the rule-based constrained agent and the RHP
  helper (``agents.make_agent("main")``, ``("rhp")``) decide at every event (vmapped together, as ``play.play``
  runs two rule agents; memories kept where the agent was ready) before ``world.step_event``; an episode that
  ended (success or ``max_frames``) is replaced by a fresh task and fresh memories. Planning is in the rate.

Observations (``ChaicEnv``/``ChaicHelperEnv`` modes) stay in the scan carry, so they cannot be dropped as dead
code; the program returns per-world counters only (world events, actions started and refused by the constrained
agent and the helper, frames simulated, episodes ended), the summed reward and a wrapping checksum of the last
observations (of the agents' positions in ``"agents"`` mode).

**Counts.** ``events``: world events (``ChaicEnv`` modes and ``"agents"``: ``num_envs * steps``; the helper view
runs a variable number of events per step and does not report them: None). ``started``: actions started by
[constrained agent, helper], from ``info["started"]`` (``ChaicEnv``, ``"agents"``); in ``"helper"`` mode the
constrained agent's are counted by a wrapper of its policy (its memory, which the env keeps only when it acted,
carries a counter) and the helper's as the steps at whose start it was ready (it starts at most one action per
step). ``refused``: those started actions the world refused at once (``world.refused``: invalid when started;
the constrained agent's are not seen in ``"helper"`` mode). ``frames``: the sum of ``info["elapsed"]`` (helper
view: the frames each step advanced). The counts come from the warm-up call; the rates divide them by the best
timed call's seconds (the timed calls run the same program on other keys).

**Rates.** ``env_steps_per_s = num_envs * steps / run_s`` (events, or helper steps in ``"helper"`` mode);
``events_per_s``; ``agent_steps_per_s`` (actions started by the two controllable agents per second);
``frames_per_s``. The reference is the paper's "collecting rollouts of size 10^4 for each task requires one day
on an NVIDIA A10G GPU" (CHAIC, appendix E.3: the RL helper's steps in ThreeDWorld): ``REFERENCE_STEPS_PER_S =
1e4 / 86400``, a quoted constant, not a measurement; ``ratio_reference`` divides ``agent_steps_per_s`` by it
(the paper's step is one helper action, during which the constrained agent also acts: counting both agents'
actions as steps overstates the ratio by up to 2; ``helper_steps_per_s`` counts the helper's alone).

**Timing** (``measure``): each program is compiled apart (``compile_s``), called once to warm up, then timed as
the best of ``repeats`` calls on fresh keys (``core.timing.time_compiled``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.core.timing import compile_cached, device_info, positive_int, tree_checksum
from jaxsoc.envs.chaic import env as E
from jaxsoc.envs.chaic import state as S
from jaxsoc.envs.chaic import world as W
from jaxsoc.envs.chaic.family import FAMILY

__all__ = [
    "MODES",
    "MODE_TEXT",
    "REFERENCE_STEPS_PER_S",
    "CountingAgent",
    "Workload",
    "compile_workloads",
    "device_info",
    "format_table",
    "measure",
    "measure_workload",
    "random_valid_action",
    "rate_cells",
    "row_key",
]

#: the paper's data-collection rate in ThreeDWorld, quoted (appendix E.3): "collecting rollouts of size 10^4 for
#: each task requires one day on an NVIDIA A10G GPU", i.e. 10^4 steps in 86,400 s (~0.116 steps/s)
REFERENCE_STEPS_PER_S = 1e4 / 86400
MODES = ("uniform", "valid", "helper", "agents")
MODE_TEXT = {
    "uniform": f"both uniform over all {S.NUM_ACTIONS} ids, one event per step",
    "valid": "both uniform over their valid actions, one event per step",
    "helper": "the helper view: helper uniform over all ids, the rule-based constrained agent inside step",
    "agents": "the rule-based constrained agent and the RHP helper deciding at every event",
}
ENV_NAMES = {"uniform": "ChaicEnv", "valid": "ChaicEnv", "helper": "ChaicHelperEnv", "agents": "rule agents"}


def check_mode(mode: str) -> str:
    """Returns ``mode``; raises ``ValueError`` unless it is one of ``MODES``."""
    if mode not in MODES:
        raise ValueError(f"unknown CHAIC throughput mode {mode!r}; choose from {list(MODES)}")
    return mode


def check_task(task: str) -> str:
    """Returns ``task``; raises ``ValueError`` unless it is one of ``catalogue.TASKS``."""
    return FAMILY.check_task(task)


def random_valid_action(key: jax.Array, state: S.State, agent: int) -> jax.Array:
    """Returns ``int32``: an action drawn uniformly among ``world.valid_actions(state, agent)`` (never empty:
    moves, turns, wait and message are always valid)."""
    valid = W.valid_actions(state, agent)
    return jax.random.categorical(key, jnp.where(valid, 0.0, -jnp.inf)).astype(jnp.int32)


@dataclasses.dataclass(frozen=True)
class CountingAgent:
    """An agent (``agents.make_agent``) whose memory also counts its decisions: ``(inner memory, uint32)``.
    ``ChaicHelperEnv`` keeps the constrained agent's new memory only at events where it was ready, so the counter
    is the number of actions it started."""

    inner: Any

    def init(self, key: jax.Array, state: S.State, agent: int) -> tuple[Any, jax.Array]:
        return self.inner.init(key, state, agent), jnp.zeros((), jnp.uint32)

    def act(self, key: jax.Array, memory: tuple[Any, jax.Array], state: S.State, timing: W.Timing):
        inner, count = memory
        action, inner = self.inner.act(key, inner, state, timing)
        return action, (inner, count + 1)


def _over(state: S.State) -> jax.Array:
    return W.success(state) | (state.frame >= state.max_frames)


def _counters(n: int) -> dict[str, jax.Array]:
    """The counters of a scan carry, per world: ``events``, ``started`` [N, 2], ``refused`` [N, 2] (actions refused
    at once, ``world.refused``), ``frames``, ``episodes`` (uint32) and ``reward`` (float32)."""
    z, z2 = jnp.zeros(n, jnp.uint32), jnp.zeros((n, 2), jnp.uint32)
    return {"events": z, "started": z2, "refused": z2, "frames": z, "episodes": z, "reward": jnp.zeros(n, jnp.float32)}


def _count(counts: dict[str, jax.Array], events, started, refused, frames, episodes, reward) -> dict[str, jax.Array]:
    """Returns ``counts`` with one step's per-world increments added (``events`` may be a Python int)."""
    add = {"events": events, "started": started, "refused": refused, "frames": frames, "episodes": episodes}
    new = {name: counts[name] + jnp.asarray(value).astype(jnp.uint32) for name, value in add.items()}
    return {**new, "reward": counts["reward"] + reward}


def _event_counts(info: dict, stepped: S.State) -> tuple[jax.Array, jax.Array]:
    """Returns ``(started, refused)`` bool[N, 2] of one event: who of the constrained agent and the helper started
    an action (``info["started"]``), and whose started action was refused at once (``stepped``: after the event,
    before any reset; an action's id stays in ``agents.action`` until the agent's next start)."""
    started = info["started"][:, :2]
    return started, started & W.refused(stepped.agents.action[:, :2])


def _reset_state(reset: Callable, keys: jax.Array, params: E.ChaicParams) -> tuple[Any, Any]:
    """Returns ``(zero observations, states)`` of the batched ``reset``: the scan overwrites the observations at
    its first step, so the reset's are not computed (a smaller program to compile; ``steps >= 1``)."""
    shapes = jax.eval_shape(reset, keys, params)[0]
    return jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), shapes), reset(keys, params)[1]


def _result(counts: dict[str, jax.Array], check: jax.Array) -> dict[str, jax.Array]:
    """The program's output: the counts per world (summed on the host in int64: no wrapping at large N), the
    summed reward and the checksum."""
    return {**counts, "reward": jnp.sum(counts["reward"]), "checksum": check}


@dataclasses.dataclass(frozen=True)
class Workload:
    """One benchmark program: ``num_envs`` worlds of ``task`` (``catalogue.TASKS``), their episodes drawn from
    the bank ``split`` built from ``task_seed``, stepped ``steps`` times with the actions of ``mode``
    (``MODES``)."""

    mode: str
    num_envs: int
    steps: int
    task: str = "normal"
    split: str = "train"
    task_seed: int = 0

    def env(self) -> E.ChaicEnv | E.ChaicHelperEnv:
        """Returns the environment the mode steps: ``ChaicHelperEnv`` (its constrained agent counting its actions)
        for ``"helper"``, else ``ChaicEnv``."""
        if check_mode(self.mode) == "helper":
            from jaxsoc.envs.chaic.agents import make_agent

            return E.ChaicHelperEnv(check_task(self.task), main=CountingAgent(make_agent("main")))
        return E.ChaicEnv(check_task(self.task))

    def params(self) -> E.ChaicParams:
        """Returns the params: the default ones with the bank of ``split`` (cached per process)."""
        return E.params_for(check_task(self.task), self.split, self.task_seed)

    def build(self) -> Callable[[jax.Array], dict[str, jax.Array]]:
        """Returns ``run(key)``, jittable: reset ``num_envs`` worlds, step them ``steps`` times; returns, per
        world, ``events`` (uint32[N], world events; 0 in ``"helper"`` mode, which does not report them),
        ``started`` (uint32[N, 2], actions started by the constrained agent and the helper), ``refused``
        (uint32[N, 2], those of them refused at once; the constrained agent's are not counted in ``"helper"``
        mode: 0), ``frames`` (uint32[N], frames simulated), ``episodes`` (uint32[N], episodes ended), and the
        scalars ``reward`` (float32, the summed shared reward) and ``checksum`` (uint32, of the last
        observations; of the agents' positions and frames in ``"agents"`` mode)."""
        mode = check_mode(self.mode)
        if mode == "agents":
            return self._build_agents()
        if mode == "helper":
            return self._build_helper()
        n, steps = self.num_envs, self.steps
        env, params = self.env(), self.params()
        reset = jax.vmap(env.reset_env, in_axes=(0, None))
        step = jax.vmap(env._auto_reset_step, in_axes=(0, 0, 0, None))
        valid_action = jax.vmap(random_valid_action, in_axes=(0, 0, None))

        def actions(key: jax.Array, state: S.State) -> dict[str, jax.Array]:
            if mode == "uniform":
                drawn = jax.random.randint(key, (2, n), 0, S.NUM_ACTIONS, jnp.int32)
            else:
                keys = jax.random.split(key, (2, n))
                drawn = jnp.stack([valid_action(keys[i], state, i) for i in range(len(S.AGENTS))])
            return {agent: drawn[i] for i, agent in enumerate(S.AGENTS)}

        def body(k_run: jax.Array, carry, t):
            obs, state, counts = carry
            k_act, k_step = jax.random.split(jax.random.fold_in(k_run, t))
            obs, state, rewards, dones, info = step(jax.random.split(k_step, n), state, actions(k_act, state), params)
            started, refused = _event_counts(info, info["final_state"])
            reward = rewards[S.AGENTS[0]]
            counts = _count(counts, 1, started, refused, info["elapsed"], dones["__all__"], reward)
            return (obs, state, counts), None

        def run(key: jax.Array) -> dict[str, jax.Array]:
            k_reset, k_run = jax.random.split(key)
            obs, state = _reset_state(reset, jax.random.split(k_reset, n), params)
            carry = (obs, state, _counters(n))
            obs, _, counts = jax.lax.scan(functools.partial(body, k_run), carry, jnp.arange(steps))[0]
            return _result(counts, tree_checksum(obs))

        return run

    def _build_helper(self) -> Callable[[jax.Array], dict[str, jax.Array]]:
        n, steps = self.num_envs, self.steps
        env, params = self.env(), self.params()
        reset = jax.vmap(env.reset_env, in_axes=(0, None))
        step = jax.vmap(env._auto_reset_step, in_axes=(0, 0, 0, None))

        def body(k_run: jax.Array, carry, t):
            obs, state, counts = carry
            k_act, k_step = jax.random.split(jax.random.fold_in(k_run, t))
            action = jax.random.randint(k_act, (n,), 0, S.NUM_ACTIONS, jnp.int32)
            world = state.world
            helper_starts = jax.vmap(lambda w: W.ready(w)[S.HELPER] & ~_over(w))(world)
            obs, new, rew, terminated, truncated, info = step(jax.random.split(k_step, n), state, action, params)
            stepped = info["final_state"]  # before the auto-reset
            main_starts = stepped.main[1] - state.main[1]
            started = jnp.stack([main_starts, helper_starts.astype(jnp.uint32)], -1)
            helper_refused = helper_starts & W.refused(stepped.world.agents.action[:, S.HELPER])
            refused = jnp.stack([jnp.zeros_like(helper_refused), helper_refused], -1)  # the main's: not counted
            frames = stepped.world.frame - world.frame
            counts = _count(counts, 0, started, refused, frames, terminated | truncated, rew)
            return (obs, new, counts), None

        def run(key: jax.Array) -> dict[str, jax.Array]:
            k_reset, k_run = jax.random.split(key)
            obs, state = _reset_state(reset, jax.random.split(k_reset, n), params)
            carry = (obs, state, _counters(n))
            obs, _, counts = jax.lax.scan(functools.partial(body, k_run), carry, jnp.arange(steps))[0]
            return _result(counts, tree_checksum(obs))

        return run

    def _build_agents(self) -> Callable[[jax.Array], dict[str, jax.Array]]:
        from jaxsoc.envs.chaic.agents import make_agent

        n, steps = self.num_envs, self.steps
        params = self.params()
        main, helper = make_agent("main"), make_agent("rhp")
        shared = type(main).act is type(helper).act  # two rule agents: one act, vmapped over the two (as play)

        def init(key: jax.Array, state: S.State):
            k_main, k_helper = jax.random.split(key)
            return main.init(k_main, state, S.MAIN), helper.init(k_helper, state, S.HELPER)

        def fresh(key: jax.Array):
            k_task, k_init = jax.random.split(key)
            state = E.draw_task(k_task, params)
            return (state, *init(k_init, state))

        def decide(key: jax.Array, mem_main, mem_helper, state: S.State):
            k_main, k_helper = jax.random.split(key)
            if shared:
                mems = jax.tree.map(lambda a, b: jnp.stack([a, b]), mem_main, mem_helper)
                keys = jnp.stack([k_main, k_helper])
                acts, news = jax.vmap(main.act, in_axes=(0, 0, None, None))(keys, mems, state, params.timing)
                return acts, jax.tree.map(lambda x: x[0], news), jax.tree.map(lambda x: x[1], news)
            act_main, new_main = main.act(k_main, mem_main, state, params.timing)
            act_helper, new_helper = helper.act(k_helper, mem_helper, state, params.timing)
            return jnp.stack([act_main, act_helper]), new_main, new_helper

        def event(key: jax.Array, state: S.State, mem_main, mem_helper):
            k_act, k_step, k_reset = jax.random.split(key, 3)
            ready = W.ready(state)
            acts, new_main, new_helper = decide(k_act, mem_main, mem_helper, state)
            mem_main = W.jnp_select(ready[S.MAIN], new_main, mem_main)
            mem_helper = W.jnp_select(ready[S.HELPER], new_helper, mem_helper)
            stepped, info = W.step_event(k_step, state, acts.astype(jnp.int32), params.timing)
            done = _over(stepped)
            reward = (W.transport_rate(stepped) - W.transport_rate(state)).astype(jnp.float32)
            started = info["started"][:2]
            refused = started & W.refused(stepped.agents.action[:2])
            state, mem_main, mem_helper = W.jnp_select(done, fresh(k_reset), (stepped, mem_main, mem_helper))
            return state, mem_main, mem_helper, (started, refused, info["elapsed"], done, reward)

        events_vmapped = jax.vmap(event)

        def body(k_run: jax.Array, carry, t):
            state, mem_main, mem_helper, counts = carry
            keys = jax.random.split(jax.random.fold_in(k_run, t), n)
            state, mem_main, mem_helper, out = events_vmapped(keys, state, mem_main, mem_helper)
            return (state, mem_main, mem_helper, _count(counts, 1, *out)), None

        def run(key: jax.Array) -> dict[str, jax.Array]:
            k_reset, k_run = jax.random.split(key)
            state, mem_main, mem_helper = jax.vmap(fresh)(jax.random.split(k_reset, n))
            carry = (state, mem_main, mem_helper, _counters(n))
            state, _, _, counts = jax.lax.scan(functools.partial(body, k_run), carry, jnp.arange(steps))[0]
            return _result(counts, tree_checksum((state.agents.pos, state.frame)))

        return run


_COMPILED: dict[Workload, tuple[Any, float]] = {}


def compile_workloads(workloads: Iterable[Workload], workers: int = 1) -> list[tuple[Any, float]]:
    """Returns ``(compiled, compile_s)`` per workload, in order, each compiled once per process
    (``core.timing.compile_cached``: traced here, compiled in ``workers`` threads)."""
    return compile_cached(workloads, _COMPILED, workers)


def row_key(workload: Workload, repeats: int, seed: int) -> str:
    """Returns the key naming every parameter of ``workload``'s row (the script and the GPU suite resume by it)."""
    w = workload
    return (
        f"{w.mode}|task={w.task}|N={w.num_envs}|T={w.steps}|repeats={repeats}|split={w.split}|"
        f"task_seed={w.task_seed}|seed={seed}"
    )


def measure_workload(workload: Workload, repeats: int = 3, seed: int = 0) -> dict[str, Any]:
    """Returns one row of ``measure`` for ``workload`` (compiling it unless ``compile_workloads`` already did)."""
    from jaxsoc.core.timing import time_compiled

    repeats = positive_int("repeats", repeats)
    ((compiled, compile_s),) = compile_workloads([workload])
    key = jax.random.key(seed)
    jax.block_until_ready(jax.random.fold_in(key, 0))  # the timed calls' eager fold_in compiled before the clock
    output, run_s = time_compiled(compiled, key, repeats)
    out = jax.device_get(output)
    w = workload
    env_steps = w.num_envs * w.steps
    events = None if w.mode == "helper" else int(np.sum(out["events"], dtype=np.int64))
    started = [int(v) for v in np.sum(out["started"], axis=0, dtype=np.int64)]
    refused = [int(v) for v in np.sum(out["refused"], axis=0, dtype=np.int64)]
    if w.mode == "helper":
        refused[0] = None  # the constrained agent acts inside the helper view's step: its refusals are not seen
    frames = int(np.sum(out["frames"], dtype=np.int64))
    params = w.params()
    agent_rate = sum(started) / run_s
    return {
        "key": row_key(w, repeats, seed),
        "mode": w.mode,
        "env": ENV_NAMES[w.mode],
        "actions": MODE_TEXT[w.mode],
        "task": w.task,
        "num_envs": w.num_envs,
        "steps": w.steps,
        "repeats": repeats,
        "seed": seed,
        "split": w.split,
        "task_seed": w.task_seed,
        "tasks": int(params.tasks.objects.cls.shape[0]),
        "events_per_step": params.events_per_step if w.mode == "helper" else 1,
        "compile_s": compile_s,
        "run_s": run_s,
        "env_steps": env_steps,
        "events": events,
        "started": started,
        "refused": refused,
        "frames": frames,
        "episodes_ended": int(np.sum(out["episodes"], dtype=np.int64)),
        "env_steps_per_s": env_steps / run_s,
        "events_per_s": None if events is None else events / run_s,
        "agent_steps_per_s": agent_rate,
        "helper_steps_per_s": started[1] / run_s,
        "frames_per_s": frames / run_s,
        "started_per_step": [s / env_steps for s in started],
        "refused_fraction": [None if r is None else r / max(s, 1) for r, s in zip(refused, started)],
        "frames_per_step": frames / env_steps,
        "reference_steps_per_s": REFERENCE_STEPS_PER_S,
        "ratio_reference": agent_rate / REFERENCE_STEPS_PER_S,
        "reward_sum": float(out["reward"]),
        "checksum": int(out["checksum"]),
        **device_info(),
    }


def measure(
    sizes: Sequence[int],
    modes: Sequence[str] = MODES,
    steps: int = 100,
    repeats: int = 3,
    seed: int = 0,
    *,
    tasks: Sequence[str] = ("normal",),
    split: str = "train",
    task_seed: int = 0,
    workers: int = 1,
) -> list[dict[str, Any]]:
    """Measures CHAIC steps/s at each number of parallel worlds, for each action mode and task.

    Args:
        sizes: parallel worlds per program (``num_envs``).
        modes: action modes (``MODES``).
        steps: env steps per program call (``T``, one ``lax.scan``): events, or helper steps in ``"helper"``.
        repeats: timed calls after a warm-up; the best is kept.
        seed: the key of the warm-up call (timed calls fold in 1, 2, ...).
        tasks: the tasks (``catalogue.TASKS``).
        split: the task bank the worlds reset from (``tasks.SPLITS``).
        task_seed: the seed the task set is built from.
        workers: programs compiled at once (their ``compile_s`` then share the machine).

    Returns:
        One dict per (task, mode, size), in that nesting order: ``key``, ``mode``, ``env``, ``actions`` (the mode
        in words), ``task``, ``num_envs``, ``steps``, ``repeats``, ``seed``, ``split``, ``task_seed``, ``tasks``
        (bank size), ``events_per_step`` (1; the helper view's ``events_per_step`` at most), ``compile_s``,
        ``run_s`` (best call), ``env_steps`` (``num_envs * steps``), ``events`` (None in ``"helper"`` mode),
        ``started`` ([constrained agent, helper] actions started), ``refused`` (those refused at once; the constrained
        agent's None in ``"helper"`` mode), ``frames``, ``episodes_ended`` (the counts: warm-up call),
        ``env_steps_per_s``, ``events_per_s``, ``agent_steps_per_s`` (``sum(started) / run_s``), ``helper_steps_per_s``,
        ``frames_per_s``, ``started_per_step``, ``refused_fraction`` (refused over started, per agent),
        ``frames_per_step``, ``reference_steps_per_s`` (``REFERENCE_STEPS_PER_S``), ``ratio_reference``
        (``agent_steps_per_s`` over it), ``reward_sum``, ``checksum``, ``device``, ``platform``, ``jax``.
    """
    sizes = [positive_int("size", n) for n in sizes]
    positive_int("steps", steps)
    positive_int("repeats", repeats)
    workloads = [
        Workload(check_mode(m), n, steps, check_task(t), split, task_seed) for t in tasks for m in modes for n in sizes
    ]
    compile_workloads(workloads, workers)
    return [measure_workload(w, repeats, seed) for w in workloads]


def _num(x: Any, spec: str = ".3g") -> str:
    return "–" if x is None else format(x, spec)


def rate_cells(r: dict[str, Any]) -> str:
    """Returns a measured row's first markdown cells: ``| mode | env | task | N | T | env steps/s | events/s |
    agent steps/s | frames/s | × reference | started per step (main, helper) | refused (main, helper) |``."""
    main, helper = r["started_per_step"]
    refused = ", ".join(_num(f, ".2f") for f in r["refused_fraction"])
    return (
        f"| {r['mode']} | {r['env']} | {r['task']} | {r['num_envs']:,} | {r['steps']} | {_num(r['env_steps_per_s'])} | "
        f"{_num(r['events_per_s'])} | {_num(r['agent_steps_per_s'])} | {_num(r['frames_per_s'])} | "
        f"{_num(r['ratio_reference'], ',.0f')} | {main:.2f}, {helper:.2f} | {refused} |"
    )


HEADER = (
    "| mode | env | task | N | T | env steps/s | events/s | agent steps/s | frames/s | × paper (TDW) | "
    "started per step (main, helper) | refused (main, helper) |"
)
HEADER_RULE = "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|"


def reference_sentence() -> str:
    """Returns the sentence on the reference and the counts that follows the tables."""
    return (
        "Protocol vs the paper: jaxsoc simulates a symbolic grid without rendering or physics, so the ratio to "
        "ThreeDWorld's rate compares the two simulators' costs, not the same work.\n\n"
        "One env step is one world event (`ChaicEnv`, the rule agents) or one helper step of up to 8 events "
        "(`ChaicHelperEnv`, whose events are not reported: –). Agent steps are the actions started by the "
        "constrained agent and the helper (refused: the fraction of them refused at once, as invalid); frames are the "
        "world's clock (3,000 per indoor episode). The reference is the paper's "
        f"10^4 steps per day in ThreeDWorld on an A10G ({REFERENCE_STEPS_PER_S:.3f} steps/s, appendix E.3; quoted, "
        "not measured); the ratio counts every agent step as a step (the paper's step is one helper action)."
    )


def format_table(rows: Sequence[dict[str, Any]]) -> str:
    """Returns ``rows`` (``measure``'s) as a markdown table, rates against parallel worlds per mode and task:
    mode, env, task, N, T, env steps/s, events/s, agent steps/s, frames/s, the ratio to the paper's rate, actions
    started per env step and the fraction of them refused at once (constrained agent, helper), episodes ended,
    compile seconds; a row with an ``error`` shows it instead of rates. The mode legend precedes it and a sentence
    on the reference follows."""
    lines = [HEADER + " episodes ended | compile s |", HEADER_RULE + "---:|---:|"]
    for r in rows:
        if r.get("error"):
            lines.append(
                f"| {r['mode']} | {r.get('env', '–')} | {r.get('task', '–')} | {r['num_envs']:,} | {r['steps']} | "
                f"{r['error']} |||||||||"
            )
            continue
        lines.append(f"{rate_cells(r)} {r['episodes_ended']:,} | {_num(r['compile_s'], '.1f')} |")
    modes = [m for m in MODES if any(r.get("mode") == m for r in rows)]
    legend = "; ".join(f"{m}: {MODE_TEXT[m]}" for m in modes)
    return f"Actions ({legend}).\n\n" + "\n".join(lines) + "\n\n" + reference_sentence()
