"""A publish decided from what its input names equals the plain definitions on the whole state
(protocol.md §9.3–9.4): the same refusals, the same unchanged verdict, the manifest size the
streamed manifest really has, and the streamed manifest and fingerprint byte for byte."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from waypost.reference.domain.canonical import canonical_json
from waypost.reference.domain.errors import InvalidRequest, ResourceLimit
from waypost.reference.domain.memory_change import (
    Open,
    StateMerger,
    Totals,
    decide,
    manifest_head,
    manifest_tail,
)
from waypost.reference.domain.memory_state import (
    Entry,
    ItemInput,
    manifest,
    next_state,
    state_fingerprint,
)
from waypost.reference.domain.published_limits import Limits

IDS = st.sampled_from([f"i{n}" for n in range(8)])
PATHS = st.sampled_from(["a.md", "b/\u00e9.md", 'q"uote.md', "d\x7f.md", "e.md"])
METADATA = st.sampled_from([None, {}, {"k": 1}, {"z": [1, 2.5], "a": "\u00fc\n"}])


@st.composite
def parents(draw: Any) -> dict[str, Entry]:
    """A valid state: unique active paths, tombstones from earlier revisions."""
    state: dict[str, Entry] = {}
    used: set[str] = set()
    for item_id in sorted(draw(st.sets(IDS, max_size=6))):
        path = draw(PATHS)
        if draw(st.booleans()) and path not in used:
            used.add(path)
            state[item_id] = Entry(item_id, path, "blb_x", draw(METADATA) or {})
        else:
            state[item_id] = Entry(item_id, deleted_in_revision=draw(st.integers(1, 3)))
    return state


@st.composite
def changes(draw: Any) -> tuple[str, list[ItemInput], list[str]]:
    mode = draw(st.sampled_from(["delta", "snapshot"]))
    ids = sorted(draw(st.sets(IDS, max_size=4)))
    paths = draw(st.lists(PATHS, min_size=len(ids), max_size=len(ids), unique=True))
    items = [ItemInput(i, p, draw(st.sampled_from(["blb_x", "blb_y"])), draw(METADATA))
             for i, p in zip(ids, paths, strict=True)]
    deletes = [] if mode == "snapshot" else sorted(draw(st.sets(IDS, max_size=3)) - set(ids))
    return mode, items, deletes


def _row_json(entry: Entry) -> str:
    return canonical_json(entry.public()).decode()


def _open(entry: Entry) -> Open:
    return Open(entry.item_id, entry.active, entry.path, entry.blob_id,
                None if entry.metadata is None else canonical_json(entry.metadata).decode(),
                len(_row_json(entry).encode()))


def _as_database_shows(parent: dict[str, Entry], items: list[ItemInput],
                       deletes: list[str]) -> tuple[dict[str, Open], dict[str, Open], Totals]:
    named = {i: _open(parent[i]) for i in [x.item_id for x in items] + deletes if i in parent}
    paths = {x.path for x in items}
    on_paths = {e.path: _open(e) for e in parent.values() if e.active and e.path in paths
                and e.path is not None}
    opened = [_open(e) for e in parent.values()]
    totals = Totals(len(opened), sum(o.entry_bytes for o in opened),
                    sum(o.active for o in opened),
                    sum(o.entry_bytes for o in opened if o.active),
                    sum(len(o.item_id) for o in opened if o.active))
    return named, on_paths, totals


def _streamed(parent: dict[str, Entry], mode: str, items: list[ItemInput], deletes: list[str],
              revision: int, page: int) -> tuple[bytes, bytes]:
    merger = StateMerger(mode, items, deletes, revision)
    rows = [(e.item_id, "active" if e.active else "tombstone", _row_json(e))
            for e in sorted(parent.values(), key=lambda e: e.item_id)]
    pairs = []
    for start in range(0, len(rows), page):
        pairs += list(merger.feed(rows[start:start + page]))
    pairs += list(merger.close())
    document = (manifest_head("notes") + b",".join(p for p, _ in pairs)
                + manifest_tail(revision, revision - 1))
    return document, hashlib.sha256(b"[" + b",".join(f for _, f in pairs) + b"]").digest()


@given(parents(), changes(), st.integers(1, 4))
def test_decided_from_the_named_rows_as_from_the_whole_state(
        parent: dict[str, Entry], change: tuple[str, list[ItemInput], list[str]],
        page: int) -> None:
    mode, items, deletes = change
    expected, revision = 4, 5
    named, on_paths, totals = _as_database_shows(parent, items, deletes)
    refused: InvalidRequest | None = None
    try:
        wanted = next_state(parent, mode, items, deletes, revision)
    except InvalidRequest as error:
        refused = error
    if refused is not None:
        with pytest.raises(InvalidRequest) as raised:
            decide("notes", expected, mode, items, deletes, named, on_paths, totals, Limits())
        assert raised.value.details == refused.details
        return
    decision = decide("notes", expected, mode, items, deletes, named, on_paths, totals,
                      Limits())
    document = manifest("notes", revision, expected, wanted)
    assert decision.unchanged == (state_fingerprint(wanted.values())
                                  == state_fingerprint(parent.values()))
    assert decision.entries == len(wanted)
    assert decision.manifest_bytes == len(document)
    assert _streamed(parent, mode, items, deletes, revision, page) == (
        document, state_fingerprint(wanted.values()))


def test_a_revision_past_its_published_manifest_size_is_refused() -> None:
    parent = {"a": Entry("a", "a.md", "blb_x", {})}
    items = [ItemInput("b", "b.md", "blb_x", {"k": "v" * 100})]
    named, on_paths, totals = _as_database_shows(parent, items, [])
    size = decide("notes", 1, "delta", items, [], named, on_paths, totals,
                  Limits()).manifest_bytes
    at = Limits(revision_manifest_bytes=size)
    assert decide("notes", 1, "delta", items, [], named, on_paths, totals, at).entries == 2
    with pytest.raises(ResourceLimit) as over:
        decide("notes", 1, "delta", items, [], named, on_paths, totals,
               Limits(revision_manifest_bytes=size - 1))
    assert over.value.details["limit"] == "revision_manifest_bytes"
