"""The GPU suite's ``registry`` part: random-action steps/s of every minigrid id beyond the ``classic`` and
``babyai`` parts (``bench.minigrid.registry_ids``: the other MiniGrid ids and the bonus BabyAI levels), each with its
own occlusion setting (minigrid's default for the id), BabyAI levels with pooled resets, next to xminigrid's rate
for the ids it shares (``bench.minigrid.XMINIGRID_IDS``) where xminigrid is importable.

One row per (id, N), timed by ``core.measure_programs`` (compiled apart, in parallel; a warm-up call, then the
best of ``repeats``). A part cut off by its budget keeps its rows and resumes on the next call.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

from jaxsoc.gpu_suite.core import Context, Program, measure_programs


def _program(env: str, num_envs: int, steps: int, repeats: int, with_xminigrid: bool) -> Program:
    from jaxsoc.bench.minigrid import compare_row, jaxsoc_scan, measure_xminigrid

    made = {}

    def build():
        made["run"], made["info"] = jaxsoc_scan(env, num_envs, steps)
        return made["run"]

    def finish(compile_s: float, run_s: float, _) -> dict:
        theirs = measure_xminigrid(env, num_envs, steps, repeats) if with_xminigrid else None
        ours = {**made["info"], "compile_s": compile_s, "run_s": run_s, "steps_per_s": num_envs * steps / run_s}
        return compare_row(ours, None, theirs)

    return Program(f"{env}|N={num_envs}|T={steps}|repeats={repeats}", build, finish, repeats)


def registry(ctx: Context) -> Iterator[dict]:
    """Yields one row per id and size (module docstring). Parameters: ``envs`` (None: every
    ``bench.minigrid.registry_ids()``), ``num_envs``, ``steps``, ``repeats``."""
    from jaxsoc.bench.minigrid import registry_ids

    p = ctx.params
    envs = p["envs"] or registry_ids()
    with_xminigrid = importlib.util.find_spec("xminigrid") is not None
    programs = [_program(e, n, p["steps"], p["repeats"], with_xminigrid) for n in p["num_envs"] for e in envs]
    yield from measure_programs(ctx, programs)


def render_registry(rows: list[dict]) -> str:
    """Returns the table: id, N, occlusion, resets, steps/s, compile s, xminigrid's rate and the ratio."""
    lines = [
        "| id | N | see through walls | resets | steps/s | compile s | xminigrid steps/s | × xminigrid |",
        "|---|---:|---|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        theirs, ratio = r.get("xminigrid_steps_per_s"), r.get("ratio_xminigrid")
        lines.append(
            f"| {r['env']} | {r['num_envs']} | {'yes' if r['see_through_walls'] else 'no'} | {r['resets']} | "
            f"{r['steps_per_s']:.3g} | {r['compile_s']:.1f} | {'–' if theirs is None else f'{theirs:.3g}'} | "
            f"{'–' if ratio is None else f'{ratio:.2f}'} |"
        )
    return "\n".join(lines)
