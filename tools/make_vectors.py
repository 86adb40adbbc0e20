"""Regenerate ``conformance/vectors/*.json`` from the reference (run from the repository root:
``python tools/make_vectors.py``). ``tests/test_vectors.py`` fails when the files are stale."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from waypost.reference.canonical import canonical_json, digest
from waypost.reference.grants import parse_grants
from waypost.reference.limits import Limits
from waypost.reference.requests import parse_ack, parse_send

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
    grants = [vector(d, "grant", g, parse_grants(g).normalised()) for d, g in GRANT_CASES]
    return {
        "request_fingerprints.json": {
            "about": "Request fingerprints (protocol.md §5): sha256 = SHA-256 of the RFC 8785 "
                     "canonical JSON of the normalised request (the body without request_id).",
            "vectors": requests},
        "grant_fingerprints.json": {
            "about": "Grant fingerprints (protocol.md §4): SHA-256 of the RFC 8785 canonical "
                     "JSON of the normalised grants; the token id never enters.",
            "vectors": grants},
    }


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, content in build().items():
        (OUT / name).write_text(json.dumps(content, indent=2, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
