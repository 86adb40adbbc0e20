"""Hostile-input checks of text fields (protocol.md WP-VAL-24, WP-VAL-25): one-line texts refuse
every C0 and C1 control and DEL naming the field; a message's body text keeps tab, LF and CR,
refuses the other C0 controls, and comes back exactly as sent."""

from __future__ import annotations

from typing import Any

from waypost.properties.hostile.probes import (
    Finding,
    HostileCheck,
    Probe,
    expect_status,
    invalid,
)
from waypost.properties.wire.untrusted import visible

#: One of each class a one-line text refuses: NUL, BEL, tab, LF, CR, ESC (an ANSI sequence),
#: DEL, and the C1 controls CSI and NEL.
LINE_BREAKERS = ("a\x00b", "a\x07b", "a\tb", "a\nb", "a\rb", "\x1b[31mred", "a\x7fb",
                 "a\x9b2Jb", "a\x85b")
#: The C0 controls a body text refuses (it keeps tab, LF and CR).
BODY_BREAKERS = ("a\x00b", "a\x07b", "\x1b[2J", "a\x0bb", "a\x0cb", "a\x1fb")
#: A body text that must be kept as sent.
KEPT = "line one\r\n\tline two\nDEL \x7f, C1 \x85, bidi \u202e, emoji \U0001f600"


def _message(probe: Probe, subject: str = "s", **body: Any) -> dict[str, Any]:
    return {"request_id": probe.rid("tx"), "thread": {"new": True}, "kind": "info",
            "subject": subject, "body": {"text": "t", **body}}


def message_text(probe: Probe) -> int:
    """Controls in a message's one-line fields and its body text; a body text with tab, LF,
    CR, DEL and C1 sent and read back."""
    sent = 0
    for text in LINE_BREAKERS:
        for field, body in (("subject", _message(probe, subject=text)),
                            ("body.source_uri", _message(probe, source_uri=text)),
                            ("body.options[0]", _message(probe, options=[text]))):
            answer = probe.request("POST", "/v1/messages", who="alice", body=body)
            invalid(answer, f"{field} {visible(text)!r} (WP-VAL-24)", field)
            sent += 1
    for text in BODY_BREAKERS:
        answer = probe.request("POST", "/v1/messages", who="alice",
                               body=_message(probe, text=text))
        invalid(answer, f"body.text {visible(text)!r} (WP-VAL-25)", "body.text")
        sent += 1
    if any(item["type"] == "message" for item in probe.inbox("bob")):
        raise Finding("a refused text sent a message (§3: validation before any side effect)")
    kept = probe.request("POST", "/v1/messages", who="alice", body=_message(probe, text=KEPT))
    expect_status(kept, 201, f"a body text of {visible(KEPT)!r} (WP-VAL-25)")
    read = probe.request("GET", f"/v1/messages/{kept.json()['message_id']}", who="bob")
    expect_status(read, 200, "reading the message back")
    if read.json()["body"]["text"] != KEPT:
        raise Finding(f"a body text came back as {visible(str(read.json()['body']['text']))!r},"
                      f" sent as {visible(KEPT)!r} (WP-VAL-25)")
    return sent + 2


def names(probe: Probe) -> int:
    """Controls in the control plane's names and scopes and in a blob's filename."""
    space, sent = probe.space, 0
    for text in LINE_BREAKERS:
        answer = probe.request("POST", f"/admin/v1/spaces/{space}/actors", who="admin", body={
            "request_id": probe.rid("tn"), "actor_id": "mallory", "kind": "agent",
            "display_name": text})
        invalid(answer, f"an actor's display_name {visible(text)!r} (WP-VAL-24)",
                "display_name")
        answer = probe.request("POST", f"/admin/v1/spaces/{space}/collections", who="admin",
                               body={"request_id": probe.rid("tn"), "collection_id": "ctl",
                                     "source_actor_id": "alice", "scope": text})
        invalid(answer, f"a collection's scope {visible(text)!r} (WP-VAL-24)", "scope")
        answer = probe.request("POST", "/v1/blobs", who="alice", body={
            "request_id": probe.rid("tn"), "size": 1, "sha256": "0" * 64,
            "content_type": "text/plain", "filename": text})
        invalid(answer, f"a blob's filename {visible(text)!r} (WP-VAL-24)", "filename")
        sent += 3
    missing = probe.request("GET", "/v1/collections/ctl", who="alice")
    if missing.status_code != 404:
        raise Finding(f"a collection refused for its scope exists: {missing.status_code}")
    return sent + 1


CHECKS = (
    HostileCheck("message_text", "C0 and C1 controls and DEL in a subject, options and "
                 "source_uri, C0 controls in a body text: 400 naming the field; a body text "
                 "with tab, LF, CR, DEL and C1 comes back as sent",
                 ("WP-VAL-2", "WP-VAL-24", "WP-VAL-25", "WP-ERR-1", "WP-ERR-5"), message_text),
    HostileCheck("names_text", "C0 and C1 controls and DEL in an actor's display_name, a "
                 "collection's scope and a blob's filename: 400 naming the field, nothing "
                 "created", ("WP-VAL-2", "WP-VAL-24", "WP-ERR-1", "WP-ERR-5"), names),
)
