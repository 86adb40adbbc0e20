"""``attach`` and ``read_blob``: a local file to a sealed blob and back, streamed in chunks and
verified against the SHA-256 on both sides."""

from __future__ import annotations

import hashlib
import mimetypes
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from waypost.reference.agent_mcp.errors import ToolFailure
from waypost.reference.consumer.client import Api
from waypost.reference.consumer.outbox import new_request_id

CHUNK = 1 << 20
#: ``read_blob`` answers text inline up to this size; larger or binary blobs go to a file.
INLINE_BYTES = 64 * 1024


def _chunks(path: Path) -> Iterator[bytes]:
    with path.open("rb") as source:
        while chunk := source.read(CHUNK):
            yield chunk


def _digest(path: Path) -> tuple[int, str]:
    size, digest = 0, hashlib.sha256()
    for chunk in _chunks(path):
        size += len(chunk)
        digest.update(chunk)
    return size, digest.hexdigest()


def attach(api: Api, name: str, content_type: str | None) -> dict[str, Any]:
    """Upload a local file as a sealed blob (prepare, stream, commit); the server checks the
    bytes against the size and SHA-256 read here, and the sealed blob is checked again."""
    path = Path(name).expanduser()
    if not path.is_file():
        raise ToolFailure("INVALID_REQUEST", f"no such file: {name}", {"field": "path"})
    try:
        size, sha256 = _digest(path)
    except OSError as error:
        raise ToolFailure("INVALID_REQUEST", f"cannot read {name}: {error.strerror}",
                          {"field": "path"}) from None
    kind = content_type or mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    _, slot = api.call("POST", "/v1/blobs", body={
        "request_id": new_request_id("attach"), "size": size, "sha256": sha256,
        "content_type": kind, "filename": path.name})
    api.put_content(f"/v1/uploads/{slot['upload_id']}/content", _chunks(path))
    _, sealed = api.call("POST", f"/v1/uploads/{slot['upload_id']}/commit",
                         body={"request_id": new_request_id("seal")})
    if (sealed["sha256"], sealed["size"]) != (sha256, size):
        raise ToolFailure("CONTENT_MISMATCH", "the sealed blob is not the file's bytes")
    return {"blob_id": sealed["blob_id"], "size": size, "sha256": sha256}


def read(api: Api, blob_id: str, save_to: str | None) -> dict[str, Any]:
    """A blob's text (UTF-8, up to :data:`INLINE_BYTES`), or its bytes written to a new local
    file; either way checked against its SHA-256."""
    blob_id = quote(blob_id, safe="")
    meta = api.get(f"/v1/blobs/{blob_id}")
    answer = {"blob_id": blob_id, "content_type": meta["content_type"], "size": meta["size"]}
    if save_to is not None:
        return {**answer, "saved_to": _save(api, blob_id, meta["sha256"], Path(save_to))}
    if meta["size"] > INLINE_BYTES:
        raise ToolFailure("RESOURCE_LIMIT", f"{meta['size']} bytes: give save_to",
                          {"limit": "inline_bytes", "max": INLINE_BYTES})
    with api.download(f"/v1/blobs/{blob_id}/content") as response:
        content = b"".join(response.iter_bytes())
    if hashlib.sha256(content).hexdigest() != meta["sha256"]:
        raise ToolFailure("CONTENT_MISMATCH", "the bytes read are not the blob's")
    try:
        return {**answer, "text": content.decode("utf-8")}
    except UnicodeDecodeError:
        raise ToolFailure("INVALID_REQUEST", "not UTF-8 text: give save_to",
                          {"field": "save_to"}) from None


def _save(api: Api, blob_id: str, sha256: str, target: Path) -> str:
    target = target.expanduser()
    try:
        out = target.open("xb")  # never overwrites
    except OSError as error:
        raise ToolFailure("INVALID_REQUEST", f"cannot create {target}: {error.strerror}",
                          {"field": "save_to"}) from None
    digest = hashlib.sha256()
    try:
        with out, api.download(f"/v1/blobs/{blob_id}/content") as response:
            for chunk in response.iter_bytes(CHUNK):
                digest.update(chunk)
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        if digest.hexdigest() != sha256:
            raise ToolFailure("CONTENT_MISMATCH", "the bytes read are not the blob's")
    except BaseException:
        target.unlink(missing_ok=True)
        raise
    return str(target)
