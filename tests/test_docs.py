"""Documentation a test keeps true: the catalogue, docs/spec.md and the kit's commands agree."""

from __future__ import annotations

import re
from pathlib import Path

from waypost.properties.catalogue import CATALOGUE
from waypost.properties.commands import COMMANDS
from waypost.properties.machine import WaypostMachine
from waypost.properties.rules import RULES

ROOT = Path(__file__).resolve().parent.parent
SPEC = (ROOT / "docs" / "spec.md").read_text()


def test_every_property_has_a_row_in_the_spec() -> None:
    for prop in CATALOGUE:
        assert re.search(rf"^\| {prop.pid}[ |–]|^\| P1[1-8]–P1[0-9]", SPEC, re.M), prop.pid
        covered_row = re.search(rf"^\| {prop.pid} \|.*$", SPEC, re.M)
        if prop.covered:
            assert covered_row, f"{prop.pid} is covered but has no row of its own"


def test_catalogue_names_only_commands_and_invariants_that_exist() -> None:
    for prop in CATALOGUE:
        assert prop.covered == bool(prop.checked_by), prop.pid
        for name in prop.checked_by:
            kind, _, what = name.partition(" ")
            if kind == "command":
                assert what in COMMANDS, name
            elif kind == "invariant":
                assert hasattr(WaypostMachine, what), name
            else:
                assert name == "history checker", name


def test_every_command_is_performed_by_a_rule() -> None:
    performed = {command for rule in RULES for command in rule.performs}
    assert performed <= set(COMMANDS)
    # every example's first command; the limit phase of each run
    assert set(COMMANDS) - performed == {"setup", "check_limit"}


def test_each_limit_check_is_tagged_with_properties_that_name_it() -> None:
    from waypost.properties.limits import registry

    by_id = {prop.pid: prop for prop in CATALOGUE}
    for limit in registry().values():
        assert limit.properties, limit.name
        for pid in limit.properties:
            assert "command check_limit" in by_id[pid].checked_by, (limit.name, pid)


def test_the_spec_table_lists_the_catalogues_commands() -> None:
    for prop in CATALOGUE:
        row = re.search(rf"^\| {prop.pid} \|.*$", SPEC, re.M)
        if not prop.covered or row is None:
            continue
        for name in prop.checked_by:
            kind, _, what = name.partition(" ")
            if kind == "command":
                assert f"`{what}`" in row.group(0), f"{prop.pid}: {what} missing in docs/spec.md"


def test_cli_help_names_every_command() -> None:
    from waypost.cli import parser

    text = parser().format_help()
    for command in ("serve", "admin", "conformance", "bench"):
        assert command in text
