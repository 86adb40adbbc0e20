"""Read-only control-plane listings for operators and the dashboard (no secrets, no digests)."""

from __future__ import annotations

from waypost.reference.storage.plan import Statement, stmt


def spaces() -> Statement:
    return stmt("""SELECT space_id, display_name, source_uri, default_actor_id, created_at
                   FROM spaces ORDER BY space_id""")


def space(space_id: str) -> Statement:
    return stmt("""SELECT space_id, display_name, source_uri, default_actor_id, created_at
                   FROM spaces WHERE space_id = :space_id""", {"space_id": space_id})


def actors(space_id: str) -> Statement:
    return stmt("""SELECT actor_id, kind, display_name, disabled, authority_version, created_at
                   FROM actors WHERE space_id = :space_id ORDER BY actor_id""",
                {"space_id": space_id})


def consumers(space_id: str) -> Statement:
    return stmt("""SELECT c.consumer_id, c.actor_id, c.view, c.view_revision, c.disabled,
                       (SELECT json_group_array(json_array(dimension, value)) FROM
                           (SELECT dimension, value FROM consumer_filters f
                            WHERE f.space_id = c.space_id AND f.consumer_id = c.consumer_id
                            ORDER BY dimension, value)),
                       c.created_at
                   FROM consumers c WHERE c.space_id = :space_id ORDER BY c.consumer_id""",
                {"space_id": space_id})


def collections(space_id: str) -> Statement:
    return stmt("""SELECT collection_id, source_actor_id, scope, current_revision, created_at
                   FROM collections WHERE space_id = :space_id ORDER BY collection_id""",
                {"space_id": space_id})


def tokens(space_id: str) -> Statement:
    return stmt("""SELECT t.token_id, t.actor_id, t.consumer_id, t.grant_fingerprint,
                       t.expires_at, t.revoked_at, t.created_at,
                       (SELECT json_group_array(scope) FROM (SELECT scope FROM token_scopes s
                            WHERE s.token_id = t.token_id ORDER BY scope))
                   FROM tokens t WHERE t.space_id = :space_id ORDER BY t.token_id""",
                {"space_id": space_id})


def threads(space_id: str) -> Statement:
    return stmt("""SELECT t.thread_id, t.created_at,
                       (SELECT json_group_array(actor_id) FROM (SELECT actor_id
                            FROM thread_members m WHERE m.space_id = t.space_id
                            AND m.thread_id = t.thread_id ORDER BY actor_id))
                   FROM threads t WHERE t.space_id = :space_id ORDER BY t.thread_id""",
                {"space_id": space_id})
