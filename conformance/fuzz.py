"""The fuzz phase: Schemathesis against a target's published contract.

The document is the kit's own (``conformance/openapi/waypost-1.json``), never the target's.
The kit provisions a space with its actors, consumers, collections and tokens exactly as its
model does (``properties/control.py``), makes one message, blob and revision, and feeds those
real ids into generated requests; the data plane runs with a data token holding every scope,
the control plane with the admin token. Every finding is written as a replay file that
``waypost conformance replay`` reruns.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import httpx

from waypost.conformance import fuzz_rules
from waypost.conformance.fuzz_bodies import BodyRules, ByteExact
from waypost.conformance.reproducible import seed_only_draws
from waypost.properties import control
from waypost.properties.http import Session
from waypost.properties.violations import Ledger
from waypost.properties.world import World


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

    @property
    def kind(self) -> str:
        return next((c.finding for c in fuzz_rules.FUZZ_CHECKS if c.name == self.check),
                    self.check)


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
                "requirements": sorted({r for c in fuzz_rules.FUZZ_CHECKS
                                        for r in c.requirements}),
                "findings": [{"kind": f.kind, "check": f.check, "title": f.title,
                              "operation": f.operation, "status": f.status,
                              "message": f.message, "replay": f.replay,
                              "requirements": list(fuzz_rules.requirements_of(f.check))}
                             for f in self.findings]}


# --- provisioning ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Fixtures:
    """Real objects and credentials of one fuzz run."""

    data_token: str
    admin_token: str
    ids: dict[str, str]  # path parameter name -> a real id of it


def provision(client: httpx.Client, admin_token: str, run_id: str) -> Fixtures:
    """The kit's two spaces (``control.setup``), a token of the first actor with every scope
    and a read/write grant on its collection, and one message, sealed blob and revision of it."""
    world = World(Session(client, admin_token), f"{run_id}-", Ledger())
    control.setup(world)
    space = world.space_ids["A"]
    consumer = f"fz{secrets.token_hex(3)}"
    world.admin_ok("POST", f"/admin/v1/spaces/{space}/consumers", {
        "request_id": world.rid(), "consumer_id": consumer, "actor_id": "a0", "view": "inbox"})
    token = control.issue(world, space, "a0", consumer, sorted(fuzz_rules_scopes()), None,
                          collections={"notes": frozenset({"read", "write"})})
    spare = control.issue(world, space, "a1", "c1", ["message.read"], None)  # to revoke
    if token is None or spare is None:
        raise RuntimeError("the target did not issue the fuzz tokens")

    def data(method: str, path: str, body: Any) -> dict[str, Any]:
        answer = world.session.call(method, path, bearer=token.secret, who="fuzz", body=body)
        if answer.status not in (200, 201) or not isinstance(answer.json, dict):
            raise RuntimeError(f"fuzz setup {method} {path}: {answer.status} {answer.json}")
        result: dict[str, Any] = answer.json
        return result

    sent_key = world.rid()
    sent = data("POST", "/v1/messages", {
        "request_id": sent_key, "thread": {"new": True}, "kind": "info",
        "subject": "fuzz", "body": {"text": "a message to read"}})
    content = b"fuzz"
    prepared = data("POST", "/v1/blobs", {
        "request_id": world.rid(), "size": len(content),
        "sha256": hashlib.sha256(content).hexdigest(), "content_type": "text/plain"})
    stored = world.session.put(prepared["upload_url"], content, bearer=token.secret, who="fuzz")
    if stored.status != 200:
        raise RuntimeError(f"fuzz setup: upload content answered {stored.status}")
    data("POST", f"/v1/uploads/{prepared['upload_id']}/commit", {"request_id": world.rid()})
    data("POST", "/v1/collections/notes/revisions", {
        "request_id": world.rid(), "expected_revision": 0, "mode": "snapshot",
        "items": [{"item_id": "readme", "path": "README.md",
                   "blob_id": prepared["blob_id"]}]})
    return Fixtures(token.secret, admin_token, {
        "space_id": space, "actor_id": "a1", "consumer_id": consumer,
        "collection_id": "notes", "message_id": sent["message_id"],
        "thread_id": sent["thread_id"], "blob_id": prepared["blob_id"],
        "upload_id": prepared["upload_id"], "token_id": spare.token_id, "revision": "1",
        "operation": "message.send", "request_id": sent_key,
        "feed_item_id": sent["feed_item_id"]})


def fuzz_rules_scopes() -> tuple[str, ...]:
    return ("message.send", "message.read", "space.observe", "receipt.write", "memory.write",
            "memory.read", "blob.write", "blob.reference", "event.subscribe")


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
    fixtures = provision(client, admin_token, report.run_id)
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
                finding.replay = str(write_replay(replay_dir, report, finding, fixtures))
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


def write_replay(directory: Path, report: FuzzReport, finding: Finding,
                 fixtures: Fixtures) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{report.run_id}-fuzz-{len(report.findings) + 1}-{finding.check}.json"
    path.write_text(json.dumps({
        "format": REPLAY_FORMAT, "property": "FUZZ", "check": finding.check,
        "kind": finding.kind, "requirements": list(fuzz_rules.requirements_of(finding.check)),
        "title": finding.title, "message": finding.message, "operation": finding.operation,
        "target": report.target, "profile": report.profile, "seed": report.seed,
        "ids": fixtures.ids, "request": finding.request, "status": finding.status,
        "answer": finding.answer}, indent=2, default=str) + "\n")
    return path


# --- replays -----------------------------------------------------------------------------------

def replay_fuzz(path: Path, client: httpx.Client, admin_token: str,
                out: Callable[[str], None] = print) -> str | None:
    """Rerun a fuzz finding's request against a target (fresh spaces, its ids in place of the
    recorded ones) and check the answer again; return what still fails, else None."""
    recorded = json.loads(path.read_text())
    fixtures = provision(client, admin_token, f"rp{secrets.token_hex(3)}")
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
    operation = contract()["paths"].get(template, {}).get(method.lower(), {})
    answers = operation.get("responses", {})
    if str(status) not in answers:
        return f"status {status} is not documented for {recorded['operation']}"
    check = recorded["check"]
    if check == "negative_data_rejection" and status < 400:
        exact = ByteExact(contract())
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
    document = contract()
    validator = jsonschema_rs.Draft202012Validator(
        {**schema, "components": document["components"]})
    errors = [error.message for error in validator.iter_errors(body)]
    return f"the answer does not fit its schema: {errors[0]}" if errors else None
