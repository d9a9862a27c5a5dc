"""The project's markdown pages (README.md and docs/*.md) as tests/test_docs.py reads them: fenced code blocks,
inline code, headings (as GitHub anchors) and relative links; and the two subprocess entry points that run them:

    python tests/doc_blocks.py python PAGE            # PAGE's python blocks, in order, in one namespace
    python tests/doc_blocks.py cli CASES.json OUT.json   # jaxsoc command lines through the real parser

A python block whose first line is ``# not run: <reason>`` is skipped. Both entry points run in a fresh process so
that one page's compilations are shared by its blocks and nothing leaks between pages.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import re
import shlex
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOT_RUN = "# not run:"
FENCE = re.compile(r"^(`{3,})\s*([\w+-]*)\s*$")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
INLINE = re.compile(r"`([^`]+)`")
SHELL_LANGS = {"bash", "sh", "shell", "console"}


def pages() -> list[Path]:
    """Returns README.md and every docs/*.md, sorted."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@dataclasses.dataclass(frozen=True)
class Block:
    """A fenced code block: its page, the 1-based page line of its first code line, its language and code."""

    page: Path
    line: int
    lang: str
    code: str

    @property
    def where(self) -> str:
        """Returns ``page:line`` relative to the repository, for messages."""
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def not_run(self) -> str | None:
        """Returns the reason of a ``# not run: <reason>`` first line, else None."""
        first = self.code.split("\n", 1)[0].strip()
        return first[len(NOT_RUN) :].strip() if first.startswith(NOT_RUN) else None


def split_page(page: Path) -> tuple[list[Block], list[str]]:
    """Returns ``(blocks, prose)``: the fenced blocks and the page's lines with every fenced line blanked (so that
    prose line ``i`` is page line ``i + 1``). Raises ``ValueError`` for a fence that is never closed."""
    lines = page.read_text().split("\n")
    blocks, prose, open_fence = [], [], None
    for number, line in enumerate(lines, 1):
        match = FENCE.match(line)
        if open_fence is None and match:
            open_fence, lang, start, code = match.group(1), match.group(2).lower(), number + 1, []
            prose.append("")
        elif open_fence is not None and line.strip() == open_fence:
            blocks.append(Block(page, start, lang, "\n".join(code)))
            open_fence = None
            prose.append("")
        elif open_fence is not None:
            code.append(line)
            prose.append("")
        else:
            prose.append(line)
    if open_fence is not None:
        raise ValueError(f"{page.relative_to(ROOT)}:{start - 1}: a code fence is never closed")
    return blocks, prose


def slug(heading: str) -> str:
    """Returns GitHub's anchor of a heading's text: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Returns the anchors of the page's headings (a repeated heading gets ``-1``, ``-2``... as on GitHub)."""
    seen: dict[str, int] = {}
    out = set()
    for line in split_page(page)[1]:
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            base = slug(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            out.add(base if count == 0 else f"{base}-{count}")
    return out


def links(page: Path) -> list[tuple[int, str]]:
    """Returns ``(line, target)`` of every markdown link and image outside code blocks."""
    found = []
    for number, line in enumerate(split_page(page)[1], 1):
        found += [(number, target) for target in LINK.findall(INLINE.sub("", line))]
    return found


def inline_code(page: Path) -> list[tuple[int, str]]:
    """Returns ``(line, text)`` of every inline code span outside code blocks, whitespace (line breaks included)
    collapsed to single spaces; ``line`` is where the span starts."""
    prose = split_page(page)[1]
    text = "\n".join(prose)
    spans = []
    for match in INLINE.finditer(text):
        if "\n\n" not in match.group(1):
            spans.append((text.count("\n", 0, match.start()) + 1, " ".join(match.group(1).split())))
    return spans


def shell_commands(block: Block) -> list[tuple[int, list[str]]]:
    """Returns ``(line, tokens)`` of every command of a shell block: continuation lines joined, comments dropped;
    in a ``console`` block only the lines after a ``$`` prompt."""
    commands, pending, start = [], "", None
    for offset, raw in enumerate(block.code.split("\n")):
        line = raw
        if block.lang == "console":
            if pending == "" and not line.startswith("$ "):
                continue
            line = line[2:] if pending == "" else line
        start = block.line + offset if pending == "" else start
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        tokens = shlex.split(pending + line, comments=True)
        pending = ""
        if tokens:
            commands.append((start, tokens))
    return commands


def run_python(page: Path) -> int:
    """Runs the page's python blocks in order in one namespace; a failure prints the traceback with the page's
    own line numbers. Returns the exit status."""
    namespace: dict = {"__name__": "__doc_page__"}
    for block in split_page(page)[0]:
        if block.lang != "python" or block.not_run is not None:
            continue
        code = compile("\n" * (block.line - 1) + block.code, str(page), "exec")
        start, cpu = time.perf_counter(), time.process_time()
        try:
            exec(code, namespace)
        except Exception:
            traceback.print_exc()
            print(f"the python block at {block.where} failed", file=sys.stderr)
            return 1
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        print(f"ran {block.where} in {wall:.1f} s ({cpu:.1f} s of CPU)", flush=True)
    return 0


class _Parsed(Exception):
    """Raised instead of parsing once the command line's parser has been captured."""


def _jaxsoc_parser() -> argparse.ArgumentParser:
    """Returns the parser that ``jaxsoc.cli.main`` builds, captured at its ``parse_args`` call (so this works
    wherever the command modules live)."""
    from jaxsoc.cli import main

    captured = {}
    original = argparse.ArgumentParser.parse_args

    def capture(self, args=None, namespace=None):
        captured["parser"] = self
        raise _Parsed

    argparse.ArgumentParser.parse_args = capture
    argv, sys.argv = sys.argv, ["jaxsoc", "list"]
    try:
        main()
    except _Parsed:
        pass
    finally:
        argparse.ArgumentParser.parse_args = original
        sys.argv = argv
    if "parser" not in captured:
        raise RuntimeError("jaxsoc.cli.main never called ArgumentParser.parse_args")
    return captured["parser"]


def _subcommands(parser: argparse.ArgumentParser) -> dict | None:
    """Returns the parser's subcommands (name -> parser), or None when it has none."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices
    return None


def _check_inline(parser: argparse.ArgumentParser, tokens: list[str]) -> str | None:
    """Returns None when the words after ``jaxsoc`` name existing (sub)commands and every ``--option`` exists for
    the command they reach, else the problem. Placeholders (``RUN``, ``...``, ``<family>``) are not checked."""
    path = ["jaxsoc"]
    for token in tokens[1:]:
        choices = _subcommands(parser)
        if choices is None or token.startswith("-") or token == "..." or token.startswith("<"):
            break
        if token not in choices:
            return f"unknown command {' '.join([*path, token])!r} (choose from {', '.join(choices)})"
        parser, path = choices[token], [*path, token]
    unknown = [
        t.split("=")[0] for t in tokens if t.startswith("--") and t.split("=")[0] not in parser._option_string_actions
    ]
    return f"{' '.join(path)} has no option {', '.join(unknown)}" if unknown else None


def run_cli(cases_path: str, out_path: str) -> int:
    """Reads ``{"parse": [argv], "run": [argv], "inline": [tokens]}``; writes, in the same order, the parse error
    (None when it parses), ``[exit status, stdout]`` of each real run, and ``_check_inline``'s answer."""
    cases = json.loads(Path(cases_path).read_text())
    parser = _jaxsoc_parser()
    results: dict = {"parse": [], "run": [], "inline": []}
    for argv in cases["parse"]:
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                parser.parse_args(argv)
            results["parse"].append(None)
        except SystemExit as stop:
            lines = err.getvalue().strip().splitlines() or [f"exit {stop.code}"]
            results["parse"].append(lines[-1] if stop.code else None)
    from jaxsoc.cli import main

    for argv in cases["run"]:
        out = io.StringIO()
        argv_before, sys.argv = sys.argv, ["jaxsoc", *argv]
        try:
            with contextlib.redirect_stdout(out):
                status = main() or 0
        except SystemExit as stop:
            status = stop.code or 0
        finally:
            sys.argv = argv_before
        results["run"].append([status, out.getvalue()])
    results["inline"] = [_check_inline(parser, tokens) for tokens in cases["inline"]]
    Path(out_path).write_text(json.dumps(results))
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "python":
        sys.exit(run_python(Path(sys.argv[2])))
    sys.exit(run_cli(sys.argv[2], sys.argv[3]))
