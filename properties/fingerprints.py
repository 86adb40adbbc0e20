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
