"""Long polls woken by what concerns them (reference/service/wakeups.py): a send wakes its
recipients' waits, not every wait of the space; filters and views decide; no wake-up is lost
when sends race re-polls."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.support.api import Api, item, publish, sealed_blob
from waypost.reference.server import served_context
from waypost.reference.service.wakeups import FeedSignal, Waiter


class _Watching(FeedSignal):
    """The server's signal, telling the test who waits and who was woken."""

    def __init__(self) -> None:
        super().__init__()
        self.parked: dict[str, threading.Event] = {}
        self.woken: list[tuple[str, ...]] = []

    async def wait(self, waiter: Waiter, seconds: float) -> bool:
        for key in waiter.keys:
            self.parked.setdefault("/".join(key), threading.Event()).set()
        woken = await super().wait(waiter, seconds)
        if woken:
            self.woken.extend(waiter.keys)
        return woken


def _watch(api: Api) -> _Watching:
    signal = _Watching()
    served_context(api.client.app).signal = signal
    return signal


def _poll(api: Api, who: str, answers: dict[str, Any], **params: Any) -> threading.Thread:
    thread = threading.Thread(target=lambda: answers.update({who: api.feed(who, **params)}),
                              daemon=True)
    thread.start()
    return thread


def _poll_answer(api: Api, who: str, answers: dict[str, Any], wait: int) -> threading.Thread:
    """A long poll whose answer, whatever its status, lands in ``answers[who]``."""
    thread = threading.Thread(target=lambda: answers.update({who: api.as_(
        who, "GET", "/v1/feed", params={"wait": wait})}), daemon=True)
    thread.start()
    return thread


def test_a_send_wakes_its_recipient_and_nobody_else(api: Api) -> None:
    signal = _watch(api)
    answers: dict[str, Any] = {}
    polls = [_poll(api, who, answers, wait=30) for who in ("s1/bob", "s1/carol")]
    for key in ("inbox/s1/bob", "inbox/s1/carol"):
        assert signal.parked.setdefault(key, threading.Event()).wait(timeout=30), key
    sent = api.must_send("s1/alice", recipient_ids=["bob"])
    polls[0].join(timeout=20)
    assert not polls[0].is_alive(), "the recipient's wait was not woken"
    assert [item["item_id"] for item in answers["s1/bob"]["items"]] == [sent["feed_item_id"]]
    assert signal.woken == [("inbox", "s1", "bob")]  # carol's wait was left alone
    assert polls[1].is_alive()
    to_carol = api.must_send("s1/alice", recipient_ids=["carol"])
    polls[1].join(timeout=20)
    assert [item["item_id"] for item in answers["s1/carol"]["items"]] == [
        to_carol["feed_item_id"]]


def test_a_wait_nothing_concerned_ends_empty_at_its_deadline(api: Api) -> None:
    signal = _watch(api)
    answers: dict[str, Any] = {}
    poll = _poll(api, "s1/bob", answers, wait=1)
    assert signal.parked.setdefault("inbox/s1/bob", threading.Event()).wait(timeout=30)
    api.must_send("s1/alice", recipient_ids=["carol"])
    poll.join(timeout=20)
    assert answers["s1/bob"]["items"] == []
    assert signal.woken == []


def test_a_filtered_wait_is_woken_only_by_items_its_filter_passes(api: Api) -> None:
    api.consumer("s1", "bob", "bob-from-carol", "inbox", filter_={"producer_ids": ["carol"]})
    api.token("s1", "bob", "bob-from-carol", name="from-carol",
              scopes=["message.read", "event.subscribe"])
    signal = _watch(api)
    answers: dict[str, Any] = {}
    poll = _poll(api, "from-carol", answers, wait=30)
    assert signal.parked.setdefault("inbox/s1/bob", threading.Event()).wait(timeout=30)
    api.must_send("s1/alice", recipient_ids=["bob"])  # not from carol: no wake-up
    from_carol = api.must_send("s1/carol", recipient_ids=["bob"])
    poll.join(timeout=20)
    assert not poll.is_alive()
    assert signal.woken == [("inbox", "s1", "bob")]
    assert [item["item_id"] for item in answers["from-carol"]["items"]] == [
        from_carol["feed_item_id"]]


def test_no_wake_up_is_lost_when_sends_race_re_polls(api: Api) -> None:
    """Each round, a send and a long poll from the last cursor start at once: whichever is
    first, the poll answers the message (a lost wake-up would answer an empty page after the
    whole wait)."""
    cursor: str | None = None
    for _ in range(150):
        start = threading.Barrier(2)
        answers: dict[str, Any] = {}
        sent: dict[str, Any] = {}

        def poll(after: str | None = cursor, start: threading.Barrier = start,
                 answers: dict[str, Any] = answers) -> None:
            start.wait()
            answers["page"] = api.feed("s1/bob", wait=20, **({"cursor": after} if after else {}))

        def send(start: threading.Barrier = start, sent: dict[str, Any] = sent) -> None:
            start.wait()
            sent.update(api.must_send("s1/alice", recipient_ids=["bob"]))

        threads = [threading.Thread(target=poll), threading.Thread(target=send)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert [item["item_id"] for item in answers["page"]["items"]] == [sent["feed_item_id"]]
        cursor = answers["page"]["next_cursor"]


def test_a_wait_whose_token_is_revoked_meanwhile_ends_refused(api: Api) -> None:
    """Nothing concerned the wait, but the control plane changed: its end re-checks the token
    in the database (an empty page would answer a revoked token)."""
    issued = api.token("s1", "bob", "bob-inbox", name="bob-2",
                       scopes=["message.read", "event.subscribe"])
    signal = _watch(api)
    answers: dict[str, Any] = {}
    thread = _poll_answer(api, "bob-2", answers, wait=2)
    assert signal.parked.setdefault("inbox/s1/bob", threading.Event()).wait(timeout=30)
    api.must_admin("POST", f"/admin/v1/tokens/{issued['token_id']}/revoke",
                   {"request_id": "revoke-bob-2"})
    thread.join(timeout=30)
    assert answers["bob-2"].status_code == 401, answers["bob-2"].text
    assert signal.woken == []


def test_a_publish_wakes_the_readers_of_its_collection_only(mem: Api) -> None:
    blob = sealed_blob(mem, "writer", b"entry")
    signal = _watch(mem)
    answers: dict[str, Any] = {}
    polls = [_poll(mem, who, answers, wait=30) for who in ("reader", "s1/carol")]
    for key in ("collection/s1/notes", "inbox/s1/carol"):
        assert signal.parked.setdefault(key, threading.Event()).wait(timeout=30), key
    assert publish(mem, 0, items=[item("a", blob)]).status_code == 201
    polls[0].join(timeout=20)
    assert not polls[0].is_alive(), "the collection's reader was not woken"
    assert [i["type"] for i in answers["reader"]["items"]] == ["memory_revision"]
    assert signal.woken == [("inbox", "s1", "bob"), ("collection", "s1", "notes")]
    assert polls[1].is_alive()  # carol holds no grant on notes: her wait was left alone
    mem.must_send("s1/alice", recipient_ids=["carol"])
    polls[1].join(timeout=20)


def test_an_ack_wakes_the_producer_of_its_message(api: Api) -> None:
    sent = api.must_send("s1/alice", recipient_ids=["bob"])
    cursor = api.feed("s1/alice")["next_cursor"]
    signal = _watch(api)
    answers: dict[str, Any] = {}
    poll = _poll(api, "s1/alice", answers, wait=5, cursor=cursor)
    assert signal.parked.setdefault("inbox/s1/alice", threading.Event()).wait(timeout=30)
    acked = api.as_("s1/bob", "POST", "/v1/acks", {"request_id": "ack-wakes", "items": [
        {"item_id": sent["feed_item_id"], "stage": "processed"}]})
    assert acked.status_code == 200, acked.text
    poll.join(timeout=20)
    assert not poll.is_alive(), "the producer's wait was not woken by the receipt"
    assert [(i["type"], i["receipt"]["stage"]) for i in answers["s1/alice"]["items"]] == [
        ("receipt", "processed")]
    assert ("inbox", "s1", "alice") in signal.woken


def test_a_wait_whose_token_expires_meanwhile_ends_refused(hooked: Api) -> None:
    """The token expires (on the server's clock) while its wait is parked: the wait's end
    re-checks it, and a refused token never gets its empty page."""
    soon = datetime.now(UTC) + timedelta(minutes=5)
    hooked.token("s1", "bob", "bob-inbox", name="expiring",
                 scopes=["message.read", "event.subscribe"],
                 expires_at=soon.isoformat(timespec="milliseconds").replace("+00:00", "Z"))
    signal = _watch(hooked)
    answers: dict[str, Any] = {}
    thread = _poll_answer(hooked, "expiring", answers, wait=2)
    assert signal.parked.setdefault("inbox/s1/bob", threading.Event()).wait(timeout=30)
    assert hooked.admin("POST", "/_test/clock", {"advance_ms": 10 * 60 * 1000}).status_code == 200
    thread.join(timeout=30)
    assert answers["expiring"].status_code == 401, answers["expiring"].text
    assert signal.woken == []


def test_a_send_to_the_default_actor_wakes_only_that_actor(api: Api) -> None:
    """Without recipient_ids a message goes to the space's default actor (alice in s1): its
    route is read back, so only alice's wait is woken, not every inbox of the space."""
    signal = _watch(api)
    answers: dict[str, Any] = {}
    polls = [_poll(api, who, answers, wait=30) for who in ("s1/alice", "s1/carol")]
    for key in ("inbox/s1/alice", "inbox/s1/carol"):
        assert signal.parked.setdefault(key, threading.Event()).wait(timeout=30), key
    sent = api.must_send("s1/bob")
    polls[0].join(timeout=20)
    assert not polls[0].is_alive(), "the default actor's wait was not woken"
    assert [i["item_id"] for i in answers["s1/alice"]["items"]] == [sent["feed_item_id"]]
    assert signal.woken == [("inbox", "s1", "alice")]
    assert polls[1].is_alive()
    api.must_send("s1/alice", recipient_ids=["carol"])
    polls[1].join(timeout=20)


def test_a_wait_ends_at_its_wake_up_or_its_deadline() -> None:
    """A wake-up ends a parked wait (True) long before its deadline; a wake-up that came
    before the wait is not lost; a wait nothing wakes ends at its deadline (False)."""
    async def scenario() -> list[bool]:
        signal, loop = FeedSignal(), asyncio.get_running_loop()
        parked, early, idle = (Waiter("s", (("inbox", "s", name),), {})
                               for name in ("bob", "carol", "dave"))
        loop.call_soon(parked.wake)
        early.wake()
        return [await signal.wait(parked, 600), await signal.wait(early, 600),
                await signal.wait(idle, 0.01)]
    assert asyncio.run(asyncio.wait_for(scenario(), 60)) == [True, True, False]
