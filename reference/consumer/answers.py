"""Every answer the client half reads, checked against the contract before anything of it is
stored or shown (docs/protocol.md §3, §6.3). The consumer and ``waypost mcp`` both read the
server through these checks; a failure is :class:`BadAnswer`, which names the server's fault.

The checks are of shape and of the promises a client relies on: types, ids of the id grammar,
sequences in the decimal-string form and strictly increasing, pages no longer than asked for,
no item twice, and the answer being about what was asked (message A is A). Members the contract
does not name are ignored (a server MAY add members)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from waypost.reference.consumer.errors import BadAnswer

ID = re.compile(r"[A-Za-z0-9_-]{1,96}")
SEQUENCE = re.compile(r"[1-9][0-9]{0,18}")
TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z")
CODE = re.compile(r"[A-Z][A-Z0-9_]{0,63}")
MAX_INTEGER = 2**53 - 1
MAX_SEQUENCE = 2**63 - 1
#: The longest cursor kept: cursors are opaque, but a client stores them.
MAX_CURSOR = 4096
KINDS = frozenset(["info", "question", "result", "todo_suggestion", "memory_notice",
                   "processing_result"])
STAGES = frozenset(["received", "processed"])
#: Feed item types this consumer knows; items of another type are skipped (docs/consumer.md).
ITEM_TYPES = ("message", "memory_revision", "receipt")


def fail(where: str, problem: str) -> BadAnswer:
    return BadAnswer(f"{where}: {problem}")


def obj(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise fail(where, f"expected an object, got {type(value).__name__}")
    return value


def member(value: dict[str, Any], name: str, where: str) -> Any:
    if name not in value:
        raise fail(f"{where}.{name}", "missing")
    return value[name]


def text(value: Any, where: str, max_bytes: int = 65536, *, empty: bool = True) -> str:
    if not isinstance(value, str) or (not empty and not value):
        raise fail(where, "expected a non-empty string" if not empty else "expected a string")
    if len(value.encode("utf-8", "surrogatepass")) > max_bytes:
        raise fail(where, f"longer than {max_bytes} bytes")
    return value


def identifier(value: Any, where: str) -> str:
    """An object id (WP-VAL-4): 1 to 96 characters of ``[A-Za-z0-9_-]``."""
    if not isinstance(value, str) or not ID.fullmatch(value):
        raise fail(where, "not an id (1 to 96 of A-Z a-z 0-9 _ -)")
    return value


def optional(check: Callable[[Any, str], Any], value: Any, where: str) -> Any:
    return None if value is None else check(value, where)


def integer(value: Any, where: str, low: int = 0, high: int = MAX_INTEGER) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise fail(where, f"expected an integer from {low} to {high}")
    return value


def sequence(value: Any, where: str) -> int:
    """A sequence (WP-VAL-9): a decimal string of 1 to 2^63-1, no sign, no leading zero."""
    if not isinstance(value, str) or not SEQUENCE.fullmatch(value) or int(value) > MAX_SEQUENCE:
        raise fail(where, "not a sequence (a decimal string from 1 to 2^63-1)")
    return int(value)


def timestamp(value: Any, where: str) -> str:
    """A time the server writes (WP-VAL-13)."""
    if not isinstance(value, str) or not TIME.fullmatch(value):
        raise fail(where, "not a server time (RFC 3339, UTC, three fraction digits)")
    return value


def ids(value: Any, where: str, most: int) -> list[str]:
    if not isinstance(value, list) or len(value) > most:
        raise fail(where, f"expected a list of at most {most} ids")
    return [identifier(one, f"{where}[{n}]") for n, one in enumerate(value)]


def boolean(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise fail(where, "expected true or false")
    return value


def cursor(value: Any, where: str) -> str:
    return text(value, where, MAX_CURSOR, empty=False)


# ----- feed pages -------------------------------------------------------------------------


def _message_item(value: Any, where: str) -> None:
    value = obj(value, where)
    identifier(member(value, "message_id", where), f"{where}.message_id")
    text(member(value, "subject", where), f"{where}.subject", 256)
    kind(member(value, "kind", where), f"{where}.kind")


def _revision_item(value: Any, where: str) -> None:
    value = obj(value, where)
    identifier(member(value, "collection_id", where), f"{where}.collection_id")
    integer(member(value, "revision", where), f"{where}.revision", 1)
    integer(member(value, "parent_revision", where), f"{where}.parent_revision")
    optional(identifier, value.get("manifest_blob_id"), f"{where}.manifest_blob_id")


def _receipt_item(value: Any, where: str) -> None:
    value = obj(value, where)
    for name in ("receipt_id", "subject_item_id", "subject_resource_id", "consumer_id",
                 "actor_id"):
        identifier(member(value, name, where), f"{where}.{name}")
    integer(member(value, "receipt_version", where), f"{where}.receipt_version", 1)
    stage(member(value, "stage", where), f"{where}.stage")
    timestamp(member(value, "updated_at", where), f"{where}.updated_at")


BODIES: dict[str, Callable[[Any, str], None]] = {
    "message": _message_item, "memory_revision": _revision_item, "receipt": _receipt_item}


def kind(value: Any, where: str) -> str:
    if value not in KINDS:
        raise fail(where, "not a message kind")
    return str(value)


def stage(value: Any, where: str) -> str:
    if value not in STAGES:
        raise fail(where, "not a stage (received or processed)")
    return str(value)


def feed_item(raw: Any, where: str) -> dict[str, Any]:
    """One feed item (WP-HTTP-12); an item of an unknown type keeps only its common members."""
    value = obj(raw, where)
    identifier(member(value, "item_id", where), f"{where}.item_id")
    sequence(member(value, "sequence", where), f"{where}.sequence")
    item_type = text(member(value, "type", where), f"{where}.type", 64, empty=False)
    identifier(member(value, "producer_id", where), f"{where}.producer_id")
    ids(member(value, "recipient_ids", where), f"{where}.recipient_ids", 64)
    optional(identifier, value.get("thread_id"), f"{where}.thread_id")
    timestamp(member(value, "committed_at", where), f"{where}.committed_at")
    if item_type in BODIES:
        BODIES[item_type](member(value, item_type, where), f"{where}.{item_type}")
    return value


def _listing(answer: Any, what: str, limit: int) -> tuple[dict[str, Any], list[Any]]:
    """A page and its ``items``: a list of at most ``limit``."""
    page = obj(answer, what)
    items = member(page, "items", what)
    if not isinstance(items, list):
        raise fail(f"{what}.items", "expected a list")
    if len(items) > limit:
        raise fail(f"{what}.items", f"{len(items)} items, more than the {limit} asked for")
    return page, items


def feed_page(answer: Any, limit: int, after: int, asked: str | None) -> dict[str, Any]:
    """A feed page read with ``limit`` after sequence ``after`` with cursor ``asked``
    (WP-HTTP-13, WP-FEED-2, WP-FEED-3): at most ``limit`` items, each id once, sequences
    strictly increasing after ``after``, and a cursor that moves when items came."""
    page, items = _listing(answer, "feed page", limit)
    last = after
    seen: set[str] = set()
    for n, raw in enumerate(items):
        item = feed_item(raw, f"feed page.items[{n}]")
        number = int(item["sequence"])
        if item["item_id"] in seen:
            raise fail(f"feed page.items[{n}].item_id", "the same item twice")
        if number <= last:
            raise fail(f"feed page.items[{n}].sequence",
                       f"{number} is not after {last}: an item seen before, or out of order")
        last = number
        seen.add(item["item_id"])
    next_cursor = cursor(member(page, "next_cursor", "feed page"), "feed page.next_cursor")
    boolean(member(page, "has_more", "feed page"), "feed page.has_more")
    if items and next_cursor == asked:
        raise fail("feed page.next_cursor", "the cursor did not move past the items given")
    return page


# ----- what sync reads for the items ------------------------------------------------------


def message(answer: Any, message_id: str) -> dict[str, Any]:
    """A message read (WP-HTTP-11) that is the message asked for."""
    value = obj(answer, "message")
    if member(value, "message_id", "message") != message_id:
        raise fail("message.message_id", f"asked for {message_id}, got another message")
    identifier(member(value, "thread_id", "message"), "message.thread_id")
    optional(identifier, value.get("in_reply_to"), "message.in_reply_to")
    identifier(member(value, "producer_id", "message"), "message.producer_id")
    ids(member(value, "recipient_ids", "message"), "message.recipient_ids", 64)
    kind(member(value, "kind", "message"), "message.kind")
    text(member(value, "subject", "message"), "message.subject", 256, empty=False)
    body = obj(member(value, "body", "message"), "message.body")
    text(member(body, "text", "message.body"), "message.body.text", 65536)
    options = body.get("options") or []
    if not isinstance(options, list) or len(options) > 16:
        raise fail("message.body.options", "expected at most 16 strings")
    for n, option in enumerate(options):
        text(option, f"message.body.options[{n}]", 256, empty=False)
    optional(lambda v, w: text(v, w, 2048), body.get("source_uri"), "message.body.source_uri")
    ids(value.get("attachment_ids") or [], "message.attachment_ids", 16)
    optional(obj, value.get("metadata"), "message.metadata")
    timestamp(member(value, "committed_at", "message"), "message.committed_at")
    return value


def collection(answer: Any, collection_id: str) -> dict[str, Any]:
    """A collection read (WP-HTTP-17) of the collection asked for."""
    value = obj(answer, "collection")
    if member(value, "collection_id", "collection") != collection_id:
        raise fail("collection.collection_id", f"asked for {collection_id}, got another")
    integer(member(value, "current_revision", "collection"), "collection.current_revision")
    return value


def entry(raw: Any, where: str) -> dict[str, Any]:
    """One entry of an item page (WP-HTTP-17): active or a tombstone."""
    value = obj(raw, where)
    identifier(member(value, "item_id", where), f"{where}.item_id")
    state = member(value, "state", where)
    if state == "active":
        text(member(value, "path", where), f"{where}.path", 1024, empty=False)
        identifier(member(value, "blob_id", where), f"{where}.blob_id")
        optional(obj, value.get("metadata"), f"{where}.metadata")
    elif state == "tombstone":
        integer(member(value, "deleted_in_revision", where), f"{where}.deleted_in_revision", 1)
    else:
        raise fail(f"{where}.state", "neither active nor tombstone")
    return value


def item_page(answer: Any, limit: int, after: str | None, asked: str | None
              ) -> dict[str, Any]:
    """An item page of a fixed revision read with ``limit`` after entry ``after`` (WP-MEM-23):
    at most ``limit`` entries, item ids strictly increasing (byte order) after ``after``."""
    page, entries = _listing(answer, "item page", limit)
    last = after
    for n, raw in enumerate(entries):
        item_id = entry(raw, f"item page.items[{n}]")["item_id"]
        if last is not None and item_id.encode() <= last.encode():
            raise fail(f"item page.items[{n}].item_id",
                       f"{item_id} is not after {last}: an entry seen before, or out of order")
        last = item_id
    next_cursor = member(page, "next_cursor", "item page")
    more = boolean(member(page, "has_more", "item page"), "item page.has_more")
    if more:
        cursor(next_cursor, "item page.next_cursor")
        if next_cursor == asked or not entries:
            raise fail("item page.next_cursor", "has_more, but the cursor did not move")
    return page


def blob(answer: Any, blob_id: str) -> dict[str, Any]:
    """Blob metadata (WP-HTTP-15) of the blob asked for."""
    value = obj(answer, "blob")
    if member(value, "blob_id", "blob") != blob_id:
        raise fail("blob.blob_id", f"asked for {blob_id}, got another blob")
    integer(member(value, "size", "blob"), "blob.size")
    digest = member(value, "sha256", "blob")
    if not isinstance(digest, str) or not re.fullmatch(r"[0-9a-f]{64}", digest):
        raise fail("blob.sha256", "not 64 lowercase hex characters")
    text(member(value, "content_type", "blob"), "blob.content_type", 255, empty=False)
    return value


# ----- answers to writes ------------------------------------------------------------------


def prepared(answer: Any) -> dict[str, Any]:
    """``blob.prepare``'s answer (WP-HTTP-15)."""
    value = obj(answer, "prepare answer")
    for name in ("upload_id", "blob_id"):
        identifier(member(value, name, "prepare answer"), f"prepare answer.{name}")
    return value


def sent(answer: Any) -> dict[str, Any]:
    """``message.send``'s answer (WP-HTTP-10)."""
    value = obj(answer, "send answer")
    for name in ("message_id", "thread_id", "feed_item_id"):
        identifier(member(value, name, "send answer"), f"send answer.{name}")
    sequence(member(value, "sequence", "send answer"), "send answer.sequence")
    return value


def acked(answer: Any, asked: list[dict[str, Any]]) -> dict[str, Any]:
    """``receipt.ack``'s answer (WP-HTTP-14): one item per item asked, in order."""
    value = obj(answer, "ACK answer")
    items = member(value, "items", "ACK answer")
    if not isinstance(items, list) or len(items) != len(asked):
        raise fail("ACK answer.items", f"expected {len(asked)} items")
    for n, (item, wanted) in enumerate(zip(items, asked, strict=True)):
        item = obj(item, f"ACK answer.items[{n}]")
        if member(item, "item_id", f"ACK answer.items[{n}]") != wanted["item_id"]:
            raise fail(f"ACK answer.items[{n}].item_id", "not the item acknowledged")
        stage(member(item, "stage", f"ACK answer.items[{n}]"), f"ACK answer.items[{n}].stage")
        boolean(member(item, "changed", f"ACK answer.items[{n}]"),
                f"ACK answer.items[{n}].changed")
    checkpoint = value.get("checkpoint_sequence")
    if checkpoint is not None and checkpoint != "0":
        sequence(checkpoint, "ACK answer.checkpoint_sequence")
    return value


def published(answer: Any) -> dict[str, Any]:
    """A publish's answer (WP-HTTP-16)."""
    value = obj(answer, "publish answer")
    integer(member(value, "revision", "publish answer"), "publish answer.revision")
    boolean(member(value, "changed", "publish answer"), "publish answer.changed")
    return value


def refusal(answer: Any) -> tuple[str, str, dict[str, Any]]:
    """The error envelope (WP-ERR-1): code, message and details."""
    error = obj(member(obj(answer, "error answer"), "error", "error answer"), "error")
    code = member(error, "code", "error")
    if not isinstance(code, str) or not CODE.fullmatch(code):
        raise fail("error.code", "not an error code (A-Z, 0-9 and _)")
    message = text(member(error, "message", "error"), "error.message", 4096)
    details = error.get("details")
    return code, message, obj(details, "error.details") if details is not None else {}


#: The check of each queued write's answer, by operation.
WRITE_ANSWERS: dict[str, Callable[[Any], dict[str, Any]]] = {
    "message.send": sent, "memory.publish": published}
