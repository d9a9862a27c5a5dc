"""The CI tier's bookkeeping (tests/tiers.py): what it leaves out exists; a renamed case cannot leave CI silently."""

import re
from pathlib import Path

import pytest
import tiers
from tiers import LEFT_OUT_OF_CI, ci_subset

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("nodeid", sorted(LEFT_OUT_OF_CI))
def test_every_test_left_out_of_ci_exists(nodeid):
    path, _, name = nodeid.partition("::")
    function = re.sub(r"\[.*\]$", "", name)
    source = (ROOT / path).read_text()
    assert re.search(rf"^def {re.escape(function)}\(", source, re.M), f"{nodeid}: no such test"
    assert LEFT_OUT_OF_CI[nodeid].strip(), f"{nodeid}: say what covers its ground in CI"


def test_ci_subset_marks_the_rest_slow_and_refuses_unknown_cases():
    params = ci_subset(["a", "b", "c"], ["b"])
    assert params[1] == "b"
    assert [p.values for p in (params[0], params[2])] == [("a",), ("c",)]
    assert all(m.name == "slow" for p in (params[0], params[2]) for m in p.marks)
    with pytest.raises(ValueError, match="'d'"):
        ci_subset(["a"], ["d"])


def test_the_ordering_and_shared_units_name_existing_modules():
    root = Path(__file__).resolve().parent.parent
    named = set(tiers.MODULE_SECONDS) | set(tiers.SHARED_SCOPES)
    assert named and all((root / m).is_file() for m in named), sorted(m for m in named if not (root / m).is_file())
    group = tiers.SHARED_SCOPES["tests/test_bib_json.py"]
    assert tiers.work_scope("tests/test_bib_tasks.py::test_x[a]") == tiers.work_scope("tests/test_bib_json.py::t")
    assert tiers.work_scope("tests/test_bib_json.py::t") == group
    assert tiers.work_scope("tests/test_ppo.py::test_x[a]") == "tests/test_ppo.py"
    assert tiers.work_scope("tests/test_ppo.py::TestA::test_x") == "tests/test_ppo.py::TestA"
    bib = tiers.unit_order("tests/test_bib_json.py::t")
    assert bib == tiers.unit_order("tests/test_bib_tasks.py::t") and bib < tiers.unit_order("tests/test_ppo.py::t")
    assert tiers.unit_order("tests/test_not_listed.py::t") == (0, "tests/test_not_listed.py")
