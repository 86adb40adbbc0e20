"""The reference consumer (P17): its local schema refuses what would break the invariants, and
over real HTTP two consumers exchange messages, survive a crash and never show the token."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import httpx
import pytest

from waypost.bootstrap import provision
from waypost.conformance.targets import ServerProcess
from waypost.reference.consumer import outbox, records
from waypost.reference.consumer.faults import CRASH_EXIT
from waypost.reference.consumer.store import LocalStore

ADMIN = "consumer-admin"


# The local schema guards its invariants by itself.

@pytest.fixture
def store(tmp_path: Path) -> Iterator[LocalStore]:
    local = LocalStore(tmp_path / "c.sqlite3", create=True)
    local.init_profile("http://127.0.0.1:1", "default")
    local.execute("INSERT INTO local_feed_items (item_id, sequence, item_type, producer_id,"
                  " resource_id, committed_at, view_epoch, stored_at)"
                  " VALUES ('fi_1', 7, 'message', 'alice', 'msg_1', 'now', 1, 0)")
    local.execute("INSERT INTO local_work (item_id, state, updated_at) VALUES ('fi_1', 'pending', 0)")
    yield local
    local.close()


def refused(store: LocalStore, sql: str, reason: str) -> None:
    with pytest.raises(apsw.ConstraintError, match=reason):
        store.execute(sql)


def test_processed_is_queued_only_after_the_local_work_is_done(store: LocalStore) -> None:
    with store.transaction(), pytest.raises(apsw.ConstraintError, match="after the local work"):
        outbox.enqueue_ack(store, [("fi_1", "processed")], None)
    store.execute("UPDATE local_work SET state = 'done' WHERE item_id = 'fi_1'")
    with store.transaction():
        outbox.enqueue_ack(store, [("fi_1", "processed")], None)


def test_work_never_moves_back_and_received_items_never_change(store: LocalStore) -> None:
    store.execute("UPDATE local_work SET state = 'done' WHERE item_id = 'fi_1'")
    refused(store, "UPDATE local_work SET state = 'pending'", "only moves forward")
    refused(store, "UPDATE local_feed_items SET sequence = 8", "immutable")
    refused(store, "DELETE FROM local_feed_items", "permanent")


def test_the_checkpoint_never_runs_ahead_of_the_stored_items(store: LocalStore) -> None:
    refused(store, "INSERT INTO local_checkpoints VALUES ('default', 1, 'c', 9, 1, 0)",
            "only with its page")
    store.execute("INSERT INTO local_checkpoints VALUES ('default', 1, 'c', 7, 1, 0)")
    refused(store, "UPDATE local_checkpoints SET last_sequence = 5, pages = 2",
            "only move forward")


def test_an_outbound_write_keeps_its_request_id_and_final_result(store: LocalStore) -> None:
    outbound_id = outbox.enqueue_send(store, outbox.Send(("bob",), "Hi", "text"))
    refused(store, "UPDATE local_outbound SET request_id = 'other'", "keeps its request_id")
    refused(store, "UPDATE local_outbound SET subject = 'other'", "keeps its request_id")
    outbox.record(store, outbound_id, "committed", 201, {"message_id": "msg_1"})
    refused(store, "UPDATE local_outbound SET state = 'pending', result_status = NULL",
            "final result")


def _revision_item(item_id: str, sequence: int, collection_id: str, revision: int
                   ) -> dict[str, Any]:
    return {"item_id": item_id, "sequence": sequence, "type": "memory_revision",
            "producer_id": "alice", "recipient_ids": [], "thread_id": None, "committed_at": "now",
            "memory_revision": {"collection_id": collection_id, "revision": revision,
                                "parent_revision": revision - 1, "manifest_blob_id": None}}


def test_an_item_this_files_own_write_created_is_done_not_work(store: LocalStore) -> None:
    """Own writes are not work: answered after its item was stored, the write's answer marks
    the item done; stored after the answer, the item is stored done. Either way its ACK is
    ``processed`` (docs/consumer.md, "Own writes"); another actor's item stays pending."""
    sent = outbox.enqueue_send(store, outbox.Send(("bob",), "Hi", "text"))
    outbox.record(store, sent, "committed", 201, {"message_id": "msg_1", "feed_item_id": "fi_1",
                                                  "thread_id": "th_1", "sequence": 7})
    assert store.value("SELECT state FROM local_work WHERE item_id = 'fi_1'") == "done"
    published = outbox.enqueue_publish(store, outbox.Publish("notes", 2, "delta", ()))
    outbox.record(store, published, "committed", 201, {"revision": 3, "parent_revision": 2,
                                                        "changed": True})
    page = records.Page([_revision_item("fi_2", 8, "notes", 3),
                         _revision_item("fi_3", 9, "plans", 3)], "cursor-9", False, 9,
                        revisions={("notes", 3): [], ("plans", 3): []})
    records.store_page(store, store.require_profile(), page)
    states = store.rows("SELECT item_id, state FROM local_work ORDER BY item_id")
    assert [(r["item_id"], r["state"]) for r in states] == [
        ("fi_1", "done"), ("fi_2", "done"), ("fi_3", "pending")]
    acked = store.rows("SELECT item_id, stage FROM local_outbound_ack_items ORDER BY outbound_id,"
                       " position")
    assert [(r["item_id"], r["stage"]) for r in acked] == [
        ("fi_1", "processed"), ("fi_2", "processed"), ("fi_3", "received")]
    # a publish that changed nothing answers the head, which another actor wrote: still work
    unchanged = outbox.enqueue_publish(store, outbox.Publish("plans", 3, "delta", ()))
    outbox.record(store, unchanged, "committed", 200, {"revision": 3, "changed": False})
    assert store.value("SELECT state FROM local_work WHERE item_id = 'fi_3'") == "pending"
    later = records.Page([_revision_item("fi_4", 10, "plans", 3)], "cursor-10", False, 10,
                         revisions={("plans", 3): []})
    assert records.insert_items(store, later, 1) == set()


# Over real HTTP: a server process and consumer processes.

@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    process = ServerProcess(tmp_path_factory.mktemp("consumer") / "data", ADMIN,
                            "--no-access-log", "--synchronous", "normal")
    try:
        with httpx.Client(base_url=process.url, timeout=30,
                          headers={"Authorization": f"Bearer {ADMIN}"}) as admin:
            tokens = provision(admin, "demo")
        yield process.url, {k: str(v) for k, v in tokens.items()}
    finally:
        process.stop()


def consumer(token: str, db: Path, *arguments: str, fault: str | None = None
             ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "WAYPOST_TOKEN": token}
    env.pop("WAYPOST_CONSUMER_FAULT", None)
    if fault:
        env["WAYPOST_CONSUMER_FAULT"] = fault
    return subprocess.run([sys.executable, "-m", "waypost.cli", "consumer", *arguments,
                           "--db", str(db)], env=env, capture_output=True, text=True, timeout=120)


def must(token: str, db: Path, *arguments: str) -> Any:
    done = consumer(token, db, *arguments, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.slow
def test_two_agents_exchange_messages_through_a_crash(demo: tuple[str, dict[str, str]],
                                                      tmp_path: Path) -> None:
    url, tokens = demo
    alice, bob = tmp_path / "alice.db", tmp_path / "bob.db"
    must(tokens["alice"], alice, "init", "--url", url)
    must(tokens["bob"], bob, "init", "--server", url)  # the flag's old name, one release more
    sent = must(tokens["alice"], alice, "send", "--to", "bob", "--subject", "Plan",
                "--text", "Shall we meet?", "--kind", "question")
    assert sent["state"] == "committed"
    assert sent["request_id"].startswith("wpc-send-")
    # bob's sync dies after storing the page, before its ACK: the restart re-acks it.
    assert consumer(tokens["bob"], bob, "sync", fault="sync.after_commit").returncode == CRASH_EXIT
    must(tokens["bob"], bob, "sync")
    (item,) = must(tokens["bob"], bob, "list")
    assert (item["subject"], item["state"]) == ("Plan", "pending")
    shown = must(tokens["bob"], bob, "show", item["item_id"])
    assert shown["message"]["body_text"] == "Shall we meet?"
    # bob's reply dies right after its submission: resubmitted with the same request_id.
    crashed = consumer(tokens["bob"], bob, "reply", item["item_id"], "--text", "Yes, at 10",
                       fault="outbound.after_submit")
    assert crashed.returncode == CRASH_EXIT
    assert must(tokens["bob"], bob, "done", item["item_id"])["done"] == [item["item_id"]]
    must(tokens["alice"], alice, "sync")
    replies = [i for i in must(tokens["alice"], alice, "list") if i["type"] == "message"]
    assert [r["subject"] for r in replies] == ["Re: Plan"]
    # shown to alice, her list ends with bob's receipts on her message: received, processed
    shown_list = consumer(tokens["alice"], alice, "list").stdout
    work, receipts = shown_list.split("\n\nreceipts:\n")
    assert "Re: Plan" in work
    rows = [line.split() for line in receipts.splitlines()[1:]]
    assert [(row[1], row[2], row[3]) for row in rows] == [("bob", "received", "1"),
                                                          ("bob", "processed", "2")]
    status = must(tokens["bob"], bob, "status")
    assert status["work"]["done"] == 1
    assert status["outbound"]["pending"] == 0
    sends = [r for r in status["recent_outbound"] if r["operation"] == "message.send"]
    assert len(sends) == 1
    assert sends[0]["attempts"] == 2
    files = b"".join(path.read_bytes() for path in tmp_path.glob("*.db*"))
    assert not [who for who, token in tokens.items() if token.encode() in files]  # never stored


def test_errors_are_one_line_with_the_servers_code(demo: tuple[str, dict[str, str]],
                                                   tmp_path: Path) -> None:
    url, tokens = demo
    db = tmp_path / "c.db"
    must(tokens["alice"], db, "init", "--server", url)
    done = consumer(tokens["alice"], db, "send", "--to", "nobody", "--subject", "x", "--text", "y")
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1, done.stderr
    assert "NOT_FOUND (404)" in done.stderr
    done = consumer("", db, "sync")
    assert done.returncode == 1
    assert "no token" in done.stderr
    assert "Traceback" not in done.stderr
    done = consumer(tokens["alice"], tmp_path / "missing.db", "list")
    assert done.returncode == 1
    assert "init" in done.stderr


def test_a_write_refused_before_it_is_sent_queues_nothing(demo: tuple[str, dict[str, str]],
                                                          tmp_path: Path) -> None:
    """Each write command without a token is refused before anything is queued: given the
    token, the recipient gets exactly one message per command, not a queued copy besides."""
    url, tokens = demo
    alice, bob = tmp_path / "alice.db", tmp_path / "bob.db"
    must(tokens["alice"], alice, "init", "--url", url)
    must(tokens["bob"], bob, "init", "--url", url)
    subject = f"once-{tmp_path.name}"
    send = ("send", "--to", "bob", "--subject", subject, "--text", "hi")
    publish = ("publish", "notes", "--expected-revision", "0", "--delete", "x")
    for command in (send, publish):
        refused = consumer("", alice, *command)
        assert refused.returncode == 1
        assert "no token" in refused.stderr
        assert must(tokens["alice"], alice, "status")["outbound"]["pending"] == 0, command
    must(tokens["alice"], alice, *send)
    must(tokens["bob"], bob, "sync")
    mine = [i for i in must(tokens["bob"], bob, "list", "--state", "all")
            if i["subject"] == subject]
    assert len(mine) == 1
    refused = consumer("", bob, "reply", mine[0]["item_id"], "--text", "ok")
    assert (refused.returncode, must(tokens["bob"], bob, "status")["outbound"]["pending"]) == (
        1, 0)
    must(tokens["bob"], bob, "reply", mine[0]["item_id"], "--text", "ok")
    must(tokens["alice"], alice, "sync")
    replies = [i for i in must(tokens["alice"], alice, "list", "--state", "all")
               if i["subject"] == f"Re: {subject}"]
    assert len(replies) == 1


def test_a_sync_says_its_summary_once(demo: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    url, tokens = demo
    db = tmp_path / "bob.db"
    must(tokens["bob"], db, "init", "--url", url)
    done = consumer(tokens["bob"], db, "sync")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("synced ") == 1
    assert done.stderr == ""


def test_a_refusal_says_what_the_server_sent_back(demo: tuple[str, dict[str, str]],
                                                  tmp_path: Path) -> None:
    url, tokens = demo
    db = tmp_path / "c.db"
    must(tokens["alice"], db, "init", "--url", url)
    done = consumer(tokens["alice"], db, "send", "--to", "nobody", "--subject", "x", "--text",
                    "y", "--json")
    assert done.returncode == 1
    answer = json.loads(done.stdout)
    assert (answer["state"], answer["error"]["code"]) == ("failed", "NOT_FOUND")
    assert answer["error"]["details"] == {"field": "recipient_ids[0]"} or \
        answer["error"]["details"]["field"].startswith("recipient_ids")
    assert "field = " in done.stderr  # the one line names the details too


@pytest.mark.slow
def test_sync_watch_long_polls_and_says_so(demo: tuple[str, dict[str, str]],
                                           tmp_path: Path) -> None:
    url, tokens = demo
    db = tmp_path / "w.db"
    must(tokens["alice"], db, "init", "--server", url)
    must(tokens["alice"], db, "sync")
    watch = subprocess.Popen(
        [sys.executable, "-m", "waypost.cli", "consumer", "sync", "--watch", "--wait", "30",
         "--db", str(db)], env={**os.environ, "WAYPOST_TOKEN": tokens["alice"]},
        stderr=subprocess.PIPE, text=True)
    try:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {tokens['bob']}"}) as c:
            answer = c.post("/v1/messages", json={
                "request_id": "watch-1", "recipient_ids": ["alice"], "thread": {"new": True},
                "kind": "info", "subject": "Ping", "body": {"text": "watch me"}})
            assert answer.status_code == 201
        assert watch.stderr is not None
        line = watch.stderr.readline()  # the progress line of the page that brought it
        assert "1 pages" in line, line
        assert "1 messages" in line
    finally:
        watch.terminate()
        watch.wait(timeout=30)
    assert "Ping" in [i["subject"] for i in must(tokens["alice"], db, "list")]


def _sealed_note(url: str, token: str, content: bytes) -> str:
    """A sealed blob of ``content`` uploaded by the token's actor over HTTP."""
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}) as c:
        slot = c.post("/v1/blobs", json={
            "request_id": f"note-{hashlib.sha256(content).hexdigest()[:12]}",
            "size": len(content), "sha256": hashlib.sha256(content).hexdigest(),
            "content_type": "text/markdown"}).json()
        assert c.put(f"/v1/uploads/{slot['upload_id']}/content", content=content).status_code == 200
        sealed = c.post(f"/v1/uploads/{slot['upload_id']}/commit",
                        json={"request_id": f"seal-{slot['upload_id']}"})
        assert sealed.status_code == 200, sealed.text
        return str(slot["blob_id"])


@pytest.mark.slow
def test_a_publish_survives_a_crash_once_and_readers_pin_the_revision(
        demo: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    url, tokens = demo
    alice, bob = tmp_path / "alice.db", tmp_path / "bob.db"
    must(tokens["alice"], alice, "init", "--url", url)
    must(tokens["bob"], bob, "init", "--server", url)  # the flag's old name, one release more
    blob_id = _sealed_note(url, tokens["alice"], b"# Notes\nremember the milk\n")
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {tokens['alice']}"}) as c:
        head = c.get("/v1/collections/notes").json()["current_revision"]
    # alice's publish dies right after its submission; her next sync resubmits it with the
    # same request_id, so the collection moves exactly once.
    crashed = consumer(tokens["alice"], alice, "publish", "notes", "--expected-revision",
                       str(head), "--entry", f"milk=todo/milk.md={blob_id}",
                       fault="outbound.after_submit")
    assert crashed.returncode == CRASH_EXIT, crashed.stderr
    assert must(tokens["alice"], alice, "status")["outbound"]["pending"] == 1
    must(tokens["alice"], alice, "sync")
    status = must(tokens["alice"], alice, "status")
    assert status["outbound"]["pending"] == 0
    (published,) = [r for r in status["recent_outbound"] if r["operation"] == "memory.publish"]
    assert published["attempts"] == 2
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {tokens['alice']}"}) as c:
        assert c.get("/v1/collections/notes").json()["current_revision"] == head + 1
        lookup = c.get(f"/v1/submissions/memory.publish/{published['request_id']}").json()
    assert lookup["result"]["body"]["revision"] == head + 1
    # her own revision reached her feed: not work for her, done and acknowledged processed
    own = [i for i in must(tokens["alice"], alice, "list") if i["type"] == "memory_revision"]
    assert [i["state"] for i in own] == ["done"]
    # bob, a reader of notes, syncs: the revision is pinned in his file with its entries.
    must(tokens["bob"], bob, "sync")
    pinned = [i for i in must(tokens["bob"], bob, "list") if i["type"] == "memory_revision"]
    assert pinned, "the new revision did not reach bob's consumer"
    shown = must(tokens["bob"], bob, "show", pinned[-1]["item_id"])
    entries = shown["memory_revision"]["entries"]
    assert [(e["entry_id"], e["path"], e["blob_id"]) for e in entries] == [
        ("milk", "todo/milk.md", blob_id)]


def test_init_refuses_a_url_where_no_server_answers(demo: tuple[str, dict[str, str]],
                                                     tmp_path: Path) -> None:
    url, tokens = demo
    db = tmp_path / "c.db"
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        wrong = f"http://127.0.0.1:{unused.getsockname()[1]}"
    done = consumer(tokens["alice"], db, "init", "--url", wrong)
    assert done.returncode == 4  # unreachable, as docs/consumer.md's exit statuses say
    assert "no Waypost server answers" in done.stderr
    assert "nothing was stored" in done.stderr
    assert not db.exists()
    must(tokens["alice"], db, "init", "--url", url)  # the right URL after the wrong one
    moved = consumer(tokens["alice"], db, "init", "--url", url + "/elsewhere")
    assert moved.returncode != 0
    assert "delete it and run init again" in moved.stderr
