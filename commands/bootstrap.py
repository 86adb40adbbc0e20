"""``waypost admin bootstrap``: a demo space a newcomer can send to with curl right away."""

from __future__ import annotations

from typing import Any, TextIO

import httpx

SCOPES = ["message.send", "message.read", "receipt.write", "event.subscribe"]
#: Alice keeps the memory collection ``notes``; bob may read it.
MEMORY = {"alice": (["memory.write", "memory.read", "blob.write"], ["read", "write"]),
          "bob": (["memory.read", "blob.write"], ["read"])}


class BootstrapError(Exception):
    """The server refused a control-plane call; the message says which and why."""


def _post(client: httpx.Client, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = client.post(path, json=body)
    if response.status_code not in (200, 201):
        raise BootstrapError(f"POST {path} answered {response.status_code}: {response.text}")
    data: dict[str, Any] = response.json()
    return data


def provision(client: httpx.Client, space_id: str) -> dict[str, str | None]:
    """Create (or find again) the demo space: alice (default actor) and bob, an inbox consumer
    and a token each, and alice's memory collection ``notes`` (bob may read it). Request ids
    are fixed, so a second run replays instead of duplicating; replayed tokens come back as
    None because secrets are shown only once."""
    key = f"bootstrap.{space_id}"
    _post(client, "/admin/v1/spaces", {
        "request_id": f"{key}.space", "space_id": space_id, "display_name": "Demo space",
        "source_uri": f"waypost://demo/{space_id}",
        "default_actor": {"actor_id": "alice", "kind": "agent", "display_name": "Alice"}})
    _post(client, f"/admin/v1/spaces/{space_id}/actors", {
        "request_id": f"{key}.bob", "actor_id": "bob", "kind": "agent", "display_name": "Bob"})
    _post(client, f"/admin/v1/spaces/{space_id}/collections", {
        "request_id": f"{key}.notes", "collection_id": "notes", "source_actor_id": "alice",
        "scope": "alice's notes"})
    tokens: dict[str, str | None] = {}
    for actor in ("alice", "bob"):
        scopes, actions = MEMORY[actor]
        _post(client, f"/admin/v1/spaces/{space_id}/consumers", {
            "request_id": f"{key}.{actor}.inbox", "consumer_id": f"{actor}-inbox",
            "actor_id": actor, "view": "inbox"})
        issued = _post(client, f"/admin/v1/spaces/{space_id}/tokens", {
            "request_id": f"{key}.{actor}.token", "actor_id": actor,
            "consumer_id": f"{actor}-inbox", "scopes": SCOPES + scopes,
            "recipients": {"mode": "any"},
            "collections": [{"collection_id": "notes", "actions": actions}],
            "blob_references": []})
        tokens[actor] = issued.get("token")
    return tokens


def bootstrap(url: str, admin_token: str, space_id: str, out: TextIO, err: TextIO) -> int:
    """Provision the demo space and print the tokens and a first curl command on ``out``;
    problems go to ``err`` too, so ``eval "$(waypost admin bootstrap)"`` does not hide them."""
    headers = {"Authorization": f"Bearer {admin_token}"}
    try:
        with httpx.Client(base_url=url, headers=headers, timeout=10) as client:
            tokens = provision(client, space_id)
    except httpx.TransportError as exc:
        print(f"waypost admin bootstrap: cannot reach {url} ({exc}); is `waypost serve` "
              "running there?", file=err)
        return 1
    except (httpx.HTTPError, BootstrapError) as exc:
        print(f"waypost admin bootstrap: {exc}", file=err)
        return 1
    # Everything but the exports is a shell comment, so `eval "$(waypost admin bootstrap)"` works.
    print(f"# space {space_id}: actors alice (default recipient) and bob; alice's memory "
          "collection notes, readable by bob", file=out)
    if tokens["alice"] is None:
        print("waypost admin bootstrap: already bootstrapped: the tokens were printed the first "
              "time only; use --space-id with a new id for fresh ones", file=err)
        return 0
    print(f"export ALICE_TOKEN={tokens['alice']}", file=out)
    print(f"export BOB_TOKEN={tokens['bob']}", file=out)
    print("# send bob a message:", file=out)
    print(f"#   curl -s -X POST {url}/v1/messages -H \"Authorization: Bearer $ALICE_TOKEN\" "
          "-H 'Content-Type: application/json' -d '{\"request_id\": \"hello-1\", "
          "\"recipient_ids\": [\"bob\"], \"thread\": {\"new\": true}, \"kind\": \"info\", "
          "\"subject\": \"Hello\", \"body\": {\"text\": \"First message\"}}'", file=out)
    return 0
