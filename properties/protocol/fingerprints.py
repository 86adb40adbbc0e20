"""The kit's own computation of request and grant fingerprints (P04), written from protocol.md
§4–§5 and docs/spec.md, never from the reference's code."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import rfc8785


def sha256_jcs(value: Any) -> str:
    """Hex SHA-256 over the RFC 8785 canonical form."""
    return hashlib.sha256(rfc8785.dumps(value)).hexdigest()


def send_fingerprint(body: dict[str, Any]) -> str:
    """``message.send``: the body without request_id, recipient set sorted and de-duplicated."""
    form = {key: value for key, value in body.items() if key != "request_id"}
    if "recipient_ids" in form:
        form["recipient_ids"] = sorted(set(form["recipient_ids"]))
    return sha256_jcs(form)


def ack_fingerprint(body: dict[str, Any], checkpoint_position: int | None) -> str:
    """``receipt.ack``: items in order; the checkpoint as its decoded position."""
    form: dict[str, Any] = {"items": body["items"]}
    if checkpoint_position is not None:
        form["checkpoint"] = {"position": str(checkpoint_position)}
    return sha256_jcs(form)


def grant_fingerprint(scopes: list[str], recipients: dict[str, Any],
                      collections: list[dict[str, Any]], blob_references: list[str]) -> str:
    """The grant fingerprint of a token's grants (the token id never enters)."""
    by_collection: dict[str, set[str]] = {}
    for grant in collections:
        by_collection.setdefault(grant["collection_id"], set()).update(grant["actions"])
    normal_recipients: dict[str, Any] = (
        {"mode": "any"} if recipients["mode"] == "any"
        else {"mode": "listed", "actor_ids": sorted(set(recipients["actor_ids"]))})
    return sha256_jcs({
        "blob_references": sorted(set(blob_references)),
        "collections": [{"actions": sorted(actions), "collection_id": cid}
                        for cid, actions in sorted(by_collection.items())],
        "recipients": normal_recipients,
        "scopes": sorted(set(scopes)),
    })


def publish_fingerprint(body: dict[str, Any], collection_id: str) -> str:
    """``memory.publish``: the body without request_id plus the path's collection_id; items
    sorted by item_id, delete_ids sorted; omitted fields (metadata too) stay omitted."""
    form = {key: value for key, value in body.items() if key != "request_id"}
    form["collection_id"] = collection_id
    if "items" in form:
        form["items"] = sorted(form["items"], key=lambda item: item["item_id"])
    if "delete_ids" in form:
        form["delete_ids"] = sorted(form["delete_ids"])
    return sha256_jcs(form)


def state_fingerprint(entries: dict[str, dict[str, Any]]) -> str:
    """protocol.md §9: entries sorted by item_id; active ones in full (metadata defaulting to
    ``{}``), tombstones as ``{item_id, state}`` only (no revision numbers, no times). The JCS
    of an array is its elements' JCS joined by commas, so the digest is taken entry by entry:
    a state of 32 MiB is never held as one document."""
    digest = hashlib.sha256(b"[")
    for n, item_id in enumerate(sorted(entries)):
        entry = entries[item_id]
        if entry["state"] == "active":
            form = {"item_id": item_id, "state": "active", "path": entry["path"],
                    "blob_id": entry["blob_id"], "metadata": entry.get("metadata", {})}
        else:
            form = {"item_id": item_id, "state": "tombstone"}
        digest.update((b"," if n else b"") + rfc8785.dumps(form))
    digest.update(b"]")
    return digest.hexdigest()


def manifest_pieces(collection_id: str, revision: int, parent_revision: int,
                    entries: dict[str, dict[str, Any]]) -> Iterator[bytes]:
    """The canonical manifest object of a revision (protocol.md §9) piece by piece: its keys
    in RFC 8785 order, each entry's JCS in ``item_id`` order, commas between them."""
    yield b'{"collection_id":' + rfc8785.dumps(collection_id) + b',"entries":['
    for n, item_id in enumerate(sorted(entries)):
        yield (b"," if n else b"") + rfc8785.dumps(entries[item_id])
    yield (b'],"manifest_version":1,"parent_revision":' + rfc8785.dumps(parent_revision)
           + b',"revision":' + rfc8785.dumps(revision) + b"}")


def manifest_bytes(collection_id: str, revision: int, parent_revision: int,
                   entries: dict[str, dict[str, Any]]) -> bytes:
    """The canonical manifest object of a revision (protocol.md §9)."""
    return b"".join(manifest_pieces(collection_id, revision, parent_revision, entries))


def manifest_size(collection_id: str, revision: int, parent_revision: int,
                  entries: dict[str, dict[str, Any]]) -> int:
    """The bytes of :func:`manifest_bytes`, without holding them."""
    return sum(map(len, manifest_pieces(collection_id, revision, parent_revision, entries)))


def manifest_differs(content: bytes, collection_id: str, revision: int, parent_revision: int,
                     entries: dict[str, dict[str, Any]]) -> int | None:
    """Where ``content`` first differs from the revision's manifest (a byte offset), or None
    if it is exactly the manifest; compared piece by piece, never built whole."""
    view, at = memoryview(content), 0
    for piece in manifest_pieces(collection_id, revision, parent_revision, entries):
        if view[at:at + len(piece)] != piece:
            return at + next((k for k, byte in enumerate(piece)
                              if at + k >= len(view) or view[at + k] != byte), len(piece))
        at += len(piece)
    return None if at == len(view) else at
