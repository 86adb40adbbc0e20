"""Contract checks of the ids and grants the control plane is given (protocol.md §13): an id
already taken is refused naming it (WP-CTRL-3), and a token issue checks what it names
(WP-CTRL-11)."""

from __future__ import annotations

from typing import Any

from waypost.properties.contract.common import admin, detail, error, listed, obj, text
from waypost.properties.hostile.probes import ALL_SCOPES, Finding, HostileCheck, Probe


def _taken(probe: Probe, path: str, body: dict[str, Any], field: str, what: str) -> None:
    """``body`` again under a new request_id: ``400 INVALID_REQUEST`` naming ``field`` with
    ``details.reason = "already_exists"``."""
    answer = probe.request("POST", path, who="admin", body={**body, "request_id": probe.rid()})
    found = error(answer, f"{what} again under a new request_id (WP-CTRL-3)",
                  {"INVALID_REQUEST": field})
    reason = found["details"].get("reason")
    if reason != "already_exists":
        raise Finding(f"{what} again: details.reason is {reason!r:.60}, not 'already_exists' "
                      "(WP-CTRL-3)")


def taken_ids(probe: Probe) -> int:
    """A space, an actor, a consumer and a collection created again under their ids, and a
    space with another's source_uri: each is refused naming the field (WP-CTRL-3)."""
    other = f"{probe.space}-i"
    space = {"request_id": probe.rid(), "space_id": other, "display_name": f"waypost kit ids {other}",
             "source_uri": f"waypost-kit://{other}",
             "default_actor": {"actor_id": "ann", "kind": "agent", "display_name": "ann"}}
    admin(probe, "POST", "/admin/v1/spaces", space, 201)
    _taken(probe, "/admin/v1/spaces", space, "space_id", "a space")
    _taken(probe, "/admin/v1/spaces", {**space, "space_id": f"{other}x"}, "source_uri",
           "another space with the same source_uri")
    base = f"/admin/v1/spaces/{other}"
    writes = (
        ("an actor", f"{base}/actors", "actor_id",
         {"actor_id": "dora", "kind": "human", "display_name": "dora"}),
        ("a consumer", f"{base}/consumers", "consumer_id",
         {"consumer_id": "dora-inbox", "actor_id": "dora", "view": "inbox"}),
        ("a collection", f"{base}/collections", "collection_id",
         {"collection_id": "doras", "source_actor_id": "dora", "scope": "ids"}))
    for what, path, field, body in writes:
        admin(probe, "POST", path, {**body, "request_id": probe.rid()}, 201, what)
        _taken(probe, path, body, field, what)
    return probe.requests


#: What a token issue names, nothing to issue, and the fields that may name it (WP-CTRL-11,
#: WP-ERR-8): a missing actor or consumer is 400 or 404; a missing recipient or collection
#: 404, naming its list or the element at fault.
MISSING: tuple[tuple[str, dict[str, Any], tuple[str, ...], tuple[str, ...]], ...] = (
    ("an actor the space lacks", {"actor_id": "nobody"}, ("INVALID_REQUEST", "NOT_FOUND"),
     ("actor_id", "consumer_id")),
    ("a consumer the space lacks", {"consumer_id": "nobody-inbox"},
     ("INVALID_REQUEST", "NOT_FOUND"), ("consumer_id",)),
    ("a recipient the space lacks", {"recipients": {"mode": "listed", "actor_ids": ["nobody"]}},
     ("NOT_FOUND",), ("recipients.actor_ids", "recipients.actor_ids[0]")),
    ("a collection the space lacks",
     {"collections": [{"collection_id": "nothing", "actions": ["read"]}]}, ("NOT_FOUND",),
     ("collections", "collections[0].collection_id")))


def token_issue(probe: Probe) -> int:
    """A token issue for a consumer of another actor is ``400`` naming ``consumer_id``; for an
    actor or a consumer the space lacks ``400`` or ``404`` naming it; one listing a recipient
    or granting a collection the space lacks is ``404`` naming the field; nothing is issued
    then; a good one carries the secret and the grant fingerprint (WP-CTRL-11)."""
    path = f"/admin/v1/spaces/{probe.space}/tokens"

    def issue(**changes: Any) -> Any:
        body = {"request_id": probe.rid(), "actor_id": "alice", "consumer_id": "alice-inbox",
                "scopes": ALL_SCOPES, "recipients": {"mode": "any"}, "collections": [],
                "blob_references": [], **changes}
        return probe.request("POST", path, who="admin", body=body)

    before = len(listed(detail(probe), "tokens", "the space's tokens"))
    error(issue(consumer_id="bob-inbox"), "a token of alice for bob's consumer (WP-CTRL-11)",
          {"INVALID_REQUEST": "consumer_id"})
    for what, changes, codes, fields in MISSING:
        found = error(issue(**changes), f"a token naming {what} (WP-CTRL-11)",
                      dict.fromkeys(codes))
        if found["details"].get("field") not in fields:
            raise Finding(f"a token naming {what}: {found['code']} names details.field "
                          f"{found['details'].get('field')!r:.60}, not "
                          f"{' or '.join(map(repr, fields))} (WP-CTRL-11, WP-ERR-8)")
    if len(listed(detail(probe), "tokens", "the space's tokens")) != before:
        raise Finding("a refused token issue left a token in the space (WP-CTRL-11)")
    issued = obj(issue(), "a token issue", 201)
    text(issued, "token", "a token issue (WP-CTRL-11)")
    fingerprint = text(issued, "grant_fingerprint", "a token issue (WP-CTRL-11)")
    if len(fingerprint) != 64 or fingerprint.strip("0123456789abcdef"):
        raise Finding(f"a token issue: grant_fingerprint {fingerprint!r:.80} is not 64 "
                      "lowercase hex characters (WP-CTRL-11, WP-VAL-12)")
    return probe.requests


CHECKS = (
    HostileCheck("taken_ids", "a space, actor, consumer and collection created again under "
                 "their ids, and a space with another's source_uri: 400 naming the field, "
                 "reason already_exists", ("WP-CTRL-3", "WP-ERR-3"), taken_ids),
    HostileCheck("token_issue", "a token for another actor's consumer (400), for an actor or "
                 "a consumer the space lacks (400 or 404 naming it), for a recipient or a "
                 "collection the space lacks (404 naming the field); a good one carries its "
                 "secret and grant fingerprint", ("WP-CTRL-11", "WP-VAL-12", "WP-ERR-8"),
                 token_issue),
)
