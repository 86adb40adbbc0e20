"""P17's side of the server: a fresh space for one cell of the consumer matrix, and what the
server shows of it through a space-log reader, read as untrusted input: within the kit's bounds
(``properties/wire/bounds.py``), every page moving on, every id checked before it enters a path. A
server answer a cell cannot go on from is :class:`Untrusted`, with the requirement ids it
breaks (``conformance/consumer_matrix.py`` fails them in the run's ledger)."""

from __future__ import annotations

import secrets
from typing import Any

from waypost.properties.contract.consumer import LocalView, ServerView
from waypost.properties.wire.bounds import Bounds, OutOfBounds, bounded_client
from waypost.properties.wire.http import WALKS, route_ids
from waypost.properties.wire.untrusted import BadId, bad_segment, path_id, visible

SCOPES = ["message.send", "message.read", "receipt.write", "event.subscribe"]
#: Pages of the space log one observation reads at most: a cell's space holds a few dozen
#: items, so more means the feed does not end (docs/spec.md, "The kit's own limits").
OBSERVE_PAGES = 100
PAGE_IDS = ("WP-HTTP-13", "WP-FEED-4")  # a feed page's shape
ITEM_IDS = ("WP-HTTP-12", "WP-VAL-4")  # a feed item's shape and its ids


class Untrusted(RuntimeError):
    """An answer of the server the cell cannot go on from: the requirement ids it breaks."""

    def __init__(self, ids: tuple[str, ...], message: str) -> None:
        super().__init__(message)
        self.ids = ids


class Space:
    """A fresh space on the target: alice (default actor) and bob with inbox consumers, and
    ``watch`` reading the space log from position 0 (it never acknowledges). Its one client
    reads every answer within ``bounds``; :meth:`close` it when done."""

    def __init__(self, url: str, admin_token: str, bounds: Bounds | None = None) -> None:
        self.url, self.id = url, f"p17-{secrets.token_hex(5)}"
        self.tokens: dict[str, str] = {"admin": admin_token}
        self.client = bounded_client(url, bounds)
        base = f"/admin/v1/spaces/{self.id}"
        try:
            self._admin("/admin/v1/spaces", {
                "space_id": self.id, "display_name": self.id,
                "source_uri": f"waypost://kit/{self.id}",
                "default_actor": {"actor_id": "alice", "kind": "agent", "display_name": "a"}})
            for actor, view, scopes in (("alice", "inbox", SCOPES), ("bob", "inbox", SCOPES),
                                        ("watch", "space_log", ["message.read", "space.observe"])):
                if actor != "alice":
                    self._admin(f"{base}/actors", {"actor_id": actor, "kind": "service",
                                                   "display_name": actor})
                self._admin(f"{base}/consumers", {"consumer_id": f"{actor}-c",
                                                  "actor_id": actor, "view": view})
                token = self._admin(f"{base}/tokens", {
                    "actor_id": actor, "consumer_id": f"{actor}-c", "scopes": scopes,
                    "recipients": {"mode": "any"}, "collections": [],
                    "blob_references": []}).get("token")
                if not isinstance(token, str):
                    raise RuntimeError(f"provisioning: the token of {actor} is no string")
                self.tokens[actor] = token
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        self.client.close()

    def _admin(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return self.call("admin", "POST", path, json={"request_id": secrets.token_hex(8), **body})

    def call(self, actor: str, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        """One request as ``actor`` (or ``admin``): its JSON object. A refusal is a
        RuntimeError; an answer past the kit's bounds is :class:`Untrusted` where a property
        holds the route."""
        try:
            answer = self.client.request(method, path, **kwargs,
                                         headers={"Authorization": f"Bearer {self.tokens[actor]}"})
        except OutOfBounds as breach:
            ids = route_ids(method, path, breach.bound)
            raise (Untrusted(ids, str(breach)) if ids else RuntimeError(str(breach))) from None
        if answer.status_code >= 300:
            raise RuntimeError(f"{method} {path} answered {answer.status_code}: "
                               f"{visible(answer.text[:300])}")
        try:
            data = answer.json()
        except (ValueError, RecursionError):
            data = None
        if not isinstance(data, dict):
            raise RuntimeError(f"{method} {path} answered no JSON object")
        return data

    def send(self, sender: str, to: str, subject: str) -> None:
        self.call(sender, "POST", "/v1/messages", json={
            "request_id": secrets.token_hex(8), "recipient_ids": [to], "thread": {"new": True},
            "kind": "info", "subject": subject, "body": {"text": f"body of {subject}"}})

    def observe(self) -> ServerView:
        """Every message (with its body) and receipt advance, through ``watch``: at most
        :data:`OBSERVE_PAGES` pages, each moving on, no item twice."""
        view, cursor = ServerView(), None
        cursors: set[str] = set()
        seen: set[str] = set()
        for _ in range(OBSERVE_PAGES):
            page = _page(self.call("watch", "GET", "/v1/feed",
                                   params={"limit": 100, **({"cursor": cursor} if cursor else {})}))
            for item in page["items"]:
                if item["item_id"] in seen:
                    raise Untrusted(WALKS["/v1/feed"], "the space log showed an item twice")
                seen.add(item["item_id"])
                self._observed(view, item)
            if not page["has_more"]:
                return view
            cursor = page["next_cursor"]
            if cursor in cursors:
                raise Untrusted(WALKS["/v1/feed"], "the space log's next_cursor did not move on")
            cursors.add(cursor)
        raise Untrusted(WALKS["/v1/feed"], f"the space log did not end within {OBSERVE_PAGES} "
                                           "pages (the kit's cap)")

    def _observed(self, view: ServerView, item: dict[str, Any]) -> None:
        """One item of the space log into ``view`` (a message is read in full)."""
        if item.get("type") == "message":
            message = item.get("message")
            try:
                message_id = path_id(message.get("message_id")
                                     if isinstance(message, dict) else None)
            except BadId as bad:
                raise Untrusted(ITEM_IDS, f"a message item's message_id: {bad}") from None
            view.messages.append({**item, **self.call("watch", "GET",
                                                      f"/v1/messages/{message_id}")})
        elif item.get("type") == "receipt" and isinstance(item.get("receipt"), dict):
            view.receipts.append(item["receipt"])

    def lookups(self, actor: str, local: LocalView) -> dict[str, dict[str, Any]]:
        found = {}
        for row in local.outbound:
            path = f"/v1/submissions/{row['operation']}/{row['request_id']}"
            if bad_segment(path) is not None:  # the consumer's own file: not sent either
                raise RuntimeError(f"the consumer's outbox holds a key that is no key: "
                                   f"{visible(path)[:200]}")
            try:
                found[row["request_id"]] = self.call(actor, "GET", path)
            except Untrusted:
                raise
            except RuntimeError:  # a refusal: the key is unknown to the server
                found[row["request_id"]] = {}
        return found


def _page(answer: dict[str, Any]) -> dict[str, Any]:
    """``answer`` if it is a feed page whose items are objects with a string ``item_id``."""
    items = answer.get("items")
    if not (isinstance(items, list) and isinstance(answer.get("next_cursor"), str)
            and isinstance(answer.get("has_more"), bool)):
        raise Untrusted(PAGE_IDS, "the space log answered no feed page")
    if not all(isinstance(item, dict) and isinstance(item.get("item_id"), str)
               for item in items):
        raise Untrusted(ITEM_IDS, "the space log's items are not objects with an item_id")
    return answer
