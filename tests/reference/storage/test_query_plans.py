"""Look-ups use indexes: ``EXPLAIN QUERY PLAN`` shows no full-table scan (docs/schema.md)."""

from __future__ import annotations

import pytest

from tests.support.api import PRINCIPAL, Api
from waypost.adapters.sqlite.driver import SqliteDriver
from waypost.reference.server import served_context
from waypost.reference.storage import feed, memory, submissions
from waypost.reference.storage.plan import Statement, stmt

STATEMENTS: dict[str, Statement] = {
    "feed page": feed.page_statement(PRINCIPAL, 0, 51),
    "feed page after the checkpoint": feed.page_statement(PRINCIPAL, None, 51),
    "ack visibility": feed.visible_items_statement(PRINCIPAL, ["fi_a", "fi_b"]),
    "current and saved checkpoint": feed.current_and_saved_statement(PRINCIPAL, 0),
    "submission by key": submissions.lookup_statement(PRINCIPAL, "message.send", "r"),
    "ack results": submissions.ack_items_statement("sub_x"),
    "receipt by consumer and item": stmt(
        "SELECT stage, version FROM receipts WHERE space_id = :s AND consumer_id = :c"
        " AND subject_item_id = :i", {"s": "s1", "c": "bob-inbox", "i": "fi_a"}),
    "token by id": stmt("SELECT token_digest FROM tokens WHERE token_id = :t", {"t": "tok_x"}),
    "token by digest": stmt("SELECT token_id FROM tokens WHERE token_digest = :d",
                            {"d": b"\0" * 32}),
    "revision item page": memory.page_statement("s1", "notes", 3, "a", True, 51),
    "manifest page": memory.manifest_page_statement("s1", "notes", 3, "a", 512),
    **{f"publish outlook {n}": statement for n, statement in enumerate(
        memory.outlook_statements("s1", "notes", ["a", "b"], ["a.md"]))},
    **{f"{mode} commit, write {n}": statement for mode in ("delta", "snapshot")
       for n, statement in enumerate(memory.commit_revision(PRINCIPAL, 0, memory.RevisionCommit(
           "sub_x", "notes", 1, mode, b"\0" * 32, b"\0" * 32, "upl_x")).writes)
       if "memory_entries" in statement.sql},
}


@pytest.mark.parametrize("name", sorted(STATEMENTS))
def test_no_full_table_scan(api: Api, name: str) -> None:
    api.must_send("s1/alice", recipient_ids=["bob"])
    driver = served_context(api.client.app).driver
    assert isinstance(driver, SqliteDriver)
    details = driver.explain(STATEMENTS[name])
    scans = [line for line in details if line.startswith("SCAN") and "json_each" not in line
             and "CONSTANT ROW" not in line
             and not line.startswith("SCAN (subquery")]
    assert scans == [], details


def test_a_page_of_a_fixed_revision_is_one_range_of_the_primary_key(api: Api) -> None:
    """Rows are valid over ranges of revisions (docs/schema.md): a page of revision r walks
    the collection's primary key from its cursor in item_id order and keeps the row of each
    item valid at r; it never sorts, and never reads another index."""
    driver = served_context(api.client.app).driver
    assert isinstance(driver, SqliteDriver)
    assert driver.explain(memory.page_statement("s1", "notes", 3, "a", False, 51)) == [
        "SEARCH memory_entries USING INDEX sqlite_autoindex_memory_entries_1"
        " (space_id=? AND collection_id=? AND item_id>?)"]


def test_a_page_of_the_head_for_a_manifest_is_one_range_of_the_open_rows(api: Api) -> None:
    """A manifest is built from the head's entries: the open rows, one range of their index
    in item_id order, however many closed rows the collection's history holds."""
    driver = served_context(api.client.app).driver
    assert isinstance(driver, SqliteDriver)
    assert driver.explain(memory.manifest_page_statement("s1", "notes", 3, "a", 512)) == [
        "SEARCH memory_entries USING INDEX memory_entries_open"
        " (space_id=? AND collection_id=? AND item_id>?)"]
