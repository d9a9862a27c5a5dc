"""How fast BIB episodes are made on the current JAX backend: generated, and generated and rendered.

**Programs.** A ``Workload`` is one jitted program: ``batch`` episodes generated at once (the background
mix, ``dataset.sample_background``, in the paper's 10:10:4:4 proportions, or one background ``task``), and,
with a ``render_size``, every frame of every trial rendered (``render.render``). Nothing large leaves the
device: the program returns three ``uint32`` scalars, a wrapping sum of every generated array
(``episode_checksum``), the real frame count (the sum of the trials' ``length``) and, when it renders, the
wrapping sum of every pixel of every frame (``frame_checksum``), so no frame can be skipped as dead code.
Frames are rendered and summed a chunk of episodes at a time (``lax.map``), about ``chunk_bytes`` of frames
per chunk: with BIB's video-like default params one episode is 9 x 434 frames, 83 MB at 84x84, so a batch's
frames are never all in memory at once.

**Timing** (``measure``): each program is compiled apart (``compile_s``), called once to warm up, then
timed as the best of ``repeats`` calls on fresh keys, each waited for with ``block_until_ready``. Rates:
episodes/s, trials/s (9 per episode), frames/s counting every trial's fixed ``T = params.num_frames`` frames
(what is rendered), and real frames/s counting each trial's ``length`` (frames past it repeat the last one).

**The background set** (``background_set_seconds``): the 28,000 episodes of ``tasks.BACKGROUND`` (x 9 trials)
generated and rendered in batches of ``batch`` (the last one padded to a full batch), timed from the first
call to the last result, compile time apart: a measurement of the whole set, not an extrapolation, unless an
``episodes`` override asks for a smaller run (on a CPU), which the returned dict says.

**No reference.** BIB's authors released fixed videos, not a generator, so there is no rate to compare with.
BIB's released baselines read frames by decoding those MP4s with OpenCV (``cv2.VideoCapture``, a seek and a
decode per frame); that would need the videos and OpenCV, so it is not measured here and no ratio is given.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.core.timing import compile_cached, device_info, positive_int
from jaxsoc.envs.bib import dataset, render, tasks
from jaxsoc.envs.bib import world as W

RENDER_SIZE = 84  # the baselines' frame side
CHUNK_BYTES = 1 << 30  # frames rendered at once inside a program
BACKGROUND_EPISODES = sum(tasks.BACKGROUND.values())  # 28,000
MIX = "background mix"
NO_REFERENCE = (
    "No reference rate: BIB's authors released fixed videos, not a generator. Their baselines read frames by "
    "decoding those MP4s with OpenCV (a seek and a decode per frame), which needs the videos and OpenCV and is "
    "not measured here, so no ratio is given."
)


def params_label(params: W.BIBParams) -> str:
    """Returns ``"video"`` for the default (BIB-like) params, ``"compact"`` for ``BIBParams.compact()``, else
    the four sizes as ``"fpc=.. intro=.. outro=.. moves=.."``."""
    if params == W.BIBParams():
        return "video"
    if params == W.BIBParams.compact():
        return "compact"
    p = params
    return f"fpc={p.frames_per_cell} intro={p.intro_frames} outro={p.outro_frames} moves={p.max_moves}"


def params_dict(params: W.BIBParams) -> dict[str, int]:
    """Returns the four sizes of ``params`` as a dict (for rows)."""
    return {f.name: getattr(params, f.name) for f in dataclasses.fields(params)}


# ---------------------------------------------------------------------------------------------------- programs


def episode_checksum(episodes: W.Episode) -> jax.Array:
    """Returns ``uint32[B]``: per episode, the wrapping sum of every array of ``episodes`` (leading axis
    ``[B]``), floats scaled by 256 and rounded first; it makes every generated array part of the output."""
    total = jnp.zeros(episodes.length.shape[0], jnp.uint32)
    for leaf in jax.tree.leaves(episodes):
        x = leaf.reshape(leaf.shape[0], -1)
        if jnp.issubdtype(x.dtype, jnp.floating):
            x = jnp.round(x * 256)
        total = total + jnp.sum(x.astype(jnp.int32).astype(jnp.uint32), axis=1, dtype=jnp.uint32)
    return total


def episodes_per_chunk(params: W.BIBParams, size: int, chunk_bytes: int = CHUNK_BYTES) -> int:
    """Returns how many episodes' frames (``9 x T x size x size x 3`` bytes each) fit in ``chunk_bytes``
    (at least 1)."""
    frame_bytes = W.NUM_TRIALS * params.num_frames * size * size * 3
    return max(1, chunk_bytes // frame_bytes)


def render_chunk(batch: int, params: W.BIBParams, size: int, chunk_bytes: int = CHUNK_BYTES) -> int:
    """Returns the episodes of a ``batch`` rendered at once: the largest divisor of ``batch`` up to
    ``episodes_per_chunk`` (so ``lax.map`` compiles no remainder), or that bound itself when the divisor is
    less than half of it."""
    most = min(batch, episodes_per_chunk(params, size, chunk_bytes))
    divisor = max(d for d in range(1, most + 1) if batch % d == 0)
    return divisor if 2 * divisor >= most else most


def frame_checksum(episodes: W.Episode, size: int, chunk: int) -> jax.Array:
    """Returns ``uint32[B]``: per episode (leading axis ``[B]``), the wrapping sum of every pixel of every
    frame of its 9 trials rendered at ``size``; ``chunk`` episodes are rendered at a time (``lax.map``)."""

    def one(episode: W.Episode) -> jax.Array:
        return jnp.sum(render.render(episode, size), dtype=jnp.uint32)

    return jax.lax.map(one, episodes, batch_size=max(1, min(chunk, episodes.length.shape[0])))


@dataclasses.dataclass(frozen=True)
class Workload:
    """One benchmark program: ``batch`` episodes generated with ``params`` (the background mix, or the
    background ``task``), and with a ``render_size`` rendered at that size, ``chunk_bytes`` of frames at a
    time."""

    batch: int
    params: W.BIBParams
    render_size: int | None = None
    task: str | None = None
    chunk_bytes: int = CHUNK_BYTES

    def generator(self) -> Callable[[jax.Array], W.Episode]:
        """Returns ``generate(key) -> Episode [batch, 9, ...]`` (jittable)."""
        if self.task is None:
            return lambda key: dataset.sample_background(key, self.batch, self.params)
        tasks.check_task("background", self.task)
        return lambda key: tasks.generate_batch("background", self.task, key, self.batch, self.params)

    def build(self) -> Callable[[jax.Array], dict[str, jax.Array]]:
        """Returns ``run(key)``, jittable, returning ``uint32`` scalars: ``episode_checksum`` and ``frames``
        (the sum of the trials' lengths), and ``frame_checksum`` when it renders."""
        generate = self.generator()

        def run(key: jax.Array) -> dict[str, jax.Array]:
            episodes = generate(key)
            out = {
                "episode_checksum": jnp.sum(episode_checksum(episodes), dtype=jnp.uint32),
                "frames": jnp.sum(episodes.length.astype(jnp.uint32), dtype=jnp.uint32),
            }
            if self.render_size is not None:
                chunk = render_chunk(self.batch, self.params, self.render_size, self.chunk_bytes)
                out["frame_checksum"] = jnp.sum(frame_checksum(episodes, self.render_size, chunk), dtype=jnp.uint32)
            return out

        return run


_COMPILED: dict[Workload, tuple[Any, float]] = {}


def compile_workloads(workloads: Iterable[Workload], workers: int = 1) -> list[tuple[Any, float]]:
    """Returns ``(compiled, compile_s)`` per workload, in order, each compiled once per process
    (``core.timing.compile_cached``: traced here, compiled in ``workers`` threads)."""
    return compile_cached(workloads, _COMPILED, workers)


def time_best(compiled, key: jax.Array, repeats: int) -> tuple[dict[str, int], float]:
    """Returns ``(output, best_s)``: the host values of a warm-up call on ``key``, and the best wall time of
    ``repeats`` calls on ``fold_in(key, r + 1)``, each waited for with ``block_until_ready``."""
    output = jax.device_get(jax.block_until_ready(compiled(key)))
    best = math.inf
    for r in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(compiled(jax.random.fold_in(key, r + 1)))
        best = min(best, time.perf_counter() - start)
    return {k: int(v) for k, v in output.items()}, best


# ---------------------------------------------------------------------------------------------------- rates


def measure_size(
    batch: int,
    params: W.BIBParams | None = None,
    render_size: int = RENDER_SIZE,
    repeats: int = 3,
    seed: int = 0,
    task: str | None = None,
    chunk_bytes: int = CHUNK_BYTES,
) -> dict[str, Any]:
    """Returns one row of ``measure``: ``batch`` episodes generated in parallel, then generated and rendered
    (compiling both programs unless ``compile_workloads`` already did)."""
    params = params or W.BIBParams()
    batch, repeats = positive_int("batch", batch), positive_int("repeats", repeats)
    only, both = Workload(batch, params, None, task), Workload(batch, params, render_size, task, chunk_bytes)
    (gen_exe, gen_compile_s), (both_exe, both_compile_s) = compile_workloads([only, both])
    key = jax.random.key(seed)
    gen_out, gen_s = time_best(gen_exe, key, repeats)
    out, both_s = time_best(both_exe, key, repeats)
    frames = batch * W.NUM_TRIALS * params.num_frames
    return {
        "episodes": batch,
        "task": task or MIX,
        "params": params_label(params),
        **params_dict(params),
        "frames_per_trial": params.num_frames,
        "render_size": render_size,
        "chunk_episodes": render_chunk(batch, params, render_size, chunk_bytes),
        "repeats": repeats,
        "seed": seed,
        "generate_compile_s": gen_compile_s,
        "generate_s": gen_s,
        "generate_episodes_per_s": batch / gen_s,
        "render_compile_s": both_compile_s,
        "render_s": both_s,
        "episodes_per_s": batch / both_s,
        "trials_per_s": batch * W.NUM_TRIALS / both_s,
        "frames": frames,
        "frames_per_s": frames / both_s,
        "real_frames": out["frames"],
        "real_frames_per_s": out["frames"] / both_s,
        "frame_checksum": out["frame_checksum"],
        "episode_checksum": out["episode_checksum"],
        "same_episodes": out["episode_checksum"] == gen_out["episode_checksum"],
        **device_info(),
    }


def measure(
    sizes: Sequence[int],
    params: W.BIBParams | None = None,
    render_size: int = RENDER_SIZE,
    repeats: int = 3,
    seed: int = 0,
    *,
    task: str | None = None,
    chunk_bytes: int = CHUNK_BYTES,
    workers: int = 1,
) -> list[dict[str, Any]]:
    """Measures episodes/s generated, and generated and rendered at ``render_size``, at each number of
    episodes generated in parallel.

    Args:
        sizes: episodes per program (one pair of programs each).
        params: episode sizes (default ``BIBParams()``, BIB's video-like frames).
        render_size: frame side in pixels.
        repeats: timed calls after a warm-up; the best is kept.
        seed: the key of the warm-up call (timed calls fold in 1, 2, ...).
        task: a background task instead of the background mix.
        chunk_bytes: frames rendered at once inside a program.
        workers: programs compiled at once (their ``*_compile_s`` then share the machine).

    Returns:
        One dict per size: ``episodes``, ``task``, ``params`` (label) and its four sizes, ``frames_per_trial``,
        ``render_size``, ``chunk_episodes``, ``repeats``, ``seed``; ``generate_compile_s``, ``generate_s`` and
        ``generate_episodes_per_s`` (generation only); ``render_compile_s``, ``render_s``, ``episodes_per_s``,
        ``trials_per_s``, ``frames`` and ``frames_per_s`` (fixed ``T`` per trial), ``real_frames`` and
        ``real_frames_per_s`` (sum of ``length``), ``frame_checksum``, ``episode_checksum``,
        ``same_episodes`` (both programs generated the same warm-up episodes), ``device``, ``platform``,
        ``jax``.
    """
    params = params or W.BIBParams()
    sizes = [positive_int("size", n) for n in sizes]
    positive_int("repeats", repeats)
    pairs = [(Workload(n, params, None, task), Workload(n, params, render_size, task, chunk_bytes)) for n in sizes]
    compile_workloads([w for pair in pairs for w in pair], workers)
    return [measure_size(n, params, render_size, repeats, seed, task, chunk_bytes) for n in sizes]


def _num(x: Any, spec: str = ".3g") -> str:
    return "–" if x is None else format(x, spec)


def format_table(rows: Sequence[dict[str, Any]]) -> str:
    """Returns ``rows`` (``measure``'s) as a markdown table: params, frames per trial, parallel episodes,
    generate ep/s, generate+render ep/s, trials/s, frames/s (fixed and real) and compile seconds, followed
    by ``NO_REFERENCE``; a row with an ``error`` shows it instead of rates."""
    lines = [
        "| params | T | parallel episodes | generate ep/s | generate+render ep/s | trials/s | frames/s | "
        "real frames/s | compile s (gen, gen+render) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        if r.get("error"):
            lines.append(f"| {r['params']} | {r['frames_per_trial']} | {r['episodes']:,} | {r['error']} ||||||")
            continue
        lines.append(
            f"| {r['params']} | {r['frames_per_trial']} | {r['episodes']:,} | {_num(r['generate_episodes_per_s'])} | "
            f"{_num(r['episodes_per_s'])} | {_num(r['trials_per_s'])} | {_num(r['frames_per_s'])} | "
            f"{_num(r['real_frames_per_s'])} | {r['generate_compile_s']:.1f}, {r['render_compile_s']:.1f} |"
        )
    sizes = sorted({(r.get("task", MIX), r.get("render_size")) for r in rows})
    what = "; ".join(f"{task} at {size}x{size}" for task, size in sizes)
    return f"Episodes of 9 trials ({what}).\n\n" + "\n".join(lines) + f"\n\n{NO_REFERENCE}"


# ---------------------------------------------------------------------------------------------------- the set


def background_set_seconds(
    params: W.BIBParams | None = None,
    batch: int = 4096,
    render_size: int = RENDER_SIZE,
    *,
    episodes: int | None = None,
    seed: int = 0,
    task: str | None = None,
    chunk_bytes: int = CHUNK_BYTES,
) -> dict[str, Any]:
    """Generates and renders BIB's background set (``tasks.BACKGROUND``: 28,000 episodes x 9 trials) in
    batches of ``batch`` episodes, and times it.

    The batches (``Workload``, batch ``i`` from ``fold_in(key(seed), i)``) are dispatched one after another
    and waited for together; the last batch is a full batch (padding), so ``episodes_generated`` may exceed
    ``episodes``. Compilation is timed apart (``compile_s``; 0-cost reuse of a program already compiled in
    this process, e.g. by ``measure`` at the same size).

    Args:
        params: episode sizes (default ``BIBParams()``).
        batch: episodes per program call.
        render_size: frame side in pixels.
        episodes: a smaller run than the whole set (e.g. on a CPU); ``full_set`` is then False.
        seed: base key.
        task: one background task instead of the mix (a smoke test; ``full_set`` is then False).
        chunk_bytes: frames rendered at once inside a program.

    Returns:
        ``{"episodes", "episodes_generated", "padded", "batch", "batches", "task_episodes" ({task: count}),
        "trials", "frames" (fixed T), "real_frames", "seconds" (the run, compile apart), "compile_s",
        "episodes_per_s", "frames_per_s", "full_set", "set_episodes" (28,000), "scale" (episodes / 28,000),
        "extrapolated_full_set_s" (None for the full set; else seconds / scale, a linear estimate),
        "frame_checksum", "task", "params" (label) and its sizes, "render_size", "chunk_episodes", "seed",
        device info}``.
    """
    params = params or W.BIBParams()
    batch = positive_int("batch", batch)
    episodes = BACKGROUND_EPISODES if episodes is None else positive_int("episodes", episodes)
    batches = -(-episodes // batch)
    workload = Workload(batch, params, render_size, task, chunk_bytes)
    ((compiled, compile_s),) = compile_workloads([workload])
    base = jax.random.key(seed)
    start = time.perf_counter()
    outputs = [compiled(jax.random.fold_in(base, i)) for i in range(batches)]
    jax.block_until_ready(outputs)
    seconds = time.perf_counter() - start
    outputs = jax.device_get(outputs)
    generated = batches * batch
    shares = {task: batch} if task else dataset.background_shares(batch)
    full = episodes == BACKGROUND_EPISODES and task is None
    frames = generated * W.NUM_TRIALS * params.num_frames
    return {
        "episodes": episodes,
        "episodes_generated": generated,
        "padded": generated - episodes,
        "batch": batch,
        "batches": batches,
        "task_episodes": {name: n * batches for name, n in shares.items()},
        "trials": generated * W.NUM_TRIALS,
        "frames": frames,
        "real_frames": sum(int(o["frames"]) for o in outputs),
        "seconds": seconds,
        "compile_s": compile_s,
        "episodes_per_s": generated / seconds,
        "frames_per_s": frames / seconds,
        "full_set": full,
        "set_episodes": BACKGROUND_EPISODES,
        "scale": episodes / BACKGROUND_EPISODES,
        "extrapolated_full_set_s": None if full else seconds * BACKGROUND_EPISODES / episodes,
        "frame_checksum": int(np.sum([np.uint64(o["frame_checksum"]) for o in outputs]) % (1 << 32)),
        "task": task or MIX,
        "params": params_label(params),
        **params_dict(params),
        "render_size": render_size,
        "chunk_episodes": render_chunk(batch, params, render_size, chunk_bytes),
        "seed": seed,
        **device_info(),
    }


def format_background_set(result: dict[str, Any]) -> str:
    """Returns one line describing ``background_set_seconds``'s result, saying when it is a smaller run."""
    scale = ""
    if not result["full_set"]:
        scale = (
            f" (a smaller run: {result['episodes']:,} of {result['set_episodes']:,} episodes; linear estimate for "
            f"the whole set {result['extrapolated_full_set_s']:.0f} s)"
        )
    return (
        f"Background set ({result['task']}, {result['params']} params, {result['render_size']}x"
        f"{result['render_size']}): {result['episodes_generated']:,} episodes x 9 trials generated and rendered in "
        f"{result['batches']} batches of {result['batch']:,} in {result['seconds']:.2f} s "
        f"({result['episodes_per_s']:.3g} episodes/s, {result['frames_per_s']:.3g} frames/s; compile "
        f"{result['compile_s']:.1f} s){scale}."
    )
