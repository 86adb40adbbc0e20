"""Local work on received items: ``start``, ``done`` (which queues the ``processed`` ACK in
the same transaction, then sends it) and ``fail`` (an explicit local error; the server keeps
``received``). The consumer never acts on a message's text by itself: only the user or the
agent marks an item done."""

from __future__ import annotations

from collections.abc import Sequence

from waypost.reference.consumer import faults, outbox
from waypost.reference.consumer.client import Api, ConsumerError
from waypost.reference.consumer.store import LocalStore, now_ms


def _states(store: LocalStore, item_ids: Sequence[str]) -> dict[str, str]:
    states = {}
    for item_id in item_ids:
        state = store.value("SELECT state FROM local_work WHERE item_id = ?", (item_id,))
        if state is None:
            raise ConsumerError(f"no work item {item_id} in the local database (run "
                                "'waypost consumer list' to see them)")
        states[item_id] = str(state)
    return states


def _move(store: LocalStore, item_id: str, state: str, error: str | None = None) -> None:
    store.execute("UPDATE local_work SET state = ?, error = ?, updated_at = ? WHERE item_id = ?",
                  (state, error, now_ms(), item_id))


def start(store: LocalStore, item_ids: Sequence[str]) -> list[str]:
    """Mark pending items in progress; the ones moved."""
    states = _states(store, item_ids)
    moved = [item for item, state in states.items() if state == "pending"]
    with store.transaction():
        for item_id in moved:
            _move(store, item_id, "in_progress")
    return moved


def mark_done(store: LocalStore, item_ids: Sequence[str]) -> list[str]:
    """Mark items done and queue their ``processed`` ACK in one transaction; the ones moved
    (an item already done is left alone; one in error stays in error)."""
    states = _states(store, item_ids)
    failed = [item for item, state in states.items() if state == "error"]
    if failed:
        raise ConsumerError(f"{', '.join(failed)}: marked failed; a failed item stays failed")
    moved = [item for item, state in states.items() if state != "done"]
    for chunk in range(0, len(moved), 20):
        with store.transaction():
            for item_id in moved[chunk:chunk + 20]:
                _move(store, item_id, "done")
            outbox.enqueue_ack(store, [(item, "processed") for item in moved[chunk:chunk + 20]],
                               None)
    return moved


def done(store: LocalStore, api: Api, item_ids: Sequence[str]) -> list[str]:
    """``done``: the local mark, then the ``processed`` ACK (and any other queued write)."""
    moved = mark_done(store, item_ids)
    faults.hit("done.after_commit")
    outbox.flush(store, api)
    return moved


def fail(store: LocalStore, item_ids: Sequence[str], reason: str) -> list[str]:
    """Mark items failed with a reason; nothing is sent (the protocol has no error stage)."""
    states = _states(store, item_ids)
    finished = [item for item, state in states.items() if state == "done"]
    if finished:
        raise ConsumerError(f"{', '.join(finished)}: already done; a done item stays done")
    moved = [item for item, state in states.items() if state != "error"]
    with store.transaction():
        for item_id in moved:
            _move(store, item_id, "error", reason)
    return moved
