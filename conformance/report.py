"""Reports of a kit run: the terminal table and the verdict after it, JSON, JUnit XML.

Notes and messages quote the target's answers, which are untrusted: every text a report shows
goes through :func:`~waypost.properties.wire.untrusted.visible`, so a control character in an error
code or a subject is shown as an escape, never emitted (JSON escapes them itself)."""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from waypost import __version__
from waypost.conformance import hostile_phase as hostile
from waypost.conformance import requirement_table as coverage
from waypost.conformance.fuzz_command import junit_case
from waypost.conformance.kit_command import duration
from waypost.conformance.profiles import PROFILES
from waypost.conformance.report_file import PHASE_NAMES, REPORT_VERSION
from waypost.conformance.run_results import Report
from waypost.properties.rules import BY_NAME, RULES, step_budget
from waypost.properties.wire.untrusted import visible, visible_lines

MARKS = {"pass": "pass", "fail": "FAIL", "xfail": "xfail", "xpass": "XPASS",
         "incomplete": "incomplete",
         "skipped": "skipped (--only)", "not run": "not run"}


@dataclass(frozen=True)
class Scope:
    """What the command line left out of a run, for its table and verdict: the properties
    ``--only`` selected (empty: all of them), and why the profile's fuzz phase did not run
    ("": it ran, or the profile has none)."""

    only: tuple[str, ...] = ()
    fuzz_skipped: str = ""


#: A skipped row that is a phase of its own: what did not run.
PHASE_SKIPPED = {"P17": "its consumer matrix did not run", "HOSTILE": "the phase did not run",
                 "FUZZ": "the phase did not run"}


def table(report: Report, requirements_hint: bool = True, scope: Scope = Scope()) -> str:
    """What a run prints: the property table (P01–P18, then the HOSTILE and FUZZ phases), what
    a run with ``--only`` ran and skipped, the limits and hostile-input tables, and last the
    requirement table's summary line (the command line prints the verdict after it)."""
    lines = [f"{'':3}{'property':<38} {'result':<16} {'checks':>7} {'failed':>6}  note",
             "-" * 98]
    for outcome in report.outcomes:
        note = outcome.message or outcome.expected_reason
        if outcome.result == "skipped":
            note = _skipped_note(outcome.prop.pid, outcome.checks, scope)
        if outcome.replay:
            note = f"{note} — replay: {outcome.replay}"
        name = f"{outcome.prop.pid} {outcome.prop.name}"
        lines.append(f"{'':3}{name:<38} {MARKS[outcome.result]:<16} {outcome.checks:>7} "
                     f"{outcome.failed:>6}  {visible(note[:400])}")
    if report.fuzz is not None:
        fuzz = report.fuzz
        note = (f"{fuzz.requests} requests, {len(fuzz.findings)} findings"
                + "".join(f"; {f.kind}: {f.operation} {f.status} — replay: {f.replay}"
                          for f in fuzz.findings[:3])
                + (f"; expected: {fuzz.expected_reason}" if fuzz.expected_reason else ""))
        lines.append(f"{'':3}{'FUZZ ' + PHASE_NAMES['FUZZ']:<38} "
                     f"{MARKS[fuzz.result]:<16} {sum(fuzz.by_check.values()):>7} "
                     f"{len(fuzz.findings):>6}  {visible(note[:400])}")
    elif scope.fuzz_skipped:
        result = "skipped" if scope.only else "not run"
        note = _skipped_note("FUZZ", 0, scope) if scope.only else scope.fuzz_skipped
        lines.append(f"{'':3}{'FUZZ ' + PHASE_NAMES['FUZZ']:<38} {MARKS[result]:<16} "
                     f"{0:>7} {0:>6}  {visible(note)}")
    rate = report.steps / report.seconds if report.seconds else 0.0
    lines.append("-" * 98)
    lines.append(f"target {report.target}, profile {report.profile}, seed {report.seed}: "
                 f"{report.examples} examples, {report.steps} steps in {report.seconds:.1f} s "
                 f"({rate:.0f} steps/s)")
    lines.append("faults injected by: " + (", ".join(report.fault_sources) or "none"))
    if scope.only:
        lines += selection(report, scope)
    if report.limits:
        lines += ["", limits_table(report)]
    if report.hostile:
        lines += ["", hostile.table(visible_rows(report.hostile))]
    if report.requirements:
        hint = " (--requirements prints the table)" if requirements_hint else ""
        lines += ["", coverage.summary(report.requirements) + hint]
    return visible_lines("\n".join(lines))


def _skipped_note(pid: str, checks: int, scope: Scope) -> str:
    """What of a row not selected ran all the same (its mark says why it was skipped)."""
    if pid in PHASE_SKIPPED:
        return PHASE_SKIPPED[pid]
    return "its checks made on the way by the selected rules, not enforced" if checks else ""


def selection(report: Report, scope: Scope) -> list[str]:
    """What a run with ``--only`` ran for its properties, and what it skipped."""
    profile = PROFILES.get(report.profile)
    rules = [BY_NAME[name] for name in report.rules if name in BY_NAME]
    steps = f", {step_budget(profile.steps, rules)} of {profile.steps} steps per example" \
        if profile is not None and rules else ""
    tagged = [row for row in report.limits if row.properties]
    checked = sum(row.result in ("pass", "fail", "xfail") for row in tagged)
    skipped = sum(row.result == "skipped" for row in tagged)
    others = sum(o.result == "skipped" for o in report.outcomes if o.prop.pid != "HOSTILE")
    matrix = "P17's consumer matrix"
    ran = [f"the exploration with {len(rules)} of {len(RULES)} rules (those exercising "
           f"{', '.join(scope.only)} or making their state{steps})" if rules
           else "no exploration (no rule exercises them)",
           f"{checked} of {checked + skipped} limit checks (those tagged with them)",
           *([matrix] if "P17" in scope.only else [])]
    left = [f"{others} other properties", f"{skipped} limit checks tagged only with them",
            *([] if "P17" in scope.only else [matrix]), "the hostile-input phase",
            *(["the fuzz phase"] if scope.fuzz_skipped else [])]
    return [f"--only {','.join(scope.only)} ran: {', '.join(ran)}",
            f"skipped: {', '.join(left)}"]


def property_rows(report: Report, scope: Scope = Scope()) -> list[tuple[str, str]]:
    """The property table's rows, as (id, result): P01–P18, HOSTILE, FUZZ (if the profile
    has a fuzz phase), an ERROR of the kit or the server."""
    found = [(outcome.prop.pid, outcome.result) for outcome in report.outcomes]
    if report.fuzz is not None:
        found.append(("FUZZ", report.fuzz.result))
    elif scope.fuzz_skipped:
        found.append(("FUZZ", "skipped" if scope.only else "not run"))
    return found


#: The rows that neither pass nor fail a run, as the verdict counts them apart.
APART = (("incomplete", "incomplete"), ("xfail", "failed as expected"),
         ("xpass", "passed though expected to fail"), ("not run", "not run"),
         ("skipped", "not selected"))


def verdict(report: Report, scope: Scope, seconds: float, rerun: str) -> str:
    """The run's last line: ``PASS: 18 of 20 rows pass, 2 incomplete (P13, P15) (seed 7,
    1 min 5 s)`` (the rows that neither pass nor fail counted apart), or ``FAIL: P07, P10
    (seed 7, 1 min 5 s) — rerun: …`` with ``rerun``, the command line that reruns the run."""
    found = property_rows(report, scope)
    when = f"seed {report.seed}, {duration(seconds)}"
    if report.failed:
        failed = [pid for pid, result in found if result == "fail"]
        return visible(f"FAIL: {', '.join(failed)} ({when}) — rerun: {rerun}")
    counts = [f"{sum(result == 'pass' for _, result in found)} of {len(found)} rows pass"]
    for result, words in APART:
        pids = [pid for pid, shown in found if shown == result]
        if pids:
            which = f"--only {','.join(scope.only)}" if result == "skipped" and scope.only \
                else _listed(pids)
            counts.append(f"{len(pids)} {words} ({which})")
    return visible(f"PASS: {', '.join(counts)} ({when})")


def _listed(pids: Sequence[str], most: int = 8) -> str:
    return ", ".join(pids[:most]) + (", …" if len(pids) > most else "")


def visible_rows(rows: list[hostile.HostileRow]) -> list[hostile.HostileRow]:
    """The hostile phase's rows with their messages made visible (one line each)."""
    return [replace(row, message=visible(row.message)) for row in rows]


def limits_table(report: Report) -> str:
    """The limit phase: each limit ``/v1/describe`` publishes, its value, and what exactly N
    and N + 1 showed."""
    lines = [f"{'':3}{'limit':<29} {'value':>10}  {'at N':<11} {'at N+1':<11} "
             f"{'result':<14} {'tags':<9} what the check does", "-" * 98]
    for row in report.limits:
        value = "—" if row.value is None else str(row.value)
        note = f"{row.note} — replay: {row.replay}" if row.replay else row.note
        lines.append(f"{'':3}{row.name:<29} {value:>10}  {row.at_limit or '—':<11} "
                     f"{row.over_limit or '—':<11} {row.result:<14} "
                     f"{','.join(row.properties) or '—':<9} {visible(note[:300])}")
    return "\n".join(lines)


def as_json(report: Report) -> dict[str, Any]:
    """The JSON report of a run (docs/report.md; its schema, docs/report.schema.json)."""
    def replayed(row: dict[str, Any]) -> dict[str, Any]:
        return {**row, "replay_command": replay_command(report, row["replay"])}
    fuzz = report.fuzz.as_json() if report.fuzz is not None else None
    if fuzz is not None:
        fuzz["findings"] = [replayed(finding) for finding in fuzz["findings"]]
    return {
        "report_version": REPORT_VERSION, "kit": {"name": "waypost", "version": __version__},
        "started": report.started or None,
        "describe": {"protocol": report.identity.protocol, "server": report.identity.server},
        "target": report.target, "profile": report.profile, "seed": report.seed,
        "run_id": report.run_id, "examples": report.examples, "steps": report.steps,
        "seconds": round(report.seconds, 3), "failed": report.failed,
        "fault_sources": report.fault_sources, "rules": report.rules,
        "properties": [{"id": o.prop.pid, "name": o.prop.name, "result": o.result,
                        "checks": o.checks, "checks_failed": o.failed,
                        "requirements": _requirement_counts(report, o.prop.pid),
                        "message": o.message, "evidence": o.evidence,
                        "replay": o.replay, "replay_command": replay_command(report, o.replay),
                        "expected_failure_reason": o.expected_reason or None}
                       for o in report.outcomes],
        "limits": [replayed(row.as_json()) for row in report.limits],
        "hostile": [row.as_json() for row in report.hostile],
        "fuzz": fuzz,
        "requirements": [row.as_json() for row in report.requirements],
    }


def replay_command(report: Report, replay: str | None) -> str | None:
    """The command that reruns a replay file of the run against its target (a run through
    fixtures also needs its ``--fixtures`` file; a URL target its admin token)."""
    if replay is None:
        return None
    return f"waypost conformance replay {shlex.quote(replay)} --target {shlex.quote(report.target)}"


def _requirement_counts(report: Report, pid: str) -> dict[str, dict[str, int]]:
    """The requirement ids of the property ``pid`` whose checks ran in this run: id → checks
    run and failed."""
    return {row.requirement.rid: {"checks": sum(row.checks.values()), "failed": row.failed}
            for row in report.requirements
            if row.requirement.prop == pid and (row.checks or row.failed)}


def write_json(report: Report, path: Path) -> None:
    path.write_text(json.dumps(as_json(report), indent=2, default=str) + "\n")


def write_html(report: Report, path: Path) -> None:
    """The run's page: the comparison page of this one run (conformance/comparison_page.py)."""
    from waypost.conformance.comparison_page import page
    from waypost.conformance.report_file import parse

    written = json.loads(json.dumps(as_json(report), default=str))  # as write_json writes it
    path.write_text(page([parse(written, "")], writer="waypost conformance"), encoding="utf-8")


def write_markdown(report: Report, path: Path) -> None:
    """The requirement table as Markdown, under the run's target, profile and seed."""
    properties = ["| Property | Result | Checks run | Failed | Note |", "|---|---|---|---|---|"]
    properties += [f"| {o.prop.pid} {o.prop.name} | {o.result} | {o.checks} | {o.failed} | "
                   f"{visible(o.message or o.expected_reason).replace('|', '/')[:200]} |"
                   for o in report.outcomes]
    path.write_text(visible_lines(coverage.markdown(
        report.requirements, f"Waypost conformance: {report.target}, profile {report.profile}, "
                             f"seed {report.seed}", "\n".join(properties))))


def write_junit(report: Report, path: Path) -> None:
    """One test case per property and per limit of the limit phase; fail → <failure>,
    xfail / not published → <skipped>; incomplete passes, with a property
    ``incomplete`` naming what did not run."""
    suite = ET.Element("testsuite", name=f"waypost-conformance-{report.target}",
                       time=f"{report.seconds:.3f}")
    for outcome in report.outcomes:
        case = ET.SubElement(suite, "testcase", classname="waypost.conformance",
                             name=f"{outcome.prop.pid} {outcome.prop.name}")
        counts = ET.SubElement(case, "properties")
        ET.SubElement(counts, "property", name="checks", value=str(outcome.checks))
        ET.SubElement(counts, "property", name="checks_failed", value=str(outcome.failed))
        if outcome.result == "fail":
            failure = ET.SubElement(case, "failure", message=outcome.message)
            failure.text = json.dumps({"evidence": outcome.evidence, "replay": outcome.replay},
                                      indent=2, default=str)
        elif outcome.result == "skipped":
            ET.SubElement(case, "skipped", message=MARKS["skipped"])
        elif outcome.result == "incomplete":  # its checks ran and passed: no <skipped>
            ET.SubElement(counts, "property", name="incomplete", value=outcome.message)
        elif outcome.result != "pass":
            ET.SubElement(case, "skipped",
                          message=f"{outcome.result}: {outcome.message or outcome.expected_reason}")
    for row in report.limits:
        case = ET.SubElement(suite, "testcase", classname="waypost.conformance.limits",
                             name=f"limit {row.name} = {row.value}")
        if row.result == "fail":
            failure = ET.SubElement(case, "failure", message=row.note)
            failure.text = json.dumps(row.as_json(), indent=2)
        elif row.result != "pass":
            ET.SubElement(case, "skipped", message=f"{row.result}: {row.note}")
    hostile.junit_cases(suite, visible_rows(report.hostile))
    if report.fuzz is not None:
        suite.append(junit_case(report.fuzz))
    fuzzed = report.fuzz is not None
    suite.set("tests", str(len(report.outcomes) + len(report.limits) + len(report.hostile)
                           + fuzzed))
    suite.set("failures", str(sum(o.result == "fail" for o in report.outcomes)
                              + sum(row.result == "fail" for row in report.limits)
                              + sum(row.result == "fail" for row in report.hostile)
                              + bool(report.fuzz and report.fuzz.result == "fail")))
    _visible_tree(suite)
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)


def _visible_tree(element: ET.Element) -> None:
    """Every attribute and text of the tree through :func:`visible` (texts line by line):
    XML 1.0 cannot even hold most control characters."""
    for node in element.iter():
        for key, value in node.attrib.items():
            node.set(key, visible(value))
        if node.text:
            node.text = visible_lines(node.text)


def write_trace(report: Report, path: Path) -> None:
    """The commands of every example, one JSON list of ``[command, args]`` per line: runs of
    one seed must write the same file, whatever the machine or the process's hash seed."""
    lines = [json.dumps([json.loads(c) for c in example]) for example in report.commands or []]
    path.write_text("".join(line + "\n" for line in lines))
