"""Text fields stay text (protocol.md WP-VAL-24, WP-VAL-25): one-line fields refuse every C0
and C1 control and DEL naming the field; a message's body text keeps tab, LF and CR and refuses
the other C0 controls. Nothing refused is stored."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.api import Api, must_fail, prepare, rid
from waypost.properties.hostile.text import BODY_BREAKERS, KEPT, LINE_BREAKERS


def _send(api: Api, **change: Any) -> Any:
    body: dict[str, Any] = {"request_id": rid("txt"), "thread": {"new": True}, "kind": "info",
                            "subject": "s", "body": {"text": "t"}}
    for key, value in change.items():
        if key.startswith("body."):
            body["body"] = {**body["body"], key[5:]: value}
        else:
            body[key] = value
    return api.as_("s1/alice", "POST", "/v1/messages", body)


@pytest.mark.parametrize("text", LINE_BREAKERS)
@pytest.mark.parametrize("field", ["subject", "body.source_uri"])
def test_one_line_message_fields_refuse_controls(api: Api, field: str, text: str) -> None:
    must_fail(_send(api, **{field: text}), 400, "INVALID_REQUEST", field)


@pytest.mark.parametrize("text", LINE_BREAKERS)
def test_message_options_refuse_controls(api: Api, text: str) -> None:
    must_fail(_send(api, **{"body.options": ["yes", text]}), 400, "INVALID_REQUEST",
              "body.options[1]")


@pytest.mark.parametrize("text", BODY_BREAKERS)
def test_body_text_refuses_controls_but_tab_and_line_ends(api: Api, text: str) -> None:
    must_fail(_send(api, **{"body.text": text}), 400, "INVALID_REQUEST", "body.text")


def test_body_text_keeps_tab_newline_carriage_return_and_other_characters(api: Api) -> None:
    text = KEPT  # tab, CR, LF, DEL, C1, bidi, an emoji
    sent = _send(api, **{"body.text": text, "subject": "caf\u00e9 \u2014 ok"})
    assert sent.status_code == 201, sent.text
    read = api.as_("s1/bob", "GET", f"/v1/messages/{sent.json()['message_id']}")
    assert read.json()["body"]["text"] == text
    assert read.json()["subject"] == "caf\u00e9 \u2014 ok"


@pytest.mark.parametrize("text", LINE_BREAKERS)
def test_control_plane_names_refuse_controls(api: Api, text: str) -> None:
    answer = api.admin("POST", "/admin/v1/spaces/s1/actors", {
        "request_id": rid(), "actor_id": "mallory", "kind": "agent", "display_name": text})
    must_fail(answer, 400, "INVALID_REQUEST", "display_name")
    answer = api.admin("POST", "/admin/v1/spaces", {
        "request_id": rid(), "space_id": "s9", "display_name": "s9", "source_uri": text,
        "default_actor": {"actor_id": "a", "kind": "agent", "display_name": "a"}})
    must_fail(answer, 400, "INVALID_REQUEST", "source_uri")
    answer = api.admin("POST", "/admin/v1/spaces/s1/collections", {
        "request_id": rid(), "collection_id": "c9", "source_actor_id": "alice", "scope": text})
    must_fail(answer, 400, "INVALID_REQUEST", "scope")
    assert api.admin("GET", "/admin/v1/spaces/s9").status_code == 404  # nothing was created


@pytest.mark.parametrize("text", LINE_BREAKERS)
def test_a_blob_filename_refuses_controls(api: Api, text: str) -> None:
    answer = api.as_("s1/alice", "POST", "/v1/blobs", {
        "request_id": rid(), "size": 1, "sha256": "0" * 64, "content_type": "text/plain",
        "filename": text})
    must_fail(answer, 400, "INVALID_REQUEST", "filename")
    assert prepare(api, "s1/alice", b"x", filename="caf\u00e9.txt")["upload_id"]
