"""No 5xx for any bad input: random bodies, queries and paths always get the §7 envelope."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.api import ADMIN_TOKEN, Api

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=12), children, max_size=5),
    max_leaves=20)

PRINTABLE = st.characters(min_codepoint=33, exclude_categories=("Cs", "Cc"))
FIELDS = ["request_id", "recipient_ids", "thread", "kind", "subject", "body", "items",
          "checkpoint", "space_id", "actor_id", "consumer_id", "view", "filter", "scopes",
          "recipients", "collections", "blob_references", "display_name", "source_uri",
          "default_actor", "actor_ids", "in_reply_to", "metadata", "attachment_ids", "expires_at"]
bodies = st.one_of(
    json_values,
    st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=8),
)

WRITES = ["/v1/messages", "/v1/acks", "/admin/v1/spaces", "/admin/v1/spaces/s1/actors",
          "/admin/v1/spaces/s1/actors/bob/disable", "/admin/v1/spaces/s1/consumers",
          "/admin/v1/spaces/s1/consumers/bob-inbox/view", "/admin/v1/spaces/s1/collections",
          "/admin/v1/spaces/s1/tokens", "/admin/v1/tokens/tok_x/revoke",
          "/admin/v1/spaces/s1/threads/thr_x/members"]


def _is_envelope(response: Any) -> bool:
    body = response.json()
    return set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}


@given(path=st.sampled_from(WRITES), body=bodies)
def test_random_bodies_never_cause_a_server_error(api: Api, path: str, body: Any) -> None:
    token = ADMIN_TOKEN if path.startswith("/admin") else api.tokens["s1/alice"]
    response = api.client.post(path, json=body, headers={"Authorization": f"Bearer {token}"})
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        assert _is_envelope(response)


@given(params=st.dictionaries(st.sampled_from(["cursor", "limit", "wait", "x"]),
                              st.text(st.characters(exclude_categories=("Cs",)), max_size=30),
                              max_size=3),
       segment=st.text(PRINTABLE, min_size=1, max_size=40).filter(
           lambda t: not set(t) & set("/?#")))
def test_random_queries_and_ids_never_cause_a_server_error(api: Api, params: dict[str, str],
                                                           segment: str) -> None:
    headers = {"Authorization": f"Bearer {api.tokens['s1/bob']}"}
    params.pop("wait", None)  # long-polls are covered in test_feed
    for response in (
        api.client.get("/v1/feed", params=params, headers=headers),
        api.client.get(f"/v1/messages/{segment}", headers=headers),
        api.client.get(f"/v1/submissions/message.send/{segment}", headers=headers),
        api.client.get(f"/admin/v1/spaces/{segment}",
                       headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}),
    ):
        assert response.status_code < 500, response.text
        if response.status_code >= 400:
            assert _is_envelope(response)


def test_text_that_is_not_utf8_is_refused_as_bad_input(api: Api) -> None:
    headers = {"Authorization": f"Bearer {api.tokens['s1/alice']}",
               "Content-Type": "application/json"}
    for raw in (b'{"request_id": "x", "\\ud800": 1}',
                b'{"request_id": "x", "thread": {"new": true}, "kind": "info", '
                b'"subject": "\\ud800", "body": {"text": "x"}}',
                b'{"request_id": "x", "items": ' + b"9" * 5000 + b"}"):
        response = api.client.post("/v1/messages", content=raw, headers=headers)
        assert response.status_code == 400, response.text
        assert _is_envelope(response)
        assert response.json()["error"]["details"] == {"field": "body"}


@pytest.mark.parametrize("depth", [1, 10, 100, 500, 700, 1000, 10_000, 100_000, 170_000])
def test_deeply_nested_metadata_is_a_clear_answer_at_every_depth(api: Api, depth: int) -> None:
    """Nesting within the body limit: accepted while shallow, a 4xx in the envelope once deep
    (``metadata_bytes`` or the parser's depth), never a 5xx (issue: JSON depth at every scale)."""
    body = (b'{"request_id": "deep-' + str(depth).encode() + b'", "thread": {"new": true}, '
            b'"kind": "info", "subject": "s", "body": {"text": "t"}, "metadata": '
            + b'{"a":' * depth + b"{}" + b"}" * depth + b"}")
    answer = api.client.post("/v1/messages", content=body, headers={
        "Authorization": f"Bearer {api.tokens['s1/alice']}", "Content-Type": "application/json"})
    if depth <= 100:
        assert answer.status_code == 201, answer.text
    elif depth < 1000:  # within metadata_bytes or not: either answer is clear
        assert answer.status_code in (201, 400, 413), answer.text
    else:
        assert answer.status_code in (400, 413), answer.text
        assert _is_envelope(answer)
