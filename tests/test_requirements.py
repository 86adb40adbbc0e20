"""Requirement coverage: every requirement id of docs/protocol.md has a check of the kit or a
written reason why not, every id a check names exists, the kit's data file is generated from
the docs, and a run's table says what its checks showed."""

from __future__ import annotations

import re
from pathlib import Path

from tools.requirements_data import OUT, render
from waypost.conformance import requirements as coverage
from waypost.conformance.crash_matrix import OPERATIONS
from waypost.properties.commands import COMMANDS
from waypost.properties.limits import NOT_INPUT, registry
from waypost.properties.requirements import CHECKS, NOT_CHECKED, checks_of, register

ROOT = Path(__file__).resolve().parent.parent
DEFINED = set(re.findall(r"\*\*(WP-[A-Z]+-\d+)\*\*", (ROOT / "docs" / "protocol.md").read_text()))


def test_the_data_file_is_generated_from_the_docs() -> None:
    assert OUT.read_text() == render(), "stale: run python tools/requirements_data.py"
    assert {r.rid for r in coverage.load()} == DEFINED
    assert all(r.text and r.section for r in coverage.load())


def test_every_requirement_has_a_check_of_a_run_or_a_reason() -> None:
    unaccounted = [rid for rid in sorted(DEFINED) if rid not in NOT_CHECKED and not any(
        check.where == "run" for check in checks_of(rid))]
    assert not unaccounted, f"no check and no 'not checked (why)': {unaccounted}"
    both = [rid for rid in sorted(NOT_CHECKED) if any(
        check.where == "run" for check in checks_of(rid))]
    assert not both, f"checked, yet marked not checked (drop the reason): {both}"
    assert all(len(why) > 15 for why in NOT_CHECKED.values())


def test_every_check_names_only_requirements_of_the_docs() -> None:
    for check in CHECKS.values():
        assert check.requirements, check.name
        unknown = set(check.requirements) - DEFINED
        assert not unknown, f"{check.name} names {sorted(unknown)}: not in docs/protocol.md"
    assert set(NOT_CHECKED) <= DEFINED, sorted(set(NOT_CHECKED) - DEFINED)


def test_every_check_of_the_kit_is_tagged() -> None:
    tagged = set(CHECKS)
    assert {f"command {c}" for c in COMMANDS if c != "check_limit"} <= tagged
    assert {f"limit {name}" for name in registry()} <= tagged
    assert not {f"limit {name}" for name in NOT_INPUT} & tagged
    assert {f"crash matrix {operation}" for operation in OPERATIONS} <= tagged
    vectors = {p.name for p in (ROOT / "conformance" / "vectors").glob("*.json")}
    assert {f"vectors {name}" for name in vectors} <= tagged
    for name in tagged:
        kind = name.split(" ")[0]
        assert kind in ("command", "invariant", "limit", "consumer", "crash", "vectors",
                        "revoked", "disabled", "hostile", "fuzz"), name


def test_a_registered_check_counts_toward_its_requirements() -> None:
    name = "test-only hostile unknown-member"
    try:
        register(name, ("WP-VAL-1",))
        register(name, ("WP-ERR-1",))
        assert CHECKS[name].requirements == ("WP-VAL-1", "WP-ERR-1")
        rows = {row.requirement.rid: row for row in coverage.table({name: 3}, {})}
        assert rows["WP-VAL-1"].result == "pass"
        assert rows["WP-VAL-1"].checks[name] == 3
    finally:
        del CHECKS[name]


def test_the_table_of_a_run() -> None:
    rows = {row.requirement.rid: row for row in coverage.table(
        {"command send": 5, "command lookup": 2, "command tamper": 1},
        {"command lookup": "P04", "command tamper": "P07"}, expected=frozenset({"P07"}),
        needs={"command revoke": "the admin API (fixtures hold no token to revoke)"})}
    assert rows["WP-MSG-1"].result == "pass"
    assert rows["WP-MSG-1"].checks["command send"] == 5
    assert rows["WP-IDEM-13"].result == "fail"
    assert "P04" in rows["WP-IDEM-13"].note
    assert rows["WP-CUR-2"].result == "xfail"
    assert rows["WP-CTRL-13"].result == "not run"
    assert rows["WP-CTRL-13"].note.startswith("needs the admin API")
    assert rows["WP-AUTH-4"].result == "not checked"
    assert rows["WP-AUTH-4"].note == NOT_CHECKED["WP-AUTH-4"]
    assert len(rows) == len(DEFINED)


def test_requirements_checked_elsewhere_say_where() -> None:
    rid = sorted(NOT_CHECKED)[0]  # an id with no check of a run
    register("crash matrix only-here", (rid,), where="crash matrix")
    reason = NOT_CHECKED.pop(rid)
    try:
        row = next(r for r in coverage.table({}, {}) if r.requirement.rid == rid)
        assert (row.result, row.note) == ("not run",
                                          "checked by waypost conformance crash-matrix")
    finally:
        NOT_CHECKED[rid] = reason
        del CHECKS["crash matrix only-here"]


def test_the_markdown_and_terminal_tables_list_every_requirement() -> None:
    rows = coverage.table({"command send": 1}, {})
    md = coverage.markdown(rows, "a run")
    assert md.count("\n| WP-") == len(DEFINED)
    assert "`command send` × 1" in md
    text = coverage.text_table(rows)
    assert all(rid in text for rid in DEFINED)
    assert text.splitlines()[-1] == coverage.summary(rows)
