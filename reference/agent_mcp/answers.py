"""The tools' answers: one model a tool, whose compact JSON Schema is the tool's
``outputSchema``. Every answer is checked against its model before it leaves (the values come
from the server, through the local file or directly), so ``structuredContent`` always matches
the schema the tool declares."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from waypost.reference.agent_mcp.arguments import schema
from waypost.reference.agent_mcp.errors import ToolFailure


class Answer(BaseModel):
    """Only the members named, of their JSON types; optional ones are left out when unset."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class InboxItem(Answer):
    item_id: str
    seq: int
    from_: str = Field(alias="from")
    subject: str
    kind: str
    state: str | None = None


class Inbox(Answer):
    items: list[InboxItem]
    next_after: int | None = None


class Item(Answer):
    """A message in full, a memory revision (``entries``: a count) or a receipt."""

    item_id: str
    state: str | None = None
    message_id: str | None = None
    thread_id: str | None = None
    from_: str | None = Field(None, alias="from")
    to: list[str] | None = None
    kind: str | None = None
    subject: str | None = None
    text: str | None = None
    in_reply_to: str | None = None
    options: list[str] | None = None
    attachments: list[str] | None = None
    collection_id: str | None = None
    revision: int | None = None
    entries: int | None = None
    receipt: dict[str, Any] | None = None


class Done(Answer):
    done: list[str]
    acked: bool
    reason: str | None = None


class Sent(Answer):
    message_id: str
    thread_id: str
    repeat: bool | None = None


class MemoryEntry(Answer):
    item_id: str
    path: str
    blob_id: str
    metadata: dict[str, Any] | None = None


class Memory(Answer):
    collection_id: str
    revision: int
    head: int
    entries: list[MemoryEntry]
    cursor: str | None = None


class Published(Answer):
    published: bool
    revision: int | None = None
    changed: bool | None = None
    conflict: bool | None = None
    current_revision: int | None = None


class Attached(Answer):
    blob_id: str
    size: int
    sha256: str


class BlobRead(Answer):
    blob_id: str
    content_type: str
    size: int
    text: str | None = None
    saved_to: str | None = None


def _opened(node: Any) -> Any:
    """The schema without ``additionalProperties`` nor descriptions (the tool's own says what
    it answers), to keep ``tools/list`` short."""
    if isinstance(node, list):
        return [_opened(value) for value in node]
    if not isinstance(node, dict):
        return node
    return {k: _opened(v) for k, v in node.items()
            if k not in ("additionalProperties", "description")}


def output_schema(model: type[Answer]) -> dict[str, Any]:
    opened: dict[str, Any] = _opened(schema(model))
    return opened


def checked(model: type[Answer], answer: dict[str, Any]) -> dict[str, Any]:
    """``answer`` as the tool declares it (optional members left out when unset); an answer
    that does not fit is the server's contract broken somewhere upstream: ``UNAVAILABLE``."""
    try:
        valid = model.model_validate(answer)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the answer"
        raise ToolFailure("UNAVAILABLE", f"an answer of the server broke the protocol: "
                          f"{where}: {first['msg']}") from None
    dumped: dict[str, Any] = valid.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped
