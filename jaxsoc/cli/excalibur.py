"""``jaxsoc excalibur <verb>``: ``bank`` (build a bank of houses and show its question filtering and questions),
``eval`` (the behaviour table of the supplementary's Table 7 and the accuracies for the scripted explorers and
learned agents, with the exploration score's constant fitted on the oracle explorer) and ``render`` (a GIF of one
episode).

``jaxsoc excalibur eval --agent oracle random ppo=runs/excalibur_QA`` evaluates a PPO run of ``jaxsoc train ppo
--env EXCALIBUR-QA-v0`` beside the scripted explorers; a learned agent is labelled by its run's env id unless
written ``LABEL:ppo=RUN``. ``none`` is the explorer that does not explore. With ``--answerer DIR`` (a checkpoint of
``jaxsoc excalibur answerer``, or ``model:excalibur-answerer``, the pretrained one) the scripted explorers answer
with the supervised answerer over their object memory (``learners.excalibur.answerer``) instead of the symbolic
answering from what they saw, and learned agents explore with their policy and answer with it too.

``jaxsoc excalibur answerer --batches 400 --out DIR`` trains that answerer on freshly generated houses, and
``jaxsoc excalibur explorer --answerer DIR --out RUN`` trains an explorer by PPO over its object memory, rewarded
for what its exploration lets that answerer answer (``learners.excalibur.explorer``); ``eval --agent ppo=RUN
--answerer DIR`` plays it with its memory. Every ``RUN`` and ``DIR`` may be ``model:NAME`` (``jaxsoc models
list --family excalibur``): ``eval --agent ppo=model:excalibur-memory-explorer --answerer model:excalibur-answerer
--explore-budget 200 --reenter-budget 50 --sample`` plays the pretrained explorer.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import numpy as np

from jaxsoc.cli.errors import clear_errors, require_positive
from jaxsoc.learners.excalibur.evaluation import env_and_params, evaluate_agents, house_config, run_label

SCRIPTED = ("oracle", "random", "none")


def parse_agents(items: list[str]) -> dict[str, tuple[str, str | None]]:
    """Returns ``{label: (kind, run or None)}`` for ``--agent`` items: ``oracle``, ``random``, ``ppo=RUN`` or
    ``LABEL:ppo=RUN``, where ``RUN`` is a run directory or ``model:NAME`` (an EXCALIBUR policy or memory-explorer
    model). Raises ``ValueError`` for an unknown agent, a ``ppo`` without its run, a run that is not a directory, a
    model of another kind, or a label given twice (``KeyError`` for an unknown model name)."""
    from jaxsoc import models

    out: dict[str, tuple[str, str | None]] = {}
    for item in items:
        head, eq, tail = item.partition("=")
        label, _, kind = head.rpartition(":")
        spec = kind + eq + tail
        kind, sep, run = spec.partition("=")
        if kind in SCRIPTED and not sep:
            label = label or kind
            entry = (kind, None)
        elif kind == "ppo" and sep and run and models.ref_name(run) is not None:
            from jaxsoc.learners.excalibur.models import FAMILY, MEMORY_EXPLORER, POLICY

            models.open_ref(run, (POLICY, MEMORY_EXPLORER), FAMILY, arrays=False)
            label = label or run_label(run)
            entry = ("ppo", run)
        elif kind == "ppo" and sep and run:
            if not Path(run).is_dir():
                raise ValueError(f"--agent {item}: no such run directory")
            label = label or run_label(run)
            entry = ("ppo", run)
        else:
            raise ValueError(f"unknown agent {item!r}; choose from {list(SCRIPTED)} or ppo=RUN (LABEL:ppo=RUN)")
        if label in out:
            raise ValueError(f"agent {label!r} given twice (label learned agents: LABEL:ppo=RUN)")
        out[label] = entry
    return out


#: the stand-in for the paper's human players when fitting ExQA's constant: the oracle explorer stopped after these
#: fractions of the phase I budget (players who stop earlier know less), an equal share of episodes each
REFERENCE_FRACTIONS = (0.02, 0.04, 0.08, 0.16, 1.0)


def fit_exqa_constant(args) -> float:
    """Returns ``k*`` of ``metrics.fit_k`` (the supplementary's Eq. 5) on a reference population standing in for
    the human players: the oracle explorer with its phase I budget cut to each of ``REFERENCE_FRACTIONS``
    (``args.episodes`` episodes in all, phase IV accuracy against the steps of phases I and III)."""
    from jaxsoc.envs.excalibur import agents as A
    from jaxsoc.envs.excalibur import metrics as M
    from jaxsoc.envs.excalibur import play

    env, params = env_and_params(args)
    accuracy, steps = [], []
    per = max(args.episodes // len(REFERENCE_FRACTIONS), 2)
    longest = play.max_steps(params)
    for fraction in REFERENCE_FRACTIONS:
        cut = params.replace(explore_budget=max(int(fraction * args.explore_budget), 1))
        # every cut runs the full budget's static number of steps: one compilation for all of them
        states = play._rollout(
            env, cut, A.make_agent("oracle"), jax.random.key(args.seed), num_episodes=per, num_steps=longest
        )
        rows = play.episode_metrics(states)
        accuracy.append(rows["accuracy_again"])
        steps.append(rows["explore_steps"] + rows["reenter_steps"])
    return M.fit_k(np.concatenate(accuracy), np.concatenate(steps))


def cmd_eval(args) -> int:
    from jaxsoc.envs.excalibur import metrics as M
    from jaxsoc.envs.excalibur import play

    require_positive(args, "episodes", "explore_budget", "reenter_budget")
    agents = parse_agents(args.agent)
    answerer = None
    if args.answerer is not None:
        from jaxsoc.learners.excalibur import answerer as ANS

        answerer = ANS.load(args.answerer)[:2]
    results = evaluate_agents(agents, args, answerer)
    k = fit_exqa_constant(args)
    for summary in results.values():
        steps = summary["explore_steps"] + summary["reenter_steps"]
        summary["exqa_again"] = float(M.exqa(summary["accuracy_again"], steps, k))
    table = play.behaviour_table(results)
    text = (
        f"EXCALIBUR, {args.episodes} episodes of the {args.split} bank ({args.house} houses), budgets "
        f"{args.explore_budget} (I) and "
        f"{args.reenter_budget} (III) steps; ExQA = accuracy IV - steps / k with k = {k:.4g} fitted on the oracle "
        f"explorer stopped early and late (Eq. 5, jaxsoc.cli.excalibur.REFERENCE_FRACTIONS):\n\n{table}\n\n"
        + "\n".join(_summary_line(label, s) for label, s in results.items())
    )
    print(text)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        names = ("split", "bank_seed", "house", "episodes", "seed", "sample", "answerer")
        settings = {k_: getattr(args, k_) for k_ in names}
        settings.update(explore_budget=args.explore_budget, reenter_budget=args.reenter_budget, k=k)
        blob = {"settings": settings, "agents": {lab: list(spec) for lab, spec in agents.items()}, "results": results}
        (out / "excalibur_eval.json").write_text(json.dumps(blob, indent=1))
        (out / "excalibur_eval.md").write_text(text + "\n")
        print(f"wrote {out / 'excalibur_eval.md'}")
    return 0


def _summary_line(label: str, s: dict[str, float]) -> str:
    """Returns one agent's accuracies (percent, with standard errors over episodes) and ExQA as a list item."""

    def pct(key: str) -> str:
        return f"{100 * s[key]:.1f} ± {100 * s.get(key + '_se', 0.0):.1f}"

    return (
        f"- {label}: accuracy II {pct('accuracy_first')}, IV {pct('accuracy_again')}; knowledge accuracy II "
        f"{pct('knowledge_first')}, IV {pct('knowledge_again')}; ExQA {s['exqa_again']:.3f}"
    )


def cmd_answerer(args) -> int:
    from jaxsoc.envs.excalibur import bank
    from jaxsoc.learners.excalibur import answerer as ANS
    from jaxsoc.learners.networks.excalibur import ANSWERER_PRESETS

    require_positive(args, "batches", "houses", "lr", "refresh", "eval_every")
    bank.check_curve_split(args.curves)
    if args.preset not in ANSWERER_PRESETS:
        raise ValueError(f"unknown --preset {args.preset!r}; choose from {sorted(ANSWERER_PRESETS)}")
    out = Path(args.out)
    if (out / "answerer.json").exists() and not args.overwrite:
        raise ValueError(f"{out} already holds an answerer (pass --overwrite to replace it)")
    config = ANS.TrainConfig(
        houses=args.houses,
        batches=args.batches,
        lr=args.lr,
        refresh=args.refresh,
        preset=args.preset,
        seed=args.seed,
        eval_every=args.eval_every,
        house_config=house_config(args),
    )
    command = (
        f"jaxsoc excalibur answerer --batches {args.batches} --houses {args.houses} --lr {args.lr} --refresh "
        f"{args.refresh} --preset {args.preset} --seed {args.seed} --eval-every {args.eval_every} --curves "
        f"{args.curves} --house {args.house} --out {args.out}"
    )
    curves = bank.cached_bank(args.curves, 0, config.house_config)
    variables, info = ANS.train(config, curves)
    meta = {"command": command, "config": {k: getattr(config, k) for k in ("houses", "batches", "lr", "refresh")}}
    meta.update(seed=args.seed, curves=args.curves, **info)
    ANS.save(out, variables, args.preset, meta)
    print(f"wrote {out}: {info['houses_seen']} fresh houses in {info['seconds']:.0f} s")
    return 0


def cmd_explorer(args) -> int:
    from jaxsoc.learners.excalibur import answerer as ANS
    from jaxsoc.learners.excalibur import explorer as X
    from jaxsoc.learners.networks.excalibur import PRESETS

    require_positive(args, "frames", "explore_budget", "reenter_budget")
    if args.gain_reward < 0:
        raise ValueError(f"--gain-reward must be >= 0, got {args.gain_reward}")
    if args.preset not in PRESETS or not PRESETS[args.preset].object_memory:
        memory = sorted(name for name, config in PRESETS.items() if config.object_memory)
        raise ValueError(f"--preset must be an excalibur preset reading the object memory: one of {memory}")
    ANS.check_checkpoint(args.answerer)
    out = Path(args.out)
    if (X.is_explorer_run(out) or (out / "checkpoints").exists()) and not args.overwrite:
        raise ValueError(f"{out} already holds a run (pass --overwrite to replace it)")
    command = (
        f"jaxsoc excalibur explorer --answerer {args.answerer} --frames {args.frames} --explore-budget "
        f"{args.explore_budget} --reenter-budget {args.reenter_budget} --gain-reward {args.gain_reward} --preset "
        f"{args.preset} --seed {args.seed}{' --allow-stop' if args.allow_stop else ''} --out {args.out}"
    )
    summary = X.train(
        out,
        args.answerer,
        explore_budget=args.explore_budget,
        reenter_budget=args.reenter_budget,
        gain_reward=args.gain_reward,
        allow_stop=args.allow_stop,
        seed=args.seed,
        eval_episodes=args.eval_episodes,
        command=command,
        preset=args.preset,
        total_frames=args.frames,
    )
    print(json.dumps({k: v for k, v in summary.items() if not isinstance(v, (list, dict))}, indent=1, default=str))
    return 0


def cmd_bank(args) -> int:
    from jaxsoc.envs.excalibur import bank
    from jaxsoc.envs.excalibur import questions as Q

    require_positive(args, "houses")
    if args.show < 0:
        raise ValueError(f"--show must be >= 0, got {args.show}")
    houses, report = bank.make_bank(args.split, args.bank_seed, house_config(args), num_houses=args.houses)
    print(json.dumps({k: v for k, v in report.items()}, indent=1, default=str))
    for h in range(min(args.show, houses.walls.shape[0])):
        print(f"\nhouse {h}: {int(houses.valid[h].sum())} objects, {int(houses.num_questions[h])} questions")
        for q in range(int(houses.num_questions[h])):
            row = np.asarray(houses.questions[h, q])
            print(f"  {Q.question_text(row)} -> {Q.answer_text(int(houses.answers[h, q]))}")
    return 0


def cmd_render(args) -> int:
    import imageio.v2 as imageio

    from jaxsoc.envs.excalibur import agents as A
    from jaxsoc.envs.excalibur import world as W
    from jaxsoc.envs.excalibur.render import render

    require_positive(args, "steps", "tile", "fps", "explore_budget", "reenter_budget")
    env, params = env_and_params(args)
    agent = A.make_agent(args.agent)
    key = jax.random.key(args.seed)
    _, state = env.reset_env(key, params)
    memory = agent.init(key, state)
    act = jax.jit(agent.act)
    step = jax.jit(lambda s, a: W.step(s, a, params.explore_budget, params.reenter_budget, params.view_size))
    draw = jax.jit(lambda s: render(s, args.tile))
    frames = [np.asarray(draw(state))]
    for t in range(args.steps):
        action, memory = act(jax.random.fold_in(key, t), memory, state)
        state, out = step(state, action)
        if int(state.phase) in (0, 2):
            frames.append(np.asarray(draw(state)))
        if bool(out["done"]):
            break
    imageio.mimsave(args.out, frames, duration=1.0 / args.fps)
    print(f"wrote {args.out}: {len(frames)} frames of the {args.agent} explorer")
    return 0


def _house_argument(parser) -> None:
    from jaxsoc.envs.excalibur.houses import PRESETS

    parser.add_argument("--house", choices=list(PRESETS), default="default", help="the house preset")


def _bank_arguments(parser) -> None:
    parser.add_argument("--split", choices=["train", "val", "test"], default="test")
    parser.add_argument("--bank-seed", type=int, default=0)
    _house_argument(parser)


def _house_arguments(parser, episodes: bool = True) -> None:
    _bank_arguments(parser)
    parser.add_argument("--explore-budget", type=int, default=2500, help="phase I's steps (the human study's cap)")
    parser.add_argument("--reenter-budget", type=int, default=500, help="phase III's steps")
    parser.add_argument("--seed", type=int, default=0)
    if episodes:
        parser.add_argument("--episodes", type=int, default=128)


def add_parser(sub) -> None:
    """Adds ``jaxsoc excalibur bank|eval|answerer|explorer|render``."""
    excalibur = sub.add_parser("excalibur", help="EXCALIBUR: explore a house, then answer questions about it")
    verbs = excalibur.add_subparsers(dest="verb", required=True)

    bank = verbs.add_parser("bank", help="build a bank of houses: the question filtering's report and questions")
    _bank_arguments(bank)
    bank.add_argument("--houses", type=int, help="houses generated (default the split's bank size)")
    bank.add_argument("--show", type=int, default=2, help="houses whose questions are printed")
    bank.set_defaults(func=clear_errors(cmd_bank))

    evaluate_ = verbs.add_parser("eval", help="behaviour (Table 7), accuracies and ExQA of explorers and agents")
    evaluate_.add_argument(
        "--agent", nargs="+", default=["oracle", "random"], help="oracle, random, none, ppo=RUN (LABEL:ppo=RUN)"
    )
    _house_arguments(evaluate_)
    evaluate_.add_argument("--sample", action="store_true", help="learned agents sample (default: argmax)")
    evaluate_.add_argument(
        "--answerer", help="an answerer checkpoint or model:excalibur-answerer: every agent answers with it"
    )
    evaluate_.add_argument("--out", help="directory for excalibur_eval.{json,md}")
    evaluate_.set_defaults(func=clear_errors(cmd_eval))

    answerer = verbs.add_parser("answerer", help="train the supervised answerer on freshly generated houses")
    answerer.add_argument("--batches", type=int, default=400)
    answerer.add_argument("--houses", type=int, default=64, help="fresh houses per batch")
    answerer.add_argument("--lr", type=float, default=2e-3)
    answerer.add_argument("--refresh", type=int, default=4, help="batches between two runs of Algorithm 2")
    answerer.add_argument("--preset", default="small")
    answerer.add_argument("--seed", type=int, default=0)
    answerer.add_argument("--eval-every", type=int, default=50, help="batches between two curve evaluations")
    answerer.add_argument(
        "--curves", default="val", help="the bank the curves read: val (default) or train; test is refused"
    )
    _house_argument(answerer)
    answerer.add_argument("--out", required=True, help="directory for answerer.{msgpack,json}")
    answerer.add_argument("--overwrite", action="store_true")
    answerer.set_defaults(func=clear_errors(cmd_answerer))

    explorer = verbs.add_parser("explorer", help="train an explorer by PPO over its object memory for the answerer")
    explorer.add_argument(
        "--answerer", required=True, help="the answerer that answers and rewards: a checkpoint or model:NAME"
    )
    explorer.add_argument("--frames", type=int, default=1_536_000, help="environment steps of training")
    explorer.add_argument("--explore-budget", type=int, default=200, help="phase I's steps in training")
    explorer.add_argument("--reenter-budget", type=int, default=50, help="phase III's steps in training")
    explorer.add_argument("--gain-reward", type=float, default=1.0, help="weight of the answerer's accuracy gain")
    explorer.add_argument("--preset", default="tiny-memory", help="the excalibur network's preset (a -memory one)")
    explorer.add_argument("--allow-stop", action="store_true", help="stop open in phases I and III (default masked)")
    explorer.add_argument("--seed", type=int, default=0)
    explorer.add_argument("--eval-episodes", type=int, default=256, help="evaluation episodes at the end")
    explorer.add_argument("--out", required=True, help="the run directory")
    explorer.add_argument("--overwrite", action="store_true", help="replace a run already in --out")
    explorer.set_defaults(func=clear_errors(cmd_explorer))

    render = verbs.add_parser("render", help="a top-down GIF of a scripted explorer's phases I and III")
    render.add_argument("--agent", choices=SCRIPTED, default="oracle")
    _house_arguments(render, episodes=False)
    render.add_argument("--steps", type=int, default=400, help="steps simulated at most")
    render.add_argument("--tile", type=int, default=16)
    render.add_argument("--fps", type=float, default=8)
    render.add_argument("--out", default="excalibur.gif")
    render.set_defaults(func=clear_errors(cmd_render))
