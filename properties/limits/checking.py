"""What each limit's boundary check is made of (protocol.md §11): the requirement ids it
verifies, its two steps (N accepted, N + 1 refused and nothing moved), the sends and writers it
uses, texts of an exact size, and the re-read after each step. The checks themselves live in
``messages``, ``memory`` and ``manifest``; ``phase`` runs them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from waypost.properties.commands.messages import read_message, record_send
from waypost.properties.commands.reread import revision_rereads, view_rereads
from waypost.properties.model.state import Token
from waypost.properties.verdicts.owners import table
from waypost.properties.wire.http import Answer

if TYPE_CHECKING:
    from waypost.properties.commands.world import World

Check = Callable[["World", int], None]
_BOUNDARY = ("WP-LIM-1", "WP-LIM-3")
#: The rules each limit's boundary check verifies, the one that decides its property first.
RULES: dict[str, tuple[str, ...]] = {
    "ack_items": ("WP-RCPT-2", *_BOUNDARY),
    "recipients": ("WP-MSG-2", *_BOUNDARY),
    "attachments": ("WP-MSG-8", *_BOUNDARY),
    "subject_bytes": ("WP-VAL-17", *_BOUNDARY, "WP-LIM-2"),
    "body_text_bytes": ("WP-MSG-7", *_BOUNDARY),
    "metadata_bytes": ("WP-VAL-18", *_BOUNDARY, "WP-LIM-2"),
    "request_bytes": ("WP-LIM-4", *_BOUNDARY),
    "inline_items_per_publish": ("WP-MEM-6", *_BOUNDARY),
    "memory_entries_per_revision": ("WP-MEM-13", "WP-MEM-28", *_BOUNDARY),
    "manifest_input_bytes": ("WP-MEM-28", *_BOUNDARY),
    "revision_manifest_bytes": ("WP-MEM-31", *_BOUNDARY),
    "upload_bytes": ("WP-UPL-1", *_BOUNDARY),
    "page_limit": ("WP-FEED-6", *_BOUNDARY),
    "wait_seconds": ("WP-FEED-7", *_BOUNDARY),
}


#: The page limit of a revision's item pages (P13), beside the feed's (P06).
ITEM_PAGES = ("WP-MEM-23", *_BOUNDARY)
#: The limits of a send itself (the sends of other limits' checks only set the scene).
SEND_LIMITS = frozenset({"recipients", "attachments", "subject_bytes", "body_text_bytes",
                         "metadata_bytes", "request_bytes"})


@dataclass(frozen=True)
class Limit:
    """A published limit the kit checks, and what the check does at N and at N + 1."""

    name: str
    what: str
    check: Check
    #: a check that moves tens of MiB (``revision_manifest_bytes``): the quick profile leaves
    #: it to the ci and thorough profiles
    heavy: bool = False

    @property
    def properties(self) -> tuple[str, ...]:
        """The properties of the rules its check verifies (:data:`RULES`)."""
        rules = (*RULES[self.name], *(ITEM_PAGES if self.name == "page_limit" else ()))
        return tuple(sorted({owner for rid in rules if (owner := table()[rid])}))


@contextmanager
def step(world: World, which: str) -> Iterator[None]:
    """One boundary step, ``at`` (N accepted) or ``over`` (N + 1 refused): it holds if no
    check failed inside it, nor in an earlier step of its kind (a raised violation leaves it
    failed)."""
    before, prior = world.ledger.failures, world.boundary.get(which, True)
    world.boundary[which] = False
    yield
    world.boundary[which] = prior and world.ledger.failures == before


def expect_limit(world: World, answer: Answer, limit: str, value: int, what: str,
                 shape_rule: bool = False, ids: tuple[str, ...] | None = None) -> bool:
    """``413 RESOURCE_LIMIT`` with ``details.limit`` = ``limit`` and ``details.max`` = the
    published value; where the protocol calls the bound a shape rule (``limit`` and ``wait``
    of reads), ``400 INVALID_REQUEST`` naming the field also conforms."""
    error = answer.json.get("error") if isinstance(answer.json, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    details = details if isinstance(details, dict) else {}
    named = answer.status == 413 and answer.code == "RESOURCE_LIMIT" \
        and details.get("limit") == limit and details.get("max") == value
    shaped = shape_rule and answer.status == 400 and answer.code == "INVALID_REQUEST"
    return world.check(ids or RULES[limit], named or shaped,
                       f"{what} past the published {limit} = {value} must be refused with "
                       f"RESOURCE_LIMIT naming the limit, got {answer.status} {answer.code}",
                       answer=answer.json)


def reread(world: World, heads_only: bool = False) -> None:
    """Every live view from its checkpoint and every revision (``heads_only``: each
    collection's head, where the older revisions were read when they were new and a step can
    only have added one), compared with the model: what a step accepted is all there, what it
    refused left no item, receipt, revision or checkpoint."""
    for command, args in [*view_rereads(world), *revision_rereads(world, heads_only)]:
        command(world, **args)


def send_body(world: World, **fields: Any) -> dict[str, Any]:
    """A valid send from a0 to a1 in a new thread, with ``fields`` replaced."""
    return {"request_id": world.rid(), "recipient_ids": ["a1"], "thread": {"new": True},
            "kind": "info", "subject": "limit", "body": {"text": "at the limit"}, **fields}


def accepted_send(world: World, sender: Token, body: dict[str, Any], limit: str, value: int,
                  raw: bytes | None = None, read: bool = True) -> None:
    """A send at exactly the limit publishes, and its message reads back as sent (P05)."""
    answer = world.as_(sender, "POST", "/v1/messages", body, raw=raw)
    if not world.check(RULES[limit] if limit in SEND_LIMITS else "WP-MSG-9", answer.status == 201,
                       f"a send at exactly {limit} = {value} must publish, got "
                       f"{answer.status} {answer.code}", answer=answer.json):
        return
    record_send(world, sender, body, answer.json, first=answer.replayed)
    if read:
        read_message(world, sender.handle, len(world.message_order) - 1)


def refused_send(world: World, sender: Token, body: dict[str, Any], limit: str, value: int,
                 raw: bytes | None = None) -> None:
    """A send one past the limit is refused naming it, and publishes nothing (P05)."""
    answer = world.as_(sender, "POST", "/v1/messages", body, raw=raw)
    expect_limit(world, answer, limit, value, "a send")
    reread(world)


def full_token(world: World, actor: str) -> Token:
    """The example's full data-plane token of ``actor`` (space A): send, read, ACK, blobs."""
    space = world.space_ids["A"]
    return next(t for t in world.model.tokens.values() if t.space == space
                and t.actor_id == actor and t.has("message.send"))


def writer_of(world: World, collection: str) -> Token:
    """The example's token that writes ``collection`` (space A)."""
    space = world.space_ids["A"]
    return next(t for t in world.model.tokens.values() if t.space == space
                and t.may(collection, "write"))


def edge_text(size: int, last: str = "\U0001f600") -> str:
    """``size`` bytes of UTF-8 ending in the multi-byte character ``last`` (fewer characters
    than bytes: a server counting characters lets one byte too many through)."""
    width = len(last.encode())
    return "a" * (size - width) + last if size >= width else "a" * size
