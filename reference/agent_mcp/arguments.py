"""The tools' arguments: strict models (unknown or mistyped arguments are refused) and the
compact JSON Schemas published in ``tools/list``."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from waypost.reference.consumer.answers import ID, MAX_INTEGER, MAX_SEQUENCE

# Most values are the server's to judge (it answers INVALID_REQUEST naming the field): the
# schemas hold types, the id grammar and the bounds this side relies on (integers that fit its
# SQLite file and the protocol), so that the tool list stays short. Sizes are checked apart
# (argument_limits.py), as the protocol answers them: 413 RESOURCE_LIMIT.
#: An object id (WP-VAL-4).
Id = Annotated[str, Field(pattern=f"^{ID.pattern}$")]
Revision = Annotated[int, Field(ge=0, le=MAX_INTEGER)]
Key = Annotated[str, Field(min_length=1, description="dedup key (default: the arguments)")]
Kind = Literal["info", "question", "result", "todo_suggestion", "memory_notice",
               "processing_result"]


class Strict(BaseModel):
    """No unknown members; values of the declared JSON types only."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Inbox(Strict):
    state: Literal["pending", "done", "error", "all"] = "pending"
    limit: int = Field(20, ge=1, le=20)
    after: int = Field(0, ge=0, le=MAX_SEQUENCE, description="the last seq seen (next page)")


class ReadMessage(Strict):
    item_id: Id


class MarkDone(Strict):
    item_ids: list[Id] = Field(min_length=1, max_length=20)


Attachments = Annotated[list[Id], Field(default_factory=list, description="blob ids from attach")]


class Send(Strict):
    to: list[Id] = Field(min_length=1, description="actor ids")
    subject: str
    text: str
    kind: Kind = "info"
    thread_id: Id | None = Field(None, description="default: a new thread")
    attachment_ids: Attachments
    key: Key | None = None


class Reply(Strict):
    item_id: Id
    text: str
    subject: str | None = Field(None, description="default: Re: <subject>")
    kind: Kind = "result"
    attachment_ids: Attachments
    key: Key | None = None


class MemoryGet(Strict):
    collection_id: Id
    revision: Revision | None = Field(None, description="default: the head")
    cursor: str | None = None
    limit: int = Field(50, ge=1, le=100)


class Entry(Strict):
    item_id: Id
    path: str
    blob_id: Id


class MemoryPublish(Strict):
    collection_id: Id
    expected_revision: Revision = Field(description="the head it applies to")
    entries: list[Entry] = Field(default_factory=list)
    delete_ids: list[Id] = Field(default_factory=list)
    mode: Literal["delta", "snapshot"] = "delta"
    key: Key | None = None


class Attach(Strict):
    path: str = Field(min_length=1, description="a file in the agent's folder")
    content_type: str | None = Field(None, description="default: guessed from the name")


class ReadBlob(Strict):
    blob_id: Id
    save_to: str | None = Field(None, min_length=1, description="a new file in the agent's folder")


def _compact(node: Any) -> Any:
    """Drop titles, and turn ``anyOf [X, null]`` with a null default into an optional X."""
    if isinstance(node, list):
        return [_compact(value) for value in node]
    if not isinstance(node, dict):
        return node
    node = {k: ({name: _compact(s) for name, s in v.items()} if k in ("properties", "$defs")
                else _compact(v)) for k, v in node.items() if k != "title"}
    options = node.get("anyOf")
    if (isinstance(options, list) and len(options) == 2 and {"type": "null"} in options
            and node.get("default", ...) is None):
        (kept,) = [option for option in options if option != {"type": "null"}]
        node = {**{k: v for k, v in node.items() if k not in ("anyOf", "default")}, **kept}
    return node


def _inline(node: Any, definitions: dict[str, Any]) -> Any:
    """Replace ``$ref``s to ``$defs`` by the definitions (some clients do not follow them)."""
    if isinstance(node, list):
        return [_inline(value, definitions) for value in node]
    if not isinstance(node, dict):
        return node
    if set(node) == {"$ref"}:
        return _inline(definitions[node["$ref"].rsplit("/", 1)[1]], definitions)
    return {k: _inline(v, definitions) for k, v in node.items() if k != "$defs"}


def schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON Schema without titles or references, every object closed
    (``additionalProperties: false``)."""
    raw = model.model_json_schema()
    compact: dict[str, Any] = _compact(_inline(raw, raw.get("$defs", {})))
    return compact
