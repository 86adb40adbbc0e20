"""How ``waypost bench feed`` fills a feed fast: a bulk path, not the HTTP API.

Sends alice → bob through HTTP (or one commit plan each) take minutes for 200,000 items on a
shared 2-core machine, so the fill writes the rows a send's plan writes (submission with its
stable result, thread and members, message with its body, recipient, feed item and its
recipient row), with the same ids, fingerprints, body and facts a send of ``fill-<n>`` would
have, straight into the running server's database file: one ``executemany`` per table for
10,000 sends, each batch one transaction on a second connection. The server is idle meanwhile
(SQLite serialises the writers); the page reads that are measured go over HTTP.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import apsw

from waypost.reference.domain import values
from waypost.reference.domain.canonical import canonical_json, digest
from waypost.reference.domain.clock import SystemClock
from waypost.reference.domain.published_limits import Limits
from waypost.reference.domain.requests import parse_send

#: Sends per transaction.
BATCH = 10_000

_INSERTS = {
    "submissions": """INSERT INTO submissions (submission_id, space_id, producer_id, operation,
        request_id, fingerprint, state, reserved_at, resource_id, thread_id, feed_item_id,
        result_status, committed_at)
        VALUES (?, ?, ?, 'message.send', ?, ?, 'committed', ?, ?, ?, ?, 201, ?)""",
    "threads": "INSERT INTO threads (space_id, thread_id, created_at) VALUES (?, ?, ?)",
    "thread_members": """INSERT INTO thread_members (space_id, thread_id, actor_id, added_at)
        VALUES (?, ?, ?, ?)""",
    "messages": """INSERT INTO messages (space_id, message_id, submission_id, producer_id,
        thread_id, in_reply_to, kind, subject, body_sha256, body_size, metadata_json,
        committed_at, body) VALUES (?, ?, ?, ?, ?, NULL, ?, ?, ?, ?, NULL, ?, ?)""",
    "message_recipients": """INSERT INTO message_recipients (space_id, message_id, actor_id)
        VALUES (?, ?, ?)""",
    "feed_items": """INSERT INTO feed_items (item_id, space_id, item_type, producer_id,
        thread_id, resource_id, committed_at) VALUES (?, ?, 'message', ?, ?, ?, ?)""",
    "feed_recipients": """INSERT INTO feed_recipients (space_id, item_id, actor_id, sequence)
        VALUES (?, ?, ?, (SELECT sequence FROM feed_items WHERE item_id = ?))""",
}


def fill_request(n: int) -> dict[str, Any]:
    """The request body of fill send ``n`` (what ``POST /v1/messages`` would take)."""
    return {"request_id": f"fill-{n}", "recipient_ids": ["bob"], "thread": {"new": True},
            "kind": "info", "subject": "load", "body": {"text": "bench"}}


def _rows(space: str, alice: str, bob: str, now: int, first: int,
          end: int) -> dict[str, list[tuple[Any, ...]]]:
    rows: dict[str, list[tuple[Any, ...]]] = {table: [] for table in _INSERTS}
    # The fingerprint leaves request_id out, so every fill send has the first one's.
    request = parse_send(fill_request(first), Limits())
    fingerprint = digest(request.normalised)
    body = canonical_json(request.body_document())
    sha, size, text = hashlib.sha256(body).digest(), len(body), body.decode()
    for n in range(first, end):
        sid, mid, tid, fid = (values.new_id(p) for p in ("sub", "msg", "thr", "fi"))
        rows["submissions"].append((sid, space, alice, f"fill-{n}", fingerprint, now, mid,
                                    tid, fid, now))
        rows["threads"].append((space, tid, now))
        rows["thread_members"] += [(space, tid, alice, now), (space, tid, bob, now)]
        rows["messages"].append((space, mid, sid, alice, tid, request.kind, request.subject,
                                 sha, size, now, text))
        rows["message_recipients"].append((space, mid, bob))
        rows["feed_items"].append((fid, space, alice, tid, mid, now))
        rows["feed_recipients"].append((space, fid, bob, fid))
    return rows


def fill(database: Path, alice_token: str, have: int, target: int) -> int:
    """Write sends ``fill-<have>`` … ``fill-<target - 1>`` from alice (the actor of her token)
    to bob into ``database``; returns ``target``."""
    connection = apsw.Connection(str(database))
    try:
        connection.set_busy_timeout(30_000)
        connection.pragma("foreign_keys", True)
        connection.pragma("synchronous", "OFF")  # a benchmark's scratch data
        connection.pragma("cache_size", -256 * 1024)  # KiB: the random ids' index pages
        space, alice = next(connection.execute(
            "SELECT space_id, actor_id FROM tokens WHERE token_id = ?",
            (alice_token.split(".")[0],)))
        clock = SystemClock()
        for first in range(have, target, BATCH):
            rows = _rows(space, alice, "bob", clock.now_ms(), first, min(first + BATCH, target))
            with connection:  # one transaction per batch
                for table, statement in _INSERTS.items():
                    connection.executemany(statement, rows[table])
    finally:
        connection.close()
    return target
