"""Reads a pytest junit XML report and prints, one per line and without repeats, the node ids of the tests to run
once more after crashes: those whose pytest-xdist worker crashed (the process died: a segfault, an abort; not a
failed assertion), then those the crash kept from running (``tests/conftest.py`` reports them as failures whose
message starts with ``NOT RUN: '<node id>'``).

Usage: ``python .ci/crashed_tests.py REPORT.xml``. Exit status: 0 when every other test passed or was skipped,
1 when the report also holds another failure or error (a failed test, a worker that died outside any test), 2 when
the report is missing, unreadable or holds no test."""

import re
import sys
import xml.etree.ElementTree as ET

# node ids may hold quotes and spaces (parametrized ids): each match runs greedily to the last quote on its line
CRASH = re.compile(r"worker '[^']+' crashed while running '(.*)'")
NOT_RUN = re.compile(r"^NOT RUN: '(.*)': the session ended")


def read_report(path: str) -> tuple[list[str], list[str], list[str], int]:
    """Returns ``(crashed node ids, node ids not run, names of the other failed tests, number of test cases)`` of
    the junit XML report at ``path``, the node ids without repeats. Raises ``OSError`` or
    ``xml.etree.ElementTree.ParseError``."""
    crashed, not_run, other, cases = [], [], [], 0
    for case in ET.parse(path).getroot().iter("testcase"):
        cases += 1
        for problem in (*case.findall("failure"), *case.findall("error")):
            text = problem.get("message", "") + "\n" + (problem.text or "")
            if found := CRASH.search(text):
                crashed.append(found.group(1))
            elif found := NOT_RUN.search(problem.get("message", "")):
                not_run.append(found.group(1))
            else:
                other.append(f"{case.get('classname')}::{case.get('name')}")
    return list(dict.fromkeys(crashed)), list(dict.fromkeys(not_run)), other, cases


def main(argv: list[str]) -> int:
    """Prints the node ids to rerun of the report ``argv[0]``; returns the exit status (see the module)."""
    if len(argv) != 1:
        print("usage: crashed_tests.py REPORT.xml", file=sys.stderr)
        return 2
    try:
        crashed, not_run, other, cases = read_report(argv[0])
    except (OSError, ET.ParseError) as error:
        print(f"crashed_tests.py: cannot read the junit report {argv[0]}: {error}", file=sys.stderr)
        return 2
    if cases == 0:
        print(f"crashed_tests.py: the junit report {argv[0]} holds no test", file=sys.stderr)
        return 2
    rerun = list(dict.fromkeys(crashed + not_run))
    if rerun:
        print("\n".join(rerun))
    return 1 if other else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
