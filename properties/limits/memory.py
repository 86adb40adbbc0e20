"""Boundary checks of the memory, upload and read limits (protocol.md §11; P06, P13, P14, P15):
inline items per publish, entries per revision, manifest input bytes, entry metadata, upload
size, page size and long-poll wait. Big limits stay cheap: the upload bound is checked on
``blob.prepare`` (no bytes sent), entries per revision with one manifest."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from waypost.properties.commands import blobs, feed, memory
from waypost.properties.limits.checking import (
    ITEM_PAGES,
    RULES,
    Limit,
    accepted_send,
    expect_limit,
    full_token,
    reread,
    send_body,
    step,
    writer_of,
)
from waypost.properties.model.matching import protocol_view, shaped
from waypost.properties.model.state import Token

if TYPE_CHECKING:
    from waypost.properties.commands.world import World

NOTES = "notes"


def sealed_blob(world: World, owner: Token) -> str:
    """A sealed blob of ``owner`` that entries may name."""
    index = len(world.model.uploads)
    blobs.prepare(world, owner.handle, world.rid().encode().hex(), None)
    blobs.put(world, owner.handle, index, True)
    blobs.seal(world, owner.handle, index)
    return world.model.uploads[index].blob_id


def entries(blob_id: str, count: int, start: int = 0) -> list[dict[str, Any]]:
    """``count`` publish input items on distinct paths, all naming ``blob_id``."""
    return [{"item_id": f"e{n:06d}", "path": f"limit/{n}.txt", "blob_id": blob_id}
            for n in range(start, start + count)]


def publish(world: World, writer: Token, changes: dict[str, Any], limit: str, value: int,
            accept: bool, manifest: bytes | None = None, heads_only: bool = False) -> None:
    """A delta publish on the head of ``notes``, inline or from a manifest blob of the given
    bytes: accepted and applied (P14), or refused naming the limit with nothing published;
    every view and revision (``heads_only``: each head) is re-read after it."""
    target = world.model.collections[(writer.space, NOTES)]
    body: dict[str, Any] = {"request_id": world.rid(), "expected_revision": target.head,
                            "mode": "delta"}
    if manifest is not None:
        blob_id = memory.manifest_blob(world, writer, manifest)
        if blob_id is None:
            return
        body["manifest_blob_id"] = blob_id
    else:
        body.update(changes)
    answer = world.as_(writer, "POST", memory.path_of(NOTES), body)
    if not accept:
        expect_limit(world, answer, limit, value, "a publish")
    elif world.check(RULES[limit], answer.status == 201,
                     f"a publish at exactly {limit} = {value} must be accepted, got "
                     f"{answer.status} {answer.code}", answer=answer.json):
        memory.expect_publish(world, writer, NOTES, body, changes, answer)
    reread(world, heads_only)


def entry_metadata(world: World, metadata: dict[str, Any], value: int, accept: bool) -> None:
    """An entry carrying ``metadata`` (of exactly N or N + 1 canonical bytes)."""
    writer = writer_of(world, NOTES)
    item = {**entries(sealed_blob(world, writer), 1)[0], "metadata": metadata}
    publish(world, writer, {"items": [item]}, "metadata_bytes", value, accept)


def inline_items_per_publish(world: World, value: int) -> None:
    """N + 1 inline items are refused; N publish a revision of N entries."""
    writer = writer_of(world, NOTES)
    items = entries(sealed_blob(world, writer), value + 1)
    with step(world, "over"):
        publish(world, writer, {"items": items}, "inline_items_per_publish", value, False)
    with step(world, "at"):
        publish(world, writer, {"items": items[:value]}, "inline_items_per_publish", value,
                True)


def manifest_of(changes: dict[str, Any]) -> bytes:
    return json.dumps(changes, sort_keys=True).encode()


def memory_entries_per_revision(world: World, value: int) -> None:
    """A manifest of N + 1 entries is refused; one of N publishes them all; then one more
    entry in a delta (N + 1 in the revision) is refused."""
    writer = writer_of(world, NOTES)
    blob_id = sealed_blob(world, writer)
    limit = "memory_entries_per_revision"
    over = {"items": entries(blob_id, value + 1)}
    at = {"items": over["items"][:value]}
    more = {"items": entries(blob_id, 1, start=value)}
    with step(world, "over"):
        publish(world, writer, over, limit, value, False, manifest=manifest_of(over))
    with step(world, "at"):
        publish(world, writer, at, limit, value, True, manifest=manifest_of(at))
    if world.boundary["at"]:
        with step(world, "over"):
            publish(world, writer, more, limit, value, False)


def manifest_input_bytes(world: World, value: int) -> None:
    """A manifest input of exactly N bytes (one entry, padded with JSON whitespace) publishes;
    N + 1 bytes are refused."""
    writer = writer_of(world, NOTES)
    changes = {"items": entries(sealed_blob(world, writer), 1)}
    document = manifest_of(changes)
    if len(document) > value:
        world.check(RULES["manifest_input_bytes"], False,
                    f"manifest_input_bytes = {value} is below a one-entry input")
        return
    with step(world, "over"):
        publish(world, writer, changes, "manifest_input_bytes", value, False,
                manifest=document + b" " * (value + 1 - len(document)))
    with step(world, "at"):
        publish(world, writer, changes, "manifest_input_bytes", value, True,
                manifest=document + b" " * (value - len(document)))


def upload_bytes(world: World, value: int) -> None:
    """``blob.prepare`` of N + 1 bytes is refused; of N bytes it gives a slot, which waits for
    its content (NOT_READY) — the bytes themselves are never sent (P15)."""
    owner = full_token(world, "a0")
    body: dict[str, Any] = {"sha256": hashlib.sha256(b"").hexdigest(),
                            "content_type": "application/octet-stream"}
    with step(world, "over"):
        answer = world.as_(owner, "POST", "/v1/blobs",
                           {"request_id": world.rid(), "size": value + 1, **body})
        expect_limit(world, answer, "upload_bytes", value, "an upload")
    with step(world, "at"):
        answer = world.as_(owner, "POST", "/v1/blobs",
                           {"request_id": world.rid(), "size": value, **body})
        if world.check(RULES["upload_bytes"], answer.status == 201
                       and shaped(answer.json, blobs.PREPARED),
                       f"an upload of exactly upload_bytes = {value} must get a slot, got "
                       f"{answer.status} {answer.code}", answer=answer.json):
            sealed = world.as_(owner, "POST", f"/v1/uploads/{answer.json['upload_id']}/commit",
                               {"request_id": world.rid()})
            world.expect_refusal(sealed, {"NOT_READY"}, "WP-UPL-7",
                                 "sealing the slot before its content")


def page_limit(world: World, value: int) -> None:
    """A feed page and a revision's item page of ``limit`` = N hold at most N items, the
    right ones, with a true ``has_more`` when more remain; ``limit`` = N + 1 is refused, not
    cut silently (P06, P13)."""
    sender, reader = full_token(world, "a0"), full_token(world, "a1")
    for n in range(2):
        accepted_send(world, sender, send_body(world, subject=f"page {n}"), "page_limit", value,
                      read=False)
    writer = writer_of(world, NOTES)
    bigger = world.model.limits.get("inline_items_per_publish", 0) > value
    if bigger:
        publish(world, writer, {"items": entries(sealed_blob(world, writer), value + 1)},
                "page_limit", value, True)
    with step(world, "at"):
        feed.read_feed(world, reader.handle, None, value)
        if bigger:
            _item_page(world, writer, value)
    with step(world, "over"):
        answer = world.as_(reader, "GET", "/v1/feed", params={"limit": value + 1})
        expect_limit(world, answer, "page_limit", value, "a feed page",
                     shape_rule=True)
        if bigger:
            answer = world.as_(writer, "GET", f"{memory.path_of(NOTES)}/1/items",
                               params={"limit": value + 1})
            expect_limit(world, answer, "page_limit", value, "a revision's item page",
                         shape_rule=True, ids=ITEM_PAGES)
        reread(world)


def _item_page(world: World, reader: Token, value: int) -> None:
    """The first item page of revision 1 (N + 1 entries) at ``limit`` = N."""
    state = world.model.collections[(reader.space, NOTES)].states[1]
    wanted = [state[item_id] for item_id in sorted(state)]
    answer = world.as_(reader, "GET", f"{memory.path_of(NOTES)}/1/items",
                       params={"limit": value})
    page = answer.json if isinstance(answer.json, dict) else {}
    shown = page.get("items")
    world.check(ITEM_PAGES, answer.status == 200 and isinstance(shown, list)
                and 0 < len(shown) <= value
                and protocol_view(shown, wanted[:len(shown)]) == wanted[:len(shown)]
                and page.get("has_more") is True,
                f"an item page of limit = page_limit = {value} must hold at most that many of "
                f"the revision's first entries, with has_more", answer=answer.json,
                entries=len(wanted))


def wait_seconds(world: World, value: int) -> None:
    """A long poll of ``wait`` = N answers (at once: an item is waiting) with the right page;
    ``wait`` = N + 1 is refused (P06)."""
    sender, reader = full_token(world, "a0"), full_token(world, "a1")
    accepted_send(world, sender, send_body(world), "wait_seconds", value, read=False)
    page = world.model.page_size()
    with step(world, "at"):
        answer = world.as_(reader, "GET", "/v1/feed", params={"limit": page, "wait": value})
        feed.check_page(world, reader, world.model.checkpoint(reader), page, answer)
    with step(world, "over"):
        answer = world.as_(reader, "GET", "/v1/feed", params={"limit": page, "wait": value + 1})
        expect_limit(world, answer, "wait_seconds", value, "a long poll",
                     shape_rule=True)
        reread(world)


LIMITS = (
    Limit("inline_items_per_publish", "N+1 inline items refused; N publish a "
          "revision of N entries", inline_items_per_publish),
    Limit("memory_entries_per_revision", "a manifest of N+1 entries refused; one of "
          "N publishes; one more entry in a delta refused", memory_entries_per_revision),
    Limit("manifest_input_bytes", "a one-entry manifest padded with JSON whitespace "
          "to N and N+1 bytes", manifest_input_bytes),
    Limit("upload_bytes", "blob.prepare of N bytes gives a slot (NOT_READY to "
          "seal), N+1 refused; no bytes sent", upload_bytes),
    Limit("page_limit", "feed and item pages of limit N hold at most N with "
          "has_more; N+1 refused", page_limit),
    Limit("wait_seconds", "a long poll of wait N answers at once (an item waits); "
          "N+1 refused", wait_seconds),
)
