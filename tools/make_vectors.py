"""Regenerate ``conformance/vectors/*.json`` from the reference (run from the repository root:
``python tools/make_vectors.py``). ``tests/test_vectors.py`` fails when the files are stale."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from waypost.reference.domain.canonical import canonical_json, digest
from waypost.reference.domain.grants import parse_grants
from waypost.reference.domain.limits import Limits
from waypost.reference.domain.memory_requests import parse_publish
from waypost.reference.domain.memory_state import Entry, ItemInput, manifest, next_state, state_fingerprint
from waypost.reference.domain.requests import parse_ack, parse_send

OUT = Path(__file__).resolve().parent.parent / "conformance" / "vectors"

SEND_CASES: list[tuple[str, dict[str, Any]]] = [
    ("new thread, default recipient (recipient_ids omitted)",
     {"request_id": "v1", "thread": {"new": True}, "kind": "info", "subject": "Hello",
      "body": {"text": "First message"}}),
    ("explicit recipients are a set: sorted and de-duplicated",
     {"request_id": "v2", "recipient_ids": ["carol", "bob", "carol"], "thread": {"new": True},
      "kind": "question", "subject": "Lunch?", "body": {"text": "noon", "options": ["yes", "no"]}}),
    ("the same set in another order gives the same fingerprint",
     {"request_id": "v3", "recipient_ids": ["bob", "carol"], "thread": {"new": True},
      "kind": "question", "subject": "Lunch?", "body": {"text": "noon", "options": ["yes", "no"]}}),
    ("body options are ordered: swapping them changes the fingerprint",
     {"request_id": "v4", "recipient_ids": ["bob", "carol"], "thread": {"new": True},
      "kind": "question", "subject": "Lunch?", "body": {"text": "noon", "options": ["no", "yes"]}}),
    ("reply in an existing thread, unicode subject, metadata with numbers",
     {"request_id": "v5", "recipient_ids": ["alice"], "thread": {"thread_id": "thr_42"},
      "in_reply_to": "msg_7", "kind": "result", "subject": "Grüße ✓",
      "body": {"text": "done", "source_uri": "https://example.test/r/1"},
      "metadata": {"z": [1, 2.5, "x"], "a": {"nested": True, "n": -7}}}),
    ("an explicit empty attachment list is not the same request as an omitted one",
     {"request_id": "v6", "thread": {"new": True}, "kind": "info", "subject": "Hello",
      "body": {"text": "First message"}, "attachment_ids": []}),
]

ACK_CASES: list[tuple[str, dict[str, Any], int | None]] = [
    ("items keep their order", {"request_id": "a1", "items": [
        {"item_id": "fi_2", "stage": "processed"}, {"item_id": "fi_1", "stage": "received"}]},
     None),
    ("the checkpoint enters as its decoded position (a decimal string), never the cursor",
     {"request_id": "a2", "items": [{"item_id": "fi_1", "stage": "received"}],
      "checkpoint": {"cursor": "<any cursor whose position is 9007199254740993>"}},
     9007199254740993),
    ("a checkpoint alone", {"request_id": "a3", "items": [],
                            "checkpoint": {"cursor": "<any cursor whose position is 12>"}}, 12),
]

PUBLISH_CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("a delta: items sorted by item_id, delete_ids sorted, the path's collection_id added",
     "notes", {"request_id": "m1", "expected_revision": 3, "mode": "delta",
               "items": [{"item_id": "b", "path": "b.md", "blob_id": "blb_2"},
                         {"item_id": "a", "path": "dir/a.md", "blob_id": "blb_1",
                          "metadata": {"lang": "en", "n": 1}}],
               "delete_ids": ["z", "c"]}),
    ("the same delta in another order gives the same fingerprint",
     "notes", {"request_id": "m2", "expected_revision": 3, "mode": "delta",
               "items": [{"item_id": "a", "path": "dir/a.md", "blob_id": "blb_1",
                          "metadata": {"n": 1, "lang": "en"}},
                         {"item_id": "b", "path": "b.md", "blob_id": "blb_2"}],
               "delete_ids": ["c", "z"]}),
    ("another collection is another request", "plans",
     {"request_id": "m3", "expected_revision": 3, "mode": "delta",
      "items": [{"item_id": "a", "path": "dir/a.md", "blob_id": "blb_1",
                 "metadata": {"n": 1, "lang": "en"}},
                {"item_id": "b", "path": "b.md", "blob_id": "blb_2"}],
      "delete_ids": ["c", "z"]}),
    ("a snapshot from a manifest blob", "notes",
     {"request_id": "m4", "expected_revision": 0, "mode": "snapshot",
      "manifest_blob_id": "blb_manifest"}),
]

#: (description, parent entries, mode, items, delete_ids, new revision)
STATE_CASES: list[tuple[str, list[dict[str, Any]], str, list[dict[str, Any]], list[str], int]] = [
    ("the first revision: metadata defaults to {}", [], "delta",
     [{"item_id": "b", "path": "b.md", "blob_id": "blb_2"},
      {"item_id": "a", "path": "dir/a.md", "blob_id": "blb_1", "metadata": {"lang": "en"}}],
     [], 1),
    ("a snapshot tombstones unlisted active entries and keeps old tombstones",
     [{"item_id": "a", "state": "active", "path": "a.md", "blob_id": "blb_1", "metadata": {}},
      {"item_id": "b", "state": "active", "path": "b.md", "blob_id": "blb_2", "metadata": {}},
      {"item_id": "c", "state": "tombstone", "deleted_in_revision": 2}],
     "snapshot", [{"item_id": "b", "path": "b2.md", "blob_id": "blb_2"}], [], 4),
    ("a delta deletes, upserts and revives a tombstone",
     [{"item_id": "a", "state": "active", "path": "a.md", "blob_id": "blb_1", "metadata": {}},
      {"item_id": "c", "state": "tombstone", "deleted_in_revision": 2}],
     "delta", [{"item_id": "c", "path": "c.md", "blob_id": "blb_3", "metadata": {"v": 2}}],
     ["a"], 7),
    ("the empty state (revision 0)", [], "delta", [], [], 1),
    ("canonical JSON edge cases: non-ASCII and DEL in paths, escapes, floats, key order",
     [], "delta",
     [{"item_id": "u", "path": "notes/ü\u007f.md", "blob_id": "blb_1",
       "metadata": {"note": "tab\t\"q\"", "x": 1.5, "big": 1e21, "neg": -0.0,
                    "\U0001f600": 1, "\ue000": 2}}], [], 1),
]

GRANT_CASES: list[tuple[str, dict[str, Any]]] = [
    ("every scope, any recipient, nothing else",
     {"scopes": ["event.subscribe", "message.send", "message.read", "space.observe",
                 "receipt.write", "memory.write", "memory.read", "blob.write", "blob.reference"],
      "recipients": {"mode": "any"}, "collections": [], "blob_references": []}),
    ("sets are sorted and de-duplicated; collection actions merged per collection",
     {"scopes": ["message.send", "message.send"],
      "recipients": {"mode": "listed", "actor_ids": ["carol", "bob", "bob"]},
      "collections": [{"collection_id": "notes", "actions": ["write", "read"]},
                      {"collection_id": "alpha", "actions": ["read"]},
                      {"collection_id": "notes", "actions": ["read"]}],
      "blob_references": ["blb_b", "blb_a"]}),
    ("nothing granted: empty lists mean nothing, never everything",
     {"scopes": [], "recipients": {"mode": "listed", "actor_ids": []}, "collections": [],
      "blob_references": []}),
]


def vector(description: str, operation: str, request: dict[str, Any],
           normalised: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"description": description, "operation": operation, "request": request, **extra,
            "normalised": normalised, "canonical": canonical_json(normalised).decode(),
            "sha256": digest(normalised).hex()}


def build() -> dict[str, Any]:
    """Both vector files as Python values."""
    requests = [vector(d, "message.send", r, parse_send(r, Limits()).normalised)
                for d, r in SEND_CASES]
    requests += [vector(d, "receipt.ack", r, parse_ack(r, Limits()).normalised(position),
                        checkpoint_position=None if position is None else str(position))
                 for d, r, position in ACK_CASES]
    requests += [vector(d, "memory.publish", r, parse_publish(r, cid, Limits()).normalised,
                        collection_id=cid) for d, cid, r in PUBLISH_CASES]
    grants = [vector(d, "grant", g, parse_grants(g).normalised()) for d, g in GRANT_CASES]
    return {
        "request_fingerprints.json": {
            "about": "Request fingerprints (protocol.md §5): sha256 = SHA-256 of the RFC 8785 "
                     "canonical JSON of the normalised request (the body without request_id).",
            "vectors": requests},
        "memory_states.json": {
            "about": "Memory states (protocol.md §9): the state a publish makes on its parent, "
                     "its state fingerprint (SHA-256 of the RFC 8785 form of the entries sorted "
                     "by item_id, tombstones as {item_id, state} only) and the revision's "
                     "canonical manifest object.",
            "vectors": [_state_vector(*case) for case in STATE_CASES]},
        "grant_fingerprints.json": {
            "about": "Grant fingerprints (protocol.md §4): SHA-256 of the RFC 8785 canonical "
                     "JSON of the normalised grants; the token id never enters.",
            "vectors": grants},
    }


def _entry(entry: dict[str, Any]) -> Entry:
    if entry["state"] == "active":
        return Entry(entry["item_id"], entry["path"], entry["blob_id"], entry["metadata"])
    return Entry(entry["item_id"], deleted_in_revision=entry["deleted_in_revision"])


def _state_vector(description: str, parent: list[dict[str, Any]], mode: str,
                  items: list[dict[str, Any]], delete_ids: list[str],
                  revision: int) -> dict[str, Any]:
    inputs = [ItemInput(i["item_id"], i["path"], i["blob_id"], i.get("metadata"))
              for i in items]
    state = next_state({e["item_id"]: _entry(e) for e in parent}, mode, inputs, delete_ids,
                       revision)
    document = manifest("notes", revision, revision - 1, state)
    return {"description": description, "collection_id": "notes", "parent": parent,
            "mode": mode, "items": items, "delete_ids": delete_ids, "revision": revision,
            "entries": [state[k].public() for k in sorted(state)],
            "state_fingerprint": state_fingerprint(state.values()).hex(),
            "manifest": document.decode(),
            "manifest_sha256": hashlib.sha256(document).hexdigest()}


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, content in build().items():
        (OUT / name).write_text(json.dumps(content, indent=2, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
