"""Contract check of how ``details.field`` names a place (protocol.md WP-ERR-8): a value by its
path from the body's top down to the array element, an array's number of elements by the
array, colliding elements by the array or an element, each where the protocol leaves that
choice and nowhere else."""

from __future__ import annotations

import json
import secrets
from typing import Any

import httpx

from waypost.properties.contract.common import error, obj, send, text
from waypost.properties.hostile.probes import Finding, HostileCheck, Probe

#: A request, and the fields each code it may answer may name.
Case = tuple[str, httpx.Response, dict[str, tuple[str, ...]]]


def _named(what: str, answer: httpx.Response, codes: dict[str, tuple[str, ...]]) -> None:
    found = error(answer, what, dict.fromkeys(codes))
    field = found["details"].get("field")
    if field not in codes[found["code"]]:
        raise Finding(f"{what}: {found['code']} names details.field {field!r:.80}, not "
                      f"{' or '.join(map(repr, codes[found['code']]))} (WP-ERR-8)")


def _publish(probe: Probe, head: int, items: list[dict[str, Any]],
             **extra: Any) -> httpx.Response:
    return probe.request("POST", "/v1/collections/notes/revisions", who="alice", body={
        "request_id": probe.rid("fn"), "expected_revision": head, "mode": "delta",
        "items": items, **extra})


def _sends(probe: Probe, blob: str) -> list[Case]:
    invalid = "INVALID_REQUEST"
    return [
        ("a send with recipient_ids []", send(probe, "alice", recipient_ids=[]),
         {invalid: ("recipient_ids",)}),
        ("a send whose second option is empty",
         send(probe, "alice", body={"text": "t", "options": ["a", ""]}),
         {invalid: ("body.options[1]",)}),
        ("a send to a thread id that is no id", send(probe, "alice", thread={"thread_id": "a b"}),
         {invalid: ("thread.thread_id",)}),
        ("a send attaching one blob twice", send(probe, "alice", attachment_ids=[blob, blob]),
         {invalid: ("attachment_ids", "attachment_ids[0]", "attachment_ids[1]")})]


def _publishes(probe: Probe, blob: str) -> list[Case]:
    head, invalid = probe.head(), "INVALID_REQUEST"
    good = {"item_id": "g", "path": "g.md", "blob_id": blob}
    twice = ("items", "items[0]", "items[1]")
    cases: list[Case] = [
        ("a publish whose item has a member it does not define",
         _publish(probe, head, [{**good, "extra": 1}]), {invalid: ("items[0].extra",)}),
        ("a publish whose second item's path has an empty segment",
         _publish(probe, head, [good, {"item_id": "h", "path": "a//b", "blob_id": blob}]),
         {invalid: ("items[1].path",)}),
        ("a publish naming one item_id twice",
         _publish(probe, head, [good, {**good, "path": "h.md"}]),
         {invalid: (*twice, "items[0].item_id", "items[1].item_id")}),
        ("a publish whose second delete id is no id",
         _publish(probe, head, [], delete_ids=["g", "a b"]), {invalid: ("delete_ids[1]",)})]
    cap = probe.limits.get("inline_items_per_publish", 0)
    many = [{"item_id": f"i{n}", "path": f"i{n}", "blob_id": blob}
            for n in range(cap + 1 if 0 < cap <= 5000 else 0)]
    if many and len(json.dumps(many)) + 200 < probe.limits.get("request_bytes", 1 << 20):
        cases.append((f"a publish of {cap + 1} inline items (inline_items_per_publish {cap})",
                      _publish(probe, head, many), {"RESOURCE_LIMIT": ("items",)}))
    return cases


def _others(probe: Probe) -> list[Case]:
    item = next((entry.get("item_id") for entry in probe.inbox("bob")
                 if entry.get("type") == "message"), None)
    if not isinstance(item, str):
        raise Finding("bob's inbox shows no message after a send to him (WP-VIS-1)")
    base = f"/admin/v1/spaces/{probe.space}"
    return [
        ("an ACK whose second item does not exist", probe.request("POST", "/v1/acks", who="bob",
         body={"request_id": probe.rid("fn"), "items": [
             {"item_id": item, "stage": "received"},
             {"item_id": f"fi_{secrets.token_hex(13)}", "stage": "received"}]}),
         {"NOT_FOUND": ("items[1].item_id",)}),
        ("a consumer filter whose second producer id is no id",
         probe.request("POST", f"{base}/consumers", who="admin", body={
             "request_id": probe.rid("fn"), "consumer_id": "bob-fields", "actor_id": "bob",
             "view": "inbox", "filter": {"producer_ids": ["alice", "a b"]}}),
         {"INVALID_REQUEST": ("filter.producer_ids[1]",)}),
        ("a token granting an action that does not exist",
         probe.request("POST", f"{base}/tokens", who="admin", body={
             "request_id": probe.rid("fn"), "actor_id": "bob", "consumer_id": "bob-inbox",
             "scopes": [], "recipients": {"mode": "any"}, "blob_references": [],
             "collections": [{"collection_id": "notes", "actions": ["fly"]}]}),
         {"INVALID_REQUEST": ("collections[0].actions[0]",)})]


def field_names(probe: Probe) -> int:
    """``details.field`` in the notation of WP-ERR-8, in sends, publishes, an ACK and the
    control plane; where elements collide, the array or an element; nothing published."""
    blob = probe.sealed_blob("alice", b"fields")
    head = probe.head()
    text(obj(send(probe, "alice"), "a send to bob", 201), "message_id", "a send")
    for what, answer, codes in (*_sends(probe, blob), *_publishes(probe, blob), *_others(probe)):
        _named(what, answer, codes)
    if probe.head() != head:
        raise Finding("a refused publish moved the head (WP-MEM-8)")
    return probe.requests


CHECKS = (
    HostileCheck("field_names", "details.field of values in arrays and objects (items[1].path, "
                 "body.options[1], filter.producer_ids[1], collections[0].actions[0]), of an "
                 "array's count (recipient_ids, items), of colliding elements (the array or an "
                 "element) and of an ACK item (items[1].item_id)",
                 ("WP-ERR-8", "WP-VAL-1", "WP-VAL-2", "WP-RCPT-3", "WP-LIM-3", "WP-ERR-1"),
                 field_names),
)
