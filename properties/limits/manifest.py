"""The boundary check of ``revision_manifest_bytes`` (protocol.md WP-MEM-31, §11; P14): a
collection is filled with the largest entries the other limits allow, through manifest inputs,
until one more publish of two entries can make the next revision's manifest exactly N bytes. Those
two entries one byte longer are refused; as they are, they publish, and the revision's manifest
is byte for byte the model's, N bytes long. Each of the two steps re-reads every view and the
head revision, its entries page by page and its manifest (the fill's own revisions are not
re-read): about 6 × N read and 2 × N sent in all.

The sizes come from the kit's own manifest builder (``fingerprints.manifest_size``), never
from the server: each entry's size is the RFC 8785 form of its manifest entry."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import rfc8785

from waypost.properties.commands import memory
from waypost.properties.limits.checking import Limit, step, writer_of
from waypost.properties.limits.memory import NOTES, publish, sealed_blob
from waypost.properties.protocol import fingerprints

if TYPE_CHECKING:
    from waypost.properties.commands.world import World

LIMIT = "revision_manifest_bytes"
#: protocol.md §3.5 and §9: the largest path and metadata an entry may carry.
PATH_BYTES, METADATA_BYTES = 1024, 4096
_PAD_META = METADATA_BYTES - len(b'{"pad":""}')
_BLOB = "b" * 96  # the longest blob id, standing in for the real one when sizing transport
#: What a publish body or a manifest input holds besides its items (ids, mode, brackets).
_BODY = 256


def _entry(n: int, blob_id: str, pad: int) -> dict[str, Any]:
    """Input item ``n``, ``pad`` bytes longer than the smallest: metadata first, then path."""
    meta = min(pad, _PAD_META)
    stem = f"fill/{n:06d}-"
    return {"item_id": f"m{n:06d}", "path": stem + "p" * (pad - meta),
            "blob_id": blob_id, "metadata": {"pad": "x" * meta}}


def _size(item: dict[str, Any]) -> int:
    """The bytes of ``item``'s active entry in a manifest."""
    return len(rfc8785.dumps({"item_id": item["item_id"], "state": "active",
                              "path": item["path"], "blob_id": item["blob_id"],
                              "metadata": item["metadata"]}))


def _most_pad() -> int:
    return _PAD_META + PATH_BYTES - len("fill/000000-")


def _input_bytes(pad: int) -> int:
    """The JSON bytes of one input item of ``pad`` in a publish body or manifest input."""
    return len(json.dumps(_entry(0, _BLOB, pad))) + 2


@dataclass(frozen=True)
class _Plan:
    """How the check reaches N: entries of ``pad`` bytes of padding, so many per publish,
    inline or through manifest inputs."""

    pad: int
    per_publish: int
    inline: bool


def _plan(limits: dict[str, int]) -> _Plan:
    """The largest padding the transport limits let the final publish of two entries inline
    (``request_bytes``), and the fill's channel: whichever carries more entries a publish."""
    body = limits.get("request_bytes", 1 << 20) - _BODY
    pad = _most_pad()
    while pad > 0 and 2 * _input_bytes(pad) > body:
        pad -= 64
    pad = max(pad, 0)
    inline = min(limits.get("inline_items_per_publish", 1), body // _input_bytes(pad))
    room = min(limits.get("manifest_input_bytes", 0), limits.get("upload_bytes", 0)) - _BODY
    through_manifest = max(0, room // _input_bytes(pad))
    if through_manifest >= inline:
        return _Plan(pad, through_manifest, False)
    return _Plan(pad, inline, True)


def unreachable_manifest(value: int, published: dict[str, int]) -> str | None:
    """Why N bytes cannot be reached through the other published limits, if they cannot: at
    most ``memory_entries_per_revision`` entries of the largest size the transport allows."""
    entries = published.get("memory_entries_per_revision")
    if entries is None:
        return None
    plan = _plan(published)
    smallest = _size(_entry(0, _BLOB, 0)) + 1
    largest = smallest + plan.pad
    if plan.pad <= smallest or plan.per_publish < 1 or entries * largest < value + 2 * largest:
        return (f"{entries} entries (memory_entries_per_revision) of at most {largest} bytes "
                f"(request_bytes, manifest_input_bytes, upload_bytes) cannot fill a manifest of "
                f"{value} bytes, so this limit is never the one that refuses")
    return None


def _fill(world: World, writer: Any, blob_id: str, count: int, start: int, plan: _Plan) -> bool:
    """Publish ``count`` entries of the plan's padding from item ``start``, inline or through
    manifest inputs; False when one is not published."""
    done = 0
    while done < count:
        items = [_entry(n, blob_id, plan.pad)
                 for n in range(start + done, start + min(count, done + plan.per_publish))]
        target = world.model.collections[(writer.space, NOTES)]
        body: dict[str, Any] = {"request_id": world.rid(), "expected_revision": target.head,
                                "mode": "delta"}
        if plan.inline:
            body["items"] = items
        else:
            blob = memory.manifest_blob(world, writer, json.dumps({"items": items}).encode())
            if blob is None:
                return False
            body["manifest_blob_id"] = blob
        answer = world.as_(writer, "POST", memory.path_of(NOTES), body)
        if not memory.expect_publish(world, writer, NOTES, body, {"items": items}, answer):
            return False
        done += len(items)
    return True


def revision_manifest_bytes(world: World, value: int) -> None:
    """Fill to just below N, then two entries making the manifest N + 1 bytes are refused and
    the same entries one byte shorter (exactly N) publish."""
    writer = writer_of(world, NOTES)
    blob_id = sealed_blob(world, writer)
    plan = _plan(world.model.limits)
    target = world.model.collections[(writer.space, NOTES)]
    state = dict(target.states[-1])
    head = target.head
    base = fingerprints.manifest_size(NOTES, head + 3, head + 2, state)
    smallest = _size(_entry(0, blob_id, 0)) + 1
    # count padded entries, then two more whose pads close the gap (each up to plan.pad)
    count = max(0, (value - base - 2 * smallest) // (smallest + plan.pad))
    if count and not _fill(world, writer, blob_id, count, len(state), plan):
        return
    state = dict(target.states[-1])
    head = target.head
    first = len(state)
    plain = [_entry(first, blob_id, 0), _entry(first + 1, blob_id, 0)]
    gap = value - fingerprints.manifest_size(NOTES, head + 1, head, {
        **state, **{i["item_id"]: _active(i) for i in plain}})
    if not world.check(("WP-MEM-31", "WP-LIM-1"), 0 <= gap < 2 * plan.pad,
                       f"the kit could not size a manifest of {LIMIT} = {value} bytes",
                       gap=gap, entries=len(state)):
        return
    for name, extra, accept in (("over", 1, False), ("at", 0, True)):
        pads = (min(gap + extra, plan.pad), max(0, gap + extra - plan.pad))
        items = [_entry(first + k, blob_id, pads[k]) for k in range(2)]
        with step(world, name):
            publish(world, writer, {"items": items}, LIMIT, value, accept, heads_only=True)


def _active(item: dict[str, Any]) -> dict[str, Any]:
    return {"item_id": item["item_id"], "state": "active", "path": item["path"],
            "blob_id": item["blob_id"], "metadata": item["metadata"]}


LIMITS = (
    Limit(LIMIT, "filled with the largest entries through manifest inputs; two entries making "
          "N+1 bytes refused, exactly N publish", revision_manifest_bytes, heavy=True),
)
