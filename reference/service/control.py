"""The control plane (protocol.md §6): caller-chosen ids, the admin idempotency ledger.

Each write's fingerprint is SHA-256(JCS) of its normalised body without ``request_id`` and with
its path parameters, e.g. ``{"actor_id": "a", "display_name": "A", "kind": "agent",
"space_id": "s"}``. Only successes are recorded in the ledger: a control-plane failure (an
unknown space, an id already taken) can be retried once its cause is fixed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from waypost.reference.domain import parsing, values
from waypost.reference.domain.canonical import digest
from waypost.reference.domain.errors import IdempotencyConflict
from waypost.reference.domain.grants import parse_grants
from waypost.reference.domain.principal import FILTER_DIMENSIONS
from waypost.reference.service.auth import new_token, token_digest
from waypost.reference.service.context import Context, Outcome
from waypost.reference.service.woken import to_the_end
from waypost.reference.storage import control as sql
from waypost.reference.storage.plan import CommitPlan
from waypost.reference.storage.rules import refusal

ACTOR_KINDS = ("agent", "human", "service")
VIEWS = ("inbox", "space_log")
ITEM_TYPES = ("message", "memory_revision", "receipt")
MAX_NAME_BYTES = 256
MAX_URI_BYTES = 2048


async def _settle(ctx: Context, admin_plan: CommitPlan, fingerprint: bytes,
                  extra: dict[str, Any] | None = None) -> Outcome:
    outcome = await to_the_end(sql.run_admin(ctx.driver, admin_plan),
                               lambda _: ctx.signal.authority_changed())
    if outcome.verdict == sql.REPLAY:
        if outcome.fingerprint != fingerprint:
            raise IdempotencyConflict("request_id was used for a different request",
                                      field="request_id")
        assert outcome.status is not None
        assert outcome.result is not None
        replay = dict(outcome.result)
        if extra is not None:
            replay.update({key: None for key in extra})  # secrets are not stored
        return Outcome(outcome.status, replay, replayed=True)
    if outcome.verdict != "ok":
        raise refusal(admin_plan.rules, outcome.verdict)
    assert outcome.status is not None
    assert outcome.result is not None
    return Outcome(outcome.status, {**outcome.result, **(extra or {})})


def _key(operation: str, request_id: str, normalised: dict[str, Any]) -> tuple[str, str, bytes]:
    return operation, request_id, digest(normalised)


def _filter(raw: Any, field: str) -> dict[str, tuple[str, ...]]:
    body = parsing.fields(raw, field, [], FILTER_DIMENSIONS)
    result: dict[str, tuple[str, ...]] = {}
    for dimension, listed in body.items():
        check: Callable[[Any, str], str] = values.object_id
        if dimension == "item_types":
            def check(value: Any, where: str) -> str:
                return parsing.one_of(value, where, ITEM_TYPES)
        entries = parsing.items(listed, parsing.at(field, dimension), check, high=values.FILTER_ENTRIES)
        if entries:
            result[dimension] = tuple(sorted(set(entries)))
    return result


def _filter_form(filter_: dict[str, tuple[str, ...]]) -> dict[str, list[str]]:
    return {dimension: list(entries) for dimension, entries in sorted(filter_.items())}


async def create_space(ctx: Context, raw: Any) -> Outcome:
    body = parsing.fields(raw, "", ["request_id", "space_id", "display_name", "source_uri",
                                    "default_actor"])
    request_id = values.request_id(body["request_id"])
    space_id = values.object_id(body["space_id"], "space_id")
    display_name = values.line(body["display_name"], "display_name", MAX_NAME_BYTES)
    source_uri = values.line(body["source_uri"], "source_uri", MAX_URI_BYTES)
    actor = parsing.fields(body["default_actor"], "default_actor",
                           ["actor_id", "kind", "display_name"])
    actor_id = values.object_id(actor["actor_id"], "default_actor.actor_id")
    kind = parsing.one_of(actor["kind"], "default_actor.kind", ACTOR_KINDS)
    actor_name = values.line(actor["display_name"], "default_actor.display_name", MAX_NAME_BYTES)
    normalised = {"space_id": space_id, "display_name": display_name, "source_uri": source_uri,
                  "default_actor": {"actor_id": actor_id, "kind": kind,
                                    "display_name": actor_name}}
    key = _key("space.create", request_id, normalised)
    return await _settle(ctx, sql.create_space(key, ctx.clock.now_ms(), space_id, display_name,
                                               source_uri, actor_id, kind, actor_name), key[2])


async def create_actor(ctx: Context, space_id: str, raw: Any) -> Outcome:
    body = parsing.fields(raw, "", ["request_id", "actor_id", "kind", "display_name"])
    request_id = values.request_id(body["request_id"])
    space = values.object_id(space_id, "space_id")
    actor_id = values.object_id(body["actor_id"], "actor_id")
    kind = parsing.one_of(body["kind"], "kind", ACTOR_KINDS)
    name = values.line(body["display_name"], "display_name", MAX_NAME_BYTES)
    key = _key("actor.create", request_id, {"space_id": space, "actor_id": actor_id,
                                            "kind": kind, "display_name": name})
    return await _settle(ctx, sql.create_actor(key, ctx.clock.now_ms(), space, actor_id, kind,
                                               name), key[2])


async def disable_actor(ctx: Context, space_id: str, actor_id: str, raw: Any) -> Outcome:
    body = parsing.fields(raw, "", ["request_id"])
    request_id = values.request_id(body["request_id"])
    space = values.object_id(space_id, "space_id")
    actor = values.object_id(actor_id, "actor_id")
    key = _key("actor.disable", request_id, {"space_id": space, "actor_id": actor})
    return await _settle(ctx, sql.disable_actor(key, ctx.clock.now_ms(), space, actor), key[2])


async def create_consumer(ctx: Context, space_id: str, raw: Any) -> Outcome:
    body = parsing.fields(raw, "", ["request_id", "consumer_id", "actor_id", "view"], ["filter"])
    request_id = values.request_id(body["request_id"])
    space = values.object_id(space_id, "space_id")
    consumer_id = values.object_id(body["consumer_id"], "consumer_id")
    actor_id = values.object_id(body["actor_id"], "actor_id")
    view = parsing.one_of(body["view"], "view", VIEWS)
    normalised: dict[str, Any] = {"space_id": space, "consumer_id": consumer_id,
                                  "actor_id": actor_id, "view": view}
    filter_: dict[str, tuple[str, ...]] = {}
    if "filter" in body:
        filter_ = _filter(body["filter"], "filter")
        normalised["filter"] = _filter_form(filter_)
    key = _key("consumer.create", request_id, normalised)
    return await _settle(ctx, sql.create_consumer(key, ctx.clock.now_ms(), space, consumer_id,
                                                  actor_id, view, filter_), key[2])


async def change_view(ctx: Context, space_id: str, consumer_id: str, raw: Any) -> Outcome:
    body = parsing.fields(raw, "", ["request_id", "view"], ["filter"])
    request_id = values.request_id(body["request_id"])
    space = values.object_id(space_id, "space_id")
    consumer = values.object_id(consumer_id, "consumer_id")
    view = parsing.one_of(body["view"], "view", VIEWS)
    normalised: dict[str, Any] = {"space_id": space, "consumer_id": consumer, "view": view}
    filter_: dict[str, tuple[str, ...]] = {}
    if "filter" in body:
        filter_ = _filter(body["filter"], "filter")
        normalised["filter"] = _filter_form(filter_)
    key = _key("consumer.view", request_id, normalised)
    return await _settle(ctx, sql.change_view(key, ctx.clock.now_ms(), space, consumer, view,
                                              filter_), key[2])


async def create_collection(ctx: Context, space_id: str, raw: Any) -> Outcome:
    body = parsing.fields(raw, "", ["request_id", "collection_id", "source_actor_id", "scope"])
    request_id = values.request_id(body["request_id"])
    space = values.object_id(space_id, "space_id")
    collection_id = values.object_id(body["collection_id"], "collection_id")
    source = values.object_id(body["source_actor_id"], "source_actor_id")
    scope = values.line(body["scope"], "scope", MAX_URI_BYTES)
    key = _key("collection.create", request_id, {"space_id": space,
                                                 "collection_id": collection_id,
                                                 "source_actor_id": source, "scope": scope})
    return await _settle(ctx, sql.create_collection(key, ctx.clock.now_ms(), space,
                                                    collection_id, source, scope), key[2])


async def issue_token(ctx: Context, space_id: str, raw: Any) -> Outcome:
    """A new token; its secret is in this response only (a replay answers ``token: null``)."""
    body = parsing.fields(raw, "", ["request_id", "actor_id", "consumer_id", "scopes",
                                    "recipients", "collections", "blob_references"],
                          ["expires_at"])
    request_id = values.request_id(body["request_id"])
    space = values.object_id(space_id, "space_id")
    actor_id = values.object_id(body["actor_id"], "actor_id")
    consumer_id = values.object_id(body["consumer_id"], "consumer_id")
    grants = parse_grants(body)
    normalised: dict[str, Any] = {"space_id": space, "actor_id": actor_id,
                                  "consumer_id": consumer_id, **grants.normalised()}
    expires_at = None
    if "expires_at" in body:
        expires_at = values.timestamp(body["expires_at"], "expires_at")
        normalised["expires_at"] = values.format_timestamp(expires_at)
    key = _key("token.issue", request_id, normalised)
    token_id, token = new_token()
    fingerprint = grants.fingerprint()
    result = {"token_id": token_id, "grant_fingerprint": fingerprint.hex(),
              "expires_at": None if expires_at is None else values.format_timestamp(expires_at)}
    row = sql.TokenRow(token_id, token_digest(token), actor_id, consumer_id,
                       grants.recipients_any, fingerprint, expires_at, sorted(grants.scopes),
                       sorted(grants.recipient_ids), sorted(grants.collections),
                       sorted(grants.blob_references))
    plan = sql.issue_token(key, ctx.clock.now_ms(), space, row, result)
    return await _settle(ctx, plan, key[2], {"token": token})


async def revoke_token(ctx: Context, token_id: str, raw: Any) -> Outcome:
    body = parsing.fields(raw, "", ["request_id"])
    request_id = values.request_id(body["request_id"])
    token = values.object_id(token_id, "token_id")
    key = _key("token.revoke", request_id, {"token_id": token})
    return await _settle(ctx, sql.revoke_token(key, ctx.clock.now_ms(), token), key[2])


async def add_thread_members(ctx: Context, space_id: str, thread_id: str, raw: Any) -> Outcome:
    body = parsing.fields(raw, "", ["request_id", "actor_ids"])
    request_id = values.request_id(body["request_id"])
    space = values.object_id(space_id, "space_id")
    thread = values.object_id(thread_id, "thread_id")
    actor_ids = sorted(set(parsing.items(body["actor_ids"], "actor_ids", values.object_id,
                                         low=1, high=ctx.limits.recipients)))
    key = _key("thread.members", request_id, {"space_id": space, "thread_id": thread,
                                              "actor_ids": actor_ids})
    return await _settle(ctx, sql.add_thread_members(key, ctx.clock.now_ms(), space, thread,
                                                     actor_ids), key[2])
