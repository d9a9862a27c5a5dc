"""How many household steps per second the current JAX backend runs: random actions in N parallel households.

**Programs.** A ``Workload`` is one jitted program: ``num_envs`` households reset from the task bank of
``split`` (``env.params_for``), then stepped ``steps`` times inside one ``lax.scan`` of
``vmap(env._auto_reset_step)``, auto-reset included (the reset branch is computed for every world on every
step, ended or not, so its cost is always counted). The actions are drawn inside the scan, one key per step:

- ``"uniform"``: ``HouseholdEnv``; Alice and Bob each draw uniformly from the whole ``Discrete(NUM_ACTIONS)``
  (968 ids). Most ids fail their preconditions and do nothing (reported, as in the other families' random-action
  benchmarks), but each is still checked against the state.
- ``"valid"``: ``HouseholdEnv``; each character draws uniformly among its currently valid actions
  (``env.random_valid_action``: one more ``valid_actions`` and a categorical draw over the 968 ids per character).
- ``"helper"``: ``HelperEnv``, the single-agent view: Bob draws uniformly from the whole space, the built-in
  ``RandomAlice`` draws a valid action inside ``step``.
- ``"planners"``: ``HouseholdEnv`` with the human-like Alice and the HP helper (``agents.make_agent``): every
  step both update their beliefs, sample a world and run a 100-simulation tree search, planning included in
  the rate; a world whose episode ended starts its agents' memories afresh.

Observations stay in the scan carry, so they cannot be dropped as dead code; the program returns a few
``uint32``/``float32`` scalars only (episodes ended, actions carried out per character, the summed reward and a
wrapping checksum of the last observations).

**Rates.** One environment step is one world advanced by one time step, both characters acting in it:
``steps_per_s = num_envs * steps / run_s``; ``agent_actions_per_s`` is twice that. The reference is the paper's
"A single process runs at 10 actions per second" (Puig et al. 2021, one Unity process of VirtualHome-Social,
``REFERENCE_ACTIONS_PER_S``), a quoted constant, not a measurement; ``ratio_unity`` divides ``steps_per_s`` by
it, counting a step of two actions as one action (so it understates the ratio of actions by 2).

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

from jaxsoc.core.timing import compile_cached, device_info, positive_int, tree_checksum
from jaxsoc.envs.household import env as E
from jaxsoc.envs.household import world as W

#: the paper's rate of one Unity process of VirtualHome-Social: "A single process runs at 10 actions per second"
REFERENCE_ACTIONS_PER_S = 10.0
MODES = ("uniform", "valid", "helper", "planners")
MODE_TEXT = {
    "uniform": "both uniform over all 968 ids",
    "valid": "both uniform over their valid actions",
    "helper": "Bob uniform over all ids, built-in random-valid Alice",
    "planners": "the human-like Alice and the HP helper, both planning every step",
}
#: the modes ``measure`` runs by default (``planners`` is slow to compile and to run: asked for explicitly)
RANDOM_MODES = ("uniform", "valid", "helper")


def check_mode(mode: str) -> str:
    """Returns ``mode``; raises ``ValueError`` unless it is one of ``MODES``."""
    if mode not in MODES:
        raise ValueError(f"unknown household throughput mode {mode!r}; choose from {list(MODES)}")
    return mode


@dataclasses.dataclass(frozen=True)
class Workload:
    """One benchmark program: ``num_envs`` households of task set ``split`` (built from ``task_seed``) stepped
    ``steps`` times with the actions of ``mode`` (``MODES``)."""

    mode: str
    num_envs: int
    steps: int
    split: str = "train"
    task_seed: int = 0

    def env(self) -> E.HouseholdEnv | E.HelperEnv:
        """Returns the environment the mode steps: ``HelperEnv`` for ``"helper"``, else ``HouseholdEnv``."""
        return E.HelperEnv() if check_mode(self.mode) == "helper" else E.HouseholdEnv()

    def params(self) -> E.HouseholdParams:
        """Returns the params: the default ones with the task bank of ``split`` (cached per process)."""
        return E.params_for(self.split, self.task_seed)

    def build(self) -> Callable[[jax.Array], dict[str, jax.Array]]:
        """Returns ``run(key)``, jittable: reset ``num_envs`` worlds, step them ``steps`` times; returns scalars
        ``episodes`` (uint32, episodes ended), ``valid`` (uint32[2], actions carried out by Alice and Bob),
        ``reward`` (float32, summed over worlds and steps) and ``checksum`` (uint32, of the last observations)."""
        mode, n, steps = check_mode(self.mode), self.num_envs, self.steps
        env, params = self.env(), self.params()
        reset = jax.vmap(env.reset_env, in_axes=(0, None))
        step = jax.vmap(env._auto_reset_step, in_axes=(0, 0, 0, None))
        valid_action = jax.vmap(E.random_valid_action, in_axes=(0, 0, None))

        if mode == "planners":
            return self._build_planners()

        def actions(key: jax.Array, state):
            if mode == "helper":
                return jax.random.randint(key, (n,), 0, W.NUM_ACTIONS, jnp.int32)
            if mode == "uniform":
                drawn = jax.random.randint(key, (2, n), 0, W.NUM_ACTIONS, jnp.int32)
            else:
                keys = jax.random.split(key, (2, n))
                drawn = jnp.stack([valid_action(keys[c], state, c) for c in range(W.NUM_CHARACTERS)])
            return {agent: drawn[c] for c, agent in enumerate(W.AGENTS)}

        def body(k_run: jax.Array, carry, t):
            obs, state, episodes, valid, reward = carry
            k_act, k_step = jax.random.split(jax.random.fold_in(k_run, t))
            out = step(jax.random.split(k_step, n), state, actions(k_act, state), params)
            if mode == "helper":
                obs, state, rew, terminated, truncated, info = out
                done = terminated | truncated
            else:
                obs, state, rewards, dones, info = out
                rew, done = rewards[W.AGENTS[0]], dones["__all__"]
            episodes = episodes + done.astype(jnp.uint32)
            valid = valid + info["action_valid"].astype(jnp.uint32)
            return (obs, state, episodes, valid, reward + rew), None

        def run(key: jax.Array) -> dict[str, jax.Array]:
            k_reset, k_run = jax.random.split(key)
            obs, state = reset(jax.random.split(k_reset, n), params)
            carry = (obs, state, jnp.zeros(n, jnp.uint32), jnp.zeros((n, 2), jnp.uint32), jnp.zeros(n, jnp.float32))
            carry = jax.lax.scan(functools.partial(body, k_run), carry, jnp.arange(steps))[0]
            obs, _, episodes, valid, reward = carry
            return {
                "episodes": jnp.sum(episodes, dtype=jnp.uint32),
                "valid": jnp.sum(valid, axis=0, dtype=jnp.uint32),
                "reward": jnp.sum(reward),
                "checksum": tree_checksum(obs),
            }

        return run

    def _build_planners(self) -> Callable[[jax.Array], dict[str, jax.Array]]:
        from jaxsoc.envs.household.agents.agents import make_agent

        n, steps = self.num_envs, self.steps
        env, params = E.HouseholdEnv(), self.params()
        alice, bob = make_agent("alice"), make_agent("hp")
        reset = jax.vmap(env.reset_env, in_axes=(0, None))
        step = jax.vmap(env._auto_reset_step, in_axes=(0, 0, 0, None))
        init_a, init_b = jax.vmap(alice.init), jax.vmap(bob.init)
        act_a, act_b = jax.vmap(alice.act), jax.vmap(bob.act)

        def body(k_run: jax.Array, carry, t):
            obs, state, mem_a, mem_b, episodes, valid, reward = carry
            ka, kb, k_step, k_init = jax.random.split(jax.random.fold_in(k_run, t), 4)
            a, mem_a = act_a(jax.random.split(ka, n), mem_a, state, mem_b)
            b, mem_b = act_b(jax.random.split(kb, n), mem_b, state, mem_a)
            obs, state, rewards, dones, info = step(jax.random.split(k_step, n), state, {"alice": a, "bob": b}, params)
            done = dones["__all__"]
            keys = jax.random.split(k_init, (2, n))
            fresh_a, fresh_b = init_a(keys[0], state), init_b(keys[1], state)
            pick = lambda new, old: jax.tree_util.tree_map(  # noqa: E731
                lambda x, y: jnp.where(done.reshape((-1,) + (1,) * (x.ndim - 1)), x, y), new, old
            )
            mem_a, mem_b = pick(fresh_a, mem_a), pick(fresh_b, mem_b)
            episodes = episodes + done.astype(jnp.uint32)
            valid = valid + info["action_valid"].astype(jnp.uint32)
            return (obs, state, mem_a, mem_b, episodes, valid, reward + rewards["alice"]), None

        def run(key: jax.Array) -> dict[str, jax.Array]:
            k_reset, k_init, k_run = jax.random.split(key, 3)
            obs, state = reset(jax.random.split(k_reset, n), params)
            keys = jax.random.split(k_init, (2, n))
            mem_a, mem_b = init_a(keys[0], state), init_b(keys[1], state)
            zeros = (jnp.zeros(n, jnp.uint32), jnp.zeros((n, 2), jnp.uint32), jnp.zeros(n, jnp.float32))
            carry = (obs, state, mem_a, mem_b, *zeros)
            carry = jax.lax.scan(functools.partial(body, k_run), carry, jnp.arange(steps))[0]
            obs, _, _, _, episodes, valid, reward = carry
            return {
                "episodes": jnp.sum(episodes, dtype=jnp.uint32),
                "valid": jnp.sum(valid, axis=0, dtype=jnp.uint32),
                "reward": jnp.sum(reward),
                "checksum": tree_checksum(obs),
            }

        return run


_COMPILED: dict[Workload, tuple[Any, float]] = {}


def compile_workloads(workloads: Iterable[Workload], workers: int = 1) -> list[tuple[Any, float]]:
    """Returns ``(compiled, compile_s)`` per workload, in order, each compiled once per process
    (``core.timing.compile_cached``: traced here, compiled in ``workers`` threads)."""
    return compile_cached(workloads, _COMPILED, workers)


def row_key(workload: Workload, repeats: int, seed: int) -> str:
    """Returns the key naming every parameter of ``workload``'s row (the GPU suite resumes by it)."""
    w = workload
    return f"{w.mode}|N={w.num_envs}|T={w.steps}|repeats={repeats}|split={w.split}|task_seed={w.task_seed}|seed={seed}"


def measure_workload(workload: Workload, repeats: int = 3, seed: int = 0) -> dict[str, Any]:
    """Returns one row of ``measure`` for ``workload`` (compiling it unless ``compile_workloads`` already did)."""
    from jaxsoc.core.timing import time_compiled

    repeats = positive_int("repeats", repeats)
    ((compiled, compile_s),) = compile_workloads([workload])
    output, run_s = time_compiled(compiled, jax.random.key(seed), repeats)
    out = jax.device_get(output)
    w = workload
    steps = w.num_envs * w.steps
    rate = steps / run_s
    params = w.params()
    valid = [int(v) for v in out["valid"]]
    return {
        "key": row_key(w, repeats, seed),
        "mode": w.mode,
        "env": "HelperEnv" if w.mode == "helper" else "HouseholdEnv",
        "actions": MODE_TEXT[w.mode],
        "num_envs": w.num_envs,
        "steps": w.steps,
        "repeats": repeats,
        "seed": seed,
        "split": w.split,
        "task_seed": w.task_seed,
        "tasks": int(params.tasks.nodes.cls.shape[0]),
        "max_steps": int(params.max_steps),
        "compile_s": compile_s,
        "run_s": run_s,
        "env_steps": steps,
        "steps_per_s": rate,
        "agent_actions_per_s": W.NUM_CHARACTERS * rate,
        "reference_actions_per_s": REFERENCE_ACTIONS_PER_S,
        "ratio_unity": rate / REFERENCE_ACTIONS_PER_S,
        "episodes_ended": int(out["episodes"]),
        "valid_actions": valid,
        "valid_fraction": [v / steps for v in valid],
        "reward_sum": float(out["reward"]),
        "obs_checksum": int(out["checksum"]),
        **device_info(),
    }


def measure(
    sizes: Sequence[int],
    modes: Sequence[str] = RANDOM_MODES,
    steps: int = 100,
    repeats: int = 3,
    seed: int = 0,
    *,
    split: str = "train",
    task_seed: int = 0,
    workers: int = 1,
) -> list[dict[str, Any]]:
    """Measures random-action household steps/s at each number of parallel worlds, for each action mode.

    Args:
        sizes: parallel households per program (``num_envs``).
        modes: action modes (``MODES``).
        steps: time steps per program call (``T``, one ``lax.scan``).
        repeats: timed calls after a warm-up; the best is kept.
        seed: the key of the warm-up call (timed calls fold in 1, 2, ...).
        split: the task bank the worlds reset from (``tasks.SPLITS``).
        task_seed: the seed the task set is built from.
        workers: programs compiled at once (their ``compile_s`` then share the machine).

    Returns:
        One dict per (mode, size), modes outer: ``key``, ``mode``, ``env``, ``actions`` (the mode in words),
        ``num_envs``, ``steps``, ``repeats``, ``seed``, ``split``, ``task_seed``, ``tasks`` (bank size),
        ``max_steps``, ``compile_s``, ``run_s`` (best call), ``env_steps`` (``num_envs * steps``),
        ``steps_per_s``, ``agent_actions_per_s`` (2 per step), ``reference_actions_per_s`` (10),
        ``ratio_unity`` (``steps_per_s / 10``), ``episodes_ended``, ``valid_actions`` ([Alice, Bob] actions
        carried out in the warm-up call), ``valid_fraction`` (the same over ``env_steps``), ``reward_sum``,
        ``obs_checksum``, ``device``, ``platform``, ``jax``.
    """
    sizes = [positive_int("size", n) for n in sizes]
    positive_int("steps", steps)
    positive_int("repeats", repeats)
    workloads = [Workload(check_mode(m), n, steps, split, task_seed) for m in modes for n in sizes]
    compile_workloads(workloads, workers)
    return [measure_workload(w, repeats, seed) for w in workloads]


def _num(x: Any, spec: str = ".3g") -> str:
    return "–" if x is None else format(x, spec)


def rate_cells(r: dict[str, Any]) -> str:
    """Returns a measured row's first markdown cells: ``| mode | env | N | T | steps/s | agent actions/s | ratio
    to one Unity process | actions carried out (Alice, Bob) |``."""
    alice, bob = r["valid_fraction"]
    return (
        f"| {r['mode']} | {r['env']} | {r['num_envs']:,} | {r['steps']} | {_num(r['steps_per_s'])} | "
        f"{_num(r['agent_actions_per_s'])} | {_num(r['ratio_unity'], ',.0f')} | {alice:.2f}, {bob:.2f} |"
    )


def format_table(rows: Sequence[dict[str, Any]]) -> str:
    """Returns ``rows`` (``measure``'s) as a markdown table, steps/s against parallel households per mode: mode,
    N, T, steps/s, agent actions/s, the ratio to one Unity process, the fraction of Alice's and Bob's actions
    carried out, episodes ended, compile seconds; a row with an ``error`` shows it instead of rates. A sentence
    on the reference follows."""
    lines = [
        "| mode | env | N | T | steps/s | agent actions/s | × one Unity process | actions valid (Alice, Bob) | "
        "episodes ended | compile s |",
        "|---|---|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    for r in rows:
        if r.get("error"):
            lines.append(f"| {r['mode']} | {r.get('env', '–')} | {r['num_envs']:,} | {r['steps']} | {r['error']} |||||")
            continue
        lines.append(f"{rate_cells(r)} {r['episodes_ended']:,} | {_num(r['compile_s'], '.1f')} |")
    modes = [m for m in MODES if any(r.get("mode") == m for r in rows)]
    legend = "; ".join(f"{m}: {MODE_TEXT[m]}" for m in modes)
    return (
        f"Actions ({legend}).\n\n"
        + "\n".join(lines)
        + f"\n\nOne step advances one household by one time step, both characters acting. The reference is the "
        f"paper's {REFERENCE_ACTIONS_PER_S:.0f} actions/s per Unity process (quoted, not measured); the ratio counts "
        "a step of two actions as one."
    )
