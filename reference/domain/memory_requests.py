"""``memory.publish`` bodies and manifest inputs, parsed before any side effect.

The normalised form (fingerprinted, protocol.md §5) is the body without ``request_id`` plus the
``collection_id`` of the path, with ``items`` sorted by ``item_id`` and ``delete_ids`` sorted;
omitted fields stay omitted. Example: ``{"collection_id": "notes", "expected_revision": 0,
"mode": "delta", "items": [{"item_id": "a", "path": "a.md", "blob_id": "blb_1"}]}``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from waypost.reference.domain import parsing, values
from waypost.reference.domain.errors import InvalidRequest
from waypost.reference.domain.memory_state import ItemInput
from waypost.reference.domain.published_limits import Limits

MODES = ("snapshot", "delta")


@dataclass(frozen=True)
class Changes:
    """Upserts and deletes, from the request itself or from a manifest blob."""

    items: tuple[ItemInput, ...]
    delete_ids: tuple[str, ...]


@dataclass(frozen=True)
class PublishMemory:
    """A validated ``memory.publish`` body: inline changes, or a manifest blob to read."""

    request_id: str
    collection_id: str
    expected_revision: int
    mode: str
    inline: Changes | None
    manifest_blob_id: str | None
    normalised: dict[str, Any]


def _item(value: Any, field: str) -> tuple[ItemInput, dict[str, Any]]:
    body = parsing.fields(value, field, ["item_id", "path", "blob_id"], ["metadata"])
    item = ItemInput(values.object_id(body["item_id"], parsing.at(field, "item_id")),
                     values.relative_path(body["path"], parsing.at(field, "path")),
                     values.object_id(body["blob_id"], parsing.at(field, "blob_id")),
                     None if "metadata" not in body
                     else values.metadata(body["metadata"], parsing.at(field, "metadata")))
    normalised: dict[str, Any] = {"item_id": item.item_id, "path": item.path,
                                  "blob_id": item.blob_id}
    if item.metadata is not None:
        normalised["metadata"] = item.metadata
    return item, normalised


def _changes(body: dict[str, Any], mode: str, where: str, high: int, limit: str
             ) -> tuple[Changes, dict[str, Any]]:
    """``items`` (required) and ``delete_ids`` (optional) with their normalised form."""
    parsed = parsing.items(body["items"], parsing.at(where, "items"), _item, high=high,
                           limit=limit)
    parsed.sort(key=lambda pair: pair[0].item_id)
    ids = [item.item_id for item, _ in parsed]
    if len(set(ids)) != len(ids):
        raise InvalidRequest("items lists one item_id twice", field=parsing.at(where, "items"))
    paths = [item.path for item, _ in parsed]
    if len(set(paths)) != len(paths):
        raise InvalidRequest("items lists one path twice", field=parsing.at(where, "items"))
    normalised: dict[str, Any] = {"items": [form for _, form in parsed]}
    deletes: list[str] = []
    if "delete_ids" in body:
        field = parsing.at(where, "delete_ids")
        deletes = sorted(parsing.items(body["delete_ids"], field, values.object_id, high=high,
                                       limit=limit))
        if len(set(deletes)) != len(deletes):
            raise InvalidRequest("delete_ids lists one id twice", field=field)
        if mode == "snapshot" and deletes:
            raise InvalidRequest("a snapshot has no delete_ids", field=field)
        both = set(deletes) & set(ids)
        if both:
            raise InvalidRequest("an item may not be both upserted and deleted", field=field,
                                 item_id=sorted(both)[0])
        normalised["delete_ids"] = deletes
    return Changes(tuple(item for item, _ in parsed), tuple(deletes)), normalised


def parse_publish(raw: Any, collection_id: str, limits: Limits) -> PublishMemory:
    """Validate a publish body; inline ``items`` (+ ``delete_ids``) or ``manifest_blob_id``."""
    body = parsing.fields(raw, "", ["request_id", "expected_revision", "mode"],
                          ["items", "delete_ids", "manifest_blob_id"])
    request_id = values.request_id(body["request_id"])
    cid = values.object_id(collection_id, "collection_id")
    expected = values.revision(body["expected_revision"], "expected_revision")
    mode = parsing.one_of(body["mode"], "mode", MODES)
    normalised: dict[str, Any] = {"collection_id": cid, "expected_revision": expected,
                                  "mode": mode}
    if "manifest_blob_id" in body:
        for other in ("items", "delete_ids"):
            if other in body:
                raise InvalidRequest("give either manifest_blob_id or inline items, not both",
                                     field=other)
        blob_id = values.object_id(body["manifest_blob_id"], "manifest_blob_id")
        normalised["manifest_blob_id"] = blob_id
        return PublishMemory(request_id, cid, expected, mode, None, blob_id, normalised)
    if "items" not in body:
        raise InvalidRequest("items (or manifest_blob_id) is required", field="items")
    changes, forms = _changes(body, mode, "", limits.inline_items_per_publish,
                              "inline_items_per_publish")
    return PublishMemory(request_id, cid, expected, mode, changes, None, {**normalised, **forms})


def manifest_changes(document: Any, mode: str, limits: Limits) -> Changes:
    """The changes of a decoded manifest document, under the same rules as inline input; any
    fault is INVALID_REQUEST on ``manifest_blob_id``."""
    try:
        body = parsing.fields(document, "manifest", ["items"], ["delete_ids"])
        changes, _ = _changes(body, mode, "manifest", limits.memory_entries_per_revision,
                              "memory_entries_per_revision")
    except InvalidRequest as error:
        raise InvalidRequest(f"manifest blob: {error.message}", field="manifest_blob_id",
                             detail=error.details) from None
    return changes
