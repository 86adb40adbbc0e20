"""A stored blob whose bytes no longer match its SHA-256 (a torn write after a power cut, a
disk that rots) is never served as if whole: a small one is refused before the first byte, a
large one is cut short of its Content-Length; the operator gets one line either way."""

from __future__ import annotations

import logging
import secrets
from pathlib import Path

import httpx
import pytest

from tests.support.api import ADMIN_TOKEN, Api, content_of, sealed_blob, stored_objects
from waypost.conformance.targets import ServerProcess


def _damage(data_dir: Path, size: int) -> None:
    """Flip the last byte of the one stored object of ``size`` bytes."""
    (stored,) = [p for p in stored_objects(data_dir) if p.stat().st_size == size]
    content = bytearray(stored.read_bytes())
    content[-1] ^= 0xFF
    stored.write_bytes(bytes(content))


def _read_into(received: bytearray, answer: httpx.Response) -> None:
    for chunk in answer.iter_bytes():
        received += chunk


def test_a_small_damaged_blob_is_refused_before_its_first_byte(
        api: Api, data_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    content = secrets.token_bytes(1000)
    blob_id = sealed_blob(api, "s1/alice", content)
    assert content_of(api, "s1/alice", blob_id).content == content
    _damage(data_dir, len(content))
    with caplog.at_level(logging.ERROR, logger="waypost.blobs"):
        answer = content_of(api, "s1/alice", blob_id)
    assert answer.status_code == 500
    assert answer.json()["error"]["code"] == "INTERNAL"
    assert any(f"stored blob {blob_id} is damaged" in r.getMessage() for r in caplog.records)


def test_a_large_damaged_blob_ends_short_of_its_length_over_http(tmp_path: Path) -> None:
    content = secrets.token_bytes(600 * 1024)
    server = ServerProcess(tmp_path / "data", ADMIN_TOKEN)
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            api = Api(client)  # an httpx client to a real server
            api.space("s1", ("alice",))
            blob_id = sealed_blob(api, "s1/alice", content)
            _damage(tmp_path / "data", len(content))
            received = bytearray()
            with client.stream("GET", f"/v1/blobs/{blob_id}/content", headers={
                    "Authorization": f"Bearer {api.tokens['s1/alice']}"}) as answer:
                assert answer.status_code == 200
                assert answer.headers["content-length"] == str(len(content))
                with pytest.raises(httpx.RemoteProtocolError):  # the body ends short
                    _read_into(received, answer)
            assert len(received) < len(content)
            assert content.startswith(bytes(received))
    finally:
        server.stop()
    assert any(f"stored blob {blob_id} is damaged" in line for line in server.log)
