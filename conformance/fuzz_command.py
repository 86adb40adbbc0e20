"""``waypost conformance fuzz``: Schemathesis against a target's published contract."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from xml.etree import ElementTree as ET

import httpx

from waypost.conformance import fuzz, fuzz_rules, runner
from waypost.conformance.arguments import add_target, admin_token
from waypost.conformance.targets import check_target, open_target
from waypost.properties.bounds import bounded_client


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
        print(f"waypost conformance fuzz: {exc}", file=sys.stderr)
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
    try:
        return bool(json.loads(path.read_text()).get("format") == fuzz.REPLAY_FORMAT)
    except (OSError, ValueError, AttributeError):
        return False


def replay_finding(args: argparse.Namespace) -> int:
    """``waypost conformance replay`` of a fuzz finding."""
    try:
        with open_target(args.target, admin_token(args)) as target, \
                bounded_client(target.url) as client:
            check_target(client, target.admin_token)
            problem = fuzz.replay_fuzz(args.file, client, target.admin_token)
    except (ValueError, RuntimeError, OSError) as exc:
        print(f"waypost conformance replay: {exc}", file=sys.stderr)
        return 2
    return 1 if problem is not None else 0


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
    for finding in report.findings:
        lines.append(f"   {finding.kind}: {finding.operation} answered {finding.status}: "
                     f"{finding.title} — replay: {finding.replay}")
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
