"""The consumer's expected failures: each is shown as one line, never a traceback."""

from __future__ import annotations

from typing import Any

#: Answers after which a write may be retried with the same request_id and nothing is final.
RETRYABLE_CODES = ("UNAVAILABLE", "SUBMISSION_PENDING", "UNAUTHENTICATED", "REQUEST_TIMEOUT")


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
    """The server could not be reached, the connection broke before a whole answer, or no
    whole answer came in time (``again``: false, a retry would only wait as long again)."""

    def __init__(self, message: str, *, again: bool = True) -> None:
        super().__init__(message)
        self.again = again


class BadAnswer(ConsumerError):
    """The server broke the contract: an answer of the wrong shape, too large or too slow, or a
    loop it drives (pages, cursors, entries) that does not end. Nothing of it was stored."""

    def __init__(self, problem: str) -> None:
        super().__init__(f"the server broke the contract: {problem}")
        self.problem = problem
