"""The consumer's HTTP client: the few Waypost/1 calls it makes, errors as one-line exceptions.

The token is held in memory only (read from the environment or a file by the command line);
it is never written to the local database or printed."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx

#: Answers after which a write may be retried with the same request_id and nothing is final.
RETRYABLE_CODES = ("UNAVAILABLE", "SUBMISSION_PENDING", "UNAUTHENTICATED")


class ConsumerError(Exception):
    """An expected failure of a consumer command: shown as one line, never a traceback."""


class ServerError(ConsumerError):
    """The server answered with the error envelope (§7): its status, code and message."""

    def __init__(self, status: int, code: str, message: str,
                 details: dict[str, Any] | None = None) -> None:
        super().__init__(f"{code} ({status}): {message}")
        self.status, self.code, self.message = status, code, message
        self.details = details or {}

    @property
    def retryable(self) -> bool:
        """Whether a retry with the same request_id may still succeed (nothing final)."""
        return self.code in RETRYABLE_CODES or self.status >= 500


class Unreachable(ConsumerError):
    """The server could not be reached, or the connection broke before an answer."""


def server_error(response: httpx.Response) -> ServerError:
    """The error envelope of an answer, or a made-up one if it has none."""
    try:
        error = response.json()["error"]
        return ServerError(response.status_code, str(error["code"]), str(error["message"]),
                           error.get("details") or {})
    except (ValueError, KeyError, TypeError):
        return ServerError(response.status_code, "HTTP_ERROR",
                           f"answer without the error envelope: {response.text[:200]!r}")


class Api:
    """Waypost/1 over HTTP with one bearer token."""

    def __init__(self, url: str, token: str, *, timeout: float = 60.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.url = url.rstrip("/")
        self.client = httpx.Client(base_url=self.url, timeout=timeout, transport=transport,
                                   headers={"Authorization": f"Bearer {token}"})

    def close(self) -> None:
        self.client.close()

    def call(self, method: str, path: str, *, body: dict[str, Any] | None = None,
             params: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
        """One request: its status and JSON body on 2xx, else :class:`ServerError`."""
        try:
            response = self.client.request(method, path, json=body, params=params)
        except httpx.TransportError as error:
            raise Unreachable(f"cannot reach {self.url}: {error or type(error).__name__}") \
                from None
        if response.status_code >= 300:
            raise server_error(response)
        try:
            answer: dict[str, Any] = response.json()
        except ValueError:
            raise ServerError(response.status_code, "HTTP_ERROR",
                              "the answer is not JSON") from None
        return response.status_code, answer

    def put_content(self, path: str, chunks: Iterable[bytes]) -> None:
        """Stream raw bytes (an upload's content); :class:`ServerError` unless 2xx."""
        try:
            response = self.client.put(path, content=chunks,
                                       headers={"Content-Type": "application/octet-stream"})
        except httpx.TransportError as error:
            raise Unreachable(f"cannot reach {self.url}: {error or type(error).__name__}") \
                from None
        if response.status_code >= 300:
            raise server_error(response)

    @contextmanager
    def download(self, path: str) -> Iterator[httpx.Response]:
        """A streamed GET of raw bytes (a blob's content); :class:`ServerError` unless 2xx."""
        try:
            with self.client.stream("GET", path) as response:
                if response.status_code >= 300:
                    response.read()
                    raise server_error(response)
                yield response
        except httpx.TransportError as error:
            raise Unreachable(f"cannot reach {self.url}: {error or type(error).__name__}") \
                from None

    def get(self, path: str, **params: Any) -> dict[str, Any]:
        return self.call("GET", path, params={k: v for k, v in params.items() if v is not None})[1]

    def feed(self, cursor: str | None, limit: int, wait: int = 0) -> dict[str, Any]:
        return self.get("/v1/feed", cursor=cursor, limit=limit, wait=wait or None)

    def message(self, message_id: str) -> dict[str, Any]:
        return self.get(f"/v1/messages/{message_id}")

    def collection(self, collection_id: str) -> dict[str, Any]:
        return self.get(f"/v1/collections/{collection_id}")

    def revision_entries(self, collection_id: str, revision: int) -> list[dict[str, Any]]:
        """Every entry of a fixed revision, tombstones included, in item_id order."""
        entries: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            page = self.get(f"/v1/collections/{collection_id}/revisions/{revision}/items",
                            cursor=cursor, limit=100, include_tombstones="true")
            entries += page["items"]
            cursor = page.get("next_cursor")
            if not page.get("has_more") or not cursor:
                return entries
