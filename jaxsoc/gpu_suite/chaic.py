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
from jaxsoc.gpu_suite import chaic_learners
from jaxsoc.gpu_suite.core import Context, Part, guarded_oom

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


#: the family's parts of the suite (``core.family_parts`` collects them; ``rank``: the place in the suite's order)
PARTS: tuple[Part, ...] = (
    Part(
        "chaic",
        "CHAIC: world events and agent steps per second, random actions and the rule-based agents",
        chaic,
        render_chaic,
        budget_s=90,  # taken from classic, babyai, bot_success and bib_learners (30 s each); 30 s to chaic_learners
        params=dict(
            modes=list(throughput.MODES),
            task="normal",
            sizes=[65_536, 4096],
            steps=dict(uniform=100, valid=100, helper=25, agents=50),
            repeats=2,
            split="train",
            task_seed=0,
            seed=0,
            target_agent_steps_per_s=TARGET_AGENT_STEPS_PER_S,
            target_modes=["uniform", "valid", "helper"],
        ),
        toy=dict(
            modes=["uniform", "agents"],  # the env and the rule agents; every mode is tested in test_chaic_throughput
            task="normal",
            sizes=[4],
            steps=3,
            repeats=1,
            split="train",
            task_seed=0,
            seed=0,
            target_agent_steps_per_s=TARGET_AGENT_STEPS_PER_S,
            target_modes=["uniform", "valid", "helper"],
        ),
        note="`envs.chaic.throughput`: N worlds of the normal task's train bank stepped T times in one jitted "
        "`lax.scan` with auto-reset (uniform, valid: `ChaicEnv`, one event per step; helper: `ChaicHelperEnv`, "
        "the rule-based constrained agent inside step, up to 8 events per step; agents: the rule-based constrained "
        "agent and the RHP helper deciding at every event, fresh episodes and memories as episodes end); the "
        "programs of one size compiled together, a warm-up call, then the best of `repeats`. Target (the issue): "
        "≥1e6 agent steps/s (actions started by the two agents) on one H100, judged on the random-action modes at "
        "the largest N; the paper collects 10^4 steps per day in ThreeDWorld on an A10G.",
        rank=100,
    ),
    Part(
        "chaic_learners",
        "CHAIC learners: the PPO helpers' training rates (primitive actions, options)",
        chaic_learners.chaic_learners,
        chaic_learners.render_chaic_learners,
        budget_s=60,  # 30 s each from chaic and household_learners
        params=dict(
            ppo_envs=[256, 2048, 8192],
            num_steps=40,
            options_envs=[256, 2048],
            option_steps=20,
            options_env_args=["", "rooms=true", "partner_run=model:chaic-bm"],
            updates=3,
            repeats=1,
        ),
        toy=dict(ppo_envs=[4], num_steps=4, options_envs=[2], option_steps=2, updates=1, repeats=1),
        note="`gpu_suite/chaic_learners.py`: jitted programs of `updates` PPO updates of the CHAIC helper (the "
        "`chaic` set-encoder network, small preset) on `CHAIC-All-Helper-v0` with reward shaping, the rule-based "
        "constrained agent acting inside every step (up to 8 events per helper step), `num_steps` frames per world "
        "per update, 4 epochs of 4 minibatches; compile apart, a warm-up call, then one timed call. Projection: "
        "8e8 helper steps (10^4 times the paper's 10^4 RL steps per task, 8 tasks). The options helper "
        "(`learners/chaic/options_ppo.py`, `CHAIC-All-Options-v0`, up to 48 events per option): the same "
        "with `option_steps` options per world per update, 2 minibatches, advantages normalised; projection: 1.28e7 "
        "options, 1,000 times the CPU run's PPO stage; its variants with the room options (`rooms=true`) and the "
        "behaviour model stepped in the view at every decision (`partner_run=model:chaic-bm`, the pretrained model).",
        rank=120,
    ),
)
