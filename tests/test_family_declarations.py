"""The families declare themselves once per layer (``core.family``), and shared code names none of them.

- Every family has an ``envs/<family>/family.py`` ``EnvFamily``, a ``learners/<family>/family.py`` ``LearnerFamily``
  and a ``gpu_suite/<family>.py`` ``PARTS``; every registered id belongs to exactly one family's declared ids, under
  its prefix; every declared learner's config, run argument's loader and network resolves.
- Shared code (``shared_files``) holds no family name or id prefix in its code: the source is read with
  ``tokenize``; comments, docstrings and prose strings (strings with a space: messages, help texts) are left out;
  every name and every other string, split at anything but letters, is checked against ``FAMILY_WORDS``.
  ``PENDING`` lists, file by file, the hits left in modules this change does not own, each with its reason; the test
  fails on a hit it does not list and on a listed hit that is gone (so the list only shrinks).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

import jaxsoc
from jaxsoc.core.family import EnvFamily, LearnerFamily, declarations
from jaxsoc.envs import families as env_families
from jaxsoc.learners import families as learner_families
from jaxsoc.learners.networks import registry as networks

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "jaxsoc"

#: the families' names and id prefixes, as words (lower case)
FAMILY_WORDS = frozenset({"babyai", "minigrid", "gridworld", "bib", "household", "watchandhelp", "chaic", "excalibur"})


def shared_files() -> list[Path]:
    """The shared code the target names: ``jaxsoc/core`` (all of it), ``jaxsoc/learners/*.py``, ``jaxsoc/cli/learn.py``
    and ``jaxsoc/gpu_suite/core.py``."""
    files = sorted((PACKAGE / "core").rglob("*.py")) + sorted((PACKAGE / "learners").glob("*.py"))
    return files + [PACKAGE / "cli" / "learn.py", PACKAGE / "gpu_suite" / "core.py"]


#: hits left in shared modules outside this change, by file: ``{file: (reason, sorted hits)}``
PENDING: dict[str, tuple[str, tuple[str, ...]]] = {}


def _docstring_starts(source: str) -> set[tuple[int, int]]:
    """Returns the ``(line, column)`` of every string that stands alone as a statement (docstrings and the like)."""
    starts = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            starts.add((node.lineno, node.col_offset))
    return starts


def family_hits(source: str) -> list[str]:
    """Returns the tokens of ``source`` that name a family (module docstring: what is read and what is left out)."""
    skip = _docstring_starts(source)
    hits = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        code = token.type == tokenize.NAME
        code |= token.type == tokenize.STRING and token.start not in skip and not re.search(r"\s", token.string)
        if code and FAMILY_WORDS.intersection(re.split(r"[^a-z]+", token.string.lower())):
            hits.append(token.string)
    return sorted(hits)


def test_the_grep_finds_names_ids_and_module_paths_but_not_prose():
    code = '''"""BabyAI's docstring."""
x = "CHAIC-"  # a chaic comment
y = ("jaxsoc.learners.excalibur.bm", "unknown CHAIC task", BIB_LEARNERS, household)
'''
    assert family_hits(code) == sorted(['"CHAIC-"', '"jaxsoc.learners.excalibur.bm"', "BIB_LEARNERS", "household"])


@pytest.mark.parametrize("path", shared_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_shared_code_names_no_family(path):
    name = path.relative_to(ROOT).as_posix()
    hits = family_hits(path.read_text())
    expected = list(PENDING.get(name, ("", ()))[1])
    assert hits == sorted(expected), (
        f"{name} names a family in its code: {hits}; loop over the declarations (jaxsoc.core.family) instead"
        if len(hits) > len(expected)
        else f"{name}: hits left PENDING are gone ({expected} -> {hits}): shrink PENDING"
    )


def test_every_pending_file_is_in_scope():
    assert set(PENDING) <= {p.relative_to(ROOT).as_posix() for p in shared_files()}


# -- the declarations are complete -------------------------------------------------------------------------------
def test_every_family_declares_each_layer():
    envs = [f.name for f in env_families.families()]
    learners = [f.name for f in learner_families.families()]
    assert envs == learners and len(envs) == len(set(envs)) >= 5
    from jaxsoc.gpu_suite import core

    for name in envs:
        module = __import__(f"jaxsoc.gpu_suite.{name}", fromlist=["PARTS"])
        assert module.PARTS and all(isinstance(p, core.Part) for p in module.PARTS), name
    from jaxsoc import gpu_suite

    declared = [p.name for name in envs for p in __import__(f"jaxsoc.gpu_suite.{name}", fromlist=["x"]).PARTS]
    assert sorted(declared) == sorted(p.name for p in gpu_suite.PARTS)  # the suite's parts are the families'
    assert [p.rank for p in gpu_suite.PARTS] == sorted(p.rank for p in gpu_suite.PARTS)


def test_every_registered_id_belongs_to_exactly_one_family():
    families = env_families.families()
    declared: dict[str, str] = {}
    for family in families:
        for env_id in family.ids():
            assert env_id not in declared, f"{env_id} declared by {declared[env_id]} and {family.name}"
            assert family.owns(env_id), f"{env_id} lacks {family.name}'s prefixes {family.prefixes}"
            declared[env_id] = family.name
    assert set(declared) == set(jaxsoc.registered_envs())
    for env_id in jaxsoc.registered_envs():
        owners = [f.name for f in families if f.owns(env_id)]
        assert owners == [declared[env_id]], (env_id, owners)
        assert env_families.family_of(env_id).name == declared[env_id]


def test_learner_declarations_resolve():
    names = [lrn.name for _, lrn in learner_families.learners()]
    assert len(names) == len(set(names))
    for family, learner in learner_families.learners():
        assert isinstance(learner.config_type(), type), (family.name, learner.name)
    for family in learner_families.families():
        assert family.network is None or family.network in networks.NETWORKS, family.name
        for argument in family.run_arguments.values():
            assert callable(__import__("jaxsoc.core.family", fromlist=["resolve"]).resolve(argument.loader))
    default = learner_families.default()
    assert default.default_env_id in jaxsoc.registered_envs()
    assert env_families.family_of(default.default_env_id).name == default.name


def test_declarations_are_checked(tmp_path, monkeypatch):
    pkg = tmp_path / "toyfamilies"
    (pkg / "good").mkdir(parents=True)
    (pkg / "bad").mkdir()
    (pkg / "plain").mkdir()
    for folder in ("", "good", "bad", "plain"):
        (pkg / folder / "__init__.py").write_text("")
    decl = "from jaxsoc.core.family import EnvFamily\n"
    decl += "FAMILY = EnvFamily(name={!r}, title='Toy', order=1, prefixes=('Toy-',))\n"
    (pkg / "good" / "family.py").write_text(decl.format("good"))
    monkeypatch.syspath_prepend(str(tmp_path))
    (found,) = declarations("toyfamilies", EnvFamily)
    assert found.name == "good" and found.owns("Toy-v0") and not found.owns("Other-v0")
    (pkg / "bad" / "family.py").write_text(decl.format("misnamed"))
    with pytest.raises(TypeError, match="named 'bad'"):
        declarations("toyfamilies", EnvFamily)
    with pytest.raises(TypeError, match="LearnerFamily"):
        declarations("toyfamilies", LearnerFamily)


def test_the_task_check_names_the_family_and_the_choices():
    chaic = env_families.family("chaic")
    assert chaic.check_task("normal") == "normal"
    with pytest.raises(ValueError, match=r"unknown CHAIC task 'nope'; choose from \['normal'"):
        chaic.check_task("nope")
    assert chaic.check_task("all", allow_all=True) == "all"
    with pytest.raises(ValueError, match="choose from .*'furniture'\\]$"):
        chaic.check_task("all")
    assert chaic.task_names("all") == chaic.tasks and chaic.task_names(["normal", "shopping"]) == ("normal", "shopping")
    assert chaic.task_names("normal, shopping") == ("normal", "shopping")
    for bad in ("nope", "", ["all", "normal"]):
        with pytest.raises(ValueError, match=r"unknown CHAIC task\(s\) .* or 'all'$"):
            chaic.task_names(bad)


def test_jaxsoc_train_takes_the_network_from_the_env_family():
    assert learner_families.network_for("CHAIC-Normal-Helper-v0") == "chaic"
    assert learner_families.network_for("EXCALIBUR-QA-v0") == "excalibur"
    assert learner_families.network_for("MiniGrid-Empty-5x5-v0") == "babyai"
    assert learner_families.network_for("WatchAndHelp-Helper-v0") is None  # the trainers' default
    assert learner_families.network_for("Someone-Else-v0") is None
    from jaxsoc.cli import learn

    assert learn.ALGORITHMS[:4] == ("ppo", "a2c", "bc", "il-interactive")
    assert {"bib-atc", "watch", "hybrid", "hrl", "chaic-bm"} <= set(learn.ALGORITHMS)


@pytest.mark.parametrize(
    ("env_id", "network"),
    [("CHAIC-Normal-Helper-v0", "chaic"), ("EXCALIBUR-QA-v0", "excalibur"), ("BabyAI-GoToLocal-v0", "babyai")],
)
def test_jaxsoc_train_ppo_builds_the_config_with_the_family_network(env_id, network, monkeypatch, capsys):
    from jaxsoc.cli import main
    from jaxsoc.learners import rl_run

    seen = []

    def stop(config, *args, **kwargs):
        seen.append(config)
        raise ValueError("stopped before training")

    monkeypatch.setattr(rl_run, "train_rl", stop)
    assert main(["train", "ppo", "--env", env_id, "--out", "unused", "--preset", "tiny"]) == 2
    assert "stopped before training" in capsys.readouterr().err
    assert seen[0].env_id == env_id and seen[0].network == network
    assert main(["train", "ppo", "--env", env_id, "--out", "unused", "--set", "network=grid"]) == 2
    assert seen[1].network == "grid"  # --set still overrides the family's network
