"""Generate the property map of ``docs/architecture.md`` (between its ``<!-- map -->`` markers)
from the kit's own code: for each of P01–P18, the state machine's rules that draw it and the kit
modules whose checks name its requirement ids (run from the repository root: ``python
tools/architecture_map.py``). ``tests/project/test_docs.py`` fails when the map is stale or when the
folder picture above it differs from the folders on disk."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import waypost.conformance.requirement_table
import waypost.properties.contract.checks  # noqa: F401  (registers the contract checks)
from waypost.properties.coverage.catalogue import CATALOGUE
from waypost.properties.coverage.check_sites import named_checks
from waypost.properties.coverage.command_names import COMMANDS
from waypost.properties.coverage.registered import CHECKS
from waypost.properties.rules import RULES
from waypost.properties.verdicts.owners import requirements_of

OUT = Path(__file__).resolve().parent.parent / "docs/architecture.md"
START, END = "<!-- map -->", "<!-- /map -->"
_MAP = re.compile(f"{re.escape(START)}.*?{re.escape(END)}", re.S)


def _where(check: str) -> str:
    """The module (or place) a named check of ``named_checks`` or ``CHECKS`` lives in."""
    kind, _, name = check.partition(" ")
    if kind == "command" and name in COMMANDS:
        module = COMMANDS[name].__module__.removeprefix("waypost.")
        return module.replace(".", "/") + ".py"
    places = {"limit": "the limit phase", "invariant": "properties/rules/machine.py",
              "consumer": "conformance/consumer_matrix.py", "crash": "conformance/crash_matrix.py",
              "vectors": "tests (vectors)", "hostile": "the hostile phase",
              "fuzz": "the fuzz phase",
              "revoked": "properties/commands/world.py", "disabled": "properties/commands/world.py"}
    return places.get(kind, check)


def rows() -> list[str]:
    """One table row per property (every check registered: those of the fuzz and contract
    phases register when their modules load, done above)."""
    checks = {**named_checks(), **{name: frozenset(check.requirements)
                                   for name, check in CHECKS.items()}}
    lines = ["| P | property | drawn by the rules | checked in |", "|---|---|---|---|"]
    for prop in CATALOGUE:
        mine = requirements_of(prop.pid)
        rules = [rule.name for rule in RULES if prop.pid in rule.exercises]
        places = sorted({_where(name) for name, ids in checks.items() if ids & mine})
        lines.append(f"| {prop.pid} | {prop.name} | {', '.join(rules) or '—'} | "
                     f"{', '.join(places) or '—'} |")
    return lines


def render(text: str) -> str:
    """``text`` with its map replaced by the current one."""
    table = "\n".join([START, *rows(), END])
    if not _MAP.search(text):
        raise ValueError(f"docs/architecture.md has no {START} … {END} block")
    return _MAP.sub(lambda _: table, text)


def main() -> int:
    OUT.write_text(render(OUT.read_text()))
    print(f"wrote {OUT.relative_to(OUT.parent.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
