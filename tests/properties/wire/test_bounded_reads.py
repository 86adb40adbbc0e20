"""The kit reads a hostile deployment's answers within bounds it keeps itself (docs/spec.md, "The
kit's own limits"): a blob's content no further than its declared size plus one read of the
network (:data:`~waypost.properties.wire.bounds.MARGIN`), counted here as the bytes the kit's
transport took off the wire; a target whose calls keep missing their deadline is declared too
slow, and nothing more is sent to it, so a run against it ends with a verdict in a small
multiple of ``--timeout``."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.lying_server import Lying, lying_server, set_scene
from tests.support.threaded_server import serving_app
from waypost.properties.verdicts.violations import Ledger, PropertyViolation
from waypost.properties.wire.bounds import (
    MARGIN,
    TOO_SLOW,
    BoundedTransport,
    Bounds,
    OutOfBounds,
    bounded_client,
    network_transport,
)
from waypost.properties.wire.http import Session

ADMIN = "bounded-reads-admin-token-0123"


class _Counted(httpx.SyncByteStream):
    def __init__(self, inner: Any, counter: Counting) -> None:
        self.inner, self.counter = inner, counter

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.inner:
            self.counter.read += len(chunk)
            yield chunk

    def close(self) -> None:
        self.inner.close()


class Counting(httpx.BaseTransport):
    """The network under the kit's bounded transport, counting the body bytes it hands up."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner, self.read, self.sent = inner, 0, 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent += 1
        response = self.inner.handle_request(request)
        return httpx.Response(response.status_code, headers=response.headers,
                              stream=_Counted(response.stream, self),
                              extensions=response.extensions, request=request)

    def close(self) -> None:
        self.inner.close()


def _session(url: str, wire: httpx.BaseTransport, bounds: Bounds | None = None) -> Session:
    client = httpx.Client(base_url=url, transport=BoundedTransport(wire, bounds),
                          trust_env=False)
    return Session(client, ADMIN, ledger=Ledger())


def test_content_longer_than_its_metadata_says_stops_at_the_declared_size(
        tmp_path: Path) -> None:
    """A blob whose metadata says 8 bytes and whose content streams 400 MB: the kit learns
    the size from the metadata, reads no more than 8 bytes and a read of the network, and fails
    the check with the content's declared size."""
    with lying_server("huge_blob", tmp_path / "data", ADMIN) as (url, front):
        tokens = set_scene(url, ADMIN)  # bob sealed a blob of 8 bytes
        bearer, blob = tokens["bob"], tokens["blob"]
        wire = Counting(network_transport(url))
        session = _session(url, wire)
        meta = session.call("GET", f"/v1/blobs/{blob}", bearer=bearer, who="bob")
        assert (meta.status, meta.json["size"]) == (200, 8)
        wire.read, started = 0, time.monotonic()
        with pytest.raises(PropertyViolation) as caught:
            session.get_bytes(f"/v1/blobs/{blob}/content", bearer=bearer, who="bob")
        assert "the content is longer than its declared 8 bytes" in str(caught.value)
        assert "WP-UPL-9" in str(caught.value)
        assert 0 < wire.read <= 8 + MARGIN
        assert time.monotonic() - started < 10
        assert front.served == 1


def _streaming(length: int | None) -> Counting:
    """A network whose every answer streams 400 MB in reads of the network's size, its
    ``Content-Length`` ``length`` (None: none, chunked)."""
    def answer(request: httpx.Request) -> httpx.Response:
        headers = {} if length is None else {"content-length": str(length)}
        return httpx.Response(200, headers=headers,
                              content=(b"a" * MARGIN for _ in range((400 << 20) // MARGIN)))
    return Counting(httpx.MockTransport(answer))


@pytest.mark.parametrize(("length", "limit"), [(None, 10), (400 << 20, 10), (5, 5)])
def test_the_content_length_or_the_declared_size_whichever_is_smaller(
        length: int | None, limit: int) -> None:
    """A blob the kit declared as 10 bytes: content without a length, or a ``Content-Length``
    over the declared size (refused before any byte of the body), or under it (then that is
    the bound): the check fails naming the size, at most :data:`MARGIN` past it read."""
    wire = _streaming(length)
    session = _session("http://target", wire)
    session.declared["blb_a"] = 10
    with pytest.raises(PropertyViolation) as caught:
        session.get_bytes("/v1/blobs/blb_a/content", bearer="t", who="bob")
    assert f"the content is longer than its declared {limit} bytes" in str(caught.value)
    assert wire.read <= (0 if length == 400 << 20 else limit + MARGIN)


def test_a_blob_of_unknown_size_keeps_the_answer_cap() -> None:
    wire = _streaming(None)
    session = _session("http://target", wire, Bounds(answer_bytes=100_000))
    with pytest.raises(PropertyViolation, match="more than 100000 bytes"):
        session.get_bytes("/v1/blobs/blb_a/content", bearer="t", who="bob")
    assert wire.read <= 100_000 + MARGIN


def test_a_size_only_the_server_says_never_raises_the_cap() -> None:
    """Metadata claiming 1 GB for a blob the kit did not prepare: the answer cap still holds."""
    session = _session("http://target", _streaming(None))
    session.reported["blb_a"] = 1 << 30
    assert session.known_size("blb_a") is None
    session.reported["blb_a"] = 7
    assert session.known_size("blb_a") == 7
    session.declared["blb_a"] = 5
    assert session.known_size("blb_a") == 5


def _late(request: httpx.Request) -> httpx.Response:
    """A network on which every call misses its deadline (what a trickle ends as)."""
    raise httpx.ReadTimeout("the call's deadline passed", request=request)


def test_repeated_missed_deadlines_make_the_target_too_slow() -> None:
    """After :data:`TOO_SLOW` missed deadlines, no call is sent any more, by this client or
    by any other made with the same bounds (the clients P17 makes): each fails at once,
    naming the target too slow."""
    wire = Counting(httpx.MockTransport(_late))
    bounds = Bounds(seconds=7)
    with httpx.Client(base_url="http://target",
                      transport=BoundedTransport(wire, bounds)) as client:
        for _ in range(TOO_SLOW - 1):
            with pytest.raises(OutOfBounds, match="no complete answer within 7 s") as caught:
                client.get("/v1/feed")
            assert "too slow" not in str(caught.value)
        with pytest.raises(OutOfBounds, match="the target is too slow: 3 calls missed"):
            client.get("/v1/feed")
        assert wire.sent == TOO_SLOW
        with pytest.raises(OutOfBounds, match="too slow") as caught:
            client.get("/v1/describe")
        assert caught.value.bound == "too_slow"
    other = Counting(httpx.MockTransport(lambda request: httpx.Response(200, json={})))
    with pytest.raises(OutOfBounds, match="the kit sends it nothing more"), \
            bounded_client("http://target", bounds, transport=other) as client:
        client.get("/v1/describe")
    assert (wire.sent, other.sent) == (TOO_SLOW, 0)
    assert not Bounds().too_slow  # each run's bounds count their own


class SlowDataPlane:
    """Describe and the control plane answer at once; every other ``/v1/`` call trickles (one
    byte every 2 s, ``tests/support/lying_server.py``)."""

    def __init__(self, app: Any) -> None:
        self.app, self.slow = app, Lying(app, "trickle")

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        slow = scope["type"] == "http" and path.startswith("/v1/") and path != "/v1/describe"
        await (self.slow if slow else self.app)(scope, receive, send)


@pytest.mark.slow
def test_a_target_whose_calls_keep_missing_their_deadline_gets_a_verdict(
        tmp_path: Path) -> None:
    """The target answers describe and provisions at once, then trickles every data-plane
    answer: the run ends in a small multiple of ``--timeout`` with a failed verdict naming the
    target too slow (it used to wait out every call of the run, for hours)."""
    from waypost.reference.server import Settings, build_app

    timeout = 2
    app = SlowDataPlane(build_app(Settings(tmp_path / "data", ADMIN, synchronous="NORMAL",
                                           sweep_seconds=0, test_hooks=True)))
    with serving_app(app) as url:
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "waypost.cli", "conformance", "--target", url,
             "--admin-token", ADMIN, "--profile", "quick", "--only", "P06", "--seed", "1",
             "--timeout", str(timeout), "--shrink-seconds", "0",
             "--replay-dir", str(tmp_path / "replays")],
            cwd=tmp_path, capture_output=True, text=True, timeout=180)
        seconds = time.monotonic() - started
        trickled = len(app.slow.paths)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the target is too slow" in done.stdout, done.stdout
    assert trickled <= TOO_SLOW
    assert seconds < 10 * timeout + 30  # the start of a process, TOO_SLOW deadlines

