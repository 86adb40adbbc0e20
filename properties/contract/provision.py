"""Contract checks of provisioning through the control plane (protocol.md §13): the values of
names, source URIs, scopes, kinds and views (WP-CTRL-7), and thread members (WP-CTRL-14)."""

from __future__ import annotations

from typing import Any

from waypost.properties.contract.common import (
    add_actor,
    admin,
    detail,
    entries,
    error,
    listed,
    obj,
    send,
    text,
)
from waypost.properties.hostile.probes import Finding, HostileCheck, Probe

NAME, URI = "é" * 129, "é" * 1025  # 258 and 2050 bytes in fewer than 256 / 2048 characters
#: Names, URIs, scopes, kinds and views a server must refuse (WP-CTRL-7), with the field.
BAD_SPACES: tuple[tuple[str, Any], ...] = (
    ("display_name", ""), ("display_name", NAME), ("display_name", 7), ("display_name", None),
    ("source_uri", ""), ("source_uri", "u" * 2049), ("source_uri", URI),
    ("default_actor.display_name", ""), ("default_actor.display_name", NAME),
    ("default_actor.kind", "robot"), ("default_actor.kind", "Agent"))
BAD_ACTORS: tuple[tuple[str, Any], ...] = (
    ("display_name", ""), ("display_name", NAME), ("display_name", 0), ("kind", "robot"),
    ("kind", ""), ("kind", "AGENT"), ("kind", None))
BAD_SCOPES: tuple[Any, ...] = ("", "s" * 2049, URI, 5)
BAD_VIEWS: tuple[Any, ...] = ("log", "INBOX", "", "space-log", None)


def _space(probe: Probe, space_id: str, field: str = "", value: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "request_id": probe.rid("sp"), "space_id": space_id, "display_name": "é" * 128,
        "source_uri": f"waypost-kit://{space_id}/".ljust(2048, "u"),
        "default_actor": {"actor_id": "ann", "kind": "service", "display_name": "é" * 128}}
    if field.startswith("default_actor."):
        body["default_actor"][field.split(".", 1)[1]] = value
    elif field:
        body[field] = value
    return body


def control_values(probe: Probe) -> int:
    """Names of 1 to 256 bytes, source URIs and scopes of 1 to 2048 bytes, the three kinds and
    the two views are taken at their bounds; every other value is ``400`` naming it and
    creates nothing (WP-CTRL-7)."""
    base = f"/admin/v1/spaces/{probe.space}"
    for n, (field, value) in enumerate(BAD_SPACES):
        space_id = f"{probe.space}-v{n}"
        answer = probe.request("POST", "/admin/v1/spaces", who="admin",
                               body=_space(probe, space_id, field, value))
        error(answer, f"a space with {field} = {value!r:.30} (WP-CTRL-7)",
              {"INVALID_REQUEST": field})
        error(probe.request("GET", f"/admin/v1/spaces/{space_id}", who="admin"),
              "a space refused for its values", {"NOT_FOUND": None})
    admin(probe, "POST", "/admin/v1/spaces", _space(probe, f"{probe.space}-ok"), status=201,
          what="a space with a 256-byte display_name and a 2048-byte source_uri (WP-CTRL-7)")
    for n, (field, value) in enumerate(BAD_ACTORS):
        body = {"request_id": probe.rid("ac"), "actor_id": f"x{n}", "kind": "agent",
                "display_name": "x", field: value}
        error(probe.request("POST", f"{base}/actors", who="admin", body=body),
              f"an actor with {field} = {value!r:.30} (WP-CTRL-7)", {"INVALID_REQUEST": field})
    for kind in ("agent", "human", "service"):
        admin(probe, "POST", f"{base}/actors", {"request_id": probe.rid("ac"),
                                                "actor_id": f"k{kind}", "kind": kind,
                                                "display_name": "é" * 128}, status=201,
              what=f"an actor of kind {kind} with a 256-byte display_name (WP-CTRL-7)")
    for n, scope in enumerate(BAD_SCOPES):
        body = {"request_id": probe.rid("cl"), "collection_id": f"c{n}",
                "source_actor_id": "alice", "scope": scope}
        error(probe.request("POST", f"{base}/collections", who="admin", body=body),
              f"a collection with scope {scope!r:.30} (WP-CTRL-7)", {"INVALID_REQUEST": "scope"})
    admin(probe, "POST", f"{base}/collections", {
        "request_id": probe.rid("cl"), "collection_id": "wide", "source_actor_id": "alice",
        "scope": "é" * 1024}, status=201, what="a collection with a 2048-byte scope (WP-CTRL-7)")
    for n, view in enumerate(BAD_VIEWS):
        body = {"request_id": probe.rid("co"), "consumer_id": f"v{n}", "actor_id": "bob",
                "view": view}
        error(probe.request("POST", f"{base}/consumers", who="admin", body=body),
              f"a consumer with view {view!r} (WP-CTRL-7)", {"INVALID_REQUEST": "view"})
        error(probe.request("POST", f"{base}/consumers/bob-inbox/view", who="admin",
                            body={"request_id": probe.rid("vw"), "view": view}),
              f"a view change to {view!r} (WP-CTRL-7)", {"INVALID_REQUEST": "view"})
    admin(probe, "POST", f"{base}/consumers", {"request_id": probe.rid("co"),
                                               "consumer_id": "log", "actor_id": "bob",
                                               "view": "space_log"}, status=201)
    space = detail(probe)
    kept = {"actors": ({"alice", "bob", "kagent", "khuman", "kservice"}, "actor_id"),
            "collections": ({"notes", "wide"}, "collection_id"),
            "consumers": ({"alice-inbox", "bob-inbox", "log"}, "consumer_id")}
    for key, (wanted, id_key) in kept.items():
        found = set(entries(space, key, id_key, f"the space's {key}"))
        if found != wanted:
            raise Finding(f"the space's {key} are {sorted(found)}, expected {sorted(wanted)}: a "
                          "refused value created something (WP-CTRL-7)")
    return probe.requests


def _members(probe: Probe, thread: str) -> set[str]:
    threads = entries(detail(probe), "threads", "thread_id", "the space's threads")
    if thread not in threads:
        raise Finding(f"the space's threads do not list thread {thread}")
    return {str(member) for member in listed(threads[thread], "member_ids", "a thread")}


def _at_the_limit(probe: Probe, thread: str) -> None:
    """``recipients`` + 1 actor ids refused, ``recipients`` of them added (WP-CTRL-14); a
    limit over 200 (as many actors to create) is left to the limit phase's ``recipients``."""
    cap = probe.limits.get("recipients")
    if cap is None or not 4 <= cap <= 200:
        return
    base = f"/admin/v1/spaces/{probe.space}"
    extra = [f"m{n}" for n in range(cap + 1 - 4)]
    for actor in extra:
        admin(probe, "POST", f"{base}/actors", {"request_id": probe.rid("ac"),
                                                "actor_id": actor, "kind": "agent",
                                                "display_name": actor})
    over = ["alice", "bob", "carol", "dave", *extra]

    def add(actors: list[str]) -> Any:
        return probe.request("POST", f"{base}/threads/{thread}/members", who="admin",
                             body={"request_id": probe.rid("th"), "actor_ids": actors})
    refusal = error(add(over), f"{len(over)} actor ids, recipients = {cap} (WP-CTRL-14)",
                    {"INVALID_REQUEST": "actor_ids", "RESOURCE_LIMIT": "actor_ids"})
    if refusal["code"] == "RESOURCE_LIMIT" and refusal["details"].get("limit") != "recipients":
        raise Finding(f"too many members must name details.limit 'recipients': {refusal}")
    if set(extra) & _members(probe, thread):
        raise Finding("a refused addition of too many members added some (WP-CTRL-14)")
    obj(add(over[1:]), f"{cap} actor ids (recipients = {cap}, WP-CTRL-14)", 200)
    if not set(over) <= _members(probe, thread):
        raise Finding(f"an addition of {cap} members did not add them all (WP-CTRL-14)")


def thread_members(probe: Probe) -> int:
    """Adding members takes 1 to ``recipients`` actor ids of the space, disabled ones too, and
    only ever adds (WP-CTRL-14, WP-CTRL-15); a member may then send and be sent to in the
    thread, which it could not before (WP-MSG-5)."""
    base = f"/admin/v1/spaces/{probe.space}"
    add_actor(probe, "carol", token=True)
    add_actor(probe, "dave")
    thread = text(obj(send(probe, "alice"), "a send", 201), "thread_id", "a send")
    in_thread = {"thread_id": thread}
    error(send(probe, "alice", ["carol"], in_thread), "a send in the thread to carol, not a "
          "member (WP-MSG-5)", {"FORBIDDEN": None})
    error(send(probe, "carol", ["alice"], in_thread), "carol's send in a thread she is not a "
          "member of (WP-MSG-5)", {"NOT_FOUND": None})

    def add(actors: list[str], where: str = thread) -> Any:
        return probe.request("POST", f"{base}/threads/{where}/members", who="admin",
                             body={"request_id": probe.rid("th"), "actor_ids": actors})
    error(add([]), "no actor ids (WP-CTRL-14)", {"INVALID_REQUEST": "actor_ids"})
    error(add(["nobody"]), "an actor id not of the space (WP-CTRL-14)",
          {"NOT_FOUND": None, "INVALID_REQUEST": None})
    error(add(["carol"], "thr_no0such0thread0here"), "members of an unknown thread",
          {"NOT_FOUND": None})
    if _members(probe, thread) != {"alice", "bob"}:
        raise Finding(f"refused member additions changed the members: "
                      f"{sorted(_members(probe, thread))} (WP-CTRL-14)")
    obj(add(["carol"]), "adding carol", 200)
    obj(send(probe, "alice", ["carol"], in_thread), "a send in the thread to carol, now a "
                                                    "member (WP-MSG-5)", 201)
    obj(send(probe, "carol", ["alice"], in_thread), "carol's send in the thread, now a member",
        201)
    admin(probe, "POST", f"{base}/actors/dave/disable", {"request_id": probe.rid("ds")})
    obj(add(["dave"]), "adding dave, disabled (WP-CTRL-15)", 200)
    obj(add(["bob"]), "adding bob, already a member", 200)
    found = _members(probe, thread)
    if not {"alice", "bob", "carol", "dave"} <= found:
        raise Finding(f"after adding carol, dave and bob the members are {sorted(found)}: "
                      "members are only ever added (WP-CTRL-14)")
    _at_the_limit(probe, thread)
    return probe.requests


CHECKS = (
    HostileCheck("control_values", "empty, non-string and over-long (in bytes) names, source "
                 "URIs and scopes, unknown kinds and views: 400 naming the field, nothing "
                 "created; the values at their bounds are taken",
                 ("WP-CTRL-7", "WP-VAL-2", "WP-ERR-1"), control_values),
    HostileCheck("thread_members", "thread members: none, unknown actors, an unknown thread, "
                 "recipients + 1 ids refused; one, a disabled one, an existing one and "
                 "recipients ids added, never removed; a member then sends in the thread",
                 ("WP-CTRL-14", "WP-CTRL-15", "WP-MSG-5", "WP-ERR-1"), thread_members),
)
