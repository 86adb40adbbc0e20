"""Memory reading commands of the kit (P13, P14, P12, P16, P01, P11): a collection's head,
fixed revisions read with random page sizes, manifests compared byte for byte with the
canonical form of the model's state, item cursors moved to another revision."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from waypost.properties.commands.memory import collection_of
from waypost.properties.model.matching import protocol_view, shaped, subset
from waypost.properties.model.state import Collection, Token
from waypost.properties.protocol import fingerprints
from waypost.properties.wire.http import Answer

if TYPE_CHECKING:
    from waypost.properties.commands.world import World

PAGE = {"items", "next_cursor", "has_more"}


def read_collection(world: World, token: str, collection: str) -> None:
    """The collection and its head for grant holders; others, in any space, the answer of a
    missing collection (P01, P11)."""
    reader = world.token(token)
    answer = world.as_(reader, "GET", f"/v1/collections/{collection}")
    if world.dead(reader, answer, "collection read"):
        return
    target = collection_of(world, reader, collection)
    granted = reader.may(collection, "read") or reader.may(collection, "write")
    if target is None or not granted:
        world.expect_like_missing(answer, reader, "/v1/collections/{}", collection,
                                  ("WP-MEM-2", "WP-AUTH-13"), "a collection without a grant")
        return
    expected = {"collection_id": collection, "source_actor_id": target.source_actor_id,
                "scope": target.scope, "current_revision": target.head}
    # The protocol does not say whether writing alone lets one read the head: a refusal or
    # the right answer both do (docs/spec.md).
    if not _reads(reader, collection) and answer.status >= 400:
        world.expect_refusal(answer, {"FORBIDDEN", "NOT_FOUND"}, ("WP-AUTH-14", "WP-MEM-20"),
                             "collection read without memory.read and a read grant")
        return
    world.check(("WP-MEM-20", "WP-HTTP-17", "WP-MEM-3"),
                answer.status == 200 and subset(answer.json, expected) == expected,
                "the collection must show its head", answer=answer.json, expected=expected)


def _reads(reader: Token, collection: str) -> bool:
    """``memory.read`` and a read grant: what revision metadata and item pages need."""
    return reader.has("memory.read") and reader.may(collection, "read")


def read_revision(world: World, token: str, collection: str, revision: int, sizes: list[int],
                  tombstones: bool) -> None:
    """A fixed revision: metadata, every entry page by page with the given sizes (cycled), the
    manifest object; identical on every read, equal to the model's state (P13, P14)."""
    reader = world.token(token)
    base = f"/v1/collections/{collection}/revisions/{revision}"
    answer = world.as_(reader, "GET", base)
    target = _readable_revision(world, reader, collection, revision, answer)
    if target is None or (revision == 0 and answer.status == 404):
        return  # revision 0 is virtual; a server may have no metadata for it (docs/spec.md)
    state = target.states[revision]
    meta = answer.json if isinstance(answer.json, dict) else {}
    if not world.check(("WP-HTTP-17", "WP-MEM-22"),
                       answer.status == 200 and meta.get("revision") == revision,
                       "revision metadata", answer=answer.json):
        return
    first = target.shown.setdefault(revision, meta)
    world.check("WP-MEM-22", subset(meta, first) == subset(first, first),
                "a fixed revision's metadata changed", first=first, now=meta)
    # the entries before their fingerprint: wrong entries are the defect (P13, P14), a wrong
    # fingerprint of the right entries is P12's
    ids = ("WP-MEM-22", "WP-MEM-23") if revision < target.head \
        else ("WP-MEM-9", "WP-MEM-10", "WP-MEM-11", "WP-MEM-23")
    for every in (tombstones, True):
        entries = _page_through(world, reader, base, sizes, every)
        wanted = [state[i] for i in sorted(state) if every or state[i]["state"] == "active"]
        if entries is None or not world.check(
                ids, protocol_view(entries, wanted) == wanted,
                "the revision's entries differ from its published state",
                shown=entries, expected=wanted, revision=revision, head=target.head,
                include_tombstones=every):
            return
        fingerprint = fingerprints.state_fingerprint(state)
        if meta.get("state_fingerprint") == fingerprint or every:
            break  # a wrong fingerprint is read again with the tombstones it covers
    world.check("WP-MEM-14", meta.get("state_fingerprint") == fingerprint,
                "state_fingerprint is not SHA-256(JCS(entries)) of the revision's entries "
                "(which are right)", answer=meta.get("state_fingerprint"),
                expected=fingerprint, entries=wanted)
    if revision > 0:
        _check_manifest(world, reader, target, revision, meta)


def _readable_revision(world: World, reader: Token, collection: str, revision: int,
                       answer: Answer) -> Collection | None:
    """The collection whose revision ``reader`` may read; else None, once the refusal in
    ``answer`` was checked (P01, P02, P13, P16)."""
    if world.dead(reader, answer, "revision read"):
        return None
    target = collection_of(world, reader, collection)
    if target is None or not (reader.may(collection, "read") or reader.may(collection, "write")):
        world.expect_like_missing(answer, reader, f"/v1/collections/{{}}/revisions/{revision}",
                                  collection, ("WP-MEM-2", "WP-AUTH-13"),
                                  "a revision of a collection without a grant")
        return None
    if not _reads(reader, collection):
        world.expect_refusal(answer, {"FORBIDDEN", "NOT_FOUND"}, ("WP-AUTH-14", "WP-MEM-21"),
                             "a revision read without memory.read and a read grant")
        return None
    if revision > target.head:
        world.expect_refusal(answer, {"NOT_FOUND"}, "WP-MEM-21", "a revision not yet published")
        return None
    return target


def _page_through(world: World, reader: Token, base: str, sizes: list[int],
                  tombstones: bool) -> list[dict[str, Any]] | None:
    """Every entry of a revision, page by page with ``sizes`` (cycled); None on a bad page."""
    params: dict[str, Any] = {"limit": sizes[0]}
    if tombstones:
        params["include_tombstones"] = "true"
    entries: list[dict[str, Any]] = []
    for page in range(10_000):
        answer = world.as_(reader, "GET", f"{base}/items", params=params)
        body = answer.json if isinstance(answer.json, dict) else {}
        if not world.check(("WP-MEM-23", "WP-HTTP-17"), answer.status == 200 and shaped(body, PAGE)
                           and isinstance(body["items"], list)
                           and len(body["items"]) <= params["limit"],
                           "a revision item page", answer=answer.json, params=params):
            return None
        entries += body["items"]
        if not body["has_more"]:
            return entries
        params = {**params, "cursor": body["next_cursor"],
                  "limit": sizes[(page + 1) % len(sizes)]}
    return entries


def _check_manifest(world: World, reader: Token, target: Collection, revision: int,
                    meta: dict[str, Any]) -> None:
    """The manifest object is the canonical form of the revision's state (P13), readable by
    the revision's readers (P16)."""
    blob_id = meta.get("manifest_blob_id")
    item = target.items[revision]
    if item.shown is not None:
        shown = item.shown.get("memory_revision")
        world.check(("WP-MEM-24", "WP-MEM-17"),
                    isinstance(shown, dict) and shown.get("manifest_blob_id") == blob_id,
                    "the feed item and the revision name different manifests", item=item.shown,
                    revision=meta)
    state = target.states[revision]
    size = fingerprints.manifest_size(target.collection_id, revision, revision - 1, state)
    content = world.session.get_bytes(f"/v1/blobs/{blob_id}/content", bearer=reader.secret,
                                      who=reader.handle, expected=size)
    differs = fingerprints.manifest_differs(content.data, target.collection_id, revision,
                                            revision - 1, state) if content.status == 200 else 0
    if differs is not None:
        wanted = fingerprints.manifest_bytes(target.collection_id, revision, revision - 1, state)
        world.check(("WP-MEM-25", "WP-MEM-24"), False,
                    "the manifest object must be the canonical form of the revision's rows",
                    status=content.status, differs_at=differs,
                    shown=content.data[max(0, differs - 200):differs + 1800].decode(
                        errors="replace"),
                    expected=wanted[max(0, differs - 200):differs + 1800].decode(
                        errors="replace"))
    else:
        world.check(("WP-MEM-25", "WP-MEM-24"), True, "the manifest object")
    outsider = next((t for t in world.model.tokens.values() if world.model.live(t)
                     and not world.model.manifest_readable(target, t)
                     and blob_id not in t.blob_references), None)
    if outsider is not None and isinstance(blob_id, str):
        probe = world.as_(outsider, "GET", f"/v1/blobs/{blob_id}")
        world.expect_like_missing(probe, outsider, "/v1/blobs/{}", blob_id,
                                  ("WP-AUTH-13", "WP-MEM-26") if outsider.space != target.space
                                  else ("WP-MEM-26", "WP-UPL-10"),
                                  "a manifest blob to a token that may not read the revision")


def cursor_elsewhere(world: World, token: str, collection: str, revision: int) -> None:
    """An item cursor of one revision used on another is refused (P13)."""
    reader = world.token(token)
    target = collection_of(world, reader, collection)
    if target is None or target.head < 2 or not world.model.live(reader) \
            or not (reader.has("memory.read") and reader.may(collection, "read")):
        return  # revision 0 may have no pages at all (docs/spec.md): two published ones
    revision = min(max(revision, 1), target.head)
    other = revision - 1 if revision > 1 else 2
    page = world.as_(reader, "GET", f"/v1/collections/{collection}/revisions/{revision}/items",
                     params={"limit": 1})
    if not world.check("WP-MEM-23", page.status == 200 and shaped(page.json, PAGE),
                       "a revision item page", answer=page.json):
        return
    moved = world.as_(reader, "GET", f"/v1/collections/{collection}/revisions/{other}/items",
                      params={"cursor": page.json["next_cursor"]})
    world.expect_refusal(moved, {"CURSOR_INVALID", "CURSOR_STALE"}, "WP-CUR-6",
                         "an item cursor used on another revision")


