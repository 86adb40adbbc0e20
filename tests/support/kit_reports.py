"""JSON reports of kit runs for the tests of ``waypost conformance compare`` and the README's
picture of it (``tools/comparison_screenshot.py``): real runs made in process against the
reference, or the reference with one defect of ``tests/properties/rules/test_kit_broken.py`` patched in
(:func:`kit_report`), and runs made up here, in no time (:func:`made_report`)."""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.support.inprocess import kit_client
from tests.support.kit import KIT_ADMIN, Patch, kit_served
from waypost.conformance import fuzz, run_results, runner
from waypost.conformance import hostile_phase as hostile
from waypost.conformance import requirement_table as coverage
from waypost.conformance.report import as_json
from waypost.conformance.targets import Identity
from waypost.properties.coverage.catalogue import CATALOGUE, Property
from waypost.properties.verdicts.violations import Ledger

#: The published JSON Schema of a report (docs/report.md).
SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "docs" / "report.schema.json")
                    .read_text())


def validate(report: dict[str, Any]) -> None:
    """``report`` checked against :data:`SCHEMA` (formats too): jsonschema's ValidationError
    when it breaks it."""
    jsonschema.Draft202012Validator(
        SCHEMA, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER).validate(report)


def kit_report(data_dir: Path, target: str, patch: Patch | None = None, *,
               profile: str = "ci", seed: int = 20261130,
               selected: list[Property] | None = None,
               replay_dir: Path = Path("waypost-replays")) -> dict[str, Any]:
    """One run of the kit against the reference in ``data_dir`` (with ``patch``'s defect),
    named ``target``, nothing shrunk: its JSON report as ``--report-json`` writes it."""
    with pytest.MonkeyPatch.context() as mp, kit_served(data_dir) as client:
        if patch is not None:
            patch(mp, client)
        report = runner.run(target, kit_client(client), KIT_ADMIN, profile=profile, seed=seed,
                            selected=selected, replay_dir=replay_dir, shrink_seconds=0)
    written: dict[str, Any] = json.loads(json.dumps(as_json(report), default=str))
    return written


def made_report(target: str = "reference", **made: Any) -> dict[str, Any]:
    """The JSON report of :func:`made_run`, as ``--report-json`` writes it."""
    written: dict[str, Any] = json.loads(json.dumps(as_json(made_run(target, **made)),
                                                    default=str))
    return written


def made_run(target: str = "reference", *, failing: Mapping[str, str] | None = None,
             not_run: Collection[str] = (), hostile_failing: str | None = None,
             limit_failing: str | None = None, fuzz_finding: bool = False,
             seed: int = 7, profile: str = "ci") -> run_results.Report:
    """A run made up here: every property passes with one check of each of its requirement
    ids, but those in ``failing`` (property → message, with a replay file) and ``not_run``; the
    hostile phase has two checks and the limit phase two limits (``hostile_failing``,
    ``limit_failing``: the one that fails); with ``fuzz_finding`` the fuzz phase has one
    finding."""
    failing = dict(failing or {})
    run_id = f"run{target[:4]}"
    ledger = Ledger(enforced=set())  # failures are recorded, not raised
    with ledger.checking("command made_up"):
        for requirement in coverage.load():
            if requirement.prop and requirement.prop not in not_run:
                ledger.check(requirement.rid, requirement.prop not in failing, "")
    report = run_results.Report(target, profile, seed, run_id, examples=3, steps=30, seconds=12.5,
                           started="2026-01-05T10:00:00Z",
                           identity=Identity("waypost/1", f"{target}-server/1.0"))
    for prop in CATALOGUE:
        outcome = run_results.PropertyResult(prop, "pass", ledger.checks[prop.pid],
                                 failed=ledger.failed[prop.pid])
        if prop.pid in failing:
            outcome.result, outcome.message = "fail", failing[prop.pid]
            outcome.replay = f"waypost-replays/{run_id}-{prop.pid}.json"
            outcome.evidence = {"answer": failing[prop.pid]}
        elif prop.pid in not_run:
            outcome.result, outcome.message = "not run", "no check of it ran in this run"
        report.outcomes.append(outcome)
    report.hostile = [hostile.HostileRow(check, "fail" if check.name == hostile_failing
                                         else "pass", 3, f"{check.name} broke")
                      for check in hostile.CHECKS[:2]]
    result, note = hostile.summary(report.hostile)
    report.outcomes.append(run_results.PropertyResult(run_results.HOSTILE, result, 6, note))
    report.limits = [run_results.LimitOutcome(name, 20, ("P10",), "accepted", "refused",
                                  "fail" if name == limit_failing else "pass", "N and N + 1",
                                  f"waypost-replays/{run_id}-limit-{name}-P10.json"
                                  if name == limit_failing else None)
                     for name in ("ack_items", "recipients")]
    if fuzz_finding:
        report.fuzz = fuzz.FuzzReport(target, profile, seed, f"fz{target[:4]}", requests=40,
                                      by_check={"not_a_server_error": 40})
        report.fuzz.findings.append(fuzz.Finding(
            "not_a_server_error", "Server error", "500 on a valid body", "message.send",
            {}, 500, "{}", f"waypost-replays/fz{target[:4]}-1.json"))
    report.requirements = coverage.table(report_ledger(ledger, report))
    return report


def report_ledger(ledger: Ledger, report: run_results.Report) -> Ledger:
    """``ledger`` with the hostile phase's checks counted, as a run counts them."""
    for row in report.hostile:
        ledger.by_check[f"hostile {row.check.name}"] += row.inputs
        if row.result == "fail":
            ledger.failed_checks.setdefault(f"hostile {row.check.name}", "HOSTILE")
    return ledger
