"""Control-plane commands of the kit (P04, P07, P08, P02): the example's spaces, consumers with
views and filters, tokens with grants (the kit computes each grant fingerprint), rotation and
regrants, revocation, disabling, view changes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from waypost.properties.commands import provisioned as fixtures
from waypost.properties.commands.feed import PAGE
from waypost.properties.model.matching import epoch_ms, shaped
from waypost.properties.model.state import COLLECTIONS, SPACE_ACTORS, Actor, Collection, Consumer, Token
from waypost.properties.protocol import fingerprints

if TYPE_CHECKING:
    from waypost.properties.commands.world import World

#: The actors of the example's two spaces; the first of each is the space's default actor.
FULL_SCOPES = ["message.send", "message.read", "space.observe", "receipt.write",
               "event.subscribe", "blob.write"]


def setup(world: World, fixture: str | None = None) -> None:
    """Two spaces: A (a0 default, a1, a2) and B (b0); an inbox and a full token each. With
    ``fixture``, the set of that name of the run's fixtures file (provisioned beforehand, no
    admin API: no test hooks either)."""
    described = world.session.describe()
    capabilities = described.json.get("capabilities", {}) if isinstance(
        described.json, dict) else {}
    world.model.hooks = isinstance(capabilities, dict) and bool(capabilities.get("test_hooks"))
    world.model.limits = published_limits(described.json)
    if fixture is not None:
        world.model.hooks = False  # the hooks need the admin token
        fixtures.apply(world, fixture)
        return
    if world.model.hooks:
        clock = world.session.admin("GET", "/_test/clock")
        now = epoch_ms(clock.json.get("now")) if isinstance(clock.json, dict) else None
        world.model.hooks = now is not None  # a clock the kit cannot read is no hook
        world.shared.clock_read(now or 0)
    for name, actors in SPACE_ACTORS.items():
        space = world.space_ids[name]
        world.admin_ok("POST", "/admin/v1/spaces", {
            "request_id": f"{space}.create", "space_id": space,
            # a kit space says what it is in the operator's space list: run, example, role
            "display_name": f"waypost kit {space}",
            "source_uri": f"waypost-kit://{space}",
            "default_actor": {"actor_id": actors[0], "kind": "agent",
                              "display_name": actors[0]}})
        world.model.spaces[space] = actors[0]
        for actor in actors:
            if actor != actors[0]:
                world.admin_ok("POST", f"/admin/v1/spaces/{space}/actors", {
                    "request_id": world.rid(), "actor_id": actor, "kind": "agent",
                    "display_name": actor})
            world.model.actors[(space, actor)] = Actor(actor, space)
            provision(world, name, actor, "inbox", {}, FULL_SCOPES, None)
    _collections(world)


def published_limits(described: Any) -> dict[str, int]:
    """The integer limits of a ``/v1/describe`` answer (none if it publishes none)."""
    limits = described.get("limits") if isinstance(described, dict) else None
    return {name: value for name, value in (limits or {}).items()
            if isinstance(value, int) and not isinstance(value, bool)} \
        if isinstance(limits, dict) else {}


def _collections(world: World) -> None:
    """The collections, and per source actor a consumer + token that may write its own
    collection, read every collection of its space and acknowledge what it reads (receipts
    about revisions: WP-VIS-3, WP-MEM-30)."""
    for space_name, cid, source in COLLECTIONS:
        space = world.space_ids[space_name]
        world.admin_ok("POST", f"/admin/v1/spaces/{space}/collections", {
            "request_id": world.rid(), "collection_id": cid, "source_actor_id": source,
            "scope": f"kit memory of {source}"})
        world.model.collections[(space, cid)] = Collection(cid, space, source,
                                                           f"kit memory of {source}")
    for space_name, cid, source in COLLECTIONS:
        grants = [[other, ["read", "write"] if other == cid else ["read"]]
                  for name, other, _ in COLLECTIONS if name == space_name]
        provision(world, space_name, source, "inbox", {},
                  ["memory.write", "memory.read", "blob.write", "message.read",
                   "receipt.write"], None,
                  collections=grants)


def provision(world: World, space_name: str, actor: str, view: str,
              filter: dict[str, list[str]], scopes: list[str], recipients: list[str] | None,
              blobs: list[int] | None = None, collections: list[list[Any]] | None = None,
              threads: list[int] | None = None) -> None:
    """A new consumer of ``actor`` with ``view`` and ``filter`` (plus ``thread_ids`` of the
    messages numbered ``threads``), and a token for it with ``collections`` grants
    (``[[collection_id, [actions]], …]``)."""
    space = world.space_ids[space_name]
    consumer_id = f"c{len(world.model.consumers)}"
    if threads:
        filter = {**filter, "thread_ids": [
            world.model.messages[world.message_order[n]].thread_id for n in threads]}
    body: dict[str, Any] = {"request_id": world.rid(), "consumer_id": consumer_id,
                            "actor_id": actor, "view": view}
    if filter:
        body["filter"] = filter
    world.admin_ok("POST", f"/admin/v1/spaces/{space}/consumers", body)
    world.model.consumers[(space, consumer_id)] = Consumer(
        consumer_id, space, actor, view, 1, {k: frozenset(v) for k, v in filter.items()})
    granted = [world.model.uploads[k].blob_id for k in blobs or []]
    issue(world, space, actor, consumer_id, scopes, recipients, granted,
          {cid: frozenset(actions) for cid, actions in collections or []})


def issue(world: World, space: str, actor: str, consumer_id: str, scopes: list[str],
          recipients: list[str] | None, blob_references: list[str] | None = None,
          collections: dict[str, frozenset[str]] | None = None) -> Token | None:
    """A token with these grants; its grant fingerprint must be the kit's own (P04)."""
    grant = {"mode": "any"} if recipients is None else {"mode": "listed",
                                                         "actor_ids": recipients}
    collection_grants = [{"collection_id": cid, "actions": sorted(actions)}
                         for cid, actions in sorted((collections or {}).items())]
    issued = world.admin_ok("POST", f"/admin/v1/spaces/{space}/tokens", {
        "request_id": world.rid(), "actor_id": actor, "consumer_id": consumer_id,
        "scopes": scopes, "recipients": grant, "collections": collection_grants,
        "blob_references": blob_references or []})
    expected = fingerprints.grant_fingerprint(scopes, grant, collection_grants,
                                              blob_references or [])
    world.check(("WP-AUTH-8", "WP-AUTH-9"), issued.get("grant_fingerprint") == expected,
                "grant fingerprint differs from SHA-256(JCS(normalised grants))",
                answer=issued, expected=expected)
    if not world.check(("WP-AUTH-8", "WP-CTRL-12"), isinstance(issued.get("token_id"), str)
                       and isinstance(issued.get("token"), str),
                       "an issued token must carry its token_id and secret", answer=issued):
        return None
    handle = f"t{len(world.model.tokens)}"
    token = Token(handle, issued["token_id"], issued["token"], space, actor, consumer_id,
                  frozenset(scopes), recipients is None, frozenset(recipients or ()),
                  expected, blob_references=frozenset(blob_references or ()),
                  collections=dict(collections or {}))
    world.model.tokens[handle] = token
    return token


def rotate(world: World, token: str) -> None:
    """A second token with identical grants: same fingerprint, cursors stay valid (P07)."""
    old = world.token(token)
    _read_old_cursor(world, old, issue(
        world, old.space, old.actor_id, old.consumer_id, sorted(old.scopes),
        None if old.recipients_any else sorted(old.recipient_ids),
        sorted(old.blob_references), old.collections))


def regrant(world: World, token: str) -> None:
    """Another token for the same consumer with other grants: a new grant fingerprint, so held
    cursors of the old grants are CURSOR_STALE and its checkpoint starts at 0 (P07)."""
    old = world.token(token)
    scopes = sorted(set(old.scopes) ^ {"event.subscribe"})
    _read_old_cursor(world, old, issue(
        world, old.space, old.actor_id, old.consumer_id, scopes,
        None if old.recipients_any else sorted(old.recipient_ids),
        sorted(old.blob_references), old.collections))


def _read_old_cursor(world: World, old: Token, new: Token | None) -> None:
    """The newest cursor held under ``old``'s grants, read through ``new``: still valid for
    the same grant fingerprint and view (WP-CUR-5), CURSOR_STALE for another (WP-CUR-4)."""
    held = [cursor for cursor in world.model.cursors
            if (cursor.space, cursor.consumer_id, cursor.grant_fingerprint) == (
                old.space, old.consumer_id, old.grant_fingerprint)]
    if new is None or not held or not world.model.live(new):
        return
    answer = world.as_(new, "GET", "/v1/feed", params={"cursor": held[-1].text, "limit": 1})
    if world.model.cursor_problem(held[-1], new) is None:
        world.check("WP-CUR-5", answer.status == 200 and shaped(answer.json, PAGE),
                    "a cursor read through a token of identical grants must stay valid",
                    status=answer.status, answer=answer.json)
    else:
        world.expect_refusal(answer, {"CURSOR_STALE"}, "WP-CUR-4",
                             "a cursor of the old grants read through a regranted token")


def revoke(world: World, token: str) -> None:
    """Revoke a token: from then on it answers 401 (P02), at once."""
    target = world.token(token)
    world.admin_ok("POST", f"/admin/v1/tokens/{target.token_id}/revoke",
                   {"request_id": world.rid()})
    target.revoked = True
    _dead_now(world, [target], "a feed read right after the revoke")


def disable(world: World, space_name: str, actor: str) -> None:
    """Disable an actor: from then on every token of it answers 401 (P02), at once."""
    space = world.space_ids[space_name]
    world.admin_ok("POST", f"/admin/v1/spaces/{space}/actors/{actor}/disable",
                   {"request_id": world.rid()})
    world.model.actors[(space, actor)].disabled = True
    _dead_now(world, [t for t in world.model.tokens.values()
                      if (t.space, t.actor_id) == (space, actor)], "a feed read right after "
                                                                    "the disable")


def _dead_now(world: World, tokens: list[Token], what: str) -> None:
    for token in tokens:
        world.dead(token, world.as_(token, "GET", "/v1/feed", params={"limit": 1}), what)


def change_view(world: World, token: str, view: str, filter: dict[str, list[str]]) -> None:
    """A new view revision of the token's consumer: held cursors become stale (P07)."""
    consumer = world.model.consumer_of(world.token(token))
    body: dict[str, Any] = {"request_id": world.rid(), "view": view}
    if filter:
        body["filter"] = filter
    world.admin_ok(
        "POST", f"/admin/v1/spaces/{consumer.space}/consumers/{consumer.consumer_id}/view",
        body)
    consumer.view_revision += 1  # tracked by the kit: answers need not show it
    consumer.view = view
    consumer.filter = {k: frozenset(v) for k, v in filter.items()}
