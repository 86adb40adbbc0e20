"""Pinned memory revisions as MCP resources: every revision the consumer stored from its feed,
read from the local file. A revision never changes, so neither does its resource."""

from __future__ import annotations

import json
import re
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from waypost.reference.consumer.store import LocalStore

PREFIX = "waypost://memory/"
TEMPLATE = PREFIX + "{collection_id}/{revision}"
PAGE = 50
#: JSON-RPC code of an unknown resource (the MCP specification's).
RESOURCE_NOT_FOUND = -32002
#: A revision or an offset as this side reads them: ASCII digits that fit SQLite's integers.
_NUMBER = re.compile(r"[0-9]{1,16}")


def listing(store: LocalStore, cursor: str | None) -> types.ListResourcesResult:
    """A page of pinned revisions, by collection and revision."""
    if cursor is not None and not _NUMBER.fullmatch(cursor):
        raise MCPError(types.INVALID_PARAMS, "unknown cursor")
    offset = int(cursor or 0)
    rows = store.rows("SELECT collection_id, revision, entries FROM local_memory_versions"
                      " ORDER BY collection_id, revision LIMIT ? OFFSET ?", (PAGE + 1, offset))
    resources = [types.Resource(uri=f"{PREFIX}{r['collection_id']}/{r['revision']}",
                                name=f"{r['collection_id']} r{r['revision']}",
                                description=f"{r['entries']} entries", mime_type="application/json")
                 for r in rows[:PAGE]]
    return types.ListResourcesResult(resources=resources,
                                     next_cursor=str(offset + PAGE) if len(rows) > PAGE else None)


def read(store: LocalStore, uri: str) -> types.ReadResourceResult:
    """One pinned revision's entries (active and tombstones) as JSON."""
    collection_id, _, revision = uri.removeprefix(PREFIX).partition("/")
    found = uri.startswith(PREFIX) and _NUMBER.fullmatch(revision) and store.value(
        "SELECT 1 FROM local_memory_versions WHERE collection_id = ? AND revision = ?",
        (collection_id, int(revision)))
    if not found:
        raise MCPError(RESOURCE_NOT_FOUND, f"no pinned revision at {uri}")
    entries: list[dict[str, Any]] = [
        {"item_id": e["entry_id"], "path": e["path"], "blob_id": e["blob_id"]}
        if e["state"] == "active" else
        {"item_id": e["entry_id"], "deleted_in_revision": e["deleted_in_revision"]}
        for e in store.rows("SELECT entry_id, state, path, blob_id, deleted_in_revision"
                            " FROM local_memory_entries WHERE collection_id = ? AND revision = ?"
                            " ORDER BY entry_id", (collection_id, int(revision)))]
    text = json.dumps({"collection_id": collection_id, "revision": int(revision),
                       "entries": entries}, separators=(",", ":"), ensure_ascii=False)
    return types.ReadResourceResult(contents=[types.TextResourceContents(
        uri=uri, mime_type="application/json", text=text)])
