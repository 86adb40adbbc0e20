"""``GET /admin/v1/spaces…``: what an operator may inspect; reading never moves any progress."""

from __future__ import annotations

import json
from typing import Any

from waypost.reference.domain import values
from waypost.reference.domain.errors import not_found
from waypost.reference.service.context import Context, Outcome
from waypost.reference.storage import listings as sql

_time = values.format_timestamp


def _space_json(row: tuple[Any, ...]) -> dict[str, Any]:
    space_id, name, uri, default_actor, created = row
    return {"space_id": space_id, "display_name": name, "source_uri": uri,
            "default_actor_id": default_actor, "created_at": _time(created)}


async def spaces(ctx: Context) -> Outcome:
    (rows,) = await ctx.driver.read([sql.spaces()])
    return Outcome(200, {"spaces": [_space_json(row) for row in rows]})


async def space(ctx: Context, space_id: str) -> Outcome:
    """One space with its actors, consumers, collections, tokens (no secrets) and threads."""
    sid = values.object_id(space_id, "space_id")
    found, actors, consumers, collections, tokens, threads = await ctx.driver.read([
        sql.space(sid), sql.actors(sid), sql.consumers(sid), sql.collections(sid),
        sql.tokens(sid), sql.threads(sid)])
    if not found:
        raise not_found("space")
    return Outcome(200, {
        **_space_json(found[0]),
        "actors": [{"actor_id": a, "kind": k, "display_name": n, "disabled": bool(d),
                    "authority_version": v, "created_at": _time(c)}
                   for a, k, n, d, v, c in actors],
        "consumers": [{"consumer_id": c, "actor_id": a, "view": v, "view_revision": r,
                       "disabled": bool(d), "filter": _filter(f), "created_at": _time(t)}
                      for c, a, v, r, d, f, t in consumers],
        "collections": [{"collection_id": c, "source_actor_id": a, "scope": s,
                         "current_revision": r, "created_at": _time(t)}
                        for c, a, s, r, t in collections],
        "tokens": [{"token_id": t, "actor_id": a, "consumer_id": c, "grant_fingerprint": g.hex(),
                    "expires_at": None if e is None else _time(e), "revoked": r is not None,
                    "scopes": json.loads(s), "created_at": _time(ct)}
                   for t, a, c, g, e, r, ct, s in tokens],
        "threads": [{"thread_id": t, "member_ids": json.loads(m), "created_at": _time(c)}
                    for t, c, m in threads],
    })


def _filter(pairs_json: str) -> dict[str, list[str]]:
    result: dict[str, list[str]] = {}
    for dimension, value in json.loads(pairs_json):
        result.setdefault(dimension, []).append(value)
    return result
