"""The consumer's HTTP client: the few Waypost/1 calls it makes, bounded in time, size and
retries, with errors as one-line exceptions (docs/consumer.md, "Limits").

The token is held in memory only (read from the environment or a file by the command line);
it is never written to the local database or printed. An id goes into a URL only after it
matched the id grammar, percent-encoded: nothing a server says can make the client request a
path outside the API base."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

import httpx

from waypost.reference.consumer import answers
from waypost.reference.consumer.errors import (
    RETRYABLE_CODES,
    BadAnswer,
    ConsumerError,
    ServerError,
    Unreachable,
)
from waypost.reference.consumer.transport import BoundedTransport, deadline

__all__ = ["MARGIN", "RETRYABLE_CODES", "Api", "BadAnswer", "ConsumerError", "ServerError",
           "Unreachable", "chunks", "segment", "server_error"]

#: Seconds to connect, and to wait for any one read.
CONNECT_SECONDS = 10.0
READ_SECONDS = 30.0
#: Seconds a whole call may take, answer included (a long poll adds its wait).
CALL_SECONDS = 60.0
#: Bytes of a JSON answer read at most; a larger one is the server's fault.
MAX_ANSWER_BYTES = 4 << 20
#: The most a download reads past a blob's declared size before it stops: one read of the
#: network (httpcore reads at most 64 KiB at a time).
MARGIN = 64 << 10
#: Attempts of a call that meets a temporary failure (no connection, 503, 408, a submission in
#: flight), and the longest pause between two, whatever ``Retry-After`` asks.
ATTEMPTS = 3
MAX_PAUSE_SECONDS = 5.0
#: The most entries a revision holds (``memory_entries_per_revision``'s largest value).
MAX_ENTRIES = 10_000
#: Entries read a page.
ENTRY_PAGE = 100


def segment(value: str, where: str) -> str:
    """An id as one URL path segment: it must match the id grammar (WP-VAL-4)."""
    if not isinstance(value, str) or not answers.ID.fullmatch(value):
        raise ConsumerError(f"{where}: not an id (1 to 96 of A-Z a-z 0-9 _ -): {value!r}")
    return quote(value, safe="")


def server_error(status: int, raw: bytes) -> ServerError:
    """The error envelope of an answer, or a made-up one if it has none."""
    try:
        code, message, details = answers.refusal(json.loads(raw))
    except (ValueError, RecursionError, BadAnswer):
        return ServerError(status, "HTTP_ERROR",
                           f"answer without the error envelope: {raw[:200]!r}")
    return ServerError(status, code, message, details)


def _pause(attempt: int, retry_after: str | None) -> float:
    """Seconds before the next attempt: ``Retry-After`` (seconds) if given, else a doubling
    backoff; never more than :data:`MAX_PAUSE_SECONDS`."""
    try:
        asked = float(retry_after) if retry_after is not None else None
    except ValueError:
        asked = None
    wanted = asked if asked is not None and asked >= 0 else 0.25 * 2 ** attempt
    return min(wanted, MAX_PAUSE_SECONDS)


class Api:
    """Waypost/1 over HTTP with one bearer token; ``timeout`` bounds each whole call."""

    def __init__(self, url: str, token: str, *, timeout: float = CALL_SECONDS,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.url = url.rstrip("/")
        self.seconds = timeout
        self.client = httpx.Client(
            base_url=self.url, follow_redirects=False,
            timeout=httpx.Timeout(min(READ_SECONDS, timeout), connect=CONNECT_SECONDS),
            transport=transport or BoundedTransport(),
            # Compressed answers are not asked for, and refused: a few compressed bytes could
            # decode to far more than any bound counts.
            headers={"Authorization": f"Bearer {token}", "Accept-Encoding": "identity"})

    def close(self) -> None:
        self.client.close()

    def call(self, method: str, path: str, *, body: dict[str, Any] | None = None,
             params: dict[str, Any] | None = None, wait: float = 0) -> tuple[int, dict[str, Any]]:
        """One request (retried on a temporary failure): its status and JSON object on 2xx,
        else :class:`ServerError`; :class:`Unreachable` without a whole answer in time.
        ``wait``: seconds the server may hold the call before answering (a long poll)."""
        for attempt in range(ATTEMPTS):
            try:
                status, raw, retry_after = self._once(method, path, body, params, wait)
            except Unreachable as error:
                if attempt + 1 == ATTEMPTS or not error.again:
                    raise
                time.sleep(_pause(attempt, None))
                continue
            if status < 300:
                return status, self._object(raw)
            refused = self._refusal(status, raw)
            if attempt + 1 == ATTEMPTS or not (
                    status in (408, 503) or refused.code == "SUBMISSION_PENDING"):
                raise refused
            time.sleep(_pause(attempt, retry_after))
        raise AssertionError("unreachable")  # pragma: no cover

    def _once(self, method: str, path: str, body: dict[str, Any] | None,
              params: dict[str, Any] | None, wait: float) -> tuple[int, bytes, str | None]:
        """One exchange: status, at most :data:`MAX_ANSWER_BYTES` of body, ``Retry-After``."""
        seconds = self.seconds + wait
        try:
            timeout = httpx.Timeout(min(READ_SECONDS, self.seconds) + wait,
                                    connect=CONNECT_SECONDS)
            with deadline(seconds), self.client.stream(method, path, json=body, params=params,
                                                       timeout=timeout) as response:
                raw = _bounded_read(response, MAX_ANSWER_BYTES)
                return response.status_code, raw, response.headers.get("retry-after")
        except httpx.TimeoutException:
            raise Unreachable(f"no whole answer from {self.url} within {seconds:g} s",
                              again=False) from None
        except httpx.TransportError as error:
            raise Unreachable(f"cannot reach {self.url}: {error or type(error).__name__}") \
                from None

    def _refusal(self, status: int, raw: bytes) -> ServerError:
        if 300 <= status < 400:
            return ServerError(status, "HTTP_ERROR", "the server redirected the call; the "
                               "consumer follows no redirect (the token stays with its server)")
        return server_error(status, raw)

    @staticmethod
    def _object(raw: bytes) -> dict[str, Any]:
        try:
            answer = json.loads(raw)
        except (ValueError, RecursionError):
            raise BadAnswer("an answer is not JSON") from None
        return answers.obj(answer, "answer")

    def put_content(self, path: str, chunks: Iterable[bytes]) -> None:
        """Stream raw bytes (an upload's content); :class:`ServerError` unless 2xx."""
        try:
            with deadline(max(self.seconds, 600)), self.client.stream(
                    "PUT", path, content=chunks,
                    headers={"Content-Type": "application/octet-stream"}) as response:
                raw = _bounded_read(response, MAX_ANSWER_BYTES)
        except httpx.TimeoutException:
            raise Unreachable(f"the upload to {self.url} did not finish in time") from None
        except httpx.TransportError as error:
            raise Unreachable(f"cannot reach {self.url}: {error or type(error).__name__}") \
                from None
        if response.status_code >= 300:
            raise self._refusal(response.status_code, raw)

    @contextmanager
    def download(self, path: str) -> Iterator[httpx.Response]:
        """A streamed GET of raw bytes (a blob's content), within the call's deadline (at
        least ten minutes); :class:`ServerError` unless 2xx. The reader bounds what it
        reads (:func:`chunks`)."""
        try:
            with deadline(max(self.seconds, 600)), self.client.stream("GET", path) as response:
                if response.status_code >= 300:
                    raise self._refusal(response.status_code,
                                        _bounded_read(response, MAX_ANSWER_BYTES))
                _plain(response)
                yield response
        except httpx.TimeoutException:
            raise Unreachable(f"the download from {self.url} did not finish in time") from None
        except httpx.TransportError as error:
            raise Unreachable(f"cannot reach {self.url}: {error or type(error).__name__}") \
                from None

    def get(self, path: str, held: float = 0, **params: Any) -> dict[str, Any]:
        """A GET's JSON object; ``held``: seconds the server may hold it (a long poll)."""
        return self.call("GET", path, params={k: v for k, v in params.items() if v is not None},
                         wait=held)[1]

    def feed(self, cursor: str | None, limit: int, after: int, wait: int = 0) -> dict[str, Any]:
        """A feed page after ``cursor`` (checked: see :func:`answers.feed_page`)."""
        page = self.get("/v1/feed", held=wait, cursor=cursor, limit=limit, wait=wait or None)
        return answers.feed_page(page, limit, after, cursor)

    def message(self, message_id: str) -> dict[str, Any]:
        """The message ``message_id`` (checked to be that message)."""
        answer = self.get(f"/v1/messages/{segment(message_id, 'message_id')}")
        return answers.message(answer, message_id)

    def collection(self, collection_id: str) -> dict[str, Any]:
        answer = self.get(f"/v1/collections/{segment(collection_id, 'collection_id')}")
        return answers.collection(answer, collection_id)

    def blob(self, blob_id: str) -> dict[str, Any]:
        return answers.blob(self.get(f"/v1/blobs/{segment(blob_id, 'blob_id')}"), blob_id)

    def revision_entries(self, collection_id: str, revision: int) -> list[dict[str, Any]]:
        """Every entry of a fixed revision, tombstones included, in item_id order; at most
        :data:`MAX_ENTRIES`, each page checked (:func:`answers.item_page`)."""
        base = (f"/v1/collections/{segment(collection_id, 'collection_id')}"
                f"/revisions/{int(revision)}/items")
        entries: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            page = answers.item_page(
                self.get(base, cursor=cursor, limit=ENTRY_PAGE, include_tombstones="true"),
                ENTRY_PAGE, entries[-1]["item_id"] if entries else None, cursor)
            entries += page["items"]
            if len(entries) > MAX_ENTRIES:
                raise BadAnswer(f"revision {revision} of {collection_id}: more than "
                                f"{MAX_ENTRIES} entries")
            if not page["has_more"]:
                return entries
            cursor = page["next_cursor"]


def _plain(response: httpx.Response) -> None:
    """Refuse an encoded (compressed) answer: the consumer asks for none."""
    if response.headers.get("content-encoding", "identity").strip().lower() != "identity":
        raise BadAnswer("an answer with a content-encoding, though none was accepted")


def _bounded_read(response: httpx.Response, most: int) -> bytes:
    """The body, refused past ``most`` bytes (by its declared length or as it comes)."""
    _plain(response)
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > most:
        raise BadAnswer(f"an answer of {int(declared)} bytes, more than the {most} read")
    parts, size = [], 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > most:
            raise BadAnswer(f"an answer of more than {most} bytes")
        parts.append(chunk)
    return b"".join(parts)


def chunks(response: httpx.Response, most: int) -> Iterator[bytes]:
    """A download's chunks as they come off the network, never more than ``most`` bytes in
    all (a blob's declared size): a ``Content-Length`` over it is refused before any byte of
    the body, and the body is refused at the first chunk past it, so at most one read of the
    network (:data:`MARGIN`) is read past the declared size (:class:`BadAnswer`: "the content
    is longer than its declared N bytes")."""
    _plain(response)
    length = response.headers.get("content-length", "")
    if length.isdigit() and int(length) > most:
        raise BadAnswer(f"the content is longer than its declared {most} bytes (its "
                        f"Content-Length says {int(length)})")
    size = 0
    for chunk in response.iter_raw():  # identity (checked above): raw bytes are the content
        size += len(chunk)
        if size > most:
            raise BadAnswer(f"the content is longer than its declared {most} bytes")
        yield chunk
