"""Setting an example up from pre-provisioned fixtures (``--fixtures FILE``, docs/porting.md;
the file and its sets: :mod:`waypost.properties.model.fixture_sets`), and writing a set from
what an example provisioned (``waypost conformance fixtures``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from waypost.properties.model.fixture_sets import FixtureError
from waypost.properties.model.state import Actor, Collection, Consumer, Token
from waypost.properties.protocol import fingerprints

if TYPE_CHECKING:
    from waypost.properties.commands.world import World


def setup_args(world: World) -> dict[str, Any]:
    """The arguments of an example's ``setup``: a fresh set's name when the run has
    fixtures, else none (the admin API provisions)."""
    fixtures = world.session.fixtures
    return {} if fixtures is None else {"fixture": fixtures.take()}


def apply(world: World, name: str) -> None:
    """The model of an example learns the set ``name`` as setup would have made it, after a
    check that the set is fresh: no item in any token's feed, every collection at revision 0."""
    assert world.session.fixtures is not None
    fixture = world.session.fixtures.named(name)
    model = world.model
    world.space_ids = {role: space["space_id"] for role, space in fixture["spaces"].items()}
    for role, space in fixture["spaces"].items():
        sid = world.space_ids[role]
        model.spaces[sid] = space["default_actor"]
        for actor in space["actors"]:
            model.actors[(sid, actor)] = Actor(actor, sid)
    for c in fixture["consumers"]:
        sid = world.space_ids[c["space"]]
        model.consumers[(sid, c["consumer_id"])] = Consumer(
            c["consumer_id"], sid, c["actor_id"], c["view"], 1,
            {k: frozenset(v) for k, v in (c.get("filter") or {}).items()})
    for t in fixture["tokens"]:
        _token(world, t)
    for c in fixture["collections"]:
        sid = world.space_ids[c["space"]]
        model.collections[(sid, c["collection_id"])] = Collection(
            c["collection_id"], sid, c["source_actor_id"], c["scope"])
    _check_fresh(world, name)


def _token(world: World, t: dict[str, Any]) -> None:
    grant = t["recipients"]
    collections = [{"collection_id": g["collection_id"], "actions": sorted(g["actions"])}
                   for g in sorted(t.get("collections") or [],
                                   key=lambda g: str(g["collection_id"]))]
    references = list(t.get("blob_references") or [])
    handle = f"t{len(world.model.tokens)}"
    world.model.tokens[handle] = Token(
        handle, t["token_id"], t["token"], world.space_ids[t["space"]], t["actor_id"],
        t["consumer_id"], frozenset(t["scopes"]), grant["mode"] == "any",
        frozenset(grant.get("actor_ids") or ()),
        fingerprints.grant_fingerprint(list(t["scopes"]), grant, collections, references),
        blob_references=frozenset(references),
        collections={g["collection_id"]: frozenset(g["actions"]) for g in collections})


def _check_fresh(world: World, name: str) -> None:
    for token in world.model.tokens.values():
        if token.has("event.subscribe"):
            page = world.as_(token, "GET", "/v1/feed", params={"limit": 1})
            if page.status != 200 or not isinstance(page.json, dict) or page.json.get("items"):
                raise FixtureError(f"fixture set {name!r} is not fresh (or its token "
                                   f"{token.token_id} is refused): the feed of "
                                   f"{token.actor_id} answers {page.status} {page.json}")
        for cid in token.collections:
            read = world.as_(token, "GET", f"/v1/collections/{cid}")
            if isinstance(read.json, dict) and read.json.get("current_revision", 0) != 0:
                raise FixtureError(f"fixture set {name!r} is not fresh: collection {cid} is "
                                   f"at revision {read.json.get('current_revision')}")


def dump(world: World, name: str) -> dict[str, Any]:
    """A set of a fixtures file from an example the admin API provisioned (``setup``)."""
    roles = {sid: role for role, sid in world.space_ids.items()}
    model = world.model
    spaces = {role: {"space_id": sid, "default_actor": model.spaces[sid],
                     "actors": [a for (s, a) in model.actors if s == sid]}
              for role, sid in world.space_ids.items()}
    consumers = [{"space": roles[c.space], "consumer_id": c.consumer_id, "actor_id": c.actor_id,
                  "view": c.view, "filter": {k: sorted(v) for k, v in c.filter.items()}}
                 for c in model.consumers.values()]
    tokens = [{"space": roles[t.space], "actor_id": t.actor_id, "consumer_id": t.consumer_id,
               "token_id": t.token_id, "token": t.secret, "scopes": sorted(t.scopes),
               "recipients": {"mode": "any"} if t.recipients_any else {
                   "mode": "listed", "actor_ids": sorted(t.recipient_ids)},
               "collections": [{"collection_id": cid, "actions": sorted(actions)}
                               for cid, actions in sorted(t.collections.items())],
               "blob_references": sorted(t.blob_references)}
              for t in model.tokens.values()]
    collections = [{"space": roles[c.space], "collection_id": c.collection_id,
                    "source_actor_id": c.source_actor_id, "scope": c.scope}
                   for c in model.collections.values()]
    return {"name": name, "spaces": spaces, "consumers": consumers,
            "collections": collections, "tokens": tokens}
