"""CHAIC episodes with rule-based agents only: the rule-based helpers by name (``rule_helper``), the task names of a
command (``check_tasks``), ``world.Timing`` overrides (``parse_timing``) and the per-event states of one episode
(``rollout``, what ``jaxsoc chaic render`` draws)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from jaxsoc.envs.chaic import catalogue as K
from jaxsoc.envs.chaic import state as S

HELPERS = ("none", "random", "rhp", "oracle")
#: every rule-based helper: ``HELPERS``, ``rhp_options``, the RHP rules acting through the options of
#: ``envs.chaic.options`` (the ceiling of a policy cloned from them), and ``goal_options``, the same told the goal
RULE_HELPERS = (*HELPERS, "rhp_options", "goal_options")


def check_tasks(names: list[str]) -> list[str]:
    """Returns the CHAIC tasks named by ``names`` (``["all"]``: every task). Raises ``ValueError`` for an unknown
    name."""
    if names == ["all"]:
        return list(K.TASKS)
    unknown = [name for name in names if name not in K.TASKS]
    if unknown:
        raise ValueError(f"unknown CHAIC task(s) {unknown}; choose from {list(K.TASKS)} or 'all'")
    return names


def rule_helper(name: str):
    """Returns the agent of the rule-based helper ``name`` (``RULE_HELPERS``)."""
    from jaxsoc.envs.chaic import agents as A
    from jaxsoc.envs.chaic import options as OP

    if name in ("rhp_options", "goal_options"):
        return OP.OptionExpertHelper(knows_goal=name == "goal_options")
    return A.make_agent(name)


#: ``world.Timing``'s fields that are not durations in frames: the child's run-away probability and the view distance
#: in metres; every other field is a number of frames
TIMING_PROBABILITIES = ("child_run_prob",)
TIMING_DISTANCES = ("view_dist",)


def _check_timing(name: str, value: float, item: str) -> None:
    """Raises ``ValueError`` naming ``--timing item`` unless ``value`` fits field ``name``: finite, a probability in
    [0, 1], a distance >= 0 or a number of frames >= 0."""
    if not math.isfinite(value):
        raise ValueError(f"--timing {item}: {name} must be a finite number, got {value}")
    if name in TIMING_PROBABILITIES and not 0.0 <= value <= 1.0:
        raise ValueError(f"--timing {item}: {name} is a probability and must be in [0, 1], got {value}")
    if name in TIMING_DISTANCES and value < 0:
        raise ValueError(f"--timing {item}: {name} is a distance in metres and must be >= 0, got {value}")
    if name not in (*TIMING_PROBABILITIES, *TIMING_DISTANCES) and value < 0:
        raise ValueError(f"--timing {item}: {name} is a number of frames and must be >= 0, got {value}")


def parse_timing(items: list[str] | None):
    """Returns a ``world.Timing`` with ``name=value`` overrides (e.g. ``move=10``). Raises ``ValueError`` for an
    unknown name, a value that is not a number, NaN or infinite, negative frames or distance, or a probability
    outside [0, 1]."""
    from jaxsoc.envs.chaic import world as W

    timing = W.Timing()
    fields = set(vars(timing))
    for item in items or []:
        name, _, value = item.partition("=")
        if name not in fields:
            raise ValueError(f"unknown timing {name!r} in {item!r}; choose from {sorted(fields)}")
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"timing {item!r}: {value!r} is not a number") from None
        _check_timing(name, number, item)
        timing = timing.replace(**{name: number})
    return timing


def rollout(state: S.State, main, helper, key: jax.Array, events: int) -> S.State:
    """Returns the ``State`` after each of ``events`` events (leaves ``[events, ...]``) of one episode."""
    from jaxsoc.envs.chaic import play as P
    from jaxsoc.envs.chaic import world as W

    timing = W.Timing()
    k_m, k_h, k_run = jax.random.split(key, 3)
    state = P.prepare(state, helper)
    carry = (state, main.init(k_m, state, S.MAIN), helper.init(k_h, state, S.HELPER))

    def body(carry, k):
        state, mem_m, mem_h = carry
        k_a, k_b, k_s = jax.random.split(k, 3)
        ready = W.ready(state)
        act_m, new_m = main.act(k_a, mem_m, state, timing)
        act_h, new_h = helper.act(k_b, mem_h, state, timing)
        stepped, _ = W.step_event(k_s, state, jnp.stack([act_m, act_h]).astype(jnp.int32), timing)
        over = P.finished(state)
        state = W.jnp_select(over, state, stepped)
        mem_m = W.jnp_select(ready[S.MAIN] & ~over, new_m, mem_m)
        mem_h = W.jnp_select(ready[S.HELPER] & ~over, new_h, mem_h)
        return (state, mem_m, mem_h), state

    _, states = jax.lax.scan(body, carry, jax.random.split(k_run, events))
    return states


def render_episode(
    task: str, split: str, seed: int, episode: int, helper: str, events: int, frame_step: int, size: int
):
    """Returns ``(images, frames, rates, keep)`` of episode ``episode`` of ``split`` (built from ``seed``) of
    ``task`` played by the constrained agent and the rule-based ``helper`` for ``events`` events: one image per
    ``frame_step`` simulated frames (``keep``: their events), every event's frame and the transport rate of each kept
    image. Raises ``ValueError`` for an unknown helper or task or an episode outside the split."""
    import numpy as np

    from jaxsoc.envs.chaic import agents as A
    from jaxsoc.envs.chaic import render as R
    from jaxsoc.envs.chaic import tasks as T
    from jaxsoc.envs.chaic import world as W

    if helper not in RULE_HELPERS:
        raise ValueError(f"unknown helper {helper!r}; choose from {list(RULE_HELPERS)}")
    task_set = T.make_split(check_tasks([task])[0], split, seed)
    if not 0 <= episode < len(task_set):
        raise ValueError(f"--episode must be in [0, {len(task_set)}), got {episode}")
    state = jax.tree_util.tree_map(lambda x: x[episode], task_set.states)
    run = jax.jit(rollout, static_argnums=(1, 2, 4))
    states = run(state, A.make_agent("main"), rule_helper(helper), jax.random.key(seed), events)
    frames = np.asarray(states.frame)
    keep = np.flatnonzero(np.diff(frames // frame_step, prepend=-1) > 0)  # one image per frame_step frames
    shown = jax.tree_util.tree_map(lambda x: x[keep], states)
    images = np.asarray(R.episode_frames(shown, size=size))
    rates = np.asarray(jax.vmap(W.transport_rate)(shown))
    return images, frames, rates, keep
