"""The GPU suite's EXCALIBUR part: steps per second of ``N`` houses (``jaxsoc.envs.excalibur.throughput``) against
the issue's target of ``TARGET_STEPS_PER_S`` on one H100, judged on the random-action mode at the largest size.

One row per (size, mode), smallest size first, timed by ``core.measure_programs`` (compiled apart, a warm-up call,
then the best of ``repeats``); a program that runs out of device memory fails the part after the smaller rows are
saved.
"""

from __future__ import annotations

from collections.abc import Iterator

from jaxsoc.gpu_suite import excalibur_learners
from jaxsoc.gpu_suite.core import Context, Part, Program, measure_programs

#: the issue's target: EXCALIBUR steps per second on one H100 (random valid actions)
TARGET_STEPS_PER_S = 1e8


def _program(mode: str, num_envs: int, steps: int, repeats: int, target: float | None) -> Program:
    from jaxsoc.envs.excalibur import throughput

    w = throughput.Workload(mode, num_envs, steps)

    def finish(compile_s: float, run_s: float, _) -> dict:
        rate = num_envs * steps / run_s
        met = None if target is None else rate >= target
        return {
            "mode": mode,
            "num_envs": num_envs,
            "steps": steps,
            "compile_s": compile_s,
            "run_s": run_s,
            "steps_per_s": rate,
            "target_steps_per_s": target,
            "meets_target": met,
        }

    return Program(w.key, lambda: throughput.program(w), finish, repeats)


def excalibur(ctx: Context) -> Iterator[dict]:
    """Yields one row per size and mode (module docstring). Parameters: ``modes``, ``sizes``, ``steps``,
    ``repeats``, ``target_steps_per_s``, ``target_mode``."""
    p = ctx.params
    largest = max(p["sizes"])
    programs = [
        _program(
            mode,
            n,
            p["steps"],
            p["repeats"],
            p["target_steps_per_s"] if n == largest and mode == p["target_mode"] else None,
        )
        for n in sorted(p["sizes"])
        for mode in p["modes"]
    ]
    yield from measure_programs(ctx, programs)


def render_excalibur(rows: list[dict]) -> str:
    """Returns the part's markdown: one line per row (mode, N, T, steps/s, compile seconds, target, verdict)."""
    lines = ["| mode | N | T | steps/s | compile (s) | target | pass |", "|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        if r.get("error"):
            lines.append(f"| {r.get('mode', '–')} | {r.get('num_envs', '–')} | – | {r['error']} |||| ")
            continue
        target = "–" if r.get("target_steps_per_s") is None else f"{r['target_steps_per_s']:.0e}"
        verdict = "–" if r.get("meets_target") is None else ("pass" if r["meets_target"] else "**FAIL**")
        lines.append(
            f"| {r['mode']} | {r['num_envs']:,} | {r['steps']} | {r['steps_per_s']:.3g} | {r['compile_s']:.1f} | "
            f"{target} | {verdict} |"
        )
    return "\n".join(lines)


#: the family's parts of the suite (``core.family_parts`` collects them; ``rank``: the place in the suite's order)
PARTS: tuple[Part, ...] = (
    Part(
        "excalibur",
        "EXCALIBUR: steps per second of thousands of houses",
        excalibur,
        render_excalibur,
        budget_s=60,  # 30 s each from ppo_paper and bc
        params=dict(
            modes=["random", "knowledge", "oracle"],
            sizes=[4096, 65_536, 262_144],
            steps=100,
            repeats=2,
            target_steps_per_s=TARGET_STEPS_PER_S,
            target_mode="random",
        ),
        toy=dict(
            modes=["random"],
            sizes=[4],
            steps=3,
            repeats=1,
            target_steps_per_s=TARGET_STEPS_PER_S,
            target_mode="random",
        ),
        note="`envs.excalibur.throughput`: N houses of the train bank stepped T times in one jitted `lax.scan` with "
        "auto-reset (random: `EXCALIBUR-v0`, a uniformly random valid action; knowledge: `EXCALIBUR-NoveltyQA-v0`, "
        "whose QA reward answers every question from what was seen at each exploration step; oracle: the oracle "
        "explorer choosing every action, its BFS over the house included); compile apart, a warm-up call, then the "
        "best of `repeats`. Target (the issue): >= 1e8 steps/s on one H100, random mode, largest N.",
        rank=130,
    ),
    Part(
        "excalibur_learners",
        "EXCALIBUR learners: the answerer's and the two PPO explorers' training rates",
        excalibur_learners.excalibur_learners,
        excalibur_learners.render_excalibur_learners,
        budget_s=60,  # 30 s each from registry and bib_learners
        params=dict(
            answerer_houses=[64, 1024, 8192],
            answerer_batches=8,
            ppo_envs=[256, 4096],
            num_steps=80,
            updates=3,
            repeats=1,
        ),
        toy=dict(answerer_houses=[2], answerer_batches=2, ppo_envs=[2], num_steps=8, updates=1, repeats=1),
        note="`gpu_suite/excalibur_learners.py`: the supervised answerer's own training loop "
        "(`learners.excalibur.answerer.train`, small preset, houses generated on the device every batch, questions "
        "drawn on the host), timed by its own clock over the second half of `answerer_batches` batches, host work "
        "included; and jitted programs of `updates` PPO updates of the explorer (excalibur network, tiny preset) on "
        "`EXCALIBUR-QA-v0` with the CPU run's settings and budgets (200 + 50 steps), and of the explorer over the "
        "object memory (`learners.excalibur.explorer`, tiny-memory preset, the answerer run every step for its "
        "reward), `num_steps` frames per world per update; compile apart, a warm-up call, then one timed call. "
        "Projections: 2.56e7 houses and 1.536e9 frames, 1,000 times the CPU runs of the models "
        "`excalibur-answerer` and `excalibur-qa-explorer` / `excalibur-memory-explorer`.",
        rank=140,
    ),
)
