"""Contract checks of values the server writes or must refuse: the form of every time it writes,
relative paths at and past 1024 bytes, the details each error code names, and the ids it
generates."""

from __future__ import annotations

import hashlib
import math
import re
from typing import Any

import httpx

from waypost.properties.contract.common import (
    add_actor,
    admin,
    error,
    issue,
    json_of,
    listed,
    obj,
    send,
    server_time,
    text,
    times,
)
from waypost.properties.hostile.probes import Finding, HostileCheck, Probe

#: ``expires_at`` as a client may give it, and the server's form of it (WP-VAL-14).
GIVEN_TIMES = (("2030-01-01T02:00:00.5+02:00", "2030-01-01T00:00:00.500Z"),
               ("2030-01-01T00:00:00.123456Z", "2030-01-01T00:00:00.123Z"),
               ("2030-06-30T23:59:59-00:30", "2030-07-01T00:29:59.000Z"))


def server_times(probe: Probe) -> int:
    """Every time in the answers of a send, a message read, feed pages with messages,
    receipts and a revision, an ACK, a blob's prepare, seal and metadata, a publish, a
    submission lookup, token issues and the control plane's reads is RFC 3339 UTC with three
    fraction digits and ``Z`` (WP-VAL-13); a client's ``expires_at`` comes back in that form
    (WP-VAL-14)."""
    answers: list[tuple[str, httpx.Response]] = []

    def keep(what: str, answer: httpx.Response, status: int = 200) -> dict[str, Any]:
        answers.append((what, answer))
        return obj(answer, what, status)
    request_id = probe.rid("st")
    sent = keep("a send", probe.request("POST", "/v1/messages", who="alice", body={
        "request_id": request_id, "recipient_ids": ["bob"], "thread": {"new": True},
        "kind": "info", "subject": "times", "body": {"text": "t"}}), 201)
    keep("a message read", probe.request(
        "GET", f"/v1/messages/{text(sent, 'message_id', 'a send')}", who="bob"))
    keep("a submission lookup", probe.request(
        "GET", f"/v1/submissions/message.send/{request_id}", who="alice"))
    item = text(sent, "feed_item_id", "a send")
    keep("an ACK", probe.request("POST", "/v1/acks", who="bob", body={
        "request_id": probe.rid("st"), "items": [{"item_id": item, "stage": "received"}]}))
    data = b"times"
    prepared = keep("blob.prepare", probe.request("POST", "/v1/blobs", who="alice", body={
        "request_id": probe.rid("st"), "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(), "content_type": "text/plain"}), 201)
    blob_id = probe.upload("alice", text(prepared, "upload_id", "blob.prepare"), data)
    keep("blob metadata", probe.request("GET", f"/v1/blobs/{blob_id}", who="alice"))
    keep("a publish", probe.request("POST", "/v1/collections/notes/revisions", who="alice",
                                    body={"request_id": probe.rid("st"),
                                          "expected_revision": probe.head(), "mode": "delta",
                                          "items": [{"item_id": "t", "path": "t.md",
                                                     "blob_id": blob_id}]}), 201)
    keep("bob's feed", probe.request("GET", "/v1/feed", who="bob"))
    keep("alice's feed", probe.request("GET", "/v1/feed", who="alice"))
    for n, (given, wanted) in enumerate(GIVEN_TIMES):
        issued = issue(probe, "bob", name=f"t{n}", expires_at=given)
        if issued.get("expires_at") != wanted:
            raise Finding(f"a token issued with expires_at {given} shows "
                          f"{issued.get('expires_at')!r:.60}, not {wanted} (WP-VAL-13, "
                          "WP-VAL-14)")
    keep("the space", probe.request("GET", f"/admin/v1/spaces/{probe.space}", who="admin"))
    keep("the spaces", probe.request("GET", "/admin/v1/spaces", who="admin"))
    if probe.test_hooks:
        keep("the clock hook", probe.request("GET", "/_test/clock", who="admin"))
    seen, problems = 0, []
    for what, answer in answers:
        for where, value in times(json_of(answer, what)):
            seen += 1
            problem = server_time(value, f"{what}: {where}")
            if problem:
                problems.append(problem)
    if problems:
        raise Finding(f"{len(problems)} of {seen} times are not in the server's form "
                      f"(WP-VAL-13): {'; '.join(problems[:5])}")
    if seen < 10:
        raise Finding(f"only {seen} times in the answers of a send, reads, an ACK, blobs, a "
                      "publish and the control plane")
    return probe.requests


#: Paths at 1024 bytes (taken) and past it (refused), counted in UTF-8 bytes (WP-VAL-15).
LONG_PATHS = ("a" * 1024, "é" * 512, "d/" * 511 + "ab", "€" * 341 + "x")
TOO_LONG = ("a" * 1025, "é" * 512 + "a", "d/" * 512 + "a", "€" * 341 + "xx", "")


def long_paths(probe: Probe) -> int:
    """A relative path of 1 to 1024 bytes of UTF-8 is taken and read back as given; 1025
    bytes (also in 513 or 343 characters) and an empty path are ``400`` naming the item's
    path and publish nothing (WP-VAL-15)."""
    blob_id = probe.sealed_blob("alice", b"long path")
    head = probe.head()
    for n, path in enumerate(TOO_LONG):
        answer = probe.request("POST", "/v1/collections/notes/revisions", who="alice", body={
            "request_id": probe.rid("lp"), "expected_revision": head, "mode": "delta",
            "items": [{"item_id": f"long{n}", "path": path, "blob_id": blob_id}]})
        error(answer, f"a path of {len(path.encode())} bytes in {len(path)} characters "
                      "(WP-VAL-15)", {"INVALID_REQUEST": "items[0].path"})
    if probe.head() != head:
        raise Finding("a publish refused for its path moved the head (WP-VAL-15)")
    answer = probe.request("POST", "/v1/collections/notes/revisions", who="alice", body={
        "request_id": probe.rid("lp"), "expected_revision": head, "mode": "delta",
        "items": [{"item_id": f"ok{n}", "path": path, "blob_id": blob_id}
                  for n, path in enumerate(LONG_PATHS)]})
    revision = obj(answer, "a publish of paths of 1024 bytes (WP-VAL-15)", 201).get("revision")
    page = obj(probe.request("GET", f"/v1/collections/notes/revisions/{revision}/items",
                             who="alice", params={"limit": 10}), "the revision's items", 200)
    paths = {entry.get("path") for entry in listed(page, "items", "an item page")
             if isinstance(entry, dict)}
    if paths != set(LONG_PATHS):
        missing = [f"{len(p.encode())} bytes" for p in LONG_PATHS if p not in paths]
        raise Finding(f"the revision does not hold the 1024-byte paths as given: missing "
                      f"{missing} (WP-VAL-15)")
    return probe.requests


def _limited(answer: httpx.Response, what: str, limit: str, cap: int | None) -> None:
    found = error(answer, what, {"RESOURCE_LIMIT": None})
    details = found["details"]
    if details.get("limit") != limit or (cap is not None and details.get("max") != cap):
        raise Finding(f"{what}: details {details!r:.200}, expected limit {limit!r} and max "
                      f"{cap} (WP-ERR-3, WP-LIM-3)")


def error_details(probe: Probe) -> int:
    """The details each error code names (WP-ERR-3): ``field`` of ``INVALID_REQUEST`` (an
    unknown member, a query parameter, a path parameter), ``current_revision`` of
    ``REVISION_CONFLICT`` (the head), ``limit`` and ``max`` of ``RESOURCE_LIMIT``."""
    limits = probe.limits
    error(send(probe, "alice", surprise=1), "a send with an unknown member",
          {"INVALID_REQUEST": "surprise"})
    error(probe.request("GET", "/v1/feed", who="bob", params={"x-unknown": "1"}),
          "a feed read with an unknown query parameter", {"INVALID_REQUEST": "x-unknown"})
    error(probe.request("GET", "/v1/collections/notes/revisions/x1", who="alice"),
          "a revision that is not a number", {"INVALID_REQUEST": "revision"})
    blob_id = probe.sealed_blob("alice", b"details")
    head = probe.head()
    obj(probe.request("POST", "/v1/collections/notes/revisions", who="alice", body={
        "request_id": probe.rid("ed"), "expected_revision": head, "mode": "delta",
        "items": [{"item_id": "d", "path": "d.md", "blob_id": blob_id}]}), "a publish", 201)
    for expected in (head, head + 2):
        answer = probe.request("POST", "/v1/collections/notes/revisions", who="alice", body={
            "request_id": probe.rid("ed"), "expected_revision": expected, "mode": "delta",
            "items": [{"item_id": "e", "path": "e.md", "blob_id": blob_id}]})
        found = error(answer, f"a publish at revision {expected}, the head is {head + 1}",
                      {"REVISION_CONFLICT": None})
        current = found["details"].get("current_revision")
        if current != head + 1 or isinstance(current, bool):
            raise Finding(f"REVISION_CONFLICT names current_revision {current!r:.40}, the head "
                          f"is {head + 1} (WP-ERR-3, WP-MEM-15)")
    subject = "s" * (limits.get("subject_bytes", 256) - 1) + "€"
    _limited(send(probe, "alice", subject=subject), f"a subject of {len(subject)} characters "
             f"and {len(subject.encode())} bytes", "subject_bytes", limits.get("subject_bytes"))
    metadata = {"k": "m" * limits.get("metadata_bytes", 4096)}
    _limited(send(probe, "alice", metadata=metadata), "metadata over metadata_bytes",
             "metadata_bytes", limits.get("metadata_bytes"))
    if "upload_bytes" in limits:
        _limited(probe.request("POST", "/v1/blobs", who="alice", body={
            "request_id": probe.rid("ed"), "size": limits["upload_bytes"] + 1,
            "sha256": "0" * 64, "content_type": "text/plain"}), "a blob over upload_bytes",
            "upload_bytes", limits["upload_bytes"])
    return probe.requests


#: The prefix of each kind of id a server generates (WP-VAL-5).
PREFIXES = {"message_id": "msg_", "thread_id": "thr_", "feed_item_id": "fi_",
            "receipt_id": "rcp_", "blob_id": "blb_", "upload_id": "upl_",
            "token_id": "tok_"}
#: Alphabets an id's random part may be written in, smallest first, with their size.
ALPHABETS = (("0123456789", 10), ("0123456789abcdef", 16), ("0123456789ABCDEF", 16),
             ("abcdefghijklmnopqrstuvwxyz234567", 32), ("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 32),
             ("0123456789abcdefghijklmnopqrstuvwxyz", 36),
             ("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ", 36),
             ("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", 62))
SAMPLES = 8
OBJECT_ID = re.compile(r"[A-Za-z0-9_-]{1,96}")


def _bits(random_parts: list[str]) -> float:
    """An upper bound of the random bits of ids of one kind: the characters that differ
    between them, each worth the bits of the smallest alphabet holding every one of them."""
    width = min(len(part) for part in random_parts)
    varying = [i for i in range(width) if len({part[i] for part in random_parts}) > 1]
    used = {part[i] for part in random_parts for i in varying}
    size = next((n for alphabet, n in ALPHABETS if used <= set(alphabet)), 64)
    return len(varying) * math.log2(size)


def _ids_in(data: Any, found: dict[str, list[str]], depth: int = 0) -> None:
    """Every generated id in an answer, by the member that holds it."""
    if depth > 16:
        return
    if isinstance(data, dict):
        for key, value in data.items():
            if key in PREFIXES and isinstance(value, str):
                found[key].append(value)
            else:
                _ids_in(value, found, depth + 1)
    elif isinstance(data, list):
        for value in data[:1000]:
            _ids_in(value, found, depth + 1)


def _gather(probe: Probe) -> dict[str, list[str]]:
    """Eight sends, token issues and prepares, an ACK of the eight messages, and its
    receipts: the ids of each kind they show."""
    found: dict[str, list[str]] = {key: [] for key in PREFIXES}
    add_actor(probe, "carol")
    for n in range(SAMPLES):
        _ids_in(obj(send(probe, "alice"), "a send", 201), found)
        _ids_in(admin(probe, "POST", f"/admin/v1/spaces/{probe.space}/tokens", {
            "request_id": probe.rid("gi"), "actor_id": "carol", "consumer_id": "carol-inbox",
            "scopes": ["message.read"], "recipients": {"mode": "any"}, "collections": [],
            "blob_references": []}, status=201), found)
        _ids_in(obj(probe.request("POST", "/v1/blobs", who="bob", body={
            "request_id": probe.rid("gi"), "size": n, "sha256": hashlib.sha256(b"x" * n)
            .hexdigest(), "content_type": "text/plain"}), "blob.prepare", 201), found)
    items = [item.get("item_id") for item in probe.inbox("bob") if isinstance(item, dict)]
    batch = max(1, probe.limits.get("ack_items", SAMPLES))
    for start in range(0, min(len(items), SAMPLES), batch):
        obj(probe.request("POST", "/v1/acks", who="bob", body={
            "request_id": probe.rid("gi"), "items": [
                {"item_id": item, "stage": "received"}
                for item in items[start:min(start + batch, SAMPLES)]]}), "an ACK", 200)
    _ids_in(probe.inbox("alice"), found)  # the receipts
    return found


def _id_problems(key: str, ids: set[str]) -> str | None:
    prefix = PREFIXES[key]
    if len(ids) < SAMPLES:
        return f"{len(ids)} distinct {key}s where {SAMPLES} objects were made"
    unprefixed = sorted(i for i in ids if not i.startswith(prefix))
    if unprefixed:
        return f"{key} {unprefixed[0]!r:.40} lacks the prefix {prefix!r}"
    bad = sorted(i for i in ids if not OBJECT_ID.fullmatch(i))
    if bad:
        return f"{key} {bad[0]!r:.40} is not an object id (WP-VAL-4)"
    bits = _bits([i[len(prefix):] for i in sorted(ids)])
    if bits < 96:
        return f"{key}s differ in only {bits:.0f} bits' worth of characters, e.g. " \
               f"{sorted(ids)[:2]}"
    return None


def generated_ids(probe: Probe) -> int:
    """The ids a server generates (messages, threads, feed items, receipts, uploads, blobs,
    tokens): valid object ids, never repeated, with the type prefix the protocol names (a
    SHOULD), and, over eight of each kind, at least 96 bits' worth of characters that differ
    (WP-VAL-5). Whether those bits are random is not observable: a counter or a clock in the
    id, or a short one, is."""
    found = {key: set(ids) for key, ids in _gather(probe).items()}
    problems = [problem for key, ids in found.items()
                if (problem := _id_problems(key, ids)) is not None]
    every = [i for ids in found.values() for i in ids]
    if len(every) != len(set(every)):
        problems.append("one id names objects of two kinds")
    if problems:
        raise Finding(f"generated ids (WP-VAL-5): {'; '.join(problems)}")
    return probe.requests


CHECKS = (
    HostileCheck("server_times", "every time in the answers of sends, reads, ACKs, blobs, "
                 "publishes, lookups, token issues and control-plane reads is RFC 3339 UTC with "
                 "three fraction digits; expires_at given with an offset comes back in that "
                 "form", ("WP-VAL-13", "WP-VAL-14", "WP-HTTP-15"), server_times),
    HostileCheck("long_paths", "relative paths of exactly 1024 bytes (ASCII, 2- and 3-byte "
                 "characters) taken and read back; 1025 bytes and empty refused naming "
                 "items[0].path", ("WP-VAL-15", "WP-VAL-2", "WP-ERR-1"), long_paths),
    HostileCheck("error_details", "INVALID_REQUEST names the field (a member, a query "
                 "parameter, a path parameter); REVISION_CONFLICT names the head; "
                 "RESOURCE_LIMIT names the limit and its max (subject, metadata, upload)",
                 ("WP-ERR-3", "WP-ERR-1", "WP-ERR-2", "WP-LIM-3", "WP-VAL-1", "WP-HTTP-4"),
                 error_details),
    HostileCheck("generated_ids", "eight of each generated id (message, thread, feed item, "
                 "receipt, upload, blob, token): object ids, never repeated, type-prefixed, "
                 "at least 96 bits' worth of characters that differ",
                 ("WP-VAL-5", "WP-VAL-4"), generated_ids),
)
