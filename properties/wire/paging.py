"""Walks: a client paging through the feed or a revision's item pages, followed across its
requests so that no walk of the kit can loop (docs/spec.md, "The kit's own limits").

A request continues a walk when it sends, with the same credential, path and filters, the
``next_cursor`` of that walk's last page; any other request starts a new walk. A page with
``has_more`` must move the walk on: a page holding an item the walk already showed, a
``next_cursor`` the walk already handed out on a page with items (or on more than
:data:`STALLS` empty pages in a row), or more than the cap of pages in one walk, ends it as a
loop. Whatever page a walk ends on, what it says is untrusted text: only the kit's own words
and bounded, visible excerpts go into the reason."""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any

import httpx

from waypost.properties.wire.untrusted import visible

FEED = "/v1/feed"
ITEMS = re.compile(r"/v1/collections/[^/]+/revisions/[^/]+/items")
#: Empty pages in a row, with ``has_more`` and the cursor where it was, that a walk allows (a
#: server may cut a page short, to a correct empty prefix, now and then).
STALLS = 3
#: Pages of one walk: a revision of 10,000 entries read at page size 1 is the longest walk a
#: conforming server can make the kit take.
WALK_PAGES = 10_000
#: Walks followed at once; the oldest is forgotten first (a walk the kit left with a page of
#: ``has_more`` stays until then). A forgotten walk that goes on is followed as a new one.
WALKS = 1000

Key = tuple[str, str, tuple[tuple[str, str], ...]]


def paged(method: str, path: str) -> bool:
    """Whether ``method path`` reads one page of a walk."""
    return method == "GET" and (path == FEED or ITEMS.fullmatch(path) is not None)


@dataclass
class Walk:
    """The cursors and items one walk has shown so far."""

    cursors: set[str] = field(default_factory=set)
    items: set[str] = field(default_factory=set)
    pages: int = 0
    stalls: int = 0
    last: str | None = None  # the next_cursor of its last page

    def step(self, items: list[str], cursor: str, cap: int) -> str | None:
        """Take one page with ``has_more`` (its item ids, its ``next_cursor``): None, or why
        the walk loops."""
        self.pages += 1
        if self.pages > cap:
            return f"more than {cap} pages in one walk (the kit's cap)"
        again = [item for item in items if item in self.items]
        if again:
            return (f"the page holds {len(again)} items this walk already showed "
                    f"(e.g. {visible(again[0])[:100]!r})")
        if cursor in self.cursors:
            if items:
                return "next_cursor is one this walk already handed out, on a page with items"
            self.stalls += 1
            if self.stalls > STALLS:
                return f"{self.stalls} empty pages in a row with has_more and the same cursor"
        else:
            self.stalls = 0
        self.cursors.add(cursor)
        self.items.update(items)
        self.last = cursor
        return None


def _page(body: bytes) -> tuple[list[str], str, bool] | None:
    """A page's item ids, ``next_cursor`` and ``has_more``; None if it is no page (the kit's
    checks of the answer say what is wrong with it)."""
    try:
        page: Any = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(page, dict) or not isinstance(page.get("items"), list) \
            or not isinstance(page.get("next_cursor"), str) \
            or not isinstance(page.get("has_more"), bool):
        return None
    ids = [str(item.get("item_id")) for item in page["items"] if isinstance(item, dict)]
    return ids, page["next_cursor"], page["has_more"]


class Walks:
    """Every walk in progress, by credential, path and filters (thread-safe)."""

    def __init__(self, cap: int = WALK_PAGES) -> None:
        self.cap = cap
        self.walks: dict[Key, Walk] = {}
        self.lock = threading.Lock()

    def follow(self, request: httpx.Request, status: int, body: bytes) -> str | None:
        """Take the answer to ``request``: None, or why the walk it belongs to loops."""
        if status != 200 or not paged(request.method, request.url.path):
            return None
        page = _page(body)
        if page is None:
            return None
        params = request.url.params
        cursor = params.get("cursor")
        key = (request.headers.get("authorization", ""), request.url.path,
               tuple(sorted((k, v) for k, v in params.multi_items()
                            if k not in ("cursor", "limit", "wait"))))
        items, following, more = page
        with self.lock:
            walk = self.walks.get(key)
            if walk is None or cursor is None or cursor != walk.last:
                walk = self.walks[key] = Walk(cursors=set() if cursor is None else {cursor})
                while len(self.walks) > WALKS:
                    del self.walks[next(iter(self.walks))]
            if not more:
                del self.walks[key]
                return None
            return walk.step(items, following, self.cap)
