"""Generate ``docs/examples.md``: a worked JSON example of every route of protocol.md §6.2 and
§13 and of every error code of §7, from a real run of the reference (run from the repository
root: ``python tools/worked_examples.py``; ``--check`` exits 1 when the file is stale).
``tests/project/test_worked_examples.py`` fails when it is stale.

The reference serves in process (a Starlette test client, test hooks on, no background sweep)
on a temporary directory; one scripted scenario drives it through the HTTP API. Values that
change from run to run become placeholders (``tools/worked_examples_render.py``)."""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import rfc8785
import uvicorn
from starlette.testclient import TestClient

try:
    from tools import worked_examples_render as text
except ModuleNotFoundError:  # run as a script: tools/ is on the path, the repository is not
    import worked_examples_render as text

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "examples.md"
PROTOCOL = ROOT / "docs" / "protocol.md"
ADMIN = "admin-token-of-the-examples"
ALL_SCOPES = ["message.send", "message.read", "space.observe", "receipt.write", "memory.write",
              "memory.read", "blob.write", "blob.reference", "event.subscribe"]
FAR = "2099-12-31T23:59:59Z"  # a token's expiry, as the client gives it
MILK = b"# Milk\n\nremember the milk\n"
BREAD = b"# Bread\n\nwholemeal, sliced\n"

#: Codes of protocol.md §7 the reference never answers, and why.
NOT_SHOWN = {
    "SUBMISSION_PENDING": "the reference never answers it: two attempts of one key at once "
    "resolve through its guarded commit, one commits and the other replays the same result "
    "(docs/spec.md, \"Faults and test hooks\"; WP-IDEM-12 allows either). A server that "
    "answers it sends `409` with a `Retry-After` header, and the client retries the same "
    "request later",
}


class Run:
    """The scenario's client: each call is recorded as an example."""

    def __init__(self, client: TestClient) -> None:
        self.client = client
        self.tokens: dict[str, str] = {}  # who → secret
        self.token_ids: dict[str, str] = {}
        self.examples: list[text.Example] = []
        self.stable: set[str] = {hashlib.sha256(data).hexdigest() for data in (MILK, BREAD)}
        self.changed: dict[str, str] = {}
        self.section = ""
        self._last_ms = 0

    def _next_millisecond(self) -> None:
        """Server times and the clock part of ids have millisecond resolution: two requests in
        one millisecond would share a time (or order two ids by their random part), so one run
        could number placeholders differently from the next. Each request starts in a later
        millisecond than the previous one ended in (at most a millisecond of waiting)."""
        while time.time_ns() // 1_000_000 <= self._last_ms:
            pass

    def call(self, who: str, method: str, path: str, route: str, ids: str, title: str, *,
             body: Any = None, raw: bytes | None = None, expect: int = 200,
             headers: dict[str, str] | None = None, note: str = "") -> Any:
        """One request as ``who`` (``admin``, an actor with a token, or ``""`` for none); the
        answer's JSON (or raw bytes). A status other than ``expect`` ends the run."""
        sent: dict[str, str] = {}
        shown: list[tuple[str, str]] = []
        if who:
            secret = ADMIN if who == "admin" else self.tokens[who]
            sent["Authorization"] = f"Bearer {secret}"
            shown.append(("Authorization", f"Bearer {secret}"))
        if body is not None:
            shown.append(("Content-Type", "application/json"))
        for name, value in (headers or {}).items():
            sent[name] = value
            shown.append((name, value))
        self._next_millisecond()
        response = self.client.request(method, path, json=body, content=raw, headers=sent)
        self._last_ms = time.time_ns() // 1_000_000
        if response.status_code != expect:
            raise RuntimeError(f"{method} {path}: expected {expect}, got "
                               f"{response.status_code} {response.text}")
        kind = response.headers.get("content-type", "")
        answer: Any = response.json() if kind.startswith("application/json") else (
            response.content or None)
        self.examples.append(text.Example(
            self.section, title, route, tuple(ids.split()), method, path, shown,
            raw if raw is not None else body, response.status_code,
            [(text.SHOWN_HEADERS[k], v) for k, v in response.headers.items() if k in text.SHOWN_HEADERS],
            answer, note))
        return answer

    def keep(self, value: Any) -> None:
        """A fingerprint of input without generated ids (SHA-256 of its canonical JSON): shown
        as it is."""
        self.stable.add(hashlib.sha256(rfc8785.dumps(value)).hexdigest())


def _grants(scopes: list[str], recipients: dict[str, Any],
            collections: list[dict[str, Any]]) -> dict[str, Any]:
    """The grant fingerprint's input (WP-AUTH-8) of a token without blob references."""
    return {"blob_references": [], "recipients": recipients, "scopes": sorted(set(scopes)),
            "collections": [{"actions": sorted(set(c["actions"])),
                             "collection_id": c["collection_id"]} for c in collections]}


def provision(run: Run) -> None:
    run.section = "Provisioning: the control plane"
    space = "/admin/v1/spaces/demo"
    run.call("admin", "POST", "/admin/v1/spaces", "POST /admin/v1/spaces", "WP-CTRL-3 WP-CTRL-6",
             "a space and its default actor", expect=201, body={
                 "request_id": "space-demo", "space_id": "demo", "display_name": "Demo",
                 "source_uri": "https://example.test/demo",
                 "default_actor": {"actor_id": "alice", "kind": "human", "display_name": "Alice"}})
    for actor, name in (("bob", "Bob"), ("carol", "Carol")):
        run.call("admin", "POST", f"{space}/actors", "POST /admin/v1/spaces/{space_id}/actors",
                 "WP-CTRL-3 WP-CTRL-7", f"the actor {actor}", expect=201, body={
                     "request_id": f"actor-{actor}", "actor_id": actor, "kind": "agent",
                     "display_name": name})
    for actor in ("alice", "bob", "carol"):
        run.call("admin", "POST", f"{space}/consumers",
                 "POST /admin/v1/spaces/{space_id}/consumers", "WP-CTRL-3 WP-CTRL-9",
                 f"{actor}'s inbox consumer", expect=201, body={
                     "request_id": f"consumer-{actor}", "consumer_id": f"{actor}-inbox",
                     "actor_id": actor, "view": "inbox"})
    run.call("admin", "POST", f"{space}/collections", "POST /admin/v1/spaces/{space_id}/collections",
             "WP-CTRL-3 WP-MEM-3", "a memory collection bob publishes", expect=201, body={
                 "request_id": "collection-notes", "collection_id": "notes",
                 "source_actor_id": "bob", "scope": "shared shopping notes"})
    tokens: dict[str, tuple[list[str], dict[str, Any], list[dict[str, Any]]]] = {
        "alice": (ALL_SCOPES, {"mode": "any"}, [{"collection_id": "notes", "actions": ["read"]}]),
        "bob": (ALL_SCOPES, {"mode": "any"},
                [{"collection_id": "notes", "actions": ["read", "write"]}]),
        "carol": (["message.send", "message.read"], {"mode": "listed", "actor_ids": ["alice"]},
                  []),
    }
    issue: dict[str, Any] = {}
    for actor, (scopes, recipients, collections) in tokens.items():
        issue = {"request_id": f"token-{actor}", "actor_id": actor,
                 "consumer_id": f"{actor}-inbox", "scopes": scopes, "recipients": recipients,
                 "collections": collections, "blob_references": []}
        if actor == "alice":
            issue["expires_at"] = FAR
        issued = run.call("admin", "POST", f"{space}/tokens",
                          "POST /admin/v1/spaces/{space_id}/tokens", "WP-CTRL-11 WP-AUTH-8",
                          f"{actor}'s token", body=issue, expect=201)
        run.tokens[actor], run.token_ids[actor] = issued["token"], issued["token_id"]
        run.keep(_grants(scopes, recipients, collections))
        if actor == "alice":
            run.stable.add(FAR.replace("Z", ".000Z"))
            alice_issue = issue
    run.call("admin", "POST", f"{space}/tokens", "POST /admin/v1/spaces/{space_id}/tokens",
             "WP-CTRL-12 WP-IDEM-6", "the same issue again: replayed, without the secret",
             body=alice_issue, expect=201)
    run.call("", "GET", "/v1/describe", "GET /v1/describe", "WP-HTTP-9 WP-LIM-1",
             "the protocol version, the limits and the capabilities; no credential")


def messages(run: Run) -> dict[str, Any]:
    run.section = "Messages, the feed and ACKs"
    send = {"request_id": "send-1", "recipient_ids": ["bob"], "thread": {"new": True},
            "kind": "question", "subject": "Milk?",
            "body": {"text": "Do we still need milk?", "options": ["yes", "no"]},
            "metadata": {"priority": "low"}}
    sent = run.call("alice", "POST", "/v1/messages", "POST /v1/messages",
                    "WP-MSG-4 WP-HTTP-10", "alice asks bob in a new thread", body=send,
                    expect=201)
    run.keep({key: value for key, value in send.items() if key != "request_id"})
    page = run.call("bob", "GET", "/v1/feed", "GET /v1/feed", "WP-FEED-2 WP-FEED-4 WP-HTTP-12",
                    "bob's first page, from his checkpoint (0): the message item")
    run.call("bob", "GET", f"/v1/messages/{sent['message_id']}", "GET /v1/messages/{message_id}",
             "WP-MSG-11 WP-MSG-12 WP-HTTP-11", "bob reads the whole message")
    run.call("bob", "POST", "/v1/acks", "POST /v1/acks", "WP-RCPT-6 WP-RCPT-7 WP-RCPT-12",
             "bob has received the message: an ACK without a checkpoint", body={
                 "request_id": "ack-bob-1",
                 "items": [{"item_id": sent["feed_item_id"], "stage": "received"}]})
    reply = run.call("bob", "POST", "/v1/messages", "POST /v1/messages", "WP-MSG-5 WP-MSG-6",
                     "bob answers in the thread", expect=201, body={
                         "request_id": "send-2", "recipient_ids": ["alice"],
                         "thread": {"thread_id": sent["thread_id"]},
                         "in_reply_to": sent["message_id"], "kind": "result", "subject": "Re: Milk?",
                         "body": {"text": "yes, see the shopping notes"}})
    return {"sent": sent, "reply": reply, "bob_cursor": page["next_cursor"]}


def blobs(run: Run) -> dict[str, Any]:
    run.section = "A blob: prepare, PUT, commit, read"
    digest = hashlib.sha256(MILK).hexdigest()
    prepared: dict[str, Any] = run.call(
        "bob", "POST", "/v1/blobs", "POST /v1/blobs", "WP-UPL-2 WP-HTTP-15",
        "bob prepares an upload", expect=201, body={
            "request_id": "prepare-milk", "size": len(MILK), "sha256": digest,
            "content_type": "text/markdown; charset=utf-8", "filename": "milk.md"})
    put = f"/v1/uploads/{prepared['upload_id']}/content"
    octets = {"Content-Type": "application/octet-stream"}
    run.call("bob", "PUT", put, "PUT /v1/uploads/{upload_id}/content", "WP-UPL-3",
             "other bytes than declared", raw=MILK.upper(), headers=octets, expect=422)
    run.call("bob", "PUT", put, "PUT /v1/uploads/{upload_id}/content", "WP-UPL-3 WP-HTTP-15",
             "the declared bytes", raw=MILK, headers=octets)
    run.call("bob", "POST", f"/v1/uploads/{prepared['upload_id']}/commit",
             "POST /v1/uploads/{upload_id}/commit", "WP-UPL-2 WP-HTTP-15", "bob seals the blob",
             body={"request_id": "commit-milk"})
    blob = f"/v1/blobs/{prepared['blob_id']}"
    run.call("bob", "GET", blob, "GET /v1/blobs/{blob_id}", "WP-HTTP-15 WP-UPL-9",
             "the blob's metadata")
    run.call("bob", "GET", f"{blob}/content", "GET /v1/blobs/{blob_id}/content", "WP-UPL-9",
             "the blob's bytes, with ETag = their SHA-256")
    return prepared


def memory(run: Run, blob_id: str, feed: dict[str, Any]) -> None:
    run.section = "Memory, and a feed page with every item type"
    publish = "/v1/collections/notes/revisions"
    route = "POST /v1/collections/{collection_id}/revisions"
    milk = {"item_id": "milk", "path": "shopping/milk.md", "blob_id": blob_id}
    reminder = {"item_id": "reminder", "path": "reminders/milk.md", "blob_id": blob_id}
    run.call("bob", "POST", publish, route, "WP-MEM-9 WP-MEM-17 WP-HTTP-16",
             "a snapshot: revision 1, the blob under two paths", expect=201, body={
                 "request_id": "publish-1", "expected_revision": 0, "mode": "snapshot",
                 "items": [milk, reminder]})
    page = run.call("alice", "GET", "/v1/feed", "GET /v1/feed",
                    "WP-FEED-2 WP-HTTP-12 WP-HTTP-13 WP-VIS-1 WP-MEM-29",
                    "alice's page: a receipt, a message and a memory revision item")
    items = {item["type"]: item for item in page["items"]}
    ack = {"request_id": "ack-alice-1", "items": [
        {"item_id": items["message"]["item_id"], "stage": "processed"},
        {"item_id": items["memory_revision"]["item_id"], "stage": "received"}],
        "checkpoint": {"cursor": page["next_cursor"]}}
    run.call("alice", "POST", "/v1/acks", "POST /v1/acks",
             "WP-RCPT-7 WP-RCPT-8 WP-RCPT-11 WP-RCPT-12 WP-HTTP-14",
             "alice's ACK with a checkpoint", body=ack, note="alice has processed bob's reply "
             "and received revision 1. A receipt item is never acknowledged (WP-RCPT-4): the "
             "checkpoint moves her past it.")
    run.call("alice", "POST", "/v1/acks", "POST /v1/acks", "WP-IDEM-6 WP-RCPT-13",
             "the same ACK again: its own result, replayed", body=ack)
    run.call("bob", "POST", publish, route, "WP-MEM-10 WP-MEM-17", "a delta: revision 2",
             expect=201, body={
                 "request_id": "publish-2", "expected_revision": 1, "mode": "delta",
                 "items": [{**milk, "metadata": {"done": False}}], "delete_ids": ["reminder"]})
    run.call("bob", "POST", publish, route, "WP-MEM-15 WP-HTTP-16",
             "the same state again: unchanged, no revision", body={
                 "request_id": "publish-3", "expected_revision": 2, "mode": "delta",
                 "items": [{**milk, "metadata": {"done": False}}]})
    run.call("alice", "GET", "/v1/collections/notes", "GET /v1/collections/{collection_id}",
             "WP-MEM-20 WP-HTTP-17", "the collection and its head")
    revision = "/v1/collections/notes/revisions/2"
    run.call("alice", "GET", revision, "GET /v1/collections/{collection_id}/revisions/{revision}",
             "WP-MEM-21 WP-MEM-14 WP-HTTP-17", "revision 2's metadata")
    items_route = "GET /v1/collections/{collection_id}/revisions/{revision}/items"
    first = run.call("alice", "GET", f"{revision}/items?include_tombstones=true&limit=1",
                     items_route, "WP-MEM-23 WP-MEM-11 WP-HTTP-17",
                     "the first page of entries, tombstones included")
    run.call("alice", "GET", f"{revision}/items?include_tombstones=true&limit=1&cursor="
             f"{first['next_cursor']}", items_route, "WP-MEM-23 WP-CUR-6", "the next page")
    run.call("alice", "GET", f"/v1/blobs/{blob_id}/content", "GET /v1/blobs/{blob_id}/content",
             "WP-UPL-9 WP-UPL-10 WP-MEM-26", "alice, a reader of the revision, reads one byte "
             "range of the entry's blob", headers={"Range": "bytes=0-5"}, expect=206)


def errors(run: Run, feed: dict[str, Any]) -> None:
    run.section = "Lookups and errors"
    sent = feed["sent"]
    run.call("alice", "GET", "/v1/submissions/message.send/send-1",
             "GET /v1/submissions/{operation}/{request_id}", "WP-IDEM-13 WP-IDEM-14",
             "alice looks up her send: committed")
    run.call("alice", "POST", "/v1/messages", "POST /v1/messages", "WP-VAL-1 WP-ERR-1",
             "an unknown member", expect=400, body={
                 "request_id": "send-typo", "thread": {"new": True}, "kind": "info",
                 "subjekt": "typo", "body": {"text": ""}})
    run.call("carol", "POST", "/v1/messages", "POST /v1/messages", "WP-MSG-3 WP-AUTH-14",
             "carol's recipient grant lists alice only", expect=403, body={
                 "request_id": "send-carol", "recipient_ids": ["bob"], "thread": {"new": True},
                 "kind": "info", "subject": "Hello", "body": {"text": "hi bob"}})
    run.call("carol", "GET", f"/v1/messages/{sent['message_id']}", "GET /v1/messages/{message_id}",
             "WP-MSG-11 WP-AUTH-13", "carol may not see alice's message to bob", expect=404)
    run.call("alice", "POST", "/v1/messages", "POST /v1/messages", "WP-IDEM-9",
             "send-1 again with another subject", expect=409, body={
                 "request_id": "send-1", "recipient_ids": ["bob"], "thread": {"new": True},
                 "kind": "question", "subject": "Bread?", "body": {"text": "Do we need bread?"}})
    stale = {"request_id": "publish-stale", "expected_revision": 0, "mode": "snapshot", "items": []}
    run.call("bob", "POST", "/v1/collections/notes/revisions",
             "POST /v1/collections/{collection_id}/revisions", "WP-MEM-16 WP-IDEM-10",
             "a publish at an old head", body=stale, expect=409)
    run.keep({"collection_id": "notes", **{k: v for k, v in stale.items() if k != "request_id"}})
    run.call("bob", "GET", "/v1/submissions/memory.publish/publish-stale",
             "GET /v1/submissions/{operation}/{request_id}", "WP-IDEM-13 WP-MEM-16",
             "bob looks up that publish: a recorded failure")
    cursor = feed["bob_cursor"]
    tampered = cursor[:3] + ("f" if cursor[3] != "f" else "g") + cursor[4:]
    run.changed[tampered] = cursor
    run.call("bob", "GET", f"/v1/feed?cursor={tampered}", "GET /v1/feed", "WP-CUR-2",
             "a cursor with one character changed", expect=400)
    run.call("admin", "POST", "/admin/v1/spaces/demo/consumers/bob-inbox/view",
             "POST /admin/v1/spaces/{space_id}/consumers/{consumer_id}/view", "WP-CTRL-9",
             "bob's consumer keeps only messages and receipts", body={
                 "request_id": "view-bob", "view": "inbox",
                 "filter": {"item_types": ["message", "receipt"]}})
    run.call("bob", "GET", f"/v1/feed?cursor={cursor}", "GET /v1/feed", "WP-CUR-4",
             "bob's cursor of the old view revision", expect=409)
    uploads(run)
    run.call("admin", "POST", "/_test/faults", "POST /_test/faults", "WP-HOOK-4 WP-HOOK-6",
             "the next business commit fails, once", body={
                 "point": "commit.before", "action": "unavailable"})
    later = {"request_id": "send-3", "thread": {"new": True}, "kind": "info",
             "subject": "Bought it", "body": {"text": "milk is in the fridge"}}
    run.call("bob", "POST", "/v1/messages", "POST /v1/messages", "WP-LOAD-5 WP-ERR-7",
             "the storage fails (a fault point): nothing decided", body=later, expect=503)
    run.call("bob", "POST", "/v1/messages", "POST /v1/messages", "WP-ERR-7 WP-IDEM-11 WP-MSG-2",
             "the same request again: a first answer", body=later, expect=201, note="Nothing "
             "was decided by the failed attempt, so this is no replay. Without `recipient_ids` "
             "the message goes to the space's default actor, alice.")


def uploads(run: Run) -> None:
    digest = hashlib.sha256(BREAD).hexdigest()
    prepared = run.call("bob", "POST", "/v1/blobs", "POST /v1/blobs", "WP-UPL-2",
                        "another upload", expect=201, body={
                            "request_id": "prepare-bread", "size": len(BREAD), "sha256": digest,
                            "content_type": "text/markdown"})
    commit = f"/v1/uploads/{prepared['upload_id']}/commit"
    route = "POST /v1/uploads/{upload_id}/commit"
    run.call("bob", "POST", commit, route, "WP-UPL-7", "a commit before the content is stored",
             body={"request_id": "commit-bread-1"}, expect=409)
    run.call("bob", "POST", "/v1/messages", "POST /v1/messages", "WP-MSG-8",
             "an attachment that is not sealed", expect=422, body={
                 "request_id": "send-attached", "recipient_ids": ["alice"],
                 "thread": {"new": True}, "kind": "info", "subject": "Bread",
                 "body": {"text": "see attached"}, "attachment_ids": [prepared["blob_id"]]})
    run.call("bob", "POST", "/v1/blobs", "POST /v1/blobs", "WP-UPL-1 WP-LIM-3",
             "an upload over the upload_bytes limit", expect=413, body={
                 "request_id": "prepare-huge", "size": 67108865, "sha256": digest,
                 "content_type": "application/octet-stream"})
    run.call("admin", "POST", "/_test/clock", "POST /_test/clock", "WP-HOOK-3",
             "the server's clock moves past the upload's expiry (`upload_expiry_seconds`)",
             body={"advance_ms": 3_600_001})
    run.call("bob", "POST", commit, route, "WP-UPL-7 WP-IDEM-10",
             "a commit after the expiry", body={"request_id": "commit-bread-2"}, expect=410,
             note="Recorded as the key's final result: a retry with the same `request_id` "
             "answers the same.")


def control(run: Run, feed: dict[str, Any]) -> None:
    run.section = "Revocation, disabling and the control plane's reads"
    carol_token = run.token_ids["carol"]
    space = "/admin/v1/spaces/demo"
    run.call("admin", "POST", f"{space}/threads/{feed['sent']['thread_id']}/members",
             "POST /admin/v1/spaces/{space_id}/threads/{thread_id}/members", "WP-CTRL-14",
             "carol joins alice and bob's thread", body={
                 "request_id": "members-carol", "actor_ids": ["carol"]})
    run.call("admin", "POST", f"/admin/v1/tokens/{carol_token}/revoke",
             "POST /admin/v1/tokens/{token_id}/revoke", "WP-CTRL-13", "carol's token is revoked",
             body={"request_id": "revoke-carol"})
    run.call("carol", "GET", "/v1/messages/" + feed["reply"]["message_id"],
             "GET /v1/messages/{message_id}", "WP-AUTH-2 WP-CTRL-13", "the revoked token",
             expect=401)
    run.call("admin", "POST", f"{space}/actors/carol/disable",
             "POST /admin/v1/spaces/{space_id}/actors/{actor_id}/disable", "WP-CTRL-10",
             "carol is disabled", body={"request_id": "disable-carol"})
    run.call("admin", "GET", "/admin/v1/spaces", "GET /admin/v1/spaces", "WP-CTRL-16",
             "every space")
    run.call("admin", "GET", space, "GET /admin/v1/spaces/{space_id}", "WP-CTRL-16",
             "everything the space holds (no secrets)")


@contextmanager
def _served_with_limits(data_dir: Path) -> Iterator[int]:
    """The reference behind uvicorn with its connection limits (a head deadline of a quarter
    second) on a loopback port, in a thread, until the block ends."""
    from waypost.reference.http.connection_limits import ConnectionLimits, limited_protocol
    from waypost.reference.server import Settings, build_app

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    started = threading.Event()

    class Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            started.set()

    server = Server(uvicorn.Config(
        build_app(Settings(data_dir, ADMIN, sweep_seconds=0)), log_level="critical",
        http=limited_protocol(ConnectionLimits(header_seconds=0.25))))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    try:
        if not started.wait(timeout=60):
            raise RuntimeError("the server did not start")
        yield int(listener.getsockname()[1])
    finally:
        server.should_exit = True
        thread.join(timeout=60)
        listener.close()


def request_timeout(run: Run, data_dir: Path) -> None:
    """``408 REQUEST_TIMEOUT`` comes from the connection, not the app: a real server with a
    short head deadline, and a head that never ends."""
    head = b"GET /v1/describe HTTP/1.1\r\nHost: waypost.example\r\n"
    with _served_with_limits(data_dir) as port, \
            socket.create_connection(("127.0.0.1", port), timeout=60) as connection:
        connection.sendall(head)
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
    top, _, body = received.partition(b"\r\n\r\n")
    status_line, *lines = top.decode().split("\r\n")
    answer = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}
    run.examples.append(text.Example(
        "The connection", "a head that does not arrive in time", "GET /v1/describe",
        ("WP-LOAD-6",), "GET", "/v1/describe", [("Host", "waypost.example")], None,
        int(status_line.split()[1]),
        [(text.SHOWN_HEADERS[k], v) for k, v in answer.items() if k in text.SHOWN_HEADERS],
        json.loads(body), "A server with a head deadline of a quarter of a second (the "
        "reference's default is 10 s, `--header-timeout`); the client sends the lines below and "
        "never the blank line that ends the head. The answer comes in the error envelope and "
        "the connection closes: nothing of the request was decided.", head_only=True))


def build() -> str:
    """The document, from a fresh run."""
    from waypost.reference.server import Settings, build_app

    with tempfile.TemporaryDirectory() as directory:
        data = Path(directory) / "data"
        data.mkdir()
        settings = Settings(data, ADMIN, test_hooks=True, sweep_seconds=0)
        with TestClient(build_app(settings)) as client:
            run = Run(client)
            provision(run)
            feed = messages(run)
            blob = blobs(run)
            memory(run, blob["blob_id"], feed)
            errors(run, feed)
            control(run, feed)
        wire = Path(directory) / "wire"
        wire.mkdir()
        request_timeout(run, wire)
    names = {ADMIN: "<admin token>", **{secret: f"<token of {who}>"
                                        for who, secret in run.tokens.items()}}
    routes, codes = text.protocol_tables(PROTOCOL.read_text())
    defined = set(re.findall(r"\*\*(WP-[A-Z]+-\d+)\*\*", PROTOCOL.read_text()))
    for example in run.examples:
        unknown = set(example.requirements) - defined
        if unknown:
            raise RuntimeError(f"{example.title}: no requirement {sorted(unknown)}")
    return text.render(run.examples, text.Placeholders(names, run.stable, run.changed), routes,
                  codes, NOT_SHOWN)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when docs/examples.md is stale; write nothing")
    args = parser.parse_args(argv)
    document = build()
    if args.check:
        if OUT.exists() and OUT.read_text() == document:
            return 0
        print("stale: run python tools/worked_examples.py", file=sys.stderr)
        return 1
    OUT.write_text(document)
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
