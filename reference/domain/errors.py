"""The Waypost/1 error hierarchy (protocol.md §7) and its one envelope.

Every failure the server reports is a :class:`WaypostError`; the HTTP layer turns it into
``{"error": {"code", "message", "details"}}`` with the status the code fixes.
"""

from __future__ import annotations

from typing import Any, ClassVar

JsonObject = dict[str, Any]


class WaypostError(Exception):
    """A protocol error: a code, its HTTP status, a human message and machine details."""

    code: ClassVar[str] = "INTERNAL"
    status: ClassVar[int] = 500

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details: JsonObject = details
        self.replayed = False  # set when the error is a submission's recorded stable result

    def envelope(self) -> JsonObject:
        """The §7 envelope, e.g. ``{"error": {"code": "NOT_FOUND", "message": …, "details": {}}}``."""
        return {"error": {"code": self.code, "message": self.message, "details": self.details}}


class InvalidRequest(WaypostError):
    code, status = "INVALID_REQUEST", 400


class Unauthenticated(WaypostError):
    code, status = "UNAUTHENTICATED", 401


class Forbidden(WaypostError):
    code, status = "FORBIDDEN", 403


class NotFound(WaypostError):
    code, status = "NOT_FOUND", 404


class IdempotencyConflict(WaypostError):
    code, status = "IDEMPOTENCY_CONFLICT", 409


class RevisionConflict(WaypostError):
    code, status = "REVISION_CONFLICT", 409


class SubmissionPending(WaypostError):
    code, status = "SUBMISSION_PENDING", 409


class CursorInvalid(WaypostError):
    code, status = "CURSOR_INVALID", 400


class CursorStale(WaypostError):
    code, status = "CURSOR_STALE", 409


class ContentMismatch(WaypostError):
    code, status = "CONTENT_MISMATCH", 422


class NotReady(WaypostError):
    code, status = "NOT_READY", 409


class UploadExpired(WaypostError):
    code, status = "UPLOAD_EXPIRED", 410


class ReferenceInvalid(WaypostError):
    code, status = "REFERENCE_INVALID", 422


class ResourceLimit(WaypostError):
    code, status = "RESOURCE_LIMIT", 413


class Unavailable(WaypostError):
    code, status = "UNAVAILABLE", 503


ERROR_CLASSES: tuple[type[WaypostError], ...] = (
    InvalidRequest,
    Unauthenticated,
    Forbidden,
    NotFound,
    IdempotencyConflict,
    RevisionConflict,
    SubmissionPending,
    CursorInvalid,
    CursorStale,
    ContentMismatch,
    NotReady,
    UploadExpired,
    ReferenceInvalid,
    ResourceLimit,
    Unavailable,
)

BY_CODE: dict[str, type[WaypostError]] = {cls.code: cls for cls in ERROR_CLASSES}


def from_code(code: str, message: str, details: JsonObject | None = None) -> WaypostError:
    """Rebuild a recorded failure, e.g. a replayed ``REVISION_CONFLICT``."""
    return BY_CODE[code](message, **(details or {}))


def not_found(what: str = "resource") -> NotFound:
    """The one answer for nonexistent, invisible and foreign objects (P01): same text for all."""
    return NotFound(f"{what} not found")


def credential_refused() -> Unauthenticated:
    """The one answer for any bearer token that does not authenticate now (P02): missing,
    malformed, unknown, expired, revoked, or of a disabled actor or consumer."""
    return Unauthenticated("missing, unknown, expired or revoked credential")


def internal_error() -> WaypostError:
    """The answer to an unexpected failure: ``500 INTERNAL``, telling nothing about it."""
    return WaypostError("internal error")


class StorageUnavailable(Exception):
    """A temporary storage failure (busy, I/O, unreachable): the request may be retried."""
