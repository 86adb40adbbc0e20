"""Tool failures in the protocol's error envelope (§7): what an agent sees as an MCP tool error."""

from __future__ import annotations

from typing import Any

import apsw
from pydantic import ValidationError

from waypost.reference.consumer.client import ConsumerError, ServerError, Unreachable


class ToolFailure(Exception):
    """A tool call that ended without its effect: a §7 code, a message and details."""

    def __init__(self, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message, self.details = code, message, details or {}

    def envelope(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, "details": self.details}}


def refused(status: int | None, code: str, message: str,
            details: dict[str, Any] | None = None) -> ToolFailure:
    """A server's refusal as a tool failure: its own code, message and details; an answer
    without a usable envelope (the consumer's made-up ``HTTP_ERROR``) from a failing server
    (5xx) or one that redirects (3xx) is ``UNAVAILABLE``: the server, not the call, is at
    fault."""
    failing = status is not None and (status >= 500 or 300 <= status < 400)
    return ToolFailure("UNAVAILABLE" if code == "HTTP_ERROR" and failing else code, message,
                       details)


def _invalid_arguments(error: ValidationError) -> ToolFailure:
    # an unknown argument first: naming it explains the other complaints too
    first = min(error.errors(), key=lambda e: e["type"] != "extra_forbidden")
    field = ".".join(str(part) for part in first["loc"]) or "arguments"
    return ToolFailure("INVALID_REQUEST", f"{field}: {first['msg']}", {"field": field})


def from_exception(error: Exception) -> ToolFailure:
    """The failure an expected exception stands for; anything else is ``INTERNAL`` without
    its text (it could hold anything)."""
    if isinstance(error, ToolFailure):
        return error
    if isinstance(error, ServerError):
        return refused(error.status, error.code, error.message, error.details)
    if isinstance(error, Unreachable):
        return ToolFailure("UNAVAILABLE", str(error))
    if type(error) is ConsumerError:  # the consumer refused locally (an unknown item, …)
        return ToolFailure("INVALID_REQUEST", str(error), {"field": "arguments"})
    if isinstance(error, ConsumerError):  # the server out of its contract (BadAnswer, …)
        return ToolFailure("UNAVAILABLE", str(error))
    if isinstance(error, ValidationError):
        return _invalid_arguments(error)
    if isinstance(error, apsw.Error):
        return ToolFailure("INTERNAL", f"the local database refused the change: {error}")
    return ToolFailure("INTERNAL", f"unexpected failure ({type(error).__name__})")
