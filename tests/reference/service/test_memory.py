"""Memory collections (protocol.md §9): CAS on the head, no-op publishes, snapshot/delta with
tombstones, fixed revisions with bound cursors, manifests equal to rows, blob access (P11–P16)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import apsw
import pytest

from tests.support.api import NOTES, Api, entries, item, must_fail, publish, rid, sealed_blob


def test_publish_moves_the_head_and_reads_back(mem: Api) -> None:
    blob = sealed_blob(mem, "writer", b"alpha")
    answer = publish(mem, 0, items=[item("a", blob, metadata={"k": 1}), item("b", blob)])
    assert answer.status_code == 201, answer.text
    assert answer.json() == {"revision": 1, "parent_revision": 0, "changed": True}
    head = mem.as_("reader", "GET", NOTES).json()
    assert head == {"collection_id": "notes", "source_actor_id": "alice",
                    "scope": "project notes", "current_revision": 1}
    assert entries(mem, 1) == [
        {"item_id": "a", "state": "active", "path": "a.md", "blob_id": blob,
         "metadata": {"k": 1}},
        {"item_id": "b", "state": "active", "path": "b.md", "blob_id": blob, "metadata": {}}]
    meta = mem.as_("reader", "GET", f"{NOTES}/revisions/1").json()
    assert meta["parent_revision"] == 0
    expected_fp = [{"item_id": "a", "state": "active", "path": "a.md", "blob_id": blob,
                    "metadata": {"k": 1}},
                   {"item_id": "b", "state": "active", "path": "b.md", "blob_id": blob,
                    "metadata": {}}]
    canonical = json.dumps(expected_fp, separators=(",", ":"), sort_keys=True).encode()
    assert meta["state_fingerprint"] == hashlib.sha256(canonical).hexdigest()
    manifest = mem.as_("reader", "GET", f"/v1/blobs/{meta['manifest_blob_id']}/content")
    assert manifest.status_code == 200
    assert json.loads(manifest.content) == {
        "manifest_version": 1, "collection_id": "notes", "revision": 1, "parent_revision": 0,
        "entries": entries(mem, 1)}
    feed = [i for i in mem.all_items("reader") if i["type"] == "memory_revision"]
    assert [i["memory_revision"] for i in feed] == [{
        "collection_id": "notes", "revision": 1, "parent_revision": 0,
        "manifest_blob_id": meta["manifest_blob_id"]}]
    assert feed[0]["sequence"] == meta["sequence"]


def test_cas_conflict_is_the_stable_result_of_its_key(mem: Api) -> None:
    blob = sealed_blob(mem, "writer", b"x")
    assert publish(mem, 0, items=[item("a", blob)]).status_code == 201
    key = rid("late")
    first = publish(mem, 0, request_id=key, items=[item("b", blob)])
    assert must_fail(first, 409, "REVISION_CONFLICT")["details"] == {"current_revision": 1}
    assert publish(mem, 1, items=[item("c", blob)]).status_code == 201
    again = publish(mem, 0, request_id=key, items=[item("b", blob)])
    assert must_fail(again, 409, "REVISION_CONFLICT")["details"] == {"current_revision": 1}
    assert again.headers["Waypost-Replayed"] == "true"
    lookup = mem.as_("writer", "GET", f"/v1/submissions/memory.publish/{key}").json()
    assert lookup["state"] == "failed"
    assert mem.as_("reader", "GET", NOTES).json()["current_revision"] == 2
    ahead = publish(mem, 7, items=[item("d", blob)])
    assert must_fail(ahead, 409, "REVISION_CONFLICT")["details"] == {"current_revision": 2}


def test_a_publish_of_the_head_state_changes_nothing(mem: Api) -> None:
    blob = sealed_blob(mem, "writer", b"x")
    assert publish(mem, 0, items=[item("a", blob)]).status_code == 201
    before = mem.all_items("reader")
    key = rid("same")
    same = publish(mem, 1, request_id=key, items=[item("a", blob, metadata={})])
    assert same.status_code == 200
    assert same.json() == {"revision": 1, "changed": False}
    empty = publish(mem, 1, items=[])  # a delta without changes
    assert empty.json() == {"revision": 1, "changed": False}
    assert mem.all_items("reader") == before
    assert mem.as_("reader", "GET", NOTES).json()["current_revision"] == 1
    replay = publish(mem, 1, request_id=key, items=[item("a", blob, metadata={})])
    assert (replay.status_code, replay.json()) == (200, same.json())
    # An empty snapshot on the empty revision 0 is unchanged too (s2's own collection).
    zero = publish(mem, 0, "snapshot", who="dave-writer", items=[])
    assert (zero.status_code, zero.json()) == (200, {"revision": 0, "changed": False})


def test_snapshot_tombstones_and_delta_revives(mem: Api) -> None:
    blob = sealed_blob(mem, "writer", b"x")
    publish(mem, 0, items=[item("a", blob), item("b", blob)])
    assert publish(mem, 1, "snapshot", items=[item("b", blob)]).status_code == 201
    assert entries(mem, 2) == [
        {"item_id": "a", "state": "tombstone", "deleted_in_revision": 2},
        {"item_id": "b", "state": "active", "path": "b.md", "blob_id": blob, "metadata": {}}]
    assert entries(mem, 2, tombstones=False) == entries(mem, 2)[1:]
    assert publish(mem, 2, "snapshot", items=[item("c", blob)]).status_code == 201
    assert [(e["item_id"], e.get("deleted_in_revision")) for e in entries(mem, 3)] == [
        ("a", 2), ("b", 3), ("c", None)]
    # Deleting a tombstone changes nothing; an upsert revives it.
    assert publish(mem, 3, delete_ids=["a"], items=[]).json()["changed"] is False
    assert publish(mem, 3, items=[item("a", blob, path="again.md")]).status_code == 201
    assert entries(mem, 4)[0] == {"item_id": "a", "state": "active", "path": "again.md",
                                  "blob_id": blob, "metadata": {}}


def test_invalid_input_is_rejected_before_any_effect(mem: Api) -> None:
    blob = sealed_blob(mem, "writer", b"x")
    publish(mem, 0, items=[item("a", blob)])
    cases = [
        ({"delete_ids": ["never"], "items": []}, "delete_ids"),
        ({"delete_ids": ["a"], "items": [item("a", blob)]}, "delete_ids"),
        ({"items": [item("b", blob, path="a.md")]}, "items"),
        ({"items": [item("b", blob), item("b", blob, path="c.md")]}, "items"),
        ({"items": [item("b", blob, path="../up")]}, "items[0].path"),
        ({"items": [item("b", blob, colour="red")]}, "items[0].colour"),
        ({}, "items"),
        ({"items": [], "manifest_blob_id": blob}, "items"),
    ]
    for fields, field in cases:
        answer = publish(mem, 1, **fields)
        assert must_fail(answer, 400, "INVALID_REQUEST")["details"]["field"] == field, fields
    snapshot = publish(mem, 1, "snapshot", items=[], delete_ids=["a"])
    assert must_fail(snapshot, 400, "INVALID_REQUEST")["details"]["field"] == "delete_ids"
    assert must_fail(publish(mem, 2**53, items=[]), 400, "INVALID_REQUEST")
    assert mem.as_("reader", "GET", NOTES).json()["current_revision"] == 1


def test_fixed_revisions_never_change_and_cursors_stay_bound(mem: Api) -> None:
    blob = sealed_blob(mem, "writer", b"x")
    publish(mem, 0, items=[item(f"i{n}", blob) for n in range(5)])
    first = entries(mem, 1, limit=2)
    manifest_id = mem.as_("reader", "GET", f"{NOTES}/revisions/1").json()["manifest_blob_id"]
    publish(mem, 1, "snapshot", items=[item("i9", blob)])
    assert entries(mem, 1, limit=1) == entries(mem, 1, limit=3) == first
    content = mem.as_("reader", "GET", f"/v1/blobs/{manifest_id}/content").content
    assert json.loads(content)["entries"] == first
    page = mem.as_("reader", "GET", f"{NOTES}/revisions/2/items", params={"limit": 1}).json()
    other = mem.as_("reader", "GET", f"{NOTES}/revisions/1/items",
                    params={"cursor": page["next_cursor"]})
    assert must_fail(other, 400, "CURSOR_INVALID")
    tombs = mem.as_("reader", "GET", f"{NOTES}/revisions/2/items",
                    params={"cursor": page["next_cursor"], "include_tombstones": "true"})
    assert must_fail(tombs, 400, "CURSOR_INVALID")
    writer = mem.as_("writer", "GET", f"{NOTES}/revisions/2/items",
                     params={"cursor": page["next_cursor"]})
    assert must_fail(writer, 400, "CURSOR_INVALID")
    assert must_fail(mem.as_("reader", "GET", f"{NOTES}/revisions/3"), 404, "NOT_FOUND")
    zero = mem.as_("reader", "GET", f"{NOTES}/revisions/0").json()
    assert zero["manifest_blob_id"] is None
    assert zero["state_fingerprint"] == hashlib.sha256(b"[]").hexdigest()
    assert entries(mem, 0) == []


def test_manifest_input_publishes_like_inline(mem: Api) -> None:
    blob = sealed_blob(mem, "writer", b"x")
    document = json.dumps({"items": [item("m", blob)]}).encode()
    manifest = sealed_blob(mem, "writer", document)
    answer = publish(mem, 0, manifest_blob_id=manifest)
    assert answer.status_code == 201, answer.text
    assert [e["item_id"] for e in entries(mem, 1)] == ["m"]
    broken = sealed_blob(mem, "writer", b'{"items": [{"item_id": "x"}]}')
    bad = publish(mem, 1, manifest_blob_id=broken)
    assert must_fail(bad, 400, "INVALID_REQUEST")["details"]["field"] == "manifest_blob_id"


def test_who_may_publish_read_and_reference(mem: Api) -> None:
    mine = sealed_blob(mem, "writer", b"mine")
    bobs = sealed_blob(mem, "reader", b"bob's")
    foreign = sealed_blob(mem, "dave-writer", b"dave's")
    assert must_fail(publish(mem, 0, items=[item("a", bobs)]), 422, "REFERENCE_INVALID")
    assert must_fail(publish(mem, 0, items=[item("a", foreign)]), 422, "REFERENCE_INVALID")
    # The reservation's guard names the first blob at fault, in blob_id order, and reserves
    # nothing: the key stays free.
    refused = publish(mem, 0, request_id="pub-refs",
                      items=[item("a", mine), item("b", max(bobs, foreign)),
                             item("c", min(bobs, foreign))])
    details = must_fail(refused, 422, "REFERENCE_INVALID", "items")["details"]
    assert details == {"field": "items", "blob_id": min(bobs, foreign)}
    must_fail(mem.as_("writer", "GET", "/v1/submissions/memory.publish/pub-refs"), 404,
              "NOT_FOUND")
    assert must_fail(publish(mem, 0, who="reader", items=[]), 403, "FORBIDDEN")
    assert must_fail(publish(mem, 0, who="bob", items=[]), 404, "NOT_FOUND")
    assert must_fail(mem.as_("bob", "GET", NOTES), 404, "NOT_FOUND")
    # The collection of another space answers exactly like a missing one.
    missing = mem.as_("writer", "GET", "/v1/collections/nothing")
    foreign_space = mem.as_("dave-writer", "GET", "/v1/collections/nothing")
    assert missing.json() == foreign_space.json()
    assert publish(mem, 0, items=[item("a", mine)]).status_code == 201
    assert mem.as_("reader", "GET", f"/v1/blobs/{mine}").status_code == 200
    assert must_fail(mem.as_("bob", "GET", f"/v1/blobs/{mine}"), 404, "NOT_FOUND")
    assert must_fail(mem.as_("dave-writer", "GET", f"/v1/blobs/{mine}"), 404, "NOT_FOUND")
    assert not [i for i in mem.all_items("bob") if i["type"] == "memory_revision"]


def test_the_database_guards_published_memory(mem: Api, data_dir: Path) -> None:
    blob = sealed_blob(mem, "writer", b"x")
    publish(mem, 0, items=[item("a", blob)])
    publish(mem, 1, items=[item("b", blob)])
    publish(mem, 2, items=[item("a", blob, path="moved.md")])
    db = apsw.Connection(str(next(data_dir.glob("*.sqlite3"))))

    def row(item_id: str, from_revision: int, path: str, size: int | None = None) -> str:
        json_ = (f'{{"blob_id":"{blob}","item_id":"{item_id}","metadata":{{}},'
                 f'"path":"{path}","state":"active"}}')
        return ("INSERT INTO memory_entries (space_id, collection_id, item_id, from_revision,"
                " entry_kind, entry_bytes, blob_id, path, metadata_json) VALUES ('s1', 'notes',"
                f" '{item_id}', {from_revision}, 'active', {size or len(json_)}, '{blob}',"
                f" '{path}', '{{}}')")

    refused = {
        "UPDATE memory_entries SET path = 'z' WHERE item_id = 'b'": "only closed",
        "UPDATE memory_entries SET until_revision = 4 WHERE until_revision = 3": "only closed",
        "UPDATE memory_entries SET until_revision = 3 WHERE until_revision IS NULL":
            "only closed",
        "DELETE FROM memory_entries": "permanent",
        "UPDATE memory_revisions SET committed_at = 0": "immutable",
        "DELETE FROM memory_revisions": "permanent",
        "UPDATE collections SET current_revision = 1 WHERE space_id = 's1'": "only moves",
        "UPDATE collections SET current_revision = 4 WHERE space_id = 's1'": "only moves",
        row("z", 1, "z.md"): "only into the revision being published",
        row("b", 4, "b2.md"): "UNIQUE",  # a second open row of one item
        row("z", 4, "b.md"): "UNIQUE",  # an active path twice among the open rows
        row("z", 4, "z.md", size=7): "CHECK",  # its size is its canonical JSON's
    }
    db.execute("PRAGMA foreign_keys = OFF")  # revision 4 is not written: its rows only here
    for sql, why in refused.items():
        with pytest.raises(apsw.ConstraintError, match=why):
            db.execute(sql)
    db.execute(row("z", 4, "z.md"))  # the revision being published takes new rows


def test_a_publish_writes_only_what_it_changes(mem: Api, data_dir: Path) -> None:
    """Rows are valid over ranges of revisions: a one-entry delta adds one row and closes one;
    an unchanged publish writes no row; every revision still reads as it was published."""
    blob = sealed_blob(mem, "writer", b"x")
    publish(mem, 0, items=[item(f"i{n}", blob) for n in range(50)])
    db = apsw.Connection(str(next(data_dir.glob("*.sqlite3"))))

    def rows() -> int:
        return int(db.execute("SELECT count(*) FROM memory_entries").fetchall()[0][0])

    assert rows() == 50
    assert publish(mem, 1, items=[item("i7", blob, path="seven.md")]).status_code == 201
    assert publish(mem, 2, items=[], delete_ids=["i8"]).status_code == 201
    assert rows() == 52
    same = publish(mem, 3, items=[item("i7", blob, path="seven.md")])
    assert (same.status_code, same.json()["changed"]) == (200, False)
    assert rows() == 52
    assert [e["path"] for e in entries(mem, 1) if e["item_id"] == "i7"] == ["i7.md"]
    assert [e.get("path") for e in entries(mem, 3) if e["item_id"] in ("i7", "i8")] == [
        "seven.md", None]
    assert publish(mem, 3, mode="snapshot", items=[item("i1", blob)]).status_code == 201
    assert rows() == 52 + 48  # i8 was a tombstone already; i1 stays as it was
    assert [e["item_id"] for e in entries(mem, 4) if e["state"] == "active"] == ["i1"]
    assert len(entries(mem, 4)) == 50
    assert len(entries(mem, 2)) == 50


def test_input_the_head_makes_invalid_after_reservation_is_recorded(
        mem: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    """A key reserved while the head was elsewhere, then resumed once the head reached its
    expected revision on which its input is invalid, settles as that 400 (never stays pending)."""
    from waypost.reference.storage import memory as memory_sql

    blob = sealed_blob(mem, "writer", b"x")
    original = memory_sql.commit_revision
    crashes = iter([True])

    def crash_once(*args: Any) -> Any:
        if next(crashes, False):
            raise RuntimeError("the process died before its commit")
        return original(*args)
    monkeypatch.setattr(memory_sql, "commit_revision", crash_once)
    key = rid("early")
    body = {"delete_ids": ["never"], "items": []}
    assert publish(mem, 1, request_id=key, **body).status_code == 500
    assert publish(mem, 0, items=[item("a", blob)]).status_code == 201
    first = publish(mem, 1, request_id=key, **body)
    assert must_fail(first, 400, "INVALID_REQUEST")["details"]["field"] == "delete_ids"
    again = publish(mem, 1, request_id=key, **body)
    assert again.json() == first.json()
    assert again.headers["Waypost-Replayed"] == "true"
    lookup = mem.as_("writer", "GET", f"/v1/submissions/memory.publish/{key}").json()
    assert (lookup["state"], lookup["result"]["status"]) == ("failed", 400)


def test_receipts_about_a_revision_stay_with_its_readers(mem: Api) -> None:
    """A receipt names the collection: observers without a read grant never see it."""
    blob = sealed_blob(mem, "writer", b"x")
    publish(mem, 0, items=[item("a", blob)])
    revision_item = next(i for i in mem.all_items("reader") if i["type"] == "memory_revision")
    acked = mem.as_("reader", "POST", "/v1/acks", {"request_id": rid("ack"), "items": [
        {"item_id": revision_item["item_id"], "stage": "processed"}]})
    assert acked.status_code == 200, acked.text
    mem.consumer("s1", "carol", "carol-log", "space_log")
    mem.token("s1", "carol", "carol-log", name="observer")
    mem.token("s1", "carol", "carol-log", name="observer-reader", collections=[
        {"collection_id": "notes", "actions": ["read"]}])
    assert [i["type"] for i in mem.all_items("observer")] == []
    seen = mem.all_items("observer-reader")
    assert [i["type"] for i in seen] == ["memory_revision", "receipt"]
    assert seen[1]["receipt"]["subject_resource_id"] == "notes"
    writer_view = [i for i in mem.all_items("writer") if i["type"] == "receipt"]
    assert [i["receipt"]["actor_id"] for i in writer_view] == ["bob"]
