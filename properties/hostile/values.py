"""Hostile values and bodies: content types at ``blob.prepare`` (and downloads that must keep
working), memory path aliases, malformed JSON bodies, numbers out of range, ids with traversal
and SQL metacharacters."""

from __future__ import annotations

import hashlib
import json

from waypost.properties.hostile.probes import (
    Finding,
    HostileCheck,
    Probe,
    expect_status,
    invalid,
    refused,
)

#: Values of ``content_type`` the grammar of protocol.md §3.6 refuses; each one broke a
#: download of the reference once (a header with CR/LF or NUL drops the connection).
HOSTILE_CONTENT_TYPES = ("text/plain\r\nX-Evil: 1", "text/plain\n", "text/plain\r",
                         "text/plain\x00", "text/plain\t", " ", "", "text/plain; name=✓",
                         "text/plaín", "text/plain; charset", "text", " text/plain")
#: Media types the grammar allows, stored and sent back as given.
ALLOWED_CONTENT_TYPES = ('text/plain; charset="utf-8"', "TEXT/Plain", "application/x.y+z")


def content_types(probe: Probe) -> int:
    """Refused at prepare, naming ``content_type``; an accepted one stays downloadable."""
    data = b"hostile content type"
    digest = hashlib.sha256(data).hexdigest()
    findings: list[str] = []
    for value in HOSTILE_CONTENT_TYPES:
        answer = probe.request("POST", "/v1/blobs", who="bob", body={
            "request_id": probe.rid("ct"), "size": len(data), "sha256": digest,
            "content_type": value})
        try:
            invalid(answer, f"blob.prepare with content_type {value!r}", "content_type")
        except Finding as finding:
            if answer.status_code == 201:  # stored: the blob must at least be downloadable
                finding = Finding(f"{finding}; {_download(probe, answer.json(), data)}")
            findings.append(str(finding))
    for value in ALLOWED_CONTENT_TYPES:
        blob_id = probe.sealed_blob("bob", data, value)
        content = probe.request("GET", f"/v1/blobs/{blob_id}/content", who="bob")
        expect_status(content, 200, f"downloading a blob of content type {value!r}")
        if content.content != data or content.headers.get("content-type") != value:
            findings.append(f"a blob of content type {value!r} came back as "
                            f"{content.headers.get('content-type')!r} with "
                            f"{len(content.content)} bytes (WP-VAL-21)")
    if findings:
        raise Finding("; ".join(findings))
    return len(HOSTILE_CONTENT_TYPES) + 3 * len(ALLOWED_CONTENT_TYPES)


def _download(probe: Probe, prepared: dict[str, object], data: bytes) -> str:
    """What became of a blob stored with a hostile content type."""
    try:
        blob_id = probe.upload("bob", str(prepared["upload_id"]), data)
        content = probe.request("GET", f"/v1/blobs/{blob_id}/content", who="bob")
    except Finding as finding:
        return f"and the blob cannot be downloaded: {finding}"
    if content.status_code != 200 or content.content != data:
        return f"and its download answers {content.status_code} {content.text[:120]!r}"
    return "its download still works"


ALIASES = ("alias/x", "alias/./x", "./alias/x/.")


def path_aliases(probe: Probe) -> int:
    """One file, one spelling: the aliases of ``alias/x`` are refused in one publish and
    after it, and nothing is published by the refused ones."""
    blob_id = probe.sealed_blob("alice", b"aliased")
    head = probe.head()
    together = probe.request("POST", "/v1/collections/notes/revisions", who="alice", body={
        "request_id": probe.rid("pa"), "expected_revision": head, "mode": "delta",
        "items": [{"item_id": f"al{n}", "path": path, "blob_id": blob_id}
                  for n, path in enumerate(ALIASES)]})
    invalid(together, f"one publish of the paths {list(ALIASES)}", "items[1].path")
    if probe.head() != head:
        raise Finding("a refused publish moved the head (WP-MEM-8)")
    first = probe.request("POST", "/v1/collections/notes/revisions", who="alice", body={
        "request_id": probe.rid("pa"), "expected_revision": head, "mode": "delta",
        "items": [{"item_id": "al0", "path": ALIASES[0], "blob_id": blob_id}]})
    expect_status(first, 201, f"publishing the path {ALIASES[0]!r}")
    for n, alias in enumerate(ALIASES[1:], start=1):
        later = probe.request("POST", "/v1/collections/notes/revisions", who="alice", body={
            "request_id": probe.rid("pa"), "expected_revision": head + 1, "mode": "delta",
            "items": [{"item_id": f"al{n}", "path": alias, "blob_id": blob_id}]})
        invalid(later, f"publishing {alias!r} beside {ALIASES[0]!r}", "items[0].path")
    if probe.head() != head + 1:
        raise Finding("a refused alias moved the head (WP-MEM-8)")
    return 2 + len(ALIASES)


def _body(probe: Probe, content: bytes, what: str, codes: dict[str, str | None]) -> None:
    answer = probe.request("POST", "/v1/messages", who="alice", content=content,
                           headers={"Content-Type": "application/json"})
    refused(answer, what, codes)


def json_bodies(probe: Probe) -> int:
    """Bodies that are not one UTF-8 JSON object within ``request_bytes``: oversized, deeply
    nested, invalid UTF-8, lone surrogates, NaN, repeated members, not an object."""
    cap = probe.limits.get("request_bytes", 1 << 20)
    start = b'{"request_id": "' + probe.rid("jb").encode() + b'", "subject": "'
    oversized = start + b"a" * (cap + 1 - len(start)) + b'"}'
    answer = probe.request("POST", "/v1/messages", who="alice", content=oversized,
                           headers={"Content-Type": "application/json"})
    error = refused(answer, f"a body of {len(oversized)} bytes (request_bytes {cap})",
                    {"RESOURCE_LIMIT": None})
    if (error.get("details") or {}).get("limit") != "request_bytes":
        raise Finding(f"a body over request_bytes must name details.limit 'request_bytes' "
                      f"(WP-LIM-4), got {error}")
    depth = min(50_000, cap // 3)
    nested = (b'{"request_id": "' + probe.rid("jb").encode() + b'", "metadata": {"a": '
              + b"[" * depth + b"]" * depth + b"}}")
    _body(probe, nested, f"JSON nested {depth} deep",
          {"INVALID_REQUEST": None, "RESOURCE_LIMIT": None})
    _body(probe, b"[" * depth + b"]" * depth, f"a bare array nested {depth} deep",
          {"INVALID_REQUEST": "body"})
    malformed = {"invalid UTF-8": b'{"request_id": "a\xff\xfe"}',
                 "UTF-16": '{"request_id": "a"}'.encode("utf-16"),
                 "a lone surrogate": b'{"request_id": "\\ud800"}',
                 "NaN": b'{"request_id": "x", "size": NaN}',
                 "Infinity": b'{"request_id": "x", "size": -Infinity}',
                 "a repeated member": b'{"request_id": "a", "request_id": "b"}',
                 "an array": b"[]", "a string": b'"x"', "null": b"null",
                 "truncated JSON": b'{"request_id": ', "an empty body": b""}
    for what, content in malformed.items():
        _body(probe, content, f"a body of {what}", {"INVALID_REQUEST": "body"})
    if any(item["type"] == "message" for item in probe.inbox("bob")):
        raise Finding("a refused body sent a message (WP-MEM-8, §3: validation before any "
                      "side effect)")
    return 3 + len(malformed)


BAD_REVISIONS: tuple[object, ...] = (2**53, -1, 1.5, 1.0, "1", True, None)
#: Numbers beyond the range of a double: refused as a body the server cannot read (``body``)
#: or judged as the member's value (WP-VAL-19), never taken.
HUGE = (b"1e400", b"-1e400", b"1" + b"0" * 400)


def _huge(probe: Probe, path: str, who: str, body: bytes, what: str,
          codes: dict[str, tuple[str, ...]]) -> None:
    """``body`` holding a number a double cannot hold: one of ``codes``, each naming one of
    its fields (WP-VAL-19, WP-ERR-8)."""
    answer = probe.request("POST", path, who=who, content=body,
                           headers={"Content-Type": "application/json"})
    found = refused(answer, what, dict.fromkeys(codes))
    if found["details"].get("field") not in codes[found["code"]]:
        raise Finding(f"{what}: {found['code']} names details.field "
                      f"{found['details'].get('field')!r:.60}, not "
                      f"{' or '.join(map(repr, codes[found['code']]))} (WP-VAL-19, WP-ERR-8)")


def _huge_numbers(probe: Probe) -> int:
    """``1e400``, ``-1e400`` and 400 digits as a revision, a size and in metadata."""
    for number in HUGE:
        shown = number[:12].decode() + ("…" if len(number) > 12 else "")
        _huge(probe, "/v1/collections/notes/revisions", "alice",
              b'{"request_id": "' + probe.rid("nr").encode() + b'", "expected_revision": '
              + number + b', "mode": "delta", "items": []}', f"expected_revision {shown}",
              {"INVALID_REQUEST": ("expected_revision", "body")})
        size = {"INVALID_REQUEST": ("size", "body"), "RESOURCE_LIMIT": ("size",)}
        _huge(probe, "/v1/blobs", "bob", b'{"request_id": "' + probe.rid("nr").encode()
              + b'", "size": ' + number + b', "sha256": "' + b"0" * 64
              + b'", "content_type": "text/plain"}', f"blob.prepare with size {shown}",
              size if number.isdigit() else {"INVALID_REQUEST": ("size", "body")})
        _huge(probe, "/v1/messages", "alice", b'{"request_id": "' + probe.rid("nr").encode()
              + b'", "thread": {"new": true}, "kind": "info", "subject": "s", "body": '
              b'{"text": "t"}, "metadata": {"n": [' + number + b"]}}",
              f"metadata holding {shown}", {"INVALID_REQUEST": ("metadata", "body")})
    return 3 * len(HUGE)


def numbers(probe: Probe) -> int:
    """Revisions, sizes, limits and waits out of range or of the wrong type; numbers beyond
    the range of a double (WP-VAL-19)."""
    sent = _huge_numbers(probe)
    for value in BAD_REVISIONS:
        content = json.dumps({"request_id": probe.rid("nr"), "expected_revision": value,
                              "mode": "delta", "items": []}).encode()
        answer = probe.request("POST", "/v1/collections/notes/revisions", who="alice",
                               content=content, headers={"Content-Type": "application/json"})
        invalid(answer, f"expected_revision {str(value)[:40]}", "expected_revision")
        sent += 1
    for text in ("-0.0", "9007199254740991.5"):
        content = (b'{"request_id": "' + probe.rid("nr").encode()
                   + b'", "expected_revision": ' + text.encode()
                   + b', "mode": "delta", "items": []}')
        answer = probe.request("POST", "/v1/collections/notes/revisions", who="alice",
                               content=content, headers={"Content-Type": "application/json"})
        invalid(answer, f"expected_revision {text}", "expected_revision")
        sent += 1
    for revision in ("9007199254740992", "9" * 40, "-1", "abc", "01", "1.0"):
        answer = probe.request("GET", f"/v1/collections/notes/revisions/{revision}", who="bob")
        invalid(answer, f"revision {revision!r} in the path", "revision")
        sent += 1
    for name, value in (("limit", 0), ("limit", 10**30), ("limit", -1), ("wait", -1),
                        ("wait", 10**30), ("limit", "1e3")):
        answer = probe.request("GET", "/v1/feed", who="bob", params={name: str(value)})
        invalid(answer, f"feed {name}={value}", name)
        sent += 1
    sizes: tuple[tuple[object, dict[str, str | None]], ...] = (
        (-1, {"INVALID_REQUEST": "size"}),
        (2**64, {"INVALID_REQUEST": "size", "RESOURCE_LIMIT": "size"}),
        (1.5, {"INVALID_REQUEST": "size"}), ("1", {"INVALID_REQUEST": "size"}))
    for size, codes in sizes:
        answer = probe.request("POST", "/v1/blobs", who="bob", body={
            "request_id": probe.rid("ns"), "size": size, "sha256": "0" * 64,
            "content_type": "text/plain"})
        refused(answer, f"blob.prepare with size {size!r}", codes)
        sent += 1
    return sent


#: Ids a client could put in a path to reach a file or break a query.
HOSTILE_IDS = ("..%2F..%2Fetc%2Fpasswd", "%2E%2E", "x'%20OR%20'1'%3D'1",
               "1%3BDROP%20TABLE%20messages", "a%00b", "%25", "a" * 97)
ID_ROUTES = (("GET", "/v1/messages/{}", "message_id"), ("GET", "/v1/blobs/{}", "blob_id"),
             ("GET", "/v1/blobs/{}/content", "blob_id"),
             ("PUT", "/v1/uploads/{}/content", "upload_id"),
             ("POST", "/v1/uploads/{}/commit", "upload_id"),
             ("GET", "/v1/collections/{}", "collection_id"),
             ("GET", "/v1/collections/{}/revisions/0", "collection_id"),
             ("GET", "/v1/submissions/message.send/{}", "request_id"))


def hostile_ids(probe: Probe) -> int:
    """Ids with traversal and SQL metacharacters in paths and bodies: 400 naming the id or
    404, never a 5xx, and the data stays as it was."""
    sent = 0
    for method, route, name in ID_ROUTES:
        for value in HOSTILE_IDS:
            body = {"request_id": probe.rid("id")} if method == "POST" else None
            content = b"" if method == "PUT" else None
            answer = probe.request(method, route.format(value), who="bob", body=body,
                                   content=content)
            refused(answer, f"{method} {route.format(value)}",
                    {"INVALID_REQUEST": name, "NOT_FOUND": None})
            sent += 1
    base = {"thread": {"new": True}, "kind": "info", "subject": "s", "body": {"text": "t"}}
    for value in ("../../x", "a' OR '1'='1", "a;DROP TABLE messages", "a/b", ""):
        answer = probe.request("POST", "/v1/messages", who="alice",
                               body={**base, "request_id": value})
        invalid(answer, f"request_id {value!r}", "request_id")
        answer = probe.request("POST", "/v1/messages", who="alice", body={
            **base, "request_id": probe.rid("id"), "recipient_ids": [value or "bob' --"]})
        invalid(answer, f"recipient id {value!r}", "recipient_ids[0]")
        sent += 2
    if any(item["type"] == "message" for item in probe.inbox("bob")):
        raise Finding("a refused request with a hostile id left a message behind")
    return sent


CHECKS = (
    HostileCheck("content_type", "hostile content_type values at blob.prepare (CR/LF, NUL, "
                 "tab, blank, non-ASCII, a parameter without value) are refused naming "
                 "content_type; valid ones are stored as given and stay downloadable",
                 ("WP-VAL-2", "WP-VAL-20", "WP-VAL-21", "WP-UPL-9", "WP-ERR-1", "WP-ERR-5"),
                 content_types),
    HostileCheck("path_aliases", "alias/x, alias/./x and ./alias/x/. in one publish and "
                 "after one another: only alias/x is accepted; refusals name the item's path",
                 ("WP-VAL-2", "WP-VAL-16", "WP-MEM-5", "WP-MEM-8", "WP-ERR-1"), path_aliases),
    HostileCheck("json_bodies", "bodies over request_bytes, nested 50,000 deep, invalid "
                 "UTF-8, UTF-16, lone surrogates, NaN, repeated members, not an object",
                 ("WP-VAL-19", "WP-LIM-3", "WP-LIM-4", "WP-ERR-1", "WP-ERR-5"), json_bodies),
    HostileCheck("numbers", "revisions, sizes, page limits and waits out of range or of the "
                 "wrong type, in bodies, paths and queries; 1e400 and 400 digits as a revision, "
                 "a size and in metadata: the member's answer or a body refused",
                 ("WP-VAL-3", "WP-VAL-7", "WP-VAL-11", "WP-VAL-19", "WP-FEED-6", "WP-FEED-7",
                  "WP-UPL-1", "WP-ERR-1", "WP-ERR-5", "WP-ERR-8"), numbers),
    HostileCheck("hostile_ids", "ids with path traversal, NUL and SQL metacharacters in "
                 "paths and bodies: 400 naming the id or 404",
                 ("WP-VAL-3", "WP-VAL-4", "WP-VAL-6", "WP-HTTP-6", "WP-ERR-1", "WP-ERR-5"),
                 hostile_ids),
)
