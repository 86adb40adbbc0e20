"""Control-plane commit plans (protocol.md §6): each one checks the admin idempotency ledger,
guards its preconditions, writes, and records its stable result in the same plan."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from waypost.reference.storage.driver import Driver
from waypost.reference.storage.plan import (
    GUARD_OK,
    CommitPlan,
    SqlValue,
    Statement,
    guard,
    guarded,
    json_list,
    new_plan_id,
    plan,
    stmt,
    verdict_read,
)
from waypost.reference.storage.rows import decode, only
from waypost.reference.storage.rules import Rule

#: The ledger already holds this (operation, request_id): the outcome carries its record.
REPLAY = "REPLAY"
_REPLAYED = Rule(REPLAY, "EXISTS (SELECT 1 FROM admin_submissions WHERE operation = :op"
                 " AND request_id = :request_id)", None, "", "", "the ledger's record answers")


@dataclass(frozen=True)
class AdminOutcome:
    """What a control-plane plan decided: ``ok``, ``REPLAY`` or the verdict of a rule broken."""

    verdict: str
    fingerprint: bytes | None
    status: int | None
    result: dict[str, Any] | None


def missing(field: str, condition: str) -> Rule:
    """``field`` names nothing (``condition`` holds): ``404 NOT_FOUND`` naming it."""
    return Rule(f"NOT_FOUND:{field}", condition, None, "NOT_FOUND", field, f"{field} not found")


def taken(field: str, condition: str) -> Rule:
    """``field`` names what exists already (``condition`` holds): ``400`` naming it."""
    return Rule(f"EXISTS:{field}", condition, None, "INVALID_REQUEST", field,
                f"{field} already exists", "already_exists")


def _no_actor(param: str) -> str:
    """SQL: the space has no actor ``:param``."""
    return f"NOT EXISTS (SELECT 1 FROM actors WHERE space_id = :space_id AND actor_id = :{param})"


SPACE_MISSING = missing("space_id", "NOT EXISTS (SELECT 1 FROM spaces WHERE space_id = :space_id)")
ACTOR_MISSING = missing("actor_id", _no_actor("actor_id"))
_NO_CONSUMER = ("NOT EXISTS (SELECT 1 FROM consumers WHERE space_id = :space_id"
                " AND consumer_id = :consumer_id)")


def admin_plan(name: str, key: tuple[str, str, bytes], status: int, result: dict[str, Any] | None,
               rules: Sequence[Rule], params: dict[str, SqlValue],
               writes: Sequence[tuple[str, dict[str, SqlValue]]], now: int,
               result_sql: str | None = None) -> CommitPlan:
    """A control-plane plan. ``result`` is the stable result known in advance; ``result_sql``
    instead computes it inside the commit (an SQL expression over ``params``)."""
    op, request_id, fingerprint = key
    plan_id = new_plan_id()
    base: dict[str, SqlValue] = {**params, "op": op, "request_id": request_id, "now": now}
    checked = (_REPLAYED, *rules)
    statements: list[Statement] = [guard(plan_id, checked, base)]
    statements += [guarded(plan_id, sql, {**base, "now": now, **values}) for sql, values in writes]
    record_params: dict[str, SqlValue] = {
        **base, "fingerprint": fingerprint, "status": status, "now": now}
    if result_sql is None:
        result_sql, record_params["result"] = ":result", json.dumps(result, sort_keys=True)
    statements.append(guarded(plan_id, f"""
        INSERT INTO admin_submissions
            (operation, request_id, fingerprint, result_status, result_json, committed_at)
        SELECT :op, :request_id, :fingerprint, :status, {result_sql}, :now WHERE {GUARD_OK}""",
        record_params))
    outcome = verdict_read(
        plan_id, AdminOutcome,
        "LEFT JOIN admin_submissions a ON a.operation = :op AND a.request_id = :request_id",
        {"op": op, "request_id": request_id}, fingerprint="a.fingerprint",
        status="a.result_status", result="a.result_json")
    return plan(name, plan_id, statements, outcome, checked)


async def run_admin(driver: Driver, admin: CommitPlan) -> AdminOutcome:
    """Execute a control-plane plan and decode its outcome row (the ledger's columns are
    ``NULL`` unless it holds the key)."""
    return decode(AdminOutcome, only(await driver.run(admin)), result=json.loads)


Key = tuple[str, str, bytes]  # (operation, request_id, fingerprint)


def ledger_holds(operation: str, request_id: str) -> Statement:
    """One row when the admin idempotency ledger holds ``(operation, request_id)``."""
    return stmt("SELECT 1 FROM admin_submissions WHERE operation = :op AND request_id = :rid",
                {"op": operation, "rid": request_id})


CREATE_SPACE_RULES = (
    taken("space_id", "EXISTS (SELECT 1 FROM spaces WHERE space_id = :space_id)"),
    taken("source_uri", "EXISTS (SELECT 1 FROM spaces WHERE source_uri = :source_uri)"),
)


def create_space(key: Key, now: int, space_id: str, display_name: str, source_uri: str,
                 actor_id: str, kind: str, actor_display_name: str) -> CommitPlan:
    """A space and its default actor, in one plan (the deferred foreign keys close the cycle)."""
    params: dict[str, SqlValue] = {
        "space_id": space_id, "display_name": display_name, "source_uri": source_uri,
        "actor_id": actor_id, "kind": kind, "actor_display_name": actor_display_name}
    return admin_plan("create_space", key, 201, {"space_id": space_id,
                                                  "default_actor_id": actor_id},
                      CREATE_SPACE_RULES, params, [
        (f"""INSERT INTO spaces (space_id, display_name, source_uri, default_actor_id, created_at)
             SELECT :space_id, :display_name, :source_uri, :actor_id, :now WHERE {GUARD_OK}""", {}),
        (f"""INSERT INTO actors (space_id, actor_id, kind, display_name, created_at)
             SELECT :space_id, :actor_id, :kind, :actor_display_name, :now WHERE {GUARD_OK}""", {}),
    ], now)


CREATE_ACTOR_RULES = (SPACE_MISSING, taken("actor_id", f"NOT ({_no_actor('actor_id')})"))


def create_actor(key: Key, now: int, space_id: str, actor_id: str, kind: str,
                 display_name: str) -> CommitPlan:
    params: dict[str, SqlValue] = {"space_id": space_id, "actor_id": actor_id, "kind": kind,
                                   "display_name": display_name}
    return admin_plan("create_actor", key, 201, {"space_id": space_id, "actor_id": actor_id},
                      CREATE_ACTOR_RULES, params, [
        (f"""INSERT INTO actors (space_id, actor_id, kind, display_name, created_at)
             SELECT :space_id, :actor_id, :kind, :display_name, :now WHERE {GUARD_OK}""", {}),
    ], now)


DISABLE_ACTOR_RULES = (ACTOR_MISSING,)


def disable_actor(key: Key, now: int, space_id: str, actor_id: str) -> CommitPlan:
    """Disable an actor and bump its authority version; the result is read inside the commit."""
    params: dict[str, SqlValue] = {"space_id": space_id, "actor_id": actor_id}
    return admin_plan("disable_actor", key, 200, None, DISABLE_ACTOR_RULES, params, [
        (f"""UPDATE actors SET disabled = 1, authority_version = authority_version + 1
             WHERE space_id = :space_id AND actor_id = :actor_id AND {GUARD_OK}""", {}),
    ], now, result_sql="""(SELECT json_object('space_id', space_id, 'actor_id', actor_id,
        'disabled', json('true'), 'authority_version', authority_version)
        FROM actors WHERE space_id = :space_id AND actor_id = :actor_id)""")


_INSERT_FILTERS = f"""
    INSERT INTO consumer_filters (space_id, consumer_id, dimension, value)
    SELECT :space_id, :consumer_id, json_extract(f.value, '$[0]'), json_extract(f.value, '$[1]')
    FROM json_each(:filters) f WHERE {GUARD_OK}"""
_VIEW_RESULT = """(SELECT json_object('consumer_id', consumer_id, 'actor_id', actor_id,
    'view', view, 'view_revision', view_revision)
    FROM consumers WHERE space_id = :space_id AND consumer_id = :consumer_id)"""


def filter_pairs(filter_: dict[str, tuple[str, ...]]) -> str:
    """A consumer filter as a JSON list of ``[dimension, value]`` pairs."""
    return json_list([[dim, value] for dim, values in sorted(filter_.items())
                      for value in sorted(set(values))])


CREATE_CONSUMER_RULES = (SPACE_MISSING, ACTOR_MISSING,
                         taken("consumer_id", f"NOT ({_NO_CONSUMER})"))


def create_consumer(key: Key, now: int, space_id: str, consumer_id: str, actor_id: str,
                    view: str, filter_: dict[str, tuple[str, ...]]) -> CommitPlan:
    params: dict[str, SqlValue] = {"space_id": space_id, "consumer_id": consumer_id,
                                   "actor_id": actor_id, "view": view,
                                   "filters": filter_pairs(filter_)}
    return admin_plan("create_consumer", key, 201, None, CREATE_CONSUMER_RULES, params, [
        (f"""INSERT INTO consumers (space_id, consumer_id, actor_id, view, created_at)
             SELECT :space_id, :consumer_id, :actor_id, :view, :now WHERE {GUARD_OK}""", {}),
        (_INSERT_FILTERS, {}),
    ], now, result_sql=_VIEW_RESULT)


CHANGE_VIEW_RULES = (missing("consumer_id", _NO_CONSUMER),)


def change_view(key: Key, now: int, space_id: str, consumer_id: str, view: str,
                filter_: dict[str, tuple[str, ...]]) -> CommitPlan:
    """A new view and filter: the view revision grows, so checkpoints and cursors start over."""
    params: dict[str, SqlValue] = {"space_id": space_id, "consumer_id": consumer_id,
                                   "view": view, "filters": filter_pairs(filter_)}
    return admin_plan("change_view", key, 200, None, CHANGE_VIEW_RULES, params, [
        (f"""UPDATE consumers SET view = :view, view_revision = view_revision + 1
             WHERE space_id = :space_id AND consumer_id = :consumer_id AND {GUARD_OK}""", {}),
        (f"""DELETE FROM consumer_filters WHERE space_id = :space_id
             AND consumer_id = :consumer_id AND {GUARD_OK}""", {}),
        (_INSERT_FILTERS, {}),
    ], now, result_sql=_VIEW_RESULT)


CREATE_COLLECTION_RULES = (
    SPACE_MISSING,
    missing("source_actor_id", _no_actor("source_actor_id")),
    taken("collection_id", "EXISTS (SELECT 1 FROM collections WHERE space_id = :space_id"
          " AND collection_id = :collection_id)"),
)


def create_collection(key: Key, now: int, space_id: str, collection_id: str,
                      source_actor_id: str, scope: str) -> CommitPlan:
    params: dict[str, SqlValue] = {"space_id": space_id, "collection_id": collection_id,
                                   "source_actor_id": source_actor_id, "scope": scope}
    result = {"collection_id": collection_id, "source_actor_id": source_actor_id,
              "scope": scope, "current_revision": 0}
    return admin_plan("create_collection", key, 201, result, CREATE_COLLECTION_RULES, params, [
        (f"""INSERT INTO collections (space_id, collection_id, source_actor_id, scope, created_at)
             SELECT :space_id, :collection_id, :source_actor_id, :scope, :now
             WHERE {GUARD_OK}""", {}),
    ], now)


@dataclass(frozen=True)
class TokenRow:
    """A token to insert: only the digest of its secret is stored."""

    token_id: str
    digest: bytes
    actor_id: str
    consumer_id: str
    recipients_any: bool
    grant_fingerprint: bytes
    expires_at: int | None
    scopes: Sequence[str]
    recipient_ids: Sequence[str]
    collections: Sequence[tuple[str, str]]
    blob_references: Sequence[str]


ISSUE_TOKEN_RULES = (
    SPACE_MISSING,
    ACTOR_MISSING,
    missing("consumer_id", _NO_CONSUMER),
    Rule("MISMATCH:consumer_id", "NOT EXISTS (SELECT 1 FROM consumers WHERE space_id = :space_id"
         " AND consumer_id = :consumer_id AND actor_id = :actor_id)", None, "INVALID_REQUEST",
         "consumer_id", "the consumer belongs to another actor"),
    missing("recipients.actor_ids", "EXISTS (SELECT 1 FROM json_each(:recipients) r WHERE NOT"
            " EXISTS (SELECT 1 FROM actors WHERE space_id = :space_id AND actor_id = r.value))"),
    missing("collections", "EXISTS (SELECT 1 FROM json_each(:collections) c WHERE NOT EXISTS"
            " (SELECT 1 FROM collections WHERE space_id = :space_id"
            " AND collection_id = json_extract(c.value, '$[0]')))"),
    missing("blob_references", "EXISTS (SELECT 1 FROM json_each(:blobs) j WHERE NOT EXISTS"
            " (SELECT 1 FROM blobs WHERE space_id = :space_id AND blob_id = j.value))"),
)


def issue_token(key: Key, now: int, space_id: str, token: TokenRow,
                result: dict[str, Any]) -> CommitPlan:
    params: dict[str, SqlValue] = {
        "space_id": space_id, "token_id": token.token_id, "digest": token.digest,
        "actor_id": token.actor_id, "consumer_id": token.consumer_id,
        "mode": "any" if token.recipients_any else "listed",
        "grant_fingerprint": token.grant_fingerprint, "expires_at": token.expires_at,
        "scopes": json_list(sorted(token.scopes)),
        "recipients": json_list(sorted(token.recipient_ids)),
        "collections": json_list(sorted(token.collections)),
        "blobs": json_list(sorted(token.blob_references)),
    }
    return admin_plan("issue_token", key, 201, result, ISSUE_TOKEN_RULES, params, [
        (f"""INSERT INTO tokens (token_id, token_digest, space_id, actor_id, consumer_id,
                 recipients_mode, grant_fingerprint, expires_at, created_at)
             SELECT :token_id, :digest, :space_id, :actor_id, :consumer_id, :mode,
                 :grant_fingerprint, :expires_at, :now WHERE {GUARD_OK}""", {}),
        (f"""INSERT INTO token_scopes (token_id, scope)
             SELECT :token_id, value FROM json_each(:scopes) WHERE {GUARD_OK}""", {}),
        (f"""INSERT INTO token_recipient_grants (token_id, space_id, recipient_actor_id)
             SELECT :token_id, :space_id, value FROM json_each(:recipients) WHERE {GUARD_OK}""",
         {}),
        (f"""INSERT INTO token_collection_grants (token_id, space_id, collection_id, action)
             SELECT :token_id, :space_id, json_extract(value, '$[0]'), json_extract(value, '$[1]')
             FROM json_each(:collections) WHERE {GUARD_OK}""", {}),
        (f"""INSERT INTO token_blob_reference_grants (token_id, space_id, blob_id)
             SELECT :token_id, :space_id, value FROM json_each(:blobs) WHERE {GUARD_OK}""", {}),
    ], now)


REVOKE_TOKEN_RULES = (
    missing("token_id", "NOT EXISTS (SELECT 1 FROM tokens WHERE token_id = :token_id)"),)


def revoke_token(key: Key, now: int, token_id: str) -> CommitPlan:
    """Revoke once; revoking a revoked token changes nothing and still succeeds."""
    params: dict[str, SqlValue] = {"token_id": token_id}
    return admin_plan("revoke_token", key, 200, None, REVOKE_TOKEN_RULES, params, [
        (f"""UPDATE tokens SET revoked_at = :now
             WHERE token_id = :token_id AND revoked_at IS NULL AND {GUARD_OK}""", {}),
    ], now, result_sql="""(SELECT json_object('token_id', token_id, 'revoked', json('true'))
        FROM tokens WHERE token_id = :token_id)""")


ADD_THREAD_MEMBERS_RULES = (
    missing("thread_id", "NOT EXISTS (SELECT 1 FROM threads WHERE space_id = :space_id"
            " AND thread_id = :thread_id)"),
    missing("actor_ids", "EXISTS (SELECT 1 FROM json_each(:actors) a WHERE NOT EXISTS"
            " (SELECT 1 FROM actors WHERE space_id = :space_id AND actor_id = a.value))"),
)


def add_thread_members(key: Key, now: int, space_id: str, thread_id: str,
                       actor_ids: Sequence[str]) -> CommitPlan:
    params: dict[str, SqlValue] = {"space_id": space_id, "thread_id": thread_id,
                                   "actors": json_list(sorted(set(actor_ids)))}
    return admin_plan("add_thread_members", key, 200, None, ADD_THREAD_MEMBERS_RULES, params, [
        (f"""INSERT INTO thread_members (space_id, thread_id, actor_id, added_at)
             SELECT :space_id, :thread_id, value, :now FROM json_each(:actors)
             WHERE {GUARD_OK} ON CONFLICT DO NOTHING""", {}),
    ], now, result_sql="""json_object('space_id', :space_id, 'thread_id', :thread_id,
        'member_ids', json((SELECT json_group_array(actor_id) FROM (SELECT actor_id
            FROM thread_members WHERE space_id = :space_id AND thread_id = :thread_id
            ORDER BY actor_id))))""")
