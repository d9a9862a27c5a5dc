"""The tracked tree stays small (issue 60): at most 25 MB, training checkpoints left in git history (docs/models.md
says how to recover one), so a device call (which carries at most 64 MiB of working tree) and a clone stay cheap;
the pretrained models that replace them are in ``jaxsoc/models/store`` (their own budget: tests/test_models.py).
Nothing in the library, tests, docs or scripts names a path under ``benchmarks/results/`` that the tree lacks (a
checkpoint that left, or a table never committed), and no library code or test names a training run's directory
there (it names the run's model)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: the tracked tree's budget (issue 60)
TREE_LIMIT = 25 * 10**6
#: where a path under benchmarks/results is named
READERS = ("jaxsoc", "tests", "docs", "scripts", "README.md")
#: code, which names a model (``model:NAME``), never a training run's directory
CODE = ("jaxsoc/", "tests/")
#: what marks a training run's directory
RUN_FILES = ("run.json", "answerer.json", "explorer.json")
RESULTS_PATH = re.compile(r"benchmarks/results/[A-Za-z0-9_./<>*-]+")


def tracked() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    return [name for name in listed.stdout.decode().split("\0") if name]


def test_the_tracked_tree_stays_within_its_budget():
    sizes = {name: (ROOT / name).stat().st_size for name in tracked() if (ROOT / name).is_file()}
    total = sum(sizes.values())
    largest = sorted(sizes.items(), key=lambda item: -item[1])[:5]
    names = ", ".join(f"{name} ({size / 1e6:.1f} MB)" for name, size in largest)
    assert total <= TREE_LIMIT, f"tracked files: {total / 1e6:.1f} MB > {TREE_LIMIT / 1e6:.0f} MB; the largest: {names}"


def test_no_training_checkpoint_is_tracked():
    checkpoints = sorted({name.split("/checkpoints/")[0] for name in tracked() if "/checkpoints/" in name})
    assert not checkpoints, f"training checkpoints belong in git history, not the tree (docs/models.md): {checkpoints}"


def test_every_named_results_path_exists():
    files = set(tracked())
    missing = []
    for name in sorted(files):
        if not name.startswith(READERS) or not name.endswith((".py", ".md", ".sh")):
            continue
        for match in RESULTS_PATH.finditer((ROOT / name).read_text(errors="replace")):
            path = match.group(0).rstrip(".,")
            if any(ch in path for ch in "<>*") or path.endswith("/"):
                continue  # a pattern (gpu_<part>.json, *.json) or a folder named in prose
            if name == "docs/models.md" and path.endswith("/checkpoints"):
                continue  # how to recover a checkpoint from git history
            if path not in files and not any(f.startswith(path + "/") for f in files):
                missing.append(f"{name}: {path}")
            elif name.startswith(CODE) and any(f"{path}/{run}" in files for run in RUN_FILES):
                missing.append(f"{name}: {path} (a training run's directory: its model instead)")
    assert not missing, "paths under benchmarks/results/ the tree lacks (use model:NAME for a model):\n" + "\n".join(
        missing
    )
