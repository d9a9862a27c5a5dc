"""``jaxsoc models list|show|eval|export``: the pretrained models (``jaxsoc.models``)."""

from __future__ import annotations

import argparse
import json
import sys

from jaxsoc.cli.errors import clear_errors


def _figure_text(figure: dict) -> str:
    se = figure.get("se")
    return f"{figure['value']:.3f}" + (f" ± {se:.3f}" if se else "")


def cmd_list(args) -> int:
    from jaxsoc import models

    cards = models.list(args.family)
    rows = [("name", "family/kind", "figure", "KB")]
    for card in cards:
        headline = card.headline()
        figure = f"{headline[0]} {_figure_text(headline[1])}" if headline else "-"
        rows.append((card.name, f"{card.family}/{card.kind}", figure, f"{card.bytes / 1024:.0f}"))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    print(f"{len(cards)} models, {sum(c.bytes for c in cards) / 2**20:.1f} MiB of parameters")
    return 0


def cmd_show(args) -> int:
    from jaxsoc import models

    card = models.info(args.name)
    print(json.dumps({**card.to_json(), "spec": "..." if not args.spec else card.spec}, indent=1))
    return 0


def cmd_eval(args) -> int:
    from jaxsoc import models

    card = models.info(args.name)
    overrides = {"seed": args.seed, "episodes": args.episodes}
    measured = models.evaluate(args.name, **overrides)
    recorded = card.evaluation.get("figures", {})
    same_protocol = args.seed is None and args.episodes is None
    disagree = []
    for metric, figure in measured.items():
        line = f"{metric}: {_figure_text(figure)}"
        if metric in recorded:
            line += f" (recorded {_figure_text(recorded[metric])})"
            if same_protocol and not models.agrees(recorded[metric], figure):
                disagree.append(metric)
        print(line)
    print(f"evaluation: {card.evaluation.get('command') or card.evaluation.get('args')}")
    if disagree:
        message = f"{card.name}: {disagree} differ from the card by more than their SE"
        print(f"jaxsoc models eval: {message}", file=sys.stderr)
        return 1
    return 0


def cmd_export(args) -> int:
    from jaxsoc import models

    card = models.export(
        args.run,
        args.name,
        args.family,
        args.kind,
        description=args.description,
        env_ids=args.env_id or (),
        training={"command": args.train_command or "", "commit": args.commit or ""},
        evaluation={"command": args.eval_command or "", "args": json.loads(args.eval_args or "{}")},
        dtype=args.dtype,
        store=args.store,
        score=args.score,
    )
    print(f"wrote {card.path} and {card.params_path.name} ({card.bytes / 1024:.0f} KB, sha256 {card.sha256[:12]})")
    for metric, figure in card.evaluation.get("figures", {}).items():
        print(f"{metric}: {_figure_text(figure)}")
    return 0


def _unknown_name(command):
    """``command`` with an unknown model name (``KeyError``) turned into exit code 2 and its message."""

    def run(args) -> int:
        try:
            return command(args)
        except KeyError as error:
            print(f"jaxsoc models {args.verb}: {error.args[0]}", file=sys.stderr)
            return 2

    return run


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Adds ``jaxsoc models`` and its verbs to ``sub``."""
    parser = sub.add_parser("models", help="pretrained models: list, show, eval, export")
    verbs = parser.add_subparsers(dest="verb", required=True)

    listing = verbs.add_parser("list", help="every model: name, family/kind, recorded figure, size")
    listing.add_argument("--family", help="only this family's models")
    listing.set_defaults(func=_unknown_name(clear_errors(cmd_list)))

    show = verbs.add_parser("show", help="a model's card (commands, figures, hash)")
    show.add_argument("name")
    show.add_argument("--spec", action="store_true", help="print the network spec too")
    show.set_defaults(func=_unknown_name(clear_errors(cmd_show)))

    ev = verbs.add_parser("eval", help="re-run a model's recorded evaluation; exit 1 when it differs beyond SE")
    ev.add_argument("name", help="a model name, or a path to a card file")
    ev.add_argument("--seed", type=int, help="another evaluation seed (held-out episodes; nothing is compared)")
    ev.add_argument("--episodes", type=int, help="another number of episodes (nothing is compared)")
    ev.set_defaults(func=_unknown_name(clear_errors(cmd_eval)))

    export = verbs.add_parser("export", help="cut a model (parameters only) from a training run")
    export.add_argument("run", help="the training run directory")
    export.add_argument("--name", required=True)
    export.add_argument("--family", required=True, help="the learner family that declares the kind")
    export.add_argument("--kind", required=True, help="the model kind (core.family.ModelKind)")
    export.add_argument("--description", required=True)
    export.add_argument("--env-id", action="append", help="an env id the model acts or observes in (repeat)")
    export.add_argument("--train-command", help="the exact command that trained the run")
    export.add_argument("--commit", help="the commit the run was trained at")
    export.add_argument("--eval-command", help="the jaxsoc command that scores it")
    export.add_argument("--eval-args", help="JSON: the arguments of the kind's evaluation")
    export.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"])
    export.add_argument("--store", help="where to write it (default the package's store)")
    export.add_argument("--score", action="store_true", help="run the evaluation and record its figures")
    export.set_defaults(func=_unknown_name(clear_errors(cmd_export)))
