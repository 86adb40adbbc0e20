"""Memory publishing commands of the kit (protocol.md §9; P11, P12, P14, P16): publish with
CAS, no-op, snapshot/delta, inline or manifest input; concurrent publishers at one head; the
revision limit. Reads of collections and revisions: ``revisions``. Each function is one
command; arguments are concrete and JSON-able so replays rerun them."""

from __future__ import annotations

import hashlib
import json
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from waypost.properties.commands.world import carrying
from waypost.properties.model.matching import protocol_view, shaped
from waypost.properties.model.state import Collection, Entries, Recorded, Token, input_errors, next_state
from waypost.properties.protocol import fingerprints
from waypost.properties.verdicts.owners import refusal_ids
from waypost.properties.wire.http import Answer

if TYPE_CHECKING:
    from waypost.properties.commands.world import World

MAX_REVISION = 2**53 - 1
#: The rule behind each code a publish may be refused with, in the order that decides the
#: property: a collection that looks missing (P01), input (P14), references (P16), scope (P02).
REFUSALS: dict[str, tuple[str, ...]] = {
    "NOT_FOUND": ("WP-MEM-2", "WP-AUTH-13"), "INVALID_REQUEST": ("WP-MEM-4", "WP-MEM-5",
                                                                "WP-MEM-8", "WP-MEM-9",
                                                                "WP-MEM-27"),
    "REFERENCE_INVALID": ("WP-MEM-7", "WP-AUTH-7"), "FORBIDDEN": ("WP-AUTH-14", "WP-MEM-1")}
#: (space name, collection id, source actor): ``journal`` exists only in space B, so a token of
#: space A asking for it must get the answer of a missing collection (P01).


def path_of(collection_id: str) -> str:
    return f"/v1/collections/{collection_id}/revisions"


def collection_of(world: World, token: Token, cid: str) -> Collection | None:
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


def manifest_blob(world: World, writer: Token, document: dict[str, Any] | bytes) -> str | None:
    """Upload the input document (or its bytes) as a sealed blob of the writer (P15 checked on
    the way)."""
    content = document if isinstance(document, bytes) else json.dumps(
        document, sort_keys=True).encode()
    prepared = world.as_(writer, "POST", "/v1/blobs", {
        "request_id": world.rid(), "size": len(content),
        "sha256": hashlib.sha256(content).hexdigest(), "content_type": "application/json"})
    if not world.check(("WP-HTTP-15", "WP-UPL-2"), prepared.status == 201
                       and shaped(prepared.json, {"upload_id", "blob_id"}),
                       "prepare of a manifest input", answer=prepared.json):
        return None
    stored = world.session.put(f"/v1/uploads/{prepared.json['upload_id']}/content", content,
                               bearer=writer.secret, who=writer.handle)
    sealed = world.as_(writer, "POST", f"/v1/uploads/{prepared.json['upload_id']}/commit",
                       {"request_id": world.rid()})
    if not world.check(("WP-UPL-3", "WP-UPL-11"), 200 <= stored.status < 300
                       and sealed.status == 200,
                       f"upload of a manifest input: the content PUT must answer any 2xx (got "
                       f"{stored.status}) and the commit 200 (got {sealed.status})",
                       put_status=stored.status, put=stored.json, seal_status=sealed.status,
                       seal=sealed.json):
        return None
    return str(prepared.json["blob_id"])


def publish(world: World, token: str, collection: str, offset: int, mode: str,
            items: list[list[Any]], deletes: list[int], manifest: bool) -> None:
    """``memory.publish`` at head + ``offset``: CAS (P11), no-op (P12), the exact next state
    (P14); refusals change nothing."""
    writer = world.token(token)
    target = collection_of(world, writer, collection)
    head = target.head if target is not None else 0
    changes: dict[str, Any] = {"items": item_inputs(world, items)}
    if deletes:
        changes["delete_ids"] = [f"i{n}" for n in deletes]
    body: dict[str, Any] = {"request_id": world.rid(), "expected_revision": max(head + offset, 0),
                            "mode": mode}
    if manifest and world.model.live(writer) and writer.has("blob.write"):
        blob_id = manifest_blob(world, writer, changes)
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
    if world.dead(writer, answer, "publish"):
        return False
    target = collection_of(world, writer, cid)
    items, deletes = changes["items"], changes.get("delete_ids", [])
    errors = publish_errors(world, writer, cid, body["mode"], items, deletes)
    if errors:
        _expect_refused(world, writer, cid, body, errors, answer,
                        _head_error(target, body, items, deletes))
        return False
    assert target is not None
    if body["expected_revision"] != target.head:
        _expect_conflict(world, writer, cid, body, answer)
        return False
    state = next_state(target.states[-1], body["mode"], items, deletes, target.head + 1)
    if isinstance(state, str):
        world.expect_refusal(answer, {state}, ("WP-MEM-19", "WP-MEM-10", "WP-MEM-12"),
                             "publish of input the head makes invalid")
        return False
    if fingerprints.state_fingerprint(state) == fingerprints.state_fingerprint(
            target.states[-1]):
        unchanged = {"revision": target.head, "changed": False}
        if world.check(("WP-MEM-15", "WP-HTTP-16"), answer.status == 200
                       and protocol_view(answer.json, unchanged) == unchanged,
                       "a publish of the head's own state must answer changed:false with the "
                       "head", answer=answer.json, status=answer.status, expected=unchanged):
            record(world, writer, cid, body, answer)
        return False
    published = {"revision": target.head + 1, "parent_revision": target.head, "changed": True}
    if not world.check(("WP-MEM-17", "WP-HTTP-16",
                        *(("WP-MEM-27",) if "manifest_blob_id" in body else ())),
                       answer.status == 201
                       and protocol_view(answer.json, published) == published,
                       "a publish at the head must create revision head + 1",
                       answer=answer.json, status=answer.status, expected=published):
        return False
    world.check("WP-IDEM-7", not answer.replayed, "a first answer must not say Waypost-Replayed")
    apply(world, target, state)
    record(world, writer, cid, body, answer)
    return True


def publish_errors(world: World, writer: Token, cid: str, mode: str,
                   items: list[dict[str, Any]], deletes: list[str]) -> set[str]:
    """The errors that apply to a publish whatever the head is."""
    target = collection_of(world, writer, cid)
    errors: set[str] = set()
    if not writer.has("memory.write"):
        errors.add("FORBIDDEN")
    if target is None or not (writer.may(cid, "read") or writer.may(cid, "write")):
        errors.add("NOT_FOUND")
    elif target.source_actor_id != writer.actor_id or not writer.may(cid, "write"):
        errors.add("FORBIDDEN")
    errors |= input_errors(mode, items, deletes)
    if any(not world.model.referenceable(item["blob_id"], writer) for item in items):
        errors.add("REFERENCE_INVALID")
    return errors


def _head_error(target: Collection | None, body: dict[str, Any], items: list[dict[str, Any]],
                deletes: list[str]) -> str | None:
    """The error of input the head's state makes invalid (WP-MEM-19: a delete of an id never
    published), where the publish is at the head; None otherwise."""
    if target is None or body["expected_revision"] != target.head:
        return None
    state = next_state(target.states[-1], body["mode"], items, deletes, target.head + 1)
    return state if isinstance(state, str) else None


def _expect_refused(world: World, writer: Token, cid: str, body: dict[str, Any],
                    errors: set[str], answer: Answer, head_error: str | None = None) -> None:
    """A refused publish; where only blob references are wrong, a publish beside the head may
    also be (and then is recorded as) REVISION_CONFLICT. A publish at the head that the head's
    state makes invalid too may get that error instead (WP-AUTH-12: where a request breaks two
    rules, any of their codes)."""
    target = collection_of(world, writer, cid)
    conflict = target is not None and body["expected_revision"] != target.head \
        and errors <= {"REFERENCE_INVALID"}
    also = ({"REVISION_CONFLICT"} if conflict else set()) | ({head_error} if head_error else set())
    ids = refusal_ids(errors, REFUSALS) + (("WP-MEM-19", "WP-AUTH-12") if head_error else ())
    world.expect_refusal(answer, errors | also, ids, "publish")
    if conflict and answer.code == "REVISION_CONFLICT":
        record(world, writer, cid, body, answer)


def _expect_conflict(world: World, writer: Token, cid: str, body: dict[str, Any],
                     answer: Answer) -> None:
    """A publish on another revision than the head: REVISION_CONFLICT naming the head,
    recorded as the key's result (P11)."""
    target = collection_of(world, writer, cid)
    assert target is not None
    error = answer.json.get("error") if isinstance(answer.json, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    current = details.get("current_revision") if isinstance(details, dict) else None
    world.check(("WP-MEM-16", "WP-IDEM-10"),
                answer.status == 409 and answer.code == "REVISION_CONFLICT"
                and current == target.head,
                "a publish on another revision than the head must be REVISION_CONFLICT with "
                "current_revision", answer=answer.json, head=target.head,
                expected=body["expected_revision"])
    if answer.code == "REVISION_CONFLICT":
        record(world, writer, cid, body, answer)


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
    target = collection_of(world, writer, collection)
    if target is None or not world.model.live(writer):
        return
    bodies = [{"request_id": world.rid(), "expected_revision": target.head, "mode": "delta",
               "items": item_inputs(world, items)} for _ in range(2)]
    if not real_change(world, writer, target, bodies[0]):
        return  # only a real change races: alone it would publish
    with ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(carrying(
            lambda b: world.as_(writer, "POST", path_of(collection), b)), bodies))
    winners = [n for n, a in enumerate(answers) if a.status == 201]
    if not world.check(("WP-MEM-18", "WP-LOAD-3"), len(winners) == 1 and all(
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
    target = collection_of(world, writer, collection)
    if target is None or not world.model.live(writer) or not writer.may(collection, "write") \
            or not writer.has("memory.write") or target.source_actor_id != writer.actor_id:
        return
    over = {"request_id": world.rid(), "expected_revision": MAX_REVISION + 1, "mode": "delta",
            "items": []}
    world.expect_refusal(world.as_(writer, "POST", path_of(collection), over),
                         {"INVALID_REQUEST"}, "WP-VAL-7", "expected_revision above 2^53-1")
    top = {**over, "request_id": world.rid(), "expected_revision": MAX_REVISION}
    answer = world.as_(writer, "POST", path_of(collection), top)
    expect_publish(world, writer, collection, top, {"items": []}, answer)


