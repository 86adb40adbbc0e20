"""Memory commands of the kit (protocol.md §9; P11–P14, P16): publish with CAS, no-op,
snapshot/delta, inline or manifest input; concurrent publishers at one head; fixed-revision reads
with random page sizes, manifests compared with rows. Each function is one :class:`World`
command; arguments are concrete and JSON-able so replays rerun them."""

from __future__ import annotations

import hashlib
import json
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from waypost.properties import fingerprints
from waypost.properties.http import Answer
from waypost.properties.model import (
    Collection,
    Entries,
    Recorded,
    Token,
    input_errors,
    next_state,
)
from waypost.properties.violations import check

if TYPE_CHECKING:
    from waypost.properties.world import World

MAX_REVISION = 2**53 - 1
#: (space name, collection id, source actor): ``journal`` exists only in space B, so a token of
#: space A asking for it must get the answer of a missing collection (P01).
COLLECTIONS = (("A", "notes", "a0"), ("A", "plans", "a1"), ("B", "journal", "b0"))


def path_of(collection_id: str) -> str:
    return f"/v1/collections/{collection_id}/revisions"


def setup_collections(world: World) -> None:
    """The collections, and per source actor a consumer + token that may write its own
    collection and read every collection of its space."""
    for space_name, cid, source in COLLECTIONS:
        space = world.space_ids[space_name]
        world.admin_ok("POST", f"/admin/v1/spaces/{space}/collections", {
            "request_id": world.rid(), "collection_id": cid, "source_actor_id": source,
            "scope": f"kit memory of {source}"})
        world.model.collections[(space, cid)] = Collection(cid, space, source,
                                                           f"kit memory of {source}")
    for space_name, cid, source in COLLECTIONS:
        grants = [[other, ["read", "write"] if other == cid else ["read"]]
                  for name, other, _ in COLLECTIONS if name == space_name]
        world.do_provision(space_name, source, "inbox", {},
                           ["memory.write", "memory.read", "blob.write", "message.read"],
                           None, collections=grants)


def _collection(world: World, token: Token, cid: str) -> Collection | None:
    return world.model.collections.get((token.space, cid))


#: Path shapes by path number: plain, non-ASCII, with DEL, deep (canonical JSON must get all
#: of them right, in fingerprints and manifests alike).
PATHS = ("docs/p{}.md", "notes/ü{}.md", "odd\x7fname{}", "deep/er/{}/x.txt")


def item_inputs(world: World, items: list[list[Any]]) -> list[dict[str, Any]]:
    """``[item number, path number, upload index, metadata or None]`` → publish input items."""
    found = []
    for number, path, upload, metadata in items:
        item: dict[str, Any] = {"item_id": f"i{number}",
                                "path": PATHS[path % len(PATHS)].format(path),
                                "blob_id": world.model.uploads[upload].blob_id}
        if metadata is not None:
            item["metadata"] = metadata
        found.append(item)
    return found


def _manifest_blob(world: World, writer: Token, document: dict[str, Any]) -> str | None:
    """Upload the input document as a sealed blob of the writer (P15 checked on the way)."""
    content = json.dumps(document, sort_keys=True).encode()
    prepared = world.as_(writer, "POST", "/v1/blobs", {
        "request_id": world.rid(), "size": len(content),
        "sha256": hashlib.sha256(content).hexdigest(), "content_type": "application/json"})
    if not check("P15", prepared.status == 201, "prepare of a manifest input",
                 answer=prepared.json):
        return None
    stored = world.session.put(f"/v1/uploads/{prepared.json['upload_id']}/content", content,
                               bearer=writer.secret, who=writer.handle)
    sealed = world.as_(writer, "POST", f"/v1/uploads/{prepared.json['upload_id']}/commit",
                       {"request_id": world.rid()})
    if not check("P15", stored.status == 200 and sealed.status == 200,
                 "upload of a manifest input", put=stored.json, seal=sealed.json):
        return None
    return str(prepared.json["blob_id"])


def publish(world: World, token: str, collection: str, offset: int, mode: str,
            items: list[list[Any]], deletes: list[int], manifest: bool) -> None:
    """``memory.publish`` at head + ``offset``: CAS (P11), no-op (P12), the exact next state
    (P14); refusals change nothing."""
    writer = world.token(token)
    target = _collection(world, writer, collection)
    head = target.head if target is not None else 0
    changes: dict[str, Any] = {"items": item_inputs(world, items)}
    if deletes:
        changes["delete_ids"] = [f"i{n}" for n in deletes]
    body: dict[str, Any] = {"request_id": world.rid(), "expected_revision": max(head + offset, 0),
                            "mode": mode}
    if manifest and world.model.live(writer) and writer.has("blob.write"):
        blob_id = _manifest_blob(world, writer, changes)
        if blob_id is None:
            return
        body["manifest_blob_id"] = blob_id
    else:
        body.update(changes)
    answer = world.as_(writer, "POST", path_of(collection), body)
    expect_publish(world, writer, collection, body, changes, answer)


def expect_publish(world: World, writer: Token, cid: str, body: dict[str, Any],
                   changes: dict[str, Any], answer: Answer) -> bool:
    """Compare a publish answer with the model and apply it; True if it published."""
    if not world.model.live(writer):
        world.expect_refusal(answer, {"UNAUTHENTICATED"}, "P02", "publish with a dead token")
        return False
    target = _collection(world, writer, cid)
    items, deletes = changes["items"], changes.get("delete_ids", [])
    errors: set[str] = set()
    if not writer.has("memory.write"):
        errors.add("FORBIDDEN")
    if target is None or not (writer.may(cid, "read") or writer.may(cid, "write")):
        errors.add("NOT_FOUND")
    elif target.source_actor_id != writer.actor_id or not writer.may(cid, "write"):
        errors.add("FORBIDDEN")
    errors |= input_errors(body["mode"], items, deletes)
    if any(not world.model.referenceable(item["blob_id"], writer) for item in items):
        errors.add("REFERENCE_INVALID")
    expected = body["expected_revision"]
    if errors:
        pid = ("P02" if errors <= {"FORBIDDEN"} else "P01" if "NOT_FOUND" in errors
               else "P16" if errors == {"REFERENCE_INVALID"} else "P14")
        conflict = target is not None and expected != target.head and \
            errors <= {"REFERENCE_INVALID"}
        world.expect_refusal(answer, errors | ({"REVISION_CONFLICT"} if conflict else set()),
                             pid, "publish")
        if conflict and answer.code == "REVISION_CONFLICT":
            record(world, writer, cid, body, answer)
        return False
    assert target is not None
    if expected != target.head:
        check("P11", answer.status == 409 and answer.code == "REVISION_CONFLICT"
              and isinstance(answer.json, dict)
              and answer.json["error"]["details"].get("current_revision") == target.head,
              "a publish on another revision than the head must be REVISION_CONFLICT with "
              "current_revision", answer=answer.json, head=target.head, expected=expected)
        if answer.code == "REVISION_CONFLICT":
            record(world, writer, cid, body, answer)
        return False
    state = next_state(target.states[-1], body["mode"], items, deletes, target.head + 1)
    if isinstance(state, str):
        world.expect_refusal(answer, {state}, "P14", "publish of input the head makes invalid")
        return False
    if fingerprints.state_fingerprint(state) == fingerprints.state_fingerprint(
            target.states[-1]):
        unchanged = {"revision": target.head, "changed": False}
        if check("P12", answer.status == 200 and answer.json == unchanged,
                 "a publish of the head's own state must answer changed:false with the head",
                 answer=answer.json, status=answer.status, expected=unchanged):
            record(world, writer, cid, body, answer)
        return False
    published = {"revision": target.head + 1, "parent_revision": target.head, "changed": True}
    if not check("P11", answer.status == 201 and answer.json == published,
                 "a publish at the head must create revision head + 1", answer=answer.json,
                 status=answer.status, expected=published):
        return False
    check("P03", not answer.replayed, "a first answer must not say Waypost-Replayed")
    apply(world, target, state)
    record(world, writer, cid, body, answer)
    return True


def apply(world: World, target: Collection, state: Entries) -> None:
    """A new revision in the model, with its (not yet seen) feed item."""
    revision = target.head + 1
    target.states.append(state)
    target.items[revision] = world.model.append(
        target.space, type="memory_revision", producer_id=target.source_actor_id,
        recipient_ids=(), thread_id=None, collection_id=target.collection_id,
        memory={"collection_id": target.collection_id, "revision": revision,
                "parent_revision": revision - 1})


def record(world: World, writer: Token, cid: str, body: dict[str, Any], answer: Answer) -> None:
    world.model.submissions[(writer.space, writer.actor_id, "memory.publish",
                             body["request_id"])] = Recorded(
        "memory.publish", writer.space, writer.actor_id, writer.handle, body,
        fingerprints.publish_fingerprint(body, cid), answer.status, answer.json, path_of(cid),
        "failed" if answer.status >= 400 else "committed")


def race(world: World, token: str, collection: str, items: list[list[Any]]) -> None:
    """Two publishes of the same change at one head at the same time: exactly one wins, the
    other is REVISION_CONFLICT (P11). The bodies differ only in request_id, so the state after
    the race is the same whichever wins: what the kit draws next never depends on timing."""
    writer = world.token(token)
    target = _collection(world, writer, collection)
    if target is None or not world.model.live(writer):
        return
    bodies = [{"request_id": world.rid(), "expected_revision": target.head, "mode": "delta",
               "items": item_inputs(world, items)} for _ in range(2)]
    if not real_change(world, writer, target, bodies[0]):
        return  # only a real change races: alone it would publish
    with ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(lambda b: world.as_(writer, "POST", path_of(collection), b),
                                bodies))
    winners = [n for n, a in enumerate(answers) if a.status == 201]
    if not check("P11", len(winners) == 1 and all(
            a.code == "REVISION_CONFLICT" for n, a in enumerate(answers) if n not in winners),
            "concurrent publishers at one head: exactly one must win",
            answers=[[a.status, a.json] for a in answers]):
        return
    order = [winners[0], 1 - winners[0]]
    for n in order:
        expect_publish(world, writer, collection, bodies[n], {"items": bodies[n]["items"]},
                       answers[n])
    keys = [(writer.space, writer.actor_id, "memory.publish", body["request_id"])
            for body in bodies]
    for key in keys:  # recorded in body order, whichever won
        if key in world.model.submissions:
            world.model.submissions[key] = world.model.submissions.pop(key)


def real_change(world: World, writer: Token, target: Collection, body: dict[str, Any]) -> bool:
    """A publish any correct server must accept on the current head, and that changes it."""
    mode, items = body["mode"], body["items"]
    if not (writer.has("memory.write") and writer.may(target.collection_id, "write")
            and target.source_actor_id == writer.actor_id
            and not input_errors(mode, items, [])
            and all(world.model.referenceable(i["blob_id"], writer) for i in items)):
        return False
    state = next_state(target.states[-1], mode, items, [], target.head + 1)
    return not isinstance(state, str) and fingerprints.state_fingerprint(state) != \
        fingerprints.state_fingerprint(target.states[-1])


def revision_limit(world: World, token: str, collection: str) -> None:
    """Revisions are JSON integers up to 2^53−1: one more is INVALID_REQUEST; the largest is a
    plain (recorded) REVISION_CONFLICT below it (P11)."""
    writer = world.token(token)
    target = _collection(world, writer, collection)
    if target is None or not world.model.live(writer) or not writer.may(collection, "write") \
            or not writer.has("memory.write") or target.source_actor_id != writer.actor_id:
        return
    over = {"request_id": world.rid(), "expected_revision": MAX_REVISION + 1, "mode": "delta",
            "items": []}
    world.expect_refusal(world.as_(writer, "POST", path_of(collection), over),
                         {"INVALID_REQUEST"}, "P11", "expected_revision above 2^53-1")
    top = {**over, "request_id": world.rid(), "expected_revision": MAX_REVISION}
    answer = world.as_(writer, "POST", path_of(collection), top)
    expect_publish(world, writer, collection, top, {"items": []}, answer)


def read_collection(world: World, token: str, collection: str) -> None:
    """The collection and its head for grant holders; others, in any space, the answer of a
    missing collection (P01, P11)."""
    reader = world.token(token)
    answer = world.as_(reader, "GET", f"/v1/collections/{collection}")
    if not world.model.live(reader):
        world.expect_refusal(answer, {"UNAUTHENTICATED"}, "P02", "collection read, dead token")
        return
    target = _collection(world, reader, collection)
    granted = reader.may(collection, "read") or reader.may(collection, "write")
    if target is None or not granted:
        foreign = any(c.collection_id == collection and c.space != reader.space
                      for c in world.model.collections.values())
        world.expect_like_missing(answer, reader, "/v1/collections/{}", collection,
                                  "P01" if foreign else "P08", "a collection without a grant")
        return
    expected = {"collection_id": collection, "source_actor_id": target.source_actor_id,
                "scope": target.scope, "current_revision": target.head}
    # The protocol does not say whether writing alone lets one read the head: a refusal or
    # the right answer both do (docs/spec.md).
    if not (reader.has("memory.read") and reader.may(collection, "read")) \
            and answer.status >= 400:
        world.expect_refusal(answer, {"FORBIDDEN", "NOT_FOUND"}, "P02",
                             "collection read without memory.read and a read grant")
        return
    check("P11", answer.status == 200 and _subset(answer.json, expected) == expected,
          "the collection must show its head", answer=answer.json, expected=expected)


def read_revision(world: World, token: str, collection: str, revision: int, sizes: list[int],
                  tombstones: bool) -> None:
    """A fixed revision: metadata, every entry page by page with the given sizes (cycled), the
    manifest object; identical on every read, equal to the model's state (P13, P14)."""
    reader = world.token(token)
    base = f"/v1/collections/{collection}/revisions/{revision}"
    answer = world.as_(reader, "GET", base)
    if not world.model.live(reader):
        world.expect_refusal(answer, {"UNAUTHENTICATED"}, "P02", "revision read, dead token")
        return
    target = _collection(world, reader, collection)
    if target is None or not (reader.may(collection, "read") or reader.may(collection, "write")):
        foreign = target is None and any(c.collection_id == collection
                                         for c in world.model.collections.values())
        world.expect_like_missing(answer, reader, f"/v1/collections/{{}}/revisions/{revision}",
                                  collection, "P01" if foreign else "P16",
                                  "a revision of a collection without a grant")
        return
    if not (reader.has("memory.read") and reader.may(collection, "read")):
        world.expect_refusal(answer, {"FORBIDDEN", "NOT_FOUND"}, "P02",
                             "a revision read without memory.read and a read grant")
        return
    if revision > target.head:
        world.expect_refusal(answer, {"NOT_FOUND"}, "P13", "a revision not yet published")
        return
    if revision == 0 and answer.status == 404:
        return  # revision 0 is virtual; a server may have no metadata for it (docs/spec.md)
    state = target.states[revision]
    meta = answer.json if isinstance(answer.json, dict) else {}
    if not check("P13", answer.status == 200 and meta.get("revision") == revision,
                 "revision metadata", answer=answer.json):
        return
    check("P12", meta.get("state_fingerprint") == fingerprints.state_fingerprint(state),
          "state_fingerprint is not SHA-256(JCS(entries)) of the revision's state",
          answer=meta, expected=fingerprints.state_fingerprint(state))
    first = target.shown.setdefault(revision, meta)
    check("P13", _subset(meta, first) == _subset(first, first),
          "a fixed revision's metadata changed", first=first, now=meta)
    entries = _page_through(world, reader, base, sizes, tombstones)
    if entries is None:
        return
    wanted = [state[i] for i in sorted(state) if tombstones or state[i]["state"] == "active"]
    pid = "P13" if revision < target.head else "P14"
    check(pid, entries == wanted, "the revision's entries differ from its published state",
          shown=entries, expected=wanted, revision=revision, head=target.head)
    if revision > 0:
        _check_manifest(world, reader, target, revision, meta)


def _page_through(world: World, reader: Token, base: str, sizes: list[int],
                  tombstones: bool) -> list[dict[str, Any]] | None:
    params: dict[str, Any] = {"limit": sizes[0]}
    if tombstones:
        params["include_tombstones"] = "true"
    entries: list[dict[str, Any]] = []
    for page in range(10_000):
        answer = world.as_(reader, "GET", f"{base}/items", params=params)
        body = answer.json if isinstance(answer.json, dict) else {}
        if not check("P13", answer.status == 200 and {"items", "next_cursor", "has_more"}
                     <= set(body) and len(body["items"]) <= params["limit"],
                     "a revision item page", answer=answer.json, params=params):
            return None
        entries += body["items"]
        if not body["has_more"]:
            return entries
        params = {**params, "cursor": body["next_cursor"], "limit": sizes[(page + 1) % len(sizes)]}
    return entries


def _check_manifest(world: World, reader: Token, target: Collection, revision: int,
                    meta: dict[str, Any]) -> None:
    """The manifest object is the canonical form of the revision's state (P13), readable by
    the revision's readers (P16)."""
    blob_id = meta.get("manifest_blob_id")
    item = target.items[revision]
    if item.shown is not None:
        check("P05", item.shown["memory_revision"].get("manifest_blob_id") == blob_id,
              "the feed item and the revision name different manifests", item=item.shown,
              revision=meta)
    content = world.session.get_bytes(f"/v1/blobs/{blob_id}/content", bearer=reader.secret,
                                      who=reader.handle)
    wanted = fingerprints.manifest_bytes(target.collection_id, revision, revision - 1,
                                         target.states[revision])
    check("P13", content.status == 200 and content.data == wanted,
          "the manifest object must be the canonical form of the revision's rows",
          status=content.status, shown=content.data[:2000].decode(errors="replace"),
          expected=wanted[:2000].decode())
    outsider = next((t for t in world.model.tokens.values() if world.model.live(t)
                     and not world.model.manifest_readable(target, t)
                     and blob_id not in t.blob_references), None)
    if outsider is not None and isinstance(blob_id, str):
        probe = world.as_(outsider, "GET", f"/v1/blobs/{blob_id}")
        world.expect_like_missing(probe, outsider, "/v1/blobs/{}", blob_id,
                                  "P01" if outsider.space != target.space else "P16",
                                  "a manifest blob to a token that may not read the revision")


def cursor_elsewhere(world: World, token: str, collection: str, revision: int) -> None:
    """An item cursor of one revision used on another is refused (P13)."""
    reader = world.token(token)
    target = _collection(world, reader, collection)
    if target is None or target.head < 2 or not world.model.live(reader) \
            or not (reader.has("memory.read") and reader.may(collection, "read")):
        return  # revision 0 may have no pages at all (docs/spec.md): two published ones
    revision = min(max(revision, 1), target.head)
    other = revision - 1 if revision > 1 else 2
    page = world.as_(reader, "GET", f"/v1/collections/{collection}/revisions/{revision}/items",
                     params={"limit": 1})
    if not check("P13", page.status == 200, "a revision item page", answer=page.json):
        return
    moved = world.as_(reader, "GET", f"/v1/collections/{collection}/revisions/{other}/items",
                      params={"cursor": page.json["next_cursor"]})
    world.expect_refusal(moved, {"CURSOR_INVALID", "CURSOR_STALE"}, "P13",
                         "an item cursor used on another revision")


def _subset(got: Any, expected: dict[str, Any]) -> Any:
    return {k: got[k] for k in expected if k in got} if isinstance(got, dict) else got
