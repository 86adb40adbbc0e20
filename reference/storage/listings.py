"""Read-only control-plane listings for operators and the dashboard (no secrets, no digests)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from waypost.reference.storage.memory import COLLECTION_COLUMNS
from waypost.reference.storage.plan import Row, Statement, stmt
from waypost.reference.storage.rows import decode, select_list


@dataclass(frozen=True)
class SpaceRow:
    space_id: str
    display_name: str
    source_uri: str
    default_actor_id: str
    created_at: int


@dataclass(frozen=True)
class ActorRow:
    actor_id: str
    kind: str
    display_name: str
    disabled: bool
    authority_version: int
    created_at: int


@dataclass(frozen=True)
class ConsumerRow:
    consumer_id: str
    actor_id: str
    view: str
    view_revision: int
    disabled: bool
    #: the filter as ``[dimension, value]`` pairs, ordered
    filter_pairs: tuple[tuple[str, str], ...]
    created_at: int


@dataclass(frozen=True)
class TokenListing:
    """A token without its secret's digest."""

    token_id: str
    actor_id: str
    consumer_id: str
    grant_fingerprint: bytes
    expires_at: int | None
    revoked_at: int | None
    created_at: int
    scopes: tuple[str, ...]


@dataclass(frozen=True)
class ThreadRow:
    thread_id: str
    created_at: int
    member_ids: tuple[str, ...]


def _json_tuple(text: str) -> tuple[object, ...]:
    """A JSON list column as a tuple (inner lists as tuples too)."""
    return tuple(tuple(v) if isinstance(v, list) else v for v in json.loads(text))


_SPACE_COLUMNS = select_list(SpaceRow)


#: ``limit`` of a whole listing (SQLite reads a negative LIMIT as none).
ALL = -1


#: The source URIs of the spaces the conformance kit and its phases create (docs/dashboard.md).
KIT_SOURCES = ("waypost-kit://", "waypost://kit/", "waypost-crash://")
KIT_SPACE = " OR ".join(f"substr(source_uri, 1, {len(p)}) = '{p}'" for p in KIT_SOURCES)


def spaces(after: str = "", limit: int = ALL, containing: str = "",
           kit: bool = True) -> Statement:
    """Spaces by id after ``after``, at most ``limit``; only those whose id or name holds
    ``containing`` (any case), and without the kit's spaces unless ``kit``."""
    return stmt(f"""SELECT {_SPACE_COLUMNS} FROM spaces WHERE space_id > :after
                      AND (:containing = '' OR instr(lower(space_id), lower(:containing)) > 0
                           OR instr(lower(display_name), lower(:containing)) > 0)
                      AND (:kit = 1 OR NOT ({KIT_SPACE}))
                    ORDER BY space_id LIMIT :limit""",
                {"after": after, "limit": limit, "containing": containing, "kit": int(kit)})


def space(space_id: str) -> Statement:
    return stmt(f"SELECT {_SPACE_COLUMNS} FROM spaces WHERE space_id = :space_id",
                {"space_id": space_id})


def space_from(row: Row) -> SpaceRow:
    """Decode a row of the listing of spaces."""
    return decode(SpaceRow, row)


def actors(space_id: str) -> Statement:
    return stmt(f"""SELECT {select_list(ActorRow)}
                   FROM actors WHERE space_id = :space_id ORDER BY actor_id""",
                {"space_id": space_id})


def actor(space_id: str, actor_id: str) -> Statement:
    """One actor of the space (none if it has no such actor), decoded by :func:`actor_from`."""
    return stmt(f"""SELECT {select_list(ActorRow)}
                   FROM actors WHERE space_id = :space_id AND actor_id = :actor_id""",
                {"space_id": space_id, "actor_id": actor_id})


def actor_from(row: Row) -> ActorRow:
    """Decode a row of the listing of actors."""
    return decode(ActorRow, row, disabled=bool)


def consumers(space_id: str) -> Statement:
    columns = select_list(ConsumerRow, "c.", filter_pairs="""(
        SELECT json_group_array(json_array(dimension, value)) FROM
            (SELECT dimension, value FROM consumer_filters f
             WHERE f.space_id = c.space_id AND f.consumer_id = c.consumer_id
             ORDER BY dimension, value))""")
    return stmt(f"""SELECT {columns}
                   FROM consumers c WHERE c.space_id = :space_id ORDER BY c.consumer_id""",
                {"space_id": space_id})


def consumer_from(row: Row) -> ConsumerRow:
    """Decode a row of the listing of consumers."""
    return decode(ConsumerRow, row, disabled=bool, filter_pairs=_json_tuple)


def collections(space_id: str) -> Statement:
    """The space's collections, decoded by ``memory.collection_from``."""
    return stmt(f"""SELECT {COLLECTION_COLUMNS}
                   FROM collections WHERE space_id = :space_id ORDER BY collection_id""",
                {"space_id": space_id})


def tokens(space_id: str, after: str = "", limit: int = ALL) -> Statement:
    """The space's tokens by id after ``after``, at most ``limit``."""
    columns = select_list(TokenListing, "t.", scopes="""(
        SELECT json_group_array(scope) FROM (SELECT scope FROM token_scopes s
            WHERE s.token_id = t.token_id ORDER BY scope))""")
    return stmt(f"""SELECT {columns} FROM tokens t
                   WHERE t.space_id = :space_id AND t.token_id > :after
                   ORDER BY t.token_id LIMIT :limit""",
                {"space_id": space_id, "after": after, "limit": limit})


def token_from(row: Row) -> TokenListing:
    """Decode a row of the listing of tokens."""
    return decode(TokenListing, row, scopes=_json_tuple)


def threads(space_id: str, after: str = "", limit: int = ALL) -> Statement:
    """The space's threads by id after ``after``, at most ``limit``."""
    columns = select_list(ThreadRow, "t.", member_ids="""(
        SELECT json_group_array(actor_id) FROM (SELECT actor_id
            FROM thread_members m WHERE m.space_id = t.space_id
            AND m.thread_id = t.thread_id ORDER BY actor_id))""")
    return stmt(f"""SELECT {columns} FROM threads t
                   WHERE t.space_id = :space_id AND t.thread_id > :after
                   ORDER BY t.thread_id LIMIT :limit""",
                {"space_id": space_id, "after": after, "limit": limit})


def thread_from(row: Row) -> ThreadRow:
    """Decode a row of the listing of threads."""
    return decode(ThreadRow, row, member_ids=_json_tuple)
