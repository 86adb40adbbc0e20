"""Every read names its columns after the fields of the dataclass that decodes it.

Each statement runs on an empty, migrated in-memory database; the names SQLite gives its
columns (the names D1 keys its row objects by) must be the decoding dataclass's fields, in order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.api import PRINCIPAL
from waypost.adapters.d1.driver import ColumnShapes
from waypost.reference.domain.memory_change import Open, Totals
from waypost.reference.storage import (
    acks,
    control,
    feed,
    listings,
    memory,
    messages,
    references,
    submissions,
    tokens,
    uploads,
)
from waypost.reference.storage.plan import CommitPlan, Statement, Verdict
from waypost.reference.storage.rows import names, select_list

KEY = ("space.create", "r", b"\0" * 32)


class _Reserving:
    """A driver stand-in that keeps the reservation plan instead of running it."""

    plan: CommitPlan

    async def run(self, plan: CommitPlan) -> list[tuple[Any, ...]]:
        self.plan = plan
        return [("UNAUTHENTICATED", None,
                 *([None] * (len(names(submissions.SubmissionRecord)) + 1)))]


def _reserve_outcome() -> Statement:
    driver = _Reserving()
    asyncio.run(submissions.reserve(driver, PRINCIPAL, 0, "message.send", "r",
                                    b"\0" * 32, "sub", "msg"))
    return driver.plan.outcome


def _shapes() -> Iterator[tuple[str, Statement, tuple[str, ...]]]:
    record = names(submissions.SubmissionRecord)
    verdict = names(Verdict)
    commit = memory.RevisionCommit("sub", "c", 0, "delta", None, b"\0" * 32, "upl")
    message = messages.MessageSend("r", b"\0" * 32, "sub", "msg", "thr", True, "fi", ["b"], None,
                                   "note", "s", "{}", [], None)
    slot = uploads.Slot("sub", "upl", "blb", "obj", 1, b"\0" * 32, "text/plain", None, 0)
    yield from [
        ("feed page", feed.page_statement(PRINCIPAL, 0, 51), names(feed.FeedRow)),
        ("feed page after the checkpoint", feed.page_statement(PRINCIPAL, None, 51),
         names(feed.FeedRow)),
        ("visible items", feed.visible_items_statement(PRINCIPAL, ["fi"]),
         names(feed.VisibleItem)),
        ("feed current", feed.current_statement(PRINCIPAL, 0), ("verdict",)),
        ("feed current and saved", feed.current_and_saved_statement(PRINCIPAL, 0),
         ("verdict", "sequence")),
        ("submission by key", submissions.lookup_statement(PRINCIPAL, "message.send", "r"),
         (*record, "sequence")),
        ("reservation", _reserve_outcome(), ("verdict", "details", *record, "sequence")),
        ("ack results", submissions.ack_items_statement("sub"), ("lines",)),
        ("failure recorded", submissions.record_failure(PRINCIPAL, 0, "sub", 400, "X", "").outcome,
         verdict),
        ("ack", acks.acknowledge(PRINCIPAL, 0, acks.AckWrite("r", b"\0" * 32, "sub", [], None,
                                                             "")).outcome,
         ("verdict", "details", *record, "sequence", "lines")),
        ("message send", messages.send_message(PRINCIPAL, 0, message).outcome,
         ("verdict", "details", *record, "sequence")),
        ("message", messages.message_statements("s1", "msg")[0], names(messages.MessageRow)),
        ("referenceable", references.referenceable_statement(PRINCIPAL, ["blb"]), ("blob_id",)),
        ("collection", memory.collection_statement("s1", "c"), names(memory.CollectionRow)),
        ("revision", memory.revision_statement("s1", "c", 1), names(memory.RevisionRow)),
        ("entries", memory.entries_statement("s1", "c", 1), names(memory.EntryRow)),
        ("entry page", memory.page_statement("s1", "c", 1, "", True, 10),
         names(memory.EntryRow)),
        ("publish staged", memory.stage(PRINCIPAL, 0, "sub", [], b"\0" * 32, 0).outcome, verdict),
        ("revision commit", memory.commit_revision(PRINCIPAL, 0, commit).outcome,
         ("verdict", "details", *record, "sequence")),
        ("manifest page", memory.manifest_page_statement("s1", "c", 1, "", 10),
         ("item_id", "entry_kind", "entry_json")),
        *((f"publish outlook {n}", statement, fields) for n, (statement, fields) in enumerate(zip(
            memory.outlook_statements("s1", "c", ["a"], ["a.md"]),
            (names(memory.CollectionRow), names(Totals), names(Open), names(Open)),
            strict=True))),
        ("token", tokens.token_statement("tok_x"), names(tokens.TokenRecord)),
        ("upload", uploads.upload_statement("s1", "upl"), names(uploads.UploadRow)),
        ("upload by submission", uploads.upload_by_submission("sub"), names(uploads.UploadRow)),
        ("upload prepared", uploads.prepare(PRINCIPAL, 0, "r", b"\0" * 32, slot).outcome,
         ("verdict", "details", *record, "sequence",
          *(f"u_{name}" for name in names(uploads.UploadRow)))),
        ("upload stored", uploads.mark_stored("s1", "upl", 0).outcome, verdict),
        ("upload sealed", uploads.seal(PRINCIPAL, 0, "r", b"\0" * 32, "sub", "upl").outcome,
         ("verdict", "details", *record, "sequence",
          *(f"b_{name}" for name in names(uploads.BlobRow)))),
        ("upload cleaned", uploads.mark_cleaned("s1", "upl").outcome, verdict),
        ("uploads claimed", uploads.claim_expired(0).outcome, ("claimed",)),
        ("blob", uploads.blob_statement("s1", "blb"), names(uploads.BlobRow)),
        ("blob by id", uploads.blob_by_id("blb"), names(uploads.BlobRow)),
        ("blob readable", uploads.blob_readers_statement(PRINCIPAL, "blb"), ("readable",)),
        ("admin plan", control.revoke_token(KEY, 0, "tok_x").outcome,
         names(control.AdminOutcome)),
        ("spaces", listings.spaces(), names(listings.SpaceRow)),
        ("space", listings.space("s1"), names(listings.SpaceRow)),
        ("actors", listings.actors("s1"), names(listings.ActorRow)),
        ("consumers", listings.consumers("s1"), names(listings.ConsumerRow)),
        ("collections", listings.collections("s1"), names(memory.CollectionRow)),
        ("tokens", listings.tokens("s1"), names(listings.TokenListing)),
        ("threads", listings.threads("s1"), names(listings.ThreadRow)),
    ]


SHAPES = {name: (statement, fields) for name, statement, fields in _shapes()}


@pytest.fixture(scope="module")
def scratch() -> Iterator[ColumnShapes]:
    shapes = ColumnShapes()
    yield shapes
    shapes.close()


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_columns_are_the_fields_of_their_row_shape(scratch: ColumnShapes, name: str) -> None:
    statement, fields = SHAPES[name]
    cursor = scratch.scratch.execute(statement.sql, statement.params)
    assert tuple(column[0] for column in cursor.description or ()) == fields
    cursor.close()


def test_a_select_list_names_only_fields() -> None:
    with pytest.raises(ValueError, match="no fields"):
        select_list(Verdict, status="s.result_status")
