"""Success rate and episode length of jaxsoc's BabyAI bot on generated levels, against minigrid's bot.

For every level, ``--episodes`` levels are generated on the device (episode ``i`` on the level of
``fold_in(key(--seed), i)``) and played by the bot with ``bot_stream`` in ``--worlds`` worlds, each of
which starts the next level as soon as its episode ended (success, truncation at ``max_steps``, or the bot
giving up). The issue's criteria: success >= 99.9% over >= 2,000 episodes and a mean length (successful
episodes) within 10% of minigrid 3.2.0's bot (200 seeds, 1,000 for GoToObjMaze and SynthLoc:
``jaxsoc.bench.bot.REFERENCE_LENGTH``). The measurement is ``jaxsoc.bench.bot.bot_success``, shared with
the GPU suite's ``bot_success`` part (``benchmarks/gpu_suite.py``).

    python scripts/babyai_bot_success.py                                  # 19 levels x 2000 episodes
    python scripts/babyai_bot_success.py --levels GoToLocal BossLevel --episodes 64 --worlds 64 --out bot.md

Columns: episodes; success %; gave up (the bot failed); unfinished (truncated at ``max_steps``); mean
length of the successful episodes; the reference's; their ratio; pass (both criteria); wall seconds
(compilation included); world-steps/s (steps of all worlds, the last chunk's idle ones included).
"""

from __future__ import annotations

import argparse

import jax

from jaxsoc.bench.bot import BOT_SUCCESS_HEADER as HEADER
from jaxsoc.bench.bot import MIN_EPISODES, bot_success, bot_success_line, passes
from jaxsoc.envs.babyai.minigrid_levels import PAPER_LEVELS


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--levels", nargs="*", default=list(PAPER_LEVELS), choices=PAPER_LEVELS)
    parser.add_argument("--episodes", type=int, default=MIN_EPISODES)
    parser.add_argument("--worlds", type=int, default=512, help="worlds played at once")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="also write the table to this markdown file")
    args = parser.parse_args()
    device = jax.devices()[0]
    title = (
        f"BabyAI bot on jaxsoc-generated levels: {args.episodes} episodes per level, key {args.seed}, "
        f"{args.worlds} worlds, {device.platform} ({device.device_kind})"
    )
    print(title + "\n\n" + HEADER, flush=True)
    lines, passed = [], True
    for name in args.levels:
        r = bot_success(name, args.episodes, args.worlds, args.seed)
        lines.append(bot_success_line(r))
        passed &= passes(r)
        print(lines[-1], flush=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write(f"{title}\n\n{HEADER}\n" + "\n".join(lines) + "\n")
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
