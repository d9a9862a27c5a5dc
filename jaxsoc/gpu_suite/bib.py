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
from jaxsoc.gpu_suite import bib_learners
from jaxsoc.gpu_suite.core import Context, Part, guarded_oom

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


#: the family's parts of the suite (``core.family_parts`` collects them; ``rank``: the place in the suite's order)
PARTS: tuple[Part, ...] = (
    Part(
        "bib",
        "BIB: episodes generated and rendered per second, and the background set",
        bib,
        render_bib,
        budget_s=60,
        params=dict(
            params="video",
            task=None,
            sizes=[1024, 4096, 16384],
            repeats=1,
            render_size=84,
            chunk_mib=1024,
            background_batch=4096,
            background_episodes=None,
            target_s=TARGET_S,
            seed=0,
        ),
        toy=dict(
            params="compact",
            task="single_object",
            sizes=[4],
            repeats=1,
            render_size=84,
            chunk_mib=1024,
            background_batch=4,
            background_episodes=6,
            target_s=TARGET_S,
            seed=0,
        ),
        note="`envs.bib.throughput`: one jitted program per batch generates the background mix "
        "(`dataset.sample_background`, 10:10:4:4) with BIB's video-like params (434 frames per trial), renders "
        "every frame at 84×84 a chunk of episodes at a time and reduces them to a checksum on the device; compile "
        "time apart. The set: 7 batches of 4,096 dispatched back to back, timed to the last result. Target (the "
        "issue): ≤60 s on an H100. Throughput rows: a warm-up call, then the best of `repeats`.",
        rank=70,
    ),
    Part(
        "bib_learners",
        "BIB's learners: training steps per second and the projected time of a full run",
        bib_learners.bib_learners,
        bib_learners.render_bib_learners,
        budget_s=60,  # 30 s went to excalibur_learners
        params=dict(
            kinds=[*bib_learners.KINDS, *bib_learners.VARIANTS],
            config=dict(bib_learners.VARIANTS),
            seeds=3,
            seed=0,
            steps_measured=50,
            background_episodes=None,
            data_seed=0,
            target_minutes=bib_learners.TARGET_MINUTES,
        ),
        toy=dict(
            kinds=["bib-atc", "bib-bc-mlp", "bib-video-rnn"],  # each learner class; compiling is most of the time
            config={
                "bib-atc": dict(batch_size=8, pairs_per_episode=2),
                "bib-bc-mlp": dict(batch_size=4, context_pairs=8),
                "bib-bc-rnn": dict(batch_size=2, max_steps=4),
                "bib-video-rnn": dict(batch_size=2, max_steps=4, hidden=8, channels=[4, 8, 8]),
            },
            seeds=2,
            seed=0,
            steps_measured=2,
            background_episodes={"single_object": 10},  # one task: one generator to compile
            data_seed=0,
            target_minutes=bib_learners.TARGET_MINUTES,
        ),
        note="`learners.bib.run.Epochs` as `jaxsoc train bib-*` runs it (seeds vmapped, one `lax.scan` per epoch "
        "on a GPU), the paper's configs (ATC batch 512, the observers batch 32, encoder fine-tuned), on the "
        "background set generated on the device (`data.background`, 28,000 episodes, 22,400 to train). Each kind: "
        "an epoch cut to `steps_measured` steps, called once to compile, then timed once; the full set's epoch "
        "and its `epochs` (100) projected from that rate, optimiser steps only (no validation). Target (the "
        "issue): each model trained on the full background set in ≤30 minutes on one H100. `bib-bc-mlp:cells`: "
        "BC-MLP through the cell encoder with its keypoint loss, the CPU recipe (batch 16, 20 epochs).",
        rank=170,
    ),
)
