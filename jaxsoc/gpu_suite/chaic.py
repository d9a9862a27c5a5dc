"""The GPU suite's CHAIC part: world events and agent steps per second of CHAIC (``jaxsoc.envs.chaic.throughput``)
against the issue's target of ``TARGET_AGENT_STEPS_PER_S`` on one H100, and the rate of the rule-based agents.

One row per (size, mode), largest size first: the rows of the random-action modes (``target_modes``) at the
largest size carry the target and a verdict on ``agent_steps_per_s`` (actions started by the constrained agent
and the helper per second); the ``"agents"`` mode (the rule-based constrained agent and the RHP helper deciding
at every event) is measured without a target. The programs of one size are compiled together, in parallel
threads, then measured, largest size first, so a part cut by its budget still has the headline rows; each row
is measured only when the time the last rate suggests is left. A program that runs out of device memory gives a
row with its ``error`` instead of stopping the part.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from jaxsoc.envs.chaic import throughput
from jaxsoc.gpu_suite.core import Context, guarded_oom

#: the issue's target: CHAIC agent steps (actions started by the two controllable agents) per second on one H100
TARGET_AGENT_STEPS_PER_S = 1e6


def _steps(p: dict, mode: str) -> int:
    steps = p["steps"]
    return int(steps[mode]) if isinstance(steps, dict) else int(steps)


def chaic(ctx: Context) -> Iterator[dict]:
    """Yields one row per size in ``ctx.params["sizes"]`` (largest first) and mode in ``modes`` (see the module
    docstring); parameters: ``modes`` (``throughput.MODES``), ``task``, ``sizes``, ``steps`` (an int, or one per
    mode), ``repeats``, ``split``, ``task_seed``, ``seed``, ``target_agent_steps_per_s``, ``target_modes`` (the
    modes judged against it)."""
    p = ctx.params
    repeats, seed = p["repeats"], p["seed"]
    sizes = sorted(p["sizes"], reverse=True)
    largest = sizes[0]
    rate = None
    for n in sizes:
        workloads = [
            throughput.Workload(mode, n, _steps(p, mode), p["task"], p["split"], p["task_seed"]) for mode in p["modes"]
        ]
        todo = []
        for w in workloads:
            row = ctx.previous(throughput.row_key(w, repeats, seed))
            if row is not None:
                yield row
            else:
                todo.append(w)
        if not todo:
            continue
        if ctx.out_of_time(0):
            return
        throughput.compile_workloads(todo, ctx.workers)
        ctx.log(f"compiled {len(todo)} programs of N={n}")
        for w in todo:
            need = 0.0 if rate is None else (1 + repeats) * w.num_envs * w.steps / rate
            if ctx.out_of_time(need):
                return
            fallback = {
                "key": throughput.row_key(w, repeats, seed),
                "mode": w.mode,
                "task": w.task,
                "num_envs": w.num_envs,
                "steps": w.steps,
                "repeats": repeats,
            }
            row = guarded_oom(lambda w=w: throughput.measure_workload(w, repeats, seed), fallback)
            rate = row.get("env_steps_per_s") or rate
            judged = w.num_envs == largest and w.mode in p["target_modes"]
            target = p["target_agent_steps_per_s"] if judged else None
            met = None if target is None or row.get("error") else row["agent_steps_per_s"] >= target
            if row.get("agent_steps_per_s"):
                ctx.log(f"{w.mode} N={w.num_envs}: {row['agent_steps_per_s']:.3g} agent steps/s")
            yield {**row, "target_agent_steps_per_s": target, "meets_target": met}


def _verdict(row: dict) -> str:
    if row.get("error") or row.get("meets_target") is None:
        return "–"
    return "pass" if row["meets_target"] else "**FAIL**"


def _num(x: Any, spec: str = ".3g") -> str:
    return "–" if x is None else format(x, spec)


def render_chaic(rows: list[dict]) -> str:
    """Returns the part's markdown: a sentence on the headline (the rows judged at the largest size against the
    target), then one line per row: mode, env, task, N, T, env steps/s, events/s, agent steps/s, frames/s, the
    ratio to the paper's rate, actions started per step and refused, compile seconds, the target and its verdict."""
    rows = sorted(rows, key=lambda r: (-r["num_envs"], throughput.MODES.index(r["mode"])))
    lines = [
        throughput.HEADER + " compile s | target | pass |",
        throughput.HEADER_RULE + "---:|---:|---|",
    ]
    for r in rows:
        if r.get("error"):
            lines.append(
                f"| {r['mode']} | – | {r.get('task', '–')} | {r['num_envs']:,} | {r['steps']} | {r['error']} ||||||||||"
            )
            continue
        lines.append(
            f"{throughput.rate_cells(r)} {_num(r['compile_s'], '.1f')} | "
            f"{_num(r.get('target_agent_steps_per_s'), ',.0f')} | {_verdict(r)} |"
        )
    judged = [r for r in rows if r.get("meets_target") is not None]
    head = (
        f"{sum(r['meets_target'] for r in judged)} of {len(judged)} rows judged at the largest size meet the target "
        "(agent steps/s). "
    )
    modes = "; ".join(f"{m}: {throughput.MODE_TEXT[m]}" for m in throughput.MODES if any(r["mode"] == m for r in rows))
    head += f"Actions: {modes}.\n\n"
    return head + "\n".join(lines) + "\n\n" + throughput.reference_sentence()
