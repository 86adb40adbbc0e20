"""The fuzz phase: Schemathesis against a target's published contract.

The document is the kit's own (``conformance/openapi/waypost-1.json``), never the target's.
The kit provisions a space with its actors, consumers, collections and tokens exactly as its
model does (``properties/commands/control.py``), makes one message, blob and revision, and feeds those
real ids into generated requests; the data plane runs with a data token holding every scope,
the control plane with the admin token. Every finding is written as a replay file that
``waypost conformance replay`` reruns (``fuzz_command.replay_fuzz``). A setup step the server
answers against the contract is the phase's one finding, naming the step's requirement ids
(``fuzz_rules.SETUP_CHECKS``); it never ends the run.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, NoReturn

import httpx

from waypost.conformance import fuzz_rules
from waypost.conformance.fuzz_bodies import BodyRules, ByteExact
from waypost.properties.commands import control
from waypost.properties.commands.world import ProvisioningFailed, World
from waypost.properties.hostile.probes import ALL_SCOPES, control_ids
from waypost.properties.rules.hypothesis_hooks import seed_only_draws
from waypost.properties.verdicts.violations import Ledger, PropertyViolation
from waypost.properties.wire.http import Answer, Session
from waypost.properties.wire.untrusted import excerpt, visible


def contract() -> dict[str, Any]:
    """The normative OpenAPI document of Waypost/1 the kit carries."""
    text = resources.files("waypost.conformance").joinpath("openapi", "waypost-1.json")
    document: dict[str, Any] = json.loads(text.read_text(encoding="utf-8"))
    return document


@dataclass(frozen=True)
class FuzzProfile:
    """How much to generate: examples per operation and phase, steps of a stateful scenario."""

    max_examples: int
    stateful_steps: int
    coverage: bool


FUZZ_PROFILES = {
    "dev": FuzzProfile(max_examples=3, stateful_steps=3, coverage=False),
    "ci": FuzzProfile(max_examples=10, stateful_steps=5, coverage=True),
    "thorough": FuzzProfile(max_examples=400, stateful_steps=20, coverage=True),
}


@dataclass
class Finding:
    """One failed check on one request."""

    check: str
    title: str
    message: str
    operation: str
    request: dict[str, Any]
    status: int | None
    answer: str
    replay: str | None = None
    requirements: tuple[str, ...] = ()  # a setup step's own ids (else its check's)
    expected: str = ""  # what a setup step wanted, with its ids

    @property
    def kind(self) -> str:
        kind = next((c.finding for c in (*fuzz_rules.FUZZ_CHECKS, *fuzz_rules.SETUP_CHECKS)
                     if c.name == self.check), self.check)
        return f"{kind}, expected {self.expected}" if self.expected else kind


@dataclass
class FuzzReport:
    target: str
    profile: str
    seed: int
    run_id: str
    requests: int = 0
    seconds: float = 0.0
    by_check: dict[str, int] = field(default_factory=dict)  # checks run, by check
    statuses: dict[int, int] = field(default_factory=dict)  # answers, by status
    findings: list[Finding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # the engine's own errors
    expected_reason: str = ""

    @property
    def failed(self) -> bool:
        return bool(self.findings or self.errors) and not self.expected_reason

    @property
    def result(self) -> str:
        if self.findings or self.errors:
            return "xfail" if self.expected_reason else "fail"
        return "xpass" if self.expected_reason else "pass"

    def as_json(self) -> dict[str, Any]:
        return {"target": self.target, "profile": self.profile, "seed": self.seed,
                "run_id": self.run_id, "requests": self.requests,
                "seconds": round(self.seconds, 3), "result": self.result,
                "checks": self.by_check, "errors": self.errors,
                "expected_failure_reason": self.expected_reason or None,
                "requirements": sorted({r for c in (*fuzz_rules.FUZZ_CHECKS,
                                                    *fuzz_rules.SETUP_CHECKS)
                                        for r in c.requirements}),
                "findings": [{"kind": f.kind, "check": f.check, "title": f.title,
                              "operation": f.operation, "status": f.status,
                              "message": f.message, "replay": f.replay,
                              "requirements": list(f.requirements
                                                   or fuzz_rules.requirements_of(f.check))}
                             for f in self.findings]}


# --- provisioning ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Fixtures:
    """Real objects and credentials of one fuzz run; ``checks``: the setup's, by check."""

    data_token: str
    admin_token: str
    ids: dict[str, str]  # path parameter name -> a real id of it
    checks: dict[str, int] = field(default_factory=dict)


class SetupFailed(Exception):
    """A setup step the server answered against the contract: the phase's one finding (a
    failed check naming the step's requirement ids), never an error that ends the run."""

    def __init__(self, finding: Finding, checks: dict[str, int],
                 exchanges: list[dict[str, Any]]) -> None:
        super().__init__(f"{finding.kind}: {finding.message}")
        self.finding, self.checks, self.exchanges = finding, checks, exchanges


class _Setup:
    """The steps of :func:`provision`, each a check of ``fuzz_rules.SETUP_CHECKS``."""

    def __init__(self, world: World) -> None:
        self.world, self.operation = world, ""
        self.checks: dict[str, int] = {}

    @contextmanager
    def step(self, check: str, ids: tuple[str, ...], operation: str = "") -> Iterator[None]:
        """Answers the step cannot go on from, refusals and dropped connections: a finding.
        ``operation``: the one request of the step (else the last one traced)."""
        self.checks[check] = self.checks.get(check, 0) + 1
        self.operation = operation
        try:
            yield
        except PropertyViolation as violation:  # the kit's own checks of an issued token
            named = tuple(violation.evidence.get("requirements") or ids)
            self.fail(check, named, "the kit's check", violation.message)
        except ProvisioningFailed as refused:
            trace = self.world.session.trace
            named = control_ids(trace[-1].path) if trace else ids
            self.fail(check, named, "200 or 201", str(refused))
        except httpx.TransportError as error:  # the request is in no trace
            self.fail(check, ids, "an answer", f"none came: {type(error).__name__}: {error}",
                      answered=False)
        except (KeyError, TypeError, ValueError) as error:
            self.fail(check, ids, "an answer to go on from", f"{type(error).__name__}: {error}")

    def expect(self, check: str, ids: tuple[str, ...], answer: Answer, wanted: range,
               members: tuple[str, ...] = ()) -> dict[str, Any]:
        """The answer's object if its status is in ``wanted`` and each of ``members`` is a
        string; else a finding that shows both."""
        data = answer.json if isinstance(answer.json, dict) else {}
        shown = "2xx" if len(wanted) > 1 else str(wanted.start)
        shown += f" with {', '.join(members)}" if members else ""
        if answer.status not in wanted or any(not isinstance(data.get(m), str) for m in members):
            self.fail(check, ids, shown, f"got {answer.status} "
                                         f"{visible(json.dumps(excerpt(answer.json)))[:400]}")
        return data

    def fail(self, check: str, ids: tuple[str, ...], expected: str, got: str,
             answered: bool = True) -> NoReturn:
        trace = self.world.session.trace
        last = trace[-1] if trace and answered else None
        traced = f"{trace[-1].method} {trace[-1].path}" if trace else "the setup's start"
        operation = self.operation or (traced if answered else f"the request after {traced}")
        message = visible(f"fuzz setup: {operation}: expected {expected}, {got} "
                          f"({', '.join(ids)})")
        request = {"method": last.method, "path": last.path, "body": last.body} if last \
            else {"operation": operation}
        finding = Finding(check, "the fuzz phase's setup", message, operation, request,
                          last.status if last and last.status > 0 else None,
                          visible(json.dumps(last.answer))[:2000] if last else "",
                          requirements=ids, expected=f"{expected} ({', '.join(ids)})")
        raise SetupFailed(finding, self.checks, [e.as_json() for e in trace]) from None


def provision(client: httpx.Client, admin_token: str, run_id: str) -> Fixtures:
    """The kit's two spaces (``control.setup``), a token of the first actor with every scope
    and a read/write grant on its collection, and one message, sealed blob and revision of it.
    A step the server answers against the contract raises :class:`SetupFailed`."""
    world = World(Session(client, admin_token), f"{run_id}-", Ledger())
    setup = _Setup(world)
    consumer = f"fz{secrets.token_hex(3)}"
    with setup.step("setup_control", ("WP-CTRL-3",)):
        control.setup(world)
        space = world.space_ids["A"]
        world.admin_ok("POST", f"/admin/v1/spaces/{space}/consumers", {
            "request_id": world.rid(), "consumer_id": consumer, "actor_id": "a0",
            "view": "inbox"})
        token = control.issue(world, space, "a0", consumer, sorted(ALL_SCOPES), None,
                              collections={"notes": frozenset({"read", "write"})})
        spare = control.issue(world, space, "a1", "c1", ["message.read"], None)  # to revoke
    if token is None or spare is None:  # not reached: an unenforced ledger would record
        setup.fail("setup_control", ("WP-CTRL-11",), "a token", "none was issued")

    def data(check: str, ids: tuple[str, ...], path: str, body: Any, status: int,
             members: tuple[str, ...] = ()) -> dict[str, Any]:
        with setup.step(check, ids, f"POST {path}"):
            answer = world.session.call("POST", path, bearer=token.secret, who="fuzz",
                                        body=body)
            return setup.expect(check, ids, answer, range(status, status + 1), members)

    sent_key = world.rid()
    sent = data("setup_send", ("WP-MSG-9", "WP-HTTP-10"), "/v1/messages", {
        "request_id": sent_key, "thread": {"new": True}, "kind": "info",
        "subject": "fuzz", "body": {"text": "a message to read"}}, 201,
        ("message_id", "thread_id", "feed_item_id"))
    content, upload = b"fuzz", ("WP-UPL-2", "WP-HTTP-15")
    prepared = data("setup_upload", upload, "/v1/blobs", {
        "request_id": world.rid(), "size": len(content),
        "sha256": hashlib.sha256(content).hexdigest(), "content_type": "text/plain"}, 201,
        ("upload_id", "blob_id", "upload_url"))
    put = f"/v1/uploads/{prepared['upload_id']}/content"
    with setup.step("setup_upload", ("WP-UPL-3",), f"PUT {put}"):  # any 2xx, a body or none
        stored = world.session.put(put, content, bearer=token.secret, who="fuzz")
        setup.expect("setup_upload", ("WP-UPL-3",), stored, range(200, 300))
    data("setup_upload", upload, f"/v1/uploads/{prepared['upload_id']}/commit",
         {"request_id": world.rid()}, 200, ("blob_id",))
    data("setup_publish", ("WP-MEM-17", "WP-HTTP-16"), "/v1/collections/notes/revisions", {
        "request_id": world.rid(), "expected_revision": 0, "mode": "snapshot",
        "items": [{"item_id": "readme", "path": "README.md",
                   "blob_id": prepared["blob_id"]}]}, 201)
    return Fixtures(token.secret, admin_token, {
        "space_id": space, "actor_id": "a1", "consumer_id": consumer,
        "collection_id": "notes", "message_id": sent["message_id"],
        "thread_id": sent["thread_id"], "blob_id": prepared["blob_id"],
        "upload_id": prepared["upload_id"], "token_id": spare.token_id, "revision": "1",
        "operation": "message.send", "request_id": sent_key,
        "feed_item_id": sent["feed_item_id"]}, setup.checks)


# --- the Schemathesis run ----------------------------------------------------------------------

def _operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(method, path, op) for path, item in document["paths"].items()
            for method, op in item.items() if isinstance(op, dict) and "operationId" in op]


def _config(document: dict[str, Any], url: str, fixtures: Fixtures, profile: FuzzProfile,
            seed: int) -> dict[str, Any]:
    """Schemathesis's configuration: every check, the declared allowances per operation,
    real ids for path parameters, the credentials by security scheme."""
    checks: dict[str, Any] = {name: {"enabled": False} for name in fuzz_rules.NOT_RUN
                              if name != "max_response_time"}  # off unless given a limit
    per_operation = []
    for _, _, op in _operations(document):
        overrides: dict[str, Any] = {}
        for check in ("positive_data_acceptance", "negative_data_rejection"):
            extra = fuzz_rules.allowed(check, op["operationId"])
            if extra:
                base = ["2xx", "401", "403", "404", "5xx"] if check.startswith("positive") \
                    else ["400", "401", "403", "404", "406", "422", "428", "5xx"]
                overrides[check] = {"expected-statuses": sorted(set(base) | set(map(str, extra)))}
        names = {p["name"] for p in op.get("parameters", []) if p["in"] == "path"}
        entry: dict[str, Any] = {"include-operation-id": op["operationId"]}
        if overrides:
            entry["checks"] = overrides
        real = {f"path.{name}": fixtures.ids[name] for name in names if name in fixtures.ids}
        if real:
            entry["parameters"] = real
        if len(entry) > 1:
            per_operation.append(entry)
    return {
        "seed": seed,
        "base-url": url,
        "workers": 1,
        "generation": {"max-examples": profile.max_examples, "database": "none",
                       "allow-x00": True},
        "phases": {"examples": {"enabled": True}, "coverage": {"enabled": profile.coverage},
                   "fuzzing": {"enabled": True},
                   "stateful": {"enabled": True, "max-steps": profile.stateful_steps}},
        "checks": checks,
        "auth": {"openapi": {"bearerAuth": {"bearer": fixtures.data_token},
                             "adminBearer": {"bearer": fixtures.admin_token}}},
        "operations": per_operation,
        "request-timeout": 60,
    }


Progress = Callable[[int], None]


def run_fuzz(target_name: str, client: httpx.Client, admin_token: str, *, profile: str = "ci",
             seed: int | None = None, replay_dir: Path = Path("waypost-replays"),
             progress: Progress | None = None, document: dict[str, Any] | None = None,
             max_examples: int | None = None) -> FuzzReport:
    """Provision, run every Schemathesis phase against ``client``'s target, write a replay per
    finding."""
    import schemathesis
    from schemathesis.engine import from_schema

    chosen = FUZZ_PROFILES[profile]
    if max_examples is not None:
        chosen = FuzzProfile(max_examples, chosen.stateful_steps, chosen.coverage)
    seed = secrets.randbelow(2**31) if seed is None else seed
    report = FuzzReport(target_name, profile, seed, f"fz{secrets.token_hex(4)}")
    try:
        fixtures = provision(client, admin_token, report.run_id)
    except SetupFailed as failed:  # the phase's one finding: nothing to fuzz with
        failed.finding.replay = str(write_replay(replay_dir, report, failed.finding, {},
                                                 failed.exchanges))
        report.findings.append(failed.finding)
        report.by_check.update(failed.checks)
        return report
    report.by_check.update(fixtures.checks)
    document = document or contract()
    config = schemathesis.Config.from_dict(
        _config(document, str(client.base_url).rstrip("/"), fixtures, chosen, seed))
    schema = schemathesis.openapi.from_dict(json.loads(json.dumps(document)), config=config)
    schema.hooks.register_hook_with_name(BodyRules(report.run_id, fixtures.ids), "map_body")
    schema.hooks.register_hook_with_name(ByteExact(document), "filter_failure")
    started = time.monotonic()
    seen: set[tuple[str, str, int | None]] = set()
    with seed_only_draws():
        _consume(from_schema(schema).execute(), report, fixtures, seen, replay_dir, progress)
    report.seconds = time.monotonic() - started
    return report


def _consume(stream: Iterator[Any], report: FuzzReport, fixtures: Fixtures,
             seen: set[tuple[str, str, int | None]], replay_dir: Path,
             progress: Progress | None) -> None:
    """Collect the engine's events: findings, counts and errors."""
    from schemathesis.engine import events

    for event in stream:
        if isinstance(event, events.ScenarioFinished):
            _collect(event.recorder, report, fixtures, seen, replay_dir)
            if progress is not None:
                progress(report.requests)
        elif isinstance(event, events.NonFatalError):
            report.errors.append(f"{event.label}: {event.info.format()}"[:2000])
        elif isinstance(event, events.FatalError):
            report.errors.append(f"fatal: {event.exception!r}")


_lock = threading.Lock()


def _collect(recorder: Any, report: FuzzReport, fixtures: Fixtures,
             seen: set[tuple[str, str, int | None]], replay_dir: Path) -> None:
    """Count the requests and checks of one scenario; turn each new failure into a finding."""
    with _lock:
        report.requests += len(recorder.interactions)
        for interaction in recorder.interactions.values():
            code = interaction.response.status_code if interaction.response else 0
            report.statuses[code] = report.statuses.get(code, 0) + 1
        for case_id, checks in recorder.checks.items():
            for node in checks:
                report.by_check[node.name] = report.by_check.get(node.name, 0) + 1
                if node.status.name != "FAILURE" or node.failure_info is None:
                    continue
                interaction = recorder.interactions.get(case_id)
                response = interaction.response if interaction is not None else None
                failure = node.failure_info.failure
                case = recorder.cases[case_id].value
                operation = case.operation.label
                key = (node.name, operation, response.status_code if response else None)
                if key in seen:
                    continue
                seen.add(key)
                finding = Finding(node.name, failure.title, failure.message, operation,
                                  _request_of(case), response.status_code if response else None,
                                  (response.text if response else "")[:2000])
                finding.replay = str(write_replay(replay_dir, report, finding, fixtures.ids))
                report.findings.append(finding)


def _request_of(case: Any) -> dict[str, Any]:
    """The request of a case, as plain JSON (a body of bytes as latin-1 text)."""
    body = case.body
    if isinstance(body, bytes):
        body = {"$bytes": body.decode("latin-1")}
    headers = {k: v for k, v in (case.headers or {}).items() if k.lower() != "authorization"}
    security = case.operation.definition.raw.get("security", [])
    role = "admin" if security and "adminBearer" in security[0] else \
        "data" if security else "none"
    return {"method": case.method, "path": case.formatted_path,
            "query": dict(case.query or {}), "headers": headers, "body": body,
            "media_type": case.media_type, "credential": role,
            "negative": bool(case.meta and case.meta.generation.mode.is_negative)}


REPLAY_FORMAT = "waypost-fuzz-replay/1"


def write_replay(directory: Path, report: FuzzReport, finding: Finding, ids: dict[str, str],
                 exchanges: list[dict[str, Any]] | None = None) -> Path:
    """A finding's file (``waypost conformance replay`` reruns it); a setup step's also holds
    the setup's exchanges (excerpts, no secrets)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{report.run_id}-fuzz-{len(report.findings) + 1}-{finding.check}.json"
    path.write_text(json.dumps({
        "format": REPLAY_FORMAT, "property": "FUZZ", "check": finding.check,
        "kind": finding.kind, "requirements": list(finding.requirements
                                                   or fuzz_rules.requirements_of(finding.check)),
        "title": finding.title, "message": finding.message, "operation": finding.operation,
        "target": report.target, "profile": report.profile, "seed": report.seed,
        "ids": ids, "request": finding.request, "status": finding.status,
        "answer": finding.answer, **({"exchanges": exchanges} if exchanges else {})},
        indent=2, default=str) + "\n")
    return path
