"""The limit phase of a run: every limit the target's ``/v1/describe`` publishes is checked at
its boundary (protocol.md §11), once per run, in a fresh example of its own: input of exactly
the limit, otherwise valid and sent with a token that holds the scope, is accepted and fully
applied; one more is refused (``RESOURCE_LIMIT`` naming the limit) and nothing moves. After each
step every view and revision is re-read against the model.

Each check is one command, ``check_limit {limit, value}``, so a failure's replay file reruns
it; the checks themselves live in ``limit_messages`` and ``limit_memory``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from waypost.properties.control import published_limits
from waypost.properties.fixtures import FixturesExhausted, setup_args
from waypost.properties.http import Answer, NeedsAdmin, Session
from waypost.properties.messages import read_message, record_send
from waypost.properties.model import Token
from waypost.properties.owners import table
from waypost.properties.violations import Ledger

if TYPE_CHECKING:
    from waypost.properties.world import World

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


def unreachable(name: str, value: int, published: dict[str, int]) -> str | None:
    """Why a published limit cannot be reached through the others, if it cannot: a manifest
    input arrives as an uploaded blob, so one of N + 1 bytes needs ``upload_bytes`` > N."""
    upload = published.get("upload_bytes")
    if name == "manifest_input_bytes" and upload is not None and upload <= value:
        return (f"a manifest of N+1 bytes cannot be uploaded: upload_bytes = {upload}, so "
                "this limit is never the one that refuses")
    if name == "revision_manifest_bytes":
        from waypost.properties.limit_manifest import unreachable_manifest

        return unreachable_manifest(value, published)
    return None


#: Published limits that bound no input (nothing to send N + 1 of), with why.
NOT_INPUT = {"upload_expiry_seconds": "a duration, not an input bound (P15's expiry checks "
                                      "move the clock instead)"}


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
    from waypost.properties import feed, revisions
    from waypost.properties.reread import revision_rereads, view_rereads

    commands: dict[str, Callable[..., None]] = {"check_view": feed.check_view,
                                                "read_revision": revisions.read_revision}
    for name, args in [*view_rereads(world), *revision_rereads(world, heads_only)]:
        commands[name](world, **args)


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


def registry() -> dict[str, Limit]:
    """Every limit the kit knows how to check, in report order."""
    from waypost.properties import limit_manifest, limit_memory, limit_messages

    return {limit.name: limit for limit in (*limit_messages.LIMITS, *limit_memory.LIMITS,
                                            *limit_manifest.LIMITS)}


def check_limit(world: World, limit: str, value: int) -> None:
    """The command: the boundary check of ``limit`` at its published ``value``."""
    registry()[limit].check(world, value)


@dataclass
class LimitOutcome:
    """One row of the report's limits table."""

    name: str
    value: int | None  # None: the target publishes no value
    properties: tuple[str, ...]
    at_limit: str  # accepted, FAIL, not reached, or "" when not checked
    over_limit: str  # refused, FAIL, not reached, or ""
    result: str  # pass, fail, xfail, not published, not checked, skipped
    note: str = ""
    replay: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"limit": self.name, "value": self.value, "properties": list(self.properties),
                "accepted_at_limit": self.at_limit or None,
                "refused_above_limit": self.over_limit or None, "result": self.result,
                "note": self.note, "replay": self.replay}


Failed = Callable[[BaseException, "World"], str]  # writes a replay file, returns its path


def limit_phase(session: Session, prefix: str, ledger: Ledger, selected: set[str] | None,
                on_failure: Failed, light: bool = False) -> list[LimitOutcome]:
    """Check every limit the target publishes, each in a fresh example of its own; a limit
    the kit knows and the target does not publish is reported, never guessed. ``light`` (the
    quick profile) leaves the heavy checks to the longer profiles and says so."""
    from waypost.properties.world import World

    published = published_limits(session.describe().json)
    known = registry()
    names = [*known, *NOT_INPUT, *sorted(set(published) - set(known) - set(NOT_INPUT))]
    rows = []
    for n, name in enumerate(names):
        limit = known.get(name)
        row = LimitOutcome(name, published.get(name), limit.properties if limit else (), "", "",
                           "not checked", NOT_INPUT.get(name, "the kit has no check for it"))
        if name not in published:
            row.result, row.note = "not published", "describe publishes no value for it"
        elif limit is not None and selected is not None and not selected & set(
                limit.properties):
            row.result, row.note = "skipped", ""
        elif (why := unreachable(name, published[name], published)) is not None:
            row.note = why
        elif limit is not None and limit.heavy and light:
            row.note = (f"{limit.what}: the ci and thorough profiles check it (it moves about "
                        f"{published[name] * 8 // (1 << 20)} MiB)")
        elif limit is not None:
            row.note = limit.what
            world = World(session, f"{prefix}-l{n}-", ledger)
            _check(world, row, on_failure)
        rows.append(row)
    return rows


def _check(world: World, row: LimitOutcome, on_failure: Failed) -> None:
    """Run one limit's check; the row says what each step showed."""
    assert row.value is not None
    try:
        world.run("setup", setup_args(world))
        world.run("check_limit", {"limit": row.name, "value": row.value})
    except (NeedsAdmin, FixturesExhausted) as missing:  # a run through fixtures
        row.result, row.note = "not run", str(missing)
        return
    except Exception as error:  # a violation, or an error of the kit or the server
        row.replay = on_failure(error, world)
        row.note = str(error)[:300]
        row.result = "fail"
    marks = {True: "accepted", False: "FAIL", None: "not reached"}
    row.at_limit = marks[world.boundary.get("at")]
    row.over_limit = {**marks, True: "refused"}[world.boundary.get("over")]
    if row.result != "fail":
        row.result = "pass" if all(world.boundary.get(s) for s in ("at", "over")) else "xfail"
