"""EXCALIBUR's throughput: environment steps per second of ``N`` houses stepped together (``benchmarks/
excalibur_throughput.py`` prints the table; the GPU suite's ``excalibur`` part measures the same programs).

Modes (``MODES``):

- ``random``: ``EXCALIBUR-v0`` (answer rewards only), a uniformly random valid action per step (``action_mask``:
  the seven moves and interactions in phases I and III, STOP included, so episodes run through all four phases;
  a random answer in II and IV), auto-reset from the train bank;
- ``knowledge``: the same on ``EXCALIBUR-NoveltyQA-v0``, whose reward computes the knowledge accuracy (a relation
  table and every question answered from what was seen) at every exploration step;
- ``oracle``: the oracle explorer (``agents.OracleExplorer``) choosing every action, on ``EXCALIBUR-v0``.

House generation (``measure_houses``): ``houses.generate_batch`` of ``N`` houses of the default configuration
(2 x 2 rooms of 7 cells) in one jitted call, questions not attached (``bank.make_bank`` filters them on the host
afterwards; ``measure_houses`` times that too when asked).

No reference implementation of EXCALIBUR exists to compare with (the original runs AI2-THOR, a Unity renderer,
at tens of steps per second per process): the table gives absolute rates only.
"""

from __future__ import annotations

import dataclasses
import time

import jax
import jax.numpy as jnp

from jaxsoc.core.autoreset import select_rows

MODES = ("random", "knowledge", "oracle")
_ENV_IDS = {"random": "EXCALIBUR-v0", "knowledge": "EXCALIBUR-NoveltyQA-v0", "oracle": "EXCALIBUR-v0"}


@dataclasses.dataclass(frozen=True)
class Workload:
    """``num_envs`` houses stepped ``steps`` times in ``mode`` (``MODES``)."""

    mode: str
    num_envs: int
    steps: int

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}; choose from {MODES}")
        if self.num_envs < 1 or self.steps < 1:
            raise ValueError(f"num_envs and steps must be >= 1, got {self.num_envs}, {self.steps}")

    @property
    def key(self) -> str:
        return f"{self.mode}|envs={self.num_envs}|steps={self.steps}"


def program(w: Workload):
    """Returns ``run(key) -> float32``: the workload's ``N x T`` steps in one jittable function (its result, the
    summed reward, keeps the work alive)."""
    import jaxsoc

    env, params = jaxsoc.make(_ENV_IDS[w.mode])
    agent = None
    if w.mode == "oracle":
        from jaxsoc.envs.excalibur.agents import OracleExplorer

        agent = OracleExplorer()
    step = jax.vmap(env._auto_reset_step, in_axes=(0, 0, 0, None))

    def run(key):
        k_reset, k_agent, k_steps = jax.random.split(key, 3)
        obs, state = jax.vmap(env.reset_env, in_axes=(0, None))(jax.random.split(k_reset, w.num_envs), params)
        memory = None if agent is None else jax.vmap(agent.init)(jax.random.split(k_agent, w.num_envs), state)

        def body(carry, k):
            obs, state, memory, total = carry
            k_act, k_env = jax.random.split(k)
            act_keys = jax.random.split(k_act, w.num_envs)
            if agent is None:
                logits = jnp.where(obs["action_mask"], 0.0, -jnp.inf)
                action = jax.vmap(jax.random.categorical)(act_keys, logits).astype(jnp.int32)
            else:
                action, memory = jax.vmap(agent.act)(act_keys, memory, state)
            obs, stepped, reward, terminated, truncated, _ = step(
                jax.random.split(k_env, w.num_envs), state, action, params
            )
            if agent is not None:  # fresh memories where an episode ended
                fresh = jax.vmap(agent.init)(act_keys, stepped)
                done = terminated | truncated
                memory = select_rows(done, fresh, memory)
            return (obs, stepped, memory, total + reward.sum()), None

        carry = (obs, state, memory, jnp.float32(0.0))
        (_, _, _, total), _ = jax.lax.scan(body, carry, jax.random.split(k_steps, w.steps))
        return total

    return run


def measure(w: Workload, repeats: int = 2, seed: int = 0) -> dict:
    """Returns a row: the workload, ``compile_s``, ``run_s`` (the best of ``repeats`` after a warm-up call) and
    ``steps_per_s`` (``N x T / run_s``)."""
    key = jax.random.key(seed)
    start = time.perf_counter()
    compiled = jax.jit(program(w)).lower(key).compile()
    compile_s = time.perf_counter() - start
    jax.block_until_ready(compiled(key))
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(compiled(key))
        best = min(best, time.perf_counter() - start)
    return {
        "key": w.key,
        "mode": w.mode,
        "num_envs": w.num_envs,
        "steps": w.steps,
        "repeats": repeats,
        "compile_s": compile_s,
        "run_s": best,
        "steps_per_s": w.num_envs * w.steps / best,
        "device": jax.devices()[0].device_kind,
    }


def measure_houses(num_houses: int, repeats: int = 2, seed: int = 0, bank: bool = False) -> dict:
    """Returns a row for generating ``num_houses`` houses of ``bank.DEFAULT_CONFIG`` in one jitted
    ``houses.generate_batch`` call: ``compile_s`` (the first call), ``run_s`` (the best of ``repeats`` calls
    after it, each with a new key so nothing is reused) and ``houses_per_s`` (``N / run_s``). With ``bank``,
    also ``bank_s``: the seconds of ``bank.make_bank("train", num_houses=N)`` (generation and the host-side
    question filtering, compiled already), and ``bank_houses`` (the houses it kept)."""
    from jaxsoc.envs.excalibur import bank as B
    from jaxsoc.envs.excalibur import houses as H

    if isinstance(num_houses, bool) or num_houses < 1 or repeats < 1:
        raise ValueError(f"num_houses and repeats must be >= 1, got {num_houses}, {repeats}")
    config = B.DEFAULT_CONFIG
    start = time.perf_counter()
    jax.block_until_ready(H.generate_batch(jax.random.key(seed), config, num_houses))
    compile_s = time.perf_counter() - start
    best = float("inf")
    for r in range(repeats):
        key = jax.random.key(seed + 1 + r)
        start = time.perf_counter()
        jax.block_until_ready(H.generate_batch(key, config, num_houses))
        best = min(best, time.perf_counter() - start)
    row = {
        "key": f"houses|n={num_houses}|repeats={repeats}",
        "mode": "houses",
        "num_envs": num_houses,
        "repeats": repeats,
        "compile_s": compile_s,
        "run_s": best,
        "houses_per_s": num_houses / best,
        "device": jax.devices()[0].device_kind,
    }
    if bank:
        B.make_bank("train", num_houses=num_houses)  # compiles the filtering's jitted parts
        start = time.perf_counter()
        kept, _ = B.make_bank("train", seed=1, num_houses=num_houses)
        row["bank_s"] = time.perf_counter() - start
        row["bank_houses"] = int(kept.num_questions.shape[0])
    return row


def format_houses_table(rows: list[dict]) -> str:
    """Returns a markdown table of ``measure_houses`` rows: N, houses/s, compile seconds, bank seconds (– when
    not measured)."""
    lines = ["| houses generated at once | houses/s | compile (s) | bank with questions (s) |", "|---:|---:|---:|---:|"]
    for r in rows:
        bank = f"{r['bank_s']:.1f} ({r['bank_houses']} kept)" if "bank_s" in r else "–"
        lines.append(f"| {r['num_envs']:,} | {r['houses_per_s']:,.0f} | {r['compile_s']:.1f} | {bank} |")
    return "\n".join(lines)


def format_table(rows: list[dict]) -> str:
    """Returns a markdown table of ``measure`` rows: mode, N, T, steps/s, compile seconds."""
    lines = ["| mode | N | T | steps/s | compile (s) |", "|---|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(
            f"| {r['mode']} | {r['num_envs']:,} | {r['steps']} | {r['steps_per_s']:,.0f} | {r['compile_s']:.1f} |"
        )
    return "\n".join(lines)
