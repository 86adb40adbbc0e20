"""Bodies over 32 KiB are parsed in bounded steps (docs/spec.md "Serving under load"): each is
read as a body of any size is, the same value and the same refusals."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from tests.support.api import Api, must_fail, rid
from waypost.reference.http import endpoints


def _post(api: Api, who: str, body: bytes) -> Any:
    return api.client.post("/v1/messages", content=body, headers={
        "Authorization": f"Bearer {api.tokens[who]}", "Content-Type": "application/json"})


def _send(**fields: Any) -> dict[str, Any]:
    return {"request_id": rid("send"), "thread": {"new": True}, "kind": "info",
            "subject": "large", "body": {"text": "hi"}, "recipient_ids": ["bob"], **fields}


def test_a_large_send_reads_back_as_it_was_sent(api: Api) -> None:
    text = ("line, with [brackets] and {braces} and \"quotes\" é \u2028 \\ \n" * 1000)[:60_000]
    sent = api.must_send("s1/alice", recipient_ids=["bob"], body={"text": text},
                         metadata={"list": [1, 2.5, None, True, "x,y"], "nested": {"a": [{}]}})
    message = api.as_("s1/bob", "GET", f"/v1/messages/{sent['message_id']}").json()
    assert message["body"]["text"] == text
    assert message["metadata"] == {"list": [1, 2.5, None, True, "x,y"], "nested": {"a": [{}]}}


def test_large_bodies_are_refused_as_small_ones_are(api: Api) -> None:
    padding = " " * 40_000
    body = json.dumps(_send())
    must_fail(_post(api, "s1/alice", (b"[" + b",".join([b"{}"] * 20_000) + b"]")), 400,
              "INVALID_REQUEST", "body")
    floats = ",".join(["0.6180339887498949"] * 5000)
    must_fail(_post(api, "s1/alice", json.dumps(_send(metadata={"f": []})).replace(
        '"f": []', f'"f": [{floats}]').encode()), 413, "RESOURCE_LIMIT")
    for broken in (body[:-1] + ', "kind": "info"}', body[:-1] + ', "x": NaN}',
                   body[:-1] + ', "x": "\\ud800"}', body + " x", body[:-1], body + padding + "]"):
        must_fail(_post(api, "s1/alice", (padding + broken).encode()), 400, "INVALID_REQUEST",
                  "body")
    assert len(api.all_items("s1/bob")) == 0


def test_a_released_body_leaves_what_something_else_holds_whole() -> None:
    """After its answer, a large body's value is taken apart, but never a part of it that
    something else (an operation's result, a cache) still holds."""
    kept = {"x": [1, 2, {"y": [3]}]}
    taken: list[Any] = [{} for _ in range(10_000)]
    scope: dict[str, Any] = {endpoints._JSON: {"a": taken, "b": kept, "c": [kept["x"]]}}
    del taken
    asyncio.run(endpoints._released(scope))
    assert kept == {"x": [1, 2, {"y": [3]}]}
    assert endpoints._JSON not in scope
