"""Scopes and resource grants (protocol.md §4) and the grant fingerprint.

The grant fingerprint is SHA-256 over the JCS form of the normalised grants, e.g.::

    {"blob_references": [], "collections": [{"actions": ["read"], "collection_id": "notes"}],
     "recipients": {"mode": "any"}, "scopes": ["message.read", "message.send"]}

Sets are sorted and de-duplicated; the token id never enters, so a rotated token with the same
grants keeps its cursors and checkpoints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from waypost.reference.domain import parsing, values
from waypost.reference.domain.canonical import digest
from waypost.reference.domain.errors import InvalidRequest

SCOPES = (
    "message.send", "message.read", "space.observe", "receipt.write", "memory.write",
    "memory.read", "blob.write", "blob.reference", "event.subscribe",
)
ACTIONS = ("read", "write")


@dataclass(frozen=True)
class Grants:
    """What one token may do: scopes, recipients, collection actions, extra blob references."""

    scopes: frozenset[str]
    recipients_any: bool
    recipient_ids: frozenset[str]
    collections: frozenset[tuple[str, str]]  # (collection_id, action)
    blob_references: frozenset[str]

    def normalised(self) -> dict[str, Any]:
        """The canonical JSON form the fingerprint is computed over."""
        by_collection: dict[str, set[str]] = {}
        for collection_id, action in self.collections:
            by_collection.setdefault(collection_id, set()).add(action)
        recipients: dict[str, Any] = (
            {"mode": "any"} if self.recipients_any
            else {"mode": "listed", "actor_ids": sorted(self.recipient_ids)}
        )
        return {
            "blob_references": sorted(self.blob_references),
            "collections": [
                {"actions": sorted(actions), "collection_id": cid}
                for cid, actions in sorted(by_collection.items())
            ],
            "recipients": recipients,
            "scopes": sorted(self.scopes),
        }

    def fingerprint(self) -> bytes:
        """SHA-256(JCS(normalised grants)), 32 bytes."""
        return digest(self.normalised())

    def may_send_to(self, actor_id: str) -> bool:
        return self.recipients_any or actor_id in self.recipient_ids

    def may(self, collection_id: str, action: str) -> bool:
        return (collection_id, action) in self.collections


def parse_grants(body: dict[str, Any]) -> Grants:
    """Parse the grant fields of a token request (``scopes``, ``recipients``, ``collections``,
    ``blob_references``); every list is explicit: an empty one grants nothing."""
    scopes = parsing.items(body["scopes"], "scopes", lambda v, f: parsing.one_of(v, f, SCOPES))
    recipients = parsing.fields(body["recipients"], "recipients", ["mode"], ["actor_ids"])
    mode = parsing.one_of(recipients["mode"], "recipients.mode", ("any", "listed"))
    if mode == "any" and "actor_ids" in recipients:
        raise InvalidRequest("recipients.actor_ids is only for mode listed",
                             field="recipients.actor_ids")
    if mode == "listed" and "actor_ids" not in recipients:
        raise InvalidRequest("recipients.actor_ids is required for mode listed",
                             field="recipients.actor_ids")
    actor_ids = parsing.items(recipients.get("actor_ids", []), "recipients.actor_ids",
                              values.object_id)
    collections: set[tuple[str, str]] = set()
    for index, entry in enumerate(parsing.items(body["collections"], "collections", _pass)):
        where = f"collections[{index}]"
        grant = parsing.fields(entry, where, ["collection_id", "actions"])
        collection_id = values.object_id(grant["collection_id"], f"{where}.collection_id")
        actions = parsing.items(grant["actions"], f"{where}.actions",
                                lambda v, f: parsing.one_of(v, f, ACTIONS), low=1)
        collections.update((collection_id, action) for action in actions)
    blob_references = parsing.items(body["blob_references"], "blob_references", values.object_id)
    return Grants(frozenset(scopes), mode == "any", frozenset(actor_ids), frozenset(collections),
                  frozenset(blob_references))


def _pass(value: Any, field: str) -> Any:
    return value
