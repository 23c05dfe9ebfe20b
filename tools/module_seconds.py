"""Write ``test/module_seconds.json``, the seconds each test module takes in a whole run, from
pytest's JUnit XML reports of whole runs (``--junitxml=FILE``): the mean over the reports
given, a test's set-up and tear-down included. The suite hands the longest modules to its
workers first (``test/support/module_order.py``).

    python tools/module_seconds.py run1.xml run2.xml …
"""
from __future__ import annotations

import argparse
import json
import sys
import xml.etree.ElementTree as ElementTree
from collections import defaultdict
from pathlib import Path

TEST_ROOT = Path(__file__).resolve().parent.parent / "test"
RECORD = TEST_ROOT / "module_seconds.json"


def module_of(classname: str) -> str | None:
    """The module path under ``test/`` of a JUnit ``classname`` (``test.a.test_b`` or
    ``test.a.test_b.SomeClass``), or None when no such file is there."""
    parts = classname.split(".")[1:]
    for end in range(len(parts), 0, -1):
        candidate = "/".join(parts[:end]) + ".py"
        if (TEST_ROOT / candidate).is_file():
            return candidate
    return None


def seconds_by_module(reports: list[Path]) -> dict[str, float]:
    total: defaultdict[str, float] = defaultdict(float)
    for report in reports:
        for case in ElementTree.parse(report).getroot().iter("testcase"):
            module = module_of(case.get("classname", ""))
            if module is not None:
                total[module] += float(case.get("time", 0))
    return {module: round(seconds / len(reports), 1) for module, seconds in sorted(total.items())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reports", nargs="+", type=Path, help="JUnit XML reports of whole runs")
    seconds = seconds_by_module(parser.parse_args(argv).reports)
    if not seconds:
        print("no test of test/ in the reports", file=sys.stderr)
        return 1
    RECORD.write_text(json.dumps(seconds, indent=1) + "\n", encoding="utf-8")
    print(f"{RECORD.name}: {len(seconds)} modules, {sum(seconds.values()):.0f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
