"""Commands that look where timing hides defects (P06, P05, P03): what only concurrency,
restarts and time reveal in real deployments — their front ends, caches and process managers.

- ``long_polls``: two or three consumers of one space long-poll the feed while another client
  sends them a message. Each poll must return it as soon as it is visible: an empty page only
  if the poll's time was up before that, and never before its time.
- ``restart``: the server restarts between commands (``/_test/restart``); everything it answered
  before must read back the same (an answer sent before its commit was durable is lost here),
  and the latest submissions must replay.
- ``late_retry``: a retry after the server clock moved hours or days forward must replay the
  identical stable result (idempotency records must not expire).

The times of a long poll are the kit's own monotonic clock around each request: a server
receives a request after the kit sent it, so its deadline is no earlier than the kit's start +
``wait``, and a message whose send was answered before that was visible in time
(WP-FEED-9). An answer at the deadline (empty, or with the message) counts as a missed
wake-up only if the message was visible ``GRACE`` before it: a slow machine (a read
straddling the deadline, a wake-up a little late) does not fail a correct server."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from waypost.properties.commands.blobs import advance_clock
from waypost.properties.commands.feed import PAGE, check_page
from waypost.properties.commands.messages import send_body, submit_send
from waypost.properties.commands.submissions import retry
from waypost.properties.commands.world import carrying
from waypost.properties.model.matching import protocol_view, shaped, subset
from waypost.properties.model.state import HeldCursor, Item, Token
from waypost.properties.wire.http import Answer

if TYPE_CHECKING:
    from waypost.properties.commands.world import World

WAIT = 2  # seconds a long poll of the kit waits (or the published wait_seconds, if less)
SETTLE = 0.05  # seconds the polls get to reach the server before the send
EARLY = 0.05  # timer slack: an empty page must not come back sooner than its wait
#: Seconds the message must have been visible before a poll's deadline for an answer at the
#: deadline to be a missed wake-up.
GRACE = 1.0
MAX_PAGES = 50  # the pages a view is followed through
RECENT = 8  # a restart re-reads at most this many of the latest messages and blobs
RETRIED = 3  # and retries this many of the latest submissions
#: How far the server clock moves before a late retry: an hour, a day, a week.
ADVANCES = (3_600_001, 86_400_001, 604_800_001)


def probe_item(sender: Token, recipients: tuple[str, ...]) -> Item:
    """The feed item a new-thread message of ``sender`` to ``recipients`` would make (to ask
    the model who would see it before it is sent)."""
    return Item(-1, sender.space, "message", sender.actor_id, recipients, None)


def long_polls(world: World, readers: list[str], sender: str, subject: str) -> None:
    """The ``readers`` (tokens of one space with ``event.subscribe``) read their views to the
    end, then long-poll from there at once while ``sender`` sends them a message: each poll
    answers it, at once or as soon as it is visible (P06: WP-FEED-7)."""
    writer = world.token(sender)
    polled = [world.token(handle) for handle in dict.fromkeys(readers)]
    recipients = tuple(sorted({reader.actor_id for reader in polled}))
    body = send_body(world, writer, list(recipients), "new", None, "info", subject,
                     "long poll", None)
    wait = min(WAIT, world.model.limits.get("wait_seconds", WAIT))
    probe = probe_item(writer, recipients)
    if wait < 1 or not world.model.live(writer) or world.model.send_errors(writer, body) \
            or not all(r.space == writer.space and world.model.live(r)
                       and r.has("event.subscribe") and world.model.visible(probe, r)
                       for r in polled):
        submit_send(world, writer, body)  # nobody to poll for it: a plain send
        return
    ends: list[tuple[int, str]] = []
    for reader in polled:
        reached = caught_up(world, reader)
        if reached is None:
            return
        ends.append(reached)
    limit = world.model.page_size()

    def poll(reader: Token, cursor: str) -> tuple[float, Answer, float]:
        started = time.monotonic()
        answer = world.as_(reader, "GET", "/v1/feed",
                           params={"cursor": cursor, "limit": limit, "wait": wait})
        return started, answer, time.monotonic()

    known = len(world.message_order)
    with ThreadPoolExecutor(len(polled)) as pool:
        polls = [pool.submit(carrying(lambda args: poll(*args)), (reader, cursor))
                 for reader, (_, cursor) in zip(polled, ends, strict=True)]
        time.sleep(SETTLE)  # bounded: polls that come later must answer at once anyway
        submit_send(world, writer, body)
        visible_by = time.monotonic()  # the send's answer was in: the item was visible
        answers = [future.result() for future in polls]
    message = world.model.messages[world.message_order[-1]] \
        if len(world.message_order) > known else None
    for reader, (end, _), (started, answer, answered) in zip(polled, ends, answers,
                                                             strict=True):
        _check_poll(world, reader, end, limit, answer, started, answered, wait,
                    None if message is None else (visible_by, message.shown))


def _check_poll(world: World, reader: Token, end: int, limit: int, answer: Answer,
                started: float, answered: float, wait: int,
                sent: tuple[float, dict[str, Any]] | None) -> None:
    """One long poll's answer: a page holding the message (compared with the model), or an
    empty one that came back when its time was up; neither at its deadline if the message
    was visible ``GRACE`` before it (a missed wake-up)."""
    page = answer.json
    if not world.check(("WP-FEED-7", "WP-HTTP-13"), answer.status == 200
                       and shaped(page, PAGE) and isinstance(page["items"], list),
                       f"a long poll must answer a feed page, got {answer.status}",
                       answer=page, reader=reader.handle):
        return
    at_deadline = answered >= started + wait - EARLY
    evidence: dict[str, Any] = {"reader": reader.handle, "wait": wait,
                                "answered_after": round(answered - started, 3)}
    if not page["items"]:
        world.check("WP-FEED-7", at_deadline,
                    "a long poll with nothing to show must be held until its wait is up",
                    **evidence)
    if sent is not None:
        visible_by, shown = sent
        missed = visible_by + GRACE <= started + wait and (at_deadline or not page["items"])
        world.check(("WP-FEED-7", "WP-FEED-9", "WP-FEED-3"), not missed,
                    f"a long poll came back {'with' if page['items'] else 'without'} the "
                    f"message only when its wait was up, though the message was visible over "
                    f"{GRACE:.0f} s before (a missed wake-up)", **evidence,
                    visible_after=round(visible_by - started, 3),
                    committed_at=shown.get("committed_at"), message_id=shown.get("message_id"))
        if not page["items"]:  # visible only after the poll's time was up
            _hold(world, reader, end, page["next_cursor"])
            return
    check_page(world, reader, end, limit, answer)


def _hold(world: World, reader: Token, end: int, cursor: Any) -> None:
    """Keep the cursor of an empty page (at ``end``), as a page the model checked would: what
    later steps draw from must not depend on how fast the server answered."""
    if world.check(("WP-FEED-4", "WP-HTTP-13"), isinstance(cursor, str),
                   "an empty page must still hand out a cursor", cursor=cursor):
        consumer = world.model.consumer_of(reader)
        world.model.cursors.append(HeldCursor(
            cursor, reader.space, reader.actor_id, reader.consumer_id, consumer.view_revision,
            reader.grant_fingerprint, end, reader.handle))


def caught_up(world: World, reader: Token) -> tuple[int, str] | None:
    """Page through the reader's view from its checkpoint (compared with the model): the
    position at its end and the cursor there, or None if a page was wrong."""
    limit = world.model.page_size()
    position = world.model.checkpoint(reader)
    answer = world.as_(reader, "GET", "/v1/feed", params={"limit": limit})
    for page in range(MAX_PAGES):
        end = check_page(world, reader, position, limit, answer, from_checkpoint=page == 0)
        if end is None:
            return None
        position = end
        if not answer.json["has_more"]:
            return position, str(answer.json["next_cursor"])
        answer = world.as_(reader, "GET", "/v1/feed", params={
            "limit": limit, "cursor": answer.json["next_cursor"]})
    return None


def restart(world: World) -> None:
    """Restart the server (test hook), then read back what it answered before: every view
    (nothing lost, the checkpoint where it was), the latest messages and sealed blobs, every
    collection's head; the latest submissions replay (P05: WP-LOAD-3; P03: WP-IDEM-6)."""
    if not world.model.hooks:
        return
    with world.shared.alone():  # no request of another worker is in flight meanwhile
        answer = world.session.admin("POST", "/_test/restart", {})
    if answer.status != 200:
        return  # a restart hook that fails is P18's finding (the fault commands check it)
    _messages_kept(world)
    _blobs_kept(world)
    _heads_kept(world)
    model, seen = world.model, set()
    for token in list(model.tokens.values()):
        if model.live(token) and (token.consumer_id, token.grant_fingerprint) not in seen:
            seen.add((token.consumer_id, token.grant_fingerprint))
            _view_kept(world, token)
    count = len(model.submissions)
    for index in range(max(0, count - RETRIED), count):
        retry(world, index, " after a restart")


def _messages_kept(world: World) -> None:
    """The latest messages read back as published."""
    model = world.model
    for message in list(model.messages.values())[-RECENT:]:
        reader = next((t for t in model.tokens.values() if model.live(t)
                       and t.has("message.read") and model.readable_by(message, t)), None)
        if reader is not None:
            got = world.as_(reader, "GET", f"/v1/messages/{message.message_id}")
            world.check(("WP-LOAD-3", "WP-MSG-12"), got.status == 200
                        and protocol_view(got.json, message.shown) == message.shown,
                        "a message answered before a restart must read back the same after it",
                        status=got.status, answer=got.json, expected=message.shown)


def _blobs_kept(world: World) -> None:
    """The latest sealed blobs are there with their facts."""
    model = world.model
    for upload in [u for u in model.uploads if u.state == "sealed"][-RECENT:]:
        owner = next((t for t in model.tokens.values() if model.live(t)
                      and model.blob_readable(upload.blob_id, t)), None)
        if owner is not None:
            got = world.as_(owner, "GET", f"/v1/blobs/{upload.blob_id}")
            world.check(("WP-LOAD-3", "WP-UPL-9"), got.status == 200
                        and subset(got.json, upload.sealed_answer) == upload.sealed_answer,
                        "a blob sealed before a restart must be there after it",
                        status=got.status, answer=got.json, expected=upload.sealed_answer)


def _heads_kept(world: World) -> None:
    """Every collection's head is where it was."""
    model = world.model
    for collection in list(model.collections.values()):
        reader = next((t for t in model.tokens.values() if model.live(t)
                       and t.space == collection.space and t.has("memory.read")
                       and t.may(collection.collection_id, "read")), None)
        if reader is not None:
            got = world.as_(reader, "GET", f"/v1/collections/{collection.collection_id}")
            head = got.json.get("current_revision") if isinstance(got.json, dict) else None
            world.check(("WP-LOAD-3", "WP-MEM-20"),
                        got.status == 200 and head == collection.head,
                        "a collection's head must be where it was before a restart",
                        status=got.status, answer=got.json, expected=collection.head)


def _view_kept(world: World, reader: Token) -> None:
    """The reader's view from its checkpoint still holds every item the kit has seen after
    the checkpoint, and none at or before it."""
    limit = world.model.page_size()
    shown: list[str] = []
    params: dict[str, Any] = {"limit": limit}
    for _ in range(MAX_PAGES):
        answer = world.as_(reader, "GET", "/v1/feed", params=params)
        page = answer.json
        if not world.check(("WP-LOAD-3", "WP-FEED-2"), answer.status == 200
                           and shaped(page, PAGE) and isinstance(page["items"], list)
                           and all(isinstance(item, dict) for item in page["items"]),
                           "after a restart the feed must still answer pages",
                           status=answer.status, answer=page):
            return
        shown += [str(item.get("item_id")) for item in page["items"]]
        if page["has_more"] is not True or not isinstance(page["next_cursor"], str):
            break
        params = {"limit": limit, "cursor": page["next_cursor"]}
    start = world.model.checkpoint(reader)
    seen = [item for item in world.model.visible_after(reader, 0) if item.bound]
    lost = [item.item_id for item in seen if (item.sequence or 0) > start
            and item.item_id not in shown]
    before = {item.item_id for item in seen if (item.sequence or 0) <= start}
    world.check(("WP-LOAD-3", "WP-FEED-3", "WP-FEED-2"),
                not lost and not before.intersection(shown),
                "after a restart a view must hold every item answered before it, from the "
                "checkpoint saved before it", lost=lost,
                behind_checkpoint=sorted(before.intersection(shown)), checkpoint=start,
                reader=reader.handle)


def late_retry(world: World, submission: int, advance_ms: int) -> None:
    """Move the server clock ``advance_ms`` forward (where the target offers the clock
    hook), then retry an earlier submission: its key must not have expired (P03)."""
    if world.model.hooks:
        advance_clock(world, advance_ms)
    retry(world, submission, f" {advance_ms / 3_600_000:.0f} h later (server clock)"
          if world.model.hooks else " later")
