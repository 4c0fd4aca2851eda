"""The failures of pytest's JUnit reports, short, for the end of a long CI log.

A CI log is often read from its two ends only; pytest prints a failure's assertion in the
middle (the live lane's report comes before the cpu lane's). This prints, last, for each
failed or erroring test: its id, the line of the test file that failed, and the first lines
of the message (a Playwright assertion names its locator, what it expected and what it saw)."""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

MESSAGE_LINES = 8
# "path/to/test_x.py:123: AssertionError" in pytest's long traceback
LOCATION = re.compile(r"^(\S+\.py):(\d+): ", re.M)


def failures(report: Path) -> list[str]:
    out: list[str] = []
    for case in ET.parse(report).getroot().iter("testcase"):
        for bad in (*case.findall("failure"), *case.findall("error")):
            module = case.get("classname", "")  # "e2e.test_x" or "e2e.test_x.TestClass"
            test_id = f"{module}::{case.get('name')}"
            text = bad.text or ""
            lines = [m for m in LOCATION.finditer(text) if _dotted(m.group(1)) in _prefixes(module)]
            where = f" at line {lines[-1].group(2)}" if lines else ""
            message = (bad.get("message") or "").strip().splitlines()[:MESSAGE_LINES]
            out.append(f"{bad.tag.upper()} {test_id}{where}\n" + "".join(f"    {m}\n" for m in message))
    return out


def _dotted(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


def _prefixes(dotted: str) -> set[str]:
    parts = dotted.split(".")
    return {".".join(parts[:n]) for n in range(1, len(parts) + 1)}


def main(reports: list[str]) -> int:
    found = [f for r in reports if Path(r).is_file() and Path(r).stat().st_size for f in failures(Path(r))]
    if found:
        print(f"== {len(found)} failing tests (again, short)")
        print("".join(found), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
