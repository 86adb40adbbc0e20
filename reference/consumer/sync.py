"""``sync``: read the feed page by page; store each page with its work records and the local
checkpoint in one transaction; only then acknowledge ``received`` with that checkpoint.

Before reading, every queued write is flushed: an ACK whose answer was lost, or that a crash
kept from being sent, goes out again with its request_id."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from waypost.reference.consumer import faults, outbox, records
from waypost.reference.consumer.answers import ITEM_TYPES
from waypost.reference.consumer.client import Api, BadAnswer, ServerError
from waypost.reference.consumer.records import Page
from waypost.reference.consumer.store import LocalStore

#: At most this many items a page (an ACK takes at most 20 items).
MAX_LIMIT = 20
#: Pages read in a row while the server says ``has_more``, at most; empty ones among them.
MAX_PAGES = 10_000
MAX_EMPTY_PAGES = 3


@dataclass
class SyncResult:
    """What one sync did."""

    pages: int = 0
    items: int = 0
    messages: int = 0
    flushed: int = 0
    skipped: int = 0


def fetch_page(store: LocalStore, api: Api, limit: int, wait: int) -> Page:
    """The next page after the local checkpoint, with every message body and fixed memory
    revision it mentions, each answer checked (``answers``) before anything is stored. A
    stale cursor (the view or the grants changed) starts a new view epoch read from the
    server's checkpoint for the new view."""
    profile = store.require_profile()
    checkpoint = store.checkpoint(profile)
    after = int(checkpoint["last_sequence"]) if checkpoint else 0
    try:
        answer = api.feed(checkpoint["cursor"] if checkpoint else None, limit, after, wait)
    except ServerError as error:
        if error.code != "CURSOR_STALE":
            raise
        store.next_view_epoch()
        answer = api.feed(None, limit, 0, wait)
    known = [item for item in answer["items"] if item["type"] in ITEM_TYPES]
    page = Page(known, answer["next_cursor"], answer["has_more"],
                last_sequence=max((int(i["sequence"]) for i in answer["items"]), default=0),
                skipped=len(answer["items"]) - len(known))
    for item in page.items:
        if item["type"] == "message":
            message_id = item["message"]["message_id"]
            page.messages[message_id] = api.message(message_id)
        elif item["type"] == "memory_revision":
            revision = item["memory_revision"]
            key = (revision["collection_id"], int(revision["revision"]))
            page.revisions[key] = api.revision_entries(*key)
    return page


def sync_page(store: LocalStore, api: Api, limit: int = MAX_LIMIT, wait: int = 0) -> Page:
    """One page: read it, store it with its checkpoint and queued ACK, then send the ACK."""
    page = fetch_page(store, api, limit, wait)
    faults.hit("sync.after_fetch")
    if records.store_page(store, store.require_profile(), page) is not None:
        faults.hit("sync.after_commit")
        outbox.flush(store, api)
    return page


def sync(store: LocalStore, api: Api, *, limit: int = MAX_LIMIT, wait: int = 0,
         watch: bool = False, progress: Callable[[SyncResult], None] | None = None
         ) -> SyncResult:
    """Flush the outbox, then read pages until the feed has no more (``watch``: forever,
    long-polling ``wait`` seconds for each empty page). A run of more than :data:`MAX_PAGES`
    pages with ``has_more``, or of more than :data:`MAX_EMPTY_PAGES` empty ones, is the
    server's fault (:class:`BadAnswer`): the feed would never end."""
    result = SyncResult(flushed=outbox.flush(store, api))
    pages = empty = 0
    while True:
        page = sync_page(store, api, limit, wait if watch else 0)
        if page.items or page.skipped:
            result.pages += 1
            result.items += len(page.items)
            result.messages += len(page.messages)
            result.skipped += page.skipped
        if progress is not None:
            progress(result)
        if not page.has_more and not watch:
            return result
        if page.has_more:
            pages, empty = pages + 1, 0 if page.last_sequence else empty + 1
        else:
            pages = empty = 0
        if pages > MAX_PAGES or empty > MAX_EMPTY_PAGES:
            raise BadAnswer(f"the feed said has_more for {pages} pages in a row, "
                            f"{empty} of them empty: it would never end")
