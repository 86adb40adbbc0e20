"""The hostile-input phase of the kit: every check of ``properties/hostile/`` against a target,
then the contract checks of ``properties/contract/`` (one-shot checks of requirements the
stateful model does not exercise), each in a fresh space, each followed by a check that the
server still answers. One row (``HOSTILE``) of ``waypost conformance``; ``waypost conformance
hostile`` runs it alone."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import httpx

from waypost.conformance.arguments import add_target, admin_token, subset
from waypost.conformance.targets import check_target, open_target
from waypost.properties.commands.server_wide import ServerWide
from waypost.properties.contract import checks as contract_checks
from waypost.properties.hostile import http as hostile_http
from waypost.properties.hostile import text as hostile_text
from waypost.properties.hostile import values as hostile_values
from waypost.properties.hostile import wire as hostile_wire
from waypost.properties.hostile.probes import (
    Finding,
    HostileCheck,
    Probe,
    provision,
    still_answering,
)
from waypost.properties.wire.bounds import bounded_client
from waypost.properties.wire.untrusted import visible

CHECKS: tuple[HostileCheck, ...] = (hostile_values.CHECKS + hostile_text.CHECKS
                                    + hostile_http.CHECKS + hostile_wire.CHECKS
                                    + contract_checks.CHECKS)
NAMES = tuple(check.name for check in CHECKS)


@dataclass
class HostileRow:
    """One check's result: pass, fail or not applicable (with why), and how many requests it
    sent."""

    check: HostileCheck
    result: str
    inputs: int = 0
    message: str = ""
    seconds: float = 0.0
    replay: str | None = None  # a failure's exchanges, when the run has a replay directory
    evidence: list[dict[str, Any]] = field(default_factory=list, repr=False)

    def as_json(self) -> dict[str, Any]:
        shown = {"check": self.check.name, "description": self.check.description,
                 "requirements": list(self.check.requirements), "result": self.result,
                 "inputs": self.inputs, "message": self.message,
                 "seconds": round(self.seconds, 3)}
        return shown if self.replay is None else {**shown, "replay": self.replay}


#: The format of the file a failed check leaves: its last exchanges, to read or rerun.
REPLAY_FORMAT = "waypost-hostile-replay/1"


def run_checks(client: httpx.Client, admin_token: str, prefix: str,
               only: tuple[str, ...] = NAMES,
               progress: Callable[[HostileRow], None] | None = None,
               replay_dir: Path | None = None, workers: int = 1,
               gate: ServerWide | None = None) -> list[HostileRow]:
    """Run the chosen checks, each in a space of its own (``<prefix>-<random>``), ``workers``
    at once; those that move the server through its test hooks (the clock) run alone,
    afterwards. With ``replay_dir``, a failed check's last exchanges go to
    ``<prefix>-hostile-<check>.json`` there (its row's ``replay``). The rows are in the
    checks' order. Beside a kit run's exploration each check holds the run's ``gate`` (it
    shares the fault proxy)."""
    chosen = [c for c in CHECKS if c.name in only]

    def one(check: HostileCheck) -> HostileRow:
        started = time.monotonic()
        with nullcontext() if gate is None else gate.command():
            row = _run_one(check, client, admin_token, prefix)
        row.seconds = time.monotonic() - started
        if row.result == "fail" and replay_dir is not None:
            row.replay = str(write_replay(replay_dir, prefix, row, str(client.base_url)))
        if progress is not None:
            progress(row)
        return row

    apart = [c for c in chosen if c.needs == "test hooks"]
    with ThreadPoolExecutor(max(1, workers), thread_name_prefix="waypost-kit-hostile") as pool:
        done = dict(zip((c.name for c in chosen if c not in apart),
                        pool.map(one, [c for c in chosen if c not in apart]), strict=True))
    done.update((check.name, one(check)) for check in apart)
    return [done[check.name] for check in chosen]


def write_replay(directory: Path, prefix: str, row: HostileRow, target: str) -> Path:
    """A failed check's file: what it checks, what it found, and its last exchanges (secrets
    masked, excerpts only); ``waypost conformance replay FILE`` runs the check again."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{prefix}-hostile-{row.check.name}.json"
    path.write_text(json.dumps({
        "format": REPLAY_FORMAT, "property": "HOSTILE", "check": row.check.name,
        "requirements": list(row.check.requirements), "message": visible(row.message),
        "target": target, "exchanges": row.evidence}, indent=2) + "\n")
    return path


def _run_one(check: HostileCheck, client: httpx.Client, admin_token: str,
             prefix: str) -> HostileRow:
    try:
        probe = provision(client, admin_token, f"{prefix}-{check.name.replace('_', '')}")
    except (Finding, RuntimeError, httpx.HTTPError, ValueError, KeyError, TypeError,
            AttributeError) as error:
        # a control plane that refuses the space (a Finding naming the requirement), or a
        # server that stopped answering in an earlier check: a failed row, not a crash
        return HostileRow(check, "fail", 0, f"{check.name}: no fresh space for the check: "
                                            f"{error}", evidence=getattr(error, "evidence", []))
    why = _not_applicable(check, probe)
    if why is not None:
        return HostileRow(check, "not applicable", 0, why)
    row, provisioned = HostileRow(check, "pass"), probe.requests
    try:
        check.run(probe)
    except Finding as finding:
        row.result, row.message = "fail", f"{check.name}: {finding}"
    except (httpx.HTTPError, RuntimeError, ValueError, KeyError, TypeError,
            AttributeError) as error:  # an answer unlike the protocol's
        row.result, row.message = "fail", f"{check.name}: unexpected answer: {error!r}"
    if row.result == "fail":  # the exchanges that led to it, before the liveness check's
        row.evidence = probe.evidence()
    try:
        still_answering(probe)
    except Finding as finding:
        row.result = "fail"
        row.message = f"{row.message}; " if row.message else f"{check.name}: "
        row.message += f"the server stopped answering: {finding}"
        row.evidence = row.evidence or probe.evidence()
    row.inputs = probe.requests - provisioned
    return row


def _not_applicable(check: HostileCheck, probe: Probe) -> str | None:
    """Why ``check`` does not apply to this target, or None."""
    if check.needs == "no test hooks" and probe.test_hooks:
        return ("the target runs with test hooks (capabilities.test_hooks): run 'waypost "
                "conformance hostile', which starts sqlite and d1 without them, or a URL "
                "without them")
    if check.needs == "a raw connection" and not hostile_wire.reachable(probe):
        return ("the target's URL takes no raw connection (the kit runs through an in-process "
                "transport)")
    if check.needs == "test hooks" and not probe.test_hooks:
        return ("the target runs without test hooks (capabilities.test_hooks): a full "
                "'waypost conformance --target sqlite' starts it with them")
    return None


def summary(rows: list[HostileRow]) -> tuple[str, str]:
    """The phase's result and note for its one row of the P-table."""
    failed = [row for row in rows if row.result == "fail"]
    if failed:
        return "fail", "; ".join(row.message for row in failed)
    passed = [row.check.name for row in rows if row.result == "pass"]
    skipped = [row.check.name for row in rows if row.result == "not applicable"]
    note = f"{len(passed)} checks passed"
    if skipped:
        note += f"; not applicable here: {', '.join(skipped)}"
    return "pass", note


def table(rows: list[HostileRow]) -> str:
    lines = [f"{'':3}{'hostile-input check':<22} {'result':<15} {'inputs':>6}  "
             "requirements / note", "-" * 98]
    for row in rows:
        note = row.message or ", ".join(row.check.requirements)
        if row.result == "not applicable":
            note = row.message
        lines.append(f"{'':3}{row.check.name:<22} {row.result:<15} {row.inputs:>6}  "
                     f"{visible(note[:400])}")
    return "\n".join(lines)


def junit_cases(suite: ET.Element, rows: list[HostileRow]) -> None:
    """One test case per check (failure / skipped as their result says)."""
    for row in rows:
        case = ET.SubElement(suite, "testcase", classname="waypost.conformance.hostile_phase",
                             name=f"hostile {row.check.name}", time=f"{row.seconds:.3f}")
        if row.result == "fail":
            failure = ET.SubElement(case, "failure", message=row.message[:1000])
            failure.text = json.dumps(row.as_json(), indent=2)
        elif row.result != "pass":
            ET.SubElement(case, "skipped", message=f"{row.result}: {row.message}")


# ----- waypost conformance hostile ------------------------------------------------------------


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``conformance hostile``."""
    hostile = commands.add_parser(
        "hostile", help="only the hostile-input checks",
        description="Send hostile input to the target: content types with CR/LF, NUL or "
                    "non-ASCII text at blob.prepare (and download what was stored), memory "
                    "path aliases, the bearer scheme in other letter cases, test hooks a "
                    "target runs without, JSON under other content types, oversized, deeply "
                    "nested and invalid UTF-8 bodies, numbers out of range, ids with path "
                    "traversal and SQL metacharacters; then the contract checks: the route "
                    "table, control-plane replays, failures, values and thread members, token "
                    "expiry, test hooks that need the admin token, the order of errors, "
                    "times, long paths, error details, generated ids, the MCP entry and a "
                    "stalled upload. Each check expects the error envelope "
                    "(status, code and details.field as docs/protocol.md states them) and a "
                    "server that still answers. Targets sqlite and d1 start the reference "
                    "without test hooks (the checks that need them are not applicable); a "
                    "URL is checked as it runs. A failed check's last exchanges are written "
                    "to --replay-dir (waypost conformance replay FILE runs the check again). "
                    "Exit 1 on a failure.")
    add_target(hostile)
    hostile.add_argument("--only", default=None,
                         help=f"comma-separated checks (default: all): {', '.join(NAMES)}")
    hostile.add_argument("--report-json", type=Path, default=None, help="write a JSON report")
    hostile.add_argument("--junit", type=Path, default=None, help="write a JUnit XML report")
    hostile.add_argument("--replay-dir", type=Path, default=Path("waypost-replays"),
                         help="where a failed check's exchanges are written, one file per "
                              "check (default: ./waypost-replays)")
    hostile.set_defaults(run=_hostile)


def _hostile(args: argparse.Namespace) -> int:
    try:
        only = subset(args.only, NAMES, "checks")
        with open_target(args.target, admin_token(args), test_hooks=False) as target, \
                bounded_client(target.url) as client:
            check_target(client, target.admin_token)
            print(f"waypost conformance hostile: target {target.url}", file=sys.stderr)

            def progress(row: HostileRow) -> None:
                print(f"hostile {row.check.name}: {row.result} ({row.inputs} inputs, "
                      f"{row.seconds:.1f} s)", file=sys.stderr)
            rows = run_checks(client, target.admin_token, f"hostile{int(time.time())}",
                              only, progress, args.replay_dir)
    except (ValueError, RuntimeError) as exc:
        print(f"waypost conformance hostile: {visible(str(exc))}", file=sys.stderr)
        return 2
    print(table(rows))
    result, note = summary(rows)
    if args.report_json:
        args.report_json.write_text(json.dumps({
            "target": args.target, "result": result, "note": note,
            "checks": [row.as_json() for row in rows]}, indent=2) + "\n")
    if args.junit:
        suite = ET.Element("testsuite", name="waypost-conformance-hostile")
        junit_cases(suite, rows)
        suite.set("tests", str(len(rows)))
        suite.set("failures", str(sum(row.result == "fail" for row in rows)))
        ET.ElementTree(suite).write(args.junit, encoding="utf-8", xml_declaration=True)
    print(f"hostile input: {result.upper() if result == 'fail' else result} — "
          f"{visible(note[:300])}")
    for row in rows:
        if row.replay is not None:
            print(f"exchanges of {row.check.name}: {row.replay} (rerun: waypost conformance "
                  f"replay {row.replay} --target {args.target})")
    return 1 if result == "fail" else 0
