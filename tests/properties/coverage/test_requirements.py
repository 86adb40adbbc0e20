"""Requirement coverage: every requirement id of docs/protocol.md (and docs/consumer.md) belongs
to one property and has a check of the kit or a written reason why not; every id a check names
exists; the kit's data file is generated from the docs; what the source says a command may
check covers what it checked in a real run; and a run's table says what its checks showed."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.support.inprocess import kit_client
from tools.requirements_data import OUT, render
from waypost.conformance import requirement_table as coverage
from waypost.conformance import runner
from waypost.conformance.crash_matrix import OPERATIONS
from waypost.properties.contract import checks as contract_checks  # noqa: F401  (tags the contract checks)
from waypost.properties.coverage.check_sites import named_checks
from waypost.properties.coverage.registered import CHECKS, NOT_CHECKED, checks_of, register
from waypost.properties.verdicts.owners import property_of, table
from waypost.properties.verdicts.violations import Ledger

ROOT = Path(__file__).resolve().parents[3]
DEFINED = set(re.findall(r"\*\*(WP-[A-Z]+-\d+)\*\*", (ROOT / "docs" / "protocol.md").read_text()
                         + (ROOT / "docs" / "consumer.md").read_text()))


def test_the_data_file_is_generated_from_the_docs() -> None:
    assert OUT.read_text() == render(), "stale: run python tools/requirements_data.py"
    assert {r.rid for r in coverage.load()} == DEFINED
    assert all(r.text and r.section for r in coverage.load())
    assert set(table()) == DEFINED


def test_every_property_holds_requirements_and_every_id_one_property() -> None:
    owners = table()
    assert {pid for pid in owners.values() if pid} == {f"P{n:02d}" for n in range(1, 19)}
    assert property_of(("WP-RCPT-6", "WP-RCPT-11")) == "P09"  # the first id decides
    with pytest.raises(ValueError, match="must belong to a property"):
        property_of("WP-HTTP-1")
    with pytest.raises(ValueError, match="must belong to a property"):
        property_of("WP-" + "NOPE-1")  # no such id


def _checked_in_a_run(rid: str) -> bool:
    return any(rid in ids for ids in named_checks().values()) or any(
        check.where == "run" for check in checks_of(rid))


def test_every_requirement_has_a_check_of_a_run_or_a_reason() -> None:
    unaccounted = [rid for rid in sorted(DEFINED)
                   if rid not in NOT_CHECKED and not _checked_in_a_run(rid)]
    assert not unaccounted, f"no check and no 'not checked (why)': {unaccounted}"
    both = [rid for rid in sorted(NOT_CHECKED) if _checked_in_a_run(rid)]
    assert not both, f"checked, yet marked not checked (drop the reason): {both}"
    assert all(len(why) > 15 for why in NOT_CHECKED.values())
    # 5, and the two slow-client rules of §12 whose limits are each deployment's own
    # (WP-LOAD-6, WP-LOAD-9, checked on the reference by
    # tests/reference/http/test_connection_limits.py)
    assert len(NOT_CHECKED) <= 7, sorted(NOT_CHECKED)


def test_every_check_names_only_requirements_of_the_docs() -> None:
    for check in CHECKS.values():
        assert check.requirements, check.name
        unknown = set(check.requirements) - DEFINED
        assert not unknown, f"{check.name} names {sorted(unknown)}: not in the docs"
    for name, ids in named_checks().items():  # change_view only changes state: no ids
        assert ids <= DEFINED, f"{name} names {sorted(ids - DEFINED)}: not in the docs"
    assert set(NOT_CHECKED) <= DEFINED, sorted(set(NOT_CHECKED) - DEFINED)


def test_the_phases_are_tagged() -> None:
    assert {f"crash matrix {operation}" for operation in OPERATIONS} <= set(CHECKS)
    vectors = {p.name for p in (ROOT / "conformance" / "vectors").glob("*.json")}
    assert {f"vectors {name}" for name in vectors} <= set(CHECKS)
    for name in CHECKS:
        assert name.split(" ")[0] in ("crash", "vectors", "hostile", "fuzz", "contract",
                                      "test-only"), name


def test_a_check_counts_under_the_property_of_its_first_id() -> None:
    ledger = Ledger(enforced=set())
    with ledger.checking("command ack"):
        assert ledger.check(("WP-RCPT-6", "WP-RCPT-8"), True, "fine")
        assert not ledger.check(("WP-RCPT-12", "WP-RCPT-11"), False, "no checkpoint")
    assert (ledger.checks["P09"], ledger.checks["P10"], ledger.failed["P10"]) == (1, 1, 1)
    assert ledger.by_requirement["WP-RCPT-8"] == {"command ack": 1}
    assert ledger.failed_requirements["WP-RCPT-11"] == {"P10": 1}
    assert ledger.recorded["P10"].evidence["requirements"] == ["WP-RCPT-12", "WP-RCPT-11"]
    enforced = Ledger(enforced={"P10"})
    with pytest.raises(AssertionError, match=r"P10: no checkpoint \[WP-RCPT-12\]"):
        enforced.check("WP-RCPT-12", False, "no checkpoint")


def test_a_registered_check_counts_toward_its_requirements() -> None:
    name = "test-only hostile unknown-member"
    try:
        register(name, ("WP-VAL-1",))
        register(name, ("WP-ERR-1",))
        assert CHECKS[name].requirements == ("WP-VAL-1", "WP-ERR-1")
        ledger = Ledger()
        ledger.by_check[name] = 3
        rows = {row.requirement.rid: row for row in coverage.table(ledger)}
        assert rows["WP-VAL-1"].result == "pass"
        assert rows["WP-VAL-1"].checks[name] == 3
    finally:
        del CHECKS[name]


def test_the_table_of_a_run() -> None:
    ledger = Ledger(enforced=set())
    with ledger.checking("command send"):
        for _ in range(5):
            ledger.check(("WP-MSG-9", "WP-MSG-2"), True, "published")
    with ledger.checking("command lookup"):
        ledger.check(("WP-IDEM-2", "WP-IDEM-3"), False, "another fingerprint")
    with ledger.checking("command tamper"):
        ledger.check("WP-CUR-2", False, "read a tampered cursor")
    rows = {row.requirement.rid: row for row in coverage.table(
        ledger, expected=frozenset({"P07"}),
        needs={"command revoke": "the admin API (fixtures hold no token to revoke)"})}
    assert rows["WP-MSG-2"].result == "pass"
    assert rows["WP-MSG-2"].checks["command send"] == 5
    assert (rows["WP-IDEM-3"].result, rows["WP-IDEM-3"].failed) == ("fail", 1)
    assert "P04" in rows["WP-IDEM-3"].note
    assert rows["WP-CUR-2"].result == "xfail"
    assert rows["WP-CTRL-13"].result == "not run"
    assert rows["WP-CTRL-13"].note.startswith("needs the admin API")
    assert rows["WP-AUTH-4"].result == "not checked"
    assert rows["WP-AUTH-4"].note == NOT_CHECKED["WP-AUTH-4"]
    assert len(rows) == len(DEFINED)
    assert rows["WP-IDEM-3"].as_json()["checks_failed"] == 1
    selected = {r.requirement.rid: r for r in coverage.table(ledger, wanted={"P07"})}
    assert selected["WP-IDEM-3"].result == "pass"  # failed under P04, not selected


def test_requirements_checked_elsewhere_say_where() -> None:
    rid = sorted(NOT_CHECKED)[0]  # an id with no check of a run
    register("crash matrix only-here", (rid,), where="crash matrix")
    reason = NOT_CHECKED.pop(rid)
    try:
        row = next(r for r in coverage.table(Ledger()) if r.requirement.rid == rid)
        assert (row.result, row.note) == ("not run",
                                          "checked by waypost conformance crash-matrix")
    finally:
        NOT_CHECKED[rid] = reason
        del CHECKS["crash matrix only-here"]


def test_the_markdown_and_terminal_tables_list_every_requirement() -> None:
    ledger = Ledger()
    with ledger.checking("command send"):
        ledger.check("WP-MSG-9", True, "published")
    rows = coverage.table(ledger)
    md = coverage.markdown(rows, "a run")
    assert md.count("\n| WP-") == len(DEFINED)
    assert "`command send` × 1" in md
    text = coverage.text_table(rows)
    assert all(rid in text for rid in DEFINED)
    assert text.splitlines()[-1] == coverage.summary(rows)


@pytest.mark.slow
def test_what_a_run_checked_is_what_the_source_says_each_check_may_check(
        tmp_path: Path, kit_app: Any, kit_admin: str) -> None:
    """Every id a named check cited in a real run is among the ids ``check_sites`` reads for
    it from the source, so ``--only`` and the catalogue never miss a check that was made."""
    sites = named_checks()
    with kit_app(tmp_path / "data", test_hooks=True) as client:
        report = runner.run("sqlite", kit_client(client), kit_admin, profile="quick", seed=7,
                            replay_dir=tmp_path / "replays", shrink_seconds=0)
    assert not report.failed, [(o.prop.pid, o.message) for o in report.outcomes if o.message]
    cited = {(name, row.requirement.rid) for row in report.requirements
             for name in row.checks if name in sites}
    assert len({name for name, _ in cited}) > 20  # commands, limits, the invariant
    missed = sorted((name, rid) for name, rid in cited if rid not in sites[name])
    assert not missed, f"cited in a run, not found in the source: {missed}"
    for outcome in report.outcomes:
        if outcome.result == "pass":
            assert outcome.checks > 0, outcome.prop.pid
