"""The kit's checks of the ambiguities protocol.md now settles (``test_ambiguities.py`` holds
the reference to them): where the contract allows two answers, a server giving the other one
passes; where it fixes one, a server breaking it fails the check that looks for it, naming the
requirement. The heads that do not parse go over real connections."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient
from starlette.types import Scope

from tests.support.front_ends import Answer, wrapping
from tests.support.inprocess import kit_client
from tests.support.threaded_server import serving_app
from waypost.conformance import hostile_phase as hostile
from waypost.reference.http.connection_limits import ConnectionLimits, limited_protocol
from waypost.reference.server import Settings, build_app
from waypost.reference.storage import feed as feed_sql

Before = Callable[[Scope, bytes], Answer | None]
After = Callable[[Scope, bytes, Answer], Answer]
UPLOAD = re.compile(r"^/v1/uploads/([^/]+)/")


def _json(status: int, data: Any) -> Answer:
    return status, [(b"content-type", b"application/json")], json.dumps(data).encode()


def _error(status: int, code: str, details: dict[str, Any]) -> Answer:
    return _json(status, {"error": {"code": code, "message": code.lower(), "details": details}})


def _details(answer: Answer) -> dict[str, Any] | None:
    if answer[0] < 400:
        return None
    try:
        details = json.loads(answer[2])["error"]["details"]
    except (ValueError, KeyError, TypeError):
        return None
    return details if isinstance(details, dict) else None


def _bearer(scope: Scope) -> bytes:
    return dict(scope["headers"]).get(b"authorization", b"")


def _run(tmp_path: Path, kit_admin: str, check: str, before: Before | None = None,
         after: After | None = None) -> hostile.HostileRow:
    settings = Settings(tmp_path / "data", kit_admin, synchronous="NORMAL", sweep_seconds=0)
    with TestClient(wrapping(build_app(settings), before, after)) as server:
        (row,) = hostile.run_checks(kit_client(server), kit_admin, "amb", only=(check,))
    return row


# ----- answers the contract allows besides the reference's -------------------------------------


def missing_ids_are_400(scope: Scope, body: bytes, answer: Answer) -> Answer:
    """A token issue for a missing actor or consumer: 400 naming consumer_id (WP-CTRL-11)."""
    details = _details(answer)
    if scope["path"].endswith("/tokens") and answer[0] == 404 and details is not None \
            and details.get("field") in ("actor_id", "consumer_id"):
        return _error(400, "INVALID_REQUEST", {"field": "consumer_id"})
    return answer


def huge_numbers_unreadable(scope: Scope, body: bytes) -> Answer | None:
    """A number beyond a double is a body the server cannot read (WP-VAL-19)."""
    if b"1e400" in body or b"0" * 400 in body:
        return _error(400, "INVALID_REQUEST", {"field": "body"})
    return None


def collisions_named_by_element(scope: Scope, body: bytes, answer: Answer) -> Answer:
    """A repeated attachment or item_id named by the element at fault (WP-ERR-8)."""
    details = _details(answer)
    element = {"attachment_ids": "attachment_ids[1]", "items": "items[1].item_id"}
    if answer[0] == 400 and details is not None and details.get("field") in element:
        return _error(400, "INVALID_REQUEST", {"field": element[details["field"]]})
    return answer


def invisible_uploads() -> tuple[None, After]:
    """A write without blob.write to an upload not the caller's, or missing: 404 alike, the
    caller's own: 403 (WP-AUTH-14)."""
    actors: dict[bytes, str] = {}
    owners: dict[str, str] = {}

    def after(scope: Scope, body: bytes, answer: Answer) -> Answer:
        if scope["path"].endswith("/tokens") and answer[0] == 201:
            token = json.loads(answer[2])["token"]
            actors[b"Bearer " + token.encode()] = json.loads(body)["actor_id"]
        actor = actors.get(_bearer(scope), "")
        if scope["path"] == "/v1/blobs" and answer[0] == 201:
            owners[json.loads(answer[2])["upload_id"]] = actor
        found = UPLOAD.match(scope["path"])
        if found and answer[0] == 403 and owners.get(found.group(1)) != actor:
            return _error(404, "NOT_FOUND", {})
        return answer
    return None, after


@pytest.mark.parametrize(("check", "front"), [
    ("token_issue", (None, missing_ids_are_400)),
    ("control_failures", (None, missing_ids_are_400)),
    ("numbers", (huge_numbers_unreadable, None)),
    ("field_names", (None, collisions_named_by_element)),
    ("scope_or_invisible", invisible_uploads()),
], ids=["token-400", "failures-400", "numbers-body", "fields-element", "uploads-404"])
def test_the_other_allowed_answer_passes(tmp_path: Path, kit_admin: str, check: str,
                                         front: tuple[Before | None, After | None]) -> None:
    row = _run(tmp_path, kit_admin, check, *front)
    assert (row.result, row.message) == ("pass", ""), row.message


# ----- answers the contract does not allow ------------------------------------------------------


def refusals_recorded() -> tuple[Before, After]:
    """A refused send or commit is replayed to its request_id (WP-IDEM-11)."""
    kept: dict[tuple[str, Any, bytes], Answer] = {}

    def key(scope: Scope, body: bytes) -> tuple[str, Any, bytes]:
        return scope["path"], json.loads(body or b"{}").get("request_id"), _bearer(scope)

    def before(scope: Scope, body: bytes) -> Answer | None:
        found = kept.get(key(scope, body)) if scope["method"] == "POST" else None
        return None if found is None else (found[0], [*found[1], (b"waypost-replayed",
                                                                  b"true")], found[2])

    def after(scope: Scope, body: bytes, answer: Answer) -> Answer:
        if scope["method"] == "POST" and answer[0] in (404, 409, 422) and (
                scope["path"] == "/v1/messages" or scope["path"].endswith("/commit")):
            kept[key(scope, body)] = answer
        return answer
    return before, after


def grants_need_the_scope() -> tuple[Before, After]:
    """A listed blob is read only through a token that also holds blob.reference."""
    listed: dict[bytes, set[str]] = {}

    def after(scope: Scope, body: bytes, answer: Answer) -> Answer:
        if scope["path"].endswith("/tokens") and answer[0] == 201:
            asked = json.loads(body)
            if "blob.reference" not in asked["scopes"] and asked["blob_references"]:
                token = json.loads(answer[2])["token"]
                listed[b"Bearer " + token.encode()] = set(asked["blob_references"])
        return answer

    def before(scope: Scope, body: bytes) -> Answer | None:
        blobs = listed.get(_bearer(scope), set())
        if scope["path"].startswith("/v1/blobs/") and scope["path"].split("/")[3] in blobs:
            return _error(404, "NOT_FOUND", {})
        return None
    return before, after


def existence_before_scope() -> tuple[Before, After]:
    """An upload id that does not exist is 404 before the scope is looked at; another actor's
    upload 403: the answer tells that it exists (WP-AUTH-13, WP-AUTH-14)."""
    known: set[str] = set()

    def before(scope: Scope, body: bytes) -> Answer | None:
        found = UPLOAD.match(scope["path"])
        if found and found.group(1) not in known:
            return _error(404, "NOT_FOUND", {})
        return None

    def after(scope: Scope, body: bytes, answer: Answer) -> Answer:
        if scope["path"] == "/v1/blobs" and answer[0] == 201:
            known.add(json.loads(answer[2])["upload_id"])
        return answer
    return before, after


def fields_cut_at_arrays(scope: Scope, body: bytes, answer: Answer) -> Answer:
    """``details.field`` names the array, never the element (``items[1].path`` → ``items``)."""
    details = _details(answer)
    field = details.get("field") if details is not None else None
    if isinstance(field, str) and "[" in field:
        data = json.loads(answer[2])
        data["error"]["details"]["field"] = field.split("[")[0]
        return answer[0], answer[1], json.dumps(data).encode()
    return answer


def tokens_name_nothing(scope: Scope, body: bytes, answer: Answer) -> Answer:
    """A token issue's 404 names no field."""
    if scope["path"].endswith("/tokens") and answer[0] == 404:
        return _error(404, "NOT_FOUND", {})
    return answer


def huge_numbers_misnamed(scope: Scope, body: bytes) -> Answer | None:
    """``1e400`` refused naming a member that does not hold it."""
    return _error(400, "INVALID_REQUEST", {"field": "mode"}) if b"1e400" in body else None


def receipts_match_their_collection(mp: pytest.MonkeyPatch) -> None:
    """A receipt about a revision matches collection_ids by the revision's collection."""
    subject = ("COALESCE(f.collection_id, (SELECT s.collection_id FROM feed_receipt_updates ru"
               " JOIN feed_items s ON s.space_id = ru.space_id AND s.item_id = ru.subject_item_id"
               " WHERE ru.space_id = f.space_id AND ru.item_id = f.item_id))")
    mp.setattr(feed_sql, "FILTERED", feed_sql.FILTERED.replace(
        " OR f.collection_id IN", f" OR {subject} IN"))


DEFECTS: dict[str, tuple[str, str, Any]] = {
    "refusals recorded": ("unrecorded_failures", "WP-IDEM-11", refusals_recorded()),
    "grants need the scope": ("reference_grants", "WP-AUTH-15", grants_need_the_scope()),
    "existence before scope": ("scope_or_invisible", "WP-AUTH-14", existence_before_scope()),
    "fields cut at arrays": ("field_names", "WP-ERR-8", (None, fields_cut_at_arrays)),
    "token 404 without a field": ("token_issue", "WP-CTRL-11", (None, tokens_name_nothing)),
    "huge numbers misnamed": ("numbers", "WP-VAL-19", (huge_numbers_misnamed, None)),
    "receipts match collections": ("collection_filters", "WP-VIS-2",
                                   receipts_match_their_collection),
}


@pytest.mark.parametrize("name", sorted(DEFECTS))
def test_each_defect_fails_its_check(tmp_path: Path, kit_admin: str,
                                     monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    check, rid, defect = DEFECTS[name]
    if isinstance(defect, tuple):
        row = _run(tmp_path, kit_admin, check, *defect)
    else:
        defect(monkeypatch)
        row = _run(tmp_path, kit_admin, check)
    assert row.result == "fail", (name, row.message)
    assert row.message.startswith(f"{check}: ")
    assert rid in row.message, row.message


# ----- heads that do not parse, over real connections -------------------------------------------


@pytest.mark.parametrize("protocol", ["waypost serve's", "plain h11"])
def test_malformed_heads_over_a_raw_connection(tmp_path: Path, kit_admin: str,
                                               protocol: str) -> None:
    settings = Settings(tmp_path / "data", kit_admin, synchronous="NORMAL", sweep_seconds=0)
    config = {"http": limited_protocol(ConnectionLimits())} if protocol == "waypost serve's" \
        else {}
    with serving_app(build_app(settings), **config) as url, \
            httpx.Client(base_url=url, timeout=30) as client:
        (row,) = hostile.run_checks(client, kit_admin, "heads", only=("malformed_heads",))
    if protocol == "waypost serve's":
        assert (row.result, row.message) == ("pass", ""), row.message
    else:
        assert row.result == "fail", row.message
        assert "WP-LOAD-8" in row.message, row.message
