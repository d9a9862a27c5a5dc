"""``jaxsoc household``: the household family's subcommands.

jaxsoc household tasks --out tasks                        # train.npz, test-1.npz, test-2.npz from seed 0
jaxsoc household tasks --split test-1 --seed 3 --out t    # one set
jaxsoc household tasks --show tasks/test-1.npz            # check a file and summarise it
jaxsoc household render --split test-1 --task 4 --out ep.gif   # the scripted solver as Alice, random Bob
"""

from __future__ import annotations

import argparse
import collections
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxsoc.core.commands import clear_errors

POLICIES = ("noop", "random", "solver")


def _summary(task_set) -> str:
    from jaxsoc.envs.household import predicates as PR

    acts = collections.Counter(
        "+".join(PR.ACTIVITY_NAMES[a] for a in row if a >= 0) for row in np.asarray(task_set.activities)
    )
    apts = collections.Counter(int(a) for a in np.asarray(task_set.states.apartment))
    goals = len({np.asarray(g).tobytes() for g in np.asarray(task_set.states.goal_count)})
    lines = [
        f"{task_set.split} (seed {task_set.seed}): {len(task_set)} tasks, {goals} distinct goals",
        "  activities: " + ", ".join(f"{k} {v}" for k, v in sorted(acts.items())),
        "  apartments: " + ", ".join(f"{k}: {v}" for k, v in sorted(apts.items())),
        "  task 0: " + task_set.goal_texts()[0],
    ]
    return "\n".join(lines)


def cmd_tasks(args) -> int:
    from jaxsoc.envs.household import tasks as T

    if args.show:
        print(_summary(T.load(args.show)))
        return 0
    if not args.out:
        raise ValueError("--out DIR is required to write task sets (or give --show FILE)")
    splits = list(T.SPLITS) if args.split == "all" else [args.split]
    for split in splits:
        task_set = T.make_split(split, args.seed)
        path = T.save(task_set, Path(args.out) / f"{split}.npz")
        print(f"wrote {path}\n{_summary(task_set)}")
    return 0


def _policy(name: str, char: int):
    from jaxsoc.envs.household import env as E

    if name == "noop":
        return lambda key, state: jnp.int32(0)
    if name == "random":
        return lambda key, state: E.random_valid_action(key, state, char)
    from jaxsoc.envs.household.solver import solver_action

    return lambda key, state: solver_action(state, char)


def rollout(task, params, alice: str, bob: str, steps: int, key: jax.Array):
    """Returns ``(states, actions, success)``: a household ``world.State`` with a leading axis of ``steps + 1``
    (the first is ``task``), the ``int32[steps, 2]`` actions taken, and ``bool[steps]`` success after each step.
    Once the goal holds the state stays as it is."""
    from jaxsoc.envs.household import env as E

    policies = (_policy(alice, 0), _policy(bob, 1))

    def body(carry, k):
        state, done = carry
        k_a, k_b, k_step = jax.random.split(k, 3)
        actions = jnp.stack([policies[0](k_a, state), policies[1](k_b, state)])
        actions = jnp.where(done, 0, actions)
        nxt, _, success, _, _ = E.advance(k_step, state, actions, params)
        nxt = jax.tree_util.tree_map(lambda new, old: jnp.where(done, old, new), nxt, state)
        return (nxt, done | success), (nxt, actions, done | success)

    _, (states, actions, success) = jax.lax.scan(body, (task, jnp.array(False)), jax.random.split(key, steps))
    states = jax.tree_util.tree_map(lambda first, rest: jnp.concatenate([first[None], rest]), task, states)
    return states, actions, success


def cmd_render(args) -> int:
    from jaxsoc.envs.household import env as E
    from jaxsoc.envs.household import tasks as T
    from jaxsoc.envs.household.render import render_episode, save_episode_gif

    task_set = T.load(args.tasks) if args.tasks else T.cached_split(args.split, args.seed)
    if not 0 <= args.task < len(task_set):
        raise ValueError(f"--task must be in [0, {len(task_set)}) for {task_set.split}, got {args.task}")
    if args.steps < 1:
        raise ValueError(f"--steps must be positive, got {args.steps}")
    params = E.HouseholdParams(tasks=task_set.states, teleport=args.teleport)
    run = jax.jit(lambda task, key: rollout(task, params, args.alice, args.bob, args.steps, key))
    states, actions, success = run(task_set.task(args.task), jax.random.key(args.seed))
    success = np.asarray(success)
    last = int(np.argmax(success)) + 1 if success.any() else args.steps
    states = jax.tree_util.tree_map(lambda x: x[: last + 1], states)
    frames, texts = render_episode(states, np.concatenate([np.asarray(actions[:last]), np.zeros((1, 2), int)]))
    path = save_episode_gif(frames, texts, args.out, fps=args.fps)
    outcome = f"goal reached in {last} steps" if success.any() else f"goal not reached in {args.steps} steps"
    print(f"wrote {path}: {task_set.split} task {args.task}, alice={args.alice}, bob={args.bob}, {outcome}")
    return 0


def add_parser(sub) -> None:
    """Adds ``jaxsoc household {tasks,render}`` to the ``jaxsoc`` command's subparsers."""
    from jaxsoc.envs.household.tasks import SPLITS

    household = sub.add_parser("household", help="Watch-And-Help's household: task sets and episode GIFs")
    verbs = household.add_subparsers(dest="verb", required=True)

    tasks = verbs.add_parser("tasks", help="write the train / test-1 / test-2 task sets, or check one (--show)")
    tasks.add_argument("--split", choices=[*SPLITS, "all"], default="all")
    tasks.add_argument("--seed", type=int, default=0)
    tasks.add_argument("--out", help="directory for <split>.npz")
    tasks.add_argument("--show", help="load this task file (validating it) and summarise it instead")
    tasks.set_defaults(func=clear_errors(cmd_tasks))

    render = verbs.add_parser("render", help="a GIF of one task played by scripted / random characters")
    render.add_argument("--split", choices=list(SPLITS), default="test-1")
    render.add_argument("--tasks", help="a task file written by 'jaxsoc household tasks' (instead of --split)")
    render.add_argument("--task", type=int, default=0, help="task index in the set")
    render.add_argument("--seed", type=int, default=0, help="the set's seed and the rollout's key")
    render.add_argument("--alice", choices=POLICIES, default="solver", help="solver: reads the true state")
    render.add_argument("--bob", choices=POLICIES, default="random")
    render.add_argument("--steps", type=int, default=250)
    render.add_argument("--teleport", action="store_true", help="walks arrive at once")
    render.add_argument("--fps", type=float, default=4)
    render.add_argument("--out", default="household.gif")
    render.set_defaults(func=clear_errors(cmd_render))


def main(argv: list[str] | None = None) -> int:
    """Runs ``jaxsoc household ...`` alone (the ``jaxsoc`` command dispatches here)."""
    parser = argparse.ArgumentParser(prog="jaxsoc")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)
