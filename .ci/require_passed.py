"""CI's check that the tests it must run did run: each test id given (path::name) passed in the
junit XML report, neither skipped nor missing. Exits 1 saying which did not, and why."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET


def outcomes(report: str) -> dict[str, tuple[str, str]]:
    """test id -> (passed / skipped / failed, the message pytest gave)."""
    found = {}
    for case in ET.parse(report).iter("testcase"):
        path = case.get("classname", "").replace(".", "/") + ".py"
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("skipped", "failure", "error"):
                outcome = "skipped" if child.tag == "skipped" else "failed"
                message = child.get("message", "")
        found[f"{path}::{case.get('name')}"] = (outcome, message)
    return found


def main(argv: list[str]) -> int:
    report, wanted = argv[0], argv[1:]
    found = outcomes(report)
    bad = []
    for test_id in wanted:
        outcome, message = found.get(test_id, ("not collected", ""))
        if outcome != "passed":
            bad.append(f"{test_id}: {outcome}{': ' + message if message else ''}")
    for line in bad:
        print(f"CI must run this test, and it did not pass: {line}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
