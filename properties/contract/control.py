"""Contract checks of the control plane (protocol.md §13): replayed writes and their conflicts,
failures that stay retryable, and reads that move no consumer's progress."""

from __future__ import annotations

from typing import Any

from waypost.properties.contract.common import (
    admin,
    detail,
    entries,
    error,
    json_of,
    messages_of,
    obj,
    replayed,
    send,
    shown,
    text,
)
from waypost.properties.hostile.probes import ALL_SCOPES, Finding, HostileCheck, Probe


def _twice(probe: Probe, path: str, body: dict[str, Any], status: int,
           what: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """One control-plane write sent twice with one request_id: the same status, the second
    marked replayed and the first not (WP-CTRL-2, WP-IDEM-6, WP-IDEM-7)."""
    first = probe.request("POST", path, who="admin", body=body)
    again = probe.request("POST", path, who="admin", body=body)
    one, two = obj(first, what, status), obj(again, f"{what}, sent again", status)
    if replayed(first):
        raise Finding(f"{what}: a first answer carries Waypost-Replayed: true (WP-IDEM-7)")
    if not replayed(again):
        raise Finding(f"{what}, sent again with its request_id: no Waypost-Replayed: true "
                      "(WP-CTRL-2, WP-IDEM-6)")
    return one, two


def _same(one: dict[str, Any], two: dict[str, Any], what: str) -> None:
    if one != two:
        raise Finding(f"{what}: the replay answers {two!r:.200}, the first answer was "
                      f"{one!r:.200} (WP-CTRL-2)")


def _conflict(probe: Probe, path: str, body: dict[str, Any], what: str) -> None:
    answer = probe.request("POST", path, who="admin", body=body)
    error(answer, f"{what} (WP-CTRL-2, WP-IDEM-9)", {"IDEMPOTENCY_CONFLICT": "request_id"})


def _actor(probe: Probe, actor: str, space: str | None = None) -> dict[str, Any] | None:
    return entries(detail(probe, space), "actors", "actor_id", "the space's actors").get(actor)


def _tokens_of(probe: Probe, actor: str) -> int:
    tokens = entries(detail(probe), "tokens", "token_id", "the space's tokens")
    return sum(token.get("actor_id") == actor for token in tokens.values())


def _version(entry: dict[str, Any] | None, key: str, what: str) -> int:
    value = (entry or {}).get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise Finding(f"{what}: {key} is {value!r:.60}, not an integer")
    return value


def control_replay(probe: Probe) -> int:
    """Every control-plane write sent twice answers the same, marked replayed, with no second
    effect (WP-CTRL-2); a replayed token issue answers ``"token": null`` (WP-CTRL-12); the
    same request_id with another body or path is ``409 IDEMPOTENCY_CONFLICT``."""
    space, other = probe.space, f"{probe.space}-r"
    base = f"/admin/v1/spaces/{space}"
    created = {"request_id": probe.rid("sp"), "space_id": other,
               "display_name": f"waypost kit replayed {other}",
               "source_uri": f"waypost-kit://{other}",
               "default_actor": {"actor_id": "ann", "kind": "agent", "display_name": "ann"}}
    _same(*_twice(probe, "/admin/v1/spaces", created, 201, "creating a space"),
          "creating a space")
    actor = {"request_id": probe.rid("ac"), "actor_id": "carol", "kind": "human",
             "display_name": "carol"}
    _same(*_twice(probe, f"{base}/actors", actor, 201, "creating an actor"),
          "creating an actor")
    consumer = {"request_id": probe.rid("co"), "consumer_id": "carol-inbox",
                "actor_id": "carol", "view": "inbox"}
    _same(*_twice(probe, f"{base}/consumers", consumer, 201, "creating a consumer"),
          "creating a consumer")
    consumers = entries(detail(probe), "consumers", "consumer_id", "the space's consumers")
    before = _version(consumers.get("carol-inbox"), "view_revision", "carol-inbox")
    view = {"request_id": probe.rid("vw"), "view": "space_log"}
    _twice(probe, f"{base}/consumers/carol-inbox/view", view, 200, "changing a view")
    consumers = entries(detail(probe), "consumers", "consumer_id", "the space's consumers")
    after = _version(consumers.get("carol-inbox"), "view_revision", "carol-inbox")
    if after != before + 1:
        raise Finding(f"a view change sent twice moved view_revision from {before} to {after}, "
                      "not by one (WP-CTRL-2, WP-CTRL-9)")
    collection = {"request_id": probe.rid("cl"), "collection_id": "plans",
                  "source_actor_id": "carol", "scope": "replayed"}
    _same(*_twice(probe, f"{base}/collections", collection, 201, "creating a collection"),
          "creating a collection")
    token = {"request_id": probe.rid("tk"), "actor_id": "carol", "consumer_id": "carol-inbox",
             "scopes": ALL_SCOPES, "recipients": {"mode": "any"}, "collections": [],
             "blob_references": [], "expires_at": "2999-01-02T03:04:05.678Z"}
    first, again = _twice(probe, f"{base}/tokens", token, 201, "issuing a token")
    secret = text(first, "token", "a token's first answer")
    if again.get("token", "absent") is not None:
        raise Finding(f"a replayed token issue shows token = {again.get('token', 'absent')!r:.40}"
                      ": the secret belongs to the first answer only (WP-CTRL-12)")
    _same({**first, "token": None}, again, "issuing a token (token_id, grant_fingerprint, "
                                           "expires_at; WP-CTRL-12)")
    if _tokens_of(probe, "carol") != 1:
        raise Finding("a token issue sent twice left more than one token (WP-CTRL-2)")
    probe.tokens["carol"] = secret
    obj(probe.request("GET", "/v1/feed", who="carol"), "a feed read with the first answer's "
                                                      "secret", 200)
    thread = text(obj(send(probe, "alice"), "a send", 201), "thread_id", "a send")
    members = {"request_id": probe.rid("th"), "actor_ids": ["carol"]}
    _twice(probe, f"{base}/threads/{thread}/members", members, 200, "adding thread members")
    revoke = {"request_id": probe.rid("rv")}
    token_id = text(first, "token_id", "a token's first answer")
    _same(*_twice(probe, f"/admin/v1/tokens/{token_id}/revoke", revoke, 200,
                  "revoking a token"), "revoking a token")
    version = _version(_actor(probe, "carol"), "authority_version", "carol")
    disable = {"request_id": probe.rid("ds")}
    _same(*_twice(probe, f"{base}/actors/carol/disable", disable, 200, "disabling an actor"),
          "disabling an actor")
    now = _version(_actor(probe, "carol"), "authority_version", "carol")
    if now != version + 1:
        raise Finding(f"disabling an actor twice with one request_id moved authority_version "
                      f"from {version} to {now}, not by one (WP-CTRL-2, WP-CTRL-10)")
    _conflict(probe, "/admin/v1/spaces", {**created, "space_id": f"{space}-q",
                                          "source_uri": f"waypost-kit://{space}-q"},
              "a space's request_id again with another space_id")
    gone = probe.request("GET", f"/admin/v1/spaces/{space}-q", who="admin")
    error(gone, "the space of a conflicting request", {"NOT_FOUND": None})
    _conflict(probe, f"{base}/actors", {**actor, "actor_id": "dave"},
              "an actor's request_id again with another actor_id")
    _conflict(probe, f"/admin/v1/spaces/{other}/actors", actor,
              "an actor's request_id and body again under another space_id")
    _conflict(probe, f"{base}/tokens", {**token, "scopes": ["message.read"]},
              "a token's request_id again with other scopes")
    if _actor(probe, "dave") is not None or _actor(probe, "carol", other) is not None:
        raise Finding("a conflicting control-plane write created its actor (WP-IDEM-9)")
    if _tokens_of(probe, "carol") != 1:
        raise Finding("a conflicting token issue left a token (WP-IDEM-9)")
    return probe.requests


def control_failures(probe: Probe) -> int:
    """A control-plane write refused for a missing actor succeeds with the same request_id
    once the actor exists: the failure was not recorded (WP-CTRL-4)."""
    base = f"/admin/v1/spaces/{probe.space}"
    thread = text(obj(send(probe, "alice"), "a send", 201), "thread_id", "a send")
    writes = (
        ("a consumer of frank", f"{base}/consumers", 201,
         {"request_id": probe.rid("co"), "consumer_id": "frank-inbox", "actor_id": "frank",
          "view": "inbox"}),
        ("a token of frank", f"{base}/tokens", 201,
         {"request_id": probe.rid("tk"), "actor_id": "frank", "consumer_id": "frank-inbox",
          "scopes": ALL_SCOPES, "recipients": {"mode": "any"}, "collections": [],
          "blob_references": []}),
        ("a collection of frank", f"{base}/collections", 201,
         {"request_id": probe.rid("cl"), "collection_id": "franks", "source_actor_id": "frank",
          "scope": "retried"}),
        ("frank as a thread member", f"{base}/threads/{thread}/members", 200,
         {"request_id": probe.rid("th"), "actor_ids": ["frank"]}))
    for what, path, _, body in writes:
        answer = probe.request("POST", path, who="admin", body=body)
        found = error(answer, f"{what} before frank exists", {"NOT_FOUND": None,
                                                              "INVALID_REQUEST": None})
        field = found["details"].get("field")
        if path.endswith("/tokens") and field not in ("actor_id", "consumer_id"):
            raise Finding(f"{what} before frank exists: {found['code']} names details.field "
                          f"{field!r:.60}, not 'actor_id' or 'consumer_id' (WP-CTRL-11)")
    admin(probe, "POST", f"{base}/actors", {"request_id": probe.rid("ac"), "actor_id": "frank",
                                            "kind": "agent", "display_name": "frank"})
    for what, path, status, body in writes:
        answer = probe.request("POST", path, who="admin", body=body)
        if answer.status_code != status or replayed(answer):
            raise Finding(f"{what}, retried with its request_id once frank exists: "
                          f"{shown(answer)}{' (replayed)' if replayed(answer) else ''}; a "
                          f"control-plane failure must stay retryable (WP-CTRL-4)")
        if path.endswith("/tokens"):
            probe.tokens["frank"] = text(obj(answer, what, status), "token", what)
    obj(probe.request("GET", "/v1/feed", who="frank"), "frank's token", 200)
    return probe.requests


def control_reads(probe: Probe) -> int:
    """Reading the spaces and a space through the control plane moves no consumer's progress:
    the inbox from its checkpoint and the receipts stay as they were (WP-CTRL-5)."""
    for _ in range(2):
        obj(send(probe, "alice"), "a send", 201)

    def progress() -> tuple[list[Any], list[Any]]:
        bob = [item.get("item_id") for item in probe.inbox("bob") if isinstance(item, dict)]
        alice = [item.get("item_id") for item in probe.inbox("alice") if isinstance(item, dict)]
        return bob, alice
    before = progress()
    if len(before[0]) != 2 or len(messages_of(probe, "bob")) != 2:
        raise Finding(f"bob's inbox shows {before[0]} after two sends")
    for _ in range(2):
        listing = admin(probe, "GET", "/admin/v1/spaces", status=200)
        json_of(probe.request("GET", f"/admin/v1/spaces/{probe.space}", who="admin"),
                "a space read")
        if not isinstance(listing.get("spaces"), list):
            raise Finding(f"GET /admin/v1/spaces: no list spaces: {listing!r:.200}")
    after = progress()
    if after != before:
        raise Finding(f"control-plane reads moved progress: bob's inbox from its checkpoint "
                      f"was {before[0]}, now {after[0]}; alice's was {before[1]}, now "
                      f"{after[1]} (WP-CTRL-5)")
    return probe.requests


CHECKS = (
    HostileCheck("control_replay", "every control-plane write sent twice with one request_id: "
                 "the same answer marked replayed and no second effect; a replayed token "
                 "issue has token null; the request_id with another body or path is 409",
                 ("WP-CTRL-2", "WP-CTRL-12", "WP-CTRL-9", "WP-CTRL-10", "WP-IDEM-6",
                  "WP-IDEM-7", "WP-IDEM-9", "WP-ERR-1"), control_replay),
    HostileCheck("control_failures", "consumer, token, collection and thread members for an "
                 "actor that does not exist yet, then the same requests once it does: the "
                 "failures were not recorded", ("WP-CTRL-4", "WP-CTRL-11", "WP-ERR-1"),
                 control_failures),
    HostileCheck("control_reads", "reads of the spaces and of a space through the control "
                 "plane leave every inbox's checkpoint and the receipts as they were",
                 ("WP-CTRL-5",), control_reads),
)
