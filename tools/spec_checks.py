"""Rewrite the last column of docs/spec.md's property table ("The conformance kit, property by
property"): the checks of the kit that may check each property, as ``properties/coverage/check_sites.py``
reads them from the checks themselves (run from the repository root: ``python
tools/spec_checks.py``). ``tests/project/test_docs.py`` fails when the column is stale."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from waypost.properties.coverage.check_sites import checked_by

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "docs" / "spec.md"
ROW = re.compile(r"^(\| (P\d\d) \|.*\| )([^|]*)( \|)$")


def cell(pid: str) -> str:
    """The column for ``pid``: commands in code font, the other named checks in words."""
    names = checked_by(pid)
    commands = sorted({f"`{n.removeprefix('command ')}`" for n in names
                       if n.startswith("command ")})
    limits = ["`check_limit`"] if any(n.startswith("limit ") for n in names) else []
    other = [n if not n.startswith("invariant ") else f"invariant `{n.split(' ', 1)[1]}`"
             for n in names if not n.startswith(("command ", "limit "))]
    return ", ".join([*commands, *limits, *other]) or "—"


def render(text: str) -> str:
    """``text`` with every property row's last column computed."""
    def line(row: str) -> str:
        match = ROW.match(row)
        return f"{match.group(1)}{cell(match.group(2))}{match.group(4)}" if match else row
    return "\n".join(line(row) for row in text.split("\n"))


def main() -> int:
    SPEC.write_text(render(SPEC.read_text()))
    print(f"wrote {SPEC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
