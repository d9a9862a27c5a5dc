"""Interactive imitation learning (BabyAI, ICLR 2019, §4.4): grow the training set with the bot's
demonstrations of the missions the agent fails.

Starting from ``start_demos`` bot demonstrations (5,000 in the paper), each round

1. trains a new agent from scratch by behaviour cloning (``train_bc`` with ``config.bc``) and takes its best
   validation success rate (greedy, ``bc.val_episodes`` levels of ``bc.val_seed``);
2. stops when that rate reaches ``bc.success_threshold`` (99 %): the training-set size is the result;
3. otherwise lets the agent play new missions (greedy): level ``i`` of ``mission_seed``
   (``env.reset_env(jaxsoc.data.episode_reset_key(mission_seed, i))``) for ``i = cursor, cursor + 1, ...``,
   ``probe_episodes`` at a time; the bot plays the same levels the agent failed (same reset keys), and its
   successful demonstrations are added, in level order, until the set has grown by the factor ``growth``
   (1.2): ``max(n + 1, round(n * growth))`` demonstrations. The cursor moves past the last level used, so no
   mission is asked twice; levels probed after it in the same batch are probed again by the next agent.

A fixed ``bc.max_len`` is raised (to the next multiple of ``recurrence``) in a round whose training set holds
a longer demonstration. Missions are drawn from their own seed, distinct from the validation seed and from the
seed of the base demonstrations, so the agent is never taught on its validation levels. Demonstrations stay
in memory (``jaxsoc.data.memory``: the dataset writer's arrays, made by its own rollout).
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import jaxsoc
from jaxsoc.data.loader import DemoDataset
from jaxsoc.data.memory import MemoryDemos, bot_demos, load_demos
from jaxsoc.learners.bc import BCConfig, _is_int, padded_length, train_bc
from jaxsoc.learners.evaluate import play
from jaxsoc.learners.networks import registry

#: the default seed of the new missions (the validation levels use 10**9)
MISSION_SEED = 2 * 10**9


@dataclasses.dataclass(frozen=True)
class ImitationConfig:
    """Settings of interactive imitation learning (module docstring).

    Attributes:
        bc: the behaviour-cloning recipe of every round (its ``success_threshold`` ends the loop).
        start_demos: base demonstrations (the first of the given dataset, or bot demonstrations on levels
            ``0, 1, ...`` of ``demo_seed`` when no dataset is given).
        growth: factor by which the training set grows each round (> 1).
        max_rounds: the most training rounds.
        demo_seed: seed of the base levels when the bot plays them here.
        mission_seed: seed of the new missions.
        probe_episodes: new missions played by the agent at a time (one jitted batch; equal to
            ``bc.val_episodes`` it shares validation's compiled rollout).
        max_probe_episodes: the most new missions played per round.
        bot_envs: worlds the bot plays at once.
    """

    bc: BCConfig
    start_demos: int = 5000
    growth: float = 1.2
    max_rounds: int = 20
    demo_seed: int = 0
    mission_seed: int = MISSION_SEED
    probe_episodes: int = 512
    max_probe_episodes: int = 1_000_000
    bot_envs: int = 256

    def __post_init__(self) -> None:
        if not isinstance(self.bc, BCConfig):
            raise ValueError(f"ImitationConfig.bc must be a BCConfig, got {type(self.bc).__name__}")
        for name in ("start_demos", "max_rounds", "probe_episodes", "max_probe_episodes", "bot_envs"):
            value = getattr(self, name)
            if not _is_int(value) or value < 1:
                raise ValueError(f"ImitationConfig.{name} must be a positive integer, got {value!r}")
        if not (isinstance(self.growth, int | float) and math.isfinite(self.growth) and self.growth > 1):
            raise ValueError(f"ImitationConfig.growth must be a number above 1, got {self.growth!r}")
        for name in ("demo_seed", "mission_seed"):
            value = getattr(self, name)
            if not _is_int(value) or not 0 <= value < 2**32:
                raise ValueError(f"ImitationConfig.{name} must be an integer in [0, 2**32), got {value!r}")
        if self.mission_seed in (self.bc.val_seed, self.demo_seed):
            raise ValueError(
                f"ImitationConfig.mission_seed={self.mission_seed} must differ from the validation seed "
                f"({self.bc.val_seed}) and the base demonstrations' seed ({self.demo_seed})"
            )
        if self.max_probe_episodes < self.probe_episodes:
            raise ValueError("ImitationConfig.max_probe_episodes must be at least probe_episodes")

    def to_dict(self) -> dict[str, Any]:
        """Returns the settings as JSON-serialisable values."""
        out = dataclasses.asdict(self)
        out["bc"] = self.bc.to_dict()
        return out


@dataclasses.dataclass
class ImitationResult:
    """What ``interactive_imitation`` returns.

    Attributes:
        variables: the best variables of the last round's agent (numpy).
        demos: the final training set.
        rounds: one dict per round (see ``interactive_imitation``).
        solved_at: the training-set size whose agent reached the success threshold, or ``None``.
    """

    variables: dict[str, Any]
    demos: MemoryDemos
    rounds: list[dict[str, Any]]
    solved_at: int | None


def base_demos(
    config: ImitationConfig, dataset: str | Path | DemoDataset | MemoryDemos | None
) -> tuple[MemoryDemos, int | None]:
    """Returns ``(demos, seed)``: the ``config.start_demos`` base demonstrations (the first episodes of
    ``dataset``; with ``None``, the bot's successes on levels ``0, 1, ...`` of ``config.demo_seed``) and the
    seed of their levels (``None`` for ``MemoryDemos``, whose seed is unknown).

    Raises:
        ValueError: the dataset holds fewer than ``start_demos`` episodes.
    """
    if dataset is None:
        wanted, parts, lo = config.start_demos, [], 0
        while sum(p.num_episodes for p in parts) < wanted:
            missing = wanted - sum(p.num_episodes for p in parts)
            batch = max(missing, config.bot_envs)
            part = bot_demos(config.bc.env_id, config.demo_seed, np.arange(lo, lo + batch), num_envs=config.bot_envs)
            parts.append(part.take(np.arange(min(missing, part.num_episodes))))
            lo += batch
            if lo >= 2**31:
                raise RuntimeError("the bot solved too few levels to make the base demonstrations")
        demos = parts[0]
        for part in parts[1:]:
            demos = demos.concat(part)
        return demos, config.demo_seed
    if isinstance(dataset, MemoryDemos):
        if dataset.num_episodes < config.start_demos:
            raise ValueError(f"{config.start_demos} base demonstrations asked, {dataset.num_episodes} given")
        return dataset.take(np.arange(config.start_demos)), None
    data = dataset if isinstance(dataset, DemoDataset) else DemoDataset(dataset)
    return load_demos(data, config.start_demos), int(data.manifest["seed"])


def failed_mission_demos(
    config: ImitationConfig,
    variables: dict[str, Any],
    needed: int,
    cursor: int,
) -> tuple[MemoryDemos, int, dict[str, Any]]:
    """Plays new missions with the agent from level ``cursor`` of ``config.mission_seed`` on and returns bot
    demonstrations of the ones it failed.

    Args:
        config: the settings (``bc`` gives the env and model, ``probe_episodes`` the batch of missions).
        variables: the agent's variables.
        needed: demonstrations wanted.
        cursor: the first level index not yet used.

    Returns:
        ``(demos, cursor, stats)``: at most ``needed`` bot demonstrations of failed missions in level order
        (their ``seed`` is the level index), the new cursor (past the last level used, or past every level
        probed when fewer than ``needed`` were found), and ``missions_probed``, ``missions_failed`` (among
        the levels up to the new cursor) and ``bot_failures`` (failed missions the bot did not solve
        either).
    """
    bc = config.bc
    env, env_params = jaxsoc.make(bc.env_id)
    model = registry.build(bc.network, bc.model_config)
    policy_key = jax.random.key(0)  # unused: the agent acts greedily
    base_key = jax.random.key(config.mission_seed)  # level i: fold_in(base_key, i) = episode_reset_key(seed, i)
    parts: list[MemoryDemos] = []
    have = probed = failed_count = bot_failures = 0
    start = cursor
    while have < needed and probed < config.max_probe_episodes:
        if cursor + config.probe_episodes > 2**31:
            break
        levels = np.arange(cursor, cursor + config.probe_episodes, dtype=np.int64)
        keys = jax.vmap(jax.random.fold_in, in_axes=(None, 0))(base_key, jnp.asarray(levels, jnp.int32))
        # spelled as evaluate calls it (jit caches per spelling of static arguments): validation's compiled loop
        evaluation = play(env, env_params, model, variables, keys, policy_key, greedy=True, step_cap=100_000)
        failed = levels[~np.asarray(evaluation.success)]
        probed += config.probe_episodes
        last_used = None
        for lo in range(0, len(failed), config.bot_envs):
            if have >= needed:
                break
            asked = failed[lo : lo + min(config.bot_envs, needed - have)]
            demos = bot_demos(bc.env_id, config.mission_seed, asked, num_envs=config.bot_envs)
            solved = demos.episodes["seed"]
            keep = min(len(solved), needed - have)
            if keep:
                parts.append(demos.take(np.arange(keep)))
                have += keep
            # levels up to the last kept demonstration, or all asked ones if the bot fell short
            last_used = int(solved[keep - 1]) if have >= needed else int(asked[-1])
            bot_failures += int(np.sum(asked <= last_used)) - keep
        cursor = last_used + 1 if have >= needed and last_used is not None else cursor + config.probe_episodes
        failed_count += int(np.sum(failed < cursor))
    demos = parts[0] if parts else bot_demos(bc.env_id, config.mission_seed, [], num_envs=config.bot_envs)
    for part in parts[1:]:
        demos = demos.concat(part)
    stats = {"missions_probed": cursor - start, "missions_failed": failed_count, "bot_failures": bot_failures}
    return demos, cursor, stats


def interactive_imitation(
    config: ImitationConfig,
    dataset: str | Path | DemoDataset | MemoryDemos | None = None,
    out_dir: str | Path | None = None,
    progress: bool = True,
    callback: Callable[[dict[str, Any], dict[str, Any]], bool | None] | None = None,
) -> ImitationResult:
    """Runs interactive imitation learning (module docstring).

    Args:
        config: the settings.
        dataset: where the ``start_demos`` base demonstrations come from (its first episodes); ``None``: the
            bot plays levels ``0, 1, ...`` of ``config.demo_seed`` (its successes are kept).
        out_dir: when given, receives ``imitation_config.json``, ``rounds.jsonl`` (one line per round) and
            each round's ``train_bc`` outputs in ``round-{r:02d}/``.
        progress: show ``train_bc``'s progress bars.
        callback: called after each round with the round's record and the round agent's variables;
            returning ``True`` stops.

    Returns:
        an ``ImitationResult``; each round's record holds ``round`` (0-based), ``demos`` (training-set
        size), ``val_success_rate`` (the round's best), ``epochs``, ``updates``, ``max_len`` (the padded
        length trained with) and ``wall_s``; a round
        followed by growth adds ``target_demos``, ``new_demos``, ``added_seeds`` (level indices under
        ``mission_seed`` of the added demonstrations), ``missions_probed``, ``missions_failed``,
        ``bot_failures`` and ``probe_success_rate``.

    Raises:
        ValueError: the dataset holds fewer than ``start_demos`` episodes, was generated with
            ``mission_seed``, or does not fit ``config.bc`` (see ``bc.load_training_demos``).
    """
    bc = config.bc
    demos, base_seed = base_demos(config, dataset)
    if base_seed is not None and base_seed == config.mission_seed:
        raise ValueError(
            f"the base demonstrations were played on the levels of seed {base_seed}, the mission_seed; choose "
            "another mission_seed"
        )
    out = None if out_dir is None else Path(out_dir)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "imitation_config.json").write_text(json.dumps(config.to_dict(), indent=2) + "\n")
        (out / "rounds.jsonl").write_text("")
    rounds: list[dict[str, Any]] = []
    solved_at, variables, cursor = None, None, 0
    for r in range(config.max_rounds):
        start = time.perf_counter()
        round_dir = None if out is None else out / f"round-{r:02d}"
        if bc.max_len is not None and int(demos.episodes["length"].max()) > bc.max_len:
            bc = bc.replace(max_len=padded_length(bc.replace(max_len=None), demos))  # a longer new demonstration
        variables, history = train_bc(bc, demos, out_dir=round_dir, progress=progress)
        n = demos.num_episodes
        success = max(h["val_success_rate"] for h in history)
        record: dict[str, Any] = {
            "round": r,
            "demos": n,
            "val_success_rate": success,
            "epochs": len(history),
            "updates": history[-1]["updates"],
            "max_len": padded_length(bc, demos),
        }
        solved = success >= bc.success_threshold
        grow = not solved and r + 1 < config.max_rounds
        if grow:
            target = max(n + 1, round(n * config.growth))
            new, cursor, stats = failed_mission_demos(config, variables, target - n, cursor)
            record.update(
                target_demos=target,
                new_demos=new.num_episodes,
                added_seeds=[int(s) for s in new.episodes["seed"]],
                **stats,
                probe_success_rate=1.0 - stats["missions_failed"] / max(stats["missions_probed"], 1),
            )
        record["wall_s"] = time.perf_counter() - start
        rounds.append(record)
        if out is not None:
            with open(out / "rounds.jsonl", "a") as f:
                f.write(json.dumps(record) + "\n")
        stop = callback(record, variables) if callback is not None else None
        if solved:
            solved_at = n
            break
        if stop or not grow or new.num_episodes == 0:
            break
        demos = demos.concat(new)
    return ImitationResult(variables, demos, rounds, solved_at)
