"""Every example of README.md and docs/*.md works (``tests/doc_blocks.py`` reads the pages):

- each page's python blocks run in order, in one namespace, in one subprocess per page (toy sizes), unless a block
  starts with ``# not run: <reason>``; blocks in other languages (``text``, none) are not run;
- every ``jaxsoc ...`` command of a shell block parses with the real command-line parser (one subprocess for all
  pages), and ``jaxsoc list`` runs; every script a shell block runs (``bash X``, ``python X``) exists;
- every inline ``jaxsoc ...`` names existing commands and options, and every repository path in inline code exists;
- every relative link points to an existing file, and a ``#anchor`` to a heading of that page;
- the README stays short and links every page of docs/.
"""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from doc_blocks import ROOT, SHELL_LANGS, anchors, inline_code, links, pages, shell_commands, split_page

RUNNER = Path(__file__).with_name("doc_blocks.py")
#: commands cheap enough to run for real, not only to parse
RUN_FOR_REAL = [["list"]]
#: inline code that names a repository path
PATH_SPAN = re.compile(r"^(?:tests|scripts|benchmarks|docs|jaxsoc|\.ci)/[\w./*{},-]*$")
SCRIPT_RUNNERS = {"bash", "sh", "python", "python3"}
README_MAX_LINES = 250


def _env() -> dict[str, str]:
    """Returns this process's environment with the repository first on PYTHONPATH (the subprocesses inherit
    tests/conftest.py's compile settings and cache)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.setdefault("MPLBACKEND", "Agg")
    return env


def _python_pages() -> list[Path]:
    """Returns the pages with at least one python block to run."""
    return [p for p in pages() if any(b.lang == "python" and b.not_run is None for b in split_page(p)[0])]


def _rel(page: Path) -> str:
    """Returns the page's path relative to the repository."""
    return str(page.relative_to(ROOT))


def _shell_commands() -> list[tuple[str, list[str]]]:
    """Returns ``(page:line, tokens)`` of every command in the shell blocks of every page."""
    found = []
    for page in pages():
        for block in split_page(page)[0]:
            if block.lang in SHELL_LANGS:
                found += [(f"{_rel(page)}:{line}", tokens) for line, tokens in shell_commands(block)]
    return found


def test_skipped_python_blocks_say_why():
    for page in pages():
        for block in split_page(page)[0]:
            if block.lang == "python" and block.not_run is not None:
                assert block.not_run, f"{block.where}: '# not run:' needs a reason"


@pytest.mark.parametrize("page", _python_pages(), ids=_rel)
def test_python_blocks_run(page, tmp_path):
    done = subprocess.run(
        [sys.executable, str(RUNNER), "python", str(page)],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, f"{_rel(page)}'s python blocks failed:\n{done.stderr[-6000:]}"
    ran = done.stdout.count("ran ")
    runnable = [b for b in split_page(page)[0] if b.lang == "python" and b.not_run is None]
    assert ran == len(runnable), done.stdout


def test_shell_blocks_name_jaxsoc_commands_or_existing_scripts(tmp_path):
    parse, where, missing, unchecked = [], [], [], []
    for place, tokens in _shell_commands():
        words = list(tokens)
        while words and re.match(r"^[A-Za-z_]\w*=", words[0]):  # PYTHONPATH=. python3 ...
            words.pop(0)
        if "jaxsoc" in words:
            parse.append(words[words.index("jaxsoc") + 1 :])
            where.append(place)
        elif words and words[0] in SCRIPT_RUNNERS and len(words) > 1:
            if not (ROOT / words[1]).is_file():
                missing.append(f"{place}: {words[1]}")
        else:
            unchecked.append(f"{place}: {' '.join(tokens)}")
    assert not missing, f"scripts that do not exist: {missing}"
    assert not unchecked, f"shell commands that are neither jaxsoc nor a script of the repository: {unchecked}"
    assert parse, "no jaxsoc command found in the pages"

    inline = [(f"{_rel(p)}:{line}", text.split()) for p in pages() for line, text in inline_code(p)]
    inline = [(place, tokens) for place, tokens in inline if tokens[0] == "jaxsoc" and len(tokens) > 1]
    cases = {"parse": parse, "run": RUN_FOR_REAL, "inline": [tokens for _, tokens in inline]}
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    done = subprocess.run(
        [sys.executable, str(RUNNER), "cli", str(tmp_path / "cases.json"), str(tmp_path / "out.json")],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-6000:]
    results = json.loads((tmp_path / "out.json").read_text())
    failures = [
        f"{place}: jaxsoc {' '.join(argv)}: {error}"
        for place, argv, error in zip(where, parse, results["parse"])
        if error
    ]
    assert not failures, "commands that do not parse:\n" + "\n".join(failures)
    status, out = results["run"][0]
    assert status == 0 and "BabyAI-BossLevel-v0" in out and "EXCALIBUR-v0" in out, out[-2000:]
    wrong = [f"{place}: {' '.join(tokens)}: {e}" for (place, tokens), e in zip(inline, results["inline"]) if e]
    assert not wrong, "inline commands that name no command or option:\n" + "\n".join(wrong)


def test_inline_paths_exist():
    missing = []
    for page in pages():
        for line, text in inline_code(page):
            if not PATH_SPAN.match(text):
                continue
            patterns = [text]
            brace = re.search(r"\{([^}]*)\}", text)
            if brace:  # tests/test_household_{watch,hybrid,hrl}.py
                patterns = [text[: brace.start()] + part + text[brace.end() :] for part in brace.group(1).split(",")]
            for pattern in patterns:
                if not glob.glob(str(ROOT / pattern)):
                    missing.append(f"{_rel(page)}:{line}: {pattern}")
    assert not missing, "paths named in the pages that do not exist:\n" + "\n".join(missing)


def test_relative_links_point_to_existing_files_and_headings():
    broken = []
    for page in pages():
        for line, target in links(page):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists():
                broken.append(f"{_rel(page)}:{line}: {target} (no such file)")
            elif anchor and file.suffix == ".md" and anchor not in anchors(file):
                broken.append(f"{_rel(page)}:{line}: {target} (no heading with that anchor)")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_readme_is_short_and_links_every_page():
    readme = ROOT / "README.md"
    assert len(readme.read_text().splitlines()) <= README_MAX_LINES
    linked = {(readme.parent / target.partition("#")[0]).resolve() for _, target in links(readme)}
    unlinked = [_rel(p) for p in pages()[1:] if p.resolve() not in linked]
    assert not unlinked, f"docs pages the README does not link: {unlinked}"
