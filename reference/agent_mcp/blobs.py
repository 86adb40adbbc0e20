"""``attach`` and ``read_blob``: a local file to a sealed blob and back, streamed in chunks and
verified against the size and SHA-256 on both sides, inside the one folder the agent may use."""

from __future__ import annotations

import hashlib
import mimetypes
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from waypost.reference.agent_mcp.errors import ToolFailure
from waypost.reference.consumer import answers
from waypost.reference.consumer.client import Api, BadAnswer, chunks, segment
from waypost.reference.consumer.outbox import new_request_id

CHUNK = 1 << 20
#: ``read_blob`` answers text inline up to this size; larger or binary blobs go to a file.
INLINE_BYTES = 64 * 1024
#: The database's own name and its journals' suffixes (SQLite's rollback journal and WAL).
JOURNALS = ("", "-wal", "-shm", "-journal")


def _resolved(root: Path, name: str, field: str) -> Path:
    """``name`` (``~`` expanded; relative: to ``root``) made absolute with every symlink
    followed; a path the system cannot take (a NUL, an unknown user, a name too long) is
    ``INVALID_REQUEST`` naming ``field``."""
    if "\x00" in name:
        raise ToolFailure("INVALID_REQUEST", "a path cannot hold a NUL character",
                          {"field": field})
    try:  # an absolute name replaces the root
        return Path(os.path.realpath(root / Path(name).expanduser()))
    except (OSError, RuntimeError, ValueError) as error:
        raise ToolFailure("INVALID_REQUEST", f"cannot resolve {name}: {error}",
                          {"field": field}) from None


def private_files(db: Path, others: Iterable[Path] = ()) -> frozenset[Path]:
    """The database, its journals and the ``others`` (the token file), each as given and as
    resolved: SQLite names the journals of a symlinked database after the link's target."""
    bases = {Path(os.path.abspath(db)), Path(os.path.realpath(db))}
    names = [base.with_name(base.name + end) for base in bases for end in JOURNALS]
    names += [Path(os.path.abspath(other)) for other in others]
    return frozenset(variant for name in names
                     for variant in (name, Path(os.path.realpath(name))))


def _same_file(path: Path, others: Iterable[Path]) -> bool:
    """Whether ``path`` is one of ``others`` under another name (a hard link)."""
    try:
        found = path.stat()
    except OSError:
        return False
    for other in others:
        try:
            if os.path.samestat(found, other.stat()):
                return True
        except OSError:
            continue
    return False


@dataclass(frozen=True)
class Files:
    """The folder ``attach`` reads from and ``read_blob`` writes to (``--files``), less the
    process's own files (the local database and its journals, the token file) wherever they
    are: a message from another agent must not talk the agent into sending or replacing them."""

    root: Path
    private: frozenset[Path] = frozenset()

    @classmethod
    def under(cls, root: Path, private: Iterable[Path] = ()) -> Files:
        """``root`` resolved (symlinks followed); ``private`` as :func:`private_files` gives."""
        return cls(Path(os.path.realpath(root)), frozenset(private))

    def path(self, name: str, field: str) -> Path:
        """``name`` (relative: to the root) resolved, symlinks followed; refused
        (``INVALID_REQUEST`` naming ``field``) unless it stays inside the root and is none of
        the private files, by name or by identity."""
        resolved = _resolved(self.root, name, field)
        if not resolved.is_relative_to(self.root):
            raise ToolFailure("INVALID_REQUEST", f"{name}: outside the folder this agent may "
                              f"use ({self.root}, --files)", {"field": field})
        if resolved in self.private or _same_file(resolved, self.private):
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


def _readable(files: Files, name: str) -> tuple[Path, int, str]:
    """The file's resolved path, size and SHA-256; refused unless it is a readable file."""
    path = files.path(name, "path")
    try:
        if not path.is_file():
            raise ToolFailure("INVALID_REQUEST", f"no such file: {name}", {"field": "path"})
        return (path, *_digest(path))
    except OSError as error:
        raise ToolFailure("INVALID_REQUEST", f"cannot read {name}: {error.strerror}",
                          {"field": "path"}) from None


def attach(api: Api, files: Files, name: str, content_type: str | None) -> dict[str, Any]:
    """Upload a file of the folder as a sealed blob (prepare, stream, commit); the server
    checks the bytes against the size and SHA-256 read here, and the sealed blob is checked
    again."""
    path, size, sha256 = _readable(files, name)
    kind = content_type or mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    _, answer = api.call("POST", "/v1/blobs", body={
        "request_id": new_request_id("attach"), "size": size, "sha256": sha256,
        "content_type": kind, "filename": path.name})
    slot = answers.prepared(answer)
    upload = segment(slot["upload_id"], "upload_id")
    api.put_content(f"/v1/uploads/{upload}/content", _chunks(path))
    _, answer = api.call("POST", f"/v1/uploads/{upload}/commit",
                         body={"request_id": new_request_id("seal")})
    sealed = answers.blob(answer, slot["blob_id"])
    if (sealed["sha256"], sealed["size"]) != (sha256, size):
        raise ToolFailure("CONTENT_MISMATCH", "the sealed blob is not the file's bytes")
    return {"blob_id": sealed["blob_id"], "size": size, "sha256": sha256}


def _bounded(response: httpx.Response, size: int) -> Iterator[bytes]:
    """The content's chunks (:func:`chunks`: never more than one read of the network past
    ``size``); ``CONTENT_MISMATCH`` as soon as they pass ``size`` bytes, or when they end short
    of it."""
    seen = 0
    try:
        for chunk in chunks(response, size):
            seen += len(chunk)
            yield chunk
    except BadAnswer as longer:
        raise ToolFailure("CONTENT_MISMATCH", longer.problem) from None
    if seen != size:
        raise ToolFailure("CONTENT_MISMATCH", f"the server sent {seen} of the blob's "
                          f"{size} bytes")


def read(api: Api, files: Files, blob_id: str, save_to: str | None) -> dict[str, Any]:
    """A blob's text (UTF-8, up to :data:`INLINE_BYTES`), or its bytes written to a new file
    of the folder; either way at most its declared size, checked against its SHA-256 before
    anything is answered."""
    target = None if save_to is None else files.path(save_to, "save_to")
    path = segment(blob_id, "blob_id")
    meta = api.blob(blob_id)
    answer = {"blob_id": blob_id, "content_type": meta["content_type"], "size": meta["size"]}
    if target is not None:
        return {**answer, "saved_to": _save(api, path, meta, target)}
    if meta["size"] > INLINE_BYTES:
        raise ToolFailure("RESOURCE_LIMIT", f"{meta['size']} bytes: give save_to",
                          {"limit": "inline_bytes", "max": INLINE_BYTES, "field": "save_to"})
    with api.download(f"/v1/blobs/{path}/content") as response:
        content = b"".join(_bounded(response, meta["size"]))
    if hashlib.sha256(content).hexdigest() != meta["sha256"]:
        raise ToolFailure("CONTENT_MISMATCH", "the bytes read are not the blob's")
    try:
        return {**answer, "text": content.decode("utf-8")}
    except UnicodeDecodeError:
        raise ToolFailure("INVALID_REQUEST", "not UTF-8 text: give save_to",
                          {"field": "save_to"}) from None


def _save(api: Api, path: str, meta: dict[str, Any], target: Path) -> str:
    """The blob's bytes in a new file (never overwritten, never more than the declared size),
    removed again unless they are the blob's."""
    try:
        out = target.open("xb")  # O_EXCL: never an existing file, never through a symlink
    except OSError as error:
        raise ToolFailure("INVALID_REQUEST", f"cannot create {target}: {error.strerror}",
                          {"field": "save_to"}) from None
    digest = hashlib.sha256()
    try:
        with out, api.download(f"/v1/blobs/{path}/content") as response:
            for chunk in _bounded(response, meta["size"]):
                digest.update(chunk)
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        if digest.hexdigest() != meta["sha256"]:
            raise ToolFailure("CONTENT_MISMATCH", "the bytes read are not the blob's")
    except BaseException:
        target.unlink(missing_ok=True)
        raise
    return str(target)
