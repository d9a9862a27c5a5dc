"""CHAIC's helper evaluation (``jaxsoc chaic eval``, the paper's tables 2 and 4): the constrained agent alone and
with rule-based and learned helpers over the episodes of a split (``evaluate``), the markdown table and plot of the
results (``format_table``, ``plot``), and the ``chaic_eval.{json,md,png}`` files (``write_results``,
``read_results``, ``earlier_results`` for adding helpers to earlier results).

Learned helpers are ``KIND=RUN`` (``LEARNED``): a PPO run of ``jaxsoc train ppo --env CHAIC-<Task>-Helper-v0`` or
``jaxsoc train chaic-options`` (``ppo``; ``ppo_greedy``: its most likely choices), a behaviour model of ``jaxsoc
train chaic-bm`` (``bm``); ``RUN`` may be a pretrained model, ``model:NAME`` (``learners.chaic.pretrained``)."""

from __future__ import annotations

import functools
import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.envs.chaic.episode import HELPERS, RULE_HELPERS, rule_helper
from jaxsoc.learners.run_log import save_figure

__all__ = [
    "HELPERS",
    "LEARNED",
    "PAPER_ROWS",
    "RULE_HELPERS",
    "check_episodes",
    "earlier_results",
    "evaluate",
    "format_table",
    "learned_helper",
    "parse_helpers",
    "plot",
    "read_results",
    "write_results",
]

PAPER_ROWS = dict(zip(("none", "random", "rhp", "oracle"), range(4)))  # columns of catalogue.PAPER_TR
#: learned helpers, ``KIND=RUN`` on the command line: the paper's row each is compared with (``PAPER_HELPER_TR``);
#: ``ppo_greedy`` plays a PPO run's most likely action (or option) instead of sampling it
LEARNED = {"ppo": "rl", "ppo_greedy": "rl", "bm": "llm_bm"}


def parse_helpers(items: list[str]) -> dict[str, str | None]:
    """Returns ``{label: run directory or None}`` for ``--helper`` items: a rule-based helper (``RULE_HELPERS``)
    or a learned one as ``KIND=RUN`` (``LEARNED``; labelled by its kind). Raises ``ValueError`` for an unknown
    helper, a learned kind without a run, or a label given twice."""
    out: dict[str, str | None] = {}
    for item in items:
        kind, sep, run = item.partition("=")
        if kind in LEARNED and not (sep and run):
            raise ValueError(f"the learned helper {kind!r} needs its run: --helper {kind}=RUN_DIR")
        if (sep and kind not in LEARNED) or (not sep and kind not in RULE_HELPERS):
            choices = f"{list(RULE_HELPERS)} or {', '.join(k + '=RUN' for k in LEARNED)}"
            raise ValueError(f"unknown helper {item!r}; choose from {choices}")
        if kind in out:
            raise ValueError(f"helper {kind!r} given twice")
        out[kind] = run or None
    return out


def learned_helper(kind: str, run: str):
    """Returns the agent of a learned helper: ``kind`` in ``LEARNED``, ``run`` its run directory or ``model:NAME``
    (``jaxsoc.models``: ``model:chaic-options-helper`` for ``ppo``, ``model:chaic-bm`` for ``bm``). Raises
    ``ValueError`` naming ``--helper`` when ``run`` is not a directory (nothing is created) or names a model of
    another kind."""
    from jaxsoc import models

    if models.ref_name(run) is not None:
        try:
            return _learned(kind, run)
        except (KeyError, ValueError) as error:
            raise ValueError(f"--helper {kind}={run}: {error.args[0] if error.args else error}") from None
    if not Path(run).is_dir():
        raise ValueError(f"--helper {kind}={run}: no such run directory")
    return _learned(kind, run)


def _learned(kind: str, run: str):
    if kind in ("ppo", "ppo_greedy"):
        from jaxsoc.learners.chaic.ppo_helper import load_ppo_helper

        return load_ppo_helper(run, greedy=kind == "ppo_greedy")
    from jaxsoc.learners.chaic.bm import load_bm_helper

    return load_bm_helper(run)


def _budget(max_events: int | None) -> dict:
    return {"max_events": max_events} if max_events else {}


@functools.lru_cache(maxsize=16)
def _player(helper: str, max_events: int | None):
    """Returns ``play.make_player`` for the constrained agent and the rule-based ``helper``, built once per process
    (so ``--append`` and repeated evaluations compile each player once)."""
    from jaxsoc.envs.chaic import agents as A
    from jaxsoc.envs.chaic import play as P

    return P.make_player(A.make_agent("main"), rule_helper(helper), **_budget(max_events))


def evaluate(
    tasks: list[str],
    helpers: list[str],
    seeds: int,
    seed: int = 0,
    split: str = "test",
    max_events: int | None = None,
    episodes: int | None = None,
    timing=None,
    agents: dict | None = None,
    task_seed: int | None = None,
    log=lambda line: print(line, flush=True),
    alone: bool = True,
):
    """Returns ``{task: {helper: metrics.summary}}``: every episode of ``split`` of each task (the first
    ``episodes`` if given) played ``seeds`` times by the constrained agent alone (``none``) and with each helper
    (the same keys for every helper). ``task_seed``: the seed ``split`` is built from (its placements and goals;
    default ``seed``); ``seed``: the runs' keys. ``max_events``: the event budget per episode
    (``play.DEFAULT_MAX_EVENTS``); ``timing``: a ``world.Timing`` (default: the calibrated one); ``agents``:
    ``{label: agent}`` for the helpers that are not rule-based names (the learned ones); ``log``: called with a line
    per task and helper played (None: silent); ``alone``: False leaves out the constrained agent alone (``none``) unless
    ``helpers`` names it, and with it the EI of the others (their other metrics are the same)."""
    from jaxsoc.envs.chaic import agents as A
    from jaxsoc.envs.chaic import metrics as M
    from jaxsoc.envs.chaic import play as P
    from jaxsoc.envs.chaic import tasks as T
    from jaxsoc.envs.chaic import world as W

    main, agents = A.make_agent("main"), agents or {}
    players = {}
    for h in dict.fromkeys(["none", *helpers] if alone else helpers):
        learned = h in agents
        players[h] = P.make_player(main, agents[h], **_budget(max_events)) if learned else _player(h, max_events)
    results: dict = {}
    for task in tasks:
        states = T.cached_split(task, split, seed if task_seed is None else task_seed).states
        count = int(states.total.shape[0]) if episodes is None else min(episodes, int(states.total.shape[0]))
        batch = jax.tree_util.tree_map(lambda x, n=count: jnp.repeat(x[:n], seeds, axis=0), states)
        keys = jax.random.split(jax.random.key(seed), count * seeds)
        runs = {}
        for helper, run in players.items():
            start = time.perf_counter()
            runs[helper] = jax.tree_util.tree_map(np.asarray, run(batch, keys, timing or W.Timing()))
            runs[helper].pop("final", None)
            if log is not None:
                log(f"  {task} / {helper}: {time.perf_counter() - start:.1f} s")
        shape = (count, seeds)
        alone_runs = runs.get("none")
        results[task] = {
            h: M.summary(runs[h], None if h == "none" else alone_runs, shape) for h in ["none", *helpers] if h in runs
        }
    return results


def _cell(value, fmt="{:.2f}") -> str:
    return "/" if value is None else fmt.format(value)


def format_table(results: dict) -> str:
    """Returns a markdown table: per task and helper TR (EI), IA, CR, STD_TR, ER, and the paper's TR (for ``ppo`` its
    RL helper of table 5, for ``bm`` its LLM + BM helper)."""
    lines = [
        "| task | helper | TR (EI) | IA | CR | STD_TR | ER | paper TR |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for task, rows in results.items():
        for helper, m in rows.items():
            ei = "" if m["ei"] is None else f" ({m['ei']:+.2f})"
            paper = K.PAPER_TR[task][PAPER_ROWS[helper]] if helper in PAPER_ROWS else None
            if helper in LEARNED:
                paper = K.PAPER_HELPER_TR[LEARNED[helper]].get(task)
            er = _cell(m["er"]) if task == "shopping" else "/"
            ia = _cell(m["ia"]) if helper != "none" else "/"
            cr = _cell(m["cr"]) if helper != "none" else "/"
            lines.append(
                f"| {task} | {helper} | {m['tr']:.2f}{ei} | {ia} | {cr} | {m['std_tr']:.2f} | {er} | {_cell(paper)} |"
            )
    return "\n".join(lines)


def plot(results: dict, path: Path) -> Path:
    """Writes a bar plot of the transport rates (bars: jaxsoc; dots: the paper) to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = list(results)
    helpers = list(next(iter(results.values())))
    width = 0.8 / len(helpers)
    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(tasks)), 3.6))
    for i, helper in enumerate(helpers):
        x = np.arange(len(tasks)) + (i - (len(helpers) - 1) / 2) * width
        tr = [results[t][helper]["tr"] for t in tasks]
        se = [results[t][helper]["std_tr"] for t in tasks]
        ax.bar(x, tr, width, yerr=se, label=helper, capsize=2)
        if helper in PAPER_ROWS:
            ax.plot(x, [K.PAPER_TR[t][PAPER_ROWS[helper]] for t in tasks], "k.", markersize=5)
    ax.set_xticks(np.arange(len(tasks)), tasks, rotation=20)
    ax.set_ylabel("transport rate")
    ax.set_title("CHAIC: jaxsoc (bars, standard error) and the paper (dots)")
    ax.legend(fontsize=7, ncols=len(helpers))
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)
    return path


#: the metrics of a row of ``chaic_eval.json``: always numbers, and numbers or null (``metrics.summary``)
ROW_NUMBERS, ROW_OPTIONAL = ("tr", "std_tr"), ("ei", "ia", "cr", "er")


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def read_results(path: Path) -> dict:
    """Returns ``path`` (a ``chaic_eval.json``: ``{"setting": {...}, "results": {task: {helper: metrics}}}``) after
    checking its structure. Raises ``ValueError`` naming the file and the key that is missing or malformed."""
    try:
        saved = json.loads(path.read_text())
    except ValueError as error:  # JSONDecodeError, UnicodeDecodeError
        raise ValueError(f"--append: {path} is not readable JSON: {error}") from None
    if not isinstance(saved, dict):
        what = type(saved).__name__
        raise ValueError(f"--append: {path} must hold an object with 'setting' and 'results', not a {what}")
    for key in ("setting", "results"):
        if not isinstance(saved.get(key), dict):
            raise ValueError(f"--append: {path}: {key!r} is missing or not an object")
    for task, rows in saved["results"].items():
        if not isinstance(rows, dict):
            raise ValueError(f"--append: {path}: results[{task!r}] must map helpers to their metrics")
        for helper, row in rows.items():
            where = f"results[{task!r}][{helper!r}]"
            if not isinstance(row, dict):
                raise ValueError(f"--append: {path}: {where} must be an object of metrics")
            for key in (*ROW_NUMBERS, *ROW_OPTIONAL):
                value = row.get(key)
                if not (_is_number(value) or (value is None and key in ROW_OPTIONAL and key in row)):
                    raise ValueError(f"--append: {path}: {where}[{key!r}] is missing or not a number")
    return saved


def earlier_results(out: Path, setting: dict, tasks: list[str]) -> dict:
    """Returns the results in ``out/chaic_eval.json`` for ``--append``. Raises ``ValueError`` when there are none,
    the file is malformed (``read_results``) or they were measured with another setting or other tasks. A file
    without ``task_seed`` (written before ``--task-seed`` existed) was built from its ``seed``."""
    path = out / "chaic_eval.json"
    if not path.exists():
        raise ValueError(f"--append: {path} does not exist")
    earlier = read_results(path)
    saved = {"task_seed": earlier["setting"].get("seed"), **earlier["setting"]}
    differ = sorted(k for k in setting if k != "device" and saved.get(k) != setting[k])
    if differ or list(earlier["results"]) != tasks:
        what = differ or [f"tasks {list(earlier['results'])}"]
        raise ValueError(f"--append: {path} was measured with another {', '.join(map(str, what))}")
    return earlier["results"]


def check_episodes(tasks: list[str], split: str, task_seed: int, episodes: int | None) -> None:
    """Raises ``ValueError`` when ``--episodes`` asks for more episodes than ``split`` of a task holds."""
    from jaxsoc.envs.chaic import tasks as T

    if episodes is None:
        return
    for task in tasks:
        size = len(T.split_episodes(task, split, task_seed))
        if episodes > size:
            raise ValueError(f"--episodes {episodes}: the {split} split of {task} has {size} episodes")


def write_results(out: Path, setting: dict, results: dict) -> list[Path]:
    """Writes ``out/chaic_eval.json`` (``{"setting", "results"}``), ``chaic_eval.md`` (``format_table``) and
    ``chaic_eval.png`` (``plot``); returns their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "chaic_eval.json").write_text(json.dumps({"setting": setting, "results": results}, indent=2))
    (out / "chaic_eval.md").write_text(format_table(results) + "\n")
    return [out / "chaic_eval.json", out / "chaic_eval.md", plot(results, out / "chaic_eval.png")]
