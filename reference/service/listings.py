"""``GET /admin/v1/spaces…``: what an operator may inspect; reading never moves any progress."""

from __future__ import annotations

from typing import Any

from waypost.reference.domain import values
from waypost.reference.domain.errors import not_found
from waypost.reference.service.context import Context, Outcome
from waypost.reference.storage import listings as sql
from waypost.reference.storage.memory import CollectionRow, collection_from

_time = values.format_timestamp


def _space_json(space: sql.SpaceRow) -> dict[str, Any]:
    return {"space_id": space.space_id, "display_name": space.display_name,
            "source_uri": space.source_uri, "default_actor_id": space.default_actor_id,
            "created_at": _time(space.created_at)}


#: Tokens, threads or spaces a dashboard page lists at most (the admin API lists them all).
PAGE = 100


async def spaces(ctx: Context) -> Outcome:
    (rows,) = await ctx.driver.read([sql.spaces()])
    return Outcome(200, {"spaces": [_space_json(sql.space_from(row)) for row in rows]})


async def spaces_page(ctx: Context, after: str | None, containing: str = "",
                      kit: bool = True) -> tuple[list[dict[str, Any]], str | None]:
    """A page of :data:`PAGE` spaces by id after ``after`` (only those whose id or name holds
    ``containing``; the kit's own spaces only if ``kit``), and where the next one starts."""
    start = values.object_id(after, "after") if after else ""
    (rows,) = await ctx.driver.read([sql.spaces(start, PAGE + 1, containing[:96], kit)])
    found = [_space_json(sql.space_from(row)) for row in rows]
    return found[:PAGE], found[PAGE - 1]["space_id"] if len(found) > PAGE else None


async def space(ctx: Context, space_id: str) -> Outcome:
    """One space with its actors, consumers, collections, tokens (no secrets) and threads."""
    return Outcome(200, await _space(ctx, space_id, "", "", sql.ALL))


async def space_page(ctx: Context, space_id: str, tokens_after: str | None,
                     threads_after: str | None) -> dict[str, Any]:
    """One space as :func:`space` shows it, but its tokens and threads a page of :data:`PAGE`
    each (by id, after the ids given), with ``tokens_next`` and ``threads_next``."""
    tokens = values.object_id(tokens_after, "tokens_after") if tokens_after else ""
    threads = values.object_id(threads_after, "threads_after") if threads_after else ""
    body = await _space(ctx, space_id, tokens, threads, PAGE + 1)
    for listing, key in (("tokens", "token_id"), ("threads", "thread_id")):
        more = len(body[listing]) > PAGE
        body[listing] = body[listing][:PAGE]
        body[f"{listing}_next"] = body[listing][-1][key] if more else None
    return body


async def _space(ctx: Context, space_id: str, tokens_after: str, threads_after: str,
                 limit: int) -> dict[str, Any]:
    sid = values.object_id(space_id, "space_id")
    found, actors, consumers, collections, tokens, threads = await ctx.driver.read([
        sql.space(sid), sql.actors(sid), sql.consumers(sid), sql.collections(sid),
        sql.tokens(sid, tokens_after, limit), sql.threads(sid, threads_after, limit)])
    if not found:
        raise not_found("space")
    return {
        **_space_json(sql.space_from(found[0])),
        "actors": [_actor_json(sql.actor_from(row)) for row in actors],
        "consumers": [_consumer_json(sql.consumer_from(row)) for row in consumers],
        "collections": [_collection_json(collection_from(row)) for row in collections],
        "tokens": [_token_json(sql.token_from(row)) for row in tokens],
        "threads": [_thread_json(sql.thread_from(row)) for row in threads],
    }


def _actor_json(a: sql.ActorRow) -> dict[str, Any]:
    return {"actor_id": a.actor_id, "kind": a.kind, "display_name": a.display_name,
            "disabled": a.disabled, "authority_version": a.authority_version,
            "created_at": _time(a.created_at)}


def _consumer_json(c: sql.ConsumerRow) -> dict[str, Any]:
    filter_: dict[str, list[str]] = {}
    for dimension, value in c.filter_pairs:
        filter_.setdefault(dimension, []).append(value)
    return {"consumer_id": c.consumer_id, "actor_id": c.actor_id, "view": c.view,
            "view_revision": c.view_revision, "disabled": c.disabled, "filter": filter_,
            "created_at": _time(c.created_at)}


def _collection_json(c: CollectionRow) -> dict[str, Any]:
    return {"collection_id": c.collection_id, "source_actor_id": c.source_actor_id,
            "scope": c.scope, "current_revision": c.current_revision,
            "created_at": _time(c.created_at)}


def _token_json(t: sql.TokenListing) -> dict[str, Any]:
    return {"token_id": t.token_id, "actor_id": t.actor_id, "consumer_id": t.consumer_id,
            "grant_fingerprint": t.grant_fingerprint.hex(),
            "expires_at": None if t.expires_at is None else _time(t.expires_at),
            "revoked": t.revoked_at is not None, "scopes": list(t.scopes),
            "created_at": _time(t.created_at)}


def _thread_json(t: sql.ThreadRow) -> dict[str, Any]:
    return {"thread_id": t.thread_id, "member_ids": list(t.member_ids),
            "created_at": _time(t.created_at)}
