"""The Help stage's evaluation: Alice alone and Alice with a helper on a task set, several seeds per task.

``play(tasks, alice, helper, params, keys, max_steps)`` runs a batch of episodes (jittable; vmap inside) and
returns per episode whether the goal was reached, the episode length (``max_steps`` on failure, as the
original's ``calc_metrics_reward.py``), how many steps both characters named the same object, and how often
each character's action was carried out. ``evaluate`` runs every task ``seeds`` times alone and with the helper
and ``metrics`` turns the lengths into the paper's figures: success rate, episode length, speedup
``L_Alice / L_help - 1`` and the cumulative reward ``success - length / 250``, each as mean and standard error
over tasks (runs averaged per task first), overall and per activity.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.envs.household import env as E
from jaxsoc.envs.household import predicates as PR
from jaxsoc.envs.household import world as W
from jaxsoc.envs.household.agents.agents import AgentMemory, goal_targets


def play(
    tasks: W.State,
    alice,
    helper,
    params: E.HouseholdParams,
    keys: jax.Array,
    max_steps: int = 250,
    helper_goals: jax.Array | None = None,
):
    """Returns a dict of ``[B]`` arrays for ``B`` episodes (``tasks`` and ``keys`` with a leading axis ``B``):
    ``success`` bool, ``length`` int32 (``max_steps`` on failure), ``conflicts`` int32 (steps where both named
    the same object), ``valid`` float32[B, 2] (share of each character's actions carried out, until the end).
    ``helper`` None leaves Bob idle (Alice alone). ``helper_goals`` (int[B, 30] predicate counts, e.g. inferred
    from the paired demonstration) is the goal the helper is given instead of the true one: its ``init`` sees
    the task with that goal (``agents.goal_targets`` places it in the apartment); Alice keeps the true goal."""

    def one(task, key, goal):
        k_a, k_b, k_run = jax.random.split(key, 3)
        mem_a = alice.init(k_a, task)
        if goal is not None:
            count, target = goal_targets(task, goal)
            helper_task = task.replace(goal_count=count, goal_target=target)
        else:
            helper_task = task
        mem_b = helper.init(k_b, helper_task) if helper is not None else None

        def body(carry, k):
            state, mem_a, mem_b, done, length, conflicts, valid = carry
            ka, kb, ks = jax.random.split(k, 3)
            act_a, new_a = alice.act(ka, mem_a, state, mem_b if isinstance(mem_b, AgentMemory) else None)
            if helper is not None:
                act_b, new_b = helper.act(kb, mem_b, state, new_a)
            else:
                act_b, new_b = jnp.int32(0), mem_b
            nxt, _, success, _, info = E.advance(ks, state, jnp.stack([act_a, act_b]), params)
            keep = lambda new, old: jax.tree_util.tree_map(lambda x, y: jnp.where(done, y, x), new, old)  # noqa: E731
            live = ~done
            carry = (
                keep(nxt, state),
                keep(new_a, mem_a),
                keep(new_b, mem_b) if helper is not None else None,
                done | success,
                length + live,
                conflicts + (live & info["conflict"]),
                valid + live * info["action_valid"],
            )
            return carry, None

        init = (task, mem_a, mem_b, jnp.array(False), jnp.int32(0), jnp.int32(0), jnp.zeros(2, jnp.float32))
        (_, _, _, done, length, conflicts, valid), _ = jax.lax.scan(body, init, jax.random.split(k_run, max_steps))
        return {
            "success": done,
            "length": jnp.where(done, length, max_steps),
            "conflicts": conflicts,
            "valid": valid / jnp.maximum(length, 1),
        }

    return jax.vmap(one)(tasks, keys, helper_goals)


def _mean_se(x: np.ndarray) -> tuple[float, float]:
    x = np.asarray(x, np.float64)
    return float(x.mean()), float(x.std(ddof=1) / math.sqrt(len(x))) if len(x) > 1 else 0.0


def metrics(alone: dict, helped: dict | None, activities: np.ndarray, max_steps: int = 250) -> dict:
    """Returns the paper's figures from ``play`` results reshaped to ``[tasks, seeds]`` (``helped`` None: Alice
    alone only): per group ("all" and each activity name), ``success``, ``length``, ``reward`` and, with a
    helper, ``speedup`` and the share of runs with a conflict, each ``(mean, standard error)`` over tasks."""
    groups = {"all": np.ones(len(activities), bool)}
    for a, name in enumerate(PR.ACTIVITY_NAMES):
        groups[name] = (np.asarray(activities) == a).any(1)
    runs = {"alone": alone} if helped is None else {"alone": alone, "helped": helped}
    out: dict = {}
    for group, mask in groups.items():
        if not mask.any():
            continue
        row = {"tasks": int(mask.sum())}
        for who, r in runs.items():
            success = np.asarray(r["success"], np.float64)[mask].mean(1)
            length = np.asarray(r["length"], np.float64)[mask].mean(1)
            row[f"{who}_success"] = _mean_se(success)
            row[f"{who}_length"] = _mean_se(length)
            row[f"{who}_reward"] = _mean_se(success - length / max_steps)
        if helped is not None:
            la = np.asarray(alone["length"], np.float64)[mask].mean(1)
            lb = np.asarray(helped["length"], np.float64)[mask].mean(1)
            row["speedup"] = _mean_se(la / lb - 1)
            row["conflict_runs"] = _mean_se((np.asarray(helped["conflicts"])[mask] > 0).mean(1))
        out[group] = row
    return out
