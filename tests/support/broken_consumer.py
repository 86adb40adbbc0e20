"""The reference consumer with one deliberate defect, for the kit's P17 tests:
``python tests/support/broken_consumer.py DEFECT COMMAND …`` runs ``waypost consumer COMMAND …``
with DEFECT patched in. The defects live here, in the tests, never in the shipped consumer: the kit
checks any consumer command line, so a broken one is just another command."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from waypost import consumer_command
from waypost.reference.consumer import faults, outbox, records, sync, work
from waypost.reference.consumer.client import Api
from waypost.reference.consumer.records import Page
from waypost.reference.consumer.store import LocalStore, Profile


def _ack(api: Api, items: Sequence[str], stage: str, cursor: str | None = None) -> None:
    body: dict[str, Any] = {"request_id": outbox.new_request_id("direct"),
                            "items": [{"item_id": item, "stage": stage} for item in items]}
    if cursor is not None:
        body["checkpoint"] = {"cursor": cursor}
    faults.hit("ack.before_submit")
    api.call("POST", "/v1/acks", body=body)
    faults.hit("ack.after_submit")


def ack_before_commit() -> None:
    """Acknowledges ``received`` as soon as the page is read, then stores it."""
    def sync_page(store: LocalStore, api: Api, limit: int = 20, wait: int = 0) -> Page:
        page = sync.fetch_page(store, api, limit, wait)
        faults.hit("sync.after_fetch")
        if page.items:
            _ack(api, page.work_items, "received", page.next_cursor)
            profile = store.require_profile()
            with store.transaction():
                records.insert_items(store, page, profile.view_epoch)
                records.save_checkpoint(store, profile, page)
            faults.hit("sync.after_commit")
        return page
    sync.sync_page = sync_page


def processed_before_done() -> None:
    """Acknowledges ``processed`` first, then marks the work done locally."""
    def done(store: LocalStore, api: Api, item_ids: Sequence[str]) -> list[str]:
        _ack(api, item_ids, "processed")
        with store.transaction():
            for item_id in item_ids:
                work._move(store, item_id, "done")
        faults.hit("done.after_commit")
        return list(item_ids)
    work.done = done


def fresh_request_id() -> None:
    """Resubmits a queued write under a new request_id instead of its own."""
    original = outbox.request_body

    def request_body(store: LocalStore, row: dict[str, Any]) -> dict[str, Any]:
        body = original(store, row)
        if row["attempts"] > 0:
            body["request_id"] = outbox.new_request_id("again")
        return body
    outbox.request_body = request_body


def checkpoint_outside_transaction() -> None:
    """Saves the checkpoint in a transaction of its own, before the page's items (with the
    guard of the local schema dropped, as a consumer without it would run)."""
    def store_page(store: LocalStore, profile: Profile, page: Page) -> int | None:
        if not page.items:
            return None
        for name in ("local_checkpoints_never_ahead", "local_checkpoints_never_ahead_insert"):
            store.execute(f"DROP TRIGGER IF EXISTS {name}")
        with store.transaction():
            records.save_checkpoint(store, profile, page)
        faults.hit("sync.after_commit")
        with store.transaction():
            records.insert_items(store, page, profile.view_epoch)
            return outbox.enqueue_ack(store, [(i, "received") for i in page.work_items],
                                      page.next_cursor)
    records.store_page = store_page


def unsynced_commits() -> None:
    """Opens its local file with ``synchronous=OFF``: a commit is never synced, so it survives
    a process crash but not a power cut (caught only with ``--power-loss``)."""
    original = LocalStore.__init__

    def init(self: LocalStore, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self.connection.pragma("synchronous", "OFF")
    LocalStore.__init__ = init


DEFECTS: dict[str, Callable[[], None]] = {
    "ack-before-commit": ack_before_commit, "processed-before-done": processed_before_done,
    "fresh-request-id": fresh_request_id,
    "checkpoint-outside-transaction": checkpoint_outside_transaction,
    "unsynced-commits": unsynced_commits}

if __name__ == "__main__":
    DEFECTS[sys.argv[1]]()
    raise SystemExit(consumer_command.main(sys.argv[2:]))
