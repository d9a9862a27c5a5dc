"""The environment-level ``jaxsoc`` subcommands: ``list``, ``demo``, ``render`` and ``demos``."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import jaxsoc


def on_accelerator() -> bool:
    """True when jax's default backend is not the CPU (the commands then pick GPU-sized defaults)."""
    return jax.default_backend() != "cpu"


def random_rollout(env, params, key: jax.Array, num_envs: int, num_steps: int, record: int = 0):
    """Runs ``num_envs`` worlds for ``num_steps`` random steps. Returns ``(stats, frames)``: ``float32[3]``
    episode statistics summed over the run (finished episodes, successes, return of finished steps) and,
    when ``record > 0``, ``uint8[num_steps, record, h, w, 3]`` renders of the first ``record`` worlds
    (else None). Jittable."""
    num_actions = env.action_space(params).n
    k_reset, k_actions, k_steps = jax.random.split(key, 3)
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(k_reset, num_envs), params)
    actions = jax.random.randint(k_actions, (num_steps, num_envs), 0, num_actions)
    step = jax.vmap(env.step, in_axes=(0, 0, 0, None))
    render = jax.vmap(env.render, in_axes=(0, None))

    def body(carry, inputs):  # the observation stays in the carry, so it is really computed
        _, state = carry
        t, action = inputs
        frame = render(jax.tree_util.tree_map(lambda x: x[:record], state), params) if record else None
        keys = jax.random.split(jax.random.fold_in(k_steps, t), num_envs)
        obs, state, reward, terminated, truncated, info = step(keys, state, action, params)
        stats = jnp.stack([(terminated | truncated).sum(), info["success"].sum(), reward.sum()]).astype(jnp.float32)
        return (obs, state), (stats, frame)

    _, (stats, frames) = jax.lax.scan(body, (obs, state), (jnp.arange(num_steps), actions))
    return stats.sum(0), frames


def cmd_list(args) -> int:
    """Prints the registered ids by family (``# family: n ids``) and group (``## group``), one id per line."""
    from jaxsoc.envs import FAMILIES, env_family

    groups: dict[str, dict[str, list[str]]] = {}
    for name in jaxsoc.registered_envs():
        family, group = env_family(name)
        groups.setdefault(family, {}).setdefault(group, []).append(name)
    for family in sorted(groups, key=lambda f: FAMILIES.index(f) if f in FAMILIES else len(FAMILIES)):
        print(f"# {family}: {sum(map(len, groups[family].values()))} ids")
        for group, names in groups[family].items():
            if group:
                print(f"## {group}")
            print("\n".join(names))
    return 0


def cmd_demo(args) -> int:
    from jaxsoc.core.render import save_gif, tile_frames

    env, params = jaxsoc.make(args.env)
    key = jax.random.key(args.seed)
    num_envs = args.num_envs or (65536 if on_accelerator() else 2048)
    device = jax.devices()[0].device_kind
    run = jax.jit(lambda k: random_rollout(env, params, k, num_envs, args.steps)[0])
    start = time.perf_counter()
    compiled = run.lower(key).compile()
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    stats = np.asarray(compiled(key))
    elapsed = time.perf_counter() - start
    finished, successes, total_return = stats
    print(
        f"{args.env}: {num_envs} worlds x {args.steps} steps = {num_envs * args.steps:,} steps in {elapsed:.2f} s "
        f"-> {num_envs * args.steps / elapsed:,.0f} steps/s on {device} (compile {compile_s:.1f} s)"
    )
    print(
        f"random policy: {int(finished):,} episodes finished, success rate {successes / max(finished, 1):.3f}, "
        f"mean return {total_return / max(finished, 1):.3f}"
    )
    shown = min(args.steps, 64)
    _, frames = jax.jit(lambda k: random_rollout(env, params, k, 16, shown, record=16))(key)
    out = save_gif(tile_frames(np.asarray(frames), columns=4), Path(args.out) / "demo.gif", fps=8)
    print(f"wrote {out}")
    return 0


def cmd_render(args) -> int:
    from jaxsoc.core.render import caption, save_video

    env, params = jaxsoc.make(args.env)
    key = jax.random.key(args.seed)
    _, state = jax.jit(env.reset)(key, params)
    actions = np.random.default_rng(args.seed).integers(0, env.action_space(params).n, args.steps)
    render, step = jax.jit(env.render), jax.jit(env.step)
    frames, texts = [], []
    for t, action in enumerate(actions):
        frames.append(np.asarray(render(state, params)))
        if hasattr(env, "mission_text"):
            texts.append(env.mission_text(state))
        _, state, *_ = step(jax.random.fold_in(key, t), state, action, params)
    frames = np.stack(frames)
    if texts and all(texts):
        frames = caption(frames, texts)
    out = save_video(frames, args.out, fps=args.fps)
    print(f"wrote {out} ({args.steps} frames of {args.env}, seed {args.seed})")
    return 0


def cmd_demos(args) -> int:
    from jaxsoc.data import write_demos
    from jaxsoc.envs.babyai import ALIASES, LEVELS

    if args.env not in LEVELS and args.env not in ALIASES:
        levels = ", ".join(sorted([*LEVELS, *ALIASES]))
        print(
            f"jaxsoc demos: --env must be a BabyAI level (the bot plays BabyAI), got {args.env!r}; one of: {levels}",
            file=sys.stderr,
        )
        return 2
    for flag, value in (
        ("--episodes", args.episodes),
        ("--num-envs", args.num_envs),
        ("--shard-episodes", args.shard_episodes),
    ):
        if value < 1:
            print(f"jaxsoc demos: {flag} must be a positive integer, got {value}", file=sys.stderr)
            return 2
    from jaxsoc.data.memory import bot_failed
    from jaxsoc.envs.babyai import bot

    try:
        manifest = write_demos(
            args.env,
            args.out,
            args.episodes,
            expert_init=bot.bot_init,
            expert_act=bot.bot_act,
            expert_failed=bot_failed,  # module-level: bot_demos shares the compiled rollout
            expert_name="babyai-bot",
            num_envs=args.num_envs,
            seed=args.seed,
            shard_episodes=args.shard_episodes,
            keep_failed=args.keep_failed,
        )
    except ValueError as error:  # e.g. resuming into a directory written with other settings
        print(f"jaxsoc demos: {error}", file=sys.stderr)
        return 2
    import json

    totals = json.loads(manifest.read_text())["totals"]
    print(
        f"{args.env}: {totals['successes']:,} of {totals['generated']:,} episodes successful "
        f"({totals['expert_failures']:,} bot failures); stored {totals['episodes']:,} episodes, {totals['steps']:,} "
        f"steps in {totals['shards']} shards ({totals['bytes'] / 2**20:.1f} MiB) -> {manifest}"
    )
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Adds ``jaxsoc list``, ``jaxsoc demo`` and ``jaxsoc render`` to the ``jaxsoc`` command's subparsers."""
    sub.add_parser("list", help="list registered environments").set_defaults(func=cmd_list)

    demo = sub.add_parser("demo", help="vmapped random rollout: throughput line and a GIF")
    demo.add_argument("--env", default="MiniGrid-DoorKey-5x5-v0")
    demo.add_argument("--num-envs", type=int, default=None, help="default 65536 on a GPU, 2048 on a CPU")
    demo.add_argument("--steps", type=int, default=500)
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--out", default="out")
    demo.set_defaults(func=cmd_demo)

    render = sub.add_parser("render", help="render one random episode to a GIF or MP4")
    render.add_argument("env")
    render.add_argument("--seed", type=int, default=0)
    render.add_argument("--steps", type=int, default=64)
    render.add_argument("--fps", type=int, default=8)
    render.add_argument("--out", default="episode.gif")
    render.set_defaults(func=cmd_render)


def add_demos_parser(sub: argparse._SubParsersAction) -> None:
    """Adds ``jaxsoc demos`` (the BabyAI bot's demonstration datasets) to the ``jaxsoc`` command's subparsers."""
    demos = sub.add_parser("demos", help="write a BabyAI bot demonstration dataset (sharded, resumable)")
    demos.add_argument("--env", required=True, help="a BabyAI level, e.g. BabyAI-GoToLocal-v0")
    demos.add_argument("--episodes", type=int, required=True, help="episodes to generate")
    demos.add_argument("--out", required=True, help="dataset directory; rerun the same command to resume")
    demos.add_argument("--num-envs", type=int, default=4096, help="worlds run at once")
    demos.add_argument("--seed", type=int, default=0)
    demos.add_argument("--shard-episodes", type=int, default=10_000, help="episode indices per shard file")
    demos.add_argument("--keep-failed", action="store_true", help="also store episodes the bot did not solve")
    demos.set_defaults(func=cmd_demos)
