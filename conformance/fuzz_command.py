"""``waypost conformance fuzz``: Schemathesis against a target's published contract; and
``waypost conformance replay`` of what it, or the hostile phase's command, wrote."""

from __future__ import annotations

import argparse
import json
import secrets
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import httpx

from waypost.conformance import fuzz, fuzz_rules, runner
from waypost.conformance import hostile_phase as hostile
from waypost.conformance.arguments import add_target, admin_token
from waypost.conformance.fuzz_bodies import ByteExact
from waypost.conformance.targets import check_target, open_target
from waypost.properties.wire.bounds import bounded_client
from waypost.properties.wire.untrusted import visible


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``fuzz`` under ``waypost conformance``."""
    parser = commands.add_parser(
        "fuzz", help="Schemathesis against the published contract (the kit's OpenAPI document)",
        description="Provision spaces, actors, consumers, collections and tokens as the kit "
                    "does, then run Schemathesis (examples, coverage, fuzzing and stateful "
                    "phases, with the document's links) with the kit's own OpenAPI document of "
                    "Waypost/1: the data plane with a data token holding every scope, the "
                    "control plane with the admin token, real ids in path parameters and "
                    "bodies. Checks: no server error, every status, content type, header and "
                    "body as documented, invalid requests refused, valid ones accepted (but for the "
                    "business rules declared in conformance/fuzz_rules.py). Prints the "
                    "requests sent and each finding; each finding is written as a replay file "
                    "(rerun it with waypost conformance replay FILE). Exit status 1 on a "
                    "finding not expected.")
    add_target(parser)
    parser.add_argument("--profile", choices=sorted(fuzz.FUZZ_PROFILES), default="ci",
                        help="how much to generate: dev (seconds), ci (default, about a "
                             "minute), thorough (10,000+ requests)")
    parser.add_argument("--max-examples", type=int, default=None,
                        help="examples per operation and phase (default: the profile's)")
    parser.add_argument("--seed", type=int, default=None, help="seed (default: random, printed)")
    parser.add_argument("--expected-failures", type=Path, default=None,
                        help="JSON list of {property, reason}: an entry for FUZZ marks the fuzz "
                             "phase's findings as expected (default for sqlite or d1: "
                             "conformance/expected_failures/TARGET.json)")
    parser.add_argument("--report-json", type=Path, default=None, help="write a JSON report")
    parser.add_argument("--junit", type=Path, default=None, help="write a JUnit XML report")
    parser.add_argument("--replay-dir", type=Path, default=Path("waypost-replays"),
                        help="where finding replays are written (default: ./waypost-replays)")
    parser.set_defaults(run=_fuzz)


def expected_reason(path: Path | None, target: str) -> str:
    """The reason an expected-failures file gives for ``FUZZ``, or ''."""
    return runner.expected_for(path, target).get("FUZZ", "")


class Progress:
    """The requests sent so far: a line rewritten on a terminal, every 500 elsewhere."""

    def __init__(self) -> None:
        self.tty, self.last, self.started = sys.stderr.isatty(), 0, time.monotonic()

    def __call__(self, requests: int) -> None:
        if not self.tty and requests - self.last < 500:
            return
        self.last = requests
        rate = requests / max(time.monotonic() - self.started, 1e-9)
        line = f"fuzz: {requests} requests, {rate:.0f}/s"
        sys.stderr.write(("\r" + line + "   ") if self.tty else line + "\n")
        sys.stderr.flush()


def _fuzz(args: argparse.Namespace) -> int:
    reason = expected_reason(args.expected_failures, args.target)
    try:
        with open_target(args.target, admin_token(args)) as target, \
                bounded_client(target.url) as client:
            check_target(client, target.admin_token)
            name = target.name if target.name != "url" else target.url
            print(f"waypost conformance fuzz: target {name}, profile {args.profile}",
                  file=sys.stderr)
            report = fuzz.run_fuzz(name, client, target.admin_token, profile=args.profile,
                                   seed=args.seed, replay_dir=args.replay_dir,
                                   progress=Progress(), max_examples=args.max_examples)
    except (ValueError, RuntimeError) as exc:
        print(f"waypost conformance fuzz: {visible(str(exc))}", file=sys.stderr)
        return 2
    report.expected_reason = reason
    print(file=sys.stderr)
    print(summary(report))
    if args.report_json:
        args.report_json.write_text(json.dumps(report.as_json(), indent=2) + "\n")
    if args.junit:
        write_junit(report, args.junit)
    for finding in report.findings:
        print(f"rerun: waypost conformance replay {finding.replay} --target {args.target}")
    return 1 if report.failed else 0


#: The fuzz profile of the kit's profiles that run the fuzz phase (quick runs none).
FUZZ_PROFILE_BY_KIT_PROFILE = {"ci": "dev", "thorough": "thorough"}


def fuzz_phase(target: str, client: httpx.Client, admin_token: str,
               args: argparse.Namespace) -> fuzz.FuzzReport:
    """The kit run's fuzz phase (its row in the report), with the kit's expected failures."""
    profile = FUZZ_PROFILE_BY_KIT_PROFILE[args.profile]
    print(f"waypost conformance: fuzz phase ({profile})", file=sys.stderr)
    report = fuzz.run_fuzz(target, client, admin_token, profile=profile,
                           seed=args.seed, replay_dir=args.replay_dir, progress=Progress())
    report.expected_reason = expected_reason(args.expected_failures, args.target)
    return report


def is_fuzz_replay(path: Path) -> bool:
    """Whether ``path`` is a file this module reruns: a fuzz finding's, or the exchanges of a
    failed hostile check (``waypost conformance hostile``)."""
    return _format(path) in (fuzz.REPLAY_FORMAT, hostile.REPLAY_FORMAT)


def _format(path: Path) -> Any:
    try:
        return json.loads(path.read_text()).get("format")
    except (OSError, ValueError, AttributeError):
        return None


def replay_finding(args: argparse.Namespace) -> int:
    """``waypost conformance replay`` of a fuzz finding, or of a hostile check (rerun whole,
    on a target started as ``conformance hostile`` starts it: without test hooks)."""
    check = json.loads(args.file.read_text()).get("check") \
        if _format(args.file) == hostile.REPLAY_FORMAT else None
    try:
        with open_target(args.target, admin_token(args), test_hooks=check is None) as target, \
                bounded_client(target.url) as client:
            check_target(client, target.admin_token)
            if check is not None:
                problem = replay_hostile(str(check), client, target.admin_token)
            else:
                problem = replay_fuzz(args.file, client, target.admin_token)
    except (ValueError, RuntimeError, OSError) as exc:
        print(f"waypost conformance replay: {visible(str(exc))}", file=sys.stderr)
        return 2
    return 1 if problem is not None else 0


def replay_hostile(check: str, client: httpx.Client, admin_token: str,
                   out: Callable[[str], None] = print) -> str | None:
    """Run the hostile check ``check`` again; what still fails, else None."""
    if check not in hostile.NAMES:
        raise ValueError(f"no hostile check {visible(check)!r} in this kit")
    row = hostile.run_checks(client, admin_token, f"rp{secrets.token_hex(3)}", (check,))[0]
    if row.result == "fail":
        out(visible(f"still failing: {row.message}"))
        return row.message
    out(visible(f"passes now: hostile {check} ({row.result}{': ' if row.message else ''}"
                f"{row.message})"))
    return None


def replay_fuzz(path: Path, client: httpx.Client, admin_token: str,
                out: Callable[[str], None] = print) -> str | None:
    """Rerun a fuzz finding's request against a target (fresh spaces, its ids in place of the
    recorded ones) and check the answer again; return what still fails, else None. A finding
    of the setup is its setup run again."""
    recorded = json.loads(path.read_text())
    try:
        fixtures = fuzz.provision(client, admin_token, f"rp{secrets.token_hex(3)}")
    except fuzz.SetupFailed as failed:
        out(visible(f"still failing: {failed}"))
        return failed.finding.message
    if recorded["check"] in {check.name for check in fuzz_rules.SETUP_CHECKS}:
        out(visible(f"passes now: the fuzz phase's setup (recorded: {recorded['message']})"))
        return None
    request = json.loads(_substitute(json.dumps(recorded["request"]), recorded["ids"],
                                     fixtures.ids))
    headers = dict(request["headers"])
    credential = {"admin": fixtures.admin_token, "data": fixtures.data_token}.get(
        request["credential"])
    if credential and "Authorization" not in headers:
        headers["Authorization"] = f"Bearer {credential}"
    body = request["body"]
    if isinstance(body, dict) and set(body) == {"$bytes"}:
        content: bytes | None = body["$bytes"].encode("latin-1")
    elif body is None:
        content = None
    else:
        content = json.dumps(body).encode()
        headers.setdefault("Content-Type", request.get("media_type") or "application/json")
    try:
        response = client.request(request["method"], request["path"], params=request["query"],
                                  content=content, headers=headers)
    except httpx.TransportError as error:
        problem: str | None = f"no answer: {error!r}"
    else:
        problem = recheck(recorded, request, response)
    if problem:
        out(f"still failing: {recorded['kind']}: {problem}")
    else:
        out(f"passes now: {recorded['operation']} (recorded: {recorded['kind']}: "
            f"{recorded['title']})")
    return problem


def _substitute(text: str, old: dict[str, str], new: dict[str, str]) -> str:
    for name, value in sorted(old.items(), key=lambda item: -len(item[1])):
        if name in new and len(value) > 3:  # short values (revision "1") are left as they are
            text = text.replace(value, new[name])
    return text


def recheck(recorded: dict[str, Any], request: dict[str, Any],
            response: httpx.Response) -> str | None:
    """The recorded check, judged again on a new answer, with the kit's document."""
    status = response.status_code
    if status >= 500:
        return f"{status}: {response.text[:300]}"
    method, template = recorded["operation"].split(" ", 1)
    operation = fuzz.contract()["paths"].get(template, {}).get(method.lower(), {})
    answers = operation.get("responses", {})
    if str(status) not in answers:
        return f"status {status} is not documented for {recorded['operation']}"
    check = recorded["check"]
    if check == "negative_data_rejection" and status < 400:
        exact = ByteExact(fuzz.contract())
        if exact.query_valid(operation, request["query"]) and exact.body_valid(
                operation, request["body"]):
            return None  # valid by its byte limits: accepted rightly
        return f"an invalid request was accepted with {status}"
    if check == "positive_data_acceptance" and status >= 400 and status not in (
            401, 403, 404, *fuzz_rules.allowed(check, operation.get("operationId", ""))):
        return f"a valid request was refused with {status}: {response.text[:300]}"
    if check == "response_schema_conformance":
        return _schema_problem(answers[str(status)], response)
    return None


def _schema_problem(answer: dict[str, Any], response: httpx.Response) -> str | None:
    import jsonschema_rs  # Schemathesis's own validator

    schema = answer.get("content", {}).get("application/json", {}).get("schema")
    if schema is None:
        return None
    try:
        body = response.json()
    except ValueError:
        return f"the answer is not JSON: {response.text[:200]}"
    document = fuzz.contract()
    validator = jsonschema_rs.Draft202012Validator(
        {**schema, "components": document["components"]})
    errors = [error.message for error in validator.iter_errors(body)]
    return f"the answer does not fit its schema: {errors[0]}" if errors else None


def summary(report: fuzz.FuzzReport) -> str:
    """The fuzz phase's lines: the count of requests, each finding, the verdict."""
    lines = [f"fuzz: target {report.target}, profile {report.profile}, seed {report.seed}: "
             f"{report.requests} requests in {report.seconds:.1f} s, "
             f"{sum(report.by_check.values())} checks"]
    kinds: dict[str, int] = {}
    for finding in report.findings:
        kinds[finding.kind] = kinds.get(finding.kind, 0) + 1
    for check in fuzz_rules.FUZZ_CHECKS:
        lines.append(f"   {check.finding:<30} {kinds.get(check.finding, 0):>5}")
    for check in fuzz_rules.SETUP_CHECKS:  # shown only when the setup failed
        failed = sum(finding.check == check.name for finding in report.findings)
        if failed:
            lines.append(f"   {check.finding:<30} {failed:>5}")
    for finding in report.findings:
        lines.append(visible(f"   {finding.kind}: {finding.operation} answered "
                             f"{finding.status}: {finding.title} — replay: {finding.replay}"))
        if finding.expected:  # a setup step's: what it wanted and what came
            lines.append(f"      {visible(finding.message[:600])}")
    lines += [f"   engine error: {error[:300]}" for error in report.errors]
    lines.append(f"fuzz: {report.result.upper()}"
                 + (f" (expected: {report.expected_reason})" if report.expected_reason else ""))
    return "\n".join(lines)


def write_junit(report: fuzz.FuzzReport, path: Path) -> None:
    """One test case: the fuzz phase; its findings as the failure."""
    suite = ET.Element("testsuite", name=f"waypost-conformance-fuzz-{report.target}",
                       tests="1", failures="1" if report.failed else "0",
                       time=f"{report.seconds:.3f}")
    suite.append(junit_case(report))
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)


def junit_case(report: fuzz.FuzzReport) -> ET.Element:
    case = ET.Element("testcase", classname="waypost.conformance",
                      name=f"FUZZ Contract fuzzing ({report.requests} requests)")
    if report.result == "fail":
        failure = ET.SubElement(case, "failure",
                                message=f"{len(report.findings)} findings, "
                                        f"{len(report.errors)} engine errors")
        failure.text = json.dumps(report.as_json()["findings"], indent=2)
    elif report.result != "pass":
        ET.SubElement(case, "skipped", message=f"{report.result}: {report.expected_reason}")
    return case
