"""Trains CHAIC's options helper (issue 38): behaviour cloning of the RHP rules' options (``--teacher goal``: the
rules told the true goal), then PPO (``jaxsoc.learners.chaic.options_ppo``). Usage:
``python scripts/chaic_options_ppo.py OUT [--bc-batches 40] [--updates 1000] [--num-envs 32] [--checkpoint-every 5]
[--preset small|small-partner] [--teacher rhp|goal] [--follow expert|policy] [--env-args partner_run=RUN]
[--resume]``; every checkpoint is kept (for
``scripts/chaic_options_tr_curve.py``), and interrupting it keeps the last."""

import argparse

from jaxsoc.learners.chaic import options_ppo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out")
    parser.add_argument("--env", default="CHAIC-All-Options-v0")
    parser.add_argument("--bc-batches", type=int, default=40)
    parser.add_argument("--updates", type=int, default=1000)
    parser.add_argument("--num-envs", type=int, default=32)
    parser.add_argument("--checkpoint-every", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--preset", default="small", help="the chaic network's preset (small, small-partner, ...)")
    parser.add_argument("--teacher", default="rhp", choices=options_ppo.TEACHERS)
    parser.add_argument("--follow", default="expert", choices=options_ppo.FOLLOW, help="policy: DAgger")
    parser.add_argument("--env-args", default="", help="e.g. partner_run=RUN: a chaic-bm run's model in the view")
    parser.add_argument("--resume", action="store_true", help="continue OUT's PPO to --updates in all (no warm start)")
    args = parser.parse_args()
    n = args.num_envs
    cfg = options_ppo.config(
        args.env,
        preset=args.preset,
        num_envs=n,
        minibatch_frames=10 * n,
        total_frames=n * 20 * args.updates,
        env_args=args.env_args,
    )
    summary = options_ppo.train(
        args.out,
        cfg,
        0 if args.resume else args.bc_batches,
        args.seed,
        teacher=args.teacher,
        follow=args.follow,
        resume=args.resume,
        chunk_updates=5,
        checkpoint_every=args.checkpoint_every,
        keep_checkpoints=None,  # every one, for scripts/chaic_options_tr_curve.py
        eval_episodes=0,
    )
    print(summary)


if __name__ == "__main__":
    main()
