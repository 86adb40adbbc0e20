"""Contract check of serving under load (protocol.md §12): a client that stalls in the middle
of an upload costs only its own request (WP-LOAD-1).

Observed over HTTP from the order of events, not from a clock's bound: the upload's second
half is held back until the other requests have their answers, or for at most
:data:`STALL_SECONDS`; a server whose other requests wait for the stalled one answers them only
once the kit gives up holding it back. Through an in-process transport that reads a request
body whole before the app sees it, the check shows nothing (it passes)."""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx

from waypost.properties.contract.common import obj, send, shown, text
from waypost.properties.hostile.probes import Finding, HostileCheck, Probe

#: How long the upload stalls at most; a request slower than a third of it, and ten times its
#: own time before the stall, waited for the stalled one.
STALL_SECONDS = 10.0


def _others(probe: Probe) -> list[tuple[str, float]]:
    """Requests of other clients, each with how long it took: reads, a send and a prepare."""
    timed: list[tuple[str, float]] = []
    data = b"another client"
    requests: list[tuple[str, Callable[[], httpx.Response], int]] = [
        ("GET /v1/describe", lambda: probe.request("GET", "/v1/describe"), 200),
        ("a feed read", lambda: probe.request("GET", "/v1/feed", who="alice",
                                              params={"limit": 1}), 200),
        ("a send", lambda: send(probe, "alice"), 201),
        ("a collection read", lambda: probe.request("GET", "/v1/collections/notes",
                                                    who="alice"), 200),
        ("a blob.prepare", lambda: probe.request("POST", "/v1/blobs", who="alice", body={
            "request_id": probe.rid("su"), "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(), "content_type": "text/plain"}), 201)]
    for what, call, status in requests:
        started = time.monotonic()
        obj(call(), f"{what} while another client's upload stalls", status)
        timed.append((what, time.monotonic() - started))
    return timed


def slow_upload(probe: Probe) -> int:
    """While bob's upload stalls halfway through its body, other requests (reads, a send, a
    prepare) are answered as fast as before; the upload then finishes and seals
    (WP-LOAD-1)."""
    size = max(2, min(probe.limits.get("upload_bytes", 1 << 20), 256 << 10))
    data = os.urandom(size)
    prepared = obj(probe.request("POST", "/v1/blobs", who="bob", body={
        "request_id": probe.rid("su"), "size": size, "sha256": hashlib.sha256(data).hexdigest(),
        "content_type": "application/octet-stream"}), "blob.prepare", 201)
    upload_id = text(prepared, "upload_id", "blob.prepare")
    started, release = threading.Event(), threading.Event()
    outcome: dict[str, Any] = {}

    def body() -> Iterator[bytes]:
        yield data[:size // 2]
        started.set()
        if not release.wait(STALL_SECONDS):
            outcome["stalled"] = True
        yield data[size // 2:]

    def upload() -> None:
        try:
            outcome["answer"] = probe.client.put(
                f"/v1/uploads/{upload_id}/content", content=body(),
                headers={"Authorization": f"Bearer {probe.tokens['bob']}",
                         "Content-Type": "application/octet-stream",
                         "Content-Length": str(size)})
        except httpx.HTTPError as failed:
            outcome["error"] = failed

    before = _others(probe)
    thread = threading.Thread(target=upload, name="waypost-kit-slow-upload", daemon=True)
    thread.start()
    probe.requests += 1
    try:
        if not started.wait(STALL_SECONDS):
            raise Finding("the stalled upload's first half was not taken")
        time.sleep(0.2)  # the first half on its way; the server reads it and waits for more
        during = _others(probe)
    finally:
        release.set()
        thread.join(STALL_SECONDS + 60)
    late = [f"{what} took {slow:.2f} s (before the stall {fast:.2f} s)"
            for (what, slow), (_, fast) in zip(during, before, strict=True)
            if slow > max(STALL_SECONDS / 3, 10 * fast)]
    if outcome.get("stalled") or late:
        raise Finding("requests of other clients waited for a client that stalled halfway "
                      f"through an upload: {'; '.join(late) or 'answered only once it went on'}"
                      " (WP-LOAD-1)")
    if thread.is_alive():
        raise Finding("the upload did not end after its body was sent")
    answer = outcome.get("answer")
    if not isinstance(answer, httpx.Response) or not 200 <= answer.status_code < 300:
        shown_as = shown(answer) if isinstance(answer, httpx.Response) else \
            repr(outcome.get("error"))
        raise Finding(f"the upload that stalled for a moment failed: {shown_as}")
    sealed = obj(probe.request("POST", f"/v1/uploads/{upload_id}/commit", who="bob",
                               body={"request_id": probe.rid("su")}), "blob.commit", 200)
    content = probe.request("GET", f"/v1/blobs/{text(sealed, 'blob_id', 'blob.commit')}"
                                   "/content", who="bob")
    if content.status_code != 200 or content.content != data:
        raise Finding(f"the blob of the stalled upload reads back {shown(content)}")
    return probe.requests


CHECKS = (
    HostileCheck("slow_upload", "an upload that stalls halfway through its body while other "
                 "clients read, send and prepare: their answers do not wait for it, and it "
                 "then finishes and seals", ("WP-LOAD-1", "WP-LOAD-4", "WP-UPL-3"),
                 slow_upload),
)
