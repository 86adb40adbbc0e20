"""The feed (protocol.md §6, §8): visibility, filters, cursors and completeness (P06–P08)."""

from __future__ import annotations

import itertools
import threading
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.support.api import Api, must_fail, rid
from waypost.reference.server import served_context
from waypost.reference.service.wakeups import FeedSignal, Waiter


def _ids(items: list[dict[str, Any]]) -> list[str]:
    return [item["item_id"] for item in items]


def test_inbox_shows_what_the_actor_receives(api: Api) -> None:
    to_bob = api.must_send("s1/alice", recipient_ids=["bob"])
    api.must_send("s1/alice", recipient_ids=["carol"])
    from_bob = api.must_send("s1/bob", recipient_ids=["carol"])
    assert _ids(api.all_items("s1/bob")) == [to_bob["feed_item_id"]]
    assert from_bob["feed_item_id"] in _ids(api.all_items("s1/carol"))
    assert api.all_items("s2/dave") == []


def test_space_log_needs_space_observe(api: Api) -> None:
    sent = [api.must_send("s1/alice", recipient_ids=[who])["feed_item_id"]
            for who in ("bob", "carol", "alice")]
    api.consumer("s1", "bob", "bob-log", "space_log")
    api.token("s1", "bob", "bob-log", name="watcher",
              scopes=["message.read", "space.observe"])
    api.token("s1", "bob", "bob-log", name="no-observe", scopes=["message.read"])
    api.token("s1", "bob", "bob-log", name="no-read", scopes=["space.observe"])
    assert _ids(api.all_items("watcher")) == sent
    assert api.all_items("no-observe") == []
    assert api.all_items("no-read") == []


def test_filters_are_applied_by_the_server(api: Api) -> None:
    one = api.must_send("s1/alice", recipient_ids=["bob"])
    two = api.must_send("s1/carol", recipient_ids=["bob"])
    three = api.must_send("s1/carol", recipient_ids=["bob"], thread={"thread_id": two["thread_id"]})
    api.consumer("s1", "bob", "from-carol", "inbox", {"producer_ids": ["carol"]})
    api.token("s1", "bob", "from-carol", name="carol-only")
    assert _ids(api.all_items("carol-only")) == [two["feed_item_id"], three["feed_item_id"]]
    api.consumer("s1", "bob", "thread-one", "inbox", {"thread_ids": [one["thread_id"]]})
    api.token("s1", "bob", "thread-one", name="thread-one")
    assert _ids(api.all_items("thread-one")) == [one["feed_item_id"]]
    api.consumer("s1", "bob", "memory", "inbox", {"item_types": ["memory_revision"]})
    api.token("s1", "bob", "memory", name="memory-only")
    assert api.all_items("memory-only") == []
    api.consumer("s1", "bob", "coll", "inbox", {"collection_ids": ["notes"]})
    api.token("s1", "bob", "coll", name="collections-only")
    assert api.all_items("collections-only") == []


def test_receipts_reach_the_producer_of_the_acknowledged_item(api: Api) -> None:
    sent = api.must_send("s1/alice", recipient_ids=["bob"])
    ack = api.as_("s1/bob", "POST", "/v1/acks", {"request_id": rid(), "items": [
        {"item_id": sent["feed_item_id"], "stage": "received"}]})
    assert ack.status_code == 200
    (receipt,) = api.all_items("s1/alice")
    assert receipt["type"] == "receipt"
    assert receipt["producer_id"] == "bob"
    assert receipt["recipient_ids"] == ["alice"]
    assert receipt["thread_id"] == sent["thread_id"]
    assert receipt["receipt"] == {
        "receipt_id": receipt["receipt"]["receipt_id"], "receipt_version": 1,
        "subject_item_id": sent["feed_item_id"], "subject_resource_id": sent["message_id"],
        "consumer_id": "bob-inbox", "actor_id": "bob", "stage": "received",
        "updated_at": receipt["receipt"]["updated_at"]}


def test_items_have_the_protocol_shape(api: Api) -> None:
    sent = api.must_send("s1/alice", recipient_ids=["bob"], subject="S", kind="todo_suggestion")
    (item,) = api.all_items("s1/bob")
    assert item == {"item_id": sent["feed_item_id"], "sequence": sent["sequence"],
                    "type": "message", "producer_id": "alice", "recipient_ids": ["bob"],
                    "thread_id": sent["thread_id"], "committed_at": sent["committed_at"],
                    "message": {"message_id": sent["message_id"], "subject": "S",
                                "kind": "todo_suggestion"}}


@given(pages=st.lists(st.integers(1, 7), min_size=1, max_size=30), batch=st.integers(0, 4))
def test_any_page_sizes_yield_every_item_once_in_order(api: Api, pages: list[int],
                                                        batch: int) -> None:
    before = api.all_items("s1/bob")
    for _ in range(batch):
        api.must_send("s1/alice", recipient_ids=["bob"])
    expected = _ids(api.all_items("s1/bob"))
    assert expected[:len(before)] == _ids(before)
    seen: list[str] = []
    cursor = None
    for size in itertools.cycle(pages):
        page = api.feed("s1/bob", limit=size, **({"cursor": cursor} if cursor else {}))
        seen += _ids(page["items"])
        cursor = page["next_cursor"]
        assert len(page["items"]) <= size
        if not page["has_more"]:
            break
    assert seen == expected
    sequences = [int(i["sequence"]) for i in api.all_items("s1/bob")]
    assert sequences == sorted(set(sequences))


def test_later_items_appear_after_the_cursor(api: Api) -> None:
    api.must_send("s1/alice", recipient_ids=["bob"])
    page = api.feed("s1/bob")
    assert not page["has_more"]
    assert api.feed("s1/bob", cursor=page["next_cursor"])["items"] == []
    later = api.must_send("s1/carol", recipient_ids=["bob"])
    assert _ids(api.feed("s1/bob", cursor=page["next_cursor"])["items"]) == [later["feed_item_id"]]


def test_no_cursor_starts_after_the_saved_checkpoint(api: Api) -> None:
    first = api.must_send("s1/alice", recipient_ids=["bob"])
    page = api.feed("s1/bob")
    second = api.must_send("s1/alice", recipient_ids=["bob"])
    ack = api.as_("s1/bob", "POST", "/v1/acks", {
        "request_id": rid(), "items": [], "checkpoint": {"cursor": page["next_cursor"]}})
    assert ack.json()["checkpoint_sequence"] == first["sequence"]
    assert _ids(api.feed("s1/bob")["items"]) == [second["feed_item_id"]]


def test_limit_and_query_validation(api: Api) -> None:
    for params, field in (({"limit": 0}, "limit"), ({"limit": 101}, "limit"),
                          ({"limit": "x"}, "limit"), ({"wait": 31}, "wait"),
                          ({"wait": "-1"}, "wait"), ({"colour": "red"}, "colour")):
        must_fail(api.as_("s1/bob", "GET", "/v1/feed", params=params), 400, "INVALID_REQUEST", field)
    for _ in range(3):
        api.must_send("s1/alice", recipient_ids=["bob"])
    page = api.feed("s1/bob", limit=2)
    assert len(page["items"]) == 2
    assert page["has_more"]


def test_tampered_and_foreign_cursors_are_invalid(api: Api) -> None:
    api.must_send("s1/alice", recipient_ids=["bob"])
    cursor = api.feed("s1/bob")["next_cursor"]
    tampered = cursor[:-3] + ("A" if cursor[-3] != "A" else "B") + cursor[-2:]
    must_fail(api.as_("s1/bob", "GET", "/v1/feed", params={"cursor": tampered}), 400,
           "CURSOR_INVALID", "cursor")
    must_fail(api.as_("s1/carol", "GET", "/v1/feed", params={"cursor": cursor}), 400,
           "CURSOR_INVALID", "cursor")
    must_fail(api.as_("s2/dave", "GET", "/v1/feed", params={"cursor": cursor}), 400,
           "CURSOR_INVALID", "cursor")


def test_cursors_go_stale_on_view_or_grant_change_but_survive_rotation(api: Api) -> None:
    api.must_send("s1/alice", recipient_ids=["bob"])
    cursor = api.feed("s1/bob")["next_cursor"]
    rotated = api.token("s1", "bob", "bob-inbox", name="bob-rotated")
    assert rotated["token_id"]
    assert api.as_("bob-rotated", "GET", "/v1/feed", params={"cursor": cursor}).status_code == 200
    api.token("s1", "bob", "bob-inbox", name="bob-narrow", scopes=["message.read"])
    must_fail(api.as_("bob-narrow", "GET", "/v1/feed", params={"cursor": cursor}), 409,
           "CURSOR_STALE", "cursor")
    api.must_admin("POST", "/admin/v1/spaces/s1/consumers/bob-inbox/view",
                   {"request_id": rid(), "view": "inbox"})
    must_fail(api.as_("s1/bob", "GET", "/v1/feed", params={"cursor": cursor}), 409,
           "CURSOR_STALE", "cursor")


def test_a_new_view_revision_starts_from_zero(api: Api) -> None:
    sent = api.must_send("s1/alice", recipient_ids=["bob"])
    page = api.feed("s1/bob")
    api.as_("s1/bob", "POST", "/v1/acks", {"request_id": rid(), "items": [],
                                           "checkpoint": {"cursor": page["next_cursor"]}})
    assert api.feed("s1/bob")["items"] == []
    api.must_admin("POST", "/admin/v1/spaces/s1/consumers/bob-inbox/view",
                   {"request_id": rid(), "view": "inbox"})
    assert _ids(api.feed("s1/bob")["items"]) == [sent["feed_item_id"]]


def test_wait_needs_event_subscribe(api: Api) -> None:
    api.token("s1", "bob", "bob-inbox", name="no-subscribe", scopes=["message.read"])
    must_fail(api.as_("no-subscribe", "GET", "/v1/feed", params={"wait": 1}), 403, "FORBIDDEN",
           "wait")


class _ReportingSignal(FeedSignal):
    """The server's feed signal, telling the test when a long-poll reader is blocked on it."""

    def __init__(self) -> None:
        super().__init__()
        self.blocked = threading.Event()

    async def wait(self, waiter: Waiter, seconds: float) -> bool:
        self.blocked.set()
        return await super().wait(waiter, seconds)


def test_wait_returns_as_soon_as_an_item_is_committed(api: Api) -> None:
    signal = _ReportingSignal()
    served_context(api.client.app).signal = signal
    answers: list[dict[str, Any]] = []
    waiting = threading.Thread(target=lambda: answers.append(api.feed("s1/bob", wait=30)))
    waiting.start()
    assert signal.blocked.wait(timeout=30), "the reader never blocked on an empty feed"
    sent = api.must_send("s1/alice", recipient_ids=["bob"])
    # The wait ends on the commit: the reader is back long before its 30 s are up.
    waiting.join(timeout=20)
    assert not waiting.is_alive(), "the commit did not wake the waiting reader"
    assert _ids(answers[0]["items"]) == [sent["feed_item_id"]]


def test_wait_with_items_already_there_returns_at_once(api: Api) -> None:
    sent = api.must_send("s1/alice", recipient_ids=["bob"])
    assert _ids(api.feed("s1/bob", wait=30)["items"]) == [sent["feed_item_id"]]
