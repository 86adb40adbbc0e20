"""Contract checks of authority: tokens that expire (at issue, and at the instant the server's
clock reaches ``expires_at``), test hooks that need the admin token, and requests wrong in
several ways at once."""

from __future__ import annotations

from typing import Any

from waypost.properties.contract.common import (
    admin,
    dead_answer,
    error,
    form,
    issue,
    json_of,
    messages_of,
    ms_of,
    obj,
    replayed,
    send,
    server_time,
    shown,
    text,
    wrong_token,
)
from waypost.properties.hostile.probes import Finding, HostileCheck, Probe


def _dead(probe: Probe, who: str, what: str, dead: tuple[int, Any]) -> None:
    """``who``'s token gets exactly the answer of a token never issued (WP-AUTH-2)."""
    answer = probe.request("GET", "/v1/feed", who=who)
    error(answer, what, {"UNAUTHENTICATED": None})
    if (answer.status_code, json_of(answer, what)) != dead:
        raise Finding(f"{what}: {shown(answer)}, a token never issued gets {dead!r:.200}: one "
                      "and the same answer for every dead credential (WP-AUTH-2)")


def _clock(probe: Probe, advance_ms: int | None = None) -> int:
    """The server clock (``/_test/clock``, WP-HOOK-3), moved forward first if told."""
    answer = probe.request("POST" if advance_ms else "GET", "/_test/clock", who="admin",
                           body={"advance_ms": advance_ms} if advance_ms else None)
    now = obj(answer, "the clock hook", 200).get("now")
    problem = server_time(now, "the clock hook's now")
    if problem or not isinstance(now, str):
        raise Finding(f"{problem} (WP-HOOK-3, WP-VAL-13)")
    return ms_of(now)


def token_expiry(probe: Probe) -> int:
    """A token with ``expires_at`` 60 s ahead on the server's clock works 30 s later and is
    dead once the clock hook moves the clock to ``expires_at``: reads and writes answer the
    one 401 of every dead credential, and a write publishes nothing (WP-AUTH-3)."""
    dead = dead_answer(probe)
    start = _clock(probe)
    expires = form(start + 60_000)
    issued = issue(probe, "bob", name="brief", expires_at=expires)
    if issued.get("expires_at") != expires:
        raise Finding(f"a token issued with expires_at {expires} shows "
                      f"{issued.get('expires_at')!r:.60} (WP-VAL-13, WP-VAL-14)")
    obj(probe.request("GET", "/v1/feed", who="brief"), "a token 60 s before its expiry", 200)
    _clock(probe, 30_000)
    obj(probe.request("GET", "/v1/feed", who="brief"), "a token 30 s before its expiry", 200)
    now = _clock(probe, 30_000)
    if now < ms_of(expires):
        raise Finding(f"the clock hook moved the clock by 60 s from {form(start)} to "
                      f"{form(now)} (WP-HOOK-3)")
    _dead(probe, "brief", f"a token at its expires_at ({expires}; the server's clock reads "
                          f"{form(now)}) (WP-AUTH-3)", dead)
    answer = send(probe, "brief", ["alice"])
    error(answer, "a send with an expired token (WP-AUTH-3)", {"UNAUTHENTICATED": None})
    if messages_of(probe, "alice"):
        raise Finding("a send with an expired token published a message (WP-AUTH-3)")
    return probe.requests


#: ``expires_at`` in the past, as given and in the server's form (WP-VAL-14).
PAST = (("2001-02-03T04:05:06.789Z", "2001-02-03T04:05:06.789Z"),
        ("2001-02-03T06:05:06.789+02:00", "2001-02-03T04:05:06.789Z"),
        ("1970-01-01T00:00:00Z", "1970-01-01T00:00:00.000Z"))


def token_dead_at_issue(probe: Probe) -> int:
    """A token issued with ``expires_at`` in the past is dead from the start, with the one
    answer of every dead credential; one that expires in 2999 works (WP-AUTH-3)."""
    dead = dead_answer(probe)
    for n, (given, shown_as) in enumerate(PAST):
        issued = issue(probe, "bob", name=f"past{n}", expires_at=given)
        if issued.get("expires_at") != shown_as:
            raise Finding(f"a token issued with expires_at {given} shows "
                          f"{issued.get('expires_at')!r:.60}, not {shown_as} (WP-VAL-14)")
        _dead(probe, f"past{n}", f"a token issued with expires_at {given} (WP-AUTH-3)", dead)
        error(send(probe, f"past{n}", ["alice"]), f"a send with a token that expired at "
              f"{given} (WP-AUTH-3)", {"UNAUTHENTICATED": None})
    issue(probe, "bob", name="future", expires_at="2999-12-31T23:59:59.999Z")
    obj(probe.request("GET", "/v1/feed", who="future"), "a token that expires in 2999", 200)
    if messages_of(probe, "alice"):
        raise Finding("a send with a token dead at issue published a message (WP-AUTH-3)")
    return probe.requests


HOOKS: tuple[tuple[str, str, dict[str, Any] | None], ...] = (
    ("GET", "/_test/clock", None), ("POST", "/_test/clock", {"advance_ms": 3_600_000}),
    ("GET", "/_test/faults", None),
    ("POST", "/_test/faults", {"point": "reserve.after", "action": "unavailable", "times": 5}),
    ("DELETE", "/_test/faults", None), ("POST", "/_test/restart", {}))
ARMED = {"point": "commit.after", "action": "unavailable", "times": 1}


def _armed(probe: Probe) -> list[Any]:
    armed = obj(probe.request("GET", "/_test/faults", who="admin"), "GET /_test/faults",
                200).get("armed")
    if not isinstance(armed, list):
        raise Finding(f"GET /_test/faults: armed is {armed!r:.80}, not a list (WP-HOOK-4)")
    return armed


def hooks_need_admin(probe: Probe) -> int:
    """Every hook refuses a request without a credential, with a data token and with a wrong
    token, and does nothing: the clock does not move, nothing is armed or disarmed, no
    restart drops the armed fault (WP-HOOK-2)."""
    before = _clock(probe)
    obj(probe.request("POST", "/_test/faults", who="admin", body=ARMED), "arming a fault", 200)
    try:
        wrong = {"Authorization": f"Bearer {wrong_token()}"}
        for label, who, headers in (("no credential", None, None),
                                    ("bob's data token", "bob", None),
                                    ("a wrong token", None, wrong)):
            for method, path, body in HOOKS:
                answer = probe.request(method, path, who=who, body=body, headers=headers)
                error(answer, f"{method} {path} with {label} (WP-HOOK-2)",
                      {"UNAUTHENTICATED": None, "FORBIDDEN": None, "NOT_FOUND": None})
        armed = _armed(probe)
        if [(e.get("point"), e.get("action")) for e in armed if isinstance(e, dict)] != \
                [("commit.after", "unavailable")]:
            raise Finding(f"after hook calls without the admin token the armed faults are "
                          f"{armed!r:.200}: they armed, disarmed or restarted (WP-HOOK-2)")
    finally:
        probe.request("DELETE", "/_test/faults", who="admin")
    after = _clock(probe)
    if after - before >= 1_800_000:
        raise Finding(f"the clock moved from {form(before)} to {form(after)} while only "
                      "requests without the admin token asked it to (WP-HOOK-2)")
    return probe.requests


def _message(probe: Probe, **changes: Any) -> dict[str, Any]:
    return {"request_id": probe.rid("eo"), "recipient_ids": ["bob"], "thread": {"new": True},
            "kind": "info", "subject": "order", "body": {"text": "t"}, **changes}


def error_order(probe: Probe) -> int:
    """Writes wrong in two or three ways at once get one of the applicable errors and publish
    nothing; a replay of a committed send with a wrong credential is 401, never the replay
    (WP-AUTH-12: credential first)."""
    narrow = admin(probe, "POST", f"/admin/v1/spaces/{probe.space}/tokens", {
        "request_id": probe.rid("tk"), "actor_id": "alice", "consumer_id": "alice-inbox",
        "scopes": ["message.read"], "recipients": {"mode": "any"}, "blob_references": [],
        "collections": [{"collection_id": "notes", "actions": ["read", "write"]}]},
        status=201, what="issuing alice a token without message.send and memory.write")
    probe.tokens["narrow"] = text(narrow, "token", "a narrow token")
    bad = {"Authorization": f"Bearer {wrong_token()}"}
    kept = _message(probe)
    obj(probe.request("POST", "/v1/messages", who="alice", body=kept), "a send", 201)
    blob_id = probe.sealed_blob("alice", b"order")
    head = probe.head()
    cases: list[tuple[str, str, str | None, dict[str, str] | None, dict[str, Any],
                      dict[str, str | None]]] = [
        ("a wrong token and an unknown member", "/v1/messages", None, bad,
         _message(probe, surprise=1), {"UNAUTHENTICATED": None, "INVALID_REQUEST": None}),
        ("no message.send and an empty subject", "/v1/messages", "narrow", None,
         _message(probe, subject=""), {"FORBIDDEN": None, "INVALID_REQUEST": None}),
        ("no message.send and an unknown recipient", "/v1/messages", "narrow", None,
         _message(probe, recipient_ids=["nobody"]), {"FORBIDDEN": None, "NOT_FOUND": None}),
        ("an empty subject and an unknown recipient", "/v1/messages", "alice", None,
         _message(probe, subject="", recipient_ids=["nobody"]),
         {"INVALID_REQUEST": None, "NOT_FOUND": None}),
        ("a subject over subject_bytes and an unknown recipient", "/v1/messages", "alice",
         None, _message(probe, subject="s" * 300, recipient_ids=["nobody"]),
         {"RESOURCE_LIMIT": None, "NOT_FOUND": None}),
        ("a used request_id with another body and an unknown recipient", "/v1/messages",
         "alice", None, {**kept, "recipient_ids": ["nobody"]},
         {"IDEMPOTENCY_CONFLICT": "request_id", "NOT_FOUND": None}),
        ("a wrong token and a used request_id with another body", "/v1/messages", None, bad,
         {**kept, "subject": "other"}, {"UNAUTHENTICATED": None}),
        ("a stale expected_revision and an entry of a blob that does not exist",
         "/v1/collections/notes/revisions", "alice", None,
         {"request_id": probe.rid("eo"), "expected_revision": head + 5, "mode": "delta",
          "items": [{"item_id": "i", "path": "a", "blob_id": "blb_no0such0blob0here"}]},
         {"REVISION_CONFLICT": None, "REFERENCE_INVALID": None}),
        ("no memory.write and a path with an empty segment", "/v1/collections/notes/revisions",
         "narrow", None,
         {"request_id": probe.rid("eo"), "expected_revision": head, "mode": "delta",
          "items": [{"item_id": "i", "path": "a//b", "blob_id": blob_id}]},
         {"FORBIDDEN": None, "INVALID_REQUEST": None}),
        ("an unknown stage and an item that does not exist", "/v1/acks", "bob", None,
         {"request_id": probe.rid("eo"), "items": [{"item_id": "fi_no0such0item", "stage":
                                                     "seen"}]},
         {"INVALID_REQUEST": None, "NOT_FOUND": None}),
    ]
    for what, path, who, headers, body, codes in cases:
        answer = probe.request("POST", path, who=who, body=body, headers=headers)
        error(answer, f"{what} (WP-AUTH-12)", codes)
    replay = probe.request("POST", "/v1/messages", body=kept, headers=bad)
    if replay.status_code != 401 or replayed(replay):
        raise Finding(f"a replay of a committed send with a wrong token: {shown(replay)}"
                      f"{' (replayed)' if replayed(replay) else ''}; the credential comes "
                      "first (WP-AUTH-12, WP-AUTH-2)")
    error(replay, "a replay with a wrong token", {"UNAUTHENTICATED": None})
    if len(messages_of(probe, "bob")) != 1 or probe.head() != head:
        raise Finding("a request wrong in several ways published something (WP-AUTH-12)")
    return probe.requests


CHECKS = (
    HostileCheck("token_expiry", "a token with expires_at 60 s ahead works 30 s later and is "
                 "dead once the clock hook reaches expires_at, for reads and writes",
                 ("WP-AUTH-3", "WP-AUTH-2", "WP-AUTH-10", "WP-HOOK-3", "WP-ERR-1"),
                 token_expiry, needs="test hooks"),
    HostileCheck("token_dead_at_issue", "tokens issued with expires_at in the past (also with "
                 "an offset) are dead from the start, with the one 401; one expiring in 2999 "
                 "works", ("WP-AUTH-3", "WP-AUTH-2", "WP-VAL-14", "WP-ERR-1"),
                 token_dead_at_issue),
    HostileCheck("hooks_need_admin", "every test hook without a credential, with a data token "
                 "and with a wrong token: refused, and the clock, the armed faults and the "
                 "process stay as they were", ("WP-HOOK-2", "WP-ERR-1"), hooks_need_admin,
                 needs="test hooks"),
    HostileCheck("error_order", "writes wrong in two ways at once (credential, body, limit, "
                 "scope, key, resource) get one of the applicable errors and publish nothing; "
                 "a replay with a wrong token is 401", ("WP-AUTH-12", "WP-AUTH-2", "WP-ERR-1"),
                 error_order),
)
