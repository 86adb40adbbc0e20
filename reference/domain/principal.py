"""Who is asking: the authenticated facts of one request (protocol.md §4).

A principal is where a request starts, not a permit: every write re-checks the token, actor,
consumer and grants inside its commit plan.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from waypost.reference.domain.canonical import digest
from waypost.reference.domain.grants import Grants

FILTER_DIMENSIONS = ("producer_ids", "thread_ids", "item_types", "collection_ids")


@dataclass(frozen=True)
class ConsumerView:
    """A consumer's fixed view: ``inbox`` or ``space_log``, its revision and its filter."""

    consumer_id: str
    view: str
    view_revision: int
    filter: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @cached_property
    def filter_fingerprint(self) -> str:
        """SHA-256(JCS(filter)) over the non-empty dimensions, each sorted, in hex (computed
        once: every cursor minted or checked for the view carries it)."""
        return digest({dim: sorted(vals) for dim, vals in sorted(self.filter.items()) if vals}).hex()


@dataclass(frozen=True)
class Principal:
    """An authenticated token with its actor, consumer and effective grants."""

    token_id: str
    space_id: str
    actor_id: str
    actor_authority_version: int
    consumer: ConsumerView
    grants: Grants
    grant_fingerprint: bytes
    expires_at: int | None

    def has(self, scope: str) -> bool:
        return scope in self.grants.scopes
