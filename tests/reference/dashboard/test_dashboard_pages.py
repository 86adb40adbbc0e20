"""Dashboard pages in process: identity management through the control plane (with its
idempotency) and the read-only inspector, which writes nothing."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest
from starlette.testclient import TestClient

from tests.support.api import ADMIN_TOKEN, Api, item, publish, sealed_blob, with_notes
from tests.support.dashboard_client import Dash
from waypost.adapters.sqlite.driver import SqliteDriver
from waypost.reference.server import DATABASE, Settings, build_app, served_context
from waypost.reference.service import inspector, listings
from waypost.reference.storage import inspector as inspector_sql
from waypost.reference.storage import listings as listings_sql
from waypost.reference.storage.plan import Statement

SCRIPT = "<script>alert(1)</script>"


@pytest.fixture
def both(data_dir: Path) -> Iterator[tuple[Api, Dash]]:
    settings = Settings(data_dir, ADMIN_TOKEN, dashboard=True, sweep_seconds=0)
    with TestClient(build_app(settings), base_url="http://127.0.0.1") as client:
        api = Api(client)
        api.space("s1")
        api.space("s2", ("dave", "erin"))
        dash = Dash(client)
        assert dash.sign_in(ADMIN_TOKEN).status_code == 303
        yield api, dash


def _token_from(page: str) -> str:
    found = re.search(r'id="secret">([^<]+)<', page)
    assert found is not None, page
    return html.unescape(found.group(1))


def test_an_actor_is_created_with_its_inbox_consumer_in_one_step(both: tuple[Api, Dash]) -> None:
    api, dash = both
    for _ in range(2):  # a resubmitted form creates neither twice
        created = dash.post("/dashboard/spaces/s1/actors", "dash-ai", actor_id="erin",
                            kind="agent", display_name="Erin", inbox="yes")
        assert created.status_code == 303, created.text
    page = dash.page("/dashboard/spaces/s1").text
    assert re.search(r'<td data-label="Consumer">erin-inbox</td><td data-label="Actor">erin</td>',
                     page)
    assert "placeholder=" in page  # the forms say what goes in their fields
    assert "needs <code>message.read</code>" in page
    form = {"actor_id": "erin", "consumer_id": "erin-inbox", "scopes": ["message.read"],
            "recipients_mode": "any", "collections": "", "blob_references": ""}
    issued = dash.post("/dashboard/spaces/s1/tokens", "dash-ti", **form)
    assert issued.status_code == 201, issued.text
    api.tokens["erin"] = _token_from(issued.text)
    assert api.as_("erin", "GET", "/v1/feed").status_code == 200


def test_create_an_actor_issue_replay_rotate_and_revoke_its_token(both: tuple[Api, Dash]) -> None:
    api, dash = both
    created = dash.post("/dashboard/spaces/s1/actors", "dash-a1", actor_id="dora", kind="human",
                        display_name="Dora")
    assert created.status_code == 303
    assert dash.post("/dashboard/spaces/s1/consumers", "dash-c1", consumer_id="dora-inbox",
                     actor_id="dora", view="inbox").status_code == 303
    form = {"actor_id": "dora", "consumer_id": "dora-inbox", "scopes": ["message.read"],
            "recipients_mode": "any", "collections": "", "blob_references": ""}
    issued = dash.post("/dashboard/spaces/s1/tokens", "dash-t1", **form)
    assert issued.status_code == 201
    api.tokens["dora"] = _token_from(issued.text)
    assert api.as_("dora", "GET", "/v1/feed").status_code == 200
    replayed = dash.post("/dashboard/spaces/s1/tokens", "dash-t1", **form)
    assert replayed.status_code == 200
    assert 'id="replayed"' in replayed.text
    assert 'id="secret"' not in replayed.text
    token_id = api.tokens["dora"].split(".")[0]
    assert len(re.findall(r'data-token="', dash.page("/dashboard/spaces/s1").text)) == 4

    rotated = dash.post(f"/dashboard/spaces/s1/tokens/{token_id}/replace", "dash-rot1",
                        **{**form, "scopes": ["message.read", "space.observe"]})
    assert rotated.status_code == 201, rotated.text
    api.tokens["dora2"] = _token_from(rotated.text)
    assert api.as_("dora", "GET", "/v1/feed").status_code == 401
    assert api.as_("dora2", "GET", "/v1/feed").status_code == 200
    listing = api.admin("GET", "/admin/v1/spaces/s1").json()["tokens"]
    new = next(t for t in listing if t["token_id"] == api.tokens["dora2"].split(".")[0])
    assert new["scopes"] == ["message.read", "space.observe"]

    # revoke and disable ask first, whatever the browser runs: nothing happens unconfirmed
    revoke = f"/dashboard/spaces/s1/tokens/{new['token_id']}/revoke"
    asked = dash.post(revoke, "dash-rv1")
    assert asked.status_code == 200
    assert 'id="confirm-title">Revoke token' in asked.text
    assert 'name="request_id" value="dash-rv1"' in asked.text
    assert api.as_("dora2", "GET", "/v1/feed").status_code == 200
    revoked = dash.post(revoke, "dash-rv1", confirm="yes")
    assert revoked.status_code == 303
    assert api.as_("dora2", "GET", "/v1/feed").status_code == 401
    asked = dash.post("/dashboard/spaces/s1/actors/dora/disable", "dash-d1", confirm="no")
    assert 'id="confirm-title">Disable actor dora?' in asked.text
    actors = api.admin("GET", "/admin/v1/spaces/s1").json()["actors"]
    assert next(a for a in actors if a["actor_id"] == "dora")["disabled"] is False
    disabled = dash.post("/dashboard/spaces/s1/actors/dora/disable", "dash-d1", confirm="yes")
    assert disabled.status_code == 303
    actors = api.admin("GET", "/admin/v1/spaces/s1").json()["actors"]
    assert next(a for a in actors if a["actor_id"] == "dora")["disabled"] is True


def test_a_space_url_reaches_only_its_own_tokens(both: tuple[Api, Dash]) -> None:
    api, dash = both
    dave = api.tokens["s2/dave"].split(".")[0]
    form = {"scopes": ["message.read"], "recipients_mode": "any", "collections": "",
            "blob_references": ""}
    assert dash.page(f"/dashboard/spaces/s1/tokens/{dave}/replace").status_code == 404
    replaced = dash.post(f"/dashboard/spaces/s1/tokens/{dave}/replace", "dash-x1", **form)
    assert replaced.status_code == 404
    revoked = dash.post(f"/dashboard/spaces/s1/tokens/{dave}/revoke", "dash-x2")
    assert revoked.status_code == 404
    assert "NOT_FOUND" in revoked.text
    assert api.as_("s2/dave", "GET", "/v1/feed").status_code == 200
    tokens = api.admin("GET", "/admin/v1/spaces/s2").json()["tokens"]
    assert len(tokens) == 2
    assert not any(token["revoked"] for token in tokens)


def test_a_resubmitted_rotate_form_replays_its_outcome(both: tuple[Api, Dash]) -> None:
    api, dash = both
    bob = api.tokens["s1/bob"].split(".")[0]
    form = {"scopes": ["message.read"], "recipients_mode": "any", "collections": "",
            "blob_references": ""}
    path = f"/dashboard/spaces/s1/tokens/{bob}/replace"
    first = dash.post(path, "dash-rot9", **form)
    assert first.status_code == 201, first.text
    again = dash.post(path, "dash-rot9", **form)  # the same form, sent twice
    assert again.status_code == 200, again.text
    assert 'id="replayed"' in again.text
    assert 'id="secret"' not in again.text
    tokens = api.admin("GET", "/admin/v1/spaces/s1").json()["tokens"]
    assert len([t for t in tokens if t["actor_id"] == "bob"]) == 2  # no third token
    fresh = dash.post(path, "dash-rot10", **form)  # a new form on the revoked token
    assert fresh.status_code == 400
    assert "revoked already" in fresh.text


def _refused_field(page: str, form_id: str) -> tuple[str, str]:
    """The input marked invalid in the form ``form_id`` and the error shown next to it."""
    form = page[page.index(f'id="{form_id}"'):]
    form = form[:form.index("</form>")]
    found = re.search(r'<input type="text" name="([^"]+)"[^>]*aria-invalid="true"[^>]*>'
                      r'</label><span class="field-error" id="' + form_id + r'-error"'
                      r' role="alert">([^<]*)</span>', form)
    assert found is not None, form
    return found.group(1), html.unescape(found.group(2))


def _value_of(page: str, form_id: str, name: str) -> str:
    form = page[page.index(f'id="{form_id}"'):]
    found = re.search(rf'name="{name}"[^>]* value="([^"]*)"', form[:form.index("</form>")])
    assert found is not None, name
    return html.unescape(found.group(1))


def test_a_refused_form_comes_back_as_sent_with_the_error_next_to_its_field(
        both: tuple[Api, Dash]) -> None:
    _, dash = both
    taken = dash.post("/dashboard/spaces/s1/actors", "dash-x1", actor_id="bob", kind="service",
                      display_name=f"B {SCRIPT}")
    assert taken.status_code == 400
    assert _refused_field(taken.text, "create-actor") == ("actor_id", "actor_id already exists "
                                                          "(reason: already_exists)")
    assert _value_of(taken.text, "create-actor", "actor_id") == "bob"
    assert _value_of(taken.text, "create-actor", "display_name") == f"B {SCRIPT}"
    assert SCRIPT not in taken.text  # what was typed is shown escaped
    assert "<option selected>service</option>" in taken.text
    assert "dash-x1" not in taken.text  # the corrected form is a new request
    space = dash.post("/dashboard/spaces", "dash-x2", space_id="s3", display_name="Three",
                      source_uri="https://example.test/3", actor_id="bad id!", kind="agent",
                      actor_display_name="Ann")
    assert space.status_code == 400
    assert _refused_field(space.text, "create-space")[0] == "actor_id"
    assert _value_of(space.text, "create-space", "source_uri") == "https://example.test/3"
    assert _value_of(space.text, "create-space", "actor_display_name") == "Ann"


def test_a_refused_token_form_keeps_every_grant_typed(both: tuple[Api, Dash]) -> None:
    _, dash = both
    refused = dash.post("/dashboard/spaces/s1/tokens", "dash-t1", actor_id="alice",
                        consumer_id="alice-inbox", scopes=["message.send", "memory.read"],
                        recipients_mode="listed", recipient_ids="bob",
                        collections="notes read", blob_references="", expires_at="")
    assert refused.status_code == 400
    form = refused.text[refused.text.index('id="issue-token"'):]
    form = form[:form.index("</form>")]
    assert 'name="collections" rows="2" cols="40" aria-invalid="true"' in form
    assert ">notes read</textarea></label><span class=\"field-error\"" in form
    assert 'value="message.send" checked' in form
    assert 'value="memory.read" checked' in form
    assert 'value="message.read" checked' not in form
    assert '<option value="listed" selected>' in form
    assert _value_of(refused.text, "issue-token", "recipient_ids") == "bob"
    assert _value_of(refused.text, "issue-token", "consumer_id") == "alice-inbox"
    wrong = dash.post("/dashboard/spaces/s1/tokens", "dash-t2", actor_id="nobody",
                      consumer_id="alice-inbox", scopes=["message.send"], recipients_mode="any")
    assert wrong.status_code == 404
    assert _refused_field(wrong.text, "issue-token")[0] == "actor_id"


def test_errors_of_a_form_without_a_page_of_its_own_are_the_error_page(
        both: tuple[Api, Dash]) -> None:
    _, dash = both
    missing = dash.post("/dashboard/spaces/nowhere/actors", "dash-x3", actor_id="x",
                        kind="agent", display_name="X")
    assert missing.status_code == 404
    assert 'id="error"' in missing.text
    view = dash.post("/dashboard/spaces/s1/consumers/bob-inbox/view", "dash-x4", view="nope")
    assert view.status_code == 400
    assert "INVALID_REQUEST" in view.text


def _populate(api: Api) -> dict[str, Any]:
    """A message with markup in its subject and body, acknowledged twice, memory revisions
    1–3 and an upload."""
    sent = api.must_send("s1/alice", recipient_ids=["bob"], subject=f"hi {SCRIPT}",
                         body={"text": f"body {SCRIPT}"}, metadata={"k": SCRIPT})
    page = api.feed("s1/bob")
    for stage in ("received", "processed"):
        answer = api.as_("s1/bob", "POST", "/v1/acks", {
            "request_id": f"ack-{stage}", "items": [{"item_id": sent["feed_item_id"],
                                                     "stage": stage}]})
        assert answer.status_code == 200, answer.text
    assert page["items"]
    with_notes(api)
    blob = sealed_blob(api, "writer", b"note")
    other = sealed_blob(api, "writer", b"other")
    assert publish(api, 0, items=[item("a", blob), item("b", blob), item("c", blob)]).status_code == 201
    assert publish(api, 1, items=[item("b", other)], delete_ids=["c"]).status_code == 201
    assert publish(api, 2, items=[item("d", blob)]).status_code == 201
    return sent


def test_a_message_page_shows_markup_as_text_with_every_receipt_version(
        both: tuple[Api, Dash]) -> None:
    api, dash = both
    sent = _populate(api)
    page = dash.page(f"/dashboard/spaces/s1/messages/{sent['message_id']}")
    assert page.status_code == 200
    assert SCRIPT not in page.text
    assert html.escape(f"hi {SCRIPT}", quote=False) in page.text
    assert "body &lt;script&gt;" in page.text
    rows = re.findall(r"<td[^>]*>(\d)</td><td[^>]*>(received|processed)</td>", page.text)
    assert rows == [("1", "received"), ("2", "processed")]
    # the text as text, its options, source and metadata as labelled fields: no raw JSON
    assert f'<div id="body" class="text">body {html.escape(SCRIPT, quote=False)}</div>' in (
        page.text.replace("&#34;", '"').replace("&#39;", "'"))
    assert '&#34;text&#34;' not in page.text
    assert "source_uri" not in page.text
    assert re.search(r'<td id="options"><span class="muted">none</span></td>', page.text)
    assert re.search(r"<tr><th>k</th><td>&lt;script&gt;", page.text)
    answered = api.must_send("s1/alice", recipient_ids=["bob"], kind="question",
                             body={"text": "pick one", "options": ["yes", "<no>"],
                                   "source_uri": "https://example.test/q"})
    question = dash.page(f"/dashboard/spaces/s1/messages/{answered['message_id']}").text
    assert re.findall(r'<span class="option">([^<]*)</span>', question) == ["yes", "&lt;no&gt;"]
    assert '<td id="source">https://example.test/q</td>' in question


def test_a_cut_receipt_history_says_so(both: tuple[Api, Dash],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    api, dash = both
    sent = _populate(api)
    path = f"/dashboard/spaces/s1/messages/{sent['message_id']}"
    assert 'id="receipts-cut"' not in dash.page(path).text  # two versions, under the cap
    monkeypatch.setattr(inspector, "MAX_RECEIPT_STEPS", 1)
    page = dash.page(path)
    assert page.status_code == 200
    assert 'id="receipts-cut"' in page.text
    assert "Only the first 1 receipt versions are shown" in page.text
    rows = re.findall(r"<td[^>]*>(\d)</td><td[^>]*>(received|processed)</td>", page.text)
    assert rows == [("1", "received")]


def test_the_feed_filters_and_pages(both: tuple[Api, Dash]) -> None:
    api, dash = both
    for n in range(120):
        api.must_send("s1/carol", subject=f"note {n}", recipient_ids=["alice"])
    api.must_send("s1/bob", subject="from bob", recipient_ids=["alice"])
    first = dash.page("/dashboard/spaces/s1/feed")
    subjects = re.findall(r'class="subject">([^<]*)<', first.text)
    assert subjects[:2] == ["from bob", "note 119"]
    assert len(subjects) == 100
    after = re.search(r'id="next-page" href="([^"]+)"', first.text)
    assert after is not None
    second = dash.client.get(html.unescape(after.group(1)))
    rest = re.findall(r'class="subject">([^<]*)<', second.text)
    assert rest == [f"note {n}" for n in range(20, -1, -1)]
    assert "last page" in second.text
    by_bob = dash.page("/dashboard/spaces/s1/feed", producer="bob")
    assert re.findall(r'class="subject">([^<]*)<', by_bob.text) == ["from bob"]
    receipts = dash.page("/dashboard/spaces/s1/feed", type="receipt")
    assert "nothing here" in receipts.text
    assert dash.page("/dashboard/spaces/s1/feed", type="bogus").status_code == 400
    for before in ("-1", "١", str(2**63)):  # negative, a non-ASCII digit, past SQLite's integers
        refused = dash.page("/dashboard/spaces/s1/feed", before=before)
        assert refused.status_code == 400
        assert "INVALID_REQUEST" in refused.text


def test_feed_rows_say_which_message_thread_and_consumer(both: tuple[Api, Dash]) -> None:
    api, dash = both
    sent = _populate(api)  # bob's consumer acknowledged alice's message twice
    receipts = dash.page("/dashboard/spaces/s1/feed", type="receipt").text
    link = f'<a href="/dashboard/spaces/s1/messages/{sent["message_id"]}">{sent["message_id"]}</a>'
    assert receipts.count(f"processed, of {link}, by consumer bob-inbox") == 1
    assert receipts.count(f"received, of {link}, by consumer bob-inbox") == 1
    messages = dash.page("/dashboard/spaces/s1/feed", type="message").text
    assert f'href="/dashboard/spaces/s1/feed?thread={sent["thread_id"]}"' in messages
    assert link in messages


def test_revisions_entries_and_their_difference(both: tuple[Api, Dash]) -> None:
    api, dash = both
    _populate(api)
    base = "/dashboard/spaces/s1/collections/notes"
    listing = dash.page(base)
    assert re.findall(r'/revisions/(\d+)">', listing.text) == ["3", "2", "1"]
    diff = dash.page(f"{base}/diff", **{"from": "1", "to": "3"})
    changes = re.findall(r"<td[^>]*>(\w)</td><td[^>]*class=\"change\">(\w+)</td>", diff.text)
    assert changes == [("b", "changed"), ("c", "removed"), ("d", "added")]
    entries = dash.page(f"{base}/revisions/2")
    assert re.findall(r"<tr><td[^>]*>(\w)</td><td[^>]*>(active|tombstone)</td>", entries.text) == [
        ("a", "active"), ("b", "active"), ("c", "tombstone")]


def test_nothing_that_does_not_exist_gets_a_page(both: tuple[Api, Dash]) -> None:
    """A revision past the head, a diff naming one, a missing collection (its page, a revision
    and a diff of it), message, space, actor and token: each is the 404 error page."""
    api, dash = both
    _populate(api)  # notes at revision 3
    space = "/dashboard/spaces/s1"
    base = f"{space}/collections/notes"
    missing = [
        (f"{base}/revisions/4", {}), (f"{base}/revisions/99", {}),
        (f"{base}/diff", {"from": "1", "to": "99"}), (f"{base}/diff", {"from": "98", "to": "99"}),
        (f"{space}/collections/nothing", {}), (f"{space}/collections/nothing/revisions/0", {}),
        (f"{space}/collections/nothing/diff", {"from": "0", "to": "0"}),
        (f"{space}/messages/msg_00000000000000000000000000000000", {}),
        ("/dashboard/spaces/nothing", {}), ("/dashboard/spaces/nothing/feed", {}),
        (f"{space}/tokens/tok_00000000000000000000000000000000/replace", {}),
    ]
    for path, query in missing:
        answer = dash.page(path, **query)
        assert answer.status_code == 404, (path, query, answer.text[-500:])
        assert "NOT_FOUND" in answer.text, path
    for path in (f"{space}/actors/nobody/disable",
                 f"{space}/tokens/tok_00000000000000000000000000000000/revoke"):
        refused = dash.post(path, "dash-missing-" + path.rsplit("/", 2)[-2])
        assert refused.status_code == 404, (path, refused.text[-500:])
    assert dash.page(f"{base}/revisions/3").status_code == 200
    assert dash.page(f"{base}/revisions/0").status_code == 200
    assert dash.page(f"{base}/diff", **{"from": "0", "to": "3"}).status_code == 200


def test_consumers_show_their_checkpoints_and_lag(both: tuple[Api, Dash]) -> None:
    api, dash = both
    for n in range(3):
        api.must_send("s1/alice", subject=f"m{n}", recipient_ids=["bob"])
    page = api.feed("s1/bob", limit=1)
    answer = api.as_("s1/bob", "POST", "/v1/acks", {
        "request_id": "ack-lag", "items": [], "checkpoint": {"cursor": page["next_cursor"]}})
    assert answer.status_code == 200, answer.text
    consumers = dash.page("/dashboard/spaces/s1/consumers").text
    bob = re.search(r"<td[^>]*>bob-inbox</td>.*?class=\"behind\">(\d+)<", consumers, re.S)
    carol = re.search(r"<td[^>]*>carol-inbox</td>.*?class=\"behind\">(\d+)<", consumers, re.S)
    assert bob is not None
    assert carol is not None
    assert (bob.group(1), carol.group(1)) == ("2", "0")
    space = dash.page("/dashboard/spaces/s1").text
    assert '<figure id="chart-activity">' in space
    assert "<title>bob-inbox: 2</title>" in space
    lag = space[space.index('<figure id="chart-lag">'):]
    lag = lag[:lag.index("</figure>")]
    assert ">bob-inbox</text>" in lag  # named, and its value printed for a touch screen
    assert re.search(r'<text class="value"[^>]*>2</text>', lag)
    assert "<tr><td>bob-inbox</td><td>2</td></tr>" in lag  # the list a touch screen opens


def test_lag_is_counted_up_to_a_cap_and_shown_as_more(both: tuple[Api, Dash],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    api, dash = both
    for n in range(5):
        api.must_send("s1/alice", subject=f"m{n}", recipient_ids=["bob"])
    monkeypatch.setattr(inspector, "MAX_BEHIND", 2)  # bob's inbox is 5 behind, alice's 0
    consumers = dash.page("/dashboard/spaces/s1/consumers").text
    bob = re.search(r"<td[^>]*>bob-inbox</td>.*?class=\"behind\">([^<]+)<", consumers, re.S)
    alice = re.search(r"<td[^>]*>alice-inbox</td>.*?class=\"behind\">([^<]+)<", consumers, re.S)
    assert (bob and bob.group(1), alice and alice.group(1)) == ("2+", "0")
    assert "counted up to 2." in consumers
    progress = dash.client.portal.call(
        inspector.progress, served_context(api.client.app), "s1")
    behind = {row.consumer_id: row.behind for row in progress.checkpoints}
    assert behind["bob-inbox"] == 3  # counting stopped one past the cap
    space = dash.page("/dashboard/spaces/s1").text
    assert "<title>bob-inbox: 2</title>" in space
    lag = space[space.index('<figure id="chart-lag">'):]
    lag = lag[:lag.index("</figure>")]
    assert ">bob-inbox</text>" in lag  # named, and its value printed for a touch screen
    assert re.search(r'<text class="value"[^>]*>2</text>', lag)
    assert "<tr><td>bob-inbox</td><td>2</td></tr>" in lag  # the list a touch screen opens


def _dump(data_dir: Path) -> dict[str, list[Any]]:
    """Every row of every table, but the sessions' last use (which signing in records)."""
    db = apsw.Connection(str(data_dir / DATABASE), flags=apsw.SQLITE_OPEN_READONLY)
    tables = [name for (name,) in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    dump = {}
    for table in tables:
        columns = "session_digest, revoked_at" if table == "admin_sessions" else "*"
        dump[table] = sorted(db.execute(f"SELECT {columns} FROM {table}").fetchall(), key=repr)
    db.close()
    return dump


def test_browsing_the_inspector_writes_nothing(both: tuple[Api, Dash], data_dir: Path) -> None:
    api, dash = both
    sent = _populate(api)
    tokens = api.admin("GET", "/admin/v1/spaces/s1").json()["tokens"]
    before = _dump(data_dir)
    base = "/dashboard/spaces/s1"
    for path, params in [
            ("/dashboard/", {}), (base, {}), (f"{base}/feed", {}),
            (f"{base}/feed", {"type": "message", "producer": "alice"}),
            (f"{base}/messages/{sent['message_id']}", {}), (f"{base}/consumers", {}),
            (f"{base}/uploads", {}), (f"{base}/collections/notes", {}),
            (f"{base}/collections/notes/revisions/2", {}),
            (f"{base}/collections/notes/diff", {"from": "1", "to": "3"}),
            (f"{base}/tokens/{tokens[0]['token_id']}/replace", {}),
            ("/dashboard/dashboard.css", {})]:
        assert dash.page(path, **params).status_code == 200, path
    assert _dump(data_dir) == before
    assert before["feed_items"]
    assert before["receipts"]
    assert before["memory_revisions"]


@pytest.mark.parametrize(("statement", "index"), [
    (inspector_sql.feed_page("s1", inspector_sql.TOP, 101, "message", None, None),
     "feed_items_space_type"),
    (inspector_sql.feed_page("s1", inspector_sql.TOP, 101, None, "alice", None),
     "feed_items_space_producer"),
    (inspector_sql.feed_page("s1", inspector_sql.TOP, 101, None, None, "t1"),
     "feed_items_space_thread"),
    (inspector_sql.feed_page("s1", inspector_sql.TOP, 101, None, None, None),
     "feed_items_space_sequence"),
    (inspector_sql.feed_page("s1", inspector_sql.TOP, 101, "message", "alice", "t1"),
     "feed_items_space_thread"),
    (inspector_sql.feed_page("s1", inspector_sql.TOP, 101, "receipt", "alice", None),
     "feed_items_space_producer"),
    (listings_sql.tokens("s1"), "tokens_space")])
def test_filtered_feed_pages_and_token_lists_read_through_their_index(
        both: tuple[Api, Dash], statement: Statement, index: str) -> None:
    api, _ = both
    driver = served_context(api.client.app).driver
    assert isinstance(driver, SqliteDriver)
    plan = driver.explain(statement)
    assert plan[0].startswith(f"SEARCH f USING INDEX {index} ") or \
        plan[0].startswith(f"SEARCH t USING INDEX {index} "), plan


def test_spaces_tokens_and_threads_are_listed_a_page_at_a_time(
        both: tuple[Api, Dash], monkeypatch: pytest.MonkeyPatch) -> None:
    api, dash = both
    for n in range(3):
        api.must_send("s1/alice", subject=f"t{n}", recipient_ids=["bob"])  # a thread each
    monkeypatch.setattr(listings, "PAGE", 2)
    seen: dict[str, list[str]] = {"spaces": [], "tokens": [], "threads": []}
    path = "/dashboard/"
    while True:  # s1, s2
        index = dash.client.get(path)
        assert index.status_code == 200
        rows = re.findall(r'<a href="/dashboard/spaces/([^"]+)">', index.text)
        assert len(rows) <= 2
        seen["spaces"] += rows
        found = re.search(r'id="next-page" href="([^"]+)"', index.text)
        if found is None:
            break
        path = html.unescape(found.group(1))
    for listing, pattern in (("tokens", r'data-token="([^"]+)"'),
                             ("threads", r'<a href="/dashboard/spaces/s1/feed\?thread=([^"]+)"')):
        path = "/dashboard/spaces/s1"
        while True:
            page = dash.client.get(path)
            assert page.status_code == 200
            rows = re.findall(pattern, page.text)
            assert 1 <= len(rows) <= 2
            seen[listing] += rows
            found = re.search(rf'id="next-{listing}" href="([^"]+)"', page.text)
            if found is None:
                break
            path = html.unescape(found.group(1))
    listed = api.admin("GET", "/admin/v1/spaces/s1").json()
    assert seen["spaces"] == ["s1", "s2"]
    assert seen["tokens"] == [t["token_id"] for t in listed["tokens"]]
    assert len(seen["tokens"]) == 3
    assert seen["threads"] == [t["thread_id"] for t in listed["threads"]]
    assert len(seen["threads"]) == 3
    assert dash.page("/dashboard/spaces/s1", tokens_after="not an id!").status_code == 400


def test_the_space_list_filters_and_marks_the_kits_spaces(both: tuple[Api, Dash]) -> None:
    api, dash = both
    for space_id, source in (("kit-run1-a", "waypost-kit://kit-run1-a"),
                             ("team-notes", "https://example.test/notes")):
        api.must_admin("POST", "/admin/v1/spaces", {
            "request_id": f"mk-{space_id}", "space_id": space_id, "display_name": space_id,
            "source_uri": source, "default_actor": {"actor_id": "a", "kind": "agent",
                                                    "display_name": "A"}})
    listed = dash.page("/dashboard/").text
    assert "team-notes" in listed
    assert "kit-run1-a" not in listed  # the kit's spaces wait behind a checkbox
    with_kit = dash.page("/dashboard/", kit="show").text
    assert re.search(r"waypost-kit://kit-run1-a <span class=\"badge\"[^>]*>kit</span>",
                     with_kit)
    found = dash.page("/dashboard/", q="NOTES").text
    assert re.findall(r'href="/dashboard/spaces/([^"]+)"', found) == ["team-notes"]
