"""The GPU suite's EXCALIBUR part: steps per second of ``N`` houses (``jaxsoc.envs.excalibur.throughput``) against
the issue's target of ``TARGET_STEPS_PER_S`` on one H100, judged on the random-action mode at the largest size.

One row per (size, mode), smallest size first, timed by ``core.measure_programs`` (compiled apart, a warm-up call,
then the best of ``repeats``); a program that runs out of device memory fails the part after the smaller rows are
saved.
"""

from __future__ import annotations

from collections.abc import Iterator

from jaxsoc.gpu_suite.core import Context, Program, measure_programs

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
