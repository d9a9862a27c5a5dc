"""The README's "Pretrained models" table is the store's (``jaxsoc.models.table``): a model added, re-scored or
removed shows there (regenerate it with ``python -c "import jaxsoc.models as m; print(m.table())"``)."""

from __future__ import annotations

from pathlib import Path

from jaxsoc import models

README = Path(__file__).resolve().parents[1] / "README.md"
START, END = "<!-- models:start -->", "<!-- models:end -->"


def test_the_readme_lists_every_stored_model_with_its_recorded_figure():
    text = README.read_text()
    assert START in text and END in text, f"README.md lacks the {START} ... {END} block"
    shown = text.split(START, 1)[1].split(END, 1)[0].strip()
    assert shown == models.table(), "README.md's models table is stale: regenerate it (module docstring)"
