"""Data-plane request bodies: parsed before any side effect, with their normalised form.

The normalised form is what the request fingerprint (protocol.md §5) is computed over: the body
without ``request_id``; recipient sets sorted and de-duplicated; ordered lists kept in order;
omitted fields left out. For example ``{"recipient_ids": ["b", "a", "b"], …}`` normalises to
``{"recipient_ids": ["a", "b"], …}`` while an omitted ``recipient_ids`` stays omitted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from waypost.reference.domain import parsing, values
from waypost.reference.domain.errors import InvalidRequest
from waypost.reference.domain.published_limits import Limits

MESSAGE_KINDS = ("info", "question", "result", "todo_suggestion", "memory_notice",
                 "processing_result")
STAGES = ("received", "processed")
MAX_OPTION_BYTES = 256
MAX_OPTIONS = 16
MAX_SOURCE_URI_BYTES = 2048


@dataclass(frozen=True)
class SendMessage:
    """A validated ``message.send`` body."""

    request_id: str
    recipient_ids: tuple[str, ...] | None
    new_thread: bool
    thread_id: str | None
    in_reply_to: str | None
    kind: str
    subject: str
    text: str
    options: tuple[str, ...]
    source_uri: str | None
    attachment_ids: tuple[str, ...]
    metadata: dict[str, Any] | None
    normalised: dict[str, Any]

    def body_document(self) -> dict[str, Any]:
        """The immutable body object stored for the message."""
        return {"text": self.text, "options": list(self.options), "source_uri": self.source_uri}


def _bounded_text(value: Any, field: str, high: int, *, allow_empty: bool = False,
                  limit: str | None = None) -> str:
    text = values.string(value, field)
    size = len(text.encode())
    if limit is not None and size > high:
        raise values.over_limit(field, limit, high)
    if size > high or (size == 0 and not allow_empty):
        raise InvalidRequest(f"{field} must be {0 if allow_empty else 1}-{high} bytes", field=field)
    return text


def parse_send(raw: Any, limits: Limits) -> SendMessage:
    """Validate a ``POST /v1/messages`` body."""
    body = parsing.fields(raw, "", ["request_id", "thread", "kind", "subject", "body"],
                          ["recipient_ids", "in_reply_to", "attachment_ids", "metadata"])
    normalised: dict[str, Any] = {}
    request_id = values.request_id(body["request_id"])
    recipients: tuple[str, ...] | None = None
    if "recipient_ids" in body:
        listed = parsing.items(body["recipient_ids"], "recipient_ids", values.object_id, low=1,
                               high=limits.recipients, limit="recipients")
        recipients = tuple(sorted(set(listed)))
        normalised["recipient_ids"] = list(recipients)
    thread = parsing.fields(body["thread"], "thread", [], ["new", "thread_id"])
    if ("new" in thread) == ("thread_id" in thread):
        raise InvalidRequest('thread must be {"new": true} or {"thread_id": …}', field="thread")
    new_thread = "new" in thread
    if new_thread and thread["new"] is not True:
        raise InvalidRequest("thread.new must be true", field="thread.new")
    thread_id = None if new_thread else values.object_id(thread["thread_id"], "thread.thread_id")
    normalised["thread"] = {"new": True} if new_thread else {"thread_id": thread_id}
    in_reply_to = None
    if "in_reply_to" in body:
        in_reply_to = values.object_id(body["in_reply_to"], "in_reply_to")
        if new_thread:
            raise InvalidRequest("in_reply_to needs an existing thread", field="in_reply_to")
        normalised["in_reply_to"] = in_reply_to
    kind = parsing.one_of(body["kind"], "kind", MESSAGE_KINDS)
    subject = values.subject(body["subject"])
    normalised.update(kind=kind, subject=subject)
    content = parsing.fields(body["body"], "body", ["text"], ["options", "source_uri"])
    text = values.body_text(_bounded_text(content["text"], "body.text", limits.body_text_bytes,
                                          allow_empty=True, limit="body_text_bytes"),
                            "body.text")
    normalised_body: dict[str, Any] = {"text": text}
    options: tuple[str, ...] = ()
    if "options" in content:
        options = tuple(parsing.items(
            content["options"], "body.options",
            lambda v, f: values.line(v, f, MAX_OPTION_BYTES), high=MAX_OPTIONS))
        normalised_body["options"] = list(options)
    source_uri = None
    if "source_uri" in content:
        source_uri = values.line(content["source_uri"], "body.source_uri", MAX_SOURCE_URI_BYTES)
        normalised_body["source_uri"] = source_uri
    normalised["body"] = normalised_body
    attachments: tuple[str, ...] = ()
    if "attachment_ids" in body:
        attachments = tuple(parsing.items(body["attachment_ids"], "attachment_ids",
                                          values.object_id, high=limits.attachments,
                                          limit="attachments"))
        if len(set(attachments)) != len(attachments):
            raise InvalidRequest("attachment_ids repeats a blob", field="attachment_ids")
        normalised["attachment_ids"] = list(attachments)
    metadata = None
    if "metadata" in body:
        metadata = values.metadata(body["metadata"])
        normalised["metadata"] = metadata
    return SendMessage(request_id, recipients, new_thread, thread_id, in_reply_to, kind, subject,
                       text, options, source_uri, attachments, metadata, normalised)


@dataclass(frozen=True)
class AckItem:
    item_id: str
    stage: str


@dataclass(frozen=True)
class Ack:
    """A validated ``receipt.ack`` body; the checkpoint cursor is decoded by the service."""

    request_id: str
    items: tuple[AckItem, ...]
    checkpoint_cursor: str | None

    def normalised(self, checkpoint_position: int | None) -> dict[str, Any]:
        """Items in order; the checkpoint as its decoded position, never the cursor string."""
        form: dict[str, Any] = {
            "items": [{"item_id": item.item_id, "stage": item.stage} for item in self.items]}
        if checkpoint_position is not None:
            form["checkpoint"] = {"position": values.sequence_text(checkpoint_position)}
        return form


def parse_ack(raw: Any, limits: Limits) -> Ack:
    """Validate a ``POST /v1/acks`` body: 0–20 items, none only with a checkpoint."""
    body = parsing.fields(raw, "", ["request_id", "items"], ["checkpoint"])
    request_id = values.request_id(body["request_id"])

    def item(value: Any, field: str) -> AckItem:
        entry = parsing.fields(value, field, ["item_id", "stage"])
        return AckItem(values.object_id(entry["item_id"], f"{field}.item_id"),
                       parsing.one_of(entry["stage"], f"{field}.stage", STAGES))

    parsed = tuple(parsing.items(body["items"], "items", item, high=limits.ack_items,
                                 limit="ack_items"))
    if len({entry.item_id for entry in parsed}) != len(parsed):
        raise InvalidRequest("items names one item twice; one ACK states one stage per item",
                             field="items")
    cursor = None
    if "checkpoint" in body:
        checkpoint = parsing.fields(body["checkpoint"], "checkpoint", ["cursor"])
        cursor = values.string(checkpoint["cursor"], "checkpoint.cursor")
    if not parsed and cursor is None:
        raise InvalidRequest("an ACK needs items, a checkpoint, or both", field="items")
    return Ack(request_id, parsed, cursor)
