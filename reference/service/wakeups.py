"""Long polls woken by what concerns them: a commit wakes only the waits whose view its feed
items can change (epoll, not a broadcast that every waiter of the space re-checks).

A waiting feed read registers a :class:`Waiter` under the keys its principal can see items by
(protocol.md §8.3): its actor's inbox, the space log, each collection it may read. A commit
names the :class:`Route` of each feed item it published; :meth:`FeedSignal.committed` looks up
the waiters of the keys those routes reach and wakes those whose filter the item passes. The
keys over-approximate visibility (a receipt about a revision wakes an inbox that may not see
the collection): a waiter woken for nothing reads once more and waits again. A route with
unknown recipients (``None``) reaches every inbox of the space.

The signal also counts what may have changed a reader's view: each commit that may publish
feed items *touches* the keys of its items (or its whole space where they are not known before
it commits), each control-plane write touches every principal's authority, all when the write
has ended in the database (:func:`waypost.reference.service.woken.publishing`). A read that
notes the count before it reads knows its page for that count; a later read of the same token
from the same position finds nothing new while nothing it listens on was touched since
(:meth:`FeedSignal.quiet`), and need not read at all (a cursor carries the claim, protocol.md
§8.4; the reference serves one database from one process).
"""

from __future__ import annotations

import asyncio
import secrets
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from waypost.reference.domain.principal import Principal

Key = tuple[str, ...]


@dataclass(frozen=True)
class Route:
    """Who a committed feed item may concern: its type, producer, thread, collection and
    recipients (``None``: not known here, so every inbox of the space)."""

    item_type: str
    producer_id: str
    thread_id: str | None = None
    collection_id: str | None = None
    recipients: tuple[str, ...] | None = ()


@dataclass(eq=False)
class Waiter:
    """One waiting feed read: the keys it listens on, its consumer's filter, whether it was woken."""

    space_id: str
    keys: tuple[Key, ...]
    filter: dict[str, tuple[str, ...]]
    #: whether a commit woke it since its last read (:meth:`FeedSignal.read` clears it)
    woken: bool = False
    #: the signal's count of touches at the waiter's last read (:meth:`FeedSignal.unchanged`)
    read_at: int = 0
    _parked: asyncio.Future[None] | None = field(default=None, repr=False)

    def wake(self) -> None:
        """Mark it woken and end its wait, if it waits."""
        self.woken = True
        if self._parked is not None and not self._parked.done():
            self._parked.set_result(None)

    async def park(self, seconds: float) -> None:
        """Until :meth:`wake` or ``seconds`` pass: one future and one timer, where
        ``asyncio.wait_for`` on an event would make a task per wait (a herd of thousands)."""
        loop = asyncio.get_running_loop()
        self._parked = parked = loop.create_future()
        timer = loop.call_later(seconds, _settle, parked)
        try:
            await parked
        finally:
            timer.cancel()
            self._parked = None

    def concerned(self, route: Route) -> bool:
        """Whether an item of ``route`` passes the consumer's filter (protocol.md §8.3:
        each non-empty dimension must hold the item's value; no value matches nothing)."""
        values = {"producer_ids": route.producer_id, "thread_ids": route.thread_id,
                  "item_types": route.item_type, "collection_ids": route.collection_id}
        return all(not allowed or values.get(dimension) in allowed
                   for dimension, allowed in self.filter.items())


def _settle(parked: asyncio.Future[None]) -> None:
    if not parked.done():
        parked.set_result(None)


def keys_of(principal: Principal) -> tuple[Key, ...]:
    """The keys a principal can see feed items by: its inbox or the space log (messages and
    receipts), and each collection it may read (revisions)."""
    space = principal.space_id
    keys: list[Key] = []
    if principal.has("message.read"):
        if principal.consumer.view == "inbox":
            keys.append(("inbox", space, principal.actor_id))
        elif principal.has("space.observe"):
            keys.append(("log", space))
    if principal.has("memory.read"):
        keys += [("collection", space, collection_id)
                 for collection_id, action in sorted(principal.grants.collections)
                 if action == "read"]
    return tuple(keys)


def listened(space_id: str, keys: Sequence[Key]) -> Iterator[Key]:
    """The keys a reader of ``keys`` hears commits on: those, and every inbox's key where it
    reads an inbox (a route of unknown recipients reaches every inbox)."""
    for key in keys:
        yield key
        if key[0] == "inbox":
            yield ("inboxes", space_id)


def route_keys(space_id: str, route: Route) -> tuple[Key, ...]:
    """The keys an item of ``route`` reaches (what its commit touches)."""
    return tuple(_reached(space_id, route))


def _reached(space_id: str, route: Route) -> Iterator[Key]:
    if route.item_type == "memory_revision":
        if route.collection_id is not None:
            yield ("collection", space_id, route.collection_id)
        return
    yield ("log", space_id)
    if route.recipients is None:
        yield ("inboxes", space_id)
    else:
        yield from (("inbox", space_id, actor_id) for actor_id in route.recipients)


class FeedSignal:
    """Waiters by key; a commit wakes the waiters its routes reach."""

    def __init__(self, touched_keys: int = 100_000) -> None:
        self._waiters: dict[Key, set[Waiter]] = {}
        self._spaces: Counter[str] = Counter()  # waiters per space
        #: names this signal in a cursor's claim: another process, or this one restarted,
        #: never trusts a claim it did not make
        self.origin = secrets.token_hex(8)
        self._touches = 0  # touches so far (:meth:`touched`, :meth:`authority_changed`)
        self._authority_at = 0  # the touch of the last control-plane write
        self._touched: dict[Key, int] = {}  # the last touch of each key (a space: ("space", id))
        self._floor = 0  # a key not in _touched was last touched at or before this
        self._touched_keys = touched_keys  # the most keys remembered (then all are forgotten)

    def listen(self, principal: Principal) -> Waiter:
        """Register a wait of ``principal`` (before its read: a commit after the read wakes
        it); :meth:`forget` it when the request ends."""
        waiter = Waiter(principal.space_id, keys_of(principal), dict(principal.consumer.filter))
        for key in self._index_keys(waiter):
            self._waiters.setdefault(key, set()).add(waiter)
        self._spaces[waiter.space_id] += 1
        return waiter

    def forget(self, waiter: Waiter) -> None:
        self._spaces[waiter.space_id] -= 1
        if not self._spaces[waiter.space_id]:
            del self._spaces[waiter.space_id]
        for key in self._index_keys(waiter):
            held = self._waiters.get(key)
            if held is not None:
                held.discard(waiter)
                if not held:
                    del self._waiters[key]

    @staticmethod
    def _index_keys(waiter: Waiter) -> Iterator[Key]:
        return listened(waiter.space_id, waiter.keys)

    @property
    def touches(self) -> int:
        """Touches so far: a read that notes this before it reads knows its page for it."""
        return self._touches

    def touched(self, space_id: str, keys: Sequence[Key] | None) -> None:
        """A write that may have published feed items under ``keys`` (None: under any key of
        ``space_id``) has ended in the database."""
        self._touches += 1
        for key in [("space", space_id)] if keys is None else keys:
            self._touched[key] = self._touches
        if len(self._touched) > self._touched_keys:  # bounded: forget all, as touched now
            self._touched.clear()
            self._floor = self._touches

    def authority_changed(self) -> None:
        """A control-plane write committed (a revoke, a disable, a view change …): a wait
        that ends unwoken must re-check its token's authority and view in the database."""
        self._touches += 1
        self._authority_at = self._touches

    def authority_since(self, since: int) -> bool:
        """Whether a control-plane write was touched after touch ``since``."""
        return self._authority_at > since

    def quiet(self, principal: Principal, since: int) -> bool:
        """Whether nothing that can change ``principal``'s view was touched after touch
        ``since``: no control-plane write, no commit in its space of unknown keys, none under
        a key it listens on."""
        if self.authority_since(since):
            return False
        touched, floor = self._touched, self._floor
        space = principal.space_id
        return touched.get(("space", space), floor) <= since and all(
            touched.get(key, floor) <= since for key in listened(space, keys_of(principal)))

    def read(self, waiter: Waiter) -> None:
        """The waiter reads now: clear its wake-up and note the count of touches. (A commit
        after this wakes it again, so none is lost between the read and the wait.)"""
        waiter.woken = False
        waiter.read_at = self._touches

    def unchanged(self, waiter: Waiter) -> bool:
        """Whether no control-plane write committed in this process since the waiter's last
        read: its principal's authority and view are as the read found them, but for time."""
        return self._authority_at <= waiter.read_at

    def waiting(self, space_id: str) -> bool:
        """Whether any read of ``space_id`` waits (else a commit need not say what it made)."""
        return space_id in self._spaces

    async def wait(self, waiter: Waiter, seconds: float) -> bool:
        """Until ``waiter`` is woken (True) or ``seconds`` pass (False)."""
        if not waiter.woken:
            await waiter.park(seconds)
        return waiter.woken

    def wake_all(self, space_id: str) -> None:
        """Wake every waiter of ``space_id`` (a commit whose routes could not be told)."""
        for waiters in self._waiters.values():
            for waiter in waiters:
                if waiter.space_id == space_id:
                    waiter.wake()

    def committed(self, space_id: str, routes: Sequence[Route]) -> None:
        """Wake the waiters of ``space_id`` that an item of ``routes`` may concern."""
        for route in routes:
            for key in _reached(space_id, route):
                for waiter in self._waiters.get(key, ()):
                    if not waiter.woken and waiter.concerned(route):
                        waiter.wake()
