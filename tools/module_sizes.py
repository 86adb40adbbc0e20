"""Fail when a Python module of the shipped code is longer than the project allows.

Usage: ``python tools/module_sizes.py FOLDER…`` (exit 1 and one line per long module).
"""

from __future__ import annotations

import sys
from pathlib import Path

MAX_LINES = 500


def long_modules(folders: list[str]) -> list[tuple[Path, int]]:
    """Every ``*.py`` below the folders with more than :data:`MAX_LINES` lines."""
    found = []
    for folder in folders:
        for path in sorted(Path(folder).rglob("*.py")):
            lines = len(path.read_text(encoding="utf-8").splitlines())
            if lines > MAX_LINES:
                found.append((path, lines))
    return found


def main() -> int:
    found = long_modules(sys.argv[1:])
    for path, lines in found:
        print(f"{path}: {lines} lines (at most {MAX_LINES}): split it by concept")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
