"""The kit's own computation of request and grant fingerprints (P04), written from protocol.md
§4–§5 and docs/spec.md, never from the reference's code."""

from __future__ import annotations

import hashlib
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
    ``{}``), tombstones as ``{item_id, state}`` only (no revision numbers, no times)."""
    form = []
    for item_id in sorted(entries):
        entry = entries[item_id]
        if entry["state"] == "active":
            form.append({"item_id": item_id, "state": "active", "path": entry["path"],
                         "blob_id": entry["blob_id"], "metadata": entry.get("metadata", {})})
        else:
            form.append({"item_id": item_id, "state": "tombstone"})
    return sha256_jcs(form)


def manifest_bytes(collection_id: str, revision: int, parent_revision: int,
                   entries: dict[str, dict[str, Any]]) -> bytes:
    """The canonical manifest object of a revision (protocol.md §9)."""
    return bytes(rfc8785.dumps({
        "manifest_version": 1, "collection_id": collection_id, "revision": revision,
        "parent_revision": parent_revision,
        "entries": [entries[item_id] for item_id in sorted(entries)]}))
