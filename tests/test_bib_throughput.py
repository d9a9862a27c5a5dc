"""BIB's throughput measurement (``jaxsoc.envs.bib.throughput``) and its GPU-suite part at tiny sizes: sane rows,
a frame checksum that really sums every pixel, the tables, a smaller background-set run, and the part's verdicts.

One background task with compact params at 2 and 4 episodes keeps the compilations to a few seconds each; the
background-set test reuses the 4-episode program that ``measure`` compiled (``compile_workloads``)."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsoc import gpu_suite
from jaxsoc.envs.bib import render, throughput
from jaxsoc.envs.bib import world as W
from jaxsoc.gpu_suite import bib as suite_bib
from jaxsoc.gpu_suite import core

PARAMS = W.BIBParams.compact()
TASK = "single_object"


@pytest.fixture(scope="module")
def rows():
    return throughput.measure([2, 4], PARAMS, repeats=1, task=TASK)


def test_measure_returns_sane_rows(rows):
    assert [r["episodes"] for r in rows] == [2, 4]
    for r in rows:
        n, t = r["episodes"], PARAMS.num_frames
        assert r["params"] == "compact" and r["task"] == TASK and r["frames_per_trial"] == t == 33
        assert r["generate_compile_s"] > 0 and r["render_compile_s"] > 0
        assert r["generate_s"] > 0 and r["render_s"] > 0 and r["generate_episodes_per_s"] > 0
        assert r["trials_per_s"] == pytest.approx(9 * r["episodes_per_s"])
        assert r["frames"] == n * 9 * t and r["frames_per_s"] == pytest.approx(9 * t * r["episodes_per_s"])
        assert n * 9 <= r["real_frames"] <= r["frames"]  # every trial has at least its start frame
        assert 0 < r["real_frames_per_s"] <= r["frames_per_s"]
        assert r["frame_checksum"] > 0 and r["episode_checksum"] > 0 and r["same_episodes"]
        assert r["platform"] == jax.default_backend() and r["device"] and r["jax"]


def test_frame_checksum_sums_every_pixel_of_every_frame_in_chunks():
    blank = W.with_frames(W.blank_trials(max_moves=2), 1, 0, 0)
    episodes = jax.tree.map(lambda x: jnp.stack([x] * 3), blank)
    episodes = episodes.replace(agent_color=jnp.arange(27, dtype=jnp.int8).reshape(3, 9) % 10)  # distinct sums
    frames = jax.jit(render.render, static_argnums=1)(episodes, 20)
    expected = np.asarray(frames).astype(np.uint64).sum(axis=(1, 2, 3, 4, 5)) % (1 << 32)
    checksum = jax.jit(throughput.frame_checksum, static_argnums=(1, 2))(episodes, 20, 2)  # a chunk and a remainder
    assert checksum.dtype == jnp.uint32 and len(set(expected.tolist())) == 3
    np.testing.assert_array_equal(np.asarray(checksum, np.uint64), expected)


def test_format_table(rows):
    text = throughput.format_table(rows)
    assert "| params | T | parallel episodes | generate ep/s | generate+render ep/s |" in text
    assert "| compact | 33 | 2 |" in text and "| compact | 33 | 4 |" in text
    assert f"{TASK} at 84x84" in text and text.endswith(throughput.NO_REFERENCE)
    assert "out of memory" in throughput.format_table([{**rows[0], "error": "out of memory"}])


def test_background_set_smaller_run_says_so(rows):
    result = throughput.background_set_seconds(PARAMS, 4, episodes=6, task=TASK)
    assert result["batches"] == 2 and result["episodes_generated"] == 8 and result["padded"] == 2
    assert result["task_episodes"] == {TASK: 8} and result["trials"] == 72 and result["frames"] == 72 * 33
    assert not result["full_set"] and result["scale"] == 6 / 28_000 and result["set_episodes"] == 28_000
    assert result["seconds"] > 0 and result["extrapolated_full_set_s"] > result["seconds"]
    assert result["compile_s"] == rows[1]["render_compile_s"]  # the program measure compiled, not a new one
    assert 72 <= result["real_frames"] <= result["frames"] and result["frame_checksum"] > 0
    assert "a smaller run: 6 of 28,000 episodes" in throughput.format_background_set(result)


def test_render_chunk_and_sizes():
    assert throughput.episodes_per_chunk(W.BIBParams(), 84) == 12  # 83 MB of frames per video-like episode
    assert throughput.render_chunk(4096, W.BIBParams(), 84) == 8  # a divisor: no remainder to compile
    assert throughput.render_chunk(13, W.BIBParams(), 84) == 12  # no divisor close enough
    assert throughput.render_chunk(3, PARAMS, 84) == 3
    assert throughput.params_label(W.BIBParams()) == "video" and throughput.BACKGROUND_EPISODES == 28_000
    with pytest.raises(ValueError, match="size"):
        throughput.measure([0], PARAMS)
    with pytest.raises(ValueError, match="repeats"):
        throughput.measure([2], PARAMS, repeats=0)


def _set_row(seconds, full=True, **extra):
    return {
        "kind": "background_set",
        "params": "video",
        "episodes": 28_000 if full else 6,
        "set_episodes": 28_000,
        "episodes_generated": 28_672,
        "batches": 7,
        "batch": 4096,
        "frames": 28_672 * 9 * 434,
        "seconds": seconds,
        "compile_s": 30.0,
        "episodes_per_s": 28_672 / seconds,
        "frames_per_s": 28_672 * 9 * 434 / seconds,
        "full_set": full,
        "target_s": 60.0,
        "meets_target": seconds <= 60 if full else None,
        **extra,
    }


def test_suite_part_verdicts_and_out_of_memory_rows(rows):
    text = suite_bib.render_bib([_set_row(42.0), _set_row(75.0), _set_row(1.0, full=False)])
    lines = text.splitlines()
    assert lines[4].endswith("| 42.0 | 30.0 | 683 | 2.67e+06 | ≤60 s | pass |")
    assert lines[5].endswith("| ≤60 s | **FAIL** |") and lines[6].endswith("| – (6 of 28,000 episodes) |")
    error = core.guarded_oom(lambda: _raise("RESOURCE_EXHAUSTED: 80 GiB"), {"batch": 4096})
    assert error == {"batch": 4096, "error": "out of memory: RESOURCE_EXHAUSTED: 80 GiB"}
    with pytest.raises(ZeroDivisionError):
        core.guarded_oom(lambda: 1 / 0, {})
    table = suite_bib.render_bib([{**error, "kind": "background_set", "params": "video"}])
    assert "out of memory" in table
    both = suite_bib.render_bib([*({**r, "kind": "throughput"} for r in rows), _set_row(42.0)])
    assert "| compact | 33 | 4 |" in both and "| pass |" in both


def test_suite_part_stops_without_time_and_resumes(rows, tmp_path):
    part = next(p for p in gpu_suite.PARTS if p.name == "bib")  # toy workloads: those the fixture compiled
    state = core.run_part(part, tmp_path, params=part.toy, budget_s=0, toy=True)
    assert not state["complete"] and state["rows"] == []
    state = core.run_part(part, tmp_path, params=part.toy, budget_s=60, toy=True)
    assert state["complete"] and [r["kind"] for r in state["rows"]] == ["background_set", "throughput"]
    saved = json.loads(core.row_path(tmp_path, "bib").read_text())
    saved.update(complete=False, rows=saved["rows"][:1])  # as if the budget had ended after the headline
    core.row_path(tmp_path, "bib").write_text(json.dumps(saved))
    again = core.run_part(part, tmp_path, params=part.toy, budget_s=60, toy=True)
    assert again["complete"] and again["rows"][0] == saved["rows"][0] and again["rows"][1]["kind"] == "throughput"
    assert "| compact | 8 | 2 × 4 |" in part.render(again["rows"])


def _raise(message: str):
    raise RuntimeError(message)
