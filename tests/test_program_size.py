"""Program size (``jaxsoc.bench.program``): the jaxpr walker counts what it says, and the programs of a few ids do not
grow more than 10% in equations over the committed table ``benchmarks/results/program_size_cpu.json``.

The size checks only trace (``jax.make_jaxpr`` on abstract inputs: nothing is compiled). Regenerate the table after a
change that is meant to grow a program: ``JAX_PLATFORMS=cpu python scripts/program_size.py`` (about half an hour on
2 cores; it also rewrites the table's block in ``benchmarks/RESULTS.md``).
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

from jaxsoc.bench import program
from jaxsoc.bench.jaxpr_walk import jaxpr_stats, sub_jaxprs

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "benchmarks" / "results" / "program_size_cpu.json"
BEFORE = ROOT / "benchmarks" / "results" / "program_size_before_cpu.json"
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
#: the ids traced in CI: classic MiniGrid, the smallest and the largest BabyAI level families, and CHAIC's
#: two-agent view (the one social view that traces in a few seconds)
CI_IDS = (
    "MiniGrid-Empty-8x8-v0",
    "MiniGrid-DoorKey-8x8-v0",
    "BabyAI-GoToLocal-v0",
    "BabyAI-BossLevel-v0",
    "CHAIC-Normal-v0",
)
#: how much a program's equations may grow over the committed figure
TOLERANCE = 0.10
REGENERATE = "JAX_PLATFORMS=cpu python scripts/program_size.py"


# ---------------------------------------------------------------------------------------------------- the walker


def _subs(eqn) -> list:
    """The sub-jaxprs of one equation's parameters."""
    return [sub for value in eqn.params.values() for sub in sub_jaxprs(value)]


def test_walker_counts_the_equations_of_sub_jaxprs_once_per_appearance():
    inner = jax.jit(lambda y: jnp.sin(y) * 2.0 + 1.0)

    def body(carry, x):
        carry = jax.lax.cond(x > 0, lambda c: c + x, lambda c: c - x, carry)
        return carry, carry * 2.0

    def f(xs):
        total, ys = jax.lax.scan(body, 0.0, xs)
        return inner(total) + inner(ys.sum())  # one sub-jaxpr, two appearances

    closed = jax.make_jaxpr(f)(jnp.ones(7))
    top = closed.jaxpr.eqns
    scan = next(e for e in top if e.primitive.name == "scan")
    scan_body = scan.params["jaxpr"].jaxpr
    cond = next(e for e in scan_body.eqns if e.primitive.name == "cond")
    branches = sum(len(b.jaxpr.eqns) for b in cond.params["branches"])
    calls = [subs[0] for e in top if e.primitive.name != "scan" and (subs := _subs(e))]
    assert len(calls) == 2 and calls[0] is calls[1]  # jax traces the jitted function once
    called = len(calls[0].eqns)
    assert branches >= 2 and called >= 3

    stats = jaxpr_stats(closed)
    assert stats["eqns"] == len(top) + len(scan_body.eqns) + branches + 2 * called
    assert stats["unique_eqns"] == stats["eqns"] - called
    assert (stats["scans"], stats["conds"], stats["whiles"], stats["dynamic_whiles"]) == (1, 1, 0, 0)
    assert stats["loop_trips"] == 7 and stats["serial_iterations"] == 7
    assert stats["eqns"] > len(top)  # a walker that stays at the top level fails here


def test_walker_trip_counts_nested_loops_and_data_dependent_whiles():
    def nested(x):
        def outer(c, _):
            return jax.lax.scan(lambda d, _: (d * 2.0, None), c, None, length=4)[0], None

        x = jax.lax.scan(outer, x, None, length=3)[0]
        counter, x = jax.lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] + 1.0), (0, x))
        return x

    stats = jaxpr_stats(jax.make_jaxpr(nested)(1.0))
    assert (stats["scans"], stats["whiles"], stats["dynamic_whiles"]) == (2, 1, 0)
    assert stats["loop_trips"] == 3 + 4 + 10
    assert stats["serial_iterations"] == 3 * (1 + 4) + 10

    def data_dependent(x):
        return jax.lax.while_loop(lambda c: c < x, lambda c: c * 2.0, 1.0)

    stats = jaxpr_stats(jax.make_jaxpr(jax.vmap(data_dependent))(jnp.ones(3)))
    assert (stats["whiles"], stats["dynamic_whiles"], stats["loop_trips"]) == (1, 1, 0)


def test_hlo_helpers_strip_metadata_and_count_kernels_through_control_flow():
    text = """HloModule jit_f, entry_computation_layout={(f32[4])->f32[4]}

FileNames
1 "/a/very/long/path.py"

%fused_add (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %a = f32[4]{0} add(%p, %p), metadata={op_name="jit(f)/add" stack_frame_id=1}
}

%body (t: (s32[], f32[4])) -> (s32[], f32[4]) {
  %t = (s32[], f32[4]{0}) parameter(0)
  %i = s32[] get-tuple-element(%t), index=0
  %x = f32[4]{0} get-tuple-element(%t), index=1
  %f = f32[4]{0} fusion(%x), kind=kLoop, calls=%fused_add, metadata={op_name="jit(f)/while/body/add"}
  %c = s32[] custom-call(%i), custom_call_target="inc"
  ROOT %r = (s32[], f32[4]{0}) tuple(%c, %f)
}

%cond (t: (s32[], f32[4])) -> pred[] {
  %t = (s32[], f32[4]{0}) parameter(0)
  %i = s32[] get-tuple-element(%t), index=0
  %k = s32[] constant(10)
  ROOT %lt = pred[] compare(%i, %k), direction=LT
}

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  %z = s32[] constant(0)
  %t = (s32[], f32[4]{0}) tuple(%z, %x)
  %w = (s32[], f32[4]{0}) while(%t), condition=%cond, body=%body
  ROOT %o = f32[4]{0} get-tuple-element(%w), index=1
}
"""
    stripped = program.strip_hlo_metadata(text)
    assert "metadata" not in stripped and "long/path" not in stripped and stripped.startswith("HloModule")
    entry, comps = program.hlo_computations(stripped)
    assert entry == "main" and sum(map(len, comps.values())) == 2 + 6 + 4 + 5
    # the body's fusion and custom call, the condition's compare; not the fused add, parameters, tuples, constants
    assert program.hlo_kernel_count(stripped) == 3


def test_measure_function_compiles_and_reads_the_cost_analysis():
    figures = program.measure_function(
        lambda x: jnp.tanh(x @ x.T).sum(0), (jax.ShapeDtypeStruct((4, 8), jnp.float32),), 4
    )
    assert set(figures) == set(program.PROGRAM_FIELDS)
    assert figures["eqns"] >= 3 and figures["compile_s"] > 0 and figures["hlo_bytes"] > 0
    assert figures["hlo_instructions"] > 0 and figures["flops_per_world"] > 0 and figures["bytes_per_world"] > 0
    assert figures["kernels_per_step"] is None or jax.default_backend() != "cpu"
    traced = program.measure_function(jnp.sin, (jax.ShapeDtypeStruct((3,), jnp.float32),), 1, compile=False)
    assert traced["eqns"] == 1 and traced["compile_s"] is None and traced["hlo_bytes"] is None


# ----------------------------------------------------------------------------------------- the committed figures


def _committed() -> dict:
    return json.loads(TABLE.read_text())


@pytest.mark.parametrize("env_id", CI_IDS)
def test_programs_do_not_grow_over_the_committed_figures(env_id):
    data = _committed()
    old = {r["program"]: r for r in data["rows"] if r["id"] == env_id and r.get("program") is not None}
    assert old, f"{env_id} is not in {TABLE.relative_to(ROOT)}: regenerate it ({REGENERATE})"
    num_envs = next(iter(old.values()))["num_envs"]  # the pooled step's pools depend on it
    result = program.measure_program(env_id, num_envs=num_envs, compile=False)
    assert set(result["programs"]) == set(old), f"{env_id}: programs {sorted(result['programs'])} != {sorted(old)}"
    grown = []
    for name, figures in result["programs"].items():
        before, now = old[name]["eqns"], figures["eqns"]
        if now > before * (1 + TOLERANCE):
            grown.append(f"{env_id} {name}: {before:,} -> {now:,} equations (+{now / before - 1:.0%})")
    assert not grown, (
        f"programs grew more than {TOLERANCE:.0%} over {TABLE.relative_to(ROOT)}:\n  "
        + "\n  ".join(grown)
        + f"\nIf the growth is intended, regenerate the table: {REGENERATE}"
    )


def test_the_committed_tables_cover_the_ci_ids_and_every_program():
    for path in (TABLE, BEFORE):
        data = json.loads(path.read_text())
        traced = {(r["id"], r["program"]) for r in data["rows"] if r.get("program") is not None}
        for env_id in CI_IDS:  # a multi-agent view (CHAIC-Normal-v0) has no batched step
            assert {p for i, p in traced if i == env_id} >= {"reset_env", "step_env", "vmap_step"}, (path.name, env_id)
        compiled = program.compiled_rows(data["rows"])
        assert {r["id"] for r in compiled} >= set(program.REPRESENTATIVE_IDS) | set(program.FAMILY_PROGRAMS)
        assert all(r["hlo_bytes"] > 0 and r["flops_per_world"] is not None for r in compiled)


def test_results_md_blocks_are_what_the_tables_render():
    text = RESULTS.read_text()
    before = json.loads(BEFORE.read_text())
    assert program.read_block(text, "before") == program.results_block(before).strip("\n")
    if TABLE.exists():
        after = program.results_block(_committed(), before)
        assert program.read_block(text, "after") == after.strip("\n"), (
            "rerun: python scripts/program_size.py --render-only"
        )


# --------------------------------------------------------------------------------------------------- the command


def test_bench_program_command_prints_and_writes_rows(tmp_path, capsys):
    from jaxsoc.cli import main

    out = tmp_path / "rows.json"
    assert main(["bench", "--program", "MiniGrid-Empty-5x5-v0,", "--no-compile", "--json", str(out)]) == 0
    table = capsys.readouterr().out
    assert "| MiniGrid-Empty-5x5-v0 | batched_step |" in table
    rows = json.loads(out.read_text())
    assert [r["program"] for r in rows] == list(program.PROGRAMS) and all(r["eqns"] > 0 for r in rows)
    assert main(["bench", "--program", "MiniGrid-Empty-5x5"]) == 2
    assert "MiniGrid-Empty-5x5-v0" in capsys.readouterr().err  # a close match is suggested
    assert main(["bench", "--program", "all", "--steps", "3"]) == 2


def test_program_ids_expand_all_and_default_to_the_representative_ids():
    import jaxsoc

    assert program.program_ids(None) == list(program.REPRESENTATIVE_IDS)
    everything = program.program_ids(["all"])
    assert everything == jaxsoc.registered_envs() + list(program.FAMILY_PROGRAMS)
    assert program.program_ids(["MiniGrid-Empty-5x5-v0, BIB-renderer", "MiniGrid-Empty-5x5-v0"]) == [
        "MiniGrid-Empty-5x5-v0",
        "BIB-renderer",
    ]
