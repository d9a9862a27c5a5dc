"""The GPU suite: every GPU figure of the project in one command that fits the ~30 minutes a GPU is lent.

    PYTHONPATH=. python3 benchmarks/gpu_suite.py                  # every part: 25 minutes of budgets on an H100
    PYTHONPATH=. python3 benchmarks/gpu_suite.py --quick          # the throughput parts only, <= 8 minutes
    jaxsoc bench --suite gpu --parts ppo bc --force               # the same from the installed command

**Parts** (``PARTS``: every family's, in order of importance; ``--list-parts`` prints them with their budgets):
``classic`` (MiniGrid throughput, both occlusion modes, minigrid and xminigrid rates where importable), ``babyai``
(the 19 levels' throughput against the issue's targets), ``registry`` (every other id of minigrid's registry: the other
MiniGrid tasks and the bonus BabyAI levels, next to xminigrid where it has the id), ``bot_speed`` (the bot's
steps/s), ``bot_success`` (the bot's success and episode lengths over 2,000 levels each), ``bib`` (BIB episodes
generated and rendered per second, and the 28,000-episode background set against the issue's 60 s), ``household``
(the Watch-And-Help household's random-action steps/s against the issue's 1e7), ``household_agents`` (Alice and the
HP helper planning every step), ``chaic`` (CHAIC's world events and agent steps/s, random actions against the
issue's 1e6 agent steps/s, and the rule-based agents'), ``chaic_learners`` (the PPO helper's training rate),
``household_learners`` (the goal-inference model's, the Hybrid's and the HRL's training rates, and the HRL
warm start's), ``excalibur``
(EXCALIBUR's steps/s against the issue's 1e8), ``excalibur_learners`` (the answerer's and the PPO explorers'
training rates), ``ppo`` (the Small model to 99% on GoToRedBallGrey and GoToLocal),
``bc`` (the Small model by behaviour cloning on 8,000 and 5,657 bot demonstrations), ``bib_learners`` (BIB's four
learners' training rate and the projected time of a full run against the issue's 30 minutes) and ``conv`` (XLA's
convolution against im2col). Each has a time budget; the budgets of the default run add up to 25 minutes
(``--budget-minutes`` scales them).

**Rows.** Part ``p`` writes ``<out-dir>/gpu_<p>.json`` after every row it measures (``core.run_part``): the
part's parameters, device, jax version, dates, budget, ``complete``, and the rows, each of which also records
the device kind, platform, jax version, date and every parameter of its measurement. A part that runs out of
budget keeps what it measured with ``"complete": false``; a part that raises is recorded with its error and
the suite goes on. Then the GPU section of ``--results-md`` (between ``<!-- gpu-suite:begin -->`` and
``<!-- gpu-suite:end -->``, appended when absent; nothing outside them is touched) is rewritten from every
row file present (``render_markdown``): tables written by code, never by hand.

**Reruns.** A part whose file is complete, with the same parameters and size, is skipped whatever device
measured it (``--force`` redoes it; ``--parts a b`` selects parts). An incomplete part continues: its rows
measured on the same device kind are kept and the rest measured (rows of another device kind are replaced,
never mixed in). Where one command may run 10 minutes at most, as on this project's device machines, run the
same command with ``--time-limit 560`` until it exits 0 (3: parts remain; 1: a part failed; SIGTERM also
saves the rows and the markdown). The rows must survive between calls; on a machine that sends back only
``$OUT``::

    PYTHONPATH=. python3 benchmarks/gpu_suite.py --time-limit 560; cp benchmarks/results/gpu_*.json "$OUT"/

then copy the returned ``gpu_*.json`` into ``benchmarks/results/`` of the checkout (the next call continues
from them) and run ``python benchmarks/gpu_suite.py --render-only`` to rewrite ``benchmarks/RESULTS.md``
from them. Compiled programs go to jax's persistent compilation cache (``--compile-cache``, in the machine's
temp dir), so a call that was cut off does not pay its compilations again on the same machine.

**Sizes.** ``--toy`` runs every part at toy sizes (a CPU smoke test); its rows say so and its default output is a
temporary directory, never ``benchmarks/``. CI's ``tests/test_gpu_suite.py`` runs every part but the learners'
(``ppo``, ``ppo_paper``, ``household_learners``, ``bib_learners``, ``chaic_learners``, ``excalibur_learners``) at
toy sizes; those run in
its ``slow`` test, where the toy ``household_learners`` leaves the Hybrid and the HRL warm start out, and
``tests/test_gpu_suite_smoke.py`` (``slow``) runs those two programs. Without ``--toy`` the suite
refuses to run on a CPU (``--allow-cpu`` overrides).

**Adding a part**: write, in the family's module ``gpu_suite/<family>.py`` (or a module it imports), a
generator ``my_part(ctx: core.Context) -> Iterator[dict]`` that reads its sizes from ``ctx.params``, yields
one row per measurement, each with a ``"key"`` naming all the row's parameters (a row yielded again with the
same key replaces it; ``"partial": True`` marks a progress row), yields ``ctx.previous(key)`` instead of
measuring when it returns a row, and returns early when ``ctx.out_of_time(seconds_needed)`` says so (jitted
benchmarks can use ``core.measure_programs``, which does all of this and compiles in parallel); and
``render_my_part(rows) -> str``, its markdown table. Then add one ``Part(...)`` entry to that module's ``PARTS``
with full and toy parameters, a ``rank`` (its place in importance order) and a budget taken from the others so
the default run still fits 25 minutes. ``core.family_parts`` collects every family's ``PARTS`` (the families of
``envs.families``) in ``rank`` order: ``PARTS`` below.
"""

from __future__ import annotations

from collections.abc import Mapping

from jaxsoc.gpu_suite import core
from jaxsoc.gpu_suite.command import add_arguments, main, run_from_args
from jaxsoc.gpu_suite.core import Context, Part, Program

__all__ = ["PARTS", "Context", "Part", "Program", "add_arguments", "main", "render_markdown", "run_from_args"]

#: every family's parts (``gpu_suite/<family>.py`` ``PARTS``), in order of importance; budgets in seconds add up to
#: 25 minutes (full) and 8 (quick), as ``tests/test_gpu_suite.py`` checks
PARTS: tuple[Part, ...] = core.family_parts()


def render_markdown(rows_by_part: Mapping[str, list[dict]], complete: Mapping[str, bool] | None = None) -> str:
    """Returns the generated GPU section of the results markdown (without its markers) for ``rows_by_part``
    (``{part name: rows}``, as in the row files) in ``PARTS`` order; ``complete`` marks incomplete parts
    (default: all complete). Pure: the same rows give the same text."""
    return core.render_markdown(rows_by_part, complete, PARTS)
