"""The protocol's limits (§11, at their defaults: a deployment may publish smaller ones and
refuse more) checked before anything is queued, so that a write the server must refuse never
enters the outbox."""

from __future__ import annotations

from collections.abc import Sequence

from waypost.reference.agent_mcp.errors import ToolFailure

SUBJECT_BYTES = 256
BODY_TEXT_BYTES = 64 * 1024
RECIPIENTS = 64
ATTACHMENTS = 16
INLINE_ITEMS_PER_PUBLISH = 1000


def _over(field: str, limit: str, maximum: int, size: int, unit: str) -> ToolFailure:
    return ToolFailure("RESOURCE_LIMIT", f"{field}: {size} {unit}, over {limit} ({maximum})",
                       {"limit": limit, "max": maximum, "field": field})


def _utf8(field: str, text: str, limit: str, maximum: int) -> None:
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > maximum:
        raise _over(field, limit, maximum, size, "bytes")


def _count(field: str, values: Sequence[str], limit: str, maximum: int) -> None:
    if len(values) > maximum:
        raise _over(field, limit, maximum, len(values), "ids")


def check_message(subject: str | None, text: str, recipients: Sequence[str],
                  attachments: Sequence[str]) -> None:
    """A send or reply within the limits: a subject of 1 to 256 bytes (``None``: the reply's
    default), a text up to 64 KiB, 1 to 64 recipients, up to 16 distinct attachments."""
    if subject is not None:
        if not subject:
            raise ToolFailure("INVALID_REQUEST", "subject: empty", {"field": "subject"})
        _utf8("subject", subject, "subject_bytes", SUBJECT_BYTES)
    _utf8("text", text, "body_text_bytes", BODY_TEXT_BYTES)
    _count("to", recipients, "recipients", RECIPIENTS)
    _count("attachment_ids", attachments, "attachments", ATTACHMENTS)
    if len(set(attachments)) != len(attachments):
        raise ToolFailure("INVALID_REQUEST", "attachment_ids: a blob id appears twice",
                          {"field": "attachment_ids"})


def check_publish(entries: int, deletes: int) -> None:
    """A publish within ``inline_items_per_publish`` (entries and deletes, each)."""
    if entries > INLINE_ITEMS_PER_PUBLISH:
        raise _over("entries", "inline_items_per_publish", INLINE_ITEMS_PER_PUBLISH, entries,
                    "entries")
    if deletes > INLINE_ITEMS_PER_PUBLISH:
        raise _over("delete_ids", "inline_items_per_publish", INLINE_ITEMS_PER_PUBLISH, deletes,
                    "ids")


def subject_prefix(prefix: str, subject: str) -> str:
    """``prefix + subject`` cut to :data:`SUBJECT_BYTES` bytes of UTF-8, on a character."""
    whole = (prefix + subject).encode("utf-8")[:SUBJECT_BYTES]
    return whole.decode("utf-8", "ignore")
