"""Pre-provisioned fixtures: the spaces, actors, consumers, collections and tokens of a
deployment whose admin API the kit cannot reach (``--fixtures FILE``, docs/porting.md).

A fixtures file (JSON, or TOML with the same structure) lists *sets*; each set is what one
example's ``setup`` would provision (two spaces ``A`` and ``B`` with the actors of
:data:`~waypost.properties.control.SPACE_ACTORS`, the collections of
:data:`~waypost.properties.memory.COLLECTIONS`, consumers and tokens), freshly provisioned and
never used. Each example and each limit check takes a set of its own; a replay names its set
(``setup {"fixture": name}``), never a token, so replaying needs the same fixtures file on a
deployment where that set is fresh again."""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from waypost.properties import fingerprints
from waypost.properties.memory_model import Collection
from waypost.properties.model import Actor, Consumer, Token

if TYPE_CHECKING:
    from waypost.properties.world import World

FORMAT = "waypost-fixtures/1"


class FixtureError(ValueError):
    """A fixtures file the kit cannot use, or a set that is not fresh."""


class FixturesExhausted(RuntimeError):
    """Every fixture set of the file is taken: the run has no fresh spaces left."""


@dataclass
class Fixtures:
    """The sets of a fixtures file, handed out in order, each once."""

    sets: list[dict[str, Any]]
    taken: int = field(default=0)

    @property
    def left(self) -> int:
        return len(self.sets) - self.taken

    def take(self) -> str:
        """The name of the next unused set."""
        if self.taken >= len(self.sets):
            raise FixturesExhausted(f"needs another fixture set (all {len(self.sets)} of the "
                                    "fixtures file are taken)")
        self.taken += 1
        return str(self.sets[self.taken - 1]["name"])

    def named(self, name: str) -> dict[str, Any]:
        for fixture in self.sets:
            if fixture["name"] == name:
                return fixture
        raise FixtureError(f"the fixtures file has no set named {name!r}")


def load(path: Path) -> Fixtures:
    """Read and check a fixtures file (``.toml``: TOML, else JSON)."""
    try:
        data = tomllib.loads(path.read_text()) if path.suffix == ".toml" else json.loads(
            path.read_text())
    except (OSError, ValueError) as error:
        raise FixtureError(f"cannot read fixtures file {path}: {error}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise FixtureError(f"{path}: not a fixtures file (format must be {FORMAT!r})")
    sets = data.get("sets")
    if not isinstance(sets, list) or not sets:
        raise FixtureError(f"{path}: 'sets' must be a non-empty list")
    names = [fixture.get("name") if isinstance(fixture, dict) else None for fixture in sets]
    if len(set(names)) != len(names) or not all(isinstance(n, str) and n for n in names):
        raise FixtureError(f"{path}: every set needs a distinct non-empty 'name'")
    for fixture in sets:
        _check_set(fixture)
    return Fixtures(sets)


def _check_set(fixture: dict[str, Any]) -> None:
    """The set holds what an example's setup makes: its spaces with their actors, the
    collections, and consumers and tokens of those."""
    from waypost.properties.control import SPACE_ACTORS
    from waypost.properties.memory import COLLECTIONS

    where = f"fixture set {fixture['name']!r}"
    try:
        spaces = fixture["spaces"]
        for role, actors in SPACE_ACTORS.items():
            space = spaces[role]
            if space["default_actor"] != actors[0] or not set(actors) <= set(space["actors"]):
                raise FixtureError(f"{where}: space {role} needs the actors {list(actors)}, "
                                   f"the first its default actor")
        held = {(c["space"], c["collection_id"], c["source_actor_id"])
                for c in fixture["collections"]}
        if not set(COLLECTIONS) <= held:
            raise FixtureError(f"{where}: needs the collections {list(COLLECTIONS)} "
                               "(space, collection_id, source_actor_id)")
        consumers = {(c["space"], c["consumer_id"]): c["actor_id"]
                     for c in fixture["consumers"]}
        for token in fixture["tokens"]:
            if consumers.get((token["space"], token["consumer_id"])) != token["actor_id"]:
                raise FixtureError(f"{where}: token {token['token_id']} names a consumer "
                                   "that is not listed for its actor")
            if not isinstance(token["token"], str) or not token["token"]:
                raise FixtureError(f"{where}: token {token['token_id']} has no secret")
    except (KeyError, TypeError) as missing:
        raise FixtureError(f"{where}: missing or malformed {missing}") from None


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
