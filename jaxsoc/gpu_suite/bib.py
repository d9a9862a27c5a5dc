"""The GPU suite's BIB part: how fast BIB episodes are generated and rendered (``jaxsoc.envs.bib.throughput``).

Two kinds of rows: ``"background_set"``, the headline, the whole background set (28,000 episodes x 9 trials)
generated and rendered at 84x84 in batches, its measured seconds against the issue's target (``TARGET_S``,
on an H100); and ``"throughput"``, one row per number of episodes generated in parallel (generate ep/s,
generate+render ep/s, frames/s, compile seconds). Every program is compiled first, in parallel threads (the
headline's batch, 4,096 by default, is one of the sizes, so its program serves both); the headline runs next
(it is what the issue asks for), then the throughput rows, smallest first, each only when the time the last
rate suggests is left. A program that runs out of device memory gives a row with its
``error`` instead of stopping the part.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from jaxsoc.envs.bib import throughput
from jaxsoc.envs.bib import world as W
from jaxsoc.gpu_suite.core import Context, guarded_oom

#: the issue's target: the background set generated and rendered in at most this many seconds on an H100
TARGET_S = 60.0
PARAMS = {"video": W.BIBParams(), "compact": W.BIBParams.compact()}


def _keys(p: dict) -> tuple[str, dict[int, str]]:
    """Returns the row keys of the part's parameters ``p``: the background set's and ``{size: key}``."""
    common = f"{p['params']}|task={p['task']}|size={p['render_size']}|chunk_mib={p['chunk_mib']}|seed={p['seed']}"
    episodes = p["background_episodes"] or throughput.BACKGROUND_EPISODES
    set_key = f"background_set|{common}|batch={p['background_batch']}|episodes={episodes}"
    return set_key, {n: f"throughput|{common}|N={n}|repeats={p['repeats']}" for n in p["sizes"]}


def bib(ctx: Context) -> Iterator[dict]:
    """Yields the background-set row, then a throughput row per size in ``ctx.params["sizes"]`` (see the
    module docstring); parameters: ``params`` ("video" or "compact"), ``task`` (None: the background mix),
    ``sizes``, ``repeats``, ``render_size``, ``chunk_mib``, ``background_batch``, ``background_episodes``
    (None: all 28,000), ``target_s``, ``seed``."""
    p = ctx.params
    params, task, size, seed = PARAMS[p["params"]], p["task"], p["render_size"], p["seed"]
    chunk = p["chunk_mib"] << 20
    set_key, size_keys = _keys(p)
    todo_set = ctx.previous(set_key) is None
    todo_sizes = [n for n, key in size_keys.items() if ctx.previous(key) is None]
    for key in (set_key, *size_keys.values()):
        if ctx.previous(key) is not None:
            yield ctx.previous(key)
    if not (todo_set or todo_sizes) or ctx.out_of_time(0):
        return
    workloads = [throughput.Workload(p["background_batch"], params, size, task, chunk)] if todo_set else []
    for n in todo_sizes:
        workloads += [throughput.Workload(n, params, None, task), throughput.Workload(n, params, size, task, chunk)]
    start = time.perf_counter()
    throughput.compile_workloads(workloads, ctx.workers)
    ctx.log(f"compiled {len(workloads)} programs in {time.perf_counter() - start:.1f} s")
    if ctx.out_of_time(0):  # a rerun loads them from the compilation cache
        return
    rate = (ctx.previous(set_key) or {}).get("episodes_per_s")
    if todo_set:
        row = _background_row(p, params, chunk)
        rate = row.get("episodes_per_s")
        done = f"{row['seconds']:.1f} s" if row.get("seconds") is not None else row.get("error")
        ctx.log(f"background set of {row.get('episodes_generated')} episodes: {done}")
        yield {**row, "key": set_key}
    for n in todo_sizes:
        need = 0.0 if rate is None else (1 + p["repeats"]) * 2 * n / rate
        if ctx.out_of_time(need):
            return
        fallback = {"episodes": n, "params": p["params"], "frames_per_trial": params.num_frames}
        measure = lambda n=n: throughput.measure_size(n, params, size, p["repeats"], seed, task, chunk)  # noqa: E731
        row = guarded_oom(measure, fallback)
        rate = row.get("episodes_per_s") or rate
        yield {**row, "kind": "throughput", "key": size_keys[n]}


def _background_row(p: dict, params: W.BIBParams, chunk: int) -> dict:
    """Returns the background-set row: ``throughput.background_set_seconds`` with the target and verdict."""

    def measure() -> dict:
        return throughput.background_set_seconds(
            params,
            p["background_batch"],
            p["render_size"],
            episodes=p["background_episodes"],
            seed=p["seed"],
            task=p["task"],
            chunk_bytes=chunk,
        )

    fallback = {"params": p["params"], "batch": p["background_batch"], "seconds": None, "full_set": False}
    row = guarded_oom(measure, fallback)
    met = row["seconds"] <= p["target_s"] if row.get("seconds") is not None and row["full_set"] else None
    return {**row, "kind": "background_set", "target_s": p["target_s"], "meets_target": met}


def _verdict(row: dict) -> str:
    if row.get("error"):
        return "–"
    if not row.get("full_set"):
        return f"– ({row['episodes']:,} of {row['set_episodes']:,} episodes)"
    return "pass" if row["meets_target"] else "**FAIL**"


def _num(x: Any, spec: str = ".3g") -> str:
    return "–" if x is None else format(x, spec)


def render_bib(rows: list[dict]) -> str:
    """Returns the part's markdown: the background-set table (seconds against the target, pass or fail) and
    the throughput table (``throughput.format_table``)."""
    sets = [r for r in rows if r.get("kind") == "background_set"]
    sizes = sorted((r for r in rows if r.get("kind") == "throughput"), key=lambda r: r["episodes"])
    lines = [
        "| params | episodes generated | batches × batch | frames | seconds | compile s | episodes/s | frames/s | "
        "target | pass |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in sets:
        if r.get("error"):
            lines.append(f"| {r['params']} | – | – × {r['batch']:,} | – | {r['error']} | – | – | – | – | – |")
            continue
        lines.append(
            f"| {r['params']} | {r['episodes_generated']:,} | {r['batches']} × {r['batch']:,} | {r['frames']:,} | "
            f"{r['seconds']:.1f} | {r['compile_s']:.1f} | {_num(r['episodes_per_s'])} | {_num(r['frames_per_s'])} | "
            f"≤{r['target_s']:.0f} s | {_verdict(r)} |"
        )
    head = (
        "The background set (28,000 episodes × 9 trials, the last batch padded) generated and rendered at 84×84; "
        "seconds from the first batch to the last result, compilation apart.\n\n"
    )
    text = head + "\n".join(lines) if sets else ""
    if sizes:
        text += ("\n\n" if text else "") + throughput.format_table(sizes)
    return text
