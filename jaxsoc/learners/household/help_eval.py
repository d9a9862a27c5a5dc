"""The household's Help stage (``jaxsoc household eval``): Alice alone and with a helper over the tasks of a set, the
paper's metrics (``agents.evaluate``), for the scripted helpers and the learned ones (``hp``, ``hybrid``, ``hrl``
given the goal a watch run infers from the paired demonstration).

``evaluate_help`` runs every helper and returns the record that ``household_help.json`` holds; ``write_help`` writes
it with its table (``format_help``) and plot (``plot_help``); ``earlier_record``, ``check_setting`` and ``merged``
add helpers to a record already written (``--append``)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.learners.run_log import save_figure

HELPERS = ("alice-alone", "hp", "hp-tg", "hprg", "hybrid", "hrl", "random", "oracle-b", "oracle-ab")
#: helpers given the goal inferred from the paired demonstration (``--watch RUN``), as the paper's HP, Hybrid, HRL
INFERRED = ("hp", "hybrid", "hrl")


def batch_size(episodes: int, most: int) -> int:
    """Returns the batch that runs ``episodes`` episodes in the fewest batches of at most ``most`` each, evened out
    so that the last batch pads fewer episodes than there are batches: ``episodes`` itself when it is <= ``most``
    (one batch, no padding)."""
    batches = -(-episodes // most)
    return -(-episodes // batches)


def run_episodes(
    task_set, agent_alice, agent_helper, params, seeds: int, batch: int, num_tasks: int, seed: int, goals=None
):
    """Returns ``play``'s results for every (task, seed) pair, reshaped to ``[tasks, seeds]``, run at most
    ``batch`` at a time (``batch_size``: one compiled shape, padded by fewer than one episode per batch);
    ``goals`` (int8[len(task_set), 30] or None) are the helper's goals (``play``'s ``helper_goals``)."""
    from jaxsoc.envs.household import tasks as T
    from jaxsoc.envs.household.agents import evaluate as EV

    run = jax.jit(lambda t, k, g: EV.play(t, agent_alice, agent_helper, params, k, helper_goals=g))
    chosen = task_index(len(task_set), num_tasks)
    index = np.repeat(chosen, seeds)
    keys = jax.random.split(jax.random.key(seed), len(index))
    batch = batch_size(len(index), batch)
    parts = []
    for start in range(0, len(index), batch):
        real = index[start : start + batch]
        pad = batch - len(real)
        rows = np.concatenate([real, np.zeros(pad, int)])
        k = jnp.concatenate([keys[start : start + batch], keys[:pad]])
        g = None if goals is None else jnp.asarray(goals[rows])
        out = jax.device_get(run(T.take(task_set.states, rows), k, g))
        parts.append({name: value[: len(real)] for name, value in out.items()})
    return {
        name: np.concatenate([p[name] for p in parts]).reshape(num_tasks, seeds, *parts[0][name].shape[1:])
        for name in parts[0]
    }


def task_index(total: int, num: int) -> np.ndarray:
    """Returns ``num`` task indices spread evenly over ``[0, total)`` (all of them when ``num >= total``), so a
    subset covers every activity of a set ordered by activity."""
    if num >= total:
        return np.arange(total)
    return np.unique(np.round(np.linspace(0, total - 1, num)).astype(int))


def format_help(results: dict, split: str) -> str:
    """Returns the Help stage's markdown table of ``results`` (``{helper: {group: evaluate.metrics row}}``)."""
    lines = [
        f"Help stage on {split}: mean ± standard error over tasks (each task's runs averaged first)",
        "",
        "| helper | group | tasks | success alone | success helped | length alone | length helped | speedup | "
        "reward alone | reward helped | runs with a conflict |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    fmt = lambda pair, p=3: f"{pair[0]:.{p}f} ± {pair[1]:.{p}f}" if pair else "–"  # noqa: E731
    for helper, table in results.items():
        for group, row in table.items():
            lines.append(
                f"| {helper} | {group} | {row['tasks']} | {fmt(row['alone_success'])} | "
                f"{fmt(row.get('helped_success'))} | {fmt(row['alone_length'], 1)} | "
                f"{fmt(row.get('helped_length'), 1)} | "
                f"{fmt(row.get('speedup'))} | {fmt(row['alone_reward'])} | {fmt(row.get('helped_reward'))} | "
                f"{fmt(row.get('conflict_runs'), 2)} |"
            )
    return "\n".join(lines)


def plot_help(results: dict, path: Path) -> None:
    """Writes the success rate against the speedup of every helper (and Alice alone) to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 4))
    for helper, table in results.items():
        row = table["all"]
        if "speedup" not in row:
            continue
        ax.errorbar(
            row["helped_success"][0],
            row["speedup"][0],
            xerr=row["helped_success"][1],
            yerr=row["speedup"][1],
            fmt="o",
            capsize=3,
            label=helper,
        )
    alone = next(iter(results.values()))["all"]["alone_success"]
    ax.errorbar(alone[0], 0.0, xerr=alone[1], fmt="s", color="black", capsize=3, label="Alice alone")
    ax.axhline(0.0, color="grey", lw=0.5)
    ax.set_xlabel("success rate")
    ax.set_ylabel("speedup (L_Alice / L_help - 1)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)


#: the figures of a row of ``household_help.json`` (``evaluate.metrics``), each ``[mean, standard error]``: always
#: there, and there with a helper
ROW_ALWAYS = ("alone_success", "alone_length", "alone_reward")
ROW_HELPED = ("helped_success", "helped_length", "helped_reward", "speedup", "conflict_runs")


def _is_pair(value) -> bool:
    number = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)  # noqa: E731
    return isinstance(value, list) and len(value) == 2 and all(map(number, value))


def read_record(path: Path) -> dict:
    """Returns ``path`` (a ``household_help.json``) after checking what ``--append`` reads of it: an object whose
    ``results`` map each helper to groups (``all`` among them) of rows with ``tasks`` and ``[mean, se]`` figures,
    whose ``lengths`` and ``runs`` are objects and whose ``seconds`` is a number. Raises ``ValueError`` naming the
    file and the key that is missing or malformed."""
    try:
        old = json.loads(path.read_text())
    except ValueError as error:  # JSONDecodeError, UnicodeDecodeError
        raise ValueError(f"--append: {path} is not readable JSON: {error}") from None
    if not isinstance(old, dict):
        raise ValueError(f"--append: {path} must hold an object, not a {type(old).__name__}")
    for key in ("results", "lengths", "runs"):
        if not isinstance(old.get(key), dict):
            raise ValueError(f"--append: {path}: {key!r} is missing or not an object")
    if not isinstance(old.get("seconds"), (int, float)) or isinstance(old.get("seconds"), bool):
        raise ValueError(f"--append: {path}: 'seconds' is missing or not a number")
    for helper, groups in old["results"].items():
        if not isinstance(groups, dict) or "all" not in groups:
            raise ValueError(f"--append: {path}: results[{helper!r}] must map groups, 'all' among them, to rows")
        for group, row in groups.items():
            where = f"results[{helper!r}][{group!r}]"
            if not isinstance(row, dict) or not isinstance(row.get("tasks"), int):
                raise ValueError(f"--append: {path}: {where} must be an object with an integer 'tasks'")
            for key in (*ROW_ALWAYS, *(k for k in ROW_HELPED if k in row)):
                if not _is_pair(row.get(key)):
                    raise ValueError(f"--append: {path}: {where}[{key!r}] is missing or not [mean, standard error]")
    return old


def earlier_record(out: Path | None) -> dict | None:
    """Returns the record already in ``out`` for ``--append`` (None when there is none); raises ``ValueError`` when
    it is malformed (``read_record``) or there is no ``--out``."""
    if out is None:
        raise ValueError("--append adds to the results in --out DIR: give --out")
    path = out / "household_help.json"
    return read_record(path) if path.is_file() else None


def check_setting(old: dict, setting: dict, out: Path) -> None:
    """Raises ``ValueError`` when the record ``old`` in ``out`` was measured in another ``setting`` (split, task
    seed, tasks, seeds, simulations, teleport, seed). A record without ``task_seed`` (written before
    ``--task-seed`` existed, when the split was built from ``--seed``) has its ``seed`` as task seed."""
    old = {"task_seed": old.get("seed"), **old}
    other = {k: old.get(k) for k in setting if old.get(k) != setting[k]}
    if other:
        raise ValueError(f"--append: {out / 'household_help.json'} was measured with {other}, not {setting}")


def merged(old: dict, new: dict) -> dict:
    """Returns the earlier record ``old`` with ``new``'s helpers added (replacing those measured again)."""
    merged = dict(old)
    for name in ("results", "lengths", "runs", "option_end"):
        merged[name] = {**old.get(name, {}), **new.get(name, {})}
    merged["seconds"] = old.get("seconds", 0.0) + new["seconds"]
    return merged


#: the helpers whose options end by ``--option-end`` (``options.OPTION_ENDS``)
OPTION_HELPERS = ("hybrid", "hrl")


def helper_agent(
    name: str,
    simulations: int = 100,
    hybrid: str | None = None,
    hrl: str | None = None,
    hrl_commit: str = "auto",
    option_end: str = "observed",
):
    """Returns Bob for helper ``name`` (``HELPERS``; None for ``alice-alone``): ``hybrid`` and ``hrl`` are the runs of
    the learned helpers, ``hrl_commit`` ``auto``, ``on`` or ``off`` (``hrl.helper_from_run``'s ``commit``),
    ``option_end`` how their options end (``options.OPTION_ENDS``: ``"observed"``, or the privileged ``"true"``)."""
    from jaxsoc.envs.household.agents import agents as AG

    if name == "alice-alone":
        return None
    if name == "hybrid":
        from jaxsoc.learners.household import hybrid as HY

        return HY.helper_from_run(hybrid, option_end=option_end)
    if name == "hrl":
        from jaxsoc.learners.household import hrl as HR

        commit = {"auto": None, "on": True, "off": False}[hrl_commit]
        return HR.helper_from_run(hrl, hybrid, commit=commit, option_end=option_end)
    kind = {"hp": "hp", "hp-tg": "hp", "oracle-ab": "oracle-b"}.get(name, name)
    return AG.make_agent(kind, simulations)


def inferred_goals(
    watch, task_set, demos: str | None = None, task_seed: int = 0, seed: int = 0, simulations: int = 100, log=print
) -> np.ndarray:
    """Returns int8[len(task_set), 30]: the goal the watch run ``watch`` (its directory, or its ``watch_run.load``)
    infers for every task from its paired demonstration (``demos/<split>.npz``, else recorded now from the split
    built from ``task_seed`` with key ``seed``: ``demos.split_tasks``), by ``task_id``. Raises ``ValueError`` when a
    task has no demonstration."""
    from jaxsoc.envs.household.agents import demos as D
    from jaxsoc.learners.household import watch_run

    if demos:
        paired = D.load(Path(demos) / f"{task_set.split}.npz")
    else:
        if log is not None:
            log(f"recording the paired {task_set.split} demonstrations (give --demos DIR to reuse them)")
        paired = D.record(D.split_tasks(task_set.split, task_seed), seed, num_simulations=simulations)
    predicted = np.asarray(watch_run.infer_goals(watch, paired), np.int8)
    goals = np.full((len(task_set), predicted.shape[1]), -1, np.int8)
    ids = np.asarray(paired.tasks.states.task_id)
    if ids.min() < 0 or ids.max() >= len(task_set):
        raise ValueError(f"the demonstrations' task ids do not index the {len(task_set)} tasks of {task_set.split}")
    goals[ids] = predicted
    missing = np.flatnonzero((goals < 0).any(1))
    if missing.size:
        raise ValueError(f"{missing.size} tasks of {task_set.split} have no demonstration (e.g. task {missing[0]})")
    return goals


def help_setting(task_set, num_tasks: int, seeds: int, simulations: int, teleport: bool, seed: int) -> dict:
    """Returns the setting a record is measured in (what ``check_setting`` compares)."""
    return {
        "split": task_set.split,
        "task_seed": int(task_set.seed),
        "tasks": num_tasks,
        "seeds": seeds,
        "simulations": simulations,
        "teleport": teleport,
        "seed": seed,
    }


def evaluate_help(
    task_set,
    helpers: list[str],
    *,
    num_tasks: int | None = None,
    seeds: int = 5,
    simulations: int = 100,
    teleport: bool = False,
    batch: int = 100,
    seed: int = 0,
    watch: str | None = None,
    demos: str | None = None,
    hybrid: str | None = None,
    hrl: str | None = None,
    hrl_commit: str = "auto",
    option_end: str = "observed",
    task_seed: int | None = None,
    earlier: dict | None = None,
    log=lambda line: print(line, flush=True),
) -> dict:
    """Returns the record of ``household_help.json``: ``helpers`` (``HELPERS``) each beside Alice alone on
    ``num_tasks`` tasks of ``task_set`` spread evenly (``task_index``; default all), ``seeds`` runs each, at most
    ``batch`` at a time; the setting (``help_setting``), ``device``, ``seconds``, ``results`` (``evaluate.metrics``
    per helper and group), ``lengths`` and ``runs`` (the watch run of the inferred helpers), added to ``earlier`` (a
    record of the same setting) if given. ``watch``: the run that infers the goal of ``INFERRED`` helpers from the
    paired demonstrations (``demos``: their directory, else recorded from the split built from ``task_seed``,
    default the set's seed; ``inferred_goals``); ``hybrid``, ``hrl``, ``hrl_commit``, ``option_end``: the learned
    helpers (``helper_agent``; the record's ``option_end`` names each one's rule). The learned runs are read before
    any episode is played."""
    from jaxsoc.envs.household import env as E
    from jaxsoc.envs.household.agents import agents as AG
    from jaxsoc.envs.household.agents import evaluate as EV

    num_tasks = len(task_set) if num_tasks is None else min(num_tasks, len(task_set))
    params = E.HouseholdParams(tasks=task_set.states, teleport=teleport)
    acts = np.asarray(task_set.activities)[task_index(len(task_set), num_tasks)]
    setting = help_setting(task_set, num_tasks, seeds, simulations, teleport, seed)
    bobs = {name: helper_agent(name, simulations, hybrid, hrl, hrl_commit, option_end) for name in helpers}
    inferred = [n for n in helpers if n in INFERRED]
    if inferred:
        from jaxsoc.learners.household import watch_run

        demo_seed = int(task_set.seed) if task_seed is None else task_seed
        goals = inferred_goals(watch_run.load(watch), task_set, demos, demo_seed, seed, simulations, log)
    else:
        goals = None
    episodes = lambda alice, helper, g=None: run_episodes(  # noqa: E731
        task_set, alice, helper, params, seeds, batch, num_tasks, seed, g
    )
    alone_runs, results, raw = {}, {}, {}
    start = time.perf_counter()
    for name in helpers:
        alice_kind = "alice-oracle" if name == "oracle-ab" else "alice"
        alice = AG.make_agent(alice_kind, simulations)
        if alice_kind not in alone_runs:
            alone_runs[alice_kind] = episodes(alice, None)
        helper = bobs[name]
        helped = episodes(alice, helper, goals if name in INFERRED else None) if helper is not None else None
        results[name] = EV.metrics(alone_runs[alice_kind], helped, acts)
        raw[name] = {"alone": alone_runs[alice_kind], "helped": helped}
        if log is not None:
            log(f"{name}: done ({time.perf_counter() - start:.0f} s)")
    lengths = {k: {w: (v[w]["length"].tolist() if v[w] is not None else None) for w in v} for k, v in raw.items()}
    record = {**setting, "device": jax.devices()[0].device_kind, "seconds": time.perf_counter() - start}
    record.update(results=results, lengths=lengths, runs={k: watch for k in results if k in INFERRED})
    record["option_end"] = {k: option_end for k in results if k in OPTION_HELPERS}
    return merged(earlier, record) if earlier is not None else record


def write_help(out: Path, record: dict) -> list[Path]:
    """Writes ``out/household_help.json`` (``record``), ``household_help.md`` (``format_help``) and
    ``household_help.png`` (``plot_help``); returns their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "household_help.json").write_text(json.dumps(record, indent=1))
    (out / "household_help.md").write_text(format_help(record["results"], record["split"]) + "\n")
    plot_help(record["results"], out / "household_help.png")
    return [out / f"household_help.{ext}" for ext in ("json", "md", "png")]
