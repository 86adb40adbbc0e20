"""``attach`` and ``read_blob``: a local file to a sealed blob and back, streamed in chunks and
verified against the SHA-256 on both sides, inside the one folder the agent may use."""

from __future__ import annotations

import hashlib
import mimetypes
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from waypost.reference.agent_mcp.errors import ToolFailure
from waypost.reference.consumer.client import Api
from waypost.reference.consumer.outbox import new_request_id

CHUNK = 1 << 20
#: ``read_blob`` answers text inline up to this size; larger or binary blobs go to a file.
INLINE_BYTES = 64 * 1024


@dataclass(frozen=True)
class Files:
    """The folder ``attach`` reads from and ``read_blob`` writes to (``--files``), less the
    process's own files in it (the local database and its journals, the token file): a
    message from another agent must not talk the agent into sending or replacing them."""

    root: Path
    private: frozenset[Path] = frozenset()

    @classmethod
    def under(cls, root: Path, private: Iterable[Path] = ()) -> Files:
        """``root`` resolved (symlinks followed), and the private files resolved too."""
        return cls(root.resolve(), frozenset(path.resolve() for path in private))

    def path(self, name: str, field: str) -> Path:
        """``name`` (relative: to the root) resolved, symlinks followed; refused
        (``INVALID_REQUEST`` naming ``field``) unless it stays inside the root."""
        given = Path(name).expanduser()
        resolved = (self.root / given).resolve()  # an absolute ``given`` replaces the root
        if not resolved.is_relative_to(self.root):
            raise ToolFailure("INVALID_REQUEST", f"{name}: outside the folder this agent may "
                              f"use ({self.root}, --files)", {"field": field})
        if resolved in self.private:
            raise ToolFailure("INVALID_REQUEST", f"{name}: a file of waypost mcp itself",
                              {"field": field})
        return resolved


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


def attach(api: Api, files: Files, name: str, content_type: str | None) -> dict[str, Any]:
    """Upload a file of the folder as a sealed blob (prepare, stream, commit); the server
    checks the bytes against the size and SHA-256 read here, and the sealed blob is checked
    again."""
    path = files.path(name, "path")
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


def read(api: Api, files: Files, blob_id: str, save_to: str | None) -> dict[str, Any]:
    """A blob's text (UTF-8, up to :data:`INLINE_BYTES`), or its bytes written to a new file
    of the folder; either way checked against its SHA-256."""
    target = None if save_to is None else files.path(save_to, "save_to")
    blob_id = quote(blob_id, safe="")
    meta = api.get(f"/v1/blobs/{blob_id}")
    answer = {"blob_id": blob_id, "content_type": meta["content_type"], "size": meta["size"]}
    if target is not None:
        return {**answer, "saved_to": _save(api, blob_id, meta["sha256"], target)}
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
