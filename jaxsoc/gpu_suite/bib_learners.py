"""The GPU suite's BIB-learners part: how fast BIB's four learners train (``jaxsoc.learners.bib.run``).

One row per learner kind (``KINDS``: the ATC encoder, BC-MLP, BC-RNN and the Video-RNN), each with the
paper's config (``run.make_config(kind)``: ATC batch 512, the observers batch 32 with the encoder fine-tuned;
``config`` overrides per kind) and ``seeds`` seeds trained together as ``run.train`` trains them
(``run.Epochs``: on an accelerator one program per epoch, ``vmap`` over seeds and ``lax.scan`` over steps).
The background set is generated once for the part (``data.background``, the paper's 28,000 episodes: 22,400
train). A whole epoch is not run: ``Epochs`` is built on the first rows of the training set, enough for
``steps_measured`` optimiser steps, and called twice: the first call (compilation included) gives
``compile_s``, the second, another epoch index, is timed to ``jax.block_until_ready``. ``steps_per_s`` counts
steps of every seed at once (one step updates all seeds on a batch each); ``episodes_per_s`` is the episodes
sampled per second, all seeds together (``steps_per_s * batch * seeds``; an ATC step samples one frame pair
per episode). From the rate, the full set's ``steps_per_epoch`` (``ceil(22,400 * repeats / batch)``, repeats
9 for ATC, 1 for the observers) gives ``epoch_s`` and ``projected_minutes`` for the config's epochs (100), set
against the issue's target: each model trained on the full background set in at most ``TARGET_MINUTES`` (30)
on one H100. The projection counts optimiser steps only (validation passes, forward only, are left out).

A name ``kind:variant`` in ``kinds`` measures ``kind`` again with the overrides ``config["kind:variant"]``
(``VARIANTS``: the CPU recipe of the cell encoder, ``networks.bib.CellEncoder``, trained end to end from random).

Rows already measured (same key) are yielded again; a kind is skipped when the time the last kind took is
not left; a kind that runs out of device memory gives a row with its ``error`` (``core.guarded_oom``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from typing import Any

import jax

from jaxsoc.gpu_suite.core import Context, guarded_oom

#: the learners measured, in training order (the observers start from the ATC encoder)
KINDS = ("bib-atc", "bib-bc-mlp", "bib-bc-rnn", "bib-video-rnn")
#: variants measured after them: ``kind:variant -> overrides`` (the cell encoder's recipe of
#: benchmarks/results/bib_learners_cpu/cells/command.sh, 20 epochs)
VARIANTS = {
    "bib-bc-mlp:cells": dict(
        encoder="cells",
        query_steps=8,
        query_trial="any",
        aux_weight=1.0,
        context_pairs=16,
        batch_size=16,
        lr=0.001,
        epochs=20,
    ),
}


def run_kind(name: str) -> str:
    """Returns the learner kind of a measured name (``kind`` or ``kind:variant``)."""
    return name.split(":", 1)[0]


#: the issue's target: each model trained on the full background set in at most this many minutes on an H100
TARGET_MINUTES = 30.0


def _overrides(p: dict, kind: str) -> dict[str, Any]:
    """Returns the config overrides of ``kind`` (JSON lists back to tuples, as ``run`` reads saved configs)."""
    fields = (p.get("config") or {}).get(kind, {})
    return {name: tuple(v) if isinstance(v, list) else v for name, v in fields.items()}


def _key(p: dict, kind: str, config) -> str:
    """Returns the row key of ``kind`` with ``config``: every parameter its measurement depends on."""
    episodes = p["background_episodes"] or "paper"
    return (
        f"{kind}|{config.to_dict()}|seeds={p['seeds']}|seed={p['seed']}|steps={p['steps_measured']}"
        f"|episodes={episodes}|data_seed={p['data_seed']}"
    )


def bib_learners(ctx: Context) -> Iterator[dict]:
    """Yields one row per kind of ``ctx.params["kinds"]`` (see the module docstring): the measured rate, the
    compile seconds and the projected time of a full training run against the target. Parameters: ``kinds``,
    ``config`` (``{kind: {field: value}}`` overrides of the paper's configs), ``seeds``, ``seed``,
    ``steps_measured`` (optimiser steps per timed call), ``background_episodes`` (``data.background``'s
    ``episodes``: None for the paper's 28,000, a total, or ``{task: count}``), ``data_seed``,
    ``target_minutes``."""
    from jaxsoc.learners.bib import run

    p = ctx.params
    configs = {kind: run.make_config(run_kind(kind), **_overrides(p, kind)) for kind in p["kinds"]}
    keys = {kind: _key(p, kind, config) for kind, config in configs.items()}
    todo = []
    for kind, key in keys.items():
        row = ctx.previous(key)
        if row is not None:
            yield row
        else:
            todo.append(kind)
    if not todo or ctx.out_of_time(0):
        return
    from jaxsoc.learners.bib import data as D

    start = time.perf_counter()
    train_eps, val_eps = D.background(seed=p["data_seed"], episodes=p["background_episodes"])
    jax.block_until_ready((train_eps, val_eps))
    background_s = time.perf_counter() - start
    n_train, n_val = D.num_episodes(train_eps), D.num_episodes(val_eps)
    ctx.log(f"background set: {n_train} + {n_val} episodes in {background_s:.1f} s")
    last_s = 0.0
    for kind in todo:
        if ctx.out_of_time(last_s):
            return
        began = time.perf_counter()
        config = configs[kind]
        batch = min(config.batch_size, n_train)
        fallback = {"kind": kind, "config": config.to_dict(), "seeds": p["seeds"], "batch": batch}

        def measure(kind: str = kind, config=config, batch: int = batch) -> dict:
            return _measure(p, run, D, kind, config, batch, train_eps, n_train, n_val)

        row = guarded_oom(measure, fallback)
        last_s = time.perf_counter() - began
        if row.get("error"):
            ctx.log(f"{kind}: {row['error']}")
        else:
            ctx.log(
                f"{kind}: {row['steps_per_s']:.3g} steps/s, compile {row['compile_s']:.1f} s, projected "
                f"{row['projected_minutes']:.1f} min for {row['epochs']} epochs"
            )
        yield {
            **fallback,
            "paper_name": run.PAPER_NAMES.get(run_kind(kind), "ATC"),
            "train_episodes": n_train,
            "validation_episodes": n_val,
            "background_s": background_s,
            "target_minutes": p["target_minutes"],
            **row,
            "key": keys[kind],
        }


def _measure(p: dict, run, D, kind: str, config, batch: int, train_eps, n_train: int, n_val: int) -> dict:
    """Returns the measured fields of one kind's row: two calls of ``Epochs.epoch`` on a subset of the training
    rows (``steps_measured`` steps each), the first with compilation, the second timed."""
    learner = run.make_learner(run_kind(kind), config)
    repeats = learner.repeats()
    rows = min(n_train, max(1, p["steps_measured"] * batch // repeats))  # ceil(rows * repeats / batch) steps
    arrays = learner.prepare(D.take(train_eps, slice(0, rows)))
    epochs = run.Epochs(learner, rows, n_val, batch, min(config.batch_size, n_val))
    keys = run.seed_keys(p["seed"], p["seeds"])
    states = jax.block_until_ready(jax.jit(jax.vmap(learner.init))(keys))
    epoch_keys = [jax.vmap(lambda k, e=e: jax.random.fold_in(k, e))(keys) for e in (0, 1)]
    start = time.perf_counter()
    states, metrics = jax.block_until_ready(epochs.epoch(states, epoch_keys[0], arrays, 0))
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    states, metrics = jax.block_until_ready(epochs.epoch(states, epoch_keys[1], arrays, 1))
    run_s = time.perf_counter() - start
    steps_per_s = epochs.steps / run_s
    steps_per_epoch = math.ceil(n_train * repeats / batch)
    epoch_s = steps_per_epoch / steps_per_s
    projected = config.epochs * epoch_s / 60
    loss = jax.device_get(metrics["loss"])
    return {
        "fused": epochs.fused,
        "repeats": repeats,
        "rows_measured": rows,
        "steps_measured": epochs.steps,
        "compile_s": compile_s,
        "run_s": run_s,
        "steps_per_s": steps_per_s,
        "episodes_per_s": steps_per_s * batch * p["seeds"],
        "loss": [float(x) for x in loss],
        "steps_per_epoch": steps_per_epoch,
        "epoch_s": epoch_s,
        "epochs": config.epochs,
        "projected_minutes": projected,
        "meets_target": projected <= p["target_minutes"],
    }


def _num(x: Any, spec: str = ".3g") -> str:
    return "–" if x is None else format(x, spec)


def render_bib_learners(rows: list[dict]) -> str:
    """Returns the part's markdown: per kind its seeds, batch, steps/s and episodes/s (all seeds together),
    compile seconds, seconds per epoch of the full set, projected minutes for the config's epochs and whether
    that meets the target (pass or **FAIL**)."""
    lines = [
        "| learner | seeds | batch | steps/s | episodes/s | compile s | epoch s (full set) | projected min (epochs) "
        "| target | pass |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        name = f"{r['kind']} ({r['paper_name']})" if r.get("paper_name") else r["kind"]
        target = f"≤{r['target_minutes']:.0f} min" if r.get("target_minutes") is not None else "–"
        if r.get("error"):
            lines.append(f"| {name} | {r['seeds']} | {r['batch']} | {r['error']} | – | – | – | – | {target} | – |")
            continue
        lines.append(
            f"| {name} | {r['seeds']} | {r['batch']} | {_num(r['steps_per_s'])} | {_num(r['episodes_per_s'])} | "
            f"{r['compile_s']:.1f} | {r['epoch_s']:.1f} | {r['projected_minutes']:.1f} ({r['epochs']}) | {target} | "
            f"{'pass' if r['meets_target'] else '**FAIL**'} |"
        )
    measured = sorted({r["steps_measured"] for r in rows if r.get("steps_measured") is not None})
    head = ""
    if rows:
        r = rows[0]
        head = (
            f"Background set: {r['train_episodes']:,} training and {r['validation_episodes']:,} validation "
            f"episodes. Each rate timed over {'/'.join(map(str, measured)) or '–'} optimiser steps, all seeds at "
            "once (episodes/s: all seeds together); an epoch of the full set is `ceil(train × repeats / batch)` "
            "steps (repeats: ATC's pairs per episode, 9; 1 for the observers).\n\n"
        )
    return head + "\n".join(lines)
