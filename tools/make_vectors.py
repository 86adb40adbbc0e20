"""Regenerate ``conformance/vectors/*.json`` from the reference (run from the repository root:
``python tools/make_vectors.py``). ``tests/properties/protocol/test_vectors.py`` fails when the
files are stale."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from waypost.reference.domain import errors, values
from waypost.reference.domain.canonical import canonical_json, digest
from waypost.reference.domain.grants import parse_grants
from waypost.reference.domain.memory_requests import parse_publish
from waypost.reference.domain.memory_state import Entry, ItemInput, manifest, next_state, state_fingerprint
from waypost.reference.domain.published_limits import Limits
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


#: Value kinds of protocol.md §3: (the reference's validator, the field it is checked as, the
#: operation that field belongs to). Every other place a kind appears follows the same rule.
KINDS: dict[str, tuple[Any, str, str]] = {
    "object_id": (values.object_id, "items[0].item_id", "memory.publish"),
    "request_id": (values.request_id, "request_id", "message.send"),
    "sha256": (values.sha256_hex, "sha256", "blob.prepare"),
    "revision": (values.revision, "expected_revision", "memory.publish"),
    "relative_path": (values.relative_path, "items[0].path", "memory.publish"),
    "subject": (values.subject, "subject", "message.send"),
    "content_type": (values.content_type, "content_type", "blob.prepare"),
}


#: (kind, description, value, valid by the protocol, why the reference disagrees or None).
VALUE_CASES: list[tuple[str, str, Any, bool, str | None]] = [
    ("object_id", "one letter", "a", True, None),
    ("object_id", "every kind of allowed character", "A-z_09", True, None),
    ("object_id", "96 characters", "x" * 96, True, None),
    ("object_id", "97 characters", "x" * 97, False, None),
    ("object_id", "empty", "", False, None),
    ("object_id", "a dot", "a.b", False, None),
    ("object_id", "a colon", "a:b", False, None),
    ("object_id", "a space", "a b", False, None),
    ("object_id", "a slash", "a/b", False, None),
    ("object_id", "non-ASCII", "ü", False, None),
    ("object_id", "a number, not a string", 7, False, None),
    ("object_id", "null", None, False, None),
    ("request_id", "one character", "r", True, None),
    ("request_id", "dots, colons, dashes and underscores", "req-1.2:3_x", True, None),
    ("request_id", "128 characters", "x" * 128, True, None),
    ("request_id", "129 characters", "x" * 129, False, None),
    ("request_id", "empty", "", False, None),
    ("request_id", "a slash (never a path)", "../x/y", False, None),
    ("request_id", "a space", "a b", False, None),
    ("request_id", "a line feed", "a\n", False, None),
    ("request_id", "non-ASCII", "é", False, None),
    ("request_id", "a number, not a string", 12, False, None),
    ("sha256", "the SHA-256 of no bytes", hashlib.sha256(b"").hexdigest(), True, None),
    ("sha256", "uppercase hex", hashlib.sha256(b"").hexdigest().upper(), False, None),
    ("sha256", "63 characters", hashlib.sha256(b"").hexdigest()[:63], False, None),
    ("sha256", "65 characters", hashlib.sha256(b"").hexdigest() + "0", False, None),
    ("sha256", "not hex", "g" * 64, False, None),
    ("revision", "zero", 0, True, None),
    ("revision", "one", 1, True, None),
    ("revision", "2^53-1", 2**53 - 1, True, None),
    ("revision", "2^53", 2**53, False, None),
    ("revision", "negative", -1, False, None),
    ("revision", "a fraction", 1.5, False, None),
    ("revision", "1.0 is not an integer", 1.0, False, None),
    ("revision", "a decimal string", "1", False, None),
    ("revision", "a boolean", True, False, None),
    ("revision", "null", None, False, None),
    ("relative_path", "one segment", "a", True, None),
    ("relative_path", "nested", "dir/sub/file.md", True, None),
    ("relative_path", "non-ASCII", "notes/ü.md", True, None),
    ("relative_path", "DEL is not a C0 control", "odd\x7fname", True, None),
    ("relative_path", "spaces", "a b/c d", True, None),
    ("relative_path", "dots inside names", "..a/.b/c..", True, None),
    ("relative_path", "1024 bytes", "x" * 1024, True, None),
    ("relative_path", "1024 bytes of two-byte characters", "é" * 512, True, None),
    ("relative_path", "1025 bytes", "x" * 1025, False, None),
    ("relative_path", "1026 bytes of two-byte characters", "é" * 513, False, None),
    ("relative_path", "empty", "", False, None),
    ("relative_path", "a leading slash", "/a", False, None),
    ("relative_path", "a trailing slash", "a/", False, None),
    ("relative_path", "an empty segment", "a//b", False, None),
    ("relative_path", "a '..' segment", "a/../b", False, None),
    ("relative_path", "a leading '..' segment", "../a", False, None),
    ("relative_path", "only '..'", "..", False, None),
    ("relative_path", "a backslash", "a\\b", False, None),
    ("relative_path", "NUL", "a\x00b", False, None),
    ("relative_path", "a number, not a string", 5, False, None),
    ("relative_path", "a '.' segment: an alias of a/b", "a/./b", False, None),
    ("relative_path", "a leading '.' segment: an alias of a", "./a", False, None),
    ("relative_path", "a trailing '.' segment", "a/.", False, None),
    ("relative_path", "only '.'", ".", False, None),
    ("relative_path", "a tab", "a\tb", False, None),
    ("relative_path", "a line feed", "a\nb", False, None),
    ("relative_path", "a carriage return", "a\rb", False, None),
    ("relative_path", "U+001F", "a\x1f", False, None),
    ("subject", "plain", "Hello", True, None),
    ("subject", "non-ASCII", "Grüße ✓", True, None),
    ("subject", "256 bytes", "x" * 256, True, None),
    ("subject", "empty", "", False, None),
    ("subject", "257 bytes: over the published limit", "x" * 257, False, None),
    ("subject", "258 bytes of two-byte characters", "é" * 129, False, None),
    ("subject", "a number, not a string", 5, False, None),
    ("content_type", "plain", "application/octet-stream", True, None),
    ("content_type", "a parameter", "text/plain; charset=utf-8", True, None),
    ("content_type", "a quoted parameter value, no space", 'text/plain;charset="utf-8"', True,
     None),
    ("content_type", "a quoted value with a space", 'multipart/form-data; boundary="a b"', True,
     None),
    ("content_type", "a suffix", "application/vnd.api+json", True, None),
    ("content_type", "letter case is kept, not refused", "TEXT/Plain", True, None),
    ("content_type", "255 bytes", "a/" + "b" * 253, True, None),
    ("content_type", "256 bytes", "a/" + "b" * 254, False, None),
    ("content_type", "empty", "", False, None),
    ("content_type", "a number, not a string", 5, False, None),
    ("content_type", "no subtype", "text", False, None),
    ("content_type", "an empty subtype", "text/", False, None),
    ("content_type", "an empty type", "/plain", False, None),
    ("content_type", "CR LF and another header", "text/plain\r\nX-Evil: 1", False, None),
    ("content_type", "a trailing line feed", "text/plain\n", False, None),
    ("content_type", "NUL", "text/plain\x00", False, None),
    ("content_type", "a tab", "text/plain;\tcharset=utf-8", False, None),
    ("content_type", "non-ASCII", "text/plaín", False, None),
    ("content_type", "blank", " ", False, None),
    ("content_type", "a leading space", " text/plain", False, None),
    ("content_type", "a parameter without a value", "text/plain; charset", False, None),
    ("content_type", "an empty parameter", "text/plain;", False, None),
]

#: Per code of protocol.md §7: (what it means, the details it requires, an example the
#: reference builds).
ERROR_CASES: list[tuple[str, list[str], errors.WaypostError]] = [
    ("malformed JSON, unknown member, bad value", ["field"],
     errors.InvalidRequest("subject must not be empty", field="subject")),
    ("missing, unknown, expired or revoked credential", [], errors.credential_refused()),
    ("a scope or grant is missing for a visible resource", [],
     errors.Forbidden("the token lacks the message.send scope", field="scope")),
    ("nonexistent, invisible or of another space", [], errors.not_found("message")),
    ("same key, another fingerprint", [],
     errors.IdempotencyConflict("request_id was used for a different request",
                                field="request_id")),
    ("expected_revision is not the head", ["current_revision"],
     errors.RevisionConflict("expected_revision is not the collection's head",
                             current_revision=3)),
    ("an attempt of this key is in flight; retry after Retry-After", [],
     errors.SubmissionPending("an attempt with this request_id is in flight")),
    ("tampered, foreign or undecodable cursor", [],
     errors.CursorInvalid("cursor is invalid", field="cursor")),
    ("cursor minted for another view revision, filter or grant fingerprint", [],
     errors.CursorStale("cursor was minted for another view or grant", field="cursor")),
    ("uploaded bytes differ from the declared size or SHA-256", [],
     errors.ContentMismatch("the bytes differ from the declared size and sha256",
                            field="content")),
    ("upload content not yet stored", [],
     errors.NotReady("the upload has no verified content yet", field="upload_id")),
    ("upload past its expiry or taken by cleanup", [],
     errors.UploadExpired("the upload expired", field="upload_id")),
    ("blob not sealed, not in the space, or not referenceable", [],
     errors.ReferenceInvalid("attachments must be sealed blobs of this space that the producer "
                             "owns or may reference", field="attachment_ids", blob_id="blb_1")),
    ("over a published limit (limit and max), or a counter at its maximum (neither)", [],
     values.over_limit("subject", "subject_bytes", 256)),
    ("temporary storage or dependency failure; safe to retry", [],
     errors.Unavailable("storage is temporarily unavailable; retry")),
    ("the request came too slowly and was not read to its end; safe to retry", [],
     errors.RequestTimeout("the request was not received in time; the connection closes")),
    ("an unexpected failure; nothing about it is shown", [], errors.internal_error()),
]


def vector(description: str, operation: str, request: dict[str, Any],
           normalised: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"description": description, "operation": operation, "request": request, **extra,
            "normalised": normalised, "canonical": canonical_json(normalised).decode(),
            "sha256": digest(normalised).hex()}


def build() -> dict[str, Any]:
    """Every vector file as Python values."""
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
        "validation.json": {
            "about": "Value rules (protocol.md §3): each value as the field named, valid or "
                     "refused with the error given (status, code, details.field, and details."
                     "limit and details.max for a published limit).",
            "vectors": [_value_vector(*case) for case in VALUE_CASES]},
        "errors.json": {
            "about": "Error envelopes (protocol.md §7): each code with its HTTP status, the "
                     "details it requires, and an example answer.",
            "vectors": [_error_vector(*case) for case in ERROR_CASES]},
    }


def _refusal(error: errors.WaypostError) -> dict[str, Any]:
    found = {"status": error.status, "code": error.code, "field": error.details.get("field")}
    found.update({key: error.details[key] for key in ("limit", "max") if key in error.details})
    return found


def _value_vector(kind: str, description: str, value: Any, valid: bool,
                  disagreement: str | None) -> dict[str, Any]:
    """The protocol's answer to one value; where the reference answers otherwise, the vector
    keeps the protocol's answer and says why the reference differs."""
    check, field, operation = KINDS[kind]
    try:
        check(value, field)
        reference: dict[str, Any] | None = None
    except errors.WaypostError as error:
        reference = _refusal(error)
    found: dict[str, Any] = {"kind": kind, "description": description, "operation": operation,
                             "field": field, "value": value, "valid": valid}
    if (reference is None) == valid:
        return {**found, "error": reference}
    if disagreement is None:
        raise AssertionError(f"the reference disagrees with the protocol on {kind} {value!r}")
    return {**found, "error": None if valid else {"status": 400, "code": "INVALID_REQUEST",
                                                   "field": field},
            "reference_disagrees": disagreement}


def _error_vector(meaning: str, required: list[str], error: errors.WaypostError) -> dict[str, Any]:
    headers = {"Retry-After": "1"} if error.code == "SUBMISSION_PENDING" else {}
    return {"code": error.code, "status": error.status, "meaning": meaning,
            "required_details": required,
            "example": {"status": error.status, "headers": headers, "body": error.envelope()}}


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
