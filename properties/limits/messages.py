"""Boundary checks of the message and ACK limits (protocol.md §11; P05, P10, P16): recipients,
attachments, subject, body text and metadata bytes, request bytes, ACK items. Byte limits are
met with a multi-byte character at the edge, so N + 1 bytes are at most N characters."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import rfc8785

from waypost.properties.commands import acks, blobs, feed
from waypost.properties.limits.checking import (
    RULES,
    Limit,
    accepted_send,
    edge_text,
    expect_limit,
    full_token,
    refused_send,
    reread,
    send_body,
    step,
)
from waypost.properties.limits.memory import entry_metadata
from waypost.properties.model.state import Actor

if TYPE_CHECKING:
    from waypost.properties.commands.world import World


def recipients(world: World, value: int) -> None:
    """N + 1 real actors of the space as recipients are refused; N publish to all of them."""
    space = world.space_ids["A"]
    names = ["a1"] + [f"r{n}" for n in range(1, value + 1)]
    for actor in names[1:]:
        world.admin_ok("POST", f"/admin/v1/spaces/{space}/actors", {
            "request_id": world.rid(), "actor_id": actor, "kind": "agent",
            "display_name": actor})
        world.model.actors[(space, actor)] = Actor(actor, space)
    sender = full_token(world, "a0")
    with step(world, "over"):
        refused_send(world, sender, send_body(world, recipient_ids=names), "recipients", value)
    with step(world, "at"):
        accepted_send(world, sender, send_body(world, recipient_ids=names[:value]),
                      "recipients", value)
        reread(world)


def attachments(world: World, value: int) -> None:
    """N + 1 sealed blobs of the sender are refused as attachments; N are attached, and the
    recipient reads every one of them through the message (P05, P16)."""
    sender, recipient = full_token(world, "a0"), full_token(world, "a1")
    first = len(world.model.uploads)
    for n in range(value + 1):
        blobs.prepare(world, sender.handle, f"attachment {n}".encode().hex(), None)
        if len(world.model.uploads) <= first + n:  # the server refused the blob
            world.check(("WP-MSG-8", "WP-LIM-1"), False, "the blobs an attachments limit check needs "
                        "could not be prepared", prepared=n, needed=value + 1)
            return
        blobs.put(world, sender.handle, first + n, True)
        blobs.seal(world, sender.handle, first + n)
    ids = [upload.blob_id for upload in world.model.uploads[first:]]
    with step(world, "over"):
        refused_send(world, sender, send_body(world, attachment_ids=ids), "attachments", value)
    with step(world, "at"):
        accepted_send(world, sender, send_body(world, attachment_ids=ids[:value]),
                      "attachments", value)
        for n in range(value):
            blobs.read_blob(world, recipient.handle, first + n)
        reread(world)


def subject_bytes(world: World, value: int) -> None:
    """A subject of N + 1 UTF-8 bytes (N − 2 characters) is refused; N bytes read back."""
    _text_limit(world, value, "subject_bytes", lambda text: {"subject": text})


def body_text_bytes(world: World, value: int) -> None:
    """A body text of N + 1 UTF-8 bytes is refused; N bytes read back exactly."""
    _text_limit(world, value, "body_text_bytes", lambda text: {"body": {"text": text}})


def _text_limit(world: World, value: int, limit: str, fields: Any) -> None:
    sender = full_token(world, "a0")
    with step(world, "over"):
        refused_send(world, sender, send_body(world, **fields(edge_text(value + 1))), limit,
                     value)
    with step(world, "at"):
        accepted_send(world, sender, send_body(world, **fields(edge_text(value))), limit, value)
        reread(world)


def metadata_of(size: int) -> dict[str, str]:
    """A metadata object whose RFC 8785 form is exactly ``size`` bytes, ending in a
    multi-byte character (a server measuring escaped JSON counts it larger)."""
    overhead = len(rfc8785.dumps({"k": ""}))
    return {"k": edge_text(size - overhead, "é")}


def metadata_bytes(world: World, value: int) -> None:
    """Message metadata and entry metadata of N + 1 canonical bytes are refused; N bytes are
    published and read back (P05, P14)."""
    sender = full_token(world, "a0")
    with step(world, "over"):
        refused_send(world, sender, send_body(world, metadata=metadata_of(value + 1)),
                     "metadata_bytes", value)
        entry_metadata(world, metadata_of(value + 1), value, accept=False)
    with step(world, "at"):
        accepted_send(world, sender, send_body(world, metadata=metadata_of(value)),
                      "metadata_bytes", value)
        entry_metadata(world, metadata_of(value), value, accept=True)


def padded(body: dict[str, Any], size: int) -> bytes | None:
    """The JSON of ``body`` followed by spaces (insignificant whitespace) to ``size`` bytes;
    None if it is longer already."""
    text = json.dumps(body).encode()
    return text + b" " * (size - len(text)) if len(text) <= size else None


def request_bytes(world: World, value: int) -> None:
    """A JSON body of exactly N bytes (a send padded with whitespace) publishes; N + 1 bytes
    are refused (P05)."""
    sender = full_token(world, "a0")
    over, at = send_body(world), send_body(world)
    raw_over, raw_at = padded(over, value + 1), padded(at, value)
    if raw_over is None or raw_at is None:
        world.check(RULES["request_bytes"], False, f"request_bytes = {value} is smaller than a plain send")
        return
    with step(world, "over"):
        refused_send(world, sender, over, "request_bytes", value, raw=raw_over)
    with step(world, "at"):
        accepted_send(world, sender, at, "request_bytes", value, raw=raw_at)
        reread(world)


def ack_items(world: World, value: int) -> None:
    """An ACK of N + 1 real, visible items with a checkpoint is refused and saves no receipt
    and no checkpoint; N of them are all acknowledged (P10, P05)."""
    sender, acker = full_token(world, "a0"), full_token(world, "a1")
    for n in range(value + 1):
        accepted_send(world, sender, send_body(world, subject=f"ack {n}"), "ack_items", value,
                      read=False)
    feed.read_feed(world, acker.handle, None, 1)
    cursor = len(world.model.cursors) - 1
    messages = [item for item in world.model.items[acker.space] if item.type == "message"]
    refs = [[world.space_name(acker), item.index] for item in messages]
    with step(world, "over"):
        body = {"request_id": world.rid(),
                "items": [{"item_id": item.item_id, "stage": "processed"} for item in messages],
                "checkpoint": {"cursor": world.model.cursors[cursor].text}}
        answer = world.as_(acker, "POST", "/v1/acks", body)
        expect_limit(world, answer, "ack_items", value, "an ACK")
        reread(world)
    with step(world, "at"):
        acks.ack(world, acker.handle, [[ref, "processed"] for ref in refs[:value]], cursor)
        reread(world)


LIMITS = (
    Limit("ack_items", "an ACK of N+1 real visible items and a checkpoint is "
          "refused, nothing saved; N are all acknowledged", ack_items),
    Limit("recipients", "N+1 real actors refused; N receive the message",
          recipients),
    Limit("attachments", "N+1 sealed blobs refused; N attached and readable "
          "by the recipient", attachments),
    Limit("subject_bytes", "UTF-8 bytes, a 4-byte character at the edge",
          subject_bytes),
    Limit("body_text_bytes", "UTF-8 bytes, a 4-byte character at the edge",
          body_text_bytes),
    Limit("metadata_bytes", "RFC 8785 bytes of message and entry metadata, "
          "a 2-byte character at the edge", metadata_bytes),
    Limit("request_bytes", "a send padded with JSON whitespace to N and N+1 bytes",
          request_bytes),
)
