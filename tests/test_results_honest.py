"""RESULTS.md states its learned numbers the way a reviewer accepts them (issue 59).

- The learned headlines table (between ``<!-- headlines:start -->`` and ``<!-- headlines:end -->``): every row
  names at least 3 training seeds, each with its figure, or says why not; no row was chosen on a test split; every
  model it names is in the store.
- Every table that puts a paper's figure or recipe beside jaxsoc's is followed by a line ``Protocol vs the paper:``
  saying where the protocols differ, so that no reader takes a design result for a reproduction.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "RESULTS.md"
PROTOCOL = "Protocol vs the paper:"
MIN_SEEDS = 3


def tables(lines: list[str]) -> list[tuple[int, int]]:
    """Returns ``(start, end)`` line indices of every markdown table (``end`` one past its last row)."""
    spans, i = [], 0
    while i < len(lines):
        if lines[i].startswith("|"):
            j = i
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            spans.append((i, j))
            i = j
        else:
            i += 1
    return spans


def cells(row: str) -> list[str]:
    """Returns a markdown table row's cells, stripped."""
    return [c.strip() for c in row.strip().strip("|").split("|")]


def headline_rows(text: str) -> tuple[list[str], list[list[str]]]:
    """Returns the headlines table's header and its rows (cells); raises ``AssertionError`` when it is missing."""
    match = re.search(r"<!-- headlines:start -->(.*?)<!-- headlines:end -->", text, re.S)
    assert match, "RESULTS.md has no learned-headlines table between <!-- headlines:start/end -->"
    rows = [line for line in match[1].splitlines() if line.startswith("|")]
    assert len(rows) > 2, "the headlines table is empty"
    return cells(rows[0]), [cells(r) for r in rows[2:]]


def seed_count(cell: str) -> int:
    """Returns how many training seeds a cell lists, each written ``seed N: figure``."""
    return len(re.findall(r"\bseed \d+:\s*\S", cell))


def test_seed_count_reads_the_cell_format():
    assert seed_count("seed 0: 0.99; seed 1: 0.98; seed 2: 0.97") == 3
    assert seed_count("seeds 0, 1, 2") == 0  # seeds without their figures do not count
    assert seed_count("seed 0: 0.99") == 1


@pytest.fixture(scope="module")
def text() -> str:
    return RESULTS.read_text(encoding="utf-8")


def test_every_headline_names_three_seeds_or_why_not(text):
    header, rows = headline_rows(text)
    seeds = header.index("training seeds (each seed's figure)")
    for row in rows:
        assert len(row) == len(header), f"headline row has {len(row)} cells, not {len(header)}: {row[0]}"
        cell = row[seeds]
        assert seed_count(cell) >= MIN_SEEDS or "why not:" in cell, (
            f"headline {row[0]!r} lists {seed_count(cell)} seed(s) with figures and does not say why not: {cell!r}"
        )


def test_no_headline_was_chosen_on_a_test_split(text):
    header, rows = headline_rows(text)
    chosen = header.index("chosen on")
    for row in rows:
        assert "test" not in row[chosen].lower(), f"headline {row[0]!r} was chosen on {row[chosen]!r}"


def test_every_headline_model_is_in_the_store(text):
    from jaxsoc import models

    header, rows = headline_rows(text)
    stored = {card.name for card in models.list()}
    for row in rows:
        for name in re.findall(r"`([a-z0-9-]+)`", row[header.index("model")]):
            assert name in stored, f"headline {row[0]!r} names model {name!r}, which is not in the store"


def test_every_table_beside_the_paper_says_how_the_protocol_differs(text):
    lines = text.splitlines()
    missing = []
    for start, end in tables(lines):
        if not any("paper" in line.lower() for line in lines[start:end]):
            continue
        after = [line for line in lines[end : end + 4] if line.strip() and not line.startswith("<!--")][:1]
        if not after or not after[0].lstrip("-* ").startswith(PROTOCOL):
            missing.append(f"line {start + 1}: {lines[start][:80]}")
    assert not missing, f"tables beside the paper without a '{PROTOCOL}' line right after them:\n" + "\n".join(missing)


def test_the_protocol_check_can_fail():
    lines = ["| a | paper |", "|---|---|", "| 1 | 2 |", "", "Something else."]
    ((start, end),) = tables(lines)
    after = [line for line in lines[end : end + 4] if line.strip()][:1]
    assert not after[0].startswith(PROTOCOL)
