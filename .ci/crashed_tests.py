"""Prints the node ids of the tests whose pytest-xdist worker crashed (a segfault in the process, not a test
failure), one per line, from a junit XML report. Exits 1 when the report holds any other failure or error, so
that only crashed workers are ever retried."""

import re
import sys
import xml.etree.ElementTree as ET

CRASH = re.compile(r"worker '[^']+' crashed while running '([^']+)'")


def main(path: str) -> int:
    crashed, other = [], []
    for case in ET.parse(path).getroot().iter("testcase"):
        for problem in (*case.findall("failure"), *case.findall("error")):
            found = CRASH.search(problem.get("message", "") + (problem.text or ""))
            (crashed if found else other).append(found.group(1) if found else case.get("name"))
    print("\n".join(dict.fromkeys(crashed)))
    return 1 if other else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
