"""``receipt.ack`` (protocol.md §8): all-or-nothing, monotone receipts, history (P09, P10)."""

from __future__ import annotations

from typing import Any

from tests.support.api import Api, must_fail, rid


def ack(api: Api, who: str, items: list[tuple[str, str]], cursor: str | None = None,
        request_id: str | None = None) -> Any:
    body: dict[str, Any] = {"request_id": request_id or rid("ack"),
                            "items": [{"item_id": i, "stage": s} for i, s in items]}
    if cursor is not None:
        body["checkpoint"] = {"cursor": cursor}
    return api.as_(who, "POST", "/v1/acks", body)


def receipts(api: Api, who: str) -> list[dict[str, Any]]:
    return [item["receipt"] for item in api.all_items(who) if item["type"] == "receipt"]


def test_stages_advance_and_never_go_back(api: Api) -> None:
    item = api.must_send("s1/alice", recipient_ids=["bob"])["feed_item_id"]
    steps = [("received", "received", 1, True), ("received", "received", 1, False),
             ("processed", "processed", 2, True), ("received", "processed", 2, False),
             ("processed", "processed", 2, False)]
    for asked, stage, version, changed in steps:
        answer = ack(api, "s1/bob", [(item, asked)])
        assert answer.status_code == 200, answer.text
        assert answer.json()["items"] == [{"item_id": item, "stage": stage,
                                           "receipt_version": version, "changed": changed}]
    history = receipts(api, "s1/alice")
    assert [(r["stage"], r["receipt_version"]) for r in history] == [("received", 1),
                                                                      ("processed", 2)]


def test_processed_can_come_first(api: Api) -> None:
    item = api.must_send("s1/alice", recipient_ids=["bob"])["feed_item_id"]
    answer = ack(api, "s1/bob", [(item, "processed")]).json()
    assert answer["items"][0] == {"item_id": item, "stage": "processed", "receipt_version": 1,
                                  "changed": True}


def test_earlier_receipt_items_keep_their_stage(api: Api) -> None:
    item = api.must_send("s1/alice", recipient_ids=["bob"])["feed_item_id"]
    ack(api, "s1/bob", [(item, "received")])
    before = receipts(api, "s1/alice")
    ack(api, "s1/bob", [(item, "processed")])
    after = receipts(api, "s1/alice")
    assert after[0] == before[0]
    assert after[0]["stage"] == "received"
    assert after[1]["stage"] == "processed"


def test_one_invisible_item_rejects_the_whole_batch(api: Api) -> None:
    mine = api.must_send("s1/alice", recipient_ids=["bob"])["feed_item_id"]
    not_mine = api.must_send("s1/alice", recipient_ids=["carol"])["feed_item_id"]
    foreign = api.must_send("s2/dave", recipient_ids=["erin"])["feed_item_id"]
    cursor = api.feed("s1/bob")["next_cursor"]
    for bad in (not_mine, foreign, "fi_missing"):
        answer = ack(api, "s1/bob", [(mine, "received"), (bad, "received")], cursor)
        error = must_fail(answer, 404, "NOT_FOUND", "items[1].item_id")
        assert error["details"]["item_id"] == bad
    assert receipts(api, "s1/alice") == []
    assert [i["item_id"] for i in api.feed("s1/bob")["items"]] == [mine]  # checkpoint unmoved


def test_foreign_and_missing_items_answer_alike(api: Api) -> None:
    foreign = api.must_send("s2/dave", recipient_ids=["erin"])["feed_item_id"]
    one = ack(api, "s1/bob", [(foreign, "received")], request_id="same-shape")
    two = ack(api, "s1/bob", [("fi_missing", "received")], request_id="same-shape-2")
    assert one.status_code == two.status_code == 404
    assert one.json()["error"]["message"] == two.json()["error"]["message"]


def test_receipt_items_cannot_be_acknowledged(api: Api) -> None:
    item = api.must_send("s1/alice", recipient_ids=["bob"])["feed_item_id"]
    ack(api, "s1/bob", [(item, "received")])
    receipt_item = api.all_items("s1/alice")[0]["item_id"]
    must_fail(ack(api, "s1/alice", [(receipt_item, "received")]), 400, "INVALID_REQUEST",
           "items[0].item_id")


def test_checkpoint_only_moves_forward(api: Api) -> None:
    sent = [api.must_send("s1/alice", recipient_ids=["bob"])["sequence"] for _ in range(3)]
    early = api.feed("s1/bob", limit=1)["next_cursor"]
    late = api.feed("s1/bob", limit=3)["next_cursor"]
    assert ack(api, "s1/bob", [], late).json()["checkpoint_sequence"] == sent[2]
    assert ack(api, "s1/bob", [], early).json()["checkpoint_sequence"] == sent[2]
    assert api.feed("s1/bob")["items"] == []


def test_replay_is_stable_after_later_advances(api: Api) -> None:
    item = api.must_send("s1/alice", recipient_ids=["bob"])["feed_item_id"]
    first = ack(api, "s1/bob", [(item, "received")], request_id="stable")
    ack(api, "s1/bob", [(item, "processed")])
    again = ack(api, "s1/bob", [(item, "received")], request_id="stable")
    assert again.json() == first.json()
    assert again.headers["Waypost-Replayed"] == "true"
    must_fail(ack(api, "s1/bob", [(item, "processed")], request_id="stable"), 409,
           "IDEMPOTENCY_CONFLICT")
    assert len(receipts(api, "s1/alice")) == 2


def test_checkpoint_enters_the_fingerprint_as_its_position(api: Api) -> None:
    api.must_send("s1/alice", recipient_ids=["bob"])
    cursor = api.feed("s1/bob")["next_cursor"]
    api.token("s1", "bob", "bob-inbox", name="bob-rotated")
    rotated_cursor = api.feed("bob-rotated")["next_cursor"]
    assert ack(api, "s1/bob", [], cursor, request_id="cp").status_code == 200
    same = ack(api, "s1/bob", [], rotated_cursor, request_id="cp")
    assert same.status_code == 200
    assert same.headers["Waypost-Replayed"] == "true"


def test_ack_bounds_and_shapes(api: Api) -> None:
    item = api.must_send("s1/alice", recipient_ids=["bob"])["feed_item_id"]
    must_fail(ack(api, "s1/bob", []), 400, "INVALID_REQUEST", "items")
    over = must_fail(ack(api, "s1/bob", [(f"fi_{n}", "received") for n in range(21)]), 413,
                  "RESOURCE_LIMIT", "items")
    assert (over["details"]["limit"], over["details"]["max"]) == ("ack_items", 20)
    must_fail(ack(api, "s1/bob", [(item, "received"), (item, "processed")]), 400,
           "INVALID_REQUEST", "items")
    must_fail(ack(api, "s1/bob", [(item, "read")]), 400, "INVALID_REQUEST", "items[0].stage")
    must_fail(ack(api, "s1/bob", [(item, "received")], "not-a-cursor"), 400, "CURSOR_INVALID")
    cursor = api.feed("s1/carol")["next_cursor"]
    must_fail(ack(api, "s1/bob", [(item, "received")], cursor), 400, "CURSOR_INVALID")
    api.token("s1", "bob", "bob-inbox", name="no-write", scopes=["message.read"])
    must_fail(ack(api, "no-write", [(item, "received")]), 403, "FORBIDDEN")
    assert receipts(api, "s1/alice") == []


def test_twenty_items_commit_together(api: Api) -> None:
    items = [api.must_send("s1/alice", recipient_ids=["bob"])["feed_item_id"]
             for _ in range(20)]
    answer = ack(api, "s1/bob", [(i, "received") for i in items])
    assert answer.status_code == 200
    assert [r["item_id"] for r in answer.json()["items"]] == items
    assert [r["subject_item_id"] for r in receipts(api, "s1/alice")] == items


def test_a_retry_replays_even_after_the_view_changed(api: Api) -> None:
    item = api.must_send("s1/alice", recipient_ids=["bob"])["feed_item_id"]
    cursor = api.feed("s1/bob")["next_cursor"]
    first = ack(api, "s1/bob", [(item, "received")], cursor, request_id="before-view-change")
    api.must_admin("POST", "/admin/v1/spaces/s1/consumers/bob-inbox/view",
                   {"request_id": rid(), "view": "space_log"})
    again = ack(api, "s1/bob", [(item, "received")], cursor, request_id="before-view-change")
    assert again.json() == first.json()
    assert again.headers["Waypost-Replayed"] == "true"
    must_fail(ack(api, "s1/bob", [(item, "received")], cursor), 409, "CURSOR_STALE")
